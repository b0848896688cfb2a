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

use std::collections::HashMap;

use serde_json::json;

use crate::config::Form;
use crate::error::CondenseError;
use crate::error::{ErrorKind, LlmError};
use crate::host::AbortSignal;
use crate::llm::{
    ChatMessage, ChatRole, DEFAULT_MAX_OUTPUT_TOKENS, GenerationParams, LlmProvider, ModelUse, PromptBundle,
    Usage,
};
use crate::model::{ContentBlock, Message, Role, tool_result_text};
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, METRIC_SUMMARY_TRUNCATED,
    Needs, Services, TemplateToken,
};
use crate::tokens::TokenCounter;

use super::degenerate;
use super::summary::{self, SummaryConfig, SummaryPlan};

/// The share, in percent, of the room left after the answer that a request may fill. The rest is
/// a margin: the counter is not the condensing model's tokenizer, and chat templates add tokens.
pub const INPUT_SAFETY_PERCENT: usize = 75;
/// Tokens a prompt turn costs besides its text (role markers, separators).
pub const TOKENS_PER_TURN: usize = 4;
/// The smallest conversation budget a summary request is attempted with.
pub const MIN_INPUT_BUDGET: usize = 128;
/// A tool result or argument longer than this share of the budget, in percent, is cut to its head
/// and tail in a shrunk prompt.
pub const TOOL_TEXT_SHARE_PERCENT: usize = 12;
/// A repeated tool output shorter than this, in tokens, is repeated rather than referenced.
pub const MIN_DEDUP_TOKENS: usize = 32;

/// The instruction that opens a partial summary's request (map): `{i}` and `{n}` are the part's
/// place.
pub const PARTIAL_INSTRUCTION: &str = "The conversation above is part {i} of {n} of a longer \
conversation; the other parts are summarized separately and merged afterwards. Summarize only this \
part, faithfully: keep every instruction, rule and preference the user gave (in their words), every \
file path and what was done to it, every command and its outcome, every error, and every open task.";

/// The instruction that opens a merge request (reduce): `{n}` is the number of partial summaries.
pub const MERGE_INSTRUCTION: &str = "The {n} partial summaries above cover one conversation, \
in order. Merge them into one summary of the whole conversation: keep every user instruction, \
file path, command, error and open task they mention; where a later part contradicts an earlier \
one, the later part wins.";

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

fn instructions(config: &SummaryConfig) -> String {
    config.custom_prompt.clone().unwrap_or_else(|| summary::SUMMARY_PROMPT.to_owned())
}

fn partial_request(i: usize, n: usize, config: &SummaryConfig) -> String {
    let head = PARTIAL_INSTRUCTION.replace("{i}", &i.to_string()).replace("{n}", &n.to_string());
    format!("{head}\n\n{}", instructions(config))
}

fn merge_request(n: usize, config: &SummaryConfig) -> String {
    format!("{}\n\n{}", MERGE_INSTRUCTION.replace("{n}", &n.to_string()), instructions(config))
}

/// One prompt turn with its size.
#[derive(Debug, Clone)]
struct Turn {
    role: ChatRole,
    text: String,
    tokens: usize,
}

impl Turn {
    fn new(role: ChatRole, text: String, tokens: &dyn TokenCounter) -> Self {
        let n = tokens.count_text(&text) + TOKENS_PER_TURN;
        Turn { role, text, tokens: n }
    }

    fn chat(&self) -> ChatMessage {
        ChatMessage { role: self.role, content: self.text.clone() }
    }
}

fn total(turns: &[Turn]) -> usize {
    turns.iter().map(|t| t.tokens).sum()
}

/// `text` cut to about `keep` tokens: its head and tail, with what was left out named. `size` is
/// the text's token count.
fn head_tail(text: &str, size: usize, keep: usize) -> String {
    if size <= keep || size == 0 {
        return text.to_owned();
    }
    let chars: Vec<char> = text.chars().collect();
    let keep_chars = chars.len() * keep / size;
    let head = keep_chars * 2 / 3;
    let tail = keep_chars - head;
    let head: String = chars[..head].iter().collect();
    let tail: String = chars[chars.len() - tail..].iter().collect();
    format!("{head}\n[{} tokens omitted]\n{tail}", size - keep)
}

