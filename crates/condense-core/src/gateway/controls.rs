//! What a user does to one session from the extension's Gateway view (issue 28): see its
//! condensations, preview the next one, condense now, pause, undo the last condensation. Each
//! takes effect at the session's next request, which the gateway decides as always: a request is
//! never held up, and nothing here talks to the upstream.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::agent::{CondensationRecord, CondenseReason};
use crate::tokens::TiktokenCounter;

use super::count::Counters;
use super::decide::{Gateway, SessionState, target};
use super::freeze::replacement_text;
use super::plan::{Ask, plan};
use super::session_key::SessionKey;
use super::sessions::{Session, Sessions};
use super::windows::window_for;

/// One condensation a session replays, as the view's row shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GatewayCondensation {
    /// First original message it replaces.
    pub start: usize,
    /// One past the last.
    pub end: usize,
    /// Tokens of the messages it replaces.
    pub tokens_before: usize,
    /// Tokens of its message.
    pub tokens_after: usize,
    /// Whether an LLM summary was spliced over its ledger.
    pub summary: bool,
    /// The text the upstream sees in its place (a summary if any, the ledger).
    pub text: String,
    /// The condensation as the chat's rows show one: the provider, the session's request as it
    /// would have been forwarded → as it was (the replaced messages' tokens → its message's when
    /// the session no longer has the condensation's note), its text as the summary; the gateway
    /// neither times nor prices it (zero).
    pub record: CondensationRecord,
}

/// What the next condensation of a session would be, were it made now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GatewayPreview {
    /// The session.
    pub session: String,
    /// The original messages it would replace.
    pub start: usize,
    /// One past the last.
    pub end: usize,
    /// Tokens of the latest request as it would be forwarded now, and after.
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// The ledger that would replace them.
    pub text: String,
}

/// A session as the view shows it: its figures, its window, its condensations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GatewaySessionView {
    /// The session's name (its key).
    pub session: String,
    /// The model's window, in tokens.
    pub window: usize,
    /// Messages the session holds.
    pub messages: usize,
    /// Its condensations, oldest first.
    pub condensations: Vec<GatewayCondensation>,
}

/// What the view reads of a session: its state, its messages, its model's counter.
fn parts<'g>(
    states: &'g mut HashMap<String, SessionState>,
    sessions: &'g Sessions,
    counters: &'g Counters,
    session: &str,
) -> Result<(&'g mut SessionState, &'g Session, &'g TiktokenCounter), String> {
    let state = states.get_mut(session).ok_or_else(|| format!("no session {session}"))?;
    let held = sessions.map.get(&state.key).ok_or("the session was forgotten")?;
    let counter = counters.for_model(&state.stats.model);
    Ok((state, held, counter))
}

impl Gateway {
    fn key_of(&self, session: &str) -> Result<SessionKey, String> {
        let state = self.states.get(session).ok_or_else(|| format!("no session {session}"))?;
        Ok(state.key.clone())
    }

    /// Pauses a session (its requests go out as the client sent them, its condensations not
    /// replayed) or resumes it. Kept in the state.
    pub fn pause(&mut self, session: &str, paused: bool) -> Result<(), String> {
        let state = self.states.get_mut(session).ok_or_else(|| format!("no session {session}"))?;
        state.reshaped |= state.stats.paused && !paused;
        state.stats.paused = paused;
        Ok(())
    }

    /// Asks that the session's next request be condensed even if it stays under its threshold.
    pub fn condense_next(&mut self, session: &str) -> Result<(), String> {
        let state = self.states.get_mut(session).ok_or_else(|| format!("no session {session}"))?;
        state.condense_next = true;
        state.hold_next = false;
        Ok(())
    }

    /// Undoes the session's latest condensation: its next request is forwarded with those
    /// messages as the client sent them, and is not condensed again (a later one may be). The
    /// answer is the range undone.
    pub fn undo_last(&mut self, session: &str) -> Result<std::ops::Range<usize>, String> {
        let key = self.key_of(session)?;
        let range = self.sessions.unfreeze_last(&key).ok_or("the session has no condensation to undo")?;
        let state = self.states.get_mut(session).expect("the state was found above");
        state.hold_next = true;
        state.condense_next = false;
        state.reshaped = true;
        for stats in [&mut state.stats, &mut self.totals] {
            stats.undone += 1;
        }
        Ok(range)
    }

