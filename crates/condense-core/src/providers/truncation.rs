//! The `truncation` provider (SPEC §4): no LLM. Keeps the first message and the last N as they
//! are, and removes content from the oldest messages in between, in the order tool results → tool
//! parameters → assistant text → user text (images with user text), until the target is met. If
//! stubbing every block is not enough, whole messages go from the oldest end of the middle, cut
//! only where the conversation stays valid. Blocks are replaced by short stubs rather than
//! removed, so every `tool_use` keeps its `tool_result` and the roles keep alternating: the result
//! is valid for both the OpenAI and the Anthropic API.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::CondenseError;
use crate::model::{ContentBlock, Message, Role, ToolResultPart, next_condense_id};
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, Services, TemplateToken,
    apply_edits,
};

use crate::config::{ConfigField, ConfigForm, Form};

/// Configuration of the `truncation` provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TruncationConfig {
    /// Messages at the end kept as they are.
    pub keep_last: usize,
    /// Target as a percentage of the current context, used when no target in tokens is given.
    pub target_percent: u8,
    /// Keep the state ledger of what the run hides (see `crate::ledger`).
    pub ledger: bool,
}

impl Default for TruncationConfig {
    fn default() -> Self {
        TruncationConfig { keep_last: 3, target_percent: 50, ledger: true }
    }
}

impl ConfigForm for TruncationConfig {
    fn fields() -> Vec<ConfigField> {
        vec![
            ConfigField::integer(
                "keep_last",
                "Keep last",
                "Messages at the end of the conversation never truncated.",
                0,
                None,
            )
            .unit("messages"),
            ConfigField::integer(
                "target_percent",
                "Target",
                "How small the context should get, in percent of its current size, when no target in tokens is given.",
                1,
                Some(100),
            )
            .unit("%"),
            crate::config::ledger_field(),
        ]
    }
}

/// Truncates the oldest middle of the conversation to a token target.
#[derive(Debug, Default, Clone, Copy)]
pub struct TruncationProvider;

/// The passes, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    ToolResults,
    ToolParameters,
    AssistantText,
    UserText,
}

impl Pass {
    const ALL: [Pass; 4] = [Pass::ToolResults, Pass::ToolParameters, Pass::AssistantText, Pass::UserText];

    fn name(self) -> &'static str {
        match self {
            Pass::ToolResults => "tool_results",
            Pass::ToolParameters => "tool_parameters",
            Pass::AssistantText => "assistant_text",
            Pass::UserText => "user_text",
        }
    }

    /// The stub for a block this pass removes, or `None` when the pass leaves the block alone.
    fn stub(self, role: Role, block: &ContentBlock) -> Option<ContentBlock> {
        match (self, block) {
            (Pass::ToolResults, ContentBlock::ToolResult { tool_use_id, content, is_error }) => {
                let size: usize = content
                    .iter()
                    .map(|p| match p {
                        ToolResultPart::Text { text } => text.len(),
                        ToolResultPart::Image { .. } => 0,
                    })
                    .sum();
                let images = content.iter().filter(|p| matches!(p, ToolResultPart::Image { .. })).count();
                let what = if images > 0 {
                    format!("{size} characters and {images} image(s)")
                } else {
                    format!("{size} characters")
                };
                Some(ContentBlock::ToolResult {
                    tool_use_id: tool_use_id.clone(),
                    content: vec![ToolResultPart::Text {
                        text: format!("[tool result truncated by Context Condenser: {what} removed]"),
                    }],
                    is_error: *is_error,
                })
            }
            (Pass::ToolParameters, ContentBlock::ToolUse { id, name, input }) => {
                let size = input.to_string().len();
                Some(ContentBlock::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: serde_json::json!({
                        "truncated_by_context_condenser": format!("{size} characters of arguments removed")
                    }),
                })
            }
            (Pass::AssistantText, ContentBlock::Text { text }) if role == Role::Assistant => {
                Some(ContentBlock::text(format!(
                    "[assistant text truncated by Context Condenser: {} characters removed]",
                    text.len()
                )))
            }
            (Pass::UserText, ContentBlock::Text { text }) if role == Role::User => Some(ContentBlock::text(
                format!("[user text truncated by Context Condenser: {} characters removed]", text.len()),
            )),
            (Pass::UserText, ContentBlock::Image { .. }) => {
                Some(ContentBlock::text("[image removed by Context Condenser]"))
            }
            _ => None,
        }
    }
}

#[async_trait::async_trait(?Send)]
impl CondensationProvider for TruncationProvider {
    fn id(&self) -> &str {
        "truncation"
    }

    fn name(&self) -> &str {
        "Truncation"
    }

    fn description(&self) -> &str {
        "Keeps the first and the last N messages and trims the oldest in between — tool results first, then tool parameters, assistant text, user text — until the target is met. No LLM, no cost."
    }

    fn config_form(&self) -> Form {
        Form::of::<TruncationConfig>()
    }

