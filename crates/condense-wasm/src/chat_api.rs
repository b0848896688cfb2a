//! `CondenseEngine`'s held tasks, chats and conversation files alike, each named by a handle:
//! holding and releasing one, and what acts on either (a preview kept in the engine until Apply
//! names it, its apply, undo), deciding by what the handle holds; and a chat's own calls: a new
//! chat, one agent input at a time with its events as they happen, the context status, pins. Every
//! change of a chat answers with what changed (`ChatChange`), which the host applies to the copy
//! it saves; no call takes a whole task but `hold`. Turns write their condensations, skips and
//! failures to the host's log. A file's side of each call is in `held_api.rs`.

use std::rc::Rc;

use condense_core::agent::{
    AgentEvent, AgentInput, ChatTask, CondenseOutcome, ContextStatus, DefaultAgent, PreviewEstimate,
    PreviewOutcome, Turn, live_request, preview_conversation, weigh_condensation,
};
use condense_core::{CondensationOptions, Services};
use condense_core::{CondenseError, Conversation, ErrorKind};
use condense_protocol::calls::{
    Applied, ChatChange, ChatOptions, ChatPin, ChatStep, CondenseOptions, HeldKind, TaskHandle, Undone,
};
use wasm_bindgen::prelude::*;

use crate::conversation_api::{ConversationValue, with_json_text};
use crate::convert::{core_error, error, llm_error};
use crate::engine::{CondenseEngine, Inner};
use crate::held::HeldItem;
use crate::held_api::{apply_file_preview, preview_file, undo_file, unknown};
use crate::host::{JsHost, JsTimer};
use crate::surface::{Callback, FromJs, engine_api};

crate::surface::data!(TaskHandle, ChatOptions, AgentInput, AgentEvent, ChatChange, ChatStep, ContextStatus);
crate::surface::data!(Undone, ChatPin, Applied, PreviewEstimate, PreviewOutcome, HeldKind);

/// What `hold` holds: a saved chat's text, or a conversation (text or object), read as `kind`
/// says once the call has it.
pub(crate) struct HeldValue(JsValue);

impl FromJs for HeldValue {
    fn from_js(value: JsValue, _name: &str) -> Result<Self, JsValue> {
        Ok(HeldValue(value))
    }
    fn ts() -> String {
        ConversationValue::ts()
    }
}

/// The options of `preview`: a chat's or a conversation file's, read as the handle says.
pub(crate) struct PreviewOptions(JsValue);

impl FromJs for PreviewOptions {
    fn from_js(value: JsValue, _name: &str) -> Result<Self, JsValue> {
        Ok(PreviewOptions(value))
    }
    fn ts() -> String {
        format!("{} | {}", ChatOptions::ts(), CondenseOptions::ts())
    }
}

