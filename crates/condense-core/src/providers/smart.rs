//! The `smart` provider (SPEC §4): a pipeline of passes toward a target, stopping as soon as it is
//! met — `lossless` → `superseded` → `mask` → `trim_parameters` → `native` (only with an LLM) →
//! `handover` (whole older turns hidden by relevance, their working state in the ledger) →
//! `truncation` as the last resort. Each pass is a provider run through the template on the previous pass's
//! output, so every pass is checked; their condensations are then squashed into one condense id
//! ([`crate::model::squash_condensations`]), so one undo restores everything. The result's
//! metrics list every pass with its gain, time, cost, or why it was skipped.
//!
//! Truncation alone is a candidate beside the pipeline's result, and the floor: the pipeline's
//! result is kept only when it keeps more of what the conversation is using than truncation's
//! does, by the coverage proxy of `coverage` (each with the ledger it will carry), by a margin.
//! The metrics' `candidates` say what each kept and which was chosen.
//!
//! The `trim_parameters` pass, which only this pipeline runs, has a file of its own.

use serde::{Deserialize, Serialize};

use crate::config::{ConfigField, ConfigForm, Form, ledger_field};
use crate::error::CondenseError;
use crate::llm::ModelUse;
use crate::model::{api_view, next_condense_id, squash_condensations};
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, METRIC_PASSES, PassMetric,
    Services, TargetFloor, TemplateToken, run_provider,
};
use crate::provider::{Needs, ProviderMeta};
use crate::tokens::TokenCounter;

use super::coverage::{Demand, ledger_text};
use super::floor::floor_tokens;
use super::mask::{MaskConfig, MaskProvider};
use super::{
    HandoverProvider, LosslessProvider, NativeProvider, SupersededProvider, TrimConfig,
    TrimParametersProvider, TruncationProvider,
};

/// A pass of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Byte-identical repeats replaced by references.
    Lossless,
    /// File reads, command output and client context that later ones replace, behind placeholders.
    Superseded,
    /// Old tool results hidden behind placeholders.
    Mask,
    /// Bulky tool-call arguments in older messages cut to a head.
    TrimParameters,
    /// An LLM summary of the middle (only with an LLM profile).
    Native,
    /// Whole older turns hidden, those the tail no longer refers to first, their working state
    /// handed to the ledger.
    Handover,
    /// The oldest middle trimmed to the target.
    Truncation,
}

impl Pass {
    /// Every pass, in the pipeline's order.
    pub const ALL: [Pass; 7] = [
        Pass::Lossless,
        Pass::Superseded,
        Pass::Mask,
        Pass::TrimParameters,
        Pass::Native,
        Pass::Handover,
        Pass::Truncation,
    ];

    /// The pass's name in configurations and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Pass::Lossless => "lossless",
            Pass::Superseded => "superseded",
            Pass::Mask => "mask",
            Pass::TrimParameters => "trim_parameters",
            Pass::Native => "native",
            Pass::Handover => "handover",
            Pass::Truncation => "truncation",
        }
    }

    fn parse(name: &str) -> Option<Pass> {
        Pass::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// How hard the pipeline works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// Never cuts the conversation's own words: lossless, superseded content, mask (the last 10
    /// results kept), and tool arguments of 2,000 characters or more trimmed.
    Conservative,
    /// The whole pipeline: lossless, superseded content, mask (last 6 kept), arguments of 800
    /// characters or more trimmed, an LLM summary when a profile is set, older turns handed over to
    /// the ledger by relevance, truncation as the last
    /// resort.
    #[default]
    Balanced,
    /// The whole pipeline with smaller keep counts: the last 3 results, arguments of 300
    /// characters or more, and at most 2 messages kept whole at the end.
    Aggressive,
}

