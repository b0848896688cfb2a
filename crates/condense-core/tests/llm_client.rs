//! The LLM client and the native provider over a scripted in-memory HTTP client: retries and
//! their waits, aborts, never retrying after the first byte, usage and cost, the native
//! provider's refusals, and the request's deadline in virtual time (a fake clock that only the
//! fake timer and a dripping body move: no real time passes). (The same paths over real sockets
//! are tested in the CLI crate.)

mod common;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use common::{StepClock, block_on, counter, text};
use condense_core::ErrorKind;
use condense_core::host::{
    AbortSignal, Clock, HttpClient, HttpRequest, HttpResponse, Timer, TransportError, TransportErrorKind,
};
use condense_core::llm::{HttpLlm, LlmKind, LlmProfile, LlmProvider, PromptBundle, RetryPolicy, StreamEvent};
use condense_core::{CondensationManager, CondensationOptions, Conversation, Role, Services, TokenCounter};
use futures::StreamExt;

type Chunks = Vec<Result<Vec<u8>, TransportError>>;

enum Reply {
    Http(u16, Vec<(String, String)>, Chunks),
    /// A body that never ends.
    Endless(Box<dyn FnMut(usize) -> Vec<u8>>),
    /// A status and headers, then a body that never ends, each chunk `next(i)`.
    EndlessWith(u16, Vec<(String, String)>, Box<dyn FnMut(usize) -> Vec<u8>>),
    /// A body whose first chunk is this, then nothing, ever: the next read never resolves.
    ThenStall(Vec<u8>),
    /// No status, no headers, ever: the send never resolves (it fires the signal first, if any).
    Stall(Option<AbortSignal>),
    Fail(TransportError),
}

#[derive(Default)]
struct Scripted {
    replies: RefCell<VecDeque<Reply>>,
    sent: RefCell<Vec<HttpRequest>>,
    /// Fires this signal when the body's n-th chunk is read.
    abort_at_chunk: Option<(usize, AbortSignal)>,
    /// Requests the client stopped before their end: a send or a body dropped unfinished, as a
    /// real client closes the connection.
    closed: Rc<Cell<usize>>,
}

/// Counts a request as closed when dropped before it ended.
struct Connection {
    closed: Rc<Cell<usize>>,
    ended: bool,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if !self.ended {
            self.closed.set(self.closed.get() + 1);
        }
    }
}

#[async_trait::async_trait(?Send)]
impl HttpClient for Scripted {
    async fn send(&self, request: HttpRequest, _: &AbortSignal) -> Result<HttpResponse, TransportError> {
        self.sent.borrow_mut().push(request);
        let reply = self.replies.borrow_mut().pop_front().expect("a scripted reply");
        let connection = || Connection { closed: Rc::clone(&self.closed), ended: false };
        match reply {
            Reply::Fail(e) => Err(e),
            Reply::Stall(abort) => {
                let _open = connection();
                if let Some(signal) = abort {
                    signal.abort();
                }
                futures::future::pending().await
            }
            Reply::ThenStall(first) => {
                let open = connection();
                let body = futures::stream::once(async move { Ok(first) }).chain(futures::stream::once(
                    async move {
                        let _open = open;
                        futures::future::pending::<Result<Vec<u8>, TransportError>>().await
                    },
                ));
                Ok(HttpResponse { status: 200, headers: vec![], body: Box::pin(body) })
            }
            Reply::Endless(mut next) => {
                let body = futures::stream::iter((0..).map(move |i| Ok(next(i))));
                Ok(HttpResponse { status: 200, headers: vec![], body: Box::pin(body) })
            }
            Reply::EndlessWith(status, headers, mut next) => {
                let open = connection();
                let body = futures::stream::iter((0..).map(move |i| {
                    let _ = &open;
                    Ok(next(i))
                }));
                Ok(HttpResponse { status, headers, body: Box::pin(body) })
            }
            Reply::Http(status, headers, chunks) => {
                let abort = self.abort_at_chunk.clone();
                let body = futures::stream::iter(chunks.into_iter().enumerate().map(move |(i, c)| {
                    if let Some((n, signal)) = &abort
                        && i == *n
                    {
                        signal.abort();
                    }
                    c
                }));
                Ok(HttpResponse { status, headers, body: Box::pin(body) })
            }
        }
    }
}

#[derive(Default)]
struct RecordingTimer(RefCell<Vec<u64>>);

