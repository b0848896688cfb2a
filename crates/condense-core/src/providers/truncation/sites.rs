//! Where the `truncation` provider cuts and what it leaves: its passes ([`Pass`]), the sites
//! of a message each pass may cut (a whole block, a tool result Cline or Roo sent as text, a
//! client's `<environment_details>`), the stub or the part-way cut of one site, and the search
//! for the longest cut that lands on the target.

use crate::model::{ContentBlock, Message, Role, ToolResultPart};
use crate::provider::count_with_content;
use crate::providers::encoded::{
    encoded_results_in, environment_sections_in, floor_boundary, replace_ranges,
};
use crate::providers::recall::{Roots, id_note, text_id};

/// The passes, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    ToolResults,
    ToolParameters,
    AssistantText,
    UserText,
}

impl Pass {
    pub(super) const ALL: [Pass; 4] =
        [Pass::ToolResults, Pass::ToolParameters, Pass::AssistantText, Pass::UserText];

    pub(super) fn name(self) -> &'static str {
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
pub(super) enum Site {
    /// A whole content block.
    Block(usize),
    /// The body of the n-th tool result encoded as user text (Cline, Roo), its header kept.
    Encoded(usize),
    /// The n-th `<environment_details>` section a client appended to a user turn.
    Environment(usize),
}

impl Pass {
    /// The places this pass may cut in a message, in the order it cuts them.
    pub(super) fn sites(self, role: Role, content: &[ContentBlock]) -> Vec<Site> {
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
    pub(super) fn edit(
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
pub(super) fn land_on_target(
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
