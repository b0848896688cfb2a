//! `condense gateway`: a local HTTP gateway that agents (Claude Code, Codex, Gemini CLI, Cline,
//! Roo, Continue, Qwen Code, OpenCode) point their base URL at. Requests under `/anthropic/…` go
//! to the Anthropic API, those under `/openai/v1/…` to the OpenAI API, those under `/gemini/…` to
//! the Gemini API, those under `/chatgpt/…` to the ChatGPT backend (Codex signed in with ChatGPT);
//! the core decides, per conversation request, the
//! exact bytes to forward (`decide.rs`, the only file that knows the core's gateway), and the
//! answers stream back unbuffered (`proxy.rs`) while their usage is read (`usage.rs`). Who may
//! connect is `guard.rs`'s business; the state on disk is `store.rs`'s.
//!
//! The server is hyper on tokio (HTTP/1.1, one task per connection); the upstream client is
//! reqwest on rustls. The state is one value behind one lock, held only for the core's decision,
//! never across an await: a request is read, hashed and counted before the lock is taken (the
//! core's `prepare`, on a thread the runtime may block), and a save takes a snapshot under it
//! (the messages shared, not copied) and writes it after, so one session's 50 MB body does not
//! hold up another session's request.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use crate::input::{Failure, usage};

mod decide;
mod proxy;
mod store;
mod summarize;

use condense_core::gateway::{
    GatewayConfig, GatewayPolicy, RecallConfig, STATE_VERSION, SavedFiles, StateError,
};
use condense_core::gateway::{Guard, Upstreams, check_listen, setup_text, upstream_origin};
use decide::{GatewayState, SharedState};
use proxy::Shared;
use store::Store;
use summarize::Summarizer;

/// Run a local gateway that agents point their base URL at; prints how to point them at it.
#[derive(Debug, Args)]
pub(crate) struct GatewayArgs {
    /// The address to listen on. Other than loopback only with --token. Port 0 picks a free port;
    /// the first line printed names the address bound.
    #[arg(long, default_value = "127.0.0.1:4141")]
    listen: SocketAddr,
    /// The Anthropic API's origin (a trailing /v1 is dropped).
    #[arg(long, default_value = "https://api.anthropic.com", value_name = "URL")]
    anthropic_upstream: String,
    /// The OpenAI API's origin (a trailing /v1 is dropped).
    #[arg(long, default_value = "https://api.openai.com", value_name = "URL")]
    openai_upstream: String,
    /// The Gemini API's origin, where /gemini/… goes.
    #[arg(long, default_value = condense_core::gateway::GEMINI_API, value_name = "URL")]
    gemini_upstream: String,
    /// The ChatGPT backend, where /chatgpt/… goes (Codex signed in with ChatGPT:
    /// OPENAI_BASE_URL=http://127.0.0.1:4141/chatgpt).
    #[arg(long, default_value = condense_core::gateway::CHATGPT_BACKEND, value_name = "URL")]
    chatgpt_upstream: String,
    /// The condensation provider: smart (the LLM-free ledger), or native (the ledger at once,
    /// then an LLM summary written in the background; needs --llm/--profile or
    /// --summarize-with-upstream).
    #[arg(long, default_value = condense_core::limits::DEFAULT_PROVIDER, value_name = "ID")]
    provider: String,
    /// With --provider native: write each summary with the request's own model and key at its
    /// upstream (the cost is counted in /stats).
    #[arg(long)]
    summarize_with_upstream: bool,
    /// With --provider native: the model that writes the summaries (its key from the environment).
    #[command(flatten, next_help_heading = "The condensing model (--provider native)")]
    llm: crate::llm::LlmArgs,
    /// Condense a session when it reaches this share of its model's window, in percent.
    #[arg(long, default_value_t = condense_core::limits::DEFAULT_THRESHOLD_PERCENT, value_name = "P")]
    threshold: u8,
    /// When to condense: at the threshold only, or also earlier when what it saves over the
    /// requests expected pays for the prompt cache it makes the upstream write again (a model
    /// whose price is unknown is condensed at the threshold only).
    #[arg(long, value_enum, default_value_t = PolicyFlag::CacheAware)]
    policy: PolicyFlag,
    /// A model's context window in tokens, overriding the built-in table (repeatable).
    #[arg(long = "window", value_name = "MODEL=TOKENS", value_parser = parse_window)]
    windows: Vec<(String, usize)>,
    /// Change nothing: forward every request byte for byte, and record what would have been done.
    #[arg(long)]
    observe: bool,
    /// Where the gateway keeps its state (default: the user's data directory,
    /// e.g. ~/.local/share/context-condenser/gateway).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// A file whose first line is the token every request must carry in the
    /// `x-context-condenser-token` header; required to listen on an address other than loopback.
    /// Else the token is read from CONDENSE_GATEWAY_TOKEN.
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    token_file: Option<PathBuf>,
    /// The token itself. Prefer --token-file or CONDENSE_GATEWAY_TOKEN: a command line is
    /// readable by every user of this machine (the process list, /proc/PID/cmdline).
    #[arg(long, value_name = "T")]
    token: Option<String>,
    /// Seconds an upstream may send nothing before its answer is given up (a 504 before the
    /// answer began, the stream ended after). An answer that keeps moving is never cut.
    #[arg(long, default_value_t = IDLE_TIMEOUT.as_secs(), value_name = "S", value_parser = clap::value_parser!(u64).range(1..))]
    stream_idle_secs: u64,
    /// Seconds a client may send nothing, in its request's headers or in its body (a
    /// Content-Length longer than what it sends), before it is dropped.
    #[arg(long, default_value_t = CLIENT_IDLE.as_secs(), value_name = "S", value_parser = clap::value_parser!(u64).range(1..))]
    client_idle_secs: u64,
    /// The most seconds one answer may take, from the request sent to the answer's last byte;
    /// no limit unless given.
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u64).range(1..))]
    stream_max_secs: Option<u64>,
    /// The most megabytes of recall files (each condensation's hidden messages, in
    /// STATE_DIR/recall, named in the condensation for the agent to read) one session keeps,
    /// the oldest removed first; 0 writes none.
    #[arg(long, default_value_t = (condense_core::gateway::RECALL_SESSION_BYTES >> 20) as u32, value_name = "MB")]
    recall_max_mb: u32,
}

