//! What the gateway knows of the models its clients ask for: each one's context window (the
//! threshold is a share of it) and its price of an input token (what a condensation saves is
//! priced by it). Both tables are matched by the longest prefix of the model id, lowercased and
//! without a router's `vendor/` prefix, so a dated release (`claude-sonnet-4-5-20250929`) and a
//! routed name (`anthropic/claude-opus-4-1`) find their family.
//!
//! The figures are the vendors' published ones; a model the table does not know gets
//! [`DEFAULT_WINDOW`] and no price (nothing is claimed as saved in money). The operator's own
//! figures (`--window MODEL=TOKENS`) win over the table.

use crate::profile::Prices;

use std::collections::BTreeMap;

/// The window of a model the table does not know: the smallest of today's common windows, so
/// an unknown model is condensed too early rather than too late.
pub const DEFAULT_WINDOW: usize = 128_000;

/// Context windows by model-id prefix, in tokens. Anthropic's 1M-token beta of Sonnet 4 needs a
/// header the client chooses; the table keeps the window every request gets.
const WINDOWS: &[(&str, usize)] = &[
    ("claude-", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-opus-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3", 200_000),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-5", 400_000),
    ("gpt-5-codex", 400_000),
    ("codex-mini", 200_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gpt-oss", 131_072),
];

/// Input, output, cache write, cache read: US dollars per million tokens.
type PriceRow = (f64, f64, f64, f64);

/// US dollars per million tokens, by model-id prefix: uncached input, output, input written to
/// the prompt cache, input read from it. Anthropic bills a write 1.25× and a read 0.1× the input
/// price; OpenAI caches without a surcharge and bills a read at a quarter to a tenth.
const PRICES: &[(&str, PriceRow)] = &[
    ("claude-opus-4", (15.0, 75.0, 18.75, 1.5)),
    ("claude-opus-4-5", (5.0, 25.0, 6.25, 0.5)),
    ("claude-sonnet-4", (3.0, 15.0, 3.75, 0.3)),
    ("claude-3-7-sonnet", (3.0, 15.0, 3.75, 0.3)),
    ("claude-3-5-sonnet", (3.0, 15.0, 3.75, 0.3)),
    ("claude-haiku-4", (1.0, 5.0, 1.25, 0.1)),
    ("claude-3-5-haiku", (0.8, 4.0, 1.0, 0.08)),
    ("gpt-4o", (2.5, 10.0, 2.5, 1.25)),
    ("gpt-4o-mini", (0.15, 0.6, 0.15, 0.075)),
    ("gpt-4.1", (2.0, 8.0, 2.0, 0.5)),
    ("gpt-4.1-mini", (0.4, 1.6, 0.4, 0.1)),
    ("gpt-4.1-nano", (0.1, 0.4, 0.1, 0.025)),
    ("gpt-5", (1.25, 10.0, 1.25, 0.125)),
    ("gpt-5-mini", (0.25, 2.0, 0.25, 0.025)),
    ("gpt-5-nano", (0.05, 0.4, 0.05, 0.005)),
    ("codex-mini", (1.5, 6.0, 1.5, 0.375)),
    ("o3", (2.0, 8.0, 2.0, 0.5)),
    ("o4-mini", (1.1, 4.4, 1.1, 0.275)),
];

/// A model id as the tables match it: lowercased, without a `vendor/` prefix.
fn bare(model: &str) -> String {
    let lower = model.trim().to_ascii_lowercase();
    lower.rsplit('/').next().unwrap_or_default().to_owned()
}

/// The value of the longest prefix of `model` in `table`.
fn longest<'t, T>(table: impl IntoIterator<Item = (&'t str, T)>, model: &str) -> Option<T> {
    table
        .into_iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(p, _)| p.len())
        .map(|(_, v)| v)
}

/// The context window of `model`: the operator's `overrides` first (the longest matching prefix,
/// matched against the id as sent and as the table reads it), then the table, else
/// [`DEFAULT_WINDOW`].
pub fn window_for(model: &str, overrides: &BTreeMap<String, usize>) -> usize {
    let name = bare(model);
    let lower = model.trim().to_ascii_lowercase();
    let own = overrides
        .iter()
        .filter(|(p, _)| {
            let p = p.to_ascii_lowercase();
            lower.starts_with(&p) || name.starts_with(&p)
        })
        .max_by_key(|(p, _)| p.len())
        .map(|(_, w)| *w);
    own.or_else(|| longest(WINDOWS.iter().copied(), &name)).unwrap_or(DEFAULT_WINDOW)
}

/// Every price of `model`, the cache's included; 0 for a model the table does not price.
pub fn model_prices(model: &str) -> Prices {
    longest(PRICES.iter().copied(), &bare(model)).map_or_else(
        Prices::default,
        |(input, output, cache_write, cache_read)| Prices { input, output, cache_write, cache_read },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_prices_follow_each_vendor() {
        let sonnet = model_prices("claude-sonnet-4-5-20250929");
        assert_eq!((sonnet.cache_write, sonnet.cache_read), (3.75, 0.3));
        let gpt = model_prices("openai/gpt-4.1");
        assert_eq!((gpt.cache_write, gpt.cache_read), (2.0, 0.5));
        assert_eq!(model_prices("llama3"), Prices::default());
    }

    #[test]
    fn the_common_models_have_their_windows() {
        let none = BTreeMap::new();
        let cases = [
            ("claude-sonnet-4-5-20250929", 200_000),
            ("claude-opus-4-1", 200_000),
            ("claude-3-5-haiku-latest", 200_000),
            ("anthropic/claude-sonnet-4", 200_000),
            ("gpt-4o-2024-08-06", 128_000),
            ("gpt-4.1-mini", 1_047_576),
            ("gpt-5-codex", 400_000),
            ("gpt-5.1", 400_000),
            ("o3", 200_000),
            ("o4-mini", 200_000),
            ("GPT-4", 8_192),
            ("qwen2.5-coder", DEFAULT_WINDOW),
            ("", DEFAULT_WINDOW),
        ];
        for (model, window) in cases {
            assert_eq!(window_for(model, &none), window, "{model}");
        }
    }

    #[test]
    fn the_operators_windows_win_and_the_longest_prefix_among_them() {
        let overrides: BTreeMap<String, usize> = [
            ("claude-".to_owned(), 50_000),
            ("claude-sonnet-4-5".to_owned(), 20_000),
            ("my-model".into(), 8_000),
        ]
        .into_iter()
        .collect();
        assert_eq!(window_for("claude-sonnet-4-5-20250929", &overrides), 20_000);
        assert_eq!(window_for("claude-opus-4-1", &overrides), 50_000);
        assert_eq!(window_for("openrouter/my-model", &overrides), 8_000);
        assert_eq!(window_for("gpt-4o", &overrides), 128_000);
    }

    #[test]
    fn prices_are_per_token_and_unknown_models_cost_nothing() {
        let io = |m: &str| (model_prices(m).input, model_prices(m).output);
        assert_eq!(io("claude-sonnet-4-5").0, 3.0);
        assert_eq!(io("claude-opus-4-5-20251101").0, 5.0);
        assert_eq!(io("claude-opus-4-1").0, 15.0);
        assert_eq!(io("gpt-4o-mini").0, 0.15);
        assert_eq!(io("gpt-5-codex"), (1.25, 10.0));
        assert_eq!(io("claude-haiku-4-5"), (1.0, 5.0));
        assert_eq!(io("llama3"), (0.0, 0.0));
    }
}
