//! The native capabilities the core needs, for the CLI and for Rust tests that talk to real
//! servers: an HTTP client (ureq: small, maintained, rustls, no async runtime to embed) behind the
//! core's `HttpClient`, a `Timer` and a monotonic `Clock`.
//!
//! ureq blocks, and the core races every wait of a request against its deadline (the timer set
//! to the time left). So the blocking parts run on threads of their own and hand their results
//! to the core's futures through channels: the wait for the headers, each read of the body, and
//! each sleep. A future the core drops (the deadline passed) tells its thread to stop; the
//! request's connection is closed as soon as the thread's blocking read returns (at the latest
//! after the idle timeout), and at once when the process ends.

use std::io::Read;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::channel::{mpsc, oneshot};

use condense_core::host::{
    AbortSignal, BodyStream, Clock, HttpClient, HttpRequest, HttpResponse, Timer, TransportError,
    TransportErrorKind,
};

/// An HTTP client over ureq; `timeout` bounds every wait for bytes (the idle timeout), the core's
/// deadline the whole request.
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
        // The wait for the headers, on a thread: the core may stop waiting (its deadline), and
        // then drops the receiver; the response, when it comes, is dropped with the thread.
        let (answered, response) = oneshot::channel();
        let agent = self.agent.clone();
        std::thread::spawn(move || {
            let mut builder = agent.post(&request.url);
            for (k, v) in &request.headers {
                builder = builder.header(k, v);
            }
            let _ = answered.send(builder.send(request.body.as_bytes()));
        });
        let response = response
            .await
            .map_err(|_| {
                TransportError::new(TransportErrorKind::Network, "the HTTP thread ended without an answer")
            })?
            .map_err(transport)?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let reader = response.into_body().into_reader();
        Ok(HttpResponse { status, headers, body: body_stream(reader, abort.clone()) })
    }
}

/// The body, read on a thread of its own and passed on one chunk at a time (the thread reads the
/// next chunk only once the last one was taken, so nothing piles up). The stream ends with
/// `Cancelled` once `abort` fires; when the core drops it, the thread stops at its next chunk
/// and the connection closes.
fn body_stream(mut reader: impl Read + Send + 'static, abort: AbortSignal) -> BodyStream {
    let (mut chunks, received) = mpsc::channel::<Result<Vec<u8>, TransportError>>(0);
    let reading = abort.clone();
    std::thread::spawn(move || {
        loop {
            if reading.is_aborted() {
                return;
            }
            let mut buf = vec![0u8; 16 * 1024];
            let chunk = match reader.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    buf.truncate(n);
                    Ok(buf)
                }
                Err(e) => Err(io_transport(e)),
            };
            let last = chunk.is_err();
            if futures::executor::block_on(futures::SinkExt::send(&mut chunks, chunk)).is_err() || last {
                return; // the core dropped the body, or the read failed
            }
        }
    });
    let mut ended = false;
    let mut received = received;
    Box::pin(futures::stream::poll_fn(move |cx| {
        if ended {
            return std::task::Poll::Ready(None);
        }
        if abort.is_aborted() {
            ended = true;
            received.close();
            return std::task::Poll::Ready(Some(Err(TransportError::new(
                TransportErrorKind::Cancelled,
                "cancelled",
            ))));
        }
        let next = received.poll_next_unpin(cx);
        if let std::task::Poll::Ready(None | Some(Err(_))) = &next {
            ended = true;
        }
        next
    }))
}

/// Sleeps on a thread; the core's future meanwhile leaves the thread it runs on free for the
/// request it races. The sleeping thread looks at the abort signal every 50 ms, and is woken at
/// once when the core drops the wait (the request it raced ended first), so none lingers.
pub struct NativeTimer;

/// Tells a sleeping thread to stop: set and notified when the wait is dropped.
struct Wake(Arc<(Mutex<bool>, Condvar)>);

impl Drop for Wake {
    fn drop(&mut self) {
        let (stop, woken) = &*self.0;
        *stop.lock().unwrap_or_else(PoisonError::into_inner) = true;
        woken.notify_one();
    }
}

#[async_trait::async_trait(?Send)]
impl Timer for NativeTimer {
    async fn sleep(&self, ms: u64, abort: &AbortSignal) {
        if ms == 0 || abort.is_aborted() {
            return;
        }
        let (done, wait) = oneshot::channel::<()>();
        let wake = Wake(Arc::new((Mutex::new(false), Condvar::new())));
        let shared = Arc::clone(&wake.0);
        let abort = abort.clone();
        std::thread::spawn(move || {
            let (stop, woken) = &*shared;
            let until = Instant::now() + Duration::from_millis(ms);
            let mut stopped = stop.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                let now = Instant::now();
                if *stopped || abort.is_aborted() || now >= until {
                    break;
                }
                let slice = (until - now).min(Duration::from_millis(50));
                stopped = woken.wait_timeout(stopped, slice).unwrap_or_else(PoisonError::into_inner).0;
            }
            drop(stopped);
            let _ = done.send(());
        });
        let _ = wait.await;
        drop(wake);
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
