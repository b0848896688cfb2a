//! What a tool's result shows: the outline of a file read, a command's outcome and summary, the
//! errors it reported and the ones it fixed, the paths a listing names, the lines a search
//! found, a sub-agent's findings. [`Pending`] is what a call leaves for its result to tell.

use crate::ledger::calls::{command_output, outcome};
use crate::ledger::errors::{passed, problems, summary_line};
use crate::ledger::findings::findings;
use crate::ledger::outline::outline;
use crate::ledger::{COMMAND_CHARS, ErrorSeen, Finding, Ledger, one_line};

use super::state::{MAX_OUTLINE, mentions, number};

impl Ledger {
    /// The assistant's findings in a text.
    pub(super) fn found(&mut self, text: &str, at: Option<usize>) {
        for sentence in findings(text) {
            let sentence = one_line(sentence, FINDING_CHARS);
            if !self.findings.iter().any(|f| f.text == sentence) {
                self.findings.push(Finding { text: sentence, at });
            }
        }
    }

    /// What a tool's result shows: the outline of a file read, a command's outcome, the errors
    /// it reported and whether it fixed earlier ones.
    pub(super) fn result(&mut self, call: &Pending, text: &str, is_error: bool, at: Option<usize>) {
        let body = command_output(text);
        if let [(path, first)] = call.reads.as_slice() {
            self.saw(path, &body, *first);
        }
        if let Some(command) = &call.command {
            // A report is words, not output: no exit code or error lines are read in it.
            if call.kind != ResultKind::Report {
                self.ran_result(command, text, &body, is_error, at);
            }
            let key = one_line(command, COMMAND_CHARS);
            if call.kind == ResultKind::Read {
                let ok = self.commands.iter().rev().find(|c| c.command == key).is_some_and(|c| {
                    c.outcome.as_deref().is_none_or(|o| o == "exit 0")
                        && !self.errors.iter().any(|e| e.command.as_deref() == Some(key.as_str()))
                });
                if ok {
                    self.commands.retain(|c| c.command != key);
                }
            }
            let entry = self.commands.iter_mut().rev().find(|c| c.command == key);
            match (call.kind, entry) {
                (ResultKind::Listing | ResultKind::Report, Some(c)) => c.listed = listed(paths_in(&body)),
                (ResultKind::Search, Some(c)) => c.matches = found_lines(&body),
                _ => {}
            }
            if call.kind == ResultKind::Report {
                for sentence in findings(&body).into_iter().take(MAX_REPORT_FINDINGS) {
                    let sentence = one_line(sentence, FINDING_CHARS);
                    if !self.findings.iter().any(|f| f.text == sentence) {
                        self.findings.push(Finding { text: sentence, at });
                    }
                }
            }
        }
    }

    /// What a read showed of a file: its outline, and for a document what it mentions.
    pub(super) fn saw(&mut self, path: &str, text: &str, first: usize) {
        let symbols = outline(path, text, first, MAX_OUTLINE);
        let named = mentions(path, text);
        if let Some(file) = self.file_mut(path) {
            if !symbols.is_empty() {
                file.outline = symbols.iter().map(|s| s.render()).collect();
            }
            if !named.is_empty() {
                file.mentions = named;
            }
        }
    }

    /// A command's result: its outcome and summary, the errors it reported, the ones it fixed.
    pub(super) fn ran_result(
        &mut self,
        command: &str,
        text: &str,
        body: &str,
        is_error: bool,
        at: Option<usize>,
    ) {
        let outcome = outcome(text, body, is_error);
        let passed_run = outcome.as_deref() == Some("exit 0") || (outcome.is_none() && !is_error);
        self.set_outcome(command, outcome);
        let summary = summary_line(body);
        let key = one_line(command, COMMAND_CHARS);
        if let Some(c) = self.commands.iter_mut().rev().find(|c| c.command == key) {
            c.summary = summary.clone();
            c.at = at.or(c.at);
        }
        let found = problems(body);
        // A failure no tool format names: its last lines say what went wrong.
        if !passed_run
            && found.is_empty()
            && summary.is_none()
            && let Some(c) = self.commands.iter_mut().rev().find(|c| c.command == key)
        {
            // Cline's own lines around the output, and the line the outcome quotes already, aside.
            let said = c.outcome.clone().unwrap_or_default();
            let tail: Vec<String> = body
                .lines()
                .map(|l| one_line(l, 160))
                .filter(|l| {
                    !l.is_empty()
                        && !matches!(l.as_str(), "Command executed." | "Output:")
                        && !said.contains(l.as_str())
                })
                .collect();
            let skip = tail.len().saturating_sub(FAILURE_TAIL);
            c.matches = tail[skip..].to_vec();
        }
        let failing_summary = summary.as_deref().is_some_and(|s| {
            let l = s.to_ascii_lowercase();
            l.contains("fail") && !l.contains(" 0 failed") && !l.contains("0 failed") || l.contains("error")
        });
        if passed_run && found.is_empty() && !failing_summary {
            let how = format!("`{}` passed at {}", one_line(command, 80), number(at));
            for e in self
                .errors
                .iter_mut()
                .filter(|e| e.command.as_deref() == Some(key.as_str()) && e.fixed.is_none())
            {
                e.fixed = Some(how.clone());
            }
        }
        for name in passed(body) {
            let how = format!("passed at {}", number(at));
            for e in self.errors.iter_mut().filter(|e| e.key == name && e.fixed.is_none()) {
                e.fixed = Some(how.clone());
            }
        }
        for p in found {
            self.errors.retain(|e| e.key != p.key);
            self.errors.push(ErrorSeen {
                key: p.key,
                text: p.text,
                at,
                command: Some(key.clone()),
                fixed: None,
            });
        }
    }
}