impl Preset {
    const NAMES: [&'static str; 3] = ["conservative", "balanced", "aggressive"];

    /// The passes the preset runs, in order.
    pub fn passes(self) -> Vec<Pass> {
        match self {
            Preset::Conservative => vec![Pass::Lossless, Pass::Superseded, Pass::Mask, Pass::TrimParameters],
            Preset::Balanced | Preset::Aggressive => Pass::ALL.to_vec(),
        }
    }

    fn mask_keep(self) -> usize {
        match self {
            Preset::Conservative => 10,
            Preset::Balanced => 6,
            Preset::Aggressive => 3,
        }
    }

    fn trim_min_chars(self) -> usize {
        match self {
            Preset::Conservative => 2000,
            Preset::Balanced => 800,
            Preset::Aggressive => 300,
        }
    }

    fn max_keep_last(self) -> Option<usize> {
        (self == Preset::Aggressive).then_some(2)
    }
}

/// Configuration of the `smart` provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmartConfig {
    /// The preset: which passes run and how much they keep.
    pub preset: Preset,
    /// A custom pass list, comma-separated, overriding the preset's; empty for the preset's.
    pub passes: String,
    /// Target as a percentage of the current context, used when no target in tokens is given.
    pub target_percent: u8,
    /// Messages at the end kept as they are.
    pub keep_last: usize,
    /// Whether the state ledger goes in with the condensation (read by the template).
    pub ledger: bool,
    /// Instructions replacing the built-in summary prompt, for the summary pass (shared).
    pub custom_prompt: Option<String>,
}

impl Default for SmartConfig {
    fn default() -> Self {
        SmartConfig {
            preset: Preset::Balanced,
            passes: String::new(),
            target_percent: 40,
            keep_last: 3,
            ledger: true,
            custom_prompt: None,
        }
    }
}

impl SmartConfig {
    /// The passes to run: the custom list when given, else the preset's.
    pub fn pass_list(&self) -> Result<Vec<Pass>, String> {
        if self.passes.trim().is_empty() {
            return Ok(self.preset.passes());
        }
        let mut out = Vec::new();
        for name in self.passes.split(',').map(str::trim) {
            let pass = Pass::parse(name).ok_or_else(|| {
                let known: Vec<&str> = Pass::ALL.iter().map(|p| p.name()).collect();
                format!("passes: unknown pass \"{name}\"; the passes are {}", known.join(", "))
            })?;
            if out.contains(&pass) {
                return Err(format!("passes: {name} is named twice"));
            }
            out.push(pass);
        }
        Ok(out)
    }
}

impl ConfigForm for SmartConfig {
    fn fields() -> Vec<ConfigField> {
        vec![
            ConfigField::choice(
                "preset",
                "Preset",
                "Conservative never cuts the conversation's own words (lossless, superseded content, masking, trimmed tool arguments); balanced adds an LLM summary when a profile is set, hands older turns over to the ledger's working state (the least relevant first) and truncates as the last resort; aggressive keeps fewer results and messages.",
                &Preset::NAMES,
            ),
            ConfigField::text(
                "passes",
                "Custom passes",
                "A pass list replacing the preset's, comma-separated, from: lossless, superseded, mask, trim_parameters, native, handover, truncation. Empty: the preset's.",
            ),
            ConfigField::integer(
                "target_percent",
                "Target",
                "How small the context should get, in percent of its current size, when no target in tokens is given.",
                1,
                Some(100),
            )
            .unit("%"),
            ConfigField::integer(
                "keep_last",
                "Keep last",
                "Messages at the end of the conversation no pass touches.",
                0,
                None,
            )
            .unit("messages"),
            ledger_field(),
            super::summary::prompt_field(),
        ]
    }

    fn check(&self) -> Result<(), String> {
        super::summary::check_prompt(self.custom_prompt.as_deref())?;
        self.pass_list().map(drop)
    }
}

/// How much more of what is in use the pipeline's result must keep than truncation's to be chosen
/// over it: truncation is the floor, and a tie goes to it.
const PIPELINE_MARGIN: f64 = 0.02;

/// A share rounded to three places, for the metrics.
fn round(share: f64) -> f64 {
    (share * 1000.0).round() / 1000.0
}

/// Runs the passes toward a target.
#[derive(Debug, Default, Clone, Copy)]
pub struct SmartProvider;

/// A configuration with the ledger switched off where the provider has the switch: the pipeline
/// inserts one ledger for the whole run, not one per pass.
fn without_ledger(mut config: serde_json::Value) -> serde_json::Value {
    if let Some(map) = config.as_object_mut()
        && map.contains_key("ledger")
    {
        map.insert("ledger".into(), false.into());
    }
    config
}