/// glibc gives each thread that allocates at once an arena of its own and keeps what was freed in
/// it: after twelve 20 MB sessions `condense gateway` stayed at 419 MB resident, holding a few MB
/// (RELIABILITY.md). With two arenas it stays at 185 MB, no slower. glibc reads
/// `MALLOC_ARENA_MAX` as the process starts, so the gateway starts itself again with it: the same
/// program, arguments, descriptors and process id (`exec`). Not on another C library, nor when the
/// variable is set already (then the person chose); a failed `exec` goes on as it is.
fn few_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
            return;
        }
        let Ok(program) = std::env::current_exe() else { return };
        let mut args = std::env::args_os();
        let Some(arg0) = args.next() else { return };
        // Returns only when the exec failed.
        let _ = std::process::Command::new(program).arg0(arg0).args(args).env("MALLOC_ARENA_MAX", "2").exec();
    }
}

/// The policies `--policy` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PolicyFlag {
    /// When a request crosses the threshold.
    Threshold,
    /// At the threshold, and earlier when it pays.
    CacheAware,
}

fn parse_window(text: &str) -> Result<(String, usize), String> {
    let (model, tokens) = text.rsplit_once('=').ok_or("expected MODEL=TOKENS")?;
    let tokens = tokens.trim().parse::<usize>().map_err(|e| format!("{tokens:?}: {e}"))?;
    if model.trim().is_empty() || tokens == 0 {
        return Err("expected a model name and a window above 0 tokens".into());
    }
    Ok((model.trim().to_owned(), tokens))
}

/// An upstream origin: an http or https URL, without a trailing `/` or `/v1` (the routes carry
/// the API's path).
fn upstream(flag: &str, url: &str) -> Result<String, Failure> {
    reqwest::Url::parse(url).map_err(|e| usage(format!("{flag} {url}: {e}")))?;
    upstream_origin(url).map_err(|e| usage(format!("{flag} {e}")))
}

/// Upstream limits, as the LLM layer's: 30 s to connect (`native.rs`), 60 s without a byte
/// (`condense chat --timeout-secs`; `--stream-idle-secs`). No limit on a whole answer unless
/// `--stream-max-secs` sets one: a long generation that keeps streaming is never cut.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a client may send nothing, in its headers or its body, before it is dropped
/// (`--client-idle-secs`).
const CLIENT_IDLE: Duration = Duration::from_secs(30);
/// Where the token comes from when neither flag gives it.
const TOKEN_ENV: &str = "CONDENSE_GATEWAY_TOKEN";
/// How long after a change the state is written: a burst of requests is one write.
const SAVE_DELAY: Duration = Duration::from_millis(500);

