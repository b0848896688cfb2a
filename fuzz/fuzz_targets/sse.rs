//! The SSE parser: any bytes, split anywhere, give the same events as fed whole (the first byte
//! picks the chunk size), and the parser never holds more than its bounds.
#![no_main]
use condense_core::formats::{MAX_SSE_EVENT_BYTES, MAX_SSE_LINE_BYTES, SseParser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&size, stream)) = data.split_first() else { return };
    let mut whole = SseParser::new();
    let all = whole.feed(stream);
    let mut split = SseParser::new();
    let mut events = Vec::new();
    for chunk in stream.chunks(usize::from(size).max(1)) {
        events.extend(split.feed(chunk));
    }
    assert_eq!(all, events);
    assert_eq!(whole.has_pending(), split.has_pending());
    for e in &all {
        assert!(e.data.len() <= MAX_SSE_EVENT_BYTES + MAX_SSE_LINE_BYTES);
    }
});
