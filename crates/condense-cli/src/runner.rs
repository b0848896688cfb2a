//! The native command runner: the core's `CommandRunner` on `std::process`, for CLI agents used
//! as models (Claude Code, Codex, Gemini CLI). The core decides what to run; this module starts
//! it (an argv, never a shell), feeds its standard input from a thread, reads its standard output
//! and error from two more (each capped), polls for its end, and kills it together with every
//! process it started (its process group, on unix) when the timeout passes, the abort signal
//! fires or it prints too much. Temporary prompt and output files live in a private directory
//! that is removed after the run, whatever happens.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use condense_core::host::{
    AbortSignal, ArgPart, CommandError, CommandErrorKind, CommandOutput, CommandRunner, CommandSpec,
};

/// How often the wait loop looks at the program, the abort signal and the clock.
const POLL: Duration = Duration::from_millis(10);

/// Runs programs natively, blocking the calling thread until they end (the CLI runs one thing at
/// a time inside `futures::executor::block_on`, so blocking is what we want).
#[derive(Debug, Clone, Default)]
pub struct NativeRunner {
    /// Where each run's private directory of temporary files is made; the system's temporary
    /// directory when `None`.
    temp_base: Option<PathBuf>,
}

impl NativeRunner {
    /// A runner for this machine.
    pub fn new() -> Self {
        NativeRunner::default()
    }

    /// A runner that makes each run's private directory (the prompt and output files) under
    /// `base` rather than the system's temporary directory.
    pub fn with_temp_base(base: impl Into<PathBuf>) -> Self {
        NativeRunner { temp_base: Some(base.into()) }
    }

    /// Where `program` is, given the value of a `PATH` variable (`None`: no `PATH`). A program
    /// containing a path separator is checked as it is; a bare name is looked for in each
    /// directory of `path_var` in order (empty entries are skipped, never read as the current
    /// directory). A candidate must exist, be a file and, on unix, have an execute bit; on
    /// windows the extensions of `PATHEXT` are tried too. Returns the absolute path.
    pub fn locate_in(path_var: Option<&OsStr>, program: &str) -> Option<String> {
        if program.is_empty() {
            return None;
        }
        let has_separator = program.contains('/') || (cfg!(windows) && program.contains('\\'));
        if has_separator {
            return executable_candidate(Path::new(program));
        }
        std::env::split_paths(path_var?)
            .filter(|dir| !dir.as_os_str().is_empty())
            .find_map(|dir| executable_candidate(&dir.join(program)))
    }
}

/// The first executable file among `path` and (on windows) `path` with each `PATHEXT` extension,
/// as an absolute path in UTF-8.
fn executable_candidate(path: &Path) -> Option<String> {
    let mut candidates = vec![path.to_path_buf()];
    if cfg!(windows) {
        let exts = std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".to_string());
        for ext in exts.split(';').filter(|e| !e.is_empty()) {
            let mut with_ext = OsString::from(path.as_os_str());
            with_ext.push(ext);
            candidates.push(PathBuf::from(with_ext));
        }
    }
    candidates
        .into_iter()
        .find(|c| is_executable_file(c))
        .and_then(|c| std::path::absolute(&c).ok())
        .and_then(|c| c.to_str().map(str::to_string))
}

