//! Issue 36: the ledger's working state — what the agent goes on to need, gathered by code from
//! every client's calls and results — and the selection by relevance of the providers that
//! must hide messages.

mod common;

use common::{block_on, counter, text};
use condense_core::ledger::{FileAction, Ledger};
use condense_core::model::{ContentBlock, Message, Role, api_view, check_tool_pairs};
use condense_core::{CondensationManager, CondensationOptions, Conversation, Services, TokenCounter};
use serde_json::json;

fn call(id: &str, name: &str, input: serde_json::Value) -> Message {
    Message::new(
        format!("a{id}"),
        Role::Assistant,
        vec![ContentBlock::ToolUse { id: id.into(), name: name.into(), input }],
    )
}

fn result(id: &str, output: &str) -> Message {
    Message::new(format!("u{id}"), Role::User, vec![ContentBlock::tool_result_text(id, output)])
}

fn shell(id: &str, script: &str) -> Message {
    call(id, "shell", json!({"command": ["bash", "-lc", script], "workdir": "/repo"}))
}

fn codex_output(output: &str, code: i64) -> String {
    json!({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.1}}).to_string()
}

fn numbered(messages: &[Message]) -> Ledger {
    let list: Vec<(usize, &Message)> = messages.iter().enumerate().map(|(i, m)| (i + 1, m)).collect();
    Ledger::of_numbered(&list)
}

/// Codex works through the shell: `sed -n` reads, heredocs write, `apply_patch` edits, `rg`
/// searches, `git status` lists; a failing test run, then a passing one.
#[test]
fn codex_shell_work_reaches_the_working_state() {
    let tasks_py =
        "class SpecWorkflowTask(Task):\n    pass\n\n\ndef discover_next_phase(run_id):\n    return None\n";
    let plan = "# Plan\n\n## Files\n- `moonmind/workflows/speckit_celery/tasks.py`\n- `api_service/db/models.py` holds `SpecWorkflowRun`\n";
    let patch = "*** Begin Patch\n*** Update File: moonmind/workflows/speckit_celery/tasks.py\n@@ def discover_next_phase(run_id):\n-    return None\n+    return lookup_phase(run_id)\n*** End Patch";
    let messages = vec![
        shell("c1", "sed -n '120,200p' moonmind/workflows/speckit_celery/tasks.py"),
        result("c1", &codex_output(tasks_py, 0)),
        shell("c2", &format!("cat <<'EOF' > specs/plan.md\n{plan}EOF")),
        result("c2", &codex_output("", 0)),
        call("c3", "shell", json!({"command": ["apply_patch", patch]})),
        result(
            "c3",
            &codex_output(
                "Success. Updated the following files:\nM moonmind/workflows/speckit_celery/tasks.py",
                0,
            ),
        ),
        shell("c4", "rg -n \"add_argument\" tool"),
        result(
            "c4",
            &codex_output(
                "tool/cli.py:23:    parser.add_argument('--dry-run')\ntool/cli.py:24:    parser.add_argument('--since')",
                0,
            ),
        ),
        shell("c5", "git status -sb"),
        result(
            "c5",
            &codex_output("## main\n M api_service/db/models.py\n M celery_worker/speckit_worker.py", 0),
        ),
        shell("c6", "pytest -q tests/unit"),
        result(
            "c6",
            &codex_output(
                "FAILED tests/unit/test_tasks.py::test_discover - AssertionError: None\n1 failed, 3 passed in 0.2s",
                1,
            ),
        ),
        shell("c7", "pytest -q tests/unit"),
        result("c7", &codex_output("4 passed in 0.2s", 0)),
        shell("c8", "./deploy.sh staging"),
        result(
            "c8",
            &codex_output("connecting to staging\nuploading build\nPermission denied (publickey).", 255),
        ),
    ];
    let l = numbered(&messages);
    let file =
        |p: &str| l.files.iter().find(|f| f.path == p).unwrap_or_else(|| panic!("{p} in {:?}", l.files));
    // A read printed from line 120 outlines with the file's own line numbers; the patch edited it.
    let tasks = file("moonmind/workflows/speckit_celery/tasks.py");
    assert_eq!(tasks.action, FileAction::Edited);
    assert_eq!(tasks.outline, ["class SpecWorkflowTask l.120", "def discover_next_phase l.124"]);
    assert_eq!(tasks.changes, ["def discover_next_phase(run_id): `return lookup_phase(run_id)`"]);
    assert_eq!(tasks.at, Some(5));
    // The heredoc wrote a document: its outline and what it mentions, not its body as a command.
    let plan = file("specs/plan.md");
    assert_eq!(plan.action, FileAction::Created);
    assert_eq!(plan.outline, ["# Plan l.1", "## Files l.3"]);
    assert!(plan.mentions.contains(&"api_service/db/models.py".to_owned()), "{:?}", plan.mentions);
    assert!(plan.mentions.contains(&"SpecWorkflowRun".to_owned()), "{:?}", plan.mentions);
    let commands: Vec<&str> = l.commands.iter().map(|c| c.command.as_str()).collect();
    // A successful pure read, or a heredoc that wrote a file whole, is the file's entry, not a
    // command.
    assert!(!commands.iter().any(|c| c.starts_with("sed -n") || c.starts_with("cat <<")), "{commands:?}");
    // A search keeps the lines it found; a listing the paths.
    let rg = l.commands.iter().find(|c| c.command.starts_with("rg")).unwrap();
    assert_eq!(rg.matches.len(), 2);
    assert!(rg.matches[0].contains("--dry-run"));
    let status = l.commands.iter().find(|c| c.command.starts_with("git status")).unwrap();
    assert_eq!(status.listed, ["api_service/db/models.py", "celery_worker/speckit_worker.py"]);
    // The failing test, and the later run that passed.
    assert_eq!(l.errors.len(), 1);
    assert!(l.errors[0].text.starts_with("FAILED tests/unit/test_tasks.py::test_discover"), "{:?}", l.errors);
    assert_eq!(l.errors[0].at, Some(12));
    assert_eq!(l.errors[0].fixed.as_deref(), Some("`pytest -q tests/unit` passed at #14"));
    // A failure no format names keeps the last lines it printed.
    let deploy = l.commands.iter().find(|c| c.command == "./deploy.sh staging").unwrap();
    assert_eq!(deploy.outcome.as_deref(), Some("exit 255"));
    assert_eq!(
        deploy.matches,
        ["connecting to staging", "uploading build", "Permission denied (publickey)."]
    );
}

