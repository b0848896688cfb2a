//! A ledger's block read back: [`Ledger::parse`] finds the block [`Ledger::render`] wrote in a
//! text and reads its sections (the user's words, the todo list, the working state, the names
//! of what was hidden, the notes) into a ledger, so a later condensation merges it.

use super::calls::checkbox;
use super::{
    CLOSE_TAG, COMMANDS_HEADER, CommandRun, ERRORS_HEADER, ErrorSeen, FILES_HEADER, FINDINGS_HEADER,
    FileAction, FileTouch, Finding, Ledger, MESSAGE_PREFIX, NAMES_HEADER, NOTES_HEADER, NameSeen,
    OLD_COMMANDS_HEADER, OLD_FILES_HEADER, OPEN_TAG, SEEN_HEADER, TODOS_HEADER, USER_HEADER, UserWords,
    WORK_HEADER,
};

impl Ledger {
    /// Reads a block written by [`Ledger::render`] (anywhere in `text`); `None` when there is none.
    pub fn parse(text: &str) -> Option<Ledger> {
        let start = text.find(OPEN_TAG)? + OPEN_TAG.len();
        let end = start + text[start..].find(CLOSE_TAG)?;
        let body = &text[start..end];
        let mut ledger = Ledger::default();
        let mut section = "";
        let mut in_work = false;
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
            let top = [
                USER_HEADER,
                OLD_FILES_HEADER,
                OLD_COMMANDS_HEADER,
                TODOS_HEADER,
                NOTES_HEADER,
                WORK_HEADER,
                SEEN_HEADER,
            ];
            let sub = [FILES_HEADER, ERRORS_HEADER, COMMANDS_HEADER, FINDINGS_HEADER, NAMES_HEADER];
            if top.contains(&line) || in_work && sub.contains(&line) {
                flush(&mut ledger, &mut current);
                in_work = line == WORK_HEADER || in_work && sub.contains(&line);
                section = match line {
                    OLD_FILES_HEADER => FILES_HEADER,
                    OLD_COMMANDS_HEADER => COMMANDS_HEADER,
                    l => l,
                };
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
                    if let Some(outline) = line.strip_prefix("  defines: ") {
                        if let Some(f) = ledger.files.last_mut() {
                            f.outline = listed_items(outline);
                        }
                        continue;
                    }
                    if let Some(mentions) = line.strip_prefix("  refers to: ") {
                        if let Some(f) = ledger.files.last_mut() {
                            f.mentions = listed_items(mentions);
                        }
                        continue;
                    }
                    if let Some(change) = line.strip_prefix("  changed: ") {
                        if let Some(f) = ledger.files.last_mut() {
                            f.changes.push(change.to_owned());
                        }
                        continue;
                    }
                    let touch = line.strip_prefix("- ").and_then(|l| l.split_once(' '));
                    if let Some((action, rest)) = touch
                        && let Some(action) = FileAction::parse(action)
                    {
                        let (path, at) = split_number(rest);
                        ledger.files.push(FileTouch { at, ..FileTouch::new(path, action) });
                    }
                }
                COMMANDS_HEADER => {
                    if let Some(command) = line.strip_prefix("- $ ") {
                        let (command, at) = split_number(command);
                        ledger.commands.push(CommandRun { at, ..CommandRun::new(command, None) });
                    } else if let Some(outcome) = line.strip_prefix("  → ")
                        && let Some(last) = ledger.commands.last_mut()
                    {
                        last.outcome = Some(outcome.to_owned());
                    } else if let Some(summary) = line.strip_prefix("  ⇒ ")
                        && let Some(last) = ledger.commands.last_mut()
                    {
                        last.summary = Some(summary.to_owned());
                    } else if let Some(listed) = line.strip_prefix("  lists: ")
                        && let Some(last) = ledger.commands.last_mut()
                    {
                        last.listed = listed_items(listed);
                    } else if let Some(found) = line.strip_prefix("  | ")
                        && let Some(last) = ledger.commands.last_mut()
                    {
                        last.matches.push(found.to_owned());
                    }
                }
                ERRORS_HEADER => {
                    if let Some(item) = line.strip_prefix("- ") {
                        let (at, rest) = leading_number(item);
                        let (text, fixed) = match rest.split_once(" → fixed: ") {
                            Some((t, f)) => (t, Some(f.to_owned())),
                            None => {
                                (rest.strip_suffix(" → not fixed in what was hidden").unwrap_or(rest), None)
                            }
                        };
                        ledger.errors.push(ErrorSeen {
                            key: text.to_owned(),
                            text: text.to_owned(),
                            at,
                            command: None,
                            fixed,
                        });
                    }
                }
                FINDINGS_HEADER => {
                    if let Some(item) = line.strip_prefix("- ") {
                        let (at, text) = leading_number(item);
                        ledger.findings.push(Finding { text: text.to_owned(), at });
                    }
                }
                NAMES_HEADER => {
                    if let Some((name, what)) = line.strip_prefix("- `").and_then(|l| l.split_once("` — "))
                    {
                        ledger.names.push(NameSeen { name: name.to_owned(), what: what.to_owned() });
                    }
                }
                SEEN_HEADER => ledger.parse_seen_line(line),
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
        // The working state is written latest first; a ledger keeps its items oldest first.
        ledger.files.reverse();
        ledger.commands.reverse();
        ledger.errors.reverse();
        ledger.findings.reverse();
        ledger.names.reverse();
        Some(ledger)
    }
}

/// The items of a line the rendering's `capped` wrote (its `+N more` left out).
fn listed_items(line: &str) -> Vec<String> {
    line.split(", ").map(str::to_owned).collect()
}

/// `text (#12)` → (`text`, 12).
fn split_number(text: &str) -> (&str, Option<usize>) {
    if let Some(open) = text.rfind(" (#")
        && let Some(n) = text[open + 3..].strip_suffix(')').and_then(|n| n.parse().ok())
    {
        return (&text[..open], Some(n));
    }
    (text, None)
}

/// `#12 text` → (12, `text`).
pub(super) fn leading_number(text: &str) -> (Option<usize>, &str) {
    if let Some(rest) = text.strip_prefix('#')
        && let Some((n, text)) = rest.split_once(' ')
        && let Ok(n) = n.parse()
    {
        return (Some(n), text);
    }
    (None, text)
}
