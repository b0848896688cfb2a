//! The wasm engine's call options and results: what `CondenseEngine`'s methods take besides core
//! values, and what they resolve with. Call options are camelCase, like any JS API; results keep the
//! core's snake_case. The bindings (`condense-wasm`) parse and produce exactly these.

use condense_core::agent::{ChatTask, CondensationRecord, ContextStatus};
use condense_core::limits::AutoCondense;
use condense_core::llm::{LlmProfile, ModelUse};
use condense_core::tools::{Located, ToolEntry};
use condense_core::{CondensationOptions, CondensationResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The model whose tokenizer counts when a call names none.
pub const DEFAULT_MODEL: &str = "gpt-4o";

/// An LLM to call: a profile, and the key the host read for it from its secret storage.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LlmTarget {
    /// The profile.
    pub profile: LlmProfile,
    /// The key, for this call only; never stored or logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Retries after the first attempt (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
}

/// The options of `condense` and `renderManualRequest`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CondenseOptions {
    /// A provider id; the default provider when absent.
    pub provider: Option<String>,
    /// Tokens to get down to, for providers that work to a target.
    pub target_tokens: Option<usize>,
    /// Messages at the end that must stay as they are.
    pub keep_last: Option<usize>,
    /// Whether the condensation was triggered automatically.
    pub is_automatic: bool,
    /// The provider's configuration for this call; the registry's when absent.
    pub config: Option<serde_json::Value>,
    /// The model whose tokenizer counts (default: the LLM's model, else gpt-4o).
    pub model: Option<String>,
    /// The LLM that writes summaries, for the providers that need one.
    pub llm: Option<LlmTarget>,
}

impl CondenseOptions {
    /// The core's options of the run.
    pub fn options(&self) -> CondensationOptions {
        CondensationOptions {
            target_tokens: self.target_tokens,
            ceiling_tokens: None,
            keep_last: self.keep_last,
            is_automatic: self.is_automatic,
            config: self.config.clone().unwrap_or(serde_json::Value::Null),
            floor_checked: false,
        }
    }

    /// The tokenizer follows the model named, else the LLM's model.
    pub fn model(&self) -> &str {
        self.model.as_deref().or(self.llm.as_ref().map(|l| l.profile.model.as_str())).unwrap_or(DEFAULT_MODEL)
    }
}

/// The options of `chat` and `chatContext`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatOptions {
    /// The chat model.
    pub llm: LlmTarget,
    /// The model that writes summaries (the condensing model), when it is not the chat model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condensing_llm: Option<LlmTarget>,
    /// The condensation provider; the default provider when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider's configuration for a preview (`preview`), in place of the stored one:
    /// `{"answer": …}` previews the manual provider with a pasted summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
    /// The automatic-condensation settings.
    #[serde(default)]
    pub auto: AutoCondense,
    /// The input's wall-clock time, in milliseconds since the Unix epoch.
    pub now_ms: f64,
}

/// What `undo` returns: the held task with the condensation undone, a chat or a conversation
/// file as its handle named.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Undone {
    /// A chat: what changed (its next revision, the hidden messages back).
    Chat {
        /// The chat with the condensation undone (boxed: a chat's change is the larger).
        change: Box<ChatChange>,
        /// The condensation undone.
        condense_id: String,
    },
    /// A conversation file: its next revision, the hidden messages back (`heldText` gives its
    /// text).
    File {
        /// The held conversation's new revision.
        handle: TaskHandle,
        /// The condensation undone.
        condense_id: String,
    },
}

/// What `applyPreview` returns: the held task with the preview's condensation applied, a chat or
/// a conversation file as its handle named.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Applied {
    /// A chat: what changed, and the condensation's record as the chat's row shows it.
    Chat {
        /// The chat with the condensation applied (boxed: a chat's change is the larger).
        change: Box<ChatChange>,
        /// The condensation's record.
        record: Box<CondensationRecord>,
    },
    /// A conversation file: its next revision, condensed (`heldText` gives its text).
    File {
        /// The held conversation's new revision.
        handle: TaskHandle,
    },
}

