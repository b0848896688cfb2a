//! Gathering a ledger: [`Ledger::of`] walks the messages in order — tool calls, the results
//! Cline and Roo send back as text, XML calls in the assistant's text, the user's words — and
//! keeps the latest state of each file, command and todo list, merging any ledger found in them.
//! It is the one pass over messages; what single texts say is read in `calls` and `words`.

use std::collections::HashMap;

use crate::model::{ContentBlock, Message, Role, ToolResultPart};

use super::calls::{
    XML_CALLS, XML_TAGS, checklist, command_output, encoded_tool_results, file_action, is_shell, json_todo,
    outcome, patch_files, strings, user_todos, xml_tags,
};
use super::errors::{passed, problems, summary_line};
use super::findings::findings;
use super::outline::{holds_secrets, outline};
use super::probes::{normalize, words_key};
use super::shell;
use super::words::{condenser_stub, strip_ledger, tag_bodies, user_words};
use super::{
    COMMAND_CHARS, CommandRun, ErrorSeen, FileAction, FileTouch, Finding, Ledger, Todo, UserWords, one_line,
};

impl Ledger {
    /// The ledger of messages in order: what their tool calls, results and user texts show, with
    /// any ledger block found in them parsed and merged (not duplicated).
    pub fn of(messages: &[&Message]) -> Ledger {
        Ledger::gather(messages.iter().map(|m| (None, *m)))
    }

    /// [`Ledger::of`] with each message's number, which the working state names (`#12`): the
    /// message's place among the conversation's own messages, counted from 1.
    pub fn of_numbered(messages: &[(usize, &Message)]) -> Ledger {
        Ledger::gather(messages.iter().map(|(n, m)| (Some(*n), *m)))
    }

