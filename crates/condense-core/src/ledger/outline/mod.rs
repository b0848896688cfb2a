//! The outline of a file's text as an agent saw it: the symbols it defines — functions, types,
//! classes, sections — each with its line number, by language (chosen by the file's name).
//! Read from the text alone, line by line: no parser, no guess beyond the language's own
//! keywords.
//!
//! This module holds what is shared: the [`Symbol`], the outline of a whole text (tests counted,
//! repeats named once) and a source file's imports. The numbered lines are read in `lines`, the
//! language of a path chosen in `lang`, and each family of languages read in a file of its own:
//! `code` (Rust, Python, JavaScript and TypeScript, Go, the C-like languages, Ruby), `config`
//! (TOML, INI, YAML, JSON, `.env`), `hcl` (Terraform and other HCL), `docs` (Markdown,
//! reStructuredText), `shell` (scripts, Makefiles, Dockerfiles), `sql` and `diff`.

mod code;
mod config;
mod diff;
mod docs;
mod hcl;
mod lang;
mod lines;
mod shell;
mod sql;

use lang::{Lang, lang_of, symbols};
use lines::lines_of;

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

/// Whether the values of a file at `path` may be secrets (a `.env` file, a Dockerfile's `ENV`, a
/// `.tfvars` file): no line of it is quoted anywhere, only the names its outline finds.
pub(crate) fn holds_secrets(path: &str) -> bool {
    lang_of(path).is_some_and(Lang::holds_secrets)
}

/// The symbols `text` defines, for a file at `path` whose first printed line is `first`. At most
/// `max`; an empty list when the language is not known.
pub(crate) fn outline(path: &str, text: &str, first: usize, max: usize) -> Vec<Symbol> {
    let Some(lang) = lang_of(path) else { return Vec::new() };
    let lines = lines_of(text, first);
    if lang == Lang::Diff {
        return diff::outline(&lines, max)
            .into_iter()
            .map(|(line, kind, name)| Symbol { kind, name, line })
            .collect();
    }
    let mut out: Vec<Symbol> = Vec::new();
    for (n, kind, name) in symbols(lang, &lines) {
        if name.is_empty() {
            continue;
        }
        let symbol = Symbol { kind, name, line: n };
        // Tests are counted, not listed: one symbol stands for them all.
        if lang.has_tests() && is_test(&symbol) {
            match out.iter_mut().find(|s| s.kind == TESTS) {
                Some(t) => {
                    t.name =
                        (t.name.parse::<usize>().unwrap_or(0) + usize::from(symbol.kind != "mod")).to_string()
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
    // The tests last, as in most files.
    if let Some(i) = out.iter().position(|s| s.kind == TESTS) {
        let tests = out.remove(i);
        if tests.name != "0" {
            out.push(tests);
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

/// The outline of `text` at `path` from line `first`, as the ledger writes each symbol: what the
/// tests of every language's reader compare.
#[cfg(test)]
fn rendered(path: &str, text: &str, first: usize) -> Vec<String> {
    outline(path, text, first, 50).iter().map(Symbol::render).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_outline_for_an_unknown_language() {
        assert!(rendered("data.bin", "fn x()", 1).is_empty());
    }

    #[test]
    fn tests_are_counted_only_where_they_are_written() {
        let py = "def test_retry():\n    pass\ndef test_backoff():\n    pass\ndef retry():";
        assert_eq!(rendered("tests/test_retry.py", py, 1), ["def retry l.5", "2 tests from l.1"]);
        let md = "# Release\n## TestFlight\n## test_plan";
        assert_eq!(rendered("RELEASE.md", md, 1), ["# Release l.1", "## TestFlight l.2", "## test_plan l.3"]);
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