/// What a tool call's result will tell more of.
#[derive(Debug)]
pub(super) struct Pending {
    /// The command it runs, as the ledger shows it.
    pub(super) command: Option<String>,
    /// The files it prints, each with its first line printed.
    pub(super) reads: Vec<(String, usize)>,
    /// What its result is: output, a listing of paths, or a sub-agent's report.
    pub(super) kind: ResultKind,
}

/// What a tool's result holds, for what the ledger reads of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ResultKind {
    /// A command's output, or a file's text.
    Output,
    /// Paths: a listing.
    Listing,
    /// Lines found by a search.
    Search,
    /// A sub-agent's report: findings and the paths it names.
    Report,
    /// A command that only printed files (`cat`, `sed -n`): the files it read say it; the
    /// command itself is kept only when it failed.
    Read,
}

/// The paths a text names, in order, without repeats: words with a `/` and a named segment, or
/// a file name with an extension; a `path:12:` location gives its path.
fn paths_in(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for word in text.split(|c: char| {
        c.is_whitespace()
            || matches!(c, ',' | ';' | '(' | ')' | '[' | ']' | '{' | '}' | '"' | '\'' | '`' | '<' | '>' | '|')
    }) {
        let word = word.split(':').next().unwrap_or(word).trim_end_matches(['.', ':']);
        if word.len() < 3 || word.contains("://") || word.starts_with("//") {
            continue;
        }
        let name = word.rsplit('/').next().unwrap_or(word);
        let file = name.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=6).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        });
        let dir = word.matches('/').count() >= 1 && word.split('/').filter(|s| !s.is_empty()).count() >= 2;
        let valid =
            word.chars().all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '~' | '@' | '+'));
        if valid && (file || dir) && name.chars().any(|c| c.is_alphabetic()) && !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// The most paths a listing keeps.
const MAX_LISTED: usize = 300;

/// The first [`MAX_LISTED`] of some paths, then how many more: the paths with a folder first,
/// then the bare names no such path ends with.
fn listed(paths: Vec<&str>) -> Vec<String> {
    let (full, bare): (Vec<&str>, Vec<&str>) = paths.into_iter().partition(|p| p.contains('/'));
    let bare: Vec<&str> =
        bare.into_iter().filter(|b| !full.iter().any(|f| f.ends_with(&format!("/{b}")))).collect();
    let paths: Vec<&str> = full.into_iter().chain(bare).collect();
    let more = paths.len().saturating_sub(MAX_LISTED);
    let mut out: Vec<String> = paths.into_iter().take(MAX_LISTED).map(str::to_owned).collect();
    if more > 0 {
        out.push(format!("+{more} more"));
    }
    out
}

/// The lines a search printed, the first [`MAX_MATCHES`], each on one line and cut; then how
/// many more.
fn found_lines(output: &str) -> Vec<String> {
    let lines: Vec<&str> = output.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let more = lines.len().saturating_sub(MAX_MATCHES);
    let mut out: Vec<String> = lines.into_iter().take(MAX_MATCHES).map(|l| one_line(l, 120)).collect();
    if more > 0 {
        out.push(format!("(+{more} more lines)"));
    }
    out
}

/// The most lines of a search kept.
const MAX_MATCHES: usize = 30;

/// Characters of a finding.
const FINDING_CHARS: usize = 300;

/// The last lines of a failed command's output kept when no error format names the failure.
const FAILURE_TAIL: usize = 3;

/// The most findings kept of one sub-agent's report.
const MAX_REPORT_FINDINGS: usize = 6;
