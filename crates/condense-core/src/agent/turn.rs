//! The turn engine: [`DefaultAgent::process`] works on one input through a [`Turn`] (what the host
//! lends it), condensing before a request when the policy asks, streaming the answer into the
//! history, and on an overflow condensing and trying once more.

use super::cache::{self, CostEstimate};
use super::events::{AgentEvent, AgentInput, CondenseOutcome};
use super::policy::{CondenseReason, ContextStatus, min_gain_tokens};
use super::task::{ChatTask, CondensationRecord, ReportedUsage, title_of};
use crate::error::{ErrorInfo, ErrorKind, LlmError};
use crate::host::{AbortSignal, Clock};
use crate::limits::{AutoCondense, OVERFLOW_MARGIN_PERCENT, request_limit};
use crate::llm::{CacheHint, CondensePolicy, LlmProvider, ModelUse, PromptBundle, collect};
use crate::manager::CondensationManager;
use crate::model::{ContentBlock, Conversation, Message, Role, last_condense_id};
use crate::provider::{CondensationOptions, Needs, Services};
use crate::providers::summary::to_chat;
use crate::tokens::TokenCounter;

/// What the host lends the agent for one input.
#[derive(Clone, Copy)]
pub struct Turn<'a> {
    /// The chat model.
    pub llm: &'a dyn LlmProvider,
    /// The model that writes summaries (the condensing model), when it is not the chat model.
    pub condensing_llm: Option<&'a dyn LlmProvider>,
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
    pub(super) fn provider_id(&self) -> String {
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
                    emit(error_event(ErrorKind::InvalidInput, "the message is empty"));
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
                        ErrorKind::InvalidInput,
                        "nothing to retry: the last message has its answer",
                    ));
                    return;
                }
                emit(AgentEvent::ThinkingStart);
                self.answer(turn, emit).await;
                emit(AgentEvent::ThinkingEnd);
            }
            AgentInput::Condense => {
                self.condense(turn, emit, CondenseReason::Manual, None).await;
            }
            AgentInput::Shutdown => emit(AgentEvent::StatusShutdown),
        }
    }

    /// Answers the last user message: condense first if the context asks for it, stream the
    /// answer, and on an overflow condense and try once more.
    async fn answer(&mut self, turn: &Turn<'_>, emit: &mut dyn FnMut(AgentEvent)) {
        // A CLI tool whose entry leaves out `chat` cannot be the chat model: nothing is sent
        // (and nothing condensed for a request that cannot be made).
        if let Err(e) = turn.llm.serves(ModelUse::Chat) {
            emit(llm_error_event(&e));
            return;
        }
        let status = self.task.context_status(turn.llm.profile(), turn.auto, turn.tokens);
        // The threshold and the limit first; under the cache-aware policy, earlier when it pays.
        let estimate = weigh(&self.task, turn, &status);
        // Early, the policy asks only for what the provider would accept: a chat too short to
        // summarize is not told so at every turn.
        let pays = estimate.is_some_and(|e| e.condense)
            && turn.manager.accepts(&self.task.conversation, turn.provider, turn.tokens);
        let reason = status.reason().or(pays.then_some(CondenseReason::Cache));
        if let Some(reason) = reason {
            self.auto_condense(turn, emit, reason, estimate).await;
        }
        let mut retried = false;
        loop {
            match self.stream_once(turn, emit).await {
                Streamed::Done | Streamed::Failed => return,
                Streamed::Overflow(e) if !retried => {
                    retried = true;
                    if !self.auto_condense(turn, emit, CondenseReason::Overflow, None).await {
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
        let mut bundle = self.request();
        // The chat phase's generation settings (answer limit, temperature) of the chat profile.
        bundle.generation_params = Some(turn.llm.profile().chat);
        let id = self.task.next_message_id();
        emit(AgentEvent::MessageStart { id: id.clone() });
        let stream = turn.llm.stream_completion(&bundle, turn.abort);
        let answer = collect(stream, turn.abort, |delta| {
            emit(AgentEvent::MessageContent { id: id.clone(), delta: delta.to_owned() });
        })
        .await;
        let now = turn.now_ms;
        match answer {
            Ok(answer) => {
                let cost = turn.llm.answer_cost(&answer);
                self.push_answer(&id, answer.content, now, None);
                self.task.reported = answer
                    .usage
                    .map(|u| ReportedUsage { through: id.clone(), tokens: u.input_tokens + u.output_tokens });
                emit(AgentEvent::MessageEnd {
                    id,
                    interrupted: None,
                    kept: true,
                    usage: answer.usage,
                    finish_reason: answer.finish_reason,
                    cost,
                });
                Streamed::Done
            }
            Err(e) => {
                let text = e.partial.clone();
                let overflow = e.kind == ErrorKind::LlmContextOverflow && text.is_empty();
                if !overflow {
                    emit(AgentEvent::Error {
                        error: ErrorInfo::new(e.kind, e.message.clone()),
                        partial: text.clone(),
                        retryable: e.kind != ErrorKind::LlmConfig,
                    });
                }
                let interrupted = if e.kind == ErrorKind::LlmCancelled {
                    "cancelled".to_owned()
                } else {
                    e.kind.as_str().to_owned()
                };
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
        chat_request(&self.task.conversation, &self.task.id)
    }

    /// An automatic condensation, if the off switch and the loop guard allow it. Returns whether
    /// one was applied.
    async fn auto_condense(
        &mut self,
        turn: &Turn<'_>,
        emit: &mut dyn FnMut(AgentEvent),
        reason: CondenseReason,
        estimate: Option<CostEstimate>,
    ) -> bool {
        let (tokens, _) = self.task.context_tokens(turn.tokens);
        let last = self.task.last_message_id();
        let refusal = if turn.auto.enabled {
            self.task.guard.refusal(last, turn.now_ms, reason)
        } else {
            Some("automatic condensation is off; condense by hand or turn it on in the settings".into())
        };
        if let Some(why) = refusal {
            emit(AgentEvent::CondenseSkipped { reason: why, tokens });
            return false;
        }
        let last = last.map(str::to_owned);
        self.task.guard.record(last, turn.now_ms, reason);
        self.condense(turn, emit, reason, estimate).await
    }

    /// Runs the turn's provider on the history and applies the result when it succeeded (and,
    /// for an automatic run, saved at least the minimum gain). Returns whether it was applied.
    async fn condense(
        &mut self,
        turn: &Turn<'_>,
        emit: &mut dyn FnMut(AgentEvent),
        reason: CondenseReason,
        estimate: Option<CostEstimate>,
    ) -> bool {
        let automatic = reason != CondenseReason::Manual;
        let provider = turn.provider_id();
        let conversation = &self.task.conversation;
        let before = turn.tokens.count_request(conversation.system.as_deref(), &conversation.api_view());
        emit(AgentEvent::CondenseStart { reason, provider: provider.clone(), tokens: before, automatic });
        let llm = turn.condensing_llm.unwrap_or(turn.llm);
        // The chat model writes the summary: on the chat's own conversation, read from the cache.
        let live = turn.condensing_llm.is_none().then(|| live_request(&self.task));
        let services = Services::new(turn.tokens, turn.clock)
            .with_abort(turn.abort)
            .with_llm(llm)
            .with_live(live.as_ref());
        // An automatic run lands where the next request fits: under the request limit when the
        // context is past it, and under what the model refused when it answered "too long" (its
        // tokenizer counts more than ours).
        let profile = turn.llm.profile();
        let limit = request_limit(profile.context_window, profile.output_limit());
        let ceiling = match reason {
            CondenseReason::Overflow => Some(limit.min(before * (100 - OVERFLOW_MARGIN_PERCENT) / 100)),
            _ if automatic && before > limit => Some(limit),
            _ => None,
        };
        let options =
            CondensationOptions { is_automatic: automatic, ceiling_tokens: ceiling, ..Default::default() };
        let outcome = turn.manager.condense(conversation, Some(&provider), options, services).await;
        let not_applied = |error: ErrorInfo, metrics, cost| {
            AgentEvent::CondenseEnd(CondenseOutcome::NotApplied { error, metrics, cost })
        };
        let result = match outcome {
            Err(e) => {
                emit(not_applied(e.to_info(), None, 0.0));
                return false;
            }
            Ok(r) => match r.error {
                Some(error) => {
                    // A run that failed after the model answered still cost money.
                    self.task.unapplied_cost += r.cost;
                    emit(not_applied(error, r.metrics, r.cost));
                    return false;
                }
                None => r,
            },
        };
        let after = result.new_context_tokens.unwrap_or(before);
        let gain = before.saturating_sub(after);
        let min_gain = min_gain_tokens(turn.llm.profile().context_window, turn.auto.min_gain_percent);
        // An overflow proved the window wrong, so any gain is worth it there.
        if matches!(reason, CondenseReason::Threshold | CondenseReason::Limit | CondenseReason::Cache)
            && gain < min_gain
        {
            let message = format!(
                "saved {gain} tokens, less than the minimum of {min_gain} ({}% of the window); the chat is unchanged",
                turn.auto.min_gain_percent
            );
            self.task.unapplied_cost += result.cost;
            emit(not_applied(
                ErrorInfo::new(ErrorKind::InsufficientGain, message),
                result.metrics,
                result.cost,
            ));
            return false;
        }
        let Some(condense_id) = last_condense_id(&result.messages) else {
            emit(not_applied(
                ErrorInfo::new(ErrorKind::Internal, "the condensation left no id"),
                result.metrics,
                result.cost,
            ));
            return false;
        };
        let mut record = CondensationRecord::of(&result, condense_id, provider, reason, before, turn.now_ms);
        record.estimate = estimate.map(Box::new);
        self.task.conversation.messages = result.messages;
        self.task.condensations.push(record.clone());
        self.task.reported = None;
        self.task.updated_ms = turn.now_ms;
        emit(AgentEvent::CondenseEnd(CondenseOutcome::Applied { record, metrics: result.metrics }));
        true
    }
}

/// The `cache-aware` policy's weighing before a request (see [`super::cache`]), when the chat
/// model's profile follows it and automatic condensation is on.
fn weigh(task: &ChatTask, turn: &Turn<'_>, status: &ContextStatus) -> Option<CostEstimate> {
    let profile = turn.llm.profile();
    let threshold = status.threshold_percent?;
    if profile.policy() != CondensePolicy::CacheAware {
        return None;
    }
    let messages = &task.conversation.messages;
    let view = task.conversation.api_view();
    let answers = |after_ms: i64| {
        messages.iter().filter(|m| m.role == Role::Assistant && !m.is_summary && m.ts > after_ms).count()
    };
    // The last request's prefix, while the cache holds it: the messages before the answer
    // the server last reported usage for, answered within the cache's lifetime.
    let warm_prefix = task.reported.as_ref().and_then(|r| {
        let at = view.iter().position(|m| m.id == r.through)?;
        (turn.now_ms - view[at].ts <= cache::CACHE_LIFETIME_MS).then_some(at)
    });
    let last = task.condensations.last().map(|r| {
        let summary = r.summary.as_deref().map_or(0, |s| turn.tokens.count_text(s));
        (r.tokens_after, summary, answers(r.at_ms))
    });
    let needs_llm =
        turn.manager.registry().get(&turn.provider_id()).is_some_and(|p| p.meta().needs == Needs::Llm);
    let cap = status.window * usize::from(threshold) / 100;
    let session = cache::Session {
        prices: profile.prices(),
        system: task.conversation.system.as_deref(),
        view: &view,
        warm_prefix,
        turns: answers(i64::MIN),
        last,
        needs_llm,
        summary_from_cache: turn.condensing_llm.is_none(),
        limit: status.limit.min(cap),
    };
    Some(cache::weigh(&session.weighing(turn.tokens)))
}

/// The chat's conversation as its requests send it, for a summary built on it: every turn of
/// the API view, and how many of them the last request sent (the turns before the answer the
/// server last reported usage for; unknown after a condensation).
pub fn live_request(task: &ChatTask) -> PromptBundle {
    let view = task.conversation.api_view();
    let through = task.reported.as_ref().map(|r| r.through.as_str());
    let sent_before = through.and_then(|id| view.iter().position(|m| m.id == id));
    live_conversation(&task.conversation, &task.id, sent_before)
}

/// The request a chat keyed `key` sends for its conversation's last message: the API view before
/// it as history, its breakpoint on the last turn. The turn engine's, and a replay's.
pub(super) fn chat_request(conversation: &Conversation, key: &str) -> PromptBundle {
    let view = conversation.api_view();
    let (last, history) = view.split_last().expect("a request follows a message");
    PromptBundle {
        system_context: conversation.system.clone().unwrap_or_default(),
        conversation_history: history.iter().map(|m| to_chat(m)).collect(),
        request: to_chat(last).content,
        cache: Some(CacheHint { key: key.to_owned(), sent_before: None }),
        ..Default::default()
    }
}

/// A chat's conversation as its requests send it, `sent_before` of its turns sent by the last
/// request (see [`live_request`]).
pub(super) fn live_conversation(
    conversation: &Conversation,
    key: &str,
    sent_before: Option<usize>,
) -> PromptBundle {
    PromptBundle {
        system_context: conversation.system.clone().unwrap_or_default(),
        conversation_history: conversation.api_view().iter().map(|m| to_chat(m)).collect(),
        cache: Some(CacheHint { key: key.to_owned(), sent_before }),
        ..Default::default()
    }
}

/// The `cache-aware` policy's weighing of a condensation of `task` now, with the chat model of
/// `turn`: what a preview shows. `None` when the chat model's profile condenses at the threshold,
/// or automatic condensation is off.
pub fn weigh_condensation(task: &ChatTask, turn: &Turn<'_>) -> Option<CostEstimate> {
    let status = task.context_status(turn.llm.profile(), turn.auto, turn.tokens);
    weigh(task, turn, &status)
}

fn error_event(kind: ErrorKind, message: &str) -> AgentEvent {
    AgentEvent::Error { error: ErrorInfo::new(kind, message), partial: String::new(), retryable: false }
}

fn llm_error_event(e: &LlmError) -> AgentEvent {
    AgentEvent::Error { error: e.to_info(), partial: e.partial.clone(), retryable: false }
}
