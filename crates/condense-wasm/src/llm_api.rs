//! `CondenseEngine`'s LLM calls: stream or complete a prompt bundle, and Test Connection. Chunks
//! reach JS as the protocol's `StreamChunk`s, the boundary form of the core's `StreamEvent`.

use std::rc::Rc;

use condense_core::llm::{LlmProvider, ModelUse, PromptBundle, ProviderResponse, collect};
use condense_core::{LlmError, host::AbortSignal};
use condense_protocol::calls::{Completion, LlmTarget, StreamChunk};
use futures::StreamExt;
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::convert::{from_js, llm_error, to_js};
use crate::engine::CondenseEngine;

#[wasm_bindgen]
impl CondenseEngine {
    /// Test Connection: one short real request with the profile and key; resolves with the
    /// latency, the model the server names and its reply; rejects with the typed `llm_*` error.
    /// `cancel(scope)` with the same scope stops it. `uses`: what the profile is set up to be
    /// (`chat`, `summarize`); a CLI tool whose entry leaves one out rejects with
    /// `llm_tool_unsupported` before it runs.
    #[wasm_bindgen(js_name = testConnection, unchecked_return_type = "Promise<ConnectionReport>")]
    pub fn test_connection(
        &self,
        #[wasm_bindgen(unchecked_param_type = "LlmTargetInput")] llm: JsValue,
        scope: Option<String>,
        #[wasm_bindgen(unchecked_param_type = "ModelUse[] | undefined")] uses: JsValue,
    ) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let target: LlmTarget = from_js(&llm, "the LLM")?;
            let uses: Vec<ModelUse> =
                if uses.is_undefined() || uses.is_null() { Vec::new() } else { from_js(&uses, "the uses")? };
            target.profile.validate().map_err(|e| llm_error(&e))?;
            let client = inner.client(target)?;
            let abort = inner.begin(scope.as_deref());
            let outcome =
                condense_core::llm::test_connection(client.as_ref(), &uses, &*inner.host, &abort).await;
            inner.end(&abort);
            to_js(&outcome.map_err(|e| llm_error(&e))?)
        })
    }

    /// Streams an answer: `onChunk` gets every chunk as it arrives; resolves with the whole
    /// answer, its usage and cost; rejects with an `llm_*` error carrying `partial`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Completion>")]
    pub fn stream(
        &self,
        #[wasm_bindgen(unchecked_param_type = "LlmTargetInput")] llm: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PromptBundleInput")] bundle: JsValue,
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
            let outcome = stream_answer(client.as_ref(), &bundle, &abort, on_chunk.as_ref()).await;
            inner.end(&abort);
            let answer = outcome.map_err(|e| llm_error(&e))?;
            let cost = client.answer_cost(&answer);
            to_js(&Completion {
                content: answer.content,
                usage: answer.usage,
                finish_reason: answer.finish_reason,
                cost,
            })
        })
    }

    /// The whole answer at once; see `stream`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Completion>")]
    pub fn complete(
        &self,
        #[wasm_bindgen(unchecked_param_type = "LlmTargetInput")] llm: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PromptBundleInput")] bundle: JsValue,
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
) -> Result<ProviderResponse, LlmError> {
    let events = client.stream_completion(bundle, abort).inspect(|event| {
        if let (Some(f), Ok(chunk)) = (on_chunk, to_js(&StreamChunk::from(event))) {
            // A throwing callback is the host's bug; it must not end the answer.
            let _ = f.call1(&JsValue::NULL, &chunk);
        }
    });
    collect(events.boxed_local(), abort, |_| {}).await
}