impl SmartProvider {
    fn pass_provider(pass: Pass) -> &'static dyn CondensationProvider {
        match pass {
            Pass::Lossless => &LosslessProvider,
            Pass::Superseded => &SupersededProvider,
            Pass::Mask => &MaskProvider,
            Pass::TrimParameters => &TrimParametersProvider,
            Pass::Native => &NativeProvider,
            Pass::Handover => &HandoverProvider,
            Pass::Truncation => &TruncationProvider,
        }
    }

    fn pass_config(pass: Pass, config: &SmartConfig) -> serde_json::Value {
        let preset = config.preset;
        let value = match pass {
            Pass::Native => {
                let mut native = NativeProvider.default_config();
                if let (Some(map), Some(prompt)) = (native.as_object_mut(), &config.custom_prompt) {
                    map.insert("custom_prompt".into(), prompt.clone().into());
                }
                native
            }
            Pass::Mask => {
                serde_json::to_value(MaskConfig { keep_results: preset.mask_keep(), ..Default::default() })
                    .expect("a configuration serializes")
            }
            Pass::TrimParameters => {
                serde_json::to_value(TrimConfig { min_chars: preset.trim_min_chars(), ..Default::default() })
                    .expect("a configuration serializes")
            }
            other => Self::pass_provider(other).default_config(),
        };
        without_ledger(value)
    }
}

/// What a run of the pipeline works with: its configuration, its passes, its target and the
/// messages it keeps at the end.
struct Plan {
    config: SmartConfig,
    passes: Vec<Pass>,
    target: usize,
    keep_last: usize,
}

impl SmartProvider {
    /// The run's [`Plan`] from its options (the caller's target, else the configuration's share).
    fn plan(ctx: &CondensationContext<'_>, options: &CondensationOptions) -> Result<Plan, CondenseError> {
        let config: SmartConfig = options.typed_config(META.id)?;
        let passes = config
            .pass_list()
            .map_err(|message| CondenseError::InvalidConfig { id: META.id.into(), message })?;
        let target = options.target_or(ctx.prev_context_tokens * usize::from(config.target_percent) / 100);
        let mut keep_last = options.keep_last.unwrap_or(config.keep_last);
        if let Some(max) = config.preset.max_keep_last() {
            keep_last = keep_last.min(max);
        }
        Ok(Plan { config, passes, target, keep_last })
    }
}

/// What lists show of the provider, and what it needs.
const META: ProviderMeta = ProviderMeta {
    id: "smart",
    name: "Smart pipeline",
    description: "Passes toward a target, stopping once it is met: lossless de-duplication, superseded reads and command output hidden, observation masking, trimmed tool arguments, an LLM summary when a profile is set, older turns handed over to the ledger's working state by relevance, truncation as the last resort. One undo restores everything.",
    needs: Needs::Nothing,
};

#[async_trait::async_trait(?Send)]
impl CondensationProvider for SmartProvider {
    fn meta(&self) -> &ProviderMeta {
        &META
    }

    fn config_form(&self) -> Form {
        Form::of::<SmartConfig>()
    }

    /// The summary pass's estimate when it would run, else nothing: the other passes are free.
    fn estimate_cost(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
    ) -> f64 {
        let Ok(config) = options.typed_config::<SmartConfig>(self.id()) else { return 0.0 };
        if services.llm.is_none_or(|l| l.serves(ModelUse::Summarize).is_err())
            || !config.pass_list().is_ok_and(|p| p.contains(&Pass::Native))
        {
            return 0.0;
        }
        let native = CondensationOptions {
            config: Self::pass_config(Pass::Native, &config),
            keep_last: Some(options.keep_last.unwrap_or(config.keep_last)),
            ..options.clone()
        };
        NativeProvider.estimate_cost(ctx, &native, services)
    }

