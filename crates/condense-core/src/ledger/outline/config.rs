//! The outline of configuration files: a TOML or INI file's sections, a YAML file's keys (a
//! Kubernetes manifest's kind and name), a JSON config's top-level keys (a package manifest's
//! scripts and first dependencies too), the names a `.env` file defines (never their values).

use super::lines::Found;

/// What a line of TOML or INI names: a section (`[package]`, `[[bin]]`) at the start of a line.
pub(super) fn toml(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    let inner = t.strip_prefix('[')?.trim_start_matches('[');
    let name = inner.split(']').next()?.trim();
    (indent == 0 && !name.is_empty()).then(|| ("[section]", name.to_owned()))
}

/// What a line of YAML names, read alone (as a diff's added line is): a top-level key or one
/// right under it.
pub(super) fn yaml_line(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    let (name, _) = yaml_key(t)?;
    (indent == 0 || indent == 2).then(|| ("key", name.to_owned()))
}

/// A line's key, if it is one (`name:`, `"on":`, `/api/runs:`), and the value after it.
fn yaml_key(t: &str) -> Option<(&str, &str)> {
    if t.starts_with(['#', '-']) {
        return None;
    }
    let (name, value) = t.split_once(':')?;
    let name = name.trim_matches(['"', '\'']);
    let key = !name.is_empty()
        && (value.is_empty() || value.starts_with(char::is_whitespace))
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.' | '{' | '}'));
    key.then(|| (name, value.trim()))
}

/// A value as written, without a trailing comment and its quotes.
fn scalar(value: &str) -> &str {
    value.split(" #").next().unwrap_or(value).trim().trim_matches(['"', '\''])
}

/// A key of a YAML document: its line, its indent, its name and its value.
type YamlKey<'a> = (usize, usize, &'a str, &'a str);

/// The keys of one YAML document, with their indents: not the lines of a block scalar
/// (`run: |`), nor the keys of a list's items.
fn yaml_keys<'a>(lines: &[(usize, &'a str)]) -> Vec<YamlKey<'a>> {
    let mut keys = Vec::new();
    // The indent of the key whose block scalar is being skipped.
    let mut block: Option<usize> = None;
    for &(n, line) in lines {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if t.is_empty() || block.is_some_and(|b| indent > b) {
            continue;
        }
        block = None;
        let item = t.strip_prefix("- ").map(str::trim_start);
        let key = yaml_key(item.unwrap_or(t));
        if let Some((_, value)) = key
            && value.split(" #").next().unwrap_or("").trim_start().starts_with(['|', '>'])
        {
            block = Some(indent);
        }
        if let (None, Some((name, value))) = (item, key) {
            keys.push((n, indent, name, value));
        }
    }
    keys
}

/// The outline of one YAML document: its top-level keys and the ones right under them, named
/// with their parent (`jobs.test`, `services.api`, `paths./api/runs`). A Kubernetes manifest
/// (a document with an `apiVersion` and a `kind`) is named by its kind and name instead
/// (`Deployment/api`), its other keys kept.
fn yaml_document(lines: &[(usize, &str)]) -> Vec<Found> {
    let keys = yaml_keys(lines);
    let top = |name: &str| keys.iter().find(|k| k.1 == 0 && k.2 == name);
    let manifest = top("apiVersion").is_some() && top("kind").is_some();
    // The manifest's `metadata.name`: a key `name` at the first indent under `metadata`.
    let under_metadata: Vec<&YamlKey<'_>> = keys
        .iter()
        .skip_while(|k| !(k.1 == 0 && k.2 == "metadata"))
        .skip(1)
        .take_while(|k| k.1 > 0)
        .collect();
    let named = under_metadata.first().and_then(|first| {
        under_metadata.iter().find(|k| k.1 == first.1 && k.2 == "name").map(|k| scalar(k.3))
    });
    let mut out = Vec::new();
    let mut parent: Option<&str> = None;
    let mut child_indent: Option<usize> = None;
    let mut piece_indent: Option<usize> = None;
    for &(n, indent, name, value) in &keys {
        if indent == 0 {
            parent = Some(name);
            child_indent = None;
            match (manifest, name) {
                (true, "kind") => out.push((
                    n,
                    "kind",
                    match named {
                        Some(named) => format!("{}/{named}", scalar(value)),
                        None => scalar(value).to_owned(),
                    },
                )),
                (true, "apiVersion" | "metadata") => {}
                _ => out.push((n, "key", name.to_owned())),
            }
            continue;
        }
        // A piece of a document (an edit's text) may start indented: its keys at its first indent
        // stand for themselves.
        let Some(parent) = parent else {
            if indent == *piece_indent.get_or_insert(indent) {
                out.push((n, "key", name.to_owned()));
            }
            continue;
        };
        // The children of a key stand at the indent of its first.
        if indent != *child_indent.get_or_insert(indent) || manifest && parent == "metadata" {
            continue;
        }
        out.push((n, "key", format!("{parent}.{name}")));
    }
    out
}

