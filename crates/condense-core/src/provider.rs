//! The condensation provider contract and the one template that runs every provider (seed 000):
//! validate → time → `condense_internal` → checks and metrics; on any error the original messages
//! come back untouched with a typed error.
//!
//! No provider can skip this path: `condense_internal` takes a [`TemplateToken`], which only this
//! module can make, so the only way to run a provider is [`run_provider`].

use std::cell::RefCell;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::config::{ConfigField, Form, NoConfig};
use crate::error::{CondenseError, ErrorInfo};
use crate::host::{AbortSignal, Clock, Timer};
use crate::ledger::{self, Haystack, Later, Ledger};
use crate::llm::LlmProvider;
use crate::model::{ContentBlock, Message, api_view, check_tool_pairs, next_condense_id, same_blocks};
use crate::tokens::TokenCounter;

/// Proof that the caller is [`run_provider`]. Providers receive it; only this module makes one.
#[derive(Debug)]
pub struct TemplateToken(());

/// What a provider condenses.
#[derive(Debug, Clone, Copy)]
pub struct CondensationContext<'a> {
    /// The whole conversation, hidden messages included.
    pub messages: &'a [Message],
    /// The system prompt, counted in the context size.
    pub system: Option<&'a str>,
    /// Tokens of the API view before condensing, system prompt included.
    pub prev_context_tokens: usize,
}

impl CondensationContext<'_> {
    /// The messages the model sees.
    pub fn view(&self) -> Vec<&Message> {
        api_view(self.messages)
    }

    /// Indices of the visible messages this run must leave visible and unchanged: the pinned ones
    /// and their tool-pair partners (see [`crate::pins`]).
    pub fn pinned(&self) -> std::collections::BTreeSet<usize> {
        crate::pins::kept_by_pins(self.messages)
    }

    /// Tokens of a candidate message list, counted the same way as `prev_context_tokens`.
    pub fn tokens_of(&self, tokens: &dyn TokenCounter, messages: &[Message]) -> usize {
        tokens.count_request(self.system, &api_view(messages))
    }
}

/// A run's target and its floor (see [`CondensationProvider::target_and_floor`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetFloor {
    /// The tokens the run works to.
    pub target: usize,
    /// The fewest tokens it can leave.
    pub floor: usize,
    /// The messages it keeps at the end.
    pub keep_last: usize,
}

/// How to condense: the caller's wishes and the provider's configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CondensationOptions {
    /// Tokens to get down to, where the provider works to a target.
    pub target_tokens: Option<usize>,
    /// The most tokens the context may have after the run: the model's request limit, set by the
    /// chat agent when the context is past it (or the model refused it as too long). A provider
    /// working to a target takes the lower of its target and this; a summary keeps a shorter tail
    /// rather than leave the context over it.
    pub ceiling_tokens: Option<usize>,
    /// Messages at the end that must stay as they are.
    pub keep_last: Option<usize>,
    /// Whether the condensation was triggered automatically rather than by the user.
    pub is_automatic: bool,
    /// The provider's configuration (from the registry), as JSON.
    pub config: serde_json::Value,
    /// Set by a pipeline on its passes: the pipeline checked its target against its floor, so a
    /// pass's own (lowered by the pipeline's ledger) is not refused for being below.
    #[serde(skip)]
    pub floor_checked: bool,
}

impl CondensationOptions {
    /// The target of a provider whose own is `default`: the caller's target if it set one, never
    /// above the ceiling.
    pub fn target_or(&self, default: usize) -> usize {
        let target = self.target_tokens.unwrap_or(default);
        self.ceiling_tokens.map_or(target, |c| target.min(c))
    }

    /// The caller's target, or the ceiling, whichever is lower; `None` when there is neither.
    pub fn target_within(&self) -> Option<usize> {
        match (self.target_tokens, self.ceiling_tokens) {
            (Some(t), Some(c)) => Some(t.min(c)),
            (t, c) => t.or(c),
        }
    }

    /// The configuration read as the provider's type (`null`: the defaults); one it cannot read is
    /// `invalid_config` for provider `id`.
    pub fn typed_config<T: DeserializeOwned + Default>(&self, id: &str) -> Result<T, CondenseError> {
        crate::config::parse(&self.config)
            .map_err(|message| CondenseError::InvalidConfig { id: id.to_owned(), message })
    }
}

/// What a run has spent so far, in US dollars: providers add each LLM call's cost as soon as the
/// model has answered, so that a run that fails afterwards (a later call failing, a summary that
/// would grow the context) still reports what it cost. [`run_provider`] gives every run its own
/// meter and reads it on the failed path.
#[derive(Debug, Default)]
pub struct SpendMeter {
    spent: std::cell::Cell<f64>,
}

impl SpendMeter {
    /// Adds what one call cost.
    pub fn add(&self, usd: f64) {
        if usd.is_finite() && usd > 0.0 {
            self.spent.set(self.spent.get() + usd);
        }
    }

    /// What was spent so far.
    pub fn total(&self) -> f64 {
        self.spent.get()
    }
}

/// What the host lends a provider for one run.
#[derive(Clone, Copy)]
pub struct Services<'a> {
    /// Counts tokens.
    pub tokens: &'a dyn TokenCounter,
    /// Times the run.
    pub clock: &'a dyn Clock,
    /// The LLM that writes summaries, for the providers that need one: the condensing profile's
    /// client when the user chose a separate one, else the chat's.
    pub llm: Option<&'a dyn LlmProvider>,
    /// Cancels the LLM call in flight.
    pub abort: Option<&'a AbortSignal>,
    /// The run's spending, set by [`run_provider`]; see [`Services::spend`].
    pub meter: Option<&'a SpendMeter>,
    /// Gives the host's thread a turn between the steps of a run ([`Services::pause`]).
    pub timer: Option<&'a dyn Timer>,
}

