//! Typed LLM errors. Every failure of a call ends in one of these kinds, with the text streamed
//! before the failure kept in `partial`.

use serde::{Deserialize, Serialize};

/// What went wrong with an LLM call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmErrorKind {
    /// 401 or 403: the key is missing, wrong or lacks access.
    Auth,
    /// 429 after the retries allowed.
    RateLimit,
    /// The prompt does not fit the model's context window.
    ContextOverflow,
    /// Another 4xx: the request was refused as invalid.
    BadRequest,
    /// 5xx or 529 after the retries allowed, or an error event in the stream.
    Server,
    /// The server could not be reached, or the connection broke.
    Network,
    /// No byte for longer than the timeout.
    Timeout,
    /// The user cancelled.
    Cancelled,
    /// The response could not be parsed, or the stream ended before the end of the answer.
    MalformedStream,
    /// The profile or the call is wrongly set up (no key, no base URL, a manual profile asked to send).
    Config,
}

impl LlmErrorKind {
    /// The stable name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LlmErrorKind::Auth => "auth",
            LlmErrorKind::RateLimit => "rate_limit",
            LlmErrorKind::ContextOverflow => "context_overflow",
            LlmErrorKind::BadRequest => "bad_request",
            LlmErrorKind::Server => "server",
            LlmErrorKind::Network => "network",
            LlmErrorKind::Timeout => "timeout",
            LlmErrorKind::Cancelled => "cancelled",
            LlmErrorKind::MalformedStream => "malformed_stream",
            LlmErrorKind::Config => "config",
        }
    }
}

/// A failed LLM call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{}: {message}", kind.as_str())]
pub struct LlmError {
    /// What kind of failure.
    pub kind: LlmErrorKind,
    /// What happened, for people: the server's own message where it sent one.
    pub message: String,
    /// The HTTP status, when the server answered with an error status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The wait the server asked for, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// Text streamed before the failure.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub partial: String,
    /// Requests sent, retries included.
    #[serde(default)]
    pub attempts: u32,
}

impl LlmError {
    /// A new error of a kind.
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        LlmError {
            kind,
            message: message.into(),
            status: None,
            retry_after_ms: None,
            partial: String::new(),
            attempts: 0,
        }
    }

    /// Whether another attempt may succeed, before any byte of an answer arrived.
    pub fn is_retryable(&self) -> bool {
        matches!(self.kind, LlmErrorKind::RateLimit | LlmErrorKind::Server | LlmErrorKind::Network)
    }
}
