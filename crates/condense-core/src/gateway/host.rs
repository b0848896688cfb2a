//! One gateway as a host runs it: the core's [`Gateway`] with the upstreams, the guard and the
//! host's own counts, and every step of a request a host takes, in order — [`HostGateway::route`]
//! (who may ask, and where it goes), [`HostGateway::count_tokens`], [`HostGateway::decide`] (the
//! bytes to forward), [`HostGateway::too_long`] (the retry), [`HostGateway::usage`] — so that
//! `condense gateway` (hyper) and the extension (Node's `http`, through wasm) are the same
//! gateway and differ only in how they move bytes. Nothing here reads a credential: the guard sees
//! the gateway's own token, the decision the body and the session header.

use serde_json::json;

use std::sync::Arc;

use super::count::Counters;
use super::decide::{Decision, Gateway, GatewayConfig, Prepared};
use super::dialect::Dialect;
use super::dialect::gemini_model_and_method;
use super::guard::Guard;
use super::http::{
    BAD_PATH, COUNT_TOKENS, NOT_FOUND, Route, SHOWN_CHARS, Upstreams, Wire, error_body, may_be_too_long,
    route, says_too_long, shown,
};
use super::jobs::SummaryJob;
use super::recall::RecallOp;
use super::state::{SessionFile, SetAside, Snapshot, StateError};
use super::stats::{GatewayReport, GatewayUsage, ReportConfig};

/// Why a request went out as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Untouched {
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// The client's own bytes.
    Client {
        /// The session, when the request was read.
        session: Option<String>,
        /// Why.
        reason: Untouched,
    },
    /// A body the core rebuilt (condensations spliced in); `condensed_now` when the forwarded
    /// conversation changed before its end for this request.
    Rewritten {
        /// The session.
        session: String,
        /// The body to send (UTF-8 JSON).
        body: String,
        /// See [`Decision::Forward`].
        condensed_now: bool,
        /// Tokens of the request as the client sent it, and as forwarded.
        tokens: (usize, usize),
    },
}

impl Outgoing {
    /// The session the request belongs to, if the core found one.
    pub fn session(&self) -> Option<&str> {
        match self {
            Outgoing::Client { session, .. } => session.as_deref(),
            Outgoing::Rewritten { session, .. } => Some(session),
        }
    }

    /// What the host's log says went out (never a header).
    pub fn describe(&self) -> String {
        match self {
            Outgoing::Rewritten { condensed_now: true, tokens: (client, forwarded), .. } => {
                let saved = client.saturating_sub(*forwarded);
                format!("condensed now: {client} → {forwarded} tokens ({saved} not sent)")
            }
            Outgoing::Rewritten { .. } => "condensations replayed".into(),
            Outgoing::Client { reason: Untouched::NotAConversation, .. } => "passed through".into(),
            Outgoing::Client { reason: Untouched::Unchanged, .. } => "the client's body".into(),
            Outgoing::Client { reason: Untouched::Observed(what), .. } => shown(what, 2 * SHOWN_CHARS),
            Outgoing::Client { reason: Untouched::Failed(why), .. } => {
                format!("forwarded untouched: {}", shown(why, 2 * SHOWN_CHARS))
            }
        }
    }
}

/// What the host does with a request the core decided.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The body to send upstream.
    pub outgoing: Outgoing,
    /// The summaries to write in the background (provider `native`).
    pub jobs: Vec<SummaryJob>,
    /// What to write and remove on disk for the recall files, done before the request is sent:
    /// a condensation made now names its file, which must be there when the model reads the
    /// request.
    pub recall: Vec<RecallOp>,
    /// The bill to hand back with the answer's usage ([`HostGateway::usage`]), for a request the
    /// gateway decided.
    pub bill: Option<u64>,
}

/// The body to retry with after the upstream said "prompt too long", and the recall files to
/// write before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    /// The body (UTF-8 JSON).
    pub body: String,
    /// See [`Decided::recall`].
    pub recall: Vec<RecallOp>,
    /// The retry's bill (see [`Decided::bill`]).
    pub bill: u64,
}

