//! Property tests of the providers' invariants: (a) the API view's tool pairs stay valid; (b) undo
//! restores the exact previous conversation; (c) lossless: every removed byte has an identical copy
//! still in the view; (d) truncation keeps the first and the last N messages as they are; (e)
//! tokens after never exceed tokens before; and a failed run hands back the input untouched.

mod common;

use common::{StepClock, block_on, counter};
use condense_core::model::{
    ContentBlock, Message, Role, ToolResultPart, api_view, check_tool_pairs, undo_last,
};
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
                        messages.push(Message::new(
                            format!("m{n}"),
                            Role::Assistant,
                            vec![ContentBlock::text(a)],
                        ));
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

/// Every text in a view: text blocks and tool result text parts.
fn texts(view: &[&Message]) -> Vec<String> {
    let mut out = Vec::new();
    for m in view {
        for b in &m.content {
            match b {
                ContentBlock::Text { text } => out.push(text.clone()),
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
    // (b) undo restores the exact previous conversation, hence its API view.
    let (_, undone) = undo_last(&result.messages).expect("a condensation to undo");
    prop_assert_eq!(&undone, &before.messages);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

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
            // (d) the first message and the last N are identical to the input.
            prop_assert_eq!(old[0], new[0]);
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
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

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
