//! Reading and writing conversations: the project's own format, the OpenAI chat format and the
//! Anthropic Messages format, detected automatically; and the API view written in either wire
//! format. Every error names where it is, e.g. `messages[12].content[0]: unknown block type "foo"`.

use serde_json::{Map, Value, json};

use crate::error::ParseError;
use crate::model::{ContentBlock, Conversation, FORMAT_TAG, ImageSource, Message, Role, ToolResultPart};

/// The formats a conversation file can be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// This project's format ([`FORMAT_TAG`]).
    Native,
    /// A `CondensationResult` written by `condense run`.
    CondensationResult,
    /// OpenAI Chat Completions: `{"messages": [...]}` or a bare list.
    OpenAi,
    /// Anthropic Messages: `{"system", "messages": [...]}`.
    Anthropic,
}

/// A conversation read from a file, with the format it was in.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The conversation.
    pub conversation: Conversation,
    /// What the file was.
    pub format: SourceFormat,
}

/// Reads a conversation in any supported format.
pub fn parse_conversation(text: &str) -> Result<Parsed, ParseError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        ParseError::at(
            "",
            format!(
                "invalid JSON at line {} column {}: {}",
                e.line(),
                e.column(),
                strip_position(&e.to_string())
            ),
        )
    })?;
    let format = detect(&value)?;
    let conversation = match format {
        SourceFormat::Native => from_native(value)?,
        SourceFormat::CondensationResult => {
            let mut obj = into_object(value)?;
            let messages = obj.remove("messages").unwrap_or(Value::Null);
            let messages: Vec<Message> = typed(messages, "messages")?;
            let system = obj.get("system").and_then(Value::as_str).map(str::to_owned);
            Conversation { system, ..Conversation::new(messages) }
        }
        SourceFormat::OpenAi => from_openai(&value)?,
        SourceFormat::Anthropic => from_anthropic(&value)?,
    };
    check_ids(&conversation)?;
    Ok(Parsed { conversation, format })
}

fn strip_position(message: &str) -> &str {
    message.rsplit_once(" at line ").map_or(message, |(m, _)| m)
}

fn into_object(value: Value) -> Result<Map<String, Value>, ParseError> {
    match value {
        Value::Object(o) => Ok(o),
        _ => Err(ParseError::at("", "expected a JSON object")),
    }
}

/// Tells the format from the document's shape.
pub fn detect(value: &Value) -> Result<SourceFormat, ParseError> {
    let messages = match value {
        Value::Array(list) => list,
        Value::Object(o) => {
            if o.get("format").and_then(Value::as_str) == Some(FORMAT_TAG) {
                return Ok(SourceFormat::Native);
            }
            if let Some(f) = o.get("format") {
                return Err(ParseError::at(
                    "format",
                    format!("unknown format {f}, expected \"{FORMAT_TAG}\""),
                ));
            }
            if o.contains_key("messages")
                && (o.contains_key("metrics") || o.contains_key("new_context_tokens"))
            {
                return Ok(SourceFormat::CondensationResult);
            }
            match o.get("messages") {
                Some(Value::Array(list)) => list,
                Some(_) => return Err(ParseError::at("messages", "expected a list of messages")),
                None => {
                    return Err(ParseError::at(
                        "",
                        "expected an object with \"messages\" or a list of messages",
                    ));
                }
            }
        }
        _ => return Err(ParseError::at("", "expected an object with \"messages\" or a list of messages")),
    };
    let is_openai = messages.iter().any(|m| {
        let role = m.get("role").and_then(Value::as_str);
        matches!(role, Some("system" | "developer" | "tool" | "function"))
            || m.get("tool_calls").is_some()
            || m.get("content").and_then(Value::as_array).is_some_and(|parts| {
                parts.iter().any(|p| p.get("type").and_then(Value::as_str) == Some("image_url"))
            })
    });
    Ok(if is_openai { SourceFormat::OpenAi } else { SourceFormat::Anthropic })
}

/// Deserializes with the path of any error, and says "unknown block type" for content blocks.
fn typed<T: serde::de::DeserializeOwned>(value: Value, prefix: &str) -> Result<T, ParseError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let mut path = match (prefix.is_empty(), inner.as_str()) {
            (_, ".") => prefix.to_owned(),
            (true, p) => p.to_owned(),
            (false, p) if p.starts_with('[') => format!("{prefix}{p}"),
            (false, p) => format!("{prefix}.{p}"),
        };
        let mut message = e.inner().to_string();
        if let Some(rest) = message.strip_prefix("unknown variant `")
            && let Some((name, expected)) = rest.split_once('`')
        {
            let what = if path.ends_with(".role") { "role" } else { "block type" };
            // The tag names the block; point at the block, not at its `type` field.
            if let Some(block) = path.strip_suffix(".type") {
                path = block.to_owned();
            }
            message = format!("unknown {what} \"{name}\"{expected}");
        }
        ParseError { path, message: strip_position(&message).to_owned() }
    })
}

