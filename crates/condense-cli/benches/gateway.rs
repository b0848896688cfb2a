//! The gateway's benchmark (issue 27): a ~150k-token Claude Code–shaped session (Anthropic
//! Messages: ~86 KB of system prompt and tools with `cache_control`, then rounds of thinking with
//! a signature and a tool call, answered by a tool result — file reads, commands, greps, edits —
//! with the latest message marked for the cache as Claude Code marks it), measured
//!
//! - in process, on the core's `condense_core::gateway::Gateway`: the first request of the
//!   session (in a fresh process, and as a new session of a running gateway), and 200 growing
//!   requests after it, each one round longer (warm: only the new messages are new), against an
//!   anchor in the same loop: `serde_json::from_slice::<Value>` of the same body, what any
//!   proxy that reads a request once pays;
//! - through the binary (`condense gateway` on 127.0.0.1:0) over HTTP, against an upstream in
//!   this process that sends its first SSE event as soon as it has read a request: the time to
//!   that first event through the gateway against directly, alternating, for a small request
//!   (the passthrough alone) and for the same 200 growing requests;
//! - memory per held session: the growth of the anonymous resident memory (`RssAnon` in
//!   /proc/<pid>/status, Linux) of this process and of the binary while each takes in N more
//!   sessions (the first request under N session ids), per session over the second half,
//!   against the request's JSON bytes; and what writing the state (`Gateway::save`) costs.
//!
//! Not a test: nothing here asserts a time. `cargo bench -p condense-cli --bench gateway`
//! (`-- --requests N`, `-- --sessions N`, `-- --rounds N` for the first request's rounds).
//! BENCHMARKS.md ("The gateway (issue 27)") holds the results.
#![allow(clippy::disallowed_methods, reason = "a benchmark times things")]
#![allow(clippy::disallowed_macros, reason = "a benchmark run by hand prints its table to a terminal")]

mod binary;
mod common;

use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use binary::Binary;
use condense_core::gateway::{Decision, Gateway, GatewayConfig, GatewayPolicy};
use serde_json::{Value, json};

/// The account part of Claude Code's user id.
const ACCOUNT: &str = "5b1e0c7a-2d3f-4e5a-8b9c-0d1e2f3a4b5c";
/// Claude Code's model in these requests.
const MODEL: &str = "claude-sonnet-4-5-20250929";
/// The path Claude Code posts to.
const PATH: &str = "/v1/messages?beta=true";

