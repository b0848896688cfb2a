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

use std::ops::Range;

use crate::llm::{LlmKind, LlmProfile};
use crate::model::Conversation;
use crate::provider::Services;
use crate::providers::native::summarize_span;

use super::count::read_messages;
use super::decide::Gateway;
use super::dialect::Dialect;
use super::freeze::{Shape, replacement};
use super::session_key::SessionKey;
use super::stats::GatewayPolicy;
use super::windows::window_for;
use crate::billing::model_prices;

/// A summary to write: the messages of one condensation, after the task they came under.
#[derive(Debug, Clone)]
pub struct SummaryJob {
    /// Names the job to [`Gateway::summary_done`].
    pub id: u64,
    /// The session's name, as in the statistics.
    pub session: String,
    /// The model of the request that made the condensation (`--summarize-with-upstream` writes
    /// with it).
    pub model: String,
    /// The dialect of the session's requests (which upstream, which credentials).
    pub dialect: Dialect,
    /// The task's messages (the client's first turn, kept verbatim in every request) and then
    /// the condensed range's: [`summarize`] summarizes all but the first.
    pub conversation: Conversation,
}

/// A summary written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryDone {
    /// The model's text.
    pub text: String,
    /// The model that wrote it (its heading names it); empty: the session's own model.
    pub model: String,
    /// What the calls cost, in US dollars.
    pub cost_usd: f64,
    /// Tokens the calls sent and received.
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A job given out and not yet done.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) key: SessionKey,
    pub(super) range: Range<usize>,
    /// The ledger frozen for the range: the summary goes above it, and the job is used only
    /// while the condensation still holds it.
    pub(super) ledger: String,
}

/// A summary written and checked, waiting to be spliced in (`cache-aware`).
#[derive(Debug)]
pub(super) struct Ready {
    pub(super) pending: Pending,
    /// The text that replaces the range: the summary above the ledger.
    pub(super) text: String,
}

