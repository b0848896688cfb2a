//! Pins (issue 18): a message the user pinned stays in the API view exactly as it is. No provider
//! hides or edits a visible pinned message; the template's `check_result` rejects a result that
//! does (see `crate::provider`), and every provider plans around the pins with [`kept_by_pins`].
//!
//! Tool pairs are pinned as one: a `tool_result` means nothing without its `tool_use`, and a
//! `tool_use` may not stay in the view unanswered. So [`set_pinned`] pins (and unpins) a message
//! together with the messages its tool pairs tie it to, and [`kept_by_pins`] keeps those partners
//! even in a file where only one side was marked by hand.

use std::collections::BTreeSet;

use crate::error::CondenseError;
use crate::model::{ContentBlock, Message};

/// The tool-use ids a message calls and the ids its results answer.
fn tool_ids(m: &Message) -> (Vec<&str>, Vec<&str>) {
    let mut calls = Vec::new();
    let mut answers = Vec::new();
    for b in &m.content {
        match b {
            ContentBlock::ToolUse { id, .. } => calls.push(id.as_str()),
            ContentBlock::ToolResult { tool_use_id, .. } => answers.push(tool_use_id.as_str()),
            _ => {}
        }
    }
    (calls, answers)
}

/// Indices of the visible messages tied to visible message `i` by a tool pair: the messages
/// answering its calls and the messages whose calls its results answer.
fn partners(messages: &[Message], i: usize) -> Vec<usize> {
    let (calls, answers) = tool_ids(&messages[i]);
    if calls.is_empty() && answers.is_empty() {
        return Vec::new();
    }
    (0..messages.len())
        .filter(|&j| j != i && messages[j].is_visible())
        .filter(|&j| {
            let (their_calls, their_answers) = tool_ids(&messages[j]);
            their_answers.iter().any(|a| calls.contains(a)) || their_calls.iter().any(|c| answers.contains(c))
        })
        .collect()
}

/// Indices of the visible messages a condensation must leave visible and unchanged: every visible
/// pinned message, and the messages its tool pairs tie it to (so that the view stays valid around
/// it).
pub fn kept_by_pins(messages: &[Message]) -> BTreeSet<usize> {
    let mut kept = BTreeSet::new();
    for (i, m) in messages.iter().enumerate() {
        if m.pinned && m.is_visible() {
            kept.insert(i);
            kept.extend(partners(messages, i));
        }
    }
    kept
}

/// The conversation with message `id` pinned (or unpinned), together with its tool-pair
/// partners; also the ids whose flag changed. Only a visible message can be pinned: a hidden one
/// is already out of the view (undo its condensation first). Unpinning works on any message.
pub fn set_pinned(
    messages: &[Message],
    id: &str,
    pinned: bool,
) -> Result<(Vec<Message>, Vec<String>), CondenseError> {
    let i = messages
        .iter()
        .position(|m| m.id == id)
        .ok_or_else(|| CondenseError::InvalidInput(format!("no message with id {id}")))?;
    if pinned && !messages[i].is_visible() {
        return Err(CondenseError::InvalidInput(format!(
            "message {id} is hidden by a condensation; undo it to pin the message"
        )));
    }
    let mut targets = vec![i];
    if messages[i].is_visible() {
        targets.extend(partners(messages, i));
    }
    let mut out = messages.to_vec();
    let mut changed = Vec::new();
    for t in targets {
        if out[t].pinned != pinned {
            out[t].pinned = pinned;
            changed.push(out[t].id.clone());
        }
    }
    Ok((out, changed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse { id: id.into(), name: "read_file".into(), input: serde_json::json!({}) }
    }

    fn conversation() -> Vec<Message> {
        vec![
            Message::new("a", Role::User, vec![ContentBlock::text("start")]),
            Message::new("b", Role::Assistant, vec![call("t1")]),
            Message::new("c", Role::User, vec![ContentBlock::tool_result_text("t1", "body")]),
            Message::new("d", Role::Assistant, vec![ContentBlock::text("done")]),
        ]
    }

    #[test]
    fn a_tool_result_is_pinned_with_its_call_and_unpinned_with_it() {
        let (pinned, changed) = set_pinned(&conversation(), "c", true).unwrap();
        assert_eq!(changed, ["c", "b"]);
        assert_eq!(kept_by_pins(&pinned), BTreeSet::from([1, 2]));
        let (unpinned, changed) = set_pinned(&pinned, "b", false).unwrap();
        assert_eq!(changed, ["b", "c"]);
        assert!(kept_by_pins(&unpinned).is_empty());
    }

    #[test]
    fn a_pin_marked_on_one_side_keeps_both() {
        let mut messages = conversation();
        messages[1].pinned = true;
        assert_eq!(kept_by_pins(&messages), BTreeSet::from([1, 2]));
    }

    #[test]
    fn hidden_and_unknown_messages_cannot_be_pinned() {
        let mut messages = conversation();
        messages[3].condense_parent = Some("c1".into());
        assert!(set_pinned(&messages, "d", true).unwrap_err().to_string().contains("undo"));
        assert!(set_pinned(&messages, "zz", true).unwrap_err().to_string().contains("no message"));
        assert!(kept_by_pins(&messages).is_empty());
    }
}
