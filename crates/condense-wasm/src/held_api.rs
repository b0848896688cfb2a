//! `CondenseEngine`'s held tasks (see [`crate::held`]): hold a chat or a conversation file, append
//! to it, count it, condense it and read it back as text, release it. A call naming a task by a
//! handle the engine does not hold at that revision fails with `unknown_task`, and the host sends
//! the full task again.

use std::rc::Rc;

use condense_core::agent::ChatTask;
use condense_core::host::Clock;
use condense_core::{Conversation, ErrorKind, Message, Services, TokenCounter};
use condense_protocol::calls::{DEFAULT_MODEL, HeldCondensation, HeldCount, TaskHandle};
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::conversation_api::{call_options, conversation, log_result};
use crate::convert::{core_error, error, from_js, to_js};
use crate::engine::{CondenseEngine, Inner};
use crate::held::HeldItem;
use crate::host::{JsTimer, next_turn};

/// How long one slice of `countHeld` counts before the host's thread gets a turn: well under the
/// 50 ms a user notices a stalled editor after, over the cost of a turn.
const COUNT_SLICE_MS: f64 = 12.0;

/// A chat given either whole or by the handle of the engine's copy.
pub(crate) enum TaskRef {
    Handle(TaskHandle),
    Task(Box<ChatTask>),
}

/// Reads a chat task or a handle: an object with a `revision` and no `conversation` is a handle.
pub(crate) fn task_ref(value: &JsValue) -> Result<TaskRef, JsValue> {
    let has = |key: &str| js_sys::Reflect::has(value, &key.into()).unwrap_or(false);
    if value.is_object() && has("revision") && !has("conversation") {
        return Ok(TaskRef::Handle(from_js(value, "the task handle")?));
    }
    Ok(TaskRef::Task(Box::new(from_js(value, "the chat task")?)))
}

/// The error of a handle the engine does not hold.
pub(crate) fn unknown(handle: &TaskHandle) -> JsValue {
    error(
        ErrorKind::UnknownTask,
        &format!(
            "the engine does not hold task {} at revision {}: send the full task",
            handle.id, handle.revision
        ),
    )
}