fn from_native(value: Value) -> Result<Conversation, ParseError> {
    typed(value, "")
}

/// Message ids must be unique: condensation metadata refers to them.
fn check_ids(c: &Conversation) -> Result<(), ParseError> {
    let mut seen = std::collections::HashSet::new();
    for (i, m) in c.messages.iter().enumerate() {
        if m.id.is_empty() {
            return Err(ParseError::at(format!("messages[{i}].id"), "empty message id"));
        }
        if !seen.insert(m.id.as_str()) {
            return Err(ParseError::at(
                format!("messages[{i}].id"),
                format!("duplicate message id \"{}\"", m.id),
            ));
        }
    }
    Ok(())
}

fn message_list(value: &Value) -> (&[Value], Option<&Value>) {
    match value {
        Value::Array(list) => (list, None),
        Value::Object(o) => {
            (o.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice), o.get("system"))
        }
        _ => (&[], None),
    }
}

fn role_at(m: &Value, path: &str, allowed: &[&str]) -> Result<String, ParseError> {
    match m.get("role") {
        Some(Value::String(r)) if allowed.contains(&r.as_str()) => Ok(r.clone()),
        Some(Value::String(r)) => Err(ParseError::at(
            format!("{path}.role"),
            format!("unknown role \"{r}\", expected one of {}", allowed.join(", ")),
        )),
        Some(_) => Err(ParseError::at(format!("{path}.role"), "expected a string")),
        None => Err(ParseError::at(path, "missing field `role`")),
    }
}

fn system_text(value: Option<&Value>, path: &str) -> Result<Option<String>, ParseError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Array(parts)) => {
            let mut out = Vec::new();
            for (i, p) in parts.iter().enumerate() {
                match p.get("text").and_then(Value::as_str) {
                    Some(t) => out.push(t.to_owned()),
                    None => return Err(ParseError::at(format!("{path}[{i}]"), "expected a text block")),
                }
            }
            Ok(Some(out.join("\n\n")))
        }
        Some(_) => Err(ParseError::at(path, "expected a string or a list of text blocks")),
    }
}

fn role_of(name: &str) -> Role {
    if name == "assistant" { Role::Assistant } else { Role::User }
}

fn from_anthropic(value: &Value) -> Result<Conversation, ParseError> {
    let (list, system) = message_list(value);
    let system = system_text(system, "system")?;
    let mut messages = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let path = format!("messages[{i}]");
        let role = role_of(&role_at(m, &path, &["user", "assistant"])?);
        let content = match m.get("content") {
            Some(Value::String(s)) => vec![ContentBlock::text(s.clone())],
            Some(v @ Value::Array(_)) => typed(v.clone(), &format!("{path}.content"))?,
            Some(_) => {
                return Err(ParseError::at(
                    format!("{path}.content"),
                    "expected a string or a list of content blocks",
                ));
            }
            None => return Err(ParseError::at(path, "missing field `content`")),
        };
        messages.push(Message::new(format!("m{}", i + 1), role, content));
    }
    Ok(Conversation { system, ..Conversation::new(messages) })
}

fn image_from_url(url: &str) -> ImageSource {
    if let Some(rest) = url.strip_prefix("data:")
        && let Some((media_type, data)) = rest.split_once(";base64,")
    {
        return ImageSource::Base64 { media_type: media_type.to_owned(), data: data.to_owned() };
    }
    ImageSource::Url { url: url.to_owned() }
}

fn openai_parts(content: Option<&Value>, path: &str) -> Result<Vec<ContentBlock>, ParseError> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![ContentBlock::text(s.clone())]),
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(j, p)| {
                let at = format!("{path}[{j}]");
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => p
                        .get("text")
                        .and_then(Value::as_str)
                        .map(ContentBlock::text)
                        .ok_or_else(|| ParseError::at(at, "missing field `text`")),
                    Some("image_url") => p
                        .pointer("/image_url/url")
                        .and_then(Value::as_str)
                        .map(|u| ContentBlock::Image { source: image_from_url(u) })
                        .ok_or_else(|| ParseError::at(format!("{at}.image_url"), "missing field `url`")),
                    Some(other) => Err(ParseError::at(
                        at,
                        format!("unknown block type \"{other}\", expected one of `text`, `image_url`"),
                    )),
                    None => Err(ParseError::at(at, "missing field `type`")),
                }
            })
            .collect(),
        Some(_) => Err(ParseError::at(path, "expected a string, null or a list of content parts")),
    }
}