impl<'a> Services<'a> {
    /// Services without an LLM.
    pub fn new(tokens: &'a dyn TokenCounter, clock: &'a dyn Clock) -> Self {
        Services { tokens, clock, llm: None, abort: None, meter: None, timer: None }
    }

    /// The same services with an LLM to summarize with.
    pub fn with_llm(self, llm: &'a dyn LlmProvider) -> Self {
        Services { llm: Some(llm), ..self }
    }

    /// The same services with an abort signal for the LLM call.
    pub fn with_abort(self, abort: &'a AbortSignal) -> Self {
        Services { abort: Some(abort), ..self }
    }

    /// The same services with a timer whose turns [`Services::pause`] gives the host.
    pub fn with_timer(self, timer: &'a dyn Timer) -> Self {
        Services { timer: Some(timer), ..self }
    }

    /// Gives the host's thread a turn, when the host asked for turns ([`Timer::turn`]): the
    /// template pauses between counting a run's input, running the provider and counting its
    /// result, and a pipeline between its passes, so that no single step of a large run holds a
    /// host's thread for long.
    pub async fn pause(&self) {
        if let Some(timer) = self.timer {
            timer.turn().await;
        }
    }

    /// Records money spent by this run (an LLM call that answered), so that the template reports
    /// it even when the run fails later. A nested run (a pipeline running another provider through
    /// [`run_provider`]) has its own meter; its result's `cost` is what the caller adds.
    pub fn spend(&self, usd: f64) {
        if let Some(meter) = self.meter {
            meter.add(usd);
        }
    }
}

/// What `condense_internal` returns; the template adds token counts and metrics.
#[derive(Debug, Clone, Default)]
pub struct Condensed {
    /// The whole new conversation, hidden messages included.
    pub messages: Vec<Message>,
    /// A summary text, for providers that write one.
    pub summary: Option<String>,
    /// What the run cost, in US dollars.
    pub cost: f64,
    /// Provider-specific metrics, kept in the result's metrics.
    pub metrics: serde_json::Map<String, serde_json::Value>,
}

/// Metrics of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Metrics {
    /// The provider that ran.
    pub provider_id: String,
    /// Wall time of the run, by the injected clock.
    pub time_elapsed_ms: f64,
    /// Tokens before minus tokens after; absent when the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_saved: Option<i64>,
    /// Provider-specific metrics.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The metric key of a multi-pass run's passes: a list of [`PassMetric`].
pub const METRIC_PASSES: &str = "passes";
/// The metric key of the probes' verdict: a [`Retention`].
pub const METRIC_RETENTION: &str = "retention";
/// The metric key of the flag set when a summary was cut by its output limit: a boolean.
pub const METRIC_SUMMARY_TRUNCATED: &str = "summary_truncated";

/// One pass of a multi-pass run (`smart`), as its metrics and the chat's row show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PassMetric {
    /// The pass: a provider id (`lossless`, `superseded`, `mask`, `native`, `truncation`) or
    /// `trim_parameters`.
    pub pass: String,
    /// Tokens of the context before the pass minus after it (0 when it found nothing to do).
    pub tokens_saved: i64,
    /// Wall time of the pass, by the injected clock.
    pub time_ms: f64,
    /// US dollars the pass spent.
    pub cost: f64,
    /// Why the pass changed nothing, when it did not (e.g. `nothing_to_condense`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// The probes' verdict: how many of the facts a condensation must not lose (the user's
/// instructions, the files edited, the open todos of the hidden messages) the model still sees,
/// in the summary, the ledger or the kept messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Retention {
    /// Probes found after the run (repairs included).
    pub kept: usize,
    /// Probes checked.
    pub probes: usize,
    /// Probes the provider's own output missed and code put back.
    #[serde(default)]
    pub repaired: usize,
    /// The probes still missing, as short labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

impl Metrics {
    /// The passes of a multi-pass run, oldest first; empty for other runs.
    pub fn passes(&self) -> Vec<PassMetric> {
        self.extra.get(METRIC_PASSES).and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default()
    }

    /// The probes' verdict, when the run checked any.
    pub fn retention(&self) -> Option<Retention> {
        self.extra.get(METRIC_RETENTION).and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// Whether a summary was cut by its output limit.
    pub fn summary_truncated(&self) -> bool {
        self.extra.get(METRIC_SUMMARY_TRUNCATED).and_then(serde_json::Value::as_bool).unwrap_or(false)
    }
}

/// The outcome of a condensation. On failure `messages` are the input, untouched, and `error` says
/// why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CondensationResult {
    /// The whole conversation after the run, hidden messages included.
    pub messages: Vec<Message>,
    /// The summary, for providers that write one.
    pub summary: Option<String>,
    /// US dollars spent.
    pub cost: f64,
    /// Tokens of the new API view, system prompt included; absent on failure.
    pub new_context_tokens: Option<usize>,
    /// Why the run failed.
    pub error: Option<ErrorInfo>,
    /// Timing, gain and provider-specific figures.
    pub metrics: Option<Metrics>,
}

