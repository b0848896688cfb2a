//! Structured tool calls: Claude Code's (`Read`, `Write`, `Edit`, `MultiEdit`, `NotebookEdit`,
//! `TodoWrite`, `Bash`, `Task`, `Glob`, `Grep`), Codex's (`shell` with its argument list,
//! `update_plan`, and `apply_patch` in any argument), Anthropic's text editor tool (its
//! operation in `command`), Cline's `task_progress`, and OpenAI function calls with the same
//! argument keys: the files each touches, the command it runs, the todo list it sets.

use crate::ledger::calls::{checklist, file_action, is_shell, json_todo, strings};
use crate::ledger::{FileAction, Ledger, Todo, one_line, shell};

use super::edits::{edit_change, search_replace_blocks};
use super::patch::patch_hunks;
use super::results::{Pending, ResultKind};

impl Ledger {
    /// One structured tool call: files, commands and todos. Returns what its result will say
    /// more of: the files it reads, the command it runs.
    pub(super) fn tool_call(
        &mut self,
        name: &str,
        input: &serde_json::Value,
        at: Option<usize>,
    ) -> Option<Pending> {
        let lower = name.to_ascii_lowercase();
        // Patches (Codex `apply_patch`, anywhere in the arguments) name their files.
        let mut patched = false;
        for s in strings(input) {
            for hunk in patch_hunks(s) {
                self.patched(hunk, at);
                patched = true;
            }
        }
        // Todo lists.
        if let Some(todos) = input.get("todos") {
            let list = match todos {
                serde_json::Value::Array(items) => items.iter().filter_map(json_todo).collect(),
                serde_json::Value::String(s) => checklist(s),
                _ => Vec::new(),
            };
            if !list.is_empty() {
                self.todos = list;
            }
        }
        if let Some(serde_json::Value::Array(items)) = input.get("plan") {
            let list: Vec<Todo> = items.iter().filter_map(json_todo).collect();
            if !list.is_empty() {
                self.todos = list;
            }
        }
        if let Some(progress) = input.get("task_progress").and_then(|v| v.as_str()) {
            let list = checklist(progress);
            if !list.is_empty() {
                self.todos = list;
            }
        }
        // Files.
        let action = match input.get("command").and_then(|v| v.as_str()) {
            // Anthropic's text editor tool names its operation in `command`.
            Some("view") if lower.contains("edit") => Some(FileAction::Read),
            Some("create") if lower.contains("edit") => Some(FileAction::Created),
            Some("str_replace" | "insert" | "undo_edit") if lower.contains("edit") => {
                Some(FileAction::Edited)
            }
            _ => file_action(&lower),
        };
        let mut reads = Vec::new();
        if let Some(action) = action {
            for path in paths_of(input) {
                self.touch(path, action, at);
                match action {
                    FileAction::Read => {
                        let first = ["offset", "start_line", "line"]
                            .iter()
                            .find_map(|k| input.get(*k).and_then(serde_json::Value::as_u64))
                            .map_or(1, |n| n.max(1) as usize);
                        reads.push((path.to_owned(), first));
                    }
                    FileAction::Created | FileAction::Edited => self.edited(path, input),
                    FileAction::Deleted => {}
                }
            }
        }
        // A sub-agent's report, a search or a listing: a command of its own, its result read for
        // the paths it names.
        if action.is_none()
            && !is_shell(&lower)
            && (is_agent(&lower) || is_listing(&lower) || is_search(&lower))
        {
            let about = ["description", "pattern", "query", "path", "regex"]
                .iter()
                .find_map(|k| input.get(*k).and_then(serde_json::Value::as_str))
                .map_or(String::new(), |a| one_line(a, 100));
            let shown = if about.is_empty() { name.to_owned() } else { format!("{name} {about}") };
            self.ran(shown.clone(), at);
            let kind = match () {
                _ if is_agent(&lower) => ResultKind::Report,
                _ if is_search(&lower) => ResultKind::Search,
                _ => ResultKind::Listing,
            };
            return Some(Pending { command: Some(shown), reads, kind });
        }
        // Commands.
        if !is_shell(&lower) || patched {
            return (!reads.is_empty()).then_some(Pending { command: None, reads, kind: ResultKind::Output });
        }
        let command = match input.get("command").or_else(|| input.get("cmd")) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Array(parts)) => {
                let parts: Vec<&str> = parts.iter().filter_map(|p| p.as_str()).collect();
                match parts.as_slice() {
                    [shell, flag, script] if shell.ends_with("sh") && flag.starts_with('-') => {
                        (*script).to_owned()
                    }
                    _ => parts.join(" "),
                }
            }
            _ => return None,
        };
        if command.trim_start().starts_with("apply_patch") {
            return None;
        }
        let effects = shell::effects(&command);
        for (path, action) in &effects.files {
            self.touch(path, *action, at);
        }
        for (path, text) in &effects.written {
            self.change(path, Some(text), vec![format!("written whole, {} lines", text.lines().count())]);
        }
        let shown = shell::display(&command);
        self.ran(shown.clone(), at);
        let kind = match (effects.searching, effects.listing) {
            (true, _) => ResultKind::Search,
            (false, true) => ResultKind::Listing,
            // A command that only read files or wrote them whole (`cat`, `sed -n`, a heredoc):
            // the files' entries say it.
            _ if !(effects.reads.is_empty() && effects.written.is_empty())
                && effects
                    .files
                    .iter()
                    .all(|(p, a)| *a == FileAction::Read || effects.written.iter().any(|(w, _)| w == p)) =>
            {
                ResultKind::Read
            }
            _ => ResultKind::Output,
        };
        Some(Pending { command: Some(shown), reads: effects.reads, kind })
    }

    /// What a write or an edit call changed in a file: a whole new text's outline, an edit's
    /// symbols and first changed line.
    fn edited(&mut self, path: &str, input: &serde_json::Value) {
        let text =
            |keys: &[&str]| keys.iter().find_map(|k| input.get(*k).and_then(serde_json::Value::as_str));
        let mut changes = Vec::new();
        let mut whole = None;
        if let Some(content) = text(&["content", "file_text", "contents"]) {
            whole = Some(content.to_owned());
            changes.push(format!("written whole, {} lines", content.lines().count()));
        }
        if let Some(new) = text(&["new_string", "new_str", "newString", "replacement"]) {
            let old = text(&["old_string", "old_str", "oldString"]).unwrap_or("");
            changes.extend(edit_change(path, old, new));
        }
        if let Some(serde_json::Value::Array(edits)) = input.get("edits") {
            for e in edits {
                let get = |k: &str| e.get(k).and_then(serde_json::Value::as_str).unwrap_or("");
                changes.extend(edit_change(path, get("old_string"), get("new_string")));
            }
        }
        if let Some(diff) = text(&["diff"]) {
            for (old, new) in search_replace_blocks(diff) {
                changes.extend(edit_change(path, &old, &new));
            }
        }
        self.change(path, whole.as_deref(), changes);
    }
}