#[async_trait::async_trait(?Send)]
impl Timer for RecordingTimer {
    async fn sleep(&self, ms: u64, _: &AbortSignal) {
        self.0.borrow_mut().push(ms);
    }
}

fn sse(events: &[&str]) -> Chunks {
    events.iter().map(|e| Ok(format!("data: {e}\n\n").into_bytes())).collect()
}

fn answer(text: &str, usage: bool) -> Chunks {
    let mut events = vec![
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#
            .to_owned(),
    ];
    for word in text.split_inclusive(' ') {
        events.push(
            serde_json::json!({"choices":[{"index":0,"delta":{"content":word},"finish_reason":null}]})
                .to_string(),
        );
    }
    events.push(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.to_owned());
    if usage {
        events.push(
            r#"{"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100}}"#
                .to_owned(),
        );
    }
    events.push("[DONE]".to_owned());
    sse(&events.iter().map(String::as_str).collect::<Vec<_>>())
}

fn profile() -> LlmProfile {
    LlmProfile {
        base_url: Some("http://127.0.0.1:9/v1".into()),
        price_input_per_mtok: 2.0,
        price_output_per_mtok: 10.0,
        ..LlmProfile::new("local", LlmKind::OpenaiCompatible, "test-model", 32_000)
    }
}

fn client(http: Rc<Scripted>, timer: Rc<RecordingTimer>, max_retries: u32) -> HttpLlm {
    HttpLlm::new(profile(), Some("k".into()), http, timer, RetryPolicy { max_retries, ..Default::default() })
        .unwrap()
}

fn bundle() -> PromptBundle {
    PromptBundle { request: "hello?".into(), ..Default::default() }
}

fn status(code: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Http(
        code,
        headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        vec![Ok(body.as_bytes().to_vec())],
    )
}

