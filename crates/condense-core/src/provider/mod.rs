//! The condensation provider contract and the one template that runs every provider (seed 000):
//! validate → time → `condense_internal` → checks and metrics; on any error the original messages
//! come back untouched with a typed error.
//!
//! No provider can skip this path: `condense_internal` takes a [`TemplateToken`], which only this
//! module can make, so the only way to run a provider is [`run_provider`].
//!
//! This file holds the contract (the trait and the values a run takes and gives); `template`
//! runs a provider, and `checks` holds the steps the template ends with.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::config::{ConfigField, Form, NoConfig};
use crate::error::{CondenseError, ErrorInfo};
use crate::host::{AbortSignal, Clock, Timer};
use crate::llm::LlmProvider;
use crate::model::{Message, api_view};
use crate::tokens::TokenCounter;

mod checks;
mod input;
mod template;

pub use checks::check_condensed;
pub(crate) use checks::{hidden_by_run, with_calls};
pub(crate) use template::count_with_content;
pub use template::run_provider;

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

    /// The places in [`CondensationContext::messages`] of the messages the model sees, in order.
    pub fn visible(&self) -> Vec<usize> {
        (0..self.messages.len()).filter(|&i| self.messages[i].is_visible()).collect()
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
    /// The chat's conversation as its requests send it (system prompt and every turn), its
    /// cache hint saying how many turns the last request sent: lent when the condensing model is
    /// the chat model, so that a summary request can be that conversation plus the instruction,
    /// its prefix read from the prompt cache.
    pub live: Option<&'a crate::llm::PromptBundle>,
}

impl<'a> Services<'a> {
    /// Services without an LLM.
    pub fn new(tokens: &'a dyn TokenCounter, clock: &'a dyn Clock) -> Self {
        Services { tokens, clock, llm: None, abort: None, meter: None, timer: None, live: None }
    }

    /// The same services with the chat's live conversation, when there is one to lend (see
    /// [`Services::live`]).
    pub fn with_live(self, live: Option<&'a crate::llm::PromptBundle>) -> Self {
        Services { live, ..self }
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
/// The metric key of what a reader must know of a run that succeeded: why it is over its target.
pub const METRIC_NOTE: &str = "note";
/// The metric key of the probes' verdict: a [`Retention`].
pub const METRIC_RETENTION: &str = "retention";
/// The metric key of the flag set when a summary was cut by its output limit: a boolean.
pub const METRIC_SUMMARY_TRUNCATED: &str = "summary_truncated";
/// The metric key of the share of the summary calls' input read from the prompt cache: 0–1.
pub const METRIC_CACHED_SHARE: &str = "cached_share";

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

    /// The share of the summary calls' input read from the prompt cache, when they reported
    /// a usage (`cached_share`).
    pub fn cached_share(&self) -> Option<f64> {
        self.extra.get(METRIC_CACHED_SHARE).and_then(serde_json::Value::as_f64)
    }

    /// Whether a summary was cut by its output limit.
    pub fn summary_truncated(&self) -> bool {
        self.extra.get(METRIC_SUMMARY_TRUNCATED).and_then(serde_json::Value::as_bool).unwrap_or(false)
    }
}

/// The outcome of a condensation. On failure `messages` are the input, untouched, and `error` says
/// why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// What lists and pickers show of a provider, and what it needs: one value per provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderMeta {
    /// Stable id, e.g. `lossless`.
    pub id: &'static str,
    /// Name for people.
    pub name: &'static str,
    /// One sentence on what it does.
    pub description: &'static str,
    /// What it needs to run besides the conversation.
    pub needs: Needs,
}

/// A condensation provider. Implementors write the hooks; [`run_provider`] runs them.
#[async_trait::async_trait(?Send)]
pub trait CondensationProvider {
    /// Its id, name, description and needs.
    fn meta(&self) -> &ProviderMeta;

    /// Stable id, e.g. `lossless`.
    fn id(&self) -> &str {
        self.meta().id
    }
    /// Name for people.
    fn name(&self) -> &str {
        self.meta().name
    }
    /// One sentence on what it does.
    fn description(&self) -> &str {
        self.meta().description
    }
    /// What it needs to run besides the conversation.
    fn needs(&self) -> Needs {
        self.meta().needs
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

    /// What a run would cost, in US dollars, before running it. The default, for a provider that
    /// calls no LLM: nothing.
    fn estimate_cost(
        &self,
        _ctx: &CondensationContext<'_>,
        _options: &CondensationOptions,
        _services: Services<'_>,
    ) -> f64 {
        0.0
    }

    /// The provider's work. Called only by [`run_provider`], after `validate`.
    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        token: TemplateToken,
    ) -> Result<Condensed, CondenseError>;
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
