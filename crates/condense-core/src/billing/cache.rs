//! A model of a provider's prompt cache: what one request's prompt is billed as — read from the
//! cache, written to it (for 5 minutes or an hour), or neither — given the requests before it.
//!
//! A prompt is a list of [`Block`]s in the order the provider caches them (Anthropic: the tool
//! definitions, the system blocks, then each message's content blocks), each with the key of the
//! prefix that ends with it (a hash of every block so far, so equal keys mean equal prefixes),
//! its tokens, and the cache breakpoint it carries, if any. Time is the caller's (`now_ms`): the
//! core reads no clock.
//!
//! [`CacheRules::Breakpoints`] (Anthropic's rules, as documented in "Prompt caching"):
//! - a prefix is written only at a breakpoint, and only when it has at least the model's minimum
//!   tokens; each breakpoint's segment (from the end of the previous one written, or of what was
//!   read) is billed as a write of that breakpoint's lifetime (`ttl` `5m`, the default, or `1h`);
//! - a request reads the longest prefix written before and still alive that ends at a
//!   breakpoint of the request or at one of the [`LOOKBACK_BLOCKS`] blocks before it; a prefix
//!   the request shares with an earlier one but which no breakpoint reaches back to is not read;
//! - a read renews the prefix's lifetime; what follows the last breakpoint is neither read nor
//!   written.
//!
//! [`CacheRules::Automatic`] (OpenAI's and Gemini's): every prompt of at least the minimum is
//! kept for the cache's retention; a later prompt reads the longest prefix (whole blocks) it
//! shares with one kept, rounded down to the provider's step, and writes the rest — which these
//! providers bill at the input price.
//!
//! `tests/servers/fixture_llm.py` bills Anthropic requests by the same rules, so that a test can
//! check the gateway's books against an upstream that was not computed by this code.

use std::collections::HashMap;

use super::billed::Billed;
use super::prices::CacheRules;

/// Blocks before a breakpoint where Anthropic looks for an earlier prefix (its documentation:
/// "approximately 20 blocks").
pub const LOOKBACK_BLOCKS: usize = 20;

/// How long a written prefix lives after its last use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Ttl {
    /// Anthropic's default `ephemeral` breakpoint; OpenAI's in-memory retention (5 to 10
    /// minutes, the shorter taken).
    #[default]
    FiveMinutes,
    /// Anthropic's `"ttl": "1h"`.
    OneHour,
    /// OpenAI's `prompt_cache_retention: "24h"`.
    Day,
}

impl Ttl {
    /// Its length in milliseconds.
    pub fn ms(self) -> i64 {
        match self {
            Ttl::FiveMinutes => 5 * 60_000,
            Ttl::OneHour => 60 * 60_000,
            Ttl::Day => 24 * 60 * 60_000,
        }
    }

    /// The lifetime a `cache_control` object asks for: its `ttl` (`"1h"`; anything else is the
    /// default).
    pub fn of_cache_control(value: &serde_json::Value) -> Ttl {
        match value.get("ttl").and_then(serde_json::Value::as_str) {
            Some("1h") => Ttl::OneHour,
            _ => Ttl::FiveMinutes,
        }
    }
}

/// One block of a prompt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Block {
    /// The key of the prefix ending with this block.
    pub key: u64,
    /// Its tokens.
    pub tokens: f64,
    /// The breakpoint it carries (Anthropic's `cache_control`), if any.
    pub breakpoint: Option<Ttl>,
}

/// A prefix the cache holds: when it expires, and the lifetime a use renews.
#[derive(Debug, Clone, Copy)]
struct Entry {
    expires_ms: i64,
    ttl: Ttl,
}

/// The most prefixes held; the soonest to expire go first beyond it.
const MAX_ENTRIES: usize = 4096;

/// One conversation's view of a provider's prompt cache.
#[derive(Debug, Clone)]
pub struct PromptCache {
    rules: CacheRules,
    /// The retention of an automatic cache's prompts.
    retention: Ttl,
    entries: HashMap<u64, Entry>,
}

impl PromptCache {
    /// An empty cache that follows `rules`.
    pub fn new(rules: CacheRules) -> Self {
        PromptCache { rules, retention: Ttl::FiveMinutes, entries: HashMap::new() }
    }

    /// The rules it follows.
    pub fn rules(&self) -> CacheRules {
        self.rules
    }

