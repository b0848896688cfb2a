//! A server's streamed answer, in both wire formats: any body bytes through the HTTP client (SSE,
//! the decoders, the key redaction, the caps) end in exactly one `Done` or `Failed`, last, never a
//! panic; the text of the deltas is the answer, and the partial text of an error is exactly what
//! the deltas carried; the key is in none of them. The body arrives cut at points derived from the
//! input (chunks of 1 to 64 bytes, empty chunks among them), not at fixed sizes.
#![no_main]
use std::rc::Rc;

use condense_core::host::{AbortSignal, HttpClient, HttpRequest, HttpResponse, Timer, TransportError};
use condense_core::llm::{HttpLlm, LlmKind, LlmProfile, LlmProvider, PromptBundle, RetryPolicy, StreamEvent};
use futures::StreamExt;
use libfuzzer_sys::fuzz_target;

const KEY: &str = "key-123456";

/// The body, cut into chunks by `seed`: sizes of 1 to 64 bytes, and now and then an empty chunk.
fn chunks(body: &[u8], seed: u64) -> Vec<Vec<u8>> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let r = next();
        if r % 5 == 0 {
            out.push(Vec::new());
        }
        let end = (at + 1 + (r >> 8) as usize % 64).min(body.len());
        out.push(body[at..end].to_vec());
        at = end;
    }
    out
}

struct Body(Vec<Vec<u8>>, u16);

#[async_trait::async_trait(?Send)]
impl HttpClient for Body {
    async fn send(&self, _: HttpRequest, _: &AbortSignal) -> Result<HttpResponse, TransportError> {
        let chunks: Vec<Result<Vec<u8>, TransportError>> = self.0.iter().cloned().map(Ok).collect();
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
    // Bit 0: the wire; bits 5-7: the status; bits 1-4 and the body's bytes: where it is cut.
    let kind = if pick & 1 == 0 { LlmKind::OpenaiCompatible } else { LlmKind::Anthropic };
    let status = [200, 200, 200, 400, 401, 429, 500, 529][usize::from(pick >> 5)];
    let seed = body.iter().fold(0xcbf2_9ce4_8422_2325u64 ^ u64::from(pick >> 1 & 15), |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let profile = LlmProfile { base_url: Some("http://127.0.0.1:9".into()), ..LlmProfile::new("f", kind, "m", 8000) };
    let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
    let http = Rc::new(Body(chunks(body, seed), status));
    let llm = HttpLlm::new(profile, Some(KEY.into()), http, Rc::new(NoWait), retry).unwrap();
    let bundle = PromptBundle { request: "hi".into(), ..PromptBundle::default() };
    let abort = AbortSignal::new();
    let events: Vec<StreamEvent> = futures::executor::block_on(llm.stream_completion(&bundle, &abort).collect());

    let (last, before) = events.split_last().expect("a stream ends with an event");
    let mut deltas = String::new();
    for event in before {
        match event {
            StreamEvent::Start { .. } => {}
            StreamEvent::Delta(text) => deltas.push_str(text),
            other => panic!("an event after the end: {other:?}"),
        }
    }
    assert!(!deltas.contains(KEY), "the key in a delta");
    match last {
        StreamEvent::Done(_) => {}
        StreamEvent::Failed(e) => {
            assert_eq!(e.partial, deltas, "the partial text is not what the deltas carried");
            assert!(!e.message.contains(KEY), "the key in an error");
        }
        other => panic!("the stream ends with {other:?}, not Done or Failed"),
    }
});
