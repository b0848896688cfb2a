//! Preview before applying (issue 18): a condensation run on a chat without applying it, shown
//! to the user (what it hides, message by message, what it adds, tokens before → after, the
//! estimate and the real cost), then applied exactly as shown — an LLM summary is written once —
//! or discarded. And pins: the chat's way to pin a message (see [`crate::pins`]).
//!
//! The provider's estimate comes first: [`preview_conversation`] hands a [`PreviewEstimate`]
//! (tokens before, the estimated cost, what the provider needs) to its caller before the provider
//! runs, so the panel shows it while an LLM writes the summary; the preview then carries the real
//! figures.
//!
//! The engine keeps the [`CondensationPreview`] while the user decides (only what it shows
//! crosses to the host) and applies it with [`ChatTask::apply_preview`] when the host names it,
//! only if the chat has not changed since: the result undone must give back the chat's messages exactly, and the result must pass
//! the template's checks again (nothing lost, pins kept, tool pairs valid).

use serde::{Deserialize, Serialize};

use super::cache::CostEstimate;

use super::policy::CondenseReason;
use super::task::{ChatTask, CondensationRecord};
use super::turn::Turn;
use crate::error::{CondenseError, ErrorInfo, ErrorKind};
use crate::manager::CondensationManager;
use crate::model::{ContentBlock, Conversation, Message, Role, last_condense_id, undo_condensation};
use crate::provider::{CondensationOptions, CondensationResult, Needs, Services, check_condensed};
use crate::tokens::TokenCounter;

/// Characters of a message's text a preview shows.
const PREVIEW_CHARS: usize = 600;

/// One message as a preview lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PreviewMessage {
    /// The message's id.
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// Its tokens.
    pub tokens: usize,
    /// Its text, tool calls and results written out, cut to a few hundred characters.
    pub text: String,
    /// Whether it is an LLM summary.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_summary: bool,
}

impl PreviewMessage {
    fn of(m: &Message, tokens: &dyn TokenCounter) -> Self {
        let mut parts = Vec::new();
        for b in &m.content {
            match b {
                ContentBlock::Text { text, .. } => parts.push(text.clone()),
                ContentBlock::ToolUse { name, .. } => parts.push(format!("[tool call: {name}]")),
                ContentBlock::ToolResult { content, .. } => {
                    let text = crate::model::tool_result_text(content);
                    parts.push(format!("[tool result: {} characters]", text.chars().count()));
                }
                ContentBlock::Image { .. } => parts.push("[image]".into()),
                ContentBlock::Opaque(block) => parts.push(format!("[{} block]", block.kind())),
            }
        }
        let text = parts.join("\n");
        let text = match text.char_indices().nth(PREVIEW_CHARS) {
            Some((at, _)) => format!("{}…", &text[..at]),
            None => text,
        };
        PreviewMessage {
            id: m.id.clone(),
            role: m.role,
            tokens: tokens.count_message(m),
            text,
            is_summary: m.is_summary,
        }
    }
}

/// What a preview shows before its provider runs: the provider's own estimate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PreviewEstimate {
    /// The chat (or file) the preview is made for.
    pub task_id: String,
    /// The provider about to run.
    pub provider_id: String,
    /// What it needs besides the conversation: nothing, an LLM (the wait is the model writing
    /// the summary), or a person's pasted answer.
    pub needs: Needs,
    /// Tokens of the request now.
    pub tokens_before: usize,
    /// The provider's estimate of the cost, in US dollars (0 for the LLM-free providers).
    pub estimated_cost: f64,
}

