//! `condense gateway` under abuse (issue 38): each finding of the adversarial run, reproduced
//! against the process on 127.0.0.1 and checked to hold now. Paths that could leave their route,
//! client values in log lines, streams that keep moving or stall, bodies that stop arriving, the
//! token kept off the command line, state files of a newer version or with one bad session, and a
//! gateway killed with SIGKILL at random points of a condensing burst.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::gateway::{
    Gateway, OK, Received, SMALL_WINDOW, Upstream, respond, session_files, state_text, tool_session,
};
use common::{HANG_GUARD, Scratch};
use serde_json::{Value, json};

/// The path of a request as an upstream received it.
fn path_of(received: &Received) -> String {
    received.head.lines().next().unwrap_or_default().split(' ').nth(1).unwrap_or_default().to_owned()
}

/// Sends raw bytes and reads until the gateway closes; `None` when the connection failed.
fn raw(port: u16, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(HANG_GUARD)).ok()?;
    stream.write_all(bytes).ok()?;
    let mut out = Vec::new();
    stream.read_to_end(&mut out).ok()?;
    Some(out)
}

fn status_of(answer: &[u8]) -> u16 {
    let text = String::from_utf8_lossy(answer);
    text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[test]
fn a_path_with_dot_segments_is_refused_with_400_and_never_reaches_the_upstream() {
    let upstream = Upstream::json(json!({"object": "list", "data": []}));
    let state = Scratch::new("rel-paths");
    // An upstream with a path prefix, as a team's proxy has: `/team-a` must not be left.
    let prefixed = format!("{}/team-a", upstream.url());
    let gateway =
        Gateway::start(&state, &["--openai-upstream", &prefixed, "--anthropic-upstream", &prefixed]);
    for path in [
        "/anthropic/../../etc/passwd",
        "/openai/v1/../../../team-b/openai/v1/responses",
        "/openai/v1/%2e%2e/%2E%2E/team-b/v1/models",
        "/openai/v1/.%2e/.%2e/team-b",
        "/openai/v1/%252e%252e/team-b",
        "/anthropic/v1/..%2f..%2fteam-b",
        "/anthropic/v1/%5c..%5cteam-b",
    ] {
        let reply = gateway.send("GET", path, &["Authorization: Bearer k"], b"");
        assert_eq!(reply.status, 400, "{path}: {}", reply.text());
        assert!(reply.text().contains("segment"), "{path}: {}", reply.text());
    }
    let reply = gateway.send("GET", "/openai/v1/models", &["Authorization: Bearer k"], b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = upstream.next();
    assert_eq!(path_of(&seen), "/team-a/v1/models", "the first request the upstream saw is the good one");
    assert!(upstream.received.try_recv().is_err(), "nothing else reached it");
}

#[test]
fn client_values_are_escaped_and_cut_in_every_log_line_and_in_stats() {
    let upstream = Upstream::json(serde_json::from_str(OK).unwrap());
    let state = Scratch::new("rel-logs");
    let gateway = Gateway::start(&state, &["--anthropic-upstream", &upstream.url()]);
    let user_id =
        format!("user_x_account_y_session_probe\r\ngateway: POST /forged → 200\u{0}{}", "z".repeat(100_000));
    let body = json!({
        "model": "probe\r\nX-Injected: 1\u{202e}",
        "max_tokens": 8,
        "metadata": {"user_id": user_id},
        "messages": [{"role": "user", "content": "hi"}],
    })
    .to_string();
    assert_eq!(gateway.post("/anthropic/v1/messages", &["x-api-key: k"], &body).status, 200);
    upstream.next();
    let long_path = format!("/nowhere/{}", "p".repeat(50_000));
    assert_eq!(gateway.send("GET", &long_path, &[], b"").status, 404);
    let stats = gateway.stats().to_string();
    let until = Instant::now() + HANG_GUARD;
    while !gateway.output().contains("/anthropic/v1/messages") {
        assert!(Instant::now() < until, "no log line: {}", gateway.output());
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = gateway.output();
    for line in output.lines() {
        assert!(
            !line.starts_with("X-Injected") && !line.starts_with("gateway: POST /forged"),
            "a forged line: {line}"
        );
        assert!(line.chars().count() <= 1_000, "a line of {} characters", line.chars().count());
        assert!(!line.contains(['\u{0}', '\u{202e}']), "{line}");
    }
    assert!(stats.len() < 20_000, "/stats holds the client's values cut: {} bytes", stats.len());
    assert!(!stats.contains("\\r\\nX-Injected") || stats.contains("\\\\r\\\\n"), "escaped in /stats");
    assert!(!stats.contains("\\u202e"), "no raw bidi override in /stats: {stats:.300}");
}

#[test]
fn a_request_over_the_memory_budget_goes_out_as_sent_and_stats_say_why() {
    let upstream = Upstream::json(serde_json::from_str(OK).unwrap());
    let state = Scratch::new("rel-budget");
    let gateway =
        Gateway::start(&state, &["--anthropic-upstream", &upstream.url(), "--window", SMALL_WINDOW]);
    // 100,000 short messages: far over the window, and condensing them would take about 150 MB
    // for a 4 MB body (the budget: 4 × the body + 64 MB).
    let messages: Vec<Value> = (0..100_000)
        .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("message {i}")}))
        .collect();
    let body = json!({"model": "tiny-model", "max_tokens": 8, "messages": messages}).to_string();
    let reply =
        gateway.post("/anthropic/v1/messages", &["x-api-key: k", "x-context-condenser-session: many"], &body);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(upstream.next().body, body.as_bytes(), "the client's bytes");
    let stats = gateway.stats();
    assert_eq!(stats["failed_open"], 1, "{stats:.500}");
    let why = stats["last_failed_open"].as_str().unwrap_or_default();
    assert!(why.contains("100000 messages") && why.contains("memory budget"), "{why}");
    // A request of the same session within the budget is condensed as ever.
    let client = tool_session(12, true);
    let reply = gateway.post(
        "/anthropic/v1/messages",
        &["x-api-key: k", "x-context-condenser-session: many"],
        &client,
    );
    assert_eq!(reply.status, 200);
    assert!(String::from_utf8_lossy(&upstream.next().body).contains("[Context Condenser"));
}

