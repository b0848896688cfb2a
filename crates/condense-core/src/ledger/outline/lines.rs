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

#[cfg(test)]
mod tests {
    use super::lines_of;

    #[test]
    fn printed_numbers_are_read_else_counted_from_the_first() {
        // Claude Code's Read tool, `cat -n`, Cline.
        assert_eq!(lines_of("    12→fn a() {\n    13→}", 1), [(12, "fn a() {"), (13, "}")]);
        assert_eq!(lines_of("     7\tFROM x\n     8\tCMD y", 1), [(7, "FROM x"), (8, "CMD y")]);
        assert_eq!(lines_of("3 | a: 1\n4 | b: 2", 1), [(3, "a: 1"), (4, "b: 2")]);
        // `sed -n '120,121p'`: no numbers printed; a line that only starts with digits is text.
        assert_eq!(lines_of("x = 1\n2024 is a year", 120), [(120, "x = 1"), (121, "2024 is a year")]);
    }
}