/// What `pinMessage` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChatPin {
    /// The chat with the pin set or cleared.
    pub change: ChatChange,
    /// The messages whose flag changed (the one asked for and its tool-pair partners).
    pub changed: Vec<String>,
}

/// A condensation result that is also a conversation: the input's system prompt and tool
/// definitions are put back.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CondensationDocument {
    /// The result.
    #[serde(flatten)]
    pub result: CondensationResult,
    /// The conversation's system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation's tool definitions, as read (a request file's `tools`): no condensation
    /// changes them, and a file written from the result keeps them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<serde_json::Value>,
}

/// An HTTP request the engine asks the host's `fetch` to send.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FetchRequest {
    /// `POST` for every LLM call.
    pub method: String,
    /// Absolute URL.
    pub url: String,
    /// Header names and values. May hold an API key: never log them.
    pub headers: std::collections::BTreeMap<String, String>,
    /// The JSON body.
    pub body: String,
}

/// A CLI tool as the settings panel lists it: its entry, and whether its program is there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolStatus {
    /// The id a `cli` profile names (`claude-code`).
    pub id: String,
    /// The name people read.
    pub name: String,
    /// The models it takes.
    pub models: Vec<String>,
    /// What it may be used for: the chat model (`chat`), the condensing model (`summarize`).
    pub capabilities: Vec<ModelUse>,
    /// The context window of its models, in tokens, when the entry states it.
    pub context_window: Option<u64>,
    /// Where the entry came from: `shipped`, or a file's path.
    pub origin: String,
    /// The program's path, when it was found.
    pub found: Option<String>,
    /// Every place looked at before it was found (all of them when it was not).
    pub searched: Vec<String>,
}

impl ToolStatus {
    /// The status of an entry, its program located.
    pub fn new(entry: &ToolEntry, located: Located) -> Self {
        let config = &entry.config;
        ToolStatus {
            id: entry.id.clone(),
            name: entry.name().to_owned(),
            models: config.models.clone(),
            capabilities: entry.capabilities().to_vec(),
            context_window: config.context_window.map(|w| w as u64),
            origin: entry.origin.clone(),
            found: located.found,
            searched: located.searched,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_sends_new_messages_whole_and_marks_alone() {
        use condense_core::{ContentBlock, Message, Role};
        let msg = |id: &str| Message::new(id, Role::User, vec![ContentBlock::text(format!("text of {id}"))]);
        let before = vec![msg("a"), msg("b"), msg("c"), msg("d")];
        let mut after = before.clone();
        after[1].condense_parent = Some("c1".into());
        after[2].pinned = true;
        after.insert(2, Message { condense_id: Some("c1".into()), is_summary: true, ..msg("c1.summary") });
        after.remove(4);
        let handle = TaskHandle { id: "t".into(), revision: 2 };
        let change = ChatChange::between(&before, &after, handle, ChatTask::new("t", 0));
        assert_eq!(change.keep, 1);
        assert_eq!(change.order, ["b", "c1.summary", "c"]);
        assert_eq!(change.messages, [after[2].clone()], "only the new message is sent whole");
        let marks = [
            MessageMarks { id: "b".into(), condense_parent: Some("c1".into()), pinned: false },
            MessageMarks { id: "c".into(), condense_parent: None, pinned: true },
        ];
        assert_eq!(change.marks, marks);
    }

    #[test]
    fn condense_options_refuse_unknown_fields_and_pick_the_model() {
        assert!(serde_json::from_str::<CondenseOptions>(r#"{"bogus": 1}"#).is_err());
        let o: CondenseOptions = serde_json::from_str(r#"{"provider": "lossless"}"#).unwrap();
        assert_eq!(o.model(), DEFAULT_MODEL);
    }
}

/// What the host gives `hold`: the text of a chat it saved, or a conversation file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HeldKind {
    /// A saved chat: a `ChatTask` as JSON.
    Chat,
    /// A conversation in any supported format.
    Conversation,
}

/// A task the engine holds, as the host names it: its id and the revision the host last saw.
/// Calls that take a handle fail with `unknown_task` when the engine does not hold that revision
/// (never held, released, evicted, or changed since); the host then sends the full task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskHandle {
    /// The task's id (a chat's id, or the key the host chose for a conversation file).
    pub id: String,
    /// Changes with every change the engine makes to the task.
    pub revision: u32,
}

/// A condensation of a conversation the engine holds (`condense`): the engine keeps the
/// condensed conversation, so its messages do not cross the boundary; the host asks for its text
/// when it writes a file (`heldText`). The fields are a `CondensationResult`'s but the messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeldCondensation {
    /// The held conversation after the run: a new revision holding the condensed messages, or
    /// the call's own handle when the run failed (the engine holds the conversation unchanged).
    pub handle: TaskHandle,
    /// The summary, for providers that write one.
    pub summary: Option<String>,
    /// US dollars spent.
    pub cost: f64,
    /// Tokens of the new API view, system prompt included; absent on failure.
    pub new_context_tokens: Option<usize>,
    /// Why the run failed.
    pub error: Option<condense_core::ErrorInfo>,
    /// Timing, gain and provider-specific figures.
    pub metrics: Option<condense_core::provider::Metrics>,
}

/// A held conversation counted in slices (`countHeld`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeldCount {
    /// Tokens of its API view, system prompt included: what `heldTokens` answers.
    pub tokens: usize,
    /// Its messages, hidden ones included.
    pub messages: usize,
}

/// What an operation on a held chat changed, so that only that crosses the boundary. The host's
/// copy (the task it saves) keeps its first `keep` messages; after them come the messages `order`
/// names: each one in `messages` (new, or its content changed) is taken whole, each one in `marks`
/// is the host's own with those marks, every other is the host's own as it is. Every other field
/// of the task comes from `task`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChatChange {
    /// The held chat's new handle.
    pub handle: TaskHandle,
    /// How many leading messages of the host's copy are unchanged and in place.
    pub keep: usize,
    /// The ids of the messages after those, in order.
    pub order: Vec<String>,
    /// The messages among them that are new or whose content changed.
    pub messages: Vec<condense_core::Message>,
    /// The messages among them whose content is the host's but whose marks changed (a
    /// condensation hid them or an undo brought them back, a pin).
    pub marks: Vec<MessageMarks>,
    /// The task with an empty message list: its title, times, records, guard and usage.
    pub task: ChatTask,
}