/// Claude Code: a numbered Read, an Edit, a failing then passing `cargo test`, and the
/// assistant's finding; rendered, the working state reads back the same.
#[test]
fn claude_code_work_renders_and_reads_back() {
    let read = "     1→pub struct Backoff {\n     2→    base: u64,\n     3→}\n     4→\n     5→impl Backoff {\n     6→    pub fn next(&mut self) -> u64 {\n";
    let messages = vec![
        text("u0", Role::User, "Fix the flaky retry test."),
        call("t1", "Read", json!({"file_path": "/repo/src/retry.rs"})),
        result("t1", read),
        Message::new(
            "a2",
            Role::Assistant,
            vec![
                ContentBlock::text("The test fails because `Backoff::next` overflows after 32 retries."),
                ContentBlock::ToolUse {
                    id: "t2".into(),
                    name: "Bash".into(),
                    input: json!({"command": "cargo test -p retry"}),
                },
            ],
        ),
        Message::new(
            "u2",
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: "t2".into(),
                content: vec![condense_core::model::ToolResultPart::Text {
                    text: "error[E0308]: mismatched types\n  --> src/retry.rs:7:9\nerror: could not compile `retry`".into(),
                }],
                is_error: true,
            }],
        ),
        call(
            "t3",
            "Edit",
            json!({"file_path": "/repo/src/retry.rs", "old_string": "self.base * 2", "new_string": "self.base.saturating_mul(2)"}),
        ),
        result("t3", "The file /repo/src/retry.rs has been updated."),
        call("t4", "Bash", json!({"command": "cargo test -p retry"})),
        result("t4", "running 3 tests\ntest result: ok. 3 passed; 0 failed; 0 ignored"),
    ];
    let l = numbered(&messages);
    let retry = &l.files[0];
    assert_eq!((retry.path.as_str(), retry.action), ("/repo/src/retry.rs", FileAction::Edited));
    assert_eq!(retry.outline, ["struct Backoff l.1", "impl Backoff l.5", "fn next l.6"]);
    assert_eq!(retry.changes, ["`self.base.saturating_mul(2)`"]);
    assert_eq!(l.errors.len(), 1);
    assert_eq!(l.errors[0].text, "error[E0308]: mismatched types at src/retry.rs:7:9");
    assert_eq!(l.errors[0].fixed.as_deref(), Some("`cargo test -p retry` passed at #9"));
    assert_eq!(l.findings.len(), 1);
    assert_eq!(l.findings[0].at, Some(4));
    let rendered = l.render(10_000, &counter());
    assert!(rendered.contains("## Working state"), "{rendered}");
    assert!(rendered.contains(
        "- edited /repo/src/retry.rs (#6)\n  defines: struct Backoff l.1, impl Backoff l.5, fn next l.6"
    ));
    assert!(rendered.contains("→ fixed: `cargo test -p retry` passed at #9"), "{rendered}");
    // Read back and rendered again, the block is the same: a later condensation merges it.
    let parsed = Ledger::parse(&rendered).expect("a ledger");
    assert_eq!(parsed.render(10_000, &counter()), rendered);
    assert_eq!(parsed.files, l.files);
}

