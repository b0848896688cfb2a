//! Property tests of the providers' invariants: (a) the API view's tool pairs stay valid; (b) undo
//! restores the exact previous conversation; (c) lossless: every removed byte has an identical copy
//! still in the view; (d) truncation keeps the first and the last N messages as they are; (e)
//! tokens after never exceed tokens before; (j) opaque blocks (thinking, …) are never edited; and
//! a failed run hands back the input untouched; (k) client context is never the user's words.
//! With the state ledger on (every provider): (f) the instructions, files changed and open todos
//! of what a run hid are still in the API view, (g) which both APIs accept, (h) a second run moves
//! the ledger instead of adding one, (i) undo takes it away with its run. Pins: (l) whatever the
//! provider, every visible pinned message is in the API view after the run, unchanged. Recall:
//! (m) every id a placeholder in the view names gives back the content it hid, not a placeholder.

mod common;

use common::{StepClock, block_on, counter};
use condense_core::model::{
    ClientContext, ContentBlock, Message, Role, ToolResultPart, api_view, check_tool_pairs, undo_last,
};
use condense_core::providers::recall::{is_recall_id, recall};
use condense_core::{CondensationManager, CondensationOptions, Conversation, Services, TokenCounter};
use proptest::prelude::*;

/// Texts drawn from a small pool so that repeats (the lossless case) are common; some long, some short.
fn pool_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("short note".to_owned()),
        Just("ok".to_owned()),
        (0usize..6).prop_map(|i| format!("file contents {i}:\n{}", "fn f() { let x = 1; }\n".repeat(12 + i))),
        (0usize..3).prop_map(|i| format!("listing {i}: src/a.rs src/b.rs README.md Cargo.toml ").repeat(8)),
        "[a-zé ]{1,80}",
    ]
}

#[derive(Debug, Clone)]
enum Turn {
    Chat(String, String),
    Tools(Option<String>, Vec<String>, Option<String>),
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        (pool_text(), pool_text()).prop_map(|(a, u)| Turn::Chat(a, u)),
        (
            proptest::option::of(pool_text()),
            prop::collection::vec(pool_text(), 1..3),
            proptest::option::of(pool_text())
        )
            .prop_map(|(a, r, u)| Turn::Tools(a, r, u)),
    ]
}

fn conversation() -> impl Strategy<Value = Conversation> {
    (pool_text(), prop::collection::vec(turn(), 1..14), proptest::option::of("[a-z ]{5,40}")).prop_map(
        |(first, turns, system)| {
            let mut messages = vec![Message::new("m0", Role::User, vec![ContentBlock::text(first)])];
            let mut tool = 0;
            for t in turns {
                let n = messages.len();
                match t {
                    Turn::Chat(a, u) => {
                        // Every third answer starts with a thinking block, kept as read.
                        let mut answer = Vec::new();
                        if n % 3 == 1 {
                            answer.push(thinking(n));
                        }
                        answer.push(ContentBlock::text(a));
                        messages.push(Message::new(format!("m{n}"), Role::Assistant, answer));
                        messages.push(Message::new(
                            format!("m{}", n + 1),
                            Role::User,
                            vec![ContentBlock::text(u)],
                        ));
                    }
                    Turn::Tools(a, results, u) => {
                        let mut calls: Vec<ContentBlock> = a.into_iter().map(ContentBlock::text).collect();
                        let mut answers = Vec::new();
                        for r in results {
                            tool += 1;
                            let id = format!("toolu_{tool}");
                            calls.push(ContentBlock::ToolUse {
                                id: id.clone(),
                                name: "read_file".into(),
                                input: serde_json::json!({"path": format!("src/{}.rs", tool % 3)}),
                            });
                            answers.push(ContentBlock::tool_result_text(id, r));
                        }
                        answers.extend(u.map(ContentBlock::text));
                        messages.push(Message::new(format!("m{n}"), Role::Assistant, calls));
                        messages.push(Message::new(format!("m{}", n + 1), Role::User, answers));
                    }
                }
            }
            Conversation { system, ..Conversation::new(messages) }
        },
    )
}

/// An Anthropic thinking block with its signature: opaque to the project.
fn thinking(n: usize) -> ContentBlock {
    serde_json::from_value(serde_json::json!({
        "type": "thinking",
        "thinking": format!("step {n}: {}", "weigh the options ".repeat(n % 7 + 1)),
        "signature": format!("EqQBCkgIsig{n}"),
    }))
    .expect("a block")
}

/// The opaque blocks of a message list, as JSON.
fn opaque_blocks<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<String> {
    messages
        .into_iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::Opaque(o) => Some(o.json()),
            _ => None,
        })
        .collect()
}

