//! CLI agents as the model, end to end through the `condense` binary: the stand-ins of
//! tests/stand-ins play Claude Code, Codex and Gemini CLI, found on the PATH as the real ones
//! would be. Unix only (the stand-ins are Python scripts, the runner kills process groups).
#![cfg(unix)]

mod common;

use common::{Scratch, gone};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use assert_cmd::Command;
use condense_cli::runner::NativeRunner;
use condense_core::AbortSignal;
use condense_core::tools::{GenericAdapter, ToolAdapter, ToolRegistry, ToolRequest, ToolSource};
use proptest::prelude::*;
use serde_json::Value;

fn root(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path).canonicalize().unwrap()
}

const EXAMPLE: &str = "examples/coding-session.json";

/// `condense` with the stand-ins on the PATH (or not), HOME in the scratch directory.
fn condense(scratch: &Scratch, with_stand_ins: bool, args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("condense").unwrap();
    let path = if with_stand_ins {
        format!("{}:/usr/bin:/bin", root("tests/stand-ins/bin").display())
    } else {
        "/usr/bin:/bin".to_owned()
    };
    cmd.current_dir(root("."))
        .env("PATH", path)
        .env("HOME", &scratch.0)
        .env_remove("STANDIN_MODE")
        .args(args);
    cmd
}

fn output(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

fn log_lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn tools_lists_each_tool_with_where_its_program_is() {
    let scratch = Scratch::new("list");
    let (code, out, _) = output(&mut condense(&scratch, true, &["tools"]));
    assert_eq!(code, 0);
    let claude = root("tests/stand-ins/bin/claude");
    assert!(
        out.contains(&format!("claude-code  Claude Code (shipped): found at {}", claude.display())),
        "{out}"
    );
    assert!(out.contains("    models: sonnet, opus, haiku"), "{out}");

    let (code, out, _) = output(&mut condense(&scratch, false, &["tools", "--json"]));
    assert_eq!(code, 0);
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(
        rows.iter().map(|r| r["id"].as_str().unwrap()).collect::<Vec<_>>(),
        ["claude-code", "codex", "gemini"]
    );
    let codex = &rows[1];
    assert!(codex["found"].is_null());
    let home = scratch.0.display();
    assert_eq!(codex["searched"][0], format!("{home}/.local/bin/codex"));
    assert_eq!(codex["searched"].as_array().unwrap().last().unwrap(), "`codex` on the PATH");
}

#[test]
fn a_bad_tools_file_exits_2_naming_file_line_and_column() {
    let scratch = Scratch::new("bad");
    let bad = scratch.write("tools.yaml", "tools:\n  mine:\n    binary: mine\n    modls: [a]\n");
    let (code, _, err) = output(&mut condense(&scratch, true, &["tools", "--tools-file", &bad]));
    assert_eq!(code, 2);
    assert!(err.contains(&format!("{bad}:4:5: unknown field `modls`")), "{err}");
    let args = [
        "run",
        "--provider",
        "native",
        "--llm",
        "cli",
        "--tool",
        "mine",
        "--model",
        "a",
        "--tools-file",
        &bad,
        EXAMPLE,
    ];
    let (code, _, err) = output(&mut condense(&scratch, true, &args));
    assert_eq!(code, 2);
    assert!(err.contains(":4:5:"), "{err}");
}

#[test]
fn claude_code_writes_the_native_summary_and_its_cost_is_the_runs() {
    let scratch = Scratch::new("claude");
    let log = scratch.path("runs.jsonl");
    let args = [
        "run",
        "--provider",
        "native",
        "--llm",
        "cli",
        "--tool",
        "claude-code",
        "--model",
        "sonnet",
        EXAMPLE,
    ];
    let (code, out, err) = output(condense(&scratch, true, &args).env("STANDIN_LOG", &log));
    assert_eq!(code, 0, "{err}");
    let result: Value = serde_json::from_str(&out).unwrap();
    assert!(result["error"].is_null(), "{}", result["error"]);
    let summary = result["summary"].as_str().unwrap();
    assert!(summary.contains("Summary written by the claude stand-in"), "{summary}");
    let runs = log_lines(&log);
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0]["argv"],
        serde_json::json!(["-p", "--output-format", "json", "--model", "sonnet", "--max-turns", "1"])
    );
    let prompt = runs[0]["stdin"].as_str().unwrap();
    assert!(prompt.starts_with("[system]\n") && prompt.contains("[user]"), "{}", &prompt[..200]);
    // The stand-in reports its own cost; the run's cost is that, not the (zero) prices.
    assert!(result["cost"].as_f64().unwrap() > 0.0, "{}", result["cost"]);
}

