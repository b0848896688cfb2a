//! The `native` provider (SPEC §4): an LLM writes a sectioned summary of the middle of the
//! conversation; the first message and the last N stay as they are. Guards refuse what is too
//! small to be worth a call, and a summary that would not shrink the context is refused.
//!
//! Every request is sized to the condensing model ([`request_budget`]): its window less the
//! condense phase's answer, the instructions and a safety margin. A span that does not fit is
//! first shrunk in the prompt only (long tool results and arguments cut to head and tail,
//! repeated tool outputs referenced; the conversation itself is never touched), then summarized
//! in chunks that fit (map) whose partial summaries are merged (reduce, recursively when the
//! partials do not fit one request). A span holding an earlier summary is summarized from the
//! messages that summary hid, when they fit one request, rather than as a summary of a summary.
//! Each call's cost is recorded on the run's meter as soon as the model answered, so a run that
//! fails afterwards still reports what it spent.
//!
//! No degenerate answer is used ([`super::degenerate`]): one that repeats itself, or that was cut
//! at its output limit before any of the sections its request asks for, is asked again once at
//! temperature 0 where the model takes a temperature, and the run is refused with
//! `degenerate_summary` when that answer is degenerate too.
//!
//! The rooms: `prompt` turns a span into chat turns that fit a request; `calls` asks the model
//! and merges partial summaries; this file sizes the requests and runs the provider.

use serde_json::json;

use crate::config::Form;
use crate::error::CondenseError;
use crate::host::AbortSignal;
use crate::llm::{DEFAULT_MAX_OUTPUT_TOKENS, LlmProvider, ModelUse, PromptBundle, Usage};
use crate::model::Message;
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, METRIC_CACHED_SHARE,
    METRIC_SUMMARY_TRUNCATED, Needs, Services, TemplateToken,
};
use crate::tokens::TokenCounter;

use super::summary::{self, SummaryConfig, SummaryPlan};

mod calls;
mod prompt;

use crate::provider::ProviderMeta;
use calls::{Calls, merge};
pub use prompt::{
    MERGE_INSTRUCTION, MIN_DEDUP_TOKENS, PARTIAL_INSTRUCTION, TOKENS_PER_TURN, TOOL_TEXT_SHARE_PERCENT,
};
use prompt::{Turn, chunks, instructions, merge_request, partial_request, render, span, total};

/// The share, in percent, of the room left after the answer that a request may fill. The rest is
/// a margin: the counter is not the condensing model's tokenizer, and chat templates add tokens.
pub const INPUT_SAFETY_PERCENT: usize = 75;
/// The smallest conversation budget a summary request is attempted with.
pub const MIN_INPUT_BUDGET: usize = 128;
/// The instruction of a summary request built on the chat's own conversation (read from the
/// prompt cache): `{k}` is the number of last messages kept.
pub const CACHED_INSTRUCTION: &str = "Stop working on the task for a moment: the conversation above \
is about to be condensed. Its first message and its last {k} messages stay as they are; everything \
between them is replaced by the summary you write now.";

/// The metric saying the summary request was built on the chat's conversation (read from the
/// cache).
pub const METRIC_FROM_CACHE: &str = "from_cache";

/// Summarizes with an LLM.
#[derive(Debug, Default, Clone, Copy)]
pub struct NativeProvider;

fn config(options: &CondensationOptions) -> Result<SummaryConfig, CondenseError> {
    let mut c: SummaryConfig = options.typed_config("native")?;
    if let Some(n) = options.keep_last {
        c.keep_last = n;
    }
    Ok(c)
}

/// How much one summary request to the condensing model may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestBudget {
    /// The condensing model's context window.
    pub window: usize,
    /// The condense phase's answer limit (its `GenerationParams`, clamped to the model).
    pub output: usize,
    /// The instructions and system prompt of the longest request (a merge), counted.
    pub overhead: usize,
    /// Tokens of conversation (or partial summaries) one request may carry.
    pub input: usize,
}

/// The budget of a summary request to `llm`: the window (or the condense phase's
/// `max_input_tokens`, when lower) less the condense phase's answer, times
/// [`INPUT_SAFETY_PERCENT`], less the instructions. `base` is the request without its
/// conversation (see [`base_bundle`]).
pub fn request_budget(
    llm: &dyn LlmProvider,
    tokens: &dyn TokenCounter,
    base: &PromptBundle,
    config: &SummaryConfig,
) -> RequestBudget {
    let profile = llm.profile();
    let params = profile.condense.clamped(&llm.capabilities());
    let output = params.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
    let room = params.max_input_tokens.unwrap_or(profile.context_window.saturating_sub(output));
    let longest = PromptBundle { request: merge_request(99, config), ..base.clone() };
    let overhead = tokens.count_text(&llm.adapter().render_for_display(&longest)) + 2 * TOKENS_PER_TURN;
    let input = (room * INPUT_SAFETY_PERCENT / 100).saturating_sub(overhead);
    RequestBudget { window: profile.context_window, output, overhead, input }
}

