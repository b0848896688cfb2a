//! The floor of a condensation: the fewest tokens a run that keeps what it must can leave —
//! the system prompt, the first visible message (a user message by its own words only: pasted
//! files, logs and documents in it may be cut, see [`crate::ledger::own_words`]), the last
//! `keep_last` visible messages, and every message a pin keeps. A target below it cannot be met;
//! the template refuses it up front with the floor named ([`crate::CondensationProvider::target_and_floor`]).
//!
//! Here too is what a provider that keeps the last messages and works to a target reads of its
//! options (`Reach`), and the visible messages of its run: the first, the middle, the tail
//! (`Span`).

use crate::model::{ContentBlock, Message, Role};
use crate::provider::CondensationContext;
use crate::tokens::TokenCounter;

/// The floor of a run over `ctx` that keeps the last `keep_last` visible messages.
pub fn floor_tokens(ctx: &CondensationContext<'_>, keep_last: usize, tokens: &dyn TokenCounter) -> usize {
    let visible = ctx.visible();
    let pinned = ctx.pinned();
    let tail_from = visible.len().saturating_sub(keep_last).max(1);
    let mut kept: Vec<Message> = Vec::new();
    for (k, &i) in visible.iter().enumerate() {
        let m = &ctx.messages[i];
        if k >= tail_from || pinned.contains(&i) {
            kept.push(m.clone());
        } else if k == 0 {
            kept.push(own_words_only(m));
        }
    }
    tokens.count_request(ctx.system, &kept.iter().collect::<Vec<_>>())
}

/// A user message with its text cut to the user's own words and the client's context left out;
/// any other message as it is.
pub fn own_words_only(m: &Message) -> Message {
    if m.role != Role::User {
        return m.clone();
    }
    let content = m
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { client: Some(_), .. } => None,
            ContentBlock::Text { text, client: None } => {
                Some(ContentBlock::text(crate::ledger::own_words(text)))
            }
            other => Some(other.clone()),
        })
        .collect();
    Message { content, ..m.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::TiktokenCounter;

    fn user(id: &str, text: &str) -> Message {
        Message::new(id, Role::User, vec![ContentBlock::text(text)])
    }

    fn assistant(id: &str, text: &str) -> Message {
        Message::new(id, Role::Assistant, vec![ContentBlock::text(text)])
    }

    #[test]
    fn the_floor_is_the_system_the_first_own_words_and_the_tail() {
        let tokens = TiktokenCounter::for_model("gpt-4o");
        let pasted = format!("```\n{}```", "let value = compute(input, options);\n".repeat(200));
        let first = user("m1", &format!("Port this module; do not change its API.\n\n{pasted}"));
        let messages: Vec<Message> = std::iter::once(first.clone())
            .chain((2..=20).map(|i| {
                let text = format!("message {i} {}", "words ".repeat(100));
                if i % 2 == 0 { assistant(&format!("m{i}"), &text) } else { user(&format!("m{i}"), &text) }
            }))
            .collect();
        let ctx =
            CondensationContext { messages: &messages, system: Some("Be brief."), prev_context_tokens: 0 };
        let floor = floor_tokens(&ctx, 2, &tokens);
        let whole = tokens.count_request(Some("Be brief."), &messages.iter().collect::<Vec<_>>());
        let first_words = user("m1", "Port this module; do not change its API.\n\n");
        let expected = tokens.count_request(Some("Be brief."), &[&first_words, &messages[18], &messages[19]]);
        assert_eq!(floor, expected);
        assert!(floor * 10 < whole, "{floor} of {whole}");
        // Keeping more raises it.
        assert!(floor_tokens(&ctx, 5, &tokens) > floor);
    }
}

/// What a provider that works to a target and keeps the last messages (`truncation`,
/// `handover`) reads of its options: the messages kept at the end (the caller's, else its
/// configuration's) and the target (the caller's, else its share of the context).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reach {
    pub(crate) keep_last: usize,
    pub(crate) target: usize,
}

