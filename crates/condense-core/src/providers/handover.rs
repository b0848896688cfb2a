//! The `handover` pass of `smart` (SPEC §4, "working state"): hides whole older turns — the
//! model's message and the results and words that answer it — so that what they did reaches the
//! model through the state ledger's working state (the files and what is in them, the errors and
//! whether they were fixed, the commands, the findings) instead of as placeholders that say
//! nothing. No LLM, zero cost, undoable.
//!
//! Turns are hidden by relevance, not age alone: the turns that hold none of the names the kept
//! tail uses (its paths, identifiers, `code spans`) go first, oldest first; then the ones it
//! still refers to, the least referred to first; the newest turns are the last to go. The first
//! message, the last `keep_last`, pinned messages and summaries stay. A turn is hidden only where
//! the conversation stays valid: it starts with the model's message, ends with a user's, and its
//! tool calls and results pair within it.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use crate::config::{ConfigField, ConfigForm, Form, ledger_field};
use crate::error::CondenseError;
use crate::model::{ContentBlock, Message, Role, next_condense_id};
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, Needs, ProviderMeta, Services,
    TargetFloor, TemplateToken, apply_edits,
};
use crate::tokens::TokenCounter;

use super::floor::{Reach, ReachConfig};
use super::relevance::Relevance;

/// Configuration of the `handover` pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HandoverConfig {
    /// Messages at the end kept as they are.
    pub keep_last: usize,
    /// Target as a percentage of the current context, used when no target in tokens is given.
    pub target_percent: u8,
    /// Keep the state ledger of what the run hides (it is what makes the turns hidden worth it).
    pub ledger: bool,
}

impl Default for HandoverConfig {
    fn default() -> Self {
        HandoverConfig { keep_last: 3, target_percent: 50, ledger: true }
    }
}

impl ReachConfig for HandoverConfig {
    fn reach(&self) -> (usize, u8) {
        (self.keep_last, self.target_percent)
    }
}

impl ConfigForm for HandoverConfig {
    fn fields() -> Vec<ConfigField> {
        vec![
            ConfigField::integer("keep_last", "Keep last", "Messages at the end of the conversation never hidden.", 0, None)
                .unit("messages"),
            ConfigField::integer(
                "target_percent",
                "Target",
                "How small the context should get, in percent of its current size, when no target in tokens is given.",
                1,
                Some(100),
            )
            .unit("%"),
            ledger_field(),
        ]
    }
}

/// The share of the target, in percent, below which a turn is not hidden: a run lands at 80–100%
/// of its target when it can.
const LAND_PERCENT: usize = 80;

/// Hides whole older turns, least relevant first, for the ledger's working state to carry.
#[derive(Debug, Default, Clone, Copy)]
pub struct HandoverProvider;

const META: ProviderMeta = ProviderMeta {
    id: "handover",
    name: "Handover",
    description: "Hides whole older turns — those the latest messages no longer refer to first — and hands what they did to the state ledger's working state: files and their outlines, errors and fixes, commands, findings. No LLM, no cost.",
    needs: Needs::Nothing,
};

/// A turn of the middle: the model's message and what follows it up to the next one, by index
/// into the context's messages.
#[derive(Debug)]
struct Turn {
    messages: Vec<usize>,
    /// Whether hiding it keeps the conversation valid.
    hideable: bool,
}

/// The turns of `middle` (visible indices, in order): each starts at a model's message.
/// Messages before the first model's message form no turn.
fn turns(messages: &[Message], middle: &[usize], pinned: &BTreeSet<usize>) -> Vec<Turn> {
    let mut out: Vec<Turn> = Vec::new();
    for &i in middle {
        if messages[i].role == Role::Assistant || out.is_empty() {
            out.push(Turn { messages: vec![i], hideable: messages[i].role == Role::Assistant });
        } else if let Some(last) = out.last_mut() {
            last.messages.push(i);
        }
    }
    for turn in &mut out {
        let last = *turn.messages.last().expect("a turn has a message");
        let mut calls: HashSet<&str> = HashSet::new();
        let mut answered: HashSet<&str> = HashSet::new();
        for &i in &turn.messages {
            for block in &messages[i].content {
                match block {
                    ContentBlock::ToolUse { id, .. } => {
                        calls.insert(id.as_str());
                    }
                    ContentBlock::ToolResult { tool_use_id, .. } => {
                        answered.insert(tool_use_id.as_str());
                    }
                    _ => {}
                }
            }
        }
        turn.hideable = turn.hideable
            && messages[last].role == Role::User
            && calls == answered
            && turn.messages.iter().all(|i| !pinned.contains(i) && !messages[*i].is_summary);
    }
    out
}

/// Whether a turn's model message only calls todo-list tools.
fn only_todo(messages: &[Message], turn: &[usize]) -> bool {
    let calls: Vec<&ContentBlock> =
        messages[turn[0]].content.iter().filter(|b| matches!(b, ContentBlock::ToolUse { .. })).collect();
    !calls.is_empty() && calls.iter().all(|b| super::relevance::is_todo_call(b))
}

#[async_trait::async_trait(?Send)]
impl CondensationProvider for HandoverProvider {
    fn meta(&self) -> &ProviderMeta {
        &META
    }

    fn config_form(&self) -> Form {
        Form::of::<HandoverConfig>()
    }

