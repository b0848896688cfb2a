//! The gateway's decisions, one request at a time: [`Gateway`] reads a request, brings its session
//! up to date, counts the request as it would be forwarded, condenses when that crosses the
//! threshold of the model's window — or, under the `cache-aware` policy, earlier when it pays for
//! the prompt cache it makes the upstream write again — and hands the host the bytes to send, or,
//! when anything goes wrong, tells it to send the client's own (fail open).
//!
//! Everything here is decided from the request and the state, with no IO and no clock: the host
//! (`condense gateway`, the extension) owns the sockets, the streams and the state file, gives
//! the time of each request, and lends the gateway what it reads from the upstream (usage, a
//! "prompt too long" answer). Each forwarded request gets a bill the host hands back with its
//! usage, which the books (`books`) price against what the client's own bytes would have cost.
//!
//! Observe mode decides the same way and keeps the same figures — the sessions learn the messages
//! and freeze the condensations they would have made, so the figures say what the gateway would
//! have forwarded — but every request goes out as the client sent it, and no money is booked as
//! saved.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;

use crate::agent::CondenseReason;
use crate::agent::cache::{
    CostEstimate, EXPECTED_AFTER_PERCENT, EXPECTED_SUMMARY_TOKENS, Weighing, turns_left, weigh,
};
use crate::agent::policy::min_gain_tokens;
use crate::billing::{CacheRules, ModelPrices, Ttl, model_prices};
use crate::limits::AutoCondense;
use crate::model::Conversation;
use crate::profile::Prices;
use crate::tokens::TokenCounter;

use super::books::{Book, CellCache, MAX_PENDING_BILLS, Message, PendingBill, Piece, Prompt, prompt};
use super::count::{CountCache, Counters, Precounts, fixed_tokens, precount, read_messages};
use super::dialect::{ArrayKind, Dialect, Request};
use super::freeze::{Shape, replacement};
use super::jobs::{MAX_PENDING_SUMMARIES, Pending, Ready, SummaryJob};
use super::plan::{Ask, Plan, plan};
use super::recall::{Kept, RecallConfig, RecallFile, RecallOp, attach, keep};
use super::session_key::{SessionKey, fnv1a, session_key};
use super::sessions::{Frozen, Limits, Session, Sessions, common_prefix, splice};
use super::stats::{CondensationNote, GatewayPolicy, GatewayStats, GatewayUsage, SessionStats};
use super::windows::window_for;

/// How the gateway decides.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// The share of the model's window a forwarded request may reach before the gateway
    /// condenses it (0.1 to 0.99), whatever the policy.
    pub threshold: f64,
    /// Whether it also condenses earlier, when that pays for the cache it writes again.
    pub policy: GatewayPolicy,
    /// The operator's context windows, by model id or prefix (the longest matching prefix wins),
    /// over the core's table.
    pub windows: BTreeMap<String, usize>,
    /// Forward every request as the client sent it and record what would have been done.
    pub observe: bool,
    /// The condensation provider: `smart`, whose LLM-free passes the gateway runs (the ledger),
    /// or `native`, which condenses the same way and then has the host write an LLM summary of
    /// the range in the background ([`Gateway::take_jobs`]).
    pub provider: String,
    /// The bounds of the sessions held.
    pub limits: Limits,
    /// Where each condensation's hidden messages are written for the agent to read, and how
    /// much a session keeps; `None`: no recall files, and no line naming one.
    pub recall: Option<RecallConfig>,
}

impl Default for GatewayConfig {
    /// 80% of the window, as the chat's own threshold: room for the answer and for the estimate
    /// of a model whose tokenizer is not public.
    fn default() -> Self {
        GatewayConfig {
            threshold: 0.8,
            policy: GatewayPolicy::default(),
            windows: BTreeMap::new(),
            observe: false,
            provider: "smart".into(),
            limits: Limits::default(),
            recall: None,
        }
    }
}

/// The providers the gateway runs. A request never waits for a model: `native`'s summary is
/// written in the background and used from a later request on.
pub const GATEWAY_PROVIDERS: [&str; 2] = ["smart", "native"];

impl GatewayConfig {
    /// Why this configuration cannot be used, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if !(0.1..=0.99).contains(&self.threshold) {
            return Err(format!("threshold {} is not between 0.1 and 0.99", self.threshold));
        }
        if let Some((model, _)) = self.windows.iter().find(|(m, w)| m.trim().is_empty() || **w < 1_000) {
            return Err(format!("the window of `{model}` must name a model and be at least 1000 tokens"));
        }
        if !GATEWAY_PROVIDERS.contains(&self.provider.as_str()) {
            return Err(format!(
                "provider `{}` cannot condense in the gateway yet; use one of: {}",
                self.provider,
                GATEWAY_PROVIDERS.join(", ")
            ));
        }
        if self.limits.max_sessions == 0 || self.limits.max_bytes == 0 {
            return Err("the session limits must hold at least one session".into());
        }
        self.recall.as_ref().map_or(Ok(()), RecallConfig::check)
    }
}

/// What the host does with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Send `body` upstream.
    Forward {
        /// The session's name, for [`Gateway::usage`] and [`Gateway::too_long`].
        session: String,
        /// The body to send: the client's own bytes when nothing was condensed.
        body: Vec<u8>,
        /// Whether the forwarded conversation changed before its end for this request: a
        /// condensation made, a summary spliced in, one undone, or the session resumed (the
        /// upstream's cache is written again from there).
        condensed_now: bool,
        /// Tokens of the request as the client sent it.
        tokens_client: usize,
        /// Tokens of the request as forwarded.
        tokens_forwarded: usize,
        /// The bill to hand back with the answer's usage ([`Gateway::usage`]).
        bill: u64,
    },
    /// Send the client's bytes as they came: the request is not one the gateway reads, could not
    /// be read (fail open), or the gateway only observes.
    Untouched {
        /// The session, when the request was read.
        session: Option<String>,
        /// Why, or in observe mode what the gateway would have done.
        reason: String,
    },
}

