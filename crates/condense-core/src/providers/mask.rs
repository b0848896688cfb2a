//! The `mask` provider (SPEC §4, observation masking): no LLM, zero cost, undoable. The content of
//! tool results older than the last K is hidden behind a one-line placeholder naming the tool, its
//! main argument, the size hidden and the id it can be recalled by ([`super::recall`]), e.g.
//! `[read_file src/x.py: 3,412 tokens hidden by Context Condenser; read it again if needed; id
//! r3f9a21c0]`. Tool results that clients such as Cline and Roo send as user text (`[read_file
//! for 'x'] Result:`) are masked too, their header kept.
//!
//! Per-tool rules: `never_mask` names tools whose results always stay; `keep_per_tool` gives a tool
//! its own count of recent results to keep, in place of K. Given a target, masking stops once it
//! is met, oldest first; a result whose masking would land far below the target is passed over
//! for a smaller one when one can meet it.
//!
//! Client context (text blocks the importer marked as a client's wrapper, [`ClientContext`]:
//! Cline's and Roo's `<environment_details>`, task progress reminders, resumption notices) is the
//! client's snapshot of its state, sent again each turn: every one but the latest of its kind is
//! hidden behind a placeholder too (`client_context`, on by default). The placeholder keeps the
//! mark, so it is never read as the user's words.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::config::{ConfigField, ConfigForm, Form, ledger_field};
use crate::error::CondenseError;
use crate::model::{ClientContext, ContentBlock, Message, ToolResultPart, next_condense_id};
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, Services, TemplateToken,
    apply_edits, count_with_content,
};
use crate::tokens::TokenCounter;

use super::encoded::{encoded_results, encoded_results_in, replace_ranges, thousands};
use super::recall::{Roots, id_note};
use crate::provider::{Needs, ProviderMeta};

/// The words every mask placeholder carries, so a later run knows a result is masked already.
pub(crate) const MASK_MARK: &str = "hidden by Context Condenser";

/// The argument names that say what a tool call was about, most telling first.
pub(crate) const MAIN_ARGUMENTS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "target_file",
    "notebook_path",
    "absolute_path",
    "command",
    "cmd",
    "pattern",
    "regex",
    "query",
    "url",
    "directory",
    "dir_path",
];

/// Configuration of the `mask` provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MaskConfig {
    /// The most recent tool results kept as they are.
    pub keep_results: usize,
    /// Tools whose results are never masked, comma-separated.
    pub never_mask: String,
    /// Per-tool counts of recent results to keep, in place of `keep_results`: `read_file=2, Bash=1`.
    pub keep_per_tool: String,
    /// Results smaller than this many tokens are left alone: their placeholder would save little.
    pub min_tokens: usize,
    /// Hide the client's older context blocks (environment details, task progress reminders,
    /// resumption notices), keeping the latest of each kind.
    pub client_context: bool,
    /// Whether the state ledger goes in with the condensation (read by the template).
    pub ledger: bool,
}

impl Default for MaskConfig {
    fn default() -> Self {
        MaskConfig {
            keep_results: 8,
            never_mask: String::new(),
            keep_per_tool: String::new(),
            min_tokens: 100,
            client_context: true,
            ledger: true,
        }
    }
}

/// Whether `name` is a tool name: letters, digits and `_ - . :` only.
fn is_tool_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

impl MaskConfig {
    /// The tools never masked.
    pub fn never_mask_tools(&self) -> Result<BTreeSet<String>, String> {
        let mut out = BTreeSet::new();
        for name in self.never_mask.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if !is_tool_name(name) {
                return Err(format!(
                    "never_mask: \"{name}\" is not a tool name (letters, digits, _ - . : only; separate names with commas)"
                ));
            }
            out.insert(name.to_owned());
        }
        Ok(out)
    }

    /// The per-tool counts.
    pub fn per_tool(&self) -> Result<BTreeMap<String, usize>, String> {
        let mut out = BTreeMap::new();
        for rule in self.keep_per_tool.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            let Some((name, count)) = rule.split_once('=') else {
                return Err(format!("keep_per_tool: \"{rule}\" needs a count, e.g. {rule}=2"));
            };
            let (name, count) = (name.trim(), count.trim());
            if !is_tool_name(name) {
                return Err(format!(
                    "keep_per_tool: \"{name}\" is not a tool name (letters, digits, _ - . : only)"
                ));
            }
            let Ok(count) = count.parse::<usize>() else {
                return Err(format!(
                    "keep_per_tool: the count for {name} must be a whole number of 0 or more, got \"{count}\""
                ));
            };
            if out.insert(name.to_owned(), count).is_some() {
                return Err(format!("keep_per_tool: {name} is named twice"));
            }
        }
        Ok(out)
    }
}