/// Runs the gateway until it is interrupted (Ctrl-C, SIGTERM); the state is written then too.
pub(crate) fn run(mut args: GatewayArgs) -> Result<u8, Failure> {
    few_arenas();
    args.token = token(&args)?;
    check_listen(args.listen, args.token.as_deref()).map_err(usage)?;
    let range = condense_core::limits::THRESHOLD_MIN..=condense_core::limits::THRESHOLD_MAX;
    if !range.contains(&i32::from(args.threshold)) {
        return Err(usage(format!("--threshold must be {} to {} percent", range.start(), range.end())));
    }
    let anthropic = upstream("--anthropic-upstream", &args.anthropic_upstream)?;
    let openai = upstream("--openai-upstream", &args.openai_upstream)?;
    let gemini = upstream("--gemini-upstream", &args.gemini_upstream)?;
    let chatgpt = upstream("--chatgpt-upstream", &args.chatgpt_upstream)?;
    let dir = args.state_dir.clone().or_else(store::default_dir).ok_or_else(|| {
        usage("no data directory known for this user (HOME is not set): pass --state-dir DIR")
    })?;
    let store = Store::open(&dir).map_err(|e| usage(format!("--state-dir {}: {e}", dir.display())))?;
    let recall = match args.recall_max_mb {
        0 => None,
        mb => Some(RecallConfig {
            dir: store.recall_dir().map_err(|e| usage(format!("--state-dir {}: {e}", dir.display())))?,
            max_session_bytes: (mb as usize) << 20,
        }),
    };
    let config = GatewayConfig {
        provider: args.provider.clone(),
        threshold: f64::from(args.threshold) / 100.0,
        policy: match args.policy {
            PolicyFlag::Threshold => GatewayPolicy::Threshold,
            PolicyFlag::CacheAware => GatewayPolicy::CacheAware,
        },
        windows: args.windows.iter().cloned().collect::<BTreeMap<_, _>>(),
        observe: args.observe,
        recall: recall.clone(),
        ..GatewayConfig::default()
    };
    let guard = Guard { bound: args.listen, token: args.token.clone() };
    let upstreams = Upstreams { anthropic, openai, gemini, chatgpt };
    let mut state = GatewayState::new(config, upstreams, guard).map_err(usage)?;
    let summarizer = Summarizer::from_flags(&args.provider, &args.llm, args.summarize_with_upstream)?;
    match store.read() {
        Ok((index, files)) => match decide::load(&mut state, index.as_deref(), &files) {
            Ok(set_aside) => {
                *store.saving() = SavedFiles::loaded(&files, &set_aside);
                for session in set_aside {
                    let kept = match &session.file {
                        Some(name) => store.set_aside_file(name),
                        None => store.set_aside(&session.raw),
                    };
                    let kept = kept.map_or_else(
                        |e| format!("could not be kept: {e}"),
                        |p| format!("kept in {}", p.display()),
                    );
                    crate::out::note(&format!(
                        "gateway: a saved session was set aside ({}); {kept}",
                        session.why
                    ));
                }
            }
            Err(StateError::Newer { version }) => {
                let dir = dir.display();
                return Err(Failure(
                    1,
                    format!(
                        "the state in {dir} is version {version}, written by a newer gateway; this one reads {STATE_VERSION} and will not overwrite it. \
                         Run the newer gateway, or move the folder aside to start afresh here: mv {dir} {dir}.v{version}"
                    ),
                ));
            }
            Err(why) => crate::out::note(&format!(
                "gateway: starting afresh; {} ignored: {why}",
                store.path().display()
            )),
        },
        Err(why) => crate::out::note(&format!("gateway: starting afresh; {why}")),
    }
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(Duration::from_secs(args.stream_idle_secs))
        // Redirects are the client's to follow: a 3xx goes back as it came.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Failure(1, format!("cannot set up the HTTP client: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure(1, format!("cannot start the gateway's runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(args.listen)
            .await
            .map_err(|e| usage(format!("cannot listen on {}: {e}", args.listen)))?;
        let bound = listener.local_addr().map_err(|e| Failure(1, e.to_string()))?;
        decide::bound(&mut state, bound);
        let shared = Arc::new(Shared {
            live: Arc::new(SharedState::new(state)),
            client,
            summarizer,
            store: store.clone(),
            stream_max: args.stream_max_secs.map(Duration::from_secs),
            client_idle: Duration::from_secs(args.client_idle_secs),
        });
        let writer = shared.summarizer.as_ref().map(Summarizer::describe);
        let recall = recall.as_ref().filter(|_| !args.observe);
        let policy = match args.policy {
            PolicyFlag::Threshold => format!("at {}% of a model's window", args.threshold),
            PolicyFlag::CacheAware => {
                format!(
                    "at {}% of a model's window, and earlier when it pays for the cache it rewrites",
                    args.threshold
                )
            }
        };
        crate::out::stdout(&banner(
            bound,
            args.token.is_some(),
            args.observe,
            writer.as_deref(),
            &store,
            recall,
            &policy,
        ))?;
        let saver = tokio::spawn(save_on_change(Arc::clone(&shared), store.clone()));
        tokio::select! {
            () = serve(listener, Arc::clone(&shared)) => {}
            () = shutdown() => {}
        }
        saver.abort();
        proxy::save(&shared, &store);
        Ok(0)
    })
}

