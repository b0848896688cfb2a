//! The native capabilities the core needs, for the CLI and for Rust tests that talk to real
//! servers: a blocking HTTP client (ureq: small, maintained, rustls, no async runtime to embed)
//! behind the core's `HttpClient`, a sleeping `Timer` and a monotonic `Clock`.

use std::io::Read;
use std::time::{Duration, Instant};

use condense_core::host::{
    AbortSignal, BodyStream, Clock, HttpClient, HttpRequest, HttpResponse, Timer, TransportError,
    TransportErrorKind,
};

/// A blocking HTTP client. The CLI runs one request at a time on one thread, so blocking inside
/// the core's futures is what we want; `timeout` bounds every wait for bytes.
pub struct NativeHttp {
    agent: ureq::Agent,
}

impl NativeHttp {
    pub fn new(timeout: Duration) -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(30)))
            .timeout_recv_response(Some(timeout))
            .timeout_per_read(Some(timeout))
            .build();
        NativeHttp { agent: config.into() }
    }
}

fn transport(e: ureq::Error) -> TransportError {
    match e {
        ureq::Error::Timeout(t) => {
            TransportError::new(TransportErrorKind::Timeout, format!("timed out ({t})"))
        }
        other => TransportError::new(TransportErrorKind::Network, other.to_string()),
    }
}

fn io_transport(e: std::io::Error) -> TransportError {
    let timed_out = e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|i| i.downcast_ref::<ureq::Error>())
            .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)));
    if timed_out {
        TransportError::new(TransportErrorKind::Timeout, format!("no data from the server: {e}"))
    } else {
        TransportError::new(TransportErrorKind::Network, format!("the connection broke: {e}"))
    }
}

#[async_trait::async_trait(?Send)]
impl HttpClient for NativeHttp {
    async fn send(&self, request: HttpRequest, abort: &AbortSignal) -> Result<HttpResponse, TransportError> {
        if abort.is_aborted() {
            return Err(TransportError::new(TransportErrorKind::Cancelled, "cancelled"));
        }
        let mut builder = self.agent.post(&request.url);
        for (k, v) in &request.headers {
            builder = builder.header(k, v);
        }
        let response = builder.send(request.body.as_bytes()).map_err(transport)?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let mut reader = response.into_body().into_reader();
        let abort = abort.clone();
        let mut ended = false;
        let body: BodyStream = Box::pin(futures::stream::poll_fn(move |_| {
            if ended {
                return std::task::Poll::Ready(None);
            }
            if abort.is_aborted() {
                ended = true;
                return std::task::Poll::Ready(Some(Err(TransportError::new(
                    TransportErrorKind::Cancelled,
                    "cancelled",
                ))));
            }
            let mut buf = vec![0u8; 16 * 1024];
            std::task::Poll::Ready(match reader.read(&mut buf) {
                Ok(0) => {
                    ended = true;
                    None
                }
                Ok(n) => {
                    buf.truncate(n);
                    Some(Ok(buf))
                }
                Err(e) => {
                    ended = true;
                    Some(Err(io_transport(e)))
                }
            })
        }));
        Ok(HttpResponse { status, headers, body })
    }
}

/// Sleeps the thread, in slices so that an abort cuts the wait short.
pub struct NativeTimer;

#[async_trait::async_trait(?Send)]
impl Timer for NativeTimer {
    async fn sleep(&self, ms: u64, abort: &AbortSignal) {
        let mut left = ms;
        while left > 0 && !abort.is_aborted() {
            let step = left.min(50);
            std::thread::sleep(Duration::from_millis(step));
            left -= step;
        }
    }
}

/// The monotonic clock of this process, for timing condensations.
#[derive(Debug, Clone, Copy)]
pub struct NativeClock(Instant);

impl NativeClock {
    /// A clock whose origin is now.
    pub fn start() -> Self {
        NativeClock(Instant::now())
    }
}

impl Default for NativeClock {
    fn default() -> Self {
        Self::start()
    }
}

impl Clock for NativeClock {
    fn now_ms(&self) -> f64 {
        self.0.elapsed().as_secs_f64() * 1000.0
    }
}
