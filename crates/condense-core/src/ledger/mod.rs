//! The state ledger: what a condensation must not forget, gathered by code (never by an LLM) from
//! the messages it hides — the user's own words, the files touched, the commands run and their
//! outcome, the todo list — and rendered as one delimited block the model reads beside the
//! summary (or alone, for providers that write none).
//!
//! Extraction reads the public formats of the common agents: Claude Code's tools (`Read`,
//! `Write`, `Edit`, `MultiEdit`, `NotebookEdit`, `Bash`, `TodoWrite`), Codex (`shell` with
//! `apply_patch` and its `*** Update File:` headers, `update_plan`), Cline and Roo (`read_file`,
//! `write_to_file`, `replace_in_file`, `apply_diff`, `insert_content`, `search_and_replace`,
//! `execute_command`, `update_todo_list`, `task_progress`, in tool calls or as XML in the
//! assistant's text, and their results sent back as user text: `[read_file for 'x'] Result:`),
//! and OpenAI function calls with the same argument keys.
//!
//! A rendered block reads back with [`Ledger::parse`], so a later condensation merges the ledger
//! an earlier one left instead of repeating it. [`Ledger::probes`] lists the facts a condensation
//! is checked against ([`check_probes`]).

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{ContentBlock, Message, Role, ToolResultPart};
use crate::tokens::TokenCounter;

mod constraints;
mod pasted;

pub use constraints::{constraints, is_constraint};
pub use pasted::{cut_pasted, own_words, pasted_ranges};

/// The first line of a rendered ledger.
pub const OPEN_TAG: &str = "<context_condenser_ledger>";
/// The last line of a rendered ledger.
pub const CLOSE_TAG: &str = "</context_condenser_ledger>";
/// The share of a target, in percent, the user's words may take in the ledger.
pub const BUDGET_PERCENT: usize = 15;
/// Characters of a user message's start that make its probe.
pub const PROBE_CHARS: usize = 80;
/// A user message this short is put back whole when the probes miss it; a longer one by its start.
pub const SHORT_CHARS: usize = 300;
/// Commands longer than this many characters are cut.
const COMMAND_CHARS: usize = 200;
/// A message cut to fit the budget keeps about this many characters of its head, and half of it
/// of its tail.
const HEAD_CHARS: usize = 600;

const INTRO: &str = "Kept by Context Condenser, by code, from the messages it hid.";
const USER_HEADER: &str = "## The user's own words";
const FILES_HEADER: &str = "## Files touched (latest state)";
const COMMANDS_HEADER: &str = "## Commands run";
const TODOS_HEADER: &str = "## Todo list (latest version)";
const NOTES_HEADER: &str = "## Also not to lose";
const MESSAGE_PREFIX: &str = "### User message";

/// One user message's own words, client wrappers removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserWords {
    /// The words, verbatim (or cut to head and tail by a rendering over budget).
    pub text: String,
}

/// What was done to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileAction {
    /// Read only.
    Read,
    /// Created (or written from scratch).
    Created,
    /// Changed.
    Edited,
    /// Deleted.
    Deleted,
}

impl FileAction {
    /// The word the ledger writes.
    pub fn as_str(self) -> &'static str {
        match self {
            FileAction::Read => "read",
            FileAction::Created => "created",
            FileAction::Edited => "edited",
            FileAction::Deleted => "deleted",
        }
    }

    fn parse(word: &str) -> Option<FileAction> {
        Some(match word {
            "read" => FileAction::Read,
            "created" => FileAction::Created,
            "edited" => FileAction::Edited,
            "deleted" => FileAction::Deleted,
            _ => return None,
        })
    }
}

/// A file and the latest thing done to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileTouch {
    /// The path as the tool named it.
    pub path: String,
    /// The latest state: a read does not undo an edit; an edit of a created file keeps it created.
    pub action: FileAction,
}

/// A command and, when its result showed it, its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommandRun {
    /// The command, on one line.
    pub command: String,
    /// `exit N`, or the first error line; absent when the result did not show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// One item of the todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// The item, on one line.
    pub text: String,
    /// Done, or still open (pending or in progress).
    pub done: bool,
}

/// What a condensation must not forget (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Ledger {
    /// The user's own words, oldest first.
    pub user_messages: Vec<UserWords>,
    /// Files touched, in the order of their latest touch.
    pub files: Vec<FileTouch>,
    /// Commands run, in the order of their latest run.
    pub commands: Vec<CommandRun>,
    /// The latest version of the todo list.
    pub todos: Vec<Todo>,
    /// User messages an earlier rendering named by count instead of quoting.
    #[serde(default)]
    pub earlier_unquoted: usize,
    /// Short items the probes put back (the start of a user message, a file, an open todo).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A fact a condensation is checked against: found when `needle` occurs in the text the model