/// An upstream that answers a streamed Anthropic request with `events` SSE events `every` apart,
/// then (with `stall`) goes silent for that long before closing.
fn ticking(events: usize, every: Duration, stall: Option<Duration>) -> Upstream {
    Upstream::start(move |_, stream| {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        if stream.write_all(head.as_bytes()).is_err() {
            return;
        }
        for i in 0..events {
            let event = format!("event: ping\ndata: {{\"type\":\"ping\",\"n\":{i}}}\n\n");
            if stream.write_all(event.as_bytes()).and_then(|()| stream.flush()).is_err() {
                return;
            }
            std::thread::sleep(every);
        }
        if let Some(stall) = stall {
            std::thread::sleep(stall);
        }
    })
}

/// The pings a streamed answer carried, and whether it ended cleanly (its last chunk sent).
fn pings(answer: &[u8]) -> (usize, bool) {
    let text = String::from_utf8_lossy(answer);
    (text.matches("\"type\":\"ping\"").count(), text.ends_with("0\r\n\r\n"))
}

fn streamed(gateway: &Gateway) -> Vec<u8> {
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 8, "stream": true,
        "messages": [{"role": "user", "content": "count"}]})
    .to_string();
    let request = format!(
        "POST /anthropic/v1/messages HTTP/1.1\r\nHost: {}\r\nx-api-key: k\r\ncontent-length: {}\r\nConnection: close\r\n\r\n{body}",
        gateway.host(),
        body.len()
    );
    raw(gateway.port, request.as_bytes()).expect("an answer")
}

#[test]
fn an_answer_that_keeps_moving_is_never_cut_and_the_limits_are_on_silence_or_the_flag() {
    // 30 events over 3 s with `--stream-idle-secs 1`: longer than the idle limit in all, never
    // silent for it, so never cut.
    let state = Scratch::new("rel-stream");
    let upstream = ticking(30, Duration::from_millis(100), None);
    let gateway =
        Gateway::start(&state, &["--anthropic-upstream", &upstream.url(), "--stream-idle-secs", "1"]);
    assert_eq!(pings(&streamed(&gateway)), (30, true));
    drop(gateway);

    // One event, then silence: the stream is ended after the idle limit, short (no last chunk),
    // long before the upstream would have closed it.
    let upstream = ticking(1, Duration::ZERO, Some(HANG_GUARD));
    let gateway =
        Gateway::start(&state, &["--anthropic-upstream", &upstream.url(), "--stream-idle-secs", "1"]);
    assert_eq!(pings(&streamed(&gateway)), (1, false));
    drop(gateway);

    // `--stream-max-secs 1` cuts even a moving answer, when asked for.
    let upstream = ticking(30, Duration::from_millis(100), None);
    let gateway =
        Gateway::start(&state, &["--anthropic-upstream", &upstream.url(), "--stream-max-secs", "1"]);
    let (seen, clean) = pings(&streamed(&gateway));
    assert!(seen < 30 && !clean, "cut by the cap: {seen} events, clean: {clean}");
}

