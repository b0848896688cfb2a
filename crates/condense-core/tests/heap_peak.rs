//! The gateway's heap for one large message (issue 38): what deciding a request allocates at its
//! peak, beyond the body, for one message of 10 MB — a text of one repeated character, of words,
//! or a tool result's blocks. In the extension the core runs in WebAssembly, whose memory never
//! shrinks and whose allocator cannot put a grown buffer where a freed one was: every copy of the
//! text made on the way (a block serialized only to be hashed, a buffer doubled while it grew)
//! stayed in the instance's memory. Counted by dhat's allocator (bytes, not time: deterministic).

use std::net::SocketAddr;

use condense_core::gateway::{GatewayConfig, Guard, HostGateway, Upstreams};
use serde_json::json;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const MB: usize = 1 << 20;

fn gateway() -> HostGateway {
    let origin = "http://127.0.0.1:9".to_owned();
    let upstreams = Upstreams {
        anthropic: origin.clone(),
        openai: origin.clone(),
        gemini: origin.clone(),
        chatgpt: origin,
    };
    let config = GatewayConfig { provider: "smart".into(), threshold: 0.8, ..GatewayConfig::default() };
    let guard = Guard { bound: SocketAddr::from(([127, 0, 0, 1], 1)), token: None };
    HostGateway::new(config, upstreams, guard).unwrap()
}

/// The heap's peak while deciding `body`, less what was allocated before.
fn peak_of_deciding(gateway: &mut HostGateway, body: &[u8]) -> usize {
    // dhat counts from its profiler's start: one profiler per measure.
    let _profiler = dhat::Profiler::builder().testing().build();
    let base = dhat::HeapStats::get().curr_bytes;
    let decided = gateway.decide("POST", "/v1/messages", None, None, body, 0);
    drop(decided);
    dhat::HeapStats::get().max_bytes.saturating_sub(base)
}

#[test]
fn deciding_one_large_message_holds_at_most_three_copies_of_it() {
    let text_of = |kind: &str| match kind {
        "one character" => "a".repeat(10 * MB),
        _ => "the quick brown fox jumps over the lazy dog ".repeat(10 * MB / 44),
    };
    let mut gateway = gateway();
    // The token counters' tables are built at the first count: before the measures.
    let warm = json!({"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": [{"role": "user", "content": "hello"}]});
    gateway.decide("POST", "/v1/messages", None, None, warm.to_string().as_bytes(), 0);
    for kind in ["one character", "words", "a tool result"] {
        let text = text_of(kind);
        let content = if kind == "a tool result" {
            json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": text}])
        } else {
            json!(text)
        };
        let body = serde_json::to_vec(&json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": content}],
        }))
        .unwrap();
        drop((text, content));
        let peak = peak_of_deciding(&mut gateway, &body);
        // The message parsed, and its conversation built from it, while it is counted: two
        // copies, and the counter's work on one long word. Before, the books' cells and the
        // session's key serialized the message again, into buffers grown by doubling: 4 copies
        // (debug build, 10 MB; 5.6 for 50 MB in a release build).
        assert!(
            peak <= 3 * body.len() + 4 * MB,
            "{kind}: deciding a {} MB message allocated {} MB at its peak",
            body.len() / MB,
            peak / MB
        );
    }
}
