//! The host's capabilities, injected as JS functions and lent to the core through its traits:
//! `fetch` (a request and an `AbortSignal` in, a Response-like object with a `ReadableStream` body
//! out), `now` (milliseconds) and `log` (level, message); and, when the host can run programs,
//! `platform`, `envVar`, `locate` and `run` (a command spec and an `AbortSignal` in, the program's
//! output out), lent as the core's [`CommandRunner`].

use std::cell::RefCell;
use std::rc::Rc;

use condense_core::ErrorKind;
use condense_core::host::{
    AbortSignal, BodyStream, Clock, CommandError, CommandErrorKind, CommandOutput, CommandRunner,
    CommandSpec, HttpClient, HttpRequest, HttpResponse, Timer, TransportError, TransportErrorKind,
};
use condense_protocol::calls::FetchRequest;
use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::convert::{error, from_js, to_js};

/// How long a response may go without a byte, by default.
pub(crate) const DEFAULT_READ_TIMEOUT_MS: f64 = 60_000.0;

/// The functions the host object carried, checked once at construction.
pub(crate) struct JsHost {
    fetch: Function,
    now: Function,
    log: Function,
    read_timeout_ms: f64,
    /// The program runner, when the host lends one.
    programs: Option<Programs>,
    /// The `AbortController`s of requests and programs in flight, with the core signal of the
    /// work they serve.
    in_flight: RefCell<Vec<(AbortSignal, JsValue)>>,
}

/// The host's functions for running programs: `run` is required, the others have defaults (no
/// variables, nothing located, no file read, the platform `linux`).
struct Programs {
    platform: String,
    env_var: Option<Function>,
    locate: Option<Function>,
    read_text: Option<Function>,
    run: Function,
}

fn optional_function(host: &JsValue, name: &str) -> Result<Option<Function>, JsValue> {
    let value = get(host, name);
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    value.dyn_into::<Function>().map(Some).map_err(|_| {
        error(ErrorKind::InvalidInput, &format!("the host object's `{name}` must be a function"))
    })
}

fn function(host: &JsValue, name: &str) -> Result<Function, JsValue> {
    Reflect::get(host, &name.into())
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
        .ok_or_else(|| error(ErrorKind::InvalidInput, &format!("the host object needs a function `{name}`")))
}

fn get(target: &JsValue, name: &str) -> JsValue {
    Reflect::get(target, &name.into()).unwrap_or(JsValue::UNDEFINED)
}

fn describe(value: &JsValue) -> String {
    value
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| value.as_string())
        .unwrap_or_else(|| format!("{value:?}"))
}

impl JsHost {
    pub(crate) fn new(host: &JsValue) -> Result<Rc<Self>, JsValue> {
        let read_timeout_ms =
            get(host, "readTimeoutMs").as_f64().filter(|t| *t > 0.0).unwrap_or(DEFAULT_READ_TIMEOUT_MS);
        let programs = optional_function(host, "run")?.map(|run| -> Result<Programs, JsValue> {
            Ok(Programs {
                platform: get(host, "platform").as_string().unwrap_or_else(|| "linux".to_owned()),
                env_var: optional_function(host, "envVar")?,
                locate: optional_function(host, "locate")?,
                read_text: optional_function(host, "readText")?,
                run,
            })
        });
        Ok(Rc::new(JsHost {
            fetch: function(host, "fetch")?,
            now: function(host, "now")?,
            log: function(host, "log")?,
            read_timeout_ms,
            programs: programs.transpose()?,
            in_flight: RefCell::new(Vec::new()),
        }))
    }

    /// Whether the host lends a program runner (`run`).
    pub(crate) fn runs_programs(&self) -> bool {
        self.programs.is_some()
    }

    /// Writes a line to the host's log. Never given secrets.
    pub(crate) fn log(&self, level: &str, message: &str) {
        let _ = self.log.call2(&JsValue::NULL, &level.into(), &message.into());
    }

    /// Fires `signal` and aborts every request and program serving it.
    pub(crate) fn abort(&self, signal: &AbortSignal) {
        signal.abort();
        for (s, controller) in self.in_flight.borrow().iter() {
            if s.is_aborted() {
                abort_controller(controller);
            }
        }
    }

    fn forget(&self, controller: &JsValue) {
        self.in_flight.borrow_mut().retain(|(_, c)| c != controller);
    }
}

fn abort_controller(controller: &JsValue) {
    if let Ok(abort) = get(controller, "abort").dyn_into::<Function>() {
        let _ = abort.call0(controller);
    }
}

