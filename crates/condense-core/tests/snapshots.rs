//! Snapshots of condensed transcripts: what each provider does to a small coding session, as a
//! person reviewing the change would read it. `cargo insta review` after an intended change.

mod common;

use common::{StepClock, block_on, counter};
use condense_core::formats::parse_conversation;
use condense_core::model::{ContentBlock, ToolResultPart};
use condense_core::{CondensationManager, CondensationOptions, CondensationResult, Conversation, Services};

/// The fixtures are compiled in: the core's tests do no IO either.
const SMALL_SESSION: &str = include_str!("../../../tests/fixtures/small-session.json");
const OPENAI_CHAT: &str = include_str!("../../../tests/fixtures/openai-chat.json");

fn fixture(text: &str) -> Conversation {
    parse_conversation(text).unwrap().conversation
}

fn preview(s: &str) -> String {
    let one_line = s.replace('\n', "⏎");
    let cut: String = one_line.chars().take(56).collect();
    if cut.len() < one_line.len() { format!("{cut}… ({} bytes)", s.len()) } else { cut }
}

/// One line per message, hidden ones included, with the condensation markers.
fn transcript(result: &CondensationResult) -> String {
    let mut out = String::new();
    for m in &result.messages {
        let mut flags = String::new();
        if let Some(p) = &m.condense_parent {
            flags.push_str(&format!(" [hidden by {p}]"));
        }
        if let Some(c) = &m.condense_id {
            flags.push_str(&format!(" [from {c}]"));
        }
        if m.is_summary {
            flags.push_str(" [summary]");
        }
        out.push_str(&format!("{} {:?}{flags}\n", m.id, m.role));
        for b in &m.content {
            let line = match b {
                // The ledger is shown whole: it is what a reviewer checks.
                ContentBlock::Text { text, .. } if text.starts_with(condense_core::ledger::OPEN_TAG) => {
                    format!("ledger:\n        {}", text.replace('\n', "\n        "))
                }
                ContentBlock::Text { text, .. } => format!("text: {}", preview(text)),
                ContentBlock::ToolUse { id, name, input } => format!("tool_use {id} {name} {input}"),
                ContentBlock::ToolResult { tool_use_id, content, .. } => {
                    let body: Vec<String> = content
                        .iter()
                        .map(|p| match p {
                            ToolResultPart::Text { text } => preview(text),
                            ToolResultPart::Image { .. } => "<image>".into(),
                        })
                        .collect();
                    format!("tool_result {tool_use_id}: {}", body.join(" | "))
                }
                ContentBlock::Image { .. } => "<image>".into(),
                ContentBlock::Opaque(o) => format!("<{} block>", o.kind()),
            };
            out.push_str(&format!("    {line}\n"));
        }
    }
    let mut metrics = result.metrics.clone().unwrap();
    metrics.time_elapsed_ms = 0.0;
    out.push_str(&format!(
        "error: {:?}\nmetrics: {}\n",
        result.error,
        serde_json::to_string(&metrics).unwrap()
    ));
    out
}

fn condense(c: &Conversation, provider: &str, options: CondensationOptions) -> CondensationResult {
    let tokens = counter();
    let clock = StepClock::default();
    let manager = CondensationManager::with_builtin_providers();
    block_on(manager.condense(c, Some(provider), options, Services::new(&tokens, &clock))).unwrap()
}

#[test]
fn lossless_on_the_small_session() {
    let result = condense(&fixture(SMALL_SESSION), "lossless", CondensationOptions::default());
    insta::assert_snapshot!(transcript(&result));
}

#[test]
fn truncation_on_the_small_session() {
    let options = CondensationOptions { target_tokens: Some(400), keep_last: Some(3), ..Default::default() };
    let result = condense(&fixture(SMALL_SESSION), "truncation", options);
    insta::assert_snapshot!(transcript(&result));
}

#[test]
fn truncation_to_a_tight_target_removes_whole_turns() {
    let options = CondensationOptions { target_tokens: Some(150), keep_last: Some(2), ..Default::default() };
    let result = condense(&fixture(SMALL_SESSION), "truncation", options);
    insta::assert_snapshot!(transcript(&result));
}

#[test]
fn truncation_on_an_openai_import() {
    let c = fixture(OPENAI_CHAT);
    let result = condense(
        &c,
        "truncation",
        CondensationOptions { target_tokens: Some(40), keep_last: Some(1), ..Default::default() },
    );
    insta::assert_snapshot!(transcript(&result));
}
