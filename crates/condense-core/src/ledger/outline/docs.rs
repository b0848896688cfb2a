//! The outline of a document: its headings, outside its fenced code blocks.

use super::lines::Found;

/// What a line of Markdown is, as an outline names it: a heading of the first three levels.
pub(super) fn heading(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let hashes = t.bytes().take_while(|b| *b == b'#').count();
    ((1..=3).contains(&hashes) && t[hashes..].starts_with(' '))
        .then(|| (["#", "##", "###"][hashes - 1], t[hashes..].trim().chars().take(60).collect()))
}

/// The headings of a Markdown text, but none inside a fenced block (a `#` comment in a shell
/// example is no heading).
pub(super) fn markdown(lines: &[(usize, &str)]) -> Vec<Found> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for &(n, line) in lines {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some((kind, name)) = heading(line) {
            out.push((n, kind, name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::rendered;

    #[test]
    fn headings_outside_fences() {
        let md = "# Title\n```\n# not a heading\n```\n## Usage\ntext";
        assert_eq!(rendered("README.md", md, 1), ["# Title l.1", "## Usage l.5"]);
    }
}