    /// What the session's next condensation would replace if it were made now (as
    /// [`Gateway::condense_next`] would make it), from its latest request; nothing changes.
    pub fn preview(&mut self, session: &str) -> Result<GatewayPreview, String> {
        let (state, held, counter) = parts(&mut self.states, &self.sessions, &self.counters, session)?;
        if held.is_hollow() {
            return Err(format!(
                "the gateway keeps no message's text for this session (read back from its saved state, \
                 or over {} MB): its next request is condensed from the request's own",
                self.config.limits.keep_texts_bytes >> 20
            ));
        }
        let texts: Vec<&str> = held.originals.iter().map(|o| o.text()).collect();
        let model = state.stats.model.clone();
        let dialect = held.dialect;
        let counts: Vec<usize> =
            held.originals.iter().map(|o| state.counts.tokens(dialect, o.hash, o.text(), counter)).collect();
        let frozen_tokens: Vec<usize> =
            held.frozen.iter().map(|f| state.counts.tokens_of(dialect, &f.replacement, counter)).collect();
        let window = window_for(&model, &self.config.windows);
        let limit = (window as f64 * self.config.threshold) as usize;
        let forwarded = state.last_forwarded;
        let ask = Ask { forwarded, target: target(window, limit).min(forwarded / 2), whole: false };
        let p = plan(held, &texts, &counts, &frozen_tokens, ask, &mut state.counts, counter)?;
        Ok(GatewayPreview {
            session: session.to_owned(),
            start: p.range.start,
            end: p.range.end,
            tokens_before: forwarded,
            tokens_after: forwarded.saturating_sub(p.saved),
            text: p.text,
        })
    }

    /// A session's window and condensations, for the view.
    pub fn session_view(&mut self, session: &str) -> Result<GatewaySessionView, String> {
        let (state, held, counter) = parts(&mut self.states, &self.sessions, &self.counters, session)?;
        let model = state.stats.model.clone();
        let dialect = held.dialect;
        let provider = self.config.provider.clone();
        let condensations = held
            .frozen
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let text = replacement_text(&f.replacement);
                let tokens_after = state.counts.tokens_of(dialect, &f.replacement, counter);
                let summary = text.contains(super::summaries::SUMMARY_HEADING);
                // Why it ran, as the session's notes say (the latest note of its range).
                let note = state.stats.condensation_notes.iter().rev().find(|n| (n.start..n.end) == f.range);
                // The messages it replaces, counted; in a session read back from the saved state
                // (no texts until its next request), what its note says it saved, plus itself.
                let tokens_before = if held.is_hollow() {
                    note.map_or(0, |n| {
                        usize::try_from(n.tokens_before.saturating_sub(n.tokens_after)).unwrap_or(usize::MAX)
                            + tokens_after
                    })
                } else {
                    held.originals[f.range.clone()]
                        .iter()
                        .map(|o| state.counts.tokens(dialect, o.hash, o.text(), counter))
                        .sum()
                };
                // What the request became: the client's request as it would have gone out, and
                // as it went.
                let (request_before, request_after) = note.map_or((tokens_before, tokens_after), |n| {
                    (
                        usize::try_from(n.tokens_before).unwrap_or(usize::MAX),
                        usize::try_from(n.tokens_after).unwrap_or(usize::MAX),
                    )
                });
                let record = CondensationRecord {
                    condense_id: format!("g{}", i + 1),
                    provider_id: if summary { "native".into() } else { provider.clone() },
                    reason: note.map_or(CondenseReason::Threshold, |n| n.reason),
                    automatic: true,
                    tokens_before: request_before,
                    tokens_after: request_after,
                    cost: 0.0,
                    time_ms: 0.0,
                    summary: Some(text.clone()),
                    at_ms: 0,
                    passes: Vec::new(),
                    retention: None,
                    summary_truncated: false,
                    estimate: note.and_then(|n| n.estimate).map(Box::new),
                    cached_share: None,
                };
                GatewayCondensation {
                    start: f.range.start,
                    end: f.range.end,
                    tokens_before,
                    tokens_after,
                    summary,
                    text,
                    record,
                }
            })
            .collect();
        Ok(GatewaySessionView {
            session: session.to_owned(),
            window: window_for(&model, &self.config.windows),
            messages: held.originals.len(),
            condensations,
        })
    }
}

/// The client a request came from, by its `User-Agent`, as the view names it: the known agents
/// by name, any other by the product in its user agent (at most 40 characters).
pub fn client_of(user_agent: &str) -> String {
    let ua = user_agent.to_ascii_lowercase();
    let known = [
        ("geminicli", "Gemini CLI"),
        ("claude-cli", "Claude Code"),
        ("claude-code", "Claude Code"),
        ("codex", "Codex"),
        ("cline", "Cline"),
        ("roo", "Roo Code"),
        ("continue", "Continue"),
        ("qwen", "Qwen Code"),
        ("opencode", "OpenCode"),
    ];
    if let Some((_, name)) = known.iter().find(|(needle, _)| ua.contains(needle)) {
        return (*name).to_owned();
    }
    let product = user_agent.split([' ', '/']).next().unwrap_or_default();
    let product: String = product.chars().filter(|c| c.is_ascii_graphic()).take(40).collect();
    if product.is_empty() { "unknown client".to_owned() } else { product }
}

impl Gateway {
    /// Records the client a session's request came from (its `User-Agent`).
    pub fn seen_from(&mut self, session: &str, user_agent: &str) {
        if let Some(state) = self.states.get_mut(session) {
            state.stats.client = client_of(user_agent);
        }
    }
}
