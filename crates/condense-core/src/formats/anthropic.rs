//! The Anthropic Messages dialect: importing a Messages request's conversation (its content blocks
//! are the project's own), exporting the API view as a request, the streaming HTTP request with the
//! key and API version headers, and decoding the stream's named events. Its error bodies are read
//! in the parent module, which reads both wires' alike.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::SseEvent;
use super::read::{message_list, role_at, system_text, tool_definitions, typed};
use super::wire::{ApiRequest, Decoded, Decoder, ErrorDetail, Turn, lenient, malformed, parse_event, view};
use crate::error::{ErrorKind, LlmError, ParseError};
use crate::model::{ContentBlock, Conversation, Message, Role};
use crate::profile::{LlmProfile, Usage};

/// The Anthropic API version sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The speaker of an imported message: `assistant`, or else the user.
fn role_of(name: &str) -> Role {
    if name == "assistant" { Role::Assistant } else { Role::User }
}

/// Reads a Messages document. Its content blocks are read as the project's own, with the path of
/// any error.
pub(super) fn from_anthropic(value: &Value) -> Result<Conversation, ParseError> {
    let (list, system) = message_list(value);
    let system = system_text(system, "system")?;
    let mut messages = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let path = format!("messages[{i}]");
        let role = role_of(&role_at(m, &path, &["user", "assistant"])?);
        let content = blocks(m, &path)?;
        messages.push(Message::new(format!("m{}", i + 1), role, content));
    }
    let tools = tool_definitions(value, "tools")?;
    Ok(Conversation { system, tools, ..Conversation::new(messages) })
}

/// A message's `content` (at `path`): a string, or content blocks read as the project's own —
/// any block of another kind kept as read.
pub(super) fn blocks(m: &Value, path: &str) -> Result<Vec<ContentBlock>, ParseError> {
    match m.get("content") {
        Some(Value::String(s)) => Ok(vec![ContentBlock::text(s.clone())]),
        Some(v @ Value::Array(_)) => typed(v.clone(), &format!("{path}.content")),
        Some(_) => {
            Err(ParseError::at(format!("{path}.content"), "expected a string or a list of content blocks"))
        }
        None => Err(ParseError::at(path, "missing field `content`")),
    }
}

/// A Messages request's conversation: `{"system", "messages", "tools"}`.
#[derive(Debug, Serialize)]
struct MessagesExport<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: Vec<Turn<'a, [Cow<'a, ContentBlock>]>>,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tools: &'a [Value],
}

/// A block as the API gets it: a text without the project's `client` mark, any other as held.
fn wire_block(block: &ContentBlock) -> Cow<'_, ContentBlock> {
    match block {
        ContentBlock::Text { text, client: Some(_) } => Cow::Owned(ContentBlock::text(text.clone())),
        other => Cow::Borrowed(other),
    }
}

/// The API view in the Anthropic Messages format: `{"system", "messages"}` (and `tools` when the
/// conversation carries tool definitions). Every block is written as the project holds it, so an
/// opaque block (`thinking` with its `signature`, …) goes back exactly as it was read; a text
/// marked as client context goes as plain text.
pub fn to_anthropic(c: &Conversation) -> Value {
    let view = c.api_view();
    let contents: Vec<Vec<Cow<'_, ContentBlock>>> =
        view.iter().map(|m| m.content.iter().map(wire_block).collect()).collect();
    let messages =
        view.iter().zip(&contents).map(|(m, content)| Turn { role: m.role.as_str(), content: &content[..] });
    let export =
        MessagesExport { system: c.system.as_deref(), messages: messages.collect(), tools: &c.tools };
    serde_json::to_value(export).expect("a conversation serializes")
}

/// The body of a streaming Messages request. What the prompt cache keys on (the model, the
/// system prompt, the turns) comes first, so that two requests sharing a prefix share the bytes
/// that write it.
#[derive(Debug, Serialize)]
struct StreamRequest<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Content<'a>>,
    messages: Vec<WireTurn<'a>>,
    max_tokens: usize,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

/// A turn of the request.
#[derive(Debug, Serialize)]
struct WireTurn<'a> {
    role: &'a str,
    content: Content<'a>,
}

/// A turn's or the system prompt's content: a string, or one text block carrying a cache
/// breakpoint.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Cached([CachedText<'a>; 1]),
}

#[derive(Debug, Serialize)]
struct CachedText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: Ephemeral,
}

#[derive(Debug, Serialize)]
struct Ephemeral {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> Content<'a> {
    fn of(text: &'a str, breakpoint: bool) -> Self {
        if breakpoint {
            Content::Cached([CachedText {
                kind: "text",
                text,
                cache_control: Ephemeral { kind: "ephemeral" },
            }])
        } else {
            Content::Text(text)
        }
    }
}