impl CondensationResult {
    /// Whether the run succeeded.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// The result as a document that is also a complete conversation file: the result's fields
    /// with the conversation's system prompt and tool definitions put back, so that it can be
    /// counted, viewed, undone or condensed again.
    pub fn to_document(&self, conversation: &crate::model::Conversation) -> serde_json::Value {
        let mut out = serde_json::to_value(self).expect("results serialize");
        if let Some(obj) = out.as_object_mut() {
            if let Some(system) = &conversation.system {
                obj.insert("system".into(), system.as_str().into());
            }
            if !conversation.tools.is_empty() {
                obj.insert("tools".into(), conversation.tools.clone().into());
            }
        }
        out
    }
}

/// What a provider needs besides the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Needs {
    /// Nothing: it runs anywhere (it may use an LLM when one is lent, as `smart` does).
    Nothing,
    /// An LLM in [`Services`]: it fails without one.
    Llm,
    /// A person: it applies an answer pasted by hand (`manual`).
    Person,
}

/// A condensation provider. Implementors write the hooks; [`run_provider`] runs them.
#[async_trait::async_trait(?Send)]
pub trait CondensationProvider {
    /// Stable id, e.g. `lossless`.
    fn id(&self) -> &str;
    /// Name for people.
    fn name(&self) -> &str;
    /// One sentence on what it does.
    fn description(&self) -> &str;

    /// What it needs to run besides the conversation. The default is nothing.
    fn needs(&self) -> Needs {
        Needs::Nothing
    }

    /// Its configuration type's form (see [`crate::config::ConfigForm`]), from which the three
    /// methods below derive: `Form::of::<MyConfig>()`. The default is [`NoConfig`].
    fn config_form(&self) -> Form {
        Form::of::<NoConfig>()
    }

    /// The configuration a new registry entry starts with.
    fn default_config(&self) -> serde_json::Value {
        self.config_form().default_config()
    }

    /// The form of its configuration, for settings panels.
    fn config_schema(&self) -> Vec<ConfigField> {
        self.config_form().schema()
    }

    /// Checks a configuration before the registry stores it: against the form, then read as the
    /// configuration type, then the type's own rules. An override replaces the whole check.
    fn validate_config(&self, config: &serde_json::Value) -> Result<(), String> {
        self.config_form().validate(config)
    }

    /// Checks the input before anything runs. The default rejects an empty conversation.
    fn validate(
        &self,
        ctx: &CondensationContext<'_>,
        _options: &CondensationOptions,
    ) -> Result<(), CondenseError> {
        if ctx.view().is_empty() {
            return Err(CondenseError::InvalidInput("no messages to condense".into()));
        }
        Ok(())
    }

    /// The target this run works to (the caller's, else the provider's own default) and its
    /// floor, the fewest tokens it can leave (see [`crate::providers::floor`]); `None` for a
    /// provider without a target. The template refuses a target below the floor, or, for an
    /// automatic run, works to the floor instead.
    fn target_and_floor(
        &self,
        _ctx: &CondensationContext<'_>,
        _options: &CondensationOptions,
        _tokens: &dyn TokenCounter,
    ) -> Result<Option<TargetFloor>, CondenseError> {
        Ok(None)
    }

    /// What a run would cost, in US dollars, before running it.
    fn estimate_cost(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
    ) -> f64;

    /// The provider's work. Called only by [`run_provider`], after `validate`.
    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        token: TemplateToken,
    ) -> Result<Condensed, CondenseError>;
}