fn new_abort_controller() -> Result<JsValue, TransportError> {
    let ctor = get(&js_sys::global(), "AbortController").dyn_into::<Function>().map_err(|_| {
        TransportError::new(TransportErrorKind::Network, "this JS runtime has no AbortController")
    })?;
    Reflect::construct(&ctor, &Array::new())
        .map_err(|e| TransportError::new(TransportErrorKind::Network, describe(&e)))
}

impl Clock for JsHost {
    fn now_ms(&self) -> f64 {
        self.now.call0(&JsValue::NULL).ok().and_then(|v| v.as_f64()).unwrap_or(0.0)
    }
}

/// A timer of the runtime's `setTimeout`: a promise resolved after `ms` milliseconds with `value`,
/// cleared when dropped so that no stray timer keeps the runtime alive.
struct Delay {
    promise: Promise,
    handle: JsValue,
}

impl Delay {
    fn new(ms: f64, value: JsValue) -> Delay {
        let mut handle = JsValue::UNDEFINED;
        let promise = Promise::new(&mut |resolve, _reject| {
            let Ok(set_timeout) = get(&js_sys::global(), "setTimeout").dyn_into::<Function>() else {
                let _ = resolve.call1(&JsValue::NULL, &value);
                return;
            };
            let value = value.clone();
            let done = Closure::once_into_js(move || {
                let _ = resolve.call1(&JsValue::NULL, &value);
            });
            handle = set_timeout.call2(&JsValue::NULL, &done, &ms.into()).unwrap_or(JsValue::UNDEFINED);
        });
        Delay { promise, handle }
    }
}

impl Drop for Delay {
    fn drop(&mut self) {
        if let Ok(clear) = get(&js_sys::global(), "clearTimeout").dyn_into::<Function>() {
            let _ = clear.call1(&JsValue::NULL, &self.handle);
        }
    }
}

/// A turn of the runtime's event loop: resolves from `setImmediate` (Node, the extension host) or
/// else `setTimeout(0)`, so that whatever waits on the thread (a command, a message, I/O) runs
/// before the work that awaits it goes on. Long work awaits it between slices.
pub(crate) async fn next_turn() {
    let promise = Promise::new(&mut |resolve, _reject| {
        let global = js_sys::global();
        let done = Closure::once_into_js(move || {
            let _ = resolve.call0(&JsValue::NULL);
        });
        if let Ok(set_immediate) = get(&global, "setImmediate").dyn_into::<Function>() {
            let _ = set_immediate.call1(&JsValue::NULL, &done);
        } else if let Ok(set_timeout) = get(&global, "setTimeout").dyn_into::<Function>() {
            let _ = set_timeout.call2(&JsValue::NULL, &done, &0.into());
        } else {
            let _ = done.dyn_ref::<Function>().map(|f| f.call0(&JsValue::NULL));
        }
    });
    let _ = JsFuture::from(promise).await;
}

/// Retry back-off, and the timer the core races against a request's waits (its deadline): waits
/// in short slices so that an abort ends the wait soon; dropped, it clears its `setTimeout`.
pub(crate) struct JsTimer;

#[async_trait::async_trait(?Send)]
impl Timer for JsTimer {
    async fn sleep(&self, ms: u64, abort: &AbortSignal) {
        let mut left = ms as f64;
        while left > 0.0 && !abort.is_aborted() {
            let slice = left.min(100.0);
            let _ = JsFuture::from(Delay::new(slice, JsValue::UNDEFINED).promise.clone()).await;
            left -= slice;
        }
    }

    async fn turn(&self) {
        next_turn().await;
    }
}

/// The host's `fetch`, behind the core's [`HttpClient`].
pub(crate) struct JsHttp(pub(crate) Rc<JsHost>);

#[async_trait::async_trait(?Send)]
impl HttpClient for JsHttp {
    async fn send(&self, request: HttpRequest, abort: &AbortSignal) -> Result<HttpResponse, TransportError> {
        let host = &self.0;
        let controller = new_abort_controller()?;
        if abort.is_aborted() {
            return Err(TransportError::new(TransportErrorKind::Cancelled, "cancelled before sending"));
        }
        host.in_flight.borrow_mut().push((abort.clone(), controller.clone()));
        let mut waiting = Unanswered { host: host.as_ref(), controller: &controller, answered: false };
        let result = send(host, &request, abort, &controller).await;
        waiting.answered = true;
        if result.is_err() {
            host.forget(&controller);
        }
        result
    }
}

/// A request waiting for its headers. The core drops the wait when the request's deadline passes
/// first: the fetch is then aborted, so the connection closes and no stray request runs on.
struct Unanswered<'a> {
    host: &'a JsHost,
    controller: &'a JsValue,
    answered: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if !self.answered {
            abort_controller(self.controller);
            self.host.forget(self.controller);
        }
    }
}

