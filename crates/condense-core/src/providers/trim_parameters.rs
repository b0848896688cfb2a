//! The `trim_parameters` pass: it cuts bulky tool-call arguments (file contents in write and
//! edit calls, and their Cline/Roo XML forms in assistant text) in older messages to a head,
//! keeping path-like arguments whole; the note after each head names the id that recalls the
//! whole argument ([`super::recall`]). It is a provider so the template checks it, but it is not
//! registered on its own: only `smart` runs it, as one of its passes.

use serde::{Deserialize, Serialize};

use crate::config::{ConfigField, ConfigForm, Form, ledger_field};
use crate::error::CondenseError;
use crate::model::{ContentBlock, Role, next_condense_id};
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, Services, TemplateToken,
    apply_edits,
};

use super::encoded::{floor_boundary, replace_ranges, thousands};
use super::mask::MAIN_ARGUMENTS;
use super::recall::{XML_BULK_TAGS, id_note, recall_id};
use crate::provider::{Needs, ProviderMeta};

/// Configuration of the `trim_parameters` pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrimConfig {
    /// Arguments this long or longer, in characters, are trimmed.
    pub min_chars: usize,
    /// The characters kept at the head of a trimmed argument.
    pub head_chars: usize,
    /// Whether the state ledger goes in with the condensation (read by the template).
    pub ledger: bool,
}

impl Default for TrimConfig {
    fn default() -> Self {
        TrimConfig { min_chars: 800, head_chars: 160, ledger: true }
    }
}

impl ConfigForm for TrimConfig {
    fn fields() -> Vec<ConfigField> {
        vec![
            ConfigField::integer(
                "min_chars",
                "Longest argument",
                "Tool-call arguments this long or longer are cut to their head.",
                1,
                None,
            )
            .unit("characters"),
            ConfigField::integer("head_chars", "Head", "The characters kept of a trimmed argument.", 0, None)
                .unit("characters"),
            ledger_field(),
        ]
    }

    fn check(&self) -> Result<(), String> {
        if self.head_chars + 80 > self.min_chars {
            return Err("head_chars must be at least 80 characters below min_chars".into());
        }
        Ok(())
    }
}

/// `text` cut to `head` characters and a note of what went, with the id that recalls `text`.
fn trimmed(text: &str, head: usize) -> String {
    let at = floor_boundary(text, head);
    format!(
        "{}\n[{} characters trimmed by Context Condenser{}]",
        &text[..at],
        thousands(text.len() - at),
        id_note(&recall_id(text))
    )
}

/// Trims the long, not path-like strings of a tool call's arguments, in place; true when any was.
fn trim_value(value: &mut serde_json::Value, key: Option<&str>, config: &TrimConfig) -> bool {
    match value {
        serde_json::Value::String(s) => {
            let path_like = key.is_some_and(|k| {
                MAIN_ARGUMENTS.contains(&k) || k.to_ascii_lowercase().contains("path") || k.ends_with("file")
            });
            if path_like || s.len() < config.min_chars {
                return false;
            }
            *s = trimmed(s, config.head_chars);
            true
        }
        serde_json::Value::Array(items) => {
            let mut any = false;
            for v in items.iter_mut() {
                any |= trim_value(v, None, config);
            }
            any
        }
        serde_json::Value::Object(map) => {
            let mut any = false;
            for (k, v) in map.iter_mut() {
                any |= trim_value(v, Some(k), config);
            }
            any
        }
        _ => false,
    }
}

/// The byte ranges of long XML tag bodies in assistant text (Cline/Roo tool calls).
fn xml_bulk_ranges(text: &str, config: &TrimConfig) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    for tag in XML_BULK_TAGS {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        let mut from = 0;
        while let Some(at) = text[from..].find(&open) {
            let start = from + at + open.len();
            let Some(len) = text[start..].find(&close) else { break };
            if len >= config.min_chars {
                out.push(start..start + len);
            }
            from = start + len + close.len();
        }
    }
    out.sort_by_key(|r| r.start);
    // Nested tags (a <diff> holding <search>) count once, by the outer one.
    let mut kept: Vec<std::ops::Range<usize>> = Vec::new();
    for r in out {
        if kept.last().is_none_or(|k| r.start >= k.end) {
            kept.push(r);
        }
    }
    kept
}

