//! Context Condenser's core for JavaScript. The only crate that knows `JsValue`: it converts
//! values, injects the host's capabilities (see [`host`]) and forwards to `condense-core`.
//!
//! Data objects (conversations, results, profiles, prompt bundles) keep the core's JSON shape, the
//! one `schema/conversation.schema.json` publishes and the CLI reads and writes; call options are
//! camelCase like any JS API. Every failure is an `Error` with a `kind` (see
//! `CondenseError::kind`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use condense_core::agent::{
    AgentEvent, AgentInput, AutoCondense, ChatTask, ContextStatus, DefaultAgent, Turn,
};
use condense_core::formats::parse_conversation;
use condense_core::llm::{
    AbortSignal, HttpLlm, LlmError, LlmProfile, LlmProvider, PromptBundle, RetryPolicy, StreamChunk,
};
use condense_core::model::undo_last;
use condense_core::tokens::TokenReport;
use condense_core::{
    Clock, CondensationManager, CondensationOptions, CondenseError, Conversation, Encoding,
    ProviderConfigUpdate, Services, TiktokenCounter,
};
use futures::StreamExt;
use js_sys::{Function, Promise};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

mod convert;
mod host;
mod types;

use convert::{core_error, error, from_js, json_text, to_js};
use host::{JsHost, JsHttp, JsTimer};

/// The model whose tokenizer counts when the caller names none.
const DEFAULT_MODEL: &str = "gpt-4o";

#[wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}

/// An LLM to call: a profile and the key the host read from its secret storage for it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LlmTarget {
    profile: LlmProfile,
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    max_retries: Option<u32>,
}

/// The options of `condense`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct CondenseCall {
    provider: Option<String>,
    target_tokens: Option<usize>,
    keep_last: Option<usize>,
    is_automatic: bool,
    config: Option<serde_json::Value>,
    model: Option<String>,
    llm: Option<LlmTarget>,
}

impl CondenseCall {
    fn options(&self) -> CondensationOptions {
        CondensationOptions {
            target_tokens: self.target_tokens,
            keep_last: self.keep_last,
            is_automatic: self.is_automatic,
            config: self.config.clone().unwrap_or(serde_json::Value::Null),
        }
    }

    /// The tokenizer follows the model named, else the LLM's model.
    fn model(&self) -> &str {
        self.model.as_deref().or(self.llm.as_ref().map(|l| l.profile.model.as_str())).unwrap_or(DEFAULT_MODEL)
    }
}

/// What `undoLast` returns.
#[derive(Serialize)]
struct Undone {
    condense_id: String,
    conversation: Conversation,
}

/// What a streamed or whole completion ends with.
#[derive(Serialize)]
struct Completion {
    content: String,
    usage: Option<condense_core::llm::Usage>,
    finish_reason: Option<String>,
    /// US dollars, by the profile's prices; 0 when the server reported no usage.
    cost: f64,
}

/// The options of `chat` and `chatContext`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ChatCall {
    llm: LlmTarget,
    #[serde(default)]
    condensing_llm: Option<LlmTarget>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    auto: AutoCondense,
    now_ms: f64,
}

/// What a chat input ends with.
#[derive(Serialize)]
struct ChatOutcome {
    task: ChatTask,
    context: ContextStatus,
}

/// What `undoChat` returns.
#[derive(Serialize)]
struct ChatUndo {
    task: ChatTask,
    condense_id: String,
}

struct Inner {
    host: Rc<JsHost>,
    manager: RefCell<CondensationManager>,
    /// The abort signals of work in flight, each with its scope (a chat's id), fired by `cancel`.
    running: RefCell<Vec<(Option<String>, AbortSignal)>>,
    /// One counter per encoding, kept across calls: its per-message cache makes the check after
    /// a new message cost only that message.
    counters: RefCell<HashMap<Encoding, Rc<TiktokenCounter>>>,
}

impl Inner {
    fn counter(&self, model: &str) -> Rc<TiktokenCounter> {
        let encoding = Encoding::for_model(model);
        Rc::clone(
            self.counters
                .borrow_mut()
                .entry(encoding)
                .or_insert_with(|| Rc::new(TiktokenCounter::new(encoding))),
        )
    }

