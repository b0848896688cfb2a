//! Gathering a ledger: [`Ledger::of`] walks the messages in order — tool calls, the results
//! Cline and Roo send back as text, XML calls in the assistant's text, the user's words — and
//! keeps the latest state of each file, command and todo list, merging any ledger found in them.
//! It is the one pass over messages; what single texts say is read in `calls` and `words`.

use std::collections::HashMap;

use crate::model::{ContentBlock, Message, Role, ToolResultPart};

use super::calls::{
    XML_CALLS, XML_TAGS, checklist, encoded_tool_results, file_action, is_shell, json_todo, outcome,
    patch_files, strings, user_todos, xml_tags,
};
use super::probes::{normalize, words_key};
use super::words::{condenser_stub, strip_ledger, tag_bodies, user_words};
use super::{COMMAND_CHARS, CommandRun, FileAction, FileTouch, Ledger, Todo, UserWords, one_line};

impl Ledger {
    /// The ledger of messages in order: what their tool calls, results and user texts show, with
    /// any ledger block found in them parsed and merged (not duplicated).
    pub fn of(messages: &[&Message]) -> Ledger {
        let mut ledger = Ledger::default();
        let mut pending: HashMap<String, String> = HashMap::new();
        let mut keys = WordKeys::default();
        for m in messages {
            ledger.absorb(m, &mut pending, &mut keys);
        }
        ledger
    }

    /// Adds what a later ledger knows: new user messages (ones already here are not repeated),
    /// the later state of each file and command, the later todo list when it has one.
    pub fn merge(&mut self, later: Ledger) {
        let mut keys = WordKeys::default();
        for w in &self.user_messages {
            keys.insert(&w.text);
        }
        self.merge_keyed(later, &mut keys);
    }

    /// [`Ledger::merge`] with the keys of the user messages already here.
    fn merge_keyed(&mut self, later: Ledger, keys: &mut WordKeys) {
        for words in later.user_messages {
            self.add_words(words.text, keys);
        }
        self.earlier_unquoted += later.earlier_unquoted;
        for f in later.files {
            self.touch(&f.path, f.action);
        }
        for c in later.commands {
            self.ran(c.command, c.outcome);
        }
        if !later.todos.is_empty() {
            self.todos = later.todos;
        }
        for n in later.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
    }

    /// Adds a user message unless it is here already (see [`WordKeys`]); `keys` knows the ones
    /// here, so the check is a lookup, not a pass over them.
    fn add_words(&mut self, text: String, keys: &mut WordKeys) {
        if keys.insert(&text) {
            self.user_messages.push(UserWords { text });
        }
    }

    fn touch(&mut self, path: &str, action: FileAction) {
        let path = path.trim();
        if path.is_empty() {
            return;
        }
        let previous = self.files.iter().position(|f| f.path == path).map(|i| self.files.remove(i));
        let action = match (previous.map(|p| p.action), action) {
            // A read changes nothing; an edit of a new file leaves it new.
            (Some(p), FileAction::Read) => p,
            (Some(FileAction::Created), FileAction::Edited) => FileAction::Created,
            // Writing over a file seen before is an edit.
            (Some(FileAction::Read | FileAction::Edited), FileAction::Created) => FileAction::Edited,
            (_, a) => a,
        };
        self.files.push(FileTouch { path: path.to_owned(), action });
    }

    fn ran(&mut self, command: String, outcome: Option<String>) {
        let command = one_line(&command, COMMAND_CHARS);
        if command.is_empty() {
            return;
        }
        self.commands.retain(|c| c.command != command);
        self.commands.push(CommandRun { command, outcome });
    }

    fn set_outcome(&mut self, command: &str, outcome: Option<String>) {
        if outcome.is_none() {
            return;
        }
        let command = one_line(command, COMMAND_CHARS);
        if let Some(c) = self.commands.iter_mut().rev().find(|c| c.command == command) {
            c.outcome = outcome;
        }
    }