/// The token: from --token-file, --token, or the environment, in that order; `None` when none
/// is given. A file or variable that gives an empty token is an error, not "no token".
fn token(args: &GatewayArgs) -> Result<Option<String>, Failure> {
    if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| usage(format!("--token-file {}: {e}", path.display())))?;
        let token = text.lines().next().unwrap_or_default().trim();
        if token.is_empty() {
            return Err(usage(format!("--token-file {}: its first line is empty", path.display())));
        }
        return Ok(Some(token.to_owned()));
    }
    if args.token.is_some() {
        return Ok(args.token.clone());
    }
    match std::env::var(TOKEN_ENV) {
        Ok(token) if token.trim().is_empty() => Err(usage(format!("{TOKEN_ENV} is set but empty"))),
        Ok(token) => Ok(Some(token.trim().to_owned())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(usage(format!("{TOKEN_ENV} is not UTF-8"))),
    }
}

/// Accepts connections until the process ends, one task each.
async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, or a connection reset before it was accepted: go on.
                crate::out::note(&format!("gateway: accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let idle = shared.client_idle;
            let service = service_fn(move |request| proxy::handle(Arc::clone(&shared), request));
            // A client that sends no headers within the timeout is dropped (slowloris).
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(idle)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Ends at Ctrl-C, or SIGTERM on unix.
async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Writes the state a moment after each change.
async fn save_on_change(shared: Arc<Shared>, store: Store) {
    loop {
        shared.live.changed.notified().await;
        tokio::time::sleep(SAVE_DELAY).await;
        let shared = Arc::clone(&shared);
        let store = store.clone();
        let _ = tokio::task::spawn_blocking(move || proxy::save(&shared, &store)).await;
    }
}

/// What the gateway prints at start: the address bound (first, alone on its line, for scripts),
/// then the exact settings that point each agent at it.
fn banner(
    bound: SocketAddr,
    token: bool,
    observe: bool,
    writer: Option<&str>,
    store: &Store,
    recall: Option<&RecallConfig>,
    policy: &str,
) -> String {
    let host =
        if bound.ip().is_unspecified() { SocketAddr::from(([127, 0, 0, 1], bound.port())) } else { bound };
    let base = format!("http://{host}");
    let mut text = format!("listening on http://{bound}\n");
    text.push_str(&format!("state: {}\n", store.path().display()));
    text.push_str(&format!("condenses: {policy}\n"));
    if let Some(recall) = recall {
        let mb = recall.max_session_bytes >> 20;
        text.push_str(&format!("recall files: {} (at most {mb} MB a session)\n", recall.dir));
    }
    if let Some(writer) = writer {
        text.push_str(&format!("summaries: written in the background by {writer}\n"));
    }
    if observe {
        text.push_str(
            "observe mode: every request is forwarded byte for byte; /stats says what would change\n",
        );
    }
    text.push('\n');
    text.push_str(&setup_text(&base, token, recall.map(|r| r.dir.as_str())));
    text.push_str(&format!("\nStatistics: {base}/stats   Health: {base}/healthz\n"));
    text
}
