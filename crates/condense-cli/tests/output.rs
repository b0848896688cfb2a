//! Where the binary's output goes, as a person uses it: a closed pipe (`| head`) ends a command
//! quietly, with real pipes; `-o FILE` writes atomically and will not replace the input without
//! `--force`; `run`'s one-line summary on stderr.
#![cfg(unix)]

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{HANG_GUARD, Scratch, Server, root, server_saw_it_closed};
use serde_json::Value;

const EXAMPLE: &str = "examples/coding-session.json";

fn condense() -> Command {
    Command::new(env!("CARGO_BIN_EXE_condense"))
}

/// Runs the binary with stdout a pipe whose read end is closed before it starts: its first write
/// fails with EPIPE, deterministically. The exit code and stderr.
fn with_closed_stdout(args: &[&str], stdin: Option<&str>) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = condense()
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_closed_stdout_ends_each_command_quietly() {
    let scratch = Scratch::new("closed");
    let example = root(EXAMPLE);
    let condensed = scratch.path("condensed.json");
    let made =
        condense().args(["run", "--provider", "lossless", &example, "-o", &condensed]).output().unwrap();
    assert!(made.status.success());
    let commands: Vec<Vec<&str>> = vec![
        vec!["count", &example],
        vec!["run", "--provider", "truncation", "--target-tokens", "2000", &example],
        vec!["view", "--format", "openai", &example],
        vec!["undo", &condensed],
        vec!["providers"],
        vec!["schema"],
        vec!["tools"],
        vec!["tools", "--json"],
        vec!["eval", "--providers", "lossless", &example],
        vec!["run", "--provider", "manual", "--render", &example],
    ];
    for args in &commands {
        let (code, stderr) = with_closed_stdout(args, None);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?}: nothing on stderr");
    }
    // A failed run keeps its own status.
    let two = r#"{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}"#;
    let (code, stderr) = with_closed_stdout(&["run", "--provider", "truncation", "-"], Some(two));
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr, "");
    // The summary line still reaches stderr.
    let (code, stderr) = with_closed_stdout(
        &["run", "--provider", "truncation", "--target-tokens", "2000", "--summary", &example],
        None,
    );
    assert_eq!(code, Some(0));
    assert!(stderr.starts_with("truncation: ") && stderr.ends_with(" ms\n"), "{stderr}");
}

/// The shell pipelines of the issue, through bash with `pipefail`, so that the status is
/// `condense`'s own.
#[test]
fn head_after_condense_in_a_shell_pipeline() {
    let example = root(EXAMPLE);
    let bin = env!("CARGO_BIN_EXE_condense");
    for pipeline in [
        format!("'{bin}' count '{example}' | head -1"),
        format!("'{bin}' run --provider truncation --target-tokens 2000 '{example}' | head -c 100"),
        format!("'{bin}' schema | head -c 1"),
    ] {
        let out =
            Command::new("bash").arg("-c").arg(format!("set -o pipefail; {pipeline}")).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{pipeline}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{pipeline}: {stderr}");
        assert!(!out.stdout.is_empty());
    }
}

/// `condense chat` streams an endless answer; a reader that takes 100 bytes and leaves stops the
/// request: the command ends at once, quietly, with exit 0.
#[test]
fn chat_stops_streaming_when_its_reader_leaves() {
    let server = Server::fixture();
    let mut child = condense()
        .args(["chat", "--llm", "openai-compatible", "--model", "hostile-endless", "--base-url"])
        .arg(format!("http://127.0.0.1:{}/v1", server.port))
        .arg(root("tests/fixtures/small-session.json"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"Go on forever.").unwrap();
    }
    let mut first = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The read end is dropped here: the next write fails, and the command stops its request.
    let until = Instant::now() + HANG_GUARD;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            panic!("hang guard: chat still ran {} s after its reader left", HANG_GUARD.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "", "quietly");
    server_saw_it_closed(&server, "hostile-endless", "openai");
}