    fn absorb(&mut self, m: &Message, pending: &mut HashMap<String, String>, keys: &mut WordKeys) {
        // A user message's text blocks are read as one text: Cline and Roo put a tool result's
        // header in one block and its body in the next ones.
        let mut user_text = String::new();
        for block in &m.content {
            match block {
                // A client's wrapper (environment details, a resumption notice): not the user's.
                ContentBlock::Text { client: Some(_), .. } => {}
                ContentBlock::Text { text, .. } => {
                    // A ledger is a tag: a text without `<` holds none (one word-wise scan).
                    let tagged = text.contains('<');
                    if let Some(parsed) = tagged.then(|| Ledger::parse(text)).flatten() {
                        self.merge_keyed(parsed, keys);
                    }
                    let text = if tagged { strip_ledger(text) } else { text.into() };
                    if condenser_stub(&text) {
                        continue;
                    }
                    match m.role {
                        Role::User => {
                            if !user_text.is_empty() {
                                user_text.push('\n');
                            }
                            user_text.push_str(&text);
                        }
                        Role::Assistant => self.xml_calls(&text),
                    }
                }
                ContentBlock::ToolUse { id, name, input } => {
                    if let Some(command) = self.tool_call(name, input) {
                        pending.insert(id.clone(), command);
                    }
                }
                ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                    if let Some(command) = pending.remove(tool_use_id) {
                        let text: Vec<&str> = content
                            .iter()
                            .filter_map(|p| match p {
                                ToolResultPart::Text { text } => Some(text.as_str()),
                                ToolResultPart::Image { .. } => None,
                            })
                            .collect();
                        self.set_outcome(&command, outcome(&text.join("\n"), *is_error));
                    }
                }
                // Images and blocks kept as read (thinking, …) say nothing the ledger keeps.
                ContentBlock::Image { .. } | ContentBlock::Opaque(_) => {}
            }
        }
        if !user_text.is_empty() {
            self.encoded_results(&user_text);
            let words = user_words(&user_text);
            if let Some(list) = user_todos(&words) {
                self.todos = list;
            }
            if !m.is_summary && !words.is_empty() {
                self.add_words(words, keys);
            }
        }
    }

    /// One structured tool call: files, commands and todos. Returns the command it ran, so its
    /// result can give the outcome.
    fn tool_call(&mut self, name: &str, input: &serde_json::Value) -> Option<String> {
        let lower = name.to_ascii_lowercase();
        // Patches (Codex `apply_patch`, anywhere in the arguments) name their files.
        let mut patched = false;
        for s in strings(input) {
            for (path, action) in patch_files(s) {
                self.touch(&path, action);
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
        if let Some(action) = action {
            for key in ["path", "file_path", "filePath", "target_file", "notebook_path", "file"] {
                if let Some(path) = input.get(key).and_then(|v| v.as_str()) {
                    self.touch(path, action);
                }
            }
        }
        // Commands.
        if !is_shell(&lower) || patched {
            return None;
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
        self.ran(command.clone(), None);
        Some(command)
    }

    /// Cline's and Roo's tool calls written as XML in the assistant's text.
    fn xml_calls(&mut self, text: &str) {
        // Every call below is a tag: which of them open in the text, in one pass.
        if !text.contains('<') {
            return;
        }
        let mut present = [false; XML_TAGS.len()];
        for m in xml_tags().find_overlapping_iter(text) {
            present[m.pattern().as_usize()] = true;
        }
        if !present.contains(&true) {
            return;
        }
        for (k, (tag, action)) in XML_CALLS.into_iter().enumerate() {
            if !present[k] {
                continue;
            }
            for body in tag_bodies(text, tag) {
                if let Some(action) = action {
                    for path in tag_bodies(body, "path") {
                        self.touch(path.trim(), action);
                    }
                }
                if tag == "execute_command" {
                    for command in tag_bodies(body, "command") {
                        self.ran(command.trim().to_owned(), None);
                    }
                }
                if tag == "update_todo_list" {
                    for todos in tag_bodies(body, "todos") {
                        let list = checklist(todos);
                        if !list.is_empty() {
                            self.todos = list;
                        }
                    }
                }
            }
        }
        if !present[XML_TAGS.len() - 1] {
            return;
        }
        for progress in tag_bodies(text, "task_progress") {
            let list = checklist(progress);
            if !list.is_empty() {
                self.todos = list;
            }
        }
    }

    /// Tool results Cline and Roo send back as user text: `[tool for 'arg'] Result:` and the body.
    fn encoded_results(&mut self, text: &str) {
        for r in encoded_tool_results(text) {
            let lower = r.tool.to_ascii_lowercase();
            let Some(arg) = r.arg else { continue };
            if is_shell(&lower) {
                self.ran(arg.clone(), None);
                self.set_outcome(&arg, outcome(r.body, false));
            } else if let Some(action) = file_action(&lower) {
                self.touch(&arg, action);
            }
        }
    }
}

/// What tells the user messages of a ledger apart: their whole [`normalize`]d text, and for a
/// message a rendering cut (to head and tail, or to its instructions), its start ([`words_key`]):
/// a cut one is the same message as a whole one that starts the same way. Two whole messages
/// that only start the same way (a long preamble the user repeats) are two.
#[derive(Debug, Default)]
struct WordKeys {
    whole: std::collections::HashSet<String>,
    starts: std::collections::HashSet<String>,
    cut_starts: std::collections::HashSet<String>,
}

impl WordKeys {
    /// Records a message's words; false when they are here already (or empty).
    fn insert(&mut self, text: &str) -> bool {
        let start = words_key(text);
        if start.is_empty() {
            return false;
        }
        if text.contains("cut by Context Condenser") {
            if self.starts.contains(&start) {
                return false;
            }
            self.cut_starts.insert(start.clone());
        } else {
            // Normalized once: the whole text of a long message is the costly part.
            let whole = normalize(text);
            if self.whole.contains(&whole) || self.cut_starts.contains(&start) {
                return false;
            }
            self.whole.insert(whole);
        }
        self.starts.insert(start);
        true
    }
}
