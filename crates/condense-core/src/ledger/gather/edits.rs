//! An edit as the ledger writes it, whichever client made it: the symbols it touches and its
//! first changed line (a file that may hold secrets by its names alone), and the
//! `(search, replace)` pairs of a Cline or Roo diff.

use crate::ledger::one_line;
use crate::ledger::outline::{holds_secrets, outline};

/// An edit as the ledger writes it: the symbols it touches and its first changed line.
pub(super) fn edit_change(path: &str, old: &str, new: &str) -> Option<String> {
    let old_lines: std::collections::HashSet<&str> = old.lines().map(str::trim).collect();
    let first = new.lines().map(str::trim).find(|l| !l.is_empty() && !old_lines.contains(l));
    let names = |text: &str| -> Vec<String> {
        outline(path, text, 1, 4).into_iter().map(|s| format!("{} {}", s.kind, s.name)).collect()
    };
    let mut symbols = names(new);
    if symbols.is_empty() {
        symbols = names(old);
    }
    // A file whose values may be secrets is told by its names alone, never a line of it.
    if holds_secrets(path) {
        return (!symbols.is_empty()).then(|| format!("{} (values not shown)", symbols.join(", ")));
    }
    let quote = |l: &str| {
        let l = one_line(l, 100);
        if l.contains('`') { format!("\"{l}\"") } else { format!("`{l}`") }
    };
    match (symbols.is_empty(), first) {
        (_, None) if new.trim().is_empty() && !old.trim().is_empty() => {
            Some(format!("removed {}", quote(old.lines().map(str::trim).find(|l| !l.is_empty())?)))
        }
        (true, Some(l)) => Some(quote(l)),
        (false, Some(l)) => Some(format!("{}: {}", symbols.join(", "), quote(l))),
        (false, None) => Some(symbols.join(", ")),
        (true, None) => None,
    }
}

/// The `(search, replace)` pairs of a Cline `replace_in_file` or Roo `apply_diff` diff
/// (`------- SEARCH` / `=======` / `+++++++ REPLACE`, or `<<<<<<< SEARCH` / `>>>>>>> REPLACE`).
pub(super) fn search_replace_blocks(diff: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut old = String::new();
    let mut new = String::new();
    let mut state = 0; // 0 outside, 1 in search, 2 in replace
    for line in diff.lines() {
        let t = line.trim();
        if t.ends_with("SEARCH") && (t.starts_with("-------") || t.starts_with("<<<<<<<")) {
            state = 1;
            old.clear();
            new.clear();
        } else if t == "=======" && state == 1 {
            state = 2;
        } else if t.ends_with("REPLACE")
            && (t.starts_with("+++++++") || t.starts_with(">>>>>>>"))
            && state == 2
        {
            out.push((std::mem::take(&mut old), std::mem::take(&mut new)));
            state = 0;
        } else if state == 1 {
            // Roo's `:start_line:` and its separator are not the file's text.
            if !(t.starts_with(":start_line:") || t.starts_with(":end_line:") || t == "-------") {
                old.push_str(line);
                old.push('\n');
            }
        } else if state == 2 {
            new.push_str(line);
            new.push('\n');
        }
    }
    out
}