/// How a span's messages become prompt text: as they are, or shrunk.
struct Renderer<'a> {
    tokens: &'a dyn TokenCounter,
    /// Tool text longer than this is cut to head and tail; `None`: nothing is cut.
    cap: Option<usize>,
    /// Each tool call's name and main argument, by call id.
    calls: HashMap<&'a str, String>,
    /// Tool outputs already shown, by text, with the call that showed them first.
    seen: HashMap<String, String>,
}

impl<'a> Renderer<'a> {
    fn new(messages: &'a [Message], tokens: &'a dyn TokenCounter, cap: Option<usize>) -> Self {
        let mut calls = HashMap::new();
        for m in messages {
            for b in &m.content {
                if let ContentBlock::ToolUse { id, name, input } = b {
                    calls.insert(id.as_str(), call_label(name, input));
                }
            }
        }
        Renderer { tokens, cap, calls, seen: HashMap::new() }
    }

    fn turn(&mut self, m: &Message) -> Turn {
        let role = match m.role {
            Role::User => ChatRole::User,
            Role::Assistant => ChatRole::Assistant,
        };
        let Some(cap) = self.cap else {
            return Turn::new(role, summary::to_chat(m).content, self.tokens);
        };
        let mut parts = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::Text { text, .. } => parts.push(text.clone()),
                ContentBlock::ToolUse { name, input, .. } => {
                    let args = input.to_string();
                    let size = self.tokens.count_text(&args);
                    parts.push(format!("[tool call: {name} {}]", head_tail(&args, size, cap)));
                }
                ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                    let text = tool_result_text(content);
                    let label = if *is_error { "tool error" } else { "tool result" };
                    let call =
                        self.calls.get(tool_use_id.as_str()).cloned().unwrap_or_else(|| "a tool".into());
                    let size = self.tokens.count_text(&text);
                    if size >= MIN_DEDUP_TOKENS
                        && let Some(first) = self.seen.get(&text)
                    {
                        parts.push(format!(
                            "[{label}: the same {size} tokens as the output of {first} above]"
                        ));
                        continue;
                    }
                    if size >= MIN_DEDUP_TOKENS {
                        self.seen.insert(text.clone(), call);
                    }
                    parts.push(format!("[{label}]\n{}", head_tail(&text, size, cap)));
                }
                ContentBlock::Image { .. } => parts.push("[image]".into()),
                ContentBlock::Opaque(block) => {
                    let text = block.prompt_text();
                    let size = self.tokens.count_text(&text);
                    parts.push(head_tail(&text, size, cap));
                }
            }
        }
        Turn::new(role, parts.join("\n"), self.tokens)
    }
}

/// A tool call as a short label: its name and main argument.
fn call_label(name: &str, input: &serde_json::Value) -> String {
    let main = ["path", "file_path", "filePath", "target_file", "command", "cmd", "query", "pattern", "url"]
        .iter()
        .find_map(|k| input.get(*k).and_then(serde_json::Value::as_str));
    match main {
        Some(arg) => format!("{name} {}", arg.chars().take(120).collect::<String>()),
        None => name.to_owned(),
    }
}

/// The messages a summary of `plan` is written from: the first message and the middle, each
/// earlier summary replaced by the messages it hid (recursively) when `expand`. Returns whether a
/// summary was expanded.
fn span<'m>(messages: &'m [Message], plan: &SummaryPlan, expand: bool) -> (Vec<&'m Message>, bool) {
    let mut out = Vec::new();
    let mut expanded = false;
    for i in std::iter::once(plan.first).chain(plan.middle.iter().copied()) {
        expanded |= push_original(messages, &messages[i], expand, &mut out, 0);
    }
    (out, expanded)
}

fn push_original<'m>(
    messages: &'m [Message],
    m: &'m Message,
    expand: bool,
    out: &mut Vec<&'m Message>,
    depth: usize,
) -> bool {
    let hid: Vec<&Message> = match (&m.condense_id, expand && m.is_summary && depth < 16) {
        (Some(cid), true) => messages.iter().filter(|h| h.condense_parent.as_deref() == Some(cid)).collect(),
        _ => Vec::new(),
    };
    if hid.is_empty() {
        out.push(m);
        return false;
    }
    for h in hid {
        push_original(messages, h, expand, out, depth + 1);
    }
    true
}

