//! Codex CLI rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`): one
//! `{"timestamp", "type", "payload"}` record per line. `session_meta` opens the file (its
//! `instructions`, when present, are the system prompt); `response_item`s are what the model saw
//! and said — `message` (role `user`, `assistant`, `developer` or `system`; parts `input_text`,
//! `output_text`, `input_image`), `function_call` (`name`, `arguments` as JSON text, `call_id`),
//! `function_call_output` (`call_id`, `output`), `custom_tool_call` / `custom_tool_call_output`
//! (free-form input, e.g. `apply_patch`), `reasoning`, `local_shell_call`, `web_search_call`;
//! `event_msg` (the UI's copies of the same turns), `turn_context` and `compacted` are not
//! messages and are skipped.
//!
//! The conversation the model saw: user and assistant messages; calls as `tool_use` blocks
//! (`id` = `call_id`) on the assistant's turn, outputs as `tool_result`s on the next user turn;
//! `reasoning` and any other item kept as read (an opaque block on the assistant's turn);
//! `developer` and `system` messages before the first user or assistant message join the system
//! prompt, later ones stay in place as user text. Messages have no ids in a rollout: `m1`, `m2`,
//! …; times are the records' `timestamp`s.

use serde_json::{Map, Value, json};

use super::read::{add_turn, epoch_ms};
use crate::error::ParseError;
use crate::model::{ContentBlock, Conversation, ImageSource, Message, OpaqueBlock, Role, ToolResultPart};

/// Whether these records are a Codex rollout: `{"type", "payload"}` records, one of them a
/// `session_meta` or a `response_item`.
pub(super) fn looks_like(lines: &[Value]) -> bool {
    lines.iter().any(|v| {
        v.get("payload").is_some_and(Value::is_object)
            && matches!(v.get("type").and_then(Value::as_str), Some("session_meta" | "response_item"))
    })
}

/// Reads a rollout's records (one per line; `lines[i]` is line `i + 1`).
pub(super) fn from_codex(lines: &[Value]) -> Result<Conversation, ParseError> {
    let mut system: Vec<String> = Vec::new();
    let mut messages: Vec<Message> = Vec::new();
    for (i, record) in lines.iter().enumerate() {
        let path = format!("line {}.payload", i + 1);
        let payload = &record["payload"];
        let ts = record.get("timestamp").and_then(Value::as_str).and_then(epoch_ms).unwrap_or(0);
        match record.get("type").and_then(Value::as_str) {
            Some("session_meta") => {
                if let Some(text) = payload.get("instructions").and_then(Value::as_str)
                    && !text.trim().is_empty()
                {
                    system.push(text.to_owned());
                }
            }
            Some("response_item") => response_item(payload, &path, ts, &mut system, &mut messages)?,
            // `event_msg` repeats the turns for the UI; `turn_context` and `compacted` are state.
            _ => {}
        }
    }
    if messages.is_empty() {
        return Err(ParseError::at("", "a Codex rollout without user or assistant messages"));
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    Ok(Conversation { system, ..Conversation::new(messages) })
}

/// One Responses API item (a rollout's `response_item` payload, or an `input` item of a
/// Responses request), at `path`, added to `messages` (or, for a leading developer or system
/// message, to `system`).
fn response_item(
    payload: &Value,
    path: &str,
    ts: i64,
    system: &mut Vec<String>,
    messages: &mut Vec<Message>,
) -> Result<(), ParseError> {
    let Some(item) = payload.as_object() else {
        return Err(ParseError::at(path, "expected an object"));
    };
    let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "message" => {
            let role = item.get("role").and_then(Value::as_str).unwrap_or("");
            let content = parts(item.get("content"), &format!("{path}.content"))?;
            match role {
                "assistant" => add_turn(messages, Role::Assistant, content, ts),
                "user" => add_turn(messages, Role::User, content, ts),
                "developer" | "system" if messages.is_empty() => {
                    system.extend(content.iter().filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => Some(text.clone()),
                        _ => None,
                    }));
                }
                "developer" | "system" => add_turn(messages, Role::User, content, ts),
                other => {
                    return Err(ParseError::at(
                        format!("{path}.role"),
                        format!(
                            "unknown role \"{other}\", expected one of user, assistant, developer, system"
                        ),
                    ));
                }
            }
        }
        "function_call" | "custom_tool_call" => {
            let id = string(item, "call_id", path)?;
            let name = string(item, "name", path)?;
            let input = match (kind, item.get("arguments"), item.get("input")) {
                ("function_call", Some(Value::String(s)), _) if s.trim().is_empty() => json!({}),
                ("function_call", Some(Value::String(s)), _) => {
                    serde_json::from_str(s).unwrap_or_else(|_| json!({ "arguments": s }))
                }
                ("function_call", Some(v), _) => v.clone(),
                (_, _, Some(Value::String(s))) => json!({ "input": s }),
                (_, _, Some(v)) => v.clone(),
                _ => json!({}),
            };
            add_turn(messages, Role::Assistant, vec![ContentBlock::ToolUse { id, name, input }], ts);
        }
        "function_call_output" | "custom_tool_call_output" => {
            let id = string(item, "call_id", path)?;
            let (text, is_error) = output(item.get("output"));
            let block = ContentBlock::ToolResult {
                tool_use_id: id,
                content: vec![ToolResultPart::Text { text }],
                is_error,
            };
            add_turn(messages, Role::User, vec![block], ts);
        }
        _ => {
            // `reasoning`, `local_shell_call`, `web_search_call`, …: kept as read.
            let block = OpaqueBlock::new(item.clone())
                .ok_or_else(|| ParseError::at(format!("{path}.type"), "expected the item's type"))?;
            add_turn(messages, Role::Assistant, vec![ContentBlock::Opaque(block)], ts);
        }
    }
    Ok(())
}

