//! What the wire dialects and the LLM layer both need to know about a model: LLM profiles (a named
//! model endpoint with its limits and prices), the generation parameters of a phase, what a
//! provider can do, and the usage a server reports. The API key is a reference (a SecretStorage id
//! in the extension, an environment variable in the CLI), never the key.

use serde::{Deserialize, Serialize};

use crate::error::{ErrorKind, LlmError};
use crate::limits::{check_profile_threshold, default_max_output_for};

/// Which client talks to the profile's endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LlmKind {
    /// OpenAI Chat Completions at api.openai.com (or a proxy of it).
    Openai,
    /// Anthropic Messages at api.anthropic.com.
    Anthropic,
    /// Any server speaking the OpenAI Chat Completions format: Ollama, LM Studio, llama.cpp
    /// server, vLLM, OpenRouter.
    OpenaiCompatible,
    /// A CLI agent (Claude Code, Codex, Gemini CLI, or any tool described in YAML) run as a
    /// program: the profile's `tool` names its entry.
    Cli,
    /// No API: prompts are copied to any chat by hand and the answer pasted back.
    Manual,
}

/// Whether a kind of profile needs an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyNeed {
    /// It cannot be used without one.
    Required,
    /// It may take one.
    Optional,
    /// It takes none (no API, or a program with its own login).
    None,
}

impl LlmKind {
    /// Every kind, in the order settings panels list them.
    pub const ALL: [LlmKind; 5] =
        [LlmKind::Openai, LlmKind::Anthropic, LlmKind::OpenaiCompatible, LlmKind::Cli, LlmKind::Manual];

    /// The context window a new profile of this kind starts with, in tokens (a settings panel
    /// edits it later; a CLI tool's entry may name its own).
    pub fn default_context_window(self) -> usize {
        match self {
            LlmKind::Openai | LlmKind::Manual => 128_000,
            LlmKind::Anthropic | LlmKind::Cli => 200_000,
            // A local server's model: small until the user says otherwise.
            LlmKind::OpenaiCompatible => 8_192,
        }
    }

    /// Whether a profile of this kind needs an API key before it can be used.
    pub fn key_need(self) -> KeyNeed {
        match self {
            LlmKind::Openai | LlmKind::Anthropic => KeyNeed::Required,
            // Local servers take none; hosted ones behind the same API do.
            LlmKind::OpenaiCompatible => KeyNeed::Optional,
            LlmKind::Cli | LlmKind::Manual => KeyNeed::None,
        }
    }

    /// The default base URL, where there is one.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            LlmKind::Openai => Some("https://api.openai.com/v1"),
            LlmKind::Anthropic => Some("https://api.anthropic.com"),
            LlmKind::OpenaiCompatible | LlmKind::Manual | LlmKind::Cli => None,
        }
    }

    /// Whether a client of this kind sends requests over HTTP (and so may need a key).
    pub fn is_http(self) -> bool {
        matches!(self, LlmKind::Openai | LlmKind::Anthropic | LlmKind::OpenaiCompatible)
    }
}

/// What a model is asked to do: answer the chat, or write the summaries of condensations. A CLI
/// tool's entry lists the uses it serves (`capabilities: [chat, summarize]`); an HTTP model
/// serves both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModelUse {
    /// The chat model: it answers the user's messages.
    Chat,
    /// The condensing model: it writes the summary of a condensation.
    Summarize,
}

impl ModelUse {
    /// Both uses, in the order entries list them.
    pub const ALL: [ModelUse; 2] = [ModelUse::Chat, ModelUse::Summarize];

    /// The name YAML entries use (`chat`, `summarize`).
    pub fn as_str(self) -> &'static str {
        match self {
            ModelUse::Chat => "chat",
            ModelUse::Summarize => "summarize",
        }
    }

    /// What a model serving this use is called (`the chat model`).
    pub fn role(self) -> &'static str {
        match self {
            ModelUse::Chat => "the chat model",
            ModelUse::Summarize => "the condensing model",
        }
    }
}

