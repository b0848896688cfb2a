//! Condensation history over a message list: the API view (hidden messages left out), condense
//! ids, undo and squash, the fast equality the template compares kept messages with, and the
//! tool-call pairing every output must keep.

use super::{ContentBlock, Message, Role, ToolResultPart};

/// Whether two block lists are equal (`a == b`), with their texts compared eight bytes at a time:
/// in WebAssembly `==` on strings is a byte-by-byte `memcmp`, and the template compares every
/// message a provider kept with the original, megabytes per run.
pub fn same_blocks(a: &[ContentBlock], b: &[ContentBlock]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_block(x, y))
}

fn same_block(a: &ContentBlock, b: &ContentBlock) -> bool {
    use ContentBlock::*;
    match (a, b) {
        (Text { text, client }, Text { text: t, client: c }) => client == c && same_text(text, t),
        (
            ToolResult { tool_use_id, content, is_error },
            ToolResult { tool_use_id: i, content: parts, is_error: e },
        ) => {
            is_error == e
                && tool_use_id == i
                && content.len() == parts.len()
                && content.iter().zip(parts).all(|pair| match pair {
                    (ToolResultPart::Text { text }, ToolResultPart::Text { text: t }) => same_text(text, t),
                    (x, y) => x == y,
                })
        }
        (ToolUse { .. }, ToolUse { .. }) | (Image { .. }, Image { .. }) | (Opaque(_), Opaque(_)) => a == b,
        _ => false,
    }
}

/// `a == b`, eight bytes at a time.
fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (words_a, rest_a) = a.as_chunks::<8>();
    let (words_b, rest_b) = b.as_chunks::<8>();
    words_a.iter().zip(words_b).all(|(x, y)| u64::from_ne_bytes(*x) == u64::from_ne_bytes(*y))
        && rest_a == rest_b
}

/// The position of `message` in `messages` when it is one of them (the same element, found by its
/// address, not an equal copy): counters that know a list's counts by position answer the
/// references the API view and the checks hand out into that list.
pub fn position_in(messages: &[Message], message: &Message) -> Option<usize> {
    let size = std::mem::size_of::<Message>();
    let offset = (std::ptr::from_ref(message) as usize).checked_sub(messages.as_ptr() as usize)?;
    (offset % size == 0 && offset / size < messages.len()).then_some(offset / size)
}

/// The API view of a message list: the messages no condensation hid, in order.
pub fn api_view(messages: &[Message]) -> Vec<&Message> {
    messages.iter().filter(|m| m.is_visible()).collect()
}

/// The ordinal of a condense id of the form `c<N>`; other ids sort first.
fn condense_ordinal(id: &str) -> u64 {
    id.strip_prefix('c').and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// The id for the next condensation of this message list: `c<N>`, one past the highest in use.
/// Deterministic, so that condensed transcripts are reproducible.
pub fn next_condense_id(messages: &[Message]) -> String {
    let max = messages
        .iter()
        .flat_map(|m| [m.condense_id.as_deref(), m.condense_parent.as_deref()])
        .flatten()
        .map(condense_ordinal)
        .max()
        .unwrap_or(0);
    format!("c{}", max + 1)
}

/// The most recent condensation still applied, if any.
pub fn last_condense_id(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .flat_map(|m| [m.condense_id.as_deref(), m.condense_parent.as_deref()])
        .flatten()
        .max_by_key(|id| condense_ordinal(id))
        .map(str::to_owned)
}

/// Undoes the condensation `condense_id`: removes the messages it added and shows again the ones
/// it hid. Returns `None` when no message mentions that id.
pub fn undo_condensation(messages: &[Message], condense_id: &str) -> Option<Vec<Message>> {
    let touched = messages.iter().any(|m| {
        m.condense_id.as_deref() == Some(condense_id) || m.condense_parent.as_deref() == Some(condense_id)
    });
    if !touched {
        return None;
    }
    let out = messages
        .iter()
        .filter(|m| m.condense_id.as_deref() != Some(condense_id))
        .cloned()
        .map(|mut m| {
            if m.condense_parent.as_deref() == Some(condense_id) {
                m.condense_parent = None;
            }
            m
        })
        .collect();
    Some(out)
}

/// Undoes the most recent condensation. `None` when nothing was condensed.
pub fn undo_last(messages: &[Message]) -> Option<(String, Vec<Message>)> {
    let id = last_condense_id(messages)?;
    let out = undo_condensation(messages, &id)?;
    Some((id, out))
}

/// Squashes the condensations made one after another by a multi-pass run into one: every id
/// numbered after `first_id` (the first pass's) is renamed to `first_id`, and the intermediate
/// copies — messages a pass added that a later pass hid again — are dropped. Their originals stay
/// hidden under `first_id`, so one undo of `first_id` restores the conversation as it was before
/// the first pass.
pub fn squash_condensations(messages: &[Message], first_id: &str) -> Vec<Message> {
    let first = condense_ordinal(first_id);
    let later = |id: Option<&str>| id.is_some_and(|id| condense_ordinal(id) > first);
    let ours = |id: Option<&str>| id.is_some_and(|id| id == first_id || condense_ordinal(id) > first);
    messages
        .iter()
        .filter(|m| !(ours(m.condense_id.as_deref()) && later(m.condense_parent.as_deref())))
        .cloned()
        .map(|mut m| {
            if later(m.condense_id.as_deref()) {
                m.condense_id = Some(first_id.to_owned());
            }
            if later(m.condense_parent.as_deref()) {
                m.condense_parent = Some(first_id.to_owned());
            }
            m
        })
        .collect()
}

/// Checks that a message list is valid for both the OpenAI and the Anthropic API: every
/// `tool_result` answers a `tool_use` of the assistant message right before it, and every
/// `tool_use` is answered in the next message. Returns the first problem found.
pub fn check_tool_pairs(messages: &[&Message]) -> Result<(), String> {
    for (i, m) in messages.iter().enumerate() {
        let calls: Vec<&str> = m
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        if !calls.is_empty() && m.role != Role::Assistant {
            return Err(format!("message {} ({}): tool_use outside an assistant message", i, m.id));
        }
        let results: Vec<&str> = m
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        if !results.is_empty() {
            if m.role != Role::User {
                return Err(format!("message {} ({}): tool_result outside a user message", i, m.id));
            }
            let prev_calls: Vec<&str> = i
                .checked_sub(1)
                .map(|p| {
                    messages[p]
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            for r in &results {
                if !prev_calls.contains(r) {
                    return Err(format!(
                        "message {} ({}): tool_result {r} has no tool_use in the message before it",
                        i, m.id
                    ));
                }
            }
        }
        if !calls.is_empty() {
            let next = messages.get(i + 1);
            for c in &calls {
                let answered = next.is_some_and(|n| {
                    n.content.iter().any(
                        |b| matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == c),
                    )
                });
                if !answered {
                    return Err(format!(
                        "message {} ({}): tool_use {c} is not answered in the next message",
                        i, m.id
                    ));
                }
            }
        }
    }
    Ok(())
}
