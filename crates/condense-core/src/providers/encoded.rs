//! Tool results that clients such as Cline and Roo Code send as user text rather than as
//! `tool_result` blocks: a header line `[read_file for 'src/x.py'] Result:` followed by the tool's
//! output, in the same text block or in the next ones, often followed by an
//! `<environment_details>` block the client adds to every turn. The LLM-free providers find the
//! output's body here so they can mask, stub or de-duplicate it while keeping the header.

use std::ops::Range;

use crate::ledger::encoded_headers as headers;
use crate::model::{ContentBlock, Message, Role};

/// The tag that opens the environment block Cline and Roo append to user turns.
pub(crate) const ENVIRONMENT_TAG: &str = "<environment_details>";

/// One tool result encoded as text, inside a user message's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EncodedResult {
    /// The text block holding the body.
    pub(crate) block: usize,
    /// The body's byte range in that block's text, without surrounding whitespace.
    pub(crate) body: Range<usize>,
    /// The tool named by the header, e.g. `read_file`.
    pub(crate) tool: String,
    /// The header's quoted argument, e.g. the path, when it has one.
    pub(crate) arg: Option<String>,
}

/// `range` of `text` without leading and trailing whitespace.
fn trimmed(text: &str, range: Range<usize>) -> Range<usize> {
    let slice = &text[range.clone()];
    let lead = slice.len() - slice.trim_start().len();
    let trail = slice.len() - slice.trim_end().len();
    if lead == slice.len() {
        return range.start..range.start;
    }
    range.start + lead..range.end - trail
}

/// The text-encoded tool results of a message, in order. Only user messages carry them, and never
/// in a block marked as client context (an environment block, a reminder): a result's body ends
/// where such a block begins.
pub(crate) fn encoded_results(message: &Message) -> Vec<EncodedResult> {
    encoded_results_in(message.role, &message.content)
}