async fn send(
    host: &Rc<JsHost>,
    request: &HttpRequest,
    abort: &AbortSignal,
    controller: &JsValue,
) -> Result<HttpResponse, TransportError> {
    let fetch_request = FetchRequest {
        method: request.method.clone(),
        url: request.url.clone(),
        headers: request.headers.iter().cloned().collect(),
        body: request.body.clone(),
    };
    let req = to_js(&fetch_request).map_err(|_| {
        TransportError::new(TransportErrorKind::Network, "the request cannot be handed to fetch")
    })?;
    let signal = get(controller, "signal");

    let failed = |e: JsValue| {
        if abort.is_aborted() {
            TransportError::new(TransportErrorKind::Cancelled, "cancelled")
        } else {
            TransportError::new(TransportErrorKind::Network, describe(&e))
        }
    };
    let promise = host.fetch.call2(&JsValue::NULL, &req, &signal).map_err(failed)?;
    let response = JsFuture::from(Promise::resolve(&promise)).await.map_err(failed)?;

    let status = get(&response, "status").as_f64().ok_or_else(|| {
        TransportError::new(TransportErrorKind::Network, "the host's fetch returned no numeric `status`")
    })? as u16;
    let headers = read_headers(&get(&response, "headers"));
    let body = get(&response, "body");
    let reader = if body.is_null() || body.is_undefined() {
        None
    } else {
        let get_reader = get(&body, "getReader").dyn_into::<Function>().map_err(|_| {
            TransportError::new(TransportErrorKind::Network, "the response body is not a ReadableStream")
        })?;
        Some(get_reader.call0(&body).map_err(failed)?)
    };
    let body = body_stream(Rc::clone(host), reader, abort.clone(), controller.clone());
    Ok(HttpResponse { status, headers, body })
}

/// Header pairs from a `Headers` object, an array of pairs, or a plain object.
fn read_headers(headers: &JsValue) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if headers.is_null() || headers.is_undefined() {
        return out;
    }
    let pairs: Vec<JsValue> = match js_sys::try_iter(headers) {
        Ok(Some(iter)) => iter.filter_map(Result::ok).collect(),
        _ => Object::entries(&Object::from(headers.clone())).iter().collect(),
    };
    for pair in pairs {
        let pair = Array::from(&pair);
        if let (Some(k), Some(v)) = (pair.get(0).as_string(), pair.get(1).as_string()) {
            out.push((k, v));
        }
    }
    out
}

struct Reading {
    host: Rc<JsHost>,
    reader: Option<JsValue>,
    abort: AbortSignal,
    controller: JsValue,
}

impl Drop for Reading {
    fn drop(&mut self) {
        // The core stopped reading (done, failed, or dropped at its deadline): release the stream
        // and, when it had not ended, abort the request so its connection closes.
        if let Some(reader) = self.reader.take() {
            if let Ok(cancel) = get(&reader, "cancel").dyn_into::<Function>()
                && let Ok(p) = cancel.call0(&reader)
                // A rejected cancel must not surface as an unhandled rejection.
                && let Ok(catch) = get(&p, "catch").dyn_into::<Function>()
            {
                let _ = catch.call1(&p, &Closure::once_into_js(|_: JsValue| {}));
            }
            abort_controller(&self.controller);
        }
        self.host.forget(&self.controller);
    }
}

/// Reads the body chunk by chunk. A read that takes longer than the host's read timeout ends the
/// body with `Timeout`; the abort signal ends it with `Cancelled`.
fn body_stream(
    host: Rc<JsHost>,
    reader: Option<JsValue>,
    abort: AbortSignal,
    controller: JsValue,
) -> BodyStream {
    let state = Reading { host, reader, abort, controller };
    Box::pin(futures::stream::unfold(Some(state), |state| async move {
        let mut state = state?;
        let reader = state.reader.clone()?;
        if state.abort.is_aborted() {
            return Some((Err(TransportError::new(TransportErrorKind::Cancelled, "cancelled")), None));
        }
        let read = get(&reader, "read").dyn_into::<Function>().ok()?;
        let pending = match read.call0(&reader) {
            Ok(p) => Promise::resolve(&p),
            Err(e) => {
                return Some((Err(TransportError::new(TransportErrorKind::Network, describe(&e))), None));
            }
        };
        let timed_out = JsValue::from_str("__condense_read_timeout__");
        let timer = Delay::new(state.host.read_timeout_ms, timed_out.clone());
        let race = Promise::race(&Array::of2(&pending, &timer.promise));
        let outcome = JsFuture::from(race).await;
        drop(timer);
        match outcome {
            Ok(v) if v == timed_out => {
                abort_controller(&state.controller);
                let secs = state.host.read_timeout_ms / 1000.0;
                let e = TransportError::new(TransportErrorKind::Timeout, format!("no data for {secs} s"));
                Some((Err(e), None))
            }
            Ok(v) => {
                if get(&v, "done").as_bool().unwrap_or(false) {
                    state.reader = None;
                    return None;
                }
                let chunk = get(&v, "value");
                let bytes = if let Some(text) = chunk.as_string() {
                    text.into_bytes()
                } else {
                    Uint8Array::new(&chunk).to_vec()
                };
                Some((Ok(bytes), Some(state)))
            }
            Err(e) => {
                let kind = if state.abort.is_aborted() {
                    TransportErrorKind::Cancelled
                } else {
                    TransportErrorKind::Network
                };
                Some((Err(TransportError::new(kind, describe(&e))), None))
            }
        }
    }))
}