/// A long history whose reads the tail names in part: truncation cuts what the tail does not
/// refer to first, and says what it kept for relevance.
#[test]
fn truncation_cuts_what_the_tail_no_longer_refers_to_first() {
    let body = |name: &str| {
        format!(
            "pub fn {name}() {{}}\n{}",
            (0..60).map(|i| format!("// line {i} of {name}\n")).collect::<String>()
        )
    };
    let mut messages = vec![text("u0", Role::User, "Tidy the parser module.")];
    for (k, name) in ["parse_header", "unused_one", "unused_two", "unused_three"].iter().enumerate() {
        messages.push(call(&format!("r{k}"), "Read", json!({"file_path": format!("src/{name}.rs")})));
        messages.push(result(&format!("r{k}"), &body(name)));
    }
    messages.push(text("a9", Role::Assistant, "Next I change `parse_header` in src/parse_header.rs."));
    messages.push(text("u9", Role::User, "Go on."));
    messages.push(text("a10", Role::Assistant, "On it."));
    let c = Conversation::new(messages);
    let before = counter().count_request(None, &c.api_view());
    let manager = CondensationManager::with_builtin_providers();
    let clock = common::StepClock::default();
    let tokens = counter();
    let services = Services::new(&tokens, &clock);
    let options = CondensationOptions {
        target_tokens: Some(before * 70 / 100),
        config: json!({"ledger": false}),
        ..Default::default()
    };
    let r = block_on(manager.condense(&c, Some("truncation"), options, services)).unwrap();
    assert!(r.is_ok(), "{:?}", r.error);
    let view = api_view(&r.messages);
    check_tool_pairs(&view).unwrap();
    let result_text = |id: &str| {
        view.iter()
            .flat_map(|m| &m.content)
            .find_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, content, .. } if tool_use_id == id => {
                    Some(condense_core::model::tool_result_text(content))
                }
                _ => None,
            })
            .unwrap()
    };
    // The read the tail names is whole; the oldest the tail does not name was cut.
    assert!(result_text("r0").contains("line 59 of parse_header"));
    assert!(result_text("r1").contains("truncated by Context Condenser"), "{}", result_text("r1"));
    assert!(r.metrics.unwrap().extra["kept_for_relevance"].as_u64().unwrap() >= 1);
}

/// A target the floor and the ledger cannot meet is never missed in silence: an automatic run
/// works to its floor, and the files its ledger must name take it past; the result says so.
#[test]
fn a_run_over_its_target_says_why() {
    let mut messages = vec![text("u0", Role::User, "Port the CLI. Never change the config format.")];
    for k in 1..8 {
        messages.push(call(
            &format!("e{k}"),
            "Edit",
            json!({"file_path": format!("src/cmd_{k}.rs"), "old_string": "a", "new_string": "b"}),
        ));
        messages.push(result(&format!("e{k}"), &"The file has been updated. ".repeat(40)));
    }
    messages.push(text("a9", Role::Assistant, "Done with the commands."));
    messages.push(text("u9", Role::User, "Also keep the --verbose flag working in every command."));
    let c = Conversation::new(messages);
    let manager = CondensationManager::with_builtin_providers();
    let clock = common::StepClock::default();
    let options = CondensationOptions { target_tokens: Some(1), is_automatic: true, ..Default::default() };
    let r = block_on(manager.condense(&c, Some("truncation"), options, Services::new(&counter(), &clock)))
        .unwrap();
    assert!(r.is_ok(), "{:?}", r.error);
    let metrics = r.metrics.unwrap();
    let floor = metrics.extra["floor_tokens"].as_u64().unwrap() as usize;
    assert!(r.new_context_tokens.unwrap() > floor, "the ledger of seven edited files takes room");
    assert_eq!(metrics.extra["target_met"], false);
    let note = metrics.extra["note"].as_str().expect("a note");
    assert!(note.contains(&format!("the target of {floor} tokens was not met")), "{note}");
    assert!(note.contains("the ledger of what it hid"), "{note}");
}

