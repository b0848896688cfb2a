//! The SSE parser: any bytes, cut anywhere and with empty chunks among the pieces, give the same
//! events as fed whole, and the parser never holds more than its bounds. The first byte picks the
//! cuts: it seeds the chunk sizes (1 to its low six bits + 1) and where empty chunks go.
#![no_main]
use condense_core::formats::{MAX_SSE_EVENT_BYTES, MAX_SSE_LINE_BYTES, SseParser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, stream)) = data.split_first() else { return };
    let mut whole = SseParser::new();
    let all = whole.feed(stream);

    let largest = usize::from(pick & 0x3f) + 1;
    let mut state = u32::from(pick) | 0x100;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let mut split = SseParser::new();
    let mut events = Vec::new();
    let mut at = 0;
    while at < stream.len() {
        let r = next();
        if r % 3 == 0 {
            events.extend(split.feed(&[]));
        }
        let end = (at + 1 + (r >> 4) as usize % largest).min(stream.len());
        events.extend(split.feed(&stream[at..end]));
        at = end;
    }
    events.extend(split.feed(&[]));
    assert_eq!(all, events);
    assert_eq!(whole.has_pending(), split.has_pending());
    for e in &all {
        assert!(e.data.len() <= MAX_SSE_EVENT_BYTES + MAX_SSE_LINE_BYTES);
    }
});