#[wasm_bindgen]
impl CondenseEngine {
    /// Keeps a copy of a chat task in the engine and returns its handle, which `chat`,
    /// `chatHeld` and `chatContext` take in place of the task. Replaces what was held under the
    /// task's id; the counts of unchanged messages are kept.
    #[wasm_bindgen(js_name = holdChat, unchecked_return_type = "TaskHandle")]
    pub fn hold_chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatTaskInput")] task: JsValue,
    ) -> Result<JsValue, JsValue> {
        let task: ChatTask = from_js(&task, "the chat task")?;
        let id = task.id.clone();
        to_js(&self.inner.held.borrow_mut().hold(&id, HeldItem::Chat(task)))
    }

    /// Keeps a conversation (text or object, any supported format) under the host's `id` (a
    /// document's URI) and returns its handle for `heldTokens`. Holding the new text of the same
    /// id later recounts only the messages that changed.
    #[wasm_bindgen(js_name = holdConversation, unchecked_return_type = "TaskHandle")]
    pub fn hold_conversation(
        &self,
        id: &str,
        #[wasm_bindgen(unchecked_param_type = "ConversationInput | object | string")] value: JsValue,
    ) -> Result<JsValue, JsValue> {
        let conversation = conversation(&value)?;
        to_js(&self.inner.held.borrow_mut().hold(id, HeldItem::Doc(conversation)))
    }

    /// Appends messages to a held chat or conversation; returns its new handle.
    #[wasm_bindgen(js_name = appendMessages, unchecked_return_type = "TaskHandle")]
    pub fn append_messages(
        &self,
        #[wasm_bindgen(unchecked_param_type = "TaskHandle")] handle: JsValue,
        #[wasm_bindgen(unchecked_param_type = "MessageInput[]")] messages: JsValue,
    ) -> Result<JsValue, JsValue> {
        let handle: TaskHandle = from_js(&handle, "the task handle")?;
        let messages: Vec<Message> = from_js(&messages, "the messages")?;
        let mut held = self.inner.held.borrow_mut();
        let ids =
            held.get(&handle).ok_or_else(|| unknown(&handle))?.item.messages().iter().map(|m| m.id.clone());
        let known: std::collections::HashSet<String> = ids.collect();
        if let Some(m) = messages.iter().find(|m| known.contains(&m.id)) {
            return Err(error(
                ErrorKind::InvalidInput,
                &format!("the messages: id {} is already in the task", m.id),
            ));
        }
        to_js(&held.append(&handle, messages).ok_or_else(|| unknown(&handle))?)
    }

    /// Tokens of a held task's API view (system prompt and reply priming included, as
    /// `countTokens`'s `total_tokens`) for a model (default `gpt-4o`).
    #[wasm_bindgen(js_name = heldTokens)]
    pub fn held_tokens(
        &self,
        #[wasm_bindgen(unchecked_param_type = "TaskHandle")] handle: JsValue,
        model: Option<String>,
    ) -> Result<usize, JsValue> {
        let handle: TaskHandle = from_js(&handle, "the task handle")?;
        let inner = self.inner.counter(model.as_deref().unwrap_or(DEFAULT_MODEL));
        let mut held = self.inner.held.borrow_mut();
        let task = held.get(&handle).ok_or_else(|| unknown(&handle))?;
        let (system, messages) = task.request();
        Ok(task.counter(inner.as_ref()).count_request(system, &messages))
    }

    /// `heldTokens` in slices: the messages not counted yet are counted about
    /// [`COUNT_SLICE_MS`] of the host's clock at a time, with a turn of the host's event loop
    /// between slices, so that the first count of a large file (a million tokens, or one message
    /// of a megabyte) never holds the host's thread for long; the counts are kept, as
    /// `heldTokens` keeps them. Resolves with the tokens `heldTokens` answers and the number of
    /// messages. An unknown handle rejects.
    #[wasm_bindgen(js_name = countHeld, unchecked_return_type = "Promise<HeldCount>")]
    pub fn count_held(
        &self,
        #[wasm_bindgen(unchecked_param_type = "TaskHandle")] handle: JsValue,
        model: Option<String>,
    ) -> Result<Promise, JsValue> {
        let handle: TaskHandle = from_js(&handle, "the task handle")?;
        let held = Rc::clone(self.inner.held.borrow_mut().get(&handle).ok_or_else(|| unknown(&handle))?);
        let inner = Rc::clone(&self.inner);
        Ok(future_to_promise(async move {
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
            let count = HeldCount {
                tokens: counter.count_request(system, &messages),
                messages: held.item.messages().len(),
            };
            to_js(&count)
        }))
    }

    /// Condenses a held conversation (a handle from `holdConversation`) in the engine, as
    /// `condense` does the same conversation given whole: the same options, the same result but
    /// for its messages, which stay in the engine as the conversation's next revision (the
    /// result's `handle`; `heldText` gives its text). Only the handle and the options cross in,
    /// and the held counts of its messages are used. A failed run changes nothing and resolves
    /// with the call's handle and the error. An unknown handle, or a held chat (which condenses
    /// through `chatHeld`), rejects.
    #[wasm_bindgen(js_name = condenseHeld, unchecked_return_type = "Promise<HeldCondensation>")]
    pub fn condense_held(
        &self,
        #[wasm_bindgen(unchecked_param_type = "TaskHandle")] handle: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CondenseOptionsInput")] options: Option<JsValue>,
    ) -> Promise {
        future_to_promise(condense_held(Rc::clone(&self.inner), handle, options))
    }

    /// A held conversation as the text of a conversation file: this project's format, JSON
    /// indented by two spaces (what a file gets written with).
    #[wasm_bindgen(js_name = heldText)]
    pub fn held_text(
        &self,
        #[wasm_bindgen(unchecked_param_type = "TaskHandle")] handle: JsValue,
    ) -> Result<String, JsValue> {
        let handle: TaskHandle = from_js(&handle, "the task handle")?;
        let mut held = self.inner.held.borrow_mut();
        let task = held.get(&handle).ok_or_else(|| unknown(&handle))?;
        let HeldItem::Doc(conversation) = &task.item else {
            return Err(error(ErrorKind::InvalidInput, "the handle names a chat, not a conversation file"));
        };
        serde_json::to_string_pretty(conversation)
            .map_err(|e| error(ErrorKind::Internal, &format!("cannot write the conversation: {e}")))
    }

    /// Forgets a held task; whether the engine held one under that id.
    #[wasm_bindgen(js_name = releaseTask)]
    pub fn release_task(&self, id: &str) -> bool {
        self.inner.held.borrow_mut().release(id)
    }

    /// How many tasks the engine holds (at most eight: the least recently used goes first).
    #[wasm_bindgen(js_name = heldCount)]
    pub fn held_count(&self) -> usize {
        self.inner.held.borrow().len()
    }
}

// The shared borrow of the manager is held through the run on purpose, as in `condense`; the held
// task is shared (`Rc`), so no borrow of the held tasks is kept across the await.
#[expect(clippy::await_holding_refcell_ref, reason = "see above")]
async fn condense_held(
    inner: Rc<Inner>,
    handle: JsValue,
    options: Option<JsValue>,
) -> Result<JsValue, JsValue> {
    let handle: TaskHandle = from_js(&handle, "the task handle")?;
    let call = call_options(&options)?;
    let held = Rc::clone(inner.held.borrow_mut().get(&handle).ok_or_else(|| unknown(&handle))?);
    let HeldItem::Doc(conversation) = &held.item else {
        return Err(error(
            ErrorKind::InvalidInput,
            "a held chat condenses through chatHeld, not condenseHeld",
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
    to_js(&HeldCondensation {
        handle,
        summary: result.summary,
        cost: result.cost,
        new_context_tokens: result.new_context_tokens,
        error: result.error,
        metrics: result.metrics,
    })
}