impl ConfigForm for MaskConfig {
    fn fields() -> Vec<ConfigField> {
        vec![
            ConfigField::integer(
                "keep_results",
                "Keep last results",
                "The most recent tool results stay as they are; older ones are hidden behind a one-line placeholder.",
                0,
                None,
            )
            .unit("results"),
            ConfigField::text(
                "never_mask",
                "Never mask",
                "Tools whose results are never hidden, comma-separated, e.g. TodoWrite, attempt_completion.",
            ),
            ConfigField::text(
                "keep_per_tool",
                "Keep per tool",
                "A tool's own count of recent results to keep, in place of the one above: read_file=2, Bash=1.",
            ),
            ConfigField::integer(
                "min_tokens",
                "Smallest result",
                "Results smaller than this are left alone: their placeholder would save little.",
                0,
                None,
            )
            .unit("tokens"),
            ConfigField::boolean(
                "client_context",
                "Older client context",
                "Hide the context a client such as Cline or Roo sends again each turn (environment details, task progress reminders), keeping the latest of each kind.",
            ),
            ledger_field(),
        ]
    }

    fn check(&self) -> Result<(), String> {
        self.never_mask_tools()?;
        self.per_tool()?;
        Ok(())
    }
}

/// Hides old tool results behind placeholders.
#[derive(Debug, Default, Clone, Copy)]
pub struct MaskProvider;

/// Where a tool result is in its message.
#[derive(Debug, Clone)]
pub(crate) enum Location {
    /// A `tool_result` block.
    Block(usize),
    /// The n-th result encoded as user text in the message (counted again on the edited content,
    /// where masked bodies still sit under their headers).
    Encoded(usize),
    /// A text block marked as client context, of this kind.
    Client(usize, ClientContext),
}

/// One tool result, or one client context block, of the view.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// Index in the full message list.
    pub(crate) message: usize,
    pub(crate) location: Location,
    pub(crate) tool: String,
    pub(crate) arg: Option<String>,
    /// Tokens of the text hidden.
    pub(crate) tokens: usize,
    pub(crate) images: usize,
}

/// The main argument of a tool call: the first telling argument, else the first short string.
pub(crate) fn main_argument(input: &serde_json::Value) -> Option<String> {
    let map = input.as_object()?;
    let value = MAIN_ARGUMENTS.iter().find_map(|k| map.get(*k).and_then(serde_json::Value::as_str)).or_else(
        || map.values().filter_map(serde_json::Value::as_str).find(|s| s.len() <= 120 && !s.contains('\n')),
    )?;
    let one_line = value.lines().next().unwrap_or_default();
    let mut out: String = one_line.chars().take(80).collect();
    if out.len() < value.len() {
        out.push('…');
    }
    Some(out)
}

/// The placeholder for a result of `tool` with `arg`, `tokens` of text and `images` images,
/// recalled by `id`.
pub(crate) fn placeholder(tool: &str, arg: Option<&str>, tokens: usize, images: usize, id: &str) -> String {
    let what = match arg {
        Some(arg) if !arg.is_empty() => format!("{tool} {arg}"),
        _ => tool.to_owned(),
    };
    hidden_note(&what, tokens, images, "read it again if needed", id)
}

/// A placeholder's text: `[what: size hidden by Context Condenser; why; id r3f9a21c0]`.
pub(crate) fn hidden_note(what: &str, tokens: usize, images: usize, why: &str, id: &str) -> String {
    let size = match images {
        0 => format!("{} tokens", thousands(tokens)),
        n => format!("{} tokens and {n} image(s)", thousands(tokens)),
    };
    format!("[{what}: {size} {MASK_MARK}; {why}{}]", id_note(id))
}

/// The placeholder for a client context block of `kind` and `tokens`, recalled by `id`.
fn client_placeholder(kind: ClientContext, tokens: usize, id: &str) -> String {
    hidden_note(&format!("the client's {}", kind.label()), tokens, 0, "a later one is current", id)
}

