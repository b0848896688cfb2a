//! The generic adapter against a scripted command runner: what it asks the host to run, and how
//! it reads every way a program can end.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use futures::executor::block_on;
use serde_json::json;

use condense_core::host::{
    AbortSignal, ArgPart, CommandError, CommandErrorKind, CommandOutput, CommandRunner, CommandSpec,
};
use condense_core::llm::{CliLlm, LlmProvider, ModelUse, PromptBundle, collect};
use condense_core::profile::{LlmKind, LlmProfile, Usage};
use condense_core::tools::*;
use condense_core::{ErrorKind, TokenCounter};

/// A host with a file system of executables, an environment, and scripted runs.
#[derive(Default)]
struct Host {
    /// `linux` when empty.
    platform: String,
    executables: Vec<String>,
    /// Files the host reads for the core (`read_text`).
    files: BTreeMap<String, String>,
    env: BTreeMap<String, String>,
    outcomes: RefCell<VecDeque<Result<CommandOutput, CommandError>>>,
    runs: RefCell<Vec<CommandSpec>>,
}

impl Host {
    fn with(executables: &[&str]) -> Self {
        let mut env = BTreeMap::new();
        env.insert("HOME".to_owned(), "/home/ann".to_owned());
        Host { executables: executables.iter().map(|s| (*s).to_owned()).collect(), env, ..Host::default() }
    }

    fn answer(self, stdout: &str, exit: i32, stderr: &str) -> Self {
        self.outcomes.borrow_mut().push_back(Ok(CommandOutput {
            exit_code: Some(exit),
            stdout: stdout.into(),
            stderr: stderr.into(),
            output_file: None,
        }));
        self
    }

    fn fail(self, kind: CommandErrorKind, stderr: &str) -> Self {
        let mut e = CommandError::new(kind, "it failed");
        e.stderr = stderr.into();
        self.outcomes.borrow_mut().push_back(Err(e));
        self
    }
}

#[async_trait::async_trait(?Send)]
impl CommandRunner for Host {
    fn platform(&self) -> String {
        if self.platform.is_empty() { "linux".into() } else { self.platform.clone() }
    }
    fn env_var(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }
    fn locate(&self, program: &str) -> Option<String> {
        let path =
            if program.contains(['/', '\\']) { program.to_owned() } else { format!("/usr/bin/{program}") };
        self.executables.contains(&path).then_some(path)
    }
    async fn run(&self, spec: CommandSpec, _abort: &AbortSignal) -> Result<CommandOutput, CommandError> {
        self.runs.borrow_mut().push(spec);
        self.outcomes.borrow_mut().pop_front().expect("a scripted outcome")
    }
    fn read_text(&self, path: &str, max_bytes: usize) -> Option<String> {
        assert_eq!(max_bytes, condense_core::host::MAX_SHIM_BYTES, "the core asks with its limit");
        self.files.get(path).cloned()
    }
}

fn adapter(id: &str, host: Host) -> (GenericAdapter, Rc<Host>) {
    let host = Rc::new(host);
    let entry = ToolRegistry::shipped().get(id).unwrap().clone();
    (GenericAdapter::new(entry, Rc::clone(&host) as Rc<dyn CommandRunner>), host)
}

fn request(model: &str, prompt: &str) -> ToolRequest {
    ToolRequest { model: model.into(), prompt: prompt.into(), cwd: Some("/work".into()) }
}

fn text(s: &str) -> Vec<ArgPart> {
    vec![ArgPart::Text { text: s.into() }]
}

fn claude_json(result: &str) -> String {
    json!({"type": "result", "subtype": "success", "is_error": false, "result": result, "total_cost_usd": 0.02,
        "usage": {"input_tokens": 900, "output_tokens": 40}, "modelUsage": {"claude-sonnet-4-5-20250929": {}}})
    .to_string()
}