mod round_trip {
    use super::*;
    use condense_core::ledger::{CommandRun, ErrorSeen, FileTouch, Finding};
    use proptest::prelude::*;

    fn word() -> impl Strategy<Value = String> {
        "[a-z][a-z_/.]{0,15}"
    }

    fn phrase() -> impl Strategy<Value = String> {
        "[a-z][a-z _:]{0,25}[a-z]"
    }

    fn at() -> impl Strategy<Value = Option<usize>> {
        proptest::option::of(1usize..500)
    }

    fn file() -> impl Strategy<Value = FileTouch> {
        let action = prop_oneof![
            Just(FileAction::Read),
            Just(FileAction::Created),
            Just(FileAction::Edited),
            Just(FileAction::Deleted)
        ];
        (
            word(),
            action,
            at(),
            proptest::collection::vec(word(), 0..4),
            proptest::collection::vec(phrase(), 0..3),
            proptest::collection::vec(word(), 0..4),
        )
            .prop_map(|(path, action, at, outline, changes, mentions)| FileTouch {
                at,
                outline,
                changes,
                mentions,
                ..FileTouch::new(path, action)
            })
    }

    fn command() -> impl Strategy<Value = CommandRun> {
        (
            phrase(),
            proptest::option::of(phrase()),
            at(),
            proptest::option::of(phrase()),
            proptest::collection::vec(word(), 0..4),
            proptest::collection::vec(phrase(), 0..3),
        )
            .prop_map(|(command, outcome, at, summary, listed, matches)| CommandRun {
                at,
                summary,
                listed,
                matches,
                ..CommandRun::new(command, outcome)
            })
    }

    fn ledger() -> impl Strategy<Value = Ledger> {
        (
            proptest::collection::vec(file(), 0..5),
            proptest::collection::vec(command(), 0..5),
            proptest::collection::vec((phrase(), at(), proptest::option::of(phrase())), 0..4),
            proptest::collection::vec((phrase(), at()), 0..4),
        )
            .prop_map(|(files, commands, errors, findings)| {
                // One entry per path and command, as gathering keeps them.
                let mut l = Ledger::default();
                for f in files {
                    if !l.files.iter().any(|x| x.path == f.path) {
                        l.files.push(f);
                    }
                }
                for mut c in commands {
                    // A summary the outcome quotes already is written once: in the outcome.
                    if c.outcome.as_deref().zip(c.summary.as_deref()).is_some_and(|(o, s)| o.contains(s)) {
                        c.summary = None;
                    }
                    if !l.commands.iter().any(|x| x.command == c.command) {
                        l.commands.push(c);
                    }
                }
                l.errors = errors
                    .into_iter()
                    .map(|(text, at, fixed)| ErrorSeen { key: text.clone(), text, at, command: None, fixed })
                    .collect();
                l.findings = findings.into_iter().map(|(text, at)| Finding { text, at }).collect();
                l
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(common::cases(256)))]

        /// A working state read back renders to the same block: a later condensation merges an
        /// earlier one's ledger without losing or changing an item.
        #[test]
        fn the_working_state_reads_back(l in ledger()) {
            let t = counter();
            let text = l.render(1_000_000, &t);
            let parsed = Ledger::parse(&text).expect("a ledger");
            prop_assert_eq!(parsed.render(1_000_000, &t), text);
            prop_assert_eq!(parsed.files, l.files);
            prop_assert_eq!(parsed.commands, l.commands);
        }
    }
}

/// A file whose values may be secrets (`.env`, `.tfvars`, a Dockerfile's `ENV`) is told by its
/// names alone: an edit's changed line, never its value, reaches the ledger.
#[test]
fn an_edit_to_a_file_of_secrets_shows_names_never_values() {
    let messages = [
        call(
            "1",
            "Edit",
            json!({"file_path": "/repo/.env", "old_string": "API_KEY=old", "new_string": "API_KEY=sk-live-123\nDB_PASSWORD=hunter2"}),
        ),
        result("1", "The file /repo/.env has been updated."),
        call(
            "2",
            "Edit",
            json!({"file_path": "/repo/prod.tfvars", "old_string": "", "new_string": "db_password = \"s3cr3t-value\""}),
        ),
        result("2", "The file /repo/prod.tfvars has been updated."),
    ];
    let ledger = numbered(&messages);
    let text = ledger.render(4000, &counter());
    assert!(text.contains("/repo/.env") && text.contains("API_KEY"), "{text}");
    for value in ["sk-live-123", "hunter2", "s3cr3t-value"] {
        assert!(!text.contains(value), "{value} shown:\n{text}");
    }
}
