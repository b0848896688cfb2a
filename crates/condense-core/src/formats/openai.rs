//! The OpenAI Chat Completions dialect, also spoken by Ollama, LM Studio, llama.cpp server, vLLM
//! and OpenRouter: importing a chat request's conversation (tool calls become blocks, tool results
//! join the next user turn), exporting the API view as a request, the streaming HTTP request, and
//! decoding the stream's chunks. Its error bodies are read in the parent module, which reads both
//! wires' alike.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::SseEvent;
use super::read::{message_list, role_at, system_text, tool_definitions};
use super::wire::{ApiRequest, Decoded, Decoder, ErrorDetail, Turn, lenient, parse_event, view};
use crate::error::{ErrorKind, LlmError, ParseError};
use crate::model::{ContentBlock, Conversation, ImageSource, Message, Role, ToolResultPart};
use crate::profile::{LlmKind, LlmProfile, Usage};

/// Whether a document's messages are OpenAI's: a role Anthropic does not know, tool calls, or
/// image parts. Anything else is read as Anthropic's, which plain text turns are as well.
pub(super) fn looks_like(messages: &[Value]) -> bool {
    messages.iter().any(|m| {
        let role = m.get("role").and_then(Value::as_str);
        matches!(role, Some("system" | "developer" | "tool" | "function"))
            || m.get("tool_calls").is_some()
            || m.get("content").and_then(Value::as_array).is_some_and(|parts| {
                parts.iter().any(|p| p.get("type").and_then(Value::as_str) == Some("image_url"))
            })
    })
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

/// Reads a Chat Completions document. The conversation's form is open (any server's extensions
/// pass), so it is read from the JSON value, with every error located.
pub(super) fn from_openai(value: &Value) -> Result<Conversation, ParseError> {
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
                        ContentBlock::Text { text, .. } => Some(text.clone()),
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
                        content.push(tool_use(call, &format!("{path}.tool_calls[{j}]"))?);
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
                        ContentBlock::Text { text, .. } => ToolResultPart::Text { text },
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
    let tools = tool_definitions(value, "tools")?;
    Ok(Conversation { system, tools, ..Conversation::new(messages) })
}

/// One of an assistant message's `tool_calls`, at `at`, as a `tool_use` block.
fn tool_use(call: &Value, at: &str) -> Result<ContentBlock, ParseError> {
    let id =
        call.get("id").and_then(Value::as_str).ok_or_else(|| ParseError::at(at, "missing field `id`"))?;
    let name = call
        .pointer("/function/name")
        .and_then(Value::as_str)
        .ok_or_else(|| ParseError::at(format!("{at}.function"), "missing field `name`"))?;
    let input = match call.pointer("/function/arguments") {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| {
            ParseError::at(format!("{at}.function.arguments"), format!("arguments are not valid JSON: {e}"))
        })?,
        Some(v) => v.clone(),
    };
    Ok(ContentBlock::ToolUse { id: id.to_owned(), name: name.to_owned(), input })
}

/// A Chat Completions request's conversation: `{"messages": [...], "tools": [...]}`.
#[derive(Debug, Serialize)]
struct ChatExport<'a> {
    messages: Vec<ExportMessage<'a>>,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tools: &'a [Value],
}

/// One message of an exported conversation. A user message always has content; an assistant's
/// is `null` when it only calls tools.
#[derive(Debug, Serialize)]
struct ExportMessage<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    content: Option<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall<'a>>,
}

impl<'a> ExportMessage<'a> {
    fn new(role: &'static str, content: Option<Content<'a>>) -> Self {
        ExportMessage { role, tool_call_id: None, content, tool_calls: Vec::new() }
    }
}

/// A message's content: a plain string, the form every server accepts, or parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

/// A content part.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

/// A call of a function tool; the arguments are JSON text.
#[derive(Debug, Serialize)]
struct ToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    arguments: String,
}

fn image_url(source: &ImageSource) -> String {
    match source {
        ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        ImageSource::Url { url } => url.clone(),
    }
}