/// sees (whitespace-normalized, case-insensitive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Probe {
    /// What the probe stands for, for people: `user: …`, `file: …`, `todo: …`.
    pub label: String,
    /// The text that must be found.
    pub needle: String,
    /// What to put back when the needle is missing.
    pub restore: String,
}

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

    /// Whether there is nothing to keep.
    pub fn is_empty(&self) -> bool {
        self.user_messages.is_empty()
            && self.files.is_empty()
            && self.commands.is_empty()
            && self.todos.is_empty()
            && self.earlier_unquoted == 0
            && self.notes.is_empty()
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

    /// Leaves out what the model still sees elsewhere: user words whose whole text is in
    /// `visible_text`, and the files, commands and todo list that `later` (the ledger of the
    /// visible messages that come after the hidden ones) shows in a later state.
    pub fn prune(&mut self, later: &Ledger, visible_text: &str) {
        self.prune_in(&Later::of_ledger(later), &Haystack(normalize(visible_text)));
    }

    /// [`Ledger::prune`] with what the later messages show already gathered and the visible text
    /// already normalized; every needle is looked for in one pass over it.
    pub fn prune_in(&mut self, later: &Later, visible: &Haystack) {
        let words: Vec<String> = self.user_messages.iter().map(|w| normalize(&w.text)).collect();
        let notes: Vec<String> = self.notes.iter().map(|n| normalize(n)).collect();
        let found = visible.find(words.iter().chain(&notes).map(String::as_str));
        let (words_found, notes_found) = found.split_at(words.len());
        let mut seen = words_found.iter();
        self.user_messages.retain(|_| !seen.next().copied().unwrap_or(false));
        let mut seen = notes_found.iter();
        self.notes.retain(|_| !seen.next().copied().unwrap_or(false));
        self.files.retain(|f| !later.files.contains(&f.path));
        self.commands.retain(|c| !later.commands.contains(&c.command));
        if later.todos {
            self.todos.clear();
        }
    }

    /// The facts to check after a condensation: every user message (its start), every file
    /// created, edited or deleted (its path), every open todo (its text).
    pub fn probes(&self) -> Vec<Probe> {
        let mut out = Vec::new();
        for w in &self.user_messages {
            let needle = words_key(&w.text).trim_end().to_owned();
            if needle.is_empty() {
                continue;
            }
            // A short message (an instruction) comes back whole; a long one (a pasted log) by its
            // start.
            let restore = if w.text.chars().count() <= SHORT_CHARS {
                w.text.clone()
            } else {
                head_of(&w.text, PROBE_CHARS)
            };
            out.push(Probe { label: format!("user: {}", preview(&w.text)), needle, restore });
            // Every instruction of it, whole: a cut one is found missing and put back.
            for sentence in constraints(&w.text) {
                out.push(Probe {
                    label: format!("instruction: {}", preview(sentence)),
                    needle: sentence.to_owned(),
                    restore: sentence.to_owned(),
                });
            }
        }
        for f in self.files.iter().filter(|f| f.action != FileAction::Read) {
            out.push(Probe {
                label: format!("file: {} {}", f.action.as_str(), f.path),
                needle: f.path.clone(),
                restore: format!("{} {}", f.action.as_str(), f.path),
            });
        }
        for t in self.todos.iter().filter(|t| !t.done) {
            out.push(Probe {
                label: format!("todo: {}", preview(&t.text)),
                needle: t.text.clone(),
                restore: format!("open todo: {}", t.text),
            });
        }
        out
    }

    /// The ledger as one block between [`OPEN_TAG`] and [`CLOSE_TAG`]. The user's words take at
    /// most `budget_tokens`: past it, the longest messages are cut to head and tail first; only
    /// then the oldest are named by count; the first always stays.
    pub fn render(&self, budget_tokens: usize, tokens: &dyn TokenCounter) -> String {
        let mut out = format!("{OPEN_TAG}\n{INTRO}\n");
        if !self.user_messages.is_empty() || self.earlier_unquoted > 0 {
            out.push_str(&format!("\n{USER_HEADER}\n"));
            out.push_str(&self.render_words(budget_tokens, tokens));
        }
        if !self.files.is_empty() {
            out.push_str(&format!("\n{FILES_HEADER}\n"));
            for f in &self.files {
                out.push_str(&format!("- {} {}\n", f.action.as_str(), f.path));
            }
        }
        if !self.commands.is_empty() {
            out.push_str(&format!("\n{COMMANDS_HEADER}\n"));
            for c in &self.commands {
                out.push_str(&format!("- $ {}\n", c.command));
                if let Some(o) = &c.outcome {
                    out.push_str(&format!("  → {o}\n"));
                }
            }
        }
        if !self.todos.is_empty() {
            out.push_str(&format!("\n{TODOS_HEADER}\n"));
            for t in &self.todos {
                out.push_str(&format!("- [{}] {}\n", if t.done { "x" } else { " " }, t.text));
            }
        }
        if !self.notes.is_empty() {
            out.push_str(&format!("\n{NOTES_HEADER}\n"));
            for n in &self.notes {
                out.push_str(&format!("- {n}\n"));
            }
        }
        out.push_str(CLOSE_TAG);
        out
    }

    /// The user's words within `budget` tokens. Past it, the longest messages are cut to head
    /// and tail, keeping every instruction of the cut middle ([`constraints`]) word for word;
    /// then the oldest (never the first) are cut to their instructions alone, or named by count
    /// when they hold none. Instructions are never cut: they may take the ledger past its budget.
    fn render_words(&self, budget: usize, tokens: &dyn TokenCounter) -> String {
        let mut texts: Vec<Option<String>> =
            self.user_messages.iter().map(|w| Some(w.text.clone())).collect();
        let cost = |t: &Option<String>| t.as_deref().map_or(0, |t| tokens.count_text_cached(t) + 6);
        let mut total: usize = texts.iter().map(cost).sum();
        // First cut the longest messages (pasted logs and files) to their head and tail.
        let mut cut = vec![false; texts.len()];
        while total > budget {
            let Some(i) = (0..texts.len())
                .filter(|&i| !cut[i] && texts[i].as_ref().is_some_and(|t| t.chars().count() > HEAD_CHARS * 2))
                .max_by_key(|&i| texts[i].as_ref().map_or(0, String::len))
            else {
                break;
            };
            cut[i] = true;
            let before = cost(&texts[i]);
            texts[i] = texts[i].as_deref().map(cut_middle);
            total = total - before + cost(&texts[i]);
        }
        // Then the oldest but the first, down to their instructions.
        for text in texts.iter_mut().skip(1) {
            if total <= budget {
                break;
            }
            let before = cost(text);
            *text = text.as_deref().and_then(instructions_only);
            total = total - before + cost(text);
        }
        let mut out = String::new();
        let mut number = 0;
        let mut message = |out: &mut String, text: &str| {
            number += 1;
            out.push_str(&format!("{MESSAGE_PREFIX} {number}\n{text}\n"));
        };
        let mut rest = texts.iter();
        let unquoted_total = self.earlier_unquoted + texts.iter().filter(|t| t.is_none()).count();
        if let Some(Some(first)) = rest.next() {
            message(&mut out, first);
        }
        if unquoted_total > 0 {
            out.push_str(&format!("({unquoted_total} earlier user messages not quoted)\n"));
        }
        for t in rest.flatten() {
            message(&mut out, t);
        }
        out
    }

    /// Reads a block written by [`Ledger::render`] (anywhere in `text`); `None` when there is none.
    pub fn parse(text: &str) -> Option<Ledger> {
        let start = text.find(OPEN_TAG)? + OPEN_TAG.len();
        let end = start + text[start..].find(CLOSE_TAG)?;
        let body = &text[start..end];
        let mut ledger = Ledger::default();
        let mut section = "";
        let mut current: Option<Vec<&str>> = None;
        let flush = |ledger: &mut Ledger, current: &mut Option<Vec<&str>>| {
            if let Some(lines) = current.take() {
                let text = lines.join("\n").trim_end().to_owned();
                if !text.is_empty() {
                    ledger.user_messages.push(UserWords { text });
                }
            }
        };
        for line in body.lines() {
            if [USER_HEADER, FILES_HEADER, COMMANDS_HEADER, TODOS_HEADER, NOTES_HEADER].contains(&line) {
                flush(&mut ledger, &mut current);
                section = line;
                continue;
            }
            match section {
                USER_HEADER => {
                    if line.strip_prefix(MESSAGE_PREFIX).is_some_and(|n| n.trim().parse::<usize>().is_ok()) {
                        flush(&mut ledger, &mut current);
                        current = Some(Vec::new());
                    } else if let Some(n) = line
                        .strip_prefix('(')
                        .and_then(|l| l.strip_suffix(" earlier user messages not quoted)"))
                        .and_then(|n| n.parse::<usize>().ok())
                    {
                        flush(&mut ledger, &mut current);
                        ledger.earlier_unquoted += n;
                    } else if let Some(lines) = current.as_mut() {
                        lines.push(line);
                    }
                }
                FILES_HEADER => {
                    let touch = line.strip_prefix("- ").and_then(|l| l.split_once(' '));
                    if let Some((action, path)) = touch
                        && let Some(action) = FileAction::parse(action)
                    {
                        ledger.files.push(FileTouch { path: path.to_owned(), action });
                    }
                }
                COMMANDS_HEADER => {
                    if let Some(command) = line.strip_prefix("- $ ") {
                        ledger.commands.push(CommandRun { command: command.to_owned(), outcome: None });
                    } else if let Some(outcome) = line.strip_prefix("  → ")
                        && let Some(last) = ledger.commands.last_mut()
                    {
                        last.outcome = Some(outcome.to_owned());
                    }
                }
                TODOS_HEADER => {
                    if let Some(t) = checkbox(line) {
                        ledger.todos.push(t);
                    }
                }
                NOTES_HEADER => {
                    if let Some(n) = line.strip_prefix("- ") {
                        ledger.notes.push(n.to_owned());
                    }
                }
                _ => {}
            }
        }
        flush(&mut ledger, &mut current);
        Some(ledger)
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

/// Checks probes against the text the model sees: `(kept, missing)`.
pub fn check_probes<'a>(probes: &'a [Probe], haystack: &str) -> (Vec<&'a Probe>, Vec<&'a Probe>) {
    check_probes_in(probes, &Haystack(normalize(haystack)))
}

/// [`check_probes`] against text already normalized, every needle looked for in one pass.
pub fn check_probes_in<'a>(probes: &'a [Probe], visible: &Haystack) -> (Vec<&'a Probe>, Vec<&'a Probe>) {
    let needles: Vec<String> = probes.iter().map(|p| normalize(&p.needle)).collect();
    let found = visible.find(needles.iter().map(String::as_str));
    let mut kept = Vec::new();
    let mut missing = Vec::new();
    for (p, found) in probes.iter().zip(found) {
        if found { kept.push(p) } else { missing.push(p) }
    }
    (kept, missing)
}

/// What the messages after the hidden ones show of files, commands and the todo list: the
/// parts of their [`Ledger`] that [`Ledger::prune_in`] reads. The union of the messages' own is
/// the whole list's, so a caller may gather it message by message (see [`Later::of_message`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Later {
    /// The paths of the files they touch.
    pub files: std::collections::HashSet<String>,
    /// The commands they run.
    pub commands: std::collections::HashSet<String>,
    /// Whether they carry a todo list.
    pub todos: bool,
}

