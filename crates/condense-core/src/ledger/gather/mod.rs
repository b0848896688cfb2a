//! Gathering a ledger: [`Ledger::of`] walks the messages in order — tool calls, the results
//! Cline and Roo send back as text, XML calls in the assistant's text, the user's words — and
//! keeps the latest state of each file, command and todo list, merging any ledger found in them.
//! It is the one pass over messages; what single texts say is read in `calls` and `words`.
//!
//! This file holds the walk and the merge. What the walk meets is read in a file of its own:
//! `tool_calls` (structured tool calls: Claude Code's, Codex's `shell` and `update_plan`,
//! Anthropic's text editor, OpenAI function calls), `patch` (Codex's `apply_patch`), `cline`
//! (Cline's and Roo's XML tools and `[tool for 'x'] Result:` texts) and `results` (what a tool's
//! result shows). They record into the ledger through `state`, and describe an edit through
//! `edits`.

mod cline;
mod edits;
mod patch;
mod results;
mod state;
mod tool_calls;

use std::collections::HashMap;

use crate::model::{ContentBlock, Message, Role, ToolResultPart};

use super::calls::user_todos;
use super::probes::{normalize, words_key};
use super::words::{condenser_stub, strip_ledger, user_words};
use super::{CommandRun, FileTouch, Ledger, UserWords};
use results::Pending;
use state::add_change;

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
