//! `CondenseEngine`'s one-shot calls on a conversation given as a value (text or object, any
//! supported format): parse, count, condense, and render the manual provider's request. What the
//! extension's public API offers other extensions; the extension's own files go through the held
//! calls of `held_api.rs`.

use std::rc::Rc;

use condense_core::formats::parse_conversation;
use condense_core::tokens::TokenReport;
use condense_core::{CondensationResult, Conversation, ErrorKind, Services, TiktokenCounter, TokenCounter};
use condense_protocol::calls::{CondensationDocument, CondenseOptions, DEFAULT_MODEL};
use wasm_bindgen::prelude::*;

use crate::convert::{core_error, error, json_string};
use crate::engine::{CondenseEngine, Inner};
use crate::host::{JsHost, JsTimer};
use crate::surface::{FromJs, engine_api};
use crate::text::with_text;

crate::surface::data!(Conversation, TokenReport, CondensationDocument);

/// A conversation given as text or as an object (as its `JSON.stringify` text), in any supported
/// format, read into this project's format. The text is read into the shared buffer of
/// `text.rs`, not a fresh copy.
pub(crate) struct ConversationValue(pub(crate) Conversation);

impl FromJs for ConversationValue {
    fn from_js(value: JsValue, _name: &str) -> Result<Self, JsValue> {
        let json;
        let text = if value.is_string() {
            &value
        } else {
            json = JsValue::from(json_string(&value, "the conversation")?);
            &json
        };
        with_text(text, |text| {
            crate::panic::test_panic(text);
            parse_conversation(text)
        })
        .ok_or_else(|| error(ErrorKind::Internal, "the conversation's text could not be read"))?
        .map(|p| ConversationValue(p.conversation))
        .map_err(|e| error(ErrorKind::InvalidInput, &format!("the conversation: {e}")))
    }
    fn ts() -> String {
        "ConversationInput | object | string".into()
    }
}

/// A text to count, read into the shared buffer of `text.rs` rather than a fresh copy.
pub(crate) struct Text(JsValue);

impl FromJs for Text {
    fn from_js(value: JsValue, _name: &str) -> Result<Self, JsValue> {
        if value.is_string() {
            Ok(Text(value))
        } else {
            Err(error(ErrorKind::InvalidInput, "the text is not a string"))
        }
    }
    fn ts() -> String {
        "string".into()
    }
}

engine_api! {
    impl CondenseEngine;

    /// Reads a conversation (this project's format, OpenAI chat, or Anthropic messages; as text
    /// or as an object) and returns it in this project's format.
    sync fn parseConversation = parse(value: ConversationValue) -> Conversation;

    /// Tokens of the conversation's API view for a model (default `gpt-4o`).
    sync fn countTokens = count_tokens(value: ConversationValue, model: Option<String>) -> TokenReport;

    /// Tokens of a plain text for a model (default `gpt-4o`): exactly tiktoken's
    /// `encode_ordinary(text).length` in the model's encoding, no framing added.
    sync fn countText = count_text(text: Text, model: Option<String>) -> usize;

    /// Condenses a conversation. Resolves with the result, whose `messages` are the whole new
    /// conversation (the original ones, untouched, when `error` is set) and which carries the
    /// system prompt, so it is a conversation itself. Rejects only for a bad call: unreadable
    /// input, an unknown or disabled provider.
    async fn condense = condense(value: ConversationValue, options: Option<CondenseOptions>) -> CondensationDocument;

    /// The prompt of the manual provider, to copy into any chat.
    sync fn renderManualRequest = render_manual_request(value: ConversationValue, options: Option<CondenseOptions>) -> String;
}

fn parse(_inner: &Rc<Inner>, value: ConversationValue) -> Result<Conversation, JsValue> {
    Ok(value.0)
}

fn count_tokens(
    inner: &Rc<Inner>,
    value: ConversationValue,
    model: Option<String>,
) -> Result<TokenReport, JsValue> {
    let model = model.as_deref().unwrap_or(DEFAULT_MODEL);
    // The engine's counter for the model's encoding: its cache outlives the call.
    Ok(TokenReport::counted(&value.0, model, inner.counter(model).as_ref()))
}

fn count_text(inner: &Rc<Inner>, text: Text, model: Option<String>) -> Result<usize, JsValue> {
    let counter = inner.counter(model.as_deref().unwrap_or(DEFAULT_MODEL));
    with_text(&text.0, |text| counter.count_text(text))
        .ok_or_else(|| error(ErrorKind::InvalidInput, "the text is not a string"))
}

fn render_manual_request(
    _inner: &Rc<Inner>,
    value: ConversationValue,
    options: Option<CondenseOptions>,
) -> Result<String, JsValue> {
    let conversation = value.0;
    let call = options.unwrap_or_default();
    let counter = TiktokenCounter::for_model(call.model());
    condense_core::providers::manual::render_request(
        &conversation.messages,
        conversation.system.as_deref(),
        &call.options(),
        &counter,
    )
    .map_err(|e| core_error(&e))
}

// The shared borrow of the manager is held through the run on purpose: condensations run side by
// side, and a settings change meanwhile gets a `busy` error (see `Inner::manager_mut`).
#[expect(clippy::await_holding_refcell_ref, reason = "see above")]
async fn condense(
    inner: Rc<Inner>,
    value: ConversationValue,
    options: Option<CondenseOptions>,
) -> Result<CondensationDocument, JsValue> {
    let conversation = value.0;
    let call = options.unwrap_or_default();
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
    Ok(CondensationDocument { result, system: conversation.system, tools: conversation.tools })
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
