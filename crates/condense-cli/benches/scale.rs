//! Native scale benchmark: the LLM-free providers on the ~1M-token, 2,000-message chat that
//! `scripts/bench-inputs.mjs` writes (`target/bench-inputs/chat1m.json`), with one counter for
//! the whole process so that, after a first run, every message count is answered by its cache —
//! the wasm engine's situation in `benches/scale.mjs`, without the boundary. It also times what
//! the boundary costs natively: reading the conversation from JSON text and writing the result
//! back. Not a test: nothing here asserts a time.
//!
//! `cargo bench -p condense-cli --bench scale` (`-- --rounds N`, `-- --input FILE`,
//! `-- --only lossless|mask|truncation` to profile one provider). BENCHMARKS.md holds the results.
#![allow(clippy::disallowed_methods, reason = "a benchmark times things and reads its input")]
#![allow(clippy::disallowed_macros, reason = "a benchmark run by hand prints its table to a terminal")]

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use condense_cli::native::NativeClock;
use condense_core::formats::parse_conversation;
use condense_core::ledger::{Haystack, Ledger};
use condense_core::{CondensationManager, CondensationOptions, Services, TiktokenCounter, TokenCounter};

fn ms(d: Duration) -> String {
    let x = d.as_secs_f64() * 1e3;
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn stats(mut v: Vec<Duration>) -> String {
    v.sort();
    format!("{} ({}–{})", ms(v[v.len() / 2]), ms(v[0]), ms(v[v.len() - 1]))
}

fn main() {
    if !common::started_by_cargo_bench(env!("CARGO_CRATE_NAME")) {
        return;
    }
    let rounds: usize = common::arg("--rounds").and_then(|n| n.parse().ok()).unwrap_or(5);
    let only = common::arg("--only");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let input = common::arg("--input")
        .map(Into::into)
        .unwrap_or_else(|| root.join("target/bench-inputs/chat1m.json"));
    let text = std::fs::read_to_string(&input)
        .unwrap_or_else(|e| panic!("{}: {e} (run `node scripts/bench-inputs.mjs` first)", input.display()));

    let start = Instant::now();
    let conversation = parse_conversation(&text).expect("the input parses").conversation;
    let parse = start.elapsed();
    let counter = TiktokenCounter::for_model("gpt-4o");
    let start = Instant::now();
    let tokens = counter.count_request(conversation.system.as_deref(), &conversation.api_view());
    let first = start.elapsed();
    let start = Instant::now();
    black_box(counter.count_request(conversation.system.as_deref(), &conversation.api_view()));
    let again = start.elapsed();
    println!(
        "\n### native: {} tokens, {} messages ({:.1} MB)\n",
        tokens,
        conversation.messages.len(),
        text.len() as f64 / 1048576.0
    );
    println!("| step | median ms (range) |");
    println!("| --- | ---: |");
    println!("| parse the JSON text | {} |", ms(parse));
    println!("| first count (vocabulary loaded, every message counted) | {} |", ms(first));
    println!("| count again (every message from the cache) | {} |", ms(again));

    // The parts every run over the whole conversation pays, one at a time.
    let view = conversation.api_view();
    let part = |name: &str, f: &dyn Fn() -> usize| {
        let mut times = Vec::new();
        for _ in 0..rounds.max(3) {
            let start = Instant::now();
            black_box(f());
            times.push(start.elapsed());
        }
        println!("| part: {name} | {} |", stats(times));
    };
    part("Ledger::of the whole view (the ledger's reserve)", &|| Ledger::of(&view).user_messages.len());
    part("Haystack::of the whole view (the probes' text)", &|| Haystack::of(&view).as_str().len());
    part("a copy of every message (what a result is made of)", &|| conversation.messages.clone().len());
    part("every message compared with a copy", &|| {
        let copy = conversation.messages.clone();
        black_box(copy == conversation.messages).into()
    });

    let manager = CondensationManager::with_builtin_providers();
    let clock = NativeClock::default();
    let target = tokens / 2;
    for (provider, target_tokens) in
        [("lossless", None), ("mask", Some(target)), ("truncation", Some(target))]
    {
        if only.as_deref().is_some_and(|o| o != provider) {
            continue;
        }
        let options = CondensationOptions { target_tokens, ..Default::default() };
        let run = || {
            let services = Services::new(&counter, &clock);
            let start = Instant::now();
            let result = futures::executor::block_on(manager.condense(
                &conversation,
                Some(provider),
                options.clone(),
                services,
            ))
            .expect("the provider exists");
            (start.elapsed(), result)
        };
        let (cold, result) = run();
        assert!(result.is_ok(), "{provider}: {:?}", result.error);
        let mut warm = Vec::new();
        let mut out = Vec::new();
        for _ in 0..rounds {
            let (d, r) = run();
            warm.push(d);
            let start = Instant::now();
            black_box(serde_json::to_string(&r.to_document(&conversation)).expect("serializes").len());
            out.push(start.elapsed());
        }
        println!(
            "| {provider}{} (first run {}): counts cached, {} runs | {} (→ {} tokens) |",
            target_tokens.map(|t| format!(" to {t}")).unwrap_or_default(),
            ms(cold),
            rounds,
            stats(warm),
            result.new_context_tokens.unwrap_or(0)
        );
        println!("| {provider}: the result written as JSON text | {} |", stats(out));
    }
}