/// What the gateway keeps of a session beside the store's messages.
#[derive(Debug)]
pub(super) struct SessionState {
    pub(super) key: SessionKey,
    pub(super) stats: SessionStats,
    pub(super) counts: CountCache,
    /// Tokens of the latest request as forwarded.
    pub(super) last_forwarded: usize,
    /// Since the latest request a summary replaced a condensation, or the user undid one or
    /// resumed the session: the next request is forwarded changed from that point.
    pub(super) reshaped: bool,
    /// The user asked that the next request be condensed, threshold or not.
    pub(super) condense_next: bool,
    /// The user undid a condensation: the next request is not condensed again.
    pub(super) hold_next: bool,
    /// The recall files the session keeps, oldest first.
    pub(super) recall: Vec<Kept>,
    /// The session's books (what its requests cost, and would have cost uncondensed), once it
    /// has a model; the cache blocks of its messages.
    pub(super) book: Option<Book>,
    pub(super) cells: CellCache,
    /// A summary written and waiting to be spliced in when that costs nothing more
    /// (`cache-aware`): at the session's next condensation, or once its cache has gone cold.
    pub(super) ready: Option<Ready>,
    /// The request and the forwarded tokens the growth per request is measured from: the
    /// session's first, then its latest condensation's.
    pub(super) grown_from: Option<(u64, usize)>,
    /// Under the `cache-aware` policy, the forwarded tokens below which a condensation was found
    /// not to pay: it is weighed again only past them.
    pub(super) weigh_from: usize,
}

impl SessionState {
    pub(super) fn new(key: SessionKey, stats: SessionStats) -> SessionState {
        SessionState {
            key,
            stats,
            counts: CountCache::default(),
            last_forwarded: 0,
            reshaped: false,
            condense_next: false,
            hold_next: false,
            recall: Vec::new(),
            book: None,
            cells: CellCache::default(),
            ready: None,
            grown_from: None,
            weigh_from: 0,
        }
    }

    /// The session's books for `model`, started afresh when the model changed (a cache is a
    /// model's own); `None` for a model whose price is unknown.
    fn book_for(&mut self, model: &str, dialect: Dialect) -> Option<&mut Book> {
        let prices = model_prices(model)?;
        if self.book.as_ref().is_none_or(|b| b.model() != model) {
            self.book = Some(Book::new(model, cache_rules(&prices, dialect)));
        }
        self.book.as_mut()
    }
}

/// The request a Gemini `:countTokens` body counts: its `generateContentRequest` (the whole
/// request: system instruction, tools, contents) when it has one, else the body itself (bare
/// `contents`).
fn gemini_count_request(body: &[u8]) -> &[u8] {
    #[derive(serde::Deserialize)]
    struct Count<'a> {
        #[serde(borrow, default, rename = "generateContentRequest")]
        request: Option<&'a serde_json::value::RawValue>,
    }
    match serde_json::from_slice::<Count<'_>>(body) {
        Ok(Count { request: Some(inner) }) => inner.get().as_bytes(),
        _ => body,
    }
}

/// A request as [`Gateway::prepare`] read it: its view and its counts, or why it was not read.
#[derive(Debug)]
pub struct Prepared<'a>(Result<(Request<'a>, Precounts), Unread>);

/// Why a request was not read.
#[derive(Debug)]
enum Unread {
    /// Its path is no conversation's.
    NotAConversation(String),
    /// Its body is not one of its dialect.
    Malformed(String),
    /// Condensing it would take more memory than the gateway allows a body of its size.
    OverBudget(String),
}

/// The memory a request may take beyond its body, at most: the gateway's peak stays within four
/// times the largest body in flight plus this.
pub(super) const MEMORY_SLACK_BYTES: usize = 64 << 20;

/// What reading, counting and condensing a request takes per message beyond its bytes, measured
/// (`cargo bench -p condense-cli --bench abuse`: 100,000 messages of 90 bytes peaked at 164 MB
/// for a 12 MB body, about 1.4 KB a message), with room.
pub(super) const MEMORY_PER_MESSAGE: usize = 1_536;

/// Why a request of `body` bytes and `messages` messages is not condensed: the memory it would
/// take (4.5 times the body: its bytes, their counting and the ledger of what a condensation
/// hides, measured from 4.2× for one 50 MB message to 4.7× for 10,000 of 5 KB; and
/// [`MEMORY_PER_MESSAGE`] each) is over the budget of four times the body plus
/// [`MEMORY_SLACK_BYTES`]. `None` within it.
pub(super) fn over_memory_budget(body: usize, messages: usize) -> Option<String> {
    let need = body * 9 / 2 + messages.saturating_mul(MEMORY_PER_MESSAGE);
    let budget = 4 * body + MEMORY_SLACK_BYTES;
    (need > budget).then(|| {
        format!(
            "{messages} messages would take about {} MB to condense, over the memory budget for a {} MB body \
             (4 × the body + {} MB): forwarded as sent",
            need >> 20,
            body.div_ceil(1 << 20),
            MEMORY_SLACK_BYTES >> 20
        )
    })
}

/// The cache rules the books follow: the model's, in the dialect its requests come in (a model
/// reached through another vendor's API is cached by that API).
fn cache_rules(prices: &ModelPrices, dialect: Dialect) -> CacheRules {
    match (prices.cache, dialect) {
        (rules @ CacheRules::Breakpoints { .. }, Dialect::AnthropicMessages) => rules,
        (
            rules @ CacheRules::Automatic { .. },
            Dialect::ChatCompletions | Dialect::Responses | Dialect::Gemini,
        ) => rules,
        (_, Dialect::AnthropicMessages) => CacheRules::Breakpoints { min_tokens: 1024 },
        (_, _) => CacheRules::Automatic { min_tokens: 1024, step: 128 },
    }
}

/// The gateway: the sessions, their books, the configuration. `Send`, so a host on a thread pool
/// can hold it behind a mutex.
#[derive(Debug)]
pub struct Gateway {
    pub(super) config: GatewayConfig,
    pub(super) sessions: Sessions,
    /// By session name (the [`SessionKey`]'s display), for the sessions the store holds.
    pub(super) states: HashMap<String, SessionState>,
    pub(super) totals: SessionStats,
    /// Shared with the host, which counts a request's messages with them before it takes the
    /// gateway's lock ([`Gateway::prepare`]).
    pub(super) counters: Arc<Counters>,
    /// Summaries given out and not yet done, by job id (provider `native`).
    pub(super) pending: HashMap<u64, Pending>,
    /// Summaries queued for the host to take.
    pub(super) jobs: Vec<SummaryJob>,
    pub(super) next_job: u64,
    /// What the host does on disk for the recall files, before it sends the request decided.
    pub(super) recall_ops: Vec<RecallOp>,
    /// Requests decided whose usage has not come yet, by bill.
    pub(super) bills: HashMap<u64, PendingBill>,
    pub(super) next_bill: u64,
    /// The time of the latest request, as the host gave it (milliseconds).
    pub(super) now_ms: i64,
    /// The models of the sessions forgotten lately, by name: their late answers are priced.
    pub(super) forgotten: VecDeque<(String, String)>,
    /// A decision to forward the client's own bytes carries an empty body (the host has them):
    /// [`HostGateway`](super::HostGateway)'s, so that a 50 MB request is not copied once more.
    pub(super) lean: bool,
}