/// The id that recalls what `found` (of `message`, a message of the run) holds.
pub(crate) fn found_id<'a>(roots: &Roots<'a>, message: &'a Message, found: &Found) -> String {
    match found.location {
        Location::Block(bi) | Location::Client(bi, _) => roots.block_id(message, bi),
        Location::Encoded(n) => roots.encoded_id(message, n),
    }
}

/// Every client context block of the view not masked already, oldest first.
pub(crate) fn find_client_context(ctx: &CondensationContext<'_>, tokens: &dyn TokenCounter) -> Vec<Found> {
    let mut out = Vec::new();
    for (mi, m) in ctx.messages.iter().enumerate().filter(|(_, m)| m.is_visible()) {
        for (bi, block) in m.content.iter().enumerate() {
            let ContentBlock::Text { text, client: Some(kind) } = block else { continue };
            if text.contains(MASK_MARK) && text.len() < 400 {
                continue;
            }
            out.push(Found {
                message: mi,
                location: Location::Client(bi, *kind),
                tool: kind.label().to_owned(),
                arg: None,
                tokens: tokens.count_text_cached(text),
                images: 0,
            });
        }
    }
    out
}

/// Whether a client context block lists the workspace's files (Cline's and Roo's first
/// environment details: `# Current Working Directory (…) Files`): later ones of its kind do not
/// repeat the list, so only another that lists them replaces it.
pub(crate) fn lists_files(messages: &[Message], found: &Found) -> bool {
    let Location::Client(bi, _) = found.location else { return false };
    matches!(&messages[found.message].content[bi], ContentBlock::Text { text, .. }
        if text.contains("# Current Working Directory") || text.contains("# Current Workspace Directory"))
}

/// Every tool result of the view not masked already, oldest first.
pub(crate) fn find_results(ctx: &CondensationContext<'_>, tokens: &dyn TokenCounter) -> Vec<Found> {
    let mut calls: HashMap<&str, (&str, &serde_json::Value)> = HashMap::new();
    let mut out = Vec::new();
    for (mi, m) in ctx.messages.iter().enumerate().filter(|(_, m)| m.is_visible()) {
        for (bi, block) in m.content.iter().enumerate() {
            match block {
                ContentBlock::ToolUse { id, name, input } => {
                    calls.insert(id, (name, input));
                }
                ContentBlock::ToolResult { tool_use_id, content, .. } => {
                    let texts: Vec<&str> = content
                        .iter()
                        .filter_map(|p| match p {
                            ToolResultPart::Text { text } => Some(text.as_str()),
                            ToolResultPart::Image { .. } => None,
                        })
                        .collect();
                    // One text part is the text: not copied.
                    let text: std::borrow::Cow<'_, str> = match texts.as_slice() {
                        [one] => (*one).into(),
                        _ => texts.join("\n").into(),
                    };
                    let images = content.iter().filter(|p| matches!(p, ToolResultPart::Image { .. })).count();
                    if images == 0 && text.len() < 400 && text.contains(MASK_MARK) {
                        continue;
                    }
                    let (tool, arg) = match calls.get(tool_use_id.as_str()) {
                        Some((name, input)) => ((*name).to_owned(), main_argument(input)),
                        None => ("tool result".to_owned(), None),
                    };
                    out.push(Found {
                        message: mi,
                        location: Location::Block(bi),
                        tool,
                        arg,
                        tokens: tokens.count_text_cached(&text),
                        images,
                    });
                }
                _ => {}
            }
        }
        for (n, encoded) in encoded_results(m).into_iter().enumerate() {
            let ContentBlock::Text { text, .. } = &m.content[encoded.block] else { continue };
            let body = &text[encoded.body.clone()];
            if body.len() < 400 && body.contains(MASK_MARK) {
                continue;
            }
            out.push(Found {
                message: mi,
                tool: encoded.tool.clone(),
                arg: encoded.arg.clone(),
                tokens: tokens.count_text_cached(body),
                images: 0,
                location: Location::Encoded(n),
            });
        }
    }
    out
}

/// `content` (the current content of `message`) with `found` masked, recalled by `id`.
fn masked(message: &Message, content: &[ContentBlock], found: &Found, id: &str) -> Vec<ContentBlock> {
    let text = match found.location {
        Location::Client(_, kind) => client_placeholder(kind, found.tokens, id),
        _ => placeholder(&found.tool, found.arg.as_deref(), found.tokens, found.images, id),
    };
    hidden(message, content, found, text)
}