    fn gather<'a>(messages: impl Iterator<Item = (Option<usize>, &'a Message)>) -> Ledger {
        let mut ledger = Ledger::default();
        let mut pending: HashMap<String, Pending> = HashMap::new();
        let mut keys = WordKeys::default();
        for (at, m) in messages {
            ledger.absorb(m, at, &mut pending, &mut keys);
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
            let FileTouch { path, action, at, outline, changes, mentions } = f;
            let file = self.touch(&path, action, at);
            if let Some(file) = file {
                if !outline.is_empty() {
                    file.outline = outline;
                }
                if !mentions.is_empty() {
                    file.mentions = mentions;
                }
                for c in changes {
                    add_change(&mut file.changes, c);
                }
            }
        }
        for c in later.commands {
            // The later run's state, with what an earlier one showed that it does not.
            let earlier =
                self.commands.iter().position(|e| e.command == c.command).map(|i| self.commands.remove(i));
            let merged = match earlier {
                Some(e) => CommandRun {
                    outcome: c.outcome.or(e.outcome),
                    at: c.at.or(e.at),
                    summary: c.summary.or(e.summary),
                    listed: if c.listed.is_empty() { e.listed } else { c.listed },
                    matches: if c.matches.is_empty() { e.matches } else { c.matches },
                    command: c.command,
                },
                None => c,
            };
            self.commands.push(merged);
        }
        for e in later.errors {
            self.errors.retain(|x| x.key != e.key);
            self.errors.push(e);
        }
        for f in later.findings {
            if !self.findings.iter().any(|x| x.text == f.text) {
                self.findings.push(f);
            }
        }
        for n in later.names {
            if !self.names.iter().any(|x| x.name == n.name) {
                self.names.push(n);
            }
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

    /// Records what was done to a file, moving it last; its outline and changes stay. Returns it.
    fn touch(&mut self, path: &str, action: FileAction, at: Option<usize>) -> Option<&mut FileTouch> {
        let path = path.trim();
        if path.is_empty() {
            return None;
        }
        let previous = self.files.iter().position(|f| f.path == path).map(|i| self.files.remove(i));
        let action = match (previous.as_ref().map(|p| p.action), action) {
            // A read changes nothing; an edit of a new file leaves it new.
            (Some(p), FileAction::Read) => p,
            (Some(FileAction::Created), FileAction::Edited) => FileAction::Created,
            // Writing over a file seen before is an edit.
            (Some(FileAction::Read | FileAction::Edited), FileAction::Created) => FileAction::Edited,
            (_, a) => a,
        };
        let mut file = previous.unwrap_or_else(|| FileTouch::new(path, action));
        file.action = action;
        file.at = at.or(file.at);
        if action == FileAction::Deleted {
            file.outline.clear();
        }
        self.files.push(file);
        self.files.last_mut()
    }

    fn file_mut(&mut self, path: &str) -> Option<&mut FileTouch> {
        let path = path.trim();
        self.files.iter_mut().rev().find(|f| f.path == path)
    }

    fn ran(&mut self, command: String, at: Option<usize>) {
        let command = one_line(&command, COMMAND_CHARS);
        if command.is_empty() {
            return;
        }
        self.commands.retain(|c| c.command != command);
        self.commands.push(CommandRun { at, ..CommandRun::new(command, None) });
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

    fn absorb(
        &mut self,
        m: &Message,
        at: Option<usize>,
        pending: &mut HashMap<String, Pending>,
        keys: &mut WordKeys,
    ) {
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
                        Role::Assistant => {
                            self.xml_calls(&text, at);
                            if !m.is_summary {
                                self.found(&text, at);
                            }
                        }
                    }
                }
                ContentBlock::ToolUse { id, name, input } => {
                    if let Some(call) = self.tool_call(name, input, at) {
                        pending.insert(id.clone(), call);
                    }
                }
                ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                    if let Some(call) = pending.remove(tool_use_id) {
                        let text: Vec<&str> = content
                            .iter()
                            .filter_map(|p| match p {
                                ToolResultPart::Text { text } => Some(text.as_str()),
                                ToolResultPart::Image { .. } => None,
                            })
                            .collect();
                        let text = text.join("\n");
                        if !condenser_stub(&text) {
                            self.result(&call, &text, *is_error, at);
                        }
                    }
                }
                // Images and blocks kept as read (thinking, …) say nothing the ledger keeps.
                ContentBlock::Image { .. } | ContentBlock::Opaque(_) => {}
            }
        }
        if !user_text.is_empty() {
            self.encoded_results(&user_text, at);
            let words = user_words(&user_text);
            if let Some(list) = user_todos(&words) {
                self.todos = list;
            }
            if !m.is_summary && !words.is_empty() {
                self.add_words(words, keys);
            }
        }
    }

    /// The assistant's findings in a text.
    fn found(&mut self, text: &str, at: Option<usize>) {
        for sentence in findings(text) {
            let sentence = one_line(sentence, FINDING_CHARS);
            if !self.findings.iter().any(|f| f.text == sentence) {
                self.findings.push(Finding { text: sentence, at });
            }
        }
    }

    /// What a tool's result shows: the outline of a file read, a command's outcome, the errors
    /// it reported and whether it fixed earlier ones.
    fn result(&mut self, call: &Pending, text: &str, is_error: bool, at: Option<usize>) {
        let body = command_output(text);
        if let [(path, first)] = call.reads.as_slice() {
            self.saw(path, &body, *first);
        }
        if let Some(command) = &call.command {
            // A report is words, not output: no exit code or error lines are read in it.
            if call.kind != ResultKind::Report {
                self.ran_result(command, text, &body, is_error, at);
            }
            let key = one_line(command, COMMAND_CHARS);
            if call.kind == ResultKind::Read {
                let ok = self.commands.iter().rev().find(|c| c.command == key).is_some_and(|c| {
                    c.outcome.as_deref().is_none_or(|o| o == "exit 0")
                        && !self.errors.iter().any(|e| e.command.as_deref() == Some(key.as_str()))
                });
                if ok {
                    self.commands.retain(|c| c.command != key);
                }
            }
            let entry = self.commands.iter_mut().rev().find(|c| c.command == key);
            match (call.kind, entry) {
                (ResultKind::Listing | ResultKind::Report, Some(c)) => c.listed = listed(paths_in(&body)),
                (ResultKind::Search, Some(c)) => c.matches = found_lines(&body),
                _ => {}
            }
            if call.kind == ResultKind::Report {
                for sentence in findings(&body).into_iter().take(MAX_REPORT_FINDINGS) {
                    let sentence = one_line(sentence, FINDING_CHARS);
                    if !self.findings.iter().any(|f| f.text == sentence) {
                        self.findings.push(Finding { text: sentence, at });
                    }
                }
            }
        }
    }

    /// What a read showed of a file: its outline, and for a document what it mentions.
    fn saw(&mut self, path: &str, text: &str, first: usize) {
        let symbols = outline(path, text, first, MAX_OUTLINE);
        let named = mentions(path, text);
        if let Some(file) = self.file_mut(path) {
            if !symbols.is_empty() {
                file.outline = symbols.iter().map(|s| s.render()).collect();
            }
            if !named.is_empty() {
                file.mentions = named;
            }
        }
    }

    /// A command's result: its outcome and summary, the errors it reported, the ones it fixed.
    fn ran_result(&mut self, command: &str, text: &str, body: &str, is_error: bool, at: Option<usize>) {
        let outcome = outcome(text, body, is_error);
        let passed_run = outcome.as_deref() == Some("exit 0") || (outcome.is_none() && !is_error);
        self.set_outcome(command, outcome);
        let summary = summary_line(body);
        let key = one_line(command, COMMAND_CHARS);
        if let Some(c) = self.commands.iter_mut().rev().find(|c| c.command == key) {
            c.summary = summary.clone();
            c.at = at.or(c.at);
        }
        let found = problems(body);
        // A failure no tool format names: its last lines say what went wrong.
        if !passed_run
            && found.is_empty()
            && summary.is_none()
            && let Some(c) = self.commands.iter_mut().rev().find(|c| c.command == key)
        {
            // Cline's own lines around the output, and the line the outcome quotes already, aside.
            let said = c.outcome.clone().unwrap_or_default();
            let tail: Vec<String> = body
                .lines()
                .map(|l| one_line(l, 160))
                .filter(|l| {
                    !l.is_empty()
                        && !matches!(l.as_str(), "Command executed." | "Output:")
                        && !said.contains(l.as_str())
                })
                .collect();
            let skip = tail.len().saturating_sub(FAILURE_TAIL);
            c.matches = tail[skip..].to_vec();
        }
        let failing_summary = summary.as_deref().is_some_and(|s| {
            let l = s.to_ascii_lowercase();
            l.contains("fail") && !l.contains(" 0 failed") && !l.contains("0 failed") || l.contains("error")
        });
        if passed_run && found.is_empty() && !failing_summary {
            let how = format!("`{}` passed at {}", one_line(command, 80), number(at));
            for e in self
                .errors
                .iter_mut()
                .filter(|e| e.command.as_deref() == Some(key.as_str()) && e.fixed.is_none())
            {
                e.fixed = Some(how.clone());
            }
        }
        for name in passed(body) {
            let how = format!("passed at {}", number(at));
            for e in self.errors.iter_mut().filter(|e| e.key == name && e.fixed.is_none()) {
                e.fixed = Some(how.clone());
            }
        }
        for p in found {
            self.errors.retain(|e| e.key != p.key);
            self.errors.push(ErrorSeen {
                key: p.key,
                text: p.text,
                at,
                command: Some(key.clone()),
                fixed: None,
            });
        }
    }

    /// One structured tool call: files, commands and todos. Returns what its result will say
    /// more of: the files it reads, the command it runs.
    fn tool_call(&mut self, name: &str, input: &serde_json::Value, at: Option<usize>) -> Option<Pending> {
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

    /// Records a file's new whole text (its outline, and for a document what it mentions) and
    /// changes.
    fn change(&mut self, path: &str, whole: Option<&str>, changes: Vec<String>) {
        let symbols = whole.map(|w| outline(path, w, 1, MAX_OUTLINE));
        let named = whole.map(|w| mentions(path, w));
        let Some(file) = self.file_mut(path) else { return };
        if let Some(symbols) = symbols {
            file.outline = symbols.iter().map(|s| s.render()).collect();
        }
        if let Some(named) = named {
            file.mentions = named;
        }
        for c in changes {
            add_change(&mut file.changes, c);
        }
    }

    /// One file of an `apply_patch` patch. What its added lines refer to joins what the file
    /// referred to.
    fn patched(&mut self, hunk: PatchFile, at: Option<usize>) {
        self.touch(&hunk.path, hunk.action, at);
        let whole = (hunk.action == FileAction::Created).then_some(hunk.added.as_str());
        self.change(&hunk.path, whole, hunk.changes);
        if hunk.action != FileAction::Created {
            let added = mentions(&hunk.path, &hunk.added);
            if let Some(file) = self.file_mut(&hunk.path) {
                for name in added {
                    if !file.mentions.contains(&name) && file.mentions.len() < MAX_MENTIONS {
                        file.mentions.push(name);
                    }
                }
            }
        }
    }

    /// Cline's and Roo's tool calls written as XML in the assistant's text.
    fn xml_calls(&mut self, text: &str, at: Option<usize>) {
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
                        let path = path.trim();
                        self.touch(path, action, at);
                        let whole = tag_bodies(body, "content").into_iter().next().map(str::to_owned);
                        let mut changes = Vec::new();
                        if let Some(w) = &whole {
                            changes.push(format!("written whole, {} lines", w.lines().count()));
                        }
                        for diff in tag_bodies(body, "diff") {
                            for (old, new) in search_replace_blocks(diff) {
                                changes.extend(edit_change(path, &old, &new));
                            }
                        }
                        if action != FileAction::Read {
                            self.change(path, whole.as_deref(), changes);
                        }
                    }
                }
                if tag == "execute_command" {
                    for command in tag_bodies(body, "command") {
                        let command = command.trim();
                        for (path, action) in shell::effects(command).files {
                            self.touch(&path, action, at);
                        }
                        self.ran(shell::display(command), at);
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
    fn encoded_results(&mut self, text: &str, at: Option<usize>) {
        for r in encoded_tool_results(text) {
            let lower = r.tool.to_ascii_lowercase();
            let Some(arg) = r.arg else { continue };
            if is_shell(&lower) {
                let shown = shell::display(&arg);
                self.ran(shown.clone(), at);
                let body = tool_part(r.body);
                self.ran_result(&shown, body, body, false, at);
            } else if let Some(action) = file_action(&lower) {
                self.touch(&arg, action, at);
                if action == FileAction::Read {
                    let body = tool_part(r.body);
                    let body = tag_bodies(body, "content").into_iter().next().unwrap_or(body);
                    self.saw(&arg, body, 1);
                }
            }
        }
    }
}

/// The tool's own part of a result Cline or Roo sent as text: up to the client's context or the
/// user's words that follow it (`<feedback>`, `<answer>`, `<user_message>`).
fn tool_part(body: &str) -> &str {
    let end = ["<environment_details>", "<feedback>", "<answer>", "<user_message>"]
        .iter()
        .filter_map(|tag| body.find(tag))
        .min()
        .unwrap_or(body.len());
    &body[..end]
}

/// What a tool call's result will tell more of.
#[derive(Debug)]
struct Pending {
    /// The command it runs, as the ledger shows it.
    command: Option<String>,
    /// The files it prints, each with its first line printed.
    reads: Vec<(String, usize)>,
    /// What its result is: output, a listing of paths, or a sub-agent's report.
    kind: ResultKind,
}

/// What a tool's result holds, for what the ledger reads of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResultKind {
    /// A command's output, or a file's text.
    Output,
    /// Paths: a listing.
    Listing,
    /// Lines found by a search.
    Search,
    /// A sub-agent's report: findings and the paths it names.
    Report,
    /// A command that only printed files (`cat`, `sed -n`): the files it read say it; the
    /// command itself is kept only when it failed.
    Read,
}

