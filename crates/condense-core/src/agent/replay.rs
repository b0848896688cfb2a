//! A recorded session replayed turn by turn under a condensation policy, and billed (issue 29,
//! `condense replay`): each assistant answer is a turn. Before it, the request the chat would send
//! (the conversation so far, condensed as the policy decided) is billed under the profile's prices
//! by a model of the provider's prompt cache ([`PromptCache`], issue 40): for an Anthropic profile,
//! a prefix is written only at the breakpoints the request carries (the system prompt's and the
//! moving one on the last turn) and read only within the lookback of a later breakpoint, each
//! model's minimum length observed, 5-minute or 1-hour lifetimes priced as written (1.25× and 2×
//! the input price); for an OpenAI-compatible one, automatically in 128-token steps past 1,024.
//! The recorded answer is then appended as the model's, whatever the condensations did. A summary
//! call is billed the same way (its prefix read when it is built on the chat's conversation, the
//! rest uncached) plus its answer at the output price.
//!
//! Requests are shaped as the chat shapes them ([`ApiAdapter`]: the system prompt, then the turns),
//! so the blocks the cache keys on are the ones the LLM layer sends. A client's own system prompt
//! and tool definitions ([`ClientContext`], which the files of the agents' sessions do not carry)
//! go before them, in the system prompt, as a real client's requests carry them.

use std::cell::RefCell;
use std::hash::{DefaultHasher, Hash, Hasher};

use futures::StreamExt;
use futures::stream::LocalBoxStream;
use serde::Serialize;

use super::cache::{Session, weigh};
use super::policy::min_gain_tokens;
use super::turn::{chat_request, live_conversation};
use crate::billing::{Billed, Block, CacheRules, PromptCache, Rates, Ttl, model_prices};
use crate::error::CondenseError;
use crate::host::{AbortSignal, Clock};
use crate::ledger::{Haystack, Ledger, check_probes_in};
use crate::limits::{AutoCondense, request_limit};
use crate::llm::LlmKind;
use crate::llm::{ApiAdapter, LlmProfile, LlmProvider, PromptAdapter, PromptBundle, StreamEvent};
use crate::manager::CondensationManager;
use crate::model::hash::{fnv1a, fnv1a_from};
use crate::model::{Conversation, Message, Role};
use crate::profile::Prices;
use crate::provider::{CondensationOptions, Needs, Services};
use crate::tokens::TokenCounter;

/// Tokens a turn costs besides its text.
const TOKENS_PER_TURN: usize = 4;
/// The time between two turns of a session whose messages carry no time.
const UNTIMED_TURN_MS: i64 = 30_000;

/// When a replay condenses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayPolicy {
    /// Never: the window is ignored (the baseline of what the session would cost whole).
    None,
    /// At the threshold percent of the window, or the request limit.
    Threshold,
    /// When it pays ([`cache::weigh`]), and always at the threshold or the request limit.
    CacheAware,
}

impl ReplayPolicy {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayPolicy::None => "none",
            ReplayPolicy::Threshold => "threshold",
            ReplayPolicy::CacheAware => "cache-aware",
        }
    }
}

/// How to replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The policy.
    pub policy: ReplayPolicy,
    /// The condensation provider's id.
    pub provider: String,
    /// The threshold and minimum gain.
    pub auto: AutoCondense,
    /// How long the cache keeps a prefix after its last use: Anthropic's 5 minutes (the default)
    /// or 1 hour (its writes billed at 2× the input price).
    pub ttl: Ttl,
    /// The client's own system prompt and tool definitions, sent before the session's.
    pub context: Option<ClientContext>,
    /// Phrases that must survive, besides those the state ledger derives from the session.
    pub probes: Vec<String>,
}

impl ReplayOptions {
    /// A replay under `policy` with `provider`, the default threshold and cache lifetime.
    pub fn new(policy: ReplayPolicy, provider: impl Into<String>) -> Self {
        ReplayOptions {
            policy,
            provider: provider.into(),
            auto: AutoCondense::default(),
            ttl: Ttl::FiveMinutes,
            context: None,
            probes: Vec::new(),
        }
    }
}

/// What a client sends with every request besides the conversation: its system prompt and its
/// tool definitions (Claude Code's, Codex's, Cline's: some thousands of tokens each), which the
/// session files the replay reads do not carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct ClientContext {
    /// The client it is shaped after.
    #[serde(default)]
    pub client: String,
    /// Its system prompt.
    #[serde(default)]
    pub system: String,
    /// Its tool definitions, as its requests carry them.
    #[serde(default)]
    pub tools: Vec<serde_json::Value>,
}

