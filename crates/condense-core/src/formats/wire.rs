//! What the HTTP dialects share: the neutral prompt ([`ChatRole`], [`ChatMessage`],
//! [`ApiRequest`]) that `openai` and `anthropic` encode, the [`Wire`] a profile speaks (which
//! `dispatch` maps to its dialect's module), the error bodies both wires send (mapped to error
//! kinds), and the `Decoder`'s state and lenient readers their stream decoders use.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorKind, LlmError};
use crate::profile::{LlmKind, Usage};

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
    /// How the request uses the provider's prompt cache; `None`: not at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<ApiCache>,
}

/// A request's use of the prompt cache: Anthropic's `cache_control` breakpoints (on the system
/// prompt, and on the turn that closes the prefix worth keeping), OpenAI's `prompt_cache_key`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiCache {
    /// What routes the request to the cache of its conversation (a chat's id).
    pub key: String,
    /// The turn (index into `messages`) that carries the moving breakpoint.
    pub breakpoint: usize,
}

/// A turn as both dialects write it: `{"role", "content"}`, the content a string or blocks.
#[derive(Debug, Serialize)]
pub(super) struct Turn<'a, C: ?Sized> {
    pub(super) role: &'a str,
    pub(super) content: &'a C,
}

impl<'a> Turn<'a, str> {
    pub(super) fn chat(m: &'a ChatMessage) -> Self {
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
pub(super) struct ErrorDetail {
    #[serde(deserialize_with = "lenient::value")]
    message: Option<String>,
    #[serde(rename = "type", deserialize_with = "lenient::value")]
    kind: Option<String>,
    #[serde(deserialize_with = "lenient::value")]
    code: Option<String>,
}

impl ErrorDetail {
    /// An error event inside a stream: overloads and server errors are `server`, the rest by type.
    pub(super) fn stream_error(self) -> LlmError {
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

/// An event's data as JSON; what is not JSON makes the stream malformed.
pub(super) fn parse_event(data: &str) -> Result<Value, LlmError> {
    serde_json::from_str(data).map_err(|e| {
        let snippet: String = data.chars().take(80).collect();
        malformed(&format!("an event is not JSON ({e}): {snippet}"))
    })
}

pub(super) fn malformed(message: &str) -> LlmError {
    LlmError::new(ErrorKind::LlmMalformedStream, message)
}

/// Reads a wire shape out of a parsed JSON value. Servers differ, and some are sloppy, so reading
/// never fails: a value that is not an object reads as the shape's defaults.
pub(super) fn view<T: DeserializeOwned + Default>(value: &Value) -> T {
    if value.is_object() { T::deserialize(value).unwrap_or_default() } else { T::default() }
}

/// Readers for the fields of the wire shapes (`#[serde(deserialize_with)]`): a field of another
/// type than expected reads as absent, so no server's oddity in a field the client does not need
/// becomes an error.
pub(super) mod lenient {
    use serde::de::DeserializeOwned;
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    /// The value when it has the expected type, else `None`. A list is never read as a struct.
    pub(in crate::formats) fn value<'de, D: Deserializer<'de>, T: DeserializeOwned>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(if v.is_array() { None } else { T::deserialize(v).ok() })
    }

    /// `Some` whenever the field is there, even as `null`: with the shape's defaults where it is
    /// not an object. For fields whose presence is what counts.
    pub(in crate::formats) fn present<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        Ok(Some(super::view(&Value::deserialize(d)?)))
    }

    /// Like [`present`], but `null` is absent.
    pub(in crate::formats) fn non_null<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        let v = Value::deserialize(d)?;
        Ok((!v.is_null()).then(|| super::view(&v)))
    }

    /// The objects of a list, each read as the shape; anything else reads as an empty list.
    pub(in crate::formats) fn objects<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(
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