    /// How long an automatic cache keeps the prompts that follow (OpenAI's
    /// `prompt_cache_retention`).
    pub fn set_retention(&mut self, retention: Ttl) {
        self.retention = retention;
    }

    /// Whether any prefix is alive at `now_ms`.
    pub fn is_warm(&self, now_ms: i64) -> bool {
        self.entries.values().any(|e| e.expires_ms >= now_ms)
    }

    fn alive(&self, key: u64, now_ms: i64) -> bool {
        self.entries.get(&key).is_some_and(|e| e.expires_ms >= now_ms)
    }

    fn keep(&mut self, key: u64, ttl: Ttl, now_ms: i64) {
        let expires_ms = now_ms + ttl.ms();
        let entry = self.entries.entry(key).or_insert(Entry { expires_ms, ttl });
        if ttl.ms() > entry.ttl.ms() {
            entry.ttl = ttl;
        }
        entry.expires_ms = entry.expires_ms.max(now_ms + entry.ttl.ms());
    }

    fn prune(&mut self, now_ms: i64) {
        self.entries.retain(|_, e| e.expires_ms >= now_ms);
        if self.entries.len() > MAX_ENTRIES {
            let mut by_expiry: Vec<(i64, u64)> =
                self.entries.iter().map(|(k, e)| (e.expires_ms, *k)).collect();
            by_expiry.sort_unstable();
            for (_, key) in &by_expiry[..self.entries.len() - MAX_ENTRIES] {
                self.entries.remove(key);
            }
        }
    }

    /// Under breakpoint rules, how many blocks of `blocks` a request at `now_ms` would read
    /// (the read ends after them), without touching the cache; 0 under automatic rules, whose
    /// reads end in steps of tokens rather than at a block.
    pub fn read_end(&self, blocks: &[Block], now_ms: i64) -> usize {
        let CacheRules::Breakpoints { .. } = self.rules else { return 0 };
        let mut read_end = 0;
        for b in (0..blocks.len()).filter(|&i| blocks[i].breakpoint.is_some()) {
            let found =
                (b.saturating_sub(LOOKBACK_BLOCKS)..=b).rev().find(|&p| self.alive(blocks[p].key, now_ms));
            if let Some(p) = found {
                read_end = read_end.max(p + 1);
            }
        }
        read_end
    }

    /// Bills a prompt of `blocks` sent at `now_ms`, and keeps what it writes.
    pub fn bill(&mut self, blocks: &[Block], now_ms: i64) -> Billed {
        let tokens: Vec<f64> = blocks.iter().map(|b| b.tokens).collect();
        self.send(blocks, now_ms).billed(&tokens)
    }

    /// Sends a prompt of `blocks` at `now_ms`: keeps what it writes, and says where its bill
    /// falls by block ([`Spans`]), so that it can be priced later in other tokens (the
    /// upstream's, once its usage is known). Whether a prefix is long enough to be written is
    /// decided with the blocks' tokens as given.
    pub fn send(&mut self, blocks: &[Block], now_ms: i64) -> Spans {
        self.prune(now_ms);
        let mut prefix = Vec::with_capacity(blocks.len());
        let mut sum = 0.0;
        for b in blocks {
            sum += b.tokens;
            prefix.push(sum);
        }
        match self.rules {
            CacheRules::Breakpoints { min_tokens } => {
                // The longest prefix alive that a breakpoint reaches back to.
                let read = self.read_end(blocks, now_ms);
                if read > 0 {
                    let key = blocks[read - 1].key;
                    let ttl = self.entries[&key].ttl;
                    self.keep(key, ttl, now_ms);
                }
                let mut writes = Vec::new();
                let mut written = read;
                for b in (0..blocks.len()).filter(|&i| blocks[i].breakpoint.is_some()) {
                    let ttl = blocks[b].breakpoint.unwrap_or_default();
                    if prefix[b] < min_tokens as f64 {
                        continue;
                    }
                    if b + 1 > written {
                        writes.push((b + 1, ttl));
                        written = b + 1;
                    }
                    self.keep(blocks[b].key, ttl, now_ms);
                }
                Spans::Breakpoints { read, writes }
            }
            CacheRules::Automatic { min_tokens, step } => {
                if sum < min_tokens as f64 {
                    return Spans::Automatic { shared: 0, kept: false, min_tokens, step };
                }
                let shared =
                    (0..blocks.len()).rev().find(|&p| self.alive(blocks[p].key, now_ms)).map_or(0, |p| p + 1);
                let retention = self.retention;
                for b in blocks {
                    self.keep(b.key, retention, now_ms);
                }
                Spans::Automatic { shared, kept: true, min_tokens, step }
            }
        }
    }
}

