//! The CLI against a hostile server on 127.0.0.1 (the fixture server's `hostile-*` modes): a key
//! echoed back, endless streams, a drip, an endless line, a huge error body, an HTML page. Each
//! ends with its typed error, in bounded time (the run ends at all) and bounded memory (the
//! process runs under a 2 GB address-space limit), and the key appears nowhere in what it prints.
#![cfg(unix)]

mod common;

use std::process::Command;

use common::{Server, root};

const KEY: &str = "sk-hostile-canary-0123456789abcdef";

/// `condense chat` at the server with a hostile model; exit code, stdout, stderr.
fn chat(server: &Server, model: &str, extra: &str) -> (i32, String, String) {
    let bin = assert_cmd::cargo::cargo_bin("condense");
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    let script = format!(
        "ulimit -v 2000000; echo 'hello?' | exec '{}' chat --llm openai-compatible --base-url {base} --model {model} \
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
    let cases: [(&str, &str, &str, &str); 7] = [
        ("hostile-echo-key", "", "llm_auth", "Incorrect API key provided: [redacted]"),
        ("hostile-echo-stream", "", "llm_server", "[redacted] is revoked"),
        ("hostile-endless", "", "llm_response_too_large", "far more than the 200 tokens asked for"),
        ("hostile-drip", "--deadline-secs 2", "llm_timeout", "deadline of 2 s"),
        ("hostile-endless-line", "", "llm_response_too_large", "without an end"),
        ("hostile-huge-error", "", "llm_server", "eeee"),
        (
            "hostile-html",
            "",
            "llm_malformed_stream",
            "HTML page, not an event stream (is the base URL right?): <html><body><h1>Sign in",
        ),
    ];
    for (model, extra, kind, says) in cases {
        let (code, out, err) = chat(&server, model, extra);
        assert_eq!(code, 1, "{model}: {err}");
        assert!(err.contains(kind), "{model}: {err}");
        assert!(err.contains(says), "{model}: {err:.400}");
        assert!(!out.contains(KEY) && !err.contains(KEY), "{model} leaked the key");
        assert!(err.len() < 100_000, "{model}: an error of {} bytes", err.len());
    }
    // The answer text that did arrive is kept, with the key redacted.
    let (_, out, _) = chat(&server, "hostile-echo-stream", "");
    assert!(out.contains("You sent the key [redacted], and nothing else."), "{out}");
}
