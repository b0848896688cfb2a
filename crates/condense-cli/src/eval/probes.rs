//! Retention probes: phrases that must still be readable in a condensed conversation's API view.
//!
//! Two sources: phrases derived from what a run hid (`derived_probes`), and a probe file written by
//! a person (`read_probe_file`). A probe is kept when its phrase occurs, whitespace-normalized and
//! case-insensitive, in the text of the API view (`ViewText`).

use std::collections::BTreeSet;

use condense_core::model::ToolResultPart;
use condense_core::{ContentBlock, Message, Role};
use serde::Serialize;

/// How many characters of a hidden user message make its probe.
const USER_PHRASE_CHARS: usize = 60;

/// User texts shorter than this ("ok", "go on") say nothing a reader must keep.
const MIN_USER_PHRASE_CHARS: usize = 16;

/// The argument names under which the common agents pass a file path to a tool.
const PATH_KEYS: [&str; 8] =
    ["path", "file_path", "filePath", "target_file", "file", "filename", "notebook_path", "paths"];

/// One phrase that must survive a condensation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Probe {
    /// Where the phrase comes from, for people: `user message m12`, `file src/x.rs`, `probe file`.
    pub(crate) label: String,
    /// The phrase looked for.
    pub(crate) needle: String,
}

/// Lower case, runs of whitespace made one space, trimmed.
pub(crate) fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Probes derived from the messages the run hid: the opening words of each hidden user text
/// (wrappers a client adds — `<environment_details>`, `[tool for 'x'] Result:` — excepted) and the
/// paths of the files the hidden tool calls named. Messages hidden before the run (by an earlier
/// condensation) are not the run's to keep.
///
/// The core's state ledger will derive richer probes (rules, todos, commands); this is the
/// measure until then, built only from what the original conversation shows.
pub(crate) fn derived_probes(original: &[Message], result: &[Message]) -> Vec<Probe> {
    let visible_before: BTreeSet<&str> =
        original.iter().filter(|m| m.is_visible()).map(|m| m.id.as_str()).collect();
    let hidden: Vec<&Message> =
        result.iter().filter(|m| !m.is_visible() && visible_before.contains(m.id.as_str())).collect();
    let mut probes = Vec::new();
    let mut seen = BTreeSet::new();
    let mut push = |label: String, needle: String| {
        if seen.insert(needle.clone()) {
            probes.push(Probe { label, needle });
        }
    };
    for message in hidden {
        for block in &message.content {
            match block {
                ContentBlock::Text { text } if message.role == Role::User => {
                    if let Some(phrase) = user_phrase(text) {
                        push(format!("user message {}", message.id), phrase);
                    }
                }
                ContentBlock::ToolUse { input, .. } => {
                    for path in paths_in(input) {
                        push(format!("file {path}"), path);
                    }
                }
                _ => {}
            }
        }
    }
    probes
}

/// The opening of a user's own text, or `None` for client wrappers and trivial replies.
fn user_phrase(text: &str) -> Option<String> {
    let trimmed = text.trim_start();
    let wrapper = trimmed.starts_with('<')
        || (trimmed.starts_with('[') && trimmed.lines().next().is_some_and(|l| l.contains("] Result:")));
    let normalized = normalize(trimmed);
    if wrapper || normalized.chars().count() < MIN_USER_PHRASE_CHARS {
        return None;
    }
    let phrase: String = normalized.chars().take(USER_PHRASE_CHARS).collect();
    Some(phrase.trim_end().to_owned())
}

/// The file paths among a tool call's arguments.
fn paths_in(input: &serde_json::Value) -> Vec<String> {
    let Some(object) = input.as_object() else { return Vec::new() };
    let mut out = Vec::new();
    for key in PATH_KEYS {
        match object.get(key) {
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => out.push(s.trim().to_owned()),
            Some(serde_json::Value::Array(items)) => {
                out.extend(items.iter().filter_map(|v| v.as_str()).map(|s| s.trim().to_owned()));
            }
            _ => {}
        }
    }
    out
}

