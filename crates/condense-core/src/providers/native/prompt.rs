//! The prompt a span of the conversation becomes: chat turns with their sizes, shrunk in the
//! prompt only to fit a request (long tool results and arguments cut to head and tail, repeated
//! outputs referenced), the span widened to what an earlier summary hid, and cut into chunks at
//! turn boundaries for the map step; and the instructions each request ends with.

use std::collections::HashMap;

use crate::llm::{ChatMessage, ChatRole};
use crate::model::{ContentBlock, Message, Role, tool_result_text};
use crate::providers::summary::{self, SummaryConfig, SummaryPlan};
use crate::tokens::TokenCounter;

/// Tokens a prompt turn costs besides its text (role markers, separators).
pub const TOKENS_PER_TURN: usize = 4;
/// A tool result or argument longer than this share of the budget, in percent, is cut to its head
/// and tail in a shrunk prompt.
pub const TOOL_TEXT_SHARE_PERCENT: usize = 12;
/// A repeated tool output shorter than this, in tokens, is repeated rather than referenced.
pub const MIN_DEDUP_TOKENS: usize = 32;

/// The instruction that opens a partial summary's request (map): `{i}` and `{n}` are the part's
/// place.
pub const PARTIAL_INSTRUCTION: &str = "The conversation above is part {i} of {n} of a longer \
conversation; the other parts are summarized separately and merged afterwards. Summarize only this \
part, faithfully: keep every instruction, rule and preference the user gave (in their words), every \
file path and what was done to it, every command and its outcome, every error, and every open task.";

/// The instruction that opens a merge request (reduce): `{n}` is the number of partial summaries.
pub const MERGE_INSTRUCTION: &str = "The {n} partial summaries above cover one conversation, \
in order. Merge them into one summary of the whole conversation: keep every user instruction, \
file path, command, error and open task they mention; where a later part contradicts an earlier \
one, the later part wins.";

/// The instructions of a summary request: the custom prompt, else the sectioned one.
pub(super) fn instructions(config: &SummaryConfig) -> String {
    config.custom_prompt.clone().unwrap_or_else(|| summary::SUMMARY_PROMPT.to_owned())
}

/// A partial summary's request (map): part `i` of `n`.
pub(super) fn partial_request(i: usize, n: usize, config: &SummaryConfig) -> String {
    let head = PARTIAL_INSTRUCTION.replace("{i}", &i.to_string()).replace("{n}", &n.to_string());
    format!("{head}\n\n{}", instructions(config))
}

/// A merge request (reduce) of `n` partial summaries.
pub(super) fn merge_request(n: usize, config: &SummaryConfig) -> String {
    format!("{}\n\n{}", MERGE_INSTRUCTION.replace("{n}", &n.to_string()), instructions(config))
}

/// One prompt turn with its size.
#[derive(Debug, Clone)]
pub(super) struct Turn {
    pub(super) role: ChatRole,
    pub(super) text: String,
    pub(super) tokens: usize,
}

impl Turn {
    pub(super) fn new(role: ChatRole, text: String, tokens: &dyn TokenCounter) -> Self {
        let n = tokens.count_text(&text) + TOKENS_PER_TURN;
        Turn { role, text, tokens: n }
    }

    pub(super) fn chat(&self) -> ChatMessage {
        ChatMessage { role: self.role, content: self.text.clone() }
    }
}

pub(super) fn total(turns: &[Turn]) -> usize {
    turns.iter().map(|t| t.tokens).sum()
}

/// `text` cut to about `keep` tokens: its head and tail, with what was left out named. `size` is
/// the text's token count.
pub(super) fn head_tail(text: &str, size: usize, keep: usize) -> String {
    if size <= keep || size == 0 {
        return text.to_owned();
    }
    let chars: Vec<char> = text.chars().collect();
    let keep_chars = chars.len() * keep / size;
    let head = keep_chars * 2 / 3;
    let tail = keep_chars - head;
    let head: String = chars[..head].iter().collect();
    let tail: String = chars[chars.len() - tail..].iter().collect();
    format!("{head}\n[{} tokens omitted]\n{tail}", size - keep)
}