/// The most paths a listing keeps.
const MAX_LISTED: usize = 300;

/// The paths a text names, in order, without repeats: words with a `/` and a named segment, or
/// a file name with an extension; a `path:12:` location gives its path.
fn paths_in(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for word in text.split(|c: char| {
        c.is_whitespace()
            || matches!(c, ',' | ';' | '(' | ')' | '[' | ']' | '{' | '}' | '"' | '\'' | '`' | '<' | '>' | '|')
    }) {
        let word = word.split(':').next().unwrap_or(word).trim_end_matches(['.', ':']);
        if word.len() < 3 || word.contains("://") || word.starts_with("//") {
            continue;
        }
        let name = word.rsplit('/').next().unwrap_or(word);
        let file = name.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=6).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        });
        let dir = word.matches('/').count() >= 1 && word.split('/').filter(|s| !s.is_empty()).count() >= 2;
        let valid =
            word.chars().all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '~' | '@' | '+'));
        if valid && (file || dir) && name.chars().any(|c| c.is_alphabetic()) && !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// What a file's text refers to: for a document (Markdown, text) the paths and code names it
/// mentions, for a source file what it imports; the first [`MAX_MENTIONS`], without repeats.
fn mentions(path: &str, text: &str) -> Vec<String> {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    if !matches!(ext.as_str(), "md" | "mdx" | "markdown" | "txt" | "rst" | "adoc") {
        // A source file refers to what it imports.
        return super::outline::imports(path, text, MAX_MENTIONS);
    }
    let mut out: Vec<String> = Vec::new();
    for name in super::names::names_in(text) {
        if name.len() >= 4 && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
            if out.len() >= MAX_MENTIONS {
                break;
            }
        }
    }
    out
}