/// The paths a tool call names: in the usual argument keys, as a string or a list of strings.
fn paths_of(input: &serde_json::Value) -> Vec<&str> {
    let mut out = Vec::new();
    for key in [
        "path",
        "file_path",
        "filePath",
        "target_file",
        "notebook_path",
        "file",
        "absolute_path",
        "paths",
        "file_paths",
    ] {
        match input.get(key) {
            Some(serde_json::Value::String(p)) => out.push(p.as_str()),
            Some(serde_json::Value::Array(items)) => {
                out.extend(items.iter().filter_map(serde_json::Value::as_str))
            }
            _ => {}
        }
    }
    out
}

/// Whether a tool runs a sub-agent (Claude Code's `Task`, later `Agent`).
fn is_agent(lower: &str) -> bool {
    matches!(lower, "task" | "agent" | "subagent" | "dispatch_agent")
}

/// Whether a tool lists files (its result names paths).
fn is_listing(lower: &str) -> bool {
    ["glob", "list", "find", "ls"].iter().any(|w| lower == *w || lower.contains(w))
        && !lower.contains("replace")
}

/// Whether a tool searches files' text (its result is the lines found).
fn is_search(lower: &str) -> bool {
    ["grep", "search"].iter().any(|w| lower.contains(w))
        && !lower.contains("replace")
        && !lower.contains("web")
}
