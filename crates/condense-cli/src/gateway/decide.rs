//! The one place the gateway host meets the core's gateway: a request's decision, the usage an
//! answer reported, the statistics, and the state to persist. Everything else in `gateway/`
//! is transport; swapping the core's `Sessions` for its coming `Gateway` changes this file alone.
//!
//! The decision fails open: an error of the core, or a panic in it, forwards the client's bytes
//! untouched and records why. In observe mode the core still follows every session (so that its
//! record of what it would have done is true), and the client's bytes go out.
//!
//! Nothing here sees a header other than the session header: the client's credentials never
//! reach the state, the statistics or the persisted file.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use condense_core::gateway::{Dialect, Limits, Sessions};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What the operator asked the core to condense with. Today's core forwards and replays without
/// condensing; these are held, checked at start and shown by `/stats`, for the core that does.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Policy {
    /// The condensation provider's id.
    pub(crate) provider: String,
    /// The share of a model's window at which a session is condensed, in percent.
    pub(crate) threshold_percent: u8,
    /// Context windows by model, overriding the core's table.
    pub(crate) windows: BTreeMap<String, usize>,
    /// Whether requests are only observed.
    pub(crate) observe: bool,
}

/// Tokens an answer reported, as the upstream counted them. `input` is the uncached input in
/// every dialect (OpenAI's `prompt_tokens` less its cached tokens), so that the four add up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Usage {
    pub(crate) input: u64,
    pub(crate) output: u64,
    pub(crate) cache_read: u64,
    pub(crate) cache_write: u64,
}

impl Usage {
    fn add(&mut self, other: Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
    }
}

/// What the gateway did for one session, kept across restarts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct SessionStats {
    requests: u64,
    /// Bytes of request bodies the client sent, and the gateway forwarded.
    client_bytes: u64,
    forwarded_bytes: u64,
    /// Requests into which frozen condensations were spliced.
    replayed: u64,
    /// Requests the core could not read, forwarded untouched.
    failed_open: u64,
    /// In observe mode: requests the gateway would have changed.
    would_change: u64,
    usage: Usage,
    /// The last reason a request went out untouched.
    last_untouched: Option<String>,
}

/// The most sessions whose statistics are kept; the least recently active go first.
const MAX_STATS_SESSIONS: usize = 1024;

/// The gateway's whole state: the core's sessions and the host's counts, behind one lock.
#[derive(Debug)]
pub(crate) struct GatewayState {
    policy: Policy,
    sessions: Sessions,
    stats: BTreeMap<String, SessionStats>,
    /// The order sessions were last active in, for evicting statistics: session → tick.
    active: BTreeMap<String, u64>,
    tick: u64,
    /// Requests under the prefixes that were not conversations (model lists, token counts).
    passed_through: u64,
}

/// Why a request went out as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Untouched {
    /// Not a conversation the core reads (another path, or not a POST).
    NotAConversation,
    /// The core could not read it, or failed on it: forwarded untouched (fail open).
    Failed(String),
    /// Observe mode: the core's decision is recorded, not applied.
    Observed {
        /// Whether the core would have changed the body.
        would_change: bool,
    },
    /// The core had nothing to change.
    Unchanged,
}

