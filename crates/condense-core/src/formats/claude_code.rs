//! Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`): one JSON event per
//! line. `user` and `assistant` events carry an Anthropic `message` (content a string or blocks;
//! tool results are user messages with `tool_result` blocks), a `uuid`, the `parentUuid` of the
//! event before them, `isSidechain` (a sub-agent's side chain), a `timestamp`; other events
//! (`summary`, `system`, file snapshots, …) are not sent to the model.
//!
//! The conversation is the live chain: from the last main-chain `user` or `assistant` event back
//! through `parentUuid` (a branch left by an edit or a retry, and side chains, are not in it;
//! after a `/compact`, the chain starts again with no parent, so the conversation read is the
//! compacted one the model now sees).
//! A sub-agent's transcript (`agent-<agentId>.jsonl`, beside the session or in its `subagents/`
//! folder) is a side chain only: every event has `isSidechain: true` and the sub-agent's
//! `agentId`. With no main-chain message in the file, the side chain is the conversation, read the
//! same way: from its last message back through `parentUuid`.
//! Claude Code writes one assistant event per content block, all with the same `message.id`:
//! they become one message again, and the tool results answering one assistant message become
//! one user message, as Claude Code sends them. Ids are the events' `uuid`s (the first of a merged
//! run), times their `timestamp`s.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::anthropic::blocks;
use super::read::epoch_ms;
use crate::error::ParseError;
use crate::model::{ClientContext, ContentBlock, Conversation, Message, Role};

/// Whether these events are a Claude Code session: events with a `type` and a `uuid` or a
/// `sessionId`, one of them a `user` or `assistant` event with a `message`.
pub(super) fn looks_like(lines: &[Value]) -> bool {
    let event = |v: &Value| {
        v.get("type").is_some_and(Value::is_string)
            && (v.get("uuid").is_some() || v.get("sessionId").is_some())
    };
    lines.iter().any(|v| event(v) && is_message(v))
}

fn is_message(v: &Value) -> bool {
    matches!(v.get("type").and_then(Value::as_str), Some("user" | "assistant")) && v.get("message").is_some()
}

fn uuid(v: &Value) -> Option<&str> {
    v.get("uuid").and_then(Value::as_str)
}

/// Reads a session's events (one per line; `lines[i]` is line `i + 1`).
pub(super) fn from_claude_code(lines: &[Value]) -> Result<Conversation, ParseError> {
    let chain = live_chain(lines);
    let mut messages: Vec<Message> = Vec::new();
    // The `message.id` of the assistant message the last message holds.
    let mut last_api_id: Option<String> = None;
    for i in chain {
        let event = &lines[i];
        let path = format!("line {}.message", i + 1);
        let message = &event["message"];
        let role = match event["type"].as_str() {
            Some("assistant") => Role::Assistant,
            _ => Role::User,
        };
        let mut content = blocks(message, &path)?;
        if role == Role::User {
            // A hook's output comes back as a user turn: the client's, not the user's words.
            ClientContext::mark(&mut content);
        }
        let api_id = message.get("id").and_then(Value::as_str).map(str::to_owned);
        let results_only = |c: &[ContentBlock]| {
            !c.is_empty() && c.iter().all(|b| matches!(b, ContentBlock::ToolResult { .. }))
        };
        if let Some(last) = messages.last_mut() {
            let same_answer = role == Role::Assistant
                && last.role == Role::Assistant
                && api_id.is_some()
                && api_id == last_api_id;
            let more_results = role == Role::User
                && last.role == Role::User
                && results_only(&content)
                && last.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. }));
            if same_answer || more_results {
                last.content.extend(content);
                continue;
            }
        }
        let id = match uuid(event) {
            Some(u) if !u.is_empty() => u.to_owned(),
            _ => format!("line{}", i + 1),
        };
        let mut m = Message::new(id, role, content);
        m.ts = event.get("timestamp").and_then(Value::as_str).and_then(epoch_ms).unwrap_or(0);
        last_api_id = if role == Role::Assistant { api_id } else { None };
        messages.push(m);
    }
    if messages.is_empty() {
        return Err(ParseError::at("", "a Claude Code session without user or assistant messages"));
    }
    Ok(Conversation::new(messages))
}

/// The line indexes of the live chain's messages, oldest first: the main chain's, or, in a
/// sub-agent's transcript (no main-chain message at all), the side chain's.
fn live_chain(lines: &[Value]) -> Vec<usize> {
    let main_chain = |v: &Value| is_message(v) && v.get("isSidechain").and_then(Value::as_bool) != Some(true);
    let sub_agent = !lines.iter().any(main_chain);
    let main = |v: &Value| if sub_agent { is_message(v) } else { main_chain(v) };
    let Some(leaf) = lines.iter().rposition(main) else { return Vec::new() };
    let by_uuid: HashMap<&str, usize> =
        lines.iter().enumerate().filter_map(|(i, v)| uuid(v).map(|u| (u, i))).collect();
    if uuid(&lines[leaf]).is_none() {
        // Events without ids: the file's order is the chain.
        return (0..lines.len()).filter(|i| main(&lines[*i])).collect();
    }
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut at = Some(leaf);
    while let Some(i) = at {
        if !seen.insert(i) {
            break;
        }
        // Events that are not messages (a `system` note, …) may sit in the chain: walked through.
        if main(&lines[i]) {
            chain.push(i);
        }
        // A parent that is not in the file (a line a sanitizer or a cut removed) is the message
        // before it: the chain goes on in the file's order rather than ending there.
        at = match lines[i].get("parentUuid").and_then(Value::as_str) {
            None => None,
            Some(p) => by_uuid.get(p).copied().or_else(|| (0..i).rev().find(|&j| main(&lines[j]))),
        };
    }
    chain.reverse();
    chain
}
