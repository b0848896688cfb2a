//! Every shell example of README.md runs here, so the README cannot drift from the program.
//!
//! The ```` ```sh ```` blocks are extracted from README.md; each command line (continuation lines
//! joined, comments left to bash) is classified, then run through `bash -c` in a scratch
//! directory where `examples/` is the repository's, with:
//! - `condense` on the PATH: the binary under test; a `cargo run [-q] [--release] -p condense-cli
//!   -- ARGS` line runs as `condense ARGS` (the same program, without a nested cargo build);
//! - the stand-ins of `tests/stand-ins/bin` on the PATH, playing `claude`, `codex` and `gemini`;
//! - test keys in `OPENAI_API_KEY` and `ANTHROPIC_API_KEY`, and `OPENAI_BASE_URL` /
//!   `ANTHROPIC_BASE_URL` (which the CLI honours, as the official SDKs do) pointing at the fixture
//!   server `tests/servers/fixture_llm.py`, started on 127.0.0.1 by this test;
//! - a local server's fixed address in a line (`http://127.0.0.1:11434/v1` for Ollama, `:8080`
//!   for llama.cpp) rewritten, in that line only, to the port of a second fixture server that,
//!   like those servers, needs no key (`--no-auth`): fixed ports may be taken on a shared
//!   machine, and a real Ollama there must not answer the test.
//!
//! A `condense gateway` line starts the gateway for the rest of its block, in the background, on a
//! free port instead of 4141 (`--listen 127.0.0.1:0`; every `127.0.0.1:4141` of the block's later
//! lines rewritten to the port bound, a fixed port may be taken on a shared machine); the block's
//! `curl` lines talk to it, and at the block's end it is stopped with SIGTERM and must exit 0,
//! having written its state (without a key) in the scratch HOME.
//!
//! Lines that are not the CLI's (npm, VS Code, the whole test suite, the protocol generator, an
//! agent started against the gateway) are excluded by pattern, each with its reason; a line that is neither run nor excluded fails the
//! test, so a new kind of example is never skipped silently. Each command must exit 0, print no
//! panic, produce plausible output for its subcommand, and (for an LLM) reach the fixture server
//! or the stand-in.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use common::{HANG_GUARD, Scratch, Server, drain, root};
use serde_json::Value;

/// Lines that this test does not run, by prefix, and why.
const EXCLUDED: &[(&str, &str)] = &[
    ("bash scripts/test-all", "the whole test suite, of which this test is a part"),
    ("npm ", "Node builds and the end-to-end suite, run by scripts/test-all"),
    ("code --install-extension ", "installs into the user's own VS Code"),
    (
        "cargo run -p condense-protocol --bin protocol-gen",
        "rewrites protocol/src/generated.ts; the protocol's staleness test covers it",
    ),
    (
        "ANTHROPIC_BASE_URL=http://127.0.0.1:4141/anthropic claude",
        "starts the real Claude Code through the gateway; tests/agents/gateway.test.mjs does that offline",
    ),
    (
        "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:4141/gemini gemini",
        "starts the real Gemini CLI through the gateway; tests/agents/gateway.test.mjs does that offline",
    ),
];

/// The gateway's default address, which the README's examples use.
const GATEWAY: &str = "127.0.0.1:4141";

