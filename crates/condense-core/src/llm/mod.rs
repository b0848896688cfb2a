//! The LLM layer (seeds 001 and 004): clients that stream [`StreamEvent`]s, the one collector
//! that turns a stream into an answer, prompt bundles and their adapters. The wire dialects
//! (requests out, SSE events in, error bodies) live in [`crate::formats`], the profiles in
//! [`crate::profile`]; both are re-exported here. The core builds every request and parses every
//! byte of the answer; the host's [`HttpClient`](crate::host::HttpClient) only moves bytes.

mod cli;
mod client;
mod probe;
mod prompt;

use futures::StreamExt;
use futures::stream::LocalBoxStream;
use serde::{Deserialize, Serialize};

pub use cli::CliLlm;
pub use client::{HttpLlm, RetryPolicy, answer_cap};
pub use probe::{ConnectionReport, PROBE_REQUEST, test_connection};
pub use prompt::{
    ApiAdapter, CacheHint, DEFAULT_MAX_OUTPUT_TOKENS, ManualAdapter, PromptAdapter, PromptBundle,
};

use crate::error::{ErrorKind, LlmError};
/// Re-exported from [`crate::formats`], where each dialect encodes and decodes them.
pub use crate::formats::{ANTHROPIC_VERSION, ApiRequest, ChatMessage, ChatRole, SseEvent, SseParser, Wire};
use crate::host::AbortSignal;
/// Re-exported from [`crate::profile`], where the wire dialects can use them too.
pub use crate::profile::{
    CondensePolicy, GenerationParams, LlmKind, LlmProfile, ModelUse, Prices, ProviderCapabilities, Usage,
};

/// How a complete answer ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Finish {
    /// Tokens used, when the server reported them.
    pub usage: Option<Usage>,
    /// Why the model stopped (`stop`, `end_turn`, `length`, …).
    pub finish_reason: Option<String>,
    /// The model the server says answered, when it said.
    pub model: Option<String>,
    /// What the call cost in US dollars, when the client reports it (CLI tools do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// One event of a streamed answer. A stream is `Start` when the server announces the speaker,
/// any number of `Delta`s, then exactly one `Done` or `Failed`, then nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// The server announced who speaks (`assistant`), before any text.
    Start {
        /// The speaker.
        role: String,
    },
    /// Text to append.
    Delta(String),
    /// The answer is complete.
    Done(Finish),
    /// The call failed; the error's `partial` holds the text streamed before.
    Failed(LlmError),
}

/// A whole answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderResponse {
    /// The answer's text.
    pub content: String,
    /// Tokens used, when reported.
    pub usage: Option<Usage>,
    /// Why the model stopped.
    pub finish_reason: Option<String>,
    /// The model the server says answered, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What the call cost in US dollars, when the client reports it (CLI tools do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// Reads a stream to its end: `on_delta` sees each piece of text as it arrives. The abort signal
/// is checked between events too, so a burst of buffered text cannot outrun the user's Stop. On
/// failure the error's `partial` is the text that did arrive. The one place a stream is collected.
pub async fn collect(
    mut stream: LocalBoxStream<'_, StreamEvent>,
    abort: &AbortSignal,
    mut on_delta: impl FnMut(&str),
) -> Result<ProviderResponse, LlmError> {
    let mut content = String::new();
    let fail = |mut e: LlmError, content: String| {
        if e.partial.is_empty() {
            e.partial = content;
        }
        Err(e)
    };
    loop {
        if abort.is_aborted() {
            return fail(LlmError::new(ErrorKind::LlmCancelled, "cancelled by the user"), content);
        }
        match stream.next().await {
            Some(StreamEvent::Start { .. }) => {}
            Some(StreamEvent::Delta(text)) => {
                on_delta(&text);
                content.push_str(&text);
            }
            Some(StreamEvent::Done(f)) => {
                return Ok(ProviderResponse {
                    content,
                    usage: f.usage,
                    finish_reason: f.finish_reason,
                    model: f.model,
                    cost_usd: f.cost_usd,
                });
            }
            Some(StreamEvent::Failed(e)) => return fail(e, content),
            None => {
                let e = LlmError::new(ErrorKind::LlmMalformedStream, "the stream ended without a last chunk");
                return fail(e, content);
            }
        }
    }
}