impl Later {
    /// What a ledger shows.
    pub fn of_ledger(ledger: &Ledger) -> Later {
        Later {
            files: ledger.files.iter().map(|f| f.path.clone()).collect(),
            commands: ledger.commands.iter().map(|c| c.command.clone()).collect(),
            todos: !ledger.todos.is_empty(),
        }
    }

    /// What one message shows: its own ledger's (a file's path, a command and a todo list are
    /// each found within one message, whatever came before it).
    pub fn of_message(message: &Message) -> Later {
        Later::of_ledger(&Ledger::of(&[message]))
    }

    /// Adds what another part of the list shows.
    pub fn add(&mut self, other: &Later) {
        self.files.extend(other.files.iter().cloned());
        self.commands.extend(other.commands.iter().cloned());
        self.todos |= other.todos;
    }
}

/// The text the model sees, [`normalize`]d: what probes and pruning look for needles in. Built
/// message by message ([`Haystack::push`]), it is the same as `normalize(&view_text(messages))`:
/// the words of one message never run into the next one's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Haystack(String);

impl Haystack {
    /// The normalized view text of these messages.
    pub fn of(messages: &[&Message]) -> Haystack {
        let mut out = Haystack::default();
        for m in messages {
            out.push(&piece(m));
        }
        out
    }

    /// Appends one message's normalized text (its [`piece`]).
    pub fn push(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        self.0.push_str(piece);
    }

    /// The normalized text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Which needles (normalized already) occur in the text, in one pass for all of them. An
    /// empty needle is found.
    pub fn find<'n>(&self, needles: impl IntoIterator<Item = &'n str>) -> Vec<bool> {
        let needles: Vec<&str> = needles.into_iter().collect();
        let mut found: Vec<bool> = needles.iter().map(|n| n.is_empty()).collect();
        let wanted: Vec<usize> = (0..needles.len()).filter(|&i| !found[i]).collect();
        if wanted.is_empty() {
            return found;
        }
        let patterns: Vec<&str> = wanted.iter().map(|&i| needles[i]).collect();
        let searcher = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::Standard)
            .build(&patterns)
            .expect("a few needles build an automaton");
        let mut left = wanted.len();
        let mut hit = vec![false; wanted.len()];
        for m in searcher.find_overlapping_iter(&self.0) {
            let k = m.pattern().as_usize();
            if !hit[k] {
                hit[k] = true;
                left -= 1;
                if left == 0 {
                    break;
                }
            }
        }
        for (k, &i) in wanted.iter().enumerate() {
            found[i] = hit[k];
        }
        found
    }
}

/// One message's text as the probes read it: `normalize(&view_text(&[message]))`, without
/// building the view text first.
pub fn piece(message: &Message) -> String {
    let mut out = String::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text, .. } => push_normalized(text, &mut out),
            ContentBlock::ToolUse { name, input, .. } => {
                push_normalized(name, &mut out);
                for s in strings(input) {
                    push_normalized(s, &mut out);
                }
            }
            ContentBlock::ToolResult { content, .. } => {
                for p in content {
                    if let ToolResultPart::Text { text } = p {
                        push_normalized(text, &mut out);
                    }
                }
            }
            ContentBlock::Image { .. } | ContentBlock::Opaque(_) => {}
        }
    }
    out
}

/// Everything a model reads in these messages, as one text: text blocks, tool names and the
/// string values of their arguments, tool result texts.
pub fn view_text(messages: &[&Message]) -> String {
    let mut out = String::new();
    for m in messages {
        for block in &m.content {
            match block {
                ContentBlock::Text { text, .. } => out.push_str(text),
                ContentBlock::ToolUse { name, input, .. } => {
                    out.push_str(name);
                    for s in strings(input) {
                        out.push('\n');
                        out.push_str(s);
                    }
                }
                ContentBlock::ToolResult { content, .. } => {
                    for p in content {
                        if let ToolResultPart::Text { text } = p {
                            out.push_str(text);
                            out.push('\n');
                        }
                    }
                }
                ContentBlock::Image { .. } | ContentBlock::Opaque(_) => {}
            }
            out.push('\n');
        }
    }
    out
}

/// Whether a text block is a ledger (its text starts with [`OPEN_TAG`]).
pub fn is_ledger_block(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Text { text, .. } if text.trim_start().starts_with(OPEN_TAG))
}

/// The tokens the user's words of a ledger may take for a target (or, with none, for the
/// current context size).
pub fn budget_for(target_tokens: Option<usize>, context_tokens: usize) -> usize {
    target_tokens.unwrap_or(context_tokens) * BUDGET_PERCENT / 100
}

/// The user's own words in a user message's text, without what clients wrap around them:
/// environment details, system reminders, Claude Code's local command noise, Codex's environment
/// context, Cline's and Roo's task resumption notices and tool results sent as text (whose
/// `<feedback>` and `<answer>` are kept); `<task>`,
/// `<feedback>`, `<user_message>` and `<answer>` keep their inner text.
pub fn user_words(text: &str) -> String {
    let whole = strip_ledger(text);
    let spans = encoded_tool_results(&whole);
    // Text-encoded tool results are not the user's words; the user's answers inside them are.
    let mut text = match spans.first() {
        Some(first) => whole[..first.start].to_owned(),
        None => whole.to_string(),
    };
    for span in &spans {
        for tag in ["feedback", "answer", "user_message"] {
            for inner in tag_bodies(span.body, tag) {
                text.push('\n');
                text.push_str(inner.trim());
            }
        }
    }
    // Without a `<`, no tag is there to remove or unwrap.
    let tagged = text.contains('<');
    for tag in [
        "environment_details",
        "system-reminder",
        "command-name",
        "command-message",
        "local-command-stdout",
        "local-command-stderr",
        // Codex's per-session context and the instructions it sends as user messages.
        "environment_context",
        "user_instructions",
    ] {
        if tagged {
            text = remove_tag(&text, tag);
        }
    }
    text = remove_resumption_notices(&text);
    for tag in ["task", "feedback", "user_message", "answer", "command-args"] {
        if tagged {
            text = unwrap_tag(&text, tag);
        }
    }
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| {
            let t = l.trim();
            !t.starts_with(
                "Caveat: The messages below were generated by the user while running local commands",
            ) && t != "[Request interrupted by user]"
                && t != "[Request interrupted by user for tool use]"
                // Left when the resumption notice before it was a block of its own.
                && t != "New instructions for task continuation:"
        })
        .collect();
    collapse_blank_lines(lines.join("\n").trim())
}

/// The notice Cline and Roo put on a user turn when a task resumes (`[TASK RESUMPTION] This task
/// was interrupted …`), without the user's new instructions that may follow it (`New
/// instructions for task continuation:` and a `<user_message>`): client text, not the user's.
fn remove_resumption_notices(text: &str) -> String {
    const NOTICE: &str = "[TASK RESUMPTION]";
    const NEW: &str = "New instructions for task continuation:";
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(NOTICE) {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        rest = match after.find(NEW) {
            Some(end) => &after[end + NEW.len()..],
            // Without new instructions, the notice runs to the next user message tag or the end.
            None => after.find("<user_message>").map_or("", |end| &after[end..]),
        };
    }
    out.push_str(rest);
    out
}

/// The shortest start of `text` whose normalized form has `chars` characters (all of it when
/// shorter): what a probe needs to find again.
fn head_of(text: &str, chars: usize) -> String {
    let text = text.trim();
    let mut seen = 0;
    let mut last_space = true;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if !(space && last_space) {
            seen += 1;
        }
        last_space = space;
        if seen >= chars {
            return text[..i + c.len_utf8()].to_owned();
        }
    }
    text.to_owned()
}

/// Lowercase, whitespace collapsed to single spaces, trimmed: how probes are compared.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_normalized(text, &mut out);
    out
}

