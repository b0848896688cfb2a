//! Progress on stderr, as a person and a script see it: a command that waits on its model (the
//! fixture server stalls two seconds after the first words of its answer, so the wait is longer
//! than the one second after which progress shows, however fast the machine) draws one line on
//! a terminal's stderr, rewritten in place and cleared before the report; a stderr that is not
//! a terminal never gets a byte of it. No test measures a time: the stall only makes sure the
//! work lasts. The line's own rules (nothing in the first second, the width, the clearing) are
//! unit tests in `src/progress.rs`, with a fake clock.
#![cfg(unix)]

mod common;

use std::process::{Command, Stdio};

use common::{Scratch, Server, root};

const EXAMPLE: &str = "examples/coding-session.json";

/// Whether util-linux's `script` can make a pseudo-terminal here.
fn have_script() -> bool {
    let found = Command::new("script").arg("--version").output().is_ok();
    if !found {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED: no `script` (util-linux) to make a pseudo-terminal");
    }
    found
}

/// `condense run --provider native` against the stalling model of `server`.
fn stalled_run(server: &Server) -> String {
    format!(
        "'{}' run --provider native --llm openai-compatible --model fault-stall --max-retries 0 \
         --api-key-env FIXTURE_KEY --base-url http://127.0.0.1:{}/v1 '{}'",
        env!("CARGO_BIN_EXE_condense"),
        server.port,
        root(EXAMPLE)
    )
}

/// Runs a shell command line in a pseudo-terminal: what the terminal showed, and the status.
fn in_a_terminal(line: &str) -> (String, Option<i32>) {
    let out = Command::new("script")
        .args(["-qec", line, "/dev/null"])
        .env("FIXTURE_KEY", "fixture-key")
        .env_remove("COLUMNS")
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (String::from_utf8(out.stdout).unwrap(), out.status.code())
}

#[test]
fn a_run_waiting_on_its_model_shows_progress_on_a_terminal_and_clears_it() {
    if !have_script() {
        return;
    }
    let server = Server::fixture_with(&["--stall-seconds", "2"]);
    let (shown, code) = in_a_terminal(&stalled_run(&server));
    assert_eq!(code, Some(1), "the stalled answer breaks off: the run fails\n{shown:?}");
    // The line names the provider and what the model has sent so far, rewritten in place.
    let line = "\rcondense run: native · fault-stall: 7 characters in · ";
    assert!(shown.starts_with(line), "{shown:?}");
    assert!(shown.contains(&format!("{line}1 s\x1b[K")), "{shown:?}");
    // Cleared before the report, which then reads as it does without progress.
    let (progress, report) = shown.rsplit_once("\r\x1b[K").expect("the line is cleared");
    assert!(!progress.contains('\n'), "the progress stays on one row: {progress:?}");
    assert!(!report.contains("condense run:"), "{report:?}");
    assert!(report.starts_with("native: failed, llm_malformed_stream: "), "{report:?}");
    assert!(report.ends_with("  nothing changed\r\n"), "{report:?}");
}

#[test]
fn a_stderr_that_is_not_a_terminal_never_gets_progress() {
    let server = Server::fixture_with(&["--stall-seconds", "2"]);
    // At a terminal, but stderr into a file: the report on the terminal, nothing in the file.
    if have_script() {
        let scratch = Scratch::new("progress");
        let err = scratch.path("stderr.txt");
        let (shown, code) = in_a_terminal(&format!("{} 2>'{err}'", stalled_run(&server)));
        assert_eq!(code, Some(1), "{shown:?}");
        assert_eq!(std::fs::read_to_string(&err).unwrap(), "", "no progress, no summary line");
        assert!(shown.starts_with("native: failed, llm_malformed_stream: "), "{shown:?}");
        assert!(!shown.contains('\x1b') && !shown.contains("condense run:"), "{shown:?}");
    }
    // A script's pipes: the JSON on stdout and nothing on stderr, for `run` and `eval`.
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    let llm = [
        "--llm",
        "openai-compatible",
        "--model",
        "fault-stall",
        "--max-retries",
        "0",
        "--api-key-env",
        "FIXTURE_KEY",
        "--base-url",
        &base,
    ];
    for command in [vec!["run", "--provider", "native"], vec!["eval", "--json", "--providers", "native"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_condense"))
            .args(&command)
            .args(llm)
            .arg(root(EXAMPLE))
            .env("FIXTURE_KEY", "fixture-key")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{command:?}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        assert!(json.is_object(), "{command:?}");
    }
}