fn is_executable_file(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else { return false };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

#[async_trait::async_trait(?Send)]
impl CommandRunner for NativeRunner {
    fn platform(&self) -> String {
        match std::env::consts::OS {
            "macos" => "macos",
            "windows" => "windows",
            "linux" => "linux",
            other => other,
        }
        .to_string()
    }

    fn env_var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn locate(&self, program: &str) -> Option<String> {
        NativeRunner::locate_in(std::env::var_os("PATH").as_deref(), program)
    }

    async fn run(&self, spec: CommandSpec, abort: &AbortSignal) -> Result<CommandOutput, CommandError> {
        let base = self.temp_base.clone().unwrap_or_else(std::env::temp_dir);
        run_blocking(&spec, &base, abort)
    }

    fn read_text(&self, path: &str, max_bytes: usize) -> Option<String> {
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() || meta.len() > max_bytes as u64 {
            return None;
        }
        std::fs::read_to_string(path).ok()
    }
}

/// A private directory for one run's temporary files, removed (with its files) when dropped.
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn new(base: &Path) -> io::Result<TempDir> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        loop {
            let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("condense-run-{}-{n}-{nanos}", std::process::id()));
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                builder.mode(0o700);
            }
            match builder.create(&path) {
                Ok(()) => return Ok(TempDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Creates `name` in the directory (it must not exist yet), readable by the owner only, with
    /// `contents`.
    fn write_file(&self, name: &str, contents: &[u8]) -> io::Result<PathBuf> {
        let path = self.path.join(name);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&path)?;
        file.write_all(contents)?;
        file.sync_all()?;
        Ok(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn io_error(what: &str, e: io::Error) -> CommandError {
    CommandError::new(CommandErrorKind::Io, format!("{what}: {e}"))
}

/// One output pipe, read by its own thread into a buffer capped at `cap` bytes.
struct Capture {
    buf: Arc<Mutex<Vec<u8>>>,
    overflow: Arc<AtomicBool>,
    thread: JoinHandle<io::Result<()>>,
}

impl Capture {
    fn start(mut pipe: impl Read + Send + 'static, cap: usize) -> Capture {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let overflow = Arc::new(AtomicBool::new(false));
        let (b, o) = (Arc::clone(&buf), Arc::clone(&overflow));
        let thread = thread::spawn(move || {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                let n = match pipe.read(&mut chunk) {
                    Ok(0) => return Ok(()),
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                let mut kept = b.lock().unwrap_or_else(|p| p.into_inner());
                let room = cap.saturating_sub(kept.len());
                if n > room {
                    kept.extend_from_slice(&chunk[..room]);
                    o.store(true, Ordering::SeqCst);
                    // Stop reading: the run fails and the program is killed.
                    return Ok(());
                }
                kept.extend_from_slice(&chunk[..n]);
            }
        });
        Capture { buf, overflow, thread }
    }

    fn overflowed(&self) -> bool {
        self.overflow.load(Ordering::SeqCst)
    }

    /// What was read so far, as UTF-8 (invalid bytes replaced).
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

/// Kills the program and every process in its group, then reaps it.
fn kill_tree(child: &mut Child) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;
        if let Ok(pid) = i32::try_from(child.id()) {
            // The group may already be empty (ESRCH): nothing left to kill.
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn describe_timeout(ms: u64) -> String {
    match (ms / 1000, ms % 1000) {
        (seconds, 0) => format!("{seconds} s"),
        _ => format!("{ms} ms"),
    }
}

fn run_blocking(
    spec: &CommandSpec,
    temp_base: &Path,
    abort: &AbortSignal,
) -> Result<CommandOutput, CommandError> {
    if abort.is_aborted() {
        return Err(CommandError::new(CommandErrorKind::Cancelled, "cancelled before it started"));
    }
    let names = |wanted: &ArgPart| spec.args.iter().flatten().any(|p| p == wanted);
    let wants_prompt = spec.prompt_file.is_some() || names(&ArgPart::PromptFile);
    let wants_output = spec.output_file || names(&ArgPart::OutputFile);

    // Declared before the child so that it is removed after the child is gone.
    let temp = if wants_prompt || wants_output {
        Some(TempDir::new(temp_base).map_err(|e| io_error("could not create a temporary directory", e))?)
    } else {
        None
    };
    let prompt_path = match (&temp, wants_prompt) {
        (Some(dir), true) => Some(
            dir.write_file("prompt.txt", spec.prompt_file.as_deref().unwrap_or("").as_bytes())
                .map_err(|e| io_error("could not write the prompt file", e))?,
        ),
        _ => None,
    };
    let output_path = match (&temp, wants_output) {
        (Some(dir), true) => Some(
            dir.write_file("output.txt", b"").map_err(|e| io_error("could not create the output file", e))?,
        ),
        _ => None,
    };

    let args: Vec<OsString> = spec
        .args
        .iter()
        .map(|parts| {
            let mut arg = OsString::new();
            for part in parts {
                match part {
                    ArgPart::Text { text } => arg.push(text),
                    ArgPart::PromptFile => arg.push(prompt_path.as_deref().unwrap_or(Path::new(""))),
                    ArgPart::OutputFile => arg.push(output_path.as_deref().unwrap_or(Path::new(""))),
                }
            }
            arg
        })
        .collect();

    let mut command = Command::new(&spec.program);
    command
        .args(&args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group, so that killing the group reaches every process it started.
        command.process_group(0);
    }
    let mut child = command.spawn().map_err(|e| {
        let place = spec.cwd.as_ref().map(|c| format!(" in {c}")).unwrap_or_default();
        CommandError::new(CommandErrorKind::Spawn, format!("could not start {}{place}: {e}", spec.program))
    })?;

    let stdin_bytes = spec.stdin.clone().unwrap_or_default().into_bytes();
    let writer = child.stdin.take().map(|mut pipe| {
        thread::spawn(move || -> io::Result<()> {
            let written = pipe.write_all(&stdin_bytes).and_then(|()| pipe.flush());
            drop(pipe); // closes the program's standard input
            match written {
                // A program that does not read its input is not an error.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
                other => other,
            }
        })
    });
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        kill_tree(&mut child);
        return Err(CommandError::new(CommandErrorKind::Io, "the program's output pipes were not opened"));
    };
    let out = Capture::start(stdout, spec.max_output_bytes);
    let err = Capture::start(stderr, spec.max_output_bytes);

    let fail = |child: &mut Child, kind: CommandErrorKind, message: String| -> CommandError {
        kill_tree(child);
        CommandError { kind, message, stderr: err.text() }
    };

    let started = Instant::now();
    let timeout = Duration::from_millis(spec.timeout_ms);
    let mut status: Option<ExitStatus> = None;
    loop {
        if status.is_none() {
            status = match child.try_wait() {
                Ok(s) => s,
                Err(e) => {
                    let message = format!("could not wait for {}: {e}", spec.program);
                    return Err(fail(&mut child, CommandErrorKind::Io, message));
                }
            };
        }
        for (capture, stream) in [(&out, "standard output"), (&err, "standard error")] {
            if capture.overflowed() {
                let message = format!(
                    "{} printed more than {} bytes on {stream}; it was stopped",
                    spec.program, spec.max_output_bytes
                );
                return Err(fail(&mut child, CommandErrorKind::TooMuchOutput, message));
            }
        }
        // Done when the program has ended and every holder of its output pipes closed them.
        if status.is_some() && out.thread.is_finished() && err.thread.is_finished() {
            break;
        }
        if abort.is_aborted() {
            return Err(fail(&mut child, CommandErrorKind::Cancelled, "cancelled".to_string()));
        }
        if started.elapsed() >= timeout {
            let message = format!("timed out after {}", describe_timeout(spec.timeout_ms));
            return Err(fail(&mut child, CommandErrorKind::Timeout, message));
        }
        thread::sleep(POLL);
    }
    let status = status.unwrap_or_else(|| unreachable!("the loop ends only once the program has ended"));

    let stdout_text = out.text();
    let stderr_text = err.text();
    let with_stderr = |mut e: CommandError| {
        e.stderr = stderr_text.clone();
        e
    };
    for (capture, stream) in [(out.thread, "standard output"), (err.thread, "standard error")] {
        match capture.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(with_stderr(io_error(&format!("could not read its {stream}"), e))),
            Err(_) => {
                let message = format!("the thread reading its {stream} panicked");
                return Err(with_stderr(CommandError::new(CommandErrorKind::Io, message)));
            }
        }
    }
    // The writer ends once the program's input is closed; a grandchild that keeps it open
    // without reading would hold it, so it is left behind rather than waited for then.
    if let Some(writer) = writer.filter(|w| w.is_finished()) {
        match writer.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(with_stderr(io_error("could not write its standard input", e))),
            Err(_) => {
                let message = "the thread writing its standard input panicked";
                return Err(with_stderr(CommandError::new(CommandErrorKind::Io, message)));
            }
        }
    }

    let output_file = match &output_path {
        Some(path) => {
            let mut kept = Vec::new();
            File::open(path)
                .and_then(|f| f.take(spec.max_output_bytes as u64 + 1).read_to_end(&mut kept))
                .map_err(|e| with_stderr(io_error("could not read the output file", e)))?;
            if kept.len() > spec.max_output_bytes {
                let message = format!(
                    "{} wrote more than {} bytes to its output file",
                    spec.program, spec.max_output_bytes
                );
                return Err(with_stderr(CommandError::new(CommandErrorKind::TooMuchOutput, message)));
            }
            Some(String::from_utf8_lossy(&kept).into_owned())
        }
        None => None,
    };
    drop(temp);

    Ok(CommandOutput { exit_code: status.code(), stdout: stdout_text, stderr: stderr_text, output_file })
}
