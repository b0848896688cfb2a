//! Helpers shared by the CLI crate's tests: the test servers as child processes.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::Value;

pub mod gateway;

pub fn root(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

/// A server child process: stopped (stdin closed, killed, reaped) when dropped.
pub struct Server {
    child: Child,
    _stdin: ChildStdin,
    pub port: u16,
}

impl Server {
    pub fn start(program: &str, args: &[&str]) -> Server {
        let mut child = Process::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.strip_prefix("LISTENING ").and_then(|p| p.trim().parse().ok()).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("{program} did not start: {line:?}")
        });
        Server { child, _stdin: stdin, port }
    }

    pub fn fixture() -> Server {
        Server::fixture_with(&[])
    }

    /// The fixture server with more arguments (`--no-auth`, `--answer TEXT`, …).
    pub fn fixture_with(args: &[&str]) -> Server {
        let script = root("tests/servers/fixture_llm.py");
        let mut all = vec![script.as_str(), "--port", "0"];
        all.extend_from_slice(args);
        Server::start("python3", &all)
    }

    pub fn requests(&self) -> Vec<Value> {
        let mut response = ureq::get(&format!("http://127.0.0.1:{}/requests", self.port)).call().unwrap();
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scratch directory for one test, removed when dropped.
pub struct Scratch(pub std::path::PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "condense-test-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Writes a file in the directory; its path.
    pub fn write(&self, name: &str, contents: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, contents).unwrap();
        path.to_str().unwrap().to_string()
    }

    /// The path of a name in the directory.
    pub fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether a process runs (a zombie nobody reaped yet counts as gone).
#[cfg(unix)]
pub fn alive(pid: i32) -> bool {
    if cfg!(target_os = "linux") {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => false,
            // The state follows the command name, which is in parentheses.
            Ok(stat) => !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        }
    } else {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
    }
}

/// How long a test waits for something that must happen before it gives up and fails: not a
/// claim about how fast anything is (the project makes none in tests), only a guard so that a
/// hang fails with a message instead of stalling the run. Far beyond any normal run.
pub const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(120);

/// Waits for the process to be gone (killing is not instant, reaping even less); false when it
/// is still there after the hang guard.
#[cfg(unix)]
pub fn gone(pid: i32) -> bool {
    let until = std::time::Instant::now() + HANG_GUARD;
    while alive(pid) {
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

/// Runs `work` on a thread of its own and returns its result (a panic in it is the test's). If it
/// has not ended after the hang guard, the test fails, naming `what` hung.
pub fn hang_guard<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, result) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = done.send(work());
    });
    match result.recv_timeout(HANG_GUARD) {
        Ok(value) => value,
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the worker ended without a result or a panic"),
        },
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("hang guard: {what} had not ended after {} s", HANG_GUARD.as_secs())
        }
    }
}

/// Waits until the fixture server saw the client close the connection of its last request in
/// `mode` over `wire` (`openai` or `anthropic`; GET /hostile); fails, with what the server last
/// said, when the hang guard passes first.
pub fn server_saw_it_closed(server: &Server, mode: &str, wire: &str) {
    let url = format!("http://127.0.0.1:{}/hostile", server.port);
    let until = std::time::Instant::now() + HANG_GUARD;
    let mut last = Value::Null;
    while std::time::Instant::now() < until {
        let mut response = ureq::get(&url).call().unwrap();
        let all: Vec<Value> = serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
        last = all.into_iter().rev().find(|e| e["mode"] == mode && e["wire"] == wire).unwrap_or(Value::Null);
        if last["closed"] == true {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("hang guard: the server never saw the {wire} {mode} request closed (last: {last})");
}

/// Everything `reader` (a child's stdout or stderr) writes, read line by line on a thread of its
/// own, so the child never blocks on a full pipe and the test reads what arrived so far.
pub fn drain(reader: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&text);
    std::thread::spawn(move || {
        let mut reader = BufReader::new(reader);
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            sink.lock().unwrap().push_str(&line);
            line.clear();
        }
    });
    text
}

/// A chat `id` with `n` long turns already in it (user and assistant in turn), about 110 tokens
/// each.
pub fn long_chat(id: &str, n: usize) -> condense_core::agent::ChatTask {
    use condense_core::model::{ContentBlock, Message, Role};
    let mut task = condense_core::agent::ChatTask::new(id, 1_000);
    for i in 0..n {
        let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
        let text = format!(
            "Turn {i}: {}",
            "the parser drops nested parentheses in grouped expressions; ".repeat(10)
        );
        task.conversation.messages.push(Message::new(
            format!("m{}", i + 1),
            role,
            vec![ContentBlock::text(text)],
        ));
    }
    task
}