    fn client(&self, target: LlmTarget) -> Result<HttpLlm, JsValue> {
        let retry = RetryPolicy {
            max_retries: target.max_retries.unwrap_or(RetryPolicy::default().max_retries),
            jitter_seed: self.host.now_ms().to_bits(),
            ..RetryPolicy::default()
        };
        HttpLlm::new(
            target.profile,
            target.api_key,
            Rc::new(JsHttp(Rc::clone(&self.host))),
            Rc::new(JsTimer),
            retry,
        )
        .map_err(|e| llm_error(&e))
    }

    fn begin(&self, scope: Option<&str>) -> AbortSignal {
        let signal = AbortSignal::new();
        self.running.borrow_mut().push((scope.map(str::to_owned), signal.clone()));
        signal
    }

    fn end(&self, signal: &AbortSignal) {
        self.running.borrow_mut().retain(|(_, s)| !s.same_as(signal));
    }
}

fn llm_error(e: &LlmError) -> JsValue {
    let js = error(CondenseError::Llm(e.clone()).kind(), &e.message);
    let set = |k: &str, v: JsValue| {
        let _ = js_sys::Reflect::set(&js, &k.into(), &v);
    };
    set("partial", e.partial.as_str().into());
    set("attempts", e.attempts.into());
    if let Some(status) = e.status {
        set("status", status.into());
    }
    if let Some(ms) = e.retry_after_ms {
        set("retryAfterMs", (ms as f64).into());
    }
    js
}

fn conversation(value: &JsValue) -> Result<Conversation, JsValue> {
    let text = match value.as_string() {
        Some(text) => text,
        None => json_text(value, "the conversation")?,
    };
    parse_conversation(&text)
        .map(|p| p.conversation)
        .map_err(|e| error("invalid_input", &format!("the conversation: {e}")))
}

/// The core, for one extension (or one test): its own registry and default provider.
#[wasm_bindgen]
pub struct CondenseEngine {
    inner: Rc<Inner>,
}

