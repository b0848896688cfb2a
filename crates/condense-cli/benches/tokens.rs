//! Native token-counting benchmark: the core's count-only counter against tiktoken-rs's
//! `encode_ordinary(text).len()`, in the same process, on the inputs of
//! `condense_cli::bench_inputs`: `count_in` (no cache) and a `TiktokenCounter` kept across rounds
//! (its piece cache warm, as the engine's is). The order rotates every round; each figure is the
//! median of the rounds, with the range. Not a test: nothing here asserts a time.
//!
//! `cargo bench -p condense-cli --bench tokens` (`-- --rounds N` for more rounds, `-- --cold` for
//! the cold start alone, to repeat in fresh processes, `-- --long` for the long pieces alone).
//! BENCHMARKS.md holds the results.
#![allow(clippy::disallowed_methods, reason = "a benchmark times things")]
#![allow(clippy::disallowed_macros, reason = "a benchmark run by hand prints its table to a terminal")]

mod common;
use std::hint::black_box;
use std::time::{Duration, Instant};

use condense_cli::bench_inputs;
use condense_core::tokens::{Encoding, TokenCounter, count_in};
use condense_core::{Conversation, TiktokenCounter};
use tiktoken_rs::CoreBPE;

struct Input {
    name: &'static str,
    texts: Vec<String>,
    /// The chat, for the conversation counts (`count_request`).
    chat: Option<Conversation>,
}

impl Input {
    fn bytes(&self) -> usize {
        self.texts.iter().map(String::len).sum()
    }
}

fn time(f: impl FnOnce() -> usize) -> (Duration, usize) {
    let start = Instant::now();
    let n = black_box(f());
    (start.elapsed(), n)
}

struct Stats {
    median: Duration,
    min: Duration,
    max: Duration,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    Stats { median: v[v.len() / 2], min: v[0], max: v[v.len() - 1] }
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn main() {
    if !common::started_by_cargo_bench(env!("CARGO_CRATE_NAME")) {
        return;
    }
    let rounds: usize = common::arg("--rounds").and_then(|n| n.parse().ok()).unwrap_or(15);

    // Cold start, once per process: the first count of each side, vocabulary loading included.
    println!("## cold start (first count in this process, o200k_base then cl100k_base)\n");
    println!("| encoding | fast: load + first count | tiktoken-rs: load + first count | ratio |");
    println!("|---|---:|---:|---:|");
    let mut oracles: Vec<(Encoding, CoreBPE)> = Vec::new();
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let (fast, a) = time(|| count_in(encoding, "hello world"));
        let start = Instant::now();
        let bpe = match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base().unwrap(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base().unwrap(),
        };
        let b = black_box(bpe.encode_ordinary("hello world").len());
        let slow = start.elapsed();
        assert_eq!(a, b);
        println!(
            "| {} | {:.3} ms | {:.1} ms | {:.0}× |",
            encoding.name(),
            fast.as_secs_f64() * 1e3,
            slow.as_secs_f64() * 1e3,
            slow.as_secs_f64() / fast.as_secs_f64()
        );
        oracles.push((encoding, bpe));
    }

    if std::env::args().any(|a| a == "--cold") {
        return;
    }
    long_pieces(rounds, &oracles);
    if std::env::args().any(|a| a == "--long") {
        return;
    }

    let chat = bench_inputs::tool_chat();
    let inputs = [
        Input { name: "(a) 1 MB prose and code", texts: vec![bench_inputs::prose_and_code()], chat: None },
        Input { name: "(b) 200-message tool chat", texts: bench_inputs::chat_texts(&chat), chat: Some(chat) },
        Input { name: "(c) 10,000 short strings", texts: bench_inputs::short_strings(), chat: None },
    ];

