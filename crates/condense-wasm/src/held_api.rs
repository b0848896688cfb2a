//! `CondenseEngine`'s conversation files, held by the engine (see [`crate::held`]) and named by a
//! handle: count one, condense it, read it back as text; and a file's side of the calls that act
//! on chats and files alike (`preview`, `applyPreview`, `undo` in `chat_api.rs`). A call naming a
//! file by a handle the engine does not hold at that revision fails with `unknown_task`, and the
//! host holds the file again.

use std::rc::Rc;

use condense_core::agent::{PreviewEstimate, PreviewOutcome, apply_to, preview_conversation};
use condense_core::host::Clock;
use condense_core::model::undo_last;
use condense_core::{CondensationResult, Conversation, ErrorKind, Services, TokenCounter};
use condense_protocol::calls::{CondenseOptions, DEFAULT_MODEL, HeldCondensation, HeldCount, TaskHandle};
use wasm_bindgen::prelude::*;

use crate::convert::{core_error, error};
use crate::engine::{CondenseEngine, Inner};
use crate::held::{Held, HeldItem};
use crate::host::{JsHost, JsTimer, next_turn};
use crate::surface::{Callback, engine_api};

crate::surface::data!(HeldCount, HeldCondensation, CondenseOptions);

/// How long one slice of `countHeld` counts before the host's thread gets a turn: well under the
/// 50 ms a user notices a stalled editor after, over the cost of a turn.
const COUNT_SLICE_MS: f64 = 12.0;

/// The error of a handle the engine does not hold.
pub(crate) fn unknown(handle: &TaskHandle) -> JsValue {
    error(
        ErrorKind::UnknownTask,
        &format!(
            "the engine does not hold task {} at revision {}: hold it again",
            handle.id, handle.revision
        ),
    )
}

engine_api! {
    impl CondenseEngine;

    /// Tokens of a held conversation's API view (system prompt and reply priming included, as
    /// `countTokens`'s `total_tokens`) for a model (default `gpt-4o`).
    sync fn heldTokens = held_tokens(handle: TaskHandle, model: Option<String>) -> usize;

    /// `heldTokens` in slices: the messages not counted yet are counted about 12 ms of the
    /// host's clock at a time, with a turn of the host's event loop between slices, so that the
    /// first count of a large file (a million tokens, or one message of a megabyte) never holds
    /// the host's thread for long; the counts are kept. Resolves with the tokens and the number
    /// of messages.
    async fn countHeld = count_held(handle: TaskHandle, model: Option<String>) -> HeldCount;

    /// Condenses a held conversation file in the engine with the options' provider. Its messages
    /// stay in the engine as the file's next revision (the result's `handle`; `heldText` gives
    /// its text); the result carries the summary, cost, tokens after and metrics. A failed run
    /// changes nothing and resolves with the call's handle and the error; rejects only for a bad
    /// call (an unknown or disabled provider, a chat's handle: a chat condenses through `chat`,
    /// its input `condense`).
    async fn condense = condense(handle: TaskHandle, options: Option<CondenseOptions>) -> HeldCondensation;

    /// A held conversation as the text of a conversation file: this project's format, JSON
    /// indented by two spaces (what a file gets written with).
    sync fn heldText = held_text(handle: TaskHandle) -> String;
}

/// The held task under `handle`, shared, or `unknown_task`.
fn held(inner: &Inner, handle: &TaskHandle) -> Result<Rc<Held>, JsValue> {
    inner.held.borrow_mut().get(handle).map(Rc::clone).ok_or_else(|| unknown(handle))
}

/// The held conversation file under `handle`: a chat is refused.
fn held_doc(inner: &Inner, handle: &TaskHandle) -> Result<Rc<Held>, JsValue> {
    let held = held(inner, handle)?;
    match held.item {
        HeldItem::Doc(_) => Ok(held),
        HeldItem::Chat(_) => {
            Err(error(ErrorKind::InvalidInput, "the handle names a chat, not a conversation file"))
        }
    }
}

fn doc(held: &Held) -> &Conversation {
    match &held.item {
        HeldItem::Doc(c) => c,
        HeldItem::Chat(t) => &t.conversation,
    }
}

