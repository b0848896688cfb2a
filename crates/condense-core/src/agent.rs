//! The chat agent (seed 001, SPEC §6): `DefaultAgent` keeps a chat task's history, turns each input
//! into [`AgentEvent`]s, and keeps the context inside the model's window by condensing
//! automatically before a request, and once more when the API still answers "context overflow".
//!
//! The agent reads no clock and does no IO: the host lends it the LLM clients, the condensation
//! manager, a token counter, a clock for timings, the wall-clock time of the input and an abort
//! signal (see [`Turn`]). A [`ChatTask`] is plain data, saved by the host and handed back for the
//! next input, so a chat survives a reload with everything Undo needs.

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::error::{CondenseError, ErrorInfo};
use crate::llm::{AbortSignal, LlmError, LlmErrorKind, LlmProfile, LlmProvider, PromptBundle, Usage};
use crate::manager::CondensationManager;
use crate::model::{ContentBlock, Conversation, Message, Role, last_condense_id, undo_condensation};
use crate::provider::{Clock, CondensationOptions, Metrics, Services};
use crate::providers::summary::to_chat;
use crate::tokens::TokenCounter;

/// The threshold when neither the settings nor the profile name one.
pub const DEFAULT_THRESHOLD_PERCENT: u8 = 80;
/// The lowest threshold a user may set, globally or per profile.
pub const THRESHOLD_MIN: i32 = 10;
/// The highest threshold.
pub const THRESHOLD_MAX: i32 = 100;
/// The share of the window kept free on top of the longest answer.
pub const BUFFER_PERCENT: usize = 10;
/// Automatic condensations allowed in any minute.
pub const MAX_AUTO_PER_MINUTE: usize = 3;
const MINUTE_MS: i64 = 60_000;

/// The user's automatic-condensation settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AutoCondense {
    /// The off switch: when false nothing is condensed without the user asking.
    pub enabled: bool,
    /// The global threshold, in percent of the context window; a profile may override it.
    pub threshold_percent: u8,
    /// An automatic condensation that saves less than this share of the window is not applied.
    pub min_gain_percent: f64,
}

impl Default for AutoCondense {
    fn default() -> Self {
        AutoCondense { enabled: true, threshold_percent: DEFAULT_THRESHOLD_PERCENT, min_gain_percent: 5.0 }
    }
}

impl AutoCondense {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), String> {
        if !(THRESHOLD_MIN..=THRESHOLD_MAX).contains(&i32::from(self.threshold_percent)) {
            return Err(format!(
                "the threshold must be {THRESHOLD_MIN} to {THRESHOLD_MAX} percent, got {}",
                self.threshold_percent
            ));
        }
        if !(0.0..=100.0).contains(&self.min_gain_percent) {
            return Err(format!("the minimum gain must be 0 to 100 percent, got {}", self.min_gain_percent));
        }
        Ok(())
    }

    /// The threshold for a profile: its own unless it is `-1` or absent, else the global one;
    /// `None` when automatic condensation is off.
    pub fn threshold_for(&self, profile: &LlmProfile) -> Option<u8> {
        if !self.enabled {
            return None;
        }
        match profile.threshold_percent {
            Some(t @ 1..=100) => Some(t as u8),
            _ => Some(self.threshold_percent),
        }
    }
}

/// The most tokens a request may hold: the window less the longest answer and a 10% buffer.
pub fn request_limit(profile: &LlmProfile) -> usize {
    let buffer = profile.context_window * BUFFER_PERCENT / 100;
    profile.context_window.saturating_sub(profile.max_output).saturating_sub(buffer)
}

/// Why a condensation ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
}

impl CondenseReason {
    /// The stable name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CondenseReason::Threshold => "threshold",
            CondenseReason::Limit => "limit",
            CondenseReason::Overflow => "overflow",
            CondenseReason::Manual => "manual",
        }
    }
}

/// Where a context count comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The usage the server reported for the last answer, plus the messages since.
    Reported,
    /// The tokenizer.
    Counted,
}

/// How full a chat's context is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextStatus {
    /// Tokens of the next request, before the new answer.
    pub tokens: usize,
    /// The profile's context window.
    pub window: usize,
    /// `tokens` in percent of `window`.
    pub percent: f64,
    /// The threshold that triggers a condensation; `None` when automatic condensation is off.
    pub threshold_percent: Option<u8>,
    /// The request limit (see [`request_limit`]).
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