/// The API view in the OpenAI Chat Completions format: `{"messages": [...]}` (and the `tools`
/// the conversation carries, as read). Tool results become `tool` messages, in place. Opaque
/// blocks (Anthropic's `thinking`, `redacted_thinking`, server tools, documents, kinds unknown
/// to the project) are left out: Chat Completions has no part to carry them, and a thinking
/// block's signature is only valid for Anthropic; a text kept whole for its `citations` goes as
/// its text. The Anthropic export keeps them verbatim.
pub fn to_openai(c: &Conversation) -> Value {
    let mut out: Vec<ExportMessage<'_>> = Vec::new();
    if let Some(s) = &c.system {
        out.push(ExportMessage::new("system", Some(Content::Text(s.into()))));
    }
    for m in c.api_view() {
        let mut parts: Vec<Part<'_>> = Vec::new();
        let mut calls: Vec<ToolCall<'_>> = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::Text { text, .. } => parts.push(Part::Text { text }),
                ContentBlock::Image { source } => {
                    parts.push(Part::ImageUrl { image_url: ImageUrl { url: image_url(source) } });
                }
                ContentBlock::ToolUse { id, name, input } => calls.push(ToolCall {
                    id,
                    kind: "function",
                    function: FunctionCall { name, arguments: input.to_string() },
                }),
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
                    out.push(ExportMessage {
                        tool_call_id: Some(tool_use_id),
                        ..ExportMessage::new("tool", Some(Content::Text(text.into())))
                    });
                }
                // A cited text goes as its text; other opaque blocks have no Chat Completions form.
                ContentBlock::Opaque(block) => {
                    if block.kind() == "text"
                        && let Some(text) = block.fields().get("text").and_then(Value::as_str)
                    {
                        parts.push(Part::Text { text });
                    }
                }
            }
        }
        // A single text part is written as a plain string, the form every server accepts.
        let content = match parts.as_slice() {
            [] => None,
            [Part::Text { text }] => Some(Content::Text((*text).into())),
            _ => Some(Content::Parts(parts)),
        };
        match m.role {
            Role::Assistant => {
                // `null` content is for a message that only calls tools; an empty one is "".
                let content = content.or_else(|| calls.is_empty().then(|| Content::Text("".into())));
                out.push(ExportMessage { tool_calls: calls, ..ExportMessage::new("assistant", content) })
            }
            Role::User if content.is_some() => out.push(ExportMessage::new("user", content)),
            Role::User => {}
        }
    }
    serde_json::to_value(ChatExport { messages: out, tools: &c.tools }).expect("a conversation serializes")
}

/// The body of a streaming Chat Completions request.
#[derive(Debug, Serialize)]
struct StreamRequest<'a> {
    model: &'a str,
    messages: Vec<Turn<'a, str>>,
    stream: bool,
    stream_options: StreamOptions,
    /// OpenAI itself wants `max_completion_tokens`; compatible servers know `max_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    /// Routes the request to its conversation's prompt cache (OpenAI itself only).
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    /// Asks for a last chunk with the usage.
    include_usage: bool,
}

/// The path and body of the streaming request, adding the key's header; the system prompt is the
/// first message. OpenAI itself needs a key, local servers often none.
pub(super) fn request(
    profile: &LlmProfile,
    api_key: Option<&str>,
    req: &ApiRequest,
    headers: &mut Vec<(String, String)>,
) -> Result<(&'static str, String), LlmError> {
    let system = req.system.as_deref().map(|s| Turn { role: "system", content: s });
    let openai = profile.kind == LlmKind::Openai;
    let body = StreamRequest {
        model: &profile.model,
        messages: system.into_iter().chain(req.messages.iter().map(Turn::chat)).collect(),
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        max_completion_tokens: openai.then_some(req.max_tokens),
        max_tokens: (!openai).then_some(req.max_tokens),
        temperature: req.temperature,
        prompt_cache_key: req.cache.as_ref().filter(|_| openai).map(|c| c.key.as_str()),
    };
    match api_key {
        Some(key) => headers.push(("authorization".into(), format!("Bearer {key}"))),
        None if openai => {
            return Err(LlmError::new(
                ErrorKind::LlmConfig,
                format!("profile '{}' has no API key", profile.id),
            ));
        }
        None => {} // local servers often need none
    }
    Ok(("/chat/completions", serde_json::to_string(&body).expect("a request serializes")))
}

/// One chunk of a stream: `data: {...}`, the last one `data: [DONE]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Chunk {
    /// An error in place of a chunk.
    #[serde(deserialize_with = "lenient::present")]
    error: Option<ErrorDetail>,
    #[serde(deserialize_with = "lenient::value")]
    model: Option<String>,
    /// On the last chunk when asked for; `null` on the others.
    #[serde(deserialize_with = "lenient::non_null")]
    usage: Option<ChunkUsage>,
    #[serde(deserialize_with = "lenient::objects")]
    choices: Vec<Choice>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ChunkUsage {
    #[serde(deserialize_with = "lenient::value")]
    prompt_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::value")]
    completion_tokens: Option<u64>,
    /// `{"cached_tokens": N}`: the prompt tokens read from the cache.
    #[serde(deserialize_with = "lenient::value")]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PromptDetails {
    #[serde(deserialize_with = "lenient::value")]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Choice {
    #[serde(deserialize_with = "lenient::value")]
    delta: Option<Delta>,
    #[serde(deserialize_with = "lenient::value")]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delta {
    #[serde(deserialize_with = "lenient::value")]
    role: Option<String>,
    #[serde(deserialize_with = "lenient::value")]
    content: Option<String>,
}

