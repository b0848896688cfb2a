//! The CLI against a hostile server on 127.0.0.1 (the fixture server's `hostile-*` modes): a key
//! echoed back, endless streams, a drip, a 500 whose body drips, a server that never sends its
//! headers, an endless line, malformed JSON carrying the key, a huge error body, an HTML page; the
//! echo and the endless stream over the Anthropic wire too. Each ends with its typed error, in
//! bounded time (the run ends at all; the server saw the connection closed) and bounded memory
//! (the process runs under a 2 GB address-space limit), and the key appears nowhere in what it
//! prints.
#![cfg(unix)]

mod common;

use std::process::Command;

use common::{Server, root, server_saw_it_closed};

const KEY: &str = "sk-hostile-canary-0123456789abcdef";

/// `condense chat` at the server with a hostile model, over the OpenAI wire; exit code, stdout,
/// stderr.
fn chat(server: &Server, model: &str, extra: &str) -> (i32, String, String) {
    chat_over(server, "openai-compatible", model, extra)
}

/// `condense chat` with a hostile model over a wire (`openai-compatible` or `anthropic`).
fn chat_over(server: &Server, wire: &str, model: &str, extra: &str) -> (i32, String, String) {
    let bin = assert_cmd::cargo::cargo_bin("condense");
    let base = match wire {
        "anthropic" => format!("http://127.0.0.1:{}", server.port),
        _ => format!("http://127.0.0.1:{}/v1", server.port),
    };
    let script = format!(
        "ulimit -v 2000000; echo 'hello?' | exec '{}' chat --llm {wire} --base-url {base} --model {model} \
         --api-key-env HOSTILE_KEY --max-retries 0 --timeout-secs 5 --max-output 200 {extra} '{}'",
        bin.display(),
        root("tests/fixtures/small-session.json"),
    );
    let out = Command::new("bash").args(["-c", &script]).env("HOSTILE_KEY", KEY).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn every_hostile_server_ends_typed_bounded_and_without_the_key() {
    let server = Server::fixture();
    // Model, extra flags, kind, what the message says, whether the server must see the client
    // close (the modes that would go on for ever).
    let cases: [(&str, &str, &str, &str, bool); 10] = [
        ("hostile-echo-key", "", "llm_auth", "Incorrect API key provided: [redacted]", false),
        ("hostile-echo-stream", "", "llm_server", "[redacted] is revoked", false),
        ("hostile-endless", "", "llm_response_too_large", "far more than the 200 tokens asked for", true),
        ("hostile-drip", "--deadline-secs 2", "llm_timeout", "deadline of 2 s", true),
        // The idle timeout (5 s) would end these too, later and with another message: the
        // message says the deadline (2 s) did.
        (
            "hostile-drip-error",
            "--deadline-secs 2",
            "llm_timeout",
            "deadline of 2 s: stopped while reading the body of the server's 500 error",
            true,
        ),
        (
            "hostile-stall-headers",
            "--deadline-secs 2",
            "llm_timeout",
            "deadline of 2 s: stopped while waiting for the server to answer",
            true,
        ),
        ("hostile-endless-line", "", "llm_response_too_large", "without an end", true),
        ("hostile-malformed", "", "llm_malformed_stream", "[redacted]", false),
        ("hostile-huge-error", "", "llm_server", "eeee", true),
        (
            "hostile-html",
            "",
            "llm_malformed_stream",
            "HTML page, not an event stream (is the base URL right?): <html><body><h1>Sign in",
            false,
        ),
    ];
    for (model, extra, kind, says, endless) in cases {
        let (code, out, err) = chat(&server, model, extra);
        assert_eq!(code, 1, "{model}: {err}");
        assert!(err.contains(kind), "{model}: {err}");
        assert!(err.contains(says), "{model}: {err:.400}");
        assert!(!out.contains(KEY) && !err.contains(KEY), "{model} leaked the key");
        assert!(err.len() < 100_000, "{model}: an error of {} bytes", err.len());
        if endless {
            server_saw_it_closed(&server, model, "openai");
        }
    }
    // The answer text that did arrive is kept, with the key redacted.
    let (_, out, _) = chat(&server, "hostile-echo-stream", "");
    assert!(out.contains("You sent the key [redacted], and nothing else."), "{out}");
    let (_, out, _) = chat(&server, "hostile-malformed", "");
    assert!(out.contains("Partial answer"), "{out}");
}

#[test]
fn hostile_anthropic_servers_end_typed_bounded_and_without_the_key() {
    let server = Server::fixture();
    let (code, out, err) = chat_over(&server, "anthropic", "hostile-echo-key", "");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("llm_auth") && err.contains("invalid x-api-key: [redacted]"), "{err}");
    assert!(!out.contains(KEY) && !err.contains(KEY), "the echo leaked the key");

    let (code, out, err) = chat_over(&server, "anthropic", "hostile-endless", "");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("llm_response_too_large") && err.contains("200 tokens asked for"), "{err:.400}");
    assert!(out.starts_with("word0 word1 "), "the text that arrived is kept: {out:.100}");
    assert!(!out.contains(KEY) && !err.contains(KEY));
    server_saw_it_closed(&server, "hostile-endless", "anthropic");
}