fn held_tokens(inner: &Rc<Inner>, handle: TaskHandle, model: Option<String>) -> Result<usize, JsValue> {
    let counter = inner.counter(model.as_deref().unwrap_or(DEFAULT_MODEL));
    let task = held(inner, &handle)?;
    let (system, messages) = task.request();
    Ok(task.counter(counter.as_ref()).count_request(system, &messages))
}

async fn count_held(
    inner: Rc<Inner>,
    handle: TaskHandle,
    model: Option<String>,
) -> Result<HeldCount, JsValue> {
    let held = held(&inner, &handle)?;
    let counter = inner.counter(model.as_deref().unwrap_or(DEFAULT_MODEL));
    let counter = held.counter(counter.as_ref());
    let mut at = 0;
    loop {
        let (_, messages) = held.request();
        let start = inner.host.now_ms();
        while at < messages.len() && inner.host.now_ms() - start < COUNT_SLICE_MS {
            counter.count_message(messages[at]);
            at += 1;
        }
        if at >= messages.len() {
            break;
        }
        next_turn().await;
    }
    let (system, messages) = held.request();
    Ok(HeldCount { tokens: counter.count_request(system, &messages), messages: held.item.messages().len() })
}

fn held_text(inner: &Rc<Inner>, handle: TaskHandle) -> Result<String, JsValue> {
    let held = held_doc(inner, &handle)?;
    serde_json::to_string_pretty(doc(&held))
        .map_err(|e| error(ErrorKind::Internal, &format!("cannot write the conversation: {e}")))
}

/// Previews a condensation of the held conversation file under `handle`; `preview` (in
/// `chat_api`, which names chats and files alike) calls it for a file.
#[expect(clippy::await_holding_refcell_ref, reason = "see `condense`")]
pub(crate) async fn preview_file(
    inner: Rc<Inner>,
    handle: TaskHandle,
    options: Option<CondenseOptions>,
    on_estimate: Callback<PreviewEstimate>,
) -> Result<PreviewOutcome, JsValue> {
    let held = held_doc(&inner, &handle)?;
    let call = options.unwrap_or_default();
    let counter = inner.counter(call.model());
    let counter = held.counter(counter.as_ref());
    let client = call.llm.clone().map(|target| inner.client(target)).transpose()?;
    let abort = inner.begin(None);
    let mut services = Services::new(&counter, inner.host.as_ref()).with_abort(&abort).with_timer(&JsTimer);
    if let Some(c) = &client {
        services = services.with_llm(c.as_ref());
    }
    let manager = inner.manager();
    let provider = call.provider.clone().unwrap_or_else(|| manager.default_provider().to_owned());
    let mut estimated = |estimate: &PreviewEstimate| on_estimate.call(estimate);
    let outcome: PreviewOutcome = preview_conversation(
        &handle.id,
        doc(&held),
        &manager,
        &provider,
        call.options(),
        services,
        &mut estimated,
    )
    .await
    .into();
    drop(manager);
    inner.end(&abort);
    inner.held.borrow_mut().keep_outcome(&handle.id, &outcome);
    Ok(outcome)
}

/// Applies the preview `preview_id` of the held conversation under `handle` exactly as shown: its
/// next revision's handle. `applyPreview` (in `chat_api`, which names chats and files alike) calls
/// it for a file.
pub(crate) fn apply_file_preview(
    inner: &Rc<Inner>,
    handle: &TaskHandle,
    preview_id: &str,
) -> Result<TaskHandle, JsValue> {
    let held = held_doc(inner, handle)?;
    let preview = inner.held.borrow_mut().take_preview(&handle.id, preview_id).ok_or_else(|| {
        error(
            ErrorKind::InvalidInput,
            &format!("the engine keeps no preview {preview_id} of this file: preview the condensation again"),
        )
    })?;
    let conversation = doc(&held);
    match apply_to(conversation, &preview) {
        Ok(messages) => {
            let condensed = Conversation { messages, ..conversation.clone() };
            Ok(inner.held.borrow_mut().hold(&handle.id, HeldItem::Doc(condensed)))
        }
        Err(e) => {
            inner.held.borrow_mut().restore_preview(&handle.id, preview);
            Err(core_error(&e))
        }
    }
}