/// Appends the words of `text`, lowercased, to `out`, each after one space unless `out` is
/// empty: `normalize` of what `out` held, whitespace, then `text`. Lowercasing word by word is
/// lowercasing the whole (see [`normalized_head`]); a word of ASCII letters is lowercased in
/// place, and whitespace is `char::is_whitespace`, read byte by byte where it is ASCII.
fn push_normalized(text: &str, out: &mut String) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        // Skip whitespace.
        let (space, len) = space_at(text, at);
        if space {
            at += len;
            continue;
        }
        // The word runs to the next whitespace.
        let start = at;
        let mut ascii = true;
        while at < bytes.len() {
            let (space, len) = space_at(text, at);
            if space {
                break;
            }
            ascii &= len == 1;
            at += len;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        let word = &text[start..at];
        if ascii {
            let from = out.len();
            out.push_str(word);
            out[from..].make_ascii_lowercase();
        } else {
            out.push_str(&word.to_lowercase());
        }
    }
}

/// Whether the character at byte `at` of `text` is whitespace, and its length in bytes.
fn space_at(text: &str, at: usize) -> (bool, usize) {
    let b = text.as_bytes()[at];
    if b < 0x80 {
        return (matches!(b, b'\t'..=b'\r' | b' '), 1);
    }
    let c = text[at..].chars().next().expect("`at` is a character boundary");
    (c.is_whitespace(), c.len_utf8())
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
        let cut = text.contains("cut by Context Condenser");
        let seen = match cut {
            true => self.starts.contains(&start),
            false => self.whole.contains(&normalize(text)) || self.cut_starts.contains(&start),
        };
        if seen {
            return false;
        }
        if cut {
            self.cut_starts.insert(start.clone());
        } else {
            self.whole.insert(normalize(text));
        }
        self.starts.insert(start);
        true
    }
}

/// What tells one user message from another in a ledger, and its probe's needle: the first
/// [`PROBE_CHARS`] characters of its [`normalize`]d text.
fn words_key(text: &str) -> String {
    normalized_head(text, PROBE_CHARS)
}

/// `normalize(text).chars().take(chars)`, normalizing only the words it needs. Word by word is
/// the same as the whole: lowercasing reads a character's context (a final sigma) only within
/// its word, since whitespace is neither cased nor case-ignorable.
fn normalized_head(text: &str, chars: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        if count >= chars {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
            count += 1;
        }
        let lower = word.to_lowercase();
        count += lower.chars().count();
        out.push_str(&lower);
    }
    out.chars().take(chars).collect()
}

fn preview(text: &str) -> String {
    one_line(text, 60)
}

/// The text on one line, at most `max` characters (cut with `…`).
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    }
}

fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::new();
    let mut blanks = 0;
    for line in text.lines() {
        if line.trim().is_empty() {
            blanks += 1;
            if blanks > 1 {
                continue;
            }
        } else {
            blanks = 0;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim().to_owned()
}

/// The text with any ledger block taken out.
fn strip_ledger(text: &str) -> std::borrow::Cow<'_, str> {
    let Some(start) = text.find(OPEN_TAG) else { return text.into() };
    let end = text[start..].find(CLOSE_TAG).map_or(text.len(), |e| start + e + CLOSE_TAG.len());
    format!("{}{}", &text[..start], &text[end..]).into()
}

/// Text this project wrote in place of content (truncation stubs, lossless references).
fn condenser_stub(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('[') && t.contains("Context Condenser") && t.len() < 300
}

/// Head and tail of a long text, the middle replaced by a note of its size and the
/// instructions it held, word for word.
fn cut_middle(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let head_chars = boundary(&chars, HEAD_CHARS);
    let tail_chars = chars.len() - HEAD_CHARS / 2;
    let tail_chars =
        chars[tail_chars..].iter().position(|c| *c == '\n').map_or(tail_chars, |p| tail_chars + p + 1);
    let byte_at = |n: usize| text.char_indices().nth(n).map_or(text.len(), |(b, _)| b);
    let (mut head_end, mut tail_start) = (byte_at(head_chars), byte_at(tail_chars));
    // An instruction across either cut point stays whole on its side.
    let kept = constraints::constraint_ranges(text);
    for r in &kept {
        if r.start < head_end && r.end > head_end {
            head_end = r.end;
        }
        if r.start < tail_start && r.end > tail_start {
            tail_start = r.start;
        }
    }
    if head_end >= tail_start {
        return text.to_owned();
    }
    let middle: Vec<&str> = kept
        .iter()
        .filter(|r| r.start >= head_end && r.end <= tail_start)
        .map(|r| &text[r.clone()])
        .collect();
    let size = text[head_end..tail_start].chars().count();
    let note = match middle.is_empty() {
        true => format!("[… {size} characters cut by Context Condenser …]"),
        false => format!(
            "[… {size} characters cut by Context Condenser; the instructions among them, word for word: …]\n{}",
            middle.join("\n")
        ),
    };
    format!("{}\n{note}\n{}", text[..head_end].trim_end(), text[tail_start..].trim_start())
}

/// A message cut to its instructions, with a note that the rest went; `None` when it has none.
fn instructions_only(text: &str) -> Option<String> {
    let kept = constraints(text);
    if kept.is_empty() {
        return None;
    }
    Some(format!("[its instructions only, the rest cut by Context Condenser]\n{}", kept.join("\n")))
}

/// A cut point near `at`: the end of a line if one is close, else `at`.
fn boundary(chars: &[char], at: usize) -> usize {
    let at = at.min(chars.len());
    chars[at / 2..at].iter().rposition(|c| *c == '\n').map_or(at, |p| at / 2 + p)
}

/// The inner texts of every `<tag>…</tag>` in `text`.
fn tag_bodies<'a>(text: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(s) = rest.find(&open) {
        let after = &rest[s + open.len()..];
        let Some(e) = after.find(&close) else { break };
        out.push(&after[..e]);
        rest = &after[e + close.len()..];
    }
    out
}

/// `text` without any `<tag …>…</tag>` (attributes allowed); an unclosed tag runs to the end.
fn remove_tag(text: &str, tag: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    loop {
        let Some(s) = find_open(rest, tag) else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..s]);
        let close = format!("</{tag}>");
        match rest[s..].find(&close) {
            Some(e) => rest = &rest[s + e + close.len()..],
            None => return out,
        }
    }
}

/// `text` with `<tag …>` and `</tag>` removed and what they wrap kept.
fn unwrap_tag(text: &str, tag: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(s) = find_open(rest, tag) {
        out.push_str(&rest[..s]);
        let end = rest[s..].find('>').map_or(rest.len(), |e| s + e + 1);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace(&format!("</{tag}>"), "")
}

/// Where `<tag>` or `<tag attr…>` opens.
fn find_open(text: &str, tag: &str) -> Option<usize> {
    let open = format!("<{tag}");
    let mut from = 0;
    while let Some(s) = text[from..].find(&open) {
        let at = from + s;
        let next = text[at + open.len()..].chars().next();
        if matches!(next, Some('>' | ' ' | '\n')) {
            return Some(at);
        }
        from = at + open.len();
    }
    None
}

/// A tool result Cline or Roo sent back as user text.
struct EncodedResult<'a> {
    /// Where its `[tool for 'arg'] Result:` header starts.
    start: usize,
    tool: String,
    arg: Option<String>,
    /// Up to the next header or the end.
    body: &'a str,
}

/// Reads a header line `[tool for 'arg'] Result:` (or `[tool] Result:`): the tool and argument.
pub(crate) fn parse_header(line: &str) -> Option<(String, Option<String>)> {
    let inner = line.trim_end().strip_prefix('[')?.strip_suffix("] Result:")?;
    let (tool, arg) = match inner.split_once(" for ") {
        Some((tool, rest)) => {
            let rest = rest.trim();
            let arg =
                rest.strip_prefix('\'').and_then(|r| r.rfind('\'').map(|end| &r[..end])).unwrap_or(rest);
            (tool, Some(arg.to_owned()))
        }
        None => (inner, None),
    };
    let valid = !tool.is_empty() && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    valid.then(|| (tool.to_owned(), arg))
}

