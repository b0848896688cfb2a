//! The HTTP client for the OpenAI, Anthropic and OpenAI-compatible APIs: [`HttpLlm`], with
//! bounded retries before the first byte of an answer, and a deadline on the whole request
//! (waiting for the headers, reading an error body, the waits between retries, the answer).

use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::rc::Rc;

use futures::StreamExt;
use futures::future::Either;
use futures::stream::LocalBoxStream;

use super::prompt::{ApiAdapter, PromptAdapter, PromptBundle};
use super::{Finish, LlmProvider, StreamEvent};
use crate::error::{ErrorKind, LlmError, REDACTED, redact_secrets};
use crate::formats::{Decoder, SseParser, Wire};
use crate::host::{
    AbortSignal, BodyStream, Clock, HttpClient, HttpRequest, HttpResponse, Timer, TransportError,
    TransportErrorKind,
};
use crate::profile::LlmProfile;

/// When and how often to try again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first back-off, doubled at each retry.
    pub base_delay_ms: u64,
    /// The longest wait; a server asking for longer is not waited for.
    pub max_delay_ms: u64,
    /// Seeds the jitter; hosts pass something that differs between runs, such as the time.
    pub jitter_seed: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay_ms: 1000,
            max_delay_ms: 30_000,
            jitter_seed: 0x9E37_79B9_7F4A_7C15,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based), or `None` when the server asks for longer
    /// than the policy allows. The server's `Retry-After` wins; otherwise exponential back-off
    /// with "equal jitter": between half and all of the doubled delay.
    pub fn delay_ms(&self, retry: u32, retry_after_ms: Option<u64>) -> Option<u64> {
        if let Some(ms) = retry_after_ms {
            return (ms <= self.max_delay_ms).then_some(ms);
        }
        let exp =
            self.base_delay_ms.saturating_mul(1u64 << retry.saturating_sub(1).min(20)).min(self.max_delay_ms);
        let mut x = self.jitter_seed ^ u64::from(retry).wrapping_mul(0xD1B5_4A32_D192_ED03);
        x ^= x >> 33;
        x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        x ^= x >> 33;
        let fraction = (x % 1000) as f64 / 1000.0;
        Some(exp / 2 + ((exp - exp / 2) as f64 * fraction) as u64)
    }
}

/// An HTTP LLM client for one profile.
pub struct HttpLlm {
    profile: LlmProfile,
    wire: Wire,
    api_key: Option<String>,
    http: Rc<dyn HttpClient>,
    timer: Rc<dyn Timer>,
    retry: RetryPolicy,
    clock: Option<Rc<dyn Clock>>,
}

impl std::fmt::Debug for HttpLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never printed.
        f.debug_struct("HttpLlm")
            .field("profile", &self.profile.id)
            .field("has_key", &self.api_key.is_some())
            .field("retry", &self.retry)
            .finish()
    }
}

impl HttpLlm {
    /// A client for a profile, with the key the host resolved from the profile's reference.
    pub fn new(
        profile: LlmProfile,
        api_key: Option<String>,
        http: Rc<dyn HttpClient>,
        timer: Rc<dyn Timer>,
        retry: RetryPolicy,
    ) -> Result<Self, LlmError> {
        profile.validate()?;
        let wire = Wire::of(profile.kind).ok_or_else(|| {
            LlmError::new(
                ErrorKind::LlmConfig,
                format!("profile '{}' is manual: it has no API to call", profile.id),
            )
        })?;
        Ok(HttpLlm {
            profile,
            wire,
            api_key: api_key.filter(|k| !k.is_empty()),
            http,
            timer,
            retry,
            clock: None,
        })
    }

    /// Times every request by the host's clock, so that one past the profile's deadline ends in
    /// `llm_timeout` (a server dripping bytes never trips the idle timeout). The deadline covers
    /// the whole request: every wait of it (for the headers, for a chunk of an answer or of an
    /// error body) is raced against the host's timer set to the time left, and a retry that would
    /// start after it does not start. Without a clock there is no deadline.
    pub fn with_clock(mut self, clock: Rc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }
}

impl LlmProvider for HttpLlm {
    fn profile(&self) -> &LlmProfile {
        &self.profile
    }

    fn adapter(&self) -> &dyn PromptAdapter {
        &ApiAdapter
    }