/// Every text in a view: text blocks and tool result text parts.
fn texts(view: &[&Message]) -> Vec<String> {
    let mut out = Vec::new();
    for m in view {
        for b in &m.content {
            match b {
                ContentBlock::Text { text, .. } => out.push(text.clone()),
                ContentBlock::ToolResult { content, .. } => {
                    for p in content {
                        if let ToolResultPart::Text { text } = p {
                            out.push(text.clone());
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn run(c: &Conversation, provider: &str, options: CondensationOptions) -> condense_core::CondensationResult {
    let manager = CondensationManager::with_builtin_providers();
    let tokens = counter();
    let clock = StepClock::default();
    block_on(manager.condense(c, Some(provider), options, Services::new(&tokens, &clock))).unwrap()
}

/// The checks every provider must pass.
fn common_invariants(
    before: &Conversation,
    result: &condense_core::CondensationResult,
) -> Result<(), TestCaseError> {
    let tokens = counter();
    let before_tokens = tokens.count_request(before.system.as_deref(), &before.api_view());
    if let Some(e) = &result.error {
        prop_assert_eq!(&result.messages, &before.messages, "a failed run returns the input ({})", e.message);
        return Ok(());
    }
    let view = api_view(&result.messages);
    // (a) tool pairs stay valid.
    prop_assert!(check_tool_pairs(&view).is_ok(), "{:?}", check_tool_pairs(&view));
    // (e) tokens after ≤ tokens before, and the reported count is the real count.
    let after = tokens.count_request(before.system.as_deref(), &view);
    prop_assert_eq!(result.new_context_tokens, Some(after));
    prop_assert!(after <= before_tokens);
    // Opaque blocks (thinking, …) are never edited: each one in the view is one of the input's.
    let originals = opaque_blocks(&before.messages);
    for block in opaque_blocks(view.iter().copied()) {
        prop_assert!(originals.contains(&block), "an opaque block was edited: {}", block);
    }
    // (m) every id a placeholder names recalls what it hid, from the result alone.
    for id in named_ids(&view) {
        let recalled = recall(&result.messages, &id);
        prop_assert!(recalled.is_some(), "id {} names nothing in the result", id);
        let text = recalled.unwrap().text;
        prop_assert!(!text.contains("by Context Condenser"), "id {} gives back a placeholder: {}", id, text);
    }
    // (b) undo restores the exact previous conversation, hence its API view.
    let (_, undone) = undo_last(&result.messages).expect("a condensation to undo");
    prop_assert_eq!(&undone, &before.messages);
    Ok(())
}

/// Every recall id the view's texts, tool results and tool arguments name (`; id r3f9a21c0`).
fn named_ids(view: &[&Message]) -> Vec<String> {
    let mut texts: Vec<String> = Vec::new();
    for block in view.iter().flat_map(|m| &m.content) {
        match block {
            ContentBlock::Text { text, .. } => texts.push(text.clone()),
            ContentBlock::ToolResult { content, .. } => {
                texts.push(condense_core::model::tool_result_text(content))
            }
            ContentBlock::ToolUse { input, .. } => texts.push(input.to_string()),
            _ => {}
        }
    }
    let mut ids = Vec::new();
    for text in &texts {
        for (at, _) in text.match_indices("; id r") {
            let id = &text[at + "; id ".len()..];
            let id = &id[..id.len().min(9)];
            if is_recall_id(id) {
                ids.push(id.to_owned());
            }
        }
    }
    ids
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(96), ..ProptestConfig::default() })]

    #[test]
    fn lossless_loses_nothing(c in conversation()) {
        let result = run(&c, "lossless", CondensationOptions::default());
        common_invariants(&c, &result)?;
        if result.is_ok() {
            // (c) every text of the old view still appears, byte-identical, in the new view.
            let new_texts = texts(&api_view(&result.messages));
            for t in texts(&c.api_view()) {
                prop_assert!(new_texts.contains(&t), "lost {} bytes: {:?}", t.len(), &t[..t.len().min(40)]);
            }
            // Tool calls are untouched.
            let calls = |v: &[&Message]| v.iter().flat_map(|m| m.content.iter()).filter(|b| matches!(b, ContentBlock::ToolUse { .. })).cloned().collect::<Vec<_>>();
            prop_assert_eq!(calls(&c.api_view()), calls(&api_view(&result.messages)));
        }
    }

    #[test]
    fn truncation_keeps_the_anchors(c in conversation(), keep_last in 0usize..5, percent in 5usize..95) {
        let tokens = counter();
        let before = tokens.count_request(c.system.as_deref(), &c.api_view());
        let target = before * percent / 100;
        let options = CondensationOptions { target_tokens: Some(target), keep_last: Some(keep_last), ..Default::default() };
        let result = run(&c, "truncation", options);
        common_invariants(&c, &result)?;
        if result.is_ok() {
            let old = c.api_view();
            let new = api_view(&result.messages);
            // (d) the first message and the last N are identical to the input; the first may carry
            // the ledger after its own blocks.
            let first: Vec<&ContentBlock> =
                new[0].content.iter().filter(|b| !condense_core::ledger::is_ledger_block(b)).collect();
            prop_assert_eq!(old[0].content.iter().collect::<Vec<_>>(), first);
            prop_assert_eq!(old[0].role, new[0].role);
            let n = keep_last.min(old.len() - 1);
            prop_assert_eq!(&old[old.len() - n..], &new[new.len() - n..]);
            let met = result.metrics.as_ref().unwrap().extra["target_met"].as_bool().unwrap();
            prop_assert_eq!(met, result.new_context_tokens.unwrap() <= target);
        }
    }

    #[test]
    fn condensations_stack_and_undo_one_at_a_time(c in conversation()) {
        let first = run(&c, "lossless", CondensationOptions::default());
        let c1 = Conversation { messages: first.messages.clone(), ..c.clone() };
        let second = run(&c1, "truncation", CondensationOptions { keep_last: Some(2), ..Default::default() });
        common_invariants(&c1, &second)?;
        if second.is_ok() {
            let (_, back) = undo_last(&second.messages).unwrap();
            prop_assert_eq!(api_view(&back), c1.api_view());
        }
    }
}

/// A tool-result block or a Cline/Roo-style text-encoded result, for the mask and smart test.
fn with_encoded_results(c: Conversation, encode_every: usize) -> Conversation {
    let mut messages = c.messages;
    for (i, m) in messages.iter_mut().enumerate() {
        if m.role == Role::User
            && i > 0
            && i.is_multiple_of(encode_every)
            && m.content.iter().all(|b| matches!(b, ContentBlock::Text { .. }))
        {
            let body = m.text();
            m.content = vec![
                ContentBlock::text(format!("[read_file for 'src/{i}.rs'] Result:\n{body}")),
                ContentBlock::text(format!(
                    "<environment_details>\n# Current Time\n{i}\n</environment_details>"
                )),
            ];
        }
    }
    Conversation { messages, ..c }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(64), ..ProptestConfig::default() })]

    /// Mask and smart keep the API view valid, can be undone in one step, and never grow the
    /// context, with or without a target and whatever their per-tool rules or preset.
    #[test]
    fn mask_and_smart_keep_the_view_valid(
        c in conversation(),
        encode_every in 2usize..5,
        keep in 0usize..4,
        percent in 5usize..95,
        preset in prop_oneof![Just("conservative"), Just("balanced"), Just("aggressive")],
    ) {
        let c = with_encoded_results(c, encode_every);
        let tokens = counter();
        let before = tokens.count_request(c.system.as_deref(), &c.api_view());
        let mask = CondensationOptions {
            config: serde_json::json!({"keep_results": keep, "min_tokens": 0, "keep_per_tool": "read_file=1"}),
            ..Default::default()
        };
        common_invariants(&c, &run(&c, "mask", mask))?;
        let superseded = CondensationOptions {
            config: serde_json::json!({"keep_last": keep, "min_tokens": 0}),
            ..Default::default()
        };
        common_invariants(&c, &run(&c, "superseded", superseded))?;
        let smart = CondensationOptions {
            target_tokens: Some(before * percent / 100),
            config: serde_json::json!({"preset": preset}),
            ..Default::default()
        };
        let result = run(&c, "smart", smart);
        common_invariants(&c, &result)?;
        if result.is_ok() {
            // One condensation: every id the run added or hid with is the same.
            let ids: std::collections::BTreeSet<&str> = result.messages.iter()
                .flat_map(|m| [m.condense_id.as_deref(), m.condense_parent.as_deref()])
                .flatten()
                .collect();
            prop_assert_eq!(ids.len(), 1);
        }
    }
}
// The state ledger: with it on, what a condensation hides that the model must not forget — the
// user's instructions, the files changed, the open todos — is still in the API view, whatever
// the provider; the view stays valid for both APIs; undo takes the ledger away with the run.

use condense_core::formats::{parse_conversation, to_anthropic, to_openai};
use condense_core::ledger::{self, Ledger};
use condense_core::llm::{LlmKind, LlmProfile};
use condense_core::testing::ScriptedLlm;

/// One step of a generated agent session.
#[derive(Debug, Clone)]
enum Step {
    /// The user gives an instruction.
    Instruction(String),
    /// The assistant edits (or creates, or deletes) a file.
    File(u8, u8),
    /// The assistant runs a command that fails or passes.
    Command(bool),
    /// The assistant writes the todo list again, one more item done.
    Todos,
    /// Filler: a long tool result and a chat turn.
    Filler(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        "[a-z]{3,9}( [a-z]{2,9}){3,12}".prop_map(Step::Instruction),
        (0u8..6, 0u8..3).prop_map(|(f, a)| Step::File(f, a)),
        any::<bool>().prop_map(Step::Command),
        Just(Step::Todos),
        (5usize..40).prop_map(Step::Filler),
    ]
}

const TODO_ITEMS: [&str; 5] = [
    "Reproduce the parser bug",
    "Write a failing test",
    "Fix the tokenizer",
    "Update the changelog",
    "Ask for review",
];

/// A session: the task, then the steps, each as a user/assistant exchange valid for both APIs.
fn session() -> impl Strategy<Value = Conversation> {
    prop::collection::vec(step(), 4..18).prop_map(|steps| {
        let mut messages = vec![Message::new(
            "m0",
            Role::User,
            vec![ContentBlock::text("Fix the parser of our todo CLI; keep the public API unchanged.")],
        )];
        let mut writes = 0usize;
        let push = |messages: &mut Vec<Message>, role: Role, content: Vec<ContentBlock>| {
            let id = format!("m{}", messages.len());
            messages.push(Message::new(id, role, content));
        };
        for (k, s) in steps.into_iter().enumerate() {
            let tool = format!("toolu_{k}");
            let (name, input, result) = match s {
                Step::Instruction(words) => {
                    push(&mut messages, Role::Assistant, vec![ContentBlock::text("Understood.")]);
                    push(&mut messages, Role::User, vec![ContentBlock::text(format!("Instruction {k}: {words}."))]);
                    continue;
                }
                Step::File(f, a) => {
                    let path = format!("src/module_{f}.rs");
                    let name = ["Edit", "Write", "delete_file"][usize::from(a)];
                    (name, serde_json::json!({"file_path": path, "old_string": "a", "new_string": "b"}), "ok".to_owned())
                }
                Step::Command(pass) => (
                    "Bash",
                    serde_json::json!({"command": format!("cargo test --test case_{k}")}),
                    if pass { "test result: ok. 3 passed".to_owned() } else { "error[E0308]: mismatched types\nExit code: 101".to_owned() },
                ),
                Step::Todos => {
                    writes += 1;
                    let todos: Vec<serde_json::Value> = TODO_ITEMS
                        .iter()
                        .take((2 + writes).min(TODO_ITEMS.len()))
                        .enumerate()
                        .map(|(i, t)| serde_json::json!({"content": t, "status": if i + 1 < writes { "completed" } else { "pending" }}))
                        .collect();
                    ("TodoWrite", serde_json::json!({"todos": todos}), "Todos have been modified successfully.".to_owned())
                }
                Step::Filler(n) => (
                    "Read",
                    serde_json::json!({"file_path": format!("docs/notes_{}.md", n % 4)}),
                    "Notes on the parser and its many special cases. ".repeat(n),
                ),
            };
            push(
                &mut messages,
                Role::Assistant,
                vec![ContentBlock::text("Working on it."), ContentBlock::ToolUse { id: tool.clone(), name: name.into(), input }],
            );
            push(&mut messages, Role::User, vec![ContentBlock::tool_result_text(tool, result)]);
        }
        push(&mut messages, Role::Assistant, vec![ContentBlock::text("Done for now.")]);
        push(&mut messages, Role::User, vec![ContentBlock::text("Thanks, go on.")]);
        Conversation::new(messages)
    })
}

fn scripted(answer: &str) -> ScriptedLlm {
    let profile =
        LlmProfile { max_output: 1_000, ..LlmProfile::new("scripted", LlmKind::Openai, "gpt-4o", 128_000) };
    ScriptedLlm::new(profile).then_answer(answer, None)
}

const SUMMARY: &str = "The assistant worked on the parser of the todo CLI.";

/// Runs `provider` with the ledger on, a native run through a scripted LLM.
fn run_with_ledger(
    c: &Conversation,
    provider: &str,
    target: Option<usize>,
) -> condense_core::CondensationResult {
    let manager = CondensationManager::with_builtin_providers();
    let tokens = counter();
    let clock = StepClock::default();
    let llm = scripted(SUMMARY);
    let mut config = manager.registry().get_config(provider).unwrap().config.clone();
    config["ledger"] = true.into();
    if provider == "manual" {
        config["answer"] = SUMMARY.into();
    }
    let options = CondensationOptions { target_tokens: target, config, ..Default::default() };
    let services = Services::new(&tokens, &clock).with_llm(&llm);
    block_on(manager.condense(c, Some(provider), options, services)).unwrap()
}

/// What the model must still see of the messages a run hid: the instructions, the paths of
/// files changed, the open todos of the latest list.
fn must_keep(before: &Conversation, result: &condense_core::CondensationResult) -> Vec<String> {
    let hidden: Vec<&Message> = before
        .api_view()
        .into_iter()
        .filter(|m| result.messages.iter().any(|r| r.id == m.id && !r.is_visible()))
        .collect();
    let mut out = Vec::new();
    let mut todos: Vec<String> = Vec::new();
    for m in &hidden {
        for b in &m.content {
            match b {
                ContentBlock::Text { text, .. }
                    if m.role == Role::User && text.starts_with("Instruction ") =>
                {
                    out.push(text.clone());
                }
                // A list whose arguments an earlier truncation removed is not the model's to see.
                ContentBlock::ToolUse { name, input, .. }
                    if name == "TodoWrite" && input["todos"].is_array() =>
                {
                    todos = input["todos"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|t| t["status"] == "pending")
                        .map(|t| t["content"].as_str().unwrap().to_owned())
                        .collect();
                }
                ContentBlock::ToolUse { name, input, .. }
                    if name != "Read" && input.get("file_path").is_some() =>
                {
                    out.push(input["file_path"].as_str().unwrap().to_owned());
                }
                _ => {}
            }
        }
    }
    out.extend(todos);
    out
}

fn normalized(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The ledger's promise, and the view's validity for both APIs.
fn ledger_invariants(
    before: &Conversation,
    result: &condense_core::CondensationResult,
) -> Result<(), TestCaseError> {
    common_invariants(before, result)?;
    if !result.is_ok() {
        return Ok(());
    }
    let view = api_view(&result.messages);
    let text = normalized(&ledger::view_text(&view));
    for fact in must_keep(before, result) {
        prop_assert!(text.contains(&normalized(&fact)), "lost {fact:?}; view:\n{}", ledger::view_text(&view));
    }
    let retention = result.metrics.as_ref().unwrap().retention().expect("retention is reported");
    prop_assert_eq!(retention.kept, retention.probes, "missing: {:?}", retention.missing);
    // At most one ledger in the view.
    let blocks = view.iter().flat_map(|m| m.content.iter()).filter(|b| ledger::is_ledger_block(b)).count();
    prop_assert!(blocks <= 1, "{blocks} ledgers in the view");
    // Both APIs take the view.
    let condensed = Conversation { messages: view.into_iter().cloned().collect(), ..before.clone() };
    prop_assert!(parse_conversation(&to_openai(&condensed).to_string()).is_ok());
    prop_assert!(parse_conversation(&to_anthropic(&condensed).to_string()).is_ok());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(48), ..ProptestConfig::default() })]

    #[test]
    fn the_ledger_keeps_what_lossless_hides(c in session()) {
        let result = run_with_ledger(&c, "lossless", None);
        ledger_invariants(&c, &result)?;
    }

    #[test]
    fn the_ledger_keeps_what_truncation_hides(c in session(), percent in 10usize..80) {
        let before = counter().count_request(None, &c.api_view());
        let result = run_with_ledger(&c, "truncation", Some(before * percent / 100));
        ledger_invariants(&c, &result)?;
    }

    #[test]
    fn the_ledger_keeps_what_a_summary_hides(c in session(), manual in any::<bool>()) {
        let result = run_with_ledger(&c, if manual { "manual" } else { "native" }, None);
        ledger_invariants(&c, &result)?;
    }

    #[test]
    fn a_second_condensation_moves_the_ledger(c in session(), percent in 20usize..70) {
        let before = counter().count_request(None, &c.api_view());
        let first = run_with_ledger(&c, "truncation", Some(before * percent / 100));
        prop_assume!(first.is_ok());
        let c1 = Conversation { messages: first.messages.clone(), ..c.clone() };
        let second = run_with_ledger(&c1, "native", None);
        ledger_invariants(&c1, &second)?;
        if second.is_ok() {
            // What the first run hid is still kept after the second.
            let text = normalized(&ledger::view_text(&api_view(&second.messages)));
            for fact in must_keep(&c, &first) {
                prop_assert!(text.contains(&normalized(&fact)), "the second run lost {fact:?}");
            }
        }
    }
}