/// The outline of a YAML text, document by document (`---` between them).
pub(super) fn yaml(lines: &[(usize, &str)]) -> Vec<Found> {
    lines
        .split(|(_, l)| {
            let t = l.trim_end();
            t == "---" || t.starts_with("--- ") || t == "..."
        })
        .flat_map(yaml_document)
        .collect()
}

/// How many top-level keys a JSON file not named as a config may have and be read as one: more
/// is data (a table of translations, a fixture), whose keys say little.
const MAX_JSON_KEYS: usize = 40;

/// How many dependencies of a package manifest an outline names: the first few, enough to tell
/// what the package is built on.
const MAX_DEPS: usize = 6;

/// The members of a package manifest that list its dependencies (npm's and Composer's).
const DEPENDENCIES: &[&str] = &[
    "dependencies",
    "devDependencies",
    "peerDependencies",
    "optionalDependencies",
    "require",
    "require-dev",
];

/// Where a JSON reader stands in the text.
#[derive(Default)]
struct JsonState {
    /// How many objects and arrays are open.
    depth: usize,
    /// Inside a string, and the string read so far (kept at the two outer levels only).
    string: Option<String>,
    escaped: bool,
    /// Inside a `/* … */` comment (a `tsconfig.json` may hold them).
    comment: bool,
    /// The last string closed, at its depth and line, until what follows tells whether it is a
    /// key (a `:`).
    closed: Option<(usize, usize, String)>,
    /// The top-level key whose value is being read.
    top: Option<String>,
}

