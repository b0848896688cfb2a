//! The gateway under abuse (issue 38), measured through the binary (`condense gateway` on
//! 127.0.0.1:0) against an upstream in this process that reads each request whole and answers
//! a short JSON message:
//!
//! - time per request for one Anthropic request of N short alternating messages (5k to 80k), the
//!   first of its session, through the gateway against the same request sent directly (the
//!   anchor, alternating); the ratio of 40k to 10k says whether the work is linear;
//! - peak memory (`VmHWM` of the gateway process, Linux) for one request of each body kind and
//!   size, each in a fresh gateway, against the budget of 4× the body plus 64 MB;
//! - head-of-line: the latency of a small request of another session, every 20 ms, alone and
//!   while a client sends 50 MB bodies one after another; p50 and p99;
//! - the state: twelve sessions of 20 MB each (an agent's session of 2,000 tool rounds, condensed),
//!   then the size of the state (`state.json` and the session files) and the gateway's resident
//!   memory.
//!
//! Not a test: nothing here asserts a time. `cargo bench -p condense-cli --bench abuse`
//! (`-- --quick` for smaller sizes, `-- --big-mb N` for the bodies sent beside the small requests,
//! `-- --only time|memory|head|state` for one section). RELIABILITY.md ("The gateway under abuse") holds the results.
#![allow(clippy::disallowed_methods, reason = "a benchmark times things")]
#![allow(clippy::disallowed_macros, reason = "a benchmark run by hand prints its table to a terminal")]

mod binary;
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use binary::Binary;
use serde_json::json;

const OK: &str = r#"{"id":"msg_ok","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":7,"output_tokens":2}}"#;

/// An upstream that reads each request whole and answers `OK`, a connection each.
fn upstream() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if line == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':')
                        && k.eq_ignore_ascii_case("content-length")
                    {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut sink = vec![0u8; 1 << 16];
                let mut left = length;
                while left > 0 {
                    let n = reader.read(&mut sink[..left.min(1 << 16)]).unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    left -= n;
                }
                let mut stream = stream;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
                    OK.len()
                );
                let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(OK.as_bytes()));
            });
        }
    });
    port
}

/// The peak resident memory of `gateway` so far, in MB.
fn peak_mb(gateway: &Binary) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", gateway.child.id())).unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// POSTs `body` to `path` on `port` for `session`; the time to the whole answer.
fn post(port: u16, path: &str, session: &str, body: &[u8]) -> Duration {
    let started = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-api-key: k\r\nx-context-condenser-session: {session}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer[..answer.len().min(300)])
    );
    started.elapsed()
}

fn messages_body(n: usize) -> Vec<u8> {
    let messages: Vec<_> = (0..n)
        .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("message {i}")}))
        .collect();
    json!({"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": messages}).to_string().into_bytes()
}

/// A body of about `mb` megabytes of the kind named.
fn body_of(kind: &str, mb: usize) -> Vec<u8> {
    let n = mb << 20;
    let one = |text: String| {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": [{"role": "user", "content": text}]})
            .to_string()
            .into_bytes()
    };
    match kind {
        "one character repeated" => one("a".repeat(n)),
        "base64" => {
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            one((0..n)
                .map(|_| {
                    x ^= x >> 12;
                    x ^= x << 25;
                    x ^= x >> 27;
                    alphabet[(x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 58) as usize] as char
                })
                .collect())
        }
        "one message of words" => one("the quick brown fox jumps over the lazy dog ".repeat(n / 44)),
        "100k small messages" => {
            let each = n / 100_000;
            let messages: Vec<_> = (0..100_000)
                .map(|i| {
                    json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
                        "content": format!("{i} {}", "word ".repeat(each.saturating_sub(40) / 5))})
                })
                .collect();
            json!({"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": messages})
                .to_string()
                .into_bytes()
        }
        _ => unreachable!(),
    }
}

fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    if !common::started_by_cargo_bench("abuse") {
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    // `--only time|memory|head`: one section, for daily work.
    let only = common::arg("--only");
    let run = |section: &str| only.as_deref().is_none_or(|o| o == section);
    let upstream = upstream();
    if run("time") {
        time_per_request(upstream, quick);
    }
    if run("memory") {
        peak_memory(upstream, quick);
    }
    if run("head") {
        head_of_line(upstream, quick);
    }
    if run("state") {
        state_size(upstream, quick);
    }
}

/// An agent's session of about `mb` MB: its task, then tool rounds of 10 KB results.
fn session_body(mb: usize, seed: usize) -> Vec<u8> {
    let rounds = (mb << 20) / 5_150;
    let mut messages = vec![
        json!({"role": "user", "content": format!("Task {seed}: fix the failing tests in crate {seed}.")}),
    ];
    for r in 0..rounds {
        let id = format!("toolu_{seed}_{r}");
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": format!("/repo/src/m{r}.rs")}}]}));
        let lines: String =
            (0..120).map(|l| format!("{l:>6}\tlet v_{r}_{l} = compute({seed}, {l});\n")).collect();
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": lines}]}));
    }
    json!({"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": messages}).to_string().into_bytes()
}