/// Runs a provider the one way providers run.
pub async fn run_provider(
    provider: &dyn CondensationProvider,
    messages: &[Message],
    system: Option<&str>,
    options: &CondensationOptions,
    services: Services<'_>,
) -> CondensationResult {
    let input = RunInput::new(messages, system, services.tokens);
    let before = input.tokens();
    services.pause().await;
    let ctx = CondensationContext { messages, system, prev_context_tokens: before };
    // Every run has its own meter: what the provider spent before failing is the failure's cost.
    let meter = SpendMeter::default();
    // The input messages' counts are known now; a provider asking for one gets it by position.
    let counter = RunCounter { inner: services.tokens, input: &input };
    let services = Services { meter: Some(&meter), tokens: &counter, ..services };
    let failed = |error: CondenseError, elapsed: f64| CondensationResult {
        messages: messages.to_vec(),
        summary: None,
        cost: meter.total(),
        new_context_tokens: None,
        error: Some(error.to_info()),
        metrics: Some(Metrics {
            provider_id: provider.id().to_owned(),
            time_elapsed_ms: elapsed,
            tokens_saved: None,
            extra: Default::default(),
        }),
    };
    if let Err(e) = provider.validate(&ctx, options) {
        return failed(e, 0.0);
    }
    // A target asked for below the floor is refused up front; an automatic run, or one with the
    // provider's own target (a share of the context), works to the floor.
    let floor = match options.floor_checked {
        true => Ok(None),
        false => provider.target_and_floor(&ctx, options, services.tokens),
    };
    let floor = match floor {
        Ok(floor) => floor,
        Err(e) => return failed(e, 0.0),
    };
    // (A floor at or above the context means nothing can go: the provider says why.)
    let floor = floor.filter(|f| f.floor < ctx.prev_context_tokens);
    let raised;
    let options = match floor {
        Some(f) if f.target < f.floor && !options.is_automatic && options.target_tokens.is_some() => {
            let e =
                CondenseError::TargetBelowFloor { target: f.target, floor: f.floor, keep_last: f.keep_last };
            return failed(e, 0.0);
        }
        Some(f) if f.target < f.floor => {
            raised = CondensationOptions { target_tokens: Some(f.floor), ..options.clone() };
            &raised
        }
        _ => options,
    };
    // The ledger's room comes out of the target, so the context with it still lands within.
    let keep = ledger_on(options);
    let reserved = if keep { ledger_reserve(&ctx, options, services.tokens) } else { 0 };
    let lowered = CondensationOptions {
        target_tokens: options.target_tokens.map(|t| t.saturating_sub(reserved)),
        ceiling_tokens: options.ceiling_tokens.map(|t| t.saturating_sub(reserved)),
        ..options.clone()
    };
    let start = services.clock.now_ms();
    let outcome = attempt(provider, &input, &ctx, &lowered, options, services, keep).await;
    services.pause().await;
    let (mut condensed, mut after) = match outcome {
        Ok((c, origin)) => {
            let tokens = input.tokens_of(&c.messages, &origin, services.tokens);
            (c, tokens)
        }
        Err(e) => return failed(e, (services.clock.now_ms() - start).max(0.0)),
    };
    // A provider that calls no LLM (no summary, no cost) and whose ledger took another room than
    // the one kept for it runs once more with the room the ledger took: with part of the room
    // unused, the context lands nearer the target; over the target because the ledger took
    // more, it lands within. The better run is kept.
    let llm_free = condensed.summary.is_none() && condensed.cost == 0.0;
    if let (Some(target), true) = (options.target_tokens, reserved > 0 && llm_free) {
        let used = condensed.metrics.get("ledger").and_then(|l| l["tokens"].as_u64()).unwrap_or(0) as usize;
        let first = after;
        let unused = used < reserved && first < target;
        let over = used > reserved && first > target;
        if unused || over {
            let again =
                CondensationOptions { target_tokens: Some(target.saturating_sub(used)), ..options.clone() };
            if let Ok((c, origin)) = attempt(provider, &input, &ctx, &again, options, services, keep).await {
                let second = input.tokens_of(&c.messages, &origin, services.tokens);
                let better = match unused {
                    true => second <= target && second > first,
                    false => second < first,
                };
                if better {
                    condensed = c;
                    after = second;
                }
            }
        }
    }
    let elapsed = (services.clock.now_ms() - start).max(0.0);
    if after > before {
        return failed(CondenseError::ContextGrew { before, after }, elapsed);
    }
    let tokens_saved = i64::try_from(before).unwrap_or(i64::MAX) - i64::try_from(after).unwrap_or(0);
    let mut extra = condensed.metrics;
    // A provider that worked to the lowered target is judged against the caller's.
    if let (Some(target), true) = (options.target_tokens, reserved > 0) {
        if extra.contains_key("target_tokens") {
            extra.insert("target_tokens".into(), target.into());
            extra.insert("target_met".into(), (after <= target).into());
        }
        extra.insert("ledger_reserved_tokens".into(), reserved.into());
    }
    extra.insert("tokens_before".into(), before.into());
    extra.insert("tokens_after".into(), after.into());
    if let Some(f) = floor {
        extra.insert("floor_tokens".into(), f.floor.into());
    }
    CondensationResult {
        messages: condensed.messages,
        summary: condensed.summary,
        cost: condensed.cost,
        new_context_tokens: Some(after),
        error: None,
        metrics: Some(Metrics {
            provider_id: provider.id().to_owned(),
            time_elapsed_ms: elapsed,
            tokens_saved: Some(tokens_saved),
            extra,
        }),
    }
}

/// One run of a provider's hook with `run_options`, checked, with the ledger kept; with the
/// input position of each message of the result that is an input message (see `check_result`).
async fn attempt(
    provider: &dyn CondensationProvider,
    input: &RunInput<'_>,
    ctx: &CondensationContext<'_>,
    run_options: &CondensationOptions,
    options: &CondensationOptions,
    services: Services<'_>,
    keep: bool,
) -> Result<(Condensed, Vec<Option<usize>>), CondenseError> {
    let c = provider.condense_internal(ctx, run_options, services, TemplateToken(())).await?;
    let (c, origin) = check_result(ctx, c, input.pairs_valid, None)?;
    let (c, kept) = keep_what_matters(input, ctx, options, services.tokens, c, origin, keep);
    // The messages the last step moved over unchanged were compared above; the ones it made
    // (a ledger's host hidden, its copy) are compared now, with everything else checked again.
    check_result(ctx, c, input.pairs_valid, Some(&kept))
}

/// A run's input as the template reads it, once: each visible message's tokens, so that the
/// count of a result adds up the counts of the input messages it keeps and counts only the ones
/// the run added (never hashing the kept ones again), and whether its tool pairs were valid;
/// and, each computed on first use and shared by the run's attempts, a message's text as the
/// probes read it ([`ledger::piece`]) and what it shows of files, commands and todos
/// ([`Later::of_message`]).
struct RunInput<'a> {
    messages: &'a [Message],
    /// The system prompt with its framing, and the reply priming: `count_request` of no message.
    fixed: usize,
    /// Each message's tokens; 0 for a hidden one, which no count of a view reads.
    counts: Vec<usize>,
    /// Whether the input's API view has valid tool pairs (then the result's must too).
    pairs_valid: bool,
    pieces: RefCell<Vec<Option<String>>>,
    later: RefCell<Vec<Option<Later>>>,
}

impl<'a> RunInput<'a> {
    fn new(messages: &'a [Message], system: Option<&str>, tokens: &dyn TokenCounter) -> Self {
        let counts =
            messages.iter().map(|m| if m.is_visible() { tokens.count_message(m) } else { 0 }).collect();
        RunInput {
            messages,
            fixed: tokens.count_request(system, &[]),
            counts,
            pairs_valid: check_tool_pairs(&api_view(messages)).is_ok(),
            pieces: RefCell::new(vec![None; messages.len()]),
            later: RefCell::new(vec![None; messages.len()]),
        }
    }