engine_api! {
    impl CondenseEngine;

    /// A new, empty chat, held by the engine: its handle, and the task to save.
    sync fn newChat = new_chat(id: String, now_ms: f64) -> ChatChange;

    /// Holds a task under the host's `id`, replacing what was held there, and returns its
    /// handle: a saved chat (`kind` `chat`: the text of its file, a `ChatTask` as JSON, whose id
    /// is `id`) or a conversation file (`conversation`: text or object, any supported format;
    /// holding the new text of the same id later recounts only the messages that changed). The
    /// one way a whole task enters the engine: on load, and when the engine answered
    /// `unknown_task` (it holds at most eight tasks, the least recently used going first).
    sync fn hold = hold(kind: HeldKind, id: String, value: HeldValue) -> TaskHandle;

    /// Lets the task `id` go, with the preview kept of it: whether the engine held it.
    sync fn release = release(id: String) -> bool;

    /// Works on one input of a held chat (a user message, retry, condense, shutdown): `onEvent`
    /// gets every agent event as it happens; resolves with what changed and the context status.
    /// Failures of the turn are `Error` events, and the chat keeps what arrived; rejects only for
    /// a bad call, or with `unknown_task` (before the turn starts) when the engine does not hold
    /// the handle's revision.
    async fn chat = chat(handle: TaskHandle, input: AgentInput, options: ChatOptions, on_event: Callback<AgentEvent>) -> ChatStep;

    /// How full a held chat's context is for the options' chat profile: only the messages not
    /// counted before are counted.
    sync fn chatContext = chat_context(handle: TaskHandle, options: ChatOptions) -> ContextStatus;

    /// Undoes a condensation of a held task, a chat or a conversation file as its handle names:
    /// of a chat, the one `condenseId` names (the last one when it is absent), its change dated
    /// `nowMs`; of a file, its last one (`condenseId`, when given, must name it). The hidden
    /// messages come back as the task's next revision.
    sync fn undo = undo(handle: TaskHandle, condense_id: Option<String>, now_ms: f64) -> Undone;

    /// Pins (or unpins) a message of a held chat, with its tool-pair partners: no condensation
    /// hides or edits a pinned message.
    sync fn pinMessage = pin_message(handle: TaskHandle, id: String, pinned: bool, now_ms: f64) -> ChatPin;

    /// Previews a condensation of a held task with the options' provider: runs it (an LLM summary
    /// is written now, once) without applying it, and keeps it in the engine under its
    /// `condense_id` until `applyPreview` names it (a new preview of the task replaces it). The
    /// options are a chat's (`chat`'s, its model writing the summary) when the handle names a
    /// chat, `condense`'s when it names a conversation file. `onEstimate` gets the provider's
    /// estimate (tokens before, the estimated cost) before the provider runs. Resolves with what
    /// to show, or why there is nothing to apply; the task is not changed.
    async fn preview = preview(handle: TaskHandle, options: PreviewOptions, on_estimate: Callback<PreviewEstimate>) -> PreviewOutcome;

    /// Applies the preview `previewId` of a held task exactly as shown (no LLM call), a chat or a
    /// conversation file as its handle names (a chat's change dated `nowMs`); fails with
    /// `invalid_input` when the task changed since, or the engine keeps no such preview.
    sync fn applyPreview = apply_preview(handle: TaskHandle, preview_id: String, now_ms: f64) -> Applied;
}

fn chat_call(call: ChatOptions) -> Result<ChatOptions, JsValue> {
    call.auto.validate().map_err(|m| core_error(&CondenseError::InvalidInput(m)))?;
    call.llm.profile.validate().map_err(|e| llm_error(&e))?;
    Ok(call)
}

fn new_chat(inner: &Rc<Inner>, id: String, now_ms: f64) -> Result<ChatChange, JsValue> {
    let task = ChatTask::new(id.clone(), now_ms as i64);
    let handle = inner.held.borrow_mut().hold(&id, HeldItem::Chat(task.clone()));
    Ok(ChatChange::between(&[], &[], handle, task))
}

fn hold(inner: &Rc<Inner>, kind: HeldKind, id: String, value: HeldValue) -> Result<TaskHandle, JsValue> {
    let item = match kind {
        HeldKind::Conversation => HeldItem::Doc(ConversationValue::from_js(value.0, "value")?.0),
        HeldKind::Chat => {
            let task: ChatTask = with_json_text(&value.0, "the chat", |text| {
                serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text)).map_err(|e| {
                    error(ErrorKind::InvalidInput, &format!("the chat at {}: {}", e.path(), e.inner()))
                })
            })??;
            if task.id != id {
                return Err(error(
                    ErrorKind::InvalidInput,
                    &format!("the chat's id is {}, not the id {id} it is held under", task.id),
                ));
            }
            HeldItem::Chat(task)
        }
    };
    Ok(inner.held.borrow_mut().hold(&id, item))
}

fn release(inner: &Rc<Inner>, id: String) -> Result<bool, JsValue> {
    Ok(inner.held.borrow_mut().release(&id))
}

/// Whether the task under `handle` is a chat (else a conversation file), or `unknown_task`.
fn is_chat(inner: &Inner, handle: &TaskHandle) -> Result<bool, JsValue> {
    match inner.held.borrow_mut().get(handle).map(|h| &h.item) {
        Some(HeldItem::Chat(_)) => Ok(true),
        Some(HeldItem::Doc(_)) => Ok(false),
        None => Err(unknown(handle)),
    }
}

