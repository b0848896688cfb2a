//! The gateway's core (issue 27): what a local gateway between an agent (Claude Code, Codex,
//! Cline, Roo, Continue) and its model API decides for each request, without IO.
//!
//! A request is read in its dialect ([`Dialect`], [`Request`]) without copying its messages;
//! its session is found ([`SessionKey`]); the session's store ([`Sessions`]) matches the incoming
//! messages to the originals it has seen, and builds the body to forward by splicing: every byte
//! outside the message array is the client's, every message is the client's own text except the
//! ranges a frozen condensation replaces, and those are replayed byte for byte on every request,
//! so between two condensations each forwarded request extends the previous one and the
//! upstream's prompt cache holds. [`Sessions::freeze`] records a condensation.
//!
//! [`Gateway`] decides each request over that store: it counts the request as it would be
//! forwarded (`count`), and when that crosses the threshold of the model's window (`windows`) —
//! or, under the `cache-aware` policy, earlier when it pays for the prompt cache it rewrites —
//! condenses the oldest stretch of the conversation into the state ledger (`plan`) and freezes
//! it; it answers token counts and "too long" retries, keeps the figures (`stats`) and the books
//! of what condensing saved, net of the cache re-written (`books`, priced by
//! [`crate::billing`]), and saves and loads its state (`state`). A session can be replayed
//! through it (`replay`). With the `native` provider the same range is also summarized by an
//! LLM in the background (`summaries`): the host runs the job, and the summary replaces the
//! ledger-only condensation from the next request on (under `cache-aware`, from the first request
//! where that costs nothing more).

mod books;
mod controls;
mod count;
mod decide;
mod dialect;
#[cfg(test)]
mod fixtures;
mod freeze;
mod guard;
mod host;
mod http;
mod jobs;
mod plan;
mod recall;
mod replay;
mod session_key;
mod sessions;
mod setup;
mod state;
mod stats;
mod summaries;
#[cfg(test)]
mod tests;
mod usage;
mod windows;

pub use controls::{GatewayCondensation, GatewayPreview, GatewaySessionView, client_of};
pub use count::Counters;
pub use decide::{Decision, GATEWAY_PROVIDERS, Gateway, GatewayConfig, Prepared};
pub use dialect::{ArrayKind, Dialect, Request, gemini_model_and_method};
pub use freeze::{FreezeError, MARKER, neutralize, replacement};
pub use guard::{Guard, Refusal, check_listen};
pub use host::{Decided, HostGateway, Outgoing, Retry, Routed, Untouched};
pub use http::{
    BAD_PATH, CHATGPT_BACKEND, CONVERSATION_ACCEPT_ENCODING, COUNT_TOKENS, GEMINI_API, HOP_BY_HOP,
    MAX_BODY_BYTES, NEVER_UPSTREAM, NOT_FOUND, Route, SESSION_HEADER, SHOWN_CHARS, TOKEN_HEADER, Upstreams,
    Wire, answer_headers, connection_named, error_body, forwards_answer, forwards_upstream, leaves_its_route,
    log_line, may_be_too_long, route, says_too_long, shown, upstream_headers, upstream_origin,
};
pub use jobs::{MAX_PENDING_SUMMARIES, SummaryDone, SummaryJob, summary_line};
pub use recall::{RECALL_SESSION_BYTES, RecallConfig, RecallOp};
pub use replay::{GatewayReplay, GatewayReplayReport, replay_through_gateway};
pub use session_key::{SessionKey, fnv1a, session_key};
pub use sessions::{Continuity, Forward, Frozen, Limits, Sessions};
pub use setup::{SetupClient, TerminalVariable, claude_read_rule, setup_text, terminal_variables};
pub use state::{
    STATE_VERSION, SavedFiles, SessionFile, SetAside, Snapshot, StateChanges, StateError, StateFiles,
    session_file_name,
};
pub use stats::{
    CondensationNote, GatewayPolicy, GatewayReport, GatewayStats, GatewayUsage, ReportConfig, SessionStats,
};
pub use summaries::summarize;
pub use usage::{MAX_JSON_COPY, UsageReader};
pub use windows::{DEFAULT_WINDOW, window_for};

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
