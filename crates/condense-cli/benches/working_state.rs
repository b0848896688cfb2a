//! The LLM-free condensation at scale, with its working state: `truncation` and `smart` on a
//! ~377k-token Cline task history to a 60k target, timed beside each other in the same process
//! so the ratio holds whatever the machine's speed. The history is the Cline-shaped fixture
//! (`tests/fixtures/real/cline-shaped-phased-refactor.json`) with its turns after the task
//! repeated three times (ids made unique), the size of a long real Cline task. Not a test:
//! nothing here asserts a time.
//!
//! `cargo bench -p condense-cli --bench working_state` (`-- --rounds N`). BENCHMARKS.md holds
//! the results.
#![allow(clippy::disallowed_methods, reason = "a benchmark times things and reads its input")]
#![allow(clippy::disallowed_macros, reason = "a benchmark run by hand prints its table to a terminal")]

mod common;

use std::time::{Duration, Instant};

use condense_cli::native::NativeClock;
use condense_core::formats::parse_conversation;
use condense_core::{
    CondensationManager, CondensationOptions, Conversation, Services, TiktokenCounter, TokenCounter,
};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The fixture with its turns after the first message repeated `times` times.
fn long_cline_history(times: usize) -> Conversation {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("tests/fixtures/real/cline-shaped-phased-refactor.json"))
        .expect("the Cline-shaped fixture");
    let base = parse_conversation(&text).expect("it parses").conversation;
    let (first, rest) = base.messages.split_first().expect("messages");
    let mut messages = vec![first.clone()];
    for round in 0..times {
        for m in rest {
            let mut m = m.clone();
            m.id = format!("{}-r{round}", m.id);
            messages.push(m);
        }
    }
    Conversation { messages, ..base }
}

fn main() {
    if !common::started_by_cargo_bench(env!("CARGO_CRATE_NAME")) {
        return;
    }
    let rounds: usize = common::arg("--rounds").and_then(|n| n.parse().ok()).unwrap_or(7);
    let conversation = long_cline_history(3);
    let counter = TiktokenCounter::for_model("gpt-4o");
    let before = counter.count_request(conversation.system.as_deref(), &conversation.api_view());
    let manager = CondensationManager::with_builtin_providers();
    let target = 60_000;
    println!("\n### {} tokens, {} messages, to {target} tokens\n", before, conversation.messages.len());
    println!("| provider | median ms | tokens after | ratio to truncation |");
    println!("| --- | ---: | ---: | ---: |");
    let mut anchor = None;
    for id in ["truncation", "smart"] {
        let mut times = Vec::new();
        let mut after = 0;
        // Interleaved with a warm-up round: the first run fills the counter's caches.
        for round in 0..=rounds {
            let clock = NativeClock::start();
            let services = Services::new(&counter, &clock);
            let options = CondensationOptions { target_tokens: Some(target), ..Default::default() };
            let start = Instant::now();
            let result =
                futures::executor::block_on(manager.condense(&conversation, Some(id), options, services))
                    .expect("the provider runs");
            let took = ms(start.elapsed());
            assert!(result.is_ok(), "{id}: {:?}", result.error);
            after = result.new_context_tokens.unwrap_or(0);
            if round > 0 {
                times.push(took);
            }
        }
        let m = median(times);
        let ratio = match anchor {
            None => {
                anchor = Some(m);
                "1.00×".to_owned()
            }
            Some(a) => format!("{:.2}×", m / a),
        };
        println!("| {id} | {m:.0} | {after} | {ratio} |");
    }
}