/// A condensation run on a chat and not applied: what it would do, and the result to apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CondensationPreview {
    /// The chat it was made for.
    pub task_id: String,
    /// The provider that ran.
    pub provider_id: String,
    /// The provider's estimate of the cost, in US dollars, before it ran.
    pub estimated_cost: f64,
    /// What the run cost, in US dollars (the result's cost).
    pub cost: f64,
    /// Tokens of the request before.
    pub tokens_before: usize,
    /// Tokens of the request after, if applied.
    pub tokens_after: usize,
    /// The messages the model would no longer see, oldest first.
    pub hidden: Vec<PreviewMessage>,
    /// The messages it would add: the summary (with the ledger) or edited copies.
    pub added: Vec<PreviewMessage>,
    /// The condensation's id.
    pub condense_id: String,
    /// What the `cache-aware` policy weighs for a condensation now ("costs $X now · saves ≈$Y
    /// over the next N turns"), when the chat model's profile follows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<CostEstimate>,
    /// The run's result, applied as it is by `apply_preview`. It stays with whoever ran the
    /// preview (the wasm engine keeps it under the preview's `condense_id`): what is shown
    /// (`hidden`, `added`) crosses, the whole new message list does not.
    #[serde(skip)]
    #[schemars(skip)]
    pub result: CondensationResult,
}

/// How a preview ended when there is nothing to apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PreviewFailure {
    /// Why.
    pub error: ErrorInfo,
    /// The provider's estimate, when it could make one.
    pub estimated_cost: f64,
    /// What the run spent anyway (a model that answered before the run failed).
    pub cost: f64,
}

impl ChatTask {
    /// Pins (or unpins) message `id` with its tool-pair partners (see [`crate::pins`]); returns
    /// the ids whose flag changed.
    pub fn pin(&mut self, id: &str, pinned: bool, now_ms: i64) -> Result<Vec<String>, CondenseError> {
        let (messages, changed) = crate::pins::set_pinned(&self.conversation.messages, id, pinned)?;
        if !changed.is_empty() {
            self.conversation.messages = messages;
            self.updated_ms = now_ms;
        }
        Ok(changed)
    }

    /// Applies a preview made for this chat, exactly as it was shown (see [`apply_to`]); fails
    /// with `invalid_input` when the chat changed since (a new message, an undo, a pin) or the
    /// preview is not one of this chat's. A failed or dropped preview's cost is not counted here (the host did not
    /// apply it).
    pub fn apply_preview(
        &mut self,
        preview: &CondensationPreview,
        now_ms: i64,
    ) -> Result<CondensationRecord, CondenseError> {
        if preview.task_id != self.id {
            return Err(CondenseError::InvalidInput(format!(
                "this preview was made for another chat ({}); preview the condensation again",
                preview.task_id
            )));
        }
        let messages = apply_to(&self.conversation, preview)?;
        let result = &preview.result;
        let record = CondensationRecord::of(
            result,
            preview.condense_id.clone(),
            preview.provider_id.clone(),
            CondenseReason::Manual,
            preview.tokens_before,
            now_ms,
        );
        self.conversation.messages = messages;
        self.condensations.push(record.clone());
        self.reported = None;
        self.updated_ms = now_ms;
        Ok(record)
    }
}

/// Runs the turn's provider on the chat without applying the result: `on_estimate` gets the
/// provider's estimate before it runs; then the preview to show, or why there is nothing to
/// apply. The task is not changed.
pub async fn preview(
    task: &ChatTask,
    turn: &Turn<'_>,
    on_estimate: &mut dyn FnMut(&PreviewEstimate),
) -> Result<CondensationPreview, PreviewFailure> {
    let provider = turn.provider_id();
    let llm = turn.condensing_llm.unwrap_or(turn.llm);
    // The chat model writes the summary on the chat's own conversation, as a run would.
    let live = turn.condensing_llm.is_none().then(|| super::turn::live_request(task));
    let services =
        Services::new(turn.tokens, turn.clock).with_abort(turn.abort).with_llm(llm).with_live(live.as_ref());
    let policy = super::turn::weigh_condensation(task, turn);
    let mut preview = preview_conversation(
        &task.id,
        &task.conversation,
        turn.manager,
        &provider,
        CondensationOptions::default(),
        services,
        on_estimate,
    )
    .await?;
    preview.policy = policy;
    Ok(preview)
}