/// The host's `run`, `locate`, `envVar` and `platform`, behind the core's [`CommandRunner`]. Like
/// a request, each run gets its own `AbortController`, fired by [`JsHost::abort`].
#[derive(Clone)]
pub(crate) struct JsRunner(pub(crate) Rc<JsHost>);

impl JsRunner {
    /// The runner, when the host lends one.
    pub(crate) fn of(host: &Rc<JsHost>) -> Option<Self> {
        host.runs_programs().then(|| JsRunner(Rc::clone(host)))
    }

    fn programs(&self) -> &Programs {
        self.0.programs.as_ref().expect("a JsRunner is only made for a host that runs programs")
    }
}

fn command_error(kind: CommandErrorKind, message: impl Into<String>) -> CommandError {
    CommandError::new(kind, message)
}

/// A rejection of the host's `run`: a `{kind, message, stderr}` object when the host typed it,
/// else an `io` error with what it threw.
fn run_rejection(value: &JsValue, abort: &AbortSignal) -> CommandError {
    if abort.is_aborted() {
        let stderr = get(value, "stderr").as_string().unwrap_or_default();
        return CommandError { stderr, ..command_error(CommandErrorKind::Cancelled, "cancelled") };
    }
    let typed = !get(value, "kind").is_undefined();
    if typed {
        let shape = js_sys::Object::new();
        for key in ["kind", "message", "stderr"] {
            let v = get(value, key);
            if !v.is_undefined() {
                let _ = Reflect::set(&shape, &key.into(), &v);
            }
        }
        if let Ok(e) = from_js::<CommandError>(&shape, "the host's run error") {
            return e;
        }
    }
    command_error(CommandErrorKind::Io, describe(value))
}

#[async_trait::async_trait(?Send)]
impl CommandRunner for JsRunner {
    fn platform(&self) -> String {
        self.programs().platform.clone()
    }

    fn env_var(&self, name: &str) -> Option<String> {
        let f = self.programs().env_var.as_ref()?;
        f.call1(&JsValue::NULL, &name.into()).ok()?.as_string()
    }

    fn locate(&self, program: &str) -> Option<String> {
        let f = self.programs().locate.as_ref()?;
        f.call1(&JsValue::NULL, &program.into()).ok()?.as_string()
    }

    fn read_text(&self, path: &str, max_bytes: usize) -> Option<String> {
        let f = self.programs().read_text.as_ref()?;
        f.call2(&JsValue::NULL, &path.into(), &(max_bytes as f64).into()).ok()?.as_string()
    }

    async fn run(&self, spec: CommandSpec, abort: &AbortSignal) -> Result<CommandOutput, CommandError> {
        let host = &self.0;
        if abort.is_aborted() {
            return Err(command_error(CommandErrorKind::Cancelled, "cancelled before starting"));
        }
        let controller =
            new_abort_controller().map_err(|e| command_error(CommandErrorKind::Io, e.message))?;
        let js_spec = to_js(&spec).map_err(|e| command_error(CommandErrorKind::Io, describe(&e)))?;
        host.in_flight.borrow_mut().push((abort.clone(), controller.clone()));
        let signal = get(&controller, "signal");
        let outcome = match self.programs().run.call2(&JsValue::NULL, &js_spec, &signal) {
            Ok(promise) => JsFuture::from(Promise::resolve(&promise)).await,
            Err(e) => Err(e),
        };
        host.forget(&controller);
        let output = outcome.map_err(|e| run_rejection(&e, abort))?;
        from_js::<CommandOutput>(&output, "the host's run result")
            .map_err(|e| command_error(CommandErrorKind::Io, describe(&e)))
    }
}
