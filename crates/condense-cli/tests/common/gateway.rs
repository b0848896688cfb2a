//! `condense gateway` as a child process, a raw-TCP client that chooses every header byte, and
//! upstreams written here that record the exact bytes they receive: the harness of the gateway's
//! tests (`tests/gateway.rs`, `tests/reliability.rs`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{HANG_GUARD, Scratch, drain};

/// A key no log or file may ever hold.
pub const SECRET: &str = "sk-ant-test-NEVER-STORED-7f3a9c";

/// The gateway as a child process; killed and reaped when dropped. Its stdout after the first
/// line and its whole stderr are kept for the test to read.
pub struct Gateway {
    pub child: Child,
    pub port: u16,
    pub stdout: Arc<Mutex<String>>,
    pub stderr: Arc<Mutex<String>>,
}

impl Gateway {
    pub fn start(state: &Scratch, args: &[&str]) -> Gateway {
        Gateway::start_with(state, args, &[])
    }

    /// [`Gateway::start`] with these environment variables set.
    pub fn start_with(state: &Scratch, args: &[&str], env: &[(&str, &str)]) -> Gateway {
        let mut child = Command::new(env!("CARGO_BIN_EXE_condense"))
            .args(["gateway", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(&state.0)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let stderr = drain(child.stderr.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let port = first
            .trim()
            .strip_prefix("listening on http://127.0.0.1:")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the gateway did not start: {first:?} {}", stderr.lock().unwrap())
            });
        Gateway { child, port, stdout: drain(stdout), stderr }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// One request with these extra header lines; the answer's status, headers and body.
    pub fn send(&self, method: &str, path: &str, headers: &[&str], body: &[u8]) -> Reply {
        let host = format!("Host: {}", self.host());
        let mut all = vec![host.as_str()];
        all.extend_from_slice(headers);
        exchange(self.port, method, path, &all, body)
    }

    pub fn post(&self, path: &str, headers: &[&str], body: &str) -> Reply {
        self.send("POST", path, headers, body.as_bytes())
    }

    pub fn stats(&self) -> Value {
        serde_json::from_slice(&self.send("GET", "/stats", &[], b"").body).unwrap()
    }

    /// Everything the gateway printed so far.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout.lock().unwrap(), self.stderr.lock().unwrap())
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer, its body de-chunked.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub fn request_bytes(method: &str, path: &str, headers: &[&str], body: &[u8]) -> Vec<u8> {
    let mut out = format!("{method} {path} HTTP/1.1\r\n");
    for h in headers {
        out.push_str(h);
        out.push_str("\r\n");
    }
    if !headers.iter().any(|h| h.to_ascii_lowercase().starts_with("content-length")) {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

pub fn exchange(port: u16, method: &str, path: &str, headers: &[&str], body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
    stream.write_all(&request_bytes(method, path, headers, body)).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse_reply(&raw)
}

pub fn parse_reply(raw: &[u8]) -> Reply {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
    let mut body = raw[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    Reply { status, head, body }
}

pub fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..line_end]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[line_end + 2..line_end + 2 + size]);
        raw = &raw[line_end + 2 + size + 2..];
    }
}

/// One request as an upstream written here received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub head: String,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// An upstream on 127.0.0.1 that hands each request it reads to `answer` along with the
/// connection, on a thread per connection, one request each (the connection is closed after
/// it, and an answer says so: `connection: close`, or the gateway's next request may find the
/// pooled connection closed under it); stopped when dropped.
pub struct Upstream {
    pub port: u16,
    pub received: mpsc::Receiver<Received>,
    pub _listener: Arc<TcpListener>,
}

impl Upstream {
    pub fn start(answer: impl Fn(&Received, &mut TcpStream) + Send + Sync + 'static) -> Upstream {
        let listener = Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
        let port = listener.local_addr().unwrap().port();
        let (record, received) = mpsc::channel();
        let accepting = Arc::clone(&listener);
        let answer = Arc::new(answer);
        std::thread::spawn(move || {
            for stream in accepting.incoming() {
                let Ok(mut stream) = stream else { return };
                let (record, answer) = (record.clone(), Arc::clone(&answer));
                std::thread::spawn(move || {
                    let Some(request) = read_request(&mut stream) else { return };
                    let _ = record.send(request.clone());
                    answer(&request, &mut stream);
                });
            }
        });
        Upstream { port, received, _listener: listener }
    }

    /// An upstream that answers every request with this JSON.
    pub fn json(answer: Value) -> Upstream {
        let body = answer.to_string();
        Upstream::start(move |_, stream| respond(stream, "200 OK", "", &body))
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn next(&self) -> Received {
        self.received.recv_timeout(HANG_GUARD).expect("the upstream received a request")
    }
}

pub fn read_request(stream: &mut TcpStream) -> Option<Received> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let partial = Received { head, body: Vec::new() };
    let length: usize = partial.header("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Received { body, ..partial })
}

/// Answers with this status, extra header lines and JSON body, and says the connection closes.
pub fn respond(stream: &mut TcpStream, status: &str, extra: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n{extra}content-length: {}\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
}

/// A model the tests give a small window (`--window`), so that a few tool rounds cross it.
pub const SMALL_MODEL: &str = "tiny-model";
pub const SMALL_WINDOW: &str = "tiny-model=4000";
/// The task statement, which every forwarded request keeps.
pub const TASK: &str = "Fix the failing test in src/parse.rs and keep the public API unchanged.";

/// A file as a tool reads it: different in every round, a few hundred tokens.
pub fn file(round: usize) -> String {
    (0..20)
        .map(|i| {
            format!("{i:>6}\tlet value_{round}_{i} = compute(&input, {i}); // step {i} of module {round}\n")
        })
        .collect()
}

/// A Claude Code–shaped Anthropic session of `rounds` tool rounds (a `Read` and its result),
/// for the small model, named by the session header the test sends.
pub fn tool_session(rounds: usize, stream: bool) -> String {
    let mut messages = vec![json!({"role": "user", "content": [{"type": "text", "text": TASK}]})];
    for k in 0..rounds {
        let id = format!("toolu_{k:04}");
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Read",
            "input": {"file_path": format!("/repo/src/module_{k}.rs")}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
            "content": file(k)}]}));
    }
    let mut body = json!({"model": SMALL_MODEL, "max_tokens": 256, "messages": messages});
    if stream {
        body["stream"] = json!(true);
    }
    body.to_string()
}

/// A whole Anthropic answer.
pub const OK: &str = r#"{"id":"msg_ok","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":7,"output_tokens":2}}"#;

/// The gateway's state in `dir` as one text: the index (`state.json`) and each session's file
/// (`sessions/*.json`, by name), a line each; empty when nothing is written yet.
#[allow(dead_code)]
pub fn state_text(dir: &std::path::Path) -> String {
    let mut text = std::fs::read_to_string(dir.join("state.json")).unwrap_or_default();
    for path in session_files(dir) {
        text.push('\n');
        text.push_str(&std::fs::read_to_string(path).unwrap_or_default());
    }
    text
}

/// The session files in `dir`'s `sessions/` folder, by name.
#[allow(dead_code)]
pub fn session_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("sessions"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}
