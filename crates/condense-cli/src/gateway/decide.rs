//! The one place the gateway host meets the core's gateway (`condense_core::gateway::Gateway`,
//! which decides everything: the session, what to condense, the bytes to forward, the counts):
//! a request's decision, a token count, a retry after "prompt too long", the usage an answer
//! reported, the statistics, and the state to persist. Everything else in `gateway/` is
//! transport.
//!
//! The decision fails open: an error of the core, or a panic in it, forwards the client's bytes
//! untouched and records why. In observe mode the core still follows every session (so that its
//! record of what it would have done is true), and the client's bytes go out.
//!
//! Nothing here sees a header other than the session header: the client's credentials never
//! reach the state, the statistics or the persisted file.

use std::panic::{AssertUnwindSafe, catch_unwind};

use condense_core::gateway::{
    Decision, Dialect, Gateway, GatewayConfig, GatewayUsage, SummaryDone, SummaryJob,
};
use condense_core::llm::LlmProfile;
use serde_json::{Value, json};

/// The gateway's whole state: the core's gateway and what only the host sees, behind one lock.
pub(crate) struct GatewayState {
    gateway: Gateway,
    /// Requests under the prefixes that were not conversations (model lists, token counts).
    passed_through: u64,
    /// Requests forwarded untouched because the core could not read them or failed on them
    /// (fail open), and the last reason.
    failed_open: u64,
    last_failed_open: Option<String>,
}

/// Why a request went out as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Untouched {
    /// Not a conversation the core reads (another path, or not a POST).
    NotAConversation,
    /// The core could not read it, or failed on it: forwarded untouched (fail open).
    Failed(String),
    /// Observe mode: the core's decision is recorded, not applied.
    Observed(String),
    /// The core had nothing to change.
    Unchanged,
}

/// The body to send upstream for one request.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// The client's own bytes.
    Client { session: Option<String>, reason: Untouched },
    /// A body the core rebuilt (condensations spliced in); `condensed_now` when this request
    /// made a new one.
    Rewritten { session: String, body: Vec<u8>, condensed_now: bool },
}

impl Outgoing {
    /// The session the request belongs to, if the core found one.
    pub(crate) fn session(&self) -> Option<&str> {
        match self {
            Outgoing::Client { session, .. } => session.as_deref(),
            Outgoing::Rewritten { session, .. } => Some(session),
        }
    }
}

impl GatewayState {
    /// Records a request forwarded untouched because the core could not handle it.
    fn fail_open(&mut self, why: String) -> Untouched {
        self.failed_open += 1;
        self.last_failed_open = Some(why.clone());
        Untouched::Failed(why)
    }

    /// A state with no sessions; the configuration's checks fail here.
    pub(crate) fn new(config: GatewayConfig) -> Result<GatewayState, String> {
        Ok(GatewayState {
            gateway: Gateway::new(config)?,
            passed_through: 0,
            failed_open: 0,
            last_failed_open: None,
        })
    }

    /// Runs `f` on the core; a panic in it starts the core afresh (its sessions may be half
    /// updated) and is reported as `None`.
    fn core<R>(&mut self, f: impl FnOnce(&mut Gateway) -> R) -> Option<R> {
        match catch_unwind(AssertUnwindSafe(|| f(&mut self.gateway))) {
            Ok(r) => Some(r),
            Err(_) => {
                let config = self.gateway.config().clone();
                self.gateway = Gateway::new(config).expect("the configuration was checked at start");
                self.fail_open("the core failed on a request; its sessions were started afresh".into());
                None
            }
        }
    }
}

/// Decides what to forward for a POST to `path` (the upstream path, query included) with the
/// client's `body` and session header. Never fails: what the core cannot do, it does not do.
pub(crate) fn decide(
    state: &mut GatewayState,
    path: &str,
    header_session: Option<&str>,
    body: &[u8],
) -> Outgoing {
    if Dialect::from_path(path).is_none() {
        state.passed_through += 1;
        return Outgoing::Client { session: None, reason: Untouched::NotAConversation };
    }
    let observe = state.gateway.config().observe;
    let Some(decision) = state.core(|g| g.request(path, header_session, body)) else {
        let why = state.last_failed_open.clone().unwrap_or_default();
        return Outgoing::Client { session: None, reason: Untouched::Failed(why) };
    };
    match decision {
        Decision::Forward { session, body: forwarded, condensed_now, .. } => {
            if forwarded == body {
                Outgoing::Client { session: Some(session), reason: Untouched::Unchanged }
            } else {
                Outgoing::Rewritten { session, body: forwarded, condensed_now }
            }
        }
        Decision::Untouched { session, reason } if observe => {
            Outgoing::Client { session, reason: Untouched::Observed(reason) }
        }
        Decision::Untouched { session, reason } => {
            Outgoing::Client { session, reason: state.fail_open(reason) }
        }
    }
}

/// Anthropic's `count_tokens` for a request body: the input tokens as the gateway would forward
/// it, or `None` to pass the request through for the upstream's exact count.
pub(crate) fn count_tokens(
    state: &mut GatewayState,
    header_session: Option<&str>,
    body: &[u8],
) -> Option<usize> {
    state.core(|g| g.count_tokens(header_session, body)).flatten()
}