#[test]
fn a_body_that_stops_arriving_is_dropped_after_the_idle_time() {
    let upstream = Upstream::json(serde_json::from_str(OK).unwrap());
    let state = Scratch::new("rel-body");
    let gateway =
        Gateway::start(&state, &["--anthropic-upstream", &upstream.url(), "--client-idle-secs", "1"]);
    // Four clients that each promise 50 MB and send 10 bytes: each answered 408, none held.
    let port = gateway.port;
    let host = gateway.host();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let head = format!(
                "POST /anthropic/v1/messages HTTP/1.1\r\nHost: {host}\r\ncontent-length: 50000000\r\n\r\n{{\"model\":"
            );
            std::thread::spawn(move || raw(port, head.as_bytes()))
        })
        .collect();
    for client in clients {
        let answer = client.join().unwrap().expect("an answer");
        assert_eq!(status_of(&answer), 408, "{}", String::from_utf8_lossy(&answer));
        assert!(String::from_utf8_lossy(&answer).contains("stopped arriving"));
    }
    assert!(upstream.received.try_recv().is_err(), "nothing went upstream");
    // The gateway still serves.
    assert_eq!(gateway.send("GET", "/healthz", &[], b"").status, 200);
}

#[test]
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn the_gateway_runs_with_two_malloc_arenas_unless_told_otherwise() {
    let state = Scratch::new("rel-arenas");
    let arenas = |g: &Gateway| {
        let environ = std::fs::read(format!("/proc/{}/environ", g.child.id())).unwrap();
        String::from_utf8_lossy(&environ)
            .split('\0')
            .find_map(|v| v.strip_prefix("MALLOC_ARENA_MAX=").map(str::to_owned))
    };
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // Started again by itself with the variable: the same process, serving.
        let gateway = Gateway::start(&state, &[]);
        assert_eq!(gateway.send("GET", "/healthz", &[], b"").status, 200);
        assert_eq!(arenas(&gateway).as_deref(), Some("2"));
    }
    // The person's own value is kept.
    let gateway = Gateway::start_with(&state, &[], &[("MALLOC_ARENA_MAX", "4")]);
    assert_eq!(gateway.send("GET", "/healthz", &[], b"").status, 200);
    assert_eq!(arenas(&gateway).as_deref(), Some("4"));
}

#[test]
fn the_token_comes_from_a_file_or_the_environment_and_stays_off_the_command_line() {
    let state = Scratch::new("rel-token");
    let check = |gateway: &Gateway, token: &str| {
        assert_eq!(gateway.send("GET", "/healthz", &[], b"").status, 401);
        let header = format!("x-context-condenser-token: {token}");
        assert_eq!(gateway.send("GET", "/healthz", &[&header], b"").status, 200);
        #[cfg(target_os = "linux")]
        {
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", gateway.child.id())).unwrap();
            assert!(
                !String::from_utf8_lossy(&cmdline).contains(token),
                "the token is not in the process list"
            );
        }
    };
    let gateway = Gateway::start_with(&state, &[], &[("CONDENSE_GATEWAY_TOKEN", "env-t0ken")]);
    check(&gateway, "env-t0ken");
    drop(gateway);

    let file = state.0.join("token");
    std::fs::write(&file, "file-t0ken\n").unwrap();
    let file = file.to_string_lossy().into_owned();
    let gateway =
        Gateway::start_with(&state, &["--token-file", &file], &[("CONDENSE_GATEWAY_TOKEN", "other")]);
    check(&gateway, "file-t0ken");
    drop(gateway);

    std::fs::write(&file, "\n").unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_condense"))
        .args(["gateway", "--listen", "127.0.0.1:0", "--token-file", &file, "--state-dir"])
        .arg(&state.0)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("first line is empty"));
}

