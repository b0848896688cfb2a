//! The host's capabilities: everything the core needs from outside, as traits the host implements
//! (the CLI natively, the wasm bindings with the host's JS functions, tests with fakes): a clock,
//! an HTTP client that streams the response body and honours an abort signal, and a timer for
//! retry back-off. The core builds requests and parses responses; the host only moves bytes,
//! waits and tells the time. The lowest layer: it depends on no other module of the core.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::Stream;

/// A monotonic clock in milliseconds, injected by the host (the core reads no clock of its own).
pub trait Clock {
    /// Milliseconds since an arbitrary origin; never goes backwards.
    fn now_ms(&self) -> f64;
}

/// An HTTP request the core wants sent.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    /// `POST` for every LLM call.
    pub method: String,
    /// Absolute URL.
    pub url: String,
    /// Header names and values. May carry secrets: never log them.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: String,
}

impl HttpRequest {
    /// A header's value, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Why bytes did not move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportErrorKind {
    /// Connection refused or reset, DNS, TLS: the request may not have reached the server.
    Network,
    /// No byte for longer than the host's timeout.
    Timeout,
    /// The abort signal fired.
    Cancelled,
}

/// A failure of the host's HTTP client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportError {
    /// What kind of failure.
    pub kind: TransportErrorKind,
    /// What happened, for people.
    pub message: String,
}

impl TransportError {
    /// A new transport error.
    pub fn new(kind: TransportErrorKind, message: impl Into<String>) -> Self {
        TransportError { kind, message: message.into() }
    }
}

/// The response body, as it arrives.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Vec<u8>, TransportError>>>>;

/// A response: status and headers at once, the body streamed.
pub struct HttpResponse {
    /// HTTP status.
    pub status: u16,
    /// Header names (any case) and values.
    pub headers: Vec<(String, String)>,
    /// The body chunks.
    pub body: BodyStream,
}

impl std::fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpResponse").field("status", &self.status).field("headers", &self.headers).finish()
    }
}

impl HttpResponse {
    /// A header's value, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Sends requests. Implemented by the host: `fetch` in the extension, a native client in the CLI.
#[async_trait::async_trait(?Send)]
pub trait HttpClient {
    /// Sends the request and returns once the status and headers are in. The client stops
    /// reading, and ends the body with a `Cancelled` error, when `abort` fires.
    async fn send(&self, request: HttpRequest, abort: &AbortSignal) -> Result<HttpResponse, TransportError>;
}

/// Waits. Implemented by the host; used for retry back-off only.
#[async_trait::async_trait(?Send)]
pub trait Timer {
    /// Resolves after `ms` milliseconds, or earlier when `abort` fires.
    async fn sleep(&self, ms: u64, abort: &AbortSignal);
}

/// A cancellation flag shared between the one who cancels and the work in flight.
#[derive(Debug, Clone, Default)]
pub struct AbortSignal(Arc<AtomicBool>);

impl AbortSignal {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires the signal; every holder sees it.
    pub fn abort(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether `other` is a clone of this signal (fires with it).
    pub fn same_as(&self, other: &AbortSignal) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Whether the signal fired.
    pub fn is_aborted(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
