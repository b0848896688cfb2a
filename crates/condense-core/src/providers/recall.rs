//! Recall of what a condensation hid. Every placeholder the LLM-free providers write names what
//! it stands for by an id, e.g. `[read_file src/x.py: 3,412 tokens hidden by Context Condenser;
//! read it again if needed; id r3f9a21c0]`, and the original is still in the conversation (a
//! condensation hides, never deletes), so [`recall`] finds it by that id: `condense recall ID
//! FILE` prints it.
//!
//! An id is `r` and eight hex digits of FNV-1a ([`crate::model::hash`]) over the original's text
//! as [`recall`] gives it back: derived from the content alone, so a condensed transcript is
//! reproducible and the gateway's replayed bytes stay the same; short, since every placeholder
//! pays for it in tokens. What an id may stand for, in any message of the conversation: a text
//! block, a tool call's arguments (as pretty JSON) or one string argument, a tool result (its
//! parts one per line, an image as its `data:` URL or address), an image, the body of a tool
//! result a client sent as user text, an `<environment_details>` section, the body of a bulky tag
//! of a Cline or Roo tool call written as XML.
//!
//! A whole block's id is taken from the block as it was before any condensation edited it (the
//! message's root: `m` for its copy `m.c3`), so a placeholder hidden again by a later pass (a
//! masked result that truncation stubs) names the original content, which stays hidden in the
//! conversation even when `smart` drops its passes' intermediate copies; so is the body of a
//! result a client sent as user text. Another part of a block (a section, an argument) is named
//! by its own text, or by the id of the placeholder it already is.
//!
//! `lossless`'s reference carries no id: it names the byte-identical copy still in the context,
//! and a later pass that hides it names the original by the rule above. Nor does the cut of the
//! first message's pasted content (the ledger's `cut_pasted`, which keeps the user's words).

use std::borrow::Cow;
use std::collections::HashMap;

use crate::model::hash::fnv1a;
use crate::model::{ContentBlock, ImageSource, Message, ToolResultPart};

use super::encoded::{encoded_results, environment_sections_in};

/// The tags whose bodies hold file contents or edits in Cline and Roo tool calls written as XML
/// in assistant text.
pub(crate) const XML_BULK_TAGS: &[&str] =
    &["content", "diff", "new_str", "old_str", "search", "replace", "new_string", "old_string"];

/// How an id is written into a placeholder: `; id r3f9a21c0` before its closing bracket.
const ID_NOTE: &str = "; id ";

/// The id of `text`: `r` and eight hex digits.
pub fn recall_id(text: &str) -> String {
    format!("r{:08x}", fold(fnv1a(text.as_bytes())))
}

/// 64 bits of hash folded to the 32 an id shows.
fn fold(h: u64) -> u32 {
    ((h >> 32) ^ h) as u32
}

/// The 32 bits an id names, when `id` is one.
fn parse_id(id: &str) -> Option<u32> {
    let hex = id.strip_prefix('r').filter(|h| h.len() == 8 && h.bytes().all(|b| b.is_ascii_hexdigit()))?;
    u32::from_str_radix(hex, 16).ok()
}

/// Whether `id` has the shape of a recall id.
pub fn is_recall_id(id: &str) -> bool {
    parse_id(id).is_some()
}

/// `; id r…`, the words a placeholder ends with before its `]`.
pub(crate) fn id_note(id: &str) -> String {
    format!("{ID_NOTE}{id}")
}

/// The id a placeholder of ours carries, when `text` is one (a short `[…]` naming Context
/// Condenser and ending with [`id_note`]).
pub(crate) fn placeholder_id(text: &str) -> Option<&str> {
    let t = text.trim();
    if t.len() > 400 || !t.starts_with('[') || !t.contains("Context Condenser") {
        return None;
    }
    let inner = t.strip_suffix(']')?;
    let at = inner.rfind(ID_NOTE)?;
    let id = &inner[at + ID_NOTE.len()..];
    is_recall_id(id).then_some(id)
}

