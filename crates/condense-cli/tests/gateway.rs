//! `condense gateway` as a process: started on a free port of 127.0.0.1, talked to over raw
//! TCP (so that Host, Origin and a connection closed mid-answer are the test's to choose),
//! against the fixture LLM server and against upstreams written here that record the exact
//! bytes they receive.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::gateway::{
    Gateway, OK, Received, SECRET, SMALL_MODEL, SMALL_WINDOW, TASK, Upstream, exchange, file, parse_reply,
    request_bytes, respond, session_files, tool_session,
};
use common::{HANG_GUARD, Scratch, Server, hang_guard, server_saw_it_closed};
use serde_json::{Value, json};

/// An Anthropic Messages body as Claude Code sends it, with spacing and escapes of its own.
const ANTHROPIC_BODY: &str = "{\"model\": \"claude-sonnet-4-5\",  \"max_tokens\":64,\n \"metadata\":{\"user_id\":\
    \"user_ab_account_cd_session_0199aaaa-bbbb\"},\"messages\":[{\"role\":\"user\",\"content\":\"caf\\u00e9?\"}],\
    \"unknown_key\":{\"kept\":true},\"stream\":false}";

#[test]
fn observe_mode_forwards_the_clients_body_byte_for_byte_and_strips_the_gateways_headers() {
    let upstream = Upstream::json(json!({"id": "msg_1", "usage": {"input_tokens": 5, "output_tokens": 2}}));
    let state = Scratch::new("gw-observe");
    let gateway = Gateway::start(&state, &["--observe", "--anthropic-upstream", &upstream.url()]);
    let key = format!("x-api-key: {SECRET}");
    let headers = [key.as_str(), "anthropic-version: 2023-06-01", "x-context-condenser-session: team-a"];
    for _ in 0..2 {
        let reply = gateway.post("/anthropic/v1/messages?beta=true", &headers, ANTHROPIC_BODY);
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.json()["id"], "msg_1");
        let seen = upstream.next();
        assert_eq!(seen.body, ANTHROPIC_BODY.as_bytes(), "byte for byte");
        assert!(seen.head.starts_with("POST /v1/messages?beta=true HTTP/1.1"), "{}", seen.head);
        assert_eq!(
            seen.header("x-api-key").as_deref(),
            Some(SECRET),
            "the client's key reaches the upstream"
        );
        assert_eq!(seen.header("anthropic-version").as_deref(), Some("2023-06-01"));
        assert_eq!(seen.header("x-context-condenser-session"), None);
        assert_eq!(seen.header("host").as_deref(), Some(upstream.url().trim_start_matches("http://")));
    }
    let stats = gateway.stats();
    let session = &stats["sessions"]["header:team-a"];
    assert_eq!(session["requests"], 2, "{stats}");
    assert_eq!(session["would_condense"], 0);
    assert_eq!(session["usage"]["input"], 10, "usage of whole JSON answers: {stats}");
    assert_eq!(stats["config"]["observe"], true);
}

#[test]
fn a_malformed_body_is_forwarded_untouched_and_recorded() {
    let upstream = Upstream::json(json!({"error": {"message": "bad json"}}));
    let state = Scratch::new("gw-malformed");
    let gateway = Gateway::start(&state, &["--openai-upstream", &upstream.url()]);
    let body = "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}";
    let reply = gateway.post("/openai/v1/chat/completions", &["Authorization: Bearer k"], body);
    assert_eq!(reply.status, 200);
    assert_eq!(upstream.next().body, body.as_bytes());
    let stats = gateway.stats();
    assert_eq!(stats["failed_open"], 1, "{stats}");
    assert!(stats["last_failed_open"].as_str().unwrap().contains("not JSON"));
}

#[test]
fn an_answer_streams_through_before_the_upstream_has_finished_it() {
    // The upstream sends its first event, then waits until the client has read it: a gateway
    // that buffered the answer would never show it, and the test would hang.
    let (client_saw_it, wait_for_client) = mpsc::channel::<()>();
    let wait_for_client = Mutex::new(wait_for_client);
    let upstream = Upstream::start(move |_, stream| {
        let first = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":\
                     {\"input_tokens\":11,\"cache_read_input_tokens\":900,\"output_tokens\":1}}}\n\n";
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(first.as_bytes()).unwrap();
        wait_for_client.lock().unwrap().recv_timeout(HANG_GUARD).expect("the client saw the first event");
        let rest = "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n\
                    event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        stream.write_all(rest.as_bytes()).unwrap();
    });
    let state = Scratch::new("gw-stream");
    let gateway = Gateway::start(&state, &["--anthropic-upstream", &upstream.url()]);
    let body = ANTHROPIC_BODY.replace("\"stream\":false", "\"stream\":true");
    let request = request_bytes(
        "POST",
        "/anthropic/v1/messages",
        &[&format!("Host: {}", gateway.host())],
        body.as_bytes(),
    );
    let port = gateway.port;
    let raw = hang_guard("the streamed answer", move || {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(&request).unwrap();
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&raw).contains("message_start") {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "the answer ended before its first event");
            raw.extend_from_slice(&buf[..n]);
        }
        client_saw_it.send(()).unwrap();
        stream.read_to_end(&mut raw).unwrap();
        raw
    });
    let reply = parse_reply(&raw);
    assert_eq!(reply.status, 200);
    assert!(reply.head.to_ascii_lowercase().contains("content-type: text/event-stream"), "{}", reply.head);
    assert!(reply.text().ends_with("data: {\"type\":\"message_stop\"}\n\n"), "{}", reply.text());
    let usage = &gateway.stats()["totals"]["usage"];
    assert_eq!(
        usage,
        &json!({"input": 11, "output": 9, "cache_read": 900, "cache_write": 0, "cache_write_1h": 0})
    );
}

#[test]
fn through_the_fixture_server_answers_usage_and_passthrough_and_no_key_is_kept() {
    let server = Server::fixture();
    let upstream = format!("http://127.0.0.1:{}", server.port);
    let state = Scratch::new("gw-fixture");
    let gateway = Gateway::start(
        &state,
        &["--anthropic-upstream", &upstream, "--openai-upstream", &format!("{upstream}/v1")],
    );
    let anthropic_key = format!("x-api-key: {SECRET}");
    let anthropic = [anthropic_key.as_str(), "anthropic-version: 2023-06-01"];
    let body = json!({"model": "fixture", "max_tokens": 32, "stream": true,
                      "messages": [{"role": "user", "content": "Say hello."}]});
    let reply = gateway.post("/anthropic/v1/messages", &anthropic, &body.to_string());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.text().contains("event: message_stop"), "{}", reply.text());

    let bearer = format!("Authorization: Bearer {SECRET}");
    let body = json!({"model": "fixture", "stream": true, "stream_options": {"include_usage": true},
                      "messages": [{"role": "user", "content": "Say hello."}]});
    let reply = gateway.post(
        "/openai/v1/chat/completions",
        &[&bearer, "x-context-condenser-session: s"],
        &body.to_string(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.text().contains("data: [DONE]"), "{}", reply.text());

    let models = gateway.send("GET", "/anthropic/v1/models", &anthropic, b"");
    assert_eq!(models.status, 200, "{}", models.text());
    assert_eq!(models.json()["data"][0]["id"], "fixture");

    let recorded = server.requests();
    assert_eq!(recorded.len(), 2, "the two conversations: {recorded:?}");
    assert_eq!(recorded[0]["headers"]["x-api-key"], SECRET);
    assert_eq!(recorded[1]["headers"]["authorization"], format!("Bearer {SECRET}"));
    assert!(recorded[1]["headers"].get("x-context-condenser-session").is_none());

    let stats = gateway.stats();
    assert_eq!(stats["totals"]["requests"], 2, "{stats}");
    assert_eq!(stats["passed_through"], 0, "a GET is never the core's");
    assert!(stats["totals"]["usage"]["output"].as_u64().unwrap() >= 2, "{stats}");
    assert!(stats["sessions"]["header:s"]["usage"]["input"].as_u64().unwrap() > 0, "{stats}");

    // The state is written a moment after the requests: 0600, and never a key.
    // The core's state names the session by its key: `{"header":"s"}`, in the session's file.
    let (file, _) = state_file_holding(&state, r#"{"header":"s"}"#);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    for file in files_under(&state.0) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(SECRET), "a key in {}", file.display());
    }
    let output = gateway.output();
    assert!(output.contains("gateway: POST /anthropic/v1/messages → 200"), "{output}");
    assert!(!output.contains(SECRET), "a key in the gateway's output: {output}");
}

