//! The conversation model (SPEC §3): messages made of Anthropic-style content blocks, with the
//! condensation metadata that makes every condensation non-destructive and reversible.
//!
//! History is never destroyed. A condensation hides messages by setting `condense_parent` to its
//! condense id and adds new messages (a summary, or edited copies of the messages it changed) that
//! carry `condense_id`. The API view leaves hidden messages out; undo removes what a condensation
//! added and clears `condense_parent` on what it hid.
//!
//! This file holds the types; `block_serde` reads and writes content blocks, `history` works on a
//! message list's condensations (view, ids, undo, squash, checks).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod block_serde;
pub mod hash;
mod history;

pub use block_serde::{AnyBlock, OpaqueBlock};
pub use history::{
    api_view, check_tool_pairs, last_condense_id, next_condense_id, position_in, same_blocks,
    squash_condensations, undo_condensation, undo_last,
};

/// The schema tag written at the top of the project's own conversation files.
pub const FORMAT_TAG: &str = "context-condenser/conversation@1";

/// Who wrote a message. System prompts live in the conversation's `system` field, not in the message list,
/// so that every message list is valid for both the OpenAI and the Anthropic API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person, or tool results sent back on the person's turn.
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// The wire name of the role.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// Where an image's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSource {
    /// Inline bytes, base64-encoded.
    Base64 {
        /// MIME type, e.g. `image/png`.
        media_type: String,
        /// The base64 payload.
        data: String,
    },
    /// An image the API fetches itself.
    Url {
        /// The image's address.
        url: String,
    },
}

/// One part of a tool result: text or an image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResultPart {
    /// Text returned by the tool.
    Text {
        /// The text.
        text: String,
    },
    /// An image returned by the tool.
    Image {
        /// Where the image is.
        source: ImageSource,
    },
}

/// A content block of a message. The four kinds the project reads are typed; any other block an
/// API sends (Anthropic's `thinking` with its `signature`, `redacted_thinking`, `document`,
/// `server_tool_use`, `web_search_tool_result`, or a kind not invented yet) is kept as read, as an
/// [`OpaqueBlock`]: counted, never edited, written back verbatim.
///
/// (De)serialization: the typed kinds by their `type` tag; any other `type` as an opaque block.
/// The JSON Schema is [`AnyBlock`]'s (the typed kinds, as `KnownBlock`, or an opaque object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(remote = "Self", tag = "type", rename_all = "snake_case")]
#[schemars(rename = "KnownBlock")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Set when the text is a client's wrapper around the turn (Cline's and Roo's
        /// `<environment_details>`, a task resumption notice), not words the user wrote: the ledger
        /// does not quote it. Written in this project's format only; the API views send the text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client: Option<ClientContext>,
    },
    /// A tool call made by the assistant.
    ToolUse {
        /// The call's id, answered by a `tool_result` with the same `tool_use_id`.
        id: String,
        /// The tool's name.
        name: String,
        /// The call's arguments, a JSON value (an object for every API we speak).
        input: serde_json::Value,
    },
    /// The answer to a tool call, sent on the user's turn right after the call.
    ToolResult {
        /// The id of the `tool_use` this answers.
        tool_use_id: String,
        /// What the tool returned.
        #[serde(deserialize_with = "crate::model::de_tool_result_content")]
        #[schemars(with = "Vec<ToolResultPart>")]
        content: Vec<ToolResultPart>,
        /// Whether the tool reported an error.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// An image.
    Image {
        /// Where the image is.
        source: ImageSource,
    },
    /// A block of a kind the project does not interpret, kept exactly as read.
    #[serde(skip)]
    #[schemars(skip)]
    Opaque(OpaqueBlock),
}

/// A client's wrapper text on a user turn, which the model reads but the user did not write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientContext {
    /// `<environment_details>…</environment_details>` (Cline, Roo): open files, time, mode.
    EnvironmentDetails,
    /// `[TASK RESUMPTION] This task was interrupted …` (Cline, Roo), without new instructions.
    TaskResumption,
    /// Cline's focus-chain reminders, a block of their own after a prompt or a tool result:
    /// `# TODO LIST UPDATE REQUIRED - You MUST include the task_progress parameter…` or
    /// `# task_progress RECOMMENDED …`, with the current checklist.
    TaskProgress,
    /// What a Claude Code hook the user installed sent back on a user turn (`Stop hook
    /// feedback:` and the program's output): a program's words, not the user's.
    HookFeedback,
}

