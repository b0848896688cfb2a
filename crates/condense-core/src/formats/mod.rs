//! Conversations and requests in the wire dialects, one module per dialect: `native` (this
//! project's format and `CondensationResult` documents), `openai` (Chat Completions, also spoken
//! by Ollama, LM Studio, llama.cpp, vLLM, OpenRouter) and `anthropic` (Messages). Each dialect
//! module holds everything about its dialect: importing its conversations, exporting the API view
//! as its request, the streaming HTTP request of its wire, decoding its SSE events. This module
//! detects the format of a file, dispatches to the dialects, and holds what they share: the neutral
//! [`ApiRequest`] they encode, the `Decoder`'s state, the error bodies both wires send, and the
//! JSON Schema. Every import error names where it is, e.g.
//! `messages[12].content[0]: unknown block type "foo"`.

mod anthropic;
mod native;
mod openai;
mod sse;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorKind, LlmError, ParseError};
use crate::host::HttpRequest;
use crate::model::{Conversation, FORMAT_TAG};
use crate::profile::{LlmKind, LlmProfile, Usage};

pub use anthropic::{ANTHROPIC_VERSION, to_anthropic};
pub use openai::to_openai;
pub use sse::{MAX_SSE_EVENT_BYTES, MAX_SSE_LINE_BYTES, SseEvent, SseParser};

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
        SourceFormat::Native => native::from_native(value)?,
        SourceFormat::CondensationResult => native::from_condensation_result(value)?,
        SourceFormat::OpenAi => openai::from_openai(&value)?,
        SourceFormat::Anthropic => anthropic::from_anthropic(&value)?,
    };
    check_ids(&conversation)?;
    Ok(Parsed { conversation, format })
}

fn strip_position(message: &str) -> &str {
    message.rsplit_once(" at line ").map_or(message, |(m, _)| m)
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
    Ok(if openai::looks_like(messages) { SourceFormat::OpenAi } else { SourceFormat::Anthropic })
}

/// Deserializes with the path of any error, and says "unknown block type" for content blocks.
fn typed<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, ParseError> {
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

/// The messages of an OpenAI or Anthropic document (`{"system", "messages"}` or a bare list).
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

/// A document's `system`: a string, or a list of text blocks joined by blank lines.
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

/// The JSON Schema of the project's conversation format.
pub fn conversation_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Conversation)).expect("schema serializes")
}

/// Who speaks in a prompt's conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    /// The user.
    User,
    /// The model.
    Assistant,
}

impl ChatRole {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatRole::User => "user",
            ChatRole::Assistant => "assistant",
        }
    }
}

/// One plain-text turn of a prompt's conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatMessage {
    /// Who says it.
    pub role: ChatRole,
    /// What is said.
    pub content: String,
}

impl ChatMessage {
    /// A user turn.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage { role: ChatRole::User, content: content.into() }
    }

    /// An assistant turn.
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage { role: ChatRole::Assistant, content: content.into() }
    }
}

/// The parts of an API request, before the wire format: what every dialect encodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiRequest {
    /// The system prompt.
    pub system: Option<String>,
    /// The turns, alternating, ending with the user's.
    pub messages: Vec<ChatMessage>,
    /// Most tokens of the answer.
    pub max_tokens: usize,
    /// Sampling temperature, when the model takes one.
    pub temperature: Option<f64>,
}

/// A turn as both dialects write it: `{"role", "content"}`, the content a string or blocks.
#[derive(Debug, Serialize)]
struct Turn<'a, C: ?Sized> {
    role: &'a str,
    content: &'a C,
}

impl<'a> Turn<'a, str> {
    fn chat(m: &'a ChatMessage) -> Self {
        Turn { role: m.role.as_str(), content: &m.content }
    }
}