impl std::fmt::Display for ModelUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A named LLM endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LlmProfile {
    /// Stable id, e.g. `gpt-4o-mini`.
    pub id: String,
    /// The client.
    pub kind: LlmKind,
    /// The endpoint's base URL; required for `openai-compatible`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The model id sent to the API (or passed to the tool).
    pub model: String,
    /// The tool entry a `cli` profile runs (`claude-code`, `codex`, `gemini`, or a YAML entry's
    /// id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The model's context window, in tokens.
    pub context_window: usize,
    /// The longest answer the model writes, in tokens; `0` or absent: derived from the window
    /// ([`default_max_output_for`]: 4,096, or a quarter of a smaller window). Read it through
    /// [`LlmProfile::output_limit`].
    #[serde(default)]
    pub max_output: usize,
    /// US dollars per million input tokens.
    #[serde(default)]
    pub price_input_per_mtok: f64,
    /// US dollars per million output tokens.
    #[serde(default)]
    pub price_output_per_mtok: f64,
    /// US dollars per million input tokens written to the prompt cache (Anthropic: 1.25× the
    /// input price); absent: the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_cache_write_per_mtok: Option<f64>,
    /// US dollars per million input tokens read from the prompt cache (Anthropic: 0.1× the input
    /// price; OpenAI: a half or less); absent: the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_cache_read_per_mtok: Option<f64>,
    /// When an automatic condensation runs: `threshold` (at the threshold percent), or
    /// `cache-aware` (when it pays for the cache it rewrites, always before the window's limit);
    /// absent: `cache-aware` when the profile has cache prices, else `threshold`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condense_policy: Option<CondensePolicy>,
    /// Where the key is kept: a SecretStorage id (extension) or an environment variable (CLI).
    #[serde(default)]
    pub api_key_ref: Option<String>,
    /// The context percent at which a chat with this profile condenses automatically; `-1` or
    /// absent: the global threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_percent: Option<i32>,
    /// Seconds a whole request may take, from sending it to the end of the answer (besides the
    /// idle timeout between bytes); absent: [`DEFAULT_DEADLINE_SECS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_secs: Option<u64>,
    /// Generation parameters for chatting.
    #[serde(default)]
    pub chat: GenerationParams,
    /// Generation parameters for condensing (summaries want a low temperature).
    #[serde(default = "default_condense_params")]
    pub condense: GenerationParams,
}

/// How long a whole request may take by default: 10 minutes.
pub const DEFAULT_DEADLINE_SECS: u64 = 600;

/// The condense phase's defaults: a low temperature, and the profile's longest answer (no cap of
/// its own, so that a long summary is not cut).
fn default_condense_params() -> GenerationParams {
    GenerationParams { max_input_tokens: None, max_output_tokens: None, temperature: Some(0.2) }
}

impl LlmProfile {
    /// Milliseconds a whole request may take.
    pub fn deadline_ms(&self) -> u64 {
        self.deadline_secs.unwrap_or(DEFAULT_DEADLINE_SECS).saturating_mul(1000)
    }

    /// The longest answer, in tokens: `max_output`, or the default derived from the window when
    /// it is `0`.
    pub fn output_limit(&self) -> usize {
        if self.max_output == 0 { default_max_output_for(self.context_window) } else { self.max_output }
    }

    /// A profile with the defaults for a kind (the longest answer derived from the window).
    pub fn new(
        id: impl Into<String>,
        kind: LlmKind,
        model: impl Into<String>,
        context_window: usize,
    ) -> Self {
        LlmProfile {
            id: id.into(),
            kind,
            base_url: None,
            model: model.into(),
            tool: None,
            context_window,
            max_output: 0,
            price_input_per_mtok: 0.0,
            price_output_per_mtok: 0.0,
            price_cache_write_per_mtok: None,
            price_cache_read_per_mtok: None,
            condense_policy: None,
            api_key_ref: None,
            threshold_percent: None,
            deadline_secs: None,
            chat: GenerationParams::default(),
            condense: default_condense_params(),
        }
    }