#[test]
fn undo_takes_the_ledger_away_with_the_condensation() {
    let mut messages =
        vec![common::text("m0", Role::User, "Port the CLI to clap 4. Never change the config file format.")];
    for k in 1..12 {
        let tool = format!("toolu_{k}");
        messages.push(Message::new(
            format!("a{k}"),
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: tool.clone(),
                name: "Edit".into(),
                input: serde_json::json!({"file_path": format!("src/cmd_{k}.rs"), "old_string": "x", "new_string": "y"}),
            }],
        ));
        messages.push(Message::new(
            format!("u{k}"),
            Role::User,
            vec![ContentBlock::tool_result_text(tool, "The file has been updated. ".repeat(30))],
        ));
    }
    messages.push(common::text("m99", Role::Assistant, "Done."));
    messages.push(common::text("m100", Role::User, "Also: keep the --verbose flag."));
    let c = Conversation::new(messages);
    let result = run_with_ledger(&c, "truncation", Some(300));
    assert!(result.is_ok(), "{:?}", result.error);
    let view = api_view(&result.messages);
    let block = view
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|b| match b {
            ContentBlock::Text { text, .. } if ledger::is_ledger_block(b) => Some(text.clone()),
            _ => None,
        })
        .expect("a ledger in the view");
    let parsed = Ledger::parse(&block).unwrap();
    assert!(parsed.files.iter().any(|f| f.path == "src/cmd_1.rs"), "{block}");
    let (_, undone) = undo_last(&result.messages).unwrap();
    assert_eq!(undone, c.messages);
    assert!(!undone.iter().flat_map(|m| m.content.iter()).any(ledger::is_ledger_block));
}