/// One condensation applied to a chat, as its row in the chat view shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// The loop guard's memory: when automatic condensations ran, and after which message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GuardState {
    /// Start times of recent automatic attempts, in milliseconds since the Unix epoch.
    pub auto_at_ms: Vec<i64>,
    /// The last message when the last automatic attempt ran.
    pub last_auto_after: Option<String>,
}

/// The usage the server reported for an answer: the tokens of the request up to and including it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportedUsage {
    /// The answer.
    pub through: String,
    /// Prompt tokens plus answer tokens.
    pub tokens: u64,
}

/// A chat: its history and what the agent keeps about it. Saved by the host as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The last reported usage, while it still describes the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported: Option<ReportedUsage>,
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
            threshold_percent: auto.threshold_for(profile),
            limit: request_limit(profile),
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

    fn next_message_id(&self) -> String {
        let max = self
            .conversation
            .messages
            .iter()
            .filter_map(|m| m.id.strip_prefix('m')?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        format!("m{}", max + 1)
    }

    fn last_message_id(&self) -> Option<&str> {
        self.conversation.messages.last().map(|m| m.id.as_str())
    }
}

/// What the agent tells its host, in order, while it works on an input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// A condensation ended: applied (`record`) or not (`error`).
    CondenseEnd {
        /// The condensation's id, when applied.
        condense_id: Option<String>,
        /// The summary, for providers that write one.
        summary: Option<String>,
        /// The run's metrics.
        metrics: Option<Metrics>,
        /// The applied condensation.
        record: Option<CondensationRecord>,
        /// Why it was not applied.
        error: Option<ErrorInfo>,
    },
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// What the host lends the agent for one input.
#[derive(Clone, Copy)]
pub struct Turn<'a> {
    /// The chat model.
    pub llm: &'a dyn LlmProvider,
    /// The model that writes summaries, when it is not the chat model.
    pub condense_llm: Option<&'a dyn LlmProvider>,
    /// The providers.
    pub manager: &'a CondensationManager,
    /// The condensation provider; `None`: the manager's default.
    pub provider: Option<&'a str>,
    /// The automatic-condensation settings.
    pub auto: &'a AutoCondense,
    /// Counts tokens for the chat model (cached per message).
    pub tokens: &'a dyn TokenCounter,
    /// Times condensations.
    pub clock: &'a dyn Clock,
    /// Fired by the host to cancel the request in flight.
    pub abort: &'a AbortSignal,
    /// The input's wall-clock time, in milliseconds since the Unix epoch.
    pub now_ms: i64,
}

impl Turn<'_> {
    fn provider_id(&self) -> String {
        self.provider.unwrap_or(self.manager.default_provider()).to_owned()
    }
}

/// How one request ended.
enum Streamed {
    Done,
    /// The API refused the prompt as too long before any text arrived.
    Overflow(LlmError),
    Failed,
}

/// The chat agent over one task.
#[derive(Debug, Clone)]
pub struct DefaultAgent {
    task: ChatTask,
}

impl DefaultAgent {
    /// An agent holding a task.
    pub fn new(task: ChatTask) -> Self {
        DefaultAgent { task }
    }

    /// The task as it is now.
    pub fn task(&self) -> &ChatTask {
        &self.task
    }

    /// The task, to save.
    pub fn into_task(self) -> ChatTask {
        self.task
    }

    /// Works on one input; every step is told through `emit`. Never fails: failures are `Error`
    /// events, and the history keeps whatever arrived.
    pub async fn process(&mut self, input: AgentInput, turn: &Turn<'_>, emit: &mut dyn FnMut(AgentEvent)) {
        match input {
            AgentInput::User { content } => {
                let content = content.trim();
                if content.is_empty() {
                    emit(error_event("invalid_input", "the message is empty", false));
                    return;
                }
                emit(AgentEvent::ThinkingStart);
                let mut message =
                    Message::new(self.task.next_message_id(), Role::User, vec![ContentBlock::text(content)]);
                message.ts = turn.now_ms;
                if self.task.title.is_empty() {
                    self.task.title = title_of(content);
                }
                self.task.conversation.messages.push(message.clone());
                self.task.updated_ms = turn.now_ms;
                emit(AgentEvent::UserMessage { message });
                self.answer(turn, emit).await;
                emit(AgentEvent::ThinkingEnd);
            }
            AgentInput::Retry => {
                let messages = &mut self.task.conversation.messages;
                if messages.last().is_some_and(|m| m.role == Role::Assistant && m.interrupted.is_some()) {
                    messages.pop();
                }
                if messages.iter().rev().find(|m| m.is_visible()).is_none_or(|m| m.role != Role::User) {
                    emit(error_event(
                        "invalid_input",
                        "nothing to retry: the last message has its answer",
                        false,
                    ));
                    return;
                }
                emit(AgentEvent::ThinkingStart);
                self.answer(turn, emit).await;
                emit(AgentEvent::ThinkingEnd);
            }
            AgentInput::Condense => {
                self.condense(turn, emit, CondenseReason::Manual).await;
            }
            AgentInput::Shutdown => emit(AgentEvent::StatusShutdown),
        }
    }

