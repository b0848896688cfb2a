//! The outline of a document: its headings of the first three levels, outside its code. In
//! Markdown the `#` headings and the underlined ones (`Title` over `=====`), not inside a fenced
//! block, an indented one or the front matter; in reStructuredText the underlined titles, whose
//! levels go by the order their styles first appear.

use super::lines::Found;

/// The kinds of the first three levels of headings, as Markdown writes them.
const LEVELS: [&str; 3] = ["#", "##", "###"];

/// How many characters of a heading an outline keeps.
const HEADING_CHARS: usize = 60;

/// The line without its indent, and the indent's width.
fn indented(line: &str) -> (&str, usize) {
    let t = line.trim_start();
    (t, line.len() - t.len())
}

/// What a line of Markdown is, read alone (as a diff's added line is): a `#` heading of the
/// first three levels (its closing `#`s left out), at most three spaces in.
pub(super) fn heading(line: &str) -> Option<(&'static str, String)> {
    let (t, indent) = indented(line);
    let hashes = t.bytes().take_while(|b| *b == b'#').count();
    if indent > 3 || !(1..=3).contains(&hashes) || !t[hashes..].starts_with(' ') {
        return None;
    }
    let text = t[hashes..].trim();
    // `## Usage ##`: the closing hashes are no part of it (`## C#` keeps its own).
    let text = match text.trim_end_matches('#') {
        shorter if shorter.len() < text.len() && (shorter.is_empty() || shorter.ends_with(' ')) => {
            shorter.trim_end()
        }
        _ => text,
    };
    Some((LEVELS[hashes - 1], text.chars().take(HEADING_CHARS).collect()))
}

/// A fence that opens or closes a code block (```` ``` ````, `~~~~`): its character and length.
fn fence(t: &str) -> Option<(char, usize)> {
    let c = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = t.chars().take_while(|x| *x == c).count();
    (len >= 3).then_some((c, len))
}

/// The character a line is made of alone, at least three times (`=====`, `-----`), if it is.
fn underline(t: &str) -> Option<char> {
    let t = t.trim_end();
    let c = t.chars().next()?;
    (t.chars().count() >= 3 && t.chars().all(|x| x == c) && c.is_ascii_punctuation()).then_some(c)
}

/// Whether a Markdown line can be the text of an underlined heading: a paragraph's line, not a
/// list item, a quote, a table's row, HTML or an underline itself.
fn paragraph_line(t: &str) -> bool {
    let ordered = t.find(['.', ')']).is_some_and(|i| i > 0 && t[..i].bytes().all(|b| b.is_ascii_digit()));
    !t.is_empty()
        && !t.starts_with(['#', '>', '|', '<', '-', '*', '+'])
        && !ordered
        && underline(t).is_none()
        && fence(t).is_none()
}

/// The headings of a Markdown text, but none inside a fenced block (a `#` comment in a shell
/// example is no heading), an indented block or the front matter (`---` … `---` first).
pub(super) fn markdown(lines: &[(usize, &str)]) -> Vec<Found> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize)> = None;
    let mut start = 0;
    if let Some(&(_, first)) = lines.first()
        && matches!(first.trim_end(), "---" | "+++")
    {
        let end =
            lines[1..].iter().position(|(_, l)| l.trim_end() == first.trim_end() || l.trim_end() == "...");
        start = end.map_or(0, |e| e + 2);
    }
    for (i, &(n, line)) in lines.iter().enumerate().skip(start) {
        let (t, indent) = indented(line);
        if let Some((c, len)) = open {
            if fence(t).is_some_and(|(d, l)| d == c && l >= len) && t.trim_start_matches(c).trim().is_empty()
            {
                open = None;
            }
            continue;
        }
        if let Some(f) = fence(t) {
            open = Some(f);
            continue;
        }
        if let Some((kind, name)) = heading(line) {
            out.push((n, kind, name));
            continue;
        }
        // `Title` over `=====` is a first-level heading, over `-----` a second.
        let next = lines.get(i + 1).map(|&(_, l)| indented(l));
        if indent <= 3
            && paragraph_line(t)
            && let Some((under, under_indent)) = next
            && under_indent <= 3
            && let Some(c @ ('=' | '-')) = underline(under)
        {
            out.push((
                n,
                if c == '=' { "#" } else { "##" },
                t.trim_end().chars().take(HEADING_CHARS).collect(),
            ));
        }
    }
    out
}

/// The titles of a reStructuredText text: a line at the start of the line, underlined (and
/// perhaps overlined) by a punctuation character at least as long as it; the first style seen is
/// the first level, the next new one the second, and so on.
pub(super) fn rst(lines: &[(usize, &str)]) -> Vec<Found> {
    let mut out = Vec::new();
    let mut styles: Vec<(char, bool)> = Vec::new();
    for (i, &(n, line)) in lines.iter().enumerate() {
        let title = line.trim_end();
        if title.is_empty()
            || line.starts_with(char::is_whitespace)
            || !title.chars().any(char::is_alphanumeric)
        {
            continue;
        }
        let Some(&(_, under)) = lines.get(i + 1) else { continue };
        let Some(c) = underline(under).filter(|_| under.trim_end().chars().count() >= title.chars().count())
        else {
            continue;
        };
        let over = i > 0 && underline(lines[i - 1].1) == Some(c);
        let level = match styles.iter().position(|s| *s == (c, over)) {
            Some(level) => level,
            None => {
                styles.push((c, over));
                styles.len() - 1
            }
        };
        if let Some(kind) = LEVELS.get(level) {
            out.push((n, *kind, title.chars().take(HEADING_CHARS).collect()));
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

    #[test]
    fn a_realistic_readme() {
        // As Claude Code's Read tool prints it: front matter, an underlined title, a fence of
        // tildes holding a backtick fence, an indented block, a list, closing hashes.
        let text = "     1→---\n     2→title: Billing\n     3→# a comment of the front matter\n     4→---\n     5→Billing API\n     6→===========\n     7→\n     8→Charges cards.\n     9→\n    10→## Install ##\n    11→~~~~markdown\n    12→```sh\n    13→# still inside\n    14→```\n    15→~~~~\n    16→    # an indented code block\n    17→- a list item\n    18→---\n    19→Configuration\n    20→-------------\n    21→### C#\n    22→#### Too deep\n    23→";
        assert_eq!(
            rendered("docs/README.md", text, 1),
            ["# Billing API l.5", "## Install l.10", "## Configuration l.19", "### C# l.21"]
        );
    }

    #[test]
    fn restructured_text_titles_by_their_styles() {
        let text = "     1\t=========\n     2\tProject X\n     3\t=========\n     4\t\n     5\tInstall\n     6\t=======\n     7\t\n     8\tFrom source\n     9\t-----------\n    10\t\n    11\t.. code-block:: sh\n    12\t\n    13\t    make\n    14\t    ====\n    15\t\n    16\tUsage\n    17\t=======\n    18\tToo short\n    19\t===\n";
        assert_eq!(
            rendered("docs/index.rst", text, 1),
            ["# Project X l.2", "## Install l.5", "### From source l.8", "## Usage l.16"]
        );
    }
}