#[test]
fn claude_code_runs_as_an_argv_with_the_prompt_on_stdin() {
    let (tool, host) =
        adapter("claude-code", Host::with(&["/usr/bin/claude"]).answer(&claude_json("Done."), 0, ""));
    let answer =
        block_on(tool.execute(&request("sonnet", "Summarize \"this\"; $HOME `x`"), &AbortSignal::new()))
            .unwrap();
    assert_eq!(answer.text, "Done.");
    assert_eq!(answer.usage, Some(Usage::new(900, 40)));
    assert_eq!(answer.cost_usd, Some(0.02));
    assert_eq!(answer.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    let runs = host.runs.borrow();
    let spec = &runs[0];
    assert_eq!(spec.program, "/usr/bin/claude");
    let expected: Vec<Vec<ArgPart>> =
        ["-p", "--output-format", "json", "--model", "sonnet", "--max-turns", "1"]
            .iter()
            .map(|a| text(a))
            .collect();
    assert_eq!(spec.args, expected);
    assert_eq!(spec.stdin.as_deref(), Some("Summarize \"this\"; $HOME `x`"));
    assert_eq!((spec.prompt_file.is_none(), spec.output_file), (true, false));
    assert_eq!((spec.cwd.as_deref(), spec.timeout_ms), (Some("/work"), 600_000));
}

#[test]
fn the_platforms_paths_come_first_with_home_expanded() {
    let (tool, _) = adapter("claude-code", Host::with(&["/home/ann/.local/bin/claude", "/usr/bin/claude"]));
    let found = tool.locate();
    assert_eq!(found.found.as_deref(), Some("/home/ann/.local/bin/claude"));
    assert_eq!(found.searched, ["/home/ann/.claude/local/claude"]);
}

#[test]
fn a_missing_program_says_where_it_was_looked_for() {
    let (tool, host) = adapter("codex", Host::with(&[]));
    let e = block_on(tool.execute(&request("gpt-5-codex", "hi"), &AbortSignal::new())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmToolNotFound);
    assert!(e.message.contains("the program `codex` was not found"), "{}", e.message);
    assert!(
        e.message
            .contains("/home/ann/.local/bin/codex, /home/ann/.npm-global/bin/codex, `codex` on the PATH"),
        "{}",
        e.message
    );
    assert!(host.runs.borrow().is_empty());
}

#[test]
fn an_unknown_model_names_the_tools_models_and_runs_nothing() {
    let (tool, host) = adapter("gemini", Host::with(&["/usr/bin/gemini"]));
    let e = block_on(tool.execute(&request("gpt-4o", "hi"), &AbortSignal::new())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmConfig);
    assert!(e.message.contains("its models: gemini-2.5-pro, gemini-2.5-flash"), "{}", e.message);
    assert!(host.runs.borrow().is_empty());
}

#[test]
fn a_non_zero_exit_carries_the_tail_of_stderr_without_secrets() {
    let yaml = "tools:\n  mine:\n    binary: mine\n    command_template: \"{binary} --model {model}\"\n    models: [m]\n    env: { MY_KEY: \"${SECRET}\", UNSET: \"${NOPE}\" }\n    output: { format: text }\n";
    let entry = parse_tools(&ToolSource { origin: "u.yaml".into(), text: yaml.into() }).unwrap().remove(0);
    let mut host = Host::with(&["/usr/bin/mine"]);
    host.env.insert("SECRET".into(), "hunter2-very-secret".into());
    let stderr = (1..=30).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n")
        + "\nInvalid API key hunter2-very-secret · Please run /login\n";
    let host = Rc::new(host.answer("", 1, &stderr));
    let tool = GenericAdapter::new(entry, Rc::clone(&host) as Rc<dyn CommandRunner>);
    let e = block_on(tool.execute(&request("m", "hi"), &AbortSignal::new())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmToolFailed);
    assert!(e.message.starts_with("mine: the tool exited with status 1"), "{}", e.message);
    assert!(e.message.contains("Invalid API key [redacted] · Please run /login"), "{}", e.message);
    assert!(!e.message.contains("hunter2") && !e.message.contains("line 1\n"), "{}", e.message);
    // Only the variable that is set is passed.
    assert_eq!(host.runs.borrow()[0].env, [("MY_KEY".to_owned(), "hunter2-very-secret".to_owned())]);
}

#[test]
fn every_way_a_run_ends_is_typed() {
    let cases: Vec<(Host, ErrorKind, &str)> = vec![
        (
            Host::with(&["/usr/bin/claude"]).fail(CommandErrorKind::Timeout, "partial"),
            ErrorKind::LlmTimeout,
            "longer than 600 s",
        ),
        (
            Host::with(&["/usr/bin/claude"]).fail(CommandErrorKind::Cancelled, ""),
            ErrorKind::LlmCancelled,
            "cancelled",
        ),
        (
            Host::with(&["/usr/bin/claude"]).fail(CommandErrorKind::TooMuchOutput, ""),
            ErrorKind::LlmToolFailed,
            "more than 32 MB",
        ),
        (
            Host::with(&["/usr/bin/claude"]).fail(CommandErrorKind::Spawn, ""),
            ErrorKind::LlmToolFailed,
            "cannot start",
        ),
        (
            Host::with(&["/usr/bin/claude"]).answer("Segmentation fault", 0, ""),
            ErrorKind::LlmMalformedStream,
            "not JSON",
        ),
        (
            Host::with(&["/usr/bin/claude"]).answer("{\"type\":\"result\"}", 0, "warn"),
            ErrorKind::LlmMalformedStream,
            "without an answer at `result`\nwarn",
        ),
        (
            Host::with(&["/usr/bin/claude"]).answer(
                &json!({"is_error": true, "result": "Credit balance is too low"}).to_string(),
                1,
                "",
            ),
            ErrorKind::LlmToolFailed,
            "exited with status 1: Credit balance is too low",
        ),
        (
            Host::with(&["/usr/bin/claude"]).answer(
                &json!({"is_error": true, "result": "overloaded"}).to_string(),
                0,
                "",
            ),
            ErrorKind::LlmToolFailed,
            "reported an error: overloaded",
        ),
    ];
    for (host, kind, says) in cases {
        let (tool, _) = adapter("claude-code", host);
        let e = block_on(tool.execute(&request("opus", "hi"), &AbortSignal::new())).unwrap_err();
        assert_eq!(e.kind, kind, "{}", e.message);
        assert!(e.message.contains(says), "{:?} should contain {says:?}", e.message);
    }
}

#[test]
fn prompt_files_output_files_and_arguments_are_what_the_template_says() {
    let yaml = "tools:\n  f:\n    binary: /opt/f\n    command_template: \"{binary} --in {prompt_file} --out={output_file}\"\n    prompt_via: file\n    models: [m]\n    output: { format: text, source: output_file }\n  a:\n    binary: a\n    command_template: \"{binary} {prompt}\"\n    prompt_via: argument\n    models: [m]\n    output: { format: text }\n";
    let mut entries = parse_tools(&ToolSource { origin: "u.yaml".into(), text: yaml.into() }).unwrap();
    let host = Rc::new(Host::with(&["/opt/f", "/usr/bin/a"]));
    host.outcomes.borrow_mut().push_back(Ok(CommandOutput {
        exit_code: Some(0),
        stdout: "progress noise".into(),
        stderr: String::new(),
        output_file: Some("  The answer.\n".into()),
    }));
    let runner = Rc::clone(&host) as Rc<dyn CommandRunner>;
    let a = GenericAdapter::new(entries.remove(0), Rc::clone(&runner));
    let f = GenericAdapter::new(entries.remove(0), runner);
    let answer = block_on(f.execute(&request("m", "the prompt"), &AbortSignal::new())).unwrap();
    assert_eq!(answer.text, "The answer.");
    {
        let runs = host.runs.borrow();
        assert_eq!(runs[0].args[1], [ArgPart::PromptFile]);
        assert_eq!(runs[0].args[2], [ArgPart::Text { text: "--out=".into() }, ArgPart::OutputFile]);
        assert_eq!(
            (runs[0].prompt_file.as_deref(), runs[0].output_file, runs[0].stdin.as_deref()),
            (Some("the prompt"), true, None)
        );
    }
    let long = "x".repeat(MAX_PROMPT_ARGUMENT_BYTES + 1);
    let e = block_on(a.execute(&request("m", &long), &AbortSignal::new())).unwrap_err();
    assert!(
        e.kind == ErrorKind::LlmConfig && e.message.contains("prompt_via: stdin or file"),
        "{}",
        e.message
    );
}

/// Seed 002's sample entry, copied verbatim from the seed.
const SEED_002_SAMPLE: &str = include_str!("../../../tests/fixtures/tools/seed-002-gemini-cli.yaml");

#[test]
fn seed_002s_sample_loads_and_runs_with_the_prompt_on_stdin() {
    let source = ToolSource { origin: "seed-002.yaml".into(), text: SEED_002_SAMPLE.into() };
    let registry = ToolRegistry::strict(&[source]).unwrap();
    let entry = registry.get("gemini-cli").unwrap();
    assert_eq!(entry.config.models, ["gemini-1.5-pro", "gemini-1.5-flash"]);
    assert_eq!(
        (entry.config.output.format, entry.config.output.source),
        (OutputFormat::Text, OutputSource::Stdout)
    );
    let mut host = Host::with(&["/usr/bin/gemini"]);
    host.env.insert("GOOGLE_API_KEY".into(), "AIza-test-key".into());
    let host = Rc::new(host.answer("  The answer, as plain text.\n", 0, ""));
    let tool = GenericAdapter::new(entry.clone(), Rc::clone(&host) as Rc<dyn CommandRunner>);
    let prompt = "Summarize this < {prompt_file} | and that";
    let answer = block_on(tool.execute(&request("gemini-1.5-flash", prompt), &AbortSignal::new())).unwrap();
    assert_eq!(answer.text, "The answer, as plain text.");
    let runs = host.runs.borrow();
    let spec = &runs[0];
    assert_eq!(spec.program, "/usr/bin/gemini");
    assert_eq!(spec.args, [text("--model"), text("gemini-1.5-flash")], "no `<`, no prompt file argument");
    assert_eq!(spec.stdin.as_deref(), Some(prompt));
    assert_eq!((spec.prompt_file.as_deref(), spec.output_file), (None, false));
    assert_eq!(spec.env, [("GOOGLE_API_KEY".to_owned(), "AIza-test-key".to_owned())]);
}

fn cli_profile(tool: &str, model: &str) -> LlmProfile {
    LlmProfile { tool: Some(tool.into()), ..LlmProfile::new("cli", LlmKind::Cli, model, 200_000) }
}

#[test]
fn a_cli_profile_streams_the_tools_answer_with_its_cost() {
    let host = Rc::new(Host::with(&["/usr/bin/claude"]).answer(&claude_json("Hello there."), 0, ""));
    let llm = CliLlm::new(
        cli_profile("claude-code", "sonnet"),
        &ToolRegistry::shipped(),
        Rc::clone(&host) as Rc<dyn CommandRunner>,
    )
    .unwrap();
    let bundle = PromptBundle {
        system_context: "Be brief.".into(),
        request: "Say hello".into(),
        ..PromptBundle::default()
    };
    let mut seen = String::new();
    let abort = AbortSignal::new();
    let answer =
        block_on(collect(llm.stream_completion(&bundle, &abort), &abort, |d| seen.push_str(d))).unwrap();
    assert_eq!((answer.content.as_str(), seen.as_str()), ("Hello there.", "Hello there."));
    assert_eq!(llm.answer_cost(&answer), 0.02);
    assert_eq!(host.runs.borrow()[0].stdin.as_deref(), Some("[system]\nBe brief.\n\n[user]\nSay hello"));
    assert!(!llm.capabilities().supports_temperature && !llm.capabilities().supports_multi_turn);
}

#[test]
fn a_cli_profile_is_checked_when_its_client_is_made() {
    let runner = Rc::new(Host::with(&[])) as Rc<dyn CommandRunner>;
    let tools = ToolRegistry::shipped();
    let err = |p: LlmProfile| CliLlm::new(p, &tools, Rc::clone(&runner)).err().unwrap().message;
    assert!(err(cli_profile("nope", "m")).contains("known tools: claude-code, codex, gemini"));
    assert!(err(cli_profile("codex", "sonnet")).contains("its models: gpt-5-codex"));
    assert!(err(LlmProfile::new("x", LlmKind::Cli, "m", 1000)).contains("needs a tool"));
}

/// Two tools, each serving one use only, with their programs on the PATH.
fn one_use_tools() -> ToolRegistry {
    let entry = |id: &str, uses: &str| {
        format!(
            "  {id}:\n    binary: {id}\n    command_template: \"{{binary}} --model {{model}}\"\n    models: [m]\n    capabilities: [{uses}]\n    output: {{ format: text }}\n"
        )
    };
    let text = format!("tools:\n{}{}", entry("chatter", "chat"), entry("summarizer", "summarize"));
    ToolRegistry::strict(&[ToolSource { origin: "uses.yaml".into(), text }]).unwrap()
}

fn one_use_llm(tool: &str, host: &Rc<Host>) -> CliLlm {
    CliLlm::new(cli_profile(tool, "m"), &one_use_tools(), Rc::clone(host) as Rc<dyn CommandRunner>).unwrap()
}

/// A chat long enough for the native summary.
fn long_chat() -> condense_core::agent::ChatTask {
    use condense_core::model::{ContentBlock, Message, Role};
    let mut task = condense_core::agent::ChatTask::new("t", 0);
    for i in 1..=12 {
        let role = if i % 2 == 1 { Role::User } else { Role::Assistant };
        let text = format!("Turn {i}: {}", "the parser keeps its state between calls ".repeat(10));
        task.conversation.messages.push(Message::new(format!("m{i}"), role, vec![ContentBlock::text(text)]));
    }
    task
}

#[test]
fn a_tool_without_summarize_is_never_the_condensing_model() {
    use condense_core::{CondensationManager, CondensationOptions, Services};
    let host = Rc::new(Host::with(&["/usr/bin/chatter", "/usr/bin/summarizer"]));
    let chatter = one_use_llm("chatter", &host);
    assert!(chatter.serves(ModelUse::Chat).is_ok());
    let e = chatter.serves(ModelUse::Summarize).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmToolUnsupported);
    assert!(
        e.message.contains("tool 'chatter' cannot be the condensing model")
            && e.message.contains("capabilities are [chat]"),
        "{}",
        e.message
    );

    let task = long_chat();
    let conversation = &task.conversation;
    let manager = CondensationManager::with_builtin_providers();
    let counter = condense_core::TiktokenCounter::for_model("gpt-4o");
    let clock = condense_core::testing::StepClock::default();
    let services = || Services::new(&counter, &clock).with_llm(&chatter);
    // native: a typed error, the conversation untouched, nothing run, nothing estimated.
    let result =
        block_on(manager.condense(conversation, Some("native"), CondensationOptions::default(), services()))
            .unwrap();
    let error = result.error.as_ref().expect("the run fails");
    assert_eq!(error.kind, ErrorKind::LlmToolUnsupported, "{}", error.message);
    assert_eq!(result.messages, conversation.messages);
    let estimate =
        manager.estimate(conversation, Some("native"), CondensationOptions::default(), services()).unwrap();
    assert_eq!(estimate, 0.0);
    // smart: its native pass is skipped, saying why; the other passes still run.
    let before = counter.count_request(None, &conversation.api_view());
    let smart = CondensationOptions {
        // Above the floor: the first message and the last three.
        target_tokens: Some(before / 2),
        config: json!({"passes": "native,truncation"}),
        ..Default::default()
    };
    let result = block_on(manager.condense(conversation, Some("smart"), smart, services())).unwrap();
    assert!(result.is_ok(), "{:?}", result.error);
    let passes = result.metrics.unwrap().passes();
    let native = passes.iter().find(|p| p.pass == "native").unwrap();
    assert!(
        native.skipped.as_deref().is_some_and(|s| s.contains("cannot be the condensing model")),
        "{native:?}"
    );
    assert!(host.runs.borrow().is_empty(), "the tool never ran");
    // The summarizer may condense: the same native run reaches the tool.
    let summarizer = one_use_llm("summarizer", &host);
    host.outcomes.borrow_mut().push_back(Ok(CommandOutput {
        exit_code: Some(0),
        stdout: "The user and the assistant discussed the parser's state.".into(),
        stderr: String::new(),
        output_file: None,
    }));
    let services = Services::new(&counter, &clock).with_llm(&summarizer);
    let result =
        block_on(manager.condense(conversation, Some("native"), CondensationOptions::default(), services))
            .unwrap();
    assert!(result.is_ok(), "{:?}", result.error);
    assert_eq!(host.runs.borrow().len(), 1);
}

