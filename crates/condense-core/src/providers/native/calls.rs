//! The model calls of one run: each answer judged (a degenerate one asked again once, greedily),
//! usage and cost put on the run's meter as soon as the model answered, and the reduce step that
//! merges partial summaries, in rounds when they do not fit one request.

use crate::error::{CondenseError, ErrorKind, LlmError};
use crate::host::AbortSignal;
use crate::llm::{GenerationParams, LlmProvider, PromptBundle, Usage};
use crate::provider::Services;
use crate::providers::degenerate;
use crate::providers::summary::SummaryConfig;

use super::prompt::{TOKENS_PER_TURN, Turn, chunks, head_tail, merge_request, partial_turns, total};

/// The calls of one run: what they used and cost, and whether any answer was cut.
pub(super) struct Calls<'a> {
    pub(super) llm: &'a dyn LlmProvider,
    pub(super) services: Services<'a>,
    pub(super) abort: &'a AbortSignal,
    pub(super) usage: Usage,
    pub(super) estimated: bool,
    pub(super) count: usize,
    pub(super) truncated: bool,
    pub(super) finish_reason: Option<String>,
    pub(super) cost: f64,
    /// Answers found degenerate (see [`degenerate::check`]), retried or not.
    pub(super) degenerate: usize,
    /// Greedy retries of a degenerate answer.
    pub(super) retries: usize,
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
    pub(super) async fn ask(&mut self, bundle: &PromptBundle, what: &str) -> Result<String, CondenseError> {
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
                    let usage = Usage::new(prompt_tokens(), tokens.count_text(&e.partial) as u64);
                    self.charge(usage, None, true);
                }
                Err(CondenseError::Llm(e))
            }
            Ok(response) => {
                let (usage, estimated) = match response.usage {
                    Some(u) => (u, false),
                    None => (Usage::new(prompt_tokens(), tokens.count_text(&response.content) as u64), true),
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
        self.usage.add(&usage);
        self.estimated |= estimated;
    }
}

/// Merges partial summaries into one (reduce): in one request when they fit, else in groups that
/// fit, again and again, each round fewer.
pub(super) async fn merge(
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