/// Undoes the last condensation of the held conversation under `handle` (`condense_id`, when
/// given, must name it): its hidden messages come back as the next revision. `undo` (in
/// `chat_api`, which names chats and files alike) calls it for a file.
pub(crate) fn undo_file(
    inner: &Rc<Inner>,
    handle: &TaskHandle,
    condense_id: Option<&str>,
) -> Result<(TaskHandle, String), JsValue> {
    let held = held_doc(inner, handle)?;
    let conversation = doc(&held);
    let (undone_id, messages) = undo_last(&conversation.messages)
        .ok_or_else(|| error(ErrorKind::NothingToUndo, "the conversation has no condensation to undo"))?;
    if let Some(want) = condense_id.filter(|want| *want != undone_id) {
        return Err(error(
            ErrorKind::NothingToUndo,
            &format!("a conversation file undoes its last condensation only ({undone_id}), not {want}"),
        ));
    }
    inner.host.log("info", &format!("undid condensation {undone_id}"));
    let undone = Conversation { messages, ..conversation.clone() };
    let handle = inner.held.borrow_mut().hold(&handle.id, HeldItem::Doc(undone));
    Ok((handle, undone_id))
}

// The shared borrow of the manager is held through the run on purpose, as in `condense`; the held
// task is shared (`Rc`), so no borrow of the held tasks is kept across the await.
#[expect(clippy::await_holding_refcell_ref, reason = "see above")]
async fn condense(
    inner: Rc<Inner>,
    handle: TaskHandle,
    options: Option<CondenseOptions>,
) -> Result<HeldCondensation, JsValue> {
    let call = options.unwrap_or_default();
    let held = held(&inner, &handle)?;
    let HeldItem::Doc(conversation) = &held.item else {
        return Err(error(
            ErrorKind::InvalidInput,
            "a held chat condenses through `chat` (its input `condense`), not `condense`",
        ));
    };
    // The engine's counter for the model, answering the held messages from their held counts.
    let counter = inner.counter(call.model());
    let counter = held.counter(counter.as_ref());
    let options = call.options();
    let provider = call.provider.clone();
    let client = call.llm.map(|target| inner.client(target)).transpose()?;
    let abort = inner.begin(None);
    let mut services = Services::new(&counter, inner.host.as_ref()).with_abort(&abort).with_timer(&JsTimer);
    if let Some(c) = &client {
        services = services.with_llm(c.as_ref());
    }
    let manager = inner.manager();
    let outcome = manager.condense(conversation, provider.as_deref(), options, services).await;
    drop(manager);
    inner.end(&abort);
    let result = outcome.map_err(|e| core_error(&e))?;
    log_result(&inner.host, &result);
    let handle = match result.error {
        Some(_) => handle,
        None => {
            let condensed = Conversation {
                format: conversation.format.clone(),
                system: conversation.system.clone(),
                tools: conversation.tools.clone(),
                messages: result.messages,
            };
            inner.held.borrow_mut().hold(&handle.id, HeldItem::Doc(condensed))
        }
    };
    Ok(HeldCondensation {
        handle,
        summary: result.summary,
        cost: result.cost,
        new_context_tokens: result.new_context_tokens,
        error: result.error,
        metrics: result.metrics,
    })
}

/// The log line of a file's condensation: its figures, or why it failed.
fn log_result(host: &JsHost, result: &CondensationResult) {
    let Some(metrics) = &result.metrics else { return };
    match &result.error {
        None => host.log(
            "info",
            &format!(
                "condensed with {}: {} tokens after, {} saved, cost ${:.6}, {:.0} ms",
                metrics.provider_id,
                result.new_context_tokens.unwrap_or(0),
                metrics.tokens_saved.unwrap_or(0),
                result.cost,
                metrics.time_elapsed_ms
            ),
        ),
        Some(e) => host.log(
            "warn",
            &format!("condensation with {} failed: {}: {}", metrics.provider_id, e.kind, e.message),
        ),
    }
}