/// A session whose middle holds an instruction, a file edit and an open todo.
fn session_with_facts() -> Conversation {
    let filler = "The parser handles quoting, escapes and nested groups. ".repeat(20);
    let mut messages = vec![common::text("m0", Role::User, "Make the parser accept nested groups.")];
    messages.push(common::text("m1", Role::Assistant, &filler));
    messages.push(common::text(
        "m2",
        Role::User,
        "Never rename public functions; keep `parse_line` as it is.",
    ));
    messages.push(Message::new(
        "m3",
        Role::Assistant,
        vec![
            ContentBlock::ToolUse {
                id: "t1".into(),
                name: "Edit".into(),
                input: serde_json::json!({"file_path": "src/groups.rs", "old_string": "a", "new_string": "b"}),
            },
            ContentBlock::ToolUse {
                id: "t2".into(),
                name: "TodoWrite".into(),
                input: serde_json::json!({"todos": [{"content": "Handle empty groups", "status": "pending"}]}),
            },
        ],
    ));
    messages.push(Message::new(
        "m4",
        Role::User,
        vec![
            ContentBlock::tool_result_text("t1", filler.clone()),
            ContentBlock::tool_result_text("t2", "ok"),
        ],
    ));
    messages.push(common::text("m5", Role::Assistant, &filler));
    messages.push(common::text("m6", Role::User, "Go on."));
    messages.push(common::text("m7", Role::Assistant, "Continuing."));
    messages.push(common::text("m8", Role::User, "Status?"));
    Conversation::new(messages)
}