/// The id naming `text`: the placeholder's own when `text` is a placeholder already (what it
/// hides is elsewhere), else the id of `text`.
pub(crate) fn text_id(text: &str) -> String {
    placeholder_id(text).map_or_else(|| recall_id(text), str::to_owned)
}

/// An image as recall gives it back: its `data:` URL, or its address.
fn image_text(source: &ImageSource) -> String {
    match source {
        ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        ImageSource::Url { url } => url.clone(),
    }
}

/// A tool result's parts as recall gives them back: one per line, one text part as it is.
pub(crate) fn result_text(parts: &[ToolResultPart]) -> Cow<'_, str> {
    fn piece(p: &ToolResultPart) -> Cow<'_, str> {
        match p {
            ToolResultPart::Text { text } => text.into(),
            ToolResultPart::Image { source } => image_text(source).into(),
        }
    }
    match parts {
        [one] => piece(one),
        _ => parts.iter().map(piece).collect::<Vec<_>>().join("\n").into(),
    }
}

/// A tool call's arguments as recall gives them back.
fn arguments_text(input: &serde_json::Value) -> String {
    serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string())
}

/// A whole block as recall gives it back; `None` for a block kept as read (a thinking block).
fn block_text(block: &ContentBlock) -> Option<Cow<'_, str>> {
    match block {
        ContentBlock::Text { text, .. } => Some(text.into()),
        ContentBlock::ToolUse { input, .. } => Some(arguments_text(input).into()),
        ContentBlock::ToolResult { content, .. } => Some(result_text(content)),
        ContentBlock::Image { source } => Some(image_text(source).into()),
        ContentBlock::Opaque(_) => None,
    }
}

/// Whether `a` and `b` are the same block, one of them edited: the same kind, the same call.
fn same_slot(a: &ContentBlock, b: &ContentBlock) -> bool {
    match (a, b) {
        (ContentBlock::Text { client: x, .. }, ContentBlock::Text { client: y, .. }) => x == y,
        (ContentBlock::ToolUse { id: x, .. }, ContentBlock::ToolUse { id: y, .. }) => x == y,
        (
            ContentBlock::ToolResult { tool_use_id: x, .. },
            ContentBlock::ToolResult { tool_use_id: y, .. },
        ) => x == y,
        // Truncation stubs an image with a text.
        (ContentBlock::Image { .. }, ContentBlock::Image { .. } | ContentBlock::Text { .. }) => true,
        _ => false,
    }
}

/// The messages of a run by id, to find the message each edited copy was made from.
pub(crate) struct Roots<'a> {
    by_id: HashMap<&'a str, &'a Message>,
}

impl<'a> Roots<'a> {
    pub(crate) fn new(messages: &'a [Message]) -> Roots<'a> {
        Roots { by_id: messages.iter().map(|m| (m.id.as_str(), m)).collect() }
    }

    /// The message `m` is an edited copy of (`m` for its copy `m.c3`, followed to the first),
    /// or `m` itself.
    fn root(&self, mut m: &'a Message) -> &'a Message {
        // Each step drops a `.cN` suffix, so the walk ends.
        while let Some(cid) = m.condense_id.as_deref() {
            let parent = m.id.strip_suffix(cid).and_then(|p| p.strip_suffix('.'));
            match parent.and_then(|p| self.by_id.get(p)) {
                Some(parent) => m = parent,
                None => break,
            }
        }
        m
    }

    /// The id of the body of the `n`-th tool result `m` holds as user text (Cline, Roo): of that
    /// body as it was before any condensation edited it (a result masked or de-duplicated keeps
    /// its header, so the count holds).
    pub(crate) fn encoded_id(&self, m: &'a Message, n: usize) -> String {
        let body = |m: &'a Message| {
            let e = encoded_results(m).into_iter().nth(n)?;
            match m.content.get(e.block)? {
                ContentBlock::Text { text, .. } => text.get(e.body),
                _ => None,
            }
        };
        body(self.root(m)).or_else(|| body(m)).map_or_else(|| recall_id(""), text_id)
    }

    /// The id of block `bi` of `m`: of that block as it was before any condensation edited it.
    pub(crate) fn block_id(&self, m: &'a Message, bi: usize) -> String {
        let Some(current) = m.content.get(bi) else { return recall_id("") };
        let root = self.root(m).content.get(bi).filter(|b| same_slot(b, current));
        match root.and_then(block_text) {
            Some(text) => text_id(&text),
            None => block_text(current).map_or_else(|| recall_id(""), |t| text_id(&t)),
        }
    }
}

/// What an id stood for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recalled {
    /// The id of the message it is in.
    pub message_id: String,
    /// What it is: `tool result`, `arguments of Write`, …
    pub what: String,
    /// The original text.
    pub text: String,
}