/// The most names a document's mentions keep.
const MAX_MENTIONS: usize = 40;

/// The most lines of a search kept.
const MAX_MATCHES: usize = 30;

/// The lines a search printed, the first [`MAX_MATCHES`], each on one line and cut; then how
/// many more.
fn found_lines(output: &str) -> Vec<String> {
    let lines: Vec<&str> = output.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let more = lines.len().saturating_sub(MAX_MATCHES);
    let mut out: Vec<String> = lines.into_iter().take(MAX_MATCHES).map(|l| one_line(l, 120)).collect();
    if more > 0 {
        out.push(format!("(+{more} more lines)"));
    }
    out
}

/// The first [`MAX_LISTED`] of some paths, then how many more: the paths with a folder first,
/// then the bare names no such path ends with.
fn listed(paths: Vec<&str>) -> Vec<String> {
    let (full, bare): (Vec<&str>, Vec<&str>) = paths.into_iter().partition(|p| p.contains('/'));
    let bare: Vec<&str> =
        bare.into_iter().filter(|b| !full.iter().any(|f| f.ends_with(&format!("/{b}")))).collect();
    let paths: Vec<&str> = full.into_iter().chain(bare).collect();
    let more = paths.len().saturating_sub(MAX_LISTED);
    let mut out: Vec<String> = paths.into_iter().take(MAX_LISTED).map(str::to_owned).collect();
    if more > 0 {
        out.push(format!("+{more} more"));
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

/// The most symbols a file's outline keeps.
const MAX_OUTLINE: usize = 120;
/// The most changes a file keeps (the latest).
const MAX_CHANGES: usize = 4;
/// Characters of a finding.
const FINDING_CHARS: usize = 300;
/// The last lines of a failed command's output kept when no error format names the failure.
const FAILURE_TAIL: usize = 3;
/// The most findings kept of one sub-agent's report.
const MAX_REPORT_FINDINGS: usize = 6;

/// `#12`, or `a hidden message` when the number is not known.
pub(super) fn number(at: Option<usize>) -> String {
    at.map_or_else(|| "a later message".to_owned(), |n| format!("#{n}"))
}

/// Adds a change, the latest last, without repeats, at most [`MAX_CHANGES`].
fn add_change(changes: &mut Vec<String>, change: String) {
    changes.retain(|c| *c != change);
    changes.push(change);
    if changes.len() > MAX_CHANGES {
        changes.remove(0);
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

/// An edit as the ledger writes it: the symbols it touches and its first changed line.
fn edit_change(path: &str, old: &str, new: &str) -> Option<String> {
    let old_lines: std::collections::HashSet<&str> = old.lines().map(str::trim).collect();
    let first = new.lines().map(str::trim).find(|l| !l.is_empty() && !old_lines.contains(l));
    let names = |text: &str| -> Vec<String> {
        outline(path, text, 1, 4).into_iter().map(|s| format!("{} {}", s.kind, s.name)).collect()
    };
    let mut symbols = names(new);
    if symbols.is_empty() {
        symbols = names(old);
    }
    // A file whose values may be secrets is told by its names alone, never a line of it.
    if holds_secrets(path) {
        return (!symbols.is_empty()).then(|| format!("{} (values not shown)", symbols.join(", ")));
    }
    let quote = |l: &str| {
        let l = one_line(l, 100);
        if l.contains('`') { format!("\"{l}\"") } else { format!("`{l}`") }
    };
    match (symbols.is_empty(), first) {
        (_, None) if new.trim().is_empty() && !old.trim().is_empty() => {
            Some(format!("removed {}", quote(old.lines().map(str::trim).find(|l| !l.is_empty())?)))
        }
        (true, Some(l)) => Some(quote(l)),
        (false, Some(l)) => Some(format!("{}: {}", symbols.join(", "), quote(l))),
        (false, None) => Some(symbols.join(", ")),
        (true, None) => None,
    }
}

/// The `(search, replace)` pairs of a Cline `replace_in_file` or Roo `apply_diff` diff
/// (`------- SEARCH` / `=======` / `+++++++ REPLACE`, or `<<<<<<< SEARCH` / `>>>>>>> REPLACE`).
fn search_replace_blocks(diff: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut old = String::new();
    let mut new = String::new();
    let mut state = 0; // 0 outside, 1 in search, 2 in replace
    for line in diff.lines() {
        let t = line.trim();
        if t.ends_with("SEARCH") && (t.starts_with("-------") || t.starts_with("<<<<<<<")) {
            state = 1;
            old.clear();
            new.clear();
        } else if t == "=======" && state == 1 {
            state = 2;
        } else if t.ends_with("REPLACE")
            && (t.starts_with("+++++++") || t.starts_with(">>>>>>>"))
            && state == 2
        {
            out.push((std::mem::take(&mut old), std::mem::take(&mut new)));
            state = 0;
        } else if state == 1 {
            // Roo's `:start_line:` and its separator are not the file's text.
            if !(t.starts_with(":start_line:") || t.starts_with(":end_line:") || t == "-------") {
                old.push_str(line);
                old.push('\n');
            }
        } else if state == 2 {
            new.push_str(line);
            new.push('\n');
        }
    }
    out
}

/// One file of an `apply_patch` patch: what is done to it, what its hunks change, and for a
/// new file its text.
struct PatchFile {
    path: String,
    action: FileAction,
    changes: Vec<String>,
    added: String,
}

/// The files of an `apply_patch` patch with their hunks: `@@ context` names the symbol a hunk is
/// in; its first `+` line is what changed.
fn patch_hunks(text: &str) -> Vec<PatchFile> {
    if !text.contains("*** ") {
        return Vec::new();
    }
    let mut out: Vec<PatchFile> = Vec::new();
    let files = patch_files(text);
    if files.is_empty() {
        return out;
    }
    let mut current: Option<PatchFile> = None;
    let mut context = String::new();
    let mut first_added: Option<String> = None;
    let flush_hunk = |file: &mut PatchFile, context: &mut String, first: &mut Option<String>| {
        if let Some(line) = first.take() {
            let line = one_line(&line, 100);
            let quoted = if line.contains('`') { format!("\"{line}\"") } else { format!("`{line}`") };
            let place = one_line(context, 80);
            let place = place.trim_end_matches([':', '{', ' ']);
            let change = if place.is_empty() { quoted } else { format!("{place}: {quoted}") };
            add_change(&mut file.changes, change);
        }
        context.clear();
    };
    for line in text.lines() {
        let header = [
            ("*** Add File: ", FileAction::Created),
            ("*** Update File: ", FileAction::Edited),
            ("*** Delete File: ", FileAction::Deleted),
            ("*** Move to: ", FileAction::Created),
        ]
        .into_iter()
        .find_map(|(p, a)| line.trim().strip_prefix(p).map(|path| (path.trim().to_owned(), a)));
        if let Some((path, action)) = header {
            if let Some(mut f) = current.take() {
                flush_hunk(&mut f, &mut context, &mut first_added);
                out.push(f);
            }
            current = Some(PatchFile { path, action, changes: Vec::new(), added: String::new() });
            continue;
        }
        let Some(file) = current.as_mut() else { continue };
        if let Some(ctx) = line.strip_prefix("@@") {
            flush_hunk(file, &mut context, &mut first_added);
            context = ctx.trim().to_owned();
        } else if let Some(added) = line.strip_prefix('+') {
            file.added.push_str(added);
            file.added.push('\n');
            if file.action != FileAction::Created && first_added.is_none() && !added.trim().is_empty() {
                first_added = Some(added.trim().to_owned());
            }
        } else if line.starts_with("*** End Patch") {
            flush_hunk(file, &mut context, &mut first_added);
        }
    }
    if let Some(mut f) = current.take() {
        flush_hunk(&mut f, &mut context, &mut first_added);
        out.push(f);
    }
    out
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
