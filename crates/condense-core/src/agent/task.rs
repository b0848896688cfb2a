//! A chat task: the saved chat (its history, the condensations applied with their figures, the
//! loop guard's memory, the last reported usage), and how full its context is. Plain data, saved by
//! the host as it is and handed back for the next input.

use serde::{Deserialize, Serialize};

use super::cache::CostEstimate;
use super::policy::{CondenseReason, ContextStatus, GuardState, TokenSource};
use crate::limits::{AutoCondense, request_limit};
use crate::llm::LlmProfile;
use crate::model::{Conversation, last_condense_id, undo_condensation};
use crate::provider::{CondensationResult, Metrics, PassMetric, Retention};
use crate::tokens::TokenCounter;

/// One condensation applied to a chat, as its row in the chat view shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CondensationRecord {
    /// The condensation's id in the messages (`c1`, `c2`, …).
    pub condense_id: String,
    /// The provider that ran.
    pub provider_id: String,
    /// Why it ran.
    pub reason: CondenseReason,
    /// Whether the agent started it.
    pub automatic: bool,
    /// Tokens of the request before, by the tokenizer.
    pub tokens_before: usize,
    /// Tokens of the request after, by the tokenizer.
    pub tokens_after: usize,
    /// US dollars spent.
    pub cost: f64,
    /// Wall time of the run.
    pub time_ms: f64,
    /// The summary, for providers that write one.
    pub summary: Option<String>,
    /// When it ran, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The passes of a multi-pass run (`smart`), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passes: Vec<PassMetric>,
    /// How many of the facts it must not lose the model still sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
    /// The summary was cut by its output limit: kept, but incomplete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub summary_truncated: bool,
    /// What the `cache-aware` policy weighed before it ran ("costs $X now · saves ≈$Y over the
    /// next N turns").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<Box<CostEstimate>>,
    /// The share of the summary calls' input read from the prompt cache (0–1), when the server
    /// reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_share: Option<f64>,
}

impl CondensationRecord {
    /// The record of a successful run `result` with id `condense_id`, for `tokens_before` tokens.
    pub fn of(
        result: &CondensationResult,
        condense_id: String,
        provider_id: String,
        reason: CondenseReason,
        tokens_before: usize,
        at_ms: i64,
    ) -> Self {
        CondensationRecord {
            condense_id,
            provider_id,
            reason,
            automatic: reason != CondenseReason::Manual,
            tokens_before,
            tokens_after: result.new_context_tokens.unwrap_or(tokens_before),
            cost: result.cost,
            time_ms: result.metrics.as_ref().map_or(0.0, |m| m.time_elapsed_ms),
            summary: result.summary.clone(),
            at_ms,
            passes: result.metrics.as_ref().map(Metrics::passes).unwrap_or_default(),
            retention: result.metrics.as_ref().and_then(Metrics::retention),
            summary_truncated: result.metrics.as_ref().is_some_and(Metrics::summary_truncated),
            estimate: None,
            cached_share: result.metrics.as_ref().and_then(Metrics::cached_share),
        }
    }
}

/// The usage the server reported for an answer: the tokens of the request up to and including it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReportedUsage {
    /// The answer.
    pub through: String,
    /// Prompt tokens plus answer tokens.
    pub tokens: u64,
}

