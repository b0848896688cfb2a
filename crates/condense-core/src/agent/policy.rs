//! When to condense: the context's fullness against the threshold and the request limit, and
//! the loop guard that keeps automatic condensations from thrashing (no second one without a new
//! message, at most three a minute).

use serde::{Deserialize, Serialize};

use crate::limits::MAX_AUTO_PER_MINUTE;

const MINUTE_MS: i64 = 60_000;

/// Why a condensation ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CondenseReason {
    /// The context reached the threshold percent of the window.
    Threshold,
    /// The context would leave no room for the answer: window − max output − buffer.
    Limit,
    /// The API answered that the prompt does not fit.
    Overflow,
    /// The user asked.
    Manual,
    /// The `cache-aware` policy found it pays for the prompt cache it rewrites.
    Cache,
}

impl CondenseReason {
    /// The stable name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CondenseReason::Threshold => "threshold",
            CondenseReason::Limit => "limit",
            CondenseReason::Overflow => "overflow",
            CondenseReason::Manual => "manual",
            CondenseReason::Cache => "cache",
        }
    }
}

/// Where a context count comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The usage the server reported for the last answer, plus the messages since.
    Reported,
    /// The tokenizer.
    Counted,
}

/// How full a chat's context is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextStatus {
    /// Tokens of the next request, before the new answer.
    pub tokens: usize,
    /// The profile's context window.
    pub window: usize,
    /// `tokens` in percent of `window`.
    pub percent: f64,
    /// The threshold that triggers a condensation; `None` when automatic condensation is off.
    pub threshold_percent: Option<u8>,
    /// The request limit (see [`crate::limits::request_limit`]).
    pub limit: usize,
    /// Where `tokens` comes from.
    pub source: TokenSource,
}

impl ContextStatus {
    /// Why the context must be condensed before the next request, if it must.
    pub fn reason(&self) -> Option<CondenseReason> {
        let threshold = self.threshold_percent?;
        if self.tokens * 100 >= usize::from(threshold) * self.window {
            Some(CondenseReason::Threshold)
        } else if self.tokens > self.limit {
            Some(CondenseReason::Limit)
        } else {
            None
        }
    }
}

/// The loop guard's memory: when automatic condensations ran, and after which message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct GuardState {
    /// Start times of recent automatic attempts, in milliseconds since the Unix epoch.
    pub auto_at_ms: Vec<i64>,
    /// The last message when the last automatic attempt ran.
    pub last_auto_after: Option<String>,
    /// The last message when the last attempt after a "too long" answer ran.
    pub overflow_after: Option<String>,
}

impl GuardState {
    /// Why the guard refuses an automatic condensation for `reason` at `now_ms` when the
    /// history's last message is `last_message`, if it does. One run per message: the model
    /// answering "too long" proved a threshold run for the same message short, so the run after
    /// an overflow is allowed once more, and only once.
    pub fn refusal(&self, last_message: Option<&str>, now_ms: i64, reason: CondenseReason) -> Option<String> {
        let after =
            if reason == CondenseReason::Overflow { &self.overflow_after } else { &self.last_auto_after };
        if after.is_some() && after.as_deref() == last_message {
            return Some(
                "already condensed automatically since the last message; condense by hand to try again"
                    .into(),
            );
        }
        let recent = self.auto_at_ms.iter().filter(|&&t| in_last_minute(t, now_ms)).count();
        if recent >= MAX_AUTO_PER_MINUTE {
            return Some(format!(
                "{MAX_AUTO_PER_MINUTE} automatic condensations in the last minute; waiting before the next"
            ));
        }
        None
    }

    /// Remembers an automatic attempt for `reason` at `now_ms` after `last_message`.
    pub fn record(&mut self, last_message: Option<String>, now_ms: i64, reason: CondenseReason) {
        self.auto_at_ms.retain(|&t| in_last_minute(t, now_ms));
        self.auto_at_ms.push(now_ms);
        if reason == CondenseReason::Overflow {
            self.overflow_after.clone_from(&last_message);
        }
        self.last_auto_after = last_message;
    }
}

/// The least an automatic condensation must save, in tokens: `min_gain_percent` of the window.
pub fn min_gain_tokens(context_window: usize, min_gain_percent: f64) -> usize {
    (context_window as f64 * min_gain_percent / 100.0).ceil() as usize
}

/// Whether an attempt at `t` falls in the minute before `now` (a time after `now`, from a clock
/// that went back, does not count).
fn in_last_minute(t: i64, now: i64) -> bool {
    t <= now && now - t < MINUTE_MS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{AutoCondense, request_limit};

    #[test]
    fn the_reason_is_the_threshold_first_then_the_request_limit() {
        let status = |tokens| ContextStatus {
            tokens,
            window: 1000,
            percent: 0.0,
            threshold_percent: AutoCondense::default().threshold_for(Some(90)),
            limit: request_limit(1000, 300),
            source: TokenSource::Counted,
        };
        assert_eq!(status(600).reason(), None);
        assert_eq!(status(601).reason(), Some(CondenseReason::Limit));
        assert_eq!(status(900).reason(), Some(CondenseReason::Threshold));
        assert_eq!(ContextStatus { threshold_percent: None, ..status(990) }.reason(), None);
    }

    #[test]
    fn the_guard_refuses_a_second_run_without_a_new_message_and_a_fourth_in_a_minute() {
        use CondenseReason::{Overflow, Threshold};
        let mut guard = GuardState::default();
        assert_eq!(guard.refusal(Some("m1"), 0, Threshold), None);
        guard.record(Some("m1".into()), 0, Threshold);
        assert!(guard.refusal(Some("m1"), 1, Threshold).unwrap().contains("since the last message"));
        // The model answered "too long" after that run: the run after it is allowed, once.
        assert_eq!(guard.refusal(Some("m1"), 1, Overflow), None);
        guard.record(Some("m1".into()), 1, Overflow);
        assert!(guard.refusal(Some("m1"), 1, Overflow).unwrap().contains("since the last message"));
        assert!(guard.refusal(Some("m1"), 1, Threshold).unwrap().contains("since the last message"));
        guard.record(Some("m2".into()), 1, Threshold);
        assert!(guard.refusal(Some("m3"), 2, Threshold).unwrap().contains("3 automatic condensations"));
        assert!(guard.refusal(Some("m3"), 2, Overflow).unwrap().contains("3 automatic condensations"));
        assert_eq!(guard.refusal(Some("m3"), MINUTE_MS + 2, Threshold), None, "a minute later");
        assert_eq!(min_gain_tokens(1000, 5.0), 50);
    }
}
