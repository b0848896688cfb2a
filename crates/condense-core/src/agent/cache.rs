//! The prompt cache in the decision to condense (issue 29): what a condensation costs now (the
//! summary call, and the cache written again from the first message it changes) against what it
//! saves (the tokens it removes are not read again on every later turn). The chat weighs with it,
//! and so does the gateway (issue 40); the provider's cache itself is modelled in
//! [`crate::billing`].
//!
//! The `cache-aware` policy ([`weigh`]) condenses when the estimated saving over the turns expected
//! pays for the cost, and not before the context has grown by the economic step (the size at which
//! condensing again costs least per turn: the square root of twice the growth per turn times the
//! one-off cost over the read price, as in an economic order quantity), so that small condensations
//! are grouped into fewer, larger ones. It always condenses at the limit it is given. A cache that
//! went cold (no request within its lifetime) makes condensing nearly free: the next request writes
//! the whole prompt either way.

use serde::{Deserialize, Serialize};

use crate::model::Message;
use crate::profile::Prices;
use crate::tokens::TokenCounter;

/// How long a provider keeps a prompt prefix after its last use: Anthropic's default lifetime,
/// which OpenAI's in-memory cache roughly matches.
pub const CACHE_LIFETIME_MS: i64 = 5 * 60 * 1000;
/// The fewest turns a session is expected to go on for: a session that has run `t` turns is
/// expected to run `t / 2` more (half of Lindy's estimate, whose median is `t`: a saving counted
/// over turns that never come is a loss), and at least these.
pub const MIN_TURNS_LEFT: usize = 4;
/// The most turns a saving is counted over.
pub const MAX_TURNS_LEFT: usize = 100;
/// The summary's tokens before a first summary was written (a sectioned summary's usual size).
pub const EXPECTED_SUMMARY_TOKENS: usize = 1_500;
/// The share of the context, in percent, a first condensation is expected to leave.
pub const EXPECTED_AFTER_PERCENT: usize = 30;

/// What the policy knows before an automatic condensation. Tokens are the request's.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Weighing {
    /// The chat model's prices.
    pub prices: Prices,
    /// Tokens of the request as it would be sent now.
    pub context: usize,
    /// Of them, the prefix a warm cache holds (0 when the cache went cold).
    pub cached: usize,
    /// Tokens the request is expected to have after the condensation.
    pub after: usize,
    /// Tokens before the first message the condensation changes (the system prompt, the kept
    /// first message): read again when the cache is warm.
    pub kept_prefix: usize,
    /// Tokens the summary call sends (0 for a provider without an LLM).
    pub summary_input: usize,
    /// Of them, read from the cache (a summary built on the chat's conversation).
    pub summary_cached: usize,
    /// Tokens the summary call writes.
    pub summary_output: usize,
    /// Tokens a turn adds on average.
    pub growth: usize,
    /// Turns the session is expected to go on for.
    pub turns_left: usize,
    /// The most tokens a request may have: condensing is forced above it.
    pub limit: usize,
}

/// The policy's verdict, with the figures a row and a preview show.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CostEstimate {
    /// US dollars condensing costs now, beyond what the next request costs anyway (negative when
    /// it costs less, as after the cache went cold).
    pub cost_now: f64,
    /// US dollars it saves over `turns` turns.
    pub saving: f64,
    /// The turns the saving is counted over.
    pub turns: usize,
    /// The context, in tokens, from which condensing is worth it.
    pub trigger: usize,
    /// Whether to condense now.
    pub condense: bool,
}

impl CostEstimate {
    /// "costs $X now · saves ≈$Y over the next N turns", as rows and previews say it.
    pub fn describe(&self) -> String {
        format!(
            "costs ${:.4} now · saves ≈${:.4} over the next {} turns",
            self.cost_now.max(0.0),
            self.saving,
            self.turns
        )
    }
}

/// Dollars of `tokens` at `per_mtok`.
fn usd(tokens: usize, per_mtok: f64) -> f64 {
    tokens as f64 * per_mtok / 1_000_000.0
}

/// Weighs an automatic condensation (see the module's documentation).
pub fn weigh(w: &Weighing) -> CostEstimate {
    let p = w.prices;
    let after = w.after.min(w.context);
    let kept = w.kept_prefix.min(after);
    let summary = usd(w.summary_input.saturating_sub(w.summary_cached), p.input)
        + usd(w.summary_cached, p.cache_read)
        + usd(w.summary_output, p.output);
    let warm = w.cached > 0;
    let next_condensed =
        usd(kept, if warm { p.cache_read } else { p.cache_write }) + usd(after - kept, p.cache_write);
    let next_as_is =
        usd(w.cached.min(w.context), p.cache_read) + usd(w.context.saturating_sub(w.cached), p.cache_write);
    let cost_now = summary + next_condensed - next_as_is;
    let removed = w.context - after;
    // The turns the saving lasts: those expected, and no more than until the context as it is
    // would reach the limit (where it is condensed anyway).
    let growth = w.growth.max(1);
    let to_limit = w.limit.saturating_sub(w.context) / growth + 1;
    let turns = w.turns_left.clamp(1, MAX_TURNS_LEFT).min(to_limit);
    let saving = usd(removed, p.cache_read) * turns as f64;
    // The economic step: one-off cost K against the read cost of the growth it saves.
    let read_per_token = p.cache_read / 1_000_000.0;
    let step = if read_per_token > 0.0 {
        (2.0 * growth as f64 * cost_now.max(0.0) / read_per_token).sqrt() as usize
    } else {
        usize::MAX
    };
    let trigger = after.saturating_add(step).min(w.limit);
    let condense = w.context >= w.limit || (w.context >= trigger && saving >= cost_now && removed > 0);
    CostEstimate { cost_now, saving, turns, trigger, condense }
}