impl ClientContext {
    /// What the wrapper is called where a placeholder or a reference names it.
    pub fn label(self) -> &'static str {
        match self {
            ClientContext::EnvironmentDetails => "environment details",
            ClientContext::TaskProgress => "task progress reminder",
            ClientContext::TaskResumption => "task resumption notice",
            ClientContext::HookFeedback => "hook feedback",
        }
    }

    /// The wrapper a whole text block is, if it is one: an environment block, or a resumption
    /// notice that carries no new instructions from the user.
    pub fn of(text: &str) -> Option<ClientContext> {
        let t = text.trim();
        if t.starts_with("<environment_details>") && t.ends_with("</environment_details>") {
            return Some(ClientContext::EnvironmentDetails);
        }
        if t.starts_with("# TODO LIST UPDATE REQUIRED") || t.starts_with("# task_progress") {
            return Some(ClientContext::TaskProgress);
        }
        let first_line = t.lines().next().unwrap_or("");
        if first_line.len() < 60
            && first_line.strip_suffix(" hook feedback:").is_some_and(|event| {
                !event.is_empty() && event.chars().all(|c| c.is_ascii_alphanumeric() || c == ':')
            })
        {
            return Some(ClientContext::HookFeedback);
        }
        let instructions =
            t.contains("<user_message>") || t.contains("New instructions for task continuation");
        (t.starts_with("[TASK RESUMPTION]") && !instructions).then_some(ClientContext::TaskResumption)
    }

    /// Marks each text block of a user turn an importer read that is a client's wrapper
    /// ([`ClientContext::of`]), and unmarks any other.
    pub fn mark(content: &mut [ContentBlock]) {
        for block in content {
            if let ContentBlock::Text { text, client } = block {
                *client = ClientContext::of(text);
            }
        }
    }
}

/// The `type` names of the typed blocks; any other is read as an [`OpaqueBlock`].
pub const KNOWN_BLOCK_KINDS: [&str; 4] = ["text", "tool_use", "tool_result", "image"];

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into(), client: None }
    }

    /// A tool result holding one text part.
    pub fn tool_result_text(tool_use_id: impl Into<String>, text: impl Into<String>) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: vec![ToolResultPart::Text { text: text.into() }],
            is_error: false,
        }
    }

    /// The wire name of the block's type.
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text { .. } => "text",
            ContentBlock::ToolUse { .. } => "tool_use",
            ContentBlock::ToolResult { .. } => "tool_result",
            ContentBlock::Image { .. } => "image",
            ContentBlock::Opaque(block) => block.kind(),
        }
    }

    /// Whether the block is kept as read (no provider may edit it).
    pub fn is_opaque(&self) -> bool {
        matches!(self, ContentBlock::Opaque(_))
    }
}

