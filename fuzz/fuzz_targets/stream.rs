//! A server's streamed answer, in both wire formats: any body bytes through the HTTP client (SSE,
//! the decoders, the collector) end in an answer or a typed error, never a panic; the partial text
//! of an error is what the deltas carried.
#![no_main]
use std::rc::Rc;

use condense_core::host::{AbortSignal, HttpClient, HttpRequest, HttpResponse, Timer, TransportError};
use condense_core::llm::{HttpLlm, LlmKind, LlmProfile, LlmProvider, PromptBundle, RetryPolicy};
use libfuzzer_sys::fuzz_target;

struct Body(Vec<u8>, u16);

#[async_trait::async_trait(?Send)]
impl HttpClient for Body {
    async fn send(&self, _: HttpRequest, _: &AbortSignal) -> Result<HttpResponse, TransportError> {
        let chunks: Vec<Result<Vec<u8>, TransportError>> = self.0.chunks(7).map(|c| Ok(c.to_vec())).collect();
        Ok(HttpResponse { status: self.1, headers: vec![], body: Box::pin(futures::stream::iter(chunks)) })
    }
}

struct NoWait;

#[async_trait::async_trait(?Send)]
impl Timer for NoWait {
    async fn sleep(&self, _: u64, _: &AbortSignal) {}
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let kind = if pick & 1 == 0 { LlmKind::OpenaiCompatible } else { LlmKind::Anthropic };
    let status = [200, 200, 200, 400, 401, 429, 500, 529][usize::from(pick >> 5)];
    let profile = LlmProfile { base_url: Some("http://127.0.0.1:9".into()), ..LlmProfile::new("f", kind, "m", 8000) };
    let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
    let llm = HttpLlm::new(profile, Some("key-123456".into()), Rc::new(Body(body.to_vec(), status)), Rc::new(NoWait), retry)
        .unwrap();
    let bundle = PromptBundle { request: "hi".into(), ..PromptBundle::default() };
    match futures::executor::block_on(llm.complete(&bundle, &AbortSignal::new())) {
        Ok(answer) => assert!(!answer.content.contains("key-123456")),
        Err(e) => assert!(!e.message.contains("key-123456") && !e.partial.contains("key-123456")),
    }
});