    fn target_and_floor(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        tokens: &dyn TokenCounter,
    ) -> Result<Option<TargetFloor>, CondenseError> {
        let Plan { passes, target, mut keep_last, .. } = Self::plan(ctx, options)?;
        // Under a ceiling, truncation may keep the last message alone (see below).
        if options.ceiling_tokens.is_some() && passes.contains(&Pass::Truncation) {
            keep_last = keep_last.min(1);
        }
        // Without truncation or a summary, nothing cuts the conversation's own words: no floor.
        if !passes.contains(&Pass::Truncation) && !passes.contains(&Pass::Native) {
            return Ok(None);
        }
        Ok(Some(TargetFloor { target, floor: floor_tokens(ctx, keep_last, tokens), keep_last }))
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _token: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let Plan { config, passes, target, keep_last } = Self::plan(ctx, options)?;
        let before = ctx.prev_context_tokens;
        if before <= target {
            return Err(CondenseError::NothingToCondense(format!(
                "the context has {before} tokens, already within the target of {target}"
            )));
        }
        let first_id = next_condense_id(ctx.messages);
        let mut messages = ctx.messages.to_vec();
        let mut current = before;
        let mut metrics: Vec<PassMetric> = Vec::new();
        let mut cost = 0.0;
        let mut summary = None;
        // What the passes that hide by relevance kept for it (handover, truncation).
        let mut kept_for_relevance = 0u64;
        // Each pass with the tail it keeps. A run under a ceiling must fit (past the request
        // limit, or after the model answered "too long", which may follow a threshold run that left
        // little but the kept tail): when the passes left the context above the ceiling, truncation
        // runs once more keeping only the last message, the one being answered, always sent whole.
        let mut runs: Vec<(Pass, usize)> = passes.iter().map(|&p| (p, keep_last)).collect();
        let mut at = 0;
        let mut extended = false;
        loop {
            while let Some(&(pass, keep)) = runs.get(at) {
                at += 1;
                let name = if keep == keep_last {
                    pass.name().to_owned()
                } else {
                    format!("{} (the last {keep} kept, to fit under the ceiling)", pass.name())
                };
                let skipped = |reason: &str| PassMetric {
                    pass: name.clone(),
                    tokens_saved: 0,
                    time_ms: 0.0,
                    cost: 0.0,
                    skipped: Some(reason.into()),
                };
                if current <= target {
                    metrics.push(skipped("target already met"));
                    continue;
                }
                if pass == Pass::Native && services.llm.is_none() {
                    metrics.push(skipped("no LLM profile"));
                    continue;
                }
                if pass == Pass::Native
                    && let Some(Err(e)) = services.llm.map(|l| l.serves(ModelUse::Summarize))
                {
                    metrics.push(skipped(&e.message));
                    continue;
                }
                let pass_options = CondensationOptions {
                    // The target is within the ceiling already.
                    target_tokens: Some(target),
                    ceiling_tokens: None,
                    keep_last: Some(keep),
                    is_automatic: options.is_automatic,
                    config: Self::pass_config(pass, &config),
                    floor_checked: true,
                };
                let result =
                    run_provider(Self::pass_provider(pass), &messages, ctx.system, &pass_options, services)
                        .await;
                let time_ms = result.metrics.as_ref().map(|m| m.time_elapsed_ms).unwrap_or(0.0);
                cost += result.cost;
                // On the run's meter too, so a smart run that fails later still reports the spend.
                services.spend(result.cost);
                match (&result.error, result.new_context_tokens) {
                    (None, Some(after)) => {
                        metrics.push(PassMetric {
                            pass: name.clone(),
                            tokens_saved: i64::try_from(current).unwrap_or(i64::MAX)
                                - i64::try_from(after).unwrap_or(0),
                            time_ms,
                            cost: result.cost,
                            skipped: None,
                        });
                        current = after;
                        kept_for_relevance += result
                            .metrics
                            .as_ref()
                            .and_then(|m| m.extra.get("kept_for_relevance"))
                            .and_then(serde_json::Value::as_u64)
                            .unwrap_or(0);
                        if result.summary.is_some() {
                            summary = result.summary.clone();
                        }
                        messages = result.messages;
                    }
                    (error, _) => {
                        let reason = error
                            .as_ref()
                            .map(|e| {
                                // The message names its kind in words, as `nothing to condense: …` does.
                                let kind = e.kind.as_str().replace('_', " ");
                                if e.message.starts_with(&kind) {
                                    e.message.clone()
                                } else {
                                    format!("{}: {}", e.kind.as_str(), e.message)
                                }
                            })
                            .unwrap_or_else(|| "no result".into());
                        metrics.push(PassMetric { time_ms, cost: result.cost, ..skipped(&reason) });
                    }
                }
            }
            if !extended
                && keep_last > 1
                && passes.contains(&Pass::Truncation)
                && options.ceiling_tokens.is_some_and(|c| current > c)
            {
                extended = true;
                runs.push((Pass::Truncation, 1));
                continue;
            }
            break;
        }
        if current >= before {
            let reasons: Vec<String> = metrics
                .iter()
                .map(|m| format!("{} ({})", m.pass, m.skipped.as_deref().unwrap_or("no gain")))
                .collect();
            return Err(CondenseError::NothingToCondense(format!(
                "no pass found anything to condense: {}",
                reasons.join("; ")
            )));
        }
        // The recency baseline as a candidate of its own: truncation alone on the conversation as
        // it came. The pipeline's result stands unless truncation's keeps more of what the
        // conversation is using (by the coverage proxy, see `coverage`), so the pipeline is never
        // chosen where it shaved what was in use to keep what was not.
        let mut chosen = serde_json::Map::new();
        // A pipeline that lost nothing (repeats and superseded copies hidden alone) stands.
        // Nor does one whose only lossy pass was truncation: it is truncation, after what lost
        // nothing.
        let lossy = metrics.iter().any(|m| {
            m.skipped.is_none() && !matches!(m.pass.as_str(), "lossless" | "superseded" | "truncation")
        });
        if lossy && passes.contains(&Pass::Truncation) && !extended && summary.is_none() {
            let demand = Demand::of(&ctx.view());
            let beside =
                |after: &[crate::model::Message]| ledger_text(ctx.messages, after, target, services.tokens);
            let pipeline = demand.coverage_with(&api_view(&messages), &beside(&messages));
            let options = CondensationOptions {
                target_tokens: Some(target),
                ceiling_tokens: None,
                keep_last: Some(keep_last),
                is_automatic: options.is_automatic,
                config: Self::pass_config(Pass::Truncation, &config),
                floor_checked: true,
            };
            let alone = run_provider(&TruncationProvider, ctx.messages, ctx.system, &options, services).await;
            let time_ms = alone.metrics.as_ref().map(|m| m.time_elapsed_ms).unwrap_or(0.0);
            chosen.insert(
                "pipeline".into(),
                serde_json::json!({ "tokens": current, "coverage": round(pipeline) }),
            );
            if let (None, Some(after)) = (&alone.error, alone.new_context_tokens) {
                let truncation = demand.coverage_with(&api_view(&alone.messages), &beside(&alone.messages));
                chosen.insert(
                    "truncation".into(),
                    serde_json::json!({ "tokens": after, "coverage": round(truncation) }),
                );
                if truncation + PIPELINE_MARGIN > pipeline && after <= target.max(current) {
                    let why = format!(
                        "truncation alone kept as much or more of what is in use (coverage {truncation:.2} against {pipeline:.2})"
                    );
                    for m in metrics.iter_mut().filter(|m| m.skipped.is_none()) {
                        *m = PassMetric {
                            tokens_saved: 0,
                            cost: 0.0,
                            skipped: Some(why.clone()),
                            ..m.clone()
                        };
                    }
                    metrics.push(PassMetric {
                        pass: "truncation alone".into(),
                        tokens_saved: i64::try_from(before).unwrap_or(i64::MAX)
                            - i64::try_from(after).unwrap_or(0),
                        time_ms,
                        cost: 0.0,
                        skipped: None,
                    });
                    kept_for_relevance = alone
                        .metrics
                        .as_ref()
                        .and_then(|m| m.extra.get("kept_for_relevance"))
                        .and_then(serde_json::Value::as_u64)
                        .unwrap_or(0);
                    messages = alone.messages;
                    current = after;
                }
            }
        }
        let messages = squash_condensations(&messages, &first_id);
        let mut extra = serde_json::Map::new();
        if !chosen.is_empty() {
            extra.insert("candidates".into(), chosen.into());
        }
        extra.insert("condense_id".into(), first_id.into());
        extra.insert("preset".into(), serde_json::to_value(config.preset).expect("a preset serializes"));
        extra.insert(METRIC_PASSES.into(), serde_json::to_value(&metrics).expect("pass metrics serialize"));
        extra.insert("target_tokens".into(), target.into());
        extra.insert("target_met".into(), (current <= target).into());
        extra.insert("keep_last".into(), keep_last.into());
        extra.insert("kept_for_relevance".into(), kept_for_relevance.into());
        Ok(Condensed { messages, summary, cost, metrics: extra })
    }
}
