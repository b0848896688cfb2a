//! What the gateway reports: per session and in total, the requests, the tokens the client sent
//! against those forwarded, the condensations, what observe mode would have done, the usage the
//! upstream reported, and what the condensations saved in money at the model's input price.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Usage the host read from the upstream's answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GatewayUsage {
    /// Input tokens billed at the full price.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
}

/// One session's figures (or the sum over every session, forgotten ones included).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct SessionStats {
    /// The model of the latest request.
    pub model: String,
    /// The client, by its user agent (`Claude Code`, `Codex`, …), when the host said.
    pub client: String,
    /// Tokens of the latest request as the client sent it, and as forwarded.
    pub last_tokens_client: u64,
    pub last_tokens_forwarded: u64,
    /// The model's window, as the gateway reads it.
    pub window: u64,
    /// Paused by the user: requests go out as the client sent them.
    pub paused: bool,
    /// Condensations the user undid.
    pub undone: u64,
    /// Requests decided.
    pub requests: u64,
    /// Requests forwarded untouched because the gateway could not read them (fail open).
    pub untouched: u64,
    /// Tokens of the requests as the client sent them.
    pub tokens_client: u64,
    /// Tokens of the requests as forwarded.
    pub tokens_forwarded: u64,
    /// Condensations frozen (observe mode's included: it condenses in its books only).
    pub condensations: u64,
    /// Requests retried condensed harder after the upstream said "too long".
    pub too_long_retries: u64,
    /// Observe mode: requests that would have been forwarded condensed.
    pub would_condense: u64,
    /// Observe mode: tokens those requests would not have sent.
    pub tokens_would_save: u64,
    /// Usage the upstream reported, summed.
    pub usage: GatewayUsage,
    /// What that usage cost at each model's prices: uncached input, cache writes and reads,
    /// output (US dollars; 0 for models without a known price).
    pub cost_usd: f64,
    /// Tokens removed from forwarded requests, priced at what each would have cost (the model's
    /// cache-read price once the session reads from the cache, else its input price; US dollars,
    /// 0 for models without a known price), less what the summaries cost.
    pub cost_saved_usd: f64,
    /// LLM summaries written in the background and spliced in (provider `native`).
    pub summaries: u64,
    /// Summaries that failed or could not be used (the ledger stayed); the note says why.
    pub summary_failures: u64,
    /// Tokens the summary calls sent and received.
    pub summary_tokens: u64,
    /// What the summary calls cost (US dollars, by the condensing profile's prices).
    pub summary_cost_usd: f64,
    /// Why the latest summary was not written or not used (the ledger stayed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_note: Option<String>,
    /// Recall files the session keeps (the hidden messages of its condensations, for the agent to
    /// read), and their bytes; in the totals, those of every session held.
    pub recall_files: u64,
    pub recall_bytes: u64,
    /// Recall files removed to keep a session within its bytes, oldest first.
    pub recall_evicted: u64,
    /// Condensations made without a recall file (too large, or the host could not write it).
    pub recall_failures: u64,
    /// Why the latest recall file is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall_note: Option<String>,
    /// Why the latest request was not condensed although over its threshold, or was untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl SessionStats {
    /// Adds usage the upstream reported.
    pub(super) fn add_usage(&mut self, u: GatewayUsage, prices: &crate::profile::Prices) {
        // The upstream's `input` is the uncached part; the core's usage counts the whole prompt.
        self.cost_usd += prices.cost(&crate::profile::Usage {
            input_tokens: u.input + u.cache_write + u.cache_read,
            output_tokens: u.output,
            cache_write_tokens: u.cache_write,
            cache_read_tokens: u.cache_read,
        });
        self.usage.input += u.input;
        self.usage.output += u.output;
        self.usage.cache_read += u.cache_read;
        self.usage.cache_write += u.cache_write;
    }
}

/// The gateway's report (`GET /stats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GatewayStats {
    /// Whether the gateway only observes.
    pub observe: bool,
    /// Every request since the state began, sessions forgotten included.
    pub totals: SessionStats,
    /// The sessions held, by name.
    pub sessions: BTreeMap<String, SessionStats>,
}

/// The configuration as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReportConfig {
    /// The condensation provider.
    pub provider: String,
    /// The threshold, a share of the window (0.1 to 0.99).
    pub threshold: f64,
    /// The operator's windows, by model prefix.
    pub windows: BTreeMap<String, usize>,
    /// Whether the gateway only observes.
    pub observe: bool,
}

/// What a host reports (`GET /stats`, the extension's Gateway view): the core's figures, the
/// configuration, and the host's counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GatewayReport {
    /// The core's figures.
    #[serde(flatten)]
    pub stats: GatewayStats,
    /// The configuration in use.
    pub config: ReportConfig,
    /// Summaries queued or being written.
    pub summaries_pending: usize,
    /// Requests under the prefixes that were not conversations.
    pub passed_through: u64,
    /// Requests forwarded untouched because the core could not read them (fail open).
    pub failed_open: u64,
    /// Why, the last time.
    pub last_failed_open: Option<String>,
}
