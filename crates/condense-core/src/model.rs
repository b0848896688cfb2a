//! The conversation model (SPEC §3): messages made of Anthropic-style content blocks, with the
//! condensation metadata that makes every condensation non-destructive and reversible.
//!
//! History is never destroyed. A condensation hides messages by setting `condense_parent` to its
//! condense id and adds new messages (a summary, or edited copies of the messages it changed) that
//! carry `condense_id`. The API view leaves hidden messages out; undo removes what a condensation
//! added and clears `condense_parent` on what it hid.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
}

/// The `type` names of the typed blocks; any other is read as an [`OpaqueBlock`].
pub const KNOWN_BLOCK_KINDS: [&str; 4] = ["text", "tool_use", "tool_result", "image"];

impl Serialize for ContentBlock {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Opaque(block) => block.serialize(s),
            // The derived (remote) serializer of the typed kinds.
            _ => ContentBlock::serialize(self, s),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BlockVisitor)
    }
}

/// Reads a block in one pass over its entries (every `countTokens` reads every block): a typed
/// block of the usual shape is built from them directly; anything else (an unknown kind, a text
/// block with more than the project reads, a field of the wrong type) goes the general way,
/// [`ContentBlock::from_object`], which gives the same block or the same error it always did.
struct BlockVisitor;

/// Not a block: the error the general way gives for a value that is not an object.
fn not_a_block<E: serde::de::Error>() -> E {
    E::custom("expected a content block (an object with a `type`)")
}