    /// Answers the last user message: condense first if the context asks for it, stream the
    /// answer, and on an overflow condense and try once more.
    async fn answer(&mut self, turn: &Turn<'_>, emit: &mut dyn FnMut(AgentEvent)) {
        let status = self.task.context_status(turn.llm.profile(), turn.auto, turn.tokens);
        if let Some(reason) = status.reason() {
            self.auto_condense(turn, emit, reason).await;
        }
        let mut retried = false;
        loop {
            match self.stream_once(turn, emit).await {
                Streamed::Done | Streamed::Failed => return,
                Streamed::Overflow(e) if !retried => {
                    retried = true;
                    if !self.auto_condense(turn, emit, CondenseReason::Overflow).await {
                        emit(llm_error_event(&e));
                        return;
                    }
                }
                Streamed::Overflow(e) => {
                    emit(llm_error_event(&e));
                    return;
                }
            }
        }
    }

    /// One request: the answer streamed into the history.
    async fn stream_once(&mut self, turn: &Turn<'_>, emit: &mut dyn FnMut(AgentEvent)) -> Streamed {
        let bundle = self.request();
        let id = self.task.next_message_id();
        emit(AgentEvent::MessageStart { id: id.clone() });
        let mut text = String::new();
        let ended: Result<(Option<Usage>, Option<String>), LlmError> = {
            let mut stream = turn.llm.stream_completion(&bundle, turn.abort);
            loop {
                // The abort is checked between chunks too: a burst of buffered chunks must not
                // outrun the user's Stop.
                if turn.abort.is_aborted() {
                    break Err(LlmError::new(LlmErrorKind::Cancelled, "cancelled by the user"));
                }
                let Some(chunk) = stream.next().await else {
                    break Err(LlmError::new(
                        LlmErrorKind::MalformedStream,
                        "the stream ended without a last chunk",
                    ));
                };
                if !chunk.content.is_empty() {
                    text.push_str(&chunk.content);
                    emit(AgentEvent::MessageContent { id: id.clone(), delta: chunk.content });
                }
                if let Some(e) = chunk.error {
                    break Err(e);
                }
                if chunk.finished {
                    break Ok((chunk.usage, chunk.finish_reason));
                }
            }
        };
        let now = turn.now_ms;
        match ended {
            Ok((usage, finish_reason)) => {
                self.push_answer(&id, text, now, None);
                self.task.reported = usage
                    .map(|u| ReportedUsage { through: id.clone(), tokens: u.input_tokens + u.output_tokens });
                let cost = usage.map_or(0.0, |u| turn.llm.cost(&u));
                emit(AgentEvent::MessageEnd {
                    id,
                    interrupted: None,
                    kept: true,
                    usage,
                    finish_reason,
                    cost,
                });
                Streamed::Done
            }
            Err(e) => {
                let kind = CondenseError::Llm(e.clone()).kind().to_owned();
                let overflow = e.kind == LlmErrorKind::ContextOverflow && text.is_empty();
                if !overflow {
                    emit(AgentEvent::Error {
                        error: ErrorInfo { kind: kind.clone(), message: e.message.clone() },
                        partial: text.clone(),
                        retryable: e.kind != LlmErrorKind::Config,
                    });
                }
                let interrupted =
                    if e.kind == LlmErrorKind::Cancelled { "cancelled".to_owned() } else { kind };
                let kept = !text.is_empty();
                if kept {
                    self.push_answer(&id, text, now, Some(interrupted.clone()));
                }
                emit(AgentEvent::MessageEnd {
                    id,
                    interrupted: Some(interrupted),
                    kept,
                    usage: None,
                    finish_reason: None,
                    cost: 0.0,
                });
                if overflow { Streamed::Overflow(e) } else { Streamed::Failed }
            }
        }
    }

    /// Adds an answer to the history; `interrupted` marks one cut short.
    fn push_answer(&mut self, id: &str, text: String, now_ms: i64, interrupted: Option<String>) {
        let mut message = Message::new(id, Role::Assistant, vec![ContentBlock::text(text)]);
        message.ts = now_ms;
        message.interrupted = interrupted;
        self.task.conversation.messages.push(message);
        self.task.updated_ms = now_ms;
    }