/// The plan of a run, its request without the conversation and the request budget: the last
/// `keep_last` messages kept, or fewer when the run has a target that tail would leave no room
/// under (the summary's room being the condense phase's answer limit; see
/// [`summary::plan_within`]).
fn fitted_plan(
    ctx: &CondensationContext<'_>,
    options: &CondensationOptions,
    config: &SummaryConfig,
    llm: &dyn LlmProvider,
    tokens: &dyn TokenCounter,
) -> Result<(SummaryPlan, PromptBundle, RequestBudget), CondenseError> {
    let planned = summary::plan(ctx, config.keep_last)?;
    let base = base_bundle(ctx, &planned, config, llm);
    let budget = request_budget(llm, tokens, &base, config);
    let plan = summary::plan_within(ctx, config.keep_last, options.target_within(), budget.output, tokens)?;
    if plan == planned {
        return Ok((plan, base, budget));
    }
    let base = base_bundle(ctx, &plan, config, llm);
    let budget = request_budget(llm, tokens, &base, config);
    Ok((plan, base, budget))
}

/// The summary request of `plan` without its conversation: the system prompt, the instructions
/// and the condense phase's generation parameters of `llm`'s profile.
pub fn base_bundle(
    ctx: &CondensationContext<'_>,
    plan: &SummaryPlan,
    config: &SummaryConfig,
    llm: &dyn LlmProvider,
) -> PromptBundle {
    let mut bundle = summary::bundle(ctx, plan, config);
    bundle.conversation_history.clear();
    bundle.generation_params = Some(llm.profile().condense);
    bundle
}

/// What the summary calls wrote.
struct Written<'a> {
    text: String,
    calls: Calls<'a>,
    /// Requests the prompt was split into (1 unless map/reduce).
    parts: usize,
    from_originals: bool,
    shrunk: bool,
    prompt_tokens: usize,
    /// The one request was the chat's conversation plus the instruction ([`from_cache`]).
    from_cache: bool,
}

/// The summary request built on the chat's live conversation (`Services::live`): its system
/// prompt and turns exactly as the chat sends them, with the cache breakpoint where the chat's
/// last request put it, then the instruction as the last user turn; so the provider reads the
/// prefix from its prompt cache. `None` when there is no live conversation, it is not the one
/// planned on (another pass changed it), the chat's last request is not known, or the request
/// and its answer would not fit under the model's request limit.
#[allow(clippy::too_many_arguments)]
fn from_cache(
    ctx: &CondensationContext<'_>,
    plan: &SummaryPlan,
    base: &PromptBundle,
    budget: RequestBudget,
    config: &SummaryConfig,
    llm: &dyn LlmProvider,
    live: Option<&PromptBundle>,
    tokens: &dyn TokenCounter,
) -> Option<(PromptBundle, usize)> {
    let live = live?;
    live.cache.as_ref()?.sent_before?;
    let visible = ctx.messages.iter().filter(|m| m.is_visible()).count();
    if live.conversation_history.len() != visible {
        return None;
    }
    let kept = ctx.messages[plan.tail_start..].iter().filter(|m| m.is_visible()).count();
    let head = CACHED_INSTRUCTION.replace("{k}", &kept.to_string());
    let bundle = PromptBundle {
        system_context: live.system_context.clone(),
        conversation_history: live.conversation_history.clone(),
        request: format!("{}\n\n{head}\n\n{}", base.system_context, instructions(config)),
        output_instructions: base.output_instructions.clone(),
        examples: Vec::new(),
        generation_params: base.generation_params,
        metadata: base.metadata.clone(),
        cache: live.cache.clone(),
    };
    let prompt = tokens.count_text(&llm.adapter().render_for_display(&bundle));
    let limit = crate::limits::request_limit(budget.window, budget.output);
    (prompt + TOKENS_PER_TURN * (bundle.conversation_history.len() + 1) <= limit).then_some((bundle, prompt))
}

