//! `CondenseEngine`'s Test Connection: one short real request with a profile and its key. Every
//! other LLM call runs inside a chat turn or a condensation.

use std::rc::Rc;

use condense_core::llm::{ConnectionReport, ModelUse};
use condense_protocol::calls::LlmTarget;
use wasm_bindgen::prelude::*;

use crate::convert::llm_error;
use crate::engine::{CondenseEngine, Inner};
use crate::surface::engine_api;

crate::surface::data!(LlmTarget, ModelUse, ConnectionReport);

engine_api! {
    impl CondenseEngine;

    /// Test Connection: one short real request with the profile and key; resolves with the
    /// latency, the model the server names and its reply; rejects with the typed `llm_*` error.
    /// `cancel(scope)` with the same scope stops it. `uses`: what the profile is set up to be
    /// (`chat`, `summarize`); a CLI tool whose entry leaves one out rejects with
    /// `llm_tool_unsupported` before it runs.
    async fn testConnection = test_connection(llm: LlmTarget, scope: Option<String>, uses: Option<Vec<ModelUse>>) -> ConnectionReport;
}

async fn test_connection(
    inner: Rc<Inner>,
    target: LlmTarget,
    scope: Option<String>,
    uses: Option<Vec<ModelUse>>,
) -> Result<ConnectionReport, JsValue> {
    target.profile.validate().map_err(|e| llm_error(&e))?;
    let client = inner.client(target)?;
    let abort = inner.begin(scope.as_deref());
    let outcome =
        condense_core::llm::test_connection(client.as_ref(), &uses.unwrap_or_default(), &*inner.host, &abort)
            .await;
    inner.end(&abort);
    outcome.map_err(|e| llm_error(&e))
}