    /// Tokens of the input's API view: `count_request` of it.
    fn tokens(&self) -> usize {
        self.fixed + self.counts.iter().sum::<usize>()
    }

    /// Tokens of a result's API view: `count_request` of it. `origin` says which of its messages
    /// are input messages (checked equal but for being hidden by `check_result`): their counts
    /// are known; the others are counted.
    fn tokens_of(&self, messages: &[Message], origin: &[Option<usize>], tokens: &dyn TokenCounter) -> usize {
        let visible = messages.iter().enumerate().filter(|(_, m)| m.is_visible());
        self.fixed + visible.map(|(j, m)| self.count(origin[j], m, tokens)).sum::<usize>()
    }

    /// Tokens of a visible message of a result: the count taken at the start when it is input
    /// message `origin`, else counted.
    fn count(&self, origin: Option<usize>, message: &Message, tokens: &dyn TokenCounter) -> usize {
        match origin {
            Some(i) => self.counts[i],
            None => tokens.count_message(message),
        }
    }

    /// Appends input message `i`'s text as the probes read it.
    fn push_piece(&self, i: usize, haystack: &mut Haystack) {
        let mut pieces = self.pieces.borrow_mut();
        haystack.push(pieces[i].get_or_insert_with(|| ledger::piece(&self.messages[i])));
    }

    /// What input message `i` shows of files, commands and todos, added to `later`.
    fn add_later(&self, i: usize, later: &mut Later) {
        let mut cache = self.later.borrow_mut();
        later.add(cache[i].get_or_insert_with(|| Later::of_message(&self.messages[i])));
    }
}

/// The counter a run's provider and the template's steps use: an input message (a reference into
/// the run's own list, found by its address) is answered from the count the template took at
/// the start; any other message, and every text, goes to the host's counter.
struct RunCounter<'a> {
    inner: &'a dyn TokenCounter,
    input: &'a RunInput<'a>,
}

impl TokenCounter for RunCounter<'_> {
    fn encoding(&self) -> crate::tokens::Encoding {
        self.inner.encoding()
    }

    fn count_text(&self, text: &str) -> usize {
        self.inner.count_text(text)
    }

    fn count_text_cached(&self, text: &str) -> usize {
        self.inner.count_text_cached(text)
    }

    fn count_message(&self, message: &Message) -> usize {
        let messages = self.input.messages;
        match crate::model::position_in(messages, message) {
            // A hidden input message was not counted at the start.
            Some(i) if messages[i].is_visible() => self.input.counts[i],
            _ => self.inner.count_message(message),
        }
    }
}

/// Tokens of `message` with `content` in place of its own, as the counter counts messages (its
/// cache included). The content is moved into a message with the other fields and handed back,
/// never copied.
pub(crate) fn count_with_content(
    tokens: &dyn TokenCounter,
    message: &Message,
    content: Vec<ContentBlock>,
) -> (usize, Vec<ContentBlock>) {
    let edited = Message {
        id: message.id.clone(),
        ts: message.ts,
        role: message.role,
        content,
        is_summary: message.is_summary,
        condense_id: message.condense_id.clone(),
        condense_parent: message.condense_parent.clone(),
        interrupted: message.interrupted.clone(),
        pinned: message.pinned,
    };
    (tokens.count_message(&edited), edited.content)
}

/// A message of a list the template builds from a provider's output: one of the output's own,
/// by index, or one made here (a message with the ledger added or taken off, and the original it
/// replaces, hidden). Only the made ones are new values; the list becomes messages once chosen.
#[derive(Debug)]
enum Entry {
    Kept(usize),
    Made(Message),
}

/// The messages of `entries`, the kept ones moved out of `messages`; with the input position of
/// each kept one that is an input message (by `origin`, over `messages`), `None` for the others.
fn materialize(
    entries: Vec<Entry>,
    messages: Vec<Message>,
    origin: &[Option<usize>],
) -> (Vec<Message>, Vec<Option<usize>>) {
    let mut slots: Vec<Option<Message>> = messages.into_iter().map(Some).collect();
    entries
        .into_iter()
        .map(|e| match e {
            Entry::Kept(j) => (slots[j].take().expect("an output message is kept once"), origin[j]),
            Entry::Made(m) => (m, None),
        })
        .unzip()
}

/// A provider's output as the template's last step reads it: for the messages that are input
/// messages (by `origin`), their tokens and texts come from the run's [`RunInput`]; the ones
/// the provider added are counted and read once here.
struct Output<'a> {
    input: &'a RunInput<'a>,
    messages: &'a [Message],
    origin: &'a [Option<usize>],
    pieces: RefCell<Vec<Option<String>>>,
}

impl<'a> Output<'a> {
    fn new(input: &'a RunInput<'a>, messages: &'a [Message], origin: &'a [Option<usize>]) -> Self {
        Output { input, messages, origin, pieces: RefCell::new(vec![None; messages.len()]) }
    }

    /// Appends output message `j`'s text as the probes read it.
    fn push_piece(&self, j: usize, haystack: &mut Haystack) {
        match self.origin[j] {
            Some(i) => self.input.push_piece(i, haystack),
            None => {
                let mut pieces = self.pieces.borrow_mut();
                haystack.push(pieces[j].get_or_insert_with(|| ledger::piece(&self.messages[j])));
            }
        }
    }

