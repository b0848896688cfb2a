//! `CondenseEngine`'s chats: a new task, one agent input at a time with its events as they
//! happen, the context status, and undo. Turns write their condensations, skips and failures to
//! the host's log.

use std::rc::Rc;

use condense_core::agent::{
    AgentEvent, AgentInput, ChatTask, CondensationPreview, CondenseOutcome, ContextStatus, DefaultAgent,
    PreviewEstimate, PreviewOutcome, Turn, preview_conversation,
};
use condense_core::{CondensationOptions, Services};
use condense_core::{CondenseError, Conversation, ErrorKind};
use condense_protocol::calls::{
    ChatApplied, ChatOptions, ChatOutcome, ChatPin, ChatStep, ChatUndo, TaskHandle,
};
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::convert::{call_back, core_error, error, from_js, llm_error, to_js};
use crate::engine::{CondenseEngine, Inner};
use crate::held::{HeldItem, common_prefix};
use crate::held_api::{TaskRef, task_ref, unknown};
use crate::host::{JsHost, JsTimer};

fn chat_call(options: &JsValue) -> Result<ChatOptions, JsValue> {
    let call: ChatOptions = from_js(options, "the options")?;
    call.auto.validate().map_err(|m| core_error(&CondenseError::InvalidInput(m)))?;
    call.llm.profile.validate().map_err(|e| llm_error(&e))?;
    Ok(call)
}

#[wasm_bindgen]
impl CondenseEngine {
    /// A new, empty chat task.
    #[wasm_bindgen(js_name = newChat, unchecked_return_type = "ChatTask")]
    pub fn new_chat(&self, id: &str, now_ms: f64) -> Result<JsValue, JsValue> {
        to_js(&ChatTask::new(id, now_ms as i64))
    }

    /// Works on one chat input (a user message, retry, condense, shutdown): `onEvent` gets every
    /// agent event as it happens; resolves with the updated task and its context status. Failures
    /// of the turn are `Error` events, and the task keeps what arrived; rejects only for a bad
    /// call. The task may be a handle from `holdChat` (the held copy is then updated); an unknown
    /// handle rejects with `unknown_task`.
    #[wasm_bindgen(unchecked_return_type = "Promise<ChatOutcome>")]
    pub fn chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatTaskInput | TaskHandle")] task: JsValue,
        #[wasm_bindgen(unchecked_param_type = "AgentInputInput")] input: JsValue,
        #[wasm_bindgen(unchecked_param_type = "ChatOptionsInput")] options: JsValue,
        #[wasm_bindgen(unchecked_param_type = "((event: AgentEvent) => void) | undefined")] on_event: Option<
            Function,
        >,
    ) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            match task_ref(&task)? {
                TaskRef::Task(task) => {
                    let (task, context) = chat(Rc::clone(&inner), *task, input, options, on_event).await?;
                    to_js(&ChatOutcome { task, context })
                }
                TaskRef::Handle(handle) => {
                    let step = held_turn(Rc::clone(&inner), handle, input, options, on_event).await?;
                    let mut task = step.task;
                    task.conversation.messages =
                        with_held_chat(&inner, &step.handle, |t| t.conversation.messages.clone())?;
                    to_js(&ChatOutcome { task, context: step.context })
                }
            }
        })
    }

    /// `chat` on a held chat (a handle from `holdChat`), resolving with what changed only: the
    /// new handle, how many leading messages stay, the messages after them, the rest of the task
    /// and its context status. An unknown handle rejects with `unknown_task`.
    #[wasm_bindgen(js_name = chatHeld, unchecked_return_type = "Promise<ChatStep>")]
    pub fn chat_held(
        &self,
        #[wasm_bindgen(unchecked_param_type = "TaskHandle")] handle: JsValue,
        #[wasm_bindgen(unchecked_param_type = "AgentInputInput")] input: JsValue,
        #[wasm_bindgen(unchecked_param_type = "ChatOptionsInput")] options: JsValue,
        #[wasm_bindgen(unchecked_param_type = "((event: AgentEvent) => void) | undefined")] on_event: Option<
            Function,
        >,
    ) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let handle: TaskHandle = from_js(&handle, "the task handle")?;
            to_js(&held_turn(inner, handle, input, options, on_event).await?)
        })
    }

    /// How full a chat's context is for the options' chat profile. The task may be a handle from
    /// `holdChat`: then only the messages not counted before are counted, and nothing but the
    /// handle crosses the boundary. An unknown handle throws `unknown_task`.
    #[wasm_bindgen(js_name = chatContext, unchecked_return_type = "ContextStatus")]
    pub fn chat_context(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatTaskInput | TaskHandle")] task: JsValue,
        #[wasm_bindgen(unchecked_param_type = "ChatOptionsInput")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let task = task_ref(&task)?;
        let call = chat_call(&options)?;
        let counter = self.inner.counter(&call.llm.profile.model);
        match task {
            TaskRef::Task(task) => {
                to_js(&task.context_status(&call.llm.profile, &call.auto, counter.as_ref()))
            }
            TaskRef::Handle(handle) => {
                let mut held = self.inner.held.borrow_mut();
                let entry = held.get(&handle).ok_or_else(|| unknown(&handle))?;
                let HeldItem::Chat(task) = &entry.item else { return Err(unknown(&handle)) };
                let counter = entry.counter(counter.as_ref());
                to_js(&task.context_status(&call.llm.profile, &call.auto, &counter))
            }
        }
    }

    /// Undoes a condensation of a chat (the last one when `condenseId` is absent).
    #[wasm_bindgen(js_name = undoChat, unchecked_return_type = "ChatUndo")]
    pub fn undo_chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatTaskInput")] task: JsValue,
        condense_id: Option<String>,
        now_ms: f64,
    ) -> Result<JsValue, JsValue> {
        let mut task: ChatTask = from_js(&task, "the chat task")?;
        let condense_id = task
            .undo(condense_id.as_deref(), now_ms as i64)
            .ok_or_else(|| error(ErrorKind::NothingToUndo, "the chat has no such condensation to undo"))?;
        self.inner.host.log("info", &format!("chat {}: undid condensation {condense_id}", task.id));
        to_js(&ChatUndo { task, condense_id })
    }
}