#[test]
fn output_file_holds_the_result_and_stdout_stays_empty() {
    let scratch = Scratch::new("dash-o");
    let example = root(EXAMPLE);
    let out_path = scratch.path("out.json");
    for flag in ["-o", "--output"] {
        let out =
            condense().args(["run", "--provider", "lossless", &example, flag, &out_path]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout.is_empty());
        let result: Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
        assert!(result["error"].is_null());
        assert!(result["new_context_tokens"].as_u64().unwrap() > 0);
    }
    // undo and view take -o too; nothing else is left in the directory (no temporary file).
    let undone = scratch.path("undone.json");
    let view = scratch.path("view.json");
    assert!(condense().args(["undo", &out_path, "-o", &undone]).status().unwrap().success());
    assert!(
        condense()
            .args(["view", "--format", "anthropic", "-o", &view, &out_path])
            .status()
            .unwrap()
            .success()
    );
    let original: Value = serde_json::from_str(&std::fs::read_to_string(&example).unwrap()).unwrap();
    let undone: Value = serde_json::from_str(&std::fs::read_to_string(&undone).unwrap()).unwrap();
    assert_eq!(undone["messages"], original["messages"]);
    let view: Value = serde_json::from_str(&std::fs::read_to_string(&view).unwrap()).unwrap();
    assert!(view["messages"].is_array());
    let mut names: Vec<String> = std::fs::read_dir(&scratch.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["out.json", "undone.json", "view.json"]);
    // `-o -` is stdout.
    let out = condense().args(["count", &example]).output().unwrap();
    let dash = condense().args(["view", "--format", "openai", "-o", "-", &example]).output().unwrap();
    assert!(out.status.success() && dash.status.success() && !dash.stdout.is_empty());
}