    fn stream_completion<'a>(
        &'a self,
        bundle: &PromptBundle,
        abort: &AbortSignal,
    ) -> LocalBoxStream<'a, StreamEvent> {
        let api = ApiAdapter.to_api_request(bundle, &self.capabilities());
        let phase = match self.wire.build(&self.profile, self.api_key.as_deref(), &api) {
            Ok(request) => Phase::Connect(request),
            Err(e) => Phase::Failed(e),
        };
        let run = Run {
            llm: self,
            abort: abort.clone(),
            phase,
            parser: SseParser::new(),
            decoder: Decoder::default(),
            partial: String::new(),
            held: String::new(),
            max_tokens: api.max_tokens,
            answer_cap: answer_cap(api.max_tokens),
            deadline: Deadline {
                clock: self.clock.as_deref(),
                timer: self.timer.as_ref(),
                ms: self.profile.deadline_ms(),
                started: Cell::new(None),
            },
            attempts: 0,
            pending: VecDeque::new(),
        };
        futures::stream::unfold(run, |mut run| async move { run.next().await.map(|c| (c, run)) })
            .boxed_local()
    }
}

/// The bytes of answer text a request asking for `max_tokens` may bring: 4 bytes a token, 4
/// times over (servers overshoot a little, never this much), at least 64 KiB, at most 64 MiB.
pub fn answer_cap(max_tokens: usize) -> usize {
    max_tokens.saturating_mul(16).clamp(64 << 10, 64 << 20)
}

/// The profile's deadline for one request, by the host's clock, counted from the first reading
/// (when the request is first polled). Without a clock there is none.
struct Deadline<'a> {
    clock: Option<&'a dyn Clock>,
    timer: &'a dyn Timer,
    ms: u64,
    started: Cell<Option<f64>>,
}

/// Why a wait ended before the work it waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The request's deadline passed.
    Deadline,
    /// The abort signal fired.
    Cancelled,
}

impl Deadline<'_> {
    /// Milliseconds left, by the clock read now; `None` without a clock.
    fn left(&self) -> Option<f64> {
        let now = self.clock?.now_ms();
        let started = self.started.get().unwrap_or(now);
        self.started.set(Some(started));
        Some(self.ms as f64 - (now - started))
    }

    /// Waits for `work`, but not past the deadline nor past an abort: the host's timer, set to
    /// the time left, is raced against it, and `work` is dropped when the timer wins (the host
    /// then stops the request). The core reads no clock of its own: a timer that wakes early
    /// only makes it look at the host's clock again.
    async fn wait<T>(&self, work: impl Future<Output = T>, abort: &AbortSignal) -> Result<T, Stop> {
        let mut work = std::pin::pin!(work);
        loop {
            let Some(left) = self.left() else { return Ok(work.await) };
            if left <= 0.0 {
                return Err(Stop::Deadline);
            }
            let sleep = self.timer.sleep(left.ceil() as u64, abort);
            match futures::future::select(work.as_mut(), sleep).await {
                Either::Left((out, _)) => return Ok(out),
                Either::Right(_) if abort.is_aborted() => return Err(Stop::Cancelled),
                Either::Right(_) => {}
            }
        }
    }

    /// The error of a request stopped by its deadline; `during` says what it was waiting for.
    fn error(&self, during: &str) -> LlmError {
        let secs = self.ms / 1000;
        LlmError::new(
            ErrorKind::LlmTimeout,
            format!("the request took longer than its deadline of {secs} s: stopped{during}"),
        )
    }
}

enum Phase {
    Connect(HttpRequest),
    Failed(LlmError),
    Body(BodyStream),
    Done,
}

/// One call in flight.
struct Run<'a> {
    llm: &'a HttpLlm,
    abort: AbortSignal,
    phase: Phase,
    parser: SseParser,
    decoder: Decoder,
    partial: String,
    /// Answer text not yet passed on, because it ends with what could be the start of the key.
    held: String,
    /// The answer's length asked for, in tokens.
    max_tokens: usize,
    /// The most bytes of answer text taken before the stream is stopped.
    answer_cap: usize,
    /// The deadline of the whole request.
    deadline: Deadline<'a>,
    attempts: u32,
    pending: VecDeque<StreamEvent>,
}

