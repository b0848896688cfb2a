//! Typed errors of the core. A typed `kind` crosses every boundary (CLI JSON, wasm), never a bare
//! string.

use serde::{Deserialize, Serialize};

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
    /// Nothing the provider may remove would change the context.
    #[error("nothing to condense: {0}")]
    NothingToCondense(String),
    /// The provider produced a conversation that breaks an invariant; a bug, reported not applied.
    #[error("internal error: {0}")]
    Internal(String),
    /// The LLM call behind the condensation failed.
    #[error("LLM call failed: {0}")]
    Llm(crate::llm::LlmError),
}

impl CondenseError {
    /// The stable, machine-readable name of the error's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            CondenseError::InvalidInput(_) => "invalid_input",
            CondenseError::ProviderNotFound { .. } => "provider_not_found",
            CondenseError::ProviderDisabled(_) => "provider_disabled",
            CondenseError::InvalidConfig { .. } => "invalid_config",
            CondenseError::ContextGrew { .. } => "context_grew",
            CondenseError::NothingToCondense(_) => "nothing_to_condense",
            CondenseError::Internal(_) => "internal",
            CondenseError::Llm(e) => match e.kind {
                crate::llm::LlmErrorKind::Auth => "llm_auth",
                crate::llm::LlmErrorKind::RateLimit => "llm_rate_limit",
                crate::llm::LlmErrorKind::ContextOverflow => "llm_context_overflow",
                crate::llm::LlmErrorKind::BadRequest => "llm_bad_request",
                crate::llm::LlmErrorKind::Server => "llm_server",
                crate::llm::LlmErrorKind::Network => "llm_network",
                crate::llm::LlmErrorKind::Timeout => "llm_timeout",
                crate::llm::LlmErrorKind::Cancelled => "llm_cancelled",
                crate::llm::LlmErrorKind::MalformedStream => "llm_malformed_stream",
                crate::llm::LlmErrorKind::Config => "llm_config",
            },
        }
    }

    /// The boundary form: `{kind, message}`.
    pub fn to_info(&self) -> ErrorInfo {
        ErrorInfo { kind: self.kind().to_owned(), message: self.to_string() }
    }
}

/// An error as it crosses a boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// See [`CondenseError::kind`].
    pub kind: String,
    /// A sentence for people.
    pub message: String,
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