fn from_openai(value: &Value) -> Result<Conversation, ParseError> {
    let (list, system) = message_list(value);
    let mut system = system_text(system, "system")?;
    let mut messages: Vec<Message> = Vec::with_capacity(list.len());
    // Tool results are gathered into the user turn after the assistant's calls, as Anthropic wants.
    let mut pending_results: Vec<ContentBlock> = Vec::new();
    let push = |messages: &mut Vec<Message>, role: Role, content: Vec<ContentBlock>| {
        let id = format!("m{}", messages.len() + 1);
        messages.push(Message::new(id, role, content));
    };
    for (i, m) in list.iter().enumerate() {
        let path = format!("messages[{i}]");
        let role = role_at(m, &path, &["system", "developer", "user", "assistant", "tool"])?;
        if role != "tool" && !pending_results.is_empty() {
            let results = std::mem::take(&mut pending_results);
            if role == "user" {
                let mut content = results;
                content.extend(openai_parts(m.get("content"), &format!("{path}.content"))?);
                push(&mut messages, Role::User, content);
                continue;
            }
            push(&mut messages, Role::User, results);
        }
        match role.as_str() {
            "system" | "developer" => {
                let text = openai_parts(m.get("content"), &format!("{path}.content"))?
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.clone()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                if messages.is_empty() {
                    system = Some(match system {
                        Some(s) => format!("{s}\n\n{text}"),
                        None => text,
                    });
                } else {
                    // A system message mid-conversation: kept, on the user's turn, marked as such.
                    push(&mut messages, Role::User, vec![ContentBlock::text(format!("[system] {text}"))]);
                }
            }
            "user" => {
                let content = openai_parts(m.get("content"), &format!("{path}.content"))?;
                push(&mut messages, Role::User, content);
            }
            "assistant" => {
                let mut content = openai_parts(m.get("content"), &format!("{path}.content"))?;
                if let Some(calls) = m.get("tool_calls").filter(|v| !v.is_null()) {
                    let calls = calls
                        .as_array()
                        .ok_or_else(|| ParseError::at(format!("{path}.tool_calls"), "expected a list"))?;
                    for (j, call) in calls.iter().enumerate() {
                        let at = format!("{path}.tool_calls[{j}]");
                        let id = call
                            .get("id")
                            .and_then(Value::as_str)
                            .ok_or_else(|| ParseError::at(&at, "missing field `id`"))?;
                        let name =
                            call.pointer("/function/name").and_then(Value::as_str).ok_or_else(|| {
                                ParseError::at(format!("{at}.function"), "missing field `name`")
                            })?;
                        let args = call.pointer("/function/arguments");
                        let input = match args {
                            None | Some(Value::Null) => json!({}),
                            Some(Value::String(s)) if s.trim().is_empty() => json!({}),
                            Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| {
                                ParseError::at(
                                    format!("{at}.function.arguments"),
                                    format!("arguments are not valid JSON: {e}"),
                                )
                            })?,
                            Some(v) => v.clone(),
                        };
                        content.push(ContentBlock::ToolUse {
                            id: id.to_owned(),
                            name: name.to_owned(),
                            input,
                        });
                    }
                }
                push(&mut messages, Role::Assistant, content);
            }
            _ => {
                let id = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ParseError::at(&path, "missing field `tool_call_id`"))?;
                let parts = openai_parts(m.get("content"), &format!("{path}.content"))?
                    .into_iter()
                    .map(|b| match b {
                        ContentBlock::Text { text } => ToolResultPart::Text { text },
                        ContentBlock::Image { source } => ToolResultPart::Image { source },
                        _ => unreachable!("openai_parts makes text and images only"),
                    })
                    .collect::<Vec<_>>();
                let content =
                    if parts.is_empty() { vec![ToolResultPart::Text { text: String::new() }] } else { parts };
                pending_results.push(ContentBlock::ToolResult {
                    tool_use_id: id.to_owned(),
                    content,
                    is_error: false,
                });
            }
        }
    }
    if !pending_results.is_empty() {
        push(&mut messages, Role::User, pending_results);
    }
    Ok(Conversation { system, ..Conversation::new(messages) })
}

/// The API view in the Anthropic Messages format: `{"system", "messages"}`.
pub fn to_anthropic(c: &Conversation) -> Value {
    let messages: Vec<Value> =
        c.api_view().iter().map(|m| json!({"role": m.role.as_str(), "content": m.content})).collect();
    let mut out = Map::new();
    if let Some(s) = &c.system {
        out.insert("system".into(), s.clone().into());
    }
    out.insert("messages".into(), messages.into());
    Value::Object(out)
}

