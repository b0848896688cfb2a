//! The one line `condense run` prints on stderr for a person (when stderr is a terminal, or with
//! `--summary`): what ran, tokens before → after, what happened to the messages, time and cost.
//!
//! `truncation: 8,861 → 1,959 tokens (−78%) · 16 hidden · 23 edited · 1.6 ms`
//!
//! The counts come from the result itself, compared with the input: *hidden* are the messages
//! the model saw before and no longer sees, with nothing but a summary standing in for them;
//! *edited* are the new, shorter copies that replace the others (each original is kept, hidden,
//! so `undo` brings it back); *summary* is shown when the run wrote one.

use std::collections::HashSet;

use condense_core::CondensationResult;
use condense_core::model::Message;
use condense_core::providers::thousands;

/// What the line says besides the result.
pub(crate) struct Context<'a> {
    /// The provider asked for (the result's metrics name the one that ran when there are any).
    pub(crate) provider: &'a str,
    /// The input conversation's messages.
    pub(crate) input: &'a [Message],
    /// Tokens of the input's API view, counted as the result's `new_context_tokens` is.
    pub(crate) tokens_before: usize,
    /// Whether an LLM was lent to the run: then the cost is shown even when it is zero.
    pub(crate) llm: bool,
}

/// The line, without a newline.
pub(crate) fn line(cx: &Context<'_>, result: &CondensationResult) -> String {
    let provider = result.metrics.as_ref().map_or(cx.provider, |m| m.provider_id.as_str());
    let mut parts = Vec::new();
    match (&result.error, result.new_context_tokens) {
        (Some(error), _) => {
            parts.push(format!("{provider}: failed, {}: {}", error.kind, error.message));
            parts.push("nothing changed".to_owned());
        }
        (None, after) => {
            let after = after.unwrap_or(cx.tokens_before);
            parts.push(format!(
                "{provider}: {} → {} tokens{}",
                thousands(cx.tokens_before),
                thousands(after),
                change(cx.tokens_before, after)
            ));
            let counts = Counts::of(cx.input, &result.messages);
            parts.push(format!("{} hidden", thousands(counts.hidden)));
            parts.push(format!("{} edited", thousands(counts.edited)));
            match counts.summaries {
                0 => {}
                1 => parts.push("1 summary".to_owned()),
                n => parts.push(format!("{n} summaries")),
            }
        }
    }
    if let Some(metrics) = &result.metrics {
        parts.push(duration(metrics.time_elapsed_ms));
    }
    if cx.llm || result.cost > 0.0 {
        parts.push(dollars(result.cost));
    }
    parts.join(" · ")
}

/// What a run did to the messages, found by comparing its output with its input.
#[derive(Debug, PartialEq, Eq)]
struct Counts {
    /// Messages visible before and hidden after, less those an edited copy replaces.
    hidden: usize,
    /// New visible messages that are not summaries: edited copies (a ledger's host included).
    edited: usize,
    /// New visible summaries.
    summaries: usize,
}

impl Counts {
    fn of(input: &[Message], output: &[Message]) -> Counts {
        let known: HashSet<&str> = input.iter().map(|m| m.id.as_str()).collect();
        let visible: HashSet<&str> =
            input.iter().filter(|m| m.condense_parent.is_none()).map(|m| m.id.as_str()).collect();
        let newly_hidden =
            output.iter().filter(|m| m.condense_parent.is_some() && visible.contains(m.id.as_str())).count();
        let added = output.iter().filter(|m| m.condense_parent.is_none() && !known.contains(m.id.as_str()));
        let (summaries, edited) =
            added.fold((0, 0), |(s, e), m| if m.is_summary { (s + 1, e) } else { (s, e + 1) });
        Counts { hidden: newly_hidden.saturating_sub(edited), edited, summaries }
    }
}

/// ` (−78%)`, or nothing when there was nothing to measure.
fn change(before: usize, after: usize) -> String {
    if before == 0 {
        return String::new();
    }
    let percent = ((after as f64 - before as f64) / before as f64 * 100.0).round() as i64;
    match percent {
        0 => " (0%)".to_owned(),
        p if p < 0 => format!(" (−{}%)", -p),
        p => format!(" (+{p}%)"),
    }
}

