//! Reading the tokens an answer reports while its bytes pass through to the client: the SSE
//! events that carry usage (Anthropic `message_start` and `message_delta`, an OpenAI Chat chunk
//! with `usage`, a Responses `response.completed`, Gemini's `usageMetadata` on each chunk), or the
//! `usage` (`usageMetadata`) of a whole JSON answer.
//!
//! The reader sees each chunk after it was handed on and never holds one back. It keeps only
//! what the SSE parser needs for the event being read (bounded by the parser), and of a JSON
//! answer a copy up to [`MAX_JSON_COPY`]; past that it stops looking and the answer's usage goes
//! uncounted.

use serde_json::Value;

use super::stats::GatewayUsage as Usage;
use crate::formats::SseParser;

/// The largest JSON answer whose usage is read. Answers are rarely above a few hundred KB.
pub const MAX_JSON_COPY: usize = 4 << 20;

/// What kind of body is passing.
#[derive(Debug)]
enum Body {
    Sse(SseParser),
    Json(Vec<u8>),
    /// Neither, or past a bound: nothing is read.
    Opaque,
}

/// Usage read from one answer as it passes.
#[derive(Debug)]
pub struct UsageReader {
    body: Body,
    usage: Usage,
    /// Whether any usage was seen.
    seen: bool,
}

impl UsageReader {
    /// A reader for an answer of this `content-type`.
    pub fn new(content_type: &str) -> UsageReader {
        let content_type = content_type.to_ascii_lowercase();
        let body = if content_type.starts_with("text/event-stream") {
            Body::Sse(SseParser::new())
        } else if content_type.starts_with("application/json") {
            Body::Json(Vec::new())
        } else {
            Body::Opaque
        };
        UsageReader { body, usage: Usage::default(), seen: false }
    }

    /// Reads a chunk that has passed.
    pub fn feed(&mut self, chunk: &[u8]) {
        match &mut self.body {
            Body::Sse(parser) => {
                let events = parser.feed(chunk);
                if parser.overflow().is_some() {
                    self.body = Body::Opaque;
                }
                for event in events {
                    // Most events are text deltas: skip them without parsing their JSON.
                    if event.data.contains("\"usage\"") || event.data.contains("\"usageMetadata\"") {
                        self.read_event(&event.data);
                    }
                }
            }
            Body::Json(copy) if copy.len() + chunk.len() <= MAX_JSON_COPY => copy.extend_from_slice(chunk),
            Body::Json(_) => self.body = Body::Opaque,
            Body::Opaque => {}
        }
    }

    /// The usage the answer reported, once it ended (or was cut off): `None` when it reported none.
    pub fn finish(mut self) -> Option<Usage> {
        if let Body::Json(copy) = std::mem::replace(&mut self.body, Body::Opaque)
            && let Ok(value) = serde_json::from_slice::<Value>(&copy)
            && let Some(usage) = value.get("usage").or_else(|| value.get("usageMetadata"))
        {
            self.merge(usage);
        }
        self.seen.then_some(self.usage)
    }

    /// One SSE event's data: the usage object wherever the dialect puts it.
    fn read_event(&mut self, data: &str) {
        let Ok(value) = serde_json::from_str::<Value>(data) else { return };
        let usage = value
            .get("usage")
            .or_else(|| value.pointer("/message/usage"))
            .or_else(|| value.pointer("/response/usage"))
            .or_else(|| value.get("usageMetadata"));
        if let Some(usage) = usage.filter(|u| u.is_object()) {
            self.merge(usage);
        }
    }