/// `content` (the current content of `message`) with what `found` holds replaced by `text`: a
/// tool result's parts (its images too), an encoded result's body (its header kept) or a client
/// context block (its mark kept).
pub(crate) fn hidden(
    message: &Message,
    content: &[ContentBlock],
    found: &Found,
    text: String,
) -> Vec<ContentBlock> {
    match &found.location {
        // The mark stays: the placeholder is the client's, never the user's words.
        Location::Client(bi, kind) => {
            replacing(content, *bi, |_| ContentBlock::Text { text, client: Some(*kind) })
        }
        Location::Block(bi) => replacing(content, *bi, |block| match block {
            ContentBlock::ToolResult { tool_use_id, is_error, .. } => ContentBlock::ToolResult {
                tool_use_id: tool_use_id.clone(),
                content: vec![ToolResultPart::Text { text }],
                is_error: *is_error,
            },
            _ => block.clone(),
        }),
        Location::Encoded(n) => {
            let mut out = content.to_vec();
            if let Some(e) = encoded_results_in(message.role, content).into_iter().nth(*n) {
                replace_ranges(&mut out, vec![(e.block, e.body, text)]);
            }
            out
        }
    }
}

/// `content` with block `at` replaced by what `replace` makes of it; the block replaced (a large
/// tool result, usually) is not copied first.
fn replacing(
    content: &[ContentBlock],
    at: usize,
    replace: impl FnOnce(&ContentBlock) -> ContentBlock,
) -> Vec<ContentBlock> {
    let Some(block) = content.get(at) else { return content.to_vec() };
    let mut out = Vec::with_capacity(content.len());
    out.extend_from_slice(&content[..at]);
    out.push(replace(block));
    out.extend_from_slice(&content[at + 1..]);
    out
}

/// Tokens of `message` with `content` (`None`: its own).
fn tokens_with(tokens: &dyn TokenCounter, message: &Message, content: Option<&Vec<ContentBlock>>) -> usize {
    match content {
        None => tokens.count_message(message),
        Some(content) => count_with_content(tokens, message, content.clone()).0,
    }
}

/// `found`'s message with `edit` applied to its content as edited so far (`replaced`): the new
/// content and the tokens it saves, or `None` when it saves nothing.
pub(crate) fn saving(
    tokens: &dyn TokenCounter,
    messages: &[Message],
    replaced: &BTreeMap<usize, Vec<ContentBlock>>,
    found: &Found,
    edit: impl FnOnce(&Message, &[ContentBlock]) -> Vec<ContentBlock>,
) -> Option<(Vec<ContentBlock>, usize)> {
    let message = &messages[found.message];
    let current = replaced.get(&found.message);
    let before = tokens_with(tokens, message, current);
    let next = edit(message, current.map_or(&message.content, |c| c.as_slice()));
    let (after, next) = count_with_content(tokens, message, next);
    (after < before).then(|| (next, before - after))
}

/// What lists show of the provider, and what it needs.
const META: ProviderMeta = ProviderMeta {
    id: "mask",
    name: "Observation masking",
    description: "Hides the content of tool results older than the last K behind a one-line placeholder (tool, argument, size); the model can read them again. No LLM, no cost, undoable.",
    needs: Needs::Nothing,
};

#[async_trait::async_trait(?Send)]
impl CondensationProvider for MaskProvider {
    fn meta(&self) -> &ProviderMeta {
        &META
    }