/// How a span's messages become prompt text: as they are, or shrunk.
struct Renderer<'a> {
    tokens: &'a dyn TokenCounter,
    /// Tool text longer than this is cut to head and tail; `None`: nothing is cut.
    cap: Option<usize>,
    /// Each tool call's name and main argument, by call id.
    calls: HashMap<&'a str, String>,
    /// Tool outputs already shown, by text, with the call that showed them first.
    seen: HashMap<String, String>,
}

impl<'a> Renderer<'a> {
    fn new(messages: &'a [Message], tokens: &'a dyn TokenCounter, cap: Option<usize>) -> Self {
        let mut calls = HashMap::new();
        for m in messages {
            for b in &m.content {
                if let ContentBlock::ToolUse { id, name, input } = b {
                    calls.insert(id.as_str(), call_label(name, input));
                }
            }
        }
        Renderer { tokens, cap, calls, seen: HashMap::new() }
    }

    fn turn(&mut self, m: &Message) -> Turn {
        let role = match m.role {
            Role::User => ChatRole::User,
            Role::Assistant => ChatRole::Assistant,
        };
        let Some(cap) = self.cap else {
            return Turn::new(role, summary::to_chat(m).content, self.tokens);
        };
        let mut parts = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::Text { text, .. } => parts.push(text.clone()),
                ContentBlock::ToolUse { name, input, .. } => {
                    let args = input.to_string();
                    let size = self.tokens.count_text(&args);
                    parts.push(format!("[tool call: {name} {}]", head_tail(&args, size, cap)));
                }
                ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                    let text = tool_result_text(content);
                    let label = if *is_error { "tool error" } else { "tool result" };
                    let call =
                        self.calls.get(tool_use_id.as_str()).cloned().unwrap_or_else(|| "a tool".into());
                    let size = self.tokens.count_text(&text);
                    if size >= MIN_DEDUP_TOKENS
                        && let Some(first) = self.seen.get(&text)
                    {
                        parts.push(format!(
                            "[{label}: the same {size} tokens as the output of {first} above]"
                        ));
                        continue;
                    }
                    if size >= MIN_DEDUP_TOKENS {
                        self.seen.insert(text.clone(), call);
                    }
                    parts.push(format!("[{label}]\n{}", head_tail(&text, size, cap)));
                }
                ContentBlock::Image { .. } => parts.push("[image]".into()),
                ContentBlock::Opaque(block) => {
                    let text = block.prompt_text();
                    let size = self.tokens.count_text(&text);
                    parts.push(head_tail(&text, size, cap));
                }
            }
        }
        Turn::new(role, parts.join("\n"), self.tokens)
    }
}

/// A tool call as a short label: its name and main argument.
fn call_label(name: &str, input: &serde_json::Value) -> String {
    let main = ["path", "file_path", "filePath", "target_file", "command", "cmd", "query", "pattern", "url"]
        .iter()
        .find_map(|k| input.get(*k).and_then(serde_json::Value::as_str));
    match main {
        Some(arg) => format!("{name} {}", arg.chars().take(120).collect::<String>()),
        None => name.to_owned(),
    }
}

/// The messages a summary of `plan` is written from: the first message and the middle, each
/// earlier summary replaced by the messages it hid (recursively) when `expand`. Returns whether a
/// summary was expanded.
pub(super) fn span<'m>(
    messages: &'m [Message],
    plan: &SummaryPlan,
    expand: bool,
) -> (Vec<&'m Message>, bool) {
    let mut out = Vec::new();
    let mut expanded = false;
    for i in std::iter::once(plan.first).chain(plan.middle.iter().copied()) {
        expanded |= push_original(messages, &messages[i], expand, &mut out, 0);
    }
    (out, expanded)
}