    fn target_and_floor(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        tokens: &dyn TokenCounter,
    ) -> Result<Option<TargetFloor>, CondenseError> {
        Ok(Some(Reach::configured::<HandoverConfig>(ctx, options, self.id())?.target_floor(ctx, tokens)))
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _token: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let span = Reach::configured::<HandoverConfig>(ctx, options, self.id())?.span(ctx)?;
        let Reach { keep_last, target } = span.reach;
        let before = ctx.prev_context_tokens;
        let all = turns(ctx.messages, span.middle(), &ctx.pinned());
        let relevance = Relevance::of_tail(&span.tail(ctx.messages));
        // Unreferenced first, oldest first; then the least referred to, oldest first. A turn that
        // only updated the todo list is superseded by the latest list (the ledger keeps it).
        let mut order: Vec<(usize, usize)> = all
            .iter()
            .enumerate()
            .filter(|(_, t)| t.hideable)
            .map(|(k, t)| {
                let score = match only_todo(ctx.messages, &t.messages) {
                    true => 0,
                    false => t.messages.iter().map(|&i| relevance.score(&ctx.messages[i])).max().unwrap_or(0),
                };
                (score, k)
            })
            .collect();
        if order.is_empty() {
            return Err(CondenseError::NothingToCondense(format!(
                "no whole turn between the first message and the last {keep_last} can be hidden"
            )));
        }
        order.sort_by_key(|&(score, k)| (score, k));
        let tokens = services.tokens;
        let mut total = before;
        let mut removed: BTreeSet<usize> = BTreeSet::new();
        let mut hidden_turns: Vec<usize> = Vec::new();
        // A turn whose hiding would land far below the target is passed over for a later one
        // that lands near it; when none does, the pass stops above the target and leaves the
        // rest to the passes after it (truncation cuts part way).
        let floor = target * LAND_PERCENT / 100;
        let sizes: Vec<usize> = all
            .iter()
            .map(|t| t.messages.iter().map(|&i| tokens.count_message(&ctx.messages[i])).sum())
            .collect();
        for &(_, k) in &order {
            if total <= target {
                break;
            }
            let after = total.saturating_sub(sizes[k]);
            if after < floor {
                continue;
            }
            total = after;
            removed.extend(all[k].messages.iter().copied());
            hidden_turns.push(k);
        }
        // The turns the tail refers to that stayed while a newer one it does not refer to went.
        let newest_unreferenced =
            order.iter().filter(|(s, k)| *s == 0 && hidden_turns.contains(k)).map(|(_, k)| *k).max();
        let kept_for_relevance = order
            .iter()
            .filter(|(s, k)| {
                *s > 0 && !hidden_turns.contains(k) && newest_unreferenced.is_some_and(|n| *k < n)
            })
            .count();
        let condense_id = next_condense_id(ctx.messages);
        let messages = apply_edits(ctx.messages, &condense_id, &BTreeMap::new(), &removed);
        let mut metrics = span.reach.metrics(condense_id, total);
        metrics.insert("turns_hidden".into(), hidden_turns.len().into());
        metrics.insert("messages_hidden".into(), removed.len().into());
        metrics.insert("kept_for_relevance".into(), kept_for_relevance.into());
        Ok(Condensed { messages, summary: None, cost: 0.0, metrics })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::run_provider;
    use crate::tokens::{Encoding, TiktokenCounter};

    struct Still;

    impl crate::host::Clock for Still {
        fn now_ms(&self) -> f64 {
            0.0
        }
    }
    use serde_json::json;

    fn call(id: &str, path: &str) -> Message {
        Message::new(
            format!("a{id}"),
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: id.into(),
                name: "Read".into(),
                input: json!({ "file_path": path }),
            }],
        )
    }

    fn result(id: &str, text: &str) -> Message {
        Message::new(format!("u{id}"), Role::User, vec![ContentBlock::tool_result_text(id, text)])
    }

    #[test]
    fn unreferenced_turns_go_first_and_the_tail_keeps_what_it_names() {
        let body = |name: &str| format!("fn {name}() {{}}\n{}", "// filler line of the file\n".repeat(60));
        let messages = vec![
            Message::new("u0", Role::User, vec![ContentBlock::text("Fix the parser.")]),
            call("1", "src/parser.rs"),
            result("1", &body("parse_header")),
            call("2", "src/unused.rs"),
            result("2", &body("unused_thing")),
            call("3", "src/other.rs"),
            result("3", &body("other_thing")),
            Message::new(
                "a4",
                Role::Assistant,
                vec![ContentBlock::text("Now I change `parse_header` in src/parser.rs.")],
            ),
            Message::new("u4", Role::User, vec![ContentBlock::text("Go on.")]),
            Message::new("a5", Role::Assistant, vec![ContentBlock::text("Done.")]),
        ];
        let counter = TiktokenCounter::new(Encoding::O200kBase);
        let services = Services::new(&counter, &Still);
        let before = counter.count_request(None, &messages.iter().collect::<Vec<_>>());
        let options = CondensationOptions {
            target_tokens: Some(before * 60 / 100),
            config: json!({ "ledger": false }),
            ..Default::default()
        };
        let r =
            futures::executor::block_on(run_provider(&HandoverProvider, &messages, None, &options, services));
        assert!(r.is_ok(), "{:?}", r.error);
        let visible: Vec<&str> =
            r.messages.iter().filter(|m| m.is_visible()).map(|m| m.id.as_str()).collect();
        // The turn the tail refers to (src/parser.rs) stays; the others go, oldest first.
        assert!(visible.contains(&"a1") && visible.contains(&"u1"), "{visible:?}");
        assert!(!visible.contains(&"a2"), "{visible:?}");
        let metrics = r.metrics.unwrap();
        assert_eq!(metrics.extra["kept_for_relevance"], 1);
        // Nothing lost: every message is still there.
        assert_eq!(r.messages.len(), messages.len());
    }
}
