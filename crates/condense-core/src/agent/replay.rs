//! A recorded session replayed turn by turn under a condensation policy, and billed (issue 29,
//! `condense replay`): each assistant answer is a turn. Before it, the request the chat would send
//! (the conversation so far, condensed as the policy decided) is billed under the profile's prices
//! by a [`PrefixCache`]: the longest prefix sent before within the cache lifetime is read, the rest
//! written. The recorded answer is then appended as the model's, whatever the condensations did.
//! A summary call is billed the same way (its prefix read when it is built on the chat's
//! conversation, the rest uncached) plus its answer at the output price.
//!
//! Requests are shaped as the chat shapes them ([`ApiAdapter`]: the system prompt, then the turns),
//! so the blocks the cache keys on are the ones the LLM layer sends.

use std::cell::RefCell;
use std::hash::{DefaultHasher, Hash, Hasher};

use futures::StreamExt;
use futures::stream::LocalBoxStream;
use serde::Serialize;

use super::cache::{Billed, CACHE_LIFETIME_MS, PrefixCache, Session, weigh};
use super::policy::min_gain_tokens;
use super::turn::{chat_request, live_conversation};
use crate::error::CondenseError;
use crate::host::{AbortSignal, Clock};
use crate::ledger::{Haystack, Ledger, check_probes_in};
use crate::limits::{AutoCondense, request_limit};
use crate::llm::{ApiAdapter, LlmProfile, LlmProvider, PromptAdapter, PromptBundle, StreamEvent, Usage};
use crate::manager::CondensationManager;
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
    /// How long the cache keeps a prefix.
    pub lifetime_ms: i64,
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
            lifetime_ms: CACHE_LIFETIME_MS,
            probes: Vec::new(),
        }
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
    /// Turns (assistant answers) replayed.
    pub turns: usize,
    /// The policy's figures at each condensation ("costs $X now · saves ≈$Y over the next N turns").
    pub notes: Vec<String>,
}

/// Where the replay's bill is kept while a summary call borrows the cache.
#[derive(Debug)]
struct Meter {
    cache: PrefixCache,
    now_ms: i64,
    billed: Billed,
    summary_cost: f64,
    prices: Prices,
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
        let blocks = blocks_of(bundle, self.tokens);
        {
            let mut m = self.meter.borrow_mut();
            let now = m.now_ms;
            let billed = m.cache.bill(&blocks, now, false);
            let prices = m.prices;
            m.summary_cost += billed.cost(&prices);
            add(&mut m.billed, billed);
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
                        m.summary_cost += m.prices.cost(&Usage::new(0, output));
                    }
                    StreamEvent::Start { .. } => {}
                }
                event
            })
            .boxed_local()
    }
}

fn add(total: &mut Billed, b: Billed) {
    total.read += b.read;
    total.write += b.write;
    total.uncached += b.uncached;
}

/// A request's blocks as the cache keys them: the system prompt, then each turn, as the API
/// adapter shapes them.
fn blocks_of(bundle: &PromptBundle, tokens: &dyn TokenCounter) -> Vec<(u64, usize)> {
    let api = ApiAdapter.to_api_request(bundle, &crate::profile::ProviderCapabilities::default());
    let mut out = Vec::with_capacity(api.messages.len() + 1);
    if let Some(system) = &api.system {
        out.push((hash(&("system", system)), tokens.count_text(system) + TOKENS_PER_TURN));
    }
    for m in &api.messages {
        out.push((hash(&(m.role.as_str(), &m.content)), tokens.count_text(&m.content) + TOKENS_PER_TURN));
    }
    out
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
    let prices = profile.prices();
    let limit = request_limit(profile.context_window, profile.output_limit());
    let threshold = options.auto.threshold_for(profile.threshold_percent).unwrap_or(100);
    let cap = limit.min(profile.context_window * usize::from(threshold) / 100);
    let min_gain = min_gain_tokens(profile.context_window, options.auto.min_gain_percent);
    let meter = RefCell::new(Meter {
        cache: PrefixCache::new(options.lifetime_ms),
        now_ms: 0,
        billed: Billed::default(),
        summary_cost: 0.0,
        prices,
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
        probes: 0,
        turns: 0,
        notes: Vec::new(),
    };
    let mut working = Conversation {
        system: session.system.clone(),
        tools: session.tools.clone(),
        ..Conversation::default()
    };
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
        let blocks = blocks_of(&bundle, tokens);
        // The request's size as the chat measures it against its limit.
        let size = tokens.count_request(working.system.as_deref(), &working.api_view());
        report.peak_context = report.peak_context.max(size);
        if size > limit {
            report.over_limit += 1;
        }
        let billed = meter.borrow_mut().cache.bill(&blocks, now, true);
        input_cost += billed.cost(&prices);
        add(&mut meter.borrow_mut().billed, billed);
        sent = Some(working.api_view().len());
        working.messages.push(message.clone());
    }
    let m = meter.into_inner();
    report.summary_cost = m.summary_cost;
    report.input_cost = input_cost + m.summary_cost;
    report.cache_read_tokens = m.billed.read;
    report.cache_write_tokens = m.billed.write;
    report.uncached_tokens = m.billed.uncached;
    let originals: Vec<&Message> = session.messages.iter().filter(|m| m.is_visible()).collect();
    let mut probes = Ledger::of(&originals).probes();
    probes.extend(options.probes.iter().map(|p| crate::ledger::Probe {
        label: "probe file".into(),
        needle: p.clone(),
        restore: String::new(),
    }));
    let view = working.api_view();
    let (kept, _) = check_probes_in(&probes, &Haystack::of(&view));
    report.probes = probes.len();
    report.probes_kept = kept.len();
    report.retention = if probes.is_empty() { 1.0 } else { kept.len() as f64 / probes.len() as f64 };
    Ok(report)
}