/// The prompt turns of a span: as they are when they fit `budget`, else shrunk.
fn render(
    messages: &[Message],
    span: &[&Message],
    tokens: &dyn TokenCounter,
    budget: usize,
) -> (Vec<Turn>, bool) {
    let mut plain = Renderer::new(messages, tokens, None);
    let turns: Vec<Turn> = span.iter().map(|m| plain.turn(m)).collect();
    if total(&turns) <= budget {
        return (turns, false);
    }
    let cap = (budget * TOOL_TEXT_SHARE_PERCENT / 100).max(MIN_DEDUP_TOKENS);
    let mut shrink = Renderer::new(messages, tokens, Some(cap));
    (span.iter().map(|m| shrink.turn(m)).collect(), true)
}

/// Turns split into chunks of at most `budget` tokens at turn boundaries; a turn too big for a
/// chunk alone is cut to fit.
fn chunks(turns: Vec<Turn>, budget: usize, tokens: &dyn TokenCounter) -> Vec<Vec<Turn>> {
    let mut out: Vec<Vec<Turn>> = Vec::new();
    let mut current: Vec<Turn> = Vec::new();
    for t in turns {
        let t = if t.tokens > budget {
            let keep = budget.saturating_sub(TOKENS_PER_TURN + 16);
            Turn::new(t.role, head_tail(&t.text, t.tokens - TOKENS_PER_TURN, keep), tokens)
        } else {
            t
        };
        if !current.is_empty() && total(&current) + t.tokens > budget {
            out.push(std::mem::take(&mut current));
        }
        current.push(t);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The calls of one run: what they used and cost, and whether any answer was cut.
struct Calls<'a> {
    llm: &'a dyn LlmProvider,
    services: Services<'a>,
    abort: &'a AbortSignal,
    usage: Usage,
    estimated: bool,
    count: usize,
    truncated: bool,
    finish_reason: Option<String>,
    cost: f64,
    /// Answers found degenerate (see [`degenerate::check`]), retried or not.
    degenerate: usize,
    /// Greedy retries of a degenerate answer.
    retries: usize,
}

/// One answer of the model, before it is judged.
struct Answer {
    text: String,
    finish_reason: Option<String>,
}

impl Calls<'_> {
    /// One request; its cost is on the run's meter as soon as the model answered. A degenerate
    /// answer (one that repeats itself, or was cut before any of the sections the request asks
    /// for) is asked again once at temperature 0 where the model takes a temperature and was not
    /// asked at 0 already; when that answer is degenerate too, or no retry was possible, the run
    /// is refused with `degenerate_summary`. Both calls are paid for.
    async fn ask(&mut self, bundle: &PromptBundle, what: &str) -> Result<String, CondenseError> {
        let sections = degenerate::sections_asked(&bundle.request);
        let first = self.call(bundle, what).await?;
        let Some(why) = degenerate::check(&first.text, first.finish_reason.as_deref(), &sections) else {
            return Ok(self.accept(first));
        };
        self.degenerate += 1;
        let greedy = match self.greedy(bundle) {
            Ok(greedy) => greedy,
            Err(no_retry) => {
                return Err(CondenseError::DegenerateSummary(format!(
                    "the summary the model wrote for {what} was not applied ({why}); {no_retry}, so it was \
                     not retried; the conversation is unchanged"
                )));
            }
        };
        self.retries += 1;
        let second = self.call(&greedy, what).await?;
        match degenerate::check(&second.text, second.finish_reason.as_deref(), &sections) {
            None => Ok(self.accept(second)),
            Some(again) => {
                self.degenerate += 1;
                Err(CondenseError::DegenerateSummary(format!(
                    "the summary the model wrote for {what} was not applied ({why}), nor its greedy retry at \
                     temperature 0 ({again}); the conversation is unchanged"
                )))
            }
        }
    }

    /// The request again at temperature 0, or why it cannot be: the model takes no temperature
    /// (a CLI tool, a reasoning model), or the request was greedy already, and asking again
    /// would get the same answer.
    fn greedy(&self, bundle: &PromptBundle) -> Result<PromptBundle, &'static str> {
        let caps = self.llm.capabilities();
        if !caps.supports_temperature {
            return Err("the condensing model takes no temperature");
        }
        let params = bundle.generation_params.unwrap_or_default();
        if params.clamped(&caps).temperature == Some(0.0) {
            return Err("it was written at temperature 0 already");
        }
        let params = GenerationParams { temperature: Some(0.0), ..params };
        Ok(PromptBundle { generation_params: Some(params), ..bundle.clone() })
    }

    /// An answer taken: its finish reason is the run's, and a cut one flags the run.
    fn accept(&mut self, answer: Answer) -> String {
        // A summary cut by the answer limit is kept but flagged (one cut before any of its
        // sections is degenerate and never gets here): the user can undo it.
        self.truncated |= matches!(answer.finish_reason.as_deref(), Some("length" | "max_tokens"));
        self.finish_reason = answer.finish_reason;
        answer.text
    }

    /// One request sent and paid for; an empty answer fails.
    async fn call(&mut self, bundle: &PromptBundle, what: &str) -> Result<Answer, CondenseError> {
        self.count += 1;
        let tokens = self.services.tokens;
        let prompt_tokens = || tokens.count_text(&self.llm.adapter().render_for_display(bundle)) as u64;
        match self.llm.complete(bundle, self.abort).await {
            Err(e) => {
                // Text that did arrive was paid for: estimated, since the server reported nothing.
                if !e.partial.is_empty() {
                    let usage = Usage {
                        input_tokens: prompt_tokens(),
                        output_tokens: tokens.count_text(&e.partial) as u64,
                    };
                    self.charge(usage, None, true);
                }
                Err(CondenseError::Llm(e))
            }
            Ok(response) => {
                let (usage, estimated) = match response.usage {
                    Some(u) => (u, false),
                    None => (
                        Usage {
                            input_tokens: prompt_tokens(),
                            output_tokens: tokens.count_text(&response.content) as u64,
                        },
                        true,
                    ),
                };
                self.charge(usage, response.cost_usd, estimated);
                let text = response.content.trim();
                if text.is_empty() {
                    return Err(CondenseError::Llm(LlmError::new(
                        ErrorKind::LlmMalformedStream,
                        format!("the model answered {what} with an empty summary"),
                    )));
                }
                Ok(Answer { text: text.to_owned(), finish_reason: response.finish_reason })
            }
        }
    }

    /// Puts a call on the meter: the cost the client reported, else the usage at the profile's
    /// prices.
    fn charge(&mut self, usage: Usage, reported: Option<f64>, estimated: bool) {
        let cost = reported.unwrap_or_else(|| self.llm.cost(&usage));
        self.services.spend(cost);
        self.cost += cost;
        self.usage.input_tokens += usage.input_tokens;
        self.usage.output_tokens += usage.output_tokens;
        self.estimated |= estimated;
    }
}