    /// Checks the profile: a usable base URL, a model, sensible limits and prices.
    pub fn validate(&self) -> Result<(), LlmError> {
        let bad = |m: String| Err(LlmError::new(ErrorKind::LlmConfig, format!("profile '{}': {m}", self.id)));
        if self.id.trim().is_empty() {
            return Err(LlmError::new(ErrorKind::LlmConfig, "a profile needs an id"));
        }
        if self.model.trim().is_empty() && self.kind != LlmKind::Manual {
            return bad("model is empty".into());
        }
        if self.kind == LlmKind::Cli && self.tool.as_deref().is_none_or(|t| t.trim().is_empty()) {
            return bad("a cli profile needs a tool, e.g. claude-code, codex or gemini".into());
        }
        if self.kind != LlmKind::Cli && self.tool.is_some() {
            return bad("only a cli profile names a tool".into());
        }
        if self.kind == LlmKind::OpenaiCompatible && self.base_url.is_none() {
            return bad(
                "an openai-compatible profile needs a base_url, e.g. http://127.0.0.1:11434/v1".into()
            );
        }
        if let Some(url) = &self.base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return bad(format!("base_url must start with http:// or https://, got {url:?}"));
        }
        if self.deadline_secs == Some(0) {
            return bad("deadline_secs must be above 0".into());
        }
        if self.context_window == 0 {
            return bad("context_window must be above 0".into());
        }
        if self.output_limit() >= self.context_window {
            return bad(format!(
                "max_output ({}) must be below context_window ({})",
                self.output_limit(),
                self.context_window
            ));
        }
        for (phase, params) in [("chat", &self.chat), ("condense", &self.condense)] {
            params.check(self.context_window).map_err(|m| {
                LlmError::new(ErrorKind::LlmConfig, format!("profile '{}': {phase}: {m}", self.id))
            })?;
        }
        if let Some(t) = self.threshold_percent {
            check_profile_threshold(t)
                .map_err(|m| LlmError::new(ErrorKind::LlmConfig, format!("profile '{}': {m}", self.id)))?;
        }
        for (name, price) in [
            ("price_input_per_mtok", self.price_input_per_mtok),
            ("price_output_per_mtok", self.price_output_per_mtok),
            ("price_cache_write_per_mtok", self.price_cache_write_per_mtok.unwrap_or(0.0)),
            ("price_cache_read_per_mtok", self.price_cache_read_per_mtok.unwrap_or(0.0)),
        ] {
            if !price.is_finite() || price < 0.0 {
                return bad(format!("{name} must be a price of 0 or more, got {price}"));
            }
        }
        Ok(())
    }

    /// The base URL in use, without a trailing slash.
    pub fn base_url(&self) -> Option<String> {
        self.base_url.as_deref().or(self.kind.default_base_url()).map(|u| u.trim_end_matches('/').to_owned())
    }

    /// What a call with this usage cost, in US dollars: uncached input at the input price, the
    /// cache's writes and reads at theirs, the answer at the output price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        self.prices().cost(usage)
    }

    /// The profile's prices, a missing cache price being the input price.
    pub fn prices(&self) -> Prices {
        Prices {
            input: self.price_input_per_mtok,
            output: self.price_output_per_mtok,
            cache_write: self.price_cache_write_per_mtok.unwrap_or(self.price_input_per_mtok),
            cache_read: self.price_cache_read_per_mtok.unwrap_or(self.price_input_per_mtok),
        }
    }

    /// The policy its automatic condensations follow: the profile's, else `cache-aware` when it
    /// has a cache price, else `threshold`.
    pub fn policy(&self) -> CondensePolicy {
        self.condense_policy.unwrap_or(
            if self.price_cache_read_per_mtok.is_some() || self.price_cache_write_per_mtok.is_some() {
                CondensePolicy::CacheAware
            } else {
                CondensePolicy::Threshold
            },
        )
    }

    /// The model's family, from its id.
    pub fn model_family(&self) -> Option<String> {
        let m = self.model.to_ascii_lowercase();
        let family = [
            "claude", "gpt", "o1", "o3", "o4", "llama", "qwen", "mistral", "gemma", "deepseek", "smollm",
            "phi",
        ]
        .into_iter()
        .find(|f| m.contains(f));
        family.map(str::to_owned).or_else(|| match self.kind {
            LlmKind::Anthropic => Some("claude".into()),
            LlmKind::Openai => Some("gpt".into()),
            _ => None,
        })
    }

    /// What a client for this profile can do.
    pub fn capabilities(&self) -> ProviderCapabilities {
        let reasoning = matches!(self.model_family().as_deref(), Some("o1" | "o3" | "o4"));
        ProviderCapabilities {
            max_context_tokens: Some(self.context_window),
            max_output_tokens: Some(self.output_limit()),
            // A tool and a person read one block of text.
            supports_system_prompt: self.kind.is_http(),
            supports_multi_turn: self.kind.is_http(),
            // OpenAI's reasoning models refuse a temperature; the tools take none.
            supports_temperature: self.kind.is_http() && !reasoning,
            min_temperature: 0.0,
            max_temperature: if self.kind == LlmKind::Anthropic { 1.0 } else { 2.0 },
            model_id: Some(self.model.clone()),
            model_family: self.model_family(),
        }
    }
}

/// US dollars per million tokens, by what the tokens are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Prices {
    /// Uncached input.
    pub input: f64,
    /// Answer.
    pub output: f64,
    /// Input written to the prompt cache.
    pub cache_write: f64,
    /// Input read from the prompt cache.
    pub cache_read: f64,
}

