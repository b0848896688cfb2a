//! The published prices of the models the gateway meets, by exact model id, with their cache
//! rules. A model id matches a row when it is the row's id, or the row's id followed by a dated
//! snapshot (`-20250929`, `-2025-08-07`) or `-latest`, once a router's `vendor/` prefix, a cloud's
//! `@date` or `-v1:0` and a `[1m]` suffix are dropped; the longest matching id wins. Anything
//! else is a model whose price is unknown: `None`, never a guess from its family
//! (`claude-opus-4` does not price `claude-opus-4-6`).
//!
//! Sources, read in November 2026 (US dollars per million tokens):
//! - Anthropic: <https://platform.claude.com/docs/en/about-claude/pricing> ("Model pricing": base
//!   input, 5-minute and 1-hour cache writes, cache hits, output; "Long context pricing" for the
//!   1M-token beta of Sonnet 4 and 4.5 above 200k prompt tokens) and each model's overview page
//!   (`/docs/en/models/opus-4-6/overview`: $5 / $25; `sonnet-5-5`: the cache-read cut to $0.10 of
//!   2026-10-07; `haiku-5-5`: the rates above 100k prompt tokens). A 5-minute write is 1.25× the
//!   input price, a 1-hour write 2×, a hit 0.1× (0.05× and 0.025× where the page says so).
//!   Minimum cacheable lengths: <https://platform.claude.com/docs/en/build-with-claude/prompt-caching>
//!   (as quoted in anthropics/anthropic-sdk-python#1194: 4,096 for Opus 4.6 and 4.5 and Haiku
//!   4.5, 1,024 for Sonnet 4.6, 4.5, 4, 3.7 and Opus 4.1, 4, 2,048 for Haiku 3.5 and 3) and
//!   LiteLLM's table of 2026-10-07 (512 for Opus 5, Fable 5, Mythos 5; 1,024 for Sonnet 5 and
//!   Opus 4.8; 4,096 for Opus 4.7). Models whose minimum no source states take their
//!   predecessor's, which is said beside them.
//! - OpenAI: <https://developers.openai.com/api/docs/pricing> (input, cached input, output) and
//!   <https://developers.openai.com/api/docs/guides/prompt-caching>: automatic for prompts of
//!   1,024 tokens or more, hits in steps of 128 tokens, no charge for writing before the GPT-5.6
//!   family (whose writes cost 1.25× and which is not in this table: no first-party page for its
//!   prices was found).
//! - Google: <https://ai.google.dev/gemini-api/docs/pricing> (implicit caching, no write charge;
//!   the rates above 200k prompt tokens), minimum 1,024 tokens.

use serde::{Deserialize, Serialize};

use super::billed::Billed;
use crate::profile::Prices;

/// US dollars per million tokens, by what the tokens are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rates {
    /// Input neither read from nor written to the cache.
    pub input: f64,
    /// The answer.
    pub output: f64,
    /// Input written to the cache with a 5-minute lifetime (Anthropic 1.25× the input price;
    /// OpenAI and Gemini the input price: they do not charge for writing).
    pub cache_write_5m: f64,
    /// Input written with a 1-hour lifetime (Anthropic 2× the input price).
    pub cache_write_1h: f64,
    /// Input read from the cache.
    pub cache_read: f64,
}

impl Rates {
    /// US dollars of `billed` (prompt tokens) and `output` tokens.
    pub fn cost(&self, billed: &Billed, output: f64) -> f64 {
        (billed.uncached * self.input
            + billed.write_5m * self.cache_write_5m
            + billed.write_1h * self.cache_write_1h
            + billed.read * self.cache_read
            + output * self.output)
            / 1_000_000.0
    }
}