/// Where one prompt's bill falls, by block, as [`PromptCache::send`] found it: priced with
/// [`Spans::billed`] in whatever tokens the blocks are counted in.
#[derive(Debug, Clone, PartialEq)]
pub enum Spans {
    /// Breakpoint rules: the first `read` blocks read; then each write, up to the end block it
    /// names (exclusive), with its lifetime; what follows the last one neither.
    Breakpoints {
        /// Blocks read.
        read: usize,
        /// Each write's end block and lifetime, in order.
        writes: Vec<(usize, Ttl)>,
    },
    /// Automatic rules: the first `shared` blocks were kept before (read, rounded down to
    /// `step` tokens, when at least `min_tokens`); the rest written when the prompt was `kept`.
    Automatic {
        /// Blocks shared with a kept prompt.
        shared: usize,
        /// Whether the prompt was long enough to keep.
        kept: bool,
        /// The provider's minimum and step.
        min_tokens: usize,
        step: usize,
    },
}

impl Spans {
    /// The blocks read (under breakpoint rules; 0 otherwise).
    pub fn read_blocks(&self) -> usize {
        match self {
            Spans::Breakpoints { read, .. } => *read,
            Spans::Automatic { .. } => 0,
        }
    }

    /// The bill in `tokens` (each block's, in the prompt's order).
    pub fn billed(&self, tokens: &[f64]) -> Billed {
        let mut prefix = Vec::with_capacity(tokens.len());
        let mut sum = 0.0;
        for t in tokens {
            sum += t;
            prefix.push(sum);
        }
        let upto = |n: usize| if n == 0 { 0.0 } else { prefix[n.min(prefix.len()) - 1] };
        match self {
            Spans::Breakpoints { read, writes } => {
                let mut billed = Billed { read: upto(*read), ..Billed::default() };
                let mut at = *read;
                for &(end, ttl) in writes {
                    let segment = upto(end) - upto(at);
                    match ttl {
                        Ttl::OneHour | Ttl::Day => billed.write_1h += segment,
                        Ttl::FiveMinutes => billed.write_5m += segment,
                    }
                    at = end;
                }
                billed.uncached = sum - upto(at);
                billed
            }
            Spans::Automatic { kept: false, .. } => Billed { uncached: sum, ..Billed::default() },
            Spans::Automatic { shared, min_tokens, step, .. } => {
                let step = (*step).max(1) as f64;
                let mut read = (upto(*shared) / step).floor() * step;
                if read < *min_tokens as f64 {
                    read = 0.0;
                }
                Billed { read, write_5m: sum - read, ..Billed::default() }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANTHROPIC: CacheRules = CacheRules::Breakpoints { min_tokens: 1024 };

    /// Blocks of `tokens` each, keyed by `prefix` (the same prefix gives the same keys), the
    /// breakpoints at `marks`.
    fn blocks(prefix: u64, sizes: &[f64], marks: &[(usize, Ttl)]) -> Vec<Block> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &tokens)| Block {
                key: prefix.wrapping_mul(1_000).wrapping_add(i as u64),
                tokens,
                breakpoint: marks.iter().find(|(at, _)| *at == i).map(|(_, t)| *t),
            })
            .collect()
    }

    const M5: Ttl = Ttl::FiveMinutes;

    #[test]
    fn a_breakpoint_writes_its_prefix_and_the_next_request_reads_it() {
        let mut cache = PromptCache::new(ANTHROPIC);
        let first = cache.bill(&blocks(1, &[2_000.0, 500.0, 300.0], &[(1, M5)]), 0);
        assert_eq!(first, Billed { read: 0.0, write_5m: 2_500.0, write_1h: 0.0, uncached: 300.0 });
        let second = cache.bill(&blocks(1, &[2_000.0, 500.0, 300.0, 400.0], &[(1, M5), (3, M5)]), 1_000);
        assert_eq!(second, Billed { read: 2_500.0, write_5m: 700.0, write_1h: 0.0, uncached: 0.0 });
        // Six minutes later the cache is cold: everything is written again.
        let cold = cache.bill(&blocks(1, &[2_000.0, 500.0, 300.0, 400.0], &[(3, M5)]), 1_000 + 6 * 60_000);
        assert_eq!(cold.read, 0.0);
        assert_eq!(cold.write_5m, 3_200.0);
    }

