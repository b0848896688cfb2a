//! The LLM summary the gateway writes in the background (provider `native`).
//!
//! A request never waits for a model: the request that crosses the threshold is condensed at
//! once with the LLM-free ledger (`plan`), and the same range becomes a [`SummaryJob`] the host
//! takes ([`Gateway::take_jobs`]) and runs when it can ([`summarize`], with the condensing model
//! or the request's own). What comes back ([`Gateway::summary_done`]) replaces the ledger-only
//! condensation — the summary above the same ledger, so the user's words stay verbatim whatever
//! the model wrote — and the next request of the session is forwarded with it: the upstream's
//! cache is written again from that point once, as for any condensation.
//!
//! The summary is untrusted text: the freeze neutralises anything imitating the gateway's
//! marker. It is used only while the condensation it was written for is still there unchanged
//! (the client may have rewound past it, or a "too long" retry swallowed it), and only when the
//! request stays under its threshold with it; otherwise the ledger stays and the reason is
//! recorded. Jobs are not persisted: a restart keeps the ledger.
//!
//! Splicing a summary in makes the upstream write its cache again from the condensation on, and
//! the summary sits above the ledger, so it never makes a request smaller (the window never needs
//! it). Under the `threshold` policy (and for a model whose price is unknown) it goes in at the
//! next request; under `cache-aware` it waits ([`Ready`]) for a moment when that costs nothing
//! more: the session's next condensation (which writes the cache again from there anyway), or its
//! cache having gone cold.

use crate::llm::{LlmKind, LlmProfile};
use crate::provider::Services;
use crate::providers::native::summarize_span;

use super::decide::Gateway;
use super::dialect::Dialect;
use super::http::Upstreams;
use super::jobs::{Pending, Ready, SummaryDone, SummaryJob};
use super::stats::GatewayPolicy;
use super::windows::window_for;
use crate::billing::model_prices;

/// Writes a job's summary with the model `services` lend: every message after the task's first
/// summarized, as the native provider writes (its requests, chunking and checks). The error is
/// the provider's, in one line.
pub async fn summarize(job: &SummaryJob, services: Services<'_>) -> Result<SummaryDone, String> {
    let model = services.llm.map(|llm| llm.profile().model.clone()).unwrap_or_default();
    let written = summarize_span(&job.conversation.messages, services).await.map_err(|e| e.to_string())?;
    if written.text.trim().is_empty() {
        return Err("the model wrote no summary".into());
    }
    Ok(SummaryDone {
        text: written.text,
        model,
        cost_usd: written.cost,
        input_tokens: written.usage.input_tokens,
        output_tokens: written.usage.output_tokens,
    })
}

/// How a summary spliced over a ledger begins.
pub(super) const SUMMARY_HEADING: &str = "Summary of the earlier conversation";

/// The text that replaces a range once its summary is written.
fn with_summary(summary: &str, model: &str, ledger: &str) -> String {
    format!("{SUMMARY_HEADING} (written by {model}):\n\n{}\n\n{ledger}", summary.trim())
}

impl Gateway {
    /// The summaries to write, handed over once each.
    pub fn take_jobs(&mut self) -> Vec<SummaryJob> {
        std::mem::take(&mut self.jobs)
    }

    /// The profile that writes `job` with the request's own model at the upstream it went to
    /// (`--summarize-with-upstream`): Anthropic's Messages API for an Anthropic session, OpenAI's
    /// Chat Completions otherwise (for a Gemini session, the Gemini API's OpenAI-compatible
    /// endpoint, which takes the same key as a bearer token), the model's window and prices from
    /// the tables. The host adds the request's key.
    pub fn upstream_profile(&self, job: &SummaryJob, upstreams: &Upstreams) -> LlmProfile {
        let (kind, base) = match job.dialect {
            Dialect::AnthropicMessages => (LlmKind::Anthropic, upstreams.anthropic.clone()),
            Dialect::ChatCompletions | Dialect::Responses => {
                (LlmKind::Openai, format!("{}/v1", upstreams.openai))
            }
            Dialect::Gemini => (LlmKind::Openai, format!("{}/v1beta/openai", upstreams.gemini)),
        };
        let window = window_for(&job.model, &self.config.windows);
        // A model whose price is unknown writes for $0 as far as the books know: its cost is
        // then not claimed either way.
        let p = model_prices(&job.model).map(|p| p.prices(0.0)).unwrap_or_default();
        LlmProfile {
            base_url: Some(base),
            price_input_per_mtok: p.input,
            price_output_per_mtok: p.output,
            price_cache_write_per_mtok: Some(p.cache_write),
            price_cache_read_per_mtok: Some(p.cache_read),
            ..LlmProfile::new("upstream", kind, job.model.clone(), window)
        }
    }