#[wasm_bindgen]
impl CondenseEngine {
    /// An engine using the host's `fetch(request, signal)`, `now()` and `log(level, message)`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Host")] host: JsValue,
    ) -> Result<CondenseEngine, JsValue> {
        let host = JsHost::new(&host)?;
        Ok(CondenseEngine {
            inner: Rc::new(Inner {
                host,
                manager: RefCell::new(CondensationManager::with_builtin_providers()),
                running: RefCell::new(Vec::new()),
                counters: RefCell::new(HashMap::new()),
            }),
        })
    }

    /// The version of the core.
    #[wasm_bindgen(getter)]
    pub fn version(&self) -> String {
        env!("CARGO_PKG_VERSION").to_owned()
    }

    /// The providers, highest priority first.
    #[wasm_bindgen(js_name = listProviders, unchecked_return_type = "ProviderInfo[]")]
    pub fn list_providers(&self, enabled_only: Option<bool>) -> Result<JsValue, JsValue> {
        to_js(&self.inner.manager.borrow().list_providers(enabled_only.unwrap_or(false)))
    }

    /// A provider's `{enabled, priority, config}`.
    #[wasm_bindgen(js_name = providerConfig, unchecked_return_type = "ProviderConfig")]
    pub fn provider_config(&self, id: &str) -> Result<JsValue, JsValue> {
        let manager = self.inner.manager.borrow();
        let config = manager.registry().get_config(id).ok_or_else(|| {
            core_error(&CondenseError::ProviderNotFound {
                id: id.to_owned(),
                known: manager.registry().known_ids(),
            })
        })?;
        to_js(config)
    }

    /// Changes a provider's settings; a bad configuration changes nothing.
    #[wasm_bindgen(js_name = updateProviderConfig)]
    pub fn update_provider_config(
        &self,
        id: &str,
        #[wasm_bindgen(unchecked_param_type = "ProviderConfigUpdate")] update: JsValue,
    ) -> Result<(), JsValue> {
        let update: ProviderConfigUpdate = from_js(&update, "the provider update")?;
        self.manager_mut()?.registry_mut().update_config(id, update).map_err(|e| core_error(&e))
    }

    /// The provider used when a call names none.
    #[wasm_bindgen(getter, js_name = defaultProvider)]
    pub fn default_provider(&self) -> String {
        self.inner.manager.borrow().default_provider().to_owned()
    }

    /// Sets the default provider; it must be registered.
    #[wasm_bindgen(js_name = setDefaultProvider)]
    pub fn set_default_provider(&self, id: &str) -> Result<(), JsValue> {
        self.manager_mut()?.set_default_provider(id).map_err(|e| core_error(&e))
    }

    /// The settings panel's cards: every registered provider, highest priority first, with its
    /// configuration and the schema of its configuration form.
    #[wasm_bindgen(js_name = providerEntries, unchecked_return_type = "ProviderEntry[]")]
    pub fn provider_entries(&self) -> Result<JsValue, JsValue> {
        to_js(&condense_core::settings::provider_entries(&self.inner.manager.borrow()))
    }

    /// Whether a setting may be saved: `undefined` when it may, else the message to show beside
    /// the field. Nothing changes; an unreadable change is an `invalid_input` error.
    #[wasm_bindgen(js_name = checkSetting, unchecked_return_type = "string | undefined")]
    pub fn check_setting(
        &self,
        #[wasm_bindgen(unchecked_param_type = "SettingChange")] change: JsValue,
    ) -> Result<JsValue, JsValue> {
        let change: condense_core::settings::SettingChange = from_js(&change, "the setting")?;
        Ok(match condense_core::settings::check_setting(&self.inner.manager.borrow(), &change) {
            Ok(()) => JsValue::UNDEFINED,
            Err(message) => message.into(),
        })
    }

    /// Test Connection: one short real request with the profile and key; resolves with the
    /// latency, the model the server names and its reply; rejects with the typed `llm_*` error.
    /// `cancel(scope)` with the same scope stops it.
    #[wasm_bindgen(js_name = testConnection, unchecked_return_type = "Promise<ConnectionReport>")]
    pub fn test_connection(
        &self,
        #[wasm_bindgen(unchecked_param_type = "LlmTarget")] llm: JsValue,
        scope: Option<String>,
    ) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let target: LlmTarget = from_js(&llm, "the LLM")?;
            target.profile.validate().map_err(|e| llm_error(&e))?;
            let client = inner.client(target)?;
            let abort = inner.begin(scope.as_deref());
            let outcome = condense_core::llm::test_connection(&client, &*inner.host, &abort).await;
            inner.end(&abort);
            to_js(&outcome.map_err(|e| llm_error(&e))?)
        })
    }

    fn manager_mut(&self) -> Result<std::cell::RefMut<'_, CondensationManager>, JsValue> {
        self.inner.manager.try_borrow_mut().map_err(|_| {
            error("busy", "a condensation is running: change the provider settings when it has ended")
        })
    }

    /// Reads a conversation (this project's format, OpenAI chat, or Anthropic messages; as text or
    /// as an object) and returns it in this project's format.
    #[wasm_bindgen(js_name = parseConversation, unchecked_return_type = "Conversation")]
    pub fn parse_conversation(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Conversation | object | string")] value: JsValue,
    ) -> Result<JsValue, JsValue> {
        to_js(&conversation(&value)?)
    }

    /// Tokens of the conversation's API view for a model (default `gpt-4o`).
    #[wasm_bindgen(js_name = countTokens, unchecked_return_type = "TokenReport")]
    pub fn count_tokens(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Conversation | object | string")] value: JsValue,
        model: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let conversation = conversation(&value)?;
        to_js(&TokenReport::of(&conversation, model.as_deref().unwrap_or(DEFAULT_MODEL)))
    }

    /// Condenses a conversation. Resolves with the result, whose `messages` are the whole new
    /// conversation (the original ones, untouched, when `error` is set) and which carries the
    /// system prompt, so it is a conversation itself. Rejects only for a bad call: unreadable
    /// input, an unknown or disabled provider.
    #[wasm_bindgen(unchecked_return_type = "Promise<CondensationDocument>")]
    pub fn condense(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Conversation | object | string")] value: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CondenseOptions")] options: Option<JsValue>,
    ) -> Promise {
        future_to_promise(condense(Rc::clone(&self.inner), value, options))
    }

    /// Undoes the last condensation: its summary goes, the messages it hid come back.
    #[wasm_bindgen(js_name = undoLast, unchecked_return_type = "UndoResult")]
    pub fn undo_last(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Conversation | object | string")] value: JsValue,
    ) -> Result<JsValue, JsValue> {
        let conversation = conversation(&value)?;
        let (condense_id, messages) = undo_last(&conversation.messages)
            .ok_or_else(|| error("nothing_to_undo", "the conversation has no condensation to undo"))?;
        self.inner.host.log("info", &format!("undid condensation {condense_id}"));
        to_js(&Undone { condense_id, conversation: Conversation { messages, ..conversation } })
    }

    /// The prompt of the manual provider, to copy into any chat.
    #[wasm_bindgen(js_name = renderManualRequest)]
    pub fn render_manual_request(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Conversation | object | string")] value: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CondenseOptions")] options: Option<JsValue>,
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

    /// Streams an answer: `onChunk` gets every chunk as it arrives; resolves with the whole
    /// answer, its usage and cost; rejects with an `llm_*` error carrying `partial`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Completion>")]
    pub fn stream(
        &self,
        #[wasm_bindgen(unchecked_param_type = "LlmTarget")] llm: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PromptBundle")] bundle: JsValue,
        #[wasm_bindgen(unchecked_param_type = "((chunk: StreamChunk) => void) | undefined")] on_chunk: Option<
            Function,
        >,
    ) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let target: LlmTarget = from_js(&llm, "the LLM")?;
            let bundle: PromptBundle = from_js(&bundle, "the prompt bundle")?;
            let client = inner.client(target)?;
            let abort = inner.begin(None);
            let outcome = stream_answer(&client, &bundle, &abort, on_chunk.as_ref()).await;
            inner.end(&abort);
            let (content, last) = outcome?;
            let usage = last.usage;
            to_js(&Completion {
                content,
                usage,
                finish_reason: last.finish_reason,
                cost: usage.map_or(0.0, |u| client.cost(&u)),
            })
        })
    }

    /// The whole answer at once; see `stream`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Completion>")]
    pub fn complete(
        &self,
        #[wasm_bindgen(unchecked_param_type = "LlmTarget")] llm: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PromptBundle")] bundle: JsValue,
    ) -> Promise {
        self.stream(llm, bundle, None)
    }

    /// A new, empty chat task.
    #[wasm_bindgen(js_name = newChat, unchecked_return_type = "ChatTask")]
    pub fn new_chat(&self, id: &str, now_ms: f64) -> Result<JsValue, JsValue> {
        to_js(&ChatTask::new(id, now_ms as i64))
    }

    /// Works on one chat input (a user message, retry, condense, shutdown): `onEvent` gets every
    /// agent event as it happens; resolves with the updated task and its context status. Failures
    /// of the turn are `Error` events, and the task keeps what arrived; rejects only for a bad
    /// call.
    #[wasm_bindgen(unchecked_return_type = "Promise<ChatOutcome>")]
    pub fn chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatTask")] task: JsValue,
        #[wasm_bindgen(unchecked_param_type = "AgentInput")] input: JsValue,
        #[wasm_bindgen(unchecked_param_type = "ChatOptions")] options: JsValue,
        #[wasm_bindgen(unchecked_param_type = "((event: AgentEvent) => void) | undefined")] on_event: Option<
            Function,
        >,
    ) -> Promise {
        future_to_promise(chat(Rc::clone(&self.inner), task, input, options, on_event))
    }

    /// How full a chat's context is for the options' chat profile.
    #[wasm_bindgen(js_name = chatContext, unchecked_return_type = "ContextStatus")]
    pub fn chat_context(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatTask")] task: JsValue,
        #[wasm_bindgen(unchecked_param_type = "ChatOptions")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let task: ChatTask = from_js(&task, "the chat task")?;
        let call = chat_call(&options)?;
        let counter = self.inner.counter(&call.llm.profile.model);
        to_js(&task.context_status(&call.llm.profile, &call.auto, counter.as_ref()))
    }

    /// Undoes a condensation of a chat (the last one when `condenseId` is absent).
    #[wasm_bindgen(js_name = undoChat, unchecked_return_type = "ChatUndo")]
    pub fn undo_chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatTask")] task: JsValue,
        condense_id: Option<String>,
        now_ms: f64,
    ) -> Result<JsValue, JsValue> {
        let mut task: ChatTask = from_js(&task, "the chat task")?;
        let condense_id = task
            .undo(condense_id.as_deref(), now_ms as i64)
            .ok_or_else(|| error("nothing_to_undo", "the chat has no such condensation to undo"))?;
        self.inner.host.log("info", &format!("chat {}: undid condensation {condense_id}", task.id));
        to_js(&ChatUndo { task, condense_id })
    }

    /// Cancels work in flight: the turn of the chat `taskId` when one is given, else everything.
    /// LLM calls end with `llm_cancelled`, condensations with their original messages, chat turns
    /// with the partial answer kept.
    pub fn cancel(&self, #[wasm_bindgen(js_name = taskId)] task_id: Option<String>) {
        let running = self.inner.running.borrow().clone();
        for (scope, signal) in &running {
            if task_id.is_none() || *scope == task_id {
                self.inner.host.abort(signal);
            }
        }
    }
}