    /// Whether output message `j` reads the same without its ledger blocks (see [`bare`]).
    fn is_bare(&self, j: usize) -> bool {
        let m = &self.messages[j];
        m.pinned || !m.content.iter().any(ledger::is_ledger_block)
    }

    /// The normalized text of the output's API view with every ledger taken off (but a pinned
    /// message's): what the model still sees without any ledger.
    fn bare_haystack(&self) -> Haystack {
        let mut haystack = Haystack::default();
        for (j, m) in self.messages.iter().enumerate().filter(|(_, m)| m.is_visible()) {
            if self.is_bare(j) {
                self.push_piece(j, &mut haystack);
            } else {
                haystack.push(&ledger::piece(&bare(m)));
            }
        }
        haystack
    }

    /// What the visible messages after `first` show of files, commands and todos, without any
    /// ledger but a pinned message's.
    fn later_than(&self, first: usize) -> Later {
        let mut later = Later::default();
        for (j, m) in self.messages.iter().enumerate().skip(first + 1).filter(|(_, m)| m.is_visible()) {
            match self.origin[j] {
                Some(i) if self.is_bare(j) => self.input.add_later(i, &mut later),
                _ => later.add(&Later::of_message(&bare(m))),
            }
        }
        later
    }

    /// The normalized text of the API view of `entries`.
    fn haystack(&self, entries: &[Entry]) -> Haystack {
        let mut haystack = Haystack::default();
        for e in entries {
            match e {
                Entry::Kept(j) if self.messages[*j].is_visible() => self.push_piece(*j, &mut haystack),
                Entry::Made(m) if m.is_visible() => haystack.push(&ledger::piece(m)),
                _ => {}
            }
        }
        haystack
    }

    /// Tokens of the API view of `entries`, as `count_request` counts it.
    fn tokens_of(&self, entries: &[Entry], tokens: &dyn TokenCounter) -> usize {
        let count = |e: &Entry| match e {
            Entry::Kept(j) if self.messages[*j].is_visible() => {
                self.input.count(self.origin[*j], &self.messages[*j], tokens)
            }
            Entry::Made(m) if m.is_visible() => tokens.count_message(m),
            _ => 0,
        };
        self.input.fixed + entries.iter().map(count).sum::<usize>()
    }

    /// The probes found and missing in the API view of `entries`; the view's text is read only
    /// when there are probes.
    fn check<'p>(
        &self,
        probes: &'p [ledger::Probe],
        entries: &[Entry],
    ) -> (Vec<&'p ledger::Probe>, Vec<&'p ledger::Probe>) {
        if probes.is_empty() {
            return (Vec::new(), Vec::new());
        }
        ledger::check_probes_in(probes, &self.haystack(entries))
    }
}

/// Whether a run keeps a ledger: the configuration's `ledger`, on when absent.
fn ledger_on(options: &CondensationOptions) -> bool {
    options.config.get("ledger").and_then(serde_json::Value::as_bool).unwrap_or(true)
}

/// The tokens to keep free for the ledger under a target: the ledger of the whole view (an upper
/// bound of what the hidden part will need, its user words within their budget), at most a third
/// of the target.
fn ledger_reserve(
    ctx: &CondensationContext<'_>,
    options: &CondensationOptions,
    tokens: &dyn TokenCounter,
) -> usize {
    let Some(target) = options.target_within() else { return 0 };
    let budget = ledger::budget_for(Some(target), ctx.prev_context_tokens);
    let estimate = Ledger::of(&ctx.view());
    if estimate.is_empty() {
        return 0;
    }
    tokens.count_text_cached(&estimate.render(budget, tokens)).min(target / 3)
}

/// A message without its ledger blocks.
fn without_ledger(m: &Message) -> Message {
    let mut m = m.clone();
    m.content.retain(|b| !ledger::is_ledger_block(b));
    m
}

/// A message as the model would see it without any ledger: without its ledger blocks, unless it
/// is pinned (a pinned message is never edited, so a ledger it carries stays).
fn bare(m: &Message) -> Message {
    if m.pinned { m.clone() } else { without_ledger(m) }
}

