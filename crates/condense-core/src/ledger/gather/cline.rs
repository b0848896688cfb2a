//! Cline's and Roo's tools as they write them in text: calls as XML in the assistant's text
//! (`<read_file>`, `<write_to_file>`, `<replace_in_file>`, `<execute_command>`,
//! `<update_todo_list>`, `<task_progress>`, …), and results sent back as user text
//! (`[read_file for 'x'] Result:` and the body).

use crate::ledger::calls::{
    XML_CALLS, XML_TAGS, checklist, encoded_tool_results, file_action, is_shell, xml_tags,
};
use crate::ledger::words::tag_bodies;
use crate::ledger::{FileAction, Ledger, shell};

use super::edits::{edit_change, search_replace_blocks};

impl Ledger {
    /// Cline's and Roo's tool calls written as XML in the assistant's text.
    pub(super) fn xml_calls(&mut self, text: &str, at: Option<usize>) {
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
    pub(super) fn encoded_results(&mut self, text: &str, at: Option<usize>) {
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