#[test]
fn a_state_file_of_a_newer_version_is_never_overwritten() {
    let state = Scratch::new("rel-newer");
    let newer = r#"{"version":99,"totals":{},"sessions":[],"what":"a newer gateway's"}"#;
    std::fs::write(state.0.join("state.json"), newer).unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_condense"))
        .args(["gateway", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(&state.0)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("version 99, written by a newer gateway") && message.contains("mv "),
        "{message}"
    );
    assert_eq!(std::fs::read_to_string(state.0.join("state.json")).unwrap(), newer, "untouched");
}

/// Waits until the gateway's state (its index and session files) holds every needle.
fn state_holding_all(state: &Scratch, needles: &[&str]) {
    let until = Instant::now() + HANG_GUARD;
    while !needles.iter().all(|n| state_text(&state.0).contains(n)) {
        assert!(Instant::now() < until, "the state never held {needles:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn one_bad_session_file_is_set_aside_and_kept_while_the_others_load() {
    let upstream = Upstream::json(json!({"id": "x"}));
    let state = Scratch::new("rel-set-aside");
    let chat = r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}"#;
    let gateway = Gateway::start(&state, &["--openai-upstream", &upstream.url()]);
    for session in ["first", "second"] {
        let header = format!("x-context-condenser-session: {session}");
        assert_eq!(gateway.post("/openai/v1/chat/completions", &[&header], chat).status, 200);
    }
    state_holding_all(&state, &[r#"{"header":"first"}"#, r#"{"header":"second"}"#]);
    drop(gateway);
    let files = session_files(&state.0);
    assert_eq!(files.len(), 2, "a file per session: {files:?}");
    let bad =
        files.iter().find(|f| std::fs::read_to_string(f).unwrap().contains(r#"{"header":"first"}"#)).unwrap();
    let mut saved: Value = serde_json::from_str(&std::fs::read_to_string(bad).unwrap()).unwrap();
    saved["session"]["kind"] = json!("a kind no gateway wrote");
    std::fs::write(bad, saved.to_string()).unwrap();

    let gateway = Gateway::start(&state, &["--openai-upstream", &upstream.url()]);
    let stats = gateway.stats();
    assert_eq!(stats["sessions"]["header:second"]["requests"], 1, "the good session loaded: {stats}");
    assert!(stats["sessions"].get("header:first").is_none(), "{stats}");
    let until = Instant::now() + HANG_GUARD;
    while !gateway.output().contains("set aside") {
        assert!(Instant::now() < until, "no note: {}", gateway.output());
        std::thread::sleep(Duration::from_millis(20));
    }
    let kept = std::fs::read_to_string(state.0.join("state.set-aside.1.json")).unwrap();
    assert!(kept.contains("a kind no gateway wrote") && kept.contains("first"), "{kept}");
    assert!(gateway.output().contains("state.set-aside.1.json"), "{}", gateway.output());
    assert!(!bad.exists(), "moved out of the sessions' folder, never read again");
}

#[test]
fn a_state_of_one_file_is_read_and_its_sessions_written_as_files() {
    let upstream = Upstream::json(json!({"id": "x"}));
    let state = Scratch::new("rel-one-file");
    // A version 2 state: every session inline in state.json.
    let v2 = json!({
        "version": 2,
        "totals": {},
        "sessions": [{
            "key": {"header": "old"}, "dialect": "chat_completions", "kind": "array",
            "originals": [[1234, 56]], "frozen": [], "stats": {}, "recall": []
        }]
    });
    std::fs::write(state.0.join("state.json"), v2.to_string()).unwrap();
    let gateway = Gateway::start(&state, &["--openai-upstream", &upstream.url()]);
    assert!(gateway.stats()["sessions"].get("header:old").is_some(), "{}", gateway.stats());
    let chat = r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}"#;
    let header = "x-context-condenser-session: new";
    assert_eq!(gateway.post("/openai/v1/chat/completions", &[header], chat).status, 200);
    // A save writes the sessions' files, then the index: waited for until the index is rewritten.
    let until = Instant::now() + HANG_GUARD;
    let index = loop {
        let index: Value =
            serde_json::from_str(&std::fs::read_to_string(state.0.join("state.json")).unwrap()).unwrap();
        if index["version"] != 2 {
            break index;
        }
        assert!(Instant::now() < until, "the index was never rewritten: {index}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(index["sessions"], json!([]), "the index holds no session: {index}");
    let text = state_text(&state.0);
    assert!(text.contains(r#"{"header":"old"}"#) && text.contains(r#"{"header":"new"}"#), "{text}");
    assert_eq!(session_files(&state.0).len(), 2, "each session in a file of its own");
}

/// Posts `body` for session `burst` and reads the answer; `false` when the gateway was gone.
fn post_burst(port: u16, body: &str) -> bool {
    let request = format!(
        "POST /anthropic/v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-api-key: k\r\n\
         x-context-condenser-session: burst\r\ncontent-length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    raw(port, request.as_bytes()).is_some_and(|a| status_of(&a) == 200)
}

/// The state directory of each run in turn: the same path every time, emptied, because the
/// condensations name recall files under it, and a path of another length counts other tokens.
fn fresh_state(base: &Scratch) -> Scratch {
    let dir = base.0.join("state");
    let _ = std::fs::remove_dir_all(&dir);
    Scratch(dir)
}

/// What a gateway on a fresh state directory forwards for each of `requests`, sent in turn.
fn forwarded_without_a_crash(
    base: &Scratch,
    requests: &[String],
    args: &[&str],
    upstream: &Upstream,
) -> Vec<Vec<u8>> {
    let state = fresh_state(base);
    let gateway = Gateway::start(&state, args);
    let forwarded = requests
        .iter()
        .map(|body| {
            assert!(post_burst(gateway.port, body));
            upstream.next().body
        })
        .collect();
    drop(gateway);
    std::mem::forget(state);
    forwarded
}

/// Which of the burst's requests a forwarded body is: the number of its last tool round
/// (`tool_session(FIRST + i)` ends with round `FIRST + i - 1`).
fn request_of(body: &[u8], first: usize) -> usize {
    let text = String::from_utf8_lossy(body);
    let at =
        text.rfind("\"tool_use_id\":\"toolu_").expect("a tool result") + "\"tool_use_id\":\"toolu_".len();
    text[at..at + 4].parse::<usize>().unwrap() + 1 - first
}

#[test]
fn killed_at_random_points_of_a_condensing_burst_the_restarted_gateway_replays_the_same_bytes() {
    const RUNS: usize = 20;
    const FIRST: usize = 8;
    let requests: Arc<Vec<String>> = Arc::new((FIRST..FIRST + 14).map(|k| tool_session(k, false)).collect());
    let upstream = Upstream::start(|_, stream| respond(stream, "200 OK", "", OK));
    let args = ["--anthropic-upstream", &upstream.url() as &str, "--window", SMALL_WINDOW];
    let base = Scratch::new("rel-kill");
    let reference = forwarded_without_a_crash(&base, &requests, &args, &upstream);
    let condensed: Vec<bool> =
        reference.iter().map(|b| String::from_utf8_lossy(b).contains("[Context Condenser:")).collect();
    assert!(condensed.iter().filter(|&&c| c).count() >= 3, "the burst condenses");
    // Each body the upstream receives, matched to its request by content (a forward the killed
    // gateway had written may reach the upstream after the restart), is the reference's.
    let check = |run: usize, body: Vec<u8>| -> usize {
        let i = request_of(&body, FIRST);
        assert!(
            body == reference[i],
            "run {run}: request {i} forwarded {} bytes, without the crash {}",
            body.len(),
            reference[i].len()
        );
        i
    };
    let mut after_a_condensation = 0;
    for run in 0..RUNS {
        let state = fresh_state(&base);
        let mut gateway = Gateway::start(&state, &args);
        let port = gateway.port;
        let answered = Arc::new(Mutex::new(0usize));
        let burst = {
            let (requests, answered) = (Arc::clone(&requests), Arc::clone(&answered));
            std::thread::spawn(move || {
                for body in requests.iter() {
                    if !post_burst(port, body) {
                        return;
                    }
                    *answered.lock().unwrap() += 1;
                }
            })
        };
        // A point of the burst: after the upstream saw 1 to 10 requests, then 0 to 45 ms more.
        let mut last = 0;
        for _ in 0..1 + run % 10 {
            last = check(run, upstream.next().body);
        }
        std::thread::sleep(Duration::from_millis((run as u64 * 17) % 46));
        gateway.child.kill().unwrap();
        gateway.child.wait().unwrap();
        burst.join().unwrap();
        while let Ok(more) = upstream.received.try_recv() {
            last = check(run, more.body);
        }
        after_a_condensation += usize::from(condensed[..=last].iter().any(|&c| c));

        // Restarted, the agent sends again the request it had no answer to, then goes on: each
        // forwarded as without the crash, byte for byte.
        let again = Gateway::start(&state, &args);
        let from = *answered.lock().unwrap();
        for i in from..requests.len().min(from + 3) {
            assert!(post_burst(again.port, &requests[i]), "run {run}: request {i}");
            while check(run, upstream.next().body) != i {}
        }
        drop(again);
        std::mem::forget(state);
    }
    assert!(after_a_condensation >= RUNS / 2, "only {after_a_condensation} kills came after a condensation");
}
