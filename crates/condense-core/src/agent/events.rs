//! The agent's protocol with its host: the inputs it takes ([`AgentInput`]) and the events it
//! tells while it works ([`AgentEvent`], seed 001's event list), in order.

use serde::{Deserialize, Serialize};

use super::policy::CondenseReason;
use super::task::CondensationRecord;
use crate::error::ErrorInfo;
use crate::llm::Usage;
use crate::model::Message;
use crate::provider::Metrics;

/// What the agent tells its host, in order, while it works on an input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type")]
pub enum AgentEvent {
    /// Work on an input began.
    ThinkingStart,
    /// The user's message was added to the history.
    UserMessage {
        /// The message.
        message: Message,
    },
    /// An answer began.
    MessageStart {
        /// The id the answer will have in the history.
        id: String,
    },
    /// Text of the answer.
    MessageContent {
        /// The answer.
        id: String,
        /// Text to append.
        delta: String,
    },
    /// The answer ended.
    MessageEnd {
        /// The answer.
        id: String,
        /// Why it was cut short: `cancelled` or an error kind; `None` when complete.
        interrupted: Option<String>,
        /// Whether it was added to the history (a cut answer is kept when some text arrived).
        kept: bool,
        /// Tokens used, when the server reported them.
        usage: Option<Usage>,
        /// Why the model stopped.
        finish_reason: Option<String>,
        /// US dollars, by the profile's prices.
        cost: f64,
    },
    /// Work on the input ended.
    ThinkingEnd,
    /// Something failed; the history keeps what arrived.
    Error {
        /// What failed.
        error: ErrorInfo,
        /// The text that did arrive.
        partial: String,
        /// Whether sending the same request again may work (`Retry`).
        retryable: bool,
    },
    /// A condensation began.
    CondenseStart {
        /// Why.
        reason: CondenseReason,
        /// The provider.
        provider: String,
        /// Tokens of the context before.
        tokens: usize,
        /// Whether the agent started it.
        automatic: bool,
    },
    /// A condensation ended: applied or not (see [`CondenseOutcome`]).
    CondenseEnd(CondenseOutcome),
    /// The loop guard (or the off switch) stopped an automatic condensation.
    CondenseSkipped {
        /// Why, for people.
        reason: String,
        /// Tokens of the context.
        tokens: usize,
    },
    /// The agent stopped.
    StatusShutdown,
}

/// One input to the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum AgentInput {
    /// A new user message.
    User {
        /// Its text.
        content: String,
    },
    /// Ask again for the last user message (after a failure or a cancel; a cut answer is
    /// replaced).
    Retry,
    /// Condense now, with the turn's provider.
    Condense,
    /// Stop.
    Shutdown,
}

/// How a condensation ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "CondenseEndFields", try_from = "CondenseEndFields")]
pub enum CondenseOutcome {
    /// Applied to the chat.
    Applied {
        /// The condensation, as the chat's row shows it (its id and summary included).
        record: CondensationRecord,
        /// The run's metrics.
        metrics: Option<Metrics>,
    },
    /// Not applied; the chat is unchanged.
    NotApplied {
        /// Why.
        error: ErrorInfo,
        /// The run's metrics, when the provider ran.
        metrics: Option<Metrics>,
        /// US dollars the run spent all the same.
        cost: f64,
    },
}

impl schemars::JsonSchema for CondenseOutcome {
    fn schema_name() -> String {
        "CondenseOutcome".into()
    }

    fn json_schema(generator: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
        CondenseEndFields::json_schema(generator)
    }
}

/// The JSON fields of a `CondenseEnd` event: one flat object, `record` or `error` set, with the
/// record's id and summary repeated at the top for readers that want only those.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct CondenseEndFields {
    condense_id: Option<String>,
    summary: Option<String>,
    metrics: Option<Metrics>,
    record: Option<CondensationRecord>,
    error: Option<ErrorInfo>,
    /// US dollars spent: the record's cost, or what a run that was not applied spent.
    #[serde(default)]
    cost: f64,
}

impl From<CondenseOutcome> for CondenseEndFields {
    fn from(outcome: CondenseOutcome) -> Self {
        match outcome {
            CondenseOutcome::Applied { record, metrics } => CondenseEndFields {
                condense_id: Some(record.condense_id.clone()),
                summary: record.summary.clone(),
                metrics,
                cost: record.cost,
                record: Some(record),
                error: None,
            },
            CondenseOutcome::NotApplied { error, metrics, cost } => CondenseEndFields {
                condense_id: None,
                summary: None,
                metrics,
                record: None,
                error: Some(error),
                cost,
            },
        }
    }
}

impl TryFrom<CondenseEndFields> for CondenseOutcome {
    type Error = String;

    fn try_from(f: CondenseEndFields) -> Result<Self, String> {
        match (f.record, f.error) {
            (Some(record), None) => Ok(CondenseOutcome::Applied { record, metrics: f.metrics }),
            (None, Some(error)) => {
                Ok(CondenseOutcome::NotApplied { error, metrics: f.metrics, cost: f.cost })
            }
            _ => Err("a CondenseEnd has either a record or an error".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn events_and_inputs_have_the_documented_json_shape() {
        let e =
            serde_json::to_value(AgentEvent::MessageContent { id: "m2".into(), delta: "Hi".into() }).unwrap();
        assert_eq!(e, serde_json::json!({"type": "MessageContent", "id": "m2", "delta": "Hi"}));
        let i: AgentInput = serde_json::from_str(r#"{"type": "user", "content": "Hi"}"#).unwrap();
        assert_eq!(i, AgentInput::User { content: "Hi".into() });
        assert!(serde_json::from_str::<AgentInput>(r#"{"type": "undo"}"#).is_err());
    }

    #[test]
    fn a_condense_end_is_one_flat_object_with_a_record_or_an_error() {
        let error = ErrorInfo::new(ErrorKind::InsufficientGain, "saved 3 tokens");
        let event = AgentEvent::CondenseEnd(CondenseOutcome::NotApplied { error, metrics: None, cost: 0.0 });
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "CondenseEnd", "condense_id": null, "summary": null, "metrics": null,
                "record": null, "error": {"kind": "insufficient_gain", "message": "saved 3 tokens"}, "cost": 0.0})
        );
        assert_eq!(serde_json::from_value::<AgentEvent>(json).unwrap(), event);
        let both = serde_json::json!({"type": "CondenseEnd", "condense_id": null, "summary": null,
            "metrics": null, "record": null, "error": null});
        assert!(serde_json::from_value::<AgentEvent>(both).is_err());
    }
}