/// A probe file: one phrase per line; blank lines and lines starting with `#` are skipped.
pub(crate) fn parse_probe_file(text: &str) -> Vec<Probe> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| Probe { label: "probe file".into(), needle: l.to_owned() })
        .collect()
}

/// The normalized text of an API view, where probes are looked for: text blocks, tool names and
/// every string of their arguments, tool results' text.
pub(crate) struct ViewText(String);

impl ViewText {
    /// The text of the visible messages.
    pub(crate) fn of(messages: &[Message]) -> Self {
        let mut raw = String::new();
        for message in messages.iter().filter(|m| m.is_visible()) {
            for block in &message.content {
                match block {
                    ContentBlock::Text { text } => push_line(&mut raw, text),
                    ContentBlock::ToolUse { name, input, .. } => {
                        push_line(&mut raw, name);
                        strings_in(input, &mut raw);
                    }
                    ContentBlock::ToolResult { content, .. } => {
                        for part in content {
                            if let ToolResultPart::Text { text } = part {
                                push_line(&mut raw, text);
                            }
                        }
                    }
                    ContentBlock::Image { .. } => {}
                }
            }
        }
        ViewText(normalize(&raw))
    }

    /// Whether the probe's phrase is in the text.
    pub(crate) fn contains(&self, probe: &Probe) -> bool {
        let needle = normalize(&probe.needle);
        !needle.is_empty() && self.0.contains(&needle)
    }
}

fn push_line(out: &mut String, text: &str) {
    out.push_str(text);
    out.push('\n');
}

fn strings_in(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::String(s) => push_line(out, s),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings_in(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings_in(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(id: &str, text: &str) -> Message {
        Message::new(id, Role::User, vec![ContentBlock::text(text)])
    }

    #[test]
    fn derived_probes_come_from_what_the_run_hid() {
        let call = ContentBlock::ToolUse {
            id: "t1".into(),
            name: "Edit".into(),
            input: json!({"file_path": "src/app.ts", "old_string": "a"}),
        };
        let original = vec![
            user("m1", "Never   touch the production config, whatever the tests say."),
            Message::new("m2", Role::Assistant, vec![call]),
            user("m3", "<environment_details>cwd: /home/me</environment_details>"),
            user("m4", "ok"),
            user("m5", "Use pnpm, not npm, for every install in this repository."),
        ];
        let mut result = original.clone();
        for m in &mut result[..4] {
            m.condense_parent = Some("c1".into());
        }
        let probes = derived_probes(&original, &result);
        let needles: Vec<&str> = probes.iter().map(|p| p.needle.as_str()).collect();
        assert_eq!(needles, ["never touch the production config, whatever the tests say.", "src/app.ts"]);
        assert_eq!(probes[1].label, "file src/app.ts");
    }

    #[test]
    fn long_user_texts_give_their_opening_only() {
        let long = "please ".repeat(40);
        let original = vec![user("m1", &long)];
        let mut result = original.clone();
        result[0].condense_parent = Some("c1".into());
        let probes = derived_probes(&original, &result);
        assert_eq!(probes.len(), 1);
        assert!(probes[0].needle.chars().count() <= USER_PHRASE_CHARS);
        assert!(long.starts_with(&probes[0].needle));
    }

    #[test]
    fn a_probe_is_kept_only_when_its_phrase_is_visible() {
        let mut hidden = user("m1", "The helper is called parse_due_date.");
        hidden.condense_parent = Some("c1".into());
        let view = ViewText::of(&[hidden, user("m2", "Use  PNPM,\n not npm.")]);
        let probe = |n: &str| Probe { label: "probe file".into(), needle: n.into() };
        assert!(view.contains(&probe("use pnpm, not npm")));
        assert!(!view.contains(&probe("parse_due_date")));
    }

    #[test]
    fn probe_files_skip_comments_and_blank_lines() {
        let probes = parse_probe_file("# rules\nnever touch prod\n\n  use pnpm  \n");
        let needles: Vec<&str> = probes.iter().map(|p| p.needle.as_str()).collect();
        assert_eq!(needles, ["never touch prod", "use pnpm"]);
    }
}