fn native(c: &Conversation, ledger: bool) -> condense_core::CondensationResult {
    let manager = CondensationManager::with_builtin_providers();
    let tokens = counter();
    let clock = StepClock::default();
    let llm = scripted(SUMMARY);
    let options =
        CondensationOptions { config: serde_json::json!({ "ledger": ledger }), ..Default::default() };
    block_on(manager.condense(c, Some("native"), options, Services::new(&tokens, &clock).with_llm(&llm)))
        .unwrap()
}

#[test]
fn a_summary_carries_the_ledger_and_the_probes_find_everything() {
    let c = session_with_facts();
    let result = native(&c, true);
    assert!(result.is_ok(), "{:?}", result.error);
    let summary = result.messages.iter().find(|m| m.is_summary).unwrap();
    assert_eq!(summary.content.len(), 2, "the summary, then the ledger");
    let ContentBlock::Text { text, .. } = &summary.content[1] else { panic!() };
    let l = Ledger::parse(text).unwrap();
    assert!(l.user_messages.iter().any(|w| w.text.starts_with("Never rename public functions")), "{text}");
    assert!(l.files.iter().any(|f| f.path == "src/groups.rs"));
    assert_eq!(l.todos[0].text, "Handle empty groups");
    // The first message is left as it was: the ledger went on the summary.
    assert_eq!(api_view(&result.messages)[0], &c.messages[0]);
    let retention = result.metrics.unwrap().retention().unwrap();
    // The user's message, its instruction, the file, the todo.
    assert_eq!((retention.kept, retention.probes, retention.repaired), (4, 4, 0));
}