    fn config_form(&self) -> Form {
        Form::of::<MaskConfig>()
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _token: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let config: MaskConfig = options.typed_config(self.id())?;
        let invalid = |message: String| CondenseError::InvalidConfig { id: "mask".into(), message };
        let never = config.never_mask_tools().map_err(invalid)?;
        let per_tool = config.per_tool().map_err(invalid)?;
        let tokens = services.tokens;
        let results = find_results(ctx, tokens);
        let client = if config.client_context { find_client_context(ctx, tokens) } else { Vec::new() };

        // Which results stay: the last K overall, a ruled tool's own last N, never-masked tools,
        // anything in the last `keep_last` messages, and the pinned messages.
        let visible = ctx.visible();
        let tail_start = options.keep_last.map(|n| visible.len().saturating_sub(n)).unwrap_or(visible.len());
        let mut protected: BTreeSet<usize> = visible[tail_start..].iter().copied().collect();
        protected.extend(ctx.pinned());
        let mut seen_per_tool: HashMap<&str, usize> = HashMap::new();
        let mut kept = vec![false; results.len()];
        for (rank, (i, found)) in results.iter().enumerate().rev().enumerate() {
            let seen = seen_per_tool.entry(found.tool.as_str()).or_default();
            *seen += 1;
            kept[i] = never.contains(&found.tool)
                || protected.contains(&found.message)
                || match per_tool.get(&found.tool) {
                    Some(&n) => *seen <= n,
                    None => rank < config.keep_results,
                };
        }

        // Client context: the latest of each kind stays (one that lists the workspace's files
        // is a kind of its own), as do the protected messages'.
        let mut latest: Vec<(ClientContext, bool)> = Vec::new();
        let mut client_kept = vec![false; client.len()];
        for (i, found) in client.iter().enumerate().rev() {
            let Location::Client(_, kind) = found.location else { continue };
            let key = (kind, lists_files(ctx.messages, found));
            let is_latest = !latest.contains(&key);
            if is_latest {
                latest.push(key);
            }
            client_kept[i] = is_latest || protected.contains(&found.message);
        }

        let target = options.target_tokens;
        let floor = target.map(|t| t * 4 / 5);
        let mut total = ctx.prev_context_tokens;
        let mut replaced: BTreeMap<usize, Vec<ContentBlock>> = BTreeMap::new();
        let mut masked_results = 0usize;
        let mut masked_client = 0usize;
        let mut hidden_tokens = 0usize;
        // Oldest first, tool results and client context alike.
        let mut candidates: Vec<&Found> = results
            .iter()
            .zip(&kept)
            .chain(client.iter().zip(&client_kept))
            .filter(|(f, kept)| !**kept && f.tokens >= config.min_tokens)
            .map(|(f, _)| f)
            .collect();
        candidates.sort_by_key(|f| f.message);
        let mut deferred = Vec::new();
        let roots = Roots::new(ctx.messages);
        let mut apply = |found: &Found,
                         total: &mut usize,
                         replaced: &mut BTreeMap<usize, Vec<ContentBlock>>,
                         check_floor: bool|
         -> bool {
            let id = found_id(&roots, &ctx.messages[found.message], found);
            let Some((next, saved)) =
                saving(tokens, ctx.messages, replaced, found, |m, content| masked(m, content, found, &id))
            else {
                return true;
            };
            if check_floor && floor.is_some_and(|f| total.saturating_sub(saved) < f) {
                return false;
            }
            *total -= saved;
            replaced.insert(found.message, next);
            if matches!(found.location, Location::Client(..)) {
                masked_client += 1;
            } else {
                masked_results += 1;
            }
            hidden_tokens += found.tokens;
            true
        };
        for (i, found) in candidates.iter().enumerate() {
            if target.is_some_and(|t| total <= t) {
                break;
            }
            if !apply(found, &mut total, &mut replaced, true) {
                deferred.push(i);
            }
        }
        // Nothing smaller met the target: mask the results passed over, oldest first.
        for &i in &deferred {
            if target.is_some_and(|t| total <= t) {
                break;
            }
            apply(candidates[i], &mut total, &mut replaced, false);
        }
        if replaced.is_empty() {
            let client_note = match client.len() {
                0 => String::new(),
                n => format!("; {n} client context blocks, none but the latest of its kind and that large"),
            };
            return Err(CondenseError::NothingToCondense(format!(
                "{} tool results, none older than the last {} and of {} tokens or more to mask{client_note}",
                results.len(),
                config.keep_results,
                config.min_tokens
            )));
        }
        let condense_id = next_condense_id(ctx.messages);
        let messages = apply_edits(ctx.messages, &condense_id, &replaced, &BTreeSet::new());
        let mut metrics = serde_json::Map::new();
        metrics.insert("condense_id".into(), condense_id.into());
        metrics.insert("results_masked".into(), masked_results.into());
        metrics.insert("client_context_masked".into(), masked_client.into());
        metrics.insert("tokens_hidden".into(), hidden_tokens.into());
        metrics.insert("results_kept".into(), kept.iter().filter(|k| **k).count().into());
        metrics.insert("messages_edited".into(), replaced.len().into());
        if let Some(t) = target {
            metrics.insert("target_tokens".into(), t.into());
            metrics.insert("target_met".into(), (total <= t).into());
        }
        Ok(Condensed { messages, summary: None, cost: 0.0, metrics })
    }
}