/// The template's last step: the state ledger and the probes (see [`crate::ledger`]).
///
/// The ledger of what this run hid (visible before, hidden after), merged with the ledger the
/// view carried (which moves here), less what the kept messages still show, is added as a text
/// block to this run's summary, else to an edited copy of the first visible message; the probes
/// of those facts are checked against the final view, and what is missing is put back by code.
/// With the ledger off, a summary gets the missing items in a short block; other runs only
/// report retention. Returns the output with, for each message moved over unchanged from `c`,
/// the input position `origin` gave it (`None` for the messages made here and the run's own).
fn keep_what_matters(
    input: &RunInput<'_>,
    ctx: &CondensationContext<'_>,
    options: &CondensationOptions,
    tokens: &dyn TokenCounter,
    mut c: Condensed,
    origin: Vec<Option<usize>>,
    keep: bool,
) -> (Condensed, Vec<Option<usize>>) {
    let origin = origin.as_slice();
    let cid = next_condense_id(ctx.messages);
    let was_visible: std::collections::HashSet<&str> =
        ctx.messages.iter().filter(|m| m.is_visible()).map(|m| m.id.as_str()).collect();
    let hidden_at: Vec<usize> = (0..c.messages.len())
        .filter(|&i| {
            let m = &c.messages[i];
            m.condense_parent.as_deref() == Some(cid.as_str()) && was_visible.contains(m.id.as_str())
        })
        .collect();
    let Some(&first_hidden) = hidden_at.first() else { return (c, origin.to_vec()) };
    let hidden: Vec<&Message> = hidden_at.iter().map(|&i| &c.messages[i]).collect();
    // The ledger the view carries now, from an earlier run: it moves into this run's.
    // A pinned message is never edited: a ledger it carries stays there, and none is added to it.
    let host = c
        .messages
        .iter()
        .position(|m| m.is_visible() && !m.pinned && m.content.iter().any(ledger::is_ledger_block));
    let mut full = host
        .and_then(|h| {
            c.messages[h].content.iter().find_map(|b| match b {
                ContentBlock::Text { text, .. } if ledger::is_ledger_block(b) => Ledger::parse(text),
                _ => None,
            })
        })
        .unwrap_or_default();
    full.merge(Ledger::of(&hidden));
    let probes = full.probes();
    let summary_at = c
        .messages
        .iter()
        .position(|m| m.is_visible() && m.is_summary && m.condense_id.as_deref() == Some(cid.as_str()));

    if !keep {
        let all: Vec<Entry> = (0..c.messages.len()).map(Entry::Kept).collect();
        let (found, missing) = Output::new(input, &c.messages, origin).check(&probes, &all);
        let mut verdict = (found.len(), missing.iter().map(|p| p.label.clone()).collect::<Vec<_>>());
        let mut repaired = 0;
        if let (Some(s), false) = (summary_at, missing.is_empty()) {
            let items: Vec<String> = missing.iter().map(|p| format!("- {}", p.restore)).collect();
            c.messages[s].content.push(ContentBlock::text(format!(
                "Items the summary left out (restored by Context Condenser):\n{}",
                items.join("\n")
            )));
            repaired = missing.len();
            let (found, missing) = Output::new(input, &c.messages, origin).check(&probes, &all);
            verdict = (found.len(), missing.iter().map(|p| p.label.clone()).collect());
        }
        let retention = Retention { kept: verdict.0, probes: probes.len(), repaired, missing: verdict.1 };
        c.metrics.insert(METRIC_RETENTION.into(), serde_json::to_value(retention).expect("serializes"));
        // Only a message the run added (its summary) was edited.
        return (c, origin.to_vec());
    }

    // What the model still sees without any ledger, and the later state of what it shows: read
    // only for what the ledger holds (user words and notes look for their text; files, commands
    // and todos for a later state).
    let output = Output::new(input, &c.messages, origin);
    let mut pruned = full.clone();
    let later = if pruned.files.is_empty() && pruned.commands.is_empty() && pruned.todos.is_empty() {
        Later::default()
    } else {
        output.later_than(first_hidden)
    };
    let visible = if pruned.user_messages.is_empty() && pruned.notes.is_empty() {
        Haystack::default()
    } else {
        output.bare_haystack()
    };
    pruned.prune_in(&later, &visible);
    drop(visible);

    let budget = ledger::budget_for(options.target_tokens, ctx.prev_context_tokens);
    let place = summary_at.or_else(|| c.messages.iter().position(|m| m.is_visible() && !m.pinned));
    // The ledger, with what the probes still miss put back as notes; and whether the probes were
    // all found in that very list.
    let build = |mut kept: Ledger| {
        let out = insert_ledger(&c.messages, &cid, host, place, &kept, budget, tokens);
        let (_, missing) = output.check(&probes, &out);
        if missing.is_empty() {
            return (out, kept, 0, true);
        }
        kept.notes.extend(missing.iter().map(|p| p.restore.clone()));
        (insert_ledger(&c.messages, &cid, host, place, &kept, budget, tokens), kept, missing.len(), false)
    };
    let (mut out, mut kept, mut repaired, mut all_found) = build(pruned.clone());
    if output.tokens_of(&out, tokens) > ctx.prev_context_tokens {
        // No room for all of it: keep what the probes check (the user's words, the files changed,
        // the open todos); files only read and commands go.
        let mut lean = pruned;
        lean.files.retain(|f| f.action != ledger::FileAction::Read);
        lean.commands.clear();
        lean.todos.retain(|t| !t.done);
        (out, kept, repaired, all_found) = build(lean);
    }
    let (found, missing) = if all_found {
        (probes.len(), Vec::new())
    } else {
        let (found, missing) = output.check(&probes, &out);
        (found.len(), missing.iter().map(|p| p.label.clone()).collect())
    };
    let retention = Retention { kept: found, probes: probes.len(), repaired, missing };
    let block_tokens =
        if kept.is_empty() { 0 } else { tokens.count_text_cached(&kept.render(budget, tokens)) };
    c.metrics.insert(
        "ledger".into(),
        serde_json::json!({
            "user_messages": kept.user_messages.len(),
            "files": kept.files.len(),
            "commands": kept.commands.len(),
            "todos": kept.todos.len(),
            "tokens": block_tokens,
        }),
    );
    c.metrics.insert(METRIC_RETENTION.into(), serde_json::to_value(retention).expect("serializes"));
    drop(output);
    let (messages, kept) = materialize(out, std::mem::take(&mut c.messages), origin);
    c.messages = messages;
    (c, kept)
}