/// How many jobs may wait for the host at once: beyond, a condensation keeps its ledger.
pub const MAX_PENDING_SUMMARIES: usize = 16;

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
    /// Queues the summary of a condensation just frozen for `key` (original messages `range`,
    /// the task ending at `task_end`), unless the session already waits for one or too many
    /// wait; a summary not queued is counted as failed, with the reason. Called by the
    /// decisions when the provider is `native`.
    pub(super) fn queue_summary(
        &mut self,
        key: &SessionKey,
        model: &str,
        task_end: usize,
        range: Range<usize>,
        ledger: &str,
    ) {
        let Err(why) = self.try_queue(key, model, task_end, range.clone(), ledger) else { return };
        let name = key.to_string();
        let session = self.states.get_mut(&name).map(|s| &mut s.stats);
        for stats in session.into_iter().chain([&mut self.totals]) {
            stats.summary_failures += 1;
            stats.summary_note =
                Some(format!("no summary of messages {}..{}: {why}", range.start, range.end));
        }
    }

    fn try_queue(
        &mut self,
        key: &SessionKey,
        model: &str,
        task_end: usize,
        range: Range<usize>,
        ledger: &str,
    ) -> Result<(), String> {
        if self.pending.len() >= MAX_PENDING_SUMMARIES {
            return Err(format!("{MAX_PENDING_SUMMARIES} summaries are already being written"));
        }
        if self.pending.values().any(|p| &p.key == key) {
            return Err("the session's previous summary is still being written".into());
        }
        let session = self.sessions.map.get(key).ok_or("the session was not kept")?;
        // The task's turns without the system or developer messages a client may send among
        // them (Claude Code does): the summary request has instructions of its own.
        let task = session.originals[..task_end.min(range.start)]
            .iter()
            .filter(|o| Shape::read(session.dialect, &o.text).is_some_and(|s| !s.is_instructions()));
        let texts: Vec<&str> = task.chain(&session.originals[range.clone()]).map(|o| &*o.text).collect();
        let (_, messages) = read_messages(session.dialect, &texts)?;
        let id = self.next_job;
        self.next_job += 1;
        self.jobs.push(SummaryJob {
            id,
            session: key.to_string(),
            model: model.to_owned(),
            dialect: session.dialect,
            conversation: Conversation { messages, ..Conversation::default() },
        });
        self.pending.insert(id, Pending { key: key.clone(), range, ledger: ledger.to_owned() });
        Ok(())
    }

    /// The summaries to write, handed over once each.
    pub fn take_jobs(&mut self) -> Vec<SummaryJob> {
        std::mem::take(&mut self.jobs)
    }

    /// The profile that writes `job` with the request's own model at the upstream it went to
    /// (`--summarize-with-upstream`): Anthropic's Messages API for an Anthropic session, OpenAI's
    /// Chat Completions otherwise, the model's window and prices from the tables. `anthropic`
    /// and `openai` are the upstreams' origins, without `/v1`. The host adds the request's key.
    pub fn upstream_profile(&self, job: &SummaryJob, anthropic: &str, openai: &str) -> LlmProfile {
        let (kind, base) = match job.dialect {
            Dialect::AnthropicMessages => (LlmKind::Anthropic, anthropic.to_owned()),
            Dialect::ChatCompletions | Dialect::Responses => (LlmKind::Openai, format!("{openai}/v1")),
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

    /// Splices in the summary waiting for session `name`, if it still fits (`why`: the moment
    /// that made it free); the tokens it adds to the forwarded request.
    pub(super) fn splice_ready(&mut self, name: &str, why: &str) -> usize {
        let Some(ready) = self.states.get_mut(name).and_then(|s| s.ready.take()) else { return 0 };
        let done = self.check_summary_text(&ready.pending, &ready.text);
        let outcome = done.and_then(|grown| {
            self.sessions
                .rewrite(&ready.pending.key, &ready.pending.range, &ready.text)
                .map_err(|e| e.to_string())?;
            Ok(grown)
        });
        let Some(state) = self.states.get_mut(name) else { return 0 };
        state.reshaped |= outcome.is_ok();
        let range = &ready.pending.range;
        for stats in [&mut state.stats, &mut self.totals] {
            match &outcome {
                Ok(_) => {
                    stats.summaries += 1;
                    stats.summary_note = Some(format!(
                        "the summary of messages {}..{} went in: {why}",
                        range.start, range.end
                    ));
                }
                Err(e) => {
                    stats.summary_failures += 1;
                    stats.summary_note = Some(format!(
                        "the summary of messages {}..{} was not used: {e}",
                        range.start, range.end
                    ));
                }
            }
        }
        outcome.unwrap_or(0)
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

    /// Whether `text` can replace `pending`'s range now: its condensation is still there with the
    /// ledger it was written for, and the latest request stays under its threshold with it. The
    /// tokens it adds.
    fn check_summary_text(&mut self, pending: &Pending, text: &str) -> Result<usize, String> {
        let name = pending.key.to_string();
        let state = self.states.get_mut(&name).ok_or("the session was forgotten")?;
        let session = self.sessions.map.get(&pending.key).ok_or("the session was forgotten")?;
        let dialect = session.dialect;
        let frozen = session.frozen.iter().find(|f| f.range == pending.range);
        let old = frozen
            .filter(|f| *f.replacement == *replacement(dialect, &pending.ledger))
            .ok_or("its condensation is gone (the client rewound, or a retry condensed further)")?;
        let model = state.stats.model.clone();
        let counter = self.counters.for_model(&model);
        let before = state.counts.tokens_of(dialect, &old.replacement, counter);
        let after = state.counts.tokens_of(dialect, &replacement(dialect, text), counter);
        let limit = (window_for(&model, &self.config.windows) as f64 * self.config.threshold) as usize;
        let forwarded = (state.last_forwarded + after).saturating_sub(before);
        if forwarded > limit {
            return Err(format!(
                "with it the request would be {forwarded} tokens, over its threshold of {limit}"
            ));
        }
        Ok(after.saturating_sub(before))
    }
}
