//! The stand-ins for Claude Code, Codex and Gemini CLI (tests/stand-ins), driven through the
//! native runner with the exact command lines of the shipped tool entries: the output shapes the
//! entries read, the documented failures and exit codes, the fault modes, and a hanging tool
//! killed with the process it started.

#![cfg(unix)]

mod common;

use common::{Scratch, gone, hang_guard};
use std::path::{Path, PathBuf};

use condense_cli::runner::NativeRunner;
use condense_core::host::{
    AbortSignal, ArgPart, CommandError, CommandErrorKind, CommandOutput, CommandRunner, CommandSpec,
};
use serde_json::Value;

const GEMINI_INSTRUCTION: &str = "Follow the instructions given on standard input.";

/// The arguments the shipped entries' command templates give, written out by hand.
fn shipped_args(tool: &str, model: &str) -> Vec<String> {
    let args: Vec<&str> = match tool {
        "claude" => vec!["-p", "--output-format", "json", "--model", model, "--max-turns", "1"],
        "codex" => {
            vec!["exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only", "--model", model, "-"]
        }
        "gemini" => vec!["-p", GEMINI_INSTRUCTION, "--output-format", "json", "--model", model],
        other => panic!("no such stand-in: {other}"),
    };
    args.into_iter().map(String::from).collect()
}

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/stand-ins/bin").canonicalize().unwrap()
}

/// A run of a stand-in, found on a PATH holding only the stand-ins' directory, as the core
/// would find the real tool.
struct Run {
    tool: &'static str,
    args: Vec<String>,
    env: Vec<(String, String)>,
    stdin: String,
    cwd: Option<String>,
    timeout_ms: u64,
    max_output_bytes: usize,
}

impl Run {
    fn new(tool: &'static str, args: Vec<String>, stdin: &str) -> Run {
        Run {
            tool,
            args,
            env: vec![],
            stdin: stdin.to_string(),
            cwd: None,
            timeout_ms: 20_000,
            max_output_bytes: 1 << 20,
        }
    }

    fn shipped(tool: &'static str, model: &str, stdin: &str) -> Run {
        Run::new(tool, shipped_args(tool, model), stdin)
    }

