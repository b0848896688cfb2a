//! Cline and Roo Code task histories (`tasks/<id>/api_conversation_history.json`): a list of
//! Anthropic messages, each with the client's own fields beside `role` and `content` — `ts`
//! (milliseconds), and sometimes `modelInfo`, `metrics`, `isSummary`, … The messages are read as
//! Anthropic ones (any block kind the project does not read kept as read), with their `ts`; the
//! client's other fields describe the client, not the request, and are not kept.
//!
//! The wrappers these clients add to a user turn, when a text block is one whole
//! (`<environment_details>…</environment_details>`, a `[TASK RESUMPTION]` notice without new
//! instructions, Cline's focus-chain reminders `# TODO LIST UPDATE REQUIRED …` / `# task_progress
//! …`), are marked as client context ([`ClientContext`]): the ledger does not quote
//! them as the user's words; the API views send them as the text they are. The tool results
//! they send as user text (`[read_file for 'x'] Result:`) stay text, as the model saw them: the
//! providers (`providers/encoded.rs`) and the ledger (`ledger::user_words`) recognise them.
//!
//! The same task folder holds `ui_messages.json`, what the chat panel shows: a list of
//! `{"ts", "type": "say" | "ask", "say" | "ask": kind, "text", …}` records, in which the requests
//! sent to the model are summaries (`api_req_started`) and not the conversation. It is told apart
//! by its shape (the parser reads text, not a file name) and refused with a message that points at
//! `api_conversation_history.json`.

use serde_json::Value;

use super::anthropic::blocks;
use super::read::role_at;
use crate::error::ParseError;
use crate::model::{ClientContext, Conversation, Message, Role};

/// Whether a bare list of messages is a Cline / Roo history: user and assistant messages, some
/// with a numeric `ts`, which neither API's messages have.
pub(super) fn looks_like(messages: &[Value]) -> bool {
    let role = |m: &Value| matches!(m.get("role").and_then(Value::as_str), Some("user" | "assistant"));
    !messages.is_empty()
        && messages.iter().all(|m| role(m) && m.get("content").is_some())
        && messages.iter().any(|m| m.get("ts").is_some_and(Value::is_number))
}

/// Why a Cline / Roo `ui_messages.json` is not read.
pub(super) const UI_MESSAGES: &str = "this is Cline's ui_messages.json (what the chat panel shows); open api_conversation_history.json in the same task folder, which holds the conversation sent to the model";

/// Whether a bare list is a Cline / Roo `ui_messages.json`: records without a `role`, each a
/// `say` or an `ask` with a numeric `ts`.
pub(super) fn is_ui_messages(list: &[Value]) -> bool {
    let record = |m: &Value| {
        m.get("role").is_none()
            && m.get("ts").is_some_and(Value::is_number)
            && match m.get("type").and_then(Value::as_str) {
                Some(kind @ ("say" | "ask")) => m.get(kind).is_some_and(Value::is_string),
                _ => false,
            }
    };
    !list.is_empty() && list.iter().all(record)
}

/// Reads a task history.
pub(super) fn from_cline(messages: &[Value]) -> Result<Conversation, ParseError> {
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let path = format!("[{i}]");
        let role = match role_at(m, &path, &["user", "assistant"])?.as_str() {
            "assistant" => Role::Assistant,
            _ => Role::User,
        };
        let mut content = blocks(m, &path)?;
        if role == Role::User {
            ClientContext::mark(&mut content);
        }
        let mut message = Message::new(format!("m{}", i + 1), role, content);
        message.ts = m.get("ts").and_then(Value::as_i64).unwrap_or(0);
        out.push(message);
    }
    Ok(Conversation::new(out))
}