#[test]
fn the_gateway_answers_health_and_refuses_other_hosts_origins_and_paths() {
    let state = Scratch::new("gw-refusals");
    let gateway = Gateway::start(&state, &[]);
    let health = gateway.send("GET", "/healthz", &[], b"");
    assert_eq!((health.status, health.json()), (200, json!({"status": "ok"})));
    assert_eq!(
        gateway.send("GET", "/healthz", &[&format!("Origin: http://{}", gateway.host())], b"").status,
        200
    );
    assert_eq!(
        exchange(gateway.port, "GET", "/healthz", &[&format!("Host: localhost:{}", gateway.port)], b"")
            .status,
        200
    );

    let rebound =
        exchange(gateway.port, "GET", "/stats", &[&format!("Host: attacker.example:{}", gateway.port)], b"");
    assert_eq!(rebound.status, 403, "DNS rebinding: {}", rebound.text());
    let page = gateway.post("/anthropic/v1/messages", &["Origin: https://attacker.example"], ANTHROPIC_BODY);
    assert_eq!(page.status, 403);
    assert_eq!(page.json()["error"]["type"], "permission_error", "Anthropic's error shape");
    let page = gateway.post("/openai/v1/chat/completions", &["Origin: null"], "{}");
    assert_eq!((page.status, page.json()["error"]["type"].clone()), (403, json!("invalid_request_error")));
    assert_eq!(gateway.send("GET", "/v1/messages", &[], b"").status, 404);
    assert_eq!(gateway.stats()["totals"]["requests"], 0, "nothing refused reached the core");
}

#[test]
fn a_body_above_the_cores_limit_is_refused_with_413() {
    let upstream = Upstream::json(json!({}));
    let state = Scratch::new("gw-413");
    let gateway = Gateway::start(&state, &["--anthropic-upstream", &upstream.url()]);
    let limit = condense_core::limits::MAX_CONVERSATION_BYTES;
    let declared = format!("Content-Length: {}", limit + 1);
    let reply = gateway.post("/anthropic/v1/messages", &[&declared], "");
    assert_eq!(reply.status, 413, "{}", reply.text());
    assert_eq!(reply.json()["error"]["type"], "request_too_large");
    assert!(upstream.received.try_recv().is_err(), "nothing was sent upstream");
}

#[test]
fn an_upstream_that_is_down_is_a_502_in_the_dialects_error_shape() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let down = format!("http://127.0.0.1:{closed}");
    let state = Scratch::new("gw-502");
    let gateway = Gateway::start(&state, &["--anthropic-upstream", &down, "--openai-upstream", &down]);
    let reply = gateway.post("/anthropic/v1/messages", &[&format!("x-api-key: {SECRET}")], ANTHROPIC_BODY);
    assert_eq!(reply.status, 502, "{}", reply.text());
    assert_eq!(reply.json()["type"], "error");
    assert_eq!(reply.json()["error"]["type"], "api_error");
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("cannot be reached"));
    let reply = gateway.post("/openai/v1/responses", &[], r#"{"model":"gpt-5","input":"hi"}"#);
    assert_eq!(reply.status, 502);
    assert_eq!(reply.json()["error"]["type"], "server_error");
    assert!(!gateway.output().contains(SECRET));
}

#[test]
fn a_client_closing_mid_stream_closes_the_upstream_request() {
    let server = Server::fixture();
    let state = Scratch::new("gw-abort");
    let gateway =
        Gateway::start(&state, &["--openai-upstream", &format!("http://127.0.0.1:{}", server.port)]);
    let body =
        json!({"model": "hostile-endless", "stream": true, "messages": [{"role": "user", "content": "go"}]});
    let request = request_bytes(
        "POST",
        "/openai/v1/chat/completions",
        &[&format!("Host: {}", gateway.host()), "Authorization: Bearer k"],
        body.to_string().as_bytes(),
    );
    let port = gateway.port;
    hang_guard("reading the endless answer", move || {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(&request).unwrap();
        let mut seen = 0;
        let mut buf = [0u8; 16 * 1024];
        while seen < 64 * 1024 {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "the endless answer ended");
            seen += n;
        }
        // Dropping the stream closes the client's connection mid-answer.
    });
    server_saw_it_closed(&server, "hostile-endless", "openai");
}

#[test]
fn listening_beyond_loopback_needs_a_token_and_then_every_request_carries_it() {
    let state = Scratch::new("gw-token");
    let refused = Command::new(env!("CARGO_BIN_EXE_condense"))
        .args(["gateway", "--listen", "0.0.0.0:0", "--state-dir"])
        .arg(&state.0)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("without --token"), "{message}");

    let upstream = Upstream::json(json!({"object": "list", "data": []}));
    let gateway = Gateway::start(&state, &["--token", "t0ken", "--openai-upstream", &upstream.url()]);
    assert_eq!(gateway.send("GET", "/healthz", &[], b"").status, 401);
    assert_eq!(gateway.send("GET", "/healthz", &["Authorization: Bearer t0ken"], b"").status, 401);
    assert_eq!(gateway.send("GET", "/healthz", &["x-context-condenser-token: t0ken"], b"").status, 200);
    let reply = gateway.send(
        "GET",
        "/openai/v1/models",
        &["x-context-condenser-token: t0ken", "Authorization: Bearer k"],
        b"",
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = upstream.next();
    assert_eq!(seen.header("x-context-condenser-token"), None, "the token stays with the gateway");
    assert_eq!(seen.header("authorization").as_deref(), Some("Bearer k"));
}

#[test]
fn the_state_survives_a_restart_and_an_unreadable_one_is_ignored() {
    let upstream = Upstream::json(json!({"id": "x"}));
    let state = Scratch::new("gw-restart");
    let chat = r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}"#;
    {
        let gateway = Gateway::start(&state, &["--openai-upstream", &upstream.url()]);
        assert_eq!(
            gateway.post("/openai/v1/chat/completions", &["x-context-condenser-session: kept"], chat).status,
            200
        );
        state_holding(&state, r#"{"header":"kept"}"#);
    }
    let gateway = Gateway::start(&state, &["--openai-upstream", &upstream.url()]);
    assert_eq!(gateway.stats()["sessions"]["header:kept"]["requests"], 1, "restored");
    drop(gateway);

    // An index that cannot be read: set aside (it held the totals), the sessions load.
    std::fs::write(state.0.join("state.json"), "{\"version\":1,\"stats\":{\"x\":").unwrap();
    std::fs::write(state.0.join(".state.json.4242.tmp"), "half written").unwrap();
    let gateway = Gateway::start(&state, &["--openai-upstream", &upstream.url()]);
    assert_eq!(gateway.stats()["totals"]["requests"], 0);
    assert_eq!(gateway.stats()["sessions"]["header:kept"]["requests"], 1, "the session's file is read");
    assert!(!state.0.join(".state.json.4242.tmp").exists(), "a temporary file is removed, never read");
    printed(&gateway, "set aside");
    drop(gateway);
    // Nothing of the state at all readable: starting afresh, said.
    std::fs::remove_dir_all(state.0.join("sessions")).unwrap();
    std::fs::write(state.0.join("state.json"), "{\"version\":1,\"stats\":{\"x\":").unwrap();
    let gateway = Gateway::start(&state, &["--openai-upstream", &upstream.url()]);
    assert_eq!(gateway.stats()["sessions"], json!({}));
    printed(&gateway, "starting afresh");
}