/// The wire format of a client kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl Wire {
    /// The wire format a profile speaks, if it speaks one.
    pub fn of(kind: LlmKind) -> Option<Wire> {
        match kind {
            LlmKind::Openai | LlmKind::OpenaiCompatible => Some(Wire::OpenAi),
            LlmKind::Anthropic => Some(Wire::Anthropic),
            LlmKind::Manual | LlmKind::Cli => None,
        }
    }

    /// The streaming HTTP request for an API request.
    pub fn build(
        self,
        profile: &LlmProfile,
        api_key: Option<&str>,
        req: &ApiRequest,
    ) -> Result<HttpRequest, LlmError> {
        let base = profile.base_url().ok_or_else(|| {
            LlmError::new(ErrorKind::LlmConfig, format!("profile '{}' has no base_url", profile.id))
        })?;
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), "text/event-stream".to_owned()),
        ];
        let (path, body) = match self {
            Wire::OpenAi => openai::request(profile, api_key, req, &mut headers)?,
            Wire::Anthropic => anthropic::request(profile, api_key, req, &mut headers)?,
        };
        Ok(HttpRequest { method: "POST".into(), url: format!("{base}{path}"), headers, body })
    }

    /// The typed error for an error status and its body. Both wires send the same shape (see
    /// `ErrorBody`), so the wire does not change the reading.
    pub fn status_error(self, status: u16, retry_after_ms: Option<u64>, body: &str) -> LlmError {
        let error = serde_json::from_str::<Value>(body).ok().and_then(|v| view::<ErrorBody>(&v).error);
        let message = error
            .as_ref()
            .and_then(|e| match e {
                ErrorField::Detail(d) => d.message.clone(),
                ErrorField::Text(t) => Some(t.clone()),
            })
            .unwrap_or_else(|| {
                let snippet: String = body.chars().take(200).collect();
                if snippet.trim().is_empty() { format!("HTTP {status}") } else { snippet }
            });
        let code = match &error {
            Some(ErrorField::Detail(d)) => {
                [&d.code, &d.kind].into_iter().flatten().map(String::as_str).collect::<Vec<_>>().join(" ")
            }
            _ => String::new(),
        };
        let kind = match status {
            401 | 403 => ErrorKind::LlmAuth,
            429 => ErrorKind::LlmRateLimit,
            400 | 413 if is_overflow(&code, &message) => ErrorKind::LlmContextOverflow,
            500..=599 => ErrorKind::LlmServer,
            _ => ErrorKind::LlmBadRequest,
        };
        LlmError { status: Some(status), retry_after_ms, ..LlmError::new(kind, message) }
    }
}

/// An error response's body, as both wires send it: OpenAI's
/// `{"error": {"message", "type", "code"}}` (llama.cpp's `code` is a number, which is ignored),
/// Anthropic's `{"type": "error", "error": {"type", "message"}}`, or Ollama's `{"error": "text"}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorBody {
    #[serde(deserialize_with = "lenient::value")]
    error: Option<ErrorField>,
}

/// The `error` of an error body: a message alone, or its details.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ErrorField {
    Text(String),
    Detail(ErrorDetail),
}

/// What an error says, in a response body or as an event of a stream.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorDetail {
    #[serde(deserialize_with = "lenient::value")]
    message: Option<String>,
    #[serde(rename = "type", deserialize_with = "lenient::value")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient::value")]
    code: Option<String>,
}

impl ErrorDetail {
    /// An error event inside a stream: overloads and server errors are `server`, the rest by type.
    fn stream_error(self) -> LlmError {
        let message = self.message.unwrap_or_else(|| "error event in the stream".to_owned());
        let kind_text = self.kind.unwrap_or_default();
        let kind = match kind_text.as_str() {
            "rate_limit_error" => ErrorKind::LlmRateLimit,
            "authentication_error" | "permission_error" => ErrorKind::LlmAuth,
            "invalid_request_error" if is_overflow(&kind_text, &message) => ErrorKind::LlmContextOverflow,
            _ => ErrorKind::LlmServer,
        };
        LlmError::new(kind, message)
    }
}

/// Whether an error says the prompt is too long, in the words of OpenAI, Anthropic, llama.cpp,
/// Ollama or vLLM.
fn is_overflow(code: &str, message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    code.contains("context_length_exceeded")
        || code.contains("exceed_context_size")
        || m.contains("prompt is too long")
        || m.contains("maximum context length")
        || m.contains("context length")
        || m.contains("context window")
        || m.contains("exceeds the available context size")
}

