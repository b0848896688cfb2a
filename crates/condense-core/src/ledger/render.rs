//! A ledger as text and back: [`Ledger::render`] writes the delimited block, the user's words
//! within a token budget (long messages cut to head and tail, old ones to their instructions),
//! and [`Ledger::parse`] reads a block back, so a later condensation merges it.

use crate::tokens::TokenCounter;

use super::calls::checkbox;
use super::{
    CLOSE_TAG, COMMANDS_HEADER, CommandRun, FILES_HEADER, FileAction, FileTouch, HEAD_CHARS, INTRO, Ledger,
    MESSAGE_PREFIX, NOTES_HEADER, OPEN_TAG, TODOS_HEADER, USER_HEADER, UserWords, constraints,
};

impl Ledger {
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