/// Cuts bulky tool-call arguments in older messages to a head.
#[derive(Debug, Default, Clone, Copy)]
pub struct TrimParametersProvider;

/// What lists show of the provider, and what it needs.
const META: ProviderMeta = ProviderMeta {
    id: "trim_parameters",
    name: "Trim tool arguments",
    description: "Cuts long tool-call arguments (file contents written or edited) in older messages to their head, keeping paths. No LLM, no cost.",
    needs: Needs::Nothing,
};

#[async_trait::async_trait(?Send)]
impl CondensationProvider for TrimParametersProvider {
    fn meta(&self) -> &ProviderMeta {
        &META
    }

    fn config_form(&self) -> Form {
        Form::of::<TrimConfig>()
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _token: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let config: TrimConfig = options.typed_config(self.id())?;
        let keep_last = options.keep_last.unwrap_or(super::summary::DEFAULT_KEEP_LAST);
        let visible = ctx.visible();
        let older = &visible[..visible.len().saturating_sub(keep_last)];
        let pinned = ctx.pinned();
        let mut total = ctx.prev_context_tokens;
        let mut replaced = std::collections::BTreeMap::new();
        let mut trimmed_blocks = 0usize;
        for &mi in older {
            if options.target_tokens.is_some_and(|t| total <= t) {
                break;
            }
            let message = &ctx.messages[mi];
            if message.role != Role::Assistant || pinned.contains(&mi) {
                continue;
            }
            let mut content = message.content.clone();
            let mut changed = 0;
            for block in &mut content {
                match block {
                    ContentBlock::ToolUse { input, .. } => {
                        changed += usize::from(trim_value(input, None, &config))
                    }
                    ContentBlock::Text { text, .. } => {
                        let ranges = xml_bulk_ranges(text, &config);
                        if !ranges.is_empty() {
                            changed += 1;
                            let edits = ranges
                                .into_iter()
                                .map(|r| {
                                    let new = trimmed(&text[r.clone()], config.head_chars);
                                    (0, r, new)
                                })
                                .collect();
                            let mut one = vec![ContentBlock::text(std::mem::take(text))];
                            replace_ranges(&mut one, edits);
                            if let Some(ContentBlock::Text { text: t, .. }) = one.pop() {
                                *text = t;
                            }
                        }
                    }
                    _ => {}
                }
            }
            if changed == 0 {
                continue;
            }
            let mut edited = message.clone();
            edited.content = content;
            let (old, new) = (services.tokens.count_message(message), services.tokens.count_message(&edited));
            if new >= old {
                continue;
            }
            total -= old - new;
            trimmed_blocks += changed;
            replaced.insert(mi, edited.content);
        }
        if replaced.is_empty() {
            return Err(CondenseError::NothingToCondense(format!(
                "no tool argument of {} characters or more in the older messages",
                config.min_chars
            )));
        }
        let condense_id = next_condense_id(ctx.messages);
        let messages = apply_edits(ctx.messages, &condense_id, &replaced, &Default::default());
        let mut metrics = serde_json::Map::new();
        metrics.insert("condense_id".into(), condense_id.into());
        metrics.insert("blocks_trimmed".into(), trimmed_blocks.into());
        metrics.insert("messages_edited".into(), replaced.len().into());
        if let Some(t) = options.target_tokens {
            metrics.insert("target_tokens".into(), t.into());
            metrics.insert("target_met".into(), (total <= t).into());
        }
        Ok(Condensed { messages, summary: None, cost: 0.0, metrics })
    }
}