/// Sessions forgotten whose model is remembered for their late answers.
const FORGOTTEN_MODELS: usize = 64;

/// A request measured against its session: each original message's tokens, each frozen
/// condensation's, and the request's as the client sent it and as it would be forwarded.
struct Measure {
    counts: Vec<usize>,
    frozen_tokens: Vec<usize>,
    client: usize,
    forwarded: usize,
}

/// Measures `request`, whose messages are `session`'s originals.
fn measure(
    session: &Session,
    request: &Request<'_>,
    cache: &mut CountCache,
    counter: &dyn TokenCounter,
) -> Measure {
    let dialect = session.dialect;
    let fixed = fixed_tokens(request, counter);
    let counts: Vec<usize> =
        request.texts().map(|(hash, text)| cache.tokens(dialect, hash, text, counter)).collect();
    let frozen_tokens: Vec<usize> =
        session.frozen.iter().map(|f| cache.tokens_of(dialect, &f.replacement, counter)).collect();
    let all: usize = counts.iter().sum();
    let hidden: usize = session.frozen.iter().map(|f| counts[f.range.clone()].iter().sum::<usize>()).sum();
    Measure {
        client: fixed + all,
        forwarded: fixed + all - hidden + frozen_tokens.iter().sum::<usize>(),
        counts,
        frozen_tokens,
    }
}

/// The tokens a condensation brings a request to: half the window, and below the threshold
/// when the threshold is set under half.
pub(super) fn target(window: usize, limit: usize) -> usize {
    (window / 2).min(limit * 3 / 4)
}

impl Gateway {
    /// A gateway with no sessions yet.
    pub fn new(config: GatewayConfig) -> Result<Gateway, String> {
        config.check()?;
        Ok(Gateway {
            sessions: Sessions::new(config.limits),
            config,
            states: HashMap::new(),
            totals: SessionStats::default(),
            counters: Arc::new(Counters::default()),
            pending: HashMap::new(),
            jobs: Vec::new(),
            next_job: 0,
            recall_ops: Vec::new(),
            bills: HashMap::new(),
            next_bill: 0,
            now_ms: 0,
            forgotten: VecDeque::new(),
            lean: false,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }

    /// [`Gateway::request_at`] at the time of the latest request.
    pub fn request(&mut self, path: &str, header_session: Option<&str>, body: &[u8]) -> Decision {
        self.request_at(path, header_session, body, self.now_ms)
    }

    /// Decides one request (the path as received after the host's routing prefix, e.g.
    /// `/v1/messages?beta=true`; the `x-context-condenser-session` header, if sent), sent at
    /// `now_ms` (the host's clock, in milliseconds; a time before the latest is taken as the
    /// latest). Never fails: a request the gateway cannot read is [`Decision::Untouched`] with
    /// the reason.
    pub fn request_at(
        &mut self,
        path: &str,
        header_session: Option<&str>,
        body: &[u8],
        now_ms: i64,
    ) -> Decision {
        let prepared = Gateway::prepare(&self.counters, path, body);
        self.request_prepared(prepared, header_session, now_ms)
    }

    /// The counters the gateway counts with, for [`Gateway::prepare`] outside its lock.
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// What can be made of a request to `path` without the gateway's state, so that a host does
    /// it before taking the state's lock and a request of one session never waits on another's
    /// parsing and counting: the body read in its dialect, its messages hashed, and counted (with
    /// `counters`, the gateway's: [`Gateway::counters`]) where the counters have not seen them.
    pub fn prepare<'a>(counters: &Counters, path: &str, body: &'a [u8]) -> Prepared<'a> {
        let Some(dialect) = Dialect::from_path(path) else {
            let path: String = path.chars().take(200).collect();
            return Prepared(Err(Unread::NotAConversation(format!("{path:?} is not a conversation"))));
        };
        match Request::parse(dialect, body) {
            Ok(request) if let Some(why) = over_memory_budget(body.len(), request.messages.len()) => {
                Prepared(Err(Unread::OverBudget(why)))
            }
            Ok(request) => {
                let request = request.with_path_model(path);
                let counts = precount(counters, &request);
                Prepared(Ok((request, counts)))
            }
            Err(e) => Prepared(Err(Unread::Malformed(e.to_string()))),
        }
    }

    /// Decides a request [`Gateway::prepare`] read (see [`Gateway::request_at`]).
    pub fn request_prepared(
        &mut self,
        prepared: Prepared<'_>,
        header_session: Option<&str>,
        now_ms: i64,
    ) -> Decision {
        self.now_ms = self.now_ms.max(now_ms);
        match prepared.0 {
            Ok((request, counts)) => self.decide(&request, counts, header_session),
            Err(Unread::NotAConversation(reason)) => Decision::Untouched { session: None, reason },
            Err(Unread::Malformed(reason) | Unread::OverBudget(reason)) => {
                self.totals.requests += 1;
                self.totals.untouched += 1;
                Decision::Untouched { session: None, reason }
            }
        }
    }

