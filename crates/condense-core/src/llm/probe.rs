//! Test Connection: one short real request through the same client chats use, timed by the host's
//! clock. It proves the base URL, the key and the model name together, and says which model the
//! server reports answering. Given the uses the profile is set up for (the chat model, the
//! condensing model), a CLI tool whose entry leaves one out fails first, without running.

use serde::{Deserialize, Serialize};

use super::{GenerationParams, LlmProvider, ModelUse, PromptBundle, Usage};
use crate::error::LlmError;
use crate::host::{AbortSignal, Clock};

/// The question the probe asks.
pub const PROBE_REQUEST: &str = "Reply with the single word OK.";

/// What a successful probe found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionReport {
    /// From the request to the end of the answer, by the host's clock.
    pub latency_ms: f64,
    /// The model the server says answered; the profile's when it did not say.
    pub model: String,
    /// The answer, trimmed.
    pub reply: String,
    /// Tokens used, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// Sends the probe; a failure is the client's typed error (auth, not found, network, …). `uses`:
/// what the profile is set up to be (the chat profile, the condensing profile); one the model may
/// not serve is `llm_tool_unsupported`, and nothing is sent.
pub async fn test_connection(
    llm: &dyn LlmProvider,
    uses: &[ModelUse],
    clock: &dyn Clock,
    abort: &AbortSignal,
) -> Result<ConnectionReport, LlmError> {
    for used in uses {
        llm.serves(*used)?;
    }
    let bundle = PromptBundle {
        request: PROBE_REQUEST.into(),
        generation_params: Some(GenerationParams {
            max_input_tokens: None,
            max_output_tokens: Some(8),
            temperature: Some(0.0),
        }),
        ..PromptBundle::default()
    };
    let start = clock.now_ms();
    let response = llm.complete(&bundle, abort).await?;
    Ok(ConnectionReport {
        latency_ms: (clock.now_ms() - start).max(0.0),
        model: response.model.unwrap_or_else(|| llm.profile().model.clone()),
        reply: response.content.trim().to_owned(),
        usage: response.usage,
    })
}
