//! What `condense run` and `condense count` tell a person at a terminal, in place of the JSON a
//! script reads (`--json`, `-o FILE`, or stdout that is not a terminal): a few lines that say
//! what happened — tokens before and after, each pass's gain, what the ledger kept, whether the
//! facts a run is checked against are still there, where the result went.

use condense_core::model::Conversation;
use condense_core::providers::thousands;
use condense_core::tokens::TokenReport;
use condense_core::{CondensationResult, Role};

use crate::summary;

/// The report of a run: the summary line, then what the target, the passes, the ledger, the
/// probes and the output say.
pub(crate) fn run(cx: &summary::Context<'_>, result: &CondensationResult, written: Option<&str>) -> String {
    let mut out = vec![summary::line(cx, result)];
    let extra = result.metrics.as_ref().map(|m| &m.extra);
    let get = |key: &str| extra.and_then(|e| e.get(key));
    if result.error.is_none() {
        if let Some(target) = get("target_tokens").and_then(serde_json::Value::as_u64) {
            let met = get("target_met").and_then(serde_json::Value::as_bool).unwrap_or(true);
            let floor = get("floor_tokens")
                .and_then(serde_json::Value::as_u64)
                .map_or_else(String::new, |f| format!(" (what must stay: {} tokens)", thousands(f as usize)));
            out.push(format!(
                "  target {} tokens: {}{floor}",
                thousands(target as usize),
                if met { "met" } else { "not met" }
            ));
        }
        if let Some(note) = get("note").and_then(serde_json::Value::as_str) {
            out.push(format!("  note: {note}"));
        }
        let passes = result.metrics.as_ref().map(|m| m.passes()).unwrap_or_default();
        if !passes.is_empty() {
            let rows: Vec<String> = passes
                .iter()
                .map(|p| match &p.skipped {
                    Some(_) => format!("{} (skipped)", p.pass),
                    None => format!("{} {}", p.pass, gain(p.tokens_saved)),
                })
                .collect();
            out.push(format!("  passes: {}", rows.join(", ")));
        }
        if let Some(ledger) = get("ledger").filter(|l| l["tokens"].as_u64().unwrap_or(0) > 0) {
            let count = |key: &str, one: &str, many: &str| {
                let n = ledger[key].as_u64().unwrap_or(0);
                (n > 0).then(|| format!("{n} {}", if n == 1 { one } else { many }))
            };
            let kept: Vec<String> = [
                count("user_messages", "user message", "user messages"),
                count("files", "file", "files"),
                count("commands", "command", "commands"),
                count("errors", "error", "errors"),
                count("findings", "finding", "findings"),
                count("todos", "todo", "todos"),
                count("names", "name in play", "names in play"),
            ]
            .into_iter()
            .flatten()
            .collect();
            out.push(format!(
                "  the ledger of what it hid ({} tokens): {}",
                thousands(ledger["tokens"].as_u64().unwrap_or(0) as usize),
                kept.join(", ")
            ));
        }
        if let Some(r) = result.metrics.as_ref().and_then(|m| m.retention()).filter(|r| r.probes > 0) {
            let missing = match r.missing.is_empty() {
                true => String::new(),
                false => format!(" — missing: {}", r.missing.join("; ")),
            };
            out.push(format!(
                "  kept what the user said and the files changed: {}/{} checked{}",
                r.kept, r.probes, missing
            ));
        }
    }
    out.push(match written {
        Some(path) => format!("  written to {path}"),
        None if result.error.is_none() => {
            "  nothing written: `-o FILE` saves the condensed conversation, `--json` prints it".to_owned()
        }
        None => "  nothing changed".to_owned(),
    });
    out.join("\n") + "\n"
}

/// The report of a count: the total, the largest messages, and where each message's count went.
/// `written` names the file the JSON went to (`-o FILE`).
pub(crate) fn count(
    file: &str,
    conversation: &Conversation,
    report: &TokenReport,
    written: Option<&str>,
) -> String {
    let mut out = vec![format!(
        "{file}: {} tokens in {} messages ({}, {})",
        thousands(report.total_tokens),
        report.messages.len(),
        report.model,
        report.encoding
    )];
    if report.readable_tokens < report.total_tokens {
        out.push(format!(
            "  {} of them readable: the rest is opaque (encrypted reasoning, signatures, base64)",
            thousands(report.readable_tokens)
        ));
    }
    let view = conversation.api_view();
    let mut largest: Vec<(usize, usize)> =
        report.messages.iter().enumerate().map(|(i, m)| (i, m.tokens)).collect();
    largest.sort_by_key(|&(i, t)| (std::cmp::Reverse(t), i));
    let shown: Vec<String> = largest
        .iter()
        .take(LARGEST)
        .map(|&(i, t)| {
            let role = match view.get(i).map(|m| m.role) {
                Some(Role::User) => "user",
                Some(Role::Assistant) => "assistant",
                None => "?",
            };
            format!("#{} {role} {}", i + 1, thousands(t))
        })
        .collect();
    if !shown.is_empty() {
        out.push(format!("  the largest: {}", shown.join(", ")));
    }
    out.push(match written {
        Some(path) => format!("  each message's count written to {path}"),
        None => "  `--json` prints each message's count".to_owned(),
    });
    out.join("\n") + "\n"
}

/// How many of the largest messages `count` names.
const LARGEST: usize = 5;

/// A pass's gain as a person reads it: `−1,204` for tokens saved, `+264` for tokens a pass added
/// (the ledger's own text).
pub(crate) fn gain(tokens_saved: i64) -> String {
    let n = thousands(usize::try_from(tokens_saved.unsigned_abs()).unwrap_or(usize::MAX));
    if tokens_saved < 0 { format!("+{n}") } else { format!("−{n}") }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_gain_reads_as_tokens_saved_or_added() {
        assert_eq!(super::gain(1204), "−1,204");
        assert_eq!(super::gain(-264), "+264");
    }
}