#[test]
fn with_the_ledger_off_what_the_summary_left_out_is_put_back_on_it() {
    let c = session_with_facts();
    let result = native(&c, false);
    assert!(result.is_ok(), "{:?}", result.error);
    assert!(!result.messages.iter().flat_map(|m| m.content.iter()).any(ledger::is_ledger_block));
    let summary = result.messages.iter().find(|m| m.is_summary).unwrap();
    let ContentBlock::Text { text, .. } = summary.content.last().unwrap() else { panic!() };
    assert!(text.starts_with("Items the summary left out"), "{text}");
    assert!(text.contains("Never rename public functions") && text.contains("src/groups.rs"));
    assert!(text.contains("Handle empty groups"));
    let retention = result.metrics.unwrap().retention().unwrap();
    assert_eq!((retention.kept, retention.probes, retention.repaired), (4, 4, 4));
    assert!(retention.missing.is_empty());
}

/// `c` with a client wrapper marked as such on every user turn but the first: text naming
/// `CLIENTMARK`, which the user never wrote — without the tags the ledger strips by themselves,
/// so only the mark keeps it out of the user's words — and big enough for mask to hide.
fn with_client_context(c: Conversation) -> Conversation {
    let mut messages = c.messages;
    for (i, m) in messages.iter_mut().enumerate().skip(1) {
        if m.role == Role::User {
            let tabs: String = (0..40).map(|f| format!("src/module_{f}.rs\n")).collect();
            let text = format!("# CLIENTMARK {i}\n# Open tabs\n{tabs}");
            m.content.push(ContentBlock::Text { text, client: Some(ClientContext::EnvironmentDetails) });
        }
    }
    Conversation { messages, ..c }
}

