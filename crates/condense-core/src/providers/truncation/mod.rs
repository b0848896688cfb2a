//! The `truncation` provider (SPEC §4): no LLM. Keeps the first message and the last N as they
//! are, and removes content from the messages in between, in the order tool results → tool
//! parameters → assistant text → user text (images with user text), until the target is met;
//! within each, the messages the kept tail no longer refers to (none of its paths, identifiers,
//! `code spans`) first, oldest first, then the least referred to. If
//! stubbing every block is not enough, whole messages go from the oldest end of the middle, cut
//! only where the conversation stays valid. Blocks are replaced by short stubs rather than
//! removed, so every `tool_use` keeps its `tool_result` and the roles keep alternating: the result
//! is valid for both the OpenAI and the Anthropic API.
//!
//! Tool results that Cline and Roo send as user text (`[read_file for 'x'] Result:`) are cut in
//! the tool-results pass, their headers kept, with the `<environment_details>` sections those
//! clients add to each turn. The cut that would cross the target is made part way (the longest
//! head that meets it), so a run lands just under its target rather than far below; summaries
//! are left alone. Every stub and cut names the id that recalls what went ([`super::recall`]).
//!
//! This file holds the configuration and the run; what a pass cuts in one message, and how, is
//! in `sites`.

mod sites;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::CondenseError;
use crate::model::{ContentBlock, Message, Role, next_condense_id};
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, Services, TargetFloor,
    TemplateToken, apply_edits, count_with_content,
};
use crate::tokens::TokenCounter;

use crate::config::{ConfigField, ConfigForm, Form};

use super::floor::{Reach, ReachConfig};
use super::recall::Roots;
use super::relevance::Relevance;
use crate::provider::{Needs, ProviderMeta};
use sites::{Pass, land_on_target};

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