impl<'de> serde::de::Visitor<'de> for BlockVisitor {
    type Value = ContentBlock;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a content block (an object with a `type`)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
        let mut entries: Vec<(String, serde_json::Value)> = Vec::with_capacity(4);
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<serde_json::Value>()?;
            // A repeated key keeps its first place and its last value, as a JSON object read
            // whole does.
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
        }
        ContentBlock::from_entries(entries)
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<ContentBlock, E> {
        Err(not_a_block())
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<ContentBlock, E> {
        Err(not_a_block())
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<ContentBlock, E> {
        Err(not_a_block())
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<ContentBlock, E> {
        Err(not_a_block())
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<ContentBlock, E> {
        Err(not_a_block())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<ContentBlock, E> {
        Err(not_a_block())
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<ContentBlock, E> {
        Err(not_a_block())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<ContentBlock, A::Error> {
        Err(not_a_block())
    }
}

impl ContentBlock {
    /// A block from its entries, in order (see [`BlockVisitor`]).
    fn from_entries<E: serde::de::Error>(mut entries: Vec<(String, serde_json::Value)>) -> Result<Self, E> {
        match typed_block(&mut entries) {
            Some(block) => Ok(block),
            None => ContentBlock::from_object(entries.into_iter().collect()),
        }
    }

    /// A block from a JSON object, the general way: a typed kind by its derived deserializer,
    /// anything else kept as read.
    fn from_object<E: serde::de::Error>(map: serde_json::Map<String, serde_json::Value>) -> Result<Self, E> {
        let kind = match map.get("type") {
            Some(serde_json::Value::String(kind)) => kind.clone(),
            Some(_) => return Err(E::custom("`type` must be a string")),
            None => return Err(E::missing_field("type")),
        };
        // A text or image block with more than the project reads (a text's `citations`, …) is
        // kept as read, so that nothing it carries is lost; `cache_control` is a request hint.
        let extra = |known: &[&str]| {
            map.keys().any(|k| k != "type" && k != "cache_control" && !known.contains(&k.as_str()))
        };
        let keep_whole = match kind.as_str() {
            "text" => extra(&["text", "client"]),
            "image" => extra(&["source"]),
            _ => false,
        };
        if KNOWN_BLOCK_KINDS.contains(&kind.as_str()) && !keep_whole {
            // The derived (remote) deserializer of the typed kinds; an error is located at the
            // block (the tagged form reads the block whole, so no deeper path is known).
            return ContentBlock::deserialize(serde_json::Value::Object(map)).map_err(E::custom);
        }
        Ok(ContentBlock::Opaque(OpaqueBlock(map)))
    }
}

/// The typed block of the usual shapes, built from the entries directly: a text block of only
/// what the project reads, a tool call, a tool result of text. `None` (the entries untouched) for
/// anything else, which [`ContentBlock::from_object`] reads: the same blocks, by the derived
/// deserializer, which also ignores a typed block's unknown fields.
fn typed_block(entries: &mut [(String, serde_json::Value)]) -> Option<ContentBlock> {
    use serde_json::Value;
    let at = |entries: &[(String, Value)], key: &str| entries.iter().position(|(k, _)| k == key);
    let string_at =
        |entries: &[(String, Value)], key: &str| at(entries, key).filter(|&i| entries[i].1.is_string());
    let take_string = |value: &mut Value| match std::mem::take(value) {
        Value::String(s) => s,
        _ => unreachable!("checked to be a string"),
    };
    let kind = entries[at(entries, "type")?].1.as_str()?;
    match kind {
        "text" => {
            let known = |k: &str| matches!(k, "type" | "cache_control" | "text" | "client");
            if !entries.iter().all(|(k, _)| known(k)) {
                return None;
            }
            let text = string_at(entries, "text")?;
            let client = match at(entries, "client") {
                Some(i) => Option::<ClientContext>::deserialize(&entries[i].1).ok()?,
                None => None,
            };
            Some(ContentBlock::Text { text: take_string(&mut entries[text].1), client })
        }
        "tool_use" => {
            let (id, name, input) =
                (string_at(entries, "id")?, string_at(entries, "name")?, at(entries, "input")?);
            Some(ContentBlock::ToolUse {
                id: take_string(&mut entries[id].1),
                name: take_string(&mut entries[name].1),
                input: std::mem::take(&mut entries[input].1),
            })
        }
        "tool_result" => {
            let id = string_at(entries, "tool_use_id")?;
            let is_error = match at(entries, "is_error") {
                Some(i) => entries[i].1.as_bool()?,
                None => false,
            };
            let content = at(entries, "content")?;
            let text_part = |part: &Value| {
                part.get("type").and_then(Value::as_str) == Some("text")
                    && part.get("text").is_some_and(Value::is_string)
            };
            match &entries[content].1 {
                Value::String(_) => {}
                Value::Array(parts) if parts.iter().all(text_part) => {}
                _ => return None,
            }
            let content = match std::mem::take(&mut entries[content].1) {
                Value::String(text) => vec![ToolResultPart::Text { text }],
                Value::Array(parts) => parts
                    .into_iter()
                    .map(|mut part| ToolResultPart::Text { text: take_string(&mut part["text"]) })
                    .collect(),
                _ => unreachable!("checked above"),
            };
            Some(ContentBlock::ToolResult { tool_use_id: take_string(&mut entries[id].1), content, is_error })
        }
        _ => None,
    }
}

/// A content block kept exactly as read (its JSON object, `type` included, keys in their order):
/// Anthropic's `thinking` (whose `signature` the API checks on the way back), `redacted_thinking`,
/// `document`, `server_tool_use`, `web_search_tool_result`, any kind unknown today, and a `text`
/// or `image` block carrying more than the project reads (a text's `citations`). No provider
/// edits one; a condensation hides it with its message or keeps it whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct OpaqueBlock(serde_json::Map<String, serde_json::Value>);

impl OpaqueBlock {
    /// An opaque block from a JSON object whose `type` is a string naming no typed block.
    pub fn new(map: serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        let kind = map.get("type")?.as_str()?;
        (!KNOWN_BLOCK_KINDS.contains(&kind)).then_some(OpaqueBlock(map))
    }

    /// The block's `type`, e.g. `thinking`.
    pub fn kind(&self) -> &str {
        self.0.get("type").and_then(serde_json::Value::as_str).unwrap_or("")
    }

    /// The block as read.
    pub fn fields(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.0
    }

    /// The block in a prompt's plain text: a thinking block's thought, else its kind.
    pub fn prompt_text(&self) -> String {
        match (self.kind(), self.0.get("thinking").and_then(serde_json::Value::as_str)) {
            ("thinking", Some(thought)) => format!("[thinking]\n{thought}"),
            (kind, _) => format!("[{kind} block]"),
        }
    }

    /// The block's JSON text, as sent to an API (what its tokens are counted from).
    pub fn json(&self) -> String {
        serde_json::to_string(&self.0).expect("a JSON object serializes")
    }
}

impl JsonSchema for OpaqueBlock {
    fn schema_name() -> String {
        "OpaqueBlock".to_owned()
    }

    fn json_schema(_: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
        serde_json::from_value(serde_json::json!({
            "description": "A block of a kind the project does not interpret (Anthropic's `thinking`, `redacted_thinking`, `document`, `server_tool_use`, `web_search_tool_result`, or any other), kept exactly as read: counted, never edited, written back verbatim.",
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"description": "The block's kind.", "type": "string"}},
            "additionalProperties": true
        }))
        .expect("a valid schema")
    }
}

/// The schema of a content block: a typed one, or an opaque one kept as read.
#[derive(JsonSchema)]
#[schemars(rename = "ContentBlock", untagged)]
pub enum AnyBlock {
    /// A block the project reads.
    Known(ContentBlock),
    /// A block kept as read.
    Opaque(OpaqueBlock),
}

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

/// Whether two block lists are equal (`a == b`), with their texts compared eight bytes at a time:
/// in WebAssembly `==` on strings is a byte-by-byte `memcmp`, and the template compares every
/// message a provider kept with the original, megabytes per run.
pub fn same_blocks(a: &[ContentBlock], b: &[ContentBlock]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_block(x, y))
}

fn same_block(a: &ContentBlock, b: &ContentBlock) -> bool {
    use ContentBlock::*;
    match (a, b) {
        (Text { text, client }, Text { text: t, client: c }) => client == c && same_text(text, t),
        (
            ToolResult { tool_use_id, content, is_error },
            ToolResult { tool_use_id: i, content: parts, is_error: e },
        ) => {
            is_error == e
                && tool_use_id == i
                && content.len() == parts.len()
                && content.iter().zip(parts).all(|pair| match pair {
                    (ToolResultPart::Text { text }, ToolResultPart::Text { text: t }) => same_text(text, t),
                    (x, y) => x == y,
                })
        }
        (ToolUse { .. }, ToolUse { .. }) | (Image { .. }, Image { .. }) | (Opaque(_), Opaque(_)) => a == b,
        _ => false,
    }
}

/// `a == b`, eight bytes at a time.
fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (words_a, rest_a) = a.as_chunks::<8>();
    let (words_b, rest_b) = b.as_chunks::<8>();
    words_a.iter().zip(words_b).all(|(x, y)| u64::from_ne_bytes(*x) == u64::from_ne_bytes(*y))
        && rest_a == rest_b
}

/// The position of `message` in `messages` when it is one of them (the same element, found by its
/// address, not an equal copy): counters that know a list's counts by position answer the
/// references the API view and the checks hand out into that list.
pub fn position_in(messages: &[Message], message: &Message) -> Option<usize> {
    let size = std::mem::size_of::<Message>();
    let offset = (std::ptr::from_ref(message) as usize).checked_sub(messages.as_ptr() as usize)?;
    (offset % size == 0 && offset / size < messages.len()).then_some(offset / size)
}

/// The API view of a message list: the messages no condensation hid, in order.
pub fn api_view(messages: &[Message]) -> Vec<&Message> {
    messages.iter().filter(|m| m.is_visible()).collect()
}

/// The ordinal of a condense id of the form `c<N>`; other ids sort first.
fn condense_ordinal(id: &str) -> u64 {
    id.strip_prefix('c').and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// The id for the next condensation of this message list: `c<N>`, one past the highest in use.
/// Deterministic, so that condensed transcripts are reproducible.
pub fn next_condense_id(messages: &[Message]) -> String {
    let max = messages
        .iter()
        .flat_map(|m| [m.condense_id.as_deref(), m.condense_parent.as_deref()])
        .flatten()
        .map(condense_ordinal)
        .max()
        .unwrap_or(0);
    format!("c{}", max + 1)
}

/// The most recent condensation still applied, if any.
pub fn last_condense_id(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .flat_map(|m| [m.condense_id.as_deref(), m.condense_parent.as_deref()])
        .flatten()
        .max_by_key(|id| condense_ordinal(id))
        .map(str::to_owned)
}

/// Undoes the condensation `condense_id`: removes the messages it added and shows again the ones
/// it hid. Returns `None` when no message mentions that id.
pub fn undo_condensation(messages: &[Message], condense_id: &str) -> Option<Vec<Message>> {
    let touched = messages.iter().any(|m| {
        m.condense_id.as_deref() == Some(condense_id) || m.condense_parent.as_deref() == Some(condense_id)
    });
    if !touched {
        return None;
    }
    let out = messages
        .iter()
        .filter(|m| m.condense_id.as_deref() != Some(condense_id))
        .cloned()
        .map(|mut m| {
            if m.condense_parent.as_deref() == Some(condense_id) {
                m.condense_parent = None;
            }
            m
        })
        .collect();
    Some(out)
}

/// Undoes the most recent condensation. `None` when nothing was condensed.
pub fn undo_last(messages: &[Message]) -> Option<(String, Vec<Message>)> {
    let id = last_condense_id(messages)?;
    let out = undo_condensation(messages, &id)?;
    Some((id, out))
}

/// Squashes the condensations made one after another by a multi-pass run into one: every id
/// numbered after `first_id` (the first pass's) is renamed to `first_id`, and the intermediate
/// copies — messages a pass added that a later pass hid again — are dropped. Their originals stay
/// hidden under `first_id`, so one undo of `first_id` restores the conversation as it was before
/// the first pass.
pub fn squash_condensations(messages: &[Message], first_id: &str) -> Vec<Message> {
    let first = condense_ordinal(first_id);
    let later = |id: Option<&str>| id.is_some_and(|id| condense_ordinal(id) > first);
    let ours = |id: Option<&str>| id.is_some_and(|id| id == first_id || condense_ordinal(id) > first);
    messages
        .iter()
        .filter(|m| !(ours(m.condense_id.as_deref()) && later(m.condense_parent.as_deref())))
        .cloned()
        .map(|mut m| {
            if later(m.condense_id.as_deref()) {
                m.condense_id = Some(first_id.to_owned());
            }
            if later(m.condense_parent.as_deref()) {
                m.condense_parent = Some(first_id.to_owned());
            }
            m
        })
        .collect()
}

/// Checks that a message list is valid for both the OpenAI and the Anthropic API: every
/// `tool_result` answers a `tool_use` of the assistant message right before it, and every
/// `tool_use` is answered in the next message. Returns the first problem found.
pub fn check_tool_pairs(messages: &[&Message]) -> Result<(), String> {
    for (i, m) in messages.iter().enumerate() {
        let calls: Vec<&str> = m
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        if !calls.is_empty() && m.role != Role::Assistant {
            return Err(format!("message {} ({}): tool_use outside an assistant message", i, m.id));
        }
        let results: Vec<&str> = m
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        if !results.is_empty() {
            if m.role != Role::User {
                return Err(format!("message {} ({}): tool_result outside a user message", i, m.id));
            }
            let prev_calls: Vec<&str> = i
                .checked_sub(1)
                .map(|p| {
                    messages[p]
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            for r in &results {
                if !prev_calls.contains(r) {
                    return Err(format!(
                        "message {} ({}): tool_result {r} has no tool_use in the message before it",
                        i, m.id
                    ));
                }
            }
        }
        if !calls.is_empty() {
            let next = messages.get(i + 1);
            for c in &calls {
                let answered = next.is_some_and(|n| {
                    n.content.iter().any(
                        |b| matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == c),
                    )
                });
                if !answered {
                    return Err(format!(
                        "message {} ({}): tool_use {c} is not answered in the next message",
                        i, m.id
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    mod one_pass_blocks {
        use proptest::prelude::*;
        use serde_json::{Value, json};

        use super::super::ContentBlock;

        fn value() -> impl Strategy<Value = Value> {
            let part = prop_oneof![
                "[a-z ]{0,8}".prop_map(|t| json!({"type": "text", "text": t})),
                Just(json!({"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}})),
                Just(json!({"type": "image", "source": {"type": "url", "url": "https://e/x.png"}})),
                Just(json!({"type": "text", "text": 3})),
                Just(json!({"text": "no type"})),
                Just(json!("bare")),
            ];
            prop_oneof![
                "[a-z é]{0,8}".prop_map(Value::from),
                prop_oneof![
                    Just("text"),
                    Just("tool_use"),
                    Just("tool_result"),
                    Just("image"),
                    Just("thinking")
                ]
                .prop_map(Value::from),
                prop_oneof![Just("environment_details"), Just("task_progress"), Just("nonsense")]
                    .prop_map(Value::from),
                any::<i32>().prop_map(Value::from),
                any::<bool>().prop_map(Value::from),
                Just(Value::Null),
                Just(json!({"a": [1, {"b": null}]})),
                Just(json!({"type": "base64", "media_type": "image/png", "data": "AA=="})),
                prop::collection::vec(part, 0..3).prop_map(Value::from),
            ]
        }

        fn block() -> impl Strategy<Value = serde_json::Map<String, Value>> {
            let key = prop_oneof![
                Just("type"),
                Just("text"),
                Just("client"),
                Just("cache_control"),
                Just("id"),
                Just("name"),
                Just("input"),
                Just("tool_use_id"),
                Just("content"),
                Just("is_error"),
                Just("source"),
                Just("citations"),
                Just("signature"),
            ];
            let kind = prop_oneof![
                Just(json!("text")),
                Just(json!("tool_use")),
                Just(json!("tool_result")),
                Just(json!("image")),
                Just(json!("thinking")),
                Just(json!(3)),
                Just(Value::Null),
            ];
            // A well-formed block of each shape, or none, then a few entries set or removed.
            let base = prop_oneof![
                Just(json!({"type": "text", "text": "hi"})),
                Just(json!({"type": "text", "text": "hi", "client": "environment_details"})),
                Just(json!({"id": "t1", "type": "tool_use", "name": "read", "input": {"path": "a"}})),
                Just(json!({"type": "tool_result", "tool_use_id": "t1", "content": "out"})),
                Just(
                    json!({"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "o"}], "is_error": true})
                ),
                Just(json!({"type": "image", "source": {"type": "url", "url": "https://e/x.png"}})),
                Just(json!({})),
            ];
            let edit = (key, prop::option::weighted(0.8, prop_oneof![value(), kind]));
            (base, prop::collection::vec(edit, 0..4)).prop_map(|(base, edits)| {
                let Value::Object(mut map) = base else { unreachable!("the bases are objects") };
                for (k, v) in edits {
                    match v {
                        Some(v) => map.insert(k.to_owned(), v),
                        None => map.shift_remove(k),
                    };
                }
                map
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

            /// The one-pass read of a block, from a value and from text, gives exactly the block,
            /// or the error, of the general way.
            #[test]
            fn the_one_pass_read_is_the_general_read(map in block()) {
                let text = Value::Object(map.clone()).to_string();
                let general = ContentBlock::from_object::<serde_json::Error>(map.clone()).map_err(|e| e.to_string());
                let from_value = serde_json::from_value::<ContentBlock>(Value::Object(map)).map_err(|e| e.to_string());
                let from_text = serde_json::from_str::<ContentBlock>(&text).map_err(|e| e.to_string());
                prop_assert_eq!(&from_value, &general);
                match (&from_text, &general) {
                    (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                    // The text's error adds where it is.
                    (Err(a), Err(b)) => prop_assert!(a.starts_with(b.as_str()), "{a} / {b}"),
                    _ => prop_assert!(false, "{from_text:?} / {general:?}"),
                }
            }
        }

        #[test]
        fn the_usual_shapes_are_read_and_a_repeated_key_keeps_its_last_value() {
            let read = |t: &str| serde_json::from_str::<ContentBlock>(t).unwrap();
            assert_eq!(read(r#"{"type":"text","text":"a","text":"b"}"#), ContentBlock::text("b"));
            assert!(matches!(
                read(
                    r#"{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}],"is_error":true}"#
                ),
                ContentBlock::ToolResult { is_error: true, .. }
            ));
            assert!(read(r#"{"type":"text","text":"a","citations":[]}"#).is_opaque());
            let e = serde_json::from_str::<ContentBlock>("[1]").unwrap_err().to_string();
            assert!(e.starts_with("expected a content block (an object with a `type`)"), "{e}");
        }
    }

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
