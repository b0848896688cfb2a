//! The languages an outline knows, which one a file is written in (by its name), and which
//! reader reads each: line by line, or, for a language whose symbols depend on where a line
//! stands, the whole text at once.

use super::lines::Found;
use super::{code, config, docs, hcl, shell, sql};

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
    /// A Dockerfile or Containerfile.
    Dockerfile,
    Markdown,
    /// reStructuredText, whose titles are underlined.
    Rst,
    Toml,
    Yaml,
    /// A JSON file, read as a config only when it is an object of few keys.
    Json,
    /// A JSON file named as a config (`tsconfig.json`, `jest.config.json`, any `.jsonc`).
    JsonConfig,
    /// A package manifest in JSON (`package.json`, `composer.json`): a config with scripts and
    /// dependencies.
    Manifest,
    /// Terraform and other HCL (`.tf`, `.hcl`).
    Hcl,
    /// A Terraform variables file (`.tfvars`): the names it assigns, never the values.
    Tfvars,
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
    if matches!(name.as_str(), "makefile" | "gnumakefile" | "justfile") {
        return Some(Lang::Shell);
    }
    // `Dockerfile`, `Dockerfile.prod`; not `Dockerfile.dockerignore` nor `Dockerfile.md`.
    let variant = name.strip_prefix("dockerfile").or_else(|| name.strip_prefix("containerfile"));
    if let Some(variant) = variant
        && (variant.is_empty()
            || variant.strip_prefix('.').is_some_and(|v| {
                !v.contains('.')
                    && !matches!(v, "dockerignore" | "md" | "txt" | "json" | "yaml" | "yml" | "sh")
            }))
    {
        return Some(Lang::Dockerfile);
    }
    if name == ".env" || name.starts_with(".env.") {
        return Some(Lang::Env);
    }
    if matches!(name.as_str(), "package.json" | "composer.json") {
        return Some(Lang::Manifest);
    }
    if name.starts_with("tsconfig") && name.ends_with(".json") || name.ends_with(".config.json") {
        return Some(Lang::JsonConfig);
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
        "dockerfile" | "containerfile" => Lang::Dockerfile,
        "md" | "mdx" | "markdown" => Lang::Markdown,
        "rst" => Lang::Rst,
        "toml" | "ini" | "cfg" => Lang::Toml,
        "yaml" | "yml" => Lang::Yaml,
        "json" => Lang::Json,
        "jsonc" => Lang::JsonConfig,
        "tf" | "tofu" | "hcl" => Lang::Hcl,
        "tfvars" => Lang::Tfvars,
        "sql" => Lang::Sql,
        "env" => Lang::Env,
        "diff" | "patch" => Lang::Diff,
        _ => return None,
    })
}

impl Lang {
    /// Whether files of this language hold tests (`fn it_parses`, `def test_retry`), which an
    /// outline counts rather than lists; a heading, key or name elsewhere (`## TestFlight`,
    /// `testEnvironment`) is none.
    pub(super) fn has_tests(self) -> bool {
        matches!(
            self,
            Lang::Rust | Lang::Python | Lang::Script | Lang::Go | Lang::CLike | Lang::Ruby | Lang::Shell
        )
    }

    /// Whether the values a file of this language holds may be secrets (a `.env` file's, a
    /// Dockerfile's `ENV`, a `.tfvars` file's), so that no line of it is ever shown whole: only
    /// the names its reader finds.
    pub(super) fn holds_secrets(self) -> bool {
        matches!(self, Lang::Env | Lang::Dockerfile | Lang::Tfvars)
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
        Lang::Dockerfile => shell::dockerfile_line(line),
        Lang::Markdown => docs::heading(line),
        // A title is known by the line under it.
        Lang::Rst => None,
        Lang::Toml => config::toml(line),
        Lang::Yaml => config::yaml_line(line),
        // A line of JSON alone does not tell how deep it stands.
        Lang::Json | Lang::JsonConfig | Lang::Manifest => None,
        Lang::Hcl => hcl::hcl_line(line, false),
        Lang::Tfvars => hcl::hcl_line(line, true),
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
        Lang::Rst => docs::rst(lines),
        Lang::Env => config::env(lines),
        Lang::Yaml => config::yaml(lines),
        Lang::Dockerfile => shell::dockerfile(lines),
        Lang::Hcl => hcl::hcl(lines, false),
        Lang::Tfvars => hcl::hcl(lines, true),
        Lang::Json => config::json(lines, false, false),
        Lang::JsonConfig => config::json(lines, true, false),
        Lang::Manifest => config::json(lines, true, true),
        _ => lines
            .iter()
            .filter_map(|&(n, line)| symbol(lang, line).map(|(kind, name)| (n, kind, name)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Lang, lang_of};

    #[test]
    fn the_language_of_a_file_by_its_name() {
        let cases = [
            ("Dockerfile", Some(Lang::Dockerfile)),
            ("docker/Dockerfile.prod", Some(Lang::Dockerfile)),
            ("web.dockerfile", Some(Lang::Dockerfile)),
            ("Containerfile", Some(Lang::Dockerfile)),
            ("Dockerfile.dockerignore", None),
            ("Makefile", Some(Lang::Shell)),
            (".env", Some(Lang::Env)),
            ("app/.env.local", Some(Lang::Env)),
            ("ci.env", Some(Lang::Env)),
            (".envrc", None),
            ("package.json", Some(Lang::Manifest)),
            ("tsconfig.node.json", Some(Lang::JsonConfig)),
            ("jest.config.json", Some(Lang::JsonConfig)),
            ("data/users.json", Some(Lang::Json)),
            ("infra/main.tf", Some(Lang::Hcl)),
            ("terragrunt.hcl", Some(Lang::Hcl)),
            ("prod.tfvars", Some(Lang::Tfvars)),
            ("docs/index.rst", Some(Lang::Rst)),
            (r"C:\repo\README.md", Some(Lang::Markdown)),
            ("notes.txt", None),
        ];
        for (path, lang) in cases {
            assert_eq!(lang_of(path), lang, "{path}");
        }
    }
}