    fn estimate_cost(&self, _: &CondensationContext<'_>, _: &CondensationOptions, _: Services<'_>) -> f64 {
        0.0
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _token: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let config: TruncationConfig = options.typed_config(self.id())?;
        let keep_last = options.keep_last.unwrap_or(config.keep_last);
        let before = ctx.prev_context_tokens;
        let target = options.target_tokens.unwrap_or(before * usize::from(config.target_percent) / 100);
        if before <= target {
            return Err(CondenseError::NothingToCondense(format!(
                "the context has {before} tokens, already within the target of {target}"
            )));
        }
        let visible: Vec<usize> = (0..ctx.messages.len()).filter(|&i| ctx.messages[i].is_visible()).collect();
        // The middle: after the first visible message, before the last `keep_last`.
        let middle_end = visible.len().saturating_sub(keep_last).max(1);
        let middle: Vec<usize> = visible.get(1..middle_end).map(<[usize]>::to_vec).unwrap_or_default();
        if middle.is_empty() {
            return Err(CondenseError::NothingToCondense(format!(
                "{} messages: nothing between the first and the last {keep_last}",
                visible.len()
            )));
        }

        let tokens = services.tokens;
        let mut total = before;
        let mut replaced: BTreeMap<usize, Vec<ContentBlock>> = BTreeMap::new();
        // (message, pass) of every block stubbed, so the metrics count only what the result keeps.
        let mut stubbed: Vec<(usize, Pass)> = Vec::new();
        'passes: for pass in Pass::ALL {
            for &mi in &middle {
                if total <= target {
                    break;
                }
                let original = &ctx.messages[mi];
                let mut current = replaced.get(&mi).cloned().unwrap_or_else(|| original.content.clone());
                for bi in 0..current.len() {
                    if total <= target {
                        break;
                    }
                    let Some(stub) = pass.stub(original.role, &current[bi]) else { continue };
                    let old_tokens = message_tokens(tokens, original, &current);
                    let old_block = std::mem::replace(&mut current[bi], stub);
                    let new_tokens = message_tokens(tokens, original, &current);
                    if new_tokens >= old_tokens {
                        current[bi] = old_block;
                        continue;
                    }
                    total -= old_tokens - new_tokens;
                    stubbed.push((mi, pass));
                    replaced.insert(mi, current.clone());
                }
            }
            if total <= target {
                break 'passes;
            }
        }

        // Still above target: hide whole messages from the oldest end of the middle, cutting only
        // where the next kept message starts a valid continuation after the first message.
        let mut removed = BTreeSet::new();
        if total > target {
            let first_role = ctx.messages[visible[0]].role;
            let next_after = |k: usize| -> Option<&Message> {
                middle.get(k).or_else(|| visible.get(middle_end)).map(|&i| &ctx.messages[i])
            };
            let valid_cut = |k: usize| {
                next_after(k).is_none_or(|m| {
                    m.role != first_role
                        && !m.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. }))
                })
            };
            let mut running = total;
            let mut best: Option<(usize, usize)> = None;
            for k in 1..=middle.len() {
                let mi = middle[k - 1];
                let content = replaced.get(&mi).unwrap_or(&ctx.messages[mi].content);
                running -= message_tokens(tokens, &ctx.messages[mi], content);
                if valid_cut(k) {
                    best = Some((k, running));
                    if running <= target {
                        break;
                    }
                }
            }
            if let Some((k, after)) = best {
                for &mi in &middle[..k] {
                    replaced.remove(&mi);
                    removed.insert(mi);
                }
                total = after;
            }
        }
        if replaced.is_empty() && removed.is_empty() {
            return Err(CondenseError::NothingToCondense(
                "no content in the middle of the conversation could be shortened".into(),
            ));
        }
        let mut per_pass = serde_json::Map::new();
        for pass in Pass::ALL {
            let count = stubbed.iter().filter(|(mi, p)| *p == pass && replaced.contains_key(mi)).count();
            per_pass.insert(pass.name().into(), count.into());
        }
        let condense_id = next_condense_id(ctx.messages);
        let messages = apply_edits(ctx.messages, &condense_id, &replaced, &removed);
        let mut metrics = serde_json::Map::new();
        metrics.insert("condense_id".into(), condense_id.into());
        metrics.insert("target_tokens".into(), target.into());
        metrics.insert("target_met".into(), (total <= target).into());
        metrics.insert("keep_last".into(), keep_last.into());
        metrics.insert("blocks_truncated".into(), per_pass.into());
        metrics.insert("messages_edited".into(), replaced.len().into());
        metrics.insert("messages_removed".into(), removed.len().into());
        Ok(Condensed { messages, summary: None, cost: 0.0, metrics })
    }
}

/// Tokens of a message with other content, counted as the token counter counts messages.
fn message_tokens(
    tokens: &dyn crate::tokens::TokenCounter,
    message: &Message,
    content: &[ContentBlock],
) -> usize {
    if content == message.content.as_slice() {
        return tokens.count_message(message);
    }
    let mut m = message.clone();
    m.content = content.to_vec();
    tokens.count_message(&m)
}