#[test]
fn a_tool_without_chat_is_never_the_chat_model() {
    use condense_core::agent::{AgentEvent, AgentInput, DefaultAgent};
    use condense_core::testing::TurnBench;
    let host = Rc::new(Host::with(&["/usr/bin/chatter", "/usr/bin/summarizer"]));
    let summarizer = one_use_llm("summarizer", &host);
    let bench = TurnBench::new();
    let mut agent = DefaultAgent::new(long_chat());
    let events =
        bench.run(&mut agent, &summarizer, None, AgentInput::User { content: "Go on".into() }, 1, |_, _| {});
    let error = events
        .iter()
        .find_map(|e| {
            if let AgentEvent::Error { error, retryable, .. } = e { Some((error, *retryable)) } else { None }
        })
        .expect("an error event");
    assert_eq!(error.0.kind, ErrorKind::LlmToolUnsupported);
    assert!(error.0.message.contains("tool 'summarizer' cannot be the chat model"), "{}", error.0.message);
    assert!(!error.1, "not retryable");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::MessageStart { .. } | AgentEvent::CondenseStart { .. }))
    );
    assert!(host.runs.borrow().is_empty(), "nothing was sent");
    // Test Connection for the uses a profile is set up for: refused before it runs.
    let clock = condense_core::testing::StepClock::default();
    let abort = AbortSignal::new();
    let e = block_on(condense_core::llm::test_connection(&summarizer, &[ModelUse::Chat], &clock, &abort))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmToolUnsupported);
    assert!(host.runs.borrow().is_empty());
}