#[wasm_bindgen]
impl CondenseEngine {
    /// Previews a condensation of a chat with the options' provider: runs it (an LLM summary is
    /// written now, once) without applying it. `onEstimate` gets the provider's estimate (tokens
    /// before, the estimated cost) before the provider runs. Resolves with the preview to show,
    /// or why there is nothing to apply; the task is not changed. Rejects only for a bad call.
    #[wasm_bindgen(js_name = previewChat, unchecked_return_type = "Promise<PreviewOutcome>")]
    pub fn preview_chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatTaskInput")] task: JsValue,
        #[wasm_bindgen(unchecked_param_type = "ChatOptionsInput")] options: JsValue,
        #[wasm_bindgen(unchecked_param_type = "((estimate: PreviewEstimate) => void) | undefined")]
        on_estimate: Option<Function>,
    ) -> Promise {
        future_to_promise(preview_chat(Rc::clone(&self.inner), task, options, on_estimate))
    }

    /// Applies a preview to the chat it was made for, exactly as shown (no LLM call); fails with
    /// `invalid_input` when the chat changed since the preview.
    #[wasm_bindgen(js_name = applyPreview, unchecked_return_type = "ChatApplied")]
    pub fn apply_preview(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatTaskInput")] task: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CondensationPreviewInput")] preview: JsValue,
        now_ms: f64,
    ) -> Result<JsValue, JsValue> {
        let mut task: ChatTask = from_js(&task, "the chat task")?;
        let preview: CondensationPreview = from_js(&preview, "the preview")?;
        let record = task.apply_preview(&preview, now_ms as i64).map_err(|e| core_error(&e))?;
        self.inner.host.log(
            "info",
            &format!(
                "chat {}: applied the previewed condensation {} ({} → {} tokens)",
                task.id, record.condense_id, record.tokens_before, record.tokens_after
            ),
        );
        to_js(&ChatApplied { task, record })
    }

    /// Pins (or unpins) a message of a chat, with its tool-pair partners: no condensation hides
    /// or edits a pinned message.
    #[wasm_bindgen(js_name = pinMessage, unchecked_return_type = "ChatPin")]
    pub fn pin_message(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatTaskInput")] task: JsValue,
        id: &str,
        pinned: bool,
        now_ms: f64,
    ) -> Result<JsValue, JsValue> {
        let mut task: ChatTask = from_js(&task, "the chat task")?;
        let changed = task.pin(id, pinned, now_ms as i64).map_err(|e| core_error(&e))?;
        to_js(&ChatPin { task, changed })
    }
}