/// The outline of a JSON config: its top-level keys (kind `key`), and for a package manifest
/// (`package.json`, `composer.json`) the names of its `scripts` (kind `script`) and its first
/// [`MAX_DEPS`] dependencies (kind `dep`); never a value. Only a whole file is read (its first
/// line is line 1) and only an object; one not `named` as a config with more than
/// [`MAX_JSON_KEYS`] top-level keys is data, and has no outline.
pub(super) fn json(lines: &[(usize, &str)], named: bool, manifest: bool) -> Vec<Found> {
    if lines.first().map(|&(n, _)| n) != Some(1) {
        return Vec::new();
    }
    let mut out: Vec<Found> = Vec::new();
    let mut st = JsonState::default();
    let mut started = false;
    let mut deps = 0;
    for &(n, line) in lines {
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if st.comment {
                if c == '*' && chars.next_if_eq(&'/').is_some() {
                    st.comment = false;
                }
                continue;
            }
            if let Some(text) = st.string.as_mut() {
                match c {
                    _ if st.escaped => {
                        st.escaped = false;
                        text.push(c);
                    }
                    '\\' => st.escaped = true,
                    '"' => st.closed = st.string.take().map(|text| (st.depth, n, text)),
                    _ if st.depth <= 2 => text.push(c),
                    _ => {}
                }
                continue;
            }
            if c.is_whitespace() {
                continue;
            }
            if c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            if c == '/' && chars.next_if_eq(&'*').is_some() {
                st.comment = true;
                continue;
            }
            // The file is read only as an object.
            if !started {
                if c != '{' {
                    return Vec::new();
                }
                started = true;
            }
            let closed = st.closed.take();
            match c {
                ':' => {
                    let Some((depth, line, key)) = closed else { continue };
                    let key: String = key.chars().take(60).collect();
                    match (depth, st.top.as_deref()) {
                        (1, _) => {
                            out.push((line, "key", key.clone()));
                            st.top = Some(key);
                        }
                        (2, Some("scripts")) if manifest => out.push((line, "script", key)),
                        (2, Some(top)) if manifest && DEPENDENCIES.contains(&top) && deps < MAX_DEPS => {
                            deps += 1;
                            out.push((line, "dep", key));
                        }
                        _ => {}
                    }
                }
                '"' => st.string = Some(String::new()),
                '{' | '[' => st.depth += 1,
                '}' | ']' => st.depth = st.depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    if !named && out.iter().filter(|(_, kind, _)| *kind == "key").count() > MAX_JSON_KEYS {
        return Vec::new();
    }
    out
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
    use super::super::{outline, rendered};

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
                "key paths./api/workflows/speckit/runs l.3",
                "key services l.5",
                "key services.celery-codex-0 l.6"
            ]
        );
    }

    #[test]
    fn a_github_workflow_outlines_its_triggers_and_jobs() {
        let text = "     1→name: CI\n     2→\n     3→\"on\":\n     4→  push:\n     5→    branches: [main]\n     6→  pull_request:\n     7→env:\n     8→  CARGO_TERM_COLOR: always\n     9→jobs:\n    10→  test:\n    11→    runs-on: ubuntu-latest\n    12→    steps:\n    13→      - uses: actions/checkout@v4\n    14→      - name: Run tests\n    15→        run: |\n    16→          cargo test --workspace\n    17→  # The lint job.\n    18→  lint:\n    19→    runs-on: ubuntu-latest\n    20→description: >\n    21→  note: not a key\n";
        assert_eq!(
            rendered(".github/workflows/ci.yml", text, 1),
            [
                "key name l.1",
                "key on l.3",
                "key on.push l.4",
                "key on.pull_request l.6",
                "key env l.7",
                "key env.CARGO_TERM_COLOR l.8",
                "key jobs l.9",
                "key jobs.test l.10",
                "key jobs.lint l.18",
                "key description l.20"
            ]
        );
    }

    #[test]
    fn compose_services_at_any_indent_and_kubernetes_manifests() {
        let compose = "     1\tservices:\n     2\t    api:\n     3\t        build: .\n     4\t        environment:\n     5\t            - STRIPE_KEY=sk-live-123\n     6\t    db:\n     7\t        image: postgres:16\n     8\tvolumes:\n     9\t    pgdata: {}";
        assert_eq!(
            rendered("docker-compose.yml", compose, 1),
            [
                "key services l.1",
                "key services.api l.2",
                "key services.db l.6",
                "key volumes l.8",
                "key volumes.pgdata l.9"
            ]
        );
        let piece = "    api:\n        image: x\n    worker:\n";
        assert_eq!(rendered("docker-compose.yml", piece, 1), ["key api l.1", "key worker l.3"]);
        let k8s = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: billing-api\n  labels:\n    app: billing\nspec:\n  replicas: 2\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: \"billing-api\"  # the same name\nspec:\n  ports:\n    - port: 80\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: prod\ndata:\n  LOG_LEVEL: info\n";
        assert_eq!(
            rendered("deploy/k8s/billing.yaml", k8s, 1),
            [
                "kind Deployment/billing-api l.2",
                "key spec l.7",
                "key spec.replicas l.8",
                "kind Service/billing-api l.11",
                "key spec.ports l.15",
                "kind ConfigMap l.19",
                "key data l.22",
                "key data.LOG_LEVEL l.23"
            ]
        );
    }

    #[test]
    fn a_package_manifest_outlines_its_keys_scripts_and_first_dependencies() {
        let text = "     1→{\n     2→  \"name\": \"@acme/web\",\n     3→  \"version\": \"0.4.1\",\n     4→  \"private\": true,\n     5→  \"scripts\": {\n     6→    \"dev\": \"next dev\",\n     7→    \"build\": \"next build\",\n     8→    \"test:e2e\": \"playwright test\"\n     9→  },\n    10→  \"dependencies\": {\n    11→    \"next\": \"14.2.3\",\n    12→    \"react\": \"^18.3.1\",\n    13→    \"react-dom\": \"^18.3.1\",\n    14→    \"stripe\": \"^15.0.0\",\n    15→    \"zod\": \"^3.23.0\"\n    16→  },\n    17→  \"devDependencies\": {\n    18→    \"@playwright/test\": \"^1.44.0\",\n    19→    \"typescript\": \"5.4.5\",\n    20→    \"eslint\": \"8.57.0\"\n    21→  },\n    22→  \"engines\": { \"node\": \">=20\" }\n    23→}\n";
        assert_eq!(
            rendered("apps/web/package.json", text, 1),
            [
                "key name l.2",
                "key version l.3",
                "key private l.4",
                "key scripts l.5",
                "script dev l.6",
                "script build l.7",
                "script test:e2e l.8",
                "key dependencies l.10",
                "dep next l.11",
                "dep react l.12",
                "dep react-dom l.13",
                "dep stripe l.14",
                "dep zod l.15",
                "key devDependencies l.17",
                "dep @playwright/test l.18",
                "key engines l.22"
            ]
        );
    }

    #[test]
    fn json_configs_and_json_data() {
        // A `tsconfig.json` with comments, as `cat -n` prints it: no key inside a comment or a
        // nested object, no value.
        let tsconfig = "     1\t// Base config.\n     2\t{\n     3\t  /* \"old\": true,\n     4\t     still a comment */\n     5\t  \"extends\": \"./tsconfig.base.json\",\n     6\t  \"compilerOptions\": {\n     7\t    \"strict\": true, // \"loose\": 1\n     8\t    \"paths\": { \"@/*\": [\"./src/*\"] }\n     9\t  },\n    10\t  \"include\": [\"src\", \"a\\\"b\"]\n    11\t}";
        assert_eq!(
            rendered("tsconfig.build.json", tsconfig, 1),
            ["key extends l.5", "key compilerOptions l.6", "key include l.10"]
        );
        // Any object is read; a minified one on one line too.
        let minified = "{\"$schema\":\"https://json.schemastore.org/renovate\",\"extends\":[\"config:base\"],\"automerge\":true}";
        assert_eq!(
            rendered("renovate.json", minified, 1),
            ["key $schema l.1", "key extends l.1", "key automerge l.1"]
        );
        // Not a config: an array, a part of a file, an object of many keys (a translation table).
        assert!(rendered("fixtures/users.json", "[\n  {\"id\": 1}\n]", 1).is_empty());
        assert!(rendered("package.json", "  \"dev\": \"next dev\",\n}", 40).is_empty());
        let table: String = std::iter::once("{".to_owned())
            .chain((0..50).map(|i| format!("  \"msg_{i}\": \"x\",")))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(rendered("locales/en.json", &table, 1).is_empty());
        assert_eq!(outline("app.config.json", &table, 1, 120).len(), 50);
    }

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
