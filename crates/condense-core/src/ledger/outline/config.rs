//! The outline of configuration files: a TOML or INI file's sections, a YAML file's keys.

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