/// Partial summaries as prompt turns.
fn partial_turns(partials: &[String], tokens: &dyn TokenCounter) -> Vec<Turn> {
    let n = partials.len();
    partials
        .iter()
        .enumerate()
        .map(|(i, p)| Turn::new(ChatRole::User, format!("Partial summary {} of {n}:\n\n{p}", i + 1), tokens))
        .collect()
}

/// Merges partial summaries into one (reduce): in one request when they fit, else in groups that
/// fit, again and again, each round fewer.
async fn merge(
    calls: &mut Calls<'_>,
    mut partials: Vec<String>,
    budget: usize,
    base: &PromptBundle,
    config: &SummaryConfig,
) -> Result<String, CondenseError> {
    let tokens = calls.services.tokens;
    loop {
        let turns = partial_turns(&partials, tokens);
        if total(&turns) <= budget {
            let bundle = PromptBundle {
                conversation_history: turns.iter().map(Turn::chat).collect(),
                request: merge_request(partials.len(), config),
                ..base.clone()
            };
            return calls.ask(&bundle, "the merge").await;
        }
        // Any two partials fit one request once each is at most half the budget, so every round
        // merges at least two into one and the rounds end.
        let half = budget / 2;
        let turns: Vec<Turn> = turns
            .into_iter()
            .map(|t| {
                if t.tokens > half {
                    let keep = half.saturating_sub(TOKENS_PER_TURN + 16);
                    Turn::new(t.role, head_tail(&t.text, t.tokens - TOKENS_PER_TURN, keep), tokens)
                } else {
                    t
                }
            })
            .collect();
        let groups = chunks(turns, budget, tokens);
        let n = groups.len();
        let mut next = Vec::with_capacity(n);
        for (i, group) in groups.into_iter().enumerate() {
            if group.len() == 1 {
                next.push(group[0].text.clone());
                continue;
            }
            let bundle = PromptBundle {
                conversation_history: group.iter().map(Turn::chat).collect(),
                request: format!(
                    "{}\n\nThese partial summaries are group {} of {n}; the merged result will be merged again with the others.",
                    merge_request(group.len(), config),
                    i + 1
                ),
                ..base.clone()
            };
            next.push(calls.ask(&bundle, &format!("merge group {} of {n}", i + 1)).await?);
        }
        partials = next;
    }
}

