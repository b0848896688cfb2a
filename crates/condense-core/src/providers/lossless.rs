//! The `lossless` provider (SPEC §4): no LLM, zero cost, nothing lost. When the same content was
//! read or returned again later — a file read twice with no change between, an identical tool
//! result, a repeated listing or search, a log pasted twice — the earlier copy is replaced by a
//! short reference to the later one. Only byte-identical content is replaced, so every removed
//! byte has an identical copy still in the context.
//!
//! Tool results that Cline and Roo send as user text (`[read_file for 'x'] Result:` and the body)
//! are compared by their body alone, so a file read again under a new header and new environment
//! details is still recognised; the earlier body is replaced, its header kept.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::error::CondenseError;
use crate::model::{ContentBlock, ToolResultPart, next_condense_id};
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, Services, TemplateToken,
    apply_edits,
};

use crate::config::{ConfigField, ConfigForm, Form};

use super::encoded::{encoded_results, replace_ranges};
use crate::provider::{Needs, ProviderMeta};

/// Configuration of the `lossless` provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LosslessConfig {
    /// De-duplicate text blocks: pasted text, repeated answers, file contents quoted in messages.
    pub text_blocks: bool,
    /// De-duplicate tool results: file reads, listings, searches, command output.
    pub tool_results: bool,
    /// Content shorter than this many bytes is left alone: its reference would save little.
    pub min_bytes: usize,
    /// Keep the state ledger of what the run hides (see `crate::ledger`).
    pub ledger: bool,
}

impl Default for LosslessConfig {
    fn default() -> Self {
        LosslessConfig { text_blocks: true, tool_results: true, min_bytes: 200, ledger: true }
    }
}

impl ConfigForm for LosslessConfig {
    fn fields() -> Vec<ConfigField> {
        vec![
            ConfigField::boolean(
                "tool_results",
                "Tool results",
                "Repeated file reads, listings, searches and command output.",
            ),
            ConfigField::boolean(
                "text_blocks",
                "Text blocks",
                "Text pasted or written twice: logs, quoted files, repeated answers.",
            ),
            ConfigField::integer(
                "min_bytes",
                "Smallest copy",
                "Copies shorter than this are left alone: their reference would save little.",
                0,
                None,
            )
            .unit("bytes"),
            crate::config::ledger_field(),
        ]
    }

    fn check(&self) -> Result<(), String> {
        if !self.text_blocks && !self.tool_results {
            return Err("nothing to de-duplicate: turn on text_blocks, tool_results or both".into());
        }
        Ok(())
    }
}

/// Replaces earlier byte-identical copies of text blocks and tool results by references.
#[derive(Debug, Default, Clone, Copy)]
pub struct LosslessProvider;

/// Where a piece of content sits in the API view: message, block, part within a tool result, and
/// byte range within a text block (the body of a tool result encoded as text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Site {
    message: usize,
    block: usize,
    part: Option<usize>,
    range: Option<(usize, usize)>,
}

fn reference_text(bytes: usize, what: &str, message_id: &str) -> String {
    format!(
        "[Context Condenser: {bytes} bytes de-duplicated here; byte-identical to {what} in message {message_id} further down]"
    )
}

/// What lists show of the provider, and what it needs.
const META: ProviderMeta = ProviderMeta {
    id: "lossless",
    name: "Lossless de-duplication",
    description: "Replaces earlier copies of repeated file reads, tool results and pasted text with a reference to the latest identical copy. No LLM, no cost, nothing lost.",
    needs: Needs::Nothing,
};

#[async_trait::async_trait(?Send)]
impl CondensationProvider for LosslessProvider {
    fn meta(&self) -> &ProviderMeta {
        &META
    }