impl ReachConfig for TruncationConfig {
    fn reach(&self) -> (usize, u8) {
        (self.keep_last, self.target_percent)
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

/// The first message (of `whole` tokens) with the pasted content of its texts cut to heads of
/// one length, the longest that leaves the message within `budget` tokens (none when no length
/// does), with its token count; `None` when it has nothing pasted or cutting saves nothing.
fn cut_first_pasted(
    tokens: &dyn crate::tokens::TokenCounter,
    message: &Message,
    whole: usize,
    budget: usize,
) -> Option<(Vec<ContentBlock>, usize)> {
    let longest = message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, client: None } => {
                crate::ledger::pasted_ranges(text).iter().map(|r| r.len()).max()
            }
            _ => None,
        })
        .max()?;
    let with_heads = |keep: usize| {
        let content: Vec<ContentBlock> = message
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text, client: None } => match crate::ledger::cut_pasted(text, keep) {
                    Some(cut) => ContentBlock::text(cut),
                    None => b.clone(),
                },
                other => other.clone(),
            })
            .collect();
        let (t, content) = count_with_content(tokens, message, content);
        (content, t)
    };
    let mut best = with_heads(0);
    if best.1 >= whole {
        return None;
    }
    let (mut lo, mut hi) = (0usize, longest);
    while lo < hi && best.1 <= budget {
        let mid = lo + (hi - lo).div_ceil(2);
        let candidate = with_heads(mid);
        if candidate.1 <= budget {
            best = candidate;
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(best)
}

/// What lists show of the provider, and what it needs.
const META: ProviderMeta = ProviderMeta {
    id: "truncation",
    name: "Truncation",
    description: "Keeps the first and the last N messages and trims the oldest in between — tool results first, then tool parameters, assistant text, user text — until the target is met. No LLM, no cost.",
    needs: Needs::Nothing,
};

#[async_trait::async_trait(?Send)]
impl CondensationProvider for TruncationProvider {
    fn meta(&self) -> &ProviderMeta {
        &META
    }

    fn config_form(&self) -> Form {
        Form::of::<TruncationConfig>()
    }

    fn target_and_floor(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        tokens: &dyn TokenCounter,
    ) -> Result<Option<TargetFloor>, CondenseError> {
        Ok(Some(Reach::configured::<TruncationConfig>(ctx, options, self.id())?.target_floor(ctx, tokens)))
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _token: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let span = Reach::configured::<TruncationConfig>(ctx, options, self.id())?.span(ctx)?;
        let Reach { keep_last, target } = span.reach;
        let before = ctx.prev_context_tokens;
        let (visible, middle_end) = (&span.visible, span.middle_end);
        let middle: Vec<usize> = span.middle().to_vec();
        if middle.is_empty() {
            return Err(CondenseError::NothingToCondense(format!(
                "{} messages: nothing between the first and the last {keep_last}",
                visible.len()
            )));
        }

        // Pinned messages (and their tool-pair partners) are neither trimmed nor hidden.
        let pinned = ctx.pinned();
        let tokens = services.tokens;
        let roots = Roots::new(ctx.messages);
        let mut total = before;
        let mut replaced: BTreeMap<usize, Vec<ContentBlock>> = BTreeMap::new();
        // (message, pass) of every block stubbed, so the metrics count only what the result keeps.
        let mut stubbed: Vec<(usize, Pass)> = Vec::new();
        // Within each pass, what the kept tail does not refer to goes first, oldest first; then
        // the least referred to.
        let relevance = Relevance::of_tail(&span.tail(ctx.messages));
        let scores: BTreeMap<usize, usize> =
            middle.iter().map(|&mi| (mi, relevance.score(&ctx.messages[mi]))).collect();
        let mut by_relevance = middle.clone();
        by_relevance.sort_by_key(|mi| (scores[mi], *mi));
        'passes: for pass in Pass::ALL {
            for &mi in &by_relevance {
                if total <= target {
                    break;
                }
                let original = &ctx.messages[mi];
                if pinned.contains(&mi) {
                    continue;
                }
                if original.is_summary {
                    // A summary stands in for many messages; it is the last thing to cut.
                    continue;
                }
                // The content as the earlier passes left it: the original's, not copied, until cut.
                let mut current: Cow<'_, [ContentBlock]> = match replaced.remove(&mi) {
                    Some(content) => Cow::Owned(content),
                    None => Cow::Borrowed(&original.content),
                };
                for site in pass.sites(original.role, &current) {
                    if total <= target {
                        break;
                    }
                    let Some(stubbed_content) = pass.edit(original, &roots, &current, site, None) else {
                        continue;
                    };
                    let old_tokens = match &mut current {
                        Cow::Borrowed(_) => tokens.count_message(original),
                        Cow::Owned(content) => {
                            let (t, back) = count_with_content(tokens, original, std::mem::take(content));
                            *content = back;
                            t
                        }
                    };
                    let (mut new_tokens, stubbed_content) =
                        count_with_content(tokens, original, stubbed_content);
                    if new_tokens >= old_tokens {
                        continue;
                    }
                    let mut next = stubbed_content;
                    if total - (old_tokens - new_tokens) < target {
                        // The stub would land below the target: keep the longest head that still
                        // meets it, so the run lands near the target rather than far below.
                        if let Some((content, t)) = land_on_target(
                            tokens,
                            pass,
                            &roots,
                            original,
                            &current,
                            site,
                            old_tokens - (total - target),
                        ) {
                            next = content;
                            new_tokens = t;
                        }
                    }
                    total -= old_tokens - new_tokens;
                    current = Cow::Owned(next);
                    stubbed.push((mi, pass));
                }
                if let Cow::Owned(content) = current {
                    replaced.insert(mi, content);
                }
            }
            if total <= target {
                break 'passes;
            }
        }

        // Still above target: the pasted content of the first message (files, logs, documents)
        // is cut like any other bulk, the longest heads that meet the target; its own words stay.
        let first = visible[0];
        if total > target && !pinned.contains(&first) && ctx.messages[first].role == Role::User {
            let original = &ctx.messages[first];
            let old_tokens = tokens.count_message(original);
            if let Some((content, t)) =
                cut_first_pasted(tokens, original, old_tokens, old_tokens.saturating_sub(total - target))
            {
                total -= old_tokens - t;
                replaced.insert(first, content);
                stubbed.push((first, Pass::UserText));
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
                if !pinned.contains(&mi) {
                    running -= match replaced.get(&mi) {
                        Some(content) => count_with_content(tokens, &ctx.messages[mi], content.clone()).0,
                        None => tokens.count_message(&ctx.messages[mi]),
                    };
                }
                if valid_cut(k) {
                    best = Some((k, running));
                    if running <= target {
                        break;
                    }
                }
            }
            if let Some((k, after)) = best {
                for &mi in middle[..k].iter().filter(|mi| !pinned.contains(mi)) {
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
        // The messages the tail refers to that stayed whole while a later one it does not refer
        // to was cut or hidden.
        let touched = |mi: &usize| replaced.contains_key(mi) || removed.contains(mi);
        let latest_cut = middle.iter().filter(|mi| scores[mi] == 0 && touched(mi)).max();
        let kept_for_relevance = middle
            .iter()
            .filter(|mi| scores[mi] > 0 && !touched(mi) && latest_cut.is_some_and(|l| *mi < l))
            .count();
        let mut per_pass = serde_json::Map::new();
        for pass in Pass::ALL {
            let count = stubbed.iter().filter(|(mi, p)| *p == pass && replaced.contains_key(mi)).count();
            per_pass.insert(pass.name().into(), count.into());
        }
        let condense_id = next_condense_id(ctx.messages);
        let messages = apply_edits(ctx.messages, &condense_id, &replaced, &removed);
        let mut metrics = span.reach.metrics(condense_id, total);
        metrics.insert("blocks_truncated".into(), per_pass.into());
        metrics.insert("messages_edited".into(), replaced.len().into());
        metrics.insert("messages_removed".into(), removed.len().into());
        metrics.insert("kept_for_relevance".into(), kept_for_relevance.into());
        Ok(Condensed { messages, summary: None, cost: 0.0, metrics })
    }
}