/// A tool result's content as text for a prompt: its text parts on their own lines, `[image]`
/// for each image.
pub fn tool_result_text(content: &[ToolResultPart]) -> String {
    content
        .iter()
        .map(|p| match p {
            ToolResultPart::Text { text } => text.as_str(),
            ToolResultPart::Image { .. } => "[image]",
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Accepts a tool result's content as the Anthropic API does: a string or a list of parts.
pub(crate) fn de_tool_result_content<'de, D>(d: D) -> Result<Vec<ToolResultPart>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value = serde_json::Value::deserialize(d)?;
    match value {
        serde_json::Value::String(text) => Ok(vec![ToolResultPart::Text { text }]),
        serde_json::Value::Array(_) => serde_json::from_value(value).map_err(serde::de::Error::custom),
        _ => Err(serde::de::Error::custom("tool result content must be a string or a list of parts")),
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// Unique within the conversation.
    pub id: String,
    /// Milliseconds since the Unix epoch; 0 when unknown (messages imported from a format without
    /// timestamps).
    #[serde(default)]
    pub ts: i64,
    /// Who wrote it.
    pub role: Role,
    /// The content blocks, in order.
    #[schemars(with = "Vec<AnyBlock>")]
    pub content: Vec<ContentBlock>,
    /// This message is an LLM summary standing in for the messages its condensation hid.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_summary: bool,
    /// Set on a message a condensation added (a summary or an edited copy): that condensation's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condense_id: Option<String>,
    /// Set on a message a condensation hid: that condensation's id. Hidden messages are left out of
    /// the API view but kept, so that undo can bring them back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condense_parent: Option<String>,
    /// Set on an answer that was cut short, kept with the text that did arrive: `cancelled`, or
    /// the kind of the error that ended it (e.g. `llm_network`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// Pinned by the user: no condensation hides or edits it while it is visible (see
    /// `crate::pins`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
}

impl Message {
    /// A message with the given blocks and no condensation metadata.
    pub fn new(id: impl Into<String>, role: Role, content: Vec<ContentBlock>) -> Self {
        Message {
            id: id.into(),
            ts: 0,
            role,
            content,
            is_summary: false,
            condense_id: None,
            condense_parent: None,
            interrupted: None,
            pinned: false,
        }
    }

    /// Whether the API view includes this message.
    pub fn is_visible(&self) -> bool {
        self.condense_parent.is_none()
    }

    /// The concatenated text blocks, for display and prompts.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text, .. } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// A conversation: an optional system prompt and its messages, hidden ones included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Conversation {
    /// Always `context-condenser/conversation@1` when written by this project.
    #[serde(default = "default_format", rename = "format")]
    pub format: String,
    /// The system prompt sent with every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The tool definitions sent with every request (an OpenAI or Anthropic request's `tools`),
    /// kept as read: counted with the context, never edited, exported back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<serde_json::Value>,
    /// Every message, in order, including those hidden by a condensation.
    pub messages: Vec<Message>,
}

fn default_format() -> String {
    FORMAT_TAG.to_owned()
}

/// An empty conversation in this project's format (a new chat's): its `format` is the tag, so
/// that it reads back as this project's format anywhere a conversation is accepted.
impl Default for Conversation {
    fn default() -> Self {
        Conversation::new(Vec::new())
    }
}

impl Conversation {
    /// A conversation with the given messages and no system prompt.
    pub fn new(messages: Vec<Message>) -> Self {
        Conversation { format: default_format(), system: None, tools: Vec::new(), messages }
    }

    /// The messages sent to the model: hidden messages left out, summaries and edited copies in.
    pub fn api_view(&self) -> Vec<&Message> {
        api_view(&self.messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_found_by_its_place_never_by_an_equal_copy() {
        let messages: Vec<Message> = (0..4)
            .map(|i| Message::new(format!("m{i}"), Role::User, vec![ContentBlock::text("same")]))
            .collect();
        for (i, m) in messages.iter().enumerate() {
            assert_eq!(position_in(&messages, m), Some(i));
        }
        assert_eq!(position_in(&messages[1..], &messages[3]), Some(2));
        assert_eq!(position_in(&messages[..2], &messages[3]), None, "past the end");
        assert_eq!(position_in(&messages[1..], &messages[0]), None, "before the start");
        assert_eq!(position_in(&messages, &messages[2].clone()), None, "an equal copy is not the message");
    }

    fn msg(id: &str, role: Role, text: &str) -> Message {
        Message::new(id, role, vec![ContentBlock::text(text)])
    }

    #[test]
    fn client_wrappers_are_told_from_the_users_words() {
        use ClientContext::*;
        let of = ClientContext::of;
        assert_eq!(
            of("<environment_details>\n# Current Time\n…\n</environment_details>"),
            Some(EnvironmentDetails)
        );
        assert_eq!(of("[TASK RESUMPTION] This task was interrupted 3 minutes ago."), Some(TaskResumption));
        assert_eq!(
            of("Stop hook feedback:\n[~/.claude/hooks/stop.sh]: Cannot exit with unstaged changes."),
            Some(HookFeedback)
        );
        assert_eq!(of("Why did the stop hook feedback: fail?"), None);
        assert_eq!(
            of(
                "[TASK RESUMPTION] …\n\nNew instructions for task continuation:\n<user_message>go on</user_message>"
            ),
            None
        );
        assert_eq!(
            of(
                "\n# TODO LIST UPDATE REQUIRED - You MUST include the task_progress parameter in your NEXT tool call.\n\n- [x] read the spec\n- [ ] write the test"
            ),
            Some(TaskProgress)
        );
        assert_eq!(
            of(
                "# task_progress RECOMMENDED\n\nWhen starting a new task, it is recommended to include a todo list."
            ),
            Some(TaskProgress)
        );
        assert_eq!(of("Please fix the task_progress parsing in src/focus.ts"), None);
    }

    #[test]
    fn api_view_leaves_hidden_messages_out() {
        let mut a = msg("a", Role::User, "hi");
        a.condense_parent = Some("c1".into());
        let b = msg("b", Role::Assistant, "hello");
        let c = Conversation::new(vec![a, b]);
        let ids: Vec<_> = c.api_view().iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["b"]);
    }

    #[test]
    fn condense_ids_count_up_and_undo_takes_the_last() {
        let mut a = msg("a", Role::User, "x");
        a.condense_parent = Some("c2".into());
        let mut b = msg("b", Role::User, "y");
        b.condense_id = Some("c2".into());
        b.condense_parent = None;
        let mut c = msg("c", Role::User, "z");
        c.condense_id = Some("c1".into());
        let list = vec![a, b, c];
        assert_eq!(next_condense_id(&list), "c3");
        let (id, undone) = undo_last(&list).unwrap();
        assert_eq!(id, "c2");
        assert_eq!(undone.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["a", "c"]);
        assert!(undone[0].condense_parent.is_none());
        assert!(undo_last(&[msg("x", Role::User, "q")]).is_none());
    }

    #[test]
    fn squashed_passes_undo_as_one() {
        let original = vec![
            msg("a", Role::User, "first"),
            msg("b", Role::Assistant, "long answer"),
            msg("c", Role::User, "long question"),
            msg("d", Role::Assistant, "tail"),
        ];
        // Pass one (c1) edits b and c; pass two (c2) edits c1's copy of b again and hides c's copy.
        let mut pass1 = Vec::new();
        for m in &original {
            if m.id == "b" || m.id == "c" {
                let mut hidden = m.clone();
                hidden.condense_parent = Some("c1".into());
                pass1.push(hidden);
                let mut copy = msg(&format!("{}-1", m.id), m.role, "short");
                copy.condense_id = Some("c1".into());
                pass1.push(copy);
            } else {
                pass1.push(m.clone());
            }
        }
        let mut pass2 = Vec::new();
        for m in &pass1 {
            if m.id == "b-1" || m.id == "c-1" {
                let mut hidden = m.clone();
                hidden.condense_parent = Some("c2".into());
                pass2.push(hidden);
                if m.id == "b-1" {
                    let mut copy = msg("b-2", m.role, "shorter");
                    copy.condense_id = Some("c2".into());
                    pass2.push(copy);
                }
            } else {
                pass2.push(m.clone());
            }
        }
        let squashed = squash_condensations(&pass2, "c1");
        let ids: Vec<_> = squashed.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "b-2", "c", "d"]);
        assert!(squashed.iter().all(|m| m.condense_id.as_deref().is_none_or(|id| id == "c1")));
        assert_eq!(api_view(&squashed).iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["a", "b-2", "d"]);
        assert_eq!(next_condense_id(&squashed), "c2");
        let (id, undone) = undo_last(&squashed).unwrap();
        assert_eq!(id, "c1");
        assert_eq!(undone, original);
        // An earlier condensation (c0 would sort first) is left alone.
        let mut older = msg("z", Role::User, "kept");
        older.condense_parent = Some("c1".into());
        let before_first = squash_condensations(&[older.clone()], "c2");
        assert_eq!(before_first, vec![older]);
    }

    proptest::proptest! {
        /// The fast comparison is `==`: texts equal, or differing in one byte anywhere (in the
        /// words or the tail), of any length; blocks of every kind.
        #[test]
        fn same_blocks_is_equality(
            text in "[a-zé ]{0,40}",
            at in 0usize..48,
            byte in proptest::prelude::any::<u8>(),
            kind in 0u8..5,
        ) {
            let block = |t: &str| match kind {
                0 => ContentBlock::text(t),
                1 => ContentBlock::tool_result_text("t1", t),
                2 => ContentBlock::ToolUse { id: "t1".into(), name: "Read".into(), input: serde_json::json!({"p": t}) },
                3 => ContentBlock::ToolResult {
                    tool_use_id: "t1".into(),
                    content: vec![ToolResultPart::Text { text: t.into() }, ToolResultPart::Image { source: ImageSource::Url { url: t.into() } }],
                    is_error: true,
                },
                _ => ContentBlock::Text { text: t.into(), client: Some(ClientContext::TaskProgress) },
            };
            let mut other = text.clone().into_bytes();
            if at < other.len() {
                other[at] = byte.max(1) & 0x7f;
            } else {
                other.push(b'x');
            }
            let other = String::from_utf8(other).unwrap_or_default();
            for (x, y) in [(&text, &text), (&text, &other)] {
                let (a, b) = (vec![block(x), ContentBlock::text("tail")], vec![block(y), ContentBlock::text("tail")]);
                proptest::prop_assert_eq!(same_blocks(&a, &b), a == b);
            }
            let image = ContentBlock::Image { source: ImageSource::Url { url: text.clone() } };
            let (one, none) = (same_blocks(&[block(&text)], &[image]), same_blocks(&[block(&text)], &[]));
            proptest::prop_assert!(!one && !none, "another kind or length is never the same");
        }
    }

    #[test]
    fn tool_result_content_accepts_a_string() {
        let b: ContentBlock =
            serde_json::from_str(r#"{"type":"tool_result","tool_use_id":"t1","content":"ok"}"#).unwrap();
        assert_eq!(b, ContentBlock::tool_result_text("t1", "ok"));
    }

    #[test]
    fn tool_pairs_are_checked() {
        let call = Message::new(
            "a",
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: "t1".into(),
                name: "read".into(),
                input: serde_json::json!({}),
            }],
        );
        let answer = Message::new("u", Role::User, vec![ContentBlock::tool_result_text("t1", "x")]);
        assert!(check_tool_pairs(&[&call, &answer]).is_ok());
        assert!(check_tool_pairs(&[&call]).unwrap_err().contains("not answered"));
        assert!(check_tool_pairs(&[&answer]).unwrap_err().contains("no tool_use"));
    }
}