#[test]
fn a_client_closing_before_the_upstream_answered_closes_the_upstream_request() {
    let server = Server::fixture();
    let state = Scratch::new("gw-abort-early");
    let gateway =
        Gateway::start(&state, &["--openai-upstream", &format!("http://127.0.0.1:{}", server.port)]);
    let body = json!({"model": "hostile-stall-headers", "messages": [{"role": "user", "content": "go"}]});
    let request = request_bytes(
        "POST",
        "/openai/v1/chat/completions",
        &[&format!("Host: {}", gateway.host()), "Authorization: Bearer k"],
        body.to_string().as_bytes(),
    );
    let mut stream = TcpStream::connect(("127.0.0.1", gateway.port)).unwrap();
    stream.write_all(&request).unwrap();
    let started = Instant::now();
    while server.requests().is_empty() {
        assert!(started.elapsed() < HANG_GUARD, "the request never reached the upstream");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stream);
    server_saw_it_closed(&server, "hostile-stall-headers", "openai");
    // The gateway's idle timeout would close it too, later, and log a 504 for it: the request
    // was dropped with the client instead, so it has no line at all.
    let output = gateway.output();
    assert!(
        !output.contains("POST /openai/v1/chat/completions"),
        "closed by a timeout, not the client: {output}"
    );
}

/// An HTTP answer an in-test upstream writes whole. It says it closes the connection, as it
/// does: the gateway's retry must not be sent on it.
/// The marker every message of load session `s` carries, and no other session's does.
fn load_marker(s: usize) -> String {
    format!("marker-s{s:02}-")
}

/// Load session `s`'s request after `turns` answers: the task, then per turn an answer and the
/// user's next message, each with the session's marker and enough text that the session
/// crosses its window's threshold midway. Sessions are told apart three ways: the session
/// header, Claude Code's session id in `metadata.user_id`, and (neither) the hash of the
/// system prompt and the first user message.
fn load_request(s: usize, turns: usize) -> (String, Option<String>) {
    let marker = load_marker(s);
    let filler = "the parser reads each line, splits it on commas and checks every field; ".repeat(6);
    let mut messages =
        vec![json!({"role": "user", "content": format!("{marker} task: fix the parser. {filler}")})];
    for t in 0..turns {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("{marker} answer {t}: I changed parse_{t}.")}]}));
        let next = format!("{marker} turn {t}: now look at file_{t}.rs. {filler}");
        messages.push(json!({"role": "user", "content": next}));
    }
    let mut body = json!({
        "model": "load-test-model", "max_tokens": 64, "stream": turns.is_multiple_of(2),
        "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
    });
    let header = match s % 3 {
        0 => Some(format!("x-context-condenser-session: load-{s:02}")),
        1 => {
            let id = format!("user_ab_account_cd_session_{s:08x}-aaaa-4bbb-8ccc-{s:012x}");
            body["metadata"] = json!({"user_id": id});
            None
        }
        _ => None,
    };
    (body.to_string(), header)
}

/// An Anthropic answer: a short SSE stream when the request asked for one, else JSON.
fn answer_load(request: &Received, stream: &mut TcpStream) {
    let streamed = serde_json::from_slice::<Value>(&request.body).is_ok_and(|b| b["stream"] == true);
    let (kind, body) = if streamed {
        let events = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":\
                      {\"input_tokens\":7,\"output_tokens\":1}}}\n\n\
                      event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":3}}\n\n\
                      event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        ("text/event-stream", events.to_owned())
    } else {
        let answer = json!({"id": "msg", "type": "message", "role": "assistant",
                            "content": [{"type": "text", "text": "ok"}],
                            "usage": {"input_tokens": 7, "output_tokens": 3}});
        ("application/json", answer.to_string())
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
}

/// Anthropic's answer when the prompt does not fit the model's window.
const TOO_LONG: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;

#[test]
fn a_5xx_from_the_upstream_reaches_the_client_unchanged_and_is_counted() {
    let body = r#"{"type":"error","error":{"type":"api_error","message":"Internal server error (req_5xx)"}}"#;
    let upstream = Upstream::start(move |_, stream| {
        respond(stream, "503 Service Unavailable", "retry-after: 7\r\nx-request-id: req_5xx\r\n", body)
    });
    let state = Scratch::new("gw-5xx");
    let gateway = Gateway::start(&state, &["--anthropic-upstream", &upstream.url()]);
    let reply = gateway.post(
        "/anthropic/v1/messages",
        &[&format!("x-api-key: {SECRET}"), "x-context-condenser-session: five"],
        ANTHROPIC_BODY,
    );
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.body, body.as_bytes(), "the upstream's body, byte for byte");
    let head = reply.head.to_ascii_lowercase();
    assert!(head.contains("retry-after: 7") && head.contains("x-request-id: req_5xx"), "{}", reply.head);
    assert_eq!(upstream.next().body, ANTHROPIC_BODY.as_bytes());
    assert!(upstream.received.try_recv().is_err(), "a 5xx is the client's to retry, not the gateway's");
    let stats = gateway.stats();
    assert_eq!(stats["sessions"]["header:five"]["requests"], 1, "{stats}");
    assert_eq!(stats["totals"]["requests"], 1, "{stats}");
    assert_eq!(stats["failed_open"], 0, "{stats}");
}

/// The tokens a session's requests came to, as the client sent them and as forwarded.
fn tokens(stats: &Value, session: &str) -> (u64, u64) {
    let s = &stats["sessions"][session];
    (s["tokens_client"].as_u64().unwrap(), s["tokens_forwarded"].as_u64().unwrap())
}

#[test]
fn prompt_too_long_is_condensed_further_and_retried_once() {
    let calls = Arc::new(Mutex::new(0usize));
    let counted = Arc::clone(&calls);
    // "Too long" for the first request only.
    let upstream = Upstream::start(move |_, stream| {
        let n = {
            let mut c = counted.lock().unwrap();
            *c += 1;
            *c
        };
        match n {
            1 => respond(stream, "400 Bad Request", "", TOO_LONG),
            _ => respond(stream, "200 OK", "", OK),
        }
    });
    let state = Scratch::new("gw-too-long");
    let gateway =
        Gateway::start(&state, &["--anthropic-upstream", &upstream.url(), "--window", SMALL_WINDOW]);
    let client = tool_session(12, false);
    let headers = [&format!("x-api-key: {SECRET}") as &str, "x-context-condenser-session: long"];
    let reply = gateway.post("/anthropic/v1/messages", &headers, &client);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.body, OK.as_bytes());
    let (first, second) = (upstream.next(), upstream.next());
    assert!(upstream.received.try_recv().is_err(), "one retry");
    assert!(first.body.len() < client.len(), "the request crossed the threshold and was condensed");
    assert!(second.body.len() < first.body.len(), "the retry is condensed further");
    let retried: Value = serde_json::from_slice(&second.body).unwrap();
    assert!(String::from_utf8_lossy(&second.body).contains(TASK), "the task is kept");
    let sent: Value = serde_json::from_str(&client).unwrap();
    let (retried, sent) = (retried["messages"].as_array().unwrap(), sent["messages"].as_array().unwrap());
    assert_eq!(retried.last(), sent.last(), "the current turn is kept");
    assert_eq!(second.header("x-api-key").as_deref(), Some(SECRET), "the retry carries the key");
    let stats = gateway.stats();
    assert_eq!(stats["sessions"]["header:long"]["too_long_retries"], 1, "{stats}");
    assert_eq!(stats["sessions"]["header:long"]["condensations"], 2, "{stats}");
    let output = gateway.output();
    assert!(output.contains("prompt too long: condensed further, retrying once"), "{output}");
}