fn push_original<'m>(
    messages: &'m [Message],
    m: &'m Message,
    expand: bool,
    out: &mut Vec<&'m Message>,
    depth: usize,
) -> bool {
    let hid: Vec<&Message> = match (&m.condense_id, expand && m.is_summary && depth < 16) {
        (Some(cid), true) => messages.iter().filter(|h| h.condense_parent.as_deref() == Some(cid)).collect(),
        _ => Vec::new(),
    };
    if hid.is_empty() {
        out.push(m);
        return false;
    }
    for h in hid {
        push_original(messages, h, expand, out, depth + 1);
    }
    true
}

/// The prompt turns of a span: as they are when they fit `budget`, else shrunk.
pub(super) fn render(
    messages: &[Message],
    span: &[&Message],
    tokens: &dyn TokenCounter,
    budget: usize,
) -> (Vec<Turn>, bool) {
    let mut plain = Renderer::new(messages, tokens, None);
    let turns: Vec<Turn> = span.iter().map(|m| plain.turn(m)).collect();
    if total(&turns) <= budget {
        return (turns, false);
    }
    let cap = (budget * TOOL_TEXT_SHARE_PERCENT / 100).max(MIN_DEDUP_TOKENS);
    let mut shrink = Renderer::new(messages, tokens, Some(cap));
    (span.iter().map(|m| shrink.turn(m)).collect(), true)
}

/// Turns split into chunks of at most `budget` tokens at turn boundaries; a turn too big for a
/// chunk alone is cut to fit.
pub(super) fn chunks(turns: Vec<Turn>, budget: usize, tokens: &dyn TokenCounter) -> Vec<Vec<Turn>> {
    let mut out: Vec<Vec<Turn>> = Vec::new();
    let mut current: Vec<Turn> = Vec::new();
    for t in turns {
        let t = if t.tokens > budget {
            let keep = budget.saturating_sub(TOKENS_PER_TURN + 16);
            Turn::new(t.role, head_tail(&t.text, t.tokens - TOKENS_PER_TURN, keep), tokens)
        } else {
            t
        };
        if !current.is_empty() && total(&current) + t.tokens > budget {
            out.push(std::mem::take(&mut current));
        }
        current.push(t);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Partial summaries as prompt turns.
pub(super) fn partial_turns(partials: &[String], tokens: &dyn TokenCounter) -> Vec<Turn> {
    let n = partials.len();
    partials
        .iter()
        .enumerate()
        .map(|(i, p)| Turn::new(ChatRole::User, format!("Partial summary {} of {n}:\n\n{p}", i + 1), tokens))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{Encoding, TiktokenCounter};

    #[test]
    fn head_tail_keeps_both_ends_and_names_the_cut() {
        let t = TiktokenCounter::new(Encoding::O200kBase);
        let text: String = (0..400).map(|i| format!("line {i}\n")).collect();
        let size = t.count_text(&text);
        let cut = head_tail(&text, size, 100);
        assert!(cut.starts_with("line 0\n") && cut.ends_with("line 399\n"), "{cut}");
        assert!(cut.contains(&format!("[{} tokens omitted]", size - 100)));
        assert!(t.count_text(&cut) < 130, "{}", t.count_text(&cut));
        assert_eq!(head_tail("short", 1, 100), "short");
    }

    #[test]
    fn chunks_cut_at_turn_boundaries_and_cut_a_turn_too_big_alone() {
        let t = TiktokenCounter::new(Encoding::O200kBase);
        let turn = |n: usize| Turn::new(ChatRole::User, "word ".repeat(n), &t);
        let parts = chunks(vec![turn(40), turn(40), turn(40), turn(500), turn(10)], 100, &t);
        let sizes: Vec<usize> = parts.iter().map(|c| c.len()).collect();
        // Two fit together; the third alone; the big one cut to nearly the whole budget; the last.
        assert_eq!(sizes, [2, 1, 1, 1]);
        for c in &parts {
            assert!(total(c) <= 100, "{}", total(c));
        }
        assert!(parts[2][0].text.contains("tokens omitted]") && parts[2][0].tokens > 80);
    }
}
