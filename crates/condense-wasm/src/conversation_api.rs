//! `CondenseEngine`'s one-shot calls on a conversation given as a value (text or object, any
//! supported format): parse, count, and render the manual provider's request. A condensation
//! acts on a held task (`held_api.rs`): the engine keeps its result.

use std::rc::Rc;

use condense_core::formats::parse_conversation;
use condense_core::tokens::TokenReport;
use condense_core::{Conversation, ErrorKind, TiktokenCounter, TokenCounter};
use condense_protocol::calls::{CondenseOptions, DEFAULT_MODEL};
use wasm_bindgen::prelude::*;

use crate::convert::{core_error, error, json_string};
use crate::engine::{CondenseEngine, Inner};
use crate::surface::{FromJs, engine_api};
use crate::text::with_text;

crate::surface::data!(Conversation, TokenReport);

/// A conversation given as text or as an object (as its `JSON.stringify` text), in any supported
/// format, read into this project's format. The text is read into the shared buffer of
/// `text.rs`, not a fresh copy.
pub(crate) struct ConversationValue(pub(crate) Conversation);

/// Calls `f` with the JSON text of `value`, `what` (`the conversation`): the string itself, or an
/// object's `JSON.stringify` text, read into the shared buffer of `text.rs` rather than a fresh
/// copy.
pub(crate) fn with_json_text<R>(
    value: &JsValue,
    what: &str,
    f: impl FnOnce(&str) -> R,
) -> Result<R, JsValue> {
    let json;
    let text = if value.is_string() {
        value
    } else {
        json = JsValue::from(json_string(value, what)?);
        &json
    };
    with_text(text, f).ok_or_else(|| error(ErrorKind::Internal, &format!("{what}'s text could not be read")))
}

impl FromJs for ConversationValue {
    fn from_js(value: JsValue, _name: &str) -> Result<Self, JsValue> {
        with_json_text(&value, "the conversation", |text| {
            crate::panic::test_panic(text);
            parse_conversation(text)
        })?
        .map(|p| ConversationValue(p.conversation))
        .map_err(|e| error(ErrorKind::InvalidInput, &format!("the conversation: {e}")))
    }
    fn ts() -> String {
        format!("{} | object | string", <Conversation as FromJs>::ts())
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
