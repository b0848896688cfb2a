//! The rows `condense eval` measures, one per file × provider: what the runs produce
//! (`mod.rs`) and the renderers print (`render`).

use condense_core::ErrorInfo;
use condense_core::provider::{PassMetric, Retention};
use serde::Serialize;

use super::probes::Probe;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    /// The provider condensed the conversation.
    Ok,
    /// The provider ran and failed; the conversation is unchanged.
    Failed,
    /// The provider was not run; `skipped` says why.
    Skipped,
}

/// Retention of one run: the probes still readable in the API view, and the ones lost.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RetentionRow {
    /// Probes found.
    pub(crate) kept: usize,
    /// Probes looked for.
    pub(crate) probes: usize,
    /// Of those, derived from the hidden span (the rest come from the probe file).
    pub(crate) derived: usize,
    /// The probes not found.
    pub(crate) missing: Vec<Probe>,
}

/// One file × provider.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    /// The conversation file, as given.
    pub(crate) file: String,
    /// The provider id.
    pub(crate) provider: String,
    /// How the run ended.
    pub(crate) status: Status,
    /// The target the run was given, in tokens.
    pub(crate) target_tokens: Option<usize>,
    /// Tokens of the API view before the run (system prompt included).
    pub(crate) tokens_before: usize,
    /// Tokens of the API view after the run (the same as before when it did not succeed).
    pub(crate) tokens_after: usize,
    /// `(before − after) / before`, in percent.
    pub(crate) reduction_pct: f64,
    /// Probes kept; absent when the provider was skipped.
    pub(crate) retention: Option<RetentionRow>,
    /// US dollars spent, failed runs included.
    pub(crate) cost: f64,
    /// Wall-clock time of the run, in milliseconds.
    pub(crate) time_ms: f64,
    /// Why the run failed.
    pub(crate) error: Option<ErrorInfo>,
    /// Why the provider was not run.
    pub(crate) skipped: Option<String>,
    /// The provider's passes, for pipelines that report them.
    pub(crate) passes: Vec<PassMetric>,
    /// The summary was cut by its output limit.
    pub(crate) summary_truncated: bool,
    /// The retention the provider reported itself (the core's ledger probes), when it did.
    pub(crate) core_retention: Option<Retention>,
}
