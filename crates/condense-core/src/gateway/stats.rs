//! What the gateway reports: per session and in total, the requests, the tokens the client sent
//! against those forwarded, the condensations and why each ran, what observe mode would have
//! done, the usage the upstream reported and what it cost, and what condensing saved in money —
//! net of the cache written again and of the summaries, negative when it cost more (see
//! `books`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::agent::CondenseReason;
use crate::agent::cache::CostEstimate;
use crate::billing::{Billed, ModelPrices};

/// Usage the host read from the upstream's answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct GatewayUsage {
    /// Input tokens billed at the full price.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// Of `cache_write`, those written with a 1-hour lifetime (Anthropic's
    /// `cache_creation.ephemeral_1h_input_tokens`), billed at twice the input price.
    pub cache_write_1h: u64,
}

impl GatewayUsage {
    /// Every prompt token: uncached, written and read.
    pub fn prompt(&self) -> u64 {
        self.input + self.cache_write + self.cache_read
    }

    /// The prompt as billed.
    pub fn billed(&self) -> Billed {
        let one_hour = self.cache_write_1h.min(self.cache_write);
        Billed {
            read: self.cache_read as f64,
            write_5m: (self.cache_write - one_hour) as f64,
            write_1h: one_hour as f64,
            uncached: self.input as f64,
        }
    }
}

/// Why one condensation of a session ran, as `/stats` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CondensationNote {
    /// The session's request it was made for (its first request is 1).
    pub request: u64,
    /// The original messages it replaces: first, and one past the last.
    pub start: usize,
    pub end: usize,
    /// Why: `threshold` (the request crossed the threshold of the model's window: always),
    /// `cache` (the `cache-aware` policy found that it pays for the cache it writes again),
    /// `manual` (the user asked), `overflow` (the upstream said the prompt was too long).
    pub reason: CondenseReason,
    /// Tokens of the request as it would have been forwarded, and as it was.
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// The `cache-aware` policy's figures when it weighed: what condensing cost now (the
    /// cache written again, the summary), what it was expected to save over how many requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<CostEstimate>,
}

/// The most notes a session keeps, the oldest dropped first.
pub(super) const MAX_NOTES: usize = 32;

/// One session's figures (or the sum over every session, forgotten ones included).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct SessionStats {
    /// The model of the latest request.
    pub model: String,
    /// The client, by its user agent (`Claude Code`, `Codex`, …), when the host said.
    pub client: String,
    /// The first line of the session's task (see `Request::task_line`), shown as the host
    /// renders untrusted text: what tells two sessions of one client apart.
    pub title: String,
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
    /// What that usage cost at each model's published prices: uncached input, cache writes (a
    /// 1-hour write at its own price) and reads, output (US dollars).
    pub cost_usd: f64,
    /// Answers of a model whose price is unknown: their usage is counted in tokens, not in
    /// dollars, and saves nothing in dollars.
    pub unpriced_requests: u64,
    /// What condensing saved, in US dollars: for each answer, what its request would have been
    /// billed sent as the client sent it (the same cache rules over the client's own bytes and
    /// the session's requests before it) less what it was billed, less what the summaries cost.
    /// The cache written again after a condensation or a summary's splice is counted where it
    /// happens, so this is negative until the condensations have paid for it.
    pub cost_saved_usd: f64,
    /// The latest answer's part of `cost_saved_usd`.
    pub saved_last_usd: f64,
    /// While `cost_saved_usd` is negative and requests save money again: how many more
    /// requests at the latest one's saving pay the loss back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payback_requests: Option<u64>,
    /// Why each condensation ran, the latest [`MAX_NOTES`] (sessions only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub condensation_notes: Vec<CondensationNote>,
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
    /// Adds usage the upstream reported, priced at `prices` (`None`: the model's price is
    /// unknown).
    pub(super) fn add_usage(&mut self, u: GatewayUsage, prices: Option<&ModelPrices>) {
        match prices {
            Some(p) => self.cost_usd += p.cost(&u.billed(), u.output as f64),
            None => self.unpriced_requests += 1,
        }
        self.usage.input += u.input;
        self.usage.output += u.output;
        self.usage.cache_read += u.cache_read;
        self.usage.cache_write += u.cache_write;
        self.usage.cache_write_1h += u.cache_write_1h;
    }

    /// Books one answer's saving (negative: it cost more than sending the client's bytes would
    /// have), and what paying back a loss takes at that rate.
    pub(super) fn add_saving(&mut self, saved: f64) {
        self.cost_saved_usd += saved;
        self.saved_last_usd = saved;
        self.update_payback();
    }

    /// `payback_requests` from the saving so far and the latest one.
    pub(super) fn update_payback(&mut self) {
        self.payback_requests = (self.cost_saved_usd < 0.0 && self.saved_last_usd > 0.0)
            .then(|| (-self.cost_saved_usd / self.saved_last_usd).ceil() as u64);
    }

    /// Records why a condensation ran, keeping the latest [`MAX_NOTES`].
    pub(super) fn note_condensation(&mut self, note: CondensationNote) {
        if self.condensation_notes.len() >= MAX_NOTES {
            self.condensation_notes.remove(0);
        }
        self.condensation_notes.push(note);
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

/// When the gateway condenses a session's requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GatewayPolicy {
    /// When a request crosses the threshold of its model's window.
    Threshold,
    /// At the threshold too, and earlier when what the condensation saves over the requests
    /// expected pays for the cache it writes again (the chat's `cache-aware` policy); a summary
    /// is spliced in only when that costs nothing more. A model without a known price is never
    /// condensed early.
    #[default]
    CacheAware,
}

impl GatewayPolicy {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            GatewayPolicy::Threshold => "threshold",
            GatewayPolicy::CacheAware => "cache-aware",
        }
    }
}

/// The configuration as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReportConfig {
    /// The condensation provider.
    pub provider: String,
    /// The threshold, a share of the window (0.1 to 0.99).
    pub threshold: f64,
    /// When it condenses: `threshold`, or `cache-aware` (also earlier, when it pays).
    pub policy: GatewayPolicy,
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