/// The header lines of tool results sent as text (Cline, Roo) in `text`: where each starts, with
/// what each names and where its line ends. A header's argument may run over several lines (a
/// question of `ask_followup_question`, a multi-line command): it ends at the first line ending
/// in `'] Result:`, at most [`HEADER_LINES`] lines on.
pub(crate) fn encoded_headers(text: &str) -> Vec<(usize, usize, String, Option<String>)> {
    let mut out = Vec::new();
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .scan(0, |at, line| {
            let start = *at;
            *at += line.len();
            Some((start, line))
        })
        .collect();
    let mut i = 0;
    while i < lines.len() {
        let (start, line) = lines[i];
        i += 1;
        if !line.starts_with('[') {
            continue;
        }
        if let Some((tool, arg)) = parse_header(line.trim_end_matches(['\n', '\r'])) {
            out.push((start, start + line.len(), tool, arg));
            continue;
        }
        // `[tool for '…` opening an argument that ends on a later line.
        let opens = line.split_once(" for '").is_some_and(|(tool, _)| {
            tool.len() > 1 && tool[1..].chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
        if !opens {
            continue;
        }
        let ends = lines[i..]
            .iter()
            .take(HEADER_LINES)
            .position(|(_, l)| l.trim_end_matches(['\n', '\r']).trim_end().ends_with("'] Result:"));
        if let Some(k) = ends {
            let (last_start, last) = lines[i + k];
            let end = last_start + last.len();
            if let Some((tool, arg)) = parse_header(text[start..end].trim_end_matches(['\n', '\r'])) {
                out.push((start, end, tool, arg));
                i += k + 1;
            }
        }
    }
    out
}

/// The most lines a text-encoded tool result's header may span.
const HEADER_LINES: usize = 40;

/// Each `[tool for 'arg'] Result:` header in a text, with its body up to the next header.
fn encoded_tool_results(text: &str) -> Vec<EncodedResult<'_>> {
    // (start of header, end of header, tool, arg)
    let headers = encoded_headers(text);
    let ends: Vec<usize> = headers.iter().skip(1).map(|h| h.0).chain(std::iter::once(text.len())).collect();
    headers
        .into_iter()
        .zip(ends)
        .map(|((start, end, tool, arg), body_end)| EncodedResult {
            start,
            tool,
            arg,
            body: &text[end..body_end],
        })
        .collect()
}

/// Every string in a JSON value, depth first.
pub(crate) fn strings(value: &serde_json::Value) -> Vec<&str> {
    let mut out = Vec::new();
    fn walk<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
        match v {
            serde_json::Value::String(s) => out.push(s),
            serde_json::Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            serde_json::Value::Object(map) => map.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    walk(value, &mut out);
    out
}

/// The files of an `apply_patch` patch: `*** Add File:`, `*** Update File:`, `*** Delete File:`,
/// `*** Move to:`.
pub(crate) fn patch_files(text: &str) -> Vec<(String, FileAction)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        for (prefix, action) in [
            ("*** Add File: ", FileAction::Created),
            ("*** Update File: ", FileAction::Edited),
            ("*** Delete File: ", FileAction::Deleted),
            ("*** Move to: ", FileAction::Created),
        ] {
            if let Some(path) = line.strip_prefix(prefix) {
                out.push((path.trim().to_owned(), action));
            }
        }
    }
    out
}

/// What a tool does to the file it names, by its (lowercased) name.
pub(crate) fn file_action(lower: &str) -> Option<FileAction> {
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&["search", "list", "glob", "grep", "find"]) && !has(&["replace"]) {
        None
    } else if has(&["delete", "remove"]) {
        Some(FileAction::Deleted)
    } else if has(&["edit", "replace", "patch", "diff", "insert", "modify", "update_file"]) {
        Some(FileAction::Edited)
    } else if has(&["write", "create", "save"]) {
        Some(FileAction::Created)
    } else if has(&["read", "view", "open", "cat"]) {
        Some(FileAction::Read)
    } else {
        None
    }
}

/// Whether a tool runs shell commands.
pub(crate) fn is_shell(lower: &str) -> bool {
    ["bash", "shell", "execute_command", "run_command", "run_terminal_cmd", "exec_command", "terminal"]
        .iter()
        .any(|n| lower == *n || lower.ends_with(n))
}

/// A command's outcome as its result shows it: the exit code, else the first error line.
fn outcome(text: &str, is_error: bool) -> Option<String> {
    let (code, failure) = scan_outcome(text);
    // No line can look failed when the text holds none of the words.
    let error_line = match failure {
        true => text.lines().map(str::trim).find(|l| looks_failed(l)).map(|l| one_line(l, 160)),
        false => None,
    };
    if let Some(code) = code {
        return Some(match (code, error_line) {
            (0, _) => "exit 0".to_owned(),
            (c, Some(line)) => format!("exit {c}: {line}"),
            (c, None) => format!("exit {c}"),
        });
    }
    match error_line {
        Some(line) => Some(format!("error: {line}")),
        None if is_error => Some(format!(
            "failed: {}",
            one_line(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""), 160)
        )),
        None => None,
    }
}

/// Whether a line reports a failure (`error[E0308]`, `FAILED`, `Traceback`), and not a count of
/// none (`0 failed`, `0 errors`).
fn looks_failed(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    if !FAILURE_WORDS.iter().any(|w| lower.contains(w)) {
        return false;
    }
    let none = ["0 failed", "0 errors", "0 error", "no errors", "test result: ok", "0 failures"];
    !none.iter().any(|n| lower.contains(n))
}

/// One pass over a command's output for what [`outcome`] reads: the exit code it shows (`Exit
/// code: 1`, `exit code 1`, `"exit_code": 1`, `exited with code 1`: the first of [`EXIT_MARKERS`]
/// whose number reads), and whether any of [`FAILURE_WORDS`] occurs, all in any ASCII case.
fn scan_outcome(text: &str) -> (Option<i64>, bool) {
    // Where each marker first occurs: the places they have in `text.to_ascii_lowercase()`, which
    // moves no byte. Matches come by their end, so a marker's first is its leftmost.
    let mut first = [None; EXIT_MARKERS.len()];
    let mut failure = false;
    for m in outcome_words().find_overlapping_iter(text) {
        match m.pattern().as_usize() {
            k if k < EXIT_MARKERS.len() => {
                first[k].get_or_insert(m.end());
            }
            _ => failure = true,
        }
    }
    // The markers in their order: the first whose number reads wins.
    for end in first.into_iter().flatten() {
        let rest = text[end..].trim_start();
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
        if let Ok(code) = digits.parse() {
            return (Some(code), failure);
        }
    }
    (None, failure)
}

/// The markers an exit code follows, in the order [`scan_outcome`] tries them.
const EXIT_MARKERS: [&str; 6] =
    ["exit code:", "exit code", "\"exit_code\":", "exit_code:", "exited with code", "exit status"];

/// The words a line reporting a failure holds ([`looks_failed`]).
const FAILURE_WORDS: [&str; 6] = ["error", "failed", "panicked", "traceback", "exception", "fatal"];

/// The calls Cline and Roo write as XML in the assistant's text, in the order `Ledger::xml_calls`
/// reads them, with what each does to the files its `<path>` names.
const XML_CALLS: [(&str, Option<FileAction>); 8] = [
    ("read_file", Some(FileAction::Read)),
    ("write_to_file", Some(FileAction::Created)),
    ("replace_in_file", Some(FileAction::Edited)),
    ("apply_diff", Some(FileAction::Edited)),
    ("insert_content", Some(FileAction::Edited)),
    ("search_and_replace", Some(FileAction::Edited)),
    ("execute_command", None),
    ("update_todo_list", None),
];

/// The tags of [`XML_CALLS`] as they open, then `task_progress`'s.
const XML_TAGS: [&str; 9] = [
    "<read_file>",
    "<write_to_file>",
    "<replace_in_file>",
    "<apply_diff>",
    "<insert_content>",
    "<search_and_replace>",
    "<execute_command>",
    "<update_todo_list>",
    "<task_progress>",
];

/// [`XML_TAGS`] as one automaton (see [`outcome_words`]).
fn xml_tags() -> &'static aho_corasick::AhoCorasick {
    static TAGS: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    TAGS.get_or_init(|| aho_corasick::AhoCorasick::new(XML_TAGS).expect("nine tags build an automaton"))
}