/// The configuration of such a provider: what [`Reach::configured`] reads of it.
pub(crate) trait ReachConfig: serde::de::DeserializeOwned + Default {
    /// The messages at the end kept as they are, and the target as a percentage of the current
    /// context (used when no target in tokens is given).
    fn reach(&self) -> (usize, u8);
}

impl Reach {
    pub(crate) fn of(
        ctx: &CondensationContext<'_>,
        options: &crate::provider::CondensationOptions,
        keep_last: usize,
        target_percent: u8,
    ) -> Reach {
        Reach {
            keep_last: options.keep_last.unwrap_or(keep_last),
            target: options.target_or(ctx.prev_context_tokens * usize::from(target_percent) / 100),
        }
    }

    /// The reach of the provider `id`, configured by a `C` in `options`.
    pub(crate) fn configured<C: ReachConfig>(
        ctx: &CondensationContext<'_>,
        options: &crate::provider::CondensationOptions,
        id: &str,
    ) -> Result<Reach, crate::error::CondenseError> {
        let (keep_last, target_percent) = options.typed_config::<C>(id)?.reach();
        Ok(Reach::of(ctx, options, keep_last, target_percent))
    }

    /// The visible messages of a run within this reach, split where the middle ends;
    /// `nothing_to_condense` when the context is within the target already.
    pub(crate) fn span(self, ctx: &CondensationContext<'_>) -> Result<Span, crate::error::CondenseError> {
        self.needed(ctx.prev_context_tokens)?;
        let visible = ctx.visible();
        let middle_end = self.middle_end(&visible);
        Ok(Span { reach: self, visible, middle_end })
    }

    /// The target and the floor under it.
    pub(crate) fn target_floor(
        &self,
        ctx: &CondensationContext<'_>,
        tokens: &dyn TokenCounter,
    ) -> crate::provider::TargetFloor {
        crate::provider::TargetFloor {
            target: self.target,
            floor: floor_tokens(ctx, self.keep_last, tokens),
            keep_last: self.keep_last,
        }
    }

    /// `nothing_to_condense` when the context is within the target already.
    pub(crate) fn needed(&self, before: usize) -> Result<(), crate::error::CondenseError> {
        if before <= self.target {
            return Err(crate::error::CondenseError::NothingToCondense(format!(
                "the context has {before} tokens, already within the target of {}",
                self.target
            )));
        }
        Ok(())
    }

    /// The metrics every run within a reach begins with: its condense id, the target, whether
    /// the `total` tokens the run left meet it, and the messages kept at the end.
    pub(crate) fn metrics(
        &self,
        condense_id: String,
        total: usize,
    ) -> serde_json::Map<String, serde_json::Value> {
        let mut metrics = serde_json::Map::new();
        metrics.insert("condense_id".into(), condense_id.into());
        metrics.insert("target_tokens".into(), self.target.into());
        metrics.insert("target_met".into(), (total <= self.target).into());
        metrics.insert("keep_last".into(), self.keep_last.into());
        metrics
    }

    /// Where the middle of the visible messages ends: before the last `keep_last`, after the
    /// first.
    pub(crate) fn middle_end(&self, visible: &[usize]) -> usize {
        visible.len().saturating_sub(self.keep_last).max(1)
    }
}

/// The visible messages of a run within a [`Reach`]: the first, the middle the run may condense,
/// and the tail it keeps.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub(crate) reach: Reach,
    /// The visible messages, by index into the context's messages.
    pub(crate) visible: Vec<usize>,
    /// Where in `visible` the middle ends (see [`Reach::middle_end`]).
    pub(crate) middle_end: usize,
}

impl Span {
    /// The middle: after the first visible message, before the last `keep_last`.
    pub(crate) fn middle(&self) -> &[usize] {
        self.visible.get(1..self.middle_end).unwrap_or_default()
    }

    /// The messages of the kept tail, in order.
    pub(crate) fn tail<'a>(&self, messages: &'a [Message]) -> Vec<&'a Message> {
        self.visible[self.middle_end.min(self.visible.len())..].iter().map(|&i| &messages[i]).collect()
    }
}