mod hostile_paths {
    use super::*;
    use proptest::prelude::*;

    fn hostile() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just(" ".to_owned()),
                Just("'".to_owned()),
                Just("\"".to_owned()),
                Just("$HOME".to_owned()),
                Just("$(id)".to_owned()),
                Just("`id`".to_owned()),
                Just("\n".to_owned()),
                Just(";|&><*?".to_owned()),
                Just("{model}".to_owned()),
                "[a-zA-Z0-9._-]{1,6}",
            ],
            1..6,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        /// The program is the path the host found, whole, whatever it holds: never split, never
        /// an argument, never read as template syntax; the file placeholders stay parts for the
        /// host to fill in.
        #[test]
        fn the_program_is_the_found_path_whole(dir in hostile(), name in hostile(), model in hostile()) {
            let program = format!("/opt/{dir}/{name}");
            let yaml = format!(
                "tools:\n  p:\n    binary: {}\n    command_template: \"{{binary}} -m {{model}} --in={{prompt_file}} {{output_file}}\"\n    models: [{}]\n    output: {{ format: text, source: output_file }}\n",
                serde_json::to_string(&program).unwrap(),
                serde_json::to_string(&model).unwrap(),
            );
            let registry = ToolRegistry::strict(&[ToolSource { origin: "p.yaml".into(), text: yaml }]).unwrap();
            let host = Rc::new(Host::with(&[program.as_str()]).answer("", 0, ""));
            let runner = Rc::clone(&host) as Rc<dyn CommandRunner>;
            let tool = GenericAdapter::new(registry.get("p").unwrap().clone(), runner);
            let located = tool.locate();
            prop_assert_eq!(located.found.as_deref(), Some(program.as_str()));
            let _ = block_on(tool.execute(&request(&model, "the prompt"), &AbortSignal::new()));
            let runs = host.runs.borrow();
            prop_assert_eq!(&runs[0].program, &program);
            prop_assert_eq!(
                &runs[0].args,
                &vec![
                    text("-m"),
                    text(&model),
                    vec![ArgPart::Text { text: "--in=".into() }, ArgPart::PromptFile],
                    vec![ArgPart::OutputFile]
                ]
            );
        }
    }
}