/// The body to send upstream for one request.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// The client's own bytes.
    Client { session: Option<String>, reason: Untouched },
    /// A body the core rebuilt (condensations spliced in).
    Rewritten { session: String, body: Vec<u8> },
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
    /// A state with no sessions.
    pub(crate) fn new(policy: Policy) -> GatewayState {
        GatewayState {
            policy,
            sessions: Sessions::new(Limits::default()),
            stats: BTreeMap::new(),
            active: BTreeMap::new(),
            tick: 0,
            passed_through: 0,
        }
    }

    /// The statistics of `session`, marked as the most recently active; the least recently
    /// active are forgotten past [`MAX_STATS_SESSIONS`].
    fn session_stats(&mut self, session: &str) -> &mut SessionStats {
        self.tick += 1;
        self.active.insert(session.to_owned(), self.tick);
        if !self.stats.contains_key(session) && self.stats.len() >= MAX_STATS_SESSIONS {
            let oldest = self.active.iter().filter(|(s, _)| *s != session).min_by_key(|(_, t)| **t);
            if let Some(oldest) = oldest.map(|(s, _)| s.clone()) {
                self.stats.remove(&oldest);
                self.active.remove(&oldest);
            }
        }
        self.stats.entry(session.to_owned()).or_default()
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
    let Some(dialect) = Dialect::from_path(path) else {
        state.passed_through += 1;
        return Outgoing::Client { session: None, reason: Untouched::NotAConversation };
    };
    let observe = state.policy.observe;
    let sessions = &mut state.sessions;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        sessions.forward(dialect, body, header_session).map(|f| {
            let rewritten = match f.body {
                std::borrow::Cow::Borrowed(_) => None,
                std::borrow::Cow::Owned(text) => Some(text.into_bytes()),
            };
            (f.session.to_string(), rewritten)
        })
    }));
    let (session, rewritten) = match outcome {
        Ok(Ok(decided)) => decided,
        Ok(Err(e)) => return failed_open(state, header_session, e.to_string()),
        Err(_) => {
            // A panic may have left the sessions half updated: start them afresh rather than
            // replay a condensation from a store in an unknown state.
            state.sessions = Sessions::new(Limits::default());
            return failed_open(state, header_session, "the core failed on this request".into());
        }
    };
    let stats = state.session_stats(&session);
    stats.requests += 1;
    stats.client_bytes += body.len() as u64;
    match rewritten {
        Some(body) if !observe => {
            stats.replayed += 1;
            stats.forwarded_bytes += body.len() as u64;
            Outgoing::Rewritten { session, body }
        }
        other => {
            stats.forwarded_bytes += body.len() as u64;
            let reason = if observe {
                let would_change = other.is_some();
                stats.would_change += u64::from(would_change);
                Untouched::Observed { would_change }
            } else {
                Untouched::Unchanged
            };
            Outgoing::Client { session: Some(session), reason }
        }
    }
}

/// Records a request forwarded untouched because the core could not handle it. Its session is
/// the header's when given, else one bucket for all such requests.
fn failed_open(state: &mut GatewayState, header_session: Option<&str>, why: String) -> Outgoing {
    let session = match header_session.map(str::trim).filter(|h| !h.is_empty()) {
        Some(h) => format!("header:{h}"),
        None => "unread".to_owned(),
    };
    let stats = state.session_stats(&session);
    stats.requests += 1;
    stats.failed_open += 1;
    stats.last_untouched = Some(why.clone());
    Outgoing::Client { session: Some(session), reason: Untouched::Failed(why) }
}

/// Adds what an answer of `session` reported to its statistics.
pub(crate) fn usage(state: &mut GatewayState, session: &str, usage: Usage) {
    state.session_stats(session).usage.add(usage);
}

/// The statistics as JSON: the policy, the totals, and each session's counts.
pub(crate) fn stats(state: &GatewayState) -> Value {
    let mut total = SessionStats::default();
    for s in state.stats.values() {
        total.requests += s.requests;
        total.client_bytes += s.client_bytes;
        total.forwarded_bytes += s.forwarded_bytes;
        total.replayed += s.replayed;
        total.failed_open += s.failed_open;
        total.would_change += s.would_change;
        total.usage.add(s.usage);
    }
    json!({
        "policy": state.policy,
        "held_sessions": state.sessions.len(),
        "held_bytes": state.sessions.bytes(),
        "passed_through": state.passed_through,
        "total": total,
        "sessions": state.stats,
    })
}

/// The version of the persisted state's layout; another version is not read back.
const STATE_VERSION: u64 = 1;

/// The state to persist, as JSON. The core's sessions are not persisted yet: today's core keeps
/// them in memory only, and rebuilds each one from the client's next request.
pub(crate) fn save(state: &GatewayState) -> Vec<u8> {
    let saved =
        json!({ "version": STATE_VERSION, "stats": state.stats, "passed_through": state.passed_through });
    serde_json::to_vec(&saved).expect("JSON values serialize")
}