/// Runs `provider` on a conversation (a chat's, or a file's: `id` names it) with `options` (a
/// `null` config: the registry's) without applying the result. `on_estimate` gets the provider's
/// estimate (tokens before, the estimated cost) before the provider runs, so a host can show it
/// while an LLM writes the summary; an unknown or disabled provider fails before that. Returns
/// the preview to show, or why there is nothing to apply.
pub async fn preview_conversation(
    id: &str,
    conversation: &Conversation,
    manager: &CondensationManager,
    provider: &str,
    options: CondensationOptions,
    services: Services<'_>,
    on_estimate: &mut dyn FnMut(&PreviewEstimate),
) -> Result<CondensationPreview, PreviewFailure> {
    let tokens = services.tokens;
    let fail =
        |error: ErrorInfo, estimated_cost: f64, cost: f64| PreviewFailure { error, estimated_cost, cost };
    let estimated_cost = manager
        .estimate(conversation, Some(provider), options.clone(), services)
        .map_err(|e| fail(e.to_info(), 0.0, 0.0))?;
    let needs = manager.registry().get(provider).map_or(Needs::Nothing, |p| p.needs());
    let before = tokens.count_request(conversation.system.as_deref(), &conversation.api_view());
    on_estimate(&PreviewEstimate {
        task_id: id.to_owned(),
        provider_id: provider.to_owned(),
        needs,
        tokens_before: before,
        estimated_cost,
    });
    let result = manager
        .condense(conversation, Some(provider), options, services)
        .await
        .map_err(|e| fail(e.to_info(), estimated_cost, 0.0))?;
    if let Some(error) = &result.error {
        return Err(fail(error.clone(), estimated_cost, result.cost));
    }
    let Some(condense_id) = last_condense_id(&result.messages) else {
        return Err(fail(
            ErrorInfo::new(ErrorKind::Internal, "the condensation left no id"),
            estimated_cost,
            result.cost,
        ));
    };
    let was_visible = |id: &str| conversation.messages.iter().any(|m| m.id == id && m.is_visible());
    let hidden = result
        .messages
        .iter()
        .filter(|m| !m.is_visible() && was_visible(&m.id))
        .map(|m| PreviewMessage::of(m, tokens))
        .collect();
    let added = result
        .messages
        .iter()
        .filter(|m| m.is_visible() && m.condense_id.as_deref() == Some(condense_id.as_str()))
        .map(|m| PreviewMessage::of(m, tokens))
        .collect();
    Ok(CondensationPreview {
        task_id: id.to_owned(),
        provider_id: provider.to_owned(),
        estimated_cost,
        cost: result.cost,
        tokens_before: before,
        tokens_after: result.new_context_tokens.unwrap_or(before),
        hidden,
        added,
        condense_id,
        policy: None,
        result,
    })
}

/// The messages of `conversation` with the preview's result applied, exactly as shown, when the
/// conversation is still the one the preview was made from (the result undone gives back its
/// messages) and the result passes the template's checks again; else `invalid_input`.
pub fn apply_to(
    conversation: &Conversation,
    preview: &CondensationPreview,
) -> Result<Vec<Message>, CondenseError> {
    let stale = || {
        CondenseError::InvalidInput(
            "the conversation changed since this preview was made; preview the condensation again".into(),
        )
    };
    let result = &preview.result;
    if result.error.is_some()
        || last_condense_id(&result.messages).as_deref() != Some(preview.condense_id.as_str())
    {
        return Err(stale());
    }
    let undone = undo_condensation(&result.messages, &preview.condense_id).ok_or_else(stale)?;
    if undone != conversation.messages {
        return Err(stale());
    }
    check_condensed(&conversation.messages, conversation.system.as_deref(), result.messages.clone())?;
    Ok(result.messages.clone())
}

/// What `preview` ends with, of a chat or a conversation file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PreviewOutcome {
    /// A condensation to show and apply or discard.
    Ready {
        /// The preview.
        preview: Box<CondensationPreview>,
    },
    /// Nothing to apply, and why.
    Failed {
        /// The failure.
        failure: PreviewFailure,
    },
}

impl From<Result<CondensationPreview, PreviewFailure>> for PreviewOutcome {
    fn from(r: Result<CondensationPreview, PreviewFailure>) -> Self {
        match r {
            Ok(p) => PreviewOutcome::Ready { preview: Box::new(p) },
            Err(failure) => PreviewOutcome::Failed { failure },
        }
    }
}