/// Asks the model for the summary of `plan`'s middle: one request when it fits, else partial
/// summaries merged.
#[allow(clippy::too_many_arguments)]
async fn write<'a>(
    ctx: &CondensationContext<'_>,
    plan: &SummaryPlan,
    base: &PromptBundle,
    budget: RequestBudget,
    config: &SummaryConfig,
    llm: &'a dyn LlmProvider,
    services: Services<'a>,
    abort: &'a AbortSignal,
) -> Result<Written<'a>, CondenseError> {
    let tokens = services.tokens;
    let mut calls = Calls {
        llm,
        services,
        abort,
        usage: Usage::default(),
        estimated: false,
        count: 0,
        truncated: false,
        finish_reason: None,
        cost: 0.0,
        degenerate: 0,
        retries: 0,
    };
    if let Some((bundle, prompt_tokens)) =
        from_cache(ctx, plan, base, budget, config, llm, services.live, tokens)
    {
        let text = calls.ask(&bundle, "the request").await?;
        return Ok(Written {
            text,
            calls,
            parts: 1,
            from_originals: false,
            shrunk: false,
            prompt_tokens,
            from_cache: true,
        });
    }
    // From the originals when they fit one request; else the span as the model sees it.
    let (expanded, has_summary) = span(ctx.messages, plan, true);
    let mut from_originals = false;
    let mut prompt = None;
    if has_summary {
        let (turns, shrunk) = render(ctx.messages, &expanded, tokens, budget.input);
        if total(&turns) <= budget.input {
            from_originals = true;
            prompt = Some((turns, shrunk));
        }
    }
    let (turns, shrunk) = match prompt {
        Some(p) => p,
        None => {
            let (visible, _) = span(ctx.messages, plan, false);
            render(ctx.messages, &visible, tokens, budget.input)
        }
    };
    let prompt_tokens = total(&turns);
    let parts = chunks(turns, budget.input, tokens);
    let text = if parts.len() == 1 {
        let bundle =
            PromptBundle { conversation_history: parts[0].iter().map(Turn::chat).collect(), ..base.clone() };
        calls.ask(&bundle, "the request").await?
    } else {
        let n = parts.len();
        let mut partials = Vec::with_capacity(n);
        for (i, part) in parts.iter().enumerate() {
            let request = PromptBundle {
                conversation_history: part.iter().map(Turn::chat).collect(),
                request: partial_request(i + 1, n, config),
                ..base.clone()
            };
            partials.push(calls.ask(&request, &format!("part {} of {n}", i + 1)).await?);
        }
        merge(&mut calls, partials, budget.input, base, config).await?
    };
    Ok(Written { text, calls, parts: parts.len(), from_originals, shrunk, prompt_tokens, from_cache: false })
}

/// A summary of a span written outside a provider run, and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanSummary {
    /// The model's text.
    pub text: String,
    /// Tokens the calls used.
    pub usage: Usage,
    /// US dollars spent.
    pub cost: f64,
}

/// Summarizes every message of `messages` after the first (which the prompt shows as the
/// context, as a run's kept first message), with the model `services` lend, under the default
/// instructions: the gateway's summary of a condensed range, whose size the gateway chose (the
/// chat's guards on a run — a few messages at least, a kept tail — do not apply). The same
/// requests, chunking and degenerate-answer checks as a run; a summary longer than the messages
/// it stands in for is `context_grew`.
pub async fn summarize_span(
    messages: &[Message],
    services: Services<'_>,
) -> Result<SpanSummary, CondenseError> {
    let llm = services.llm.ok_or_else(|| CondenseError::InvalidConfig {
        id: "native".into(),
        message: "a summary needs an LLM".into(),
    })?;
    llm.serves(ModelUse::Summarize).map_err(CondenseError::Llm)?;
    if messages.len() < 2 {
        return Err(CondenseError::NothingToCondense("no message after the first to summarize".into()));
    }
    let tokens = services.tokens;
    let view: Vec<&Message> = messages.iter().collect();
    let ctx = CondensationContext {
        messages,
        system: None,
        prev_context_tokens: tokens.count_request(None, &view),
    };
    let plan = SummaryPlan { first: 0, middle: (1..messages.len()).collect(), tail_start: messages.len() };
    let config = SummaryConfig::default();
    let base = base_bundle(&ctx, &plan, &config, llm);
    let budget = request_budget(llm, tokens, &base, &config);
    if budget.input < MIN_INPUT_BUDGET {
        return Err(CondenseError::InvalidConfig {
            id: "native".into(),
            message: format!(
                "the model's window of {} tokens leaves no room for a summary request",
                budget.window
            ),
        });
    }
    let no_abort = AbortSignal::new();
    let abort = services.abort.unwrap_or(&no_abort);
    let w = write(&ctx, &plan, &base, budget, &config, llm, services, abort).await?;
    let hidden: Vec<&Message> = messages[1..].iter().collect();
    let (before, after) = (tokens.count_request(None, &hidden), tokens.count_text(&w.text));
    if after >= before {
        return Err(CondenseError::ContextGrew { before, after });
    }
    Ok(SpanSummary { text: w.text, usage: w.calls.usage, cost: w.calls.cost })
}

