//! Fenced code blocks (```` ``` ```` or `~~~`) and the lines outside them: what tells pasted text
//! ([`super::pasted`]) and the sentences that constrain the work ([`super::constraints`]) apart from
//! code.

use std::ops::Range;

/// The fenced code blocks of `text` (```` ``` ```` or `~~~`), fence lines included: from an opening
/// line to the line that is the same marker alone; an unclosed one runs to the end.
pub(super) fn fences(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut open: Option<(&str, usize)> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let trimmed = line.trim();
        match open {
            Some((marker, from)) if trimmed == marker => {
                out.push(from..at);
                open = None;
            }
            Some(_) => {}
            None => open = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)).map(|m| (m, start)),
        }
    }
    if let Some((_, from)) = open {
        out.push(from..text.len());
    }
    out
}

/// The lines of `text` outside `fenced` (as [`fences`] gives them), each with where it starts;
/// each fenced block once, as `None` at its start.
pub(super) fn outside<'a>(
    text: &'a str,
    fenced: &'a [Range<usize>],
) -> impl Iterator<Item = (usize, Option<&'a str>)> + 'a {
    let mut fences = fenced.iter().peekable();
    let mut at = 0;
    text.split_inclusive('\n').filter_map(move |line| {
        let start = at;
        at += line.len();
        while fences.peek().is_some_and(|f| f.end <= start) {
            fences.next();
        }
        match fences.peek() {
            Some(f) if f.start == start => Some((start, None)),
            Some(f) if f.start < start => None,
            _ => Some((start, Some(line))),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_closes_on_its_marker_alone() {
        let text = "Look:\n```\na\n```rust\nb\n```\nDo not merge.\n~~~\nc";
        let fenced = fences(text);
        assert_eq!(
            fenced.iter().map(|r| &text[r.clone()]).collect::<Vec<_>>(),
            ["```\na\n```rust\nb\n```\n", "~~~\nc"]
        );
        let lines: Vec<_> = outside(text, &fenced).map(|(_, l)| l).collect();
        assert_eq!(lines, [Some("Look:\n"), None, Some("Do not merge.\n"), None]);
        assert_eq!(super::super::constraints::constraints(text), ["Do not merge."]);
    }
}