    /// The request for the last user message: the API view before it as history.
    fn request(&self) -> PromptBundle {
        let view = self.task.conversation.api_view();
        let (last, history) = view.split_last().expect("a request follows a user message");
        PromptBundle {
            system_context: self.task.conversation.system.clone().unwrap_or_default(),
            conversation_history: history.iter().map(|m| to_chat(m)).collect(),
            request: to_chat(last).content,
            ..Default::default()
        }
    }

    /// An automatic condensation, if the off switch and the loop guard allow it. Returns whether
    /// one was applied.
    async fn auto_condense(
        &mut self,
        turn: &Turn<'_>,
        emit: &mut dyn FnMut(AgentEvent),
        reason: CondenseReason,
    ) -> bool {
        let (tokens, _) = self.task.context_tokens(turn.tokens);
        if let Some(why) = self.guard_refusal(turn) {
            emit(AgentEvent::CondenseSkipped { reason: why, tokens });
            return false;
        }
        let last = self.task.last_message_id().map(str::to_owned);
        let guard = &mut self.task.guard;
        guard.auto_at_ms.retain(|&t| in_last_minute(t, turn.now_ms));
        guard.auto_at_ms.push(turn.now_ms);
        guard.last_auto_after = last;
        self.condense(turn, emit, reason).await
    }

    /// Why the loop guard refuses an automatic condensation now, if it does.
    fn guard_refusal(&self, turn: &Turn<'_>) -> Option<String> {
        if !turn.auto.enabled {
            return Some(
                "automatic condensation is off; condense by hand or turn it on in the settings".into(),
            );
        }
        let guard = &self.task.guard;
        if guard.last_auto_after.is_some() && guard.last_auto_after.as_deref() == self.task.last_message_id()
        {
            return Some(
                "already condensed automatically since the last message; condense by hand to try again"
                    .into(),
            );
        }
        let recent = guard.auto_at_ms.iter().filter(|&&t| in_last_minute(t, turn.now_ms)).count();
        if recent >= MAX_AUTO_PER_MINUTE {
            return Some(format!(
                "{MAX_AUTO_PER_MINUTE} automatic condensations in the last minute; waiting before the next"
            ));
        }
        None
    }

    /// Runs the turn's provider on the history and applies the result when it succeeded (and,
    /// for an automatic run, saved at least the minimum gain). Returns whether it was applied.
    async fn condense(
        &mut self,
        turn: &Turn<'_>,
        emit: &mut dyn FnMut(AgentEvent),
        reason: CondenseReason,
    ) -> bool {
        let automatic = reason != CondenseReason::Manual;
        let provider = turn.provider_id();
        let conversation = &self.task.conversation;
        let before = turn.tokens.count_request(conversation.system.as_deref(), &conversation.api_view());
        emit(AgentEvent::CondenseStart { reason, provider: provider.clone(), tokens: before, automatic });
        let mut services = Services::new(turn.tokens, turn.clock).with_abort(turn.abort);
        if let Some(llm) = turn.condense_llm.or(Some(turn.llm)) {
            services = services.with_llm(llm);
        }
        let options = CondensationOptions { is_automatic: automatic, ..Default::default() };
        let outcome = turn.manager.condense(conversation, Some(&provider), options, services).await;
        let not_applied = |error: ErrorInfo, metrics: Option<Metrics>| AgentEvent::CondenseEnd {
            condense_id: None,
            summary: None,
            metrics,
            record: None,
            error: Some(error),
        };
        let result = match outcome {
            Err(e) => {
                emit(not_applied(e.to_info(), None));
                return false;
            }
            Ok(r) if r.error.is_some() => {
                emit(not_applied(r.error.clone().expect("checked"), r.metrics));
                return false;
            }
            Ok(r) => r,
        };
        let after = result.new_context_tokens.unwrap_or(before);
        let gain = before.saturating_sub(after);
        let min_gain =
            (turn.llm.profile().context_window as f64 * turn.auto.min_gain_percent / 100.0).ceil() as usize;
        // An overflow proved the window wrong, so any gain is worth it there.
        if matches!(reason, CondenseReason::Threshold | CondenseReason::Limit) && gain < min_gain {
            let message = format!(
                "saved {gain} tokens, less than the minimum of {min_gain} ({}% of the window); the chat is unchanged",
                turn.auto.min_gain_percent
            );
            emit(not_applied(ErrorInfo { kind: "insufficient_gain".into(), message }, result.metrics));
            return false;
        }
        let Some(condense_id) = last_condense_id(&result.messages) else {
            emit(not_applied(
                ErrorInfo { kind: "internal".into(), message: "the condensation left no id".into() },
                result.metrics,
            ));
            return false;
        };
        let record = CondensationRecord {
            condense_id: condense_id.clone(),
            provider_id: provider,
            reason,
            automatic,
            tokens_before: before,
            tokens_after: after,
            cost: result.cost,
            time_ms: result.metrics.as_ref().map_or(0.0, |m| m.time_elapsed_ms),
            summary: result.summary.clone(),
            at_ms: turn.now_ms,
        };
        self.task.conversation.messages = result.messages;
        self.task.condensations.push(record.clone());
        self.task.reported = None;
        self.task.updated_ms = turn.now_ms;
        emit(AgentEvent::CondenseEnd {
            condense_id: Some(condense_id),
            summary: result.summary,
            metrics: result.metrics,
            record: Some(record),
            error: None,
        });
        true
    }
}