/// xorshift64*: deterministic input without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
    /// A generator for text that must come out the same twice.
    fn clone_for(&self, n: usize) -> Rng {
        Rng(self.0 ^ (n as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
    fn chars(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n).map(|_| alphabet[self.below(alphabet.len())] as char).collect()
    }
}

const WORDS: &[&str] = &[
    "the",
    "parser",
    "reads",
    "each",
    "line",
    "and",
    "checks",
    "field",
    "before",
    "returning",
    "value",
    "error",
    "session",
    "request",
    "buffer",
    "token",
    "count",
    "cache",
    "message",
    "tool",
    "result",
    "file",
    "test",
    "fails",
    "because",
    "empty",
    "input",
    "should",
    "handle",
    "case",
    "then",
    "run",
    "again",
    "config",
    "module",
    "function",
    "struct",
    "returns",
    "option",
    "index",
    "range",
    "split",
];
const IDENTS: &[&str] = &[
    "parse_line",
    "read_config",
    "tokens",
    "window",
    "session_key",
    "frozen",
    "splice",
    "ledger",
    "count_text",
    "forward",
    "upstream",
    "decision",
    "limits",
    "threshold",
    "Builder",
    "Request",
];
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

fn prose(rng: &mut Rng, words: usize) -> String {
    let mut out = String::new();
    for i in 0..words {
        if i > 0 {
            out.push(if i % 14 == 0 { '.' } else { ' ' });
            if i % 14 == 0 {
                out.push(' ');
            }
        }
        out.push_str(rng.pick(WORDS));
    }
    out.push('.');
    out
}

/// A file as Claude Code's Read returns it: numbered lines of code.
fn file_lines(rng: &mut Rng, lines: usize) -> String {
    let mut out = String::new();
    for n in 1..=lines {
        let code = match rng.below(6) {
            0 => format!("fn {}(input: &str) -> Option<usize> {{", rng.pick(IDENTS)),
            1 => format!("    let {} = {}(input, {})?;", rng.pick(IDENTS), rng.pick(IDENTS), rng.below(1000)),
            2 => format!("    // {}", prose(rng, 8)),
            3 => "}".to_owned(),
            4 => format!("    if {}.is_empty() {{ return None; }}", rng.pick(IDENTS)),
            _ => format!("    {}.push_str(\"{}\");", rng.pick(IDENTS), rng.pick(WORDS)),
        };
        out.push_str(&format!("{n:>6}\t{code}\n"));
    }
    out
}

fn tool_id(rng: &mut Rng) -> String {
    format!("toolu_01{}", rng.chars(ALNUM, 22))
}

/// The ~86 KB that come before the messages: Claude Code's system prompt blocks and its tools,
/// the last of each marked for the cache.
fn system_and_tools(rng: &mut Rng) -> (Value, Value) {
    let system = json!([
        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.",
         "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": (0..80).map(|_| prose(rng, 80)).collect::<Vec<_>>().join("\n\n"),
         "cache_control": {"type": "ephemeral"}},
    ]);
    let names = [
        "Task",
        "Bash",
        "Glob",
        "Grep",
        "ExitPlanMode",
        "Read",
        "Edit",
        "MultiEdit",
        "Write",
        "NotebookEdit",
        "WebFetch",
        "TodoWrite",
        "WebSearch",
        "BashOutput",
        "KillShell",
        "SlashCommand",
    ];
    let mut tools: Vec<Value> = names
        .iter()
        .map(|name| {
            json!({"name": name, "description": (0..6).map(|_| prose(rng, 60)).collect::<Vec<_>>().join("\n"),
                   "input_schema": {"type": "object", "$schema": "http://json-schema.org/draft-07/schema#",
                       "additionalProperties": false, "required": ["file_path"],
                       "properties": {"file_path": {"type": "string", "description": prose(rng, 20)},
                                      "limit": {"type": "number", "description": prose(rng, 12)}}}})
        })
        .collect();
    tools.last_mut().unwrap()["cache_control"] = json!({"type": "ephemeral"});
    (system, Value::Array(tools))
}

/// One round: the model's message (thinking with its signature, sometimes a word, a tool call)
/// and the user message with the tool's result; every thirtieth, an answer and a new instruction
/// instead. The user message comes twice: as sent later, and as sent while it is the latest
/// (its last block marked for the cache).
fn round(rng: &mut Rng, n: usize) -> [String; 3] {
    if n % 30 == 29 {
        let answer = json!({"role": "assistant", "content": [{"type": "text", "text": prose(rng, 60)}]});
        let ask = |mark: bool| {
            let mut block =
                json!({"type": "text", "text": format!("Now {}", prose(&mut rng.clone_for(n), 30))});
            if mark {
                block["cache_control"] = json!({"type": "ephemeral"});
            }
            json!({"role": "user", "content": [block]}).to_string()
        };
        return [answer.to_string(), ask(false), ask(true)];
    }
    let id = tool_id(rng);
    let (name, input, result) = match rng.below(10) {
        0..=3 => {
            let path = format!("/repo/src/{}.rs", rng.pick(IDENTS));
            let lines = 30 + rng.below(150);
            ("Read", json!({"file_path": path}), file_lines(rng, lines))
        }
        4..=6 => {
            let lines = 3 + rng.below(30);
            let out: Vec<String> = (0..lines)
                .map(|_| format!("test {}::{} ... ok", rng.pick(IDENTS), rng.pick(IDENTS)))
                .collect();
            let command = format!("cargo test -p {} 2>&1 | tail -40", rng.pick(IDENTS));
            ("Bash", json!({"command": command, "description": prose(rng, 6)}), out.join("\n"))
        }
        7..=8 => {
            let lines = 5 + rng.below(25);
            let out: Vec<String> = (0..lines)
                .map(|_| format!("src/{}.rs:{}:    {}", rng.pick(IDENTS), rng.below(900), prose(rng, 6)))
                .collect();
            let input =
                json!({"pattern": rng.pick(IDENTS), "path": "/repo", "output_mode": "content", "-n": true});
            ("Grep", input, out.join("\n"))
        }
        _ => {
            let path = format!("/repo/src/{}.rs", rng.pick(IDENTS));
            let (old, new) = (file_lines(rng, 3), file_lines(rng, 4));
            let input = json!({"file_path": path, "old_string": old, "new_string": new});
            ("Edit", input, format!("The file {path} has been updated."))
        }
    };
    let mut content = Vec::new();
    if rng.below(10) < 7 {
        let words = 40 + rng.below(120);
        let length = 300 + rng.below(300);
        let signature = rng.chars(B64, length);
        content.push(json!({"type": "thinking", "thinking": prose(rng, words), "signature": signature}));
    }
    if rng.below(3) == 0 {
        content.push(json!({"type": "text", "text": prose(rng, 12)}));
    }
    content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
    let call = json!({"role": "assistant", "content": content});
    let result = |mark: bool| {
        let mut block = json!({"type": "tool_result", "tool_use_id": id, "content": result});
        if mark {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"role": "user", "content": [block]}).to_string()
    };
    [call.to_string(), result(false), result(true)]
}