// The shared borrow of the manager is held through the run on purpose: condensations run side by
// side, and a settings change meanwhile gets a `busy` error (see `CondenseEngine::manager_mut`).
#[expect(clippy::await_holding_refcell_ref, reason = "see above")]
async fn condense(inner: Rc<Inner>, value: JsValue, options: Option<JsValue>) -> Result<JsValue, JsValue> {
    let conversation = conversation(&value)?;
    let call: CondenseCall = call_options(&options)?;
    let counter = TiktokenCounter::for_model(call.model());
    let options = call.options();
    let provider = call.provider.clone();
    let client = call.llm.map(|target| inner.client(target)).transpose()?;
    let abort = inner.begin(None);
    let mut services = Services::new(&counter, inner.host.as_ref()).with_abort(&abort);
    if let Some(c) = &client {
        services = services.with_llm(c);
    }
    let manager = inner.manager.borrow();
    let outcome = manager.condense(&conversation, provider.as_deref(), options, services).await;
    drop(manager);
    inner.end(&abort);
    let result = outcome.map_err(|e| core_error(&e))?;
    log_result(&inner.host, &result);
    to_js(&result.to_document(conversation.system.as_deref()))
}

fn chat_call(options: &JsValue) -> Result<ChatCall, JsValue> {
    let call: ChatCall = from_js(options, "the options")?;
    call.auto.validate().map_err(|m| core_error(&CondenseError::InvalidInput(m)))?;
    call.llm.profile.validate().map_err(|e| llm_error(&e))?;
    Ok(call)
}

