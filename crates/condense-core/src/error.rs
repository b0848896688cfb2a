//! Typed errors of the core, and the one closed set of failure kinds ([`ErrorKind`]) that every
//! boundary reports: the CLI's JSON, the wasm bindings' `Error.kind`, the chat's events and the
//! extension's notifications. A new kind is added here and nowhere else; the TypeScript union is
//! generated from it.

use serde::{Deserialize, Serialize};

/// `ErrorKind` from one list: each variant with its doc and its name, from which the enum, its
/// serde names, [`ErrorKind::ALL`] and [`ErrorKind::as_str`] are made.
macro_rules! error_kinds {
    ($(#[$outer:meta])* pub enum ErrorKind { $($(#[$doc:meta])* $variant:ident = $name:literal,)* }) => {
        $(#[$outer])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
        pub enum ErrorKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl ErrorKind {
            /// Every kind, in declaration order (for tests and generated code).
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$variant,)*];

            /// The stable, machine-readable name, as in JSON.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorKind::$variant => $name,)*
                }
            }
        }
    };
}

error_kinds! {
    /// Every kind of failure the core, the bindings and the host report. Serialized by the names
    /// written here (`llm_auth`, `provider_disabled`, …), the one place they are written; the
    /// names are a public contract.
    pub enum ErrorKind {
        /// The input cannot be used as it is: an unreadable conversation or call, too few messages,
        /// bad options, an empty chat message.
        InvalidInput = "invalid_input",
        /// No provider with the id asked for is registered.
        ProviderNotFound = "provider_not_found",
        /// The provider is registered but the user disabled it.
        ProviderDisabled = "provider_disabled",
        /// A provider's configuration does not fit its form.
        InvalidConfig = "invalid_config",
        /// The condensed context would not be smaller than the original.
        ContextGrew = "context_grew",
        /// The model's summary was degenerate — one line or phrase repeated for most of it, or cut at
        /// its output limit before any of the sections asked for — and so was its one greedy retry
        /// (or none was possible); it was not applied and the conversation is unchanged.
        DegenerateSummary = "degenerate_summary",
        /// Nothing the provider may remove would change the context.
        NothingToCondense = "nothing_to_condense",
        /// The target asked for is below what the run must keep (the system prompt, the first user
        /// message's own words, the messages kept at the end, pinned ones): refused before any work,
        /// the floor named.
        TargetBelowFloor = "target_below_floor",
        /// An automatic condensation saved less than the minimum gain and was not applied.
        InsufficientGain = "insufficient_gain",
        /// There is no condensation to undo.
        NothingToUndo = "nothing_to_undo",
        /// The engine is running a condensation and cannot change its providers now.
        Busy = "busy",
        /// A bug: a provider broke an invariant, or the host failed in a way it should not.
        Internal = "internal",
        /// The engine itself stopped on a bug (a panic, which traps the WebAssembly instance); the host
        /// replaced it with a fresh one. The action did not complete; nothing saved was changed.
        EngineCrashed = "engine_crashed",
        /// A call named a task by handle (`{id, revision}`) that the engine does not hold at that
        /// revision: never held, released, evicted, or changed since. The host sends the full task.
        UnknownTask = "unknown_task",
        /// A call on a gateway the host stopped: its state was freed with it. The host starts a
        /// new one.
        GatewayStopped = "gateway_stopped",
        /// 401 or 403: the key is missing, wrong or lacks access.
        LlmAuth = "llm_auth",
        /// 429 after the retries allowed.
        LlmRateLimit = "llm_rate_limit",
        /// The prompt does not fit the model's context window.
        LlmContextOverflow = "llm_context_overflow",
        /// Another 4xx: the request was refused as invalid.
        LlmBadRequest = "llm_bad_request",
        /// 5xx or 529 after the retries allowed, or an error event in the stream.
        LlmServer = "llm_server",
        /// The server could not be reached, or the connection broke.
        LlmNetwork = "llm_network",
        /// No byte for longer than the timeout, or the whole request past its deadline.
        LlmTimeout = "llm_timeout",
        /// The user cancelled the call.
        LlmCancelled = "llm_cancelled",
        /// The response could not be parsed, or the stream ended before the end of the answer.
        LlmMalformedStream = "llm_malformed_stream",
        /// The profile or the call is wrongly set up: no key, no base URL, no chat profile, a manual
        /// profile asked to send, a tool or model a CLI profile names that does not exist.
        LlmConfig = "llm_config",
        /// The program of a CLI tool profile was not found where its entry says to look.
        LlmToolNotFound = "llm_tool_not_found",
        /// A CLI tool ended with an error: a non-zero exit, an error it reported, too much output.
        LlmToolFailed = "llm_tool_failed",
        /// A CLI tool profile was asked for a use its entry's `capabilities` leave out: the chat
        /// model from a tool without `chat`, the condensing model from one without `summarize`.
        LlmToolUnsupported = "llm_tool_unsupported",
        /// The server sent more than the bounds allow (an answer far longer than asked for, a line
        /// or an event without end); the text that did arrive is kept.
        LlmResponseTooLarge = "llm_response_too_large",
    }
}

