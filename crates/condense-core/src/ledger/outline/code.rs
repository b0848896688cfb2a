//! The symbols a line of source code defines, in Rust, Python, JavaScript and TypeScript, Go,
//! the C-like languages (C, C++, Java, Kotlin, C#, Swift, Scala, Dart, PHP) and Ruby: read from
//! the line alone, by the language's own keywords.

use super::lines::ident;

/// `s` without any of `words` (each followed by a space) at its start, repeatedly.
fn strip_words<'a>(mut s: &'a str, words: &[&str]) -> &'a str {
    loop {
        let before = s;
        for w in words {
            if let Some(rest) = s.strip_prefix(w).and_then(|r| r.strip_prefix(' ')) {
                s = rest.trim_start();
            }
        }
        if s == before {
            return s;
        }
    }
}

/// `s` past its leading `<…>` (nested).
fn skip_generics(s: &str) -> &str {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return s[i + 1..].trim_start();
                }
            }
            _ => {}
        }
    }
    s
}

/// `s` with each run of white space made one space.
fn one_space(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The line without its indent, and the indent's width.
fn indented(line: &str) -> (&str, usize) {
    let t = line.trim_start();
    (t, line.len() - t.len())
}

/// What a line of Rust defines: an item (`fn`, `struct`, `enum`, `trait`, `type`, `mod`, …), a
/// top-level `impl`, or a top-level constant.
pub(super) fn rust(line: &str) -> Option<(&'static str, String)> {
    let (t, indent) = indented(line);
    let t = strip_words(
        t,
        &["pub", "pub(crate)", "pub(super)", "pub(self)", "async", "unsafe", "const", "extern", "default"],
    );
    // `pub(in path)`.
    let t = if t.starts_with("pub(") { t.split_once(") ").map_or(t, |(_, r)| r) } else { t };
    for kind in ["fn", "struct", "enum", "trait", "type", "mod", "union", "static", "macro_rules!"] {
        if let Some(rest) = t.strip_prefix(kind).and_then(|r| r.strip_prefix(' ')) {
            return Some((kind, ident(rest.trim_start())));
        }
    }
    if let Some(rest) = t.strip_prefix("impl") {
        let rest = rest.trim_start();
        let rest = if rest.starts_with('<') { skip_generics(rest) } else { rest };
        let name: String =
            rest.split('{').next().unwrap_or("").split(" where").next().unwrap_or("").trim().to_owned();
        if !name.is_empty() && indent == 0 {
            return Some(("impl", one_space(&name)));
        }
    }
    // A `const NAME: T` at the top level (the `const` was stripped above with `pub`).
    if indent == 0 && line.contains("const ") && line.contains(':') {
        let after = line.split("const ").nth(1)?;
        let name = ident(after);
        if name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') && name.len() > 1 {
            return Some(("const", name));
        }
    }
    None
}

/// What a line of Python defines: a `def`, a `class`, or a module-level constant.
pub(super) fn python(line: &str) -> Option<(&'static str, String)> {
    let (t, indent) = indented(line);
    let t2 = t.strip_prefix("async ").unwrap_or(t);
    if let Some(rest) = t2.strip_prefix("def ") {
        return Some(("def", ident(rest)));
    }
    if let Some(rest) = t.strip_prefix("class ") {
        return Some(("class", ident(rest)));
    }
    // A module-level constant.
    if indent == 0 {
        let name = ident(t);
        let after = t[name.len()..].trim_start();
        if name.len() > 1
            && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && (after.starts_with("= ") || after.starts_with(':'))
        {
            return Some(("const", name));
        }
    }
    None
}

/// What a line of JavaScript or TypeScript defines: a function, class, interface, enum,
/// namespace or type; a top-level `const` holding a function or a constant; a class's method.
pub(super) fn script(line: &str) -> Option<(&'static str, String)> {
    let (t, indent) = indented(line);
    let t = strip_words(t, &["export", "default", "declare", "abstract", "async"]);
    for (kw, kind) in [
        ("function*", "function"),
        ("function", "function"),
        ("class", "class"),
        ("interface", "interface"),
        ("enum", "enum"),
        ("namespace", "namespace"),
    ] {
        if let Some(rest) = t.strip_prefix(kw).and_then(|r| r.strip_prefix(' ')) {
            return Some((kind, ident(rest.trim_start())));
        }
    }
    if let Some(rest) = t.strip_prefix("type ") {
        let name = ident(rest);
        if rest[name.len()..].trim_start().starts_with(['=', '<']) {
            return Some(("type", name));
        }
    }
    // `const name = (…) =>` / `= function` / `= async (` at the top level.
    for kw in ["const ", "let ", "var "] {
        if let Some(rest) = t.strip_prefix(kw)
            && indent == 0
        {
            let name = ident(rest);
            let value = rest[name.len()..].split_once('=').map(|(_, v)| v.trim_start()).unwrap_or("");
            let value = value.strip_prefix("async ").unwrap_or(value);
            if value.starts_with('(') && value.contains("=>")
                || value.starts_with("function")
                || value.contains("=> {")
                || name.chars().all(|c| c.is_ascii_uppercase() || c == '_') && name.len() > 1
            {
                return Some(("const", name));
            }
        }
    }
    // A class method: `  name(args) {` or `  async name(`, one level in.
    if (2..=4).contains(&indent) {
        let m = strip_words(
            t,
            &["public", "private", "protected", "static", "async", "get", "set", "override", "readonly"],
        );
        let name = ident(m);
        let rest = &m[name.len()..];
        if !name.is_empty()
            && !matches!(
                name.as_str(),
                "if" | "for" | "while" | "switch" | "catch" | "return" | "constructor" | "super"
            )
            && (rest.starts_with('(') || rest.starts_with('<'))
            && line.trim_end().ends_with('{')
        {
            return Some(("method", name));
        }
    }
    None
}