impl ClientContext {
    /// The system prompt a chat would send with it: the client's prompt, its tools written out
    /// (where a client that describes its tools in its prompt puts them, and as many tokens as
    /// an API's tool definitions), then the session's own system prompt.
    pub fn system_with(&self, own: Option<&str>) -> String {
        let mut parts = vec![self.system.clone()];
        if !self.tools.is_empty() {
            let tools: Vec<String> = self.tools.iter().map(|t| t.to_string()).collect();
            parts.push(format!("# Tools\n\n{}", tools.join("\n")));
        }
        parts.extend(own.map(str::to_owned));
        parts.retain(|p| !p.is_empty());
        parts.join("\n\n")
    }
}

/// What a replay billed and kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// The policy.
    pub policy: ReplayPolicy,
    /// US dollars of input billed: every request's, and the summary calls' whole cost (their
    /// answers included).
    pub input_cost: f64,
    /// Of `input_cost`, the summary calls'.
    pub summary_cost: f64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: usize,
    /// Input tokens written to the cache.
    pub cache_write_tokens: usize,
    /// Input tokens neither read nor written.
    pub uncached_tokens: usize,
    /// The largest request, in tokens.
    pub peak_context: usize,
    /// Requests over the request limit.
    pub over_limit: usize,
    /// Condensations applied.
    pub condensations: usize,
    /// Condensations run but not applied (failed, or saved too little).
    pub not_applied: usize,
    /// Probes found in the last request, over the probes.
    pub retention: f64,
    /// Probes found.
    pub probes_kept: usize,
    /// Probes looked for.
    pub probes: usize,
    /// The probes not found, by label.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Turns (assistant answers) replayed.
    pub turns: usize,
    /// The policy's figures at each condensation ("costs $X now · saves ≈$Y over the next N turns").
    pub notes: Vec<String>,
}

/// Where the replay's bill is kept while a summary call borrows the cache.
#[derive(Debug)]
struct Meter {
    cache: PromptCache,
    now_ms: i64,
    billed: Billed,
    summary_cost: f64,
    rates: Rates,
    ttl: Ttl,
}

/// The summary model, billed by the replay's cache: its request's blocks go through the cache
/// (reads, nothing written), its answer at the output price.
struct Metered<'a> {
    inner: &'a dyn LlmProvider,
    meter: &'a RefCell<Meter>,
    tokens: &'a dyn TokenCounter,
}

#[async_trait::async_trait(?Send)]
impl LlmProvider for Metered<'_> {
    fn profile(&self) -> &LlmProfile {
        self.inner.profile()
    }

    fn adapter(&self) -> &dyn PromptAdapter {
        self.inner.adapter()
    }

    fn serves(&self, used: crate::llm::ModelUse) -> Result<(), crate::error::LlmError> {
        self.inner.serves(used)
    }

    fn stream_completion<'a>(
        &'a self,
        bundle: &PromptBundle,
        abort: &AbortSignal,
    ) -> LocalBoxStream<'a, StreamEvent> {
        {
            let mut m = self.meter.borrow_mut();
            let blocks = blocks_of(bundle, self.tokens, m.ttl);
            let now = m.now_ms;
            let billed = m.cache.bill(&blocks, now);
            m.summary_cost += m.rates.cost(&billed, 0.0);
            m.billed.add(&billed);
        }
        let text = RefCell::new(String::new());
        self.inner
            .stream_completion(bundle, abort)
            .map(move |event| {
                match &event {
                    StreamEvent::Delta(d) => text.borrow_mut().push_str(d),
                    StreamEvent::Done(_) | StreamEvent::Failed(_) => {
                        let output = self.tokens.count_text(&text.borrow()) as u64;
                        let mut m = self.meter.borrow_mut();
                        m.summary_cost += m.rates.cost(&Billed::default(), output as f64);
                    }
                    StreamEvent::Start { .. } => {}
                }
                event
            })
            .boxed_local()
    }
}

