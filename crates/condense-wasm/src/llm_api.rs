//! `CondenseEngine`'s LLM calls: stream or complete a prompt bundle, and Test Connection. Chunks
//! reach JS as [`StreamChunk`]s, the boundary form of the core's `StreamEvent`.

use std::rc::Rc;

use condense_core::llm::{LlmProfile, LlmProvider, PromptBundle, StreamEvent, Usage, collect};
use condense_core::{LlmError, host::AbortSignal};
use futures::StreamExt;
use js_sys::{Function, Promise};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::convert::{error, from_js, to_js};
use crate::engine::CondenseEngine;

/// An LLM to call: a profile and the key the host read from its secret storage for it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct LlmTarget {
    pub(crate) profile: LlmProfile,
    #[serde(default)]
    pub(crate) api_key: Option<String>,
    #[serde(default)]
    pub(crate) max_retries: Option<u32>,
}

/// A piece of a streamed answer as JS sees it: a flat object, `finished` on the last one of a
/// complete answer, `error` on the last one of a failed one.
#[derive(Serialize, Default)]
struct StreamChunk<'a> {
    content: &'a str,
    role: Option<&'a str>,
    finished: bool,
    error: Option<&'a LlmError>,
    usage: Option<Usage>,
    finish_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
}

impl<'a> From<&'a StreamEvent> for StreamChunk<'a> {
    fn from(event: &'a StreamEvent) -> Self {
        match event {
            StreamEvent::Start { role } => StreamChunk { role: Some(role), ..Default::default() },
            StreamEvent::Delta(text) => StreamChunk { content: text, ..Default::default() },
            StreamEvent::Done(f) => StreamChunk {
                finished: true,
                usage: f.usage,
                finish_reason: f.finish_reason.as_deref(),
                model: f.model.as_deref(),
                ..Default::default()
            },
            StreamEvent::Failed(e) => StreamChunk { error: Some(e), ..Default::default() },
        }
    }
}

/// What a streamed or whole completion ends with.
#[derive(Serialize)]
struct Completion {
    content: String,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    /// US dollars, by the profile's prices; 0 when the server reported no usage.
    cost: f64,
}

/// An LLM error, thrown: `kind` and message, with `partial`, `attempts`, `status` and
/// `retryAfterMs` where known.
pub(crate) fn llm_error(e: &LlmError) -> JsValue {
    let js = error(e.kind, &e.message);
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

#[wasm_bindgen]
impl CondenseEngine {
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
            let answer = outcome.map_err(|e| llm_error(&e))?;
            to_js(&Completion {
                content: answer.content,
                usage: answer.usage,
                finish_reason: answer.finish_reason,
                cost: answer.usage.map_or(0.0, |u| client.cost(&u)),
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
}

/// The answer, through the core's one collector; `on_chunk` sees every event as a chunk.
async fn stream_answer(
    client: &dyn LlmProvider,
    bundle: &PromptBundle,
    abort: &AbortSignal,
    on_chunk: Option<&Function>,
) -> Result<condense_core::llm::ProviderResponse, LlmError> {
    let events = client.stream_completion(bundle, abort).inspect(|event| {
        if let (Some(f), Ok(chunk)) = (on_chunk, to_js(&StreamChunk::from(event))) {
            // A throwing callback is the host's bug; it must not end the answer.
            let _ = f.call1(&JsValue::NULL, &chunk);
        }
    });
    collect(events.boxed_local(), abort, |_| {}).await
}
