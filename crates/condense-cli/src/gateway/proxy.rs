//! One request through the gateway: the guard, the route, the body read within the core's limit,
//! the core's decision ([`decide`]), the upstream request, and the answer streamed back.
//!
//! The answer is never buffered: each body frame the upstream sends is handed to the client as
//! it comes, and the next one is read from the upstream only when the client's connection took
//! the last one (hyper polls the body when it can write), so a slow client slows the upstream
//! instead of filling memory. A client that goes away drops the answer's body, which drops the
//! upstream response and closes its connection: the upstream sees the request aborted.
//!
//! Headers pass through untouched but for the hop-by-hop ones (which belong to each
//! connection), `Host` and `Content-Length` (set for the upstream), and the gateway's own
//! headers. The client's credentials go to the upstream and nowhere else: no header is logged.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::Stream;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderName, HeaderValue, ORIGIN, USER_AGENT};
use hyper::{HeaderMap, Method, Request, Response, StatusCode};

use condense_core::gateway::{
    CONVERSATION_ACCEPT_ENCODING, MAX_BODY_BYTES, Outgoing, RecallOp, Retry, Routed, SESSION_HEADER,
    TOKEN_HEADER, Untouched, UsageReader, Wire, answer_headers, error_body, log_line, may_be_too_long,
    upstream_headers,
};

use super::decide::{self, GatewayState, SharedState};
use super::store::{Store, apply_recall};
use super::summarize::Summarizer;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// A response body: a whole one the gateway wrote, or the upstream's, streamed.
pub(crate) type Body = UnsyncBoxBody<Bytes, BoxError>;

/// What every request shares.
pub(crate) struct Shared {
    /// The state, and the saver's signal.
    pub(crate) live: Arc<SharedState>,
    pub(crate) client: reqwest::Client,
    /// Writes the summaries of `--provider native`.
    pub(crate) summarizer: Option<Summarizer>,
    /// Where the state is written: at once, before the request carrying a new condensation
    /// leaves, so a gateway killed after that forward replays the same bytes.
    pub(crate) store: Store,
    /// The most an answer may take (`--stream-max-secs`), if any.
    pub(crate) stream_max: Option<Duration>,
    /// How long a client may send nothing (`--client-idle-secs`).
    pub(crate) client_idle: Duration,
}

impl Shared {
    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, GatewayState> {
        self.live.state()
    }
}

/// Serves one request. Never fails: every error is an answer in the route's error shape.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path_and_query = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let text =
        |name| request.headers().get(name).map(|v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()));
    let (host, origin) = (text(HOST), text(ORIGIN));
    let token = request.headers().get(TOKEN_HEADER).map(HeaderValue::as_bytes);
    let method = request.method().as_str().to_owned();
    let routed =
        decide::route(&shared.state(), &method, &path_and_query, host.as_deref(), origin.as_deref(), token);
    let response = match routed {
        Routed::Answer { status, body } => {
            json_response(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), body)
        }
        Routed::Upstream { wire, url, path } => forward(&shared, request, wire, url, &path).await,
    };
    Ok(response)
}