impl ErrorKind {
    /// Whether this is a failure of an LLM call.
    pub fn is_llm(self) -> bool {
        self.as_str().starts_with("llm_")
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Why a condensation, or a call into the engine, did not succeed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CondenseError {
    /// The input cannot be condensed as it is (too few messages, nothing to gain, bad options).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// No provider with this id is registered.
    #[error("provider '{id}' not found; known providers: {known}")]
    ProviderNotFound {
        /// The id asked for.
        id: String,
        /// The registered ids, comma-separated.
        known: String,
    },
    /// The provider is registered but the user disabled it.
    #[error("provider '{0}' is disabled")]
    ProviderDisabled(String),
    /// The provider's configuration does not fit its schema.
    #[error("invalid configuration for provider '{id}': {message}")]
    InvalidConfig {
        /// The provider.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// The condensed context would not be smaller than the original.
    #[error("context grew: {before} tokens before, {after} after")]
    ContextGrew {
        /// Tokens before.
        before: usize,
        /// Tokens the result would have had.
        after: usize,
    },
    /// The model's summary repeats itself or stops before its sections, even when retried; it was
    /// not applied.
    #[error("degenerate summary: {0}")]
    DegenerateSummary(String),
    /// Nothing the provider may remove would change the context.
    #[error("nothing to condense: {0}")]
    NothingToCondense(String),
    /// The target is below the floor: what the run must keep.
    #[error(
        "the target of {target} tokens is below the floor of {floor} tokens (the system prompt, the first user message's own words, the last {keep_last} messages and any pinned ones stay); ask for {floor} tokens or more, or keep fewer messages"
    )]
    TargetBelowFloor {
        /// The target asked for.
        target: usize,
        /// The fewest tokens the run can leave.
        floor: usize,
        /// The messages kept at the end.
        keep_last: usize,
    },
    /// The provider produced a conversation that breaks an invariant; a bug, reported not applied.
    #[error("internal error: {0}")]
    Internal(String),
    /// The LLM call behind the condensation failed.
    #[error("LLM call failed: {0}")]
    Llm(LlmError),
}

impl CondenseError {
    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CondenseError::InvalidInput(_) => ErrorKind::InvalidInput,
            CondenseError::ProviderNotFound { .. } => ErrorKind::ProviderNotFound,
            CondenseError::ProviderDisabled(_) => ErrorKind::ProviderDisabled,
            CondenseError::InvalidConfig { .. } => ErrorKind::InvalidConfig,
            CondenseError::ContextGrew { .. } => ErrorKind::ContextGrew,
            CondenseError::DegenerateSummary(_) => ErrorKind::DegenerateSummary,
            CondenseError::NothingToCondense(_) => ErrorKind::NothingToCondense,
            CondenseError::TargetBelowFloor { .. } => ErrorKind::TargetBelowFloor,
            CondenseError::Internal(_) => ErrorKind::Internal,
            CondenseError::Llm(e) => e.kind,
        }
    }

    /// The boundary form: `{kind, message}`.
    pub fn to_info(&self) -> ErrorInfo {
        ErrorInfo { kind: self.kind(), message: self.to_string() }
    }
}

/// An error as it crosses a boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorInfo {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// A sentence for people.
    pub message: String,
}

impl ErrorInfo {
    /// An error of a kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ErrorInfo { kind, message: message.into() }
    }
}

