//! The context window of the models the gateway's clients ask for (the threshold is a share of
//! it), matched by the longest prefix of the model id, lowercased and without a router's
//! `vendor/` prefix, so a dated release (`claude-sonnet-4-5-20250929`) and a routed name
//! (`anthropic/claude-opus-4-1`) find their family. A model the table does not know gets
//! [`DEFAULT_WINDOW`], and the operator's own figures (`--window MODEL=TOKENS`) win over the
//! table. A window guessed from a family errs small, which condenses early rather than late;
//! prices are never guessed (they are by exact id, in [`crate::billing`]).

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
    // Google's Gemini API: 1,048,576 input tokens from 1.5 Flash on (1.5 Pro: 2M); 1.0 Pro and
    // its alias `gemini-pro` had 32k.
    ("gemini-", 1_048_576),
    ("gemini-1.0", 32_760),
    ("gemini-pro", 32_760),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-2.", 1_048_576),
    ("gemini-3", 1_048_576),
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

#[cfg(test)]
mod tests {
    use super::*;

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
            ("gemini-2.5-pro", 1_048_576),
            ("models/gemini-2.5-flash", 1_048_576),
            ("gemini-3-pro-preview", 1_048_576),
            ("gemini-1.5-pro-002", 2_097_152),
            ("gemini-pro", 32_760),
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
}
