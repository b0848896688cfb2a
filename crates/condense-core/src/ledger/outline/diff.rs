//! The outline of a unified diff: each file it changes, the place of each hunk, and what its
//! added lines define, read in the language of the file they are in.

use super::lang::{lang_of, symbol};
use super::lines::Found;

/// The outline of a unified diff's numbered `lines`: each file it changes (`+++ b/path`), the
/// place of each hunk (the function or section Git names after `@@ … @@`), and what its added
/// lines define. At most `max`.
pub(super) fn outline(lines: &[(usize, &str)], max: usize) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    let mut lang = None;
    for &(n, line) in lines {
        if out.len() >= max {
            break;
        }
        if let Some(path) = line.strip_prefix("+++ ") {
            let path = path.trim().trim_start_matches("b/");
            if path != "/dev/null" {
                lang = lang_of(path);
                out.push((n, "file", path.to_owned()));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("@@") {
            let place = rest.split_once("@@").map_or("", |(_, p)| p).trim();
            // Git names the line above the hunk; in a file of secrets it is read for its name.
            let place = match lang {
                Some(lang) if lang.holds_secrets() => symbol(lang, place).map(|(_, name)| name),
                _ => Some(place.to_owned()),
            };
            if let Some(place) = place.filter(|p| !p.is_empty()) {
                let name: String = place.chars().take(60).collect();
                if !out.iter().any(|(_, kind, n)| *kind == "hunk in" && *n == name) {
                    out.push((n, "hunk in", name));
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
            out.push((n, kind, name.replace(", ", ",")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::rendered;

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
}
