//! Choosing what to condense when a request would cross its threshold, and the text that
//! replaces it.
//!
//! The range is the oldest stretch of messages not yet condensed, after the task as the client
//! set it (every message before the model's first answer: the system and developer messages, and
//! the user's task statement with whatever context the client sent beside it, kept in every
//! request) and before the current turn (the model's last message and what follows it). It ends
//! where [`Sessions::freeze`](super::Sessions::freeze) accepts an end — never between a tool call
//! and its result, never after a reasoning item — and as early as brings the request down to its
//! target, so the least is condensed and the next condensation comes as late as it can. It
//! starts after the session's last frozen condensation, whose bytes stay as they are: the
//! upstream's cache keeps everything before the new range.
//!
//! The replacement is the state ledger of what the range hides ([`crate::ledger`]): gathered by
//! code, never by a model — the user's words verbatim (within a budget, instructions never cut),
//! the files touched, the commands run with their outcome, the todo list. It is what the LLM-free
//! providers leave beside what they keep, so a condensation here reads as one of the chat's.

use std::ops::Range;

use crate::ledger::{self, Ledger};
use crate::tokens::TokenCounter;

use super::count::{CountCache, read_messages};
use super::dialect::Dialect;
use super::freeze::{Shape, replacement, valid_ends};
use super::sessions::Session;

/// A condensation chosen: the range, the text that replaces it, what the request saves.
#[derive(Debug)]
pub(super) struct Plan {
    /// Original message indices.
    pub(super) range: Range<usize>,
    /// The ledger text (the freeze adds the gateway's marker).
    pub(super) text: String,
    /// Tokens of the forwarded request removed: the range's count less its replacement's.
    pub(super) saved: usize,
    /// Where the task ends: the index of the model's first answer.
    pub(super) task_end: usize,
}

/// What the planner is asked for.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ask {
    /// Tokens of the request as it would be forwarded now.
    pub(super) forwarded: usize,
    /// Tokens to bring it to.
    pub(super) target: usize,
    /// The whole span between the task and the current turn, earlier condensations swallowed
    /// (after the upstream said "too long"), rather than the least that meets the target.
    pub(super) whole: bool,
}

/// The condensation of `session` that `ask` calls for; why none, otherwise. `texts` are its
/// messages' texts (the request's it was matched to: a session need not hold them).
pub(super) fn plan(
    session: &Session,
    texts: &[&str],
    counts: &[usize],
    frozen_tokens: &[usize],
    ask: Ask,
    cache: &mut CountCache,
    counter: &dyn TokenCounter,
) -> Result<Plan, String> {
    let dialect = session.dialect;
    let shapes = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            Shape::read(dialect, i, text).ok_or_else(|| format!("message {i} is not a message object"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let first = shapes.iter().position(Shape::is_model).ok_or("the model has not answered yet")?;
    let turn = shapes.iter().rposition(Shape::is_model).unwrap_or(first);
    let after_frozen = session.frozen.iter().map(|f| f.range.end).filter(|&e| e <= turn).max();
    let start = match ask.whole {
        true => first,
        false => after_frozen.map_or(first, |e| e.max(first)),
    };
    if start >= turn {
        return Err("nothing between the task and the current turn is left to condense".into());
    }
    // What a range removes from the forwarded request: its messages not yet condensed, and the
    // replacements of the condensations it swallows.
    let inside = |i: usize| session.frozen.iter().position(|f| f.range.contains(&i));
    let mut removed = vec![0usize; turn + 1];
    for i in start..turn {
        removed[i + 1] = removed[i]
            + match inside(i) {
                Some(f) if session.frozen[f].range.start == i => frozen_tokens[f],
                Some(_) => 0,
                None => counts[i],
            };
    }
    let cuts_frozen = |e: usize| session.frozen.iter().any(|f| f.range.start < e && e < f.range.end);
    let ends: Vec<usize> =
        valid_ends(&shapes, start, turn).into_iter().filter(|&e| !cuts_frozen(e)).collect();
    let last = *ends.last().ok_or("no range there keeps tool calls with their results")?;
    let need = ask.forwarded.saturating_sub(ask.target);
    let end_for = |need: usize| match ask.whole {
        true => last,
        false => ends.iter().copied().find(|&e| removed[e] >= need).unwrap_or(last),
    };
    let budget = ledger::budget_for(Some(ask.target), ask.forwarded);
    let mut end = end_for(need);
    let mut made = ledger_text(dialect, &texts[start..end], budget, counter)?;
    let mut cost = cache.tokens_of(dialect, &replacement(dialect, &made), counter);
    // The first pick did not leave room for its own ledger: once more, with that room.
    if !ask.whole && removed[end].saturating_sub(cost) < need && end < last {
        end = end_for(need + cost);
        made = ledger_text(dialect, &texts[start..end], budget, counter)?;
        cost = cache.tokens_of(dialect, &replacement(dialect, &made), counter);
    }
    if removed[end] <= cost {
        return Err(format!(
            "condensing messages {start}..{end} would not make the request smaller ({} tokens for {cost})",
            removed[end]
        ));
    }
    Ok(Plan { range: start..end, text: made, saved: removed[end] - cost, task_end: first })
}

/// The ledger of the messages of `texts`, the user's words within `budget` tokens.
fn ledger_text(
    dialect: Dialect,
    texts: &[&str],
    budget: usize,
    counter: &dyn TokenCounter,
) -> Result<String, String> {
    let (_, messages) = read_messages(dialect, texts)?;
    let ledger = Ledger::of(&messages.iter().collect::<Vec<_>>());
    Ok(ledger.render(budget, counter))
}