/// The path and body of the streaming request, adding the key and version headers.
pub(super) fn request(
    profile: &LlmProfile,
    api_key: Option<&str>,
    req: &ApiRequest,
    headers: &mut Vec<(String, String)>,
) -> Result<(&'static str, String), LlmError> {
    // Two breakpoints of the four the API allows: the system prompt, and the turn that closes
    // the prefix (the last turn of a chat request; of a summary built on the chat, the chat's).
    let cached = req.cache.as_ref();
    let body = StreamRequest {
        model: &profile.model,
        system: req.system.as_deref().map(|s| Content::of(s, cached.is_some())),
        messages: req
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| WireTurn {
                role: m.role.as_str(),
                content: Content::of(&m.content, cached.is_some_and(|c| c.breakpoint == i)),
            })
            .collect(),
        max_tokens: req.max_tokens,
        stream: true,
        temperature: req.temperature,
    };
    let key = api_key.ok_or_else(|| {
        LlmError::new(ErrorKind::LlmConfig, format!("profile '{}' has no API key", profile.id))
    })?;
    headers.push(("x-api-key".into(), key.to_owned()));
    headers.push(("anthropic-version".into(), ANTHROPIC_VERSION.into()));
    Ok(("/v1/messages", serde_json::to_string(&body).expect("a request serializes")))
}

/// Any event: its type, when the SSE `event:` field does not name it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Tagged {
    #[serde(rename = "type", deserialize_with = "lenient::value")]
    kind: Option<String>,
}

/// `message_start`: the message being written, with the speaker, the model and the prompt's usage.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MessageStart {
    #[serde(deserialize_with = "lenient::present")]
    message: Option<StartedMessage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StartedMessage {
    #[serde(deserialize_with = "lenient::value")]
    role: Option<String>,
    #[serde(deserialize_with = "lenient::value")]
    model: Option<String>,
    #[serde(deserialize_with = "lenient::present")]
    usage: Option<StartUsage>,
}

/// The prompt's tokens: cache writes and reads count as input too.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StartUsage {
    #[serde(deserialize_with = "lenient::value")]
    input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::value")]
    cache_creation_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::value")]
    cache_read_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient::value")]
    output_tokens: Option<u64>,
}

/// `content_block_delta`: text to append (other deltas, such as tool input, carry none).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BlockDelta {
    #[serde(deserialize_with = "lenient::present")]
    delta: Option<TextDelta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TextDelta {
    #[serde(deserialize_with = "lenient::value")]
    text: Option<String>,
}

/// `message_delta`: the stop reason and the answer's tokens so far.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MessageDelta {
    #[serde(deserialize_with = "lenient::value")]
    delta: Option<StopDelta>,
    #[serde(deserialize_with = "lenient::value")]
    usage: Option<OutputUsage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StopDelta {
    #[serde(deserialize_with = "lenient::value")]
    stop_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OutputUsage {
    #[serde(deserialize_with = "lenient::value")]
    output_tokens: Option<u64>,
}

/// `error`: `{"type": "error", "error": {"type", "message"}}`; without `error`, the event itself.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorEvent {
    #[serde(deserialize_with = "lenient::present")]
    error: Option<ErrorDetail>,
}