/// [`encoded_results`] of a message of `role` with `blocks` for content (an edited content,
/// read without making a message of it).
pub(crate) fn encoded_results_in(role: Role, blocks: &[ContentBlock]) -> Vec<EncodedResult> {
    if role != Role::User {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut bi = 0;
    while bi < blocks.len() {
        let ContentBlock::Text { text, client: None } = &blocks[bi] else {
            bi += 1;
            continue;
        };
        let found = headers(text);
        for (k, (_, line_end, tool, arg)) in found.iter().enumerate() {
            let end = found.get(k + 1).map(|h| h.0).unwrap_or(text.len());
            let end = text[*line_end..end].find(ENVIRONMENT_TAG).map(|at| line_end + at).unwrap_or(end);
            let body = trimmed(text, *line_end..end);
            let is_last = k + 1 == found.len();
            if !body.is_empty() {
                out.push(EncodedResult { block: bi, body, tool: tool.clone(), arg: arg.clone() });
            } else if is_last && end == text.len() {
                // The header stands alone: the body is the next text blocks, up to another header
                // or the environment block.
                let mut next = bi + 1;
                while let Some(ContentBlock::Text { text: t, client: None }) = blocks.get(next) {
                    if t.trim_start().starts_with(ENVIRONMENT_TAG) || !headers(t).is_empty() {
                        break;
                    }
                    let body = trimmed(t, 0..t.len());
                    if !body.is_empty() {
                        out.push(EncodedResult { block: next, body, tool: tool.clone(), arg: arg.clone() });
                    }
                    next += 1;
                }
                if next > bi + 1 {
                    bi = next;
                    continue;
                }
            }
        }
        bi += 1;
    }
    out
}

/// The environment blocks of a user message of `role` with `blocks` for content
/// (`<environment_details>…` to the end of its text block or to its closing tag) inside text not
/// marked as client context: client wrapper text, not the user's words. (A block marked as client
/// context is the client's whole: the providers handle it as one.)
pub(crate) fn environment_sections_in(role: Role, blocks: &[ContentBlock]) -> Vec<(usize, Range<usize>)> {
    if role != Role::User {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (bi, block) in blocks.iter().enumerate() {
        let ContentBlock::Text { text, client: None } = block else { continue };
        let mut from = 0;
        while let Some(at) = text[from..].find(ENVIRONMENT_TAG) {
            let start = from + at;
            let close = "</environment_details>";
            let end = text[start..].find(close).map(|e| start + e + close.len()).unwrap_or(text.len());
            out.push((bi, start..end));
            from = end;
        }
    }
    out
}

/// Replaces byte ranges of text blocks: `(block, range, new text)`. Ranges of one block must not
/// overlap; they are applied from the last to the first so the offsets stay right.
pub(crate) fn replace_ranges(content: &mut [ContentBlock], mut edits: Vec<(usize, Range<usize>, String)>) {
    edits.sort_by_key(|e| std::cmp::Reverse((e.0, e.1.start)));
    for (block, range, new) in edits {
        if let Some(ContentBlock::Text { text, .. }) = content.get_mut(block) {
            text.replace_range(range, &new);
        }
    }
}

/// `n` with thousands separators: `3412` → `3,412`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The largest char boundary of `text` at or below `at`.
pub(crate) fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::parse_header;

    fn user(blocks: &[&str]) -> Message {
        Message::new("u", Role::User, blocks.iter().map(|t| ContentBlock::text(*t)).collect())
    }

    #[test]
    fn headers_name_the_tool_and_its_argument() {
        assert_eq!(
            parse_header("[read_file for 'src/x.py'] Result:"),
            Some(("read_file".into(), Some("src/x.py".into())))
        );
        assert_eq!(
            parse_header("[search_files for 'fn main' in 'src/'] Result:"),
            Some(("search_files".into(), Some("fn main' in 'src/".into())))
        );
        assert_eq!(parse_header("[attempt_completion] Result:"), Some(("attempt_completion".into(), None)));
        assert_eq!(parse_header("[not a header] Result:"), None);
        assert_eq!(parse_header("[read_file for 'x']"), None);
    }

    #[test]
    fn bodies_are_found_in_the_same_block_or_the_next() {
        let same = user(&[
            "[read_file for 'a.rs'] Result:\nfn a() {}\n\n<environment_details>\nnoise\n</environment_details>",
        ]);
        let found = encoded_results(&same);
        assert_eq!(found.len(), 1);
        let ContentBlock::Text { text, .. } = &same.content[0] else { unreachable!() };
        assert_eq!(&text[found[0].body.clone()], "fn a() {}");
        assert_eq!((found[0].tool.as_str(), found[0].arg.as_deref()), ("read_file", Some("a.rs")));

        let split = user(&[
            "[execute_command for 'cargo test'] Result:",
            "Command executed.\nOutput:\nok",
            "<environment_details>\nnoise\n</environment_details>",
        ]);
        let found = encoded_results(&split);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].block, 1);
        assert_eq!(found[0].body, 0..28);

        let two = user(&["[read_file for 'a'] Result:\nA body\n[read_file for 'b'] Result:\nB body\n"]);
        let found = encoded_results(&two);
        assert_eq!(found.iter().map(|r| r.arg.clone().unwrap()).collect::<Vec<_>>(), ["a", "b"]);
        let ContentBlock::Text { text, .. } = &two.content[0] else { unreachable!() };
        assert_eq!(&text[found[1].body.clone()], "B body");

        assert!(encoded_results(&user(&["just words [x] Result: inline"])).is_empty());
        let mut assistant = user(&["[read_file for 'a'] Result:\nbody"]);
        assistant.role = Role::Assistant;
        assert!(encoded_results(&assistant).is_empty());
    }

    #[test]
    fn client_context_is_never_a_results_body() {
        use crate::model::ClientContext;
        let reminder = "# TODO LIST UPDATE REQUIRED - You MUST include the task_progress parameter\n- [x] read\n- [ ] fix";
        let mut m =
            user(&["[read_file for 'a.rs'] Result:", "fn a() {}", reminder, "[x for 'y'] Result:\nz"]);
        let ContentBlock::Text { client, .. } = &mut m.content[2] else { unreachable!() };
        *client = ClientContext::of(reminder);
        assert_eq!(*client, Some(ClientContext::TaskProgress));
        let found = encoded_results(&m);
        // The body is the block after the header only; the reminder is neither a body nor read
        // for headers, the last block is a result of its own.
        assert_eq!(found.iter().map(|r| r.block).collect::<Vec<_>>(), [1, 3]);
        let ContentBlock::Text { client, .. } = &mut m.content[3] else { unreachable!() };
        *client = Some(ClientContext::TaskResumption);
        assert_eq!(encoded_results(&m).len(), 1);
    }

    #[test]
    fn environment_sections_and_range_edits() {
        let m = user(&["hi\n<environment_details>\nx\n</environment_details>\nbye"]);
        let found = environment_sections_in(m.role, &m.content);
        assert_eq!(found, vec![(0, 3..49)]);
        let mut content = m.content.clone();
        replace_ranges(&mut content, vec![(0, 0..2, "hello".into()), (0, 3..49, "[env]".into())]);
        assert_eq!(content[0], ContentBlock::text("hello\n[env]\nbye"));
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(3412), "3,412");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(floor_boundary("é", 1), 0);
    }
}