/// How a provider's prompt cache keeps and finds prefixes (see [`super::cache`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CacheRules {
    /// Anthropic: a prefix is written only at a breakpoint (`cache_control`) the request carries,
    /// when it has at least `min_tokens`, and read when a later request's breakpoint finds it
    /// within its lookback.
    Breakpoints {
        /// The shortest prefix the cache keeps.
        min_tokens: usize,
    },
    /// OpenAI, Gemini: every prompt of at least `min_tokens` is kept; a later one reads the
    /// longest prefix it shares with one kept, rounded down to a multiple of `step`.
    Automatic {
        /// The shortest prompt the cache keeps.
        min_tokens: usize,
        /// Hits come in multiples of this many tokens.
        step: usize,
    },
}

/// A model's prices and cache rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelPrices {
    /// The table's id that matched.
    pub id: &'static str,
    /// The rates of a prompt up to the long-prompt threshold (every prompt, when there is none).
    pub rates: Rates,
    /// Above this many prompt tokens (input, cache reads and writes together), every token of the
    /// request is billed at these rates instead.
    pub long: Option<(u64, Rates)>,
    /// Its provider's prompt cache.
    pub cache: CacheRules,
}

impl ModelPrices {
    /// The rates a request of `prompt_tokens` is billed at.
    pub fn rates_for(&self, prompt_tokens: f64) -> &Rates {
        match &self.long {
            Some((above, long)) if prompt_tokens > *above as f64 => long,
            _ => &self.rates,
        }
    }

    /// US dollars of one request's `billed` prompt and `output` tokens.
    pub fn cost(&self, billed: &Billed, output: f64) -> f64 {
        self.rates_for(billed.total()).cost(billed, output)
    }

    /// The rates as the chat's profile carries them (5-minute writes), for a prompt of
    /// `prompt_tokens`.
    pub fn prices(&self, prompt_tokens: f64) -> Prices {
        let r = self.rates_for(prompt_tokens);
        Prices { input: r.input, output: r.output, cache_write: r.cache_write_5m, cache_read: r.cache_read }
    }
}

/// Anthropic's rates from the input price and the hit multiplier: writes 1.25× (5 minutes) and
/// 2× (1 hour).
const fn anthropic(input: f64, output: f64, read: f64) -> Rates {
    Rates { input, output, cache_write_5m: input * 1.25, cache_write_1h: input * 2.0, cache_read: read }
}

/// OpenAI's and Gemini's: a write costs what an uncached token does, whatever its lifetime.
const fn automatic(input: f64, output: f64, read: f64) -> Rates {
    Rates { input, output, cache_write_5m: input, cache_write_1h: input, cache_read: read }
}

const fn breakpoints(min_tokens: usize) -> CacheRules {
    CacheRules::Breakpoints { min_tokens }
}

/// OpenAI: 1,024 tokens, steps of 128.
const OPENAI: CacheRules = CacheRules::Automatic { min_tokens: 1024, step: 128 };
/// Gemini's implicit caching: 1,024 tokens; hits as counted (no stated step).
const GEMINI: CacheRules = CacheRules::Automatic { min_tokens: 1024, step: 1 };

const fn row(id: &'static str, rates: Rates, cache: CacheRules) -> ModelPrices {
    ModelPrices { id, rates, long: None, cache }
}

const fn tiered(id: &'static str, rates: Rates, above: u64, long: Rates, cache: CacheRules) -> ModelPrices {
    ModelPrices { id, rates, long: Some((above, long)), cache }
}

/// Sonnet 4 and 4.5 above 200k prompt tokens (the 1M-token beta): $6 / $22.50.
const SONNET_LONG: Rates = anthropic(6.0, 22.5, 0.6);