#[test]
fn an_upstream_that_keeps_saying_too_long_is_retried_once_then_answered() {
    let upstream = Upstream::start(|_, stream| respond(stream, "400 Bad Request", "", TOO_LONG));
    let state = Scratch::new("gw-too-long-again");
    let gateway =
        Gateway::start(&state, &["--anthropic-upstream", &upstream.url(), "--window", SMALL_WINDOW]);
    let client = tool_session(12, false);
    let reply = gateway.post("/anthropic/v1/messages", &["x-context-condenser-session: long"], &client);
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(reply.body, TOO_LONG.as_bytes(), "the upstream's answer to the retry, unchanged");
    let (first, second) = (upstream.next(), upstream.next());
    assert!(second.body.len() < first.body.len());
    // Nothing more is sent once the client has its answer.
    assert!(upstream.received.recv_timeout(Duration::from_millis(300)).is_err(), "exactly one retry");
    assert_eq!(gateway.stats()["sessions"]["header:long"]["too_long_retries"], 1);

    // A 400 that is not "too long" is passed through at once, without a retry.
    let other =
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}}"#;
    let upstream = Upstream::start(move |_, stream| respond(stream, "400 Bad Request", "", other));
    let state = Scratch::new("gw-400");
    let gateway =
        Gateway::start(&state, &["--anthropic-upstream", &upstream.url(), "--window", SMALL_WINDOW]);
    let reply = gateway.post("/anthropic/v1/messages", &["x-context-condenser-session: l"], &client);
    assert_eq!((reply.status, reply.text()), (400, other.to_owned()));
    upstream.next();
    assert!(upstream.received.recv_timeout(Duration::from_millis(300)).is_err(), "no retry");
}