/// The client context blocks of a view, in order: (message id, text).
fn client_blocks(view: &[&Message]) -> Vec<(String, String)> {
    view.iter()
        .flat_map(|m| {
            m.content.iter().filter_map(|b| match b {
                ContentBlock::Text { text, client: Some(_) } => Some((m.id.clone(), text.clone())),
                _ => None,
            })
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(32), ..ProptestConfig::default() })]

    /// (k) Client context is never reported as the user's words: not by the ledger of the
    /// messages, nor in the ledger a condensation adds, whatever the provider; client text keeps
    /// its mark wherever it goes (a mask placeholder included); the latest client context stays
    /// in the view as it was; mask hides every older one; the runs keep their invariants.
    #[test]
    fn client_context_is_never_the_users_words(c in conversation(), percent in 10usize..70) {
        let c = with_client_context(c);
        let ledger = Ledger::of(&c.api_view());
        for words in &ledger.user_messages {
            prop_assert!(!words.text.contains("CLIENTMARK"), "{}", words.text);
        }
        let tokens = counter();
        let before = tokens.count_request(c.system.as_deref(), &c.api_view());
        let input = client_blocks(&c.api_view());
        let latest = input.last().cloned().expect("a client block on the last user turn");
        for (provider, target) in [
            ("truncation", Some(before * percent / 100)),
            ("lossless", None),
            ("superseded", None),
            ("mask", None),
            ("smart", Some(before * percent / 100)),
            ("native", None),
        ] {
            let result = run_with_ledger(&c, provider, target);
            common_invariants(&c, &result)?;
            let view = api_view(&result.messages);
            for m in &view {
                for b in &m.content {
                    if let ContentBlock::Text { text, client } = b {
                        // Client text is only ever in a marked block: never the user's words.
                        prop_assert!(
                            client.is_some() || !text.contains("CLIENTMARK"),
                            "{provider}: client text without its mark: {}", text
                        );
                        if ledger::is_ledger_block(b) {
                            prop_assert!(!text.contains("CLIENTMARK"), "{provider}: the ledger quotes: {}", text);
                        }
                    }
                }
            }
            let after = client_blocks(&view);
            prop_assert!(
                after.iter().any(|(_, text)| *text == latest.1),
                "{provider}: the latest client context left the view (error: {:?})", result.error
            );
            if provider == "mask" && result.is_ok() {
                // Every older one is behind a marked placeholder.
                prop_assert_eq!(after.len(), input.len());
                for (_, text) in &after[..after.len() - 1] {
                    prop_assert!(text.starts_with("[the client's environment details: "), "{}", text);
                }
            }
        }
    }
}

// Pins (issue 18): no provider hides or edits a pinned message.

/// Pins the visible messages `picks` points at (indices modulo the count), with their tool-pair
/// partners, the way the chat does.
fn pin_some(mut c: Conversation, picks: &[usize]) -> Conversation {
    for &p in picks {
        let visible: Vec<String> = c.api_view().iter().map(|m| m.id.clone()).collect();
        let id = &visible[p % visible.len()];
        c.messages = condense_core::pins::set_pinned(&c.messages, id, true).unwrap().0;
    }
    c
}

/// (l): the pinned messages of `before` are in the result's API view as they were.
fn pins_kept(
    before: &Conversation,
    result: &condense_core::CondensationResult,
    provider: &str,
) -> Result<(), TestCaseError> {
    let view = api_view(&result.messages);
    for m in before.api_view().into_iter().filter(|m| m.pinned) {
        prop_assert!(
            view.contains(&m),
            "{provider}: pinned message {} is not in the view unchanged (error: {:?})",
            m.id,
            result.error
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(48), ..ProptestConfig::default() })]

    /// (l) for every provider, with random pins, on generic conversations and on agent sessions.
    #[test]
    fn no_provider_hides_or_edits_a_pinned_message(
        generic in conversation(),
        agent in session(),
        picks in prop::collection::vec(0usize..64, 1..4),
        percent in 5usize..80,
    ) {
        for c in [pin_some(generic, &picks), pin_some(agent, &picks)] {
            let before = counter().count_request(c.system.as_deref(), &c.api_view());
            for provider in ["lossless", "truncation", "superseded", "mask", "smart", "native", "manual"] {
                let result = run_with_ledger(&c, provider, Some(before * percent / 100));
                common_invariants(&c, &result)?;
                pins_kept(&c, &result, provider)?;
            }
        }
    }
}

/// Pins do not stop a summary: the messages around a pinned one are summarized, the pinned one
/// stays in the view where it was.
#[test]
fn a_summary_hides_around_a_pinned_message() {
    let c = session_with_facts();
    let pinned_id = c.api_view()[2].id.clone();
    let c = pin_some(c, &[2]);
    let result = run_with_ledger(&c, "native", None);
    assert!(result.is_ok(), "{:?}", result.error);
    let view = api_view(&result.messages);
    assert!(view.iter().any(|m| m.is_summary));
    assert!(view.iter().any(|m| m.id == pinned_id && m.pinned));
    assert!(result.messages.iter().any(|m| !m.is_visible()), "something was hidden");
}

