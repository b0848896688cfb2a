//! The gateway's core (issue 27): what a local gateway between an agent (Claude Code, Codex,
//! Cline, Roo, Continue) and its model API decides for each request, without IO.
//!
//! A request is read in its dialect ([`Dialect`], [`Request`]) without copying its messages;
//! its session is found ([`SessionKey`]); the session's store ([`Sessions`]) matches the incoming
//! messages to the originals it has seen, and builds the body to forward by splicing: every byte
//! outside the message array is the client's, every message is the client's own text except the
//! ranges a frozen condensation replaces, and those are replayed byte for byte on every request,
//! so between two condensations each forwarded request extends the previous one and the
//! upstream's prompt cache holds. [`Sessions::freeze`] records a condensation; which range to
//! condense and with what text is decided elsewhere.

mod dialect;
#[cfg(test)]
mod fixtures;
mod freeze;
mod session_key;
mod sessions;

pub use dialect::{ArrayKind, Dialect, Request};
pub use freeze::{FreezeError, MARKER, neutralize, replacement};
pub use session_key::{SessionKey, fnv1a, session_key};
pub use sessions::{Continuity, Forward, Frozen, Limits, Sessions};

/// Why the gateway could not read a request. The host forwards such a request untouched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GatewayError {
    /// The body is not UTF-8 JSON of an object.
    #[error("the request body is not JSON: {0}")]
    Malformed(String),
    /// The body has no conversation under the dialect's key (`messages` or `input`).
    #[error("the request has no conversation under `{0}`")]
    NoConversation(&'static str),
}