/// [`EXIT_MARKERS`] then [`FAILURE_WORDS`], in any ASCII case, as one automaton built on first
/// use: a constant table, like the vocabularies, not state. A DFA without a prefilter: the
/// words start with letters as common as `e`, on which a prefilter would stop at every turn.
fn outcome_words() -> &'static aho_corasick::AhoCorasick {
    static WORDS: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    WORDS.get_or_init(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .prefilter(false)
            .build(EXIT_MARKERS.iter().chain(&FAILURE_WORDS))
            .expect("twelve words build an automaton")
    })
}

/// A todo from a JSON item: `{content|step|text, status}` or `{…, completed: bool}`.
fn json_todo(item: &serde_json::Value) -> Option<Todo> {
    let text =
        ["content", "step", "text", "title"].iter().find_map(|k| item.get(*k).and_then(|v| v.as_str()))?;
    let done = item.get("status").and_then(|v| v.as_str()).is_some_and(|s| s == "completed" || s == "done")
        || item.get("completed").and_then(|v| v.as_bool()).unwrap_or(false);
    Some(Todo { text: one_line(text, COMMAND_CHARS), done })
}

/// A checkbox line: `- [ ] x`, `* [x] x`, `[-] x` (in progress: open).
fn checkbox(line: &str) -> Option<Todo> {
    let t = line.trim_start();
    let t = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")).unwrap_or(t);
    let (mark, text) = t.strip_prefix('[').and_then(|r| r.split_once(']'))?;
    let done = match mark {
        "x" | "X" => true,
        " " | "-" | "~" | "" => false,
        _ => return None,
    };
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(Todo { text: one_line(text, COMMAND_CHARS), done })
}

fn checklist(text: &str) -> Vec<Todo> {
    text.lines().filter_map(checkbox).collect()
}

