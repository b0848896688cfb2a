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

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::CondenseError;
use crate::model::{ContentBlock, Message, Role, ToolResultPart, next_condense_id};
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, Services, TargetFloor,
    TemplateToken, apply_edits, count_with_content,
};
use crate::tokens::TokenCounter;

use crate::config::{ConfigField, ConfigForm, Form};

use super::encoded::{encoded_results_in, environment_sections_in, floor_boundary, replace_ranges};
use super::floor::Reach;
use super::recall::{Roots, id_note, text_id};
use super::relevance::Relevance;
use crate::provider::{Needs, ProviderMeta};

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

    /// The stub for a block this pass removes, naming the id that recalls it (`id` is asked only
    /// then), or `None` when the pass leaves the block alone.
    fn stub(self, role: Role, block: &ContentBlock, id: impl FnOnce() -> String) -> Option<ContentBlock> {
        let note = || id_note(&id());
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
                        text: format!(
                            "[tool result truncated by Context Condenser: {what} removed{}]",
                            note()
                        ),
                    }],
                    is_error: *is_error,
                })
            }
            // The client's context (an environment block, a reminder) goes with the tool results,
            // marked still: it was never the user's words.
            (Pass::ToolResults, ContentBlock::Text { text, client: Some(kind) }) => {
                Some(ContentBlock::Text {
                    text: format!(
                        "[the client's {} removed by Context Condenser: {} characters{}]",
                        kind.label(),
                        text.len(),
                        note()
                    ),
                    client: Some(*kind),
                })
            }
            (Pass::ToolParameters, ContentBlock::ToolUse { id, name, input }) => {
                let size = input.to_string().len();
                Some(ContentBlock::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: serde_json::json!({
                        "truncated_by_context_condenser": format!("{size} characters of arguments removed{}", note())
                    }),
                })
            }
            (Pass::AssistantText, ContentBlock::Text { text, .. }) if role == Role::Assistant => {
                Some(ContentBlock::text(format!(
                    "[assistant text truncated by Context Condenser: {} characters removed{}]",
                    text.len(),
                    note()
                )))
            }
            (Pass::UserText, ContentBlock::Text { text, client: None }) if role == Role::User => {
                Some(ContentBlock::text(format!(
                    "[user text truncated by Context Condenser: {} characters removed{}]",
                    text.len(),
                    note()
                )))
            }
            (Pass::UserText, ContentBlock::Image { .. }) => {
                Some(ContentBlock::text(format!("[image removed by Context Condenser{}]", note())))
            }
            _ => None,
        }
    }
}

/// Where in a message's content a pass cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Site {
    /// A whole content block.
    Block(usize),
    /// The body of the n-th tool result encoded as user text (Cline, Roo), its header kept.
    Encoded(usize),
    /// The n-th `<environment_details>` section a client appended to a user turn.
    Environment(usize),
}

impl Pass {
    /// The places this pass may cut in a message, in the order it cuts them.
    fn sites(self, role: Role, content: &[ContentBlock]) -> Vec<Site> {
        let mut out: Vec<Site> = (0..content.len()).map(Site::Block).collect();
        if self == Pass::ToolResults {
            out.extend((0..encoded_results_in(role, content).len()).map(Site::Encoded));
            // Stubbing a section removes it from the list: the last first keeps the others' numbers.
            out.extend((0..environment_sections_in(role, content).len()).rev().map(Site::Environment));
        }
        out
    }

    /// `content` (the current content of the run's message `original`) with `site` stubbed
    /// (`keep: None`) or cut to its first `keep` bytes, naming the id that recalls what went;
    /// `None` when this pass leaves the site alone, or the site cannot be cut part way.
    fn edit(
        self,
        original: &Message,
        roots: &Roots<'_>,
        content: &[ContentBlock],
        site: Site,
        keep: Option<usize>,
    ) -> Option<Vec<ContentBlock>> {
        let role = original.role;
        match site {
            Site::Block(bi) => {
                let id = || roots.block_id(original, bi);
                let new = match keep {
                    None => self.stub(role, &content[bi], id)?,
                    Some(keep) => {
                        self.stub(role, &content[bi], String::new)?;
                        match &content[bi] {
                            ContentBlock::ToolResult { tool_use_id, content: parts, is_error } => {
                                let [ToolResultPart::Text { text }] = parts.as_slice() else { return None };
                                ContentBlock::ToolResult {
                                    tool_use_id: tool_use_id.clone(),
                                    content: vec![ToolResultPart::Text {
                                        text: cut("tool result", text, keep, &id()),
                                    }],
                                    is_error: *is_error,
                                }
                            }
                            ContentBlock::Text { text, client } => {
                                let what = match client {
                                    Some(kind) => format!("the client's {}", kind.label()),
                                    None => format!("{} text", role.as_str()),
                                };
                                ContentBlock::Text { text: cut(&what, text, keep, &id()), client: *client }
                            }
                            _ => return None,
                        }
                    }
                };
                // Every other block as it is; the one cut is not copied first.
                let mut new = Some(new);
                let out = content.iter().enumerate().map(|(i, b)| match new.take_if(|_| i == bi) {
                    Some(new) => new,
                    None => b.clone(),
                });
                Some(out.collect())
            }
            Site::Encoded(n) => {
                let found = encoded_results_in(Role::User, content).into_iter().nth(n)?;
                let ContentBlock::Text { text, .. } = &content[found.block] else { return None };
                let body = &text[found.body.clone()];
                if body.starts_with("[tool result truncated by Context Condenser") {
                    return None;
                }
                let id = roots.encoded_id(original, n);
                let new = match keep {
                    None => format!(
                        "[tool result truncated by Context Condenser: {} characters removed{}]",
                        body.len(),
                        id_note(&id)
                    ),
                    Some(keep) => cut("tool result", body, keep, &id),
                };
                let mut out = content.to_vec();
                replace_ranges(&mut out, vec![(found.block, found.body, new)]);
                Some(out)
            }
            Site::Environment(n) => {
                if keep.is_some() {
                    return None;
                }
                let (block, range) = environment_sections_in(Role::User, content).into_iter().nth(n)?;
                let section = content.get(block).and_then(|b| match b {
                    ContentBlock::Text { text, .. } => text.get(range.clone()),
                    _ => None,
                });
                let new = format!(
                    "[environment details removed by Context Condenser: {} characters{}]",
                    range.len(),
                    id_note(&text_id(section.unwrap_or_default()))
                );
                let mut out = content.to_vec();
                replace_ranges(&mut out, vec![(block, range, new)]);
                Some(out)
            }
        }
    }