    /// How many summaries are queued or being written.
    pub fn summaries_pending(&self) -> usize {
        self.pending.len()
    }

    /// A job's outcome, from the host. A summary is used when its condensation is still there
    /// unchanged and the request stays under its threshold with it: under the `threshold`
    /// policy the session's next request carries it (the answer says so), under `cache-aware`
    /// it waits for a moment when splicing it costs nothing more (see the module's
    /// documentation). The cost is counted either way, against the saving.
    pub fn summary_done(&mut self, id: u64, outcome: Result<SummaryDone, String>) -> bool {
        let Some(pending) = self.pending.remove(&id) else { return false };
        let name = pending.key.to_string();
        let range = pending.range.clone();
        let cost = outcome.as_ref().map_or(0.0, |d| d.cost_usd);
        let (tokens_in, tokens_out) = outcome.as_ref().map_or((0, 0), |d| (d.input_tokens, d.output_tokens));
        let checked = outcome.and_then(|done| self.check_summary(&pending, &done).map(|(text, _)| text));
        // A model whose price is unknown cannot be weighed: its summary goes in at once, as
        // under the `threshold` policy.
        let priced = self.states.get(&name).is_some_and(|s| model_prices(&s.stats.model).is_some());
        let wait = self.config.policy == GatewayPolicy::CacheAware && priced;
        let used = match checked {
            Ok(text) if wait => {
                let note = "the summary is written; it goes in at the session's next condensation, or \
                            once its cache has gone cold, when that costs nothing more";
                if let Some(state) = self.states.get_mut(&name) {
                    state.ready = Some(Ready { pending, text });
                    state.stats.summary_note = Some(note.into());
                    self.totals.summary_note = Some(note.into());
                }
                Err(None)
            }
            Ok(text) => {
                self.sessions.rewrite(&pending.key, &pending.range, &text).map_err(|e| Some(e.to_string()))
            }
            Err(why) => Err(Some(why)),
        };
        let Some(state) = self.states.get_mut(&name) else { return false };
        for stats in [&mut state.stats, &mut self.totals] {
            stats.summary_cost_usd += cost;
            stats.summary_tokens += tokens_in + tokens_out;
            stats.cost_saved_usd -= cost;
            stats.update_payback();
            match &used {
                Ok(()) => stats.summaries += 1,
                Err(None) => {}
                Err(Some(why)) => {
                    stats.summary_failures += 1;
                    stats.summary_note = Some(format!(
                        "the summary of messages {}..{} was not used: {why}",
                        range.start, range.end
                    ));
                }
            }
        }
        if used.is_ok() {
            state.reshaped = true;
        }
        used.is_ok()
    }

    /// The text that replaces `pending`'s range with `done`'s summary, and the tokens it adds,
    /// when it can be used (see [`Gateway::check_summary_text`]).
    fn check_summary(&mut self, pending: &Pending, done: &SummaryDone) -> Result<(String, usize), String> {
        let name = pending.key.to_string();
        let state = self.states.get(&name).ok_or("the session was forgotten")?;
        let model = state.stats.model.clone();
        let writer = if done.model.is_empty() { &model } else { &done.model };
        let text = with_summary(&done.text, writer, &pending.ledger);
        let grown = self.check_summary_text(pending, &text)?;
        Ok((text, grown))
    }
}
