//! This project's own format ([`FORMAT_TAG`](crate::model::FORMAT_TAG)): the conversation as the
//! model serializes it, read with the path of any error; and the `CondensationResult` documents
//! `condense run` writes, whose messages and system prompt are read back as a conversation.

use serde_json::{Map, Value};

use super::typed;
use crate::error::ParseError;
use crate::model::{Conversation, Message};

/// Reads a document in the project's format.
pub(super) fn from_native(value: Value) -> Result<Conversation, ParseError> {
    typed(value, "")
}

/// Reads the conversation of a `CondensationResult`: its messages and its system prompt.
pub(super) fn from_condensation_result(value: Value) -> Result<Conversation, ParseError> {
    let mut obj = into_object(value)?;
    let messages = obj.remove("messages").unwrap_or(Value::Null);
    let messages: Vec<Message> = typed(messages, "messages")?;
    let system = obj.get("system").and_then(Value::as_str).map(str::to_owned);
    Ok(Conversation { system, ..Conversation::new(messages) })
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

    use crate::formats::parse_conversation;
    use crate::model::FORMAT_TAG;

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