/// Reads the body, lets the core decide, and sends the request upstream.
async fn forward(
    shared: &Arc<Shared>,
    request: Request<Incoming>,
    wire: Wire,
    url: String,
    path: &str,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let too_large = || {
        let limit = MAX_BODY_BYTES >> 20;
        error(Some(wire), StatusCode::PAYLOAD_TOO_LARGE, &format!("request bodies are limited to {limit} MB"))
    };
    let declared = parts.headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        return too_large();
    }
    let body = match read_body(body, declared.unwrap_or(0) as usize, shared.client_idle).await {
        Ok(body) => body,
        Err(ReadError::TooLarge) => return too_large(),
        Err(ReadError::Idle) => {
            let why =
                format!("the request body stopped arriving: nothing for {} s", shared.client_idle.as_secs());
            log(&parts.method, parts.uri.path(), StatusCode::REQUEST_TIMEOUT, None, &why);
            return error(Some(wire), StatusCode::REQUEST_TIMEOUT, &why);
        }
        Err(ReadError::Failed(e)) => {
            return error(Some(wire), StatusCode::BAD_REQUEST, &format!("cannot read the request body: {e}"));
        }
    };
    let header_session = parts.headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok());
    let method_name = parts.method.as_str();
    // The count of the request as it will be forwarded, so the client measures what the model
    // will see and its own compaction stays idle.
    if let Some(answer) =
        decide::count_tokens(&mut shared.state(), wire, method_name, path, header_session, &body)
    {
        log(&parts.method, parts.uri.path(), StatusCode::OK, None, "counted as it will be forwarded");
        return json_response(StatusCode::OK, answer);
    }
    let agent = parts.headers.get(USER_AGENT).map(|v| String::from_utf8_lossy(v.as_bytes()));
    // Read and counted before the state is taken: another session's request does not wait on it.
    let prepared = shared.live.prepare(method_name, path, &body);
    let decided = decide::decide(
        &mut shared.state(),
        method_name,
        path,
        header_session,
        agent.as_deref(),
        &body,
        prepared,
    );
    let outgoing = decided.outgoing;
    // The files a condensation names are on disk before the request naming them leaves.
    write_recall(shared, outgoing.session(), decided.recall).await;
    // So is the condensation itself: a gateway killed once this request left replays its bytes.
    if matches!(outgoing, Outgoing::Rewritten { condensed_now: true, .. }) {
        save_now(shared).await;
    }
    if let Some(summarizer) = &shared.summarizer {
        summarizer.start(&shared.live, decided.jobs, &parts.headers);
    }
    if parts.method == Method::POST {
        shared.live.changed.notify_one();
    }
    let conversation = !matches!(outgoing, Outgoing::Client { reason: Untouched::NotAConversation, .. });
    let headers = upstream(&parts.headers, conversation);
    let session = outgoing.session().map(str::to_owned);
    let mut bill = decided.bill;
    let what = outgoing.describe();
    let client_body = body.clone();
    let sent = match outgoing {
        Outgoing::Rewritten { body, .. } => Bytes::from(body),
        Outgoing::Client { .. } => body,
    };
    let (method, shown) = (parts.method.clone(), parts.uri.path().to_owned());
    let send = |body: Bytes| {
        let mut request = shared.client.request(method.clone(), &url).headers(headers.clone());
        // `--stream-max-secs`: from the request sent to the answer's last byte (reqwest's
        // per-request timeout covers the body too); an answer cut by it ends short.
        if let Some(max) = shared.stream_max {
            request = request.timeout(max);
        }
        async move {
            match request.try_clone().expect("a body of bytes clones").body(body.clone()).send().await {
                // A pooled connection the upstream closed just after its last answer fails
                // before anything was read back: sent again once, on a fresh connection.
                Err(e) if e.is_request() && !e.is_timeout() && !e.is_body() => {
                    request.body(body).send().await
                }
                other => other,
            }
        }
    };
    // "Prompt too long" before any byte reached the client: condensed harder, retried once.
    let mut what = what;
    let upstream = match (send(sent).await, &session) {
        (Ok(r), Some(session)) if may_be_too_long(r.status().as_u16()) => {
            let (status, passed) = (r.status(), answer(r.headers()));
            let answer = r.bytes().await.unwrap_or_default();
            let retry =
                decide::too_long(&mut shared.state(), session, status.as_u16(), &answer, &client_body);
            let Some(Retry { body, recall, bill: retried }) = retry else {
                log(&method, &shown, status, Some(session), &what);
                let mut out =
                    Response::new(UnsyncBoxBody::new(Full::new(answer).map_err(|never| match never {})));
                *out.status_mut() = status;
                *out.headers_mut() = passed;
                return out;
            };
            log(&method, &shown, status, Some(session), "prompt too long: condensed further, retrying once");
            write_recall(shared, Some(session), recall).await;
            save_now(shared).await;
            what = "condensed after the upstream's prompt too long".to_owned();
            bill = Some(retried);
            send(Bytes::from(body)).await
        }
        (upstream, _) => upstream,
    };
    let response = match upstream {
        Ok(r) => r,
        Err(e) => {
            let (status, why) = if e.is_timeout() {
                (StatusCode::GATEWAY_TIMEOUT, "the upstream did not answer in time")
            } else {
                (StatusCode::BAD_GATEWAY, "the upstream cannot be reached")
            };
            log(&method, &shown, status, session.as_deref(), &what);
            let target = url.split('?').next().unwrap_or_default();
            // reqwest's error names the URL, never a header.
            let detail = e.without_url().to_string();
            return error(Some(wire), status, &format!("{why} ({target}): {detail}"));
        }
    };
    log(&method, &shown, response.status(), session.as_deref(), &what);
    stream_back(shared, response, session, bill)
}