#[test]
fn a_429_waits_as_long_as_the_server_asks_then_succeeds() {
    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().extend([
        status(429, &[("Retry-After", "2")], r#"{"error":{"message":"slow down"}}"#),
        status(503, &[], r#"{"error":{"message":"overloaded"}}"#),
        Reply::Http(200, vec![], answer("all good", true)),
    ]);
    let timer = Rc::new(RecordingTimer::default());
    let llm = client(http.clone(), timer.clone(), 3);
    let response = block_on(llm.complete(&bundle(), &AbortSignal::new())).unwrap();
    assert_eq!(response.content, "all good");
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    assert_eq!(http.sent.borrow().len(), 3);
    let waits = timer.0.borrow().clone();
    assert_eq!(waits[0], 2000, "Retry-After honoured");
    assert!((1000..=2000).contains(&waits[1]), "second retry backs off with jitter: {}", waits[1]);
    assert_eq!(llm.cost(&response.usage.unwrap()), (1000.0 * 2.0 + 100.0 * 10.0) / 1e6);
}

#[test]
fn retries_are_bounded_and_auth_errors_are_not_retried() {
    let http = Rc::new(Scripted::default());
    for _ in 0..3 {
        http.replies.borrow_mut().push_back(status(500, &[], "oops"));
    }
    let timer = Rc::new(RecordingTimer::default());
    let err = block_on(client(http.clone(), timer.clone(), 2).complete(&bundle(), &AbortSignal::new()))
        .unwrap_err();
    assert_eq!((err.kind, err.attempts, err.status), (ErrorKind::LlmServer, 3, Some(500)));
    assert_eq!(timer.0.borrow().len(), 2);

    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().push_back(status(401, &[], r#"{"error":{"message":"bad key"}}"#));
    let err = block_on(client(http.clone(), timer, 3).complete(&bundle(), &AbortSignal::new())).unwrap_err();
    assert_eq!((err.kind, err.attempts, err.message.as_str()), (ErrorKind::LlmAuth, 1, "bad key"));
}

#[test]
fn a_refused_connection_is_retried() {
    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().extend([
        Reply::Fail(TransportError::new(TransportErrorKind::Network, "connection refused")),
        Reply::Http(200, vec![], answer("back", true)),
    ]);
    let response =
        block_on(client(http.clone(), Rc::default(), 1).complete(&bundle(), &AbortSignal::new())).unwrap();
    assert_eq!(response.content, "back");
    assert_eq!(http.sent.borrow().len(), 2);
    let http = Rc::new(Scripted::default());
    http.replies
        .borrow_mut()
        .push_back(Reply::Fail(TransportError::new(TransportErrorKind::Timeout, "no answer")));
    let err = block_on(client(http, Rc::default(), 3).complete(&bundle(), &AbortSignal::new())).unwrap_err();
    assert_eq!(
        (err.kind, err.attempts),
        (ErrorKind::LlmTimeout, 1),
        "a timeout is not retried: the server may be working"
    );
}

#[test]
fn a_network_failure_after_the_first_byte_is_not_retried_and_keeps_the_text() {
    let http = Rc::new(Scripted::default());
    let mut chunks = answer("one two three", true);
    chunks.truncate(3);
    chunks.push(Err(TransportError::new(TransportErrorKind::Network, "connection reset")));
    http.replies.borrow_mut().push_back(Reply::Http(200, vec![], chunks));
    let err = block_on(client(http.clone(), Rc::default(), 3).complete(&bundle(), &AbortSignal::new()))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::LlmNetwork);
    assert_eq!(err.partial, "one two ");
    assert_eq!(http.sent.borrow().len(), 1);
}

#[test]
fn an_abort_mid_stream_ends_in_cancelled_with_the_partial_text() {
    let abort = AbortSignal::new();
    let http = Rc::new(Scripted { abort_at_chunk: Some((3, abort.clone())), ..Default::default() });
    http.replies.borrow_mut().push_back(Reply::Http(200, vec![], answer("a b c d e", true)));
    let llm = client(http, Rc::default(), 3);
    let chunks: Vec<_> = block_on(llm.stream_completion(&bundle(), &abort).collect::<Vec<_>>());
    let Some(StreamEvent::Failed(err)) = chunks.last() else { panic!("the stream ends in an error") };
    assert_eq!(err.kind, ErrorKind::LlmCancelled);
    assert_eq!(err.partial, "a b c ", "the text received before the abort is kept");
    assert_eq!(chunks.first(), Some(&StreamEvent::Start { role: "assistant".into() }));
    // And an abort before sending sends nothing.
    let http = Rc::new(Scripted::default());
    let aborted = AbortSignal::new();
    aborted.abort();
    let err = block_on(client(http.clone(), Rc::default(), 3).complete(&bundle(), &aborted)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::LlmCancelled);
    assert!(http.sent.borrow().is_empty());
}

fn session() -> Conversation {
    let mut messages = Vec::new();
    for i in 0..8 {
        let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
        messages.push(text(
            &format!("m{i}"),
            role,
            &format!("message {i}: {}", "details of the work ".repeat(30)),
        ));
    }
    Conversation::new(messages)
}

fn native(c: &Conversation, llm: &dyn LlmProvider) -> condense_core::CondensationResult {
    let tokens = counter();
    let clock = StepClock::default();
    let manager = CondensationManager::with_builtin_providers();
    let services = Services::new(&tokens, &clock).with_llm(llm);
    block_on(manager.condense(c, Some("native"), CondensationOptions::default(), services)).unwrap()
}

#[test]
fn native_estimates_usage_when_the_server_reports_none() {
    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().push_back(Reply::Http(
        200,
        vec![],
        answer("## 1. Primary request\nshort summary", false),
    ));
    let llm = client(http, Rc::default(), 0);
    let result = native(&session(), &llm);
    assert!(result.is_ok(), "{:?}", result.error);
    let usage = &result.metrics.as_ref().unwrap().extra["usage"];
    assert_eq!(usage["estimated"], true);
    assert!(usage["input_tokens"].as_u64().unwrap() > 300);
    assert!(result.cost > 0.0);
}

#[test]
fn a_summary_that_would_not_shrink_the_context_is_refused() {
    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().push_back(Reply::Http(
        200,
        vec![],
        answer(&(0..800).map(|i| format!("line {i} of a very long summary ")).collect::<String>(), true),
    ));
    let c = session();
    let result = native(&c, &client(http, Rc::default(), 0));
    assert_eq!(result.error.as_ref().unwrap().kind, "context_grew");
    assert_eq!(result.messages, c.messages);
    // The model answered, so the failed run still cost money.
    assert!(result.cost > 0.0, "{}", result.cost);

    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().push_back(Reply::Http(200, vec![], answer("   ", true)));
    let result = native(&c, &client(http, Rc::default(), 0));
    assert_eq!(result.error.unwrap().kind, "llm_malformed_stream");
}

#[test]
fn native_estimates_its_cost_before_running() {
    let tokens = counter();
    let clock = StepClock::default();
    let llm = client(Rc::default(), Rc::default(), 0);
    let manager = CondensationManager::with_builtin_providers();
    let c = session();
    let provider = manager.registry().get("native").unwrap();
    let before = tokens.count_request(None, &c.api_view());
    let ctx = condense_core::provider::CondensationContext {
        messages: &c.messages,
        system: None,
        prev_context_tokens: before,
    };
    let services = Services::new(&tokens, &clock).with_llm(&llm);
    let estimate = provider.estimate_cost(&ctx, &CondensationOptions::default(), services);
    // At most: the whole prompt in, the condense phase's answer limit out (the profile's own,
    // 4,096 tokens for a 32k window).
    assert!(
        estimate > 4096.0 * 10.0 / 1e6 && estimate < (before as f64 * 2.0 * 2.0 + 4096.0 * 10.0) / 1e6,
        "{estimate}"
    );
    assert_eq!(
        provider.estimate_cost(&ctx, &CondensationOptions::default(), Services::new(&tokens, &clock)),
        0.0
    );
}

/// A client whose key a hostile server echoes back.
fn keyed(http: Rc<Scripted>) -> HttpLlm {
    let retry = RetryPolicy { max_retries: 0, ..Default::default() };
    HttpLlm::new(profile(), Some(KEY.into()), http, Rc::new(RecordingTimer::default()), retry).unwrap()
}

const KEY: &str = "local-key-5f9c2a7e";

#[test]
fn a_server_echoing_the_key_never_gets_it_into_an_error_or_an_answer() {
    // In a JSON error body.
    let http = Rc::new(Scripted::default());
    let body = format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}"}}}}"#);
    http.replies.borrow_mut().push_back(status(401, &[], &body));
    let e = block_on(keyed(http).complete(&bundle(), &AbortSignal::new())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmAuth);
    assert_eq!(e.message, "Incorrect API key provided: [redacted]");

    // In an error event in the stream, after some text.
    let http = Rc::new(Scripted::default());
    let error = format!(r#"{{"error":{{"message":"key {KEY} revoked"}}}}"#);
    let mut chunks = answer("partial text ", false);
    chunks.truncate(2);
    chunks.extend(sse(&[&error]));
    http.replies.borrow_mut().push_back(Reply::Http(200, vec![], chunks));
    let e = block_on(keyed(http).complete(&bundle(), &AbortSignal::new())).unwrap_err();
    assert!(!e.message.contains(KEY) && e.message.contains("[redacted]"), "{}", e.message);

    // In the answer itself, split across chunks at every position.
    for cut in 1..KEY.len() {
        let http = Rc::new(Scripted::default());
        let (a, b) = KEY.split_at(cut);
        let text = ["Your key is ", a, b, ", noted."];
        let mut events =
            vec![r#"{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}"#.to_owned()];
        for t in text {
            events.push(
                serde_json::json!({"choices":[{"index":0,"delta":{"content":t},"finish_reason":null}]})
                    .to_string(),
            );
        }
        events.push(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.to_owned());
        events.push("[DONE]".to_owned());
        http.replies.borrow_mut().push_back(Reply::Http(
            200,
            vec![],
            sse(&events.iter().map(String::as_str).collect::<Vec<_>>()),
        ));
        let llm = keyed(http);
        let abort = AbortSignal::new();
        let deltas: Vec<StreamEvent> = block_on(llm.stream_completion(&bundle(), &abort).collect());
        let streamed: String = deltas
            .iter()
            .filter_map(|e| if let StreamEvent::Delta(t) = e { Some(t.as_str()) } else { None })
            .collect();
        assert_eq!(streamed, "Your key is [redacted], noted.", "cut at {cut}");
    }

    // Text that only begins like the key is passed on whole.
    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().push_back(Reply::Http(200, vec![], answer("the local-key is fine", true)));
    let response = block_on(keyed(http).complete(&bundle(), &AbortSignal::new())).unwrap();
    assert_eq!(response.content, "the local-key is fine");
}

#[test]
fn an_endless_answer_or_line_ends_typed_and_bounded_with_the_text_kept() {
    let delta = |i: usize| {
        let event = serde_json::json!({"choices":[{"index":0,"delta":{"content":format!("word{i} ")},"finish_reason":null}]});
        format!("data: {event}\n\n").into_bytes()
    };
    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().push_back(Reply::Endless(Box::new(delta)));
    let llm = client(http, Rc::new(RecordingTimer::default()), 0);
    let bundle = PromptBundle {
        generation_params: Some(condense_core::llm::GenerationParams {
            max_output_tokens: Some(100),
            ..Default::default()
        }),
        ..bundle()
    };
    let e = block_on(llm.complete(&bundle, &AbortSignal::new())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmResponseTooLarge, "{}", e.message);
    let cap = condense_core::llm::answer_cap(100);
    assert!(e.partial.starts_with("word0 word1 ") && e.partial.len() <= cap + 16, "{}", e.partial.len());
    assert!(e.message.contains("100 tokens asked for"), "{}", e.message);

    // One line that never ends.
    let http = Rc::new(Scripted::default());
    let mut first = true;
    http.replies.borrow_mut().push_back(Reply::Endless(Box::new(move |_| {
        if std::mem::take(&mut first) { b"data: {\"choices\":[".to_vec() } else { vec![b'x'; 32 * 1024] }
    })));
    let e =
        block_on(client(http, Rc::new(RecordingTimer::default()), 0).complete(&bundle, &AbortSignal::new()))
            .unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmResponseTooLarge);
    assert!(e.message.contains("without an end"), "{}", e.message);
}

#[test]
fn a_server_dripping_bytes_ends_at_the_deadline_with_the_text_kept() {
    let answer_then_drip = {
        let head: Vec<u8> = answer("Partial ", false).into_iter().take(2).flat_map(Result::unwrap).collect();
        move |i: usize| if i == 0 { head.clone() } else { b":".to_vec() }
    };
    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().push_back(Reply::Endless(Box::new(answer_then_drip)));
    let profile = LlmProfile { deadline_secs: Some(3), ..profile() };
    // Each reading of the clock is 50 ms later: the drip passes 3 s after about 60 reads.
    let clock = Rc::new(StepClock::new(50.0));
    let retry = RetryPolicy { max_retries: 0, ..Default::default() };
    let llm = HttpLlm::new(profile, Some("k".into()), http, Rc::new(RecordingTimer::default()), retry)
        .unwrap()
        .with_clock(clock);
    let e = block_on(llm.complete(&bundle(), &AbortSignal::new())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmTimeout);
    assert!(e.message.contains("deadline of 3 s"), "{}", e.message);
    assert_eq!(e.partial, "Partial ");
}

/// Virtual time: a clock that moves only when the fake timer sleeps or a scripted body says time
/// passed. The timer records each wait and returns at once (earlier, without moving the clock,
/// when the abort signal has fired).
#[derive(Default)]
struct FakeTime {
    now: Cell<f64>,
    slept: RefCell<Vec<u64>>,
}

impl FakeTime {
    fn pass(&self, ms: f64) {
        self.now.set(self.now.get() + ms);
    }
}

impl Clock for FakeTime {
    fn now_ms(&self) -> f64 {
        self.now.get()
    }
}

#[async_trait::async_trait(?Send)]
impl Timer for FakeTime {
    async fn sleep(&self, ms: u64, abort: &AbortSignal) {
        if abort.is_aborted() {
            return;
        }
        self.slept.borrow_mut().push(ms);
        self.pass(ms as f64);
    }
}

/// A client with a 3 s deadline, timed by `time` (clock and timer).
fn timed(http: Rc<Scripted>, time: &Rc<FakeTime>, max_retries: u32) -> HttpLlm {
    let profile = LlmProfile { deadline_secs: Some(3), ..profile() };
    let retry = RetryPolicy { max_retries, ..Default::default() };
    HttpLlm::new(profile, Some("k".into()), http, time.clone(), retry).unwrap().with_clock(time.clone())
}

#[test]
fn a_server_that_never_sends_its_headers_is_stopped_at_the_deadline() {
    let time = Rc::new(FakeTime::default());
    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().push_back(Reply::Stall(None));
    let e = block_on(timed(http.clone(), &time, 3).complete(&bundle(), &AbortSignal::new())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmTimeout, "{}", e.message);
    assert_eq!(
        e.message,
        "the request took longer than its deadline of 3 s: stopped while waiting for the server to answer"
    );
    assert_eq!((e.attempts, http.sent.borrow().len()), (1, 1), "a deadline is not retried");
    assert_eq!(http.closed.get(), 1, "the request was dropped, so the host closes it");
    assert_eq!(time.now_ms(), 3000.0, "one wait, for the whole deadline");
}

#[test]
fn an_abort_while_waiting_for_the_headers_ends_cancelled_at_once() {
    let time = Rc::new(FakeTime::default());
    let http = Rc::new(Scripted::default());
    let abort = AbortSignal::new();
    http.replies.borrow_mut().push_back(Reply::Stall(Some(abort.clone())));
    let e = block_on(timed(http.clone(), &time, 3).complete(&bundle(), &abort)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmCancelled, "{}", e.message);
    assert_eq!(http.closed.get(), 1);
    assert_eq!(time.now_ms(), 0.0, "no time passed: the abort ended the wait");
}

#[test]
fn a_dripping_error_body_or_page_ends_at_the_deadline_not_at_the_size_cap() {
    let cases = [
        (500, "application/json", "the body of the server's 500 error"),
        (429, "application/json", "the body of the server's 429 error"),
        (200, "text/html", "the HTML page the server sent"),
    ];
    for (status, content_type, what) in cases {
        let time = Rc::new(FakeTime::default());
        let http = Rc::new(Scripted::default());
        // One byte every 50 ms: the 64 KiB cap would take almost an hour.
        let read = Rc::new(Cell::new(0usize));
        let (clock, count) = (Rc::clone(&time), Rc::clone(&read));
        let drip = Box::new(move |_| {
            clock.pass(50.0);
            count.set(count.get() + 1);
            b"e".to_vec()
        });
        let headers = vec![("content-type".to_owned(), content_type.to_owned())];
        http.replies.borrow_mut().push_back(Reply::EndlessWith(status, headers, drip));
        let e = block_on(timed(http.clone(), &time, 3).complete(&bundle(), &AbortSignal::new())).unwrap_err();
        assert_eq!(e.kind, ErrorKind::LlmTimeout, "{status}: {}", e.message);
        assert!(
            e.message.ends_with(&format!("deadline of 3 s: stopped while reading {what}")),
            "{}",
            e.message
        );
        if status != 200 {
            assert_eq!(e.status, Some(status));
        }
        assert_eq!(e.attempts, 1, "{status}: not retried past the deadline");
        assert_eq!(read.get(), 60, "{status}: 3 s of drip, not 64 KiB");
        assert_eq!(http.closed.get(), 1, "{status}: the body was dropped unfinished");
    }
}

#[test]
fn a_retry_that_would_start_after_the_deadline_is_not_made() {
    let time = Rc::new(FakeTime::default());
    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().extend([
        status(503, &[("Retry-After", "2")], r#"{"error":{"message":"overloaded"}}"#),
        status(503, &[("Retry-After", "2")], r#"{"error":{"message":"still overloaded"}}"#),
        Reply::Http(200, vec![], answer("too late", true)),
    ]);
    let e = block_on(timed(http.clone(), &time, 3).complete(&bundle(), &AbortSignal::new())).unwrap_err();
    assert_eq!((e.kind, e.status, e.attempts), (ErrorKind::LlmServer, Some(503), 2), "{}", e.message);
    assert_eq!(e.message, "still overloaded (not retried: the deadline of 3 s would pass first)");
    assert_eq!(*time.slept.borrow(), [2000], "the first retry fit in the deadline, the second did not");
    assert_eq!(http.sent.borrow().len(), 2);
    assert_eq!(http.replies.borrow().len(), 1, "the answer was never asked for");
}

#[test]
fn a_stall_in_the_middle_of_an_answer_ends_at_the_deadline_with_the_text_kept() {
    let time = Rc::new(FakeTime::default());
    let http = Rc::new(Scripted::default());
    let head: Vec<u8> = answer("Partial ", false).into_iter().take(2).flat_map(Result::unwrap).collect();
    http.replies.borrow_mut().push_back(Reply::ThenStall(head));
    let e = block_on(timed(http.clone(), &time, 3).complete(&bundle(), &AbortSignal::new())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmTimeout);
    assert!(e.message.ends_with("stopped while waiting for the rest of the answer"), "{}", e.message);
    assert_eq!(e.partial, "Partial ");
    assert_eq!(http.closed.get(), 1, "the body was dropped unfinished");
}

#[test]
fn without_a_clock_there_is_no_deadline_and_the_timer_is_not_raced() {
    let http = Rc::new(Scripted::default());
    http.replies.borrow_mut().push_back(Reply::Http(200, vec![], answer("in time", true)));
    let timer = Rc::new(RecordingTimer::default());
    let profile = LlmProfile { deadline_secs: Some(1), ..profile() };
    let retry = RetryPolicy { max_retries: 0, ..Default::default() };
    let llm = HttpLlm::new(profile, Some("k".into()), http, timer.clone(), retry).unwrap();
    let response = block_on(llm.complete(&bundle(), &AbortSignal::new())).unwrap();
    assert_eq!(response.content, "in time");
    assert!(timer.0.borrow().is_empty(), "no wait was started: {:?}", timer.0.borrow());
}
