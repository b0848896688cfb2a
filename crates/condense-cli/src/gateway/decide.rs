//! The one place the gateway host meets the core (`condense_core::gateway::HostGateway`, which
//! decides everything: who may ask, where a request goes, the bytes to forward, the counts, the
//! retry after "prompt too long"). Everything else in `gateway/` is transport.
//!
//! The core is called under `catch_unwind`: a panic in it forwards the client's bytes untouched,
//! starts the core's sessions afresh and records why (fail open).
//!
//! Nothing here sees a header other than the session header, the user agent and the gateway's
//! own Host, Origin and token: the client's credentials never reach the state, the statistics or
//! the persisted file.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use condense_core::gateway::{
    Counters, Decided, GatewayConfig, GatewayUsage, Guard, HostGateway, Outgoing, Prepared, Retry, Routed,
    Snapshot, SummaryDone, SummaryJob, Untouched, Upstreams, Wire,
};
use condense_core::llm::LlmProfile;
use tokio::sync::Notify;

/// The gateway's whole state, behind one lock.
pub(crate) struct GatewayState {
    host: HostGateway,
}

impl GatewayState {
    /// A state with no sessions; the configuration's checks fail here.
    pub(crate) fn new(config: GatewayConfig, upstreams: Upstreams, guard: Guard) -> Result<Self, String> {
        Ok(GatewayState { host: HostGateway::new(config, upstreams, guard)? })
    }

    /// Runs `f` on the core; a panic in it starts the core afresh (its sessions may be half
    /// updated) and is reported as `None`.
    fn core<R>(&mut self, f: impl FnOnce(&mut HostGateway) -> R) -> Option<R> {
        match catch_unwind(AssertUnwindSafe(|| f(&mut self.host))) {
            Ok(r) => Some(r),
            Err(_) => {
                self.host.restart("the core failed on a request; its sessions were started afresh");
                None
            }
        }
    }
}

/// The state behind its lock, and the signal the saver waits on: what the requests and the
/// summaries' tasks share; and the core's counters, which a request is read and counted with
/// before the lock is taken ([`prepare`]).
pub(crate) struct SharedState {
    state: Mutex<GatewayState>,
    /// Told after each change of the state; the saver writes it.
    pub(crate) changed: Notify,
    counters: Arc<Counters>,
}

impl SharedState {
    pub(crate) fn new(state: GatewayState) -> Self {
        let counters = state.host.counters();
        SharedState { state: Mutex::new(state), changed: Notify::new(), counters }
    }