/// A Claude Code session: the fixed head and tail around the messages, and its messages.
struct Session {
    head: String,
    tail: String,
    /// Each user message as sent later and as sent while it is the latest.
    messages: Vec<(String, String)>,
}

impl Session {
    /// A session of `rounds` rounds after the task; `seed` makes its text and its id.
    fn new(seed: u64, rounds: usize) -> Session {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (system, tools) = system_and_tools(&mut Rng(7));
        let task = json!({"role": "user", "content": [
            {"type": "text", "text": format!("<system-reminder>\n{}\n</system-reminder>", prose(&mut rng, 200))},
            {"type": "text", "text": format!("Fix the failing parser tests in /repo. {}", prose(&mut rng, 20))},
        ]});
        let marked = {
            let mut t = task.clone();
            t["content"][1]["cache_control"] = json!({"type": "ephemeral"});
            t.to_string()
        };
        let mut messages = vec![(task.to_string(), marked)];
        for n in 0..rounds {
            let [call, result, latest] = round(&mut rng, n);
            messages.push((call.clone(), call));
            messages.push((result, latest));
        }
        let session = format!("{:08x}-4c2e-4a1b-9d3f-{:012x}", seed, seed.wrapping_mul(31));
        let head = format!("{{\"model\":\"{MODEL}\",\"messages\":");
        let tail = json!({"system": system, "tools": tools,
            "metadata": {"user_id": format!("user_{}_account_{ACCOUNT}_session_{session}", "a1".repeat(32))},
            "max_tokens": 32000, "thinking": {"type": "enabled", "budget_tokens": 31999},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}, "stream": true})
        .to_string();
        // The tail's object after the messages: `,"system":…}`.
        let tail = format!(",{}", &tail[1..]);
        Session { head, tail, messages }
    }

    /// The request after `rounds` rounds: the task and 2 messages a round, the latest marked.
    fn request(&self, rounds: usize) -> Vec<u8> {
        let n = 1 + 2 * rounds;
        let mut out = String::with_capacity(self.head.len() + self.tail.len() + 2_000 * n);
        out.push_str(&self.head);
        out.push('[');
        for (i, (plain, latest)) in self.messages[..n].iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(if i + 1 == n { latest } else { plain });
        }
        out.push(']');
        out.push_str(&self.tail);
        out.into_bytes()
    }
}