/// A todo list in a user's message: checkbox lines, or a numbered list under a line that names a
/// todo list (`TODO:`, `Todo list:`, `## TODO`).
fn user_todos(words: &str) -> Option<Vec<Todo>> {
    // Only Markdown task lists (`- [ ]`): bare `[ ]` lines in a user's message are more often
    // data (a pasted file) than the task's todo list.
    let boxes: Vec<Todo> = words
        .lines()
        .filter(|l| l.trim_start().starts_with("- [") || l.trim_start().starts_with("* ["))
        .filter_map(checkbox)
        .collect();
    if !boxes.is_empty() {
        return Some(boxes);
    }
    let mut list = Vec::new();
    let mut under_todo = false;
    for line in words.lines() {
        let t = line.trim();
        let lower = t.to_ascii_lowercase();
        if lower.contains("todo") && (t.ends_with(':') || t.starts_with('#')) {
            under_todo = true;
            list.clear();
            continue;
        }
        if !under_todo || t.is_empty() {
            continue;
        }
        let numbered = t.split_once(['.', ')']).filter(|(n, rest)| {
            !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && rest.starts_with(' ')
        });
        match numbered {
            Some((_, rest)) => list.push(Todo { text: one_line(rest, COMMAND_CHARS), done: false }),
            // Another paragraph ends the list.
            None => under_todo = list.is_empty(),
        }
    }
    (!list.is_empty()).then_some(list)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{Encoding, TiktokenCounter};
    use serde_json::json;

    fn user(id: &str, text: &str) -> Message {
        Message::new(id, Role::User, vec![ContentBlock::text(text)])
    }

    fn call(id: &str, name: &str, input: serde_json::Value) -> ContentBlock {
        ContentBlock::ToolUse { id: id.into(), name: name.into(), input }
    }

    fn of(messages: &[Message]) -> Ledger {
        Ledger::of(&messages.iter().collect::<Vec<_>>())
    }

    fn counter() -> TiktokenCounter {
        TiktokenCounter::new(Encoding::O200kBase)
    }

    #[test]
    fn claude_code_tools_give_files_commands_and_todos() {
        let messages = vec![
            user("u1", "Fix the flaky retry test. Never touch prod.yaml."),
            Message::new(
                "a1",
                Role::Assistant,
                vec![
                    call("toolu_01", "Read", json!({"file_path": "/repo/src/retry.rs"})),
                    call("toolu_02", "Edit", json!({"file_path": "/repo/src/retry.rs", "old_string": "a", "new_string": "b"})),
                    call("toolu_03", "Write", json!({"file_path": "/repo/tests/retry_flaky.rs", "content": "#[test]"})),
                    call("toolu_04", "Bash", json!({"command": "cargo test -p retry", "description": "Run tests"})),
                    call(
                        "toolu_05",
                        "TodoWrite",
                        json!({"todos": [
                            {"content": "Reproduce the flake", "status": "completed", "activeForm": "Reproducing"},
                            {"content": "Add a deterministic clock", "status": "in_progress", "activeForm": "Adding"},
                            {"content": "Update CHANGELOG", "status": "pending", "activeForm": "Updating"}
                        ]}),
                    ),
                ],
            ),
            Message::new(
                "u2",
                Role::User,
                vec![
                    ContentBlock::tool_result_text("toolu_01", "fn retry() {}"),
                    ContentBlock::tool_result_text("toolu_02", "The file has been updated."),
                    ContentBlock::tool_result_text("toolu_03", "File created successfully"),
                    ContentBlock::ToolResult {
                        tool_use_id: "toolu_04".into(),
                        content: vec![ToolResultPart::Text {
                            text: "running 3 tests\ntest retry::backoff ... FAILED\nerror: test failed, to rerun pass `-p retry --lib`".into(),
                        }],
                        is_error: true,
                    },
                    ContentBlock::tool_result_text("toolu_05", "Todos have been modified successfully."),
                ],
            ),
        ];
        let l = of(&messages);
        assert_eq!(
            l.files,
            [
                FileTouch { path: "/repo/src/retry.rs".into(), action: FileAction::Edited },
                FileTouch { path: "/repo/tests/retry_flaky.rs".into(), action: FileAction::Created },
            ]
        );
        assert_eq!(l.commands.len(), 1);
        assert_eq!(l.commands[0].command, "cargo test -p retry");
        assert_eq!(l.commands[0].outcome.as_deref(), Some("error: test retry::backoff ... FAILED"));
        assert_eq!(
            l.todos.iter().map(|t| (t.text.as_str(), t.done)).collect::<Vec<_>>(),
            [
                ("Reproduce the flake", true),
                ("Add a deterministic clock", false),
                ("Update CHANGELOG", false)
            ]
        );
        // Tool results are never the user's words.
        assert_eq!(
            l.user_messages,
            [UserWords { text: "Fix the flaky retry test. Never touch prod.yaml.".into() }]
        );
    }

    #[test]
    fn codex_apply_patch_and_shell_exit_codes() {
        let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-old\n+new\n*** Add File: src/new.rs\n+fn x() {}\n*** Delete File: src/old.rs\n*** End Patch";
        let messages = vec![
            Message::new(
                "a1",
                Role::Assistant,
                vec![
                    call("call_1", "shell", json!({"command": ["apply_patch", patch]})),
                    call("call_2", "shell", json!({"command": ["bash", "-lc", "npm test"], "workdir": "/w"})),
                    call(
                        "call_3",
                        "update_plan",
                        json!({"plan": [{"step": "Patch lib", "status": "completed"}, {"step": "Run the tests", "status": "pending"}]}),
                    ),
                ],
            ),
            Message::new(
                "u1",
                Role::User,
                vec![
                    ContentBlock::tool_result_text(
                        "call_1",
                        "{\"output\":\"Done!\",\"metadata\":{\"exit_code\":0}}",
                    ),
                    ContentBlock::tool_result_text(
                        "call_2",
                        "{\"output\":\"FAIL src/a.test.ts\\nTypeError: x is not a function\",\"metadata\":{\"exit_code\":1,\"duration_seconds\":2.1}}",
                    ),
                    ContentBlock::tool_result_text("call_3", "Plan updated"),
                ],
            ),
        ];
        let l = of(&messages);
        let files: Vec<(&str, FileAction)> = l.files.iter().map(|f| (f.path.as_str(), f.action)).collect();
        assert_eq!(
            files,
            [
                ("src/lib.rs", FileAction::Edited),
                ("src/new.rs", FileAction::Created),
                ("src/old.rs", FileAction::Deleted)
            ]
        );
        // apply_patch is a file edit, not a command.
        assert_eq!(l.commands, [CommandRun {
            command: "npm test".into(),
            outcome: Some("exit 1: {\"output\":\"FAIL src/a.test.ts\\nTypeError: x is not a function\",\"metadata\":{\"exit_code\":1,\"duration_seconds\":2.1}}".into())
        }]);
        assert_eq!(l.todos[1], Todo { text: "Run the tests".into(), done: false });
    }

    #[test]
    fn cline_xml_calls_and_text_encoded_results() {
        let messages = vec![
            user(
                "u0",
                "<task>\nAdd dark mode to the settings page. Use CSS variables only.\n</task>\n<environment_details>\n# VSCode Visible Files\nsrc/App.tsx\n</environment_details>",
            ),
            Message::new(
                "a1",
                Role::Assistant,
                vec![ContentBlock::text(
                    "I'll read the file first.\n<read_file>\n<path>src/settings.css</path>\n<task_progress>\n- [x] Read the styles\n- [ ] Add the dark palette\n</task_progress>\n</read_file>",
                )],
            ),
            user(
                "u1",
                "[read_file for 'src/settings.css'] Result:\n:root { --bg: white; }\n\n<environment_details>\n# Current Time\n10:00\n</environment_details>",
            ),
            Message::new(
                "a2",
                Role::Assistant,
                vec![ContentBlock::text(
                    "<replace_in_file>\n<path>src/settings.css</path>\n<diff>...</diff>\n</replace_in_file>\n<execute_command>\n<command>npm run lint</command>\n<requires_approval>false</requires_approval>\n</execute_command>",
                )],
            ),
            user(
                "u2",
                "[replace_in_file for 'src/settings.css'] Result:\nThe content was successfully saved.\n[execute_command for 'npm run lint'] Result:\nCommand executed.\nOutput:\nerror  'x' is defined but never used  no-unused-vars\n<feedback>\nAlso keep the high-contrast theme working.\n</feedback>",
            ),
        ];
        let l = of(&messages);
        assert_eq!(l.files, [FileTouch { path: "src/settings.css".into(), action: FileAction::Edited }]);
        assert_eq!(
            l.commands,
            [CommandRun {
                command: "npm run lint".into(),
                outcome: Some("error: error 'x' is defined but never used no-unused-vars".into())
            }]
        );
        assert_eq!(
            l.todos,
            [
                Todo { text: "Read the styles".into(), done: true },
                Todo { text: "Add the dark palette".into(), done: false }
            ]
        );
        let words: Vec<&str> = l.user_messages.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(
            words,
            [
                "Add dark mode to the settings page. Use CSS variables only.",
                "Also keep the high-contrast theme working."
            ]
        );
    }

    #[test]
    fn the_tags_looked_for_are_the_calls_read() {
        let calls: Vec<String> = XML_CALLS.iter().map(|(tag, _)| format!("<{tag}>")).collect();
        assert_eq!(XML_TAGS[..XML_CALLS.len()], calls);
        assert_eq!(XML_TAGS[XML_CALLS.len()], "<task_progress>");
        // A text naming none of them but with other tags (code) gives nothing.
        assert_eq!(
            of(&[Message::new(
                "a",
                Role::Assistant,
                vec![ContentBlock::text("let v: Vec<u8> = x; <b>bold</b>")]
            )]),
            Ledger::default()
        );
    }

    #[test]
    fn user_words_drop_client_wrappers() {
        assert_eq!(
            user_words(
                "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>\n<local-command-stdout></local-command-stdout>"
            ),
            ""
        );
        assert_eq!(
            user_words(
                "Caveat: The messages below were generated by the user while running local commands. DO NOT respond.\nplease keep going\n<system-reminder>\nThe TodoWrite tool hasn't been used\n</system-reminder>"
            ),
            "please keep going"
        );
        assert_eq!(user_words("<user_message>\nuse pnpm, not npm\n</user_message>"), "use pnpm, not npm");
    }

    #[test]
    fn user_checklists_and_numbered_todo_lists() {
        let l = of(&[user("u", "Plan:\n- [x] parser\n- [ ] printer\n- [ ] docs")]);
        assert_eq!(l.todos.iter().filter(|t| !t.done).count(), 2);
        let l = of(&[user("u", "TODO:\n1. rename the crate\n2) publish 0.2\n\nThanks!")]);
        assert_eq!(
            l.todos,
            [
                Todo { text: "rename the crate".into(), done: false },
                Todo { text: "publish 0.2".into(), done: false }
            ]
        );
        assert!(of(&[user("u", "1. first we talk\n2. then we code")]).todos.is_empty());
        // A pasted todo.txt is data, not the task's list.
        assert!(of(&[user("u", "the file was:\n[ ] buy milk\n[x] file taxes")]).todos.is_empty());
        // Roo's update_todo_list: the latest version wins.
        let roo = |id: &str, todos: &str| {
            Message::new("a", Role::Assistant, vec![call(id, "update_todo_list", json!({ "todos": todos }))])
        };
        let l = of(&[roo("t1", "[ ] a\n[ ] b"), roo("t2", "[x] a\n[-] b\n[ ] c")]);
        assert_eq!(l.todos.iter().map(|t| t.done).collect::<Vec<_>>(), [true, false, false]);
    }

    fn sample() -> Ledger {
        Ledger {
            user_messages: vec![
                UserWords { text: "Build the CLI.\n\n## Rules\n- never push to main".into() },
                UserWords { text: "Use tabs.".into() },
            ],
            files: vec![
                FileTouch { path: "src/main.rs".into(), action: FileAction::Edited },
                FileTouch { path: "docs/a b.md".into(), action: FileAction::Read },
            ],
            commands: vec![
                CommandRun { command: "cargo build".into(), outcome: Some("exit 0".into()) },
                CommandRun { command: "ls".into(), outcome: None },
            ],
            todos: vec![
                Todo { text: "write docs".into(), done: false },
                Todo { text: "parse".into(), done: true },
            ],
            earlier_unquoted: 0,
            notes: vec!["open todo: ship it".into()],
        }
    }

    #[test]
    fn render_parses_back() {
        let l = sample();
        let text = l.render(10_000, &counter());
        assert!(text.starts_with(OPEN_TAG) && text.ends_with(CLOSE_TAG));
        assert_eq!(Ledger::parse(&format!("Summary.\n\n{text}\ntrailing")), Some(l));
        assert_eq!(Ledger::parse("no ledger here"), None);
    }

    #[test]
    fn merge_does_not_duplicate() {
        let mut l = sample();
        l.merge(sample());
        assert_eq!(l, sample());
        // A ledger found in messages merges with what they show.
        let text = sample().render(10_000, &counter());
        let mut summary = Message::new(
            "s",
            Role::Assistant,
            vec![ContentBlock::text("the summary"), ContentBlock::text(text)],
        );
        summary.is_summary = true;
        let later = Message::new(
            "a",
            Role::Assistant,
            vec![call("t", "Write", json!({"file_path": "docs/a b.md", "content": "x"}))],
        );
        let merged = of(&[summary, user("u", "Use tabs."), later]);
        assert_eq!(merged.user_messages.len(), 2);
        assert_eq!(
            merged.files.last(),
            Some(&FileTouch { path: "docs/a b.md".into(), action: FileAction::Edited })
        );
    }

    #[test]
    fn budget_cuts_long_messages_first_then_names_the_oldest() {
        let t = counter();
        let log = (0..400).map(|i| format!("line {i}: INFO request served in {i} ms\n")).collect::<String>();
        let l = Ledger {
            user_messages: vec![
                UserWords { text: "First: build a log viewer.".into() },
                UserWords { text: format!("Here is the log:\n{log}") },
                UserWords { text: "Rule: keep it under 100 lines.".into() },
            ],
            ..Ledger::default()
        };
        // Enough room for short messages, not for the log: the log is cut to head and tail.
        let text = l.render(600, &t);
        assert!(text.contains("characters cut by Context Condenser"), "{text}");
        assert!(text.contains("line 0: INFO") && text.contains("line 399: INFO"));
        assert!(
            text.contains("Rule: keep it under 100 lines.") && text.contains("First: build a log viewer.")
        );
        assert!(!text.contains("not quoted"));
        // Almost no room: the first stays, the others go down to their instructions; one with
        // none is named by count.
        let text = l.render(20, &t);
        assert!(text.contains("First: build a log viewer."));
        assert!(text.contains("(1 earlier user messages not quoted)"), "{text}");
        assert!(text.contains(
            "[its instructions only, the rest cut by Context Condenser]\nRule: keep it under 100 lines."
        ));
        assert!(!text.contains("line 0: INFO"));
        let parsed = Ledger::parse(&text).unwrap();
        assert_eq!(parsed.earlier_unquoted, 1);
        // Read back, the instruction is still one: the probes find it in the rendering.
        let probes = parsed.probes();
        assert!(probes.iter().any(|p| p.needle == "Rule: keep it under 100 lines."));
        let (_, missing) = check_probes(&probes, &text);
        assert!(missing.is_empty(), "{missing:?}");
    }

    /// `normalize` as first written: the reference the fast one must equal.
    fn reference_normalize(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
    }

    /// Texts with whitespace of every kind (ASCII, the vertical tab, NEL, no-break and em
    /// spaces, the ideographic space), sigmas, characters whose lowercase is longer (İ) and
    /// ASCII words, for the properties below.
    const MIXED: &str = "([ \\t\\n\\r\\u{b}\\u{c}\\u{85}\\u{a0}\\u{2003}\\u{3000}]|[aZΣσςİẞé.'’:/]|ΑΣ|ΣΑ|src|Main|\\.rs){0,60}";

    /// The exit code as first read (every marker searched in the lowercased text).
    fn reference_exit_code(text: &str) -> Option<i64> {
        let lower = text.to_ascii_lowercase();
        for marker in EXIT_MARKERS {
            if let Some(at) = lower.find(marker) {
                let rest = lower[at + marker.len()..].trim_start();
                let digits: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
                if let Ok(code) = digits.parse() {
                    return Some(code);
                }
            }
        }
        None
    }

    proptest::proptest! {
        /// One pass for every marker reads the same code as a search per marker: markers in any
        /// case, overlapping (`exit code` in `exit code:`), repeated, followed by no number, by
        /// `-`, by whitespace of any kind; non-ASCII around them.
        /// The failure flag of the same pass is "some failure word occurs", in any case.
        #[test]
        fn failure_words_are_found_in_any_case(text in "(Error|FAILED|panicked|TraceBack|exception|Fatal|err|fail|x| |\\n){0,12}") {
            let lower = text.to_ascii_lowercase();
            proptest::prop_assert_eq!(scan_outcome(&text).1, FAILURE_WORDS.iter().any(|w| lower.contains(w)));
        }

        #[test]
        fn exit_codes_read_as_before(
            text in "((Exit Code|EXIT CODE:|exit_code:|\"exit_code\":|exited with code|Exit status|exit)[ \\t\\n\\u{a0}]{0,2}|[0-9]{1,3}|-|é|x| ){0,16}",
        ) {
            proptest::prop_assert_eq!(scan_outcome(&text).0, reference_exit_code(&text));
        }

        #[test]
        fn normalize_is_the_reference(text in MIXED) {
            proptest::prop_assert_eq!(normalize(&text), reference_normalize(&text));
        }

        /// A haystack built message by message is the normalized view text, and finds exactly
        /// the needles `str::contains` finds in it, across messages too.
        #[test]
        fn haystack_pieces_join_to_the_view_text(
            texts in proptest::collection::vec((MIXED, proptest::bool::ANY), 0..6),
            needles in proptest::collection::vec(MIXED, 0..6),
        ) {
            let messages: Vec<Message> = texts
                .iter()
                .enumerate()
                .map(|(i, (t, call))| {
                    let block = if *call {
                        ContentBlock::ToolUse { id: format!("t{i}"), name: "Read".into(), input: json!({"path": t, "n": [t, 1]}) }
                    } else {
                        ContentBlock::text(t.clone())
                    };
                    Message::new(format!("m{i}"), Role::Assistant, vec![block, ContentBlock::tool_result_text("x", t.clone())])
                })
                .collect();
            let refs: Vec<&Message> = messages.iter().collect();
            let whole = reference_normalize(&view_text(&refs));
            let hay = Haystack::of(&refs);
            proptest::prop_assert_eq!(hay.as_str(), whole.as_str());
            // Needles taken from the text itself too, so that some are found across messages.
            let mut all: Vec<String> = needles.iter().map(|n| normalize(n)).collect();
            for (k, n) in needles.iter().enumerate() {
                let chars: Vec<char> = whole.chars().collect();
                let from = (n.len() * 7 + k) % (chars.len() + 1);
                let to = (from + n.len() + 3).min(chars.len());
                all.push(chars[from..to].iter().collect::<String>().trim().to_owned());
            }
            let found = hay.find(all.iter().map(String::as_str));
            let expected: Vec<bool> = all.iter().map(|n| whole.contains(n.as_str())).collect();
            proptest::prop_assert_eq!(found, expected);
        }

        /// The head normalized word by word is the whole text's normalized head: whitespace of
        /// every kind, final and medial sigmas, characters whose lowercase is longer (İ).
        #[test]
        fn normalized_head_is_the_normalized_texts_head(
            text in "([ \\t\\n\\u{a0}\\u{2003}]|[aZΣσςİẞé.'’:]|ΑΣ|ΣΑ){0,60}",
            chars in 0usize..40,
        ) {
            let whole: String = normalize(&text).chars().take(chars).collect();
            proptest::prop_assert_eq!(normalized_head(&text, chars), whole);
        }
    }

    #[test]
    fn a_multi_line_question_echo_is_not_the_users_words() {
        let text = "[ask_followup_question for 'Which database should I use?\nOptions: Postgres, or SQLite if it's local'] Result:\n<answer>\nSQLite, and do not add an ORM.\n</answer>";
        assert_eq!(user_words(text), "SQLite, and do not add an ORM.");
        let headers = encoded_headers(text);
        assert_eq!(headers.len(), 1);
        assert_eq!(headers[0].2, "ask_followup_question");
        assert!(headers[0].3.as_deref().unwrap().ends_with("if it's local"));
        // Without its closing line within reach, it is the user's text as written.
        let open = "[ask_followup_question for 'never closed\nstill the user's";
        assert_eq!(user_words(open), open);
    }

    #[test]
    fn probes_and_prune() {
        let l = sample();
        let probes = l.probes();
        let labels: Vec<&str> = probes.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "user: Build the CLI. ## Rules - never push to main",
                "instruction: never push to main",
                "user: Use tabs.",
                "file: edited src/main.rs",
                "todo: write docs"
            ]
        );
        let (kept, missing) = check_probes(&probes, "USE   tabs. then src/main.rs and\nwrite docs");
        assert_eq!((kept.len(), missing.len()), (3, 2));
        assert_eq!(missing[0].restore, "Build the CLI.\n\n## Rules\n- never push to main");
        assert_eq!(missing[1].restore, "never push to main");
        let long =
            Ledger { user_messages: vec![UserWords { text: "word  ".repeat(80) }], ..Ledger::default() };
        let probe = &long.probes()[0];
        assert!(probe.needle.chars().count() >= PROBE_CHARS - 1);
        assert!(normalize(&probe.restore).contains(&probe.needle) && probe.restore.len() < 100);
        let mut pruned = sample();
        let later = Ledger {
            files: vec![FileTouch { path: "src/main.rs".into(), action: FileAction::Read }],
            ..Ledger::default()
        };
        pruned.prune(&later, "Use tabs.");
        assert_eq!(pruned.user_messages.len(), 1);
        assert_eq!(pruned.files.len(), 1);
        assert_eq!(pruned.todos.len(), 2);
    }
}