    fn decide(&mut self, request: &Request<'_>, counts: Precounts, header: Option<&str>) -> Decision {
        let now = self.now_ms;
        let forward = self.sessions.forward_request(request, header);
        let key = forward.session;
        let name = key.to_string();
        let model = request.model.clone().unwrap_or_default();
        let observe = self.config.observe;
        self.states
            .entry(name.clone())
            .or_insert_with(|| SessionState::new(key.clone(), SessionStats::default()));
        if !self.sessions.map.contains_key(&key) {
            // The store keeps the session a request is using; this is only a guard.
            return Decision::Untouched { session: Some(name), reason: "the session was not kept".into() };
        }
        // A summary waiting for a free moment goes in once the session's cache has gone cold: the
        // request is written to the cache whole either way.
        let state = self.states.get_mut(&name).expect("made above");
        if state.stats.title.is_empty()
            && let Some(line) = counts.task_line.as_deref()
        {
            state.stats.title = super::http::shown(line, super::dialect::TASK_CHARS);
        }
        let cold = state.book.as_ref().is_some_and(|b| !b.warm(now));
        let mut rebuilt = false;
        if cold && state.ready.is_some() && !observe {
            self.splice_ready(&name, "the session's cache had gone cold");
            rebuilt = true;
        }
        let counter = self.counters.for_model(&model);
        let state = self.states.get_mut(&name).expect("made above");
        state.counts.absorb(&counts);
        state.cells.absorb(counts.cells);
        let session = self.sessions.map.get(&key).expect("checked above");
        // The session's messages are the request's: what reads their texts reads these (a large
        // session does not hold them).
        let texts: Vec<&str> = request.texts().map(|(_, text)| text).collect();
        let m = measure(session, request, &mut state.counts, counter);
        let window = window_for(&model, &self.config.windows);
        let limit = (window as f64 * self.config.threshold) as usize;
        let mut made: Option<(Plan, CondenseReason, Option<CostEstimate>)> = None;
        let mut note = None;
        let paused = state.stats.paused;
        let asked = std::mem::take(&mut state.condense_next);
        let held = std::mem::take(&mut state.hold_next);
        if state.grown_from.is_none() {
            state.grown_from = Some((state.stats.requests + 1, m.forwarded));
        }
        if paused {
            return self.forward_paused(&name, &model, window, m.client, request);
        }
        let condensable = !held && request.kind == ArrayKind::Array;
        if (m.forwarded > limit || asked) && condensable {
            let target = match asked && m.forwarded <= limit {
                true => target(window, limit).min(m.forwarded / 2),
                false => target(window, limit),
            };
            let ask = Ask { forwarded: m.forwarded, target, whole: false };
            let reason = if m.forwarded > limit { CondenseReason::Threshold } else { CondenseReason::Manual };
            match plan(session, &texts, &m.counts, &m.frozen_tokens, ask, &mut state.counts, counter) {
                Ok(p) => made = Some((p, reason, None)),
                Err(why) => note = Some(format!("{} of {limit} tokens, not condensed: {why}", m.forwarded)),
            }
        } else if self.config.policy == GatewayPolicy::CacheAware
            && condensable
            && m.forwarded >= state.weigh_from
        {
            let fixed = state.cells.fixed(request, counter);
            let min_gain = min_gain_tokens(window, AutoCondense::default().min_gain_percent);
            let native = self.config.provider == "native";
            let early = Early { fixed: &fixed, model: &model, limit, native, now, min_gain };
            made = weigh_early(session, &texts, state, &m, &early, counter)
                .map(|(p, e)| (p, CondenseReason::Cache, Some(e)));
        }
        let mut recall = None;
        if let (Some((p, _, _)), Some(config), false) = (made.as_mut(), &self.config.recall, observe) {
            recall = Some(attach(config, &name, session, &texts, p, &mut state.counts, counter));
        }
        if let Some((p, reason, estimate)) = made.take() {
            match self.sessions.freeze_with(&key, p.range.clone(), &p.text, Some(&texts)) {
                Ok(()) => {
                    made = Some((p, reason, estimate));
                    if let Some(file) = recall {
                        self.book_recall(&name, file);
                    }
                }
                Err(e) => note = Some(format!("{} of {limit} tokens, not condensed: {e}", m.forwarded)),
            }
        }
        if let Some((p, _, _)) = made.as_ref().filter(|_| self.config.provider == "native" && !observe) {
            self.queue_summary(&key, &model, p.task_end, p.range.clone(), &p.text, &texts);
        }
        // A summary waiting rides along with a condensation: the cache is written again from the
        // condensation on anyway.
        let mut grown = 0;
        if made.is_some() && !observe && self.states.get(&name).is_some_and(|s| s.ready.is_some()) {
            grown = self.splice_ready(&name, "it went in with the next condensation");
        }
        let state = self.states.get_mut(&name).expect("the session's state was made above");
        let forwarded = (m.forwarded + grown).saturating_sub(made.as_ref().map_or(0, |(p, _, _)| p.saved));
        let body = match rebuilt || grown > 0 || made.is_some() {
            true => splice(request, self.sessions.frozen(&key).unwrap_or_default()).0.into_owned(),
            false if self.lean && matches!(forward.body, Cow::Borrowed(_)) => String::new(),
            false => forward.body.into_owned(),
        };
        state.last_forwarded = forwarded;
        state.stats.last_tokens_client = m.client as u64;
        state.stats.last_tokens_forwarded = forwarded as u64;
        state.stats.window = window as u64;
        let spliced = std::mem::take(&mut state.reshaped);
        let request_no = state.stats.requests + 1;
        if let Some((p, reason, estimate)) = &made {
            state.grown_from = Some((request_no, forwarded));
            state.weigh_from = 0;
            state.stats.note_condensation(CondensationNote {
                request: request_no,
                start: p.range.start,
                end: p.range.end,
                reason: *reason,
                tokens_before: m.forwarded as u64,
                tokens_after: forwarded as u64,
                estimate: *estimate,
            });
        }
        for stats in [&mut state.stats, &mut self.totals] {
            // As `/stats` shows it: a client's model name cannot fill or forge it.
            stats.model = super::http::shown(&model, super::http::SHOWN_CHARS);
            stats.requests += 1;
            stats.tokens_client += m.client as u64;
            stats.condensations += u64::from(made.is_some());
            let saved = m.client.saturating_sub(forwarded) as u64;
            if observe {
                stats.tokens_forwarded += m.client as u64;
                stats.would_condense += u64::from(saved > 0);
                stats.tokens_would_save += saved;
            } else {
                stats.tokens_forwarded += forwarded as u64;
            }
            stats.note.clone_from(&note);
        }
        if observe {
            self.forget_states();
            let what = match &made {
                Some((p, reason, _)) => {
                    format!(
                        " (condensing messages {}..{} now: {})",
                        p.range.start,
                        p.range.end,
                        reason.as_str()
                    )
                }
                None => String::new(),
            };
            let reason = format!("observe: would forward {forwarded} of {} tokens{what}", m.client);
            return Decision::Untouched { session: Some(name), reason };
        }
        let bill = self.open_bill(&name, &model, request, &key, false);
        self.forget_states();
        Decision::Forward {
            session: name,
            body: body.into_bytes(),
            condensed_now: made.is_some() || spliced || grown > 0,
            tokens_client: m.client,
            tokens_forwarded: forwarded,
            bill,
        }
    }