// As in `condense`, the shared borrow of the manager is held through the turn on purpose.
#[expect(clippy::await_holding_refcell_ref, reason = "see `condense`")]
async fn chat(
    inner: Rc<Inner>,
    task: JsValue,
    input: JsValue,
    options: JsValue,
    on_event: Option<Function>,
) -> Result<JsValue, JsValue> {
    let task: ChatTask = from_js(&task, "the chat task")?;
    let input: AgentInput = from_js(&input, "the input")?;
    let call = chat_call(&options)?;
    let counter = inner.counter(&call.llm.profile.model);
    let llm = inner.client(call.llm)?;
    let condensing = call.condensing_llm.map(|t| inner.client(t)).transpose()?;
    let abort = inner.begin(Some(&task.id));
    let manager = inner.manager.borrow();
    let turn = Turn {
        llm: &llm,
        condense_llm: condensing.as_ref().map(|c| c as &dyn LlmProvider),
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
            if let (Some(f), Ok(value)) = (&on_event, to_js(&event)) {
                // A throwing callback is the host's bug; it must not end the turn.
                let _ = f.call1(&JsValue::NULL, &value);
            }
        })
        .await;
    drop(manager);
    inner.end(&abort);
    let task = agent.into_task();
    let context = task.context_status(llm.profile(), &call.auto, counter.as_ref());
    to_js(&ChatOutcome { task, context })
}

/// The log lines of a chat turn: condensations with their metrics, skips and failures.
fn log_event(host: &JsHost, event: &AgentEvent) {
    match event {
        AgentEvent::CondenseEnd { record: Some(r), .. } => host.log(
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
        AgentEvent::CondenseEnd { error: Some(e), .. } => {
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

fn call_options(options: &Option<JsValue>) -> Result<CondenseCall, JsValue> {
    match options {
        Some(o) if !o.is_undefined() && !o.is_null() => from_js(o, "the options"),
        _ => Ok(CondenseCall::default()),
    }
}

async fn stream_answer(
    client: &HttpLlm,
    bundle: &PromptBundle,
    abort: &AbortSignal,
    on_chunk: Option<&Function>,
) -> Result<(String, StreamChunk), JsValue> {
    let mut stream = client.stream_completion(bundle, abort);
    let mut content = String::new();
    while let Some(chunk) = stream.next().await {
        content.push_str(&chunk.content);
        if let Some(f) = on_chunk {
            // A throwing callback is the host's bug; it must not end the answer.
            let _ = f.call1(&JsValue::NULL, &to_js(&chunk)?);
        }
        if let Some(mut e) = chunk.error {
            if e.partial.is_empty() {
                e.partial = content;
            }
            return Err(llm_error(&e));
        }
        if chunk.finished {
            return Ok((content, chunk));
        }
    }
    Err(error("llm_malformed_stream", "the stream ended without a last chunk"))
}

fn log_result(host: &JsHost, result: &condense_core::CondensationResult) {
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