/// The gateway at the threshold: these measurements are of requests forwarded as they grow and
/// of condensations where the threshold puts them (the `cache-aware` policy, the default, would
/// condense this session early: it has 85 KB of system prompt and tools before what it
/// condenses, so the cache it rewrites is small).
fn gateway(window: Option<usize>) -> Gateway {
    let mut config = GatewayConfig { policy: GatewayPolicy::Threshold, ..GatewayConfig::default() };
    if let Some(w) = window {
        config.windows.insert(MODEL.into(), w);
    }
    Gateway::new(config).expect("the configuration holds")
}

/// Tokens of the request as the client sent it, and as forwarded.
fn decide(gateway: &mut Gateway, body: &[u8]) -> (usize, usize, bool) {
    match gateway.request(PATH, None, body) {
        Decision::Forward { tokens_client, tokens_forwarded, condensed_now, body, .. } => {
            black_box(body);
            (tokens_client, tokens_forwarded, condensed_now)
        }
        Decision::Untouched { reason, .. } => panic!("the gateway did not read the request: {reason}"),
    }
}

fn ms(d: Duration) -> String {
    let x = d.as_secs_f64() * 1e3;
    if x >= 100.0 {
        format!("{x:.0} ms")
    } else if x >= 10.0 {
        format!("{x:.1} ms")
    } else {
        format!("{x:.2} ms")
    }
}

/// The value at quantile `q` of `v` (nearest rank).
fn quantile(v: &[Duration], q: f64) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split(' ')
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A field of /proc/<pid>/status, in bytes.
fn status_bytes(pid: &str, field: &str) -> Option<usize> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: usize =
        status.lines().find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok())?;
    Some(kb * 1024)
}

const FIRST_EVENT: &[u8] =
    b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\
\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":140000,\"output_tokens\":1}}}\n\n";
const REST: &[u8] = b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\
\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\
\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

/// An upstream on 127.0.0.1: for each request it has read, the SSE head and first event at once
/// (one chunk), then the rest. Keeps connections alive unless asked to close. Connections are
/// served by threads started beforehand: a thread started per connection waits for a core on a
/// loaded machine (milliseconds at a load average of 4), which the direct path would pay and
/// the gateway's pooled connection would not.
fn upstream() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (give, take) = std::sync::mpsc::channel::<TcpStream>();
    let take = std::sync::Arc::new(std::sync::Mutex::new(take));
    for _ in 0..8 {
        let take = std::sync::Arc::clone(&take);
        std::thread::spawn(move || {
            loop {
                let next = take.lock().unwrap().recv();
                let Ok(stream) = next else { return };
                serve_upstream(stream);
            }
        });
    }
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            if give.send(stream).is_err() {
                return;
            }
        }
    });
    port
}

fn serve_upstream(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut close = false;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            close |= lower.starts_with("connection:") && lower.contains("close");
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let mut first =
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n".to_vec();
        if close {
            first.extend_from_slice(b"connection: close\r\n");
        }
        first.extend_from_slice(format!("\r\n{:x}\r\n", FIRST_EVENT.len()).as_bytes());
        first.extend_from_slice(FIRST_EVENT);
        first.extend_from_slice(b"\r\n");
        let mut rest = format!("{:x}\r\n", REST.len()).into_bytes();
        rest.extend_from_slice(REST);
        rest.extend_from_slice(b"\r\n0\r\n\r\n");
        if writer.write_all(&first).and_then(|()| writer.write_all(&rest)).is_err() || close {
            return;
        }
    }
}

/// Posts `body` to `port` on a new connection; the time until the answer's first event has
/// arrived, and the whole answer read.
fn first_event(port: u16, path: &str, body: &[u8]) -> Duration {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
         x-api-key: sk-bench\r\nanthropic-version: 2023-06-01\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let start = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_nodelay(true).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let needle = b"message_start";
    let elapsed = loop {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the answer ended before its first event: {}", String::from_utf8_lossy(&raw));
        raw.extend_from_slice(&buf[..n]);
        if raw.windows(needle.len()).any(|w| w == needle) {
            break start.elapsed();
        }
    };
    stream.read_to_end(&mut raw).unwrap();
    assert!(raw.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&raw[..raw.len().min(300)]));
    elapsed
}