/// The original `id` names in `messages` (a conversation, hidden messages included), hidden
/// messages searched first. `None` when no content there has that id.
pub fn recall(messages: &[Message], id: &str) -> Option<Recalled> {
    let want = parse_id(id)?;
    let hidden = messages.iter().filter(|m| !m.is_visible());
    let visible = messages.iter().filter(|m| m.is_visible());
    hidden.chain(visible).find_map(|m| in_message(m, want))
}

/// The content of `m` whose id is `want`.
fn in_message(m: &Message, want: u32) -> Option<Recalled> {
    let found = |text: &str, what: &dyn Fn() -> String| {
        (fold(fnv1a(text.as_bytes())) == want).then(|| Recalled {
            message_id: m.id.clone(),
            what: what(),
            text: text.to_owned(),
        })
    };
    for block in &m.content {
        let hit = match block {
            ContentBlock::Text { text, client } => found(text, &|| match client {
                Some(kind) => format!("the client's {}", kind.label()),
                None => format!("{} text", m.role.as_str()),
            })
            .or_else(|| {
                XML_BULK_TAGS.iter().find_map(|tag| {
                    tag_bodies(text, tag).find_map(|body| found(body, &|| format!("<{tag}> in the text")))
                })
            }),
            ContentBlock::ToolUse { name, input, .. } => {
                found(&arguments_text(input), &|| format!("arguments of {name}")).or_else(|| {
                    crate::ledger::strings(input)
                        .into_iter()
                        .find_map(|s| found(s, &|| format!("an argument of {name}")))
                })
            }
            ContentBlock::ToolResult { content, .. } => {
                found(&result_text(content), &|| "tool result".into())
            }
            ContentBlock::Image { source } => found(&image_text(source), &|| "image".into()),
            ContentBlock::Opaque(_) => None,
        };
        if hit.is_some() {
            return hit;
        }
    }
    let text_of = |bi: usize| match m.content.get(bi) {
        Some(ContentBlock::Text { text, .. }) => text.as_str(),
        _ => "",
    };
    encoded_results(m)
        .into_iter()
        .find_map(|e| {
            let body = text_of(e.block).get(e.body.clone())?;
            found(body, &|| format!("{} result", e.tool))
        })
        .or_else(|| {
            environment_sections_in(m.role, &m.content)
                .into_iter()
                .find_map(|(bi, range)| found(text_of(bi).get(range)?, &|| "environment details".into()))
        })
}