/// The table (see the module's documentation for the sources).
const TABLE: &[ModelPrices] = &[
    // Anthropic.
    row("claude-fable-5-1", anthropic(10.0, 50.0, 0.25), breakpoints(512)),
    row("claude-fable-5", anthropic(10.0, 50.0, 1.0), breakpoints(512)),
    row("claude-mythos-5-1", anthropic(10.0, 50.0, 0.25), breakpoints(512)),
    row("claude-mythos-5", anthropic(10.0, 50.0, 1.0), breakpoints(512)),
    // Opus 5.5: 0.05× hits; its minimum is not stated, Opus 5's taken.
    row("claude-opus-5-5", anthropic(4.0, 20.0, 0.2), breakpoints(512)),
    row("claude-opus-5", anthropic(5.0, 25.0, 0.5), breakpoints(512)),
    row("claude-opus-4-8", anthropic(5.0, 25.0, 0.5), breakpoints(1024)),
    row("claude-opus-4-7", anthropic(5.0, 25.0, 0.5), breakpoints(4096)),
    row("claude-opus-4-6", anthropic(5.0, 25.0, 0.5), breakpoints(4096)),
    row("claude-opus-4-5", anthropic(5.0, 25.0, 0.5), breakpoints(4096)),
    row("claude-opus-4-1", anthropic(15.0, 75.0, 1.5), breakpoints(1024)),
    row("claude-opus-4-0", anthropic(15.0, 75.0, 1.5), breakpoints(1024)),
    row("claude-opus-4", anthropic(15.0, 75.0, 1.5), breakpoints(1024)),
    row("claude-3-opus", anthropic(15.0, 75.0, 1.5), breakpoints(1024)),
    // Sonnet 5.5: 0.05× hits since 2026-10-07; its minimum is not stated, Sonnet 5's taken.
    row("claude-sonnet-5-5", anthropic(2.0, 10.0, 0.1), breakpoints(1024)),
    row("claude-sonnet-5", anthropic(2.0, 10.0, 0.2), breakpoints(1024)),
    row("claude-sonnet-4-6", anthropic(3.0, 15.0, 0.3), breakpoints(1024)),
    tiered("claude-sonnet-4-5", anthropic(3.0, 15.0, 0.3), 200_000, SONNET_LONG, breakpoints(1024)),
    tiered("claude-sonnet-4-0", anthropic(3.0, 15.0, 0.3), 200_000, SONNET_LONG, breakpoints(1024)),
    tiered("claude-sonnet-4", anthropic(3.0, 15.0, 0.3), 200_000, SONNET_LONG, breakpoints(1024)),
    row("claude-3-7-sonnet", anthropic(3.0, 15.0, 0.3), breakpoints(1024)),
    row("claude-3-5-sonnet", anthropic(3.0, 15.0, 0.3), breakpoints(1024)),
    // Haiku 5.5: $0.10 / $0.50 up to 100k prompt tokens, $0.50 / $2.50 above; minimum not
    // stated, Haiku 4.5's taken.
    tiered(
        "claude-haiku-5-5",
        anthropic(0.1, 0.5, 0.01),
        100_000,
        anthropic(0.5, 2.5, 0.05),
        breakpoints(4096),
    ),
    row("claude-haiku-4-5", anthropic(1.0, 5.0, 0.1), breakpoints(4096)),
    row("claude-3-5-haiku", anthropic(0.8, 4.0, 0.08), breakpoints(2048)),
    row("claude-3-haiku", anthropic(0.25, 1.25, 0.03), breakpoints(2048)),
    // OpenAI.
    row("gpt-5.5", automatic(5.0, 30.0, 0.5), OPENAI),
    row("gpt-5.4", automatic(2.5, 15.0, 0.25), OPENAI),
    row("gpt-5.4-mini", automatic(0.75, 4.5, 0.075), OPENAI),
    row("gpt-5.4-nano", automatic(0.2, 1.25, 0.02), OPENAI),
    row("gpt-5.2", automatic(1.75, 14.0, 0.175), OPENAI),
    row("gpt-5.2-codex", automatic(1.75, 14.0, 0.175), OPENAI),
    row("gpt-5.1", automatic(1.25, 10.0, 0.125), OPENAI),
    row("gpt-5.1-codex", automatic(1.25, 10.0, 0.125), OPENAI),
    row("gpt-5.1-codex-mini", automatic(0.25, 2.0, 0.025), OPENAI),
    row("gpt-5", automatic(1.25, 10.0, 0.125), OPENAI),
    row("gpt-5-codex", automatic(1.25, 10.0, 0.125), OPENAI),
    row("gpt-5-mini", automatic(0.25, 2.0, 0.025), OPENAI),
    row("gpt-5-nano", automatic(0.05, 0.4, 0.005), OPENAI),
    row("gpt-4.1", automatic(2.0, 8.0, 0.5), OPENAI),
    row("gpt-4.1-mini", automatic(0.4, 1.6, 0.1), OPENAI),
    row("gpt-4.1-nano", automatic(0.1, 0.4, 0.025), OPENAI),
    row("gpt-4o", automatic(2.5, 10.0, 1.25), OPENAI),
    row("gpt-4o-mini", automatic(0.15, 0.6, 0.075), OPENAI),
    row("o3", automatic(2.0, 8.0, 0.5), OPENAI),
    row("o3-mini", automatic(1.1, 4.4, 0.55), OPENAI),
    row("o4-mini", automatic(1.1, 4.4, 0.275), OPENAI),
    row("o1", automatic(15.0, 60.0, 7.5), OPENAI),
    row("codex-mini-latest", automatic(1.5, 6.0, 0.375), OPENAI),
    // Google.
    tiered("gemini-3-pro-preview", automatic(2.0, 12.0, 0.2), 200_000, automatic(4.0, 18.0, 0.4), GEMINI),
    tiered("gemini-2.5-pro", automatic(1.25, 10.0, 0.125), 200_000, automatic(2.5, 15.0, 0.25), GEMINI),
    row("gemini-2.5-flash", automatic(0.3, 2.5, 0.03), GEMINI),
    row("gemini-2.5-flash-lite", automatic(0.1, 0.4, 0.01), GEMINI),
];