// Windows: the shipped paths point at npm's .cmd shims, which only a shell runs. The adapter
// reads the shim and starts its program directly.

/// Where the shipped entries look: `${APPDATA}/npm`, as written (Windows takes either separator).
const NPM: &str = r"C:\Users\ann\AppData\Roaming/npm";

/// What npm's cmd-shim writes (npm 7 and later) for a package script run by node.
fn npm_shim(script: &str) -> String {
    format!(
        "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\n\
         IF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  \
         SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \
         \"%dp0%\\{script}\" %*\r\n"
    )
}

fn windows(executables: &[&str], files: &[(&str, String)]) -> Host {
    let mut host = Host::with(executables);
    host.platform = "windows".into();
    host.env.insert("APPDATA".into(), r"C:\Users\ann\AppData\Roaming".into());
    host.files = files.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
    host
}

#[test]
fn on_windows_an_npm_shim_is_never_run_its_node_script_is() {
    let shim = format!("{NPM}/claude.cmd");
    let script = r"node_modules\@anthropic-ai\claude-code\cli.js";
    // The shipped entry finds the shim in %APPDATA%\npm; node is on the PATH (not beside it).
    let host =
        windows(&[&shim, "/usr/bin/node"], &[(&shim, npm_shim(script))]).answer(&claude_json("Done."), 0, "");
    let (tool, host) = adapter("claude-code", host);
    assert_eq!(tool.locate().found.as_deref(), Some(shim.as_str()), "the status still names the shim");
    let answer = block_on(tool.execute(&request("sonnet", "Summarize"), &AbortSignal::new())).unwrap();
    assert_eq!(answer.text, "Done.");
    let runs = host.runs.borrow();
    assert_eq!(runs[0].program, "/usr/bin/node");
    let mut expected = vec![text(&format!(r"{NPM}\{script}"))];
    expected.extend(
        ["-p", "--output-format", "json", "--model", "sonnet", "--max-turns", "1"].iter().map(|a| text(a)),
    );
    assert_eq!(runs[0].args, expected);
    assert_eq!(runs[0].stdin.as_deref(), Some("Summarize"));
}