    /// Opens the bill of a request of session `name` about to be forwarded, and sends it to the
    /// books' caches: the request as the client sent it, and as the session's condensations make
    /// it now (or, `untouched`, as the client sent it: a paused session's).
    fn open_bill(
        &mut self,
        name: &str,
        model: &str,
        request: &Request<'_>,
        key: &SessionKey,
        untouched: bool,
    ) -> u64 {
        let id = self.next_bill;
        self.next_bill += 1;
        let counter = self.counters.for_model(model);
        let (Some(state), Some(session)) = (self.states.get_mut(name), self.sessions.map.get(key)) else {
            return id;
        };
        if model_prices(model).is_none() {
            // No price, no books: the answer's usage is counted in tokens only.
            return id;
        }
        let dialect = session.dialect;
        state.book_for(model, dialect);
        let fixed = state.cells.fixed(request, counter);
        let client: Vec<Message<'_>> = request
            .texts()
            .map(|(hash, text)| (hash, text, state.counts.tokens(dialect, hash, text, counter), false))
            .collect();
        let client = prompt(&fixed, client, dialect, &mut state.cells);
        let forwarded = match untouched {
            true => client.clone(),
            false => {
                let texts: Vec<&str> = request.texts().map(|(_, text)| text).collect();
                forwarded_prompt(session, &texts, &fixed, None, &mut state.counts, &mut state.cells, counter)
            }
        };
        let retention = match request.cache_retention.as_deref() {
            Some("24h") => Ttl::Day,
            _ => Ttl::FiveMinutes,
        };
        if self.bills.len() >= MAX_PENDING_BILLS
            && let Some(oldest) = self.bills.keys().min().copied()
        {
            self.bills.remove(&oldest);
        }
        let Some(book) = state.book.as_mut() else { return id };
        let (client_spans, forwarded_spans) = book.send(&client, &forwarded, self.now_ms, retention);
        let pending =
            PendingBill { model: model.to_owned(), client, forwarded, client_spans, forwarded_spans };
        self.bills.insert(id, pending);
        id
    }

    /// A paused session's request: counted, and forwarded as the client sent it.
    fn forward_paused(
        &mut self,
        name: &str,
        model: &str,
        window: usize,
        client: usize,
        request: &Request<'_>,
    ) -> Decision {
        let state = self.states.get_mut(name).expect("the caller made the state");
        let key = state.key.clone();
        state.last_forwarded = client;
        state.stats.last_tokens_client = client as u64;
        state.stats.last_tokens_forwarded = client as u64;
        state.stats.window = window as u64;
        for stats in [&mut state.stats, &mut self.totals] {
            stats.model = super::http::shown(model, super::http::SHOWN_CHARS);
            stats.requests += 1;
            stats.tokens_client += client as u64;
            stats.tokens_forwarded += client as u64;
            stats.note = Some("paused: forwarded as the client sent it".into());
        }
        // Billed as the client's request in both caches: what pausing costs (the cache written
        // again after condensations) shows.
        let bill = self.open_bill(name, model, request, &key, true);
        Decision::Forward {
            session: name.to_owned(),
            body: if self.lean { Vec::new() } else { request.body.as_bytes().to_vec() },
            condensed_now: false,
            tokens_client: client,
            tokens_forwarded: client,
            bill,
        }
    }

    /// A token count (Anthropic's `/v1/messages/count_tokens`, Gemini's `:countTokens` of
    /// `model`): the input tokens of the request as the gateway would forward it, so the client
    /// measures what the model will see (and its own compaction stays idle while the gateway
    /// keeps the request small). `None` when the gateway would forward the request unchanged:
    /// the host passes it through for the upstream's exact count. Nothing is learned or
    /// condensed here.
    pub fn count_tokens(
        &mut self,
        dialect: Dialect,
        model: Option<&str>,
        header_session: Option<&str>,
        body: &[u8],
    ) -> Option<usize> {
        if self.config.observe {
            return None;
        }
        let body = match dialect {
            Dialect::Gemini => gemini_count_request(body),
            _ => body,
        };
        let mut request = Request::parse(dialect, body).ok()?;
        if request.model.is_none() {
            request.model = model.map(str::to_owned);
        }
        let incoming: Vec<(u64, &str)> = request.texts().collect();
        // A count request may not carry the session's id: then the held session it continues.
        let own = session_key(&request, header_session);
        let common_with = |s: &Session| match s.dialect == dialect {
            true => common_prefix(&s.originals, &incoming),
            false => 0,
        };
        let (key, common) = match self.sessions.map.get(&own) {
            Some(s) => (own.clone(), common_with(s)),
            None => {
                self.sessions.map.iter().map(|(k, s)| (k.clone(), common_with(s))).max_by_key(|(_, c)| *c)?
            }
        };
        let session = self.sessions.map.get(&key)?;
        let frozen: Vec<&Frozen> = session.frozen.iter().filter(|f| f.range.end <= common).collect();
        if frozen.is_empty() {
            return None;
        }
        let state = self.states.get_mut(&key.to_string())?;
        let counter = self.counters.for_model(request.model.as_deref().unwrap_or_default());
        let mut total = fixed_tokens(&request, counter);
        let mut i = 0;
        let mut next = frozen.iter().peekable();
        while i < incoming.len() {
            match next.next_if(|f| f.range.start == i) {
                Some(f) => {
                    total += state.counts.tokens_of(dialect, &f.replacement, counter);
                    i = f.range.end;
                }
                None => {
                    let (hash, text) = incoming[i];
                    total += state.counts.tokens(dialect, hash, text, counter);
                    i += 1;
                }
            }
        }
        Some(total)
    }

