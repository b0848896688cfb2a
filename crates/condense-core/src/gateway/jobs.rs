//! The background summaries' jobs (provider `native`): a job handed to the host, its outcome,
//! and what the gateway keeps of a job meanwhile. The decisions queue them ([`super::decide`]),
//! the summaries module writes and takes them back ([`super::summaries`]).

use std::ops::Range;

use crate::model::Conversation;

use super::dialect::Dialect;
use super::session_key::SessionKey;

/// A summary to write: the messages of one condensation, after the task they came under.
#[derive(Debug, Clone)]
pub struct SummaryJob {
    /// Names the job to `Gateway::summary_done`.
    pub id: u64,
    /// The session's name, as in the statistics.
    pub session: String,
    /// The model of the request that made the condensation (`--summarize-with-upstream` writes
    /// with it).
    pub model: String,
    /// The dialect of the session's requests (which upstream, which credentials).
    pub dialect: Dialect,
    /// The task's messages (the client's first turn, kept verbatim in every request) and then
    /// the condensed range's: [`summarize`] summarizes all but the first.
    pub conversation: Conversation,
}

/// A summary written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryDone {
    /// The model's text.
    pub text: String,
    /// The model that wrote it (its heading names it); empty: the session's own model.
    pub model: String,
    /// What the calls cost, in US dollars.
    pub cost_usd: f64,
    /// Tokens the calls sent and received.
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A job given out and not yet done.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) key: SessionKey,
    pub(super) range: Range<usize>,
    /// The ledger frozen for the range: the summary goes above it, and the job is used only
    /// while the condensation still holds it.
    pub(super) ledger: String,
}

/// A summary written and checked, waiting to be spliced in (`cache-aware`).
#[derive(Debug)]
pub(super) struct Ready {
    pub(super) pending: Pending,
    /// The text that replaces the range: the summary above the ledger.
    pub(super) text: String,
}

/// How many jobs may wait for the host at once: beyond, a condensation keeps its ledger.
pub const MAX_PENDING_SUMMARIES: usize = 16;

/// The log line of a summary's outcome, the one every host writes (after its `gateway: `): the
/// session, what the model wrote it with (`Ok((output_tokens, cost_usd))`) or why there is none,
/// and whether the session's next request carries it (`used`) or keeps the ledger.
pub fn summary_line(session: &str, written: Result<(u64, f64), &str>, used: bool) -> String {
    let what = match written {
        Ok((tokens, cost)) => format!("summary written ({tokens} tokens out, ${cost:.4})"),
        Err(why) => format!("summary failed: {why}"),
    };
    let then = if used { "the next request carries it" } else { "the ledger stays" };
    format!("[{session}] {what}; {then}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_s_outcome_is_one_line() {
        assert_eq!(
            summary_line("s", Ok((12, 0.5)), true),
            "[s] summary written (12 tokens out, $0.5000); the next request carries it"
        );
        assert_eq!(
            summary_line("s", Err("no model"), false),
            "[s] summary failed: no model; the ledger stays"
        );
    }
}