/// Restores what [`save`] wrote into a fresh state. A file of another version or shape is refused
/// with the reason, and the gateway starts empty.
pub(crate) fn load(state: &mut GatewayState, bytes: &[u8]) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Saved {
        version: u64,
        stats: BTreeMap<String, SessionStats>,
        #[serde(default)]
        passed_through: u64,
    }
    let saved: Saved = serde_json::from_slice(bytes).map_err(|e| format!("not a gateway state: {e}"))?;
    if saved.version != STATE_VERSION {
        return Err(format!("state version {} (this gateway reads {STATE_VERSION})", saved.version));
    }
    state.passed_through = saved.passed_through;
    for (session, stats) in saved.stats.into_iter().take(MAX_STATS_SESSIONS) {
        *state.session_stats(&session) = stats;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(observe: bool) -> Policy {
        Policy { provider: "smart".into(), threshold_percent: 80, windows: BTreeMap::new(), observe }
    }

    const CHAT: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;

    #[test]
    fn a_conversation_is_forwarded_as_the_client_sent_it_and_counted() {
        let mut state = GatewayState::new(policy(false));
        let out = decide(&mut state, "/v1/chat/completions", Some("s1"), CHAT.as_bytes());
        assert!(matches!(&out, Outgoing::Client { reason: Untouched::Unchanged, .. }), "{out:?}");
        assert_eq!(out.session(), Some("header:s1"));
        usage(&mut state, "header:s1", Usage { input: 3, output: 2, cache_read: 1, cache_write: 0 });
        let s = stats(&state);
        assert_eq!(s["sessions"]["header:s1"]["requests"], 1);
        assert_eq!(s["total"]["usage"]["output"], 2);
        assert_eq!(s["total"]["client_bytes"], CHAT.len());
    }

    #[test]
    fn what_the_core_cannot_read_fails_open() {
        let mut state = GatewayState::new(policy(false));
        let out = decide(&mut state, "/v1/messages", None, b"{not json");
        let Outgoing::Client { reason: Untouched::Failed(why), .. } = out else { panic!("{out:?}") };
        assert!(why.contains("not JSON"), "{why}");
        assert_eq!(stats(&state)["sessions"]["unread"]["failed_open"], 1);
        let other = decide(&mut state, "/v1/models", None, b"");
        assert!(matches!(other, Outgoing::Client { reason: Untouched::NotAConversation, session: None }));
        assert_eq!(stats(&state)["passed_through"], 1);
    }

    #[test]
    fn observe_mode_forwards_the_clients_bytes() {
        let mut state = GatewayState::new(policy(true));
        let out = decide(&mut state, "/v1/responses", None, br#"{"input":"hi"}"#);
        assert!(matches!(out, Outgoing::Client { reason: Untouched::Observed { would_change: false }, .. }));
    }

    #[test]
    fn the_saved_state_comes_back_and_another_shape_is_refused() {
        let mut state = GatewayState::new(policy(false));
        decide(&mut state, "/v1/chat/completions", Some("s1"), CHAT.as_bytes());
        let bytes = save(&state);
        let mut again = GatewayState::new(policy(false));
        load(&mut again, &bytes).unwrap();
        assert_eq!(stats(&again)["sessions"], stats(&state)["sessions"]);
        assert!(load(&mut again, br#"{"version":99,"stats":{}}"#).unwrap_err().contains("version 99"));
        assert!(load(&mut again, b"{\"version\":1,\"sta").is_err());
    }

    #[test]
    fn statistics_are_bounded() {
        let mut state = GatewayState::new(policy(false));
        for i in 0..MAX_STATS_SESSIONS + 10 {
            usage(&mut state, &format!("s{i}"), Usage::default());
        }
        assert_eq!(state.stats.len(), MAX_STATS_SESSIONS);
        assert!(!state.stats.contains_key("s0"), "the least recently active went first");
    }
}