    /// The upstream answered "prompt too long" before any byte reached the client: condenses
    /// the whole span between the task and the current turn (the earlier condensations swallowed
    /// into one) and gives the body to retry once. `body` is the client's body, as given to
    /// [`Gateway::request`]. `None` when there is nothing more to condense, in observe mode, for
    /// a paused session (the user said hands off: its client gets the error as it came), or when
    /// the body is not the session's latest: the host passes the error through. With the body,
    /// the bill of the retry.
    pub fn too_long(&mut self, session: &str, body: &[u8]) -> Option<(Vec<u8>, u64)> {
        if self.config.observe {
            return None;
        }
        let state = self.states.get_mut(session)?;
        if state.stats.paused {
            return None;
        }
        let key = state.key.clone();
        let held = self.sessions.map.get(&key)?;
        let request = Request::parse(held.dialect, body).ok()?;
        let incoming: Vec<(u64, &str)> = request.texts().collect();
        let texts: Vec<&str> = incoming.iter().map(|&(_, text)| text).collect();
        if request.kind != ArrayKind::Array
            || incoming.len() != held.originals.len()
            || common_prefix(&held.originals, &incoming) != incoming.len()
        {
            return None;
        }
        let model = request.model.clone().unwrap_or_default();
        let counter = self.counters.for_model(&model);
        let m = measure(held, &request, &mut state.counts, counter);
        let window = window_for(&model, &self.config.windows);
        let limit = (window as f64 * self.config.threshold) as usize;
        let ask = Ask { forwarded: m.forwarded, target: target(window, limit), whole: true };
        let mut p = plan(held, &texts, &m.counts, &m.frozen_tokens, ask, &mut state.counts, counter).ok()?;
        if held.frozen.iter().any(|f| f.range == p.range) {
            return None;
        }
        let recall = self
            .config
            .recall
            .as_ref()
            .map(|c| attach(c, session, held, &texts, &mut p, &mut state.counts, counter));
        self.sessions.freeze_with(&key, p.range.clone(), &p.text, Some(&texts)).ok()?;
        if let Some(file) = recall {
            self.book_recall(session, file);
        }
        if self.config.provider == "native" {
            // Without a summary the ledger stays: the retry has it either way.
            self.queue_summary(&key, &model, p.task_end, p.range.clone(), &p.text, &texts);
        }
        let state = self.states.get_mut(session)?;
        let request_no = state.stats.requests;
        let after = m.forwarded.saturating_sub(p.saved);
        state.last_forwarded = after;
        state.grown_from = Some((request_no, after));
        state.stats.note_condensation(CondensationNote {
            request: request_no,
            start: p.range.start,
            end: p.range.end,
            reason: CondenseReason::Overflow,
            tokens_before: m.forwarded as u64,
            tokens_after: after as u64,
            estimate: None,
        });
        for stats in [&mut state.stats, &mut self.totals] {
            stats.too_long_retries += 1;
            stats.condensations += 1;
            stats.tokens_forwarded = stats.tokens_forwarded.saturating_sub(p.saved as u64);
        }
        // The first attempt was refused, unbilled: the retry is the request billed.
        let bill = self.open_bill(session, &model, &request, &key, false);
        let frozen = self.sessions.frozen(&key)?;
        Some((splice(&request, frozen).0.into_owned().into_bytes(), bill))
    }

    /// Usage the host read from the upstream's answer to a request of `session`, with the bill
    /// the decision gave it: the usage is priced at the model's published prices (a model whose
    /// price is unknown is counted in tokens only), and the books weigh the request as forwarded
    /// against the client's own (see `books`).
    pub fn usage(&mut self, session: &str, bill: Option<u64>, usage: GatewayUsage) {
        let pending = bill.and_then(|b| self.bills.remove(&b));
        let state = self.states.get_mut(session);
        let model = match (&pending, &state) {
            (Some(p), _) => p.model.clone(),
            (None, Some(s)) => s.stats.model.clone(),
            (None, None) => self
                .forgotten
                .iter()
                .find(|(name, _)| name == session)
                .map(|(_, m)| m.clone())
                .unwrap_or_default(),
        };
        let prices = model_prices(&model);
        self.totals.add_usage(usage, prices.as_ref());
        let Some(state) = state else { return };
        state.stats.add_usage(usage, prices.as_ref());
        let (Some(pending), Some(prices)) = (pending, prices) else { return };
        let Some(book) = state.book.as_mut().filter(|b| b.model() == pending.model) else { return };
        if usage.prompt() == 0 || self.config.observe {
            return;
        }
        book.learn(&pending.forwarded, usage.prompt() as f64);
        let end = pending.forwarded_spans.read_blocks();
        book.pin(&pending.forwarded, usage.cache_read as f64, usage.prompt() as f64, end);
        let (unpaid, paid) = book.bill(&pending);
        let saved = prices.cost(&unpaid, 0.0) - prices.cost(&paid, 0.0);
        state.stats.add_saving(saved);
        self.totals.add_saving(saved);
    }

    /// The figures, per session held and in total (the recall files: those the sessions held
    /// keep).
    pub fn stats(&self) -> GatewayStats {
        let mut totals = self.totals.clone();
        totals.recall_files = self.states.values().map(|s| s.stats.recall_files).sum();
        totals.recall_bytes = self.states.values().map(|s| s.stats.recall_bytes).sum();
        GatewayStats {
            observe: self.config.observe,
            totals,
            sessions: self.states.iter().map(|(name, s)| (name.clone(), s.stats.clone())).collect(),
        }
    }

    /// What the host does on disk for the recall files (write the new ones, remove those evicted
    /// or of sessions forgotten) before it sends the request just decided; handed over once.
    pub fn take_recall_ops(&mut self) -> Vec<RecallOp> {
        std::mem::take(&mut self.recall_ops)
    }

    /// The host could not write a recall file of `session`: it is not counted as kept, and the
    /// session's figures say why (the condensation names it still; the agent finds no file).
    pub fn recall_failed(&mut self, session: &str, path: &str, why: &str) {
        let Some(state) = self.states.get_mut(session) else { return };
        state.recall.retain(|k| k.path != path);
        let note = format!("the recall file {path} was not written: {why}");
        sync_recall_stats(state);
        for stats in [&mut state.stats, &mut self.totals] {
            stats.recall_failures += 1;
            stats.recall_note = Some(note.clone());
        }
    }

