//! The outline of a file's text as an agent saw it: the symbols it defines — functions, types,
//! classes, sections — each with its line number, by language (chosen by the file's extension,
//! else by what the lines look like). Read from the text alone, line by line: no parser, no
//! guess beyond the language's own keywords.
//!
//! Line numbers come from the text when a tool printed them (Claude Code's `   12→`, `cat -n`
//! and `nl -ba`'s `    12\t`, Cline's `12 | `), else from the first line the command printed
//! (`sed -n '120,200p'` → 120).

/// One symbol of an outline: its kind as the language writes it (`fn`, `class`, `def`, `#`…),
/// its name, and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Symbol {
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) line: usize,
}

impl Symbol {
    /// How the ledger writes it: `fn parse l.10`; tests collapsed: `12 tests from l.53`.
    pub(crate) fn render(&self) -> String {
        match self.kind {
            TESTS => format!("{} tests from l.{}", self.name, self.line),
            // An item of the ledger's lists holds no `, ` (`impl From<A, B>`): it separates them.
            _ => format!("{} {} l.{}", self.kind, self.name.replace(", ", ","), self.line),
        }
    }
}

/// The kind of the one symbol that stands for a file's tests, counted.
const TESTS: &str = "tests";

/// Whether a symbol is a test (`test_parse`, `TestParse`, `testParse`, `it_parses`) or the
/// module of tests (`mod tests`).
fn is_test(s: &Symbol) -> bool {
    let n = s.name.as_str();
    n.starts_with("test_")
        || n.starts_with("it_")
        || (n.starts_with("Test") || n.starts_with("test"))
            && n[4..].starts_with(|c: char| c.is_ascii_uppercase())
        || (s.kind == "mod" && (n == "tests" || n == "test"))
}

/// The languages an outline knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Rust,
    Python,
    Script,
    Go,
    CLike,
    Ruby,
    Shell,
    Markdown,
    Toml,
    Yaml,
    Sql,
    /// A unified diff: the files it changes, the places of its hunks, what its added lines define.
    Diff,
}

fn lang_of(path: &str) -> Option<Lang> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path).to_ascii_lowercase();
    if matches!(name.as_str(), "makefile" | "justfile" | "dockerfile") {
        return Some(Lang::Shell);
    }
    let ext = name.rsplit_once('.')?.1;
    Some(match ext {
        "rs" => Lang::Rust,
        "py" | "pyi" => Lang::Python,
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts" | "vue" | "svelte" => Lang::Script,
        "go" => Lang::Go,
        "c" | "h" | "cc" | "cpp" | "hpp" | "cxx" | "java" | "kt" | "kts" | "cs" | "swift" | "scala"
        | "dart" | "php" => Lang::CLike,
        "rb" => Lang::Ruby,
        "sh" | "bash" | "zsh" | "mk" => Lang::Shell,
        "md" | "mdx" | "markdown" | "rst" => Lang::Markdown,
        "toml" | "ini" | "cfg" => Lang::Toml,
        "yaml" | "yml" => Lang::Yaml,
        "sql" => Lang::Sql,
        "diff" | "patch" => Lang::Diff,
        _ => return None,
    })
}

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
fn lines_of(text: &str, first: usize) -> Vec<(usize, &str)> {
    let all: Vec<&str> = text.lines().collect();
    let with = all.iter().filter(|l| numbered(l).is_some()).count();
    if with > 0 && with * 2 >= all.iter().filter(|l| !l.trim().is_empty()).count() {
        return all.iter().filter_map(|l| numbered(l)).collect();
    }
    all.into_iter().enumerate().map(|(i, l)| (first + i, l)).collect()
}

