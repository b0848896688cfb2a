//! A ledger as text: [`Ledger::render`] writes the delimited block, the user's words within a
//! token budget (long messages cut to head and tail, old ones to their instructions) and the
//! working state within its own. `parse` reads a block back.

use crate::tokens::TokenCounter;

use super::{
    BUDGET_PERCENT, Budget, CLOSE_TAG, COMMANDS_HEADER, ERRORS_HEADER, FILES_HEADER, FINDINGS_HEADER,
    FileAction, HEAD_CHARS, INTRO, Ledger, MESSAGE_PREFIX, NAMES_HEADER, NOTES_HEADER, OPEN_TAG,
    TODOS_HEADER, USER_HEADER, WORK_HEADER, WORK_PERCENT, constraints,
};

impl Ledger {
    /// The ledger as one block between [`OPEN_TAG`] and [`CLOSE_TAG`]. The user's words take at
    /// most `budget_tokens`: past it, the longest messages are cut to head and tail first; only
    /// then the oldest are named by count; the first always stays. The working state takes at
    /// most its own share ([`WORK_PERCENT`] beside the words' [`BUDGET_PERCENT`]), its items
    /// ranked by [`Live`] (none here; see [`Ledger::render_within`]).
    pub fn render(&self, budget_tokens: usize, tokens: &dyn TokenCounter) -> String {
        let budget = Budget { words: budget_tokens, work: budget_tokens * WORK_PERCENT / BUDGET_PERCENT };
        self.render_within(budget, tokens, &Live::default())
    }

    /// [`Ledger::render`] within a [`Budget`], the working state's items ranked by what is still
    /// live.
    pub fn render_within(&self, budget: Budget, tokens: &dyn TokenCounter, live: &Live) -> String {
        let mut out = format!("{OPEN_TAG}\n{INTRO}\n");
        if !self.user_messages.is_empty() || self.earlier_unquoted > 0 {
            out.push_str(&format!("\n{USER_HEADER}\n"));
            out.push_str(&self.render_words(budget.words, tokens));
        }
        if !self.todos.is_empty() {
            out.push_str(&format!("\n{TODOS_HEADER}\n"));
            for t in &self.todos {
                out.push_str(&format!("- [{}] {}\n", if t.done { "x" } else { " " }, t.text));
            }
        }
        let work = self.render_work(budget.work, tokens, live);
        // The names of what was hidden take the room the working state left, up to a part of its
        // budget: taken from the working state, they would cost it the outlines and command
        // output that name as much, and beyond its budget, room the kept messages need.
        let left = budget.work.saturating_sub(tokens.count_text_cached(&work));
        out.push_str(&work);
        out.push_str(&self.render_seen(left.min(budget.work / super::SEEN_DIVISOR), tokens).0);
        if !self.notes.is_empty() {
            out.push_str(&format!("\n{NOTES_HEADER}\n"));
            for n in &self.notes {
                out.push_str(&format!("- {n}\n"));
            }
        }
        out.push_str(CLOSE_TAG);
        out
    }