#[async_trait::async_trait(?Send)]
impl CondensationProvider for NativeProvider {
    fn id(&self) -> &str {
        "native"
    }

    fn name(&self) -> &str {
        "LLM summary"
    }

    fn description(&self) -> &str {
        "An LLM summarizes the middle of the conversation in fixed sections; the first message and the last N stay."
    }

    fn needs(&self) -> Needs {
        Needs::Llm
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
        let usage = Usage {
            input_tokens: (input + requests * budget.overhead) as u64,
            output_tokens: (requests * budget.output) as u64,
        };
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
        // From the originals when they fit one request; else the span as the model sees it.
        let (expanded, has_summary) = span(ctx.messages, &plan, true);
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
                let (visible, _) = span(ctx.messages, &plan, false);
                render(ctx.messages, &visible, tokens, budget.input)
            }
        };
        let no_abort = AbortSignal::new();
        let mut calls = Calls {
            llm,
            services,
            abort: services.abort.unwrap_or(&no_abort),
            usage: Usage::default(),
            estimated: false,
            count: 0,
            truncated: false,
            finish_reason: None,
            cost: 0.0,
            degenerate: 0,
            retries: 0,
        };
        let prompt_tokens = total(&turns);
        let parts = chunks(turns, budget.input, tokens);
        let text = if parts.len() == 1 {
            let bundle = PromptBundle {
                conversation_history: parts[0].iter().map(Turn::chat).collect(),
                ..base.clone()
            };
            calls.ask(&bundle, "the request").await?
        } else {
            let n = parts.len();
            let mut partials = Vec::with_capacity(n);
            for (i, part) in parts.iter().enumerate() {
                let request = PromptBundle {
                    conversation_history: part.iter().map(Turn::chat).collect(),
                    request: partial_request(i + 1, n, &config),
                    ..base.clone()
                };
                partials.push(calls.ask(&request, &format!("part {} of {n}", i + 1)).await?);
            }
            merge(&mut calls, partials, budget.input, &base, &config).await?
        };
        let (messages, mut metrics) = summary::apply_checked(ctx, tokens, &plan, &text)?;
        metrics.insert("profile_id".into(), llm.profile().id.clone().into());
        metrics.insert("model".into(), llm.profile().model.clone().into());
        metrics.insert(
            "usage".into(),
            json!({"input_tokens": calls.usage.input_tokens, "output_tokens": calls.usage.output_tokens, "estimated": calls.estimated}),
        );
        metrics.insert("finish_reason".into(), calls.finish_reason.clone().into());
        metrics.insert(METRIC_SUMMARY_TRUNCATED.into(), calls.truncated.into());
        metrics.insert("chunks".into(), parts.len().into());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{Encoding, TiktokenCounter};

    #[test]
    fn head_tail_keeps_both_ends_and_names_the_cut() {
        let t = TiktokenCounter::new(Encoding::O200kBase);
        let text: String = (0..400).map(|i| format!("line {i}\n")).collect();
        let size = t.count_text(&text);
        let cut = head_tail(&text, size, 100);
        assert!(cut.starts_with("line 0\n") && cut.ends_with("line 399\n"), "{cut}");
        assert!(cut.contains(&format!("[{} tokens omitted]", size - 100)));
        assert!(t.count_text(&cut) < 130, "{}", t.count_text(&cut));
        assert_eq!(head_tail("short", 1, 100), "short");
    }

    #[test]
    fn chunks_cut_at_turn_boundaries_and_cut_a_turn_too_big_alone() {
        let t = TiktokenCounter::new(Encoding::O200kBase);
        let turn = |n: usize| Turn::new(ChatRole::User, "word ".repeat(n), &t);
        let parts = chunks(vec![turn(40), turn(40), turn(40), turn(500), turn(10)], 100, &t);
        let sizes: Vec<usize> = parts.iter().map(|c| c.len()).collect();
        // Two fit together; the third alone; the big one cut to nearly the whole budget; the last.
        assert_eq!(sizes, [2, 1, 1, 1]);
        for c in &parts {
            assert!(total(c) <= 100, "{}", total(c));
        }
        assert!(parts[2][0].text.contains("tokens omitted]") && parts[2][0].tokens > 80);
    }
}