async fn preview(
    inner: Rc<Inner>,
    handle: TaskHandle,
    options: PreviewOptions,
    on_estimate: Callback<PreviewEstimate>,
) -> Result<PreviewOutcome, JsValue> {
    if is_chat(&inner, &handle)? {
        let options = ChatOptions::from_js(options.0, "options")?;
        preview_chat(inner, handle, options, on_estimate).await
    } else {
        let options = Option::<CondenseOptions>::from_js(options.0, "options")?;
        preview_file(inner, handle, options, on_estimate).await
    }
}

fn chat_context(
    inner: &Rc<Inner>,
    handle: TaskHandle,
    options: ChatOptions,
) -> Result<ContextStatus, JsValue> {
    let call = chat_call(options)?;
    let counter = inner.counter(&call.llm.profile.model);
    let mut held = inner.held.borrow_mut();
    let entry = held.get(&handle).ok_or_else(|| unknown(&handle))?;
    let HeldItem::Chat(task) = &entry.item else { return Err(unknown(&handle)) };
    let counter = entry.counter(counter.as_ref());
    Ok(task.context_status(&call.llm.profile, &call.auto, &counter))
}

fn undo(
    inner: &Rc<Inner>,
    handle: TaskHandle,
    condense_id: Option<String>,
    now_ms: f64,
) -> Result<Undone, JsValue> {
    if !is_chat(inner, &handle)? {
        let (handle, condense_id) = undo_file(inner, &handle, condense_id.as_deref())?;
        return Ok(Undone::File { handle, condense_id });
    }
    let (change, condense_id) = change_chat(inner, &handle, |task| {
        task.undo(condense_id.as_deref(), now_ms as i64)
            .ok_or_else(|| error(ErrorKind::NothingToUndo, "the chat has no such condensation to undo"))
    })?;
    inner.host.log("info", &format!("chat {}: undid condensation {condense_id}", handle.id));
    Ok(Undone::Chat { change: Box::new(change), condense_id })
}

fn pin_message(
    inner: &Rc<Inner>,
    handle: TaskHandle,
    id: String,
    pinned: bool,
    now_ms: f64,
) -> Result<ChatPin, JsValue> {
    let (change, changed) =
        change_chat(inner, &handle, |task| task.pin(&id, pinned, now_ms as i64).map_err(|e| core_error(&e)))?;
    Ok(ChatPin { change, changed })
}

fn apply_preview(
    inner: &Rc<Inner>,
    handle: TaskHandle,
    preview_id: String,
    now_ms: f64,
) -> Result<Applied, JsValue> {
    if !is_chat(inner, &handle)? {
        return Ok(Applied::File { handle: apply_file_preview(inner, &handle, &preview_id)? });
    }
    let preview = inner.held.borrow_mut().take_preview(&handle.id, &preview_id).ok_or_else(|| {
        error(
            ErrorKind::InvalidInput,
            &format!("the engine keeps no preview {preview_id} of this chat: preview the condensation again"),
        )
    })?;
    let applied = change_chat(inner, &handle, |task| {
        task.apply_preview(&preview, now_ms as i64).map_err(|e| core_error(&e))
    });
    let (change, record) = match applied {
        Ok(applied) => applied,
        Err(e) => {
            inner.held.borrow_mut().restore_preview(&handle.id, preview);
            return Err(e);
        }
    };
    inner.host.log(
        "info",
        &format!(
            "chat {}: applied the previewed condensation {} ({} → {} tokens)",
            handle.id, record.condense_id, record.tokens_before, record.tokens_after
        ),
    );
    Ok(Applied::Chat { change: Box::new(change), record: Box::new(record) })
}

/// Changes a copy of the held chat under `handle` with `f`; on success holds the copy and says
/// what changed. A failure changes nothing.
fn change_chat<R>(
    inner: &Inner,
    handle: &TaskHandle,
    f: impl FnOnce(&mut ChatTask) -> Result<R, JsValue>,
) -> Result<(ChatChange, R), JsValue> {
    let mut task = with_held_chat(inner, handle, ChatTask::clone)?;
    let out = f(&mut task)?;
    Ok((hold_changed(inner, handle, task)?, out))
}