/// An LLM to talk to.
#[async_trait::async_trait(?Send)]
pub trait LlmProvider {
    /// The profile it was made from (limits and prices).
    fn profile(&self) -> &LlmProfile;

    /// How prompts are shaped for it.
    fn adapter(&self) -> &dyn PromptAdapter;

    /// Sends the bundle and streams the answer: `Delta`s, then `Done` or `Failed`.
    fn stream_completion<'a>(
        &'a self,
        bundle: &PromptBundle,
        abort: &AbortSignal,
    ) -> LocalBoxStream<'a, StreamEvent>;

    /// What it can do.
    fn capabilities(&self) -> ProviderCapabilities {
        self.profile().capabilities()
    }

    /// Whether it may be used as `used` (the chat model, the condensing model). An HTTP model
    /// serves both; a CLI tool only what its entry's `capabilities` list, else
    /// `llm_tool_unsupported` naming the tool and what it supports.
    fn serves(&self, used: ModelUse) -> Result<(), LlmError> {
        let _ = used;
        Ok(())
    }

    /// What a call with this usage cost, in US dollars, by the profile's prices.
    fn cost(&self, usage: &Usage) -> f64 {
        self.profile().cost(usage)
    }

    /// What an answer cost: the cost the client reported, else its usage by the profile's
    /// prices, else nothing.
    fn answer_cost(&self, answer: &ProviderResponse) -> f64 {
        answer.cost_usd.unwrap_or_else(|| answer.usage.map_or(0.0, |u| self.cost(&u)))
    }

    /// The whole answer, built on the stream. On error, the text that did arrive is in the
    /// error's `partial`.
    async fn complete(
        &self,
        bundle: &PromptBundle,
        abort: &AbortSignal,
    ) -> Result<ProviderResponse, LlmError> {
        collect(self.stream_completion(bundle, abort), abort, |_| {}).await
    }
}

#[cfg(test)]
mod tests {
    use futures::executor::block_on;

    use super::*;

    fn events(list: Vec<StreamEvent>) -> LocalBoxStream<'static, StreamEvent> {
        futures::stream::iter(list).boxed_local()
    }

    #[test]
    fn collect_joins_the_deltas_and_keeps_them_as_partial_on_failure() {
        let abort = AbortSignal::new();
        let mut seen = Vec::new();
        let done = StreamEvent::Done(Finish { finish_reason: Some("stop".into()), ..Finish::default() });
        let stream = events(vec![StreamEvent::Delta("Hel".into()), StreamEvent::Delta("lo".into()), done]);
        let answer = block_on(collect(stream, &abort, |d| seen.push(d.to_owned()))).unwrap();
        assert_eq!((answer.content.as_str(), seen.len()), ("Hello", 2));
        assert_eq!(answer.finish_reason.as_deref(), Some("stop"));

        let failed = StreamEvent::Failed(LlmError::new(ErrorKind::LlmServer, "boom"));
        let e = block_on(collect(events(vec![StreamEvent::Delta("Par".into()), failed]), &abort, |_| {}))
            .unwrap_err();
        assert_eq!((e.kind, e.partial.as_str()), (ErrorKind::LlmServer, "Par"));

        let e =
            block_on(collect(events(vec![StreamEvent::Delta("cut".into())]), &abort, |_| {})).unwrap_err();
        assert_eq!((e.kind, e.partial.as_str()), (ErrorKind::LlmMalformedStream, "cut"));

        abort.abort();
        let e = block_on(collect(events(vec![StreamEvent::Delta("x".into())]), &abort, |_| {})).unwrap_err();
        assert_eq!(e.kind, ErrorKind::LlmCancelled);
    }
}