/// `1.6 ms`, `2.3 s`.
fn duration(ms: f64) -> String {
    if ms < 1000.0 { format!("{ms:.1} ms") } else { format!("{:.1} s", ms / 1000.0) }
}

/// `$0.0012`; a cost below a hundredth of a cent keeps its first digits.
fn dollars(cost: f64) -> String {
    if cost > 0.0 && cost < 0.0001 { format!("${cost:.6}") } else { format!("${cost:.4}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use condense_core::model::{ContentBlock, Role};
    use condense_core::provider::Metrics;
    use condense_core::{ErrorInfo, ErrorKind};

    fn message(id: &str) -> Message {
        Message::new(id, Role::User, vec![ContentBlock::text(id)])
    }

    fn hidden(id: &str) -> Message {
        Message { condense_parent: Some("c1".into()), ..message(id) }
    }

    fn copy(id: &str) -> Message {
        Message { condense_id: Some("c1".into()), ..message(id) }
    }

    fn result(messages: Vec<Message>, after: Option<usize>, ms: f64) -> CondensationResult {
        CondensationResult {
            messages,
            summary: None,
            cost: 0.0,
            new_context_tokens: after,
            error: None,
            metrics: Some(Metrics {
                provider_id: "truncation".into(),
                time_elapsed_ms: ms,
                tokens_saved: None,
                extra: Default::default(),
            }),
        }
    }

    #[test]
    fn counts_what_this_run_hid_edited_and_summarized() {
        // m0 was hidden by an earlier run; m1 is dropped, m2 edited, m3 and m4 summarized.
        let input =
            vec![hidden("m0"), message("m1"), message("m2"), message("m3"), message("m4"), message("m5")];
        let summary = Message { is_summary: true, ..copy("s") };
        let output = vec![
            hidden("m0"),
            hidden("m1"),
            hidden("m2"),
            copy("m2.c1"),
            hidden("m3"),
            hidden("m4"),
            summary,
            message("m5"),
        ];
        assert_eq!(Counts::of(&input, &output), Counts { hidden: 3, edited: 1, summaries: 1 });
        assert_eq!(Counts::of(&input, &input), Counts { hidden: 0, edited: 0, summaries: 0 });
    }

    #[test]
    fn the_line_reads_like_the_issue() {
        let input: Vec<Message> = (0..4).map(|i| message(&format!("m{i}"))).collect();
        let output = vec![message("m0"), hidden("m1"), hidden("m2"), copy("m2.c1"), message("m3")];
        let cx = Context { provider: "truncation", input: &input, tokens_before: 8861, llm: false };
        assert_eq!(
            line(&cx, &result(output, Some(1959), 1.64)),
            "truncation: 8,861 → 1,959 tokens (−78%) · 1 hidden · 1 edited · 1.6 ms"
        );
        let mut expensive = result(input.clone(), Some(8861), 2345.0);
        expensive.cost = 0.00123;
        let cx = Context { llm: true, tokens_before: 8861, ..cx };
        assert_eq!(
            line(&cx, &expensive),
            "truncation: 8,861 → 8,861 tokens (0%) · 0 hidden · 0 edited · 2.3 s · $0.0012"
        );
    }

    #[test]
    fn a_failed_run_names_its_error_kind() {
        let input = vec![message("m0")];
        let mut failed = result(input.clone(), None, 12.0);
        failed.error = Some(ErrorInfo::new(ErrorKind::LlmAuth, "the key was refused"));
        failed.metrics.as_mut().unwrap().provider_id = "native".into();
        let cx = Context { provider: "native", input: &input, tokens_before: 500, llm: true };
        assert_eq!(
            line(&cx, &failed),
            "native: failed, llm_auth: the key was refused · nothing changed · 12.0 ms · $0.0000"
        );
    }

    #[test]
    fn numbers_for_people() {
        assert_eq!(change(100, 150), " (+50%)");
        assert_eq!(change(0, 0), "");
        assert_eq!(dollars(0.00001), "$0.000010");
    }
}