#[test]
fn on_windows_the_node_beside_the_shim_comes_first_and_an_executable_shim_starts_the_executable() {
    let shim = format!("{NPM}/gemini.cmd");
    let beside = format!(r"{NPM}\node.exe");
    let script = r"node_modules\@google\gemini-cli\dist\index.js";
    let host = windows(&[&shim, &beside, "/usr/bin/node"], &[(&shim, npm_shim(script))]).answer(
        r#"{"response": "Hi."}"#,
        0,
        "",
    );
    let (tool, host) = adapter("gemini", host);
    block_on(tool.execute(&request("gemini-2.5-flash", "Hello"), &AbortSignal::new())).unwrap();
    assert_eq!(host.runs.borrow()[0].program, beside);
    assert_eq!(host.runs.borrow()[0].args[0], text(&format!(r"{NPM}\{script}")));

    // A shim of a native program (no #! line): the program itself, with the template's arguments only.
    let shim = format!("{NPM}/codex.cmd");
    let exe = format!(r"{NPM}\node_modules\@openai\codex\bin\codex.exe");
    let text_of_shim = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\"%dp0%\\node_modules\\@openai\\codex\\bin\\codex.exe\"   %*\r\n";
    let event = r#"{"type":"item.completed","item":{"type":"agent_message","text":"Yes."}}"#;
    let host = windows(&[&shim, &exe], &[(&shim, text_of_shim.to_owned())]).answer(event, 0, "");
    let (tool, host) = adapter("codex", host);
    block_on(tool.execute(&request("gpt-5-codex", "Hello"), &AbortSignal::new())).unwrap();
    assert_eq!(host.runs.borrow()[0].program, exe);
    assert_eq!(host.runs.borrow()[0].args[0], text("exec"));
}

