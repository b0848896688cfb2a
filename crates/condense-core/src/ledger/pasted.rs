//! What of a user message was pasted rather than typed: fenced code, attached files and
//! documents (`<file_content>`, `<document>`, …), and long runs of lines without a blank one (a
//! log, a file). A condensation may cut these like any other bulk; the rest of the message — the
//! user's own words — never, and the instructions inside pasted prose are kept
//! ([`super::constraints`]).

use std::ops::Range;

use super::fences::{fences, outside};

/// A fenced block or an attachment shorter than this many bytes is not worth cutting.
pub(crate) const MIN_BYTES: usize = 200;
/// A paragraph (lines without a blank one between) this long in bytes, or of [`MIN_LINES`] lines,
/// is pasted.
pub(crate) const PARAGRAPH_BYTES: usize = 1500;
/// See [`PARAGRAPH_BYTES`].
pub(crate) const MIN_LINES: usize = 20;

/// Tags clients and people wrap attached content in.
const ATTACHMENTS: [&str; 5] = ["file_content", "document", "attachment", "file", "pasted"];

/// The byte ranges of `text` that were pasted, in order, not overlapping.
pub fn pasted_ranges(text: &str) -> Vec<Range<usize>> {
    let fenced = fences(text);
    let mut out: Vec<Range<usize>> = fenced.iter().filter(|r| r.len() >= MIN_BYTES).cloned().collect();
    // The paragraph being read (outside fences): where it starts, its lines. A long one is
    // pasted, but for a first line that introduces it ("The log:").
    let mut paragraph: Option<(usize, usize)> = None;
    let close_paragraph =
        |out: &mut Vec<Range<usize>>, paragraph: &mut Option<(usize, usize)>, end: usize| {
            if let Some((start, lines)) = paragraph.take()
                && (end - start >= PARAGRAPH_BYTES || lines >= MIN_LINES)
            {
                let first = text[start..end].split_inclusive('\n').next().unwrap_or("");
                let intro = first.trim_end().ends_with(':') && first.len() < 200;
                out.push(if intro { start + first.len() } else { start }..end);
            }
        };
    for (start, line) in outside(text, &fenced) {
        match line {
            // A fence ends the paragraph before it.
            None => close_paragraph(&mut out, &mut paragraph, start),
            Some(line) if line.trim().is_empty() => close_paragraph(&mut out, &mut paragraph, start),
            Some(_) => match &mut paragraph {
                Some((_, lines)) => *lines += 1,
                None => paragraph = Some((start, 1)),
            },
        }
    }
    close_paragraph(&mut out, &mut paragraph, text.len());
    for tag in ATTACHMENTS {
        out.extend(tagged(text, tag).into_iter().filter(|r| r.len() >= MIN_BYTES));
    }
    merge(out)
}

/// The text with its pasted ranges taken out: the user's own words.
pub fn own_words(text: &str) -> String {
    let mut out = String::new();
    let mut from = 0;
    for r in pasted_ranges(text) {
        out.push_str(&text[from..r.start]);
        from = r.end;
    }
    out.push_str(&text[from..]);
    out
}

/// The text with each pasted range cut to its first `keep` bytes (at a line end when one is
/// near), a note of what went, and the instructions the cut part held, word for word; `None`
/// when nothing of it is pasted.
pub fn cut_pasted(text: &str, keep: usize) -> Option<String> {
    let ranges = pasted_ranges(text);
    if ranges.is_empty() {
        return None;
    }
    let mut out = String::new();
    let mut from = 0;
    for r in ranges {
        out.push_str(&text[from..r.start]);
        let part = &text[r.clone()];
        let mut at = keep.min(part.len());
        while !part.is_char_boundary(at) {
            at -= 1;
        }
        if let Some(line_end) = part[..at].rfind('\n').filter(|&e| e >= at / 2) {
            at = line_end + 1;
        }
        if at == part.len() {
            out.push_str(part);
        } else {
            let instructions = super::constraints::constraints(&part[at..]);
            out.push_str(&part[..at]);
            if !part[..at].is_empty() && !part[..at].ends_with('\n') {
                out.push('\n');
            }
            let size = part[at..].chars().count();
            out.push_str(&match instructions.is_empty() {
                true => format!("[… pasted content: {size} characters cut by Context Condenser …]\n"),
                false => format!(
                    "[… pasted content: {size} characters cut by Context Condenser; the instructions in them, word for word: …]\n{}\n",
                    instructions.join("\n")
                ),
            });
        }
        from = r.end;
    }
    out.push_str(&text[from..]);
    Some(out)
}

