//! An incremental Server-Sent Events parser (the WHATWG event-stream format): bytes in, in chunks
//! of any size, events out. By the standard's parsing rules: a UTF-8 byte order mark at the start
//! of the stream is dropped; a line ends at CRLF, LF or a lone CR (a CR is a line end at once, and
//! an LF right after it does not end a second line, even in the next chunk); a line starting with
//! `:` is a comment; a field without a colon has an empty value; one space after the colon is
//! dropped; unknown fields are ignored; an event is dispatched at a blank line, and one cut by the
//! end of the stream is not (the caller sees it as pending).

/// The longest line the parser buffers: a line without an end past it fails the stream.
pub const MAX_SSE_LINE_BYTES: usize = 1 << 20;

/// The most data one event may gather.
pub const MAX_SSE_EVENT_BYTES: usize = 8 << 20;

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
    /// Whether the stream's first bytes were seen (the BOM check is done).
    started: bool,
    /// Whether the last line ended with a CR, so that an LF first in the next bytes is its pair.
    after_cr: bool,
    /// Bytes gathered by the event being read.
    event_bytes: usize,
    /// Why the stream can no longer be parsed (a bound passed); nothing more is read.
    overflow: Option<String>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events they complete.
    /// Once a bound is passed ([`SseParser::overflow`]), nothing more is parsed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        if self.overflow.is_some() {
            return Vec::new();
        }
        self.buffer.extend_from_slice(bytes);
        if !self.started {
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            if self.buffer.len() < BOM.len() && BOM.starts_with(&self.buffer) {
                return Vec::new(); // maybe a BOM, not all of it yet
            }
            if self.buffer.starts_with(BOM) {
                self.buffer.drain(..BOM.len());
            }
            self.started = true;
        }
        let mut events = Vec::new();
        let mut start = 0;
        // A CR that ended the last bytes pairs with an LF first in these; bytes that bring
        // nothing (an empty chunk) leave the question open.
        if self.after_cr && !self.buffer.is_empty() {
            if self.buffer[0] == b'\n' {
                start = 1;
            }
            self.after_cr = false;
        }
        while let Some(offset) = self.buffer[start..].iter().position(|&b| b == b'\n' || b == b'\r') {
            let end = start + offset;
            let line = String::from_utf8_lossy(&self.buffer[start..end]).into_owned();
            start = end + 1;
            if self.buffer[end] == b'\r' {
                match self.buffer.get(start) {
                    Some(b'\n') => start += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.line(&line, &mut events);
            if self.event_bytes > MAX_SSE_EVENT_BYTES {
                self.fail(format!("an event of the stream passed {} MiB", MAX_SSE_EVENT_BYTES >> 20));
                return events;
            }
        }
        self.buffer.drain(..start);
        if self.buffer.len() > MAX_SSE_LINE_BYTES {
            self.fail(format!("a line of the stream passed {} MiB without an end", MAX_SSE_LINE_BYTES >> 20));
        }
        events
    }

    fn fail(&mut self, why: String) {
        self.overflow = Some(why);
        self.buffer = Vec::new();
        self.data = Vec::new();
    }

    /// Why parsing stopped: a line or an event passed its bound.
    pub fn overflow(&self) -> Option<&str> {
        self.overflow.as_deref()
    }

    /// Whether bytes of an unfinished event are buffered (the stream ended mid-event).
    pub fn has_pending(&self) -> bool {
        // A stream that is only a byte order mark has nothing pending.
        let bom_only = !self.started && b"\xEF\xBB\xBF".starts_with(&self.buffer);
        (!self.buffer.is_empty() && !bom_only) || self.has_data || self.event.is_some()
    }

    fn line(&mut self, line: &str, events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                events.push(SseEvent { event: self.event.take(), data: self.data.join("\n") });
            }
            self.event = None;
            self.data.clear();
            self.has_data = false;
            self.event_bytes = 0;
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
                self.event_bytes += value.len() + 1;
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

    /// Feeds the stream in every way the cases are checked: whole, byte by byte, and each of
    /// those with empty chunks around (an empty chunk first, after the whole, and between every
    /// byte). All must give the same events and the same pending state.
    fn both_ways(stream: &[u8]) -> (Vec<SseEvent>, bool) {
        let feed = |chunks: &[&[u8]]| {
            let mut parser = SseParser::new();
            let events: Vec<SseEvent> = chunks.iter().flat_map(|c| parser.feed(c)).collect();
            (events, parser.has_pending())
        };
        let empty: &[u8] = b"";
        let bytes: Vec<&[u8]> = stream.iter().map(std::slice::from_ref).collect();
        let whole = feed(&[stream]);
        let ways: [(&str, Vec<&[u8]>); 4] = [
            ("byte by byte", bytes.clone()),
            ("whole between empty chunks", vec![empty, stream, empty, empty]),
            ("byte by byte with an empty chunk between every byte", {
                let mut v = vec![empty];
                for b in &bytes {
                    v.extend([*b, empty]);
                }
                v
            }),
            ("byte by byte with two empty chunks between every byte", {
                bytes.iter().flat_map(|b| [*b, empty, empty]).collect()
            }),
        ];
        for (way, chunks) in ways {
            assert_eq!(
                feed(&chunks),
                whole,
                "whole and {way} differ for {:?}",
                String::from_utf8_lossy(stream)
            );
        }
        whole
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.into() }
    }

    #[test]
    fn the_standards_parsing_cases_fed_whole_and_byte_by_byte() {
        let cases: Vec<(&[u8], Vec<SseEvent>, bool)> = vec![
            // A byte order mark at the start is dropped, not read into the first field's name.
            (
                b"\xEF\xBB\xBFdata: first\n\ndata: second\n\n",
                vec![ev(None, "first"), ev(None, "second")],
                false,
            ),
            // ... only at the start: later it is part of the line (a field named "\u{feff}data").
            (b"data: a\n\n\xEF\xBB\xBFdata: b\n\n", vec![ev(None, "a")], false),
            // LF, CRLF and lone CR line ends, mixed.
            (
                b"data: a\r\rdata: b\n\ndata: c\r\n\r\n",
                vec![ev(None, "a"), ev(None, "b"), ev(None, "c")],
                false,
            ),
            (b"event: x\rdata: 1\rdata: 2\r\r", vec![ev(Some("x"), "1\n2")], false),
            // A CRLF is one line end wherever the chunks split it: two data lines, one event.
            (b"data: a\r\ndata: b\r\n\r\n", vec![ev(None, "a\nb")], false),
            // A field without a colon has an empty value; one space after the colon is dropped.
            (b"data\ndata:  two spaces\ndata:none\n\n", vec![ev(None, "\n two spaces\nnone")], false),
            // Comments, unknown fields, id and retry do not make or change events.
            (b": hi\nid: 7\nretry: 10\nfoo: bar\ndata: x\n\n", vec![ev(None, "x")], false),
            // A blank line without data dispatches nothing, and forgets the event type.
            (b"event: a\n\ndata: y\n\n", vec![ev(None, "y")], false),
            // An empty data line still makes an event, with empty data.
            (b"data:\n\n", vec![ev(None, "")], false),
            // An event the stream ends before its blank line is not dispatched: it is pending.
            (b"data: done\n\ndata: cut", vec![ev(None, "done")], true),
            (b"data: cut\n", vec![], true),
            // A stream that is only a BOM, or nothing, has nothing pending.
            (b"\xEF\xBB\xBF", vec![], false),
            (b"", vec![], false),
        ];
        for (stream, want, pending) in cases {
            let (events, left) = both_ways(stream);
            assert_eq!(events, want, "{:?}", String::from_utf8_lossy(stream));
            assert_eq!(left, pending, "pending after {:?}", String::from_utf8_lossy(stream));
        }
    }

    #[test]
    fn a_cr_at_the_end_of_a_chunk_pairs_with_an_lf_in_the_next() {
        let mut parser = SseParser::new();
        assert_eq!(parser.feed(b"data: a\r"), vec![]);
        assert_eq!(parser.feed(b"\n\r"), vec![ev(None, "a")]);
        assert_eq!(parser.feed(b"\ndata: b\r\r"), vec![ev(None, "b")]);
        assert!(!parser.has_pending());
    }

    #[test]
    fn an_empty_chunk_between_a_cr_and_its_lf_does_not_part_them() {
        // Once, the empty chunk forgot the CR, so the LF counted as a blank line and dispatched
        // the event before its second data line.
        let mut parser = SseParser::new();
        assert_eq!(parser.feed(b"data: a\r"), vec![]);
        assert_eq!(parser.feed(b""), vec![]);
        assert_eq!(parser.feed(b""), vec![]);
        assert_eq!(parser.feed(b"\ndata: b\r\n\r\n"), vec![ev(None, "a\nb")]);
        assert!(!parser.has_pending());
    }

    #[test]
    fn an_endless_line_or_event_stops_the_parser_with_its_reason() {
        let mut parser = SseParser::new();
        let chunk = vec![b'x'; 64 * 1024];
        let mut fed = 0;
        assert!(parser.feed(b"data: ").is_empty());
        while parser.overflow().is_none() {
            assert!(parser.feed(&chunk).is_empty());
            fed += chunk.len();
            assert!(fed <= MAX_SSE_LINE_BYTES + chunk.len(), "the parser kept buffering");
        }
        assert!(parser.overflow().unwrap().contains("without an end"));
        assert!(parser.feed(b"\n\ndata: later\n\n").is_empty(), "nothing is parsed after an overflow");

        let mut parser = SseParser::new();
        let line = format!("data: {}\n", "y".repeat(1000));
        let mut lines = 0;
        while parser.overflow().is_none() {
            assert!(parser.feed(line.as_bytes()).is_empty());
            lines += 1;
            assert!(lines * 1001 <= MAX_SSE_EVENT_BYTES + 2 * 1001, "the parser kept gathering");
        }
        assert!(parser.overflow().unwrap().contains("an event of the stream passed 8 MiB"));
    }
}