/// Where a request goes, after the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    /// Answer it at once: the status and the JSON body.
    Answer {
        /// HTTP status.
        status: u16,
        /// The JSON body.
        body: String,
    },
    /// To an upstream (see [`Route::Upstream`]).
    Upstream {
        /// The API.
        wire: Wire,
        /// The full URL.
        url: String,
        /// The path after the route's prefix, query included (what the core reads).
        path: String,
    },
}

/// The gateway a host runs.
#[derive(Debug)]
pub struct HostGateway {
    gateway: Gateway,
    upstreams: Upstreams,
    guard: Guard,
    /// Requests under the prefixes that were not conversations (model lists, token counts).
    passed_through: u64,
    /// Requests forwarded untouched because the core could not read them or failed on them
    /// (fail open), and the last reason.
    failed_open: u64,
    last_failed_open: Option<String>,
}

impl HostGateway {
    /// A gateway with no sessions, for the upstreams' origins (see [`super::upstream_origin`])
    /// behind `guard`; the configuration's checks fail here.
    pub fn new(config: GatewayConfig, upstreams: Upstreams, guard: Guard) -> Result<Self, String> {
        let mut gateway = Gateway::new(config)?;
        gateway.lean = true;
        Ok(HostGateway {
            gateway,
            upstreams,
            guard,
            passed_through: 0,
            failed_open: 0,
            last_failed_open: None,
        })
    }

    /// The address the host listens on, once bound (port 0 picks one): the guard's own.
    pub fn bound(&mut self, address: std::net::SocketAddr) {
        self.guard.bound = address;
    }

    /// The configuration the core runs with.
    pub fn gateway_config(&self) -> &GatewayConfig {
        self.gateway.config()
    }

    /// The core's gateway, for the session controls and the summaries.
    pub fn gateway(&mut self) -> &mut Gateway {
        &mut self.gateway
    }