/// What a line of Go defines: a `func` (a method named with its receiver's type) or a `type`.
pub(super) fn go(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix("func ") {
        // `func (r *T) Name(`: the receiver's type with the name.
        if let Some(recv) = rest.strip_prefix('(') {
            let (receiver, after) = recv.split_once(')')?;
            let ty = receiver.split_whitespace().last().unwrap_or("").trim_start_matches('*');
            return Some(("func", format!("{ty}.{}", ident(after.trim_start()))));
        }
        return Some(("func", ident(rest)));
    }
    if let Some(rest) = t.strip_prefix("type ") {
        return Some(("type", ident(rest)));
    }
    None
}

/// What a line of a C-like language defines: a type by its keyword (`class`, `interface`,
/// `struct`, …), a function by its keyword (`fun`, `func`, …), a `#define`, or a function or
/// method definition written `Type name(args) {`.
pub(super) fn c_like(line: &str) -> Option<(&'static str, String)> {
    let (t, indent) = indented(line);
    let m = strip_words(
        t,
        &[
            "public",
            "private",
            "protected",
            "internal",
            "static",
            "final",
            "abstract",
            "sealed",
            "open",
            "override",
            "async",
            "export",
            "inline",
            "virtual",
            "data",
            "partial",
            "readonly",
        ],
    );
    for kw in ["class", "interface", "enum", "struct", "record", "object", "trait", "protocol", "extension"] {
        if let Some(rest) = m.strip_prefix(kw).and_then(|r| r.strip_prefix(' ')) {
            return Some((kw, ident(rest.trim_start())));
        }
    }
    for kw in ["fun", "func", "def", "function"] {
        if let Some(rest) = m.strip_prefix(kw).and_then(|r| r.strip_prefix(' ')) {
            let rest = if rest.starts_with('<') { skip_generics(rest) } else { rest };
            return Some((kw, ident(rest.trim_start())));
        }
    }
    if let Some(rest) = t.strip_prefix("#define ") {
        return Some(("#define", ident(rest)));
    }
    // `Type name(args) {` / `) {` on the line: a function or method definition.
    let open = t.find('(')?;
    let head = &t[..open];
    let words: Vec<&str> = head.split_whitespace().collect();
    let name = words.last()?.trim_start_matches(['*', '&']);
    let name = name.rsplit("::").next().unwrap_or(name);
    let keyword = matches!(
        *words.first()?,
        "if" | "for" | "while" | "switch" | "return" | "catch" | "else" | "new" | "throw" | "case" | "sizeof"
    );
    if words.len() >= 2
        && !keyword
        && !name.is_empty()
        && ident(name) == name
        && (t.trim_end().ends_with('{') || t.trim_end().ends_with(')'))
        && !t.trim_end().ends_with(';')
        && !head.contains('=')
        && indent <= 4
    {
        return Some(("fn", name.to_owned()));
    }
    None
}

/// What a line of Ruby defines: a `def` (a class method without its `self.`), `class` or
/// `module`.
pub(super) fn ruby(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    for kw in ["def", "class", "module"] {
        if let Some(rest) = t.strip_prefix(kw).and_then(|r| r.strip_prefix(' ')) {
            let rest = rest.strip_prefix("self.").unwrap_or(rest);
            return Some((kw, ident(rest)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::rendered;

    #[test]
    fn claude_code_numbered_rust() {
        let text = "     1→pub fn add(left: u64, right: u64) -> u64 {\n     2→    left + right\n     3→}\n     4→\n     5→#[cfg(test)]\n     6→mod tests {\n     7→    use super::*;\n    10→    fn it_works() {\n    12→impl<T: Clone> Stack<T> for Vec<T> {\n    13→pub(crate) struct Config {\n    14→pub const MAX_RETRIES: u32 = 3;";
        assert_eq!(
            rendered("src/lib.rs", text, 1),
            [
                "fn add l.1",
                "impl Stack<T> for Vec<T> l.12",
                "struct Config l.13",
                "const MAX_RETRIES l.14",
                "1 tests from l.6"
            ]
        );
    }

    #[test]
    fn python_from_sed_offset() {
        let text = "class SpecWorkflowTask(Task):\n    \"\"\"Doc.\"\"\"\n\n    async def run(self):\n        pass\n\nMAX_ATTEMPTS = 3\ndef discover_next_phase(run_id):\n    return None";
        assert_eq!(
            rendered("moonmind/tasks.py", text, 120),
            [
                "class SpecWorkflowTask l.120",
                "def run l.123",
                "const MAX_ATTEMPTS l.126",
                "def discover_next_phase l.127"
            ]
        );
    }

    #[test]
    fn typescript_and_go() {
        let ts = "1 | export async function createCharge(req: Req) {\n2 | export interface ChargeResult {\n3 | export const handler = async (e) => {\n4 | class Gateway {\n5 |   async capture(id: string): Promise<void> {\n6 |   if (x) {\n7 | type Id = string;";
        assert_eq!(
            rendered("src/billing/charges.ts", ts, 1),
            [
                "function createCharge l.1",
                "interface ChargeResult l.2",
                "const handler l.3",
                "class Gateway l.4",
                "method capture l.5",
                "type Id l.7"
            ]
        );
        let go = "func (s *Server) Handle(w http.ResponseWriter) {\ntype Config struct {\nfunc main() {";
        assert_eq!(
            rendered("main.go", go, 1),
            ["func Server.Handle l.1", "type Config l.2", "func main l.3"]
        );
    }
}