#[expect(clippy::await_holding_refcell_ref, reason = "see `condense`")]
async fn preview_chat(
    inner: Rc<Inner>,
    task: JsValue,
    options: JsValue,
    on_estimate: Option<Function>,
) -> Result<JsValue, JsValue> {
    let task: ChatTask = from_js(&task, "the chat task")?;
    let call = chat_call(&options)?;
    let counter = inner.counter(&call.llm.profile.model);
    let llm = inner.client(call.llm)?;
    let condensing = call.condensing_llm.map(|t| inner.client(t)).transpose()?;
    let abort = inner.begin(Some(&task.id));
    let manager = inner.manager();
    let provider = call.provider.clone().unwrap_or_else(|| manager.default_provider().to_owned());
    let services = Services::new(counter.as_ref(), inner.host.as_ref())
        .with_abort(&abort)
        .with_timer(&JsTimer)
        .with_llm(condensing.as_deref().unwrap_or(llm.as_ref()));
    let options = CondensationOptions {
        config: call.config.clone().unwrap_or(serde_json::Value::Null),
        ..CondensationOptions::default()
    };
    let mut estimated = |estimate: &PreviewEstimate| {
        inner.host.log(
            "info",
            &format!(
                "chat {}: previewing {} ({} tokens, estimated ${:.6})",
                estimate.task_id, estimate.provider_id, estimate.tokens_before, estimate.estimated_cost
            ),
        );
        call_back(on_estimate.as_ref(), estimate);
    };
    let outcome: PreviewOutcome = preview_conversation(
        &task.id,
        &task.conversation,
        &manager,
        &provider,
        options,
        services,
        &mut estimated,
    )
    .await
    .into();
    drop(manager);
    inner.end(&abort);
    match &outcome {
        PreviewOutcome::Ready { preview } => inner.host.log(
            "info",
            &format!(
                "chat {}: previewed {} ({} → {} tokens, cost ${:.6}, estimated ${:.6})",
                task.id,
                preview.provider_id,
                preview.tokens_before,
                preview.tokens_after,
                preview.result.cost,
                preview.estimated_cost
            ),
        ),
        PreviewOutcome::Failed { failure } => inner.host.log(
            "warn",
            &format!("chat {}: preview failed: {}: {}", task.id, failure.error.kind, failure.error.message),
        ),
    }
    to_js(&outcome)
}

// As in `condense`, the shared borrow of the manager is held through the turn on purpose.
#[expect(clippy::await_holding_refcell_ref, reason = "see `condense`")]
async fn chat(
    inner: Rc<Inner>,
    task: ChatTask,
    input: JsValue,
    options: JsValue,
    on_event: Option<Function>,
) -> Result<(ChatTask, ContextStatus), JsValue> {
    let input: AgentInput = from_js(&input, "the input")?;
    let call = chat_call(&options)?;
    let counter = inner.counter(&call.llm.profile.model);
    let llm = inner.client(call.llm)?;
    let condensing = call.condensing_llm.map(|t| inner.client(t)).transpose()?;
    let abort = inner.begin(Some(&task.id));
    let manager = inner.manager();
    let turn = Turn {
        llm: llm.as_ref(),
        condensing_llm: condensing.as_deref(),
        manager: &manager,
        provider: call.provider.as_deref(),
        auto: &call.auto,
        tokens: counter.as_ref(),
        clock: inner.host.as_ref(),
        abort: &abort,
        now_ms: call.now_ms as i64,
    };
    let mut agent = DefaultAgent::new(task);
    let host = Rc::clone(&inner.host);
    agent
        .process(input, &turn, &mut |event| {
            log_event(&host, &event);
            // Mid-turn, with the manager borrowed: a test build's panic leaves the instance as a
            // real bug would.
            if let AgentEvent::UserMessage { message } = &event {
                crate::test_panic(&message.text());
            }
            call_back(on_event.as_ref(), &event);
        })
        .await;
    drop(manager);
    inner.end(&abort);
    let task = agent.into_task();
    let context = task.context_status(llm.profile(), &call.auto, counter.as_ref());
    Ok((task, context))
}

