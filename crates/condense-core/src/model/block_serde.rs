//! How content blocks are read and written: a block of a known kind by its `type`, in one pass
//! over its entries where it has the usual shape, and any other block kept as read, byte for
//! byte, as an [`OpaqueBlock`]. Hand-written serde, its own room so the model's types read
//! without it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ClientContext, ContentBlock, KNOWN_BLOCK_KINDS, ToolResultPart};

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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::ContentBlock;

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
            prop_oneof![Just("text"), Just("tool_use"), Just("tool_result"), Just("image"), Just("thinking")]
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