    /// The length in bytes of the text at `site` that a partial cut would shorten.
    fn cuttable_len(self, role: Role, content: &[ContentBlock], site: Site) -> Option<usize> {
        match site {
            Site::Block(bi) => {
                self.stub(role, &content[bi], String::new)?;
                match &content[bi] {
                    ContentBlock::ToolResult { content: parts, .. } => match parts.as_slice() {
                        [ToolResultPart::Text { text }] => Some(text.len()),
                        _ => None,
                    },
                    ContentBlock::Text { text, .. } => Some(text.len()),
                    _ => None,
                }
            }
            Site::Encoded(n) => {
                encoded_results_in(Role::User, content).into_iter().nth(n).map(|f| f.body.len())
            }
            Site::Environment(_) => None,
        }
    }
}

/// `text` cut to its first `keep` bytes (at a character boundary), with a note of what went and
/// the `id` that recalls it whole.
fn cut(what: &str, text: &str, keep: usize, id: &str) -> String {
    let at = floor_boundary(text, keep);
    format!(
        "{}\n[{what} truncated by Context Condenser: {} characters removed{}]",
        &text[..at],
        text.len() - at,
        id_note(id)
    )
}

/// The longest cut of `site` whose message has at most `budget` tokens, with its token count:
/// the search for the cut that lands on the target. `None` when no cut fits (the stub must do).
fn land_on_target(
    tokens: &dyn crate::tokens::TokenCounter,
    pass: Pass,
    roots: &Roots<'_>,
    message: &Message,
    content: &[ContentBlock],
    site: Site,
    budget: usize,
) -> Option<(Vec<ContentBlock>, usize)> {
    let len = pass.cuttable_len(message.role, content, site)?;
    let try_keep = |keep: usize| {
        let edited = pass.edit(message, roots, content, site, Some(keep))?;
        let (t, edited) = count_with_content(tokens, message, edited);
        Some((edited, t))
    };
    let mut best = try_keep(0).filter(|(_, t)| *t <= budget)?;
    let (mut lo, mut hi) = (0usize, len);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        match try_keep(mid) {
            Some((edited, t)) if t <= budget => {
                best = (edited, t);
                lo = mid;
            }
            _ => hi = mid - 1,
        }
    }
    Some(best)
}

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
        let config: TruncationConfig = options.typed_config(self.id())?;
        Ok(Some(Reach::of(ctx, options, config.keep_last, config.target_percent).target_floor(ctx, tokens)))
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _token: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let config: TruncationConfig = options.typed_config(self.id())?;
        let reach = Reach::of(ctx, options, config.keep_last, config.target_percent);
        let Reach { keep_last, target } = reach;
        let before = ctx.prev_context_tokens;
        reach.needed(before)?;
        let visible = ctx.visible();
        // The middle: after the first visible message, before the last `keep_last`.
        let middle_end = reach.middle_end(&visible);
        let middle: Vec<usize> = visible.get(1..middle_end).map(<[usize]>::to_vec).unwrap_or_default();
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
        let tail: Vec<&Message> =
            visible[middle_end.min(visible.len())..].iter().map(|&i| &ctx.messages[i]).collect();
        let relevance = Relevance::of_tail(&tail);
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
        let mut metrics = serde_json::Map::new();
        metrics.insert("condense_id".into(), condense_id.into());
        metrics.insert("target_tokens".into(), target.into());
        metrics.insert("target_met".into(), (total <= target).into());
        metrics.insert("keep_last".into(), keep_last.into());
        metrics.insert("blocks_truncated".into(), per_pass.into());
        metrics.insert("messages_edited".into(), replaced.len().into());
        metrics.insert("messages_removed".into(), removed.len().into());
        metrics.insert("kept_for_relevance".into(), kept_for_relevance.into());
        Ok(Condensed { messages, summary: None, cost: 0.0, metrics })
    }
}