/// Holds `task` as the next revision of the chat under `handle`: what changed against the
/// revision the handle names, which is the host's copy.
fn hold_changed(inner: &Inner, handle: &TaskHandle, task: ChatTask) -> Result<ChatChange, JsValue> {
    // The revision before, shared rather than copied. Changed meanwhile (held again, evicted):
    // the host gets every message whole.
    let before = inner.held.borrow_mut().get(handle).map(Rc::clone);
    let before = match before.as_deref().map(|h| &h.item) {
        Some(HeldItem::Chat(t)) => t.conversation.messages.as_slice(),
        _ => &[],
    };
    let id = task.id.clone();
    let handle = inner.held.borrow_mut().hold(&id, HeldItem::Chat(task));
    let mut held = inner.held.borrow_mut();
    let Some(HeldItem::Chat(task)) = held.get(&handle).map(|h| &h.item) else { return Err(unknown(&handle)) };
    Ok(ChatChange::between(before, &task.conversation.messages, handle.clone(), without_messages(task)))
}

#[expect(clippy::await_holding_refcell_ref, reason = "see `condense`")]
async fn preview_chat(
    inner: Rc<Inner>,
    handle: TaskHandle,
    options: ChatOptions,
    on_estimate: Callback<PreviewEstimate>,
) -> Result<PreviewOutcome, JsValue> {
    let task = with_held_chat(&inner, &handle, ChatTask::clone)?;
    let call = chat_call(options)?;
    let counter = inner.counter(&call.llm.profile.model);
    let llm = inner.client(call.llm)?;
    let condensing = call.condensing_llm.map(|t| inner.client(t)).transpose()?;
    let abort = inner.begin(Some(&task.id));
    let manager = inner.manager();
    let provider = call.provider.clone().unwrap_or_else(|| manager.default_provider().to_owned());
    // The chat model writes the summary on the chat's own conversation, as a run would, and the
    // preview says what the cache-aware policy weighs.
    let live = condensing.is_none().then(|| live_request(&task));
    let services = Services::new(counter.as_ref(), inner.host.as_ref())
        .with_abort(&abort)
        .with_timer(&JsTimer)
        .with_llm(condensing.as_deref().unwrap_or(llm.as_ref()))
        .with_live(live.as_ref());
    let policy = weigh_condensation(
        &task,
        &Turn {
            llm: llm.as_ref(),
            condensing_llm: condensing.as_deref(),
            manager: &manager,
            provider: Some(&provider),
            auto: &call.auto,
            tokens: counter.as_ref(),
            clock: inner.host.as_ref(),
            abort: &abort,
            now_ms: call.now_ms as i64,
        },
    );
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
        on_estimate.call(estimate);
    };
    let mut outcome: PreviewOutcome = preview_conversation(
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
    if let PreviewOutcome::Ready { preview } = &mut outcome {
        preview.policy = policy;
    }
    drop(manager);
    inner.end(&abort);
    inner.held.borrow_mut().keep_outcome(&handle.id, &outcome);
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
    Ok(outcome)
}

// As in `condense`, the shared borrow of the manager is held through the turn on purpose.
#[expect(clippy::await_holding_refcell_ref, reason = "see `condense`")]
async fn turn(
    inner: Rc<Inner>,
    task: ChatTask,
    input: AgentInput,
    call: ChatOptions,
    on_event: Callback<AgentEvent>,
) -> Result<ChatTask, JsValue> {
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
                crate::panic::test_panic(&message.text());
            }
            on_event.call(&event);
        })
        .await;
    drop(manager);
    inner.end(&abort);
    Ok(agent.into_task())
}

/// Runs a turn on a copy of the held chat, then holds the result.
async fn chat(
    inner: Rc<Inner>,
    handle: TaskHandle,
    input: AgentInput,
    options: ChatOptions,
    on_event: Callback<AgentEvent>,
) -> Result<ChatStep, JsValue> {
    let task = with_held_chat(&inner, &handle, ChatTask::clone)?;
    let call = chat_call(options)?;
    let task = turn(Rc::clone(&inner), task, input, call.clone(), on_event).await?;
    let change = hold_changed(&inner, &handle, task)?;
    // The status with the held counts: what the turn added is counted once, here.
    let context = chat_context(&inner, change.handle.clone(), call)?;
    Ok(ChatStep { change, context })
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