fn state_size(upstream: u16, quick: bool) {
    let (sessions, mb) = if quick { (4, 5) } else { (12, 20) };
    println!("\n## The state after {sessions} sessions of {mb} MB\n");
    let gateway = Binary::start("abuse-state", upstream, &[]);
    let mut sent = 0usize;
    for i in 0..sessions {
        let body = session_body(mb, i);
        sent += body.len();
        post(gateway.port, "/anthropic/v1/messages", &format!("agent-{i}"), &body);
    }
    // Saved within half a second of the last change: the index and each changed session's file.
    std::thread::sleep(Duration::from_secs(2));
    let sessions_dir = gateway.state.join("sessions");
    let mut files = vec![gateway.state.join("state.json")];
    files.extend(std::fs::read_dir(&sessions_dir).into_iter().flatten().flatten().map(|e| e.path()));
    let sizes: Vec<u64> = files.iter().map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)).collect();
    let size: u64 = sizes.iter().sum();
    let largest = sizes.iter().skip(1).copied().max().unwrap_or(0);
    let condensations: usize = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default().matches(r#""replacement""#).count())
        .sum();
    let status = std::fs::read_to_string(format!("/proc/{}/status", gateway.child.id())).unwrap_or_default();
    let field = |name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_owned()).unwrap_or_default()
    };
    println!(
        "| sessions | sent | condensations saved | state (index and session files) | largest session file | gateway VmRSS | VmHWM |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| {sessions} | {:.0} MB | {condensations} | {:.2} MB | {:.2} MB | {} | {} |",
        sent as f64 / 1e6,
        size as f64 / 1e6,
        largest as f64 / 1e6,
        field("VmRSS:"),
        field("VmHWM:")
    );
}

fn time_per_request(upstream: u16, quick: bool) {
    println!("## Time per request: one request of N short messages, the first of its session\n");
    println!("| messages | body | through the gateway | directly | added |");
    println!("| ---: | ---: | ---: | ---: | ---: |");
    let gateway = Binary::start("abuse-lines", upstream, &[]);
    let sizes: &[usize] =
        if quick { &[5_000, 10_000, 20_000, 40_000] } else { &[5_000, 10_000, 20_000, 40_000, 80_000] };
    let mut added_at = Vec::new();
    for &n in sizes {
        let body = messages_body(n);
        let (mut through, mut direct) = (Vec::new(), Vec::new());
        for round in 0..5 {
            through.push(
                post(gateway.port, "/anthropic/v1/messages", &format!("n{n}-{round}"), &body).as_secs_f64(),
            );
            direct.push(post(upstream, "/v1/messages", "-", &body).as_secs_f64());
        }
        let (t, d) = (percentile(&mut through, 0.5) * 1e3, percentile(&mut direct, 0.5) * 1e3);
        added_at.push((n, t - d));
        println!("| {n} | {:.1} MB | {t:.0} ms | {d:.0} ms | {:.0} ms |", body.len() as f64 / 1e6, t - d);
    }
    let at = |n| added_at.iter().find(|(m, _)| *m == n).map(|(_, a)| *a).unwrap_or(f64::NAN);
    println!("\nadded at 40k / added at 10k: {:.2}×\n", at(40_000) / at(10_000));
    drop(gateway);
}

fn peak_memory(upstream: u16, quick: bool) {
    println!("## Peak memory of the gateway for one request\n");
    println!("| body | size | peak (VmHWM) | × body | budget (4× + 64 MB) |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let sizes: &[usize] = if quick { &[10] } else { &[10, 50] };
    for kind in ["one character repeated", "base64", "one message of words", "100k small messages"] {
        for &mb in sizes {
            let body = body_of(kind, mb);
            let gateway = Binary::start("abuse-memory", upstream, &[]);
            let idle = peak_mb(&gateway);
            post(gateway.port, "/anthropic/v1/messages", "big", &body);
            let peak = peak_mb(&gateway);
            let size = body.len() as f64 / (1 << 20) as f64;
            println!(
                "| {kind} | {size:.0} MB | {peak:.0} MB (idle {idle:.0}) | {:.1}× | {:.0} MB |",
                peak / size,
                4.0 * size + 64.0
            );
        }
    }
}

fn head_of_line(upstream: u16, quick: bool) {
    println!("\n## Head-of-line: a small request of another session, every 20 ms\n");
    let gateway = Arc::new(Binary::start("abuse-line", upstream, &[]));
    let small = messages_body(40);
    let mut alone = Vec::new();
    for i in 0..100 {
        alone.push(
            post(gateway.port, "/anthropic/v1/messages", &format!("small-{}", i % 4), &small).as_secs_f64()
                * 1e3,
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let big_mb = common::arg("--big-mb").and_then(|v| v.parse().ok()).unwrap_or(if quick { 10 } else { 50 });
    let big = Arc::new(body_of("one message of words", big_mb));
    let busy = Arc::new(AtomicBool::new(true));
    let sender = {
        let (gateway, big, busy) = (Arc::clone(&gateway), Arc::clone(&big), Arc::clone(&busy));
        std::thread::spawn(move || {
            let mut sent = 0;
            while busy.load(Ordering::Relaxed) {
                post(gateway.port, "/anthropic/v1/messages", &format!("big-{sent}"), &big);
                sent += 1;
            }
            sent
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let mut loaded = Vec::new();
    for i in 0..100 {
        loaded.push(
            post(gateway.port, "/anthropic/v1/messages", &format!("small-{}", i % 4), &small).as_secs_f64()
                * 1e3,
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    busy.store(false, Ordering::Relaxed);
    let sent = sender.join().unwrap();
    let (a50, a99) = (percentile(&mut alone, 0.5), percentile(&mut alone, 0.99));
    let (l50, l99) = (percentile(&mut loaded, 0.5), percentile(&mut loaded, 0.99));
    println!("| small request | p50 | p99 |");
    println!("| --- | ---: | ---: |");
    println!("| alone | {a50:.1} ms | {a99:.1} ms |");
    println!(
        "| while {:.0} MB bodies are sent ({sent} of them) | {l50:.1} ms | {l99:.1} ms |",
        big.len() as f64 / 1e6
    );
    println!("| added | {:.1} ms | {:.1} ms |", l50 - a50, l99 - a99);
}