fn image_url(source: &ImageSource) -> String {
    match source {
        ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        ImageSource::Url { url } => url.clone(),
    }
}

/// The API view in the OpenAI Chat Completions format: `{"messages": [...]}`.
pub fn to_openai(c: &Conversation) -> Value {
    let mut out: Vec<Value> = Vec::new();
    if let Some(s) = &c.system {
        out.push(json!({"role": "system", "content": s}));
    }
    for m in c.api_view() {
        let mut parts: Vec<Value> = Vec::new();
        let mut calls: Vec<Value> = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::Text { text } => parts.push(json!({"type": "text", "text": text})),
                ContentBlock::Image { source } => {
                    parts.push(json!({"type": "image_url", "image_url": {"url": image_url(source)}}));
                }
                ContentBlock::ToolUse { id, name, input } => calls.push(json!({
                    "id": id, "type": "function",
                    "function": {"name": name, "arguments": input.to_string()},
                })),
                ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                    let text = content
                        .iter()
                        .map(|p| match p {
                            ToolResultPart::Text { text } => text.clone(),
                            ToolResultPart::Image { .. } => "[image]".to_owned(),
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    let text = if *is_error { format!("Error: {text}") } else { text };
                    out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": text}));
                }
            }
        }
        // A single text part is written as a plain string, the form every server accepts.
        let content = match parts.as_slice() {
            [] => Value::Null,
            [only] if only["type"] == "text" => only["text"].clone(),
            _ => Value::Array(parts),
        };
        match m.role {
            Role::Assistant => {
                let mut msg = json!({"role": "assistant", "content": content});
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                out.push(msg);
            }
            Role::User if !content.is_null() => out.push(json!({"role": "user", "content": content})),
            Role::User => {}
        }
    }
    json!({"messages": out})
}

/// The JSON Schema of the project's conversation format.
pub fn conversation_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Conversation)).expect("schema serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_block_type_names_its_place() {
        let doc = json!({"format": FORMAT_TAG, "messages": [
            {"id": "a", "role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"id": "b", "role": "user", "content": [{"type": "foo"}]},
        ]});
        let e = parse_conversation(&doc.to_string()).unwrap_err();
        assert_eq!(e.path, "messages[1].content[0]");
        assert!(e.to_string().starts_with("messages[1].content[0]: unknown block type \"foo\""), "{e}");
    }

    #[test]
    fn broken_json_names_line_and_column() {
        let e = parse_conversation("{\n  \"messages\": [\n    {\"role\": \"user\",, }\n").unwrap_err();
        assert!(e.to_string().contains("line 3 column"), "{e}");
    }

    #[test]
    fn openai_tool_calls_become_blocks_and_pairs() {
        let doc = json!({"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "read a"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "A"},
            {"role": "user", "content": "thanks"},
            {"role": "assistant", "content": "done"},
        ]});
        let p = parse_conversation(&doc.to_string()).unwrap();
        assert_eq!(p.format, SourceFormat::OpenAi);
        let c = p.conversation;
        assert_eq!(c.system.as_deref(), Some("be brief"));
        assert_eq!(c.messages.len(), 4);
        assert!(
            matches!(&c.messages[1].content[0], ContentBlock::ToolUse { input, .. } if input["path"] == "a")
        );
        assert_eq!(c.messages[2].content.len(), 2, "tool result and the user text share a turn");
        crate::model::check_tool_pairs(&c.api_view()).unwrap();
        // And back: the OpenAI view carries the same calls.
        let back = to_openai(&c);
        assert_eq!(back["messages"][2]["tool_calls"][0]["function"]["arguments"], "{\"path\":\"a\"}");
        assert_eq!(back["messages"][3]["role"], "tool");
        assert_eq!(back["messages"][4], json!({"role": "user", "content": "thanks"}));
    }

    #[test]
    fn anthropic_format_is_detected() {
        let doc = json!({"system": "s", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x", "cache_control": {"type": "ephemeral"}}]},
        ]});
        let p = parse_conversation(&doc.to_string()).unwrap();
        assert_eq!(p.format, SourceFormat::Anthropic);
        assert_eq!(to_anthropic(&p.conversation)["messages"][2]["content"][0]["content"][0]["text"], "x");
    }

    #[test]
    fn bad_openai_arguments_are_located() {
        let doc = json!([{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{oops"}}]}]);
        let e = parse_conversation(&doc.to_string()).unwrap_err();
        assert_eq!(e.path, "messages[0].tool_calls[0].function.arguments");
    }

    #[test]
    fn unknown_role_is_named() {
        let doc = json!({"messages": [{"role": "robot", "content": "x"}]});
        let e = parse_conversation(&doc.to_string()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "messages[0].role: unknown role \"robot\", expected one of user, assistant"
        );
    }
}