    /// Books a recall file just decided for `session` (`Err`: why there is none), and queues
    /// what the host writes and removes.
    fn book_recall(&mut self, session: &str, file: Result<RecallFile, String>) {
        let Some(state) = self.states.get_mut(session) else { return };
        match file {
            Ok(file) => {
                let max = self.config.recall.as_ref().map_or(usize::MAX, |c| c.max_session_bytes);
                let (ops, evicted) = keep(&mut state.recall, file, max);
                self.recall_ops.extend(ops);
                sync_recall_stats(state);
                state.stats.recall_evicted += evicted as u64;
                self.totals.recall_evicted += evicted as u64;
            }
            Err(why) => {
                for stats in [&mut state.stats, &mut self.totals] {
                    stats.recall_failures += 1;
                    stats.recall_note = Some(format!("no recall file: {why}"));
                }
            }
        }
    }

    /// Drops the states of the sessions the store forgot; their recall files go too, and their
    /// model is remembered a while to price their late answers.
    pub(super) fn forget_states(&mut self) {
        let sessions = &self.sessions;
        let ops = &mut self.recall_ops;
        let forgotten = &mut self.forgotten;
        self.states.retain(|name, s| {
            let held = sessions.messages(&s.key).is_some();
            if !held {
                ops.extend(s.recall.drain(..).map(|k| RecallOp::Remove { path: k.path }));
                if forgotten.len() >= FORGOTTEN_MODELS {
                    forgotten.pop_front();
                }
                forgotten.push_back((name.clone(), s.stats.model.clone()));
            }
            held
        });
    }
}

/// The summaries' side of the decisions (provider `native`): a condensation's summary queued for
/// the host, and one written earlier spliced in when it costs nothing more (see `summaries`).
impl Gateway {
    /// Queues the summary of a condensation just frozen for `key` (original messages `range`,
    /// the task ending at `task_end`), unless the session already waits for one or too many
    /// wait; a summary not queued is counted as failed, with the reason. Called by the
    /// decisions when the provider is `native`.
    pub(super) fn queue_summary(
        &mut self,
        key: &SessionKey,
        model: &str,
        task_end: usize,
        range: Range<usize>,
        ledger: &str,
        texts: &[&str],
    ) {
        let Err(why) = self.try_queue(key, model, task_end, range.clone(), ledger, texts) else { return };
        let name = key.to_string();
        let session = self.states.get_mut(&name).map(|s| &mut s.stats);
        for stats in session.into_iter().chain([&mut self.totals]) {
            stats.summary_failures += 1;
            stats.summary_note =
                Some(format!("no summary of messages {}..{}: {why}", range.start, range.end));
        }
    }

    fn try_queue(
        &mut self,
        key: &SessionKey,
        model: &str,
        task_end: usize,
        range: Range<usize>,
        ledger: &str,
        texts: &[&str],
    ) -> Result<(), String> {
        if self.pending.len() >= MAX_PENDING_SUMMARIES {
            return Err(format!("{MAX_PENDING_SUMMARIES} summaries are already being written"));
        }
        if self.pending.values().any(|p| &p.key == key) {
            return Err("the session's previous summary is still being written".into());
        }
        let session = self.sessions.map.get(key).ok_or("the session was not kept")?;
        // The task's turns without the system or developer messages a client may send among
        // them (Claude Code does): the summary request has instructions of its own.
        let task = texts[..task_end.min(range.start)]
            .iter()
            .filter(|text| Shape::read(session.dialect, 0, text).is_some_and(|s| !s.is_instructions()));
        let texts: Vec<&str> = task.chain(&texts[range.clone()]).copied().collect();
        let (_, messages) = read_messages(session.dialect, &texts)?;
        let id = self.next_job;
        self.next_job += 1;
        self.jobs.push(SummaryJob {
            id,
            session: key.to_string(),
            model: model.to_owned(),
            dialect: session.dialect,
            conversation: Conversation { messages, ..Conversation::default() },
        });
        self.pending.insert(id, Pending { key: key.clone(), range, ledger: ledger.to_owned() });
        Ok(())
    }

    /// Splices in the summary waiting for session `name`, if it still fits (`why`: the moment
    /// that made it free); the tokens it adds to the forwarded request.
    pub(super) fn splice_ready(&mut self, name: &str, why: &str) -> usize {
        let Some(ready) = self.states.get_mut(name).and_then(|s| s.ready.take()) else { return 0 };
        let done = self.check_summary_text(&ready.pending, &ready.text);
        let outcome = done.and_then(|grown| {
            self.sessions
                .rewrite(&ready.pending.key, &ready.pending.range, &ready.text)
                .map_err(|e| e.to_string())?;
            Ok(grown)
        });
        let Some(state) = self.states.get_mut(name) else { return 0 };
        state.reshaped |= outcome.is_ok();
        let range = &ready.pending.range;
        for stats in [&mut state.stats, &mut self.totals] {
            match &outcome {
                Ok(_) => {
                    stats.summaries += 1;
                    stats.summary_note = Some(format!(
                        "the summary of messages {}..{} went in: {why}",
                        range.start, range.end
                    ));
                }
                Err(e) => {
                    stats.summary_failures += 1;
                    stats.summary_note = Some(format!(
                        "the summary of messages {}..{} was not used: {e}",
                        range.start, range.end
                    ));
                }
            }
        }
        outcome.unwrap_or(0)
    }

    /// Whether `text` can replace `pending`'s range now: its condensation is still there with the
    /// ledger it was written for, and the latest request stays under its threshold with it. The
    /// tokens it adds.
    pub(super) fn check_summary_text(&mut self, pending: &Pending, text: &str) -> Result<usize, String> {
        let name = pending.key.to_string();
        let state = self.states.get_mut(&name).ok_or("the session was forgotten")?;
        let session = self.sessions.map.get(&pending.key).ok_or("the session was forgotten")?;
        let dialect = session.dialect;
        let frozen = session.frozen.iter().find(|f| f.range == pending.range);
        let old = frozen
            .filter(|f| *f.replacement == *replacement(dialect, &pending.ledger))
            .ok_or("its condensation is gone (the client rewound, or a retry condensed further)")?;
        let model = state.stats.model.clone();
        let counter = self.counters.for_model(&model);
        let before = state.counts.tokens_of(dialect, &old.replacement, counter);
        let after = state.counts.tokens_of(dialect, &replacement(dialect, text), counter);
        let limit = (window_for(&model, &self.config.windows) as f64 * self.config.threshold) as usize;
        let forwarded = (state.last_forwarded + after).saturating_sub(before);
        if forwarded > limit {
            return Err(format!(
                "with it the request would be {forwarded} tokens, over its threshold of {limit}"
            ));
        }
        Ok(after.saturating_sub(before))
    }
}