/// The bodies of every `<tag>…</tag>` in `text`.
pub(crate) fn tag_bodies<'t>(text: &'t str, tag: &str) -> impl Iterator<Item = &'t str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut rest = text;
    std::iter::from_fn(move || {
        let at = rest.find(&open)?;
        let after = &rest[at + open.len()..];
        let len = after.find(&close)?;
        rest = &after[len + close.len()..];
        Some(&after[..len])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    #[test]
    fn an_id_is_short_stable_and_read_back_from_a_placeholder() {
        let id = recall_id("fn main() {}");
        assert_eq!(id.len(), 9);
        assert!(is_recall_id(&id));
        assert_eq!(id, recall_id("fn main() {}"), "the same text, the same id");
        assert_ne!(id, recall_id("fn main() { }"));
        // The published function, folded: pinned so an id never changes between versions.
        assert_eq!(recall_id(""), format!("r{:08x}", 0xcbf2_9ce4_u32 ^ 0x8422_2325));
        assert!(!is_recall_id("r123") && !is_recall_id("x3f9a21c0") && !is_recall_id("r3f9a21cg"));

        let note =
            format!("[tool result truncated by Context Condenser: 9 characters removed{}]", id_note(&id));
        assert_eq!(placeholder_id(&note), Some(id.as_str()));
        assert_eq!(text_id(&note), id, "a placeholder hidden again keeps its id");
        assert_eq!(placeholder_id("[a note; id r00000000] of someone else"), None);
        assert_eq!(placeholder_id(&format!("[plain{}]", id_note(&id))), None);
    }

    #[test]
    fn every_kind_of_content_is_found_hidden_messages_first() {
        let image = ImageSource::Base64 { media_type: "image/png".into(), data: "iVBORw0".into() };
        let mut call = Message::new(
            "a1",
            Role::Assistant,
            vec![
                ContentBlock::text(
                    "I will write it.\n<write_to_file><content>BODY</content></write_to_file>",
                ),
                ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "Write".into(),
                    input: serde_json::json!({"file_path": "a.rs", "content": "fn a() {}"}),
                },
            ],
        );
        call.condense_parent = Some("c1".into());
        let result = Message::new(
            "u1",
            Role::User,
            vec![
                ContentBlock::ToolResult {
                    tool_use_id: "t1".into(),
                    content: vec![
                        ToolResultPart::Text { text: "written".into() },
                        ToolResultPart::Image { source: image.clone() },
                    ],
                    is_error: false,
                },
                ContentBlock::text(
                    "[read_file for 'b.rs'] Result:\nfn b() {}\n<environment_details>\nnoise\n</environment_details>",
                ),
            ],
        );
        let messages = [call, result];
        let check = |text: &str, what: &str, message: &str| {
            let r = recall(&messages, &recall_id(text)).unwrap_or_else(|| panic!("{text:?} not found"));
            assert_eq!((r.text.as_str(), r.what.as_str(), r.message_id.as_str()), (text, what, message));
        };
        check(
            "I will write it.\n<write_to_file><content>BODY</content></write_to_file>",
            "assistant text",
            "a1",
        );
        check("BODY", "<content> in the text", "a1");
        check("{\n  \"file_path\": \"a.rs\",\n  \"content\": \"fn a() {}\"\n}", "arguments of Write", "a1");
        check("fn a() {}", "an argument of Write", "a1");
        check("written\ndata:image/png;base64,iVBORw0", "tool result", "u1");
        check("fn b() {}", "read_file result", "u1");
        check("<environment_details>\nnoise\n</environment_details>", "environment details", "u1");
        assert_eq!(recall(&messages, &recall_id("nowhere")), None);
        assert_eq!(recall(&messages, "not-an-id"), None);
    }

    #[test]
    fn a_copy_names_its_blocks_by_the_message_it_was_made_from() {
        let original = Message::new("m", Role::User, vec![ContentBlock::text("the whole original")]);
        let mut first = original.clone();
        first.id = "m.c1".into();
        first.condense_id = Some("c1".into());
        first.content = vec![ContentBlock::text("[hidden by Context Condenser; id r00000001]")];
        let mut second = first.clone();
        second.id = "m.c1.c2".into();
        second.condense_id = Some("c2".into());
        let messages = [original, first, second];
        let roots = Roots::new(&messages);
        let want = recall_id("the whole original");
        for m in &messages {
            assert_eq!(roots.block_id(m, 0), want, "{}", m.id);
        }
        // Without its original, a placeholder's own id is kept.
        let alone = Roots::new(&messages[1..2]);
        assert_eq!(alone.block_id(&messages[1], 0), "r00000001");
    }
}