/// What the test does with one line.
#[derive(Debug, PartialEq)]
enum Action {
    /// Run this command (the line, or its rewriting).
    Run(String),
    /// Start this command (`condense gateway`) for the rest of the block.
    Serve(String),
    /// Leave it, for this reason.
    Excluded(&'static str),
}

/// Classifies one command line; an error names a line the test does not know how to run.
fn classify(line: &str) -> Result<Action, String> {
    if let Some((_, why)) = EXCLUDED.iter().find(|(prefix, _)| line.starts_with(prefix)) {
        return Ok(Action::Excluded(why));
    }
    if let Some(rest) = line.strip_prefix("cargo run ") {
        let (flags, args) = rest
            .split_once(" -- ")
            .ok_or_else(|| format!("a cargo line without `--` before the CLI's arguments: {line}"))?;
        let flags: Vec<&str> = flags.split_whitespace().collect();
        let package = flags.windows(2).any(|w| w == ["-p", "condense-cli"]);
        let known = flags.iter().all(|f| ["-q", "--release", "-p", "condense-cli"].contains(f));
        if !package || !known {
            return Err(format!("a cargo line this test does not know: {line}"));
        }
        return Ok(Action::Run(format!("condense {args}")));
    }
    if line == "condense gateway" || line.starts_with("condense gateway ") {
        return Ok(Action::Serve(line.to_owned()));
    }
    // `curl -s http://127.0.0.1:4141/stats`: a request to the gateway the block started.
    if line.starts_with(&format!("curl -s http://{GATEWAY}/"))
        && !line.contains(['`', '$', ';', '&', '>', '|'])
    {
        return Ok(Action::Run(line.to_owned()));
    }
    if line.starts_with("condense ") || line == "condense" {
        return Ok(Action::Run(line.to_owned()));
    }
    // `echo "…" | condense chat …`: a message piped into the CLI.
    if let Some((left, right)) = line.split_once(" | ")
        && left.starts_with("echo ")
        && !left.contains(['`', '$', ';', '&', '>'])
        && right.starts_with("condense ")
    {
        return Ok(Action::Run(line.to_owned()));
    }
    Err(format!("a README example this test does not know how to run or exclude: {line}"))
}

/// One command line of a ```` ```sh ```` block: the README's line number and the text.
#[derive(Debug)]
struct Example {
    line: usize,
    text: String,
}

/// The command lines of README.md's sh blocks, continuation lines joined, comment-only and blank
/// lines left out. Each block is a list, run in order in one directory.
fn sh_blocks(readme: &str) -> Vec<Vec<Example>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<Example>> = None;
    let mut pending: Option<Example> = None;
    for (i, raw) in readme.lines().enumerate() {
        let trimmed = raw.trim();
        match &mut current {
            None if trimmed == "```sh" => current = Some(Vec::new()),
            None => {}
            Some(_) if trimmed == "```" => {
                assert!(pending.is_none(), "README line {}: a block ends inside a continued line", i + 1);
                blocks.push(current.take().unwrap());
            }
            Some(block) => {
                let (text, continued) = match trimmed.strip_suffix('\\') {
                    Some(head) => (head.trim_end(), true),
                    None => (trimmed, false),
                };
                let example = match pending.take() {
                    Some(mut e) => {
                        e.text.push(' ');
                        e.text.push_str(text);
                        e
                    }
                    None if text.is_empty() || text.starts_with('#') => continue,
                    None => Example { line: i + 1, text: text.to_owned() },
                };
                if continued {
                    pending = Some(example);
                } else {
                    block.push(example);
                }
            }
        }
    }
    assert!(current.is_none(), "README.md ends inside a sh block");
    blocks
}

/// The lines of README.md's ```` ```text ```` blocks (the shapes of what the CLI prints).
fn text_lines(readme: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut inside = false;
    for raw in readme.lines() {
        match raw.trim() {
            "```text" => inside = true,
            "```" => inside = false,
            line if inside && !line.is_empty() => lines.push(line.to_owned()),
            _ => {}
        }
    }
    lines
}

/// A line with each number (digits, with `,` and `.` inside) replaced by `N`: its shape.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars.peek().is_some_and(|c| c.is_ascii_digit() || *c == ',' || *c == '.') {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out
}

