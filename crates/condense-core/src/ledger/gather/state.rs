//! The ledger's state as gathering changes it: a file touched (its action, outline, what it
//! refers to, its latest changes) and a command run (its outcome). Every reader of a call or a
//! result records through these.

use crate::ledger::names::names_in;
use crate::ledger::outline::{imports, outline};
use crate::ledger::{COMMAND_CHARS, CommandRun, FileAction, FileTouch, Ledger, one_line};

impl Ledger {
    /// Records what was done to a file, moving it last; its outline and changes stay. Returns it.
    pub(super) fn touch(
        &mut self,
        path: &str,
        action: FileAction,
        at: Option<usize>,
    ) -> Option<&mut FileTouch> {
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

    pub(super) fn file_mut(&mut self, path: &str) -> Option<&mut FileTouch> {
        let path = path.trim();
        self.files.iter_mut().rev().find(|f| f.path == path)
    }

    pub(super) fn ran(&mut self, command: String, at: Option<usize>) {
        let command = one_line(&command, COMMAND_CHARS);
        if command.is_empty() {
            return;
        }
        self.commands.retain(|c| c.command != command);
        self.commands.push(CommandRun { at, ..CommandRun::new(command, None) });
    }

    pub(super) fn set_outcome(&mut self, command: &str, outcome: Option<String>) {
        if outcome.is_none() {
            return;
        }
        let command = one_line(command, COMMAND_CHARS);
        if let Some(c) = self.commands.iter_mut().rev().find(|c| c.command == command) {
            c.outcome = outcome;
        }
    }

    /// Records a file's new whole text (its outline, and for a document what it mentions) and
    /// changes.
    pub(super) fn change(&mut self, path: &str, whole: Option<&str>, changes: Vec<String>) {
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
}

/// What a file's text refers to: for a document (Markdown, text) the paths and code names it
/// mentions, for a source file what it imports; the first [`MAX_MENTIONS`], without repeats.
pub(super) fn mentions(path: &str, text: &str) -> Vec<String> {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    if !matches!(ext.as_str(), "md" | "mdx" | "markdown" | "txt" | "rst" | "adoc") {
        // A source file refers to what it imports.
        return imports(path, text, MAX_MENTIONS);
    }
    let mut out: Vec<String> = Vec::new();
    for name in names_in(text) {
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
pub(super) const MAX_MENTIONS: usize = 40;

/// The most symbols a file's outline keeps.
pub(super) const MAX_OUTLINE: usize = 120;

/// The most changes a file keeps (the latest).
const MAX_CHANGES: usize = 4;

/// `#12`, or `a hidden message` when the number is not known.
pub(super) fn number(at: Option<usize>) -> String {
    at.map_or_else(|| "a later message".to_owned(), |n| format!("#{n}"))
}

/// Adds a change, the latest last, without repeats, at most [`MAX_CHANGES`].
pub(super) fn add_change(changes: &mut Vec<String>, change: String) {
    changes.retain(|c| *c != change);
    changes.push(change);
    if changes.len() > MAX_CHANGES {
        changes.remove(0);
    }
}
