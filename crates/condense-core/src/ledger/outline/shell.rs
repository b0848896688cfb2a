//! The symbols of shell scripts and of the files written in their manner: a script's functions,
//! a Makefile's or justfile's targets.

use super::lines::ident;

/// What a line of a shell script, Makefile or justfile defines: a function (`name() {`,
/// `function name`) or a target (`name:`), at the start of the line.
pub(super) fn shell(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    if let Some(rest) = t.strip_prefix("function ") {
        return Some(("function", ident(rest)));
    }
    let name = ident(t);
    let rest = &t[name.len()..];
    if indent == 0
        && !name.is_empty()
        && (rest.starts_with("()") || rest.starts_with(':') && !rest.starts_with(":="))
    {
        return Some((if rest.starts_with(':') { "target" } else { "function" }, name));
    }
    None
}