    /// The working state within `budget` tokens: every item scored (still live first, then an
    /// open error, a file changed, …, then the latest), taken whole while it fits, else by its
    /// first line, else left out and counted; each section then lists its items latest first.
    fn render_work(&self, budget: usize, tokens: &dyn TokenCounter, live: &Live) -> String {
        let mut items: Vec<Item> = Vec::new();
        let live_score = |set: &std::collections::HashSet<usize>, i: usize| 10 * u32::from(set.contains(&i));
        for (i, f) in self.files.iter().enumerate() {
            let mut head = format!("- {} {}", f.action.as_str(), f.path);
            if let Some(at) = f.at {
                head.push_str(&format!(" (#{at})"));
            }
            let detail = |outline: usize, changes: usize, mentions: usize| {
                let mut lines = Vec::new();
                if !f.outline.is_empty() {
                    lines.push(format!("  defines: {}", capped(&f.outline, outline)));
                }
                let skip = f.changes.len().saturating_sub(changes);
                for c in &f.changes[skip..] {
                    lines.push(format!("  changed: {c}"));
                }
                if !f.mentions.is_empty() && mentions > 0 {
                    lines.push(format!("  refers to: {}", capped(&f.mentions, mentions)));
                }
                lines
            };
            let base = match (f.action, f.outline.is_empty()) {
                (FileAction::Read, true) => 1,
                (FileAction::Read, false) => 2,
                _ => 3,
            };
            let mut item = Item::new(Section::Files, i, f.at, base + live_score(&live.files, i), head);
            item.levels = vec![
                detail(COMPACT, 1, 0),
                detail(MEDIUM, 2, COMPACT),
                detail(usize::MAX, usize::MAX, usize::MAX),
            ];
            item.required = f.action != FileAction::Read;
            items.push(item);
        }
        for (i, e) in self.errors.iter().enumerate() {
            let head = format!(
                "- {}{}{}",
                e.at.map(|n| format!("#{n} ")).unwrap_or_default(),
                e.text,
                match &e.fixed {
                    Some(how) => format!(" → fixed: {how}"),
                    None => " → not fixed in what was hidden".to_owned(),
                }
            );
            let base = if e.fixed.is_none() { 6 } else { 2 };
            items.push(Item::new(Section::Errors, i, e.at, base + live_score(&live.errors, i), head));
        }
        for (i, c) in self.commands.iter().enumerate() {
            let mut head = format!("- $ {}", c.command);
            if let Some(at) = c.at {
                head.push_str(&format!(" (#{at})"));
            }
            let detail = |listed: usize, matches: usize| {
                let mut lines = Vec::new();
                if let Some(o) = &c.outcome {
                    lines.push(format!("  → {o}"));
                }
                if let Some(s) = &c.summary
                    && c.outcome.as_deref().is_none_or(|o| !o.contains(s.as_str()))
                {
                    lines.push(format!("  ⇒ {s}"));
                }
                if !c.listed.is_empty() && listed > 0 {
                    lines.push(format!("  lists: {}", capped(&c.listed, listed)));
                }
                let (found, more) = split_more(&c.matches);
                let shown = found.len().min(matches);
                for m in &found[..shown] {
                    lines.push(format!("  | {m}"));
                }
                if shown < found.len() || more > 0 {
                    lines.push(format!("  | (+{} more lines)", found.len() - shown + more));
                }
                lines
            };
            let failed = c.outcome.as_deref().is_some_and(|o| o != "exit 0");
            let base = 1 + u32::from(failed) + u32::from(c.summary.is_some());
            let mut item = Item::new(Section::Commands, i, c.at, base + live_score(&live.commands, i), head);
            item.levels =
                vec![detail(COMPACT, COMPACT / 2), detail(MEDIUM, COMPACT), detail(usize::MAX, usize::MAX)];
            items.push(item);
        }
        for (i, f) in self.findings.iter().enumerate() {
            let head = format!("- {}{}", f.at.map(|n| format!("#{n} ")).unwrap_or_default(), f.text);
            items.push(Item::new(Section::Findings, i, f.at, 2 + live_score(&live.findings, i), head));
        }
        for (i, n) in self.names.iter().enumerate() {
            let head = format!("- `{}` — {}", n.name, n.what);
            items.push(Item::new(Section::Names, i, None, 12, head));
        }
        if items.is_empty() {
            return String::new();
        }
        // Highest score first; among equals, the latest.
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse((items[k].score, items[k].at.unwrap_or(0), items[k].index)));
        // First every item by its first line, as far as the budget goes (a file changed always);
        // then the room left details them, the highest first, level by level. The section's
        // header is paid by its first item.
        let mut used = tokens.count_text_cached(WORK_HEADER) + 2;
        let mut opened = [false; Section::ALL.len()];
        for &k in &order {
            let item = &mut items[k];
            let header = match opened[item.section as usize] {
                true => 0,
                false => tokens.count_text_cached(item.section.header()) + 1,
            };
            let head = tokens.count_text_cached(&item.head) + 1;
            if used + header + head <= budget || item.required {
                used += header + head;
                item.shown = Some(0);
                opened[item.section as usize] = true;
            }
        }
        for level in 1..=3 {
            for &k in &order {
                let item = &mut items[k];
                let (Some(now), Some(next)) = (item.shown, item.levels.get(level - 1)) else { continue };
                if now + 1 != level {
                    continue;
                }
                // A level that adds nothing is passed through at no cost.
                if next.is_empty() {
                    item.shown = Some(level);
                    continue;
                }
                let before = match now {
                    0 => 0,
                    n if item.levels[n - 1].is_empty() => 0,
                    n => tokens.count_text_cached(&item.levels[n - 1].join("\n")) + 1,
                };
                let after = tokens.count_text_cached(&next.join("\n")) + 1;
                if used + after.saturating_sub(before) <= budget {
                    used += after.saturating_sub(before);
                    item.shown = Some(level);
                }
            }
        }
        if items.iter().all(|i| i.shown.is_none()) {
            return String::new();
        }
        let mut out = format!("\n{WORK_HEADER}\n");
        for section in Section::ALL {
            let mut chosen: Vec<&Item> =
                items.iter().filter(|i| i.section == section && i.shown.is_some()).collect();
            if chosen.is_empty() {
                continue;
            }
            // Latest first: a section's own order is that of the latest touch, oldest first.
            chosen.sort_by_key(|i| std::cmp::Reverse(i.index));
            out.push_str(&format!("{}\n", section.header()));
            for item in chosen {
                out.push_str(&item.text());
                out.push('\n');
            }
        }
        let left = items.iter().filter(|i| i.shown.is_none()).count();
        if left > 0 {
            out.push_str(&format!("(+{left} older items)\n"));
        }
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
}