impl Prices {
    /// What `usage` costs, in US dollars: uncached input at the input price, the cache's writes
    /// and reads at theirs, the answer at the output price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.uncached_tokens() as f64 * self.input
            + usage.cache_write_tokens as f64 * self.cache_write
            + usage.cache_read_tokens as f64 * self.cache_read
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// When automatic condensations run (a profile's `condense_policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CondensePolicy {
    /// When the context reaches the threshold percent (or the request limit).
    Threshold,
    /// When the condensation pays for the cache it rewrites within the turns expected, and
    /// always before the request limit.
    CacheAware,
}

impl CondensePolicy {
    /// The stable name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CondensePolicy::Threshold => "threshold",
            CondensePolicy::CacheAware => "cache-aware",
        }
    }
}

/// Tokens a call used, as the server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Usage {
    /// Prompt tokens, all of them: the cache's reads and writes included.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
    /// Of `input_tokens`, those written to the prompt cache (Anthropic's
    /// `cache_creation_input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Of `input_tokens`, those read from the prompt cache (Anthropic's `cache_read_input_tokens`,
    /// OpenAI's `cached_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// A call's tokens without any cache.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage { input_tokens, output_tokens, cache_write_tokens: 0, cache_read_tokens: 0 }
    }

    /// Input tokens neither read from nor written to the cache.
    pub fn uncached_tokens(&self) -> u64 {
        self.input_tokens.saturating_sub(self.cache_write_tokens + self.cache_read_tokens)
    }

    /// The share of the input read from the cache, 0 to 1 (0 without input).
    pub fn cached_share(&self) -> f64 {
        if self.input_tokens == 0 { 0.0 } else { self.cache_read_tokens as f64 / self.input_tokens as f64 }
    }

    /// Adds another call's tokens.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
    }
}

/// What a phase asks of the model: set by the profile, clamped by the provider's capabilities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GenerationParams {
    /// Most tokens the prompt may have.
    pub max_input_tokens: Option<usize>,
    /// Most tokens the answer may have.
    pub max_output_tokens: Option<usize>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
}

impl GenerationParams {
    /// Why these parameters cannot be meant for a model of `window` tokens: an output budget of 0
    /// or not below the window, an input budget of 0, a temperature outside
    /// [`crate::limits::TEMPERATURE_MIN`]–[`crate::limits::TEMPERATURE_MAX`].
    pub fn check(&self, window: usize) -> Result<(), String> {
        if let Some(n) = self.max_output_tokens {
            if n == 0 {
                return Err("the output budget must be a whole number of tokens above 0".into());
            }
            if n >= window {
                return Err(format!("the output budget ({n}) must be below the context window ({window})"));
            }
        }
        if self.max_input_tokens == Some(0) {
            return Err("max_input_tokens must be a whole number of tokens above 0".into());
        }
        if let Some(t) = self.temperature {
            let (min, max) = (crate::limits::TEMPERATURE_MIN, crate::limits::TEMPERATURE_MAX);
            if !t.is_finite() || t < min || t > max {
                return Err(format!("the temperature must be a number from {min} to {max}"));
            }
        }
        Ok(())
    }

    /// These parameters within what the provider can do: token limits lowered to the provider's,
    /// the temperature dropped where unsupported and clamped into its range otherwise.
    pub fn clamped(self, caps: &ProviderCapabilities) -> GenerationParams {
        let min = |want: Option<usize>, limit: Option<usize>| match (want, limit) {
            (Some(w), Some(l)) => Some(w.min(l)),
            (w, l) => w.or(l),
        };
        let max_output_tokens = min(self.max_output_tokens, caps.max_output_tokens);
        let input_limit = caps.max_context_tokens.map(|c| c.saturating_sub(max_output_tokens.unwrap_or(0)));
        GenerationParams {
            max_input_tokens: min(self.max_input_tokens, input_limit),
            max_output_tokens,
            temperature: match (caps.supports_temperature, self.temperature) {
                (true, Some(t)) => Some(t.clamp(caps.min_temperature, caps.max_temperature)),
                _ => None,
            },
        }
    }
}

/// What a provider instance can do: hard limits, not settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderCapabilities {
    /// The context window, in tokens; `None` when unknown.
    pub max_context_tokens: Option<usize>,
    /// The longest answer, in tokens; `None` when unknown.
    pub max_output_tokens: Option<usize>,
    /// Whether a separate system prompt is accepted.
    pub supports_system_prompt: bool,
    /// Whether a conversation history may be sent.
    pub supports_multi_turn: bool,
    /// Whether a temperature may be set.
    pub supports_temperature: bool,
    /// Lowest temperature.
    pub min_temperature: f64,
    /// Highest temperature.
    pub max_temperature: f64,
    /// The model id, e.g. `gpt-4o`.
    pub model_id: Option<String>,
    /// The model family, e.g. `gpt`, `claude`, `llama`.
    pub model_family: Option<String>,
}

