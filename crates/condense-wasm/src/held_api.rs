//! `CondenseEngine`'s held tasks (see [`crate::held`]): hold a chat or a conversation file, append
//! to it, count it, release it. A call naming a task by a handle the engine does not hold at that
//! revision fails with `unknown_task`, and the host sends the full task again.

use condense_core::agent::ChatTask;
use condense_core::{ErrorKind, Message, TokenCounter};
use condense_protocol::calls::{DEFAULT_MODEL, TaskHandle};
use wasm_bindgen::prelude::*;

use crate::conversation_api::conversation;
use crate::convert::{error, from_js, to_js};
use crate::engine::CondenseEngine;
use crate::held::HeldItem;

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
        let counter = task.counter(inner.as_ref());
        let (system, messages) = match &task.item {
            HeldItem::Chat(t) => (t.conversation.system.as_deref(), t.conversation.api_view()),
            HeldItem::Doc(c) => (c.system.as_deref(), c.api_view()),
        };
        Ok(counter.count_request(system, &messages))
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