    println!("\n## throughput (median of {rounds} rounds, range in brackets)\n");
    println!(
        "| input | encoding | tokens | `count_in` MB/s | counter MB/s | tiktoken-rs MB/s | ratio `count_in` | ratio counter |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for (encoding, bpe) in &oracles {
        for input in &inputs {
            // `count_in`: no cache. The counter: a `TiktokenCounter` kept across the rounds, as
            // the engine keeps one, so its piece cache is warm after the first.
            let counter = TiktokenCounter::new(*encoding);
            let run: [&dyn Fn() -> usize; 3] = [
                &|| input.texts.iter().map(|t| count_in(*encoding, t)).sum::<usize>(),
                &|| input.texts.iter().map(|t| counter.count_text(t)).sum::<usize>(),
                &|| input.texts.iter().map(|t| bpe.encode_ordinary(t).len()).sum::<usize>(),
            ];
            let mut times: [Vec<Duration>; 3] = Default::default();
            let mut counts = [0; 3];
            for round in 0..rounds {
                // The order rotates every round.
                for k in 0..3 {
                    let which = (k + round) % 3;
                    let (d, n) = time(run[which]);
                    times[which].push(d);
                    counts[which] = n;
                }
            }
            assert!(
                counts[0] == counts[2] && counts[1] == counts[2],
                "{} {}: the counts differ: {counts:?}",
                input.name,
                encoding.name()
            );
            let [plain, cached, slow] = times.map(stats);
            let bytes = input.bytes();
            let rate = |s: &Stats| {
                format!(
                    "{:.1} [{:.1}–{:.1}]",
                    mb_per_s(bytes, s.median),
                    mb_per_s(bytes, s.max),
                    mb_per_s(bytes, s.min)
                )
            };
            println!(
                "| {} | {} | {} | {} | {} | {} | **{:.1}×** | **{:.1}×** |",
                input.name,
                encoding.name(),
                counts[2],
                rate(&plain),
                rate(&cached),
                rate(&slow),
                slow.median.as_secs_f64() / plain.median.as_secs_f64(),
                slow.median.as_secs_f64() / cached.median.as_secs_f64(),
            );
        }
    }

    // The chat as a conversation: a fresh counter (every message counted), then the same counter
    // again (every message answered by its cache key).
    let chat = inputs[1].chat.as_ref().expect("the chat input");
    let view = chat.api_view();
    let mut fresh = Vec::new();
    let mut cached = Vec::new();
    for _ in 0..rounds {
        let counter = TiktokenCounter::new(Encoding::O200kBase);
        fresh.push(time(|| counter.count_request(None, &view)).0);
        cached.push(time(|| counter.count_request(None, &view)).0);
    }
    let (fresh, cached) = (stats(fresh), stats(cached));
    println!("\n## the chat as a conversation (o200k_base, `TiktokenCounter::count_request`)\n");
    println!("| | median | range |");
    println!("|---|---:|---:|");
    println!(
        "| every message counted (fresh counter) | {:.2} ms | {:.2}–{:.2} ms |",
        fresh.median.as_secs_f64() * 1e3,
        fresh.min.as_secs_f64() * 1e3,
        fresh.max.as_secs_f64() * 1e3
    );
    println!(
        "| every message cached (cache keys only) | {:.3} ms | {:.3}–{:.3} ms |",
        cached.median.as_secs_f64() * 1e3,
        cached.min.as_secs_f64() * 1e3,
        cached.max.as_secs_f64() * 1e3
    );
}

/// Long single pieces (issue 24): 1 MB of one letter and 1 MB of base64 of zero bytes, each one
/// piece the merge runs on, and other megabyte runs. tiktoken-rs's merge is quadratic in a
/// piece's length, so it counts a 50 KB prefix of each (its time for 1 MB would be minutes).
fn long_pieces(rounds: usize, oracles: &[(Encoding, CoreBPE)]) {
    const MB: usize = 1_000_000;
    const PREFIX: usize = 50_000;
    let inputs: [(&str, String); 5] = [
        ("1 MB of `L`", "L".repeat(MB)),
        ("1 MB of base64 zeros (`AAAA…`)", "A".repeat(MB)),
        ("1 MB of `ab`", "ab".repeat(MB / 2)),
        ("1 MB of digits", "0123456789".repeat(MB / 10)),
        ("1 MB of spaces", " ".repeat(MB)),
    ];
    println!("\n## long pieces (median of {rounds} rounds, `count_in`; tiktoken-rs on a 50 KB prefix)\n");
    println!("| input | encoding | tokens | `count_in` 1 MB | tiktoken-rs 50 KB |");
    println!("|---|---|---:|---:|---:|");
    for (encoding, bpe) in oracles {
        for (name, text) in &inputs {
            let mut times = Vec::new();
            let mut n = 0;
            for _ in 0..rounds {
                let (d, c) = time(|| count_in(*encoding, text));
                times.push(d);
                n = c;
            }
            let prefix = &text[..PREFIX];
            let (slow, expected) = time(|| bpe.encode_ordinary(prefix).len());
            assert_eq!(
                count_in(*encoding, prefix),
                expected,
                "{name} {}: the counts differ",
                encoding.name()
            );
            let s = stats(times);
            println!(
                "| {name} | {} | {n} | {:.1} ms [{:.1}–{:.1}] | {:.0} ms |",
                encoding.name(),
                s.median.as_secs_f64() * 1e3,
                s.min.as_secs_f64() * 1e3,
                s.max.as_secs_f64() * 1e3,
                slow.as_secs_f64() * 1e3,
            );
        }
    }
}