/// What lists show of the provider, and what it needs.
const META: ProviderMeta = ProviderMeta {
    id: "native",
    name: "LLM summary",
    description: "An LLM summarizes the middle of the conversation in fixed sections; the first message and the last N stay.",
    needs: Needs::Llm,
};

#[async_trait::async_trait(?Send)]
impl CondensationProvider for NativeProvider {
    fn meta(&self) -> &ProviderMeta {
        &META
    }

    fn config_form(&self) -> Form {
        Form::of::<SummaryConfig>()
    }

    fn validate(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
    ) -> Result<(), CondenseError> {
        summary::plan(ctx, config(options)?.keep_last).map(|_| ())
    }

    /// The prompt (everything but the kept tail, as the requests would carry it) at the input
    /// price, and the condense phase's answer limit for each request at the output price: an
    /// upper bound, unless a degenerate answer is asked again.
    fn estimate_cost(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
    ) -> f64 {
        let (Some(llm), Ok(config)) = (services.llm, config(options)) else { return 0.0 };
        // A model that may not summarize makes no call.
        if llm.serves(ModelUse::Summarize).is_err() {
            return 0.0;
        }
        let Ok((plan, _, budget)) = fitted_plan(ctx, options, &config, llm, services.tokens) else {
            return 0.0;
        };
        let (span, _) = span(ctx.messages, &plan, false);
        let (turns, _) = render(ctx.messages, &span, services.tokens, budget.input);
        let input = total(&turns);
        let parts = input.div_ceil(budget.input.max(1)).max(1);
        let requests = if parts > 1 { parts + 1 } else { 1 };
        let usage =
            Usage::new((input + requests * budget.overhead) as u64, (requests * budget.output) as u64);
        llm.cost(&usage)
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let llm = services.llm.ok_or_else(|| CondenseError::InvalidConfig {
            id: "native".into(),
            message: "the native provider needs an LLM profile".into(),
        })?;
        // A CLI tool whose entry leaves out `summarize` cannot be the condensing model.
        llm.serves(ModelUse::Summarize).map_err(CondenseError::Llm)?;
        let config = config(options)?;
        let (plan, base, budget) = fitted_plan(ctx, options, &config, llm, services.tokens)?;
        if budget.input < MIN_INPUT_BUDGET {
            return Err(CondenseError::InvalidConfig {
                id: "native".into(),
                message: format!(
                    "the condensing model's window of {} tokens leaves {} tokens for the conversation after its \
                     answer ({} tokens) and the instructions; choose a model with a larger window or a smaller \
                     condense output limit",
                    budget.window, budget.input, budget.output
                ),
            });
        }
        let tokens = services.tokens;
        let no_abort = AbortSignal::new();
        let abort = services.abort.unwrap_or(&no_abort);
        let w = write(ctx, &plan, &base, budget, &config, llm, services, abort).await?;
        let (text, calls, parts) = (w.text, w.calls, w.parts);
        let (from_originals, shrunk, prompt_tokens) = (w.from_originals, w.shrunk, w.prompt_tokens);
        let from_cache = w.from_cache;
        let (messages, mut metrics) = summary::apply_checked(ctx, tokens, &plan, &text)?;
        metrics.insert("profile_id".into(), llm.profile().id.clone().into());
        metrics.insert("model".into(), llm.profile().model.clone().into());
        let u = calls.usage;
        metrics.insert(
            "usage".into(),
            json!({"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                   "cache_read_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens,
                   "estimated": calls.estimated}),
        );
        metrics.insert(METRIC_FROM_CACHE.into(), from_cache.into());
        metrics.insert(METRIC_CACHED_SHARE.into(), json!(u.cached_share()));
        metrics.insert("finish_reason".into(), calls.finish_reason.clone().into());
        metrics.insert(METRIC_SUMMARY_TRUNCATED.into(), calls.truncated.into());
        metrics.insert("chunks".into(), parts.into());
        metrics.insert("llm_calls".into(), calls.count.into());
        metrics.insert("degenerate_answers".into(), calls.degenerate.into());
        metrics.insert("greedy_retries".into(), calls.retries.into());
        metrics.insert("from_originals".into(), from_originals.into());
        metrics.insert("prompt_shrunk".into(), shrunk.into());
        metrics.insert("prompt_tokens".into(), prompt_tokens.into());
        metrics.insert("input_budget".into(), budget.input.into());
        Ok(Condensed { messages, summary: Some(text), cost: calls.cost, metrics })
    }
}