    fn env(mut self, name: &str, value: &str) -> Run {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    fn mode(self, mode: &str) -> Run {
        self.env("STANDIN_MODE", mode)
    }

    fn spec(&self) -> CommandSpec {
        let path_var = bin_dir().into_os_string();
        let program =
            NativeRunner::locate_in(Some(&path_var), self.tool).expect("the stand-in is executable");
        CommandSpec {
            program,
            args: self.args.iter().map(|a| vec![ArgPart::Text { text: a.clone() }]).collect(),
            env: self.env.clone(),
            stdin: Some(self.stdin.clone()),
            prompt_file: None,
            output_file: false,
            cwd: self.cwd.clone(),
            timeout_ms: self.timeout_ms,
            max_output_bytes: self.max_output_bytes,
        }
    }

    fn run(&self) -> Result<CommandOutput, CommandError> {
        futures::executor::block_on(NativeRunner::new().run(self.spec(), &AbortSignal::new()))
    }

    fn ok(&self) -> CommandOutput {
        self.run().unwrap_or_else(|e| panic!("{} did not run: {e:?}", self.tool))
    }
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not one JSON value ({e}): {text}"))
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines().filter(|l| !l.trim().is_empty()).map(json).collect()
}

fn tokens(text: &str) -> u64 {
    (text.chars().count() as u64 / 4).max(1)
}

const CHAT: &str = "[user] Hello there\n[assistant] Hi!\n[user] What is the capital of France?\n";
const SUMMARY: &str = "Summarize the conversation below.\n\n### User\nHow do I reverse a list in Rust?\n\n### Assistant\nUse .reverse().\n\n### User\nAnd sort it?\n";

#[test]
fn claude_prints_one_result_object_with_usage_cost_and_the_full_model_id() {
    let out = Run::shipped("claude", "sonnet", CHAT).ok();
    assert_eq!(out.exit_code, Some(0), "stderr: {}", out.stderr);
    let v = json(&out.stdout);
    assert_eq!(v["type"], "result");
    assert_eq!(v["subtype"], "success");
    assert_eq!(v["is_error"], false);
    assert_eq!(v["num_turns"], 1);
    assert_eq!(v["result"], "claude stand-in answers: [user] What is the capital of France?");
    assert_eq!(v["usage"]["input_tokens"], tokens(CHAT));
    assert_eq!(v["usage"]["output_tokens"], tokens(v["result"].as_str().unwrap()));
    assert!(v["total_cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(v["session_id"].as_str().unwrap().len(), 36, "a uuid");
    let models: Vec<&String> = v["modelUsage"].as_object().unwrap().keys().collect();
    assert_eq!(models, ["claude-sonnet-4-5-20250929"]);

    for (alias, full) in [("opus", "claude-opus-4-1-20250805"), ("haiku", "claude-haiku-4-5-20251001")] {
        let v = json(&Run::shipped("claude", alias, CHAT).ok().stdout);
        assert!(v["modelUsage"].get(full).is_some(), "{alias}: {v}");
    }
    let v = json(&Run::shipped("claude", "claude-sonnet-4-0", CHAT).ok().stdout);
    assert!(v["modelUsage"].get("claude-sonnet-4-0").is_some(), "a full id maps to itself: {v}");
}

#[test]
fn every_stand_in_answers_ok_summaries_and_chat_from_the_prompt_it_was_given() {
    for tool in ["claude", "codex", "gemini"] {
        let text = |stdin: &str| -> String {
            let out = Run::shipped(tool, "some-model", stdin).ok();
            assert_eq!(out.exit_code, Some(0), "{tool}: {}", out.stderr);
            match tool {
                "claude" => json(&out.stdout)["result"].as_str().unwrap().to_string(),
                "gemini" => json(&out.stdout)["response"].as_str().unwrap().to_string(),
                _ => jsonl(&out.stdout)
                    .iter()
                    .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
                    .map(|e| e["item"]["text"].as_str().unwrap().to_string())
                    .unwrap(),
            }
        };
        assert_eq!(text("Check the connection. Reply with the single word OK."), "OK", "{tool}");
        let summary = text(SUMMARY);
        assert!(summary.contains(&format!("Summary written by the {tool} stand-in")), "{tool}: {summary}");
        assert!(summary.contains("How do I reverse a list in Rust?"), "{tool}: {summary}");
        assert!(summary.contains("And sort it?"), "{tool}: {summary}");
        assert!(!summary.contains("Use .reverse()"), "only user turns are quoted: {summary}");
        assert_eq!(text(CHAT), format!("{tool} stand-in answers: [user] What is the capital of France?"));
    }
}

#[test]
fn the_log_records_what_was_run() {
    let dir = Scratch::new("log");
    let log = dir.path("runs.jsonl");
    for tool in ["claude", "codex", "gemini"] {
        let mut run = Run::shipped(tool, "m1", CHAT).env("STANDIN_LOG", &log);
        run.cwd = Some(dir.0.to_str().unwrap().to_string());
        run.ok();
    }
    let entries = jsonl(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(entries.len(), 3);
    for (entry, tool) in entries.iter().zip(["claude", "codex", "gemini"]) {
        assert_eq!(entry["tool"], tool);
        assert_eq!(entry["argv"], serde_json::json!(shipped_args(tool, "m1")));
        assert_eq!(entry["stdin"], CHAT);
        assert_eq!(Path::new(entry["cwd"].as_str().unwrap()), dir.0.canonicalize().unwrap());
    }
}

#[test]
fn claude_failures_and_usage_errors() {
    let out = Run::shipped("claude", "sonnet", CHAT).mode("fail").ok();
    assert_eq!(out.exit_code, Some(1));
    let v = json(&out.stdout);
    assert_eq!(v["is_error"], true);
    assert_eq!(v["subtype"], "error_during_execution");
    assert!(v["result"].as_str().unwrap().contains("API Error"), "{v}");

    let without_print = vec!["--output-format".to_string(), "json".to_string()];
    let out = Run::new("claude", without_print, CHAT).ok();
    assert_eq!(out.exit_code, Some(1));
    assert!(out.stderr.contains("-p"), "{}", out.stderr);
    let mut unknown = shipped_args("claude", "sonnet");
    unknown.push("--no-such-flag".into());
    let out = Run::new("claude", unknown, CHAT).ok();
    assert_eq!(out.exit_code, Some(1));
    assert!(out.stderr.contains("unknown option '--no-such-flag'"), "{}", out.stderr);
    assert_eq!(out.stdout, "");
}

#[test]
fn codex_prints_its_events_and_fails_with_turn_failed() {
    let out = Run::shipped("codex", "gpt-5-codex", CHAT).ok();
    assert_eq!(out.exit_code, Some(0), "stderr: {}", out.stderr);
    let events = jsonl(&out.stdout);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["thread.started", "turn.started", "item.completed", "item.completed", "turn.completed"]
    );
    assert_eq!(events[0]["thread_id"].as_str().unwrap().len(), 36);
    assert_eq!(events[2]["item"]["type"], "reasoning");
    assert_eq!(events[3]["item"]["type"], "agent_message");
    let usage = &events[4]["usage"];
    assert_eq!(usage["input_tokens"], tokens(CHAT));
    assert_eq!(usage["output_tokens"], tokens(events[3]["item"]["text"].as_str().unwrap()));
    assert_eq!(usage["cached_input_tokens"], 0);

    let out = Run::shipped("codex", "gpt-5-codex", CHAT).mode("fail").ok();
    assert_eq!(out.exit_code, Some(1));
    let events = jsonl(&out.stdout);
    let failed = events.iter().find(|e| e["type"] == "turn.failed").expect("a turn.failed event");
    assert!(failed["error"]["message"].as_str().unwrap().contains("gpt-5-codex"), "{failed}");
    assert!(events.iter().any(|e| e["type"] == "error"));
    assert!(!events.iter().any(|e| e["item"]["type"] == "agent_message"));
}

#[test]
fn codex_refuses_to_run_outside_a_git_repository_unless_told_and_rejects_unknown_flags() {
    let dir = Scratch::new("nogit");
    let args: Vec<String> = shipped_args("codex", "gpt-5")
        .into_iter()
        .filter(|a| a.as_str() != "--skip-git-repo-check")
        .collect();
    let mut run = Run::new("codex", args, CHAT);
    run.cwd = Some(dir.0.to_str().unwrap().to_string());
    let out = run.ok();
    assert_eq!(out.exit_code, Some(1));
    assert!(out.stderr.contains("--skip-git-repo-check"), "{}", out.stderr);
    std::fs::create_dir(dir.0.join(".git")).unwrap();
    assert_eq!(run.ok().exit_code, Some(0), "inside a repository it runs");

    let mut unknown = shipped_args("codex", "gpt-5");
    unknown.insert(1, "--bogus".into());
    let out = Run::new("codex", unknown, CHAT).ok();
    assert_eq!(out.exit_code, Some(2), "clap's usage error");
    assert!(out.stderr.contains("unexpected argument '--bogus'"), "{}", out.stderr);
}

#[test]
fn gemini_prints_response_and_stats_and_fails_with_an_api_error() {
    let out = Run::shipped("gemini", "gemini-2.5-flash", CHAT).ok();
    assert_eq!(out.exit_code, Some(0), "stderr: {}", out.stderr);
    let v = json(&out.stdout);
    let response = v["response"].as_str().unwrap();
    let models = v["stats"]["models"].as_object().unwrap();
    assert_eq!(models.keys().collect::<Vec<_>>(), ["gemini-2.5-flash"]);
    let t = &models["gemini-2.5-flash"]["tokens"];
    let prompt = format!("{CHAT}\n\n{GEMINI_INSTRUCTION}");
    assert_eq!(t["prompt"], tokens(&prompt), "the piped text and the -p instruction");
    assert_eq!(t["candidates"], tokens(response));
    assert_eq!(t["total"], tokens(&prompt) + tokens(response));
    assert_eq!(models["gemini-2.5-flash"]["api"]["totalRequests"], 1);
    assert_eq!(v["stats"]["tools"]["totalCalls"], 0);
    assert_eq!(v["stats"]["files"]["totalLinesAdded"], 0);

    let out = Run::shipped("gemini", "gemini-2.5-flash", CHAT).mode("fail").ok();
    assert_eq!(out.exit_code, Some(1));
    assert_eq!(out.stdout, "");
    let e = json(&out.stderr);
    assert_eq!(e["error"]["type"], "ApiError");
    assert!(e["error"]["message"].as_str().unwrap().contains("API Error"));
    assert!(e["error"]["code"].is_number());

    let mut bad = shipped_args("gemini", "gemini-2.5-pro");
    bad.push("--no-such-flag".into());
    let out = Run::new("gemini", bad, CHAT).ok();
    assert_eq!(out.exit_code, Some(42), "the documented input error");
    let out = Run::new("gemini", vec!["--output-format".into(), "yaml".into()], CHAT).ok();
    assert_eq!(out.exit_code, Some(42));
}

#[test]
fn auth_failures_name_the_login_and_carry_the_secret_for_redaction_tests() {
    for tool in ["claude", "codex", "gemini"] {
        let out = Run::shipped(tool, "m", CHAT).mode("auth").env("STANDIN_SECRET", "sk-test-0123456789").ok();
        assert_eq!(out.exit_code, Some(1), "{tool}");
        assert!(out.stderr.contains("Invalid API key · Please run /login"), "{tool}: {}", out.stderr);
        assert!(out.stderr.contains("sk-test-0123456789"), "{tool}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{tool}");
    }
}

#[test]
fn garbage_empty_and_flood_modes() {
    for tool in ["claude", "codex", "gemini"] {
        let out = Run::shipped(tool, "m", CHAT).mode("garbage").ok();
        assert_eq!(out.exit_code, Some(0), "{tool}");
        assert!(!out.stdout.is_empty());
        assert!(serde_json::from_str::<Value>(&out.stdout).is_err(), "{tool}: {}", out.stdout);
        assert!(out.stdout.lines().all(|l| serde_json::from_str::<Value>(l).is_err()), "{tool}");

        let out = Run::shipped(tool, "m", CHAT).mode("empty").ok();
        assert_eq!((out.exit_code, out.stdout.as_str(), out.stderr.as_str()), (Some(0), "", ""), "{tool}");

        let mut flood = Run::shipped(tool, "m", CHAT).mode("flood");
        flood.max_output_bytes = 64 * 1024;
        let err = flood.run().unwrap_err();
        assert_eq!(err.kind, CommandErrorKind::TooMuchOutput, "{tool}: {err:?}");
    }
}

#[test]
fn a_hanging_stand_in_times_out_and_its_child_sleep_is_killed() {
    for tool in ["claude", "codex", "gemini"] {
        let dir = Scratch::new("hang");
        let pidfile = dir.path("child.pid");
        let mut run = Run::shipped(tool, "m", CHAT).mode("hang").env("STANDIN_PIDFILE", &pidfile);
        // Long enough for Python to start and write the pid on a busy machine.
        run.timeout_ms = 2_000;
        let err = hang_guard("a hanging stand-in", move || run.run()).unwrap_err();
        assert_eq!(err.kind, CommandErrorKind::Timeout, "{tool}: {err:?}");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap_or_else(|e| panic!("{tool} did not start its child before the timeout: {e}"))
            .trim()
            .parse()
            .unwrap();
        assert!(gone(pid), "{tool}'s child sleep {pid} survived the timeout");
    }
}
