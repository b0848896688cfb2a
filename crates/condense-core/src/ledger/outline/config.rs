//! The outline of configuration files: a TOML or INI file's sections, a YAML file's keys, the
//! names a `.env` file defines (never their values).

use super::lines::Found;

/// What a line of TOML or INI names: a section (`[package]`, `[[bin]]`) at the start of a line.
pub(super) fn toml(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    let inner = t.strip_prefix('[')?.trim_start_matches('[');
    let name = inner.split(']').next()?.trim();
    (indent == 0 && !name.is_empty()).then(|| ("[section]", name.to_owned()))
}

/// What a line of YAML names: a top-level key or one right under it — a compose file's
/// services, an OpenAPI document's paths, a workflow's jobs.
pub(super) fn yaml(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    let name = t.split(':').next()?.trim_matches(['"', '\'']);
    let key = !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.' | '{' | '}'));
    ((indent == 0 || indent == 2) && !t.starts_with('#') && !t.starts_with('-') && t.contains(':') && key)
        .then(|| (if indent == 0 { "key" } else { "  key" }, name.to_owned()))
}

/// The name a line of a `.env` file defines (`NAME=…`, `export NAME=…`) and the value after
/// it, which no outline ever shows: a `.env` file holds secrets.
fn env_assignment(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let t = t.strip_prefix("export ").map_or(t, str::trim_start);
    let len = t.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(t.len());
    let (name, rest) = t.split_at(len);
    let value = rest.trim_start().strip_prefix('=')?;
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some((name, value))
}

/// The quote a `.env` value opens and does not close on its line (`KEY="-----BEGIN …`), if any.
fn open_quote(value: &str) -> Option<char> {
    let value = value.trim_start();
    let quote = value.chars().next().filter(|c| matches!(c, '"' | '\'' | '`'))?;
    (!closes(&value[1..], quote)).then_some(quote)
}

/// Whether `s` holds `quote` not escaped by a backslash.
fn closes(s: &str, quote: char) -> bool {
    let mut escaped = false;
    for c in s.chars() {
        match c {
            '\\' if !escaped => escaped = true,
            c if c == quote && !escaped => return true,
            _ => escaped = false,
        }
    }
    false
}

/// What one line of a `.env` file names, read alone (as a diff's added line is): a name written
/// the way variables of the environment are (`DATABASE_URL`), never its value. A line of a value
/// that runs on over lines cannot be told from an assignment here, so a name in lower case (a
/// piece of a key's text ending in `=`) is not taken.
pub(super) fn env_line(line: &str) -> Option<(&'static str, String)> {
    let (name, _) = env_assignment(line)?;
    let upper = name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    (upper && name.chars().any(|c| c.is_ascii_uppercase())).then(|| ("env", name.to_owned()))
}

/// The names a `.env` file defines, in their order; never a value, nor a line of a quoted value
/// that runs on over lines (a private key's text).
pub(super) fn env(lines: &[(usize, &str)]) -> Vec<Found> {
    let mut out = Vec::new();
    let mut open: Option<char> = None;
    for &(n, line) in lines {
        if let Some(quote) = open {
            if closes(line, quote) {
                open = None;
            }
            continue;
        }
        if line.trim_start().starts_with('#') {
            continue;
        }
        if let Some((name, value)) = env_assignment(line) {
            out.push((n, "env", name.to_owned()));
            open = open_quote(value);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::rendered;

    #[test]
    fn toml_sections_and_yaml_keys() {
        assert_eq!(
            rendered("Cargo.toml", "[package]\nname = \"x\"\n[dependencies]", 1),
            ["[section] package l.1", "[section] dependencies l.3"]
        );
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
}

#[cfg(test)]
mod env_tests {
    use super::super::{outline, rendered};

    /// A `.env` file as Claude Code's Read tool prints it, with secrets in every form a value
    /// takes: bare, quoted, exported, and a quoted private key over several lines (whose base64
    /// text ends in `=`, as an assignment does).
    const DOTENV: &str = "     1→# Stripe\n     2→STRIPE_SECRET_KEY=sk-live-123\n     3→export DATABASE_URL=\"postgres://app:hunter2@db:5432/app\"\n     4→\n     5→PRIVATE_KEY=\"-----BEGIN PRIVATE KEY-----\n     6→MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n     7→ABCDEFGH==\n     8→-----END PRIVATE KEY-----\"\n     9→debug = true\n    10→API_TOKEN='sk-live-123'";

    #[test]
    fn a_dotenv_file_outlines_its_names() {
        assert_eq!(
            rendered(".env", DOTENV, 1),
            [
                "env STRIPE_SECRET_KEY l.2",
                "env DATABASE_URL l.3",
                "env PRIVATE_KEY l.5",
                "env debug l.9",
                "env API_TOKEN l.10"
            ]
        );
        let cat_n = "     1\tNODE_ENV=production\n     2\tSESSION_SECRET=sk-live-123\n";
        assert_eq!(
            rendered("deploy/.env.production", cat_n, 1),
            ["env NODE_ENV l.1", "env SESSION_SECRET l.2"]
        );
        assert_eq!(rendered("config/app.env", "PORT=8080", 1), ["env PORT l.1"]);
    }

    #[test]
    fn no_value_of_a_dotenv_file_is_ever_shown() {
        let secrets = ["sk-live-123", "hunter2", "postgres", "MIIE", "ABCDEFGH", "BEGIN", "true"];
        for path in [".env", ".env.local", "prod.env"] {
            for (first, max) in [(1, 50), (1, 2), (40, 50)] {
                let symbols = outline(path, DOTENV, first, max);
                assert!(!symbols.is_empty(), "{path}");
                for s in &symbols {
                    let shown = format!("{} {} {}", s.render(), s.kind, s.name);
                    assert!(secrets.iter().all(|v| !shown.contains(v)), "{path}: {shown}");
                }
            }
        }
        // A diff of a `.env` file: what it adds, and the places of its hunks (Git names the line
        // above a hunk, here an assignment), show names only.
        let diff = "--- a/.env\n+++ b/.env\n@@ -1,2 +1,3 @@ STRIPE_SECRET_KEY=sk-live-123\n+API_TOKEN=sk-live-123\n+kCBKcwggSjAgEAAoIB==\n";
        let shown: Vec<String> = outline("changes.diff", diff, 1, 50).iter().map(|s| s.render()).collect();
        assert_eq!(shown, ["file .env l.2", "hunk in STRIPE_SECRET_KEY l.3", "+ API_TOKEN l.4"]);
    }
}