/// The messages with the earlier ledger taken off its host (`host`) and `ledger` (when not
/// empty) added as a text block to the message at `place`, as entries over `messages`. A message
/// this run added is edited in place; any other is hidden under `cid` and followed by its edited
/// copy, so undo removes the ledger with the condensation.
fn insert_ledger(
    messages: &[Message],
    cid: &str,
    host: Option<usize>,
    place: Option<usize>,
    ledger: &Ledger,
    budget: usize,
    tokens: &dyn TokenCounter,
) -> Vec<Entry> {
    let block = (!ledger.is_empty()).then(|| ContentBlock::text(ledger.render(budget, tokens)));
    let mut out = Vec::with_capacity(messages.len() + 2);
    for (i, m) in messages.iter().enumerate() {
        let mut content = None;
        if host == Some(i) {
            content = Some(without_ledger(m).content);
        }
        if let (true, Some(block)) = (place == Some(i), &block) {
            let mut blocks = content.take().unwrap_or_else(|| m.content.clone());
            blocks.push(block.clone());
            content = Some(blocks);
        }
        match content {
            None => out.push(Entry::Kept(i)),
            Some(blocks) if m.condense_id.as_deref() == Some(cid) => {
                out.push(Entry::Made(Message { content: blocks, ..m.clone() }));
            }
            Some(blocks) => {
                out.push(Entry::Made(Message { condense_parent: Some(cid.to_owned()), ..m.clone() }));
                if !blocks.is_empty() {
                    out.push(Entry::Made(Message {
                        id: format!("{}.{cid}", m.id),
                        content: blocks,
                        condense_id: Some(cid.to_owned()),
                        condense_parent: None,
                        ..m.clone()
                    }));
                }
            }
        }
    }
    out
}

/// Checks a condensed message list against the conversation it was made from, as the template
/// checks every provider's output (see `check_result`): for a result kept by the host and applied
/// later (a preview), so that what is applied is still a valid condensation of what is there.
pub fn check_condensed(
    before: &[Message],
    system: Option<&str>,
    after: Vec<Message>,
) -> Result<(), CondenseError> {
    let ctx = CondensationContext { messages: before, system, prev_context_tokens: 0 };
    let pairs_valid = check_tool_pairs(&ctx.view()).is_ok();
    check_result(&ctx, Condensed { messages: after, ..Default::default() }, pairs_valid, None).map(|_| ())
}

/// The invariants every provider's output must keep: every input message is still there,
/// unchanged but for `condense_parent`, in the same order; a visible pinned message stays
/// visible (so neither hidden nor replaced by an edited copy); and the API view stays valid when
/// the input's was (`input_pairs_valid`). Returns the output with, for each of its messages, the
/// position of the input message it is (`None` for a message the provider added).
/// `compared`, when given, says which output messages were compared with their input message
/// already and moved since (by position, as this returns it): their content is not compared again.
fn check_result(
    ctx: &CondensationContext<'_>,
    c: Condensed,
    input_pairs_valid: bool,
    compared: Option<&[Option<usize>]>,
) -> Result<(Condensed, Vec<Option<usize>>), CondenseError> {
    let mut origin = vec![None; c.messages.len()];
    let mut rest = c.messages.iter().enumerate();
    for (i, original) in ctx.messages.iter().enumerate() {
        let (j, found) = rest.by_ref().find(|(_, m)| m.id == original.id).ok_or_else(|| {
            CondenseError::Internal(format!("message {} was lost by the provider", original.id))
        })?;
        if original.pinned && original.is_visible() && !found.is_visible() {
            return Err(CondenseError::Internal(format!(
                "message {} is pinned but the provider hid or edited it",
                original.id
            )));
        }
        let known = compared.and_then(|c| c.get(j).copied().flatten()) == Some(i);
        if !known && !same_but_hidden(original, found) {
            return Err(CondenseError::Internal(format!(
                "message {} was changed in place instead of hidden and copied",
                original.id
            )));
        }
        origin[j] = Some(i);
    }
    if input_pairs_valid {
        check_tool_pairs(&api_view(&c.messages)).map_err(|e| {
            CondenseError::Internal(format!("the condensed conversation has a broken tool pair: {e}"))
        })?;
    }
    Ok((c, origin))
}

/// Whether `found` is `original`, but for a `condense_parent` set where the original had none
/// (hidden by this run): every field compared, none copied.
fn same_but_hidden(original: &Message, found: &Message) -> bool {
    let Message { id, ts, role, content, is_summary, condense_id, condense_parent, interrupted, pinned } =
        original;
    (condense_parent.is_none() || *condense_parent == found.condense_parent)
        && *id == found.id
        && *ts == found.ts
        && *role == found.role
        && *is_summary == found.is_summary
        && *condense_id == found.condense_id
        && *interrupted == found.interrupted
        && *pinned == found.pinned
        && same_blocks(content, &found.content)
}

/// Builds the new message list of a condensation that replaces some visible messages by edited
/// copies and hides others: each replaced original is hidden and followed by its copy; each
/// removed original is hidden. Messages are identified by their index in `messages`.
pub fn apply_edits(
    messages: &[Message],
    condense_id: &str,
    replaced: &std::collections::BTreeMap<usize, Vec<crate::model::ContentBlock>>,
    removed: &std::collections::BTreeSet<usize>,
) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len() + replaced.len());
    for (i, m) in messages.iter().enumerate() {
        if removed.contains(&i) {
            let mut hidden = m.clone();
            hidden.condense_parent = Some(condense_id.to_owned());
            out.push(hidden);
        } else if let Some(content) = replaced.get(&i) {
            let mut hidden = m.clone();
            hidden.condense_parent = Some(condense_id.to_owned());
            out.push(hidden);
            let mut copy = m.clone();
            copy.id = format!("{}.{condense_id}", m.id);
            copy.content = content.clone();
            copy.condense_id = Some(condense_id.to_owned());
            copy.condense_parent = None;
            out.push(copy);
        } else {
            out.push(m.clone());
        }
    }
    out
}