impl Default for ProviderCapabilities {
    fn default() -> Self {
        ProviderCapabilities {
            max_context_tokens: None,
            max_output_tokens: None,
            supports_system_prompt: true,
            supports_multi_turn: true,
            supports_temperature: true,
            min_temperature: 0.0,
            max_temperature: 1.0,
            model_id: None,
            model_family: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_kind_once() {
        for (i, kind) in LlmKind::ALL.into_iter().enumerate() {
            // A new kind fails to compile here: add it to `ALL` as well.
            let at = match kind {
                LlmKind::Openai => 0,
                LlmKind::Anthropic => 1,
                LlmKind::OpenaiCompatible => 2,
                LlmKind::Cli => 3,
                LlmKind::Manual => 4,
            };
            assert_eq!(at, i, "{kind:?}");
        }
    }

    #[test]
    fn a_phase_that_cannot_be_meant_is_refused_by_name() {
        let base = LlmProfile::new("p", LlmKind::Openai, "gpt-4o", 128_000);
        let refused = |edit: &dyn Fn(&mut LlmProfile)| {
            let mut p = base.clone();
            edit(&mut p);
            p.validate().err().map(|e| e.message)
        };
        assert_eq!(refused(&|_| {}), None);
        assert_eq!(refused(&|p| p.chat.temperature = Some(1.2)), None);
        assert_eq!(
            refused(&|p| p.chat.max_output_tokens = Some(128_000)).as_deref(),
            Some("profile 'p': chat: the output budget (128000) must be below the context window (128000)")
        );
        assert_eq!(
            refused(&|p| p.condense.temperature = Some(-0.1)).as_deref(),
            Some("profile 'p': condense: the temperature must be a number from 0 to 2")
        );
        assert!(refused(&|p| p.condense.max_input_tokens = Some(0)).unwrap().contains("max_input_tokens"));
        assert!(refused(&|p| p.chat.max_output_tokens = Some(0)).unwrap().contains("above 0"));
        // Unknown fields of a phase are refused when the profile is read.
        let json = serde_json::json!({"id": "p", "kind": "openai", "model": "m", "context_window": 1000, "chat": {"top_p": 0.9}});
        assert!(serde_json::from_value::<LlmProfile>(json).unwrap_err().to_string().contains("top_p"));
    }

    #[test]
    fn cost_follows_the_prices() {
        let mut p = LlmProfile::new("p", LlmKind::Openai, "gpt-4o-mini", 128_000);
        p.price_input_per_mtok = 0.15;
        p.price_output_per_mtok = 0.60;
        let cost = p.cost(&Usage::new(10_000, 1_000));
        assert!((cost - 0.0021).abs() < 1e-12, "{cost}");
    }

    #[test]
    fn invalid_profiles_say_what_is_wrong() {
        let p = LlmProfile::new("local", LlmKind::OpenaiCompatible, "llama3", 8192);
        assert!(p.validate().unwrap_err().message.contains("needs a base_url"));
        let p = LlmProfile { base_url: Some("localhost:11434".into()), ..p };
        assert!(p.validate().unwrap_err().message.contains("must start with http"));
        let p = LlmProfile { base_url: Some("http://127.0.0.1:11434/v1/".into()), ..p };
        p.validate().unwrap();
        assert_eq!(p.base_url().unwrap(), "http://127.0.0.1:11434/v1");
        let p = LlmProfile { max_output: 9000, ..p };
        assert!(p.validate().unwrap_err().message.contains("below context_window"));
    }

    #[test]
    fn an_absent_max_output_is_derived_from_the_window() {
        // The README's llama.cpp example: a 4,096-token window and no max_output.
        let p: LlmProfile = serde_json::from_value(serde_json::json!({
            "id": "local", "kind": "openai-compatible", "base_url": "http://127.0.0.1:8080/v1",
            "model": "smollm2", "context_window": 4096
        }))
        .unwrap();
        p.validate().unwrap();
        assert_eq!((p.max_output, p.output_limit()), (0, 1024));
        assert_eq!(p.capabilities().max_output_tokens, Some(1024));
        let big = LlmProfile::new("big", LlmKind::Openai, "gpt-4o", 128_000);
        assert_eq!(big.output_limit(), 4096);
        let set = LlmProfile { max_output: 300, ..big };
        assert_eq!(set.output_limit(), 300);
        // The condense phase follows the profile's limit unless it names its own.
        assert_eq!(set.condense.clamped(&set.capabilities()).max_output_tokens, Some(300));
    }
}