/// Why a request body could not be read.
enum ReadError {
    /// Above the core's limit.
    TooLarge,
    /// Nothing arrived for `--client-idle-secs`.
    Idle,
    /// The connection failed.
    Failed(BoxError),
}

/// The request body, read frame by frame within the core's limit: a client that sends nothing
/// for `idle` (a `Content-Length` longer than what it sends) is given up, as one that sends no
/// headers is. `expected` (the declared length) sizes the buffer once.
async fn read_body(body: Incoming, expected: usize, idle: Duration) -> Result<Bytes, ReadError> {
    let mut body = Limited::new(body, MAX_BODY_BYTES as usize);
    let mut out = BytesMut::with_capacity(expected.min(MAX_BODY_BYTES as usize));
    loop {
        match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => return Err(ReadError::Idle),
            Ok(None) => return Ok(out.freeze()),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    out.extend_from_slice(&data);
                }
            }
            Ok(Some(Err(e))) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
                return Err(ReadError::TooLarge);
            }
            Ok(Some(Err(e))) => return Err(ReadError::Failed(e)),
        }
    }
}

/// Writes the state now (on a blocking thread), and returns once it is on disk.
async fn save_now(shared: &Arc<Shared>) {
    let shared = Arc::clone(shared);
    let _ = tokio::task::spawn_blocking(move || save(&shared, &shared.store)).await;
}

/// Writes the state to `store` (the sessions that changed, then the index, each atomically; see
/// `store.rs`), saying so when it cannot.
pub(crate) fn save(shared: &Shared, store: &Store) {
    // One save at a time, in the order of their snapshots; the state's lock only for the
    // snapshot, which copies no message.
    let mut saved = store.saving();
    let snapshot = decide::snapshot(&shared.state());
    let changes = saved.changes(snapshot.files());
    let (failed, error) = store.write_changes(&changes);
    for name in &failed {
        saved.unsaved(name);
    }
    if let Some(e) = error {
        crate::out::note(&format!(
            "gateway: cannot write the state ({} and its sessions): {e}",
            store.path().display()
        ));
    }
}

/// Writes and removes the recall files the core decided on (on a blocking thread: a file may
/// be megabytes), and tells the core which could not be written.
async fn write_recall(shared: &Arc<Shared>, session: Option<&str>, ops: Vec<RecallOp>) {
    if ops.is_empty() {
        return;
    }
    let failed = tokio::task::spawn_blocking(move || apply_recall(ops))
        .await
        .unwrap_or_else(|e| vec![(String::new(), format!("the writer failed: {e}"))]);
    for (path, why) in failed {
        crate::out::note(&format!("gateway: cannot write the recall file {path}: {why}"));
        if let Some(session) = session {
            decide::recall_failed(&mut shared.state(), session, &path, &why);
        }
    }
}

/// One line per request on stderr: method, the client's path without its query, status,
/// session, what went out. Never a header.
fn log(method: &Method, path: &str, status: StatusCode, session: Option<&str>, what: &str) {
    crate::out::note(&log_line(method.as_str(), path, status.as_u16(), session, what));
}

/// The headers sent upstream: the core's [`upstream_headers`] of the client's.
fn upstream(client: &HeaderMap, conversation: bool) -> HeaderMap {
    let pairs: Vec<(&HeaderName, HeaderValue)> = client.iter().map(|(n, v)| (n, v.clone())).collect();
    let identity = HeaderValue::from_static(CONVERSATION_ACCEPT_ENCODING);
    header_map(upstream_headers(&pairs, |v| v.to_str().ok(), conversation, identity))
}