/// Rewrites every `http://127.0.0.1:PORT` of a line to the fixture server's port, but the
/// gateway's (4141), which is the gateway's own to rewrite.
fn to_fixture(command: &str, port: u16) -> String {
    let mut out = String::new();
    let mut rest = command;
    const HOST: &str = "http://127.0.0.1:";
    while let Some(at) = rest.find(HOST) {
        out.push_str(&rest[..at + HOST.len()]);
        rest = &rest[at + HOST.len()..];
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if format!("127.0.0.1:{}", &rest[..digits]) == GATEWAY {
            out.push_str(&rest[..digits]);
        } else {
            out.push_str(&port.to_string());
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// The subcommand of the `condense` a command runs (`curl` for a request to the gateway).
fn subcommand(command: &str) -> &str {
    if command.starts_with("curl ") {
        return "curl";
    }
    let after = command.split("condense ").nth(1).unwrap_or("");
    after.split_whitespace().next().unwrap_or("")
}

/// The file a command writes its output to instead of stdout (`> FILE`, `-o FILE`), if any.
fn redirect(command: &str) -> Option<&str> {
    let (_, after) = [" > ", " -o ", " --output "].iter().find_map(|sep| command.split_once(sep))?;
    after.split_whitespace().next()
}

/// What a finished command produced.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

struct Setup {
    scratch: Scratch,
    /// Behind OPENAI_BASE_URL and ANTHROPIC_BASE_URL; it wants a key, as the vendors' APIs do.
    server: Server,
    /// In place of a local server: no key needed.
    local: Server,
    path: String,
    standin_log: String,
}

impl Setup {
    fn new() -> Setup {
        let scratch = Scratch::new("readme");
        std::os::unix::fs::symlink(root("examples"), scratch.path("examples")).unwrap();
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_condense")).parent().unwrap().to_owned();
        let path = format!("{}:{}:/usr/bin:/bin", bin.display(), root("tests/stand-ins/bin"));
        let standin_log = scratch.path("stand-ins.log");
        Setup {
            scratch,
            server: Server::fixture(),
            local: Server::fixture_with(&["--no-auth"]),
            path,
            standin_log,
        }
    }

    /// `bash -c COMMAND` in the scratch directory, with the test's environment.
    fn bash(&self, command: &str) -> Command {
        let port = self.server.port;
        let mut bash = Command::new("bash");
        bash.arg("-c")
            .arg(format!("set -euo pipefail\n{command}"))
            .current_dir(&self.scratch.0)
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.scratch.0)
            .env("LANG", "C.UTF-8")
            // The stand-ins are Python: no bytecode cache written into the repository.
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("OPENAI_API_KEY", "readme-test-openai-key")
            .env("ANTHROPIC_API_KEY", "readme-test-anthropic-key")
            .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
            .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
            .env("STANDIN_LOG", &self.standin_log);
        bash
    }

    fn run(&self, command: &str) -> Ran {
        let out = self.bash(command).output().unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Ran { code: out.status.code(), stdout: text(&out.stdout), stderr: text(&out.stderr) }
    }

    /// Starts a `condense gateway` line on a free port; the gateway, or why it did not start.
    fn serve(&self, command: &str) -> Result<Gateway, String> {
        let listen = format!("--listen {GATEWAY}");
        let command = match command.contains(&listen) {
            true => command.replacen(&listen, "--listen 127.0.0.1:0", 1),
            false => command.replacen("condense gateway", "condense gateway --listen 127.0.0.1:0", 1),
        };
        let mut child = self
            .bash(&format!("exec {command}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let stderr = drain(child.stderr.take().unwrap());
        let mut first = String::new();
        let _ = stdout.read_line(&mut first);
        let port = first.trim().strip_prefix("listening on http://127.0.0.1:").and_then(|p| p.parse().ok());
        let banner = drain(stdout);
        let mut gateway = Gateway { child, port: port.unwrap_or(0), banner, stderr };
        if port.is_none() {
            return Err(format!("`{command}` did not start: {first:?}\n{}", gateway.output()));
        }
        // The banner's last line ("Statistics: … Health: …"), read on the drain's thread.
        let until = std::time::Instant::now() + HANG_GUARD;
        while !gateway.banner.lock().unwrap().contains("Health: ") {
            if gateway.child.try_wait().unwrap().is_some() || std::time::Instant::now() > until {
                return Err(format!("`{command}` printed no whole banner\n{}", gateway.output()));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(gateway)
    }

    fn standin_runs(&self) -> usize {
        std::fs::read_to_string(&self.standin_log).map_or(0, |log| log.lines().count())
    }
}

/// A gateway a block started: stopped (SIGTERM, then reaped) at the block's end, or killed
/// when dropped.
struct Gateway {
    child: Child,
    port: u16,
    banner: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Gateway {
    fn output(&self) -> String {
        format!("--- stdout:\n{}--- stderr:\n{}", self.banner.lock().unwrap(), self.stderr.lock().unwrap())
    }

    /// Stops the gateway as Ctrl-C would (SIGTERM); an error says what went wrong.
    fn stop(mut self) -> Result<(), String> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).map_err(|e| e.to_string())?;
        let until = std::time::Instant::now() + HANG_GUARD;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > until {
                return Err(format!("the gateway did not stop on SIGTERM\n{}", self.output()));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        if status.code() != Some(0) {
            return Err(format!("the gateway exited with {status} on SIGTERM\n{}", self.output()));
        }
        Ok(())
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Checks that what a command printed is what its subcommand prints; an error says what is wrong.
fn plausible(command: &str, output: &str, ran: &Ran) -> Result<(), String> {
    let json = || serde_json::from_str::<Value>(output).map_err(|e| format!("the output is not JSON: {e}"));
    match subcommand(command) {
        "run" => {
            let result = json()?;
            if !result["error"].is_null() {
                return Err(format!("the run failed: {}", result["error"]));
            }
            if !result["new_context_tokens"].is_u64() || !result["messages"].is_array() {
                return Err("not a CondensationResult".into());
            }
        }
        "count" => {
            json()?["total_tokens"].as_u64().ok_or("no total_tokens")?;
        }
        "view" | "undo" => {
            json()?["messages"].as_array().ok_or("no messages")?;
        }
        "recall" => {
            if output.trim().is_empty() || output.contains("by Context Condenser") {
                return Err("not an original the condensation hid".into());
            }
        }
        "providers" => {
            json()?.as_array().filter(|a| !a.is_empty()).ok_or("no providers")?;
        }
        "schema" => {
            json()?["$schema"].as_str().ok_or("not a JSON Schema")?;
        }
        "tools" => {
            for id in ["claude-code", "codex", "gemini"] {
                if !output.contains(&format!("{id}  ")) {
                    return Err(format!("{id} is not listed"));
                }
            }
        }
        "curl" => {
            let path = command
                .split("127.0.0.1:")
                .nth(1)
                .and_then(|r| r.split_once('/'))
                .map_or("", |(_, p)| p.split_whitespace().next().unwrap_or(""));
            let value = json()?;
            match path {
                "healthz" if value["status"] == "ok" => {}
                "stats" if value["totals"]["requests"].is_u64() && value["sessions"].is_object() => {}
                p if (p.starts_with("openai/") || p.starts_with("anthropic/"))
                    && value.get("error").is_none() => {}
                _ => return Err(format!("not the gateway's answer to /{path}")),
            }
        }
        "replay" => {
            let lines: Vec<&str> = output.lines().collect();
            if lines.is_empty() {
                return Err("no policy reported".into());
            }
            for line in lines {
                let ok = match serde_json::from_str::<Value>(line) {
                    Ok(v) => v["input_cost"].is_f64() && v["policy"].is_string(),
                    Err(_) => line.contains(" input $") && line.contains(" condensations"),
                };
                if !ok {
                    return Err(format!("not a policy's bill: {line}"));
                }
            }
        }
        "chat" => {
            if output.trim().is_empty() {
                return Err("no answer".into());
            }
            if !ran.stderr.contains("usage: ") {
                return Err("no usage line on stderr".into());
            }
        }
        other => return Err(format!("this test has no check for `condense {other}`: add one")),
    }
    Ok(())
}

#[test]
fn every_shell_example_in_the_readme_runs() {
    let readme = std::fs::read_to_string(root("README.md")).unwrap();
    let blocks = sh_blocks(&readme);
    assert!(blocks.len() >= 4, "the README's sh blocks were found: {blocks:?}");
    let shown: Vec<String> = text_lines(&readme).iter().map(|l| shape(l)).collect();
    let mut summaries = 0;
    let setup = Setup::new();
    let mut failures = Vec::new();
    let mut ran_count = 0;
    let mut gateways = 0;
    for block in &blocks {
        // The gateway this block started, serving its later lines.
        let mut gateway: Option<(usize, Gateway)> = None;
        for example in block {
            let command = match classify(&example.text) {
                Ok(Action::Excluded(_)) => continue,
                Ok(Action::Run(command)) => to_fixture(&command, setup.local.port),
                Ok(Action::Serve(command)) => {
                    let command = to_fixture(&command, setup.local.port);
                    if gateway.is_some() {
                        failures.push(format!("README line {}: a second gateway in one block", example.line));
                        continue;
                    }
                    match setup.serve(&command) {
                        Ok(g) => {
                            // The banner names the lines the README shows (on the port bound).
                            let banner =
                                format!("ANTHROPIC_BASE_URL=http://127.0.0.1:{}/anthropic claude", g.port);
                            let output = g.output();
                            for shown in [banner.as_str(), "wire_api = \"responses\"", "/openai/v1"] {
                                if !output.contains(shown) {
                                    failures.push(format!(
                                        "README line {}: the gateway does not print {shown:?}\n{output}",
                                        example.line
                                    ));
                                }
                            }
                            gateway = Some((example.line, g));
                            gateways += 1;
                        }
                        Err(e) => failures.push(format!("README line {}: {e}", example.line)),
                    }
                    continue;
                }
                Err(e) => {
                    failures.push(format!("README line {}: {e}", example.line));
                    continue;
                }
            };
            let command = match (&gateway, command.contains(GATEWAY)) {
                (Some((_, g)), true) => command.replace(GATEWAY, &format!("127.0.0.1:{}", g.port)),
                (None, true) => {
                    failures.push(format!("README line {}: no gateway runs for `{command}`", example.line));
                    continue;
                }
                (_, false) => command,
            };
            // The server an LLM line must reach.
            let llm = if command.contains("--llm openai-compatible ") {
                Some(&setup.local)
            } else if (command.contains("--llm openai ") || command.contains("--llm anthropic "))
                // A replay through the gateway's core names the model for its prices and asks it
                // nothing (the gateway condenses with `smart`).
                && !command.contains(" --through-gateway")
            {
                Some(&setup.server)
            } else {
                None
            };
            // A request through the gateway reaches its upstream: the local server of its block.
            let llm = llm.or_else(|| {
                (command.starts_with("curl ")
                    && (command.contains("/openai/v1/") || command.contains("/anthropic/")))
                .then_some(&setup.local)
            });
            let tool = command.contains("--llm cli ");
            let requests = llm.map(|server| server.requests().len());
            let standins = setup.standin_runs();
            let ran = setup.run(&command);
            ran_count += 1;
            let output = match redirect(&command) {
                Some(file) => std::fs::read_to_string(setup.scratch.path(file)).unwrap_or_default(),
                None => ran.stdout.clone(),
            };
            let mut problems = Vec::new();
            if ran.code != Some(0) {
                problems.push(format!("exit {:?}", ran.code));
            }
            if ran.stderr.contains("panicked") {
                problems.push("a panic".to_owned());
            }
            if let Err(e) = plausible(&command, &output, &ran) {
                problems.push(e);
            }
            // `run --summary`'s line has the shape of the one the README shows.
            if command.contains(" --summary") {
                summaries += 1;
                let line = ran.stderr.lines().last().unwrap_or_default();
                if !shown.contains(&shape(line)) {
                    problems.push(format!("the summary line {line:?} is not shaped as the README shows"));
                }
            }
            if llm.is_some_and(|server| Some(server.requests().len()) == requests) {
                problems.push("no request reached the fixture server".to_owned());
            }
            if tool && setup.standin_runs() == standins {
                problems.push("the stand-in did not run".to_owned());
            }
            if !problems.is_empty() {
                failures.push(format!(
                    "README line {}: `{command}`: {}\n--- stdout (first 2,000 bytes):\n{}\n--- stderr:\n{}",
                    example.line,
                    problems.join("; "),
                    output.chars().take(2000).collect::<String>(),
                    ran.stderr
                ));
            }
        }
        if let Some((line, g)) = gateway.take() {
            if let Err(e) = g.stop() {
                failures.push(format!("README line {line}: {e}"));
            }
            // Its state, written on the way out: the sessions, never a key.
            let dir = setup.scratch.path(".local/share/context-condenser/gateway");
            let state = format!("{dir}/state.json");
            match std::fs::read_to_string(&state)
                .map(|_| common::gateway::state_text(std::path::Path::new(&dir)))
            {
                Ok(text) if text.contains("readme-test-") => {
                    failures.push(format!("README line {line}: a key in the gateway's state"));
                }
                Ok(_) => {}
                Err(e) => failures.push(format!("README line {line}: no state written ({state}): {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} README example(s) failed:\n\n{}", failures.len(), failures.join("\n\n"));
    assert!(ran_count >= 10, "only {ran_count} examples ran");
    assert!(summaries >= 1, "an example shows --summary");
    assert!(gateways >= 1, "an example starts the gateway");
}

#[test]
fn the_classifier_knows_each_kind_of_line_and_refuses_the_rest() {
    assert_eq!(
        classify("cargo run -q --release -p condense-cli -- run --provider truncation x.json"),
        Ok(Action::Run("condense run --provider truncation x.json".into()))
    );
    assert_eq!(classify("condense tools"), Ok(Action::Run("condense tools".into())));
    let chat = r#"echo "What next?" | condense chat --llm openai --model m x.json"#;
    assert_eq!(classify(chat), Ok(Action::Run(chat.into())));
    assert!(matches!(classify("npm run test:e2e"), Ok(Action::Excluded(_))));
    assert_eq!(
        classify("condense gateway --observe   # note"),
        Ok(Action::Serve("condense gateway --observe   # note".into()))
    );
    let stats = "curl -s http://127.0.0.1:4141/stats";
    assert_eq!(classify(stats), Ok(Action::Run(stats.into())));
    assert!(matches!(
        classify("ANTHROPIC_BASE_URL=http://127.0.0.1:4141/anthropic claude"),
        Ok(Action::Excluded(_))
    ));
    assert!(matches!(classify("bash scripts/test-all --quick"), Ok(Action::Excluded(_))));
    for unknown in [
        "rm -rf examples",
        "python3 scripts/make-eval-fixtures.py",
        "cargo run -p condense-core",
        "cargo run --features x -p condense-cli -- run x.json",
        "cat x.json | condense count -",
        "echo $(whoami) | condense chat x.json",
        "condensed run",
        "curl -s https://api.openai.com/v1/models",
        "curl -s http://127.0.0.1:4141/stats | sh",
        "ANTHROPIC_BASE_URL=http://127.0.0.1:4141/anthropic rm -rf x",
    ] {
        assert!(classify(unknown).is_err(), "{unknown} must not be classified");
    }
}

#[test]
fn blocks_are_extracted_with_continuations_joined() {
    let text =
        "intro\n```sh\n# a comment\ncondense a \\\n  --b c   # d\n\ncondense e\n```\n```json\n{}\n```\n";
    let blocks = sh_blocks(text);
    assert_eq!(blocks.len(), 1);
    let lines: Vec<(usize, &str)> = blocks[0].iter().map(|e| (e.line, e.text.as_str())).collect();
    assert_eq!(lines, [(4, "condense a --b c   # d"), (7, "condense e")]);
    assert_eq!(
        to_fixture("--base-url http://127.0.0.1:11434/v1 x http://127.0.0.1:8080", 5),
        "--base-url http://127.0.0.1:5/v1 x http://127.0.0.1:5"
    );
    assert_eq!(
        to_fixture("--openai-upstream http://127.0.0.1:11434/v1; curl http://127.0.0.1:4141/stats", 5),
        "--openai-upstream http://127.0.0.1:5/v1; curl http://127.0.0.1:4141/stats",
        "the gateway's port is the gateway's to rewrite"
    );
    assert_eq!(redirect("condense run x.json > out.json"), Some("out.json"));
    assert_eq!(redirect("condense run x.json -o out.json --summary"), Some("out.json"));
    assert_eq!(redirect("condense count x.json"), None);
    assert_eq!(subcommand(r#"echo "q" | condense chat --llm openai"#), "chat");
    assert_eq!(shape("a: 8,861 → 1,970 tokens (−78%) · 26.1 ms"), "a: N → N tokens (−N%) · N ms");
}

/// The ledger README.md shows for its first command is the one that command writes today:
/// every line of the excerpt (its `…` elisions aside) is a line of the ledger, in order.
#[test]
fn the_readmes_ledger_is_the_first_commands() {
    let readme = std::fs::read_to_string(root("README.md")).unwrap();
    let marker = "This is the ledger of the\nREADME's first command";
    let at = readme.find(marker).expect("the README shows a ledger");
    let block = &readme[at..];
    let start = block.find("```text\n").expect("in a text block") + "```text\n".len();
    let end = start + block[start..].find("\n```").unwrap();
    let shown: Vec<&str> = block[start..end].lines().filter(|l| *l != "…").collect();
    let out = Command::new(env!("CARGO_BIN_EXE_condense"))
        .args(["run", "--provider", "truncation", "--target-tokens", "2000"])
        .arg(root("examples/coding-session.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ledger = result["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("condense_parent").is_none())
        .flat_map(|m| m["content"].as_array().unwrap())
        .find_map(|b| b["text"].as_str().filter(|t| t.starts_with("<context_condenser_ledger>")))
        .expect("the run writes a ledger");
    let lines: Vec<&str> = ledger.lines().collect();
    let mut from = 0;
    for line in shown {
        let found = lines[from..].iter().position(|l| *l == line);
        let Some(k) = found else {
            panic!("README's ledger line {line:?} is not the command's, in order:\n{ledger}")
        };
        from += k + 1;
    }
}

/// The README's first command, run at a terminal (a pseudo-terminal from util-linux's `script`),
/// tells a person what happened; with `--json` it prints the CondensationResult as before, and
/// so it does whenever stdout is not a terminal (scripts keep working).
#[test]
fn the_first_command_talks_to_people_at_a_terminal() {
    let binary = env!("CARGO_BIN_EXE_condense");
    let example = root("examples/coding-session.json");
    let at_terminal = |extra: &str| {
        let line = format!("{binary} run --provider truncation --target-tokens 2000 {example}{extra}");
        let out =
            Command::new("script").args(["-qec", &line, "/dev/null"]).output().expect("util-linux's script");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n")
    };
    let report = at_terminal("");
    let first = report.lines().next().unwrap();
    assert!(first.starts_with("truncation: 8,861 → ") && first.contains(" tokens (−"), "{report}");
    assert!(report.contains("  target 2,000 tokens: met"), "{report}");
    assert!(report.contains("  the ledger of what it hid ("), "{report}");
    assert!(report.contains("  nothing written: `-o FILE` saves the condensed conversation"), "{report}");
    assert!(!report.contains("\"messages\""), "no JSON for a person: {report}");
    // The report README.md shows is this one (the time aside).
    let readme = std::fs::read_to_string(root("README.md")).unwrap();
    let at = readme.find("The first command's report, at a terminal:").expect("the README shows the report");
    let block = &readme[at..];
    let start = block.find("```text\n").unwrap() + "```text\n".len();
    let shown = &block[start..start + block[start..].find("\n```").unwrap()];
    let untimed = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| {
                l.rsplit_once(" · ")
                    .filter(|(_, t)| t.ends_with(" ms"))
                    .map_or(l, |(head, _)| head)
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(untimed(shown), untimed(&report), "README.md's report is not the command's");
    // (The one summary line that follows it is stderr's, which the terminal shows too.)
    let printed = at_terminal(" --json");
    let json: Value = serde_json::Deserializer::from_str(&printed)
        .into_iter()
        .next()
        .expect("a document")
        .expect("--json prints the result");
    assert!(printed.trim_end().ends_with("ms"), "the summary line last: {printed}");
    assert!(json["new_context_tokens"].as_u64().unwrap() <= 2000);
    // Not a terminal: the JSON, as before.
    let piped = Command::new(binary)
        .args(["run", "--provider", "truncation", "--target-tokens", "2000"])
        .arg(&example)
        .output()
        .unwrap();
    let piped: Value = serde_json::from_slice(&piped.stdout).expect("JSON when piped");
    assert_eq!(piped["new_context_tokens"], json["new_context_tokens"]);
}