fn row(name: &str, v: &[Duration], goal: &str) {
    println!(
        "| {name} | {} | {} | {} | {goal} |",
        ms(quantile(v, 0.5)),
        ms(quantile(v, 0.99)),
        ms(quantile(v, 1.0))
    );
}

fn main() {
    if !common::started_by_cargo_bench(env!("CARGO_CRATE_NAME")) {
        return;
    }
    let requests: usize = common::arg("--requests").and_then(|n| n.parse().ok()).unwrap_or(200);
    let held: usize = common::arg("--sessions").and_then(|n| n.parse().ok()).unwrap_or(24);
    let base_rounds: usize = common::arg("--rounds").and_then(|n| n.parse().ok()).unwrap_or(BASE_ROUNDS);
    println!("load average at start: {}", load_average());

    let session = Session::new(1, base_rounds + requests);
    let first_body = session.request(base_rounds);

    // The first request, in a fresh process: the encoding's tables laid out, every message read
    // and counted.
    let mut g = gateway(Some(1_000_000));
    let start = Instant::now();
    let (tokens, _, _) = decide(&mut g, &first_body);
    let cold = start.elapsed();
    println!(
        "\n## the session: {:.0} KB of system prompt and tools; {tokens} tokens, {} messages, \
         {:.0} KB at its first request; {:.0} KB after {requests} more rounds\n",
        (session.head.len() + session.tail.len()) as f64 / 1024.0,
        1 + 2 * base_rounds,
        first_body.len() as f64 / 1024.0,
        session.request(base_rounds + requests).len() as f64 / 1024.0,
    );

    // The first request of a new session in a running gateway (another session seen before).
    let mut news = Vec::new();
    for seed in 2..7 {
        let other = Session::new(seed, base_rounds).request(base_rounds);
        let start = Instant::now();
        black_box(decide(&mut g, &other));
        news.push(start.elapsed());
    }
    println!("| first request | median | max | goal |");
    println!("| --- | ---: | ---: | --- |");
    println!("| in a fresh process (tables laid out) | {} | — | ≤ 100 ms |", ms(cold));
    println!(
        "| a new session, gateway running (5 sessions) | {} | {} | ≤ 100 ms |",
        ms(quantile(&news, 0.5)),
        ms(quantile(&news, 1.0))
    );

    // Warm: each request one round longer, the anchor parsing the same body in the same loop.
    let warm = |window: Option<usize>, label: &str| {
        let mut g = gateway(window);
        decide(&mut g, &first_body);
        let (mut ours, mut anchor, mut condensing) = (Vec::new(), Vec::new(), Vec::new());
        let mut last = (0, 0);
        for k in 1..=requests {
            let body = session.request(base_rounds + k);
            let parse = || {
                let start = Instant::now();
                black_box(serde_json::from_slice::<Value>(&body).unwrap());
                start.elapsed()
            };
            let mut run = || {
                let start = Instant::now();
                let (client, forwarded, now) = decide(&mut g, &body);
                let d = start.elapsed();
                last = (client, forwarded);
                if now {
                    condensing.push((k, d, client, forwarded));
                }
                d
            };
            if k % 2 == 0 {
                anchor.push(parse());
                ours.push(run());
            } else {
                ours.push(run());
                anchor.push(parse());
            }
        }
        println!(
            "\n### warm, {label}: {requests} requests, each one round longer (to {} tokens; forwarded {})\n",
            last.0, last.1
        );
        println!("| per request | p50 | p99 | max | goal |");
        println!("| --- | ---: | ---: | ---: | --- |");
        row("`Gateway::request`", &ours, "p50 ≤ 5 ms, p99 ≤ 20 ms");
        row("anchor: `serde_json::from_slice::<Value>` of the body", &anchor, "");
        println!(
            "| ratio of the p50s | {:.2}× | | | |",
            quantile(&ours, 0.5).as_secs_f64() / quantile(&anchor, 0.5).as_secs_f64()
        );
        for (k, d, client, forwarded) in condensing {
            println!("| request {k} condensed ({client} → {forwarded} tokens) | {} | | | |", ms(d));
        }
    };
    warm(Some(1_000_000), "no condensation (window 1M)");
    warm(None, "Claude's 200k window, threshold 80% crossed midway");
    // A part of every request: each message is hashed (FNV-1a, a byte at a time) to match it.
    let last = session.request(base_rounds + requests);
    let mut hashes = Vec::new();
    for _ in 0..21 {
        let start = Instant::now();
        black_box(condense_core::gateway::fnv1a(black_box(&last)));
        hashes.push(start.elapsed());
    }
    println!(
        "\npart: FNV-1a over the last request's {:.0} KB: {} (median of 21)",
        last.len() as f64 / 1024.0,
        ms(quantile(&hashes, 0.5))
    );

    // Memory per held session: N more sessions of the same size (the first request's body under
    // another session id each, so that nothing is generated while memory is measured). The
    // growth is taken over the second half of them: the first ones fill the holes the heap kept
    // from what was freed before (the generator's text, the requests' copies), which would
    // otherwise make a session look smaller than it is.
    let memory = |label: &str, pid: &str, take: &mut dyn FnMut(&[u8])| -> usize {
        let own = b"_session_00000001-";
        let at = first_body.windows(own.len()).position(|w| w == own).expect("the session id");
        let bodies: Vec<Vec<u8>> = (0..held)
            .map(|i| {
                let mut body = first_body.clone();
                body[at..at + own.len()].copy_from_slice(format!("_session_{:08x}-", 0x1000 + i).as_bytes());
                body
            })
            .collect();
        let mut rss = vec![status_bytes(pid, "RssAnon:").unwrap_or(0)];
        for body in &bodies {
            take(body);
            rss.push(status_bytes(pid, "RssAnon:").unwrap_or(0));
        }
        let half = held / 2;
        let per = rss[held].saturating_sub(rss[half]) / (held - half);
        let all = rss[held].saturating_sub(rss[0]) / held;
        println!(
            "| {label} | {held} | {:.0} KB | {:.0} KB | {:.0} KB | {:.2}× | ≤ 2× |",
            first_body.len() as f64 / 1024.0,
            all as f64 / 1024.0,
            per as f64 / 1024.0,
            per as f64 / first_body.len() as f64
        );
        rss[0]
    };
    println!("\n### memory per held session (growth of RssAnon while N sessions are taken in)\n");
    println!(
        "| where | N | JSON of a session's request | growth / N | growth per session, second half | ratio | goal |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | --- |");
    let mut g = gateway(Some(1_000_000));
    decide(&mut g, &Session::new(99, base_rounds).request(base_rounds));
    let start = memory("in process (`Gateway`)", "self", &mut |body| {
        decide(&mut g, body);
    });
    // The state the binary saves half a second after a change: every session's file serialized
    // (the snapshot under the state's lock, the files after), of which it writes those that
    // changed.
    let before = status_bytes("self", "RssAnon:").unwrap_or(0);
    let mut saves = Vec::new();
    let mut size = 0;
    for _ in 0..3 {
        let start = Instant::now();
        let files = black_box(g.snapshot().files());
        size = files.index.len() + files.sessions.iter().map(|f| f.bytes.len()).sum::<usize>();
        saves.push(start.elapsed());
    }
    println!(
        "\n`snapshot().files()` of these {} sessions: {:.1} MB in {} (median of 3, max {}); \
         RssAnon {:.1} MB → {:.1} MB (from {:.1} MB before the {held} sessions)",
        held + 1,
        size as f64 / 1048576.0,
        ms(quantile(&saves, 0.5)),
        ms(quantile(&saves, 1.0)),
        before as f64 / 1048576.0,
        status_bytes("self", "RssAnon:").unwrap_or(0) as f64 / 1048576.0,
        start as f64 / 1048576.0
    );
    drop(g);

    // Through the binary over HTTP.
    let up = upstream();
    let window = format!("{MODEL}={}", 1_000_000);
    let binary = Binary::start("gateway", up, &["--policy", "threshold", "--window", &window]);
    let small = json!({"model": MODEL, "max_tokens": 64, "stream": true,
                       "messages": [{"role": "user", "content": "Say hello."}]})
    .to_string();
    for _ in 0..20 {
        first_event(binary.port, &format!("/anthropic{PATH}"), small.as_bytes());
        first_event(up, PATH, small.as_bytes());
    }
    let (mut through, mut direct) = (Vec::new(), Vec::new());
    for i in 0..requests {
        let mut g = || through.push(first_event(binary.port, &format!("/anthropic{PATH}"), small.as_bytes()));
        let mut d = || direct.push(first_event(up, PATH, small.as_bytes()));
        if i % 2 == 0 {
            g();
            d();
        } else {
            d();
            g();
        }
    }
    let added = |through: &[Duration], direct: &[Duration]| {
        quantile(through, 0.5).saturating_sub(quantile(direct, 0.5))
    };
    println!(
        "\n### through the binary over HTTP: time to the first SSE event (load average {})\n",
        load_average()
    );
    println!("| request | p50 | p99 | max | goal |");
    println!("| --- | ---: | ---: | ---: | --- |");
    row("small request, through `condense gateway`", &through, "");
    row("small request, directly to the upstream (anchor)", &direct, "");
    println!(
        "| added by the passthrough (difference of the p50s) | {} | | | ≤ 1 ms |",
        ms(added(&through, &direct))
    );

    let (mut through, mut direct) = (Vec::new(), Vec::new());
    let start = Instant::now();
    first_event(binary.port, &format!("/anthropic{PATH}"), &first_body);
    let first_http = start.elapsed();
    let start = Instant::now();
    first_event(up, PATH, &first_body);
    let first_direct = start.elapsed();
    for k in 1..=requests {
        let body = session.request(base_rounds + k);
        let mut g = || through.push(first_event(binary.port, &format!("/anthropic{PATH}"), &body));
        let mut d = || direct.push(first_event(up, PATH, &body));
        if k % 2 == 0 {
            g();
            d();
        } else {
            d();
            g();
        }
    }
    row("the session's growing requests, through `condense gateway`", &through, "");
    row("the same, directly to the upstream (anchor)", &direct, "");
    println!(
        "| added per request (difference of the p50s; of the p99s) | {} | {} | | \
         p50 ≤ 5 ms, p99 ≤ 20 ms |",
        ms(added(&through, &direct)),
        ms(quantile(&through, 0.99).saturating_sub(quantile(&direct, 0.99)))
    );
    println!(
        "| the session's first request through the gateway; directly | {} | {} | | ≤ 100 ms |",
        ms(first_http),
        ms(first_direct)
    );

    println!("\n### memory per held session, the binary\n");
    println!(
        "| where | N | JSON of a session's request | growth / N | growth per session, second half | ratio | goal |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | --- |");
    let pid = binary.child.id().to_string();
    let start = memory("`condense gateway` over HTTP", &pid, &mut |body| {
        first_event(binary.port, &format!("/anthropic{PATH}"), body);
    });
    // The gateway writes its state half a second after a change: the whole state serialized.
    let before = status_bytes(&pid, "RssAnon:").unwrap_or(0);
    std::thread::sleep(Duration::from_millis(1500));
    let after = status_bytes(&pid, "RssAnon:").unwrap_or(0);
    println!(
        "\nafter the gateway wrote its state (1.5 s later): RssAnon {:.1} MB → {:.1} MB, VmHWM {:.1} MB; \
         growth since before the {held} sessions {:.0} KB per session, {:.2}× its JSON",
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        status_bytes(&pid, "VmHWM:").unwrap_or(0) as f64 / 1048576.0,
        after.saturating_sub(start) as f64 / held as f64 / 1024.0,
        after.saturating_sub(start) as f64 / held as f64 / first_body.len() as f64,
    );
    println!("\nload average at the end: {}", load_average());
}

/// Rounds after the task in the first request: about 150k tokens with the system prompt and
/// the tools.
const BASE_ROUNDS: usize = 145;