/// The symbols `text` defines, for a file at `path` whose first printed line is `first`. At most
/// `max`; an empty list when the language is not known.
pub(crate) fn outline(path: &str, text: &str, first: usize, max: usize) -> Vec<Symbol> {
    let Some(lang) = lang_of(path) else { return Vec::new() };
    if lang == Lang::Diff {
        return diff_outline(text, first, max);
    }
    let mut out: Vec<Symbol> = Vec::new();
    let mut in_fence = false;
    for (n, line) in lines_of(text, first) {
        if lang == Lang::Markdown && line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some((kind, name)) = symbol(lang, line)
            && !name.is_empty()
        {
            let symbol = Symbol { kind, name, line: n };
            // Tests are counted, not listed: one symbol stands for them all.
            if is_test(&symbol) {
                match out.iter_mut().find(|s| s.kind == TESTS) {
                    Some(t) => {
                        t.name = (t.name.parse::<usize>().unwrap_or(0) + usize::from(symbol.kind != "mod"))
                            .to_string()
                    }
                    None => out.push(Symbol {
                        kind: TESTS,
                        name: usize::from(symbol.kind != "mod").to_string(),
                        line: n,
                    }),
                }
                continue;
            }
            if out.len() >= max {
                break;
            }
            // A name defined again (a file printed twice, an overload) is named once.
            if !out.iter().any(|s| s.kind == symbol.kind && s.name == symbol.name) {
                out.push(symbol);
            }
        }
    }
    // The tests last, as in most files.
    if let Some(i) = out.iter().position(|s| s.kind == TESTS) {
        let tests = out.remove(i);
        if tests.name != "0" {
            out.push(tests);
        }
    }
    out
}

/// An identifier at the start of `s`.
fn ident(s: &str) -> String {
    s.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect()
}

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