/// A failed LLM call. Every failure of a call ends in one of the `llm_*` kinds, with the text
/// streamed before the failure kept in `partial`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema, thiserror::Error)]
#[error("{}: {message}", kind.as_str().trim_start_matches("llm_"))]
pub struct LlmError {
    /// What kind of failure: one of the `llm_*` kinds.
    pub kind: ErrorKind,
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
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        debug_assert!(kind.is_llm(), "an LLM error has an llm_* kind, got {kind}");
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
        matches!(self.kind, ErrorKind::LlmRateLimit | ErrorKind::LlmServer | ErrorKind::LlmNetwork)
    }

    /// The boundary form: `{kind, message}`, the message as the user reads it.
    pub fn to_info(&self) -> ErrorInfo {
        CondenseError::Llm(self.clone()).to_info()
    }
}

/// A conversation file could not be read. `path` names where, e.g. `messages[12].content[0]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct ParseError {
    /// Where in the document, in JSON path form; empty for the document itself.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl ParseError {
    /// An error at `path`.
    pub fn at(path: impl Into<String>, message: impl Into<String>) -> Self {
        ParseError { path: path.into(), message: message.into() }
    }
}

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The text with every known secret (of 6 characters or more) and anything shaped like an API key
/// (`sk-…`, `AIza…`, the token after `Bearer `) replaced by [`REDACTED`]. Every message that can
/// carry text from outside (a server's body, a tool's standard error) passes through it.
pub fn redact_secrets(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_owned();
    for secret in secrets.iter().filter(|s| s.trim().len() >= 6) {
        out = out.replace(secret, REDACTED);
    }
    let token_char =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '/' | '=');
    for (prefix, min) in [("sk-", 16), ("AIza", 30), ("Bearer ", 12), ("bearer ", 12)] {
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(prefix) {
            let after = &rest[at + prefix.len()..];
            let len = after.find(|c: char| !token_char(c)).unwrap_or(after.len());
            let starts_word = rest[..at].chars().next_back().is_none_or(|c| !c.is_ascii_alphanumeric());
            if len >= min && starts_word {
                result.push_str(&rest[..at]);
                if prefix.starts_with(['B', 'b']) {
                    result.push_str(prefix);
                }
                result.push_str(REDACTED);
                rest = &after[len..];
            } else {
                result.push_str(&rest[..at + prefix.len()]);
                rest = after;
            }
        }
        result.push_str(rest);
        out = result;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_serializes_as_its_name_and_all_lists_every_kind() {
        for &kind in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            let back: ErrorKind = serde_json::from_value(kind.as_str().into()).unwrap();
            assert_eq!(back, kind);
        }
        let distinct: std::collections::HashSet<_> = ErrorKind::ALL.iter().collect();
        assert_eq!(distinct.len(), ErrorKind::ALL.len());
        // The schema lists the same set, so the generated TypeScript union cannot drift.
        // (schemars writes documented unit variants as `oneOf` of one-value enums.)
        let schema = serde_json::to_value(schemars::schema_for!(ErrorKind)).unwrap();
        let names: Vec<&str> =
            schema["oneOf"].as_array().expect("oneOf").iter().filter_map(|v| v["enum"][0].as_str()).collect();
        assert_eq!(names, ErrorKind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>());
    }

    #[test]
    fn an_llm_error_reads_as_before_kind_without_its_prefix() {
        let e = LlmError::new(ErrorKind::LlmAuth, "bad key");
        assert_eq!(e.to_string(), "auth: bad key");
        assert_eq!(CondenseError::Llm(e).to_info().message, "LLM call failed: auth: bad key");
    }

    #[test]
    fn secrets_and_key_shaped_tokens_are_redacted() {
        let text = "auth failed for my-secret-value; key sk-proj-ABCDEFGHIJKLMNOPQRST; Authorization: Bearer abcdefghijklmnop; AIzaSyA1234567890abcdefghijklmnopqrstu ok";
        let r = redact_secrets(text, &["my-secret-value", "abc"]);
        assert_eq!(
            r,
            "auth failed for [redacted]; key [redacted]; Authorization: Bearer [redacted]; [redacted] ok"
        );
        // Short words and ordinary text stay.
        assert_eq!(redact_secrets("task-sk-x and sk-short", &[]), "task-sk-x and sk-short");
    }
}