impl Decoder {
    /// Decodes one event of a Messages stream.
    pub(super) fn anthropic(&mut self, event: &SseEvent) -> Result<Decoded, LlmError> {
        let mut out = Decoded::default();
        let v = parse_event(&event.data)?;
        let kind = match &event.event {
            Some(name) => name.clone(),
            None => view::<Tagged>(&v).kind.unwrap_or_default(),
        };
        match kind.as_str() {
            "message_start" => {
                let message = view::<MessageStart>(&v)
                    .message
                    .ok_or_else(|| malformed("message_start without a message"))?;
                let role = message.role.unwrap_or_else(|| "assistant".to_owned());
                self.role = Some(role.clone());
                out.role = Some(role);
                self.model = message.model;
                if let Some(u) = message.usage {
                    let (write, read) =
                        (u.cache_creation_input_tokens.unwrap_or(0), u.cache_read_input_tokens.unwrap_or(0));
                    self.usage = Some(Usage {
                        input_tokens: u.input_tokens.unwrap_or(0) + write + read,
                        output_tokens: u.output_tokens.unwrap_or(0),
                        cache_write_tokens: write,
                        cache_read_tokens: read,
                    });
                }
            }
            "content_block_delta" => {
                let delta = view::<BlockDelta>(&v)
                    .delta
                    .ok_or_else(|| malformed("content_block_delta without a delta"))?;
                if let Some(text) = delta.text {
                    out.content.push_str(&text);
                }
            }
            "message_delta" => {
                let delta: MessageDelta = view(&v);
                if let Some(reason) = delta.delta.and_then(|d| d.stop_reason) {
                    self.finish_reason = Some(reason);
                }
                if let Some(output) = delta.usage.and_then(|u| u.output_tokens) {
                    let usage = self.usage.get_or_insert_with(Usage::default);
                    usage.output_tokens = output;
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let error = view::<ErrorEvent>(&v).error.unwrap_or_else(|| view(&v));
                return Err(error.stream_error());
            }
            _ => {} // ping, content_block_start, content_block_stop
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::formats::{ChatMessage, SourceFormat, Wire, parse_conversation};
    use crate::profile::LlmKind;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.to_owned() }
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
    fn unknown_role_is_named() {
        let doc = json!({"messages": [{"role": "robot", "content": "x"}]});
        let e = parse_conversation(&doc.to_string()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "messages[0].role: unknown role \"robot\", expected one of user, assistant"
        );
    }

    #[test]
    fn anthropic_requests_carry_version_and_key() {
        let req = ApiRequest {
            system: Some("sys".into()),
            messages: vec![ChatMessage::user("hi")],
            max_tokens: 100,
            temperature: None,
            cache: None,
        };
        let p = LlmProfile::new("a", LlmKind::Anthropic, "claude-sonnet-4-5", 200_000);
        let http = Wire::Anthropic.build(&p, Some("key"), &req).unwrap();
        assert_eq!(http.url, "https://api.anthropic.com/v1/messages");
        assert_eq!(http.header("x-api-key"), Some("key"));
        assert_eq!(http.header("anthropic-version"), Some(ANTHROPIC_VERSION));
        let body: Value = serde_json::from_str(&http.body).unwrap();
        assert_eq!(body["system"], "sys");
        assert!(body.get("temperature").is_none());
    }

    #[test]
    fn anthropic_requests_put_breakpoints_on_the_system_prompt_and_the_prefix_turn() {
        let turns = vec![ChatMessage::user("one"), ChatMessage::assistant("two"), ChatMessage::user("three")];
        let req = |breakpoint| ApiRequest {
            system: Some("sys".into()),
            messages: turns.clone(),
            max_tokens: 100,
            temperature: None,
            cache: Some(crate::formats::ApiCache { key: "chat-1".into(), breakpoint }),
        };
        let p = LlmProfile::new("a", LlmKind::Anthropic, "claude-sonnet-4-5", 200_000);
        let body = |r: &ApiRequest| -> Value {
            serde_json::from_str(&Wire::Anthropic.build(&p, Some("k"), r).unwrap().body).unwrap()
        };
        let last = body(&req(2));
        let cached = json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]);
        assert_eq!(last["system"], cached);
        assert_eq!(last["messages"][0]["content"], "one");
        assert_eq!(last["messages"][2]["content"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(last["messages"][2]["content"][0]["text"], "three");
        let first = body(&req(0));
        assert_eq!(first["messages"][0]["content"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(first["messages"][2]["content"], "three");
        // Two of the four breakpoints the API allows; no key travels (Anthropic has none).
        let text = Wire::Anthropic.build(&p, Some("k"), &req(2)).unwrap().body;
        assert_eq!(text.matches("cache_control").count(), 2);
        assert!(!text.contains("chat-1"));
        // The cached parts come first, so requests sharing a prefix share its bytes.
        assert!(text.starts_with(r#"{"model":"claude-sonnet-4-5","system":"#), "{text}");
    }

    #[test]
    fn anthropic_stream_decodes_text_usage_and_stop() {
        let mut d = Decoder::default();
        d.event(Wire::Anthropic, &ev(Some("message_start"), r#"{"type":"message_start","message":{"id":"m","role":"assistant","usage":{"input_tokens":25,"output_tokens":1}}}"#)).unwrap();
        d.event(Wire::Anthropic, &ev(Some("ping"), r#"{"type":"ping"}"#)).unwrap();
        let t = d.event(Wire::Anthropic, &ev(Some("content_block_delta"), r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#)).unwrap();
        assert_eq!(t.content, "Hello");
        d.event(
            Wire::Anthropic,
            &ev(
                Some("message_delta"),
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}"#,
            ),
        )
        .unwrap();
        d.event(Wire::Anthropic, &ev(Some("message_stop"), r#"{"type":"message_stop"}"#)).unwrap();
        assert!(d.done);
        assert_eq!(d.usage, Some(Usage::new(25, 15)));
        assert_eq!(d.finish_reason.as_deref(), Some("end_turn"));
        let e = d
            .event(
                Wire::Anthropic,
                &ev(
                    Some("error"),
                    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ),
            )
            .unwrap_err();
        assert_eq!((e.kind, e.message.as_str()), (ErrorKind::LlmServer, "Overloaded"));
    }
}