    /// The upstreams' origins.
    pub fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }

    /// Starts the core afresh after it failed (a host that caught a panic in it), counting why.
    pub fn restart(&mut self, why: &str) {
        let config = self.gateway.config().clone();
        let counters = self.gateway.counters();
        self.gateway = Gateway::new(config).expect("the configuration was checked at start");
        // The host's copy stays the one counted with (counts are the text's, whoever made them).
        self.gateway.counters = counters;
        self.gateway.lean = true;
        self.fail_open(why.to_owned());
    }

    /// The counters the gateway counts with: a host holds a copy, to [`HostGateway::prepare`]
    /// requests before it takes the gateway's lock.
    pub fn counters(&self) -> Arc<Counters> {
        self.gateway.counters()
    }

    /// What can be made of a request without the gateway (see [`Gateway::prepare`]): `None` for
    /// one [`HostGateway::decide_prepared`] does not read (not a POST, not a conversation).
    pub fn prepare<'a>(
        counters: &Counters,
        method: &str,
        path: &str,
        body: &'a [u8],
    ) -> Option<Prepared<'a>> {
        (method == "POST" && Dialect::from_path(path).is_some())
            .then(|| Gateway::prepare(counters, path, body))
    }

    fn fail_open(&mut self, why: String) -> Untouched {
        self.failed_open += 1;
        self.last_failed_open = Some(shown(&why, 2 * SHOWN_CHARS));
        Untouched::Failed(why)
    }

    /// The last reason a request was forwarded untouched.
    pub fn last_failed_open(&self) -> Option<&str> {
        self.last_failed_open.as_deref()
    }

    /// Routes a request by its method and path (query included), after the guard has seen its
    /// `Host`, `Origin` and token headers. Health and statistics are answered here.
    pub fn route(
        &self,
        method: &str,
        path_and_query: &str,
        host: Option<&str>,
        origin: Option<&str>,
        token: Option<&[u8]>,
    ) -> Routed {
        let routed = route(&self.upstreams, path_and_query);
        let wire = match &routed {
            Route::Upstream { wire, .. } => Some(*wire),
            _ => None,
        };
        if let Err(refusal) = self.guard.check(host, origin, token) {
            let (status, message) = Guard::refusal(refusal);
            return Routed::Answer { status, body: error_body(wire, status, &message) };
        }
        let get = method == "GET";
        match routed {
            Route::Health if get => {
                Routed::Answer { status: 200, body: json!({ "status": "ok" }).to_string() }
            }
            Route::Stats if get => {
                let body = serde_json::to_string(&self.report()).expect("the report serializes");
                Routed::Answer { status: 200, body }
            }
            Route::Health | Route::Stats => {
                Routed::Answer { status: 405, body: error_body(None, 405, "use GET") }
            }
            Route::BadPath => Routed::Answer { status: 400, body: error_body(None, 400, BAD_PATH) },
            Route::NotFound => Routed::Answer { status: 404, body: error_body(None, 404, NOT_FOUND) },
            Route::Upstream { wire, url, path } => Routed::Upstream { wire, url, path },
        }
    }

    /// A token count (Anthropic's `count_tokens`, Gemini's `:countTokens`), answered for the
    /// request as it will be forwarded: the JSON body to answer with, or `None` to pass the
    /// request on for the upstream's exact count.
    pub fn count_tokens(
        &mut self,
        wire: Wire,
        method: &str,
        path: &str,
        session_header: Option<&str>,
        body: &[u8],
    ) -> Option<String> {
        if method != "POST" {
            return None;
        }
        match wire {
            Wire::Anthropic if path.starts_with(COUNT_TOKENS) => {
                let tokens =
                    self.gateway.count_tokens(Dialect::AnthropicMessages, None, session_header, body)?;
                Some(json!({ "input_tokens": tokens }).to_string())
            }
            Wire::Gemini => {
                let (model, method) = gemini_model_and_method(path)?;
                if method != "countTokens" {
                    return None;
                }
                let tokens = self.gateway.count_tokens(Dialect::Gemini, Some(model), session_header, body)?;
                Some(json!({ "totalTokens": tokens }).to_string())
            }
            _ => None,
        }
    }

    /// Decides what to forward for a request to `path` (the upstream path, query included) with
    /// the client's `body`, session header and user agent, received at `now_ms` (the host's
    /// clock, milliseconds since the Unix epoch), and hands over the summaries it queued
    /// (provider `native`), the recall files to write first and the request's bill. Never fails:
    /// what the core cannot do, it does not do.
    pub fn decide(
        &mut self,
        method: &str,
        path: &str,
        session_header: Option<&str>,
        user_agent: Option<&str>,
        body: &[u8],
        now_ms: i64,
    ) -> Decided {
        self.decide_prepared(method, path, session_header, user_agent, body, None, now_ms)
    }

    /// [`HostGateway::decide`] of a request [`HostGateway::prepare`] read (given the same
    /// method, path and body); `None`: prepared here.
    #[allow(clippy::too_many_arguments)]
    pub fn decide_prepared(
        &mut self,
        method: &str,
        path: &str,
        session_header: Option<&str>,
        user_agent: Option<&str>,
        body: &[u8],
        prepared: Option<Prepared<'_>>,
        now_ms: i64,
    ) -> Decided {
        let other = Decided {
            outgoing: Outgoing::Client { session: None, reason: Untouched::NotAConversation },
            jobs: Vec::new(),
            recall: Vec::new(),
            bill: None,
        };
        if method != "POST" {
            return other;
        }
        // `prepare` reads conversations alone: `None` is another path.
        let Some(prepared) =
            prepared.or_else(|| HostGateway::prepare(&self.gateway.counters, method, path, body))
        else {
            // A POST that is not a conversation (a token count passed on, a batch): counted.
            self.passed_through += 1;
            return other;
        };
        let observe = self.gateway.config().observe;
        let mut bill = None;
        let outgoing = match self.gateway.request_prepared(prepared, session_header, now_ms) {
            Decision::Forward {
                session,
                body: forwarded,
                condensed_now,
                tokens_client,
                tokens_forwarded,
                bill: id,
            } => {
                bill = Some(id);
                // An empty body is the client's own bytes (the gateway is lean here).
                if forwarded.is_empty() || forwarded == body {
                    Outgoing::Client { session: Some(session), reason: Untouched::Unchanged }
                } else {
                    let body = String::from_utf8(forwarded).expect("the core writes UTF-8 JSON");
                    Outgoing::Rewritten {
                        session,
                        body,
                        condensed_now,
                        tokens: (tokens_client, tokens_forwarded),
                    }
                }
            }
            Decision::Untouched { session, reason } if observe => {
                Outgoing::Client { session, reason: Untouched::Observed(reason) }
            }
            Decision::Untouched { session, reason } => {
                Outgoing::Client { session, reason: self.fail_open(reason) }
            }
        };
        if let (Some(session), Some(agent)) = (outgoing.session(), user_agent) {
            self.gateway.seen_from(session, agent);
        }
        Decided { outgoing, jobs: self.gateway.take_jobs(), recall: self.gateway.take_recall_ops(), bill }
    }

    /// The upstream answered `status` with `answer` before any byte reached the client: when it
    /// says the prompt is too long, the body to retry with once (condensed harder), and the
    /// recall files to write before.
    pub fn too_long(
        &mut self,
        session: &str,
        status: u16,
        answer: &[u8],
        client_body: &[u8],
    ) -> Option<Retry> {
        if !may_be_too_long(status) || !says_too_long(answer) {
            return None;
        }
        let retry = self.gateway.too_long(session, client_body);
        let recall = self.gateway.take_recall_ops();
        let (body, bill) = retry?;
        let body = String::from_utf8(body).expect("the core writes UTF-8 JSON");
        Some(Retry { body, recall, bill })
    }

    /// The host could not write the recall file at `path` for `session` (see
    /// [`Gateway::recall_failed`]).
    pub fn recall_failed(&mut self, session: &str, path: &str, why: &str) {
        self.gateway.recall_failed(session, path, why);
    }

    /// Adds what an answer of `session` reported to its statistics, with the bill its decision
    /// gave (see [`Gateway::usage`]).
    pub fn usage(&mut self, session: &str, bill: Option<u64>, usage: GatewayUsage) {
        self.gateway.usage(session, bill, usage);
    }

    /// The statistics (`GET /stats`): the core's (the configuration, the totals, each session's
    /// counts) and the host's (requests passed through, failures).
    pub fn report(&self) -> GatewayReport {
        let config = self.gateway.config();
        GatewayReport {
            stats: self.gateway.stats(),
            config: ReportConfig {
                provider: config.provider.clone(),
                threshold: config.threshold,
                policy: config.policy,
                windows: config.windows.clone(),
                observe: config.observe,
            },
            summaries_pending: self.gateway.summaries_pending(),
            passed_through: self.passed_through,
            failed_open: self.failed_open,
            last_failed_open: self.last_failed_open.clone(),
        }
    }

    /// The state to persist as it is now, to write without holding the gateway (see
    /// [`Gateway::snapshot`]).
    pub fn snapshot(&self) -> Snapshot {
        self.gateway.snapshot()
    }

    /// Restores a state kept as files (see [`Gateway::load_files`]), returning the sessions set
    /// aside; the error says why it was refused, and the gateway is then left empty.
    pub fn load_files(
        &mut self,
        index: Option<&[u8]>,
        files: &[SessionFile],
    ) -> Result<Vec<SetAside>, StateError> {
        let (mut gateway, set_aside) = Gateway::load_files(self.gateway.config().clone(), index, files)?;
        gateway.lean = true;
        gateway.counters = self.gateway.counters();
        self.gateway = gateway;
        Ok(set_aside)
    }
}