#[test]
fn codex_and_gemini_serve_run_and_chat() {
    let scratch = Scratch::new("codex-gemini");
    let args =
        ["run", "--provider", "native", "--llm", "cli", "--tool", "codex", "--model", "gpt-5-codex", EXAMPLE];
    let (code, out, err) = output(&mut condense(&scratch, true, &args));
    assert_eq!(code, 0, "{err}");
    let result: Value = serde_json::from_str(&out).unwrap();
    assert!(result["summary"].as_str().unwrap().contains("codex stand-in"), "{}", result["summary"]);

    let log = scratch.path("runs.jsonl");
    let args = ["chat", "--llm", "cli", "--tool", "gemini", "--model", "gemini-2.5-flash", EXAMPLE];
    let (code, out, err) =
        output(condense(&scratch, true, &args).env("STANDIN_LOG", &log).write_stdin("What is left to do?\n"));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("gemini stand-in"), "{out}");
    // The whole conversation went as one transcript, the new message last.
    let runs = log_lines(&log);
    let prompt = runs[0]["stdin"].as_str().unwrap();
    assert!(
        prompt.ends_with("[user]\nWhat is left to do?"),
        "{}",
        &prompt[prompt.len().saturating_sub(200)..]
    );
    assert_eq!(runs[0]["argv"][0], "-p");
    assert!(err.contains("usage: input_tokens="), "{err}");
}

#[test]
fn unknown_tools_models_and_missing_programs_say_what_exists() {
    let scratch = Scratch::new("unknown");
    let run = |tool: &str, model: &str, stand_ins: bool| {
        let args = ["run", "--provider", "native", "--llm", "cli", "--tool", tool, "--model", model, EXAMPLE];
        output(&mut condense(&scratch, stand_ins, &args))
    };
    let (code, _, err) = run("claud", "sonnet", true);
    assert_eq!(code, 2);
    assert!(err.contains("unknown tool 'claud'; known tools: claude-code, codex, gemini"), "{err}");
    let (code, _, err) = run("codex", "sonnet", true);
    assert_eq!(code, 2);
    assert!(err.contains("tool 'codex' has no model 'sonnet'; its models: gpt-5-codex"), "{err}");
    let (code, _, err) = output(&mut condense(
        &scratch,
        true,
        &["run", "--provider", "native", "--llm", "cli", "--model", "x", EXAMPLE],
    ));
    assert_eq!(code, 2);
    assert!(err.contains("--llm cli needs --tool ID; the tools: claude-code, codex, gemini"), "{err}");

    let (code, out, _) = run("claude-code", "sonnet", false);
    assert_eq!(code, 1);
    let result: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["error"]["kind"], "llm_tool_not_found");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(message.contains("the program `claude` was not found; looked at"), "{message}");
    assert!(message.contains("`claude` on the PATH"), "{message}");
}

#[test]
fn a_failing_tool_is_a_typed_error_with_its_stderr_and_no_secret() {
    let scratch = Scratch::new("fail");
    let tools = scratch.write(
        "tools.yaml",
        "tools:\n  claude-code:\n    binary: claude\n    command_template: \"{binary} -p --output-format json --model {model}\"\n    models: [sonnet]\n    env: { STANDIN_SECRET: \"${MY_CLAUDE_TOKEN}\" }\n    output: { format: json, text: result, error: { when: { is_error: true }, path: result } }\n",
    );
    let args = [
        "run",
        "--provider",
        "native",
        "--llm",
        "cli",
        "--tool",
        "claude-code",
        "--model",
        "sonnet",
        "--tools-file",
        &tools,
        EXAMPLE,
    ];
    let secret = "tok-0123456789-secret";
    let (code, out, err) =
        output(condense(&scratch, true, &args).env("STANDIN_MODE", "auth").env("MY_CLAUDE_TOKEN", secret));
    assert_eq!(code, 1, "{err}");
    assert!(!out.contains(secret) && !err.contains(secret));
    let result: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["error"]["kind"], "llm_tool_failed");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(message.contains("exited with status 1"), "{message}");
    assert!(message.contains("Invalid API key") && message.contains("[redacted]"), "{message}");

    let shipped = [
        "run",
        "--provider",
        "native",
        "--llm",
        "cli",
        "--tool",
        "claude-code",
        "--model",
        "sonnet",
        EXAMPLE,
    ];
    let (code, out, _) = output(condense(&scratch, true, &shipped).env("STANDIN_MODE", "fail"));
    assert_eq!(code, 1);
    let result: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["error"]["kind"], "llm_tool_failed", "{}", result["error"]);
    // The original conversation comes back whole.
    let original: Value = serde_json::from_str(&std::fs::read_to_string(root(EXAMPLE)).unwrap()).unwrap();
    assert_eq!(result["messages"].as_array().unwrap().len(), original["messages"].as_array().unwrap().len());
}

