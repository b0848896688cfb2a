//! The tokens of what a model reads: a conversation's count with its opaque blobs left out.
//!
//! A block kept as read (an opaque block) costs the tokens of its JSON in [`super::TiktokenCounter`],
//! which is what a request carries. Much of that JSON is a blob no later turn can refer to by name:
//! Codex's `encrypted_content` of a reasoning item, the `signature` of a Claude thinking block, a
//! base64 payload. [`ReadableCounter`] counts an opaque block by its readable text only (its
//! strings that are not blobs: a thought, a reasoning summary, an id), every other block as the
//! counter it wraps does. It is the measure of "the text the model reads" that `condense eval
//! --references` sets its targets in, so that a rollout whose reasoning is encrypted is not taken
//! for a past three times the size of its text.

use crate::model::{ContentBlock, Message, OpaqueBlock};

use super::{Encoding, TokenCounter};

/// A string this long or longer, with no white space and only base64 or hex characters, is a blob.
const BLOB_CHARS: usize = 64;

/// Whether a string is an opaque blob (encrypted content, a signature, base64 data) rather than
/// text: long, no white space, and made of base64 (standard or URL-safe) characters alone.
pub fn is_blob(s: &str) -> bool {
    s.len() >= BLOB_CHARS
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'))
}

/// The readable text of an opaque block: its strings that are not blobs, the `type` aside, one a
/// line, in the block's order.
pub fn readable_text(block: &OpaqueBlock) -> String {
    let mut out = Vec::new();
    for (key, value) in block.fields() {
        if key != "type" {
            readable_strings(value, &mut out);
        }
    }
    out.join("\n")
}

fn readable_strings<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::String(s) if !s.is_empty() && !is_blob(s) => out.push(s),
        serde_json::Value::Array(items) => items.iter().for_each(|v| readable_strings(v, out)),
        serde_json::Value::Object(map) => {
            map.iter().filter(|(k, _)| *k != "type").for_each(|(_, v)| readable_strings(v, out))
        }
        _ => {}
    }
}

/// A counter that counts opaque blocks by their readable text ([`readable_text`]) and everything
/// else as `inner` does (its caches included).
pub struct ReadableCounter<'a> {
    inner: &'a dyn TokenCounter,
}

impl<'a> ReadableCounter<'a> {
    /// Wraps a counter.
    pub fn new(inner: &'a dyn TokenCounter) -> Self {
        ReadableCounter { inner }
    }
}

impl TokenCounter for ReadableCounter<'_> {
    fn encoding(&self) -> Encoding {
        self.inner.encoding()
    }

    fn count_text(&self, text: &str) -> usize {
        self.inner.count_text(text)
    }

    fn count_text_cached(&self, text: &str) -> usize {
        self.inner.count_text_cached(text)
    }

    fn count_message(&self, message: &Message) -> usize {
        if !message.content.iter().any(|b| matches!(b, ContentBlock::Opaque(_))) {
            return self.inner.count_message(message);
        }
        // The message with each opaque block as a text of its readable part: counted, and cached,
        // by the counter it wraps.
        let readable = Message {
            content: message
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Opaque(o) => ContentBlock::text(readable_text(o)),
                    other => other.clone(),
                })
                .collect(),
            ..message.clone()
        };
        self.inner.count_message(&readable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;
    use crate::tokens::TiktokenCounter;

    fn opaque(json: serde_json::Value) -> ContentBlock {
        let serde_json::Value::Object(map) = json else { unreachable!() };
        ContentBlock::Opaque(OpaqueBlock::new(map).expect("an opaque kind"))
    }

    #[test]
    fn blobs_are_left_out_and_text_is_counted() {
        let blob = "gAAAAAB".to_owned() + &"x9Yz_-".repeat(400);
        let reasoning = opaque(serde_json::json!({
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "**Planning the port** of src/cli.rs"}],
            "encrypted_content": blob,
        }));
        let text = readable_text(match &reasoning {
            ContentBlock::Opaque(o) => o,
            _ => unreachable!(),
        });
        assert_eq!(text, "rs_1\n**Planning the port** of src/cli.rs");
        let m = Message::new("a", Role::Assistant, vec![reasoning, ContentBlock::text("Done.")]);
        let full = TiktokenCounter::for_model("gpt-4o");
        let readable = ReadableCounter::new(&full);
        let (all, read) = (full.count_message(&m), readable.count_message(&m));
        assert!(read < all / 10, "readable {read} of {all}");
        let plain = Message::new("u", Role::User, vec![ContentBlock::text("Port the CLI.")]);
        assert_eq!(readable.count_message(&plain), full.count_message(&plain));
        // A file's count reports both.
        let report = crate::tokens::TokenReport::of(
            &crate::model::Conversation::new(vec![plain.clone(), m.clone()]),
            "gpt-4o",
        );
        assert_eq!(report.total_tokens - report.readable_tokens, all - read);
    }

    #[test]
    fn a_thinking_block_counts_its_thought_not_its_signature() {
        let sig = "EqQBCkYIBRgCKkB".to_owned() + &"Ab12".repeat(100);
        let thinking = opaque(serde_json::json!({"type": "thinking", "thinking": "", "signature": sig}));
        let ContentBlock::Opaque(o) = &thinking else { unreachable!() };
        assert_eq!(readable_text(o), "");
        assert!(is_blob(&sig));
        assert!(!is_blob("a short id"));
        assert!(!is_blob(&"word ".repeat(40)));
    }
}
