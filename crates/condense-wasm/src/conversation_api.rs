//! `CondenseEngine`'s conversations: parse any supported format, count tokens, condense, undo, and
//! render the manual provider's request.

use std::rc::Rc;

use condense_core::agent::{
    CondensationPreview, PreviewEstimate, PreviewOutcome, apply_to, preview_conversation,
};
use condense_core::formats::parse_conversation;
use condense_core::model::undo_last;
use condense_core::tokens::TokenReport;
use condense_core::{CondensationResult, Conversation, ErrorKind, Services, TiktokenCounter, TokenCounter};
use condense_protocol::calls::{CondensationDocument, CondenseOptions, DEFAULT_MODEL, UndoResult};
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::convert::{call_back, core_error, error, from_js, json_string, to_js};
use crate::engine::{CondenseEngine, Inner};
use crate::host::{JsHost, JsTimer};
use crate::text::with_text;

/// A conversation given as text or as an object (as its `JSON.stringify` text), in any supported
/// format. The text is read into the shared buffer of `text.rs`, not a fresh copy.
pub(crate) fn conversation(value: &JsValue) -> Result<Conversation, JsValue> {
    let json;
    let text = if value.is_string() {
        value
    } else {
        json = JsValue::from(json_string(value, "the conversation")?);
        &json
    };
    with_text(text, parse_conversation)
        .ok_or_else(|| error(ErrorKind::Internal, "the conversation's text could not be read"))?
        .map(|p| p.conversation)
        .map_err(|e| error(ErrorKind::InvalidInput, &format!("the conversation: {e}")))
}

pub(crate) fn call_options(options: &Option<JsValue>) -> Result<CondenseOptions, JsValue> {
    match options {
        Some(o) if !o.is_undefined() && !o.is_null() => from_js(o, "the options"),
        _ => Ok(CondenseOptions::default()),
    }
}

#[wasm_bindgen]
impl CondenseEngine {
    /// Reads a conversation (this project's format, OpenAI chat, or Anthropic messages; as text or
    /// as an object) and returns it in this project's format.
    #[wasm_bindgen(js_name = parseConversation, unchecked_return_type = "Conversation")]
    pub fn parse_conversation(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConversationInput | object | string")] value: JsValue,
    ) -> Result<JsValue, JsValue> {
        if let Some(text) = value.as_string() {
            crate::test_panic(&text);
        }
        to_js(&conversation(&value)?)
    }

    /// Tokens of the conversation's API view for a model (default `gpt-4o`).
    #[wasm_bindgen(js_name = countTokens, unchecked_return_type = "TokenReport")]
    pub fn count_tokens(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConversationInput | object | string")] value: JsValue,
        model: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let conversation = conversation(&value)?;
        let model = model.as_deref().unwrap_or(DEFAULT_MODEL);
        // The engine's counter for the model's encoding: its cache outlives the call.
        to_js(&TokenReport::counted(&conversation, model, self.inner.counter(model).as_ref()))
    }

    /// Tokens of a plain text for a model (default `gpt-4o`): exactly tiktoken's
    /// `encode_ordinary(text).length` in the model's encoding, no framing added. The text is
    /// written into a buffer kept for the purpose (see `text.rs`), not into a fresh allocation.
    #[wasm_bindgen(js_name = countText)]
    pub fn count_text(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        model: Option<String>,
    ) -> usize {
        let counter = self.inner.counter(model.as_deref().unwrap_or(DEFAULT_MODEL));
        let count = with_text(&text, |text| counter.count_text(text));
        // Not a `Result`: its return goes through an array the glue allocates on every call, a
        // few percent of a call on a short text. The error is thrown instead, once everything
        // this call holds is dropped (a throw unwinds without running destructors).
        drop((counter, model, text));
        count.unwrap_or_else(|| {
            wasm_bindgen::throw_val(error(ErrorKind::InvalidInput, "the text is not a string"))
        })
    }