/// What of a ledger's working state the kept messages still name, by item position: the items
/// [`Ledger::render_within`] ranks first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Live {
    pub(crate) files: std::collections::HashSet<usize>,
    pub(crate) errors: std::collections::HashSet<usize>,
    pub(crate) commands: std::collections::HashSet<usize>,
    pub(crate) findings: std::collections::HashSet<usize>,
}

/// The sections of the working state, in the order they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
enum Section {
    Files,
    Errors,
    Commands,
    Findings,
    Names,
}

impl Section {
    const ALL: [Section; 5] =
        [Section::Files, Section::Errors, Section::Commands, Section::Findings, Section::Names];

    fn header(self) -> &'static str {
        match self {
            Section::Files => FILES_HEADER,
            Section::Errors => ERRORS_HEADER,
            Section::Commands => COMMANDS_HEADER,
            Section::Findings => FINDINGS_HEADER,
            Section::Names => NAMES_HEADER,
        }
    }
}

/// One item of the working state as rendered: its first line, its details at each level (more
/// at each), and the level it is shown at (`0`: its first line only).
struct Item {
    section: Section,
    index: usize,
    at: Option<usize>,
    score: u32,
    head: String,
    levels: Vec<Vec<String>>,
    shown: Option<usize>,
    /// Named whatever the budget (a file created, edited or deleted).
    required: bool,
}

impl Item {
    fn new(section: Section, index: usize, at: Option<usize>, score: u32, head: String) -> Self {
        Item { section, index, at, score, head, levels: Vec::new(), shown: None, required: false }
    }

    fn text(&self) -> String {
        match self.shown {
            Some(level) if level > 0 && !self.levels[level - 1].is_empty() => {
                format!("{}\n{}", self.head, self.levels[level - 1].join("\n"))
            }
            _ => self.head.clone(),
        }
    }
}

/// Items of a list in a line, at most `max`, then how many more (a list that ends in its own
/// `+N more` counts those too).
fn capped(items: &[String], max: usize) -> String {
    let (items, more) = split_more(items);
    if items.len() <= max {
        return match more {
            0 => items.join(", "),
            n => format!("{}, +{n} more", items.join(", ")),
        };
    }
    // Cut, the telling items are chosen first (a diff's files, then what it adds, then the
    // places of its hunks), shown in their order.
    let rank = |item: &str| match item.split(' ').next().unwrap_or("") {
        "file" => 0,
        "hunk" => 2,
        _ => 1,
    };
    let mut chosen: Vec<usize> = (0..items.len()).collect();
    chosen.sort_by_key(|&i| (rank(&items[i]), i));
    chosen.truncate(max);
    chosen.sort_unstable();
    let shown: Vec<&str> = chosen.iter().map(|&i| items[i].as_str()).collect();
    format!("{}, +{} more", shown.join(", "), items.len() - shown.len() + more)
}

/// A list without the `+N more` (or `(+N more lines)`) it may end with, and that N.
pub(super) fn split_more(items: &[String]) -> (&[String], usize) {
    let n = items.last().and_then(|l| {
        l.trim_start_matches('(')
            .strip_prefix('+')?
            .split(' ')
            .next()?
            .parse::<usize>()
            .ok()
            .filter(|_| l.ends_with(" more") || l.ends_with(" more lines)"))
    });
    match n {
        Some(n) => (&items[..items.len() - 1], n),
        None => (items, 0),
    }
}

/// How many items of a list a compact detail shows.
const COMPACT: usize = 12;
/// How many items of a list a medium detail shows.
const MEDIUM: usize = 40;

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