/// The body to retry with once, after the upstream answered that the prompt is too long, or
/// `None` to pass the answer through.
pub(crate) fn too_long(state: &mut GatewayState, session: &str, body: &[u8]) -> Option<Vec<u8>> {
    state.core(|g| g.too_long(session, body)).flatten()
}

/// Adds what an answer of `session` reported to its statistics.
pub(crate) fn usage(state: &mut GatewayState, session: &str, usage: GatewayUsage) {
    state.core(|g| g.usage(session, usage));
}

/// Records the client a session's request came from, by its user agent.
pub(crate) fn seen_from(state: &mut GatewayState, session: &str, user_agent: &str) {
    state.core(|g| g.seen_from(session, user_agent));
}

/// The summaries the core queued (provider `native`), handed over once each.
pub(crate) fn take_jobs(state: &mut GatewayState) -> Vec<SummaryJob> {
    state.core(Gateway::take_jobs).unwrap_or_default()
}

/// A summary's outcome; whether the session's next request carries it.
pub(crate) fn summary_done(state: &mut GatewayState, id: u64, outcome: Result<SummaryDone, String>) -> bool {
    state.core(|g| g.summary_done(id, outcome)).unwrap_or(false)
}

/// The profile that writes `job` with the request's own model at its upstream.
pub(crate) fn upstream_profile(
    state: &GatewayState,
    job: &SummaryJob,
    anthropic: &str,
    openai: &str,
) -> LlmProfile {
    state.gateway.upstream_profile(job, anthropic, openai)
}

/// The statistics as JSON: the core's (the configuration, the totals, each session's counts)
/// and the host's (requests passed through, failures).
pub(crate) fn stats(state: &GatewayState) -> Value {
    let config = state.gateway.config();
    let mut out = serde_json::to_value(state.gateway.stats()).expect("statistics serialize");
    if let Some(o) = out.as_object_mut() {
        o.insert(
            "config".into(),
            json!({
                "provider": config.provider,
                "threshold": config.threshold,
                "windows": config.windows,
                "observe": config.observe,
            }),
        );
        o.insert("summaries_pending".into(), state.gateway.summaries_pending().into());
        o.insert("passed_through".into(), state.passed_through.into());
        o.insert("failed_open".into(), state.failed_open.into());
        o.insert("last_failed_open".into(), state.last_failed_open.clone().into());
    }
    out
}

/// Writes the state to persist to `out`: the core's (its sessions, their condensations and
/// counts), without a second copy of them in memory.
pub(crate) fn save_to(state: &GatewayState, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    state.gateway.save_to(out).map_err(std::io::Error::other)
}

/// Restores what [`save`] wrote. A file of another version or shape, or a half-written one, is
/// refused with the reason, and the gateway starts empty.
pub(crate) fn load(state: &mut GatewayState, bytes: &[u8]) -> Result<(), String> {
    state.gateway = Gateway::load(state.gateway.config().clone(), bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(observe: bool) -> GatewayState {
        GatewayState::new(GatewayConfig { observe, ..GatewayConfig::default() }).unwrap()
    }

    const CHAT: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;

    #[test]
    fn a_conversation_is_forwarded_as_the_client_sent_it_and_counted() {
        let mut state = state(false);
        let out = decide(&mut state, "/v1/chat/completions", Some("s1"), CHAT.as_bytes());
        assert!(matches!(&out, Outgoing::Client { reason: Untouched::Unchanged, .. }), "{out:?}");
        let session = out.session().unwrap().to_owned();
        usage(&mut state, &session, GatewayUsage { input: 3, output: 2, cache_read: 1, cache_write: 0 });
        let s = stats(&state);
        assert_eq!(s["sessions"][&session]["requests"], 1, "{s}");
        assert_eq!(s["totals"]["requests"], 1, "{s}");
    }

    #[test]
    fn what_the_core_cannot_read_fails_open() {
        let mut state = state(false);
        let out = decide(&mut state, "/v1/messages", None, b"{not json");
        let Outgoing::Client { reason: Untouched::Failed(why), .. } = out else { panic!("{out:?}") };
        assert!(why.contains("not JSON"), "{why}");
        let other = decide(&mut state, "/v1/models", None, b"");
        assert!(matches!(other, Outgoing::Client { reason: Untouched::NotAConversation, session: None }));
        assert_eq!(stats(&state)["passed_through"], 1);
    }

    #[test]
    fn observe_mode_forwards_the_clients_bytes() {
        let mut state = state(true);
        let out = decide(&mut state, "/v1/chat/completions", None, CHAT.as_bytes());
        assert!(matches!(out, Outgoing::Client { reason: Untouched::Observed(_), .. }), "{out:?}");
    }

    #[test]
    fn the_saved_state_comes_back_and_another_shape_is_refused() {
        let mut first = state(false);
        decide(&mut first, "/v1/chat/completions", Some("s1"), CHAT.as_bytes());
        let mut bytes = Vec::new();
        save_to(&first, &mut bytes).unwrap();
        let mut again = state(false);
        load(&mut again, &bytes).unwrap();
        assert_eq!(stats(&again)["sessions"], stats(&first)["sessions"]);
        assert!(load(&mut again, &bytes[..bytes.len() / 2]).is_err(), "a half-written file is refused");
    }
}
