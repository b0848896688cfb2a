//! What the kept tail still refers to: the names its messages use (paths, identifiers, `code
//! spans`, by [`crate::ledger::names_in`]), and how many of them an older message holds. The
//! providers that must hide messages hide first what the tail never refers to again, and report
//! what they kept for it.

use aho_corasick::AhoCorasick;

use crate::model::{ContentBlock, Message, ToolResultPart};

/// The names of the kept tail, searched for in older messages.
pub(crate) struct Relevance {
    searcher: Option<AhoCorasick>,
    names: usize,
}

/// Every string of a JSON value, depth first.
fn strings<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match v {
        serde_json::Value::String(s) => out.push(s),
        serde_json::Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        serde_json::Value::Object(map) => map.values().for_each(|i| strings(i, out)),
        _ => {}
    }
}

/// The texts of a message a model reads: text blocks, tool calls' string arguments, tool
/// results' text.
pub(crate) fn texts(m: &Message) -> Vec<&str> {
    let mut out = Vec::new();
    for block in &m.content {
        match block {
            ContentBlock::Text { text, .. } => out.push(text.as_str()),
            ContentBlock::ToolUse { input, .. } => strings(input, &mut out),
            ContentBlock::ToolResult { content, .. } => out.extend(content.iter().filter_map(|p| match p {
                ToolResultPart::Text { text } => Some(text.as_str()),
                ToolResultPart::Image { .. } => None,
            })),
            ContentBlock::Image { .. } | ContentBlock::Opaque(_) => {}
        }
    }
    out
}

/// Whether a tool call only sets the todo list or the plan (`TodoWrite`, `update_plan`,
/// `update_todo_list`): a later list supersedes it, and the ledger keeps the latest.
pub fn is_todo_call(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::ToolUse { name, .. } if {
        let lower = name.to_ascii_lowercase();
        lower.contains("todo") || lower == "update_plan"
    })
}

impl Relevance {
    /// The names the `tail` messages use in their own text and their tool calls (not in tool
    /// results: a name the tail only received, it has not used yet; nor in a todo list, which
    /// names the whole task).
    pub(crate) fn of_tail(tail: &[&Message]) -> Relevance {
        let mut names: Vec<&str> = Vec::new();
        for m in tail {
            for block in &m.content {
                let mut own = Vec::new();
                match block {
                    ContentBlock::Text { text, client: None } => own.push(text.as_str()),
                    ContentBlock::ToolUse { input, .. } if !is_todo_call(block) => strings(input, &mut own),
                    _ => {}
                }
                for t in own {
                    names.extend(crate::ledger::names_in(t));
                }
            }
        }
        names.sort_unstable();
        names.dedup();
        let searcher = (!names.is_empty()).then(|| AhoCorasick::new(&names).ok()).flatten();
        Relevance { names: names.len(), searcher }
    }

    /// How many of the tail's names a message holds (each counted once).
    pub(crate) fn score(&self, m: &Message) -> usize {
        let Some(searcher) = &self.searcher else { return 0 };
        let mut seen = vec![false; self.names];
        let mut count = 0;
        for text in texts(m) {
            for hit in searcher.find_iter(text) {
                let k = hit.pattern().as_usize();
                if !seen[k] {
                    seen[k] = true;
                    count += 1;
                }
            }
        }
        count
    }
}