/// Whether an attempt at `t` falls in the minute before `now` (a time after `now`, from a clock
/// that went back, does not count).
fn in_last_minute(t: i64, now: i64) -> bool {
    t <= now && now - t < MINUTE_MS
}

fn error_event(kind: &str, message: &str, retryable: bool) -> AgentEvent {
    AgentEvent::Error {
        error: ErrorInfo { kind: kind.into(), message: message.into() },
        partial: String::new(),
        retryable,
    }
}

fn llm_error_event(e: &LlmError) -> AgentEvent {
    let error = CondenseError::Llm(e.clone()).to_info();
    AgentEvent::Error { error, partial: e.partial.clone(), retryable: false }
}

/// A chat's title: the first line of its first message, at most 60 characters.
fn title_of(text: &str) -> String {
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
    use crate::llm::LlmKind;
    use crate::tokens::{Encoding, TiktokenCounter};

    fn profile(window: usize, max_output: usize, threshold: Option<i32>) -> LlmProfile {
        LlmProfile {
            max_output,
            threshold_percent: threshold,
            ..LlmProfile::new("p", LlmKind::Openai, "gpt-4o", window)
        }
    }

    #[test]
    fn the_threshold_is_the_profiles_own_else_the_global_one_and_none_when_off() {
        let auto = AutoCondense::default();
        assert_eq!(auto.threshold_for(&profile(1000, 100, None)), Some(80));
        assert_eq!(auto.threshold_for(&profile(1000, 100, Some(-1))), Some(80));
        assert_eq!(auto.threshold_for(&profile(1000, 100, Some(60))), Some(60));
        let off = AutoCondense { enabled: false, ..auto };
        assert_eq!(off.threshold_for(&profile(1000, 100, Some(60))), None);
        assert!(AutoCondense { threshold_percent: 0, ..AutoCondense::default() }.validate().is_err());
        assert!(AutoCondense { min_gain_percent: -1.0, ..AutoCondense::default() }.validate().is_err());
        assert!(profile(1000, 100, Some(150)).validate().is_err());
        assert!(profile(1000, 100, Some(-1)).validate().is_ok());
    }

    #[test]
    fn the_reason_is_the_threshold_first_then_the_request_limit() {
        let p = profile(1000, 300, Some(90));
        assert_eq!(request_limit(&p), 600);
        let status = |tokens| ContextStatus {
            tokens,
            window: 1000,
            percent: 0.0,
            threshold_percent: AutoCondense::default().threshold_for(&p),
            limit: request_limit(&p),
            source: TokenSource::Counted,
        };
        assert_eq!(status(600).reason(), None);
        assert_eq!(status(601).reason(), Some(CondenseReason::Limit));
        assert_eq!(status(900).reason(), Some(CondenseReason::Threshold));
        assert_eq!(ContextStatus { threshold_percent: None, ..status(990) }.reason(), None);
    }

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
    fn events_and_inputs_have_the_documented_json_shape() {
        let e =
            serde_json::to_value(AgentEvent::MessageContent { id: "m2".into(), delta: "Hi".into() }).unwrap();
        assert_eq!(e, serde_json::json!({"type": "MessageContent", "id": "m2", "delta": "Hi"}));
        let i: AgentInput = serde_json::from_str(r#"{"type": "user", "content": "Hi"}"#).unwrap();
        assert_eq!(i, AgentInput::User { content: "Hi".into() });
        assert!(serde_json::from_str::<AgentInput>(r#"{"type": "undo"}"#).is_err());
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