#[test]
fn on_windows_a_batch_file_that_is_not_an_npm_shim_is_refused_and_nothing_runs() {
    let shim = format!("{NPM}/claude.cmd");
    for (files, why) in [
        (
            vec![(shim.as_str(), "@echo off\r\ncall C:\\tools\\claude.bat %*\r\n".to_owned())],
            "not an npm shim",
        ),
        (vec![], "could not be read"),
    ] {
        let (tool, host) = adapter("claude-code", windows(&[&shim], &files));
        let e = block_on(tool.execute(&request("sonnet", "Hi"), &AbortSignal::new())).unwrap_err();
        assert_eq!(e.kind, ErrorKind::LlmConfig, "{}", e.message);
        assert!(e.message.contains("only a shell runs") && e.message.contains(why), "{}", e.message);
        assert!(host.runs.borrow().is_empty());
    }
    // Node nowhere: the shim's script cannot be started.
    let (tool, host) =
        adapter("claude-code", windows(&[&shim], &[(&shim, npm_shim(r"node_modules\x\cli.js"))]));
    let e = block_on(tool.execute(&request("sonnet", "Hi"), &AbortSignal::new())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::LlmToolNotFound, "{}", e.message);
    assert!(host.runs.borrow().is_empty());
    // On Linux a file named .cmd is a program like any other.
    let (tool, host) =
        adapter("claude-code", Host::with(&["/opt/claude.cmd"]).answer(&claude_json("Ok."), 0, ""));
    let mut entry = tool.entry().clone();
    entry.config.binary.value = "/opt/claude.cmd".into();
    let tool = GenericAdapter::new(entry, Rc::clone(&host) as Rc<dyn CommandRunner>);
    block_on(tool.execute(&request("sonnet", "Hi"), &AbortSignal::new())).unwrap();
    assert_eq!(host.runs.borrow()[0].program, "/opt/claude.cmd");
}