    /// Reads and counts a request without the state's lock (see [`HostGateway::prepare`]): the
    /// work that grows with the request's size, so that another session's request never waits
    /// on it. On a thread the runtime may block ([`tokio::task::block_in_place`]).
    pub(crate) fn prepare<'a>(&self, method: &str, path: &str, body: &'a [u8]) -> Option<Prepared<'a>> {
        let read =
            || catch_unwind(AssertUnwindSafe(|| HostGateway::prepare(&self.counters, method, path, body)));
        // A panic here is the core's on this request: it is decided (and failed open) under the lock.
        match tokio::runtime::Handle::try_current() {
            Ok(_) => tokio::task::block_in_place(read),
            Err(_) => read(),
        }
        .ok()
        .flatten()
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, GatewayState> {
        // A panic while the lock was held was caught or ended its request; the counts are
        // still sound, and the gateway keeps serving.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The address bound, which the guard takes as the gateway's own.
pub(crate) fn bound(state: &mut GatewayState, address: std::net::SocketAddr) {
    state.host.bound(address);
}

/// Where a request goes, after the guard saw its Host, Origin and token.
pub(crate) fn route(
    state: &GatewayState,
    method: &str,
    path_and_query: &str,
    host: Option<&str>,
    origin: Option<&str>,
    token: Option<&[u8]>,
) -> Routed {
    state.host.route(method, path_and_query, host, origin, token)
}

/// Decides what to forward for a request to `path` (the upstream path, query included), and
/// hands over the summaries it queued and the recall files to write before sending. Never
/// fails: what the core cannot do, it does not do.
pub(crate) fn decide(
    state: &mut GatewayState,
    method: &str,
    path: &str,
    header_session: Option<&str>,
    user_agent: Option<&str>,
    body: &[u8],
    prepared: Option<Prepared<'_>>,
) -> Decided {
    let now = now_ms();
    // A request not prepared (its preparation failed) is prepared here, where a panic fails open.
    let decided =
        state.core(|h| h.decide_prepared(method, path, header_session, user_agent, body, prepared, now));
    decided.unwrap_or_else(|| {
        let why = state.host.last_failed_open().unwrap_or_default().to_owned();
        Decided {
            outgoing: Outgoing::Client { session: None, reason: Untouched::Failed(why) },
            jobs: Vec::new(),
            recall: Vec::new(),
            bill: None,
        }
    })
}

/// The wall clock in milliseconds since the Unix epoch: the time of a request, which the core's
/// books price the prompt cache's lifetimes by.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Anthropic's `count_tokens` answered for the request as it will be forwarded (the JSON body),
/// or `None` to pass the request on for the upstream's exact count.
pub(crate) fn count_tokens(
    state: &mut GatewayState,
    wire: Wire,
    method: &str,
    path: &str,
    header_session: Option<&str>,
    body: &[u8],
) -> Option<String> {
    state.core(|h| h.count_tokens(wire, method, path, header_session, body)).flatten()
}

/// The body to retry with once (and the recall files to write first), after the upstream
/// answered `status` with `answer` saying that the prompt is too long; `None` to pass the answer
/// through.
pub(crate) fn too_long(
    state: &mut GatewayState,
    session: &str,
    status: u16,
    answer: &[u8],
    client_body: &[u8],
) -> Option<Retry> {
    state.core(|h| h.too_long(session, status, answer, client_body)).flatten()
}

/// The recall file at `path` of `session` could not be written, for `why`.
pub(crate) fn recall_failed(state: &mut GatewayState, session: &str, path: &str, why: &str) {
    state.core(|h| h.recall_failed(session, path, why));
}

/// Adds what an answer of `session` reported to its statistics, with its request's bill.
pub(crate) fn usage(state: &mut GatewayState, session: &str, bill: Option<u64>, usage: GatewayUsage) {
    state.core(|h| h.usage(session, bill, usage));
}

/// A summary's outcome; whether the session's next request carries it.
pub(crate) fn summary_done(state: &mut GatewayState, id: u64, outcome: Result<SummaryDone, String>) -> bool {
    state.core(|h| h.gateway().summary_done(id, outcome)).unwrap_or(false)
}

/// The profile that writes `job` with the request's own model at its upstream.
pub(crate) fn upstream_profile(state: &mut GatewayState, job: &SummaryJob) -> LlmProfile {
    let upstreams = state.host.upstreams().clone();
    state.host.gateway().upstream_profile(job, &upstreams)
}

/// The state to persist as it is now: taken under the lock without copying a message, and
/// written after it is released (`Snapshot::files`), so that a save of large sessions holds no
/// request up.
pub(crate) fn snapshot(state: &GatewayState) -> Snapshot {
    state.host.snapshot()
}

/// Restores what the store read: the index (or a whole state of one file) and the session
/// files. A state of another version or shape, or a half-written one, is refused with the
/// reason, and the gateway starts empty; a bad session is set aside and the others load.
pub(crate) fn load(
    state: &mut GatewayState,
    index: Option<&[u8]>,
    files: &[condense_core::gateway::SessionFile],
) -> Result<Vec<condense_core::gateway::SetAside>, condense_core::gateway::StateError> {
    state.host.load_files(index, files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(observe: bool) -> GatewayState {
        let guard = Guard { bound: "127.0.0.1:4141".parse().unwrap(), token: None };
        let config = GatewayConfig { observe, ..GatewayConfig::default() };
        let upstreams = Upstreams {
            anthropic: "http://127.0.0.1:9".into(),
            openai: "http://127.0.0.1:9".into(),
            gemini: "http://127.0.0.1:9".into(),
            chatgpt: "http://127.0.0.1:9".into(),
        };
        GatewayState::new(config, upstreams, guard).unwrap()
    }

    const CHAT: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;

    /// `GET /stats`, parsed.
    fn stats(state: &GatewayState) -> serde_json::Value {
        let Routed::Answer { status: 200, body } =
            route(state, "GET", "/stats", Some("127.0.0.1:4141"), None, None)
        else {
            panic!("no statistics")
        };
        serde_json::from_str(&body).unwrap()
    }

    fn post(state: &mut GatewayState, path: &str, session: Option<&str>, body: &[u8]) -> Outgoing {
        decide(state, "POST", path, session, Some("claude-cli/2.1.332"), body, None).outgoing
    }

    #[test]
    fn a_conversation_is_forwarded_as_the_client_sent_it_and_counted() {
        let mut state = state(false);
        let out = post(&mut state, "/v1/chat/completions", Some("s1"), CHAT.as_bytes());
        assert!(matches!(&out, Outgoing::Client { reason: Untouched::Unchanged, .. }), "{out:?}");
        let session = out.session().unwrap().to_owned();
        let usage_seen = GatewayUsage { input: 3, output: 2, cache_read: 1, ..GatewayUsage::default() };
        usage(&mut state, &session, None, usage_seen);
        let s = stats(&state);
        assert_eq!(s["sessions"][&session]["requests"], 1, "{s}");
        assert_eq!(s["sessions"][&session]["client"], "Claude Code", "{s}");
        assert_eq!(s["totals"]["requests"], 1, "{s}");
    }

    #[test]
    fn what_the_core_cannot_read_fails_open() {
        let mut state = state(false);
        let out = post(&mut state, "/v1/messages", None, b"{not json");
        let Outgoing::Client { reason: Untouched::Failed(why), .. } = out else { panic!("{out:?}") };
        assert!(why.contains("not JSON"), "{why}");
        let other = post(&mut state, "/v1/models", None, b"");
        assert!(matches!(other, Outgoing::Client { reason: Untouched::NotAConversation, session: None }));
        assert_eq!(stats(&state)["passed_through"], 1);
    }

    #[test]
    fn observe_mode_forwards_the_clients_bytes() {
        let mut state = state(true);
        let out = post(&mut state, "/v1/chat/completions", None, CHAT.as_bytes());
        assert!(matches!(out, Outgoing::Client { reason: Untouched::Observed(_), .. }), "{out:?}");
    }

    #[test]
    fn routes_answer_health_and_refuse_other_hosts() {
        let state = state(false);
        let host = Some("127.0.0.1:4141");
        assert!(matches!(
            route(&state, "GET", "/healthz", host, None, None),
            Routed::Answer { status: 200, .. }
        ));
        assert!(matches!(
            route(&state, "GET", "/healthz", Some("evil:4141"), None, None),
            Routed::Answer { status: 403, .. }
        ));
        let Routed::Upstream { wire, url, path } =
            route(&state, "POST", "/anthropic/v1/messages?beta=true", host, None, None)
        else {
            panic!("not routed upstream")
        };
        assert_eq!(
            (wire, url.as_str(), path.as_str()),
            (Wire::Anthropic, "http://127.0.0.1:9/v1/messages?beta=true", "/v1/messages?beta=true")
        );
    }

    #[test]
    fn the_saved_state_comes_back_and_another_shape_is_refused() {
        let mut first = state(false);
        post(&mut first, "/v1/chat/completions", Some("s1"), CHAT.as_bytes());
        let files = snapshot(&first).files();
        let mut again = state(false);
        load(&mut again, Some(&files.index), &files.sessions).unwrap();
        assert_eq!(stats(&again)["sessions"], stats(&first)["sessions"]);
        let half = &files.index[..files.index.len() / 2];
        assert!(load(&mut again, Some(half), &[]).is_err(), "a half-written state is refused");
        let aside = load(&mut again, Some(half), &files.sessions).unwrap();
        assert_eq!(aside.len(), 1, "beside session files, a half-written index is set aside");
        assert_eq!(stats(&again)["sessions"], stats(&first)["sessions"], "and the sessions load");
    }
}