/// A request's blocks as the cache keys them: the system prompt, then each turn, as the API
/// adapter shapes them, the breakpoints where it puts them (the system prompt's, and the turn
/// that closes the prefix), of lifetime `ttl`.
fn blocks_of(bundle: &PromptBundle, tokens: &dyn TokenCounter, ttl: Ttl) -> Vec<Block> {
    let api = ApiAdapter.to_api_request(bundle, &crate::profile::ProviderCapabilities::default());
    let marked = api.cache.as_ref().map(|c| c.breakpoint);
    let mut key = fnv1a(b"replay");
    let mut block = |h: u64, n: usize, breakpoint: bool| {
        key = fnv1a_from(key, &h.to_le_bytes());
        Block { key, tokens: n as f64, breakpoint: breakpoint.then_some(ttl) }
    };
    let mut out = Vec::with_capacity(api.messages.len() + 1);
    if let Some(system) = &api.system {
        out.push(block(
            hash(&("system", system)),
            tokens.count_text(system) + TOKENS_PER_TURN,
            marked.is_some(),
        ));
    }
    for (i, m) in api.messages.iter().enumerate() {
        let n = tokens.count_text(&m.content) + TOKENS_PER_TURN;
        out.push(block(hash(&(m.role.as_str(), &m.content)), n, marked == Some(i)));
    }
    out
}

/// The cache rules of `profile`'s provider: Anthropic's breakpoints with the model's minimum
/// (1,024 tokens for a model the price table does not know), else an automatic cache.
fn cache_rules(profile: &LlmProfile) -> CacheRules {
    match profile.kind {
        LlmKind::Anthropic => match model_prices(&profile.model).map(|p| p.cache) {
            Some(rules @ CacheRules::Breakpoints { .. }) => rules,
            _ => CacheRules::Breakpoints { min_tokens: 1024 },
        },
        _ => CacheRules::Automatic { min_tokens: 1024, step: 128 },
    }
}

/// The profile's prices as the cache bills them: a 1-hour write at 2× the input price where a
/// write costs more than an uncached token (Anthropic), else at the write price.
fn rates(prices: &Prices) -> Rates {
    let surcharge = prices.cache_write > prices.input;
    Rates {
        input: prices.input,
        output: prices.output,
        cache_write_5m: prices.cache_write,
        cache_write_1h: if surcharge { prices.input * 2.0 } else { prices.cache_write },
        cache_read: prices.cache_read,
    }
}