#[test]
fn output_over_the_input_needs_force() {
    let scratch = Scratch::new("force");
    let original = std::fs::read_to_string(root(EXAMPLE)).unwrap();
    let file = scratch.write("session.json", &original);
    let link = scratch.path("link.json");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    for target in [&file, &link] {
        let out = condense().args(["run", "--provider", "lossless", &file, "-o", target]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.starts_with("condense: -o ") && stderr.contains("--force"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "the input is untouched");
    }
    // --force without -o is a usage error.
    let out = condense().args(["run", "--provider", "lossless", "--force", &file]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));

    // With --force, through the link: the link stays a link, the file is the result, undo restores.
    let out =
        condense().args(["run", "--provider", "lossless", &file, "-o", &link, "--force"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(result["error"].is_null() && result["metrics"]["provider_id"] == "lossless");
    let out = condense().args(["undo", &file, "-o", &file, "--force"]).output().unwrap();
    assert!(out.status.success());
    let undone: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let before: Value = serde_json::from_str(&original).unwrap();
    assert_eq!(undone["messages"], before["messages"]);
}

#[test]
fn output_to_an_unwritable_place_exits_2_naming_it() {
    let scratch = Scratch::new("unwritable");
    let nowhere = scratch.path("no/such/dir/out.json");
    let out = condense().args(["count", &root(EXAMPLE)]).output().unwrap();
    assert!(out.status.success());
    let out = condense().args(["undo", &root(EXAMPLE), "-o", &nowhere]).output().unwrap();
    // Nothing to undo in the example: exit 1 before anything is written.
    assert_eq!(out.status.code(), Some(1));
    let out =
        condense().args(["view", "--format", "openai", &root(EXAMPLE), "-o", &nowhere]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with(&format!("condense: cannot write {nowhere}: ")), "{stderr}");
}

/// The summary line: `--summary` prints it, `--no-summary` and a stderr that is not a terminal do
/// not; its figures are the result's.
#[test]
fn run_summarizes_itself_in_one_line_on_request() {
    let example = root(EXAMPLE);
    let args = ["run", "--provider", "truncation", "--target-tokens", "2000", &example];
    let quiet = condense().args(args).output().unwrap();
    assert!(quiet.status.success());
    assert_eq!(quiet.stderr, b"", "stderr is a pipe here: no line by default");
    let off = condense().args(args).args(["--summary", "--no-summary"]).output().unwrap();
    assert_eq!(off.stderr, b"");

    let out = condense().args(args).arg("--summary").output().unwrap();
    assert!(out.status.success());
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let line = stderr.strip_suffix('\n').unwrap();
    assert!(!line.contains('\n'), "one line: {line}");
    let before =
        serde_json::from_slice::<Value>(&condense().args(["count", &example]).output().unwrap().stdout)
            .unwrap()["total_tokens"]
            .as_u64()
            .unwrap();
    let after = result["new_context_tokens"].as_u64().unwrap();
    let group = |n: u64| {
        let s = n.to_string();
        let (head, tail) = s.split_at(s.len().saturating_sub(3));
        if head.is_empty() { tail.to_owned() } else { format!("{head},{tail}") }
    };
    let percent = ((before as f64 - after as f64) / before as f64 * 100.0).round();
    assert!(
        line.starts_with(&format!(
            "truncation: {} → {} tokens (−{percent}%) · ",
            group(before),
            group(after)
        )),
        "{line}"
    );
    // Hidden and edited, counted from the result: together they are the messages this run hid.
    let messages = result["messages"].as_array().unwrap();
    let hidden_now = messages.iter().filter(|m| !m["condense_parent"].is_null()).count();
    let copies =
        messages.iter().filter(|m| !m["condense_id"].is_null() && m["condense_parent"].is_null()).count();
    assert!(copies > 0);
    assert!(line.contains(&format!(" · {} hidden · {copies} edited · ", hidden_now - copies)), "{line}");
    assert!(line.ends_with(" ms"), "no cost without an LLM: {line}");
}

/// At a terminal (a pseudo-terminal from util-linux `script`), a run writing its result to a
/// file tells a person what happened — the summary line first, and where the result went — by
/// default, and `--no-summary` silences it.
#[test]
fn a_terminal_gets_the_summary_by_default() {
    if Command::new("script").arg("--version").output().is_err() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED: no `script` (util-linux) to make a pseudo-terminal");
        return;
    }
    let scratch = Scratch::new("tty");
    let bin = env!("CARGO_BIN_EXE_condense");
    let out_path = scratch.path("out.json");
    let in_a_terminal = |extra: &str| {
        let command = format!(
            "'{bin}' run --provider truncation --target-tokens 2000 {extra} '{}' -o '{out_path}'",
            root(EXAMPLE)
        );
        let out = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let shown = in_a_terminal("");
    let first = shown.lines().next().unwrap_or("");
    assert!(first.starts_with("truncation: ") && first.ends_with(" ms"), "{shown:?}");
    assert!(shown.ends_with(&format!("  written to {out_path}\r\n")), "{shown:?}");
    assert_eq!(in_a_terminal("--no-summary"), "");
}

/// A failed run's line names the error kind; with an LLM, the line carries the cost.
#[test]
fn the_summary_of_a_failed_run_and_of_an_llm_run() {
    let two = r#"{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}"#;
    let mut child = condense()
        .args(["run", "--provider", "truncation", "--summary", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(two.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.starts_with("truncation: failed, nothing_to_condense: "), "{stderr}");
    assert!(stderr.contains(" · nothing changed · "), "{stderr}");

    let server = Server::fixture();
    let out = condense()
        .args([
            "run",
            "--provider",
            "native",
            "--summary",
            "--llm",
            "openai-compatible",
            "--model",
            "fixture",
        ])
        .args(["--price-in", "3", "--price-out", "15", "--api-key-env", "FIXTURE_KEY", "--base-url"])
        .arg(format!("http://127.0.0.1:{}/v1", server.port))
        .arg(root(EXAMPLE))
        .env("FIXTURE_KEY", "fixture-key")
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cost = result["cost"].as_f64().unwrap();
    assert!(cost > 0.0);
    assert!(stderr.starts_with("native: ") && stderr.contains(" · 1 summary · "), "{stderr}");
    assert!(stderr.trim_end().ends_with(&format!(" · ${cost:.4}")), "{stderr}");
}

/// OPENAI_BASE_URL and ANTHROPIC_BASE_URL replace the vendors' default base URLs (as in the
/// official SDKs); --base-url wins over them.
#[test]
fn the_base_url_variables_point_openai_and_anthropic_elsewhere() {
    let server = Server::fixture();
    let base = format!("http://127.0.0.1:{}", server.port);
    for (kind, var, url, key) in [
        ("openai", "OPENAI_BASE_URL", format!("{base}/v1"), "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_BASE_URL", base.clone(), "ANTHROPIC_API_KEY"),
    ] {
        let mut child = condense()
            .args(["chat", "--llm", kind, "--model", "fixture", &root("tests/fixtures/small-session.json")])
            .env(var, &url)
            .env(key, "test-key")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"Next?").unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{kind}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!out.stdout.is_empty());
        // A bad value is named.
        let bad = condense()
            .args(["run", "--provider", "native", "--llm", kind, "--model", "m", &root(EXAMPLE)])
            .env(var, "ftp://nowhere")
            .env(key, "test-key")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&bad.stderr);
        assert_eq!(bad.status.code(), Some(2), "{stderr}");
        assert!(stderr.starts_with(&format!("condense: {var}: ")), "{stderr}");
    }
    let paths: Vec<String> =
        server.requests().iter().map(|r| r["path"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(paths, ["/v1/chat/completions", "/v1/messages"]);
}

/// `count`, `eval` and `replay` write their JSON to `-o FILE` too: the document a pipe gets, with
/// nothing on stdout; at a terminal the report for people is shown, ending with where the JSON
/// went. The input file is refused as the output, as for `run`.
#[test]
fn count_eval_and_replay_write_their_json_to_an_output_file() {
    let scratch = Scratch::new("json-o");
    let example = root(EXAMPLE);
    let replay = ["replay", "--llm", "openai", "--model", "gpt-4o", "--policy", "none,threshold"];
    // Each command, and the JSON documents it writes: one, or one a policy.
    let commands: Vec<(&str, Vec<&str>, usize)> = vec![
        ("count.json", vec!["count"], 1),
        ("eval.json", vec!["eval", "--providers", "lossless,truncation", "--json"], 1),
        ("replay.jsonl", replay.iter().copied().chain(["--json"]).collect(), 2),
    ];
    for (name, args, documents) in &commands {
        let path = scratch.path(name);
        let piped = condense().args(args).arg(&example).env("OPENAI_API_KEY", "unused").output().unwrap();
        assert!(piped.status.success(), "{args:?}: {}", String::from_utf8_lossy(&piped.stderr));
        let to_file = condense()
            .args(args)
            .arg(&example)
            .args(["-o", &path])
            .env("OPENAI_API_KEY", "unused")
            .output()
            .unwrap();
        assert!(to_file.status.success(), "{args:?}: {}", String::from_utf8_lossy(&to_file.stderr));
        assert!(to_file.stdout.is_empty() && to_file.stderr.is_empty(), "{args:?}");
        let written = std::fs::read_to_string(&path).unwrap();
        // The same document, its times aside.
        let untimed = |text: &str| -> Vec<Value> {
            let documents = serde_json::Deserializer::from_str(text).into_iter::<Value>();
            documents
                .map(|v| {
                    let mut v = v.unwrap();
                    let rows = v.get_mut("rows").and_then(Value::as_array_mut);
                    for row in rows.into_iter().flatten() {
                        row["time_ms"] = Value::Null;
                    }
                    v
                })
                .collect()
        };
        assert_eq!(untimed(&written).len(), *documents, "{args:?}: {written}");
        assert_eq!(untimed(&written), untimed(&String::from_utf8(piped.stdout).unwrap()), "{args:?}");
        // The input is not overwritten without --force.
        let refused = condense().args(args).arg(&example).args(["-o", &example]).output().unwrap();
        assert_eq!(refused.status.code(), Some(2), "{args:?}");
    }
    // `eval -o FILE` writes JSON unless --format says otherwise.
    let markdown = scratch.path("eval.md");
    let out = condense()
        .args(["eval", "--providers", "lossless", "--format", "markdown", &example, "-o", &markdown])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
    assert!(std::fs::read_to_string(&markdown).unwrap().starts_with("| file | provider |"));

    if Command::new("script").arg("--version").output().is_err() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED: no `script` (util-linux) to make a pseudo-terminal");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_condense");
    for (name, args, first) in [
        ("c.json", "count", "examples/coding-session.json: 8,861 tokens in "),
        ("e.json", "eval --providers lossless", "FILE "),
        ("r.jsonl", "replay --llm openai --model gpt-4o --policy none", "none "),
    ] {
        let path = scratch.path(name);
        let line = format!("'{bin}' {args} examples/coding-session.json -o '{path}'");
        let out = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .current_dir(root(""))
            .env("OPENAI_API_KEY", "unused")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let shown = String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n");
        assert!(out.status.success(), "{args}: {shown}");
        assert!(shown.starts_with(first), "{args}: {shown:?}");
        assert!(shown.ends_with(&format!(" written to {path}\n")), "{args}: {shown:?}");
        assert!(!shown.contains('{'), "no JSON for a person: {shown:?}");
        let written = std::fs::read_to_string(&path).unwrap();
        let first: Value = serde_json::Deserializer::from_str(&written).into_iter().next().unwrap().unwrap();
        assert!(first.is_object(), "{args}: {written}");
    }
}
