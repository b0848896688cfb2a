//! The languages an outline knows, which one a file is written in (by its name), and which
//! reader reads each: line by line, or, for a language whose symbols depend on where a line
//! stands, the whole text at once.

use super::lines::Found;
use super::{code, config, docs, shell, sql};

/// The languages an outline knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lang {
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
    /// A `.env` file: the names it gives values, never the values.
    Env,
    /// A unified diff: the files it changes, the places of its hunks, what its added lines define.
    Diff,
}

/// The language of a file at `path`, by its name or extension; `None` for one an outline does not
/// know.
pub(super) fn lang_of(path: &str) -> Option<Lang> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path).to_ascii_lowercase();
    if matches!(name.as_str(), "makefile" | "justfile" | "dockerfile") {
        return Some(Lang::Shell);
    }
    if name == ".env" || name.starts_with(".env.") {
        return Some(Lang::Env);
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
        "env" => Lang::Env,
        "diff" | "patch" => Lang::Diff,
        _ => return None,
    })
}

impl Lang {
    /// Whether the values a file of this language holds are secrets (a `.env` file's), so that
    /// no line of it is ever shown whole: only the names its reader finds.
    pub(super) fn holds_secrets(self) -> bool {
        self == Lang::Env
    }
}

/// The symbol one line defines in `lang`, read from the line alone (as a diff's added lines are
/// read, without the lines around them).
pub(super) fn symbol(lang: Lang, line: &str) -> Option<(&'static str, String)> {
    match lang {
        Lang::Rust => code::rust(line),
        Lang::Python => code::python(line),
        Lang::Script => code::script(line),
        Lang::Go => code::go(line),
        Lang::CLike => code::c_like(line),
        Lang::Ruby => code::ruby(line),
        Lang::Shell => shell::shell(line),
        Lang::Markdown => docs::heading(line),
        Lang::Toml => config::toml(line),
        Lang::Yaml => config::yaml(line),
        Lang::Sql => sql::statement(line),
        Lang::Env => config::env_line(line),
        Lang::Diff => None,
    }
}

/// The symbols the numbered `lines` of a file in `lang` define, in their order; a diff's are
/// read apart (they are not a file's symbols).
pub(super) fn symbols(lang: Lang, lines: &[(usize, &str)]) -> Vec<Found> {
    match lang {
        Lang::Markdown => docs::markdown(lines),
        Lang::Env => config::env(lines),
        _ => lines
            .iter()
            .filter_map(|&(n, line)| symbol(lang, line).map(|(kind, name)| (n, kind, name)))
            .collect(),
    }
}
