//! An incremental Server-Sent Events parser (the WHATWG event-stream format): bytes in, in chunks
//! of any size, events out.

/// One event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Parses a byte stream into events.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
    has_data: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n' || b == b'\r') {
            // A `\r\n` pair is one line end; wait for the next byte if the `\r` is the last one.
            let width = if self.buffer[end] == b'\r' {
                match self.buffer.get(end + 1) {
                    Some(b'\n') => 2,
                    Some(_) => 1,
                    None => break,
                }
            } else {
                1
            };
            let line: Vec<u8> = self.buffer.drain(..end + width).take(end).collect();
            self.line(&String::from_utf8_lossy(&line), &mut events);
        }
        events
    }

    /// Whether bytes of an unfinished event are buffered (the stream ended mid-event).
    pub fn has_pending(&self) -> bool {
        !self.buffer.is_empty() || self.has_data || self.event.is_some()
    }

    fn line(&mut self, line: &str, events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                events.push(SseEvent { event: self.event.take(), data: self.data.join("\n") });
            }
            self.event = None;
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return; // a comment, e.g. a keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                self.data.push(value.to_owned());
                self.has_data = true;
            }
            _ => {} // `id`, `retry` and unknown fields do not matter here
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_parse_the_same() {
        let stream = "event: message_start\ndata: {\"a\":1}\n\n: keep-alive\r\ndata: line one\r\ndata: line two\r\n\r\ndata: [DONE]\n\n";
        let whole = SseParser::new().feed(stream.as_bytes());
        assert_eq!(
            whole,
            [
                SseEvent { event: Some("message_start".into()), data: "{\"a\":1}".into() },
                SseEvent { event: None, data: "line one\nline two".into() },
                SseEvent { event: None, data: "[DONE]".into() },
            ]
        );
        for size in 1..8 {
            let mut parser = SseParser::new();
            let mut events = Vec::new();
            for chunk in stream.as_bytes().chunks(size) {
                events.extend(parser.feed(chunk));
            }
            assert_eq!(events, whole, "chunks of {size}");
            assert!(!parser.has_pending());
        }
    }

    #[test]
    fn a_cut_event_is_pending_not_emitted() {
        let mut parser = SseParser::new();
        assert!(parser.feed(b"data: {\"partial\": tr").is_empty());
        assert!(parser.has_pending());
    }

    #[test]
    fn multibyte_text_split_across_chunks_survives() {
        let stream = "data: {\"t\":\"héllo ✓\"}\n\n".as_bytes();
        let mut parser = SseParser::new();
        let mut events = parser.feed(&stream[..14]);
        events.extend(parser.feed(&stream[14..]));
        assert_eq!(events[0].data, "{\"t\":\"héllo ✓\"}");
    }
}