impl Decoder {
    /// Decodes one chunk of a Chat Completions stream.
    pub(super) fn openai(&mut self, event: &SseEvent) -> Result<Decoded, LlmError> {
        let mut out = Decoded::default();
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(out);
        }
        let chunk: Chunk = view(&parse_event(&event.data)?);
        if let Some(e) = chunk.error {
            return Err(e.stream_error());
        }
        if self.model.is_none() {
            self.model = chunk.model;
        }
        if let Some(u) = chunk.usage {
            let input = u.prompt_tokens.unwrap_or(0);
            let cached = u.prompt_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0).min(input);
            self.usage = Some(Usage {
                cache_read_tokens: cached,
                ..Usage::new(input, u.completion_tokens.unwrap_or(0))
            });
        }
        for choice in chunk.choices {
            let delta = choice.delta.unwrap_or_default();
            if let Some(role) = delta.role
                && self.role.is_none()
            {
                self.role = Some(role.clone());
                out.role = Some(role);
            }
            if let Some(text) = delta.content {
                out.content.push_str(&text);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::{ChatMessage, SourceFormat, Wire, parse_conversation};

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.to_owned() }
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
    fn bad_openai_arguments_are_located() {
        let doc = json!([{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{oops"}}]}]);
        let e = parse_conversation(&doc.to_string()).unwrap_err();
        assert_eq!(e.path, "messages[0].tool_calls[0].function.arguments");
    }

    #[test]
    fn openai_requests_stream_with_usage_and_the_right_token_field() {
        let req = ApiRequest {
            system: Some("sys".into()),
            messages: vec![ChatMessage::user("hi")],
            max_tokens: 100,
            temperature: Some(0.2),
            cache: Some(crate::formats::ApiCache { key: "chat-1".into(), breakpoint: 0 }),
        };
        let p = LlmProfile::new("o", LlmKind::Openai, "gpt-4o", 128_000);
        let http = Wire::OpenAi.build(&p, Some("sk-test"), &req).unwrap();
        assert_eq!(http.url, "https://api.openai.com/v1/chat/completions");
        assert_eq!(http.header("Authorization"), Some("Bearer sk-test"));
        let body: Value = serde_json::from_str(&http.body).unwrap();
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_completion_tokens"], 100);
        assert_eq!(body["prompt_cache_key"], "chat-1", "OpenAI routes the chat to its cache");
        let mut local = LlmProfile::new("l", LlmKind::OpenaiCompatible, "qwen", 8_000);
        local.base_url = Some("http://127.0.0.1:8080/v1".into());
        let local = Wire::OpenAi.build(&local, None, &req).unwrap();
        assert!(!local.body.contains("prompt_cache_key"), "a local server is not sent a field it may refuse");
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "sys"}));
        let local = LlmProfile {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            ..LlmProfile::new("l", LlmKind::OpenaiCompatible, "m", 4096)
        };
        let http = Wire::OpenAi.build(&local, None, &req).unwrap();
        assert_eq!(http.header("authorization"), None);
        assert!(http.body.contains("\"max_tokens\":100"));
        assert_eq!(Wire::OpenAi.build(&p, None, &req).unwrap_err().kind, ErrorKind::LlmConfig);
    }

    #[test]
    fn openai_stream_decodes_text_usage_and_stop() {
        let mut d = Decoder::default();
        let first = d.event(Wire::OpenAi, &ev(None, r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#)).unwrap();
        assert_eq!(first.role.as_deref(), Some("assistant"));
        let text = d
            .event(
                Wire::OpenAi,
                &ev(None, r#"{"choices":[{"index":0,"delta":{"content":"Hé"},"finish_reason":null}]}"#),
            )
            .unwrap();
        assert_eq!(text.content, "Hé");
        d.event(Wire::OpenAi, &ev(None, r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#))
            .unwrap();
        d.event(
            Wire::OpenAi,
            &ev(
                None,
                r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#,
            ),
        )
        .unwrap();
        d.event(Wire::OpenAi, &ev(None, "[DONE]")).unwrap();
        assert!(d.done);
        assert_eq!(d.finish_reason.as_deref(), Some("stop"));
        assert_eq!(d.usage, Some(Usage::new(12, 3)));
        let err = d
            .event(Wire::OpenAi, &ev(None, r#"{"error":{"message":"boom","type":"server_error"}}"#))
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::LlmServer);
        assert_eq!(
            d.event(Wire::OpenAi, &ev(None, "{not json")).unwrap_err().kind,
            ErrorKind::LlmMalformedStream
        );
    }
}