    fn config_form(&self) -> Form {
        Form::of::<LosslessConfig>()
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        _services: Services<'_>,
        _token: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let config: LosslessConfig = options.typed_config(self.id())?;
        // Indices of the visible messages in the full list.
        let visible = ctx.visible();

        // Every candidate text with its site, in view order. A user text block carrying tool
        // results encoded as text (Cline, Roo) offers their bodies instead of its whole text: the
        // same file read twice comes back under different headers and environment details.
        let mut sites: Vec<(Site, &str)> = Vec::new();
        let mut encoded_what: HashMap<Site, String> = HashMap::new();
        for (vi, &mi) in visible.iter().enumerate() {
            let message = &ctx.messages[mi];
            let encoded = if config.tool_results { encoded_results(message) } else { Vec::new() };
            for (bi, block) in message.content.iter().enumerate() {
                match block {
                    ContentBlock::Text { text, .. } if encoded.iter().any(|e| e.block == bi) => {
                        for e in encoded.iter().filter(|e| e.block == bi) {
                            let site = Site {
                                message: vi,
                                block: bi,
                                part: None,
                                range: Some((e.body.start, e.body.end)),
                            };
                            let what = match &e.arg {
                                Some(arg) => format!("the result of {} for '{arg}'", e.tool),
                                None => format!("the result of {}", e.tool),
                            };
                            encoded_what.insert(site, what);
                            sites.push((site, &text[e.body.clone()]));
                        }
                    }
                    ContentBlock::Text { text, .. } if config.text_blocks => {
                        sites.push((Site { message: vi, block: bi, part: None, range: None }, text));
                    }
                    ContentBlock::ToolResult { content, .. } if config.tool_results => {
                        for (pi, part) in content.iter().enumerate() {
                            if let ToolResultPart::Text { text } = part {
                                sites.push((
                                    Site { message: vi, block: bi, part: Some(pi), range: None },
                                    text,
                                ));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        // The last site of each distinct text long enough to matter, found for every site with
        // one hash of its text: `keeper[k]` is the last site with site `k`'s text.
        let mut group_of: HashMap<&str, usize> = HashMap::new();
        let mut last_in_group: Vec<usize> = Vec::new();
        let mut group: Vec<Option<usize>> = vec![None; sites.len()];
        for (k, (_, text)) in sites.iter().enumerate() {
            if text.len() >= config.min_bytes {
                let g = *group_of.entry(text).or_insert(last_in_group.len());
                match last_in_group.get_mut(g) {
                    Some(last) => *last = k,
                    None => last_in_group.push(k),
                }
                group[k] = Some(g);
            }
        }
        let keeper = |k: usize| group[k].map(|g| &sites[last_in_group[g]].0);

        // A pinned message is never edited: its copy of a repeated text stays.
        let pinned = ctx.pinned();
        let mut replaced: BTreeMap<usize, Vec<ContentBlock>> = BTreeMap::new();
        let mut ranged: BTreeMap<usize, Vec<(usize, std::ops::Range<usize>, String)>> = BTreeMap::new();
        let mut duplicates = 0usize;
        let mut bytes_removed = 0usize;
        for (k, (site, text)) in sites.iter().enumerate() {
            let Some(keeper) = keeper(k) else { continue };
            if keeper == site || pinned.contains(&visible[site.message]) {
                continue;
            }
            let keeper_msg = &ctx.messages[visible[keeper.message]];
            let what = match (&keeper_msg.content[keeper.block], encoded_what.get(keeper)) {
                (_, Some(what)) => what.clone(),
                (ContentBlock::ToolResult { tool_use_id, .. }, _) => {
                    format!("the result of tool call {tool_use_id}")
                }
                // The client's wrapper, never the user's words; the copy keeps its mark.
                (ContentBlock::Text { client: Some(kind), .. }, _) => {
                    format!("the client's {}", kind.label())
                }
                _ => "a text block".to_owned(),
            };
            let reference = reference_text(text.len(), &what, &keeper_msg.id);
            if reference.len() >= text.len() {
                continue;
            }
            let mi = visible[site.message];
            if let Some((start, end)) = site.range {
                ranged.entry(mi).or_default().push((site.block, start..end, reference));
                duplicates += 1;
                bytes_removed += text.len();
                continue;
            }
            let content = replaced.entry(mi).or_insert_with(|| ctx.messages[mi].content.clone());
            match (&mut content[site.block], site.part) {
                (ContentBlock::Text { text, .. }, None) => *text = reference,
                (ContentBlock::ToolResult { content, .. }, Some(p)) => {
                    content[p] = ToolResultPart::Text { text: reference };
                }
                _ => unreachable!("sites are collected from these very blocks"),
            }
            duplicates += 1;
            bytes_removed += text.len();
        }
        // Bodies inside text blocks: edited from the last to the first, so offsets stay right.
        for (mi, edits) in ranged {
            let content = replaced.entry(mi).or_insert_with(|| ctx.messages[mi].content.clone());
            replace_ranges(content, edits);
        }
        if replaced.is_empty() {
            return Err(CondenseError::NothingToCondense(format!(
                "no repeated content of {} bytes or more",
                config.min_bytes
            )));
        }
        let condense_id = next_condense_id(ctx.messages);
        let messages = apply_edits(ctx.messages, &condense_id, &replaced, &BTreeSet::new());
        let mut metrics = serde_json::Map::new();
        metrics.insert("condense_id".into(), condense_id.into());
        metrics.insert("duplicates_replaced".into(), duplicates.into());
        metrics.insert("bytes_removed".into(), bytes_removed.into());
        metrics.insert("messages_edited".into(), replaced.len().into());
        Ok(Condensed { messages, summary: None, cost: 0.0, metrics })
    }
}