/// The symbol a line defines in `lang`, if any.
fn symbol(lang: Lang, line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    match lang {
        Lang::Rust => {
            let t = strip_words(
                t,
                &[
                    "pub",
                    "pub(crate)",
                    "pub(super)",
                    "pub(self)",
                    "async",
                    "unsafe",
                    "const",
                    "extern",
                    "default",
                ],
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
                let name: String = rest
                    .split('{')
                    .next()
                    .unwrap_or("")
                    .split(" where")
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_owned();
                if !name.is_empty() && indent == 0 {
                    return Some(("impl", one_space(&name)));
                }
            }
            // A `const NAME: T` at the top level (the `const` was stripped above with `pub`).
            if indent == 0 && line.contains("const ") && line.contains(':') {
                let after = line.split("const ").nth(1)?;
                let name = ident(after);
                if name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                    && name.len() > 1
                {
                    return Some(("const", name));
                }
            }
            None
        }
        Lang::Python => {
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
        Lang::Script => {
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
                    &[
                        "public",
                        "private",
                        "protected",
                        "static",
                        "async",
                        "get",
                        "set",
                        "override",
                        "readonly",
                    ],
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
        Lang::Go => {
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
        Lang::CLike => {
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
            for kw in
                ["class", "interface", "enum", "struct", "record", "object", "trait", "protocol", "extension"]
            {
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
                "if" | "for"
                    | "while"
                    | "switch"
                    | "return"
                    | "catch"
                    | "else"
                    | "new"
                    | "throw"
                    | "case"
                    | "sizeof"
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
        Lang::Ruby => {
            for kw in ["def", "class", "module"] {
                if let Some(rest) = t.strip_prefix(kw).and_then(|r| r.strip_prefix(' ')) {
                    let rest = rest.strip_prefix("self.").unwrap_or(rest);
                    return Some((kw, ident(rest)));
                }
            }
            None
        }
        Lang::Shell => {
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
        Lang::Markdown => {
            let hashes = t.bytes().take_while(|b| *b == b'#').count();
            ((1..=3).contains(&hashes) && t[hashes..].starts_with(' '))
                .then(|| (["#", "##", "###"][hashes - 1], t[hashes..].trim().chars().take(60).collect()))
        }
        Lang::Toml => {
            let inner = t.strip_prefix('[')?.trim_start_matches('[');
            let name = inner.split(']').next()?.trim();
            (indent == 0 && !name.is_empty()).then(|| ("[section]", name.to_owned()))
        }
        Lang::Yaml => {
            // The top-level keys and the ones under them: a compose file's services, an OpenAPI
            // document's paths, a workflow's jobs.
            let name = t.split(':').next()?.trim_matches(['"', '\'']);
            let key = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.' | '{' | '}'));
            ((indent == 0 || indent == 2)
                && !t.starts_with('#')
                && !t.starts_with('-')
                && t.contains(':')
                && key)
                .then(|| (if indent == 0 { "key" } else { "  key" }, name.to_owned()))
        }
        Lang::Diff => None,
        Lang::Sql => {
            let upper = t.to_ascii_uppercase();
            for kw in ["CREATE TABLE ", "CREATE VIEW ", "CREATE INDEX ", "CREATE FUNCTION ", "ALTER TABLE "] {
                if upper.starts_with(kw) {
                    let rest = t[kw.len()..].trim_start();
                    let rest = if rest.to_ascii_uppercase().starts_with("IF NOT EXISTS ") {
                        &rest[14..]
                    } else {
                        rest
                    };
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '"' | '`'))
                        .collect();
                    return Some((
                        kw.trim_end().rsplit(' ').next().map_or("table", |k| match k {
                            "TABLE" => "table",
                            "VIEW" => "view",
                            "INDEX" => "index",
                            _ => "function",
                        }),
                        name.trim_matches(['"', '`']).to_owned(),
                    ));
                }
            }
            None
        }
    }
}

/// The outline of a unified diff: each file it changes (`+++ b/path`), the place of each hunk
/// (the function or section Git names after `@@ … @@`), and what its added lines define, read in
/// the language of the file they are in.
fn diff_outline(text: &str, first: usize, max: usize) -> Vec<Symbol> {
    let mut out: Vec<Symbol> = Vec::new();
    let mut lang = None;
    for (n, line) in lines_of(text, first) {
        if out.len() >= max {
            break;
        }
        if let Some(path) = line.strip_prefix("+++ ") {
            let path = path.trim().trim_start_matches("b/");
            if path != "/dev/null" {
                lang = lang_of(path);
                out.push(Symbol { kind: "file", name: path.to_owned(), line: n });
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("@@") {
            let place = rest.split_once("@@").map_or("", |(_, p)| p).trim();
            if !place.is_empty() {
                let name: String = place.chars().take(60).collect();
                if !out.iter().any(|s| s.kind == "hunk in" && s.name == name) {
                    out.push(Symbol { kind: "hunk in", name, line: n });
                }
            }
            continue;
        }
        if let (Some(added), Some(lang)) = (line.strip_prefix('+'), lang)
            && let Some((kind, name)) = symbol(lang, added)
            && !name.is_empty()
        {
            let kind = match kind {
                "fn" => "+fn",
                "def" => "+def",
                "class" => "+class",
                "struct" => "+struct",
                "function" => "+function",
                "method" => "+method",
                _ => "+",
            };
            out.push(Symbol { kind, name: name.replace(", ", ","), line: n });
        }
    }
    out
}

/// What a source file imports, by language: `moonmind.workflows (retry_spec_workflow_run,
/// trigger_spec_workflow_run)` for Python's `from … import …`, the module of a JavaScript or
/// TypeScript `import … from '…'` with the names it takes, a Rust `use` path, a Go import. At
/// most `max`; nothing for other files.
pub(crate) fn imports(path: &str, text: &str, max: usize) -> Vec<String> {
    let Some(lang) = lang_of(path) else { return Vec::new() };
    let lines: Vec<&str> = lines_of(text, 1).into_iter().map(|(_, l)| l).collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() && out.len() < max {
        let t = lines[i].trim();
        i += 1;
        let starts = match lang {
            Lang::Python => t.starts_with("from ") || t.starts_with("import "),
            Lang::Script => t.starts_with("import ") || t.contains("require("),
            Lang::Rust => t.starts_with("use ") || t.starts_with("pub use "),
            Lang::Go => t.starts_with("import "),
            _ => false,
        };
        if !starts {
            continue;
        }
        // A statement that opens a parenthesis or brace runs on to where it closes.
        let (open, close) = match lang {
            Lang::Python | Lang::Go => ('(', ')'),
            _ => ('{', '}'),
        };
        let mut whole = t.to_owned();
        while whole.contains(open) && !whole.contains(close) && i < lines.len() {
            whole.push(' ');
            whole.push_str(lines[i].trim());
            i += 1;
        }
        let flat = whole.split_whitespace().collect::<Vec<_>>().join(" ");
        let entry = match lang {
            Lang::Python => match flat.strip_prefix("from ").and_then(|r| r.split_once(" import ")) {
                Some((module, names)) => {
                    let names =
                        names.trim_matches(|c| c == '(' || c == ')' || c == ' ').trim_end_matches(',');
                    format!("{module} ({names})")
                }
                None => flat.trim_start_matches("import ").to_owned(),
            },
            Lang::Script => {
                let module = flat.rsplit(['\'', '"']).nth(1).unwrap_or("");
                let names = flat
                    .strip_prefix("import ")
                    .and_then(|r| r.split(" from ").next())
                    .map(|n| n.trim_matches(|c| c == '{' || c == '}' || c == ' ').to_owned())
                    .unwrap_or_default();
                match names.is_empty() || names.starts_with(['\'', '"']) {
                    true => module.to_owned(),
                    false => format!("{module} ({names})"),
                }
            }
            Lang::Rust => {
                flat.trim_start_matches("pub ").trim_start_matches("use ").trim_end_matches(';').to_owned()
            }
            _ => flat
                .trim_start_matches("import ")
                .trim_matches(|c| c == '(' || c == ')' || c == ' ')
                .to_owned(),
        };
        // An item of the ledger's lists holds no `, `: it separates them.
        let entry = entry.trim().replace(", ", ",");
        if !entry.is_empty() && !out.contains(&entry) {
            out.push(entry);
        }
    }
    out
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

fn one_space(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(path: &str, text: &str, first: usize) -> Vec<String> {
        outline(path, text, first, 50).iter().map(Symbol::render).collect()
    }

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
    fn typescript_go_markdown_toml() {
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
        let md = "# Title\n```\n# not a heading\n```\n## Usage\ntext";
        assert_eq!(rendered("README.md", md, 1), ["# Title l.1", "## Usage l.5"]);
        assert_eq!(
            rendered("Cargo.toml", "[package]\nname = \"x\"\n[dependencies]", 1),
            ["[section] package l.1", "[section] dependencies l.3"]
        );
        assert!(rendered("data.bin", "fn x()", 1).is_empty());
        let yaml = "openapi: 3.0.0\npaths:\n  /api/workflows/speckit/runs:\n    post:\nservices:\n  celery-codex-0:\n    image: x";
        assert_eq!(
            rendered("api.yaml", yaml, 1),
            [
                "key openapi l.1",
                "key paths l.2",
                "  key /api/workflows/speckit/runs l.3",
                "key services l.5",
                "  key celery-codex-0 l.6"
            ]
        );
    }

    #[test]
    fn a_diff_outlines_its_files_hunks_and_what_it_adds() {
        let diff = "diff --git a/src/agentfluent/core/paths.py b/src/agentfluent/core/paths.py\n--- a/src/agentfluent/core/paths.py\n+++ b/src/agentfluent/core/paths.py\n@@ -60,6 +60,20 @@ def project_dir(slug: str) -> Path:\n+def settings_path_for(project: Path | None) -> Path:\n+    return Path.home()\n--- /dev/null\n+++ b/tests/unit/test_retention.py\n@@ -0,0 +1,9 @@\n+def test_retention():\n+    pass";
        assert_eq!(
            rendered("/tmp/simplify_481.diff", diff, 1),
            [
                "file src/agentfluent/core/paths.py l.3",
                "hunk in def project_dir(slug: str) -> Path: l.4",
                "+def settings_path_for l.5",
                "file tests/unit/test_retention.py l.8",
                "+def test_retention l.10"
            ]
        );
    }

    #[test]
    fn imports_by_language() {
        let py = "from moonmind.workflows import (\n    SpecWorkflowRepository,\n    retry_spec_workflow_run,\n)\nimport os\nx = 1";
        assert_eq!(
            imports("api/routers/workflows.py", py, 10),
            ["moonmind.workflows (SpecWorkflowRepository,retry_spec_workflow_run)", "os"]
        );
        let ts =
            "import { createIntent, confirmIntent } from '../payments/client';\nimport fs from 'node:fs';";
        assert_eq!(
            imports("a.ts", ts, 10),
            ["../payments/client (createIntent,confirmIntent)", "node:fs (fs)"]
        );
        assert_eq!(
            imports("lib.rs", "use crate::model::{Message, Role};\npub use x::y;", 10),
            ["crate::model::{Message,Role}", "x::y"]
        );
    }
}
