//! The lines of a text as a tool printed them, each with its number, and the name at the start
//! of a line: what every language's reader starts from.
//!
//! Line numbers come from the text when a tool printed them (Claude Code's `   12→`, `cat -n`
//! and `nl -ba`'s `    12\t`, Cline's `12 | `), else from the first line the command printed
//! (`sed -n '120,200p'` → 120).

/// A symbol as a language's reader finds it: its line, its kind as the language writes it, and
/// its name.
pub(super) type Found = (usize, &'static str, String);

/// A line without the number a tool printed before it, and that number.
fn numbered(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 7 {
        return None;
    }
    let n = t[..digits].parse().ok()?;
    let rest = &t[digits..];
    let text = rest
        .strip_prefix('→')
        .or_else(|| rest.strip_prefix('\t'))
        .or_else(|| rest.strip_prefix(" | "))
        .or_else(|| rest.strip_prefix(" |"))?;
    Some((n, text))
}

/// The lines of a text with their numbers: the printed ones when most lines carry one, else
/// counted from `first`.
pub(super) fn lines_of(text: &str, first: usize) -> Vec<(usize, &str)> {
    let all: Vec<&str> = text.lines().collect();
    let with = all.iter().filter(|l| numbered(l).is_some()).count();
    if with > 0 && with * 2 >= all.iter().filter(|l| !l.trim().is_empty()).count() {
        return all.iter().filter_map(|l| numbered(l)).collect();
    }
    all.into_iter().enumerate().map(|(i, l)| (first + i, l)).collect()
}

/// An identifier at the start of `s`.
pub(super) fn ident(s: &str) -> String {
    s.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect()
}