/// A chat: its history and what the agent keeps about it. Saved by the host as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatTask {
    /// Stable id, chosen by the host.
    pub id: String,
    /// The first words of the first message.
    pub title: String,
    /// Created, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// Last changed, in milliseconds since the Unix epoch.
    pub updated_ms: i64,
    /// The history, hidden messages included.
    pub conversation: Conversation,
    /// The condensations applied, oldest first.
    #[serde(default)]
    pub condensations: Vec<CondensationRecord>,
    /// The loop guard's memory.
    #[serde(default)]
    pub guard: GuardState,
    /// US dollars spent on condensations that were not applied (failed after the model answered,
    /// or dropped for too little gain); the chat's total counts them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unapplied_cost: f64,
    /// The last reported usage, while it still describes the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported: Option<ReportedUsage>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl ChatTask {
    /// An empty chat.
    pub fn new(id: impl Into<String>, now_ms: i64) -> Self {
        ChatTask {
            id: id.into(),
            title: String::new(),
            created_ms: now_ms,
            updated_ms: now_ms,
            conversation: Conversation::default(),
            condensations: Vec::new(),
            guard: GuardState::default(),
            unapplied_cost: 0.0,
            reported: None,
        }
    }

    /// Tokens of the next request: the reported usage of the last answer plus the messages
    /// after it when there is one that still describes the history, else the tokenizer's count.
    pub fn context_tokens(&self, tokens: &dyn TokenCounter) -> (usize, TokenSource) {
        let view = self.conversation.api_view();
        if let Some(r) = &self.reported
            && let Some(at) = view.iter().position(|m| m.id == r.through)
        {
            let after: usize = view[at + 1..].iter().map(|m| tokens.count_message(m)).sum();
            return (r.tokens as usize + after, TokenSource::Reported);
        }
        (tokens.count_request(self.conversation.system.as_deref(), &view), TokenSource::Counted)
    }

    /// How full the context is for a profile.
    pub fn context_status(
        &self,
        profile: &LlmProfile,
        auto: &AutoCondense,
        tokens: &dyn TokenCounter,
    ) -> ContextStatus {
        let (n, source) = self.context_tokens(tokens);
        ContextStatus {
            tokens: n,
            window: profile.context_window,
            percent: n as f64 * 100.0 / profile.context_window.max(1) as f64,
            threshold_percent: auto.threshold_for(profile.threshold_percent),
            limit: request_limit(profile.context_window, profile.output_limit()),
            source,
        }
    }

    /// Undoes a condensation (the last one when `condense_id` is `None`): its summary goes, the
    /// messages it hid come back. Returns the id undone, or `None` when there is nothing to undo.
    pub fn undo(&mut self, condense_id: Option<&str>, now_ms: i64) -> Option<String> {
        let id = match condense_id {
            Some(id) => id.to_owned(),
            None => last_condense_id(&self.conversation.messages)?,
        };
        self.conversation.messages = undo_condensation(&self.conversation.messages, &id)?;
        self.condensations.retain(|r| r.condense_id != id);
        self.reported = None;
        self.updated_ms = now_ms;
        Some(id)
    }

    pub(super) fn next_message_id(&self) -> String {
        let max = self
            .conversation
            .messages
            .iter()
            .filter_map(|m| m.id.strip_prefix('m')?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        format!("m{}", max + 1)
    }

    pub(super) fn last_message_id(&self) -> Option<&str> {
        self.conversation.messages.last().map(|m| m.id.as_str())
    }
}

/// A chat's title: the first line of its first message, at most 60 characters.
pub(super) fn title_of(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContentBlock, Message, Role};
    use crate::tokens::{Encoding, TiktokenCounter};

    #[test]
    fn reported_usage_counts_only_the_messages_after_it() {
        let counter = TiktokenCounter::new(Encoding::O200kBase);
        let mut task = ChatTask::new("t", 0);
        for (id, role) in [("m1", Role::User), ("m2", Role::Assistant), ("m3", Role::User)] {
            task.conversation.messages.push(Message::new(id, role, vec![ContentBlock::text("hello there")]));
        }
        let (counted, source) = task.context_tokens(&counter);
        assert_eq!(source, TokenSource::Counted);
        task.reported = Some(ReportedUsage { through: "m2".into(), tokens: 500 });
        let m3 = counter.count_message(&task.conversation.messages[2]);
        assert_eq!(task.context_tokens(&counter), (500 + m3, TokenSource::Reported));
        // A report about a message no longer in the view is ignored.
        task.reported = Some(ReportedUsage { through: "gone".into(), tokens: 500 });
        assert_eq!(task.context_tokens(&counter), (counted, TokenSource::Counted));
        assert_eq!(task.next_message_id(), "m4");
    }

    #[test]
    fn a_title_is_the_first_line_cut_at_sixty_characters() {
        assert_eq!(title_of("Fix the parser\nplease"), "Fix the parser");
        let long = "x".repeat(70);
        assert_eq!(title_of(&long).chars().count(), 61);
    }

    #[test]
    fn a_reason_has_its_json_name() {
        for reason in [
            CondenseReason::Threshold,
            CondenseReason::Limit,
            CondenseReason::Overflow,
            CondenseReason::Manual,
        ] {
            assert_eq!(serde_json::to_value(reason).unwrap(), reason.as_str());
        }
    }
}
