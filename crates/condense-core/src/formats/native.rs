//! This project's own format ([`FORMAT_TAG`](crate::model::FORMAT_TAG)): the conversation as the
//! model serializes it, read with the path of any error; and the `CondensationResult` documents
//! `condense run` writes, whose messages and system prompt are read back as a conversation. A text
//! that names the format is read in one pass ([`from_tagged_text`]).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::read::typed;
use crate::error::ParseError;
use crate::model::{Conversation, FORMAT_TAG, Message};

/// Reads a document in the project's format.
pub(super) fn from_native(value: Value) -> Result<Conversation, ParseError> {
    typed(value, "")
}

/// [`Conversation`]'s fields with the `format` tag required: what [`from_tagged_text`] reads.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Tagged {
    format: String,
    #[serde(default)]
    system: Option<String>,
    #[serde(default)]
    tools: Vec<Value>,
    messages: Vec<Message>,
}

/// A text in the project's format that says so (its `format` is the tag, or empty as old chats
/// wrote it), read straight into the types in one pass, without the `Value` tree the other
/// formats are detected on: the engine's own conversations take this path. `None` for any other
/// text, even a malformed one, which the general path then reads and reports; a field this does
/// not know sends the text there too, so it only ever gives what `from_native` would.
pub(super) fn from_tagged_text(text: &str) -> Option<Conversation> {
    let Tagged { format, system, tools, messages } = serde_json::from_str(text).ok()?;
    matches!(format.as_str(), FORMAT_TAG | "").then_some(Conversation { format, system, tools, messages })
}

/// Reads the conversation of a `CondensationResult`: its messages and its system prompt.
pub(super) fn from_condensation_result(value: Value) -> Result<Conversation, ParseError> {
    let mut obj = into_object(value)?;
    let messages = obj.remove("messages").unwrap_or(Value::Null);
    let messages: Vec<Message> = typed(messages, "messages")?;
    let system = obj.get("system").and_then(Value::as_str).map(str::to_owned);
    // The tool definitions the result carries back (`CondensationDocument`), as read.
    let tools = match obj.remove("tools") {
        Some(Value::Array(tools)) => tools,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(ParseError::at("tools", "expected a list of tool definitions")),
    };
    Ok(Conversation { system, tools, ..Conversation::new(messages) })
}