    /// Takes the counts an usage object states. Anthropic's `message_delta` restates cumulative
    /// counts, so a later count replaces an earlier one rather than adding to it.
    fn merge(&mut self, usage: &Value) {
        let n = |v: Option<&Value>| v.and_then(Value::as_u64);
        let mut set = |field: &mut u64, value: Option<u64>| {
            if let Some(v) = value {
                *field = v;
                self.seen = true;
            }
        };
        let u = &mut self.usage;
        if let Some(prompt) = n(usage.get("prompt_tokens")) {
            // OpenAI Chat: the prompt includes its cached part.
            let cached = n(usage.pointer("/prompt_tokens_details/cached_tokens")).unwrap_or(0);
            set(&mut u.input, Some(prompt.saturating_sub(cached)));
            set(&mut u.cache_read, Some(cached));
            set(&mut u.output, n(usage.get("completion_tokens")));
        } else if let Some(prompt) = n(usage.get("promptTokenCount")) {
            // Gemini: the prompt includes its cached part; the thoughts are billed as output.
            let cached = n(usage.get("cachedContentTokenCount")).unwrap_or(0);
            set(&mut u.input, Some(prompt.saturating_sub(cached)));
            set(&mut u.cache_read, Some(cached));
            let output = n(usage.get("candidatesTokenCount")).unwrap_or(0)
                + n(usage.get("thoughtsTokenCount")).unwrap_or(0);
            set(&mut u.output, Some(output));
        } else if usage.get("input_tokens_details").is_some() {
            // OpenAI Responses: the same, under other names.
            let cached = n(usage.pointer("/input_tokens_details/cached_tokens")).unwrap_or(0);
            let input = n(usage.get("input_tokens")).map(|i| i.saturating_sub(cached));
            set(&mut u.input, input);
            set(&mut u.cache_read, Some(cached));
            set(&mut u.output, n(usage.get("output_tokens")));
        } else {
            // Anthropic: uncached input, and the cache written and read, each on its own.
            set(&mut u.input, n(usage.get("input_tokens")));
            set(&mut u.output, n(usage.get("output_tokens")));
            set(&mut u.cache_read, n(usage.get("cache_read_input_tokens")));
            set(&mut u.cache_write, n(usage.get("cache_creation_input_tokens")));
            // Of the writes, those with a 1-hour lifetime (billed 2×, not 1.25×).
            set(&mut u.cache_write_1h, n(usage.pointer("/cache_creation/ephemeral_1h_input_tokens")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(content_type: &str, chunks: &[&str]) -> Option<Usage> {
        let mut reader = UsageReader::new(content_type);
        for c in chunks {
            reader.feed(c.as_bytes());
        }
        reader.finish()
    }

    #[test]
    fn anthropic_usage_comes_from_message_start_and_message_delta_across_chunks() {
        let stream = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":",
            "{\"input_tokens\":12,\"cache_creation_input_tokens\":300,\"cache_read_input_tokens\":4000,",
            "\"output_tokens\":1}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"hi\"}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":42}}\n\n",
        );
        let (a, b) = stream.split_at(57);
        let usage = read("text/event-stream; charset=utf-8", &[a, b]).unwrap();
        assert_eq!(
            usage,
            Usage { input: 12, output: 42, cache_read: 4000, cache_write: 300, cache_write_1h: 0 }
        );
    }

    #[test]
    fn anthropic_one_hour_writes_are_read_from_cache_creation() {
        let json = r#"{"usage":{"input_tokens":3,"cache_creation_input_tokens":5000,"cache_read_input_tokens":0,
            "cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":4000},"output_tokens":9}}"#;
        let usage = read("application/json", &[json]).unwrap();
        assert_eq!((usage.cache_write, usage.cache_write_1h), (5000, 4000));
        let billed = usage.billed();
        assert_eq!((billed.write_5m, billed.write_1h), (1000.0, 4000.0));
    }

    #[test]
    fn openai_chat_and_responses_usage_leave_out_the_cached_part_of_the_input() {
        let chat = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":7,\
                    \"prompt_tokens_details\":{\"cached_tokens\":64}}}\n\ndata: [DONE]\n\n";
        assert_eq!(
            read("text/event-stream", &[chat]).unwrap(),
            Usage { input: 36, output: 7, cache_read: 64, cache_write: 0, cache_write_1h: 0 }
        );
        let responses = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":\
                         {\"usage\":{\"input_tokens\":50,\"input_tokens_details\":{\"cached_tokens\":10},\
                         \"output_tokens\":5}}}\n\n";
        assert_eq!(
            read("text/event-stream", &[responses]).unwrap(),
            Usage { input: 40, output: 5, cache_read: 10, cache_write: 0, cache_write_1h: 0 }
        );
    }

    #[test]
    fn gemini_usage_metadata_is_read_from_each_chunk_and_from_a_json_answer() {
        let first = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]}}],\
                     \"usageMetadata\":{\"promptTokenCount\":900,\"candidatesTokenCount\":1,\"totalTokenCount\":901}}\r\n\r\n";
        let last = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"lo\"}]},\
                    \"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":900,\"candidatesTokenCount\":6,\
                    \"thoughtsTokenCount\":4,\"cachedContentTokenCount\":512,\"totalTokenCount\":910}}\r\n\r\n";
        assert_eq!(
            read("text/event-stream", &[first, last]).unwrap(),
            Usage { input: 388, output: 10, cache_read: 512, cache_write: 0, cache_write_1h: 0 }
        );
        let json = r#"{"candidates":[],"usageMetadata":{"promptTokenCount":30,"candidatesTokenCount":2}}"#;
        assert_eq!(
            read("application/json", &[json]).unwrap(),
            Usage { input: 30, output: 2, ..Usage::default() }
        );
    }

    #[test]
    fn a_json_answer_is_read_at_its_end_and_other_bodies_not_at_all() {
        let json = r#"{"id":"x","usage":{"input_tokens":3,"output_tokens":4}}"#;
        let (a, b) = json.split_at(20);
        assert_eq!(read("application/json", &[a, b]).unwrap().output, 4);
        assert_eq!(read("text/plain", &[json]), None);
        assert_eq!(read("text/event-stream", &["data: {\"choices\":[]}\n\n"]), None);
        assert_eq!(read("application/json", &["{\"usage\":"]), None, "a cut answer");
    }
}