/// The marks of a message that change without its content: hidden by a condensation, pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageMarks {
    /// The message.
    pub id: String,
    /// The condensation that hides it, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condense_parent: Option<String>,
    /// Whether the user pinned it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
}

impl ChatChange {
    /// What changed from `before` to `after`, for the host whose copy is `before`.
    pub fn between(
        before: &[condense_core::Message],
        after: &[condense_core::Message],
        handle: TaskHandle,
        task: ChatTask,
    ) -> ChatChange {
        let keep = before.iter().zip(after).take_while(|(a, b)| a == b).count();
        let old: std::collections::HashMap<&str, &condense_core::Message> =
            before[keep..].iter().map(|m| (m.id.as_str(), m)).collect();
        let mut change =
            ChatChange { handle, keep, order: Vec::new(), messages: Vec::new(), marks: Vec::new(), task };
        for m in &after[keep..] {
            change.order.push(m.id.clone());
            match old.get(m.id.as_str()) {
                Some(o) if *o == m => {}
                Some(o) if same_but_marks(o, m) => change.marks.push(MessageMarks {
                    id: m.id.clone(),
                    condense_parent: m.condense_parent.clone(),
                    pinned: m.pinned,
                }),
                _ => change.messages.push(m.clone()),
            }
        }
        change
    }
}

/// Whether two messages differ at most in their marks.
fn same_but_marks(a: &condense_core::Message, b: &condense_core::Message) -> bool {
    a.ts == b.ts
        && a.role == b.role
        && a.is_summary == b.is_summary
        && a.condense_id == b.condense_id
        && a.interrupted == b.interrupted
        && a.content == b.content
}

/// What a chat input (`chat`) ends with: what changed, and how full the chat's context is.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChatStep {
    /// What the turn changed.
    pub change: ChatChange,
    /// The chat's context status for the chat profile.
    pub context: ContextStatus,
}
