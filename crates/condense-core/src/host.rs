//! The host's capabilities: everything the core needs from outside, as traits the host implements
//! (the CLI natively, the wasm bindings with the host's JS functions, tests with fakes): a clock,
//! an HTTP client that streams the response body and honours an abort signal, and a timer for
//! retry back-off and for a request's deadline. The core builds requests and parses responses; the host only moves bytes,
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
    /// reading, and ends the body with a `Cancelled` error, when `abort` fires. The core may drop
    /// the returned future, or the body, before they end (the request's deadline passed): the
    /// client then stops the request and closes its connection.
    async fn send(&self, request: HttpRequest, abort: &AbortSignal) -> Result<HttpResponse, TransportError>;
}

/// Waits. Implemented by the host; used for retry back-off, and raced against a request's waits
/// so that none outlasts its deadline.
#[async_trait::async_trait(?Send)]
pub trait Timer {
    /// Resolves after `ms` milliseconds, or earlier when `abort` fires. It must not block the
    /// thread while another future could make progress: the core polls it beside a request.
    async fn sleep(&self, ms: u64, abort: &AbortSignal);

    /// Gives the host's thread a turn: long work awaits it between its steps, so that a host
    /// whose thread also serves its user (the extension host) answers in between. The default
    /// does nothing: a host that runs the work on a thread of its own needs no turn.
    async fn turn(&self) {}
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

/// One piece of a program argument: text, or the path of a temporary file the host creates for
/// the run (and removes after it). An argument is its pieces joined, so `--out={output_file}`
/// stays one argument whatever the path holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ArgPart {
    /// Literal text.
    Text {
        /// The text, passed as it is (no shell reads it).
        text: String,
    },
    /// The path of the file holding [`CommandSpec::prompt_file`].
    PromptFile,
    /// The path of an empty file the program may write its answer to; read back into
    /// [`CommandOutput::output_file`].
    OutputFile,
}

/// A program the core wants run: an argv, never a shell string.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandSpec {
    /// The program: an absolute path, as [`CommandRunner::locate`] found it.
    pub program: String,
    /// The arguments after the program, each one argument.
    pub args: Vec<Vec<ArgPart>>,
    /// Variables set for the program, on top of the host's environment. May carry secrets:
    /// never log them.
    pub env: Vec<(String, String)>,
    /// Text written to the program's standard input, which is then closed (empty input when
    /// absent).
    pub stdin: Option<String>,
    /// The contents of the prompt file, when an argument names it.
    pub prompt_file: Option<String>,
    /// Whether an argument names the output file.
    pub output_file: bool,
    /// The working directory; the host's own when absent.
    pub cwd: Option<String>,
    /// Milliseconds before the program and every process it started are killed.
    pub timeout_ms: u64,
    /// The most bytes of standard output (and, separately, of standard error and of the output
    /// file) kept; a program printing more is killed and the run fails.
    pub max_output_bytes: usize,
}

/// How a program ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandOutput {
    /// The exit code; absent when a signal ended the program.
    pub exit_code: Option<i32>,
    /// Standard output, as UTF-8 (invalid bytes replaced).
    pub stdout: String,
    /// Standard error, as UTF-8 (invalid bytes replaced).
    pub stderr: String,
    /// What the program wrote to the output file, when there was one.
    pub output_file: Option<String>,
}

/// Why a program did not run to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommandErrorKind {
    /// The program could not be started (missing, not executable, no permission).
    Spawn,
    /// It ran longer than the timeout; it and its children were killed.
    Timeout,
    /// The abort signal fired; it and its children were killed.
    Cancelled,
    /// It printed more than the cap allows; it was killed.
    TooMuchOutput,
    /// The host failed around it: a temporary file, a pipe.
    Io,
}

/// A failure of the host's command runner.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandError {
    /// What kind of failure.
    pub kind: CommandErrorKind,
    /// What happened, for people.
    pub message: String,
    /// Standard error read before the failure.
    #[serde(default)]
    pub stderr: String,
}

impl CommandError {
    /// A new command error, with no standard error.
    pub fn new(kind: CommandErrorKind, message: impl Into<String>) -> Self {
        CommandError { kind, message: message.into(), stderr: String::new() }
    }
}

/// Runs programs. Implemented by the host: `std::process` in the CLI, Node's `child_process`
/// (`shell: false`) in the extension. The core decides what to run; the host starts it, feeds it,
/// times it and kills it.
#[async_trait::async_trait(?Send)]
pub trait CommandRunner {
    /// The platform: `linux`, `macos` or `windows`.
    fn platform(&self) -> String;

    /// An environment variable of the host, for `${VAR}` and `~` in tool entries.
    fn env_var(&self, name: &str) -> Option<String>;

    /// Where a program is: a path containing a separator is checked as it is (an executable
    /// file), a bare name is looked up on the `PATH`. `None` when it is not there.
    fn locate(&self, program: &str) -> Option<String>;

    /// Runs the program to its end, within `spec.timeout_ms`; kills it and every process it
    /// started when the timeout passes or `abort` fires.
    async fn run(&self, spec: CommandSpec, abort: &AbortSignal) -> Result<CommandOutput, CommandError>;

    /// The text of a small file, or `None` when it is larger than `max_bytes` (not read at all)
    /// or cannot be read: the core reads a Windows `.cmd` shim (at most [`MAX_SHIM_BYTES`]) to
    /// start the program it starts, never the shim (only a shell runs one). The default reads
    /// nothing, so a `.cmd` found is refused with a clear error.
    fn read_text(&self, path: &str, max_bytes: usize) -> Option<String> {
        let _ = (path, max_bytes);
        None
    }
}

/// The largest file the core asks [`CommandRunner::read_text`] to read: a shim is a few hundred
/// bytes.
pub const MAX_SHIM_BYTES: usize = 64 * 1024;