impl Run<'_> {
    async fn next(&mut self) -> Option<StreamEvent> {
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Some(chunk);
            }
            if self.past_deadline() {
                let e = self.deadline.error("");
                self.fail(e);
                continue;
            }
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::Failed(e) => self.fail(e),
                Phase::Connect(request) => match self.connect(request).await {
                    Ok(body) => self.phase = Phase::Body(body),
                    Err(e) => self.fail(e),
                },
                Phase::Body(mut body) => {
                    if self.abort.is_aborted() {
                        self.fail(cancelled());
                        continue;
                    }
                    match self.deadline.wait(body.next(), &self.abort).await {
                        Err(Stop::Deadline) => {
                            let e = self.deadline.error(" while waiting for the rest of the answer");
                            self.fail(e);
                        }
                        Err(Stop::Cancelled) => self.fail(cancelled()),
                        Ok(Some(Ok(bytes))) => {
                            self.phase = Phase::Body(body);
                            self.bytes(&bytes);
                        }
                        Ok(Some(Err(t))) => self.fail(transport(t)),
                        Ok(None) if self.decoder.finish_reason.is_some() && !self.parser.has_pending() => {
                            // Some servers close after the stop reason without an end marker.
                            self.finish();
                        }
                        Ok(None) => self.fail(LlmError::new(
                            ErrorKind::LlmMalformedStream,
                            "the connection closed before the answer was complete",
                        )),
                    }
                }
            }
        }
    }

    /// Whether the request, still running, has passed the profile's deadline.
    fn past_deadline(&self) -> bool {
        if matches!(self.phase, Phase::Done | Phase::Failed(_)) {
            return false;
        }
        self.deadline.left().is_some_and(|left| left <= 0.0)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        let events = self.parser.feed(bytes);
        for event in events {
            match self.decoder.event(self.llm.wire, &event) {
                Ok(d) => {
                    if let Some(role) = d.role {
                        self.pending.push_back(StreamEvent::Start { role });
                    }
                    if !d.content.is_empty() {
                        self.text(&d.content);
                    }
                    if self.decoder.done {
                        self.finish();
                        return;
                    }
                }
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
            if self.partial.len() + self.held.len() > self.answer_cap {
                let e = LlmError::new(
                    ErrorKind::LlmResponseTooLarge,
                    format!(
                        "the answer passed {} characters, far more than the {} tokens asked for: stopped",
                        self.answer_cap, self.max_tokens
                    ),
                );
                self.fail(e);
                return;
            }
        }
        if let Some(why) = self.parser.overflow() {
            let e = LlmError::new(ErrorKind::LlmResponseTooLarge, format!("{why}: stopped"));
            self.fail(e);
        }
    }

    /// Passes answer text on with the key redacted: a server that echoes the key (even split
    /// across chunks) never gets it into an answer, a log or a file. The end of the text that
    /// could begin the key is held until the next piece decides.
    fn text(&mut self, content: &str) {
        self.held.push_str(content);
        let key = self.llm.api_key.as_deref().filter(|k| k.len() >= 6);
        let mut out = match key {
            Some(k) => redact_secrets(&self.held, &[k]),
            None => std::mem::take(&mut self.held),
        };
        self.held.clear();
        if let Some(k) = key {
            let keep = (1..k.len())
                .rev()
                .find(|&n| out.is_char_boundary(out.len().saturating_sub(n)) && out.ends_with(&k[..n]));
            if let Some(n) = keep {
                self.held = out.split_off(out.len() - n);
            }
        }
        if !out.is_empty() {
            self.partial.push_str(&out);
            self.pending.push_back(StreamEvent::Delta(out));
        }
    }

    /// Passes on what was held back: the answer ended before the key was complete. A held text of
    /// 6 characters or more is a piece of the key, and is redacted.
    fn flush(&mut self) {
        if !self.held.is_empty() {
            let held = std::mem::take(&mut self.held);
            let rest = if held.len() >= 6 { REDACTED.to_owned() } else { held };
            self.partial.push_str(&rest);
            self.pending.push_back(StreamEvent::Delta(rest));
        }
    }

    fn finish(&mut self) {
        self.flush();
        self.pending.push_back(StreamEvent::Done(Finish {
            usage: self.decoder.usage,
            finish_reason: self.decoder.finish_reason.clone(),
            model: self.decoder.model.clone(),
            cost_usd: None,
        }));
        self.phase = Phase::Done;
    }

    fn fail(&mut self, mut e: LlmError) {
        self.flush();
        // A server's error body or event may echo the key: no message carries it on.
        let key: Vec<&str> = self.llm.api_key.as_deref().into_iter().collect();
        e.message = redact_secrets(&e.message, &key);
        e.partial = self.partial.clone();
        e.attempts = self.attempts;
        self.pending.push_back(StreamEvent::Failed(e));
        self.phase = Phase::Done;
    }

    /// Sends the request until it is answered with success, or retries are spent. Retries
    /// happen only here, before any byte of an answer. Every wait is bounded by the deadline: for
    /// the headers, for an error body or a page, and a retry that would start after it is not
    /// made.
    async fn connect(&mut self, request: HttpRequest) -> Result<BodyStream, LlmError> {
        let policy = self.llm.retry;
        let stopped = |stop: Stop, during: &str| match stop {
            Stop::Deadline => self.deadline.error(during),
            Stop::Cancelled => cancelled(),
        };
        let mut attempts = self.attempts;
        let outcome = loop {
            if self.abort.is_aborted() {
                break Err(cancelled());
            }
            attempts += 1;
            let sent =
                self.deadline.wait(self.llm.http.send(request.clone(), &self.abort), &self.abort).await;
            let error = match sent {
                Err(stop) => break Err(stopped(stop, " while waiting for the server to answer")),
                Ok(Ok(response)) if (200..300).contains(&response.status) => {
                    // A login portal or a proxy's page is not an answer: say so, not "malformed".
                    let html = response
                        .header("content-type")
                        .is_some_and(|t| t.to_ascii_lowercase().contains("text/html"));
                    if !html {
                        break Ok(response.body);
                    }
                    let page = match self.read_error_body(response.body).await {
                        Ok(page) => page,
                        Err(stop) => {
                            break Err(stopped(stop, " while reading the HTML page the server sent"));
                        }
                    };
                    let head: String =
                        page.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(200).collect();
                    break Err(LlmError::new(
                        ErrorKind::LlmMalformedStream,
                        format!(
                            "the server answered with an HTML page, not an event stream (is the base URL right?): {head}"
                        ),
                    ));
                }
                Ok(Ok(response)) => {
                    let retry_after = retry_after_ms(&response);
                    let status = response.status;
                    match self.read_error_body(response.body).await {
                        Ok(body) => self.llm.wire.status_error(status, retry_after, &body),
                        Err(stop) => {
                            let during = format!(" while reading the body of the server's {status} error");
                            let mut e = stopped(stop, &during);
                            e.status = Some(status);
                            break Err(e);
                        }
                    }
                }
                Ok(Err(t)) => transport(t),
            };
            let retry = attempts; // the retry this would be, 1-based
            if !error.is_retryable() || retry > policy.max_retries {
                break Err(error);
            }
            let Some(ms) = policy.delay_ms(retry, error.retry_after_ms) else { break Err(error) };
            if self.deadline.left().is_some_and(|left| ms as f64 >= left) {
                let mut error = error;
                let secs = self.deadline.ms / 1000;
                error.message =
                    format!("{} (not retried: the deadline of {secs} s would pass first)", error.message);
                break Err(error);
            }
            self.llm.timer.sleep(ms, &self.abort).await;
        };
        self.attempts = attempts;
        outcome
    }

    /// An error body, up to 64 KiB: enough for any error message, bounded against a runaway
    /// server; read within the deadline, so a body that drips ends with it.
    async fn read_error_body(&self, mut body: BodyStream) -> Result<String, Stop> {
        let mut bytes = Vec::new();
        while let Some(Ok(chunk)) = self.deadline.wait(body.next(), &self.abort).await? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > 64 * 1024 {
                break;
            }
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

fn cancelled() -> LlmError {
    LlmError::new(ErrorKind::LlmCancelled, "cancelled")
}

fn transport(t: TransportError) -> LlmError {
    let kind = match t.kind {
        TransportErrorKind::Network => ErrorKind::LlmNetwork,
        TransportErrorKind::Timeout => ErrorKind::LlmTimeout,
        TransportErrorKind::Cancelled => ErrorKind::LlmCancelled,
    };
    LlmError::new(kind, t.message)
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds.
fn retry_after_ms(response: &HttpResponse) -> Option<u64> {
    if let Some(ms) = response.header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Some(ms.max(0.0) as u64);
    }
    response
        .header("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|s| (s.max(0.0) * 1000.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_doubles_with_jitter_and_honours_retry_after() {
        let p = RetryPolicy::default();
        for retry in 1..=6 {
            let full = (1000u64 << (retry - 1)).min(30_000);
            let d = p.delay_ms(retry, None).unwrap();
            assert!(d >= full / 2 && d <= full, "retry {retry}: {d} not in [{}, {full}]", full / 2);
        }
        assert_eq!(p.delay_ms(1, Some(2500)), Some(2500));
        assert_eq!(p.delay_ms(1, Some(120_000)), None, "too long a wait is not waited for");
        let other = RetryPolicy { jitter_seed: 7, ..p };
        assert!((1..=6).any(|r| other.delay_ms(r, None) != p.delay_ms(r, None)), "the seed matters");
    }
}