/// `rest` says which snapshot of a model: a date (`20250929`, `2025-08-07`) or `latest`.
fn is_snapshot(rest: &str) -> bool {
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if rest == "latest" || digits(rest, 8) {
        return true;
    }
    let parts: Vec<&str> = rest.split('-').collect();
    matches!(parts.as_slice(), [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2))
}

/// A model id as the table reads it: lowercased, without a router's `vendor/`, a cloud's
/// `anthropic.` (Bedrock, with its region) or `@date` (Vertex), a `-v1:0` version or a `[1m]`.
fn bare(model: &str) -> String {
    let mut name = model.trim().to_ascii_lowercase();
    if let Some(at) = name.rfind('/') {
        name = name[at + 1..].to_owned();
    }
    if let Some(at) = name.find("anthropic.") {
        name = name[at + "anthropic.".len()..].to_owned();
    }
    if let Some(at) = name.find('[') {
        name.truncate(at);
    }
    if let Some(at) = name.find('@') {
        name.truncate(at);
    }
    if let Some(at) = name.rfind("-v")
        && name[at + 2..].split(':').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        name.truncate(at);
    }
    name
}

/// The prices of `model` (see the module's documentation); `None`: its price is unknown.
pub fn model_prices(model: &str) -> Option<ModelPrices> {
    let name = bare(model);
    TABLE
        .iter()
        .filter(|row| {
            name == row.id
                || name.strip_prefix(row.id).and_then(|r| r.strip_prefix('-')).is_some_and(is_snapshot)
        })
        .max_by_key(|row| row.id.len())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(model: &str) -> Option<(f64, f64)> {
        model_prices(model).map(|p| (p.rates.input, p.rates.output))
    }

    #[test]
    fn opus_4_6_is_priced_as_published_not_as_opus_4() {
        let p = model_prices("claude-opus-4-6").unwrap();
        assert_eq!(p.id, "claude-opus-4-6");
        assert_eq!((p.rates.input, p.rates.output), (5.0, 25.0));
        assert_eq!((p.rates.cache_write_5m, p.rates.cache_write_1h, p.rates.cache_read), (6.25, 10.0, 0.5));
        assert_eq!(p.cache, CacheRules::Breakpoints { min_tokens: 4096 });
        assert_eq!(io("claude-opus-4-1-20250805"), Some((15.0, 75.0)));
        assert_eq!(io("claude-opus-4-20250514"), Some((15.0, 75.0)));
        assert_eq!(io("claude-opus-4-5-20251101"), Some((5.0, 25.0)));
    }

    #[test]
    fn a_one_hour_write_costs_twice_the_input_and_a_five_minute_one_a_quarter_more() {
        for model in ["claude-opus-4-6", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-sonnet-5-5"] {
            let r = model_prices(model).unwrap().rates;
            assert_eq!(r.cache_write_1h, 2.0 * r.input, "{model}");
            assert_eq!(r.cache_write_5m, 1.25 * r.input, "{model}");
        }
        let opus = model_prices("claude-opus-4-6").unwrap();
        let billed = Billed { write_1h: 1_000_000.0, ..Billed::default() };
        assert_eq!(opus.cost(&billed, 0.0), 10.0);
        let billed = Billed { write_5m: 1_000_000.0, ..Billed::default() };
        assert_eq!(opus.cost(&billed, 0.0), 6.25);
        // OpenAI does not charge for a write.
        let gpt = model_prices("gpt-5.1").unwrap().rates;
        assert_eq!((gpt.cache_write_5m, gpt.cache_write_1h), (gpt.input, gpt.input));
    }

    #[test]
    fn dated_routed_and_cloud_ids_find_their_row_and_nothing_else_is_guessed() {
        let cases = [
            ("claude-sonnet-4-5-20250929", Some("claude-sonnet-4-5")),
            ("anthropic/claude-opus-4-6", Some("claude-opus-4-6")),
            ("us.anthropic.claude-sonnet-4-20250514-v1:0", Some("claude-sonnet-4")),
            ("claude-opus-4-6@20260205", Some("claude-opus-4-6")),
            ("claude-sonnet-4-6[1m]", Some("claude-sonnet-4-6")),
            ("CLAUDE-3-5-HAIKU-LATEST", Some("claude-3-5-haiku")),
            ("gpt-4o-2024-08-06", Some("gpt-4o")),
            ("gpt-4o-mini", Some("gpt-4o-mini")),
            ("openai/gpt-4.1", Some("gpt-4.1")),
            ("gpt-5-codex", Some("gpt-5-codex")),
            ("o3-2025-04-16", Some("o3")),
            ("gemini-2.5-pro", Some("gemini-2.5-pro")),
            // Unknown: a later release, a family name, a local model.
            ("claude-opus-4-9", None),
            ("claude-opus", None),
            ("claude-sonnet-4-5-thinking", None),
            ("gpt-5.6-sol", None),
            ("gpt-5-turbo", None),
            ("llama3", None),
            ("", None),
        ];
        for (model, id) in cases {
            assert_eq!(model_prices(model).map(|p| p.id), id, "{model}");
        }
    }

    #[test]
    fn a_long_prompt_is_billed_whole_at_the_long_rates() {
        let sonnet = model_prices("claude-sonnet-4-5").unwrap();
        let short = Billed { uncached: 200_000.0, ..Billed::default() };
        assert_eq!(sonnet.cost(&short, 0.0), 0.6);
        let long = Billed { uncached: 100_000.0, read: 100_001.0, ..Billed::default() };
        assert!((sonnet.cost(&long, 1_000.0) - (0.6 + 0.0600006 + 0.0225)).abs() < 1e-9);
        let haiku = model_prices("claude-haiku-5-5").unwrap();
        assert_eq!(haiku.rates_for(100_001.0).input, 0.5);
        assert_eq!(haiku.rates_for(99_999.0).input, 0.1);
    }
}
