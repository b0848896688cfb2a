//! Retention probes: phrases that must still be readable in a condensed conversation's API view.
//!
//! Two sources: phrases derived from what a run hid (`derived_probes`), and a probe file written by
//! a person (`read_probe_file`). A probe is kept when its phrase occurs, whitespace-normalized and
//! case-insensitive, in the text of the API view (`ViewText`).

use std::collections::BTreeSet;

use condense_core::Message;
use condense_core::ledger::{Ledger, normalize, view_text};
use condense_core::model::api_view;
use serde::Serialize;

/// One phrase that must survive a condensation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Probe {
    /// Where the phrase comes from, for people: `user message m12`, `file src/x.rs`, `probe file`.
    pub(crate) label: String,
    /// The phrase looked for.
    pub(crate) needle: String,
}

/// Probes derived from the messages the run hid, by the core's state ledger (the same probes
/// the template checks): each hidden user instruction (its opening words, client wrappers left
/// out), each file created, edited or deleted (its path), each open todo (its text). Messages
/// hidden before the run (by an earlier condensation) are not the run's to keep.
pub(crate) fn derived_probes(original: &[Message], result: &[Message]) -> Vec<Probe> {
    let visible_before: BTreeSet<&str> =
        original.iter().filter(|m| m.is_visible()).map(|m| m.id.as_str()).collect();
    let hidden: Vec<&Message> =
        result.iter().filter(|m| !m.is_visible() && visible_before.contains(m.id.as_str())).collect();
    // A todo list the model still sees after what was hidden is the latest: the hidden lists'
    // items are its to show or to have dropped (as the core's ledger reads it too).
    let first_hidden = result.iter().position(|m| !m.is_visible() && visible_before.contains(m.id.as_str()));
    let later_list = first_hidden.is_some_and(|at| {
        result[at..]
            .iter()
            .filter(|m| m.is_visible())
            .any(|m| m.content.iter().any(condense_core::providers::is_todo_call))
    });
    let mut seen = BTreeSet::new();
    Ledger::of(&hidden)
        .probes()
        .into_iter()
        .filter(|p| !(later_list && p.label.starts_with("todo: ")))
        .filter(|p| seen.insert(normalize(&p.needle)))
        .map(|p| Probe { label: p.label, needle: p.needle })
        .collect()
}

/// A probe file: one phrase per line; blank lines and lines starting with `#` are skipped.
pub(crate) fn parse_probe_file(text: &str) -> Vec<Probe> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| Probe { label: "probe file".into(), needle: l.to_owned() })
        .collect()
}

/// The normalized text of an API view, where probes are looked for: the ledger's
/// `view_text` (text blocks, tool names and every string of their arguments, tool results'
/// text).
pub(crate) struct ViewText(String);

impl ViewText {
    /// The text of the visible messages.
    pub(crate) fn of(messages: &[Message]) -> Self {
        ViewText(normalize(&view_text(&api_view(messages))))
    }

    /// Whether the probe's phrase is in the text.
    pub(crate) fn contains(&self, probe: &Probe) -> bool {
        let needle = normalize(&probe.needle);
        !needle.is_empty() && self.0.contains(&needle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use condense_core::{ContentBlock, Role};
    use serde_json::json;

    fn user(id: &str, text: &str) -> Message {
        Message::new(id, Role::User, vec![ContentBlock::text(text)])
    }

    #[test]
    fn derived_probes_come_from_what_the_run_hid() {
        let call = ContentBlock::ToolUse {
            id: "t1".into(),
            name: "Edit".into(),
            input: json!({"file_path": "src/app.ts", "old_string": "a", "new_string": "b"}),
        };
        let original = vec![
            user("m1", "Never touch the production config, whatever the tests say."),
            Message::new("m2", Role::Assistant, vec![call]),
            Message::new("m3", Role::User, vec![ContentBlock::tool_result_text("t1", "edited")]),
            user("m4", "<environment_details>cwd: /home/me</environment_details>"),
            user("m5", "Use pnpm, not npm, for every install in this repository."),
        ];
        let mut result = original.clone();
        for m in &mut result[..4] {
            m.condense_parent = Some("c1".into());
        }
        let probes = derived_probes(&original, &result);
        let view = ViewText::of(&original);
        assert!(probes.iter().any(|p| p.needle == "src/app.ts"), "{probes:?}");
        assert!(probes.iter().any(|p| normalize(&p.needle).starts_with("never touch the production config")));
        assert!(!probes.iter().any(|p| p.needle.contains("pnpm")), "m5 was not hidden: {probes:?}");
        assert!(
            !probes.iter().any(|p| p.needle.contains("environment_details") || p.needle.contains("/home/me"))
        );
        assert!(probes.iter().all(|p| view.contains(p)), "every probe is in the original");
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
