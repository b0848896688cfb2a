//! The rows of `condense eval` for people: aligned columns for a terminal, or a Markdown table.

use std::path::Path;

use super::future::RecallRow;
use super::rows::{Row, Status};

const HEADERS: [&str; 8] =
    ["file", "provider", "tokens before → after", "reduction", "retention", "cost", "time", "note"];

/// The cells of one row, in the order of `HEADERS`.
fn cells(row: &Row, file: String) -> [String; 8] {
    let tokens = match row.status {
        Status::Skipped => format!("{} → —", row.tokens_before),
        _ => format!("{} → {}", row.tokens_before, row.tokens_after),
    };
    let reduction = match row.status {
        Status::Ok => format!("{:.1}%", row.reduction_pct),
        _ => "—".into(),
    };
    let retention = match &row.retention {
        Some(r) if r.probes > 0 => {
            format!("{}/{} ({:.0}%)", r.kept, r.probes, r.kept as f64 * 100.0 / r.probes as f64)
        }
        Some(_) => "0/0".into(),
        None => "—".into(),
    };
    let time = match row.status {
        Status::Skipped => "—".into(),
        _ => format!("{:.0} ms", row.time_ms),
    };
    [file, row.provider.clone(), tokens, reduction, retention, format!("${:.4}", row.cost), time, note(row)]
}

/// What else a reader must know: the error, why it was skipped, the passes, a cut summary.
fn note(row: &Row) -> String {
    let mut parts = Vec::new();
    if let Some(e) = &row.error {
        // Messages often open with the kind in words ("nothing to condense: …"): say it once.
        let words = e.kind.to_string().replace('_', " ");
        let message =
            e.message.strip_prefix(&words).map_or(e.message.as_str(), |m| m.trim_start_matches([':', ' ']));
        parts.push(format!("{}: {message}", e.kind));
    }
    if let Some(reason) = &row.skipped {
        parts.push(format!("skipped: {reason}"));
    }
    if !row.passes.is_empty() {
        let passes: Vec<String> = row
            .passes
            .iter()
            .map(|p| match &p.skipped {
                Some(why) => format!("{} ({why})", p.pass),
                None => format!("{} {}", p.pass, crate::report::gain(p.tokens_saved)),
            })
            .collect();
        parts.push(format!("passes: {}", passes.join(", ")));
    }
    if row.summary_truncated {
        parts.push("summary cut by its output limit".into());
    }
    if let Some(r) = &row.retention
        && !r.missing.is_empty()
    {
        let shown: Vec<&str> = r.missing.iter().take(3).map(|p| p.needle.as_str()).collect();
        let more = r.missing.len().saturating_sub(shown.len());
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        parts.push(format!("missing: \"{}\"{tail}", shown.join("\", \"")));
    }
    parts.join("; ")
}

/// Aligned columns; the note column is last and left unpadded.
pub(super) fn table(rows: &[Row]) -> String {
    let body: Vec<[String; 8]> = rows.iter().map(|r| cells(r, r.file.clone())).collect();
    let mut widths = HEADERS.map(|h| h.chars().count());
    for cells in &body {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                out.push_str(c);
                out.push_str(&" ".repeat(w - c.chars().count() + 2));
            }
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = line(&HEADERS.map(str::to_uppercase));
    for cells in &body {
        out.push_str(&line(cells));
    }
    out
}