    #[test]
    fn only_a_prefix_written_at_a_breakpoint_is_read_and_only_within_the_lookback() {
        let mut cache = PromptCache::new(ANTHROPIC);
        // The first request marks only its system block (block 0) and its last block (5).
        cache.bill(&blocks(7, &[1_500.0, 100.0, 100.0, 100.0, 100.0, 100.0], &[(0, M5), (5, M5)]), 0);
        // The same first three blocks, then others: the prefix at block 2 was never written, so
        // only the system's is read.
        let mut other = blocks(7, &[1_500.0, 100.0, 100.0], &[]);
        other.extend(blocks(8, &[100.0, 100.0], &[(1, M5)]));
        let billed = cache.bill(&other, 10);
        assert_eq!(billed.read, 1_500.0);
        // A request growing 25 blocks past the last breakpoint reads nothing of it: the
        // lookback stops 20 blocks before its own breakpoint (the system's is still read).
        let mut sizes = vec![1_500.0, 100.0, 100.0, 100.0, 100.0, 100.0];
        sizes.extend(std::iter::repeat_n(50.0, 25));
        let far = cache.bill(&blocks(7, &sizes, &[(0, M5), (30, M5)]), 20);
        assert_eq!(far.read, 1_500.0);
        // With a breakpoint every 10 blocks the same growth is read.
        let mut cache = PromptCache::new(ANTHROPIC);
        cache.bill(&blocks(7, &sizes[..6], &[(0, M5), (5, M5)]), 0);
        let near = cache.bill(&blocks(7, &sizes, &[(0, M5), (15, M5), (25, M5), (30, M5)]), 20);
        assert_eq!(near.read, 2_000.0);
    }

    #[test]
    fn a_one_hour_breakpoint_writes_at_its_own_price_and_outlives_five_minutes() {
        let mut cache = PromptCache::new(ANTHROPIC);
        let first = cache.bill(&blocks(3, &[3_000.0, 800.0, 200.0], &[(0, Ttl::OneHour), (1, M5)]), 0);
        assert_eq!(first, Billed { read: 0.0, write_5m: 800.0, write_1h: 3_000.0, uncached: 200.0 });
        let later =
            cache.bill(&blocks(3, &[3_000.0, 800.0, 200.0], &[(0, Ttl::OneHour), (1, M5)]), 30 * 60_000);
        assert_eq!(later, Billed { read: 3_000.0, write_5m: 800.0, write_1h: 0.0, uncached: 200.0 });
    }

    #[test]
    fn a_prefix_below_the_minimum_is_neither_written_nor_read() {
        let mut cache = PromptCache::new(CacheRules::Breakpoints { min_tokens: 4096 });
        let small = blocks(5, &[1_000.0, 2_000.0], &[(0, M5), (1, M5)]);
        assert_eq!(cache.bill(&small, 0), Billed { uncached: 3_000.0, ..Billed::default() });
        assert_eq!(cache.bill(&small, 1).read, 0.0);
        // Once it has grown past the minimum, the prefix up to the breakpoint that reaches it is.
        let grown = blocks(5, &[1_000.0, 2_000.0, 2_000.0], &[(0, M5), (2, M5)]);
        assert_eq!(cache.bill(&grown, 2), Billed { write_5m: 5_000.0, ..Billed::default() });
    }

    #[test]
    fn an_automatic_cache_reads_in_steps_and_writes_at_no_surcharge() {
        let rules = CacheRules::Automatic { min_tokens: 1024, step: 128 };
        let mut cache = PromptCache::new(rules);
        assert_eq!(cache.bill(&blocks(9, &[600.0, 300.0], &[]), 0).uncached, 900.0, "below the minimum");
        let first = cache.bill(&blocks(9, &[600.0, 300.0, 500.0], &[]), 1);
        assert_eq!(first, Billed { write_5m: 1_400.0, ..Billed::default() });
        let second = cache.bill(&blocks(9, &[600.0, 300.0, 500.0, 700.0], &[]), 2);
        assert_eq!(second.read, 1_280.0, "1,400 shared, rounded down to 128s");
        assert_eq!(second.write_5m, 820.0);
        cache.set_retention(Ttl::Day);
        cache.bill(&blocks(9, &[600.0, 300.0, 500.0, 700.0], &[]), 3);
        assert!(cache.is_warm(3 + 60 * 60_000));
    }
}
