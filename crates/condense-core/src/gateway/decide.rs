//! The gateway's decisions, one request at a time: [`Gateway`] reads a request, brings its session
//! up to date, counts the request as it would be forwarded, condenses when that crosses the
//! threshold of the model's window, and hands the host the bytes to send — or, when anything goes
//! wrong, tells it to send the client's own (fail open).
//!
//! Everything here is decided from the request and the state, with no IO and no clock: the host
//! (`condense gateway`, the extension) owns the sockets, the streams and the state file, and lends
//! the gateway what it reads from the upstream (usage, a "prompt too long" answer).
//!
//! Observe mode decides the same way and keeps the same books — the sessions learn the messages
//! and freeze the condensations they would have made, so the figures say what the gateway would
//! have forwarded — but every request goes out as the client sent it.

use std::collections::{BTreeMap, HashMap};

use crate::tokens::TokenCounter;

use super::count::{CountCache, Counters, fixed_tokens};
use super::dialect::{ArrayKind, Dialect, Request};
use super::plan::{Ask, Plan, plan};
use super::recall::{Kept, RecallConfig, RecallFile, RecallOp, attach, keep};
use super::session_key::{SessionKey, fnv1a, session_key};
use super::sessions::{Frozen, Limits, Session, Sessions, common_prefix, splice};
use super::stats::{GatewayStats, GatewayUsage, SessionStats};
use super::summaries::{Pending, SummaryJob};
use super::windows::{model_prices, window_for};