/// Calls `f` with the held chat under `handle`, or fails with `unknown_task`.
fn with_held_chat<R>(
    inner: &Inner,
    handle: &TaskHandle,
    f: impl FnOnce(&ChatTask) -> R,
) -> Result<R, JsValue> {
    let mut held = inner.held.borrow_mut();
    match held.get(handle).map(|e| &e.item) {
        Some(HeldItem::Chat(task)) => Ok(f(task)),
        _ => Err(unknown(handle)),
    }
}

/// A chat task without its messages.
fn without_messages(task: &ChatTask) -> ChatTask {
    ChatTask {
        id: task.id.clone(),
        title: task.title.clone(),
        created_ms: task.created_ms,
        updated_ms: task.updated_ms,
        conversation: Conversation {
            format: task.conversation.format.clone(),
            system: task.conversation.system.clone(),
            tools: task.conversation.tools.clone(),
            messages: Vec::new(),
        },
        condensations: task.condensations.clone(),
        guard: task.guard.clone(),
        unapplied_cost: task.unapplied_cost,
        reported: task.reported.clone(),
    }
}

/// Runs a turn on a copy of the held chat, then holds the result. The step says what changed
/// against the held copy before the turn, which is the host's.
async fn held_turn(
    inner: Rc<Inner>,
    handle: TaskHandle,
    input: JsValue,
    options: JsValue,
    on_event: Option<Function>,
) -> Result<ChatStep, JsValue> {
    let task = with_held_chat(&inner, &handle, ChatTask::clone)?;
    let call = chat_call(&options)?;
    let (task, _) = chat(Rc::clone(&inner), task, input, options, on_event).await?;
    // Changed meanwhile (held again, evicted): the host gets every message.
    let keep = with_held_chat(&inner, &handle, |before| {
        common_prefix(&before.conversation.messages, &task.conversation.messages)
    })
    .unwrap_or(0);
    let messages = task.conversation.messages[keep..].to_vec();
    let id = task.id.clone();
    let handle = inner.held.borrow_mut().hold(&id, HeldItem::Chat(task));
    // The status with the held counts: what the turn added is counted once, here.
    let counter = inner.counter(&call.llm.profile.model);
    let mut held = inner.held.borrow_mut();
    let entry = held.get(&handle).ok_or_else(|| unknown(&handle))?;
    let HeldItem::Chat(task) = &entry.item else { return Err(unknown(&handle)) };
    let context = task.context_status(&call.llm.profile, &call.auto, &entry.counter(counter.as_ref()));
    Ok(ChatStep { handle: handle.clone(), keep, messages, task: without_messages(task), context })
}

/// The log lines of a chat turn: condensations with their metrics, skips and failures.
fn log_event(host: &JsHost, event: &AgentEvent) {
    match event {
        AgentEvent::CondenseEnd(CondenseOutcome::Applied { record: r, .. }) => host.log(
            "info",
            &format!(
                "condensed with {} ({}{}): {} → {} tokens, cost ${:.6}, {:.0} ms",
                r.provider_id,
                r.reason.as_str(),
                if r.automatic { ", automatic" } else { "" },
                r.tokens_before,
                r.tokens_after,
                r.cost,
                r.time_ms
            ),
        ),
        AgentEvent::CondenseEnd(CondenseOutcome::NotApplied { error: e, .. }) => {
            host.log("warn", &format!("condensation not applied: {}: {}", e.kind, e.message));
        }
        AgentEvent::CondenseSkipped { reason, tokens } => {
            host.log("info", &format!("automatic condensation skipped at {tokens} tokens: {reason}"));
        }
        AgentEvent::Error { error, .. } => {
            host.log("warn", &format!("chat turn failed: {}: {}", error.kind, error.message))
        }
        _ => {}
    }
}