fn hash(value: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// What the last condensation left, for the next weighing.
struct LastCondensation {
    after: usize,
    summary_tokens: usize,
    turn: usize,
}

/// Replays `session` (see the module's documentation). `llm` is the chat model, which writes the
/// summaries too; a provider that needs one fails without it.
#[allow(clippy::too_many_arguments)]
pub async fn replay(
    session: &Conversation,
    profile: &LlmProfile,
    manager: &CondensationManager,
    options: &ReplayOptions,
    tokens: &dyn TokenCounter,
    clock: &dyn Clock,
    llm: Option<&dyn LlmProvider>,
) -> Result<ReplayReport, CondenseError> {
    let provider =
        manager.registry().get(&options.provider).ok_or_else(|| CondenseError::ProviderNotFound {
            id: options.provider.clone(),
            known: manager.registry().known_ids(),
        })?;
    let needs_llm = provider.meta().needs == Needs::Llm;
    if needs_llm && llm.is_none() && options.policy != ReplayPolicy::None {
        return Err(CondenseError::InvalidConfig {
            id: options.provider.clone(),
            message: "needs an LLM: pass --llm KIND --model M, or --profile FILE".into(),
        });
    }
    let mut prices = profile.prices();
    let rates = rates(&prices);
    if options.ttl != Ttl::FiveMinutes {
        // The policy weighs a write at what it costs.
        prices.cache_write = rates.cache_write_1h;
    }
    let limit = request_limit(profile.context_window, profile.output_limit());
    let threshold = options.auto.threshold_for(profile.threshold_percent).unwrap_or(100);
    let cap = limit.min(profile.context_window * usize::from(threshold) / 100);
    let min_gain = min_gain_tokens(profile.context_window, options.auto.min_gain_percent);
    let meter = RefCell::new(Meter {
        cache: PromptCache::new(cache_rules(profile)),
        now_ms: 0,
        billed: Billed::default(),
        summary_cost: 0.0,
        rates,
        ttl: options.ttl,
    });
    let key = "replay";
    let mut report = ReplayReport {
        policy: options.policy,
        input_cost: 0.0,
        summary_cost: 0.0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        uncached_tokens: 0,
        peak_context: 0,
        over_limit: 0,
        condensations: 0,
        not_applied: 0,
        retention: 1.0,
        probes_kept: 0,
        missing: Vec::new(),
        probes: 0,
        turns: 0,
        notes: Vec::new(),
    };
    let system = match &options.context {
        Some(context) => Some(context.system_with(session.system.as_deref())),
        None => session.system.clone(),
    };
    let mut working = Conversation { system, tools: session.tools.clone(), ..Conversation::default() };
    let mut now = 0i64;
    let mut sent: Option<usize> = None;
    let mut last: Option<LastCondensation> = None;
    let mut input_cost = 0.0;
    for message in session.messages.iter().filter(|m| m.is_visible()) {
        now = if message.ts > now { message.ts } else { now + UNTIMED_TURN_MS };
        if message.role != Role::Assistant || working.api_view().is_empty() {
            working.messages.push(message.clone());
            continue;
        }
        report.turns += 1;
        meter.borrow_mut().now_ms = now;
        let view = working.api_view();
        let context = tokens.count_request(working.system.as_deref(), &view);
        let condense = match options.policy {
            ReplayPolicy::None => false,
            ReplayPolicy::Threshold => context >= cap,
            ReplayPolicy::CacheAware => {
                let warm = meter.borrow().cache.is_warm(now);
                let session = Session {
                    prices,
                    system: working.system.as_deref(),
                    view: &view,
                    warm_prefix: sent.filter(|_| warm),
                    turns: report.turns,
                    last: last.as_ref().map(|l| (l.after, l.summary_tokens, report.turns - l.turn)),
                    needs_llm,
                    summary_from_cache: true,
                    limit: cap,
                };
                let w = session.weighing(tokens);
                let e = weigh(&w);
                let condense = e.condense && manager.accepts(&working, Some(&options.provider), tokens);
                if condense {
                    report.notes.push(format!("turn {}: {} tokens: {}", report.turns, context, e.describe()));
                }
                condense
            }
        };
        if condense {
            let live = live_conversation(&working, key, sent);
            let metered = llm.map(|inner| Metered { inner, meter: &meter, tokens });
            let mut services = Services::new(tokens, clock).with_live(Some(&live));
            if let Some(m) = &metered {
                services = services.with_llm(m);
            }
            let ceiling = (context > limit).then_some(limit);
            let options_run =
                CondensationOptions { is_automatic: true, ceiling_tokens: ceiling, ..Default::default() };
            let result = manager.condense(&working, Some(&options.provider), options_run, services).await?;
            let after = result.new_context_tokens.unwrap_or(context);
            if result.error.is_none() && context.saturating_sub(after) >= min_gain.min(context / 10) {
                let summary_tokens = result.summary.as_deref().map_or(0, |s| tokens.count_text(s));
                working.messages = result.messages;
                report.condensations += 1;
                if let Some(note) = report.notes.last_mut() {
                    note.push_str(&format!(" → {after} tokens"));
                }
                last = Some(LastCondensation { after, summary_tokens, turn: report.turns });
            } else {
                report.not_applied += 1;
            }
        }
        let bundle = chat_request(&working, key);
        let blocks = blocks_of(&bundle, tokens, options.ttl);
        // The request's size as the chat measures it against its limit.
        let size = tokens.count_request(working.system.as_deref(), &working.api_view());
        report.peak_context = report.peak_context.max(size);
        if size > limit {
            report.over_limit += 1;
        }
        let billed = meter.borrow_mut().cache.bill(&blocks, now);
        input_cost += rates.cost(&billed, 0.0);
        meter.borrow_mut().billed.add(&billed);
        sent = Some(working.api_view().len());
        working.messages.push(message.clone());
    }
    let m = meter.into_inner();
    report.summary_cost = m.summary_cost;
    report.input_cost = input_cost + m.summary_cost;
    report.cache_read_tokens = m.billed.read.round() as usize;
    report.cache_write_tokens = (m.billed.write_5m + m.billed.write_1h).round() as usize;
    report.uncached_tokens = m.billed.uncached.round() as usize;
    let originals: Vec<&Message> = session.messages.iter().filter(|m| m.is_visible()).collect();
    let mut probes = Ledger::of(&originals).probes();
    probes.extend(options.probes.iter().map(|p| crate::ledger::Probe {
        label: "probe file".into(),
        needle: p.clone(),
        restore: String::new(),
    }));
    let view = working.api_view();
    let (kept, missing) = check_probes_in(&probes, &Haystack::of(&view));
    report.missing = missing.iter().map(|p| p.label.clone()).collect();
    report.probes = probes.len();
    report.probes_kept = kept.len();
    report.retention = if probes.is_empty() { 1.0 } else { kept.len() as f64 / probes.len() as f64 };
    Ok(report)
}