/// A Markdown table; files by their name only.
pub(super) fn markdown(rows: &[Row]) -> String {
    let mut out = format!("| {} |\n|{}\n", HEADERS.join(" | "), " --- |".repeat(HEADERS.len()));
    for row in rows {
        let name =
            Path::new(&row.file).file_name().map_or(row.file.clone(), |n| n.to_string_lossy().into_owned());
        let cells = cells(row, format!("`{name}`")).map(|c| c.replace('|', "\\|"));
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// The rows of `--references` in aligned columns, one row per session, cut and provider.
pub(super) fn recall_table(rows: &[RecallRow]) -> String {
    let headers =
        ["file", "cut", "target", "provider", "tokens", "of the past", "references kept", "time", "note"];
    let body: Vec<[String; 9]> = rows
        .iter()
        .map(|r| {
            let note = match (&r.error, r.missing.is_empty()) {
                (Some(e), _) => format!("{}: {}", e.kind, e.message),
                (None, false) => {
                    let shown: Vec<&str> = r.missing.iter().take(4).map(|m| m.text.as_str()).collect();
                    let more = r.missing.len().saturating_sub(shown.len());
                    let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
                    format!("lost: {}{tail}", shown.join(", "))
                }
                (None, true) => String::new(),
            };
            [
                r.file.clone(),
                format!("{}% ({} | {})", r.cut_percent, r.past_messages, r.future_messages),
                format!("{}%", r.target_percent),
                r.provider.clone(),
                format!("{} → {}", r.past_tokens, r.tokens_after),
                format!("{:.0}%", r.tokens_after as f64 * 100.0 / r.past_tokens.max(1) as f64),
                format!("{}/{} ({:.0}%)", r.kept, r.references, r.kept_pct()),
                format!("{:.0} ms", r.time_ms),
                note,
            ]
        })
        .collect();
    aligned(&headers, &body)
}

/// The rows of `--references` as EVAL.md shows them: one line per session and provider, each
/// cut's figures side by side.
pub(super) fn recall_summary(rows: &[RecallRow]) -> String {
    let headers = [
        "session",
        "target",
        "provider",
        "references kept, by cut",
        "tokens (of the past)",
        "instructions kept",
        "tool pairs",
        "note",
    ];
    let mut groups: Vec<(&str, u8, &str, Vec<&RecallRow>)> = Vec::new();
    for r in rows {
        match groups
            .iter_mut()
            .find(|(f, t, p, _)| *f == r.file && *t == r.target_percent && *p == r.provider)
        {
            Some((_, _, _, list)) => list.push(r),
            None => groups.push((&r.file, r.target_percent, &r.provider, vec![r])),
        }
    }
    // By session, then target, each provider's cuts side by side.
    groups.sort_by_key(|(f, t, _, _)| (rows.iter().position(|r| r.file == *f), *t));
    let mut out = format!("| {} |\n|{}\n", headers.join(" | "), " --- |".repeat(headers.len()));
    for (file, target, provider, list) in groups {
        let name = Path::new(file).file_name().map_or(file.to_owned(), |n| n.to_string_lossy().into_owned());
        let kept: Vec<String> = list
            .iter()
            .map(|r| match &r.error {
                Some(_) => format!("{}%: —", r.cut_percent),
                None => format!("{}%: {}/{} ({:.0}%)", r.cut_percent, r.kept, r.references, r.kept_pct()),
            })
            .collect();
        let tokens: Vec<String> = list
            .iter()
            .map(|r| format!("{:.0}%", r.tokens_after as f64 * 100.0 / r.past_tokens.max(1) as f64))
            .collect();
        let instructions: Vec<String> = list
            .iter()
            .map(|r| r.instructions.map_or_else(|| "—".to_owned(), |(k, n)| format!("{k}/{n}")))
            .collect();
        let pairs = if list.iter().all(|r| r.pairs_valid) { "valid" } else { "broken" };
        let mut notes: Vec<String> = list
            .iter()
            .filter_map(|r| {
                r.error
                    .as_ref()
                    .map(|e| format!("{}% cut: {}: {}", r.cut_percent, e.kind, e.message))
                    .or_else(|| r.note.as_ref().map(|n| format!("{}% cut: {n}", r.cut_percent)))
            })
            .collect();
        notes.dedup();
        let cells = [
            format!("`{name}`"),
            format!("{target}%"),
            provider.to_owned(),
            kept.join(" · "),
            tokens.join(" · "),
            instructions.join(" · "),
            pairs.to_owned(),
            notes.join("; "),
        ]
        .map(|c| c.replace('|', "\\|"));
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// The means of `--references`, by target: for each provider, the share of references kept over
/// every session and cut where it ran and truncation met its floor (a cut whose target is below
/// truncation's floor is refused, not scored), the lowest of them, and — beside truncation — the
/// cuts where the provider kept two points or more less than truncation did.
pub(super) fn recall_means(rows: &[RecallRow], markdown: bool) -> String {
    let mut targets: Vec<u8> = rows.iter().map(|r| r.target_percent).collect();
    targets.sort_unstable();
    targets.dedup();
    let mut providers: Vec<&str> = Vec::new();
    for r in rows {
        if !providers.contains(&r.provider.as_str()) {
            providers.push(&r.provider);
        }
    }
    let headers =
        ["target", "provider", "cuts", "mean kept", "lowest", "below truncation − 2", "tokens (of the past)"];
    let mut body: Vec<[String; 7]> = Vec::new();
    for &target in &targets {
        let at = |r: &&RecallRow| r.target_percent == target;
        // The cuts truncation could be scored on: the floor allows them.
        let allowed = |r: &RecallRow| {
            rows.iter().filter(at).any(|t| {
                t.provider == "truncation"
                    && t.file == r.file
                    && t.cut_percent == r.cut_percent
                    && t.error.is_none()
            }) || !rows.iter().any(|t| t.provider == "truncation")
        };
        for &provider in &providers {
            let scored: Vec<&RecallRow> = rows
                .iter()
                .filter(at)
                .filter(|r| r.provider == provider && r.error.is_none() && r.references > 0 && allowed(r))
                .collect();
            if scored.is_empty() {
                continue;
            }
            let mean = scored.iter().map(|r| r.kept_pct()).sum::<f64>() / scored.len() as f64;
            let lowest = scored.iter().map(|r| r.kept_pct()).fold(f64::INFINITY, f64::min);
            let tokens = scored
                .iter()
                .map(|r| r.tokens_after as f64 * 100.0 / r.past_tokens.max(1) as f64)
                .sum::<f64>()
                / scored.len() as f64;
            let below = scored
                .iter()
                .filter(|r| {
                    rows.iter().filter(at).any(|t| {
                        t.provider == "truncation"
                            && t.file == r.file
                            && t.cut_percent == r.cut_percent
                            && t.error.is_none()
                            && r.kept_pct() < t.kept_pct() - 2.0
                    })
                })
                .count();
            body.push([
                format!("{target}%"),
                provider.to_owned(),
                scored.len().to_string(),
                format!("{mean:.1}%"),
                format!("{lowest:.0}%"),
                if provider == "truncation" { "—".into() } else { below.to_string() },
                format!("{tokens:.0}%"),
            ]);
        }
    }
    if markdown {
        let mut out = format!("| {} |\n|{}\n", headers.join(" | "), " --- |".repeat(headers.len()));
        for cells in &body {
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        return out;
    }
    aligned(&headers, &body)
}

/// Rows in aligned columns under upper-case headers, two spaces between columns.
fn aligned<const N: usize>(headers: &[&str; N], body: &[[String; N]]) -> String {
    let mut widths = headers.map(|h| h.chars().count());
    for cells in body {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (c, w) in cells.iter().zip(widths) {
            out.push_str(c);
            out.push_str(&" ".repeat(w.saturating_sub(c.chars().count()) + 2));
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = line(&headers.map(str::to_uppercase));
    for cells in body {
        out.push_str(&line(cells));
    }
    out
}