fn into_object(value: Value) -> Result<Map<String, Value>, ParseError> {
    match value {
        Value::Object(o) => Ok(o),
        _ => Err(ParseError::at("", "expected a JSON object")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{from_native, from_tagged_text};
    use crate::formats::parse_conversation;
    use crate::model::FORMAT_TAG;

    /// The one-pass read gives exactly what the general read gives, or leaves the text to it.
    #[test]
    fn the_tagged_text_path_agrees_with_the_general_one() {
        let tagged = [
            include_str!("../../../../tests/fixtures/small-session.json").to_owned(),
            include_str!("../../../../tests/fixtures/unknown-block.json").to_owned(),
            json!({"format": "", "messages": [{"id": "a", "role": "user", "content": [{"type": "text", "text": "hi"}]}]})
                .to_string(),
            json!({"format": FORMAT_TAG, "system": "Be brief.", "tools": [{"name": "grep", "x": [1, 2.5, null]}],
                "messages": [
                    {"id": "a", "ts": 5, "role": "user", "pinned": true, "content": [
                        {"type": "text", "text": "<environment_details>x</environment_details>", "client": "environment_details"}]},
                    {"id": "b", "role": "assistant", "content": [
                        {"type": "thinking", "thinking": "…", "signature": "s"},
                        {"type": "tool_use", "id": "t1", "name": "grep", "input": {"z": 1, "a": {"b": [true, "é"]}}}]},
                    {"id": "c", "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1 match", "is_error": false}]},
                ]})
            .to_string(),
        ];
        for text in &tagged {
            let general = from_native(serde_json::from_str(text).unwrap()).unwrap();
            assert_eq!(from_tagged_text(text).as_ref(), Some(&general), "{text}");
            assert_eq!(parse_conversation(text).unwrap().conversation, general);
        }
        // Not for this path: no tag, another tag, another format, a duplicate key (the general
        // read keeps the last), a malformed block.
        let other = [
            json!({"messages": [{"id": "a", "role": "user", "content": [{"type": "text", "text": "hi"}]}]})
                .to_string(),
            json!({"format": "other@1", "messages": []}).to_string(),
            include_str!("../../../../tests/fixtures/openai-chat.json").to_owned(),
            format!(r#"{{"format": "{FORMAT_TAG}", "system": "a", "system": "b", "messages": []}}"#),
            include_str!("../../../../tests/fixtures/malformed-block.json").to_owned(),
        ];
        for text in &other {
            assert_eq!(from_tagged_text(text), None, "{text}");
        }
        assert_eq!(parse_conversation(&other[3]).unwrap().conversation.system.as_deref(), Some("b"));
    }

    /// A condensation result read back as a conversation keeps the tool definitions it carries;
    /// anything but a list there is an error, located.
    #[test]
    fn a_condensation_result_keeps_its_tool_definitions() {
        let tools = json!([{"name": "grep", "input_schema": {"type": "object"}}]);
        let result = |tools: Value| {
            json!({"messages": [{"id": "a", "role": "user", "content": [{"type": "text", "text": "hi"}]}],
                   "new_context_tokens": 9, "metrics": {}, "system": "s", "tools": tools})
        };
        let c = parse_conversation(&result(tools.clone()).to_string()).unwrap().conversation;
        assert_eq!(Value::from(c.tools), tools);
        assert_eq!(c.system.as_deref(), Some("s"));
        let e = parse_conversation(&result(json!("grep")).to_string()).unwrap_err().to_string();
        assert_eq!(e, "tools: expected a list of tool definitions");
    }

    #[test]
    fn unknown_blocks_are_kept_and_malformed_ones_located() {
        let doc = json!({"format": FORMAT_TAG, "messages": [
            {"id": "a", "role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"id": "b", "role": "assistant", "content": [{"type": "foo", "z": 1, "a": [2]}]},
        ]});
        let c = parse_conversation(&doc.to_string()).unwrap().conversation;
        assert_eq!(c.messages[1].content[0].kind(), "foo");
        assert_eq!(
            serde_json::to_value(&c).unwrap()["messages"][1]["content"][0],
            doc["messages"][1]["content"][0]
        );

        let located = |block: Value| {
            let doc = json!({"format": FORMAT_TAG, "messages": [
                {"id": "a", "role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"id": "b", "role": "assistant", "content": [{"type": "text", "text": "ok"}, block]},
            ]});
            parse_conversation(&doc.to_string()).unwrap_err().to_string()
        };
        assert_eq!(
            located(json!({"type": "tool_use", "name": "x", "input": {}})),
            "messages[1].content[1]: missing field `id`"
        );
        assert_eq!(located(json!({"text": "no type"})), "messages[1].content[1]: missing field `type`");
        assert_eq!(
            located(json!({"type": "image", "source": {"type": "base64", "media_type": 3, "data": ""}})),
            "messages[1].content[1]: invalid type: integer `3`, expected a string"
        );
    }

    /// A new conversation carries the tag and reads back; one a chat saved before it did
    /// (`"format": ""`) is read as this project's too.
    #[test]
    fn an_empty_or_untagged_chat_conversation_reads_back() {
        let new = crate::model::Conversation::default();
        assert_eq!(new.format, FORMAT_TAG);
        assert!(parse_conversation(&serde_json::to_string(&new).unwrap()).is_ok());
        let old = json!({"format": "", "messages": [{"id": "a", "role": "user", "content": [{"type": "text", "text": "hi"}]}]});
        assert_eq!(parse_conversation(&old.to_string()).unwrap().conversation.messages.len(), 1);
        let other = json!({"format": "something/else@2", "messages": []});
        assert!(parse_conversation(&other.to_string()).unwrap_err().to_string().contains("unknown format"));
    }
}