/// The ranges of every `<tag …>…</tag>` in `text`, tags included.
fn tagged(text: &str, tag: &str) -> Vec<Range<usize>> {
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(s) = super::words::find_open(&text[from..], tag) {
        let start = from + s;
        let Some(e) = text[start..].find(&close) else { break };
        let end = start + e + close.len();
        out.push(start..end);
        from = end;
    }
    out
}

/// Ranges sorted and overlapping ones joined.
fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_attachments_and_long_paragraphs_are_pasted() {
        let code = format!("```rust\n{}```\n", "fn main() { println!(\"hi\"); }\n".repeat(10));
        let log = "2024-01-01 INFO served\n".repeat(30);
        let doc = format!("<file_content path=\"a.md\">\n{}</file_content>", "text of the file\n".repeat(20));
        let text = format!(
            "Please fix the bug below; do not change the API.\n\n{code}\nThe log:\n{log}\n{doc}\n\nThanks."
        );
        let pasted = pasted_ranges(&text);
        assert_eq!(pasted.len(), 3, "{pasted:?}");
        assert_eq!(&text[pasted[0].clone()], code);
        assert!(
            text[pasted[1].clone()].starts_with("2024-01-01 INFO")
                && text[pasted[1].clone()].ends_with("served\n")
        );
        assert_eq!(text[pasted[2].clone()].trim_end(), doc);
        let own = own_words(&text);
        assert!(own.contains("Please fix the bug below; do not change the API.") && own.contains("The log:"));
        assert!(own.contains("Thanks.") && !own.contains("INFO") && !own.contains("fn main"));
    }

    #[test]
    fn short_blocks_and_typed_paragraphs_are_the_users() {
        let text =
            "Use this:\n```\nx = 1\n```\nAnd keep the tone formal.\nSecond line of the same paragraph.";
        assert!(pasted_ranges(text).is_empty());
        assert_eq!(own_words(text), text);
    }

    #[test]
    fn cutting_keeps_the_own_words_and_the_instructions() {
        let spec = "The service must answer within 200 ms.\n".to_owned()
            + &"Background prose about the system.\n".repeat(60);
        let text = format!("Implement the spec below. Do not add dependencies.\n\n{spec}\nThanks.");
        let cut = cut_pasted(&text, 0).unwrap();
        assert!(
            cut.starts_with("Implement the spec below. Do not add dependencies.\n\n[… pasted content: "),
            "{cut}"
        );
        assert!(
            cut.contains("The service must answer within 200 ms.") && cut.ends_with("\nThanks."),
            "{cut}"
        );
        assert!(!cut.contains("Background prose"));
        let longer = cut_pasted(&text, 400).unwrap();
        assert!(longer.contains("Background prose") && longer.len() > cut.len() && longer.len() < text.len());
        // Keeping all of it changes nothing; a text with nothing pasted has nothing to cut.
        assert_eq!(cut_pasted(&text, text.len()).unwrap(), text);
        assert_eq!(cut_pasted("Just a question?", 0), None);
    }

    #[test]
    fn an_unclosed_fence_runs_to_the_end() {
        let text = format!("Look:\n```\n{}", "data line\n".repeat(40));
        let pasted = pasted_ranges(&text);
        assert_eq!(pasted, vec![6..text.len()]);
    }
}