/// The request as forwarded now, for the books: the fixed pieces, then the session's messages
/// with its frozen condensations in place — and `extra` (a range and its replacing message)
/// frozen too, for weighing a condensation not made yet.
fn forwarded_prompt(
    session: &Session,
    texts: &[&str],
    fixed: &[Piece],
    extra: Option<(&Range<usize>, &str)>,
    counts: &mut CountCache,
    cells: &mut CellCache,
    counter: &dyn TokenCounter,
) -> Prompt {
    let dialect = session.dialect;
    let mut messages: Vec<Message<'_>> = Vec::with_capacity(session.originals.len());
    let mut frozen = session.frozen.iter().peekable();
    let mut i = 0;
    while i < session.originals.len() {
        if let Some((range, text)) = extra.filter(|(r, _)| r.start == i) {
            messages.push((fnv1a(text.as_bytes()), text, counts.tokens_of(dialect, text, counter), true));
            i = range.end;
        } else if let Some(f) = frozen.next_if(|f| f.range.start == i) {
            let text = &*f.replacement;
            messages.push((fnv1a(text.as_bytes()), text, counts.tokens_of(dialect, text, counter), true));
            i = f.range.end;
        } else {
            let (hash, text) = (session.originals[i].hash, texts[i]);
            messages.push((hash, text, counts.tokens(dialect, hash, text, counter), false));
            i += 1;
        }
        // Condensations swallowed by `extra` are skipped.
        while frozen.next_if(|f| f.range.start < i).is_some() {}
    }
    prompt(fixed, messages, dialect, cells)
}

/// What weighing an early condensation needs beside the session.
struct Early<'r> {
    fixed: &'r [Piece],
    model: &'r str,
    /// The threshold, in tokens: condensing is forced beyond it.
    limit: usize,
    /// Whether a summary call follows the condensation (provider `native`).
    native: bool,
    now: i64,
    /// The fewest tokens an early condensation must remove.
    min_gain: usize,
}

/// Under the `cache-aware` policy, below the threshold: the condensation to make now, when what
/// it saves over the requests expected pays for what it costs now — the cache written again from
/// its first changed message (against what the next request would read as it is) and the summary
/// call — and the context has grown past the economic step ([`weigh`], the chat's policy). The
/// figures are the books' (the upstream's tokens; the cache as the forwarded requests left it). A
/// first look with the expected size after a condensation decides whether to plan one at all
/// (planning renders a ledger); a condensation found not to pay is weighed again only once the
/// request has grown past its trigger, or by a twentieth.
fn weigh_early(
    session: &Session,
    texts: &[&str],
    state: &mut SessionState,
    m: &Measure,
    early: &Early<'_>,
    counter: &dyn TokenCounter,
) -> Option<(Plan, CostEstimate)> {
    let prices = model_prices(early.model)?;
    state.book_for(early.model, session.dialect)?;
    let SessionState { book, counts, cells, stats, grown_from, weigh_from, .. } = state;
    let book = book.as_ref()?;
    let now_prompt = forwarded_prompt(session, texts, early.fixed, None, counts, cells, counter);
    let ratio = book.ratio();
    let context = book.total(&now_prompt);
    let as_is = book.try_paid(&now_prompt, early.now);
    let mut rates: Prices = prices.prices(context);
    if !book.caches(&now_prompt) {
        // Nothing is cached: every token is billed as input either way.
        rates.cache_write = rates.input;
        rates.cache_read = rates.input;
    }
    let requests = stats.requests + 1;
    let (from_request, from_tokens) = grown_from.unwrap_or((requests, m.forwarded));
    let growth = m.forwarded.saturating_sub(from_tokens) as f64 * ratio
        / requests.saturating_sub(from_request).max(1) as f64;
    let fixed = book.pieces_total(early.fixed);
    let weighing = |after: f64, kept: f64, summarized: f64| Weighing {
        prices: rates,
        context: context as usize,
        cached: as_is.read as usize,
        after: after as usize,
        kept_prefix: kept as usize,
        summary_input: if early.native { summarized as usize } else { 0 },
        summary_cached: 0,
        summary_output: if early.native { EXPECTED_SUMMARY_TOKENS } else { 0 },
        growth: growth as usize,
        turns_left: turns_left(requests as usize),
        limit: (early.limit as f64 * ratio) as usize,
    };
    let expected = context * EXPECTED_AFTER_PERCENT as f64 / 100.0;
    let first_look = weigh(&weighing(expected, as_is.read.min(fixed), context - expected));
    if !first_look.condense {
        return None;
    }
    let again = |trigger: f64| ((trigger / ratio) as usize).max(m.forwarded + m.forwarded / 20 + 1);
    let ask =
        Ask { forwarded: m.forwarded, target: m.forwarded * EXPECTED_AFTER_PERCENT / 100, whole: false };
    let Ok(p) = plan(session, texts, &m.counts, &m.frozen_tokens, ask, counts, counter) else {
        *weigh_from = again(0.0);
        return None;
    };
    // At least the chat's minimum gain (a share of the window) and a tenth of the request, or
    // the condensation is not worth what it hides.
    if p.saved < (m.forwarded / 10).max(early.min_gain) {
        *weigh_from = again(0.0);
        return None;
    }
    let text = replacement(session.dialect, &p.text);
    let condensed =
        forwarded_prompt(session, texts, early.fixed, Some((&p.range, &text)), counts, cells, counter);
    let after = book.total(&condensed);
    let kept = book.try_paid(&condensed, early.now).read;
    let summarized = m.counts[p.range.clone()].iter().sum::<usize>() as f64 * ratio;
    let estimate = weigh(&weighing(after, kept, summarized));
    if !estimate.condense {
        *weigh_from = again(estimate.trigger as f64);
        return None;
    }
    Some((p, estimate))
}

/// A session's recall figures, from the files it keeps.
fn sync_recall_stats(state: &mut SessionState) {
    state.stats.recall_files = state.recall.len() as u64;
    state.stats.recall_bytes = state.recall.iter().map(|k| k.bytes as u64).sum();
}