/// A chat as the policy reads it before a request.
#[derive(Clone, Copy)]
pub struct Session<'a> {
    /// The chat model's prices.
    pub prices: Prices,
    /// The system prompt.
    pub system: Option<&'a str>,
    /// The API view the request would send.
    pub view: &'a [&'a Message],
    /// How many of its messages the last request sent, when that request is known and the cache
    /// still holds it (sent within the cache lifetime).
    pub warm_prefix: Option<usize>,
    /// Assistant answers so far.
    pub turns: usize,
    /// The last condensation: the tokens it left, its summary's tokens, and the answers since.
    pub last: Option<(usize, usize, usize)>,
    /// Whether the provider calls an LLM.
    pub needs_llm: bool,
    /// Whether its summary is built on the chat's conversation (the chat model condenses).
    pub summary_from_cache: bool,
    /// The most tokens a request may have before condensing is forced.
    pub limit: usize,
}

impl Session<'_> {
    /// What [`weigh`] needs, estimated: the context counted, the cached prefix counted, what the
    /// condensation leaves (the last one's result, else [`EXPECTED_AFTER_PERCENT`]), the summary's
    /// size (the last one's, else [`EXPECTED_SUMMARY_TOKENS`]), the growth per answer since the
    /// last condensation (else since the start).
    pub fn weighing(&self, tokens: &dyn TokenCounter) -> Weighing {
        let context = tokens.count_request(self.system, self.view);
        let cached = self
            .warm_prefix
            .map_or(0, |n| tokens.count_request(self.system, &self.view[..n.min(self.view.len())]));
        let system = tokens.count_request(self.system, &[]);
        let first = self.view.first().map_or(0, |m| tokens.count_message(m));
        let (after, summary, growth) = match self.last {
            Some((after, summary, since)) => (after, summary, context.saturating_sub(after) / since.max(1)),
            None => {
                (context * EXPECTED_AFTER_PERCENT / 100, EXPECTED_SUMMARY_TOKENS, context / self.turns.max(1))
            }
        };
        let llm = |n: usize| if self.needs_llm { n } else { 0 };
        Weighing {
            prices: self.prices,
            context,
            cached,
            after,
            kept_prefix: system + first,
            summary_input: llm(context),
            summary_cached: if self.summary_from_cache { llm(cached) } else { 0 },
            summary_output: llm(summary),
            growth,
            turns_left: turns_left(self.turns),
            limit: self.limit,
        }
    }
}

/// Turns a session that has run `turns_so_far` is expected to go on for.
pub fn turns_left(turns_so_far: usize) -> usize {
    (turns_so_far / 2).clamp(MIN_TURNS_LEFT, MAX_TURNS_LEFT)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Anthropic's Sonnet prices: $3 in, $15 out, writes 1.25×, reads 0.1×.
    const SONNET: Prices = Prices { input: 3.0, output: 15.0, cache_write: 3.75, cache_read: 0.3 };

    fn weighing(context: usize) -> Weighing {
        Weighing {
            prices: SONNET,
            context,
            cached: context - 2_000,
            after: 8_000,
            kept_prefix: 3_000,
            summary_input: context + 500,
            summary_cached: context - 2_000,
            summary_output: 1_500,
            growth: 2_000,
            turns_left: 40,
            limit: 150_000,
        }
    }

    #[test]
    fn the_cost_now_is_the_summary_and_the_rewrite_less_the_next_request_as_is() {
        let e = weigh(&weighing(60_000));
        let summary = usd(2_500, 3.0) + usd(58_000, 0.3) + usd(1_500, 15.0);
        let condensed = usd(3_000, 0.3) + usd(5_000, 3.75);
        let as_is = usd(58_000, 0.3) + usd(2_000, 3.75);
        assert!((e.cost_now - (summary + condensed - as_is)).abs() < 1e-12);
        assert!((e.saving - usd(52_000, 0.3) * 40.0).abs() < 1e-12);
        assert_eq!(e.turns, 40);
        assert!(e.condense, "{e:?}");
        assert!(e.describe().starts_with("costs $0.0"), "{}", e.describe());
    }

    #[test]
    fn small_condensations_wait_for_the_economic_step_and_the_limit_always_condenses() {
        let small = weigh(&weighing(12_000));
        assert!(!small.condense, "4,000 tokens removed do not pay for the rewrite: {small:?}");
        assert!(small.trigger > 12_000 && small.trigger < 150_000, "{small:?}");
        let at_trigger = weigh(&weighing(small.trigger + 1_000));
        assert!(at_trigger.condense, "{at_trigger:?}");
        // A session expected to end soon does not pay back; at the limit it condenses anyway.
        let ending = Weighing { turns_left: 1, ..weighing(60_000) };
        assert!(!weigh(&ending).condense);
        assert!(weigh(&Weighing { turns_left: 1, ..weighing(150_000) }).condense);
    }

    #[test]
    fn a_cold_cache_makes_condensing_cheaper() {
        let warm = weigh(&weighing(30_000));
        let cold = weigh(&Weighing { cached: 0, summary_cached: 0, ..weighing(30_000) });
        assert!(cold.cost_now < warm.cost_now, "{cold:?} vs {warm:?}");
        assert!(cold.trigger <= warm.trigger);
    }

    #[test]
    fn without_prices_nothing_pays_until_the_limit() {
        let free = Weighing { prices: Prices::default(), ..weighing(60_000) };
        assert!(!weigh(&free).condense);
        assert!(weigh(&Weighing { context: 150_000, ..free }).condense);
    }
}