#[test]
fn a_tool_past_its_timeout_is_killed_with_its_children() {
    let scratch = Scratch::new("hang");
    let tools = scratch.write(
        "tools.yaml",
        "tools:\n  slow:\n    binary: claude\n    command_template: \"{binary} -p --output-format json --model {model}\"\n    models: [sonnet]\n    output: { format: json, text: result }\n    timeout_secs: 2\n",
    );
    let pidfile = scratch.path("child.pid");
    let args = [
        "run",
        "--provider",
        "native",
        "--llm",
        "cli",
        "--tool",
        "slow",
        "--model",
        "sonnet",
        "--tools-file",
        &tools,
        EXAMPLE,
    ];
    let (code, out, _) =
        output(condense(&scratch, true, &args).env("STANDIN_MODE", "hang").env("STANDIN_PIDFILE", &pidfile));
    assert_eq!(code, 1);
    let result: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["error"]["kind"], "llm_timeout");
    assert!(result["error"]["message"].as_str().unwrap().contains("longer than 2 s"), "{}", result["error"]);
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert!(gone(pid), "the tool's child {pid} survived the timeout");
}

#[test]
fn the_readmes_tool_entry_is_accepted() {
    let readme = std::fs::read_to_string(root("README.md")).unwrap();
    let start = readme.find("```yaml\ntools:\n  my-llm:").expect("the README shows a tool entry");
    let block = &readme[start + "```yaml\n".len()..];
    let yaml = &block[..block.find("```").unwrap()];
    let scratch = Scratch::new("readme");
    let file = scratch.write("tools.yaml", yaml);
    let (code, out, err) = output(&mut condense(&scratch, true, &["tools", "--tools-file", &file]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("my-llm  My LLM ({file}): not found")), "{out}");
}

#[test]
fn seed_002s_sample_entry_runs_gemini_with_the_prompt_on_stdin() {
    let scratch = Scratch::new("seed-002");
    let sample = root("tests/fixtures/tools/seed-002-gemini-cli.yaml");
    let sample = sample.to_str().unwrap();
    let (code, out, err) = output(&mut condense(&scratch, true, &["tools", "--tools-file", sample]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("gemini-cli  gemini-cli ({sample}): found at")), "{out}");
    let log = scratch.path("runs.jsonl");
    let args = [
        "run",
        "--provider",
        "native",
        "--llm",
        "cli",
        "--tool",
        "gemini-cli",
        "--model",
        "gemini-1.5-pro",
        "--tools-file",
        sample,
        EXAMPLE,
    ];
    let (code, out, err) =
        output(condense(&scratch, true, &args).env("STANDIN_LOG", &log).env("GOOGLE_API_KEY", "test-key"));
    assert_eq!(code, 0, "{err}");
    let result: Value = serde_json::from_str(&out).unwrap();
    assert!(result["error"].is_null(), "{}", result["error"]);
    let summary = result["summary"].as_str().unwrap();
    assert!(summary.contains("Summary written by the gemini stand-in"), "{summary}");
    let runs = log_lines(&log);
    assert_eq!(runs.len(), 1);
    // `< {prompt_file}` is no argument: the prompt arrived on standard input.
    assert_eq!(runs[0]["argv"], serde_json::json!(["--model", "gemini-1.5-pro"]));
    let prompt = runs[0]["stdin"].as_str().unwrap();
    assert!(prompt.starts_with("[system]\n") && prompt.contains("[user]"), "{}", &prompt[..200]);

    // Any other shell operator is refused where it is written, naming it; nothing runs.
    let text = std::fs::read_to_string(sample).unwrap().replace("< {prompt_file}", "| tee log.txt");
    let piped = scratch.write("piped.yaml", &text);
    let column = text.lines().nth(4).unwrap().find("| tee").unwrap() + 1;
    let args = [&args[..9], &["--tools-file", &piped, EXAMPLE]].concat();
    let (code, _, err) = output(condense(&scratch, true, &args).env("STANDIN_LOG", &log));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("{piped}:5:{column}: tools.gemini-cli: command_template: `|` (a pipe")),
        "{err}"
    );
    assert_eq!(log_lines(&log).len(), 1, "nothing ran");
}

/// A program at `path` that writes, to the file named by its last argument (`--out=FILE`), the
/// JSON of its whole argv (its own path first) and of the text of the file named by its fourth
/// argument (the prompt file), read while it runs.
fn argv_reporter(path: &Path) -> String {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let script = "#!/usr/bin/env python3\nimport json, sys\nargs = sys.argv\nout = args[-1][len('--out='):]\n\
                  prompt = open(args[4], encoding='utf-8').read()\n\
                  open(out, 'w', encoding='utf-8').write(json.dumps({'argv': args, 'prompt_file': prompt}))\n";
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_owned()
}