    /// Condenses a conversation. Resolves with the result, whose `messages` are the whole new
    /// conversation (the original ones, untouched, when `error` is set) and which carries the
    /// system prompt, so it is a conversation itself. Rejects only for a bad call: unreadable
    /// input, an unknown or disabled provider.
    #[wasm_bindgen(unchecked_return_type = "Promise<CondensationDocument>")]
    pub fn condense(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConversationInput | object | string")] value: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CondenseOptionsInput")] options: Option<JsValue>,
    ) -> Promise {
        future_to_promise(condense(Rc::clone(&self.inner), value, options))
    }

    /// Previews a condensation of a conversation (a file's): runs the options' provider without
    /// applying it. `onEstimate` gets the provider's estimate (tokens before, the estimated cost)
    /// before the provider runs. Resolves with the preview, or why there is nothing to apply.
    #[wasm_bindgen(js_name = previewConversation, unchecked_return_type = "Promise<PreviewOutcome>")]
    pub fn preview_conversation(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConversationInput | object | string")] value: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CondenseOptionsInput")] options: Option<JsValue>,
        #[wasm_bindgen(unchecked_param_type = "((estimate: PreviewEstimate) => void) | undefined")]
        on_estimate: Option<Function>,
    ) -> Promise {
        future_to_promise(preview(Rc::clone(&self.inner), value, options, on_estimate))
    }

    /// The conversation with a preview applied exactly as shown (no LLM call), when it is still
    /// the conversation the preview was made from; else `invalid_input`.
    #[wasm_bindgen(js_name = applyPreviewToConversation, unchecked_return_type = "Conversation")]
    pub fn apply_preview_to_conversation(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConversationInput | object | string")] value: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CondensationPreviewInput")] preview: JsValue,
    ) -> Result<JsValue, JsValue> {
        let conversation = conversation(&value)?;
        let preview: CondensationPreview = from_js(&preview, "the preview")?;
        let messages = apply_to(&conversation, &preview).map_err(|e| core_error(&e))?;
        to_js(&Conversation { messages, ..conversation })
    }

    /// Undoes the last condensation: its summary goes, the messages it hid come back.
    #[wasm_bindgen(js_name = undoLast, unchecked_return_type = "UndoResult")]
    pub fn undo_last(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConversationInput | object | string")] value: JsValue,
    ) -> Result<JsValue, JsValue> {
        let conversation = conversation(&value)?;
        let (condense_id, messages) = undo_last(&conversation.messages)
            .ok_or_else(|| error(ErrorKind::NothingToUndo, "the conversation has no condensation to undo"))?;
        self.inner.host.log("info", &format!("undid condensation {condense_id}"));
        to_js(&UndoResult { condense_id, conversation: Conversation { messages, ..conversation } })
    }

    /// The prompt of the manual provider, to copy into any chat.
    #[wasm_bindgen(js_name = renderManualRequest)]
    pub fn render_manual_request(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConversationInput | object | string")] value: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CondenseOptionsInput")] options: Option<JsValue>,
    ) -> Result<String, JsValue> {
        let conversation = conversation(&value)?;
        let call = call_options(&options)?;
        let counter = TiktokenCounter::for_model(call.model());
        condense_core::providers::manual::render_request(
            &conversation.messages,
            conversation.system.as_deref(),
            &call.options(),
            &counter,
        )
        .map_err(|e| core_error(&e))
    }
}

// The shared borrow of the manager is held through the run on purpose: condensations run side by
// side, and a settings change meanwhile gets a `busy` error (see `Inner::manager_mut`).
#[expect(clippy::await_holding_refcell_ref, reason = "see above")]
async fn condense(inner: Rc<Inner>, value: JsValue, options: Option<JsValue>) -> Result<JsValue, JsValue> {
    let conversation = conversation(&value)?;
    let call = call_options(&options)?;
    // The engine's counter for the model: its per-message cache spans calls, so condensing the
    // same conversation again (another provider, a retry) counts only what changed.
    let counter = inner.counter(call.model());
    let options = call.options();
    let provider = call.provider.clone();
    let client = call.llm.map(|target| inner.client(target)).transpose()?;
    let abort = inner.begin(None);
    let mut services =
        Services::new(counter.as_ref(), inner.host.as_ref()).with_abort(&abort).with_timer(&JsTimer);
    if let Some(c) = &client {
        services = services.with_llm(c.as_ref());
    }
    let manager = inner.manager();
    let outcome = manager.condense(&conversation, provider.as_deref(), options, services).await;
    drop(manager);
    inner.end(&abort);
    let result = outcome.map_err(|e| core_error(&e))?;
    log_result(&inner.host, &result);
    to_js(&CondensationDocument { result, system: conversation.system, tools: conversation.tools })
}

#[expect(clippy::await_holding_refcell_ref, reason = "see `condense`")]
async fn preview(
    inner: Rc<Inner>,
    value: JsValue,
    options: Option<JsValue>,
    on_estimate: Option<Function>,
) -> Result<JsValue, JsValue> {
    let conversation = conversation(&value)?;
    let call = call_options(&options)?;
    let counter = TiktokenCounter::for_model(call.model());
    let client = call.llm.clone().map(|target| inner.client(target)).transpose()?;
    let abort = inner.begin(None);
    let mut services = Services::new(&counter, inner.host.as_ref()).with_abort(&abort).with_timer(&JsTimer);
    if let Some(c) = &client {
        services = services.with_llm(c.as_ref());
    }
    let manager = inner.manager();
    let provider = call.provider.clone().unwrap_or_else(|| manager.default_provider().to_owned());
    let mut estimated = |estimate: &PreviewEstimate| call_back(on_estimate.as_ref(), estimate);
    let outcome: PreviewOutcome = preview_conversation(
        "file",
        &conversation,
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
    to_js(&outcome)
}

pub(crate) fn log_result(host: &JsHost, result: &CondensationResult) {
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
