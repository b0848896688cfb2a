//! The LLM layer (seeds 001 and 004): providers that stream [`StreamChunk`]s, prompt bundles and
//! their adapters, profiles, the two wire formats, and the typed errors. The core builds every
//! request and parses every byte of the answer; the host's [`HttpClient`] only moves bytes.

mod client;
mod error;
mod http;
mod probe;
mod profile;
mod prompt;
mod sse;
mod wire;

use futures::StreamExt;
use futures::stream::LocalBoxStream;
use serde::{Deserialize, Serialize};

pub use client::{HttpLlm, ManualLlm, RetryPolicy};
pub use error::{LlmError, LlmErrorKind};
pub use http::{
    AbortSignal, BodyStream, HttpClient, HttpRequest, HttpResponse, Timer, TransportError, TransportErrorKind,
};
pub use probe::{ConnectionReport, PROBE_REQUEST, test_connection};
pub use profile::{LlmKind, LlmProfile};
pub use prompt::{
    ApiAdapter, ApiRequest, ChatMessage, ChatRole, DEFAULT_MAX_OUTPUT_TOKENS, GenerationParams,
    ManualAdapter, PromptAdapter, PromptBundle, ProviderCapabilities,
};
pub use sse::{SseEvent, SseParser};
pub use wire::{ANTHROPIC_VERSION, Wire};

/// Tokens a call used, as the server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
}

/// One piece of a streamed answer. The first carries the role; the last is `finished` (with the
/// usage and stop reason) or carries an `error`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamChunk {
    /// Text to append.
    pub content: String,
    /// The speaker, on the first chunk.
    pub role: Option<String>,
    /// Whether this is the last chunk of a complete answer.
    pub finished: bool,
    /// Why the stream ended early.
    pub error: Option<LlmError>,
    /// Tokens used, on the last chunk, when the server reported them.
    pub usage: Option<Usage>,
    /// Why the model stopped (`stop`, `end_turn`, `length`, …), on the last chunk.
    pub finish_reason: Option<String>,
    /// The model the server says answered, on the last chunk, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A whole answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderResponse {
    /// The answer's text.
    pub content: String,
    /// State a multi-turn client carries to its next call; API clients are stateless.
    pub conversation_state: Option<serde_json::Value>,
    /// Tokens used, when reported.
    pub usage: Option<Usage>,
    /// Why the model stopped.
    pub finish_reason: Option<String>,
    /// The model the server says answered, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The model behind a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model id.
    pub id: String,
    /// The profile it comes from.
    pub profile_id: String,
    /// The client kind.
    pub kind: LlmKind,
    /// Context window, in tokens.
    pub context_window: usize,
    /// Longest answer, in tokens.
    pub max_output: usize,
}

/// An LLM to talk to.
#[async_trait::async_trait(?Send)]
pub trait LlmProvider {
    /// The profile it was made from (limits and prices).
    fn profile(&self) -> &LlmProfile;

    /// How prompts are shaped for it.
    fn adapter(&self) -> &dyn PromptAdapter;

    /// Sends the bundle and streams the answer. The stream always ends with a chunk that is
    /// `finished` or carries an `error`.
    fn stream_completion<'a>(
        &'a self,
        bundle: &PromptBundle,
        abort: &AbortSignal,
    ) -> LocalBoxStream<'a, StreamChunk>;

    /// The model.
    fn model_info(&self) -> ModelInfo {
        self.profile().model_info()
    }

    /// What it can do.
    fn capabilities(&self) -> ProviderCapabilities {
        self.profile().capabilities()
    }

    /// What a call with this usage cost, in US dollars, by the profile's prices.
    fn cost(&self, usage: &Usage) -> f64 {
        self.profile().cost(usage)
    }

    /// The whole answer, built on the stream. On error, the text that did arrive is in the
    /// error's `partial`.
    async fn complete(
        &self,
        bundle: &PromptBundle,
        abort: &AbortSignal,
    ) -> Result<ProviderResponse, LlmError> {
        let mut stream = self.stream_completion(bundle, abort);
        let mut content = String::new();
        while let Some(chunk) = stream.next().await {
            content.push_str(&chunk.content);
            if let Some(mut e) = chunk.error {
                if e.partial.is_empty() {
                    e.partial = content;
                }
                return Err(e);
            }
            if chunk.finished {
                return Ok(ProviderResponse {
                    content,
                    conversation_state: None,
                    usage: chunk.usage,
                    finish_reason: chunk.finish_reason,
                    model: chunk.model,
                });
            }
        }
        Err(LlmError {
            partial: content,
            ..LlmError::new(LlmErrorKind::MalformedStream, "the stream ended without a last chunk")
        })
    }
}