/// How the gateway decides.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// The share of the model's window a forwarded request may reach before the gateway
    /// condenses it (0.1 to 0.99).
    pub threshold: f64,
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
        }
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
    pub(super) counters: Counters,
    /// Summaries given out and not yet done, by job id (provider `native`).
    pub(super) pending: HashMap<u64, Pending>,
    /// Summaries queued for the host to take.
    pub(super) jobs: Vec<SummaryJob>,
    pub(super) next_job: u64,
    /// What the host does on disk for the recall files, before it sends the request decided.
    pub(super) recall_ops: Vec<RecallOp>,
}

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
        session.originals.iter().map(|o| cache.tokens(dialect, o.hash, &o.text, counter)).collect();
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
            counters: Counters::default(),
            pending: HashMap::new(),
            jobs: Vec::new(),
            next_job: 0,
            recall_ops: Vec::new(),
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }

    /// Decides one request (the path as received after the host's routing prefix, e.g.
    /// `/v1/messages?beta=true`; the `x-context-condenser-session` header, if sent). Never fails:
    /// a request the gateway cannot read is [`Decision::Untouched`] with the reason.
    pub fn request(&mut self, path: &str, header_session: Option<&str>, body: &[u8]) -> Decision {
        let Some(dialect) = Dialect::from_path(path) else {
            let path: String = path.chars().take(200).collect();
            return Decision::Untouched { session: None, reason: format!("{path:?} is not a conversation") };
        };
        match Request::parse(dialect, body) {
            Ok(request) => self.decide(&request, header_session),
            Err(e) => {
                self.totals.requests += 1;
                self.totals.untouched += 1;
                Decision::Untouched { session: None, reason: e.to_string() }
            }
        }
    }

    fn decide(&mut self, request: &Request<'_>, header: Option<&str>) -> Decision {
        let forward = self.sessions.forward_request(request, header);
        let key = forward.session;
        let name = key.to_string();
        let model = request.model.clone().unwrap_or_default();
        let counter = self.counters.for_model(&model);
        let state = self
            .states
            .entry(name.clone())
            .or_insert_with(|| SessionState::new(key.clone(), SessionStats::default()));
        let Some(session) = self.sessions.map.get(&key) else {
            // The store keeps the session a request is using; this is only a guard.
            return Decision::Untouched { session: Some(name), reason: "the session was not kept".into() };
        };
        let m = measure(session, request, &mut state.counts, counter);
        let window = window_for(&model, &self.config.windows);
        let limit = (window as f64 * self.config.threshold) as usize;
        let mut made: Option<Plan> = None;
        let mut note = None;
        let paused = state.stats.paused;
        let asked = std::mem::take(&mut state.condense_next);
        let held = std::mem::take(&mut state.hold_next);
        if paused {
            return self.forward_paused(&name, &model, window, m.client, request);
        }
        if (m.forwarded > limit || asked) && !held && request.kind == ArrayKind::Array {
            let target = match asked && m.forwarded <= limit {
                true => target(window, limit).min(m.forwarded / 2),
                false => target(window, limit),
            };
            let ask = Ask { forwarded: m.forwarded, target, whole: false };
            match plan(session, &m.counts, &m.frozen_tokens, ask, &mut state.counts, counter) {
                Ok(p) => made = Some(p),
                Err(why) => note = Some(format!("{} of {limit} tokens, not condensed: {why}", m.forwarded)),
            }
        }
        let mut recall = None;
        if let (Some(p), Some(config), false) = (made.as_mut(), &self.config.recall, self.config.observe) {
            recall = Some(attach(config, &name, session, p, &mut state.counts, counter));
        }
        if let Some(p) = made.take() {
            match self.sessions.freeze(&key, p.range.clone(), &p.text) {
                Ok(()) => {
                    made = Some(p);
                    if let Some(file) = recall {
                        self.book_recall(&name, file);
                    }
                }
                Err(e) => note = Some(format!("{} of {limit} tokens, not condensed: {e}", m.forwarded)),
            }
        }
        if let Some(p) = made.as_ref().filter(|_| self.config.provider == "native" && !self.config.observe) {
            self.queue_summary(&key, &model, p.task_end, p.range.clone(), &p.text);
        }
        let state = self.states.get_mut(&name).expect("the session's state was made above");
        let forwarded = m.forwarded.saturating_sub(made.as_ref().map_or(0, |p| p.saved));
        let body = match (&made, self.sessions.frozen(&key)) {
            (Some(_), Some(frozen)) => splice(request, frozen).0.into_owned(),
            _ => forward.body.into_owned(),
        };
        let observe = self.config.observe;
        let price = saved_price(&model, state.stats.usage.cache_read > 0);
        state.last_forwarded = forwarded;
        state.stats.last_tokens_client = m.client as u64;
        state.stats.last_tokens_forwarded = forwarded as u64;
        state.stats.window = window as u64;
        let spliced = std::mem::take(&mut state.reshaped);
        for stats in [&mut state.stats, &mut self.totals] {
            stats.model.clone_from(&model);
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
                stats.cost_saved_usd += saved as f64 * price;
            }
            stats.note.clone_from(&note);
        }
        self.forget_states();
        if observe {
            let what = match &made {
                Some(p) => format!(" (condensing messages {}..{} now)", p.range.start, p.range.end),
                None => String::new(),
            };
            let reason = format!("observe: would forward {forwarded} of {} tokens{what}", m.client);
            return Decision::Untouched { session: Some(name), reason };
        }
        Decision::Forward {
            session: name,
            body: body.into_bytes(),
            condensed_now: made.is_some() || spliced,
            tokens_client: m.client,
            tokens_forwarded: forwarded,
        }
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
        state.last_forwarded = client;
        state.stats.last_tokens_client = client as u64;
        state.stats.last_tokens_forwarded = client as u64;
        state.stats.window = window as u64;
        for stats in [&mut state.stats, &mut self.totals] {
            stats.model = model.to_owned();
            stats.requests += 1;
            stats.tokens_client += client as u64;
            stats.tokens_forwarded += client as u64;
            stats.note = Some("paused: forwarded as the client sent it".into());
        }
        Decision::Forward {
            session: name.to_owned(),
            body: request.body.as_bytes().to_vec(),
            condensed_now: false,
            tokens_client: client,
            tokens_forwarded: client,
        }
    }

    /// Anthropic's `/v1/messages/count_tokens`: the input tokens of the request as the gateway
    /// would forward it, so the client measures what the model will see (and its own compaction
    /// stays idle while the gateway keeps the request small). `None` when the gateway would
    /// forward the request unchanged: the host passes it through for the upstream's exact
    /// count. Nothing is learned or condensed here.
    pub fn count_tokens(&mut self, header_session: Option<&str>, body: &[u8]) -> Option<usize> {
        if self.config.observe {
            return None;
        }
        let request = Request::parse(Dialect::AnthropicMessages, body).ok()?;
        let incoming: Vec<(u64, &str)> =
            request.messages.iter().map(|m| (fnv1a(m.get().as_bytes()), m.get())).collect();
        let dialect = Dialect::AnthropicMessages;
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
    /// the body is not the session's latest: the host passes the error through.
    pub fn too_long(&mut self, session: &str, body: &[u8]) -> Option<Vec<u8>> {
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
        let incoming: Vec<(u64, &str)> =
            request.messages.iter().map(|m| (fnv1a(m.get().as_bytes()), m.get())).collect();
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
        let mut p = plan(held, &m.counts, &m.frozen_tokens, ask, &mut state.counts, counter).ok()?;
        if held.frozen.iter().any(|f| f.range == p.range) {
            return None;
        }
        let recall =
            self.config.recall.as_ref().map(|c| attach(c, session, held, &mut p, &mut state.counts, counter));
        self.sessions.freeze(&key, p.range.clone(), &p.text).ok()?;
        if let Some(file) = recall {
            self.book_recall(session, file);
        }
        if self.config.provider == "native" {
            // Without a summary the ledger stays: the retry has it either way.
            self.queue_summary(&key, &model, p.task_end, p.range.clone(), &p.text);
        }
        let state = self.states.get_mut(session)?;
        let price = saved_price(&model, state.stats.usage.cache_read > 0);
        for stats in [&mut state.stats, &mut self.totals] {
            stats.too_long_retries += 1;
            stats.condensations += 1;
            stats.tokens_forwarded = stats.tokens_forwarded.saturating_sub(p.saved as u64);
            stats.cost_saved_usd += p.saved as f64 * price;
        }
        let frozen = self.sessions.frozen(&key)?;
        Some(splice(&request, frozen).0.into_owned().into_bytes())
    }

    /// Usage the host read from the upstream's answer to a request of `session`.
    pub fn usage(&mut self, session: &str, usage: GatewayUsage) {
        let Some(state) = self.states.get_mut(session) else {
            self.totals.add_usage(usage, &crate::profile::Prices::default());
            return;
        };
        let prices = model_prices(&state.stats.model);
        state.stats.add_usage(usage, &prices);
        self.totals.add_usage(usage, &prices);
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

    /// Drops the states of the sessions the store forgot; their recall files go too.
    pub(super) fn forget_states(&mut self) {
        let sessions = &self.sessions;
        let ops = &mut self.recall_ops;
        self.states.retain(|_, s| {
            let held = sessions.messages(&s.key).is_some();
            if !held {
                ops.extend(s.recall.drain(..).map(|k| RecallOp::Remove { path: k.path }));
            }
            held
        });
    }
}

/// US dollars a token removed from a request of `model` would have cost: its cache-read price
/// once the session reads from the cache (the removed tokens sat in the cached prefix), else its
/// input price.
fn saved_price(model: &str, caching: bool) -> f64 {
    let p = model_prices(model);
    (if caching { p.cache_read } else { p.input }) / 1_000_000.0
}

/// A session's recall figures, from the files it keeps.
fn sync_recall_stats(state: &mut SessionState) {
    state.stats.recall_files = state.recall.len() as u64;
    state.stats.recall_bytes = state.recall.iter().map(|k| k.bytes as u64).sum();
}