/// A long user message: prose, an instruction (or two) in its middle, and, sometimes, a pasted
/// log — the shape of the real task messages whose instructions a head-and-tail cut lost.
fn instructed_message(k: usize, prose: usize, pasted: bool, chinese: bool) -> String {
    let filler = |n: usize| {
        (0..n)
            .map(|i| format!("The report mentions clouds over region {i} and a calm sea. "))
            .collect::<String>()
    };
    let mut text = filler(prose);
    text.push_str(&format!("Do one phase at a time; do not proceed until I approve phase {k}. "));
    if chinese {
        text.push_str(&format!("每个阶段完成后请等我确认再继续第{k}步。"));
    }
    text.push_str(&filler(prose / 2));
    text.push_str(&format!("Never modify the migrations of module {k}."));
    if pasted {
        text.push_str("\n\n```\n");
        text.push_str(
            &(0..60)
                .map(|i| format!("2026-01-01 12:00:{i:02} request served in {i} ms\n"))
                .collect::<String>(),
        );
        text.push_str("```\n");
    }
    text
}

/// A session whose user messages hold instructions inside long text, between tool work.
fn instructed_session() -> impl Strategy<Value = Conversation> {
    prop::collection::vec((0usize..40, any::<bool>(), any::<bool>(), 1usize..30), 3..10).prop_map(|turns| {
        let mut messages = vec![Message::new(
            "m0",
            Role::User,
            vec![ContentBlock::text(instructed_message(0, 20, true, true))],
        )];
        for (k, (prose, pasted, chinese, filler)) in turns.into_iter().enumerate() {
            let n = messages.len();
            let tool = format!("toolu_{k}");
            messages.push(Message::new(
                format!("m{n}"),
                Role::Assistant,
                vec![
                    ContentBlock::text("Reading."),
                    ContentBlock::ToolUse {
                        id: tool.clone(),
                        name: "Read".into(),
                        input: serde_json::json!({"file_path": format!("src/part_{}.rs", k % 3)}),
                    },
                ],
            ));
            messages.push(Message::new(
                format!("m{}", n + 1),
                Role::User,
                vec![ContentBlock::tool_result_text(tool, "fn body() { let x = 1; }\n".repeat(filler))],
            ));
            messages.push(Message::new(
                format!("m{}", n + 2),
                Role::Assistant,
                vec![ContentBlock::text("Understood.")],
            ));
            messages.push(Message::new(
                format!("m{}", n + 3),
                Role::User,
                vec![ContentBlock::text(instructed_message(k + 1, prose, pasted, chinese))],
            ));
        }
        let n = messages.len();
        messages.push(Message::new(format!("m{n}"), Role::Assistant, vec![ContentBlock::text("On it.")]));
        messages.push(Message::new(format!("m{}", n + 1), Role::User, vec![ContentBlock::text("Go on.")]));
        Conversation::new(messages)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::cases(32), ..ProptestConfig::default() })]

    /// No instruction of a hidden user message is missing from the condensed view, whatever the
    /// provider and whatever target above the floor (a target below it is refused, naming it).
    #[test]
    fn no_instruction_of_a_hidden_message_is_lost(
        c in instructed_session(),
        provider in prop::sample::select(vec!["lossless", "truncation", "mask", "superseded", "smart", "native", "manual"]),
        percent in 5usize..95,
    ) {
        let before = counter().count_request(None, &c.api_view());
        let result = run_with_ledger(&c, provider, Some(before * percent / 100));
        if let Some(e) = &result.error {
            prop_assert!(
                ["target_below_floor", "nothing_to_condense", "insufficient_gain"].contains(&e.kind.as_str()),
                "{provider}: {e:?}"
            );
            return Ok(());
        }
        common_invariants(&c, &result)?;
        let view = api_view(&result.messages);
        let text = normalized(&ledger::view_text(&view));
        for m in c.api_view() {
            let hidden = result.messages.iter().any(|r| r.id == m.id && !r.is_visible());
            if !hidden || m.role != Role::User {
                continue;
            }
            let words = ledger::user_words(&m.text());
            let instructions = ledger::constraints(&words);
            prop_assert!(!instructions.is_empty() || !words.contains("approve"), "the detector missed: {words}");
            for sentence in instructions {
                prop_assert!(
                    text.contains(&normalized(sentence)),
                    "{provider} at {percent}%: lost {sentence:?}; view:\n{}",
                    ledger::view_text(&view)
                );
            }
        }
        let retention = result.metrics.as_ref().unwrap().retention().expect("retention is reported");
        prop_assert_eq!(retention.kept, retention.probes, "missing: {:?}", retention.missing);
    }
}