/// The conversation of a Responses request's `input` items: the items read as a rollout's are,
/// without times. Unlike a rollout, an input of developer messages alone is no error: the
/// conversation then has a system prompt and no messages.
pub(super) fn from_responses_input(items: &[Value]) -> Result<Conversation, ParseError> {
    let mut system: Vec<String> = Vec::new();
    let mut messages: Vec<Message> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        response_item(item, &format!("input[{i}]"), 0, &mut system, &mut messages)?;
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    Ok(Conversation { system, ..Conversation::new(messages) })
}

fn string(item: &Map<String, Value>, key: &str, path: &str) -> Result<String, ParseError> {
    item.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ParseError::at(path, format!("missing field `{key}`")))
}

/// A call's output as text, and whether it failed: a string, or `{"content", "success"}`.
fn output(value: Option<&Value>) -> (String, bool) {
    match value {
        Some(Value::String(s)) => (s.clone(), false),
        Some(Value::Object(o)) => {
            let failed = o.get("success").and_then(Value::as_bool) == Some(false);
            let text = match o.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => Value::Object(o.clone()).to_string(),
            };
            (text, failed)
        }
        Some(v) => (v.to_string(), false),
        None => (String::new(), false),
    }
}

/// A message's parts: `input_text` / `output_text` as text, `input_image` as an image; any other
/// part kept as read.
fn parts(content: Option<&Value>, path: &str) -> Result<Vec<ContentBlock>, ParseError> {
    let list = match content {
        Some(Value::Array(list)) => list,
        Some(Value::String(s)) => return Ok(vec![ContentBlock::text(s.clone())]),
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(_) => return Err(ParseError::at(path, "expected a list of content parts")),
    };
    let mut out = Vec::with_capacity(list.len());
    for (j, p) in list.iter().enumerate() {
        let at = format!("{path}[{j}]");
        let Some(part) = p.as_object() else { return Err(ParseError::at(at, "expected a content part")) };
        match part.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text" | "text") => match part.get("text").and_then(Value::as_str) {
                Some(text) => out.push(ContentBlock::text(text)),
                None => return Err(ParseError::at(at, "missing field `text`")),
            },
            Some("input_image") if part.get("image_url").is_some_and(Value::is_string) => {
                let url = part["image_url"].as_str().unwrap_or_default();
                out.push(ContentBlock::Image { source: image(url) });
            }
            Some(_) => match OpaqueBlock::new(part.clone()) {
                Some(block) => out.push(ContentBlock::Opaque(block)),
                None => return Err(ParseError::at(at, "unexpected content part")),
            },
            None => return Err(ParseError::at(at, "missing field `type`")),
        }
    }
    Ok(out)
}

fn image(url: &str) -> ImageSource {
    if let Some(rest) = url.strip_prefix("data:")
        && let Some((media_type, data)) = rest.split_once(";base64,")
    {
        return ImageSource::Base64 { media_type: media_type.to_owned(), data: data.to_owned() };
    }
    ImageSource::Url { url: url.to_owned() }
}