#[test]
fn count_tokens_is_answered_for_a_condensed_session_and_passed_through_otherwise() {
    let upstream = Upstream::start(|seen, stream| {
        if seen.head.starts_with("POST /v1/messages/count_tokens") {
            respond(stream, "200 OK", "", r#"{"input_tokens":12345}"#);
        } else {
            respond(stream, "200 OK", "", OK);
        }
    });
    let state = Scratch::new("gw-count");
    let gateway =
        Gateway::start(&state, &["--anthropic-upstream", &upstream.url(), "--window", SMALL_WINDOW]);
    let headers = ["x-api-key: k", "x-context-condenser-session: counted"];
    let client = tool_session(12, true);
    assert_eq!(gateway.post("/anthropic/v1/messages", &headers, &client).status, 200);
    upstream.next();
    let stats = gateway.stats();
    assert_eq!(stats["sessions"]["header:counted"]["condensations"], 1, "{stats}");
    let (client_tokens, forwarded) = tokens(&stats, "header:counted");
    assert!(forwarded < client_tokens, "{stats}");

    // Claude Code's count request: the conversation without `stream`.
    let count = tool_session(12, false);
    let reply = gateway.post("/anthropic/v1/messages/count_tokens", &headers, &count);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let n = reply.json()["input_tokens"].as_u64().expect("the gateway counted");
    assert_eq!(n, forwarded, "the tokens of the request as it is forwarded");
    assert!(n < client_tokens, "below the client's own size");
    assert!(upstream.received.try_recv().is_err(), "the upstream was not asked");

    // A conversation the gateway has not changed: the upstream counts it.
    let fresh = json!({"model": SMALL_MODEL, "messages": [{"role": "user", "content": "Another task."}]});
    let reply = gateway.post(
        "/anthropic/v1/messages/count_tokens",
        &["x-api-key: k", "x-context-condenser-session: other"],
        &fresh.to_string(),
    );
    assert_eq!((reply.status, reply.text()), (200, r#"{"input_tokens":12345}"#.to_owned()));
    let seen = upstream.next();
    assert_eq!(seen.body, fresh.to_string().as_bytes());
    assert_eq!(seen.header("x-api-key").as_deref(), Some("k"));
    assert_eq!(gateway.stats()["sessions"].get("header:other"), None, "a count request is no session");
}

/// Waits until a file of the gateway's state (the index or a session's) holds `needle`; its
/// bytes.
fn state_holding(state: &Scratch, needle: &str) -> Vec<u8> {
    state_file_holding(state, needle).1
}

/// Waits until a file of the gateway's state holds `needle`: its path and bytes.
fn state_file_holding(state: &Scratch, needle: &str) -> (std::path::PathBuf, Vec<u8>) {
    let until = Instant::now() + HANG_GUARD;
    loop {
        let files = std::iter::once(state.0.join("state.json")).chain(session_files(&state.0));
        for path in files {
            if let Ok(bytes) = std::fs::read(&path)
                && String::from_utf8_lossy(&bytes).contains(needle)
            {
                return (path, bytes);
            }
        }
        assert!(Instant::now() < until, "the state never held {needle:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the gateway has printed `needle`.
fn printed(gateway: &Gateway, needle: &str) {
    let until = Instant::now() + HANG_GUARD;
    while !gateway.output().contains(needle) {
        assert!(Instant::now() < until, "never printed {needle:?}: {}", gateway.output());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_gateway_killed_mid_write_restarts_reads_nothing_half_written_and_replays_its_condensation() {
    let upstream = Upstream::json(serde_json::from_str(OK).unwrap());
    let state = Scratch::new("gw-killed");
    let args = ["--anthropic-upstream", &upstream.url() as &str, "--window", SMALL_WINDOW];
    let headers = ["x-api-key: k", "x-context-condenser-session: kept"];
    let condensed = tool_session(12, true);
    let next = tool_session(13, true);

    // A session that condensed, its state written; then the gateway is killed (SIGKILL: no
    // saving on the way out) right after each of a few more requests, while it may be writing.
    let mut gateway = Gateway::start(&state, &args);
    assert_eq!(gateway.post("/anthropic/v1/messages", &headers, &condensed).status, 200);
    let before = upstream.next().body;
    assert!(before.len() < condensed.len(), "condensed");
    let (session_file, saved) = state_file_holding(&state, r#""frozen":[{"#);
    assert!(session_file.starts_with(state.0.join("sessions")), "a session has a file of its own");
    for round in 0..4 {
        gateway.child.kill().unwrap();
        gateway.child.wait().unwrap();
        gateway = Gateway::start(&state, &args);
        let stats = gateway.stats();
        assert_eq!(stats["sessions"]["header:kept"]["condensations"], 1, "round {round}: restored: {stats}");
        std::thread::sleep(Duration::from_millis(100 * round));
        assert_eq!(gateway.post("/anthropic/v1/messages", &headers, &condensed).status, 200);
        assert_eq!(upstream.next().body, before, "round {round}: the same condensation, byte for byte");
    }
    gateway.child.kill().unwrap();
    gateway.child.wait().unwrap();
    drop(gateway);
    for entry in std::fs::read_dir(&state.0).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let allowed = ["state.json", "sessions", "recall"];
        assert!(allowed.contains(&name.as_str()) || name.starts_with(".state.json."), "{name}");
    }

    // What a kill in the middle of writing the session's file in place would leave: half of it,
    // and a temporary file. Set aside with a note, the temporary file removed, never read.
    std::fs::write(&session_file, &saved[..saved.len() / 2]).unwrap();
    let temp = state.0.join("sessions").join(".half.json.999.tmp");
    std::fs::write(&temp, &saved).unwrap();
    let gateway = Gateway::start(&state, &args);
    printed(&gateway, "set aside");
    assert!(!temp.exists(), "a temporary file is removed, never read");
    let stats = gateway.stats();
    assert_eq!(stats["sessions"], json!({}), "nothing half-written was read back: {stats}");
    drop(gateway);

    // The whole file again: restored, and the session's next requests replay the frozen
    // condensation byte for byte.
    std::fs::write(&session_file, &saved).unwrap();
    let gateway = Gateway::start(&state, &args);
    assert_eq!(gateway.post("/anthropic/v1/messages", &headers, &condensed).status, 200);
    assert_eq!(upstream.next().body, before, "the same bytes as before the restart");
    assert_eq!(gateway.post("/anthropic/v1/messages", &headers, &next).status, 200);
    let after = upstream.next().body;
    // Everything before the request's current turn (the last round) is the same bytes.
    let cut = String::from_utf8_lossy(&before).rfind(r#"{"role":"assistant""#).unwrap();
    assert_eq!(after[..cut], before[..cut], "the next request extends the replayed condensation");
    assert!(!gateway.output().contains("starting afresh"), "{}", gateway.output());
    let stats = gateway.stats();
    assert_eq!(stats["sessions"]["header:kept"]["condensations"], 1, "no new condensation: {stats}");
}

#[test]
fn thirty_two_sessions_at_once_each_forwarded_with_its_own_history_only() {
    const SESSIONS: usize = 32;
    const REQUESTS: usize = 20;
    let upstream = Upstream::start(answer_load);
    let state = Scratch::new("gw-load");
    let gateway = Arc::new(Gateway::start(
        &state,
        &["--anthropic-upstream", &upstream.url(), "--window", "load-test-model=2000"],
    ));
    let started = Instant::now();
    let clients: Vec<_> = (0..SESSIONS)
        .map(|s| {
            let gateway = Arc::clone(&gateway);
            std::thread::spawn(move || {
                let own = format!("x-load-session: {s}");
                (0..REQUESTS)
                    .map(|turns| {
                        let (body, header) = load_request(s, turns);
                        let mut headers = vec![own.as_str(), "x-api-key: k", "anthropic-version: 2023-06-01"];
                        headers.extend(header.as_deref());
                        let reply = gateway.post("/anthropic/v1/messages", &headers, &body);
                        (reply.status, reply.text())
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let replies: Vec<(u16, String)> = clients.into_iter().flat_map(|c| c.join().unwrap()).collect();
    let elapsed = started.elapsed();
    let failed: Vec<_> = replies.iter().filter(|(status, _)| *status != 200).collect();
    assert!(failed.is_empty(), "{} of {} failed: {:?}", failed.len(), replies.len(), failed.first());

    let mut seen = [0usize; SESSIONS];
    while let Ok(received) = upstream.received.try_recv() {
        let s: usize = received.header("x-load-session").and_then(|s| s.parse().ok()).expect("attributed");
        seen[s] += 1;
        let body = String::from_utf8(received.body).unwrap();
        assert!(body.contains(&load_marker(s)), "session {s}'s request without its own messages");
        for other in (0..SESSIONS).filter(|&o| o != s) {
            assert!(
                !body.contains(&load_marker(other)),
                "session {s} forwarded with session {other}'s history"
            );
        }
    }
    assert_eq!(seen, [REQUESTS; SESSIONS], "every request reached the upstream once");

    let stats = gateway.stats();
    let sessions = stats["sessions"].as_object().unwrap();
    assert_eq!(sessions.len(), SESSIONS, "{stats}");
    for (name, session) in sessions {
        assert_eq!(session["requests"], REQUESTS, "{name}: {session}");
        assert!(session["condensations"].as_u64().unwrap() >= 1, "{name} never condensed: {session}");
    }
    assert_eq!(stats["totals"]["requests"], SESSIONS * REQUESTS);
    assert_eq!(stats["failed_open"], 0, "{stats}");
    let totals = &stats["totals"];
    // Reported, not timed: BENCHMARKS.md ("The gateway (issue 27)") has the figures.
    let memory = std::fs::read_to_string(format!("/proc/{}/status", gateway.child.id())).unwrap_or_default();
    let kb = |field: &str| -> Option<u64> {
        memory.lines().find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok())
    };
    let report = format!(
        "load: {} requests, {} failed, {:.1} s wall, condensations {}, tokens client {} → forwarded {}, \
         gateway VmRSS {} kB, VmHWM {} kB, load average {}",
        replies.len(),
        failed.len(),
        elapsed.as_secs_f64(),
        totals["condensations"],
        totals["tokens_client"],
        totals["tokens_forwarded"],
        kb("VmRSS:").unwrap_or(0),
        kb("VmHWM:").unwrap_or(0),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    );
    std::io::Write::write_all(&mut std::io::stderr(), format!("{report}\n").as_bytes()).unwrap();
    if let Some(rss) = kb("VmRSS:") {
        assert!(rss < 1 << 20, "the gateway holds {rss} kB after the load: a runaway? {report}");
    }
}

#[test]
fn native_summaries_are_written_in_the_background_with_the_requests_own_model_and_key() {
    let server = Server::fixture();
    let upstream = format!("http://127.0.0.1:{}", server.port);
    let state = Scratch::new("gw-native");
    // At the threshold: the summary goes in at the next request (under `cache-aware` it waits
    // for a moment when that costs nothing: `gateway::tests::money`).
    let args = [
        "--anthropic-upstream",
        &upstream,
        "--window",
        "tiny-model=6000",
        "--provider",
        "native",
        "--policy",
        "threshold",
    ];
    let refused = Command::new(env!("CARGO_BIN_EXE_condense")).args(["gateway"]).args(args).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "native without a writer is refused");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--summarize-with-upstream"));
    let gateway = Gateway::start(&state, &[&args[..], &["--summarize-with-upstream"]].concat());
    printed(&gateway, "summaries: written in the background by each request's own model");
    let headers = [
        &format!("x-api-key: {SECRET}") as &str,
        "anthropic-version: 2023-06-01",
        "x-context-condenser-session: n",
    ];
    // The request that crosses the threshold goes out at once, condensed by the ledger.
    let reply = gateway.post("/anthropic/v1/messages", &headers, &tool_session(16, false));
    assert_eq!(reply.status, 200, "{}", reply.text());
    printed(&gateway, "[header:n] summary written");
    let recorded = server.requests();
    let body = |r: &Value| r["body"].to_string();
    // The summary is asked for while the request goes out: the two reach the upstream in either
    // order.
    let (summary_calls, sent): (Vec<&Value>, Vec<&Value>) =
        recorded.iter().partition(|r| body(r).contains("Write a detailed summary"));
    assert_eq!(sent.len(), 1, "{recorded:?}");
    assert!(body(sent[0]).contains("[Context Condenser: the earlier conversation, condensed]"));
    assert!(!body(sent[0]).contains("Summary of the earlier conversation"), "the first waits for nothing");
    assert!(!summary_calls.is_empty(), "the summary was asked of the upstream: {recorded:?}");
    for call in &summary_calls {
        assert_eq!(call["headers"]["x-api-key"], SECRET, "with the request's own key");
        assert_eq!(call["body"]["model"], "tiny-model", "and its own model");
    }
    // The next request carries the summary above the ledger; the one after replays it.
    let next = gateway.post("/anthropic/v1/messages", &headers, &tool_session(17, false));
    assert_eq!(next.status, 200, "{}", next.text());
    let after = gateway.post("/anthropic/v1/messages", &headers, &tool_session(18, false));
    assert_eq!(after.status, 200, "{}", after.text());
    let recorded = server.requests();
    let forwarded: Vec<String> =
        recorded.iter().map(body).filter(|b| !b.contains("Write a detailed summary")).collect();
    assert_eq!(forwarded.len(), 3, "{forwarded:?}");
    assert!(forwarded[1].contains("Summary of the earlier conversation (written by tiny-model)"));
    assert!(forwarded[1].contains("nested parentheses"), "the fixture's summary text");
    assert!(forwarded[1].contains(TASK), "the task stays");
    let messages = |b: &str| serde_json::from_str::<Value>(b).unwrap()["messages"].to_string();
    let (prev, now) = (messages(&forwarded[1]), messages(&forwarded[2]));
    assert!(now.starts_with(&prev[..prev.len() - 1]), "the summary is replayed byte for byte");
    let stats = gateway.stats();
    let session = &stats["sessions"]["header:n"];
    assert_eq!(session["summaries"], 1, "{stats}");
    assert!(session["summary_tokens"].as_u64().unwrap() > 0, "{stats}");
    assert_eq!(stats["summaries_pending"], 0, "{stats}");
    state_holding(&state, "Summary of the earlier conversation");
    let files = files_under(&state.0);
    assert!(files.iter().any(|f| f.extension().is_some_and(|e| e == "md")), "a recall file: {files:?}");
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(SECRET), "a key in {}", file.display());
    }
    assert!(!gateway.output().contains(SECRET), "a key in the gateway's output");
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The path a forwarded body's recall line names, if it has one.
fn recall_path(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let at = text.find("The hidden messages are in ")? + "The hidden messages are in ".len();
    Some(text[at..].split("; read that file").next()?.to_owned())
}

/// A recall file as the upstream found it when the request naming it arrived.
#[derive(Debug, Clone)]
struct Named {
    path: String,
    /// Its text, if it was there.
    text: Option<String>,
    /// Its permission bits (unix).
    mode: Option<u32>,
}

#[cfg(unix)]
fn mode_of(path: &str) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o777)
}

#[cfg(not(unix))]
fn mode_of(_: &str) -> Option<u32> {
    Some(0o600)
}

#[test]
fn a_condensation_names_a_recall_file_written_0600_before_the_request_leaves() {
    // The upstream reads the named file the moment the request arrives: it is there already.
    let seen: Arc<Mutex<Vec<Named>>> = Arc::default();
    let record = Arc::clone(&seen);
    let upstream = Upstream::start(move |request, stream| {
        if let Some(path) = recall_path(&request.body) {
            let text = std::fs::read_to_string(&path).ok();
            record.lock().unwrap().push(Named { mode: mode_of(&path), path, text });
        }
        respond(stream, "200 OK", "", OK)
    });
    let state = Scratch::new("gw-recall");
    let args = ["--anthropic-upstream", &upstream.url() as &str, "--window", SMALL_WINDOW];
    let gateway = Gateway::start(&state, &args);
    let headers = [&format!("x-api-key: {SECRET}") as &str, "x-context-condenser-session: recall"];
    for rounds in 1..=10 {
        let reply = gateway.post("/anthropic/v1/messages", &headers, &tool_session(rounds, false));
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let bodies: Vec<Received> = (0..10).map(|_| upstream.next()).collect();
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "a forwarded request names a recall file");
    let Named { path, text, mode } = &seen[0];
    let text = text.as_deref().expect("the file was on disk when the request carrying its name arrived");
    assert_eq!(*mode, Some(0o600), "readable by the user alone");
    let recall_dir = std::path::absolute(&state.0).unwrap().join("recall");
    assert!(path.starts_with(recall_dir.to_str().unwrap()), "{path} is under the state directory");
    // It holds what the request no longer does.
    let first = bodies.iter().find(|b| recall_path(&b.body).is_some()).unwrap();
    let forwarded = String::from_utf8_lossy(&first.body);
    assert!(!forwarded.contains("let value_0_5 ") && text.contains("let value_0_5 = compute(&input, 5);"));
    assert!(text.contains("Tool call Read (toolu_0000):") && !text.contains(SECRET));
    let stats = gateway.stats();
    let session = &stats["sessions"]["header:recall"];
    assert!(session["recall_files"].as_u64().unwrap() >= 1, "{stats}");
    assert!(session["recall_bytes"].as_u64().unwrap() >= text.len() as u64, "{stats}");
    assert!(gateway.output().contains(&format!("recall files: {}", recall_dir.display())));
    assert!(gateway.output().contains("--allowedTools \"Read(/"), "Claude Code's setup lets it read them");

    // After a restart the condensations replayed name the same files, byte for byte.
    let last = recall_path(&bodies[9].body).expect("the last request replays a condensation");
    // The state saved after the tenth request (it keeps the messages' hashes, not their texts).
    state_holding(&state, r#""requests":10,"#);
    drop(gateway);
    let gateway = Gateway::start(&state, &args);
    gateway.post("/anthropic/v1/messages", &headers, &tool_session(11, false));
    let after = upstream.next();
    assert!(String::from_utf8_lossy(&after.body).contains(&format!("The hidden messages are in {last};")));
    assert!(std::path::Path::new(&last).is_file());

    // With --recall-max-mb 0, no file and no line.
    let state = Scratch::new("gw-recall-off");
    let gateway = Gateway::start(&state, &[&args[..], &["--recall-max-mb", "0"]].concat());
    for rounds in 1..=10 {
        gateway.post("/anthropic/v1/messages", &headers, &tool_session(rounds, false));
        assert!(recall_path(&upstream.next().body).is_none());
    }
    assert!(!state.0.join("recall").exists());
}

/// Claude Sonnet 4.5's published prices, US dollars per million tokens: input, 5-minute cache
/// writes, 1-hour writes, cache reads, output (typed here, apart from the core's table).
const SONNET_PRICES: (f64, f64, f64, f64, f64) = (3.0, 3.75, 6.0, 0.3, 15.0);

/// What an answer's usage cost at [`SONNET_PRICES`].
fn sonnet_cost(usage: &Value) -> f64 {
    let n = |v: &Value| v.as_f64().unwrap_or(0.0);
    let (input, w5, w1, read, output) = SONNET_PRICES;
    let one_hour = n(&usage["cache_creation"]["ephemeral_1h_input_tokens"]);
    let written = n(&usage["cache_creation_input_tokens"]);
    (n(&usage["input_tokens"]) * input
        + (written - one_hour) * w5
        + one_hour * w1
        + n(&usage["cache_read_input_tokens"]) * read
        + n(&usage["output_tokens"]) * output)
        / 1e6
}

/// A Claude Code–shaped request after `rounds` tool rounds: a system prompt of some thousands of
/// tokens and tools, each round the model's note and a `Read`, and the file's text; breakpoints
/// where Claude Code puts them (the system prompt, the last message).
fn claude_code_request(rounds: usize) -> String {
    let rules: String = (0..60)
        .map(|i| format!("Rule {i}: read a file before editing it, keep each change small, and run the tests after it. "))
        .collect();
    let mut messages = vec![json!({"role": "user", "content": [{"type": "text", "text": TASK}]})];
    for k in 0..rounds {
        let id = format!("toolu_{k:04}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Reading module {k} to see how it parses its input.")},
            {"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": format!("/repo/src/module_{k}.rs")}}]}));
        let text: String = (0..3).map(|_| file(k)).collect();
        messages.push(
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": text}]}),
        );
    }
    let last = messages.last_mut().unwrap()["content"].as_array_mut().unwrap().last_mut().unwrap();
    last["cache_control"] = json!({"type": "ephemeral"});
    json!({
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 256,
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
            {"type": "text", "text": rules, "cache_control": {"type": "ephemeral"}}],
        "tools": [
            {"name": "Read", "description": "Reads a file from the local filesystem.",
             "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}},
            {"name": "Bash", "description": "Runs a shell command.",
             "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}],
        "messages": messages,
    })
    .to_string()
}

/// Sends one request to an upstream (the fixture server, `path` under it) and gives back the
/// usage the answer reported.
fn usage_of(port: u16, path: &str, extra: &[&str], body: &str) -> Value {
    let host = format!("Host: 127.0.0.1:{port}");
    let mut headers = vec![host.as_str(), "x-api-key: fixture-key", "anthropic-version: 2023-06-01"];
    headers.extend_from_slice(extra);
    let reply = exchange(port, "POST", path, &headers, body.as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()["usage"].clone()
}

/// One Claude Code session sent to one fixture server directly and to another through the
/// gateway (threshold policy, Sonnet's window set to `window`), until the gateway has condensed
/// once and `after` requests more: what it cost each way (priced here from the upstreams' own
/// usage), and what the gateway says it saved.
fn direct_and_through(window: usize, after: usize) -> (f64, f64, Value) {
    let (direct, upstream) = (Server::fixture(), Server::fixture());
    let state = Scratch::new("gw-money");
    let origin = format!("http://127.0.0.1:{}", upstream.port);
    let window = format!("claude-sonnet-4-5={window}");
    let gateway = Gateway::start(
        &state,
        &["--anthropic-upstream", &origin, "--window", &window, "--policy", "threshold"],
    );
    let (mut paid_direct, mut paid_through) = (0.0, 0.0);
    let (mut rounds, mut left) = (1, None);
    while left != Some(0) {
        let body = claude_code_request(rounds);
        paid_direct += sonnet_cost(&usage_of(direct.port, "/v1/messages", &[], &body));
        let session = "x-context-condenser-session: money";
        let gateway_host = gateway.host();
        let host = format!("Host: {gateway_host}");
        let reply = exchange(
            gateway.port,
            "POST",
            "/anthropic/v1/messages",
            &[host.as_str(), "x-api-key: fixture-key", "anthropic-version: 2023-06-01", session],
            body.as_bytes(),
        );
        assert_eq!(reply.status, 200, "{}", reply.text());
        paid_through += sonnet_cost(&reply.json()["usage"]);
        let st = gateway.stats();
        let condensed = st["totals"]["condensations"].as_u64().unwrap();
        left = match left {
            None if condensed > 0 => Some(after),
            None => None,
            Some(n) => Some(n - 1),
        };
        rounds += 1;
        assert!(rounds < 400, "the session never condensed");
    }
    (paid_direct, paid_through, gateway.stats()["sessions"]["header:money"].clone())
}

#[test]
fn against_anthropics_cache_rules_a_condensation_the_session_ends_soon_after_is_a_loss_and_said_so() {
    let (direct, through, session) = direct_and_through(60_000, 3);
    let real = direct - through;
    let shown = session["cost_saved_usd"].as_f64().unwrap();
    assert!(real < 0.0, "it cost more through the gateway: {direct} direct, {through} through");
    assert!(shown < 0.0, "and the gateway says so: {session}");
    assert!((shown - real).abs() <= 0.01 * real.abs(), "shown {shown}, really {real}");
    assert!(session["payback_requests"].as_u64().is_some_and(|n| n > 0), "{session}");
    assert_eq!(session["condensation_notes"][0]["reason"], "threshold", "{session}");
    let line = format!(
        "money: ends 3 requests after its condensation: {direct:.6} direct, {through:.6} through; shown {shown:.6}, really {real:.6}\n"
    );
    std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes()).unwrap();
}

#[test]
fn against_anthropics_cache_rules_a_long_session_after_its_condensation_saves_and_says_how_much() {
    let (direct, through, session) = direct_and_through(60_000, 40);
    let real = direct - through;
    let shown = session["cost_saved_usd"].as_f64().unwrap();
    assert!(real > 0.0, "it cost less through the gateway: {direct} direct, {through} through");
    assert!((shown - real).abs() <= 0.01 * real, "shown {shown}, really {real}");
    assert!(session["payback_requests"].is_null(), "{session}");
    let line = format!(
        "money: ends 40 requests after its condensation: {direct:.6} direct, {through:.6} through; shown {shown:.6}, really {real:.6}\n"
    );
    std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes()).unwrap();
}

/// Gemini CLI's request of `rounds` tool rounds: its session context and the task, then per round
/// a model turn calling `read_file` (a thought signature beside the call, no call id) and the
/// user turn with its `functionResponse`.
fn gemini_session(rounds: usize) -> String {
    let mut contents = vec![
        json!({"role": "user", "parts": [{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}),
        json!({"role": "user", "parts": [{"text": TASK}]}),
    ];
    for k in 0..rounds {
        contents.push(json!({"role": "model", "parts": [{
            "functionCall": {"name": "read_file", "args": {"file_path": format!("src/module_{k}.rs")}},
            "thoughtSignature": format!("CiQB{k}SIGNATURE+/=="),
        }]}));
        contents.push(json!({"role": "user", "parts": [{
            "functionResponse": {"name": "read_file", "response": {"output": file(k)}},
        }]}));
    }
    json!({
        "contents": contents,
        "systemInstruction": {"parts": [{"text": "You are Gemini CLI, an interactive CLI agent."}], "role": "user"},
        "tools": [{"functionDeclarations": [{"name": "read_file", "parametersJsonSchema": {"type": "object"}}]}],
        "generationConfig": {"temperature": 1},
    })
    .to_string()
}

#[test]
fn gemini_requests_go_to_their_upstream_condensed_counted_and_their_key_is_kept_nowhere() {
    const KEY: &str = "AIzaSy-TEST-GEMINI-KEY-never-stored";
    const MODEL_PATH: &str = "/v1beta/models/tiny-model";
    let answer = json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Done."}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 2, "cachedContentTokenCount": 30},
    })
    .to_string();
    let upstream = Upstream::start(move |seen, stream| {
        if seen.head.contains(":countTokens") {
            respond(stream, "200 OK", "", r#"{"totalTokens":999}"#);
        } else if seen.head.contains("alt=sse") {
            let events = format!("data: {answer}\r\n\r\n");
            respond(stream, "200 OK", "Content-Type: text/event-stream\r\n", &events);
        } else {
            respond(stream, "200 OK", "", &answer);
        }
    });
    let state = Scratch::new("gw-gemini");
    let gateway = Gateway::start(&state, &["--gemini-upstream", &upstream.url(), "--window", SMALL_WINDOW]);
    let header_key = format!("x-goog-api-key: {KEY}");

    // A first request, small: the client's bytes, to the Gemini upstream, key and query as sent.
    let first = gemini_session(1);
    let path = format!("/gemini{MODEL_PATH}:streamGenerateContent?alt=sse");
    let reply = gateway.post(&path, &[&header_key], &first);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = upstream.next();
    assert!(seen.head.starts_with(&format!("POST {MODEL_PATH}:streamGenerateContent?alt=sse HTTP/1.1")));
    assert_eq!(seen.body, first.as_bytes(), "byte for byte");
    assert_eq!(seen.header("x-goog-api-key").as_deref(), Some(KEY));

    // Grown past the window: condensed, the pairs kept whole, the task kept.
    let grown = gemini_session(12);
    let reply = gateway.post(&path, &[&header_key], &grown);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let condensed = upstream.next();
    let body: Value = serde_json::from_slice(&condensed.body).expect("JSON");
    let contents = body["contents"].as_array().unwrap();
    assert!(contents.len() < 2 + 2 * 12, "condensed: {} contents", contents.len());
    assert_eq!(contents[1]["parts"][0]["text"], TASK);
    assert!(contents[2]["parts"][0]["text"].as_str().unwrap().starts_with("[Context Condenser"));
    assert_eq!(body["generationConfig"]["temperature"], 1, "keys the gateway does not read are kept");
    // The next request, the key in the query this time, replays it byte for byte.
    let next = gemini_session(13);
    let reply = gateway.post(&format!("/gemini{MODEL_PATH}:generateContent?key={KEY}"), &[], &next);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let replayed = upstream.next();
    assert!(replayed.head.starts_with(&format!("POST {MODEL_PATH}:generateContent?key={KEY} HTTP/1.1")));
    let (before, after) = (String::from_utf8_lossy(&condensed.body), String::from_utf8_lossy(&replayed.body));
    let cut = before.find("],\"systemInstruction\"").expect("the contents' end");
    assert!(after.starts_with(&before[..cut]), "the condensed request's contents are replayed byte for byte");

    // countTokens: the request as it is forwarded, counted here.
    let count = json!({"generateContentRequest": serde_json::from_str::<Value>(&next).unwrap()}).to_string();
    let reply = gateway.post(&format!("/gemini{MODEL_PATH}:countTokens"), &[&header_key], &count);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let counted = reply.json()["totalTokens"].as_u64().expect("the gateway counted");
    let stats = gateway.stats();
    let (session_name, session) = stats["sessions"].as_object().unwrap().iter().next().expect("a session");
    let (client_tokens, _) = tokens(&stats, session_name);
    assert!(counted < client_tokens, "{counted} < {client_tokens}");
    assert!(upstream.received.try_recv().is_err(), "the upstream was not asked to count");
    assert_eq!(session["model"], SMALL_MODEL, "the model from the path: {stats}");
    assert_eq!(session["usage"]["cache_read"], 30, "Gemini's usageMetadata is read: {stats}");

    // The key: in no log line, no statistics, no state file.
    let state_bytes = state_holding(&state, "tiny-model");
    assert!(!String::from_utf8_lossy(&state_bytes).contains(KEY));
    assert!(!stats.to_string().contains(KEY));
    assert!(!gateway.output().contains(KEY), "{}", gateway.output());
    assert!(gateway.output().contains("POST /gemini/v1beta/models/tiny-model:generateContent"));
}

/// Codex's Responses request of `rounds` tool rounds, as it sends it signed in with ChatGPT: its
/// instructions, its environment context and the task, then per round a reasoning item (encrypted)
/// and a `shell` call with its output; `prompt_cache_key` is its session.
fn codex_session(rounds: usize) -> String {
    let mut input = vec![
        json!({"type": "message", "role": "user", "content": [{"type": "input_text",
            "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]}),
    ];
    for k in 0..rounds {
        input.push(json!({"type": "reasoning", "summary": [], "content": null,
            "encrypted_content": format!("gAAAAABo{k}ENCRYPTED==")}));
        input.push(json!({"type": "function_call", "name": "shell", "call_id": format!("call_{k:04}"),
            "arguments": json!({"command": ["bash", "-lc", format!("cat src/module_{k}.rs")]}).to_string()}));
        input.push(
            json!({"type": "function_call_output", "call_id": format!("call_{k:04}"), "output": file(k)}),
        );
    }
    json!({
        "model": SMALL_MODEL, "instructions": "You are Codex, a coding agent.", "input": input,
        "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
        "store": false, "stream": true, "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    })
    .to_string()
}

#[test]
fn codex_signed_in_with_chatgpt_goes_to_the_chatgpt_backend_with_its_headers_and_condenses() {
    // A ChatGPT sign-in's access token (a JWT) and account: passed on as sent, kept nowhere.
    const TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.eyJjaGF0Z3B0In0.CHATGPT-TOKEN-never-stored";
    const ACCOUNT: &str = "acct-3f2a9c1e-never-stored";
    let answer = json!({"id": "resp_1", "object": "response", "status": "completed",
        "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 20}, "output_tokens": 3}});
    let upstream = Upstream::json(answer);
    let state = Scratch::new("gw-chatgpt");
    // The backend's own path prefix, as ChatGPT's is (`…/backend-api/codex`).
    let backend = format!("{}/backend-api/codex", upstream.url());
    let gateway = Gateway::start(&state, &["--chatgpt-upstream", &backend, "--window", SMALL_WINDOW]);
    let auth = format!("authorization: Bearer {TOKEN}");
    let account = format!("chatgpt-account-id: {ACCOUNT}");
    let headers =
        [auth.as_str(), account.as_str(), "originator: codex_cli_rs", "openai-beta: responses=experimental"];

    let first = codex_session(1);
    assert_eq!(gateway.post("/chatgpt/responses", &headers, &first).status, 200);
    let seen = upstream.next();
    assert!(seen.head.starts_with("POST /backend-api/codex/responses HTTP/1.1"), "{}", seen.head);
    assert_eq!(seen.body, first.as_bytes(), "byte for byte");
    assert_eq!(seen.header("authorization").as_deref(), Some(format!("Bearer {TOKEN}").as_str()));
    assert_eq!(seen.header("chatgpt-account-id").as_deref(), Some(ACCOUNT));
    assert_eq!(seen.header("originator").as_deref(), Some("codex_cli_rs"));

    let grown = codex_session(12);
    assert_eq!(gateway.post("/chatgpt/responses", &headers, &grown).status, 200);
    let condensed = upstream.next();
    assert_eq!(condensed.header("chatgpt-account-id").as_deref(), Some(ACCOUNT));
    let body: Value = serde_json::from_slice(&condensed.body).expect("JSON");
    let input = body["input"].as_array().unwrap();
    assert!(input.len() < 2 + 3 * 12, "condensed: {} items", input.len());
    assert!(input[2]["content"][0]["text"].as_str().unwrap().starts_with("[Context Condenser"));
    for (i, item) in input.iter().enumerate() {
        if item["type"] == "reasoning" {
            assert_eq!(input[i + 1]["type"], "function_call", "reasoning {i} keeps the call it leads to");
        }
    }
    let next = codex_session(13);
    assert_eq!(gateway.post("/chatgpt/responses", &headers, &next).status, 200);
    let replayed = upstream.next();
    let (before, after) = (String::from_utf8_lossy(&condensed.body), String::from_utf8_lossy(&replayed.body));
    let cut = before.find("],\"tools\"").expect("the input's end");
    assert!(after.starts_with(&before[..cut]), "the condensation is replayed byte for byte");

    let stats = gateway.stats();
    let session = &stats["sessions"]["prompt-cache-key:0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"];
    assert_eq!(session["condensations"], 1, "{stats}");
    assert_eq!(session["usage"]["cache_read"], 60, "the usage of each answer: {stats}");
    let state_bytes = state_holding(&state, "0199a1b2");
    for secret in [TOKEN, ACCOUNT] {
        assert!(!String::from_utf8_lossy(&state_bytes).contains(secret));
        assert!(!stats.to_string().contains(secret));
        assert!(!gateway.output().contains(secret), "{}", gateway.output());
    }
}