/// The answer's headers the client gets: the core's [`answer_headers`] of the upstream's.
fn answer(upstream: &HeaderMap) -> HeaderMap {
    let pairs: Vec<(&HeaderName, HeaderValue)> = upstream.iter().map(|(n, v)| (n, v.clone())).collect();
    header_map(answer_headers(&pairs, |v| v.to_str().ok()))
}

/// Header pairs as a map, in order (each name was a header's already).
fn header_map(pairs: Vec<(String, HeaderValue)>) -> HeaderMap {
    let mut headers = HeaderMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        if let Ok(name) = HeaderName::from_bytes(name.as_bytes()) {
            headers.append(name, value);
        }
    }
    headers
}

/// The upstream's answer, streamed to the client, its usage read on the way.
fn stream_back(
    shared: &Arc<Shared>,
    response: reqwest::Response,
    session: Option<String>,
    bill: Option<u64>,
) -> Response<Body> {
    let status = response.status();
    // The body is re-framed for the client's connection (hyper writes chunks or the length).
    let headers = answer(response.headers());
    let reader = session.as_ref().map(|_| {
        UsageReader::new(headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default())
    });
    let tap =
        Tap { inner: Box::pin(response.bytes_stream()), reader, session, bill, shared: Arc::clone(shared) };
    let body = StreamBody::new(futures::StreamExt::map(tap, |chunk| chunk.map(Frame::data)));
    let mut out = Response::new(UnsyncBoxBody::new(body));
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    out
}

/// The upstream's body as it passes, with the usage reader watching. When the body ends, or is
/// dropped because the client went away, the usage seen is added to the session's counts.
struct Tap {
    inner: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    reader: Option<UsageReader>,
    session: Option<String>,
    /// The request's bill, handed back with the usage.
    bill: Option<u64>,
    shared: Arc<Shared>,
}

impl Stream for Tap {
    type Item = Result<Bytes, BoxError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                if let Some(reader) = &mut self.reader {
                    reader.feed(&chunk);
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Box::new(e.without_url())))),
            other => other.map(|_| None),
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        let (Some(reader), Some(session)) = (self.reader.take(), self.session.take()) else { return };
        if let Some(usage) = reader.finish() {
            decide::usage(&mut self.shared.state(), &session, self.bill, usage);
            self.shared.live.changed.notify_one();
        }
    }
}

fn json_response(status: StatusCode, body: String) -> Response<Body> {
    let bytes = Bytes::from(body);
    let mut response = Response::new(UnsyncBoxBody::new(Full::new(bytes).map_err(|never| match never {})));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The gateway's own error, in the shape the route's API uses for its errors, so that the
/// client shows it as it shows the API's.
fn error(wire: Option<Wire>, status: StatusCode, message: &str) -> Response<Body> {
    json_response(status, error_body(wire, status.as_u16(), message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_and_the_gateways_own_headers_stay_here_and_credentials_go_on() {
        let mut client = HeaderMap::new();
        for (k, v) in [
            ("host", "127.0.0.1:4141"),
            ("connection", "keep-alive, x-hop"),
            ("x-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("transfer-encoding", "chunked"),
            ("content-length", "12"),
            ("expect", "100-continue"),
            (SESSION_HEADER, "s"),
            (TOKEN_HEADER, "t"),
            ("x-api-key", "sk-1"),
            ("authorization", "Bearer sk-2"),
            ("anthropic-beta", "context-management-2025-06-27"),
            ("accept-encoding", "gzip"),
        ] {
            client.append(k, v.parse().unwrap());
        }
        let passed = upstream(&client, false);
        let mut names: Vec<&str> = passed.keys().map(|k| k.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["accept-encoding", "anthropic-beta", "authorization", "x-api-key"]);
        assert_eq!(passed["accept-encoding"], "gzip");
        assert_eq!(upstream(&client, true)["accept-encoding"], "identity");
    }
}