fn hostile() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just(" ".to_owned()),
            Just("'".to_owned()),
            Just("\"".to_owned()),
            Just("$HOME".to_owned()),
            Just("$(touch pwned)".to_owned()),
            Just("`touch pwned`".to_owned()),
            Just("\n".to_owned()),
            Just(";|&><*?".to_owned()),
            Just("{prompt}".to_owned()),
            Just("é🦀".to_owned()),
            "[a-zA-Z0-9._/-]{1,6}",
        ],
        1..8,
    )
    .prop_map(|v| v.concat())
}

/// A hostile value as one file name after `prefix` (any byte but `/` and NUL goes on Linux), never
/// `.` or `..`, and each role's prefix its own, so no two directories meet.
fn file_name(prefix: &str, value: &str) -> String {
    format!("{prefix}{}", value.replace('/', "_"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Through a real process: every value arrives as exactly one argument, byte for byte — the
    /// model, the prompt, the program's own path, the temporary prompt and output files' paths
    /// (made under a directory with a hostile name) — the program runs in a hostile working
    /// directory, reads the prompt file and writes the output file it was named, and nothing a
    /// shell would act on happens (no `pwned` file anywhere).
    #[test]
    fn values_reach_the_program_as_one_argument_each(
        model in hostile(),
        prompt in hostile(),
        dir in hostile(),
        bin_dir in hostile(),
        bin_name in hostile(),
        temp in hostile(),
    ) {
        let scratch = Scratch::new("argv");
        let cwd = scratch.0.join(file_name("cwd ", &dir));
        std::fs::create_dir_all(&cwd).unwrap();
        let program = scratch.0.join(file_name("bin ", &bin_dir)).join(file_name("prog ", &bin_name));
        let binary = argv_reporter(&program);
        let temp_base = scratch.0.join(file_name("tmp ", &temp));
        std::fs::create_dir_all(&temp_base).unwrap();
        let entry = format!(
            "tools:\n  p:\n    binary: {}\n    command_template: \"{{binary}} --model {{model}} --prompt={{prompt}} {{prompt_file}} --out={{output_file}}\"\n    prompt_via: argument\n    models: [{}]\n    output: {{ format: text, source: output_file }}\n",
            serde_json::to_string(&binary).unwrap(),
            serde_json::to_string(&model).unwrap(),
        );
        let registry = ToolRegistry::strict(&[ToolSource { origin: "p.yaml".into(), text: entry }]).unwrap();
        let runner = Rc::new(NativeRunner::with_temp_base(&temp_base));
        let adapter = GenericAdapter::new(registry.get("p").unwrap().clone(), runner);
        let request = ToolRequest { model: model.clone(), prompt: prompt.clone(), cwd: Some(cwd.to_string_lossy().into_owned()) };
        let answer = futures::executor::block_on(adapter.execute(&request, &AbortSignal::new())).unwrap();
        let report: Value = serde_json::from_str(&answer.text).unwrap();
        let argv: Vec<String> = serde_json::from_value(report["argv"].clone()).unwrap();
        prop_assert_eq!(argv.len(), 6, "{:?}", argv);
        prop_assert_eq!(&argv[0], &binary, "the program's path, as one argument");
        prop_assert_eq!(&argv[1..4], &["--model".to_owned(), model, format!("--prompt={prompt}")], "{:?}", argv);
        // The prompt file: one argument, under the hostile directory, holding the prompt.
        let prompt_file = Path::new(&argv[4]);
        prop_assert!(prompt_file.starts_with(&temp_base), "{:?}", prompt_file);
        prop_assert_eq!(report["prompt_file"].as_str(), Some(prompt.as_str()), "the prompt file's text");
        // The output file: one argument too; the answer came back through it.
        let out = argv[5].strip_prefix("--out=").expect("--out=FILE");
        prop_assert!(Path::new(out).starts_with(&temp_base) && out.ends_with("output.txt"), "{}", out);
        prop_assert_eq!(Path::new(out).parent(), prompt_file.parent(), "one private directory");
        // The run's private directory is gone; no shell ever ran anything.
        prop_assert_eq!(std::fs::read_dir(&temp_base).unwrap().count(), 0, "the private directory is removed");
        let pwned = walk(&scratch.0).into_iter().chain(walk(&root("."))).any(|p| p.ends_with("pwned"));
        prop_assert!(!pwned);
    }
}

/// Every path under `dir`, one level down for the repository (its `target` is large).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let deep = dir.starts_with(std::env::temp_dir());
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if deep && path.is_dir() {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out
}