/// Decodes a stream's events into deltas, remembering the usage and stop reason. Each dialect
/// module decodes its own events (`Decoder::openai`, `Decoder::anthropic`).
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The role, once announced.
    pub(crate) role: Option<String>,
    /// Tokens reported so far.
    pub(crate) usage: Option<Usage>,
    /// Why the model stopped.
    pub(crate) finish_reason: Option<String>,
    /// Whether the stream's end marker arrived.
    pub(crate) done: bool,
    /// The model the server named.
    pub(crate) model: Option<String>,
}

/// What one event meant.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Decoded {
    /// Text to append.
    pub(crate) content: String,
    /// The role, on the first event that names it.
    pub(crate) role: Option<String>,
}

impl Decoder {
    /// Decodes one event.
    pub(crate) fn event(&mut self, wire: Wire, event: &SseEvent) -> Result<Decoded, LlmError> {
        match wire {
            Wire::OpenAi => self.openai(event),
            Wire::Anthropic => self.anthropic(event),
        }
    }
}

/// An event's data as JSON; what is not JSON makes the stream malformed.
fn parse_event(data: &str) -> Result<Value, LlmError> {
    serde_json::from_str(data).map_err(|e| {
        let snippet: String = data.chars().take(80).collect();
        malformed(&format!("an event is not JSON ({e}): {snippet}"))
    })
}

fn malformed(message: &str) -> LlmError {
    LlmError::new(ErrorKind::LlmMalformedStream, message)
}

/// Reads a wire shape out of a parsed JSON value. Servers differ, and some are sloppy, so reading
/// never fails: a value that is not an object reads as the shape's defaults.
fn view<T: DeserializeOwned + Default>(value: &Value) -> T {
    if value.is_object() { T::deserialize(value).unwrap_or_default() } else { T::default() }
}

/// Readers for the fields of the wire shapes (`#[serde(deserialize_with)]`): a field of another
/// type than expected reads as absent, so no server's oddity in a field the client does not need
/// becomes an error.
mod lenient {
    use serde::de::DeserializeOwned;
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    /// The value when it has the expected type, else `None`. A list is never read as a struct.
    pub(super) fn value<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(if v.is_array() { None } else { T::deserialize(v).ok() })
    }

    /// `Some` whenever the field is there, even as `null`: with the shape's defaults where it is
    /// not an object. For fields whose presence is what counts.
    pub(super) fn present<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        Ok(Some(super::view(&Value::deserialize(d)?)))
    }

    /// Like [`present`], but `null` is absent.
    pub(super) fn non_null<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        let v = Value::deserialize(d)?;
        Ok((!v.is_null()).then(|| super::view(&v)))
    }

    /// The objects of a list, each read as the shape; anything else reads as an empty list.
    pub(super) fn objects<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(
        d: D,
    ) -> Result<Vec<T>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Array(items) => items.iter().filter(|i| i.is_object()).map(super::view).collect(),
            _ => Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_json_names_line_and_column() {
        let e = parse_conversation("{\n  \"messages\": [\n    {\"role\": \"user\",, }\n").unwrap_err();
        assert!(e.to_string().contains("line 3 column"), "{e}");
    }

    #[test]
    fn error_statuses_map_to_kinds() {
        let cases = [
            (
                401,
                r#"{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}"#,
                ErrorKind::LlmAuth,
            ),
            (
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
                ErrorKind::LlmRateLimit,
            ),
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#,
                ErrorKind::LlmContextOverflow,
            ),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
                ErrorKind::LlmContextOverflow,
            ),
            (
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
                ErrorKind::LlmContextOverflow,
            ),
            (400, r#"{"error":{"message":"bad temperature"}}"#, ErrorKind::LlmBadRequest),
            (
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ErrorKind::LlmServer,
            ),
            (502, "<html>bad gateway</html>", ErrorKind::LlmServer),
        ];
        for (status, body, kind) in cases {
            let e = Wire::OpenAi.status_error(status, None, body);
            assert_eq!(e.kind, kind, "{status} {body}");
            assert_eq!(e.status, Some(status));
        }
        assert_eq!(Wire::OpenAi.status_error(401, None, "").message, "HTTP 401");
    }
}
