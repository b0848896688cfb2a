//! The names of what was hidden: the paths, symbols and error names the hidden messages hold that
//! nothing the model still sees shows — not the kept messages, not the working state — each with
//! where it was last seen. A later turn names a file it listed, a setting it read, a function an
//! edit wrote; a condensation that hid the message keeps the name and the place to look.
//!
//! Each name is weighed by what predicts that a later turn needs it, computed from the past alone:
//! how many messages used it (the model's own more), how late it was last seen, and what it costs
//! to write (a name of four tokens for the room of one of sixteen). The rendering takes names by
//! weight within its share of the working state's budget and writes them grouped by the message
//! they were last seen in, latest first.

use std::collections::HashMap;

use crate::model::{Message, Role};
use crate::tokens::TokenCounter;

use super::names::names_in;
use super::probes::{Haystack, normalize};
use super::{Ledger, SEEN_HEADER, SeenName};

/// The most names a ledger carries (the rendering takes fewer, within its budget).
const MAX_SEEN: usize = 600;
/// The longest name kept, in characters.
const NAME_CHARS: usize = 120;

/// How often and where one name was seen: `place` indexes the places of the walk.
struct Stats {
    messages: usize,
    by_model: usize,
    last: usize,
    place: usize,
}

impl Ledger {
    /// The names `hidden` (what a condensation hid, numbered) holds that `visible` (the kept
    /// messages' text, [`normalize`]d) and the working state do not show, weighed (see the module
    /// docs), heaviest first; the names an earlier ledger listed that are still not shown after
    /// them.
    pub fn names_seen(&self, hidden: &[(usize, &Message)], visible: &Haystack) -> Vec<SeenName> {
        let shown = self.shown_names();
        let total = hidden.iter().map(|(n, _)| *n).max().unwrap_or(1).max(1);
        let mut stats: HashMap<String, Stats> = HashMap::new();
        // Each block's place, written once; a name's stats point to the last one it was seen in.
        let mut places: Vec<String> = Vec::new();
        let mut walk = super::names::Walk::default();
        for &(n, m) in hidden {
            for block in &m.content {
                let Some((place, texts)) = walk.block(m, block, true) else { continue };
                places.push(place);
                let place = places.len() - 1;
                let by_model = usize::from(m.role == Role::Assistant);
                for name in texts.iter().flat_map(|t| index_names(t)) {
                    if name.len() > NAME_CHARS || looks_secret(name) {
                        continue;
                    }
                    match stats.get_mut(name) {
                        // A message counts once however often it names it.
                        Some(s) => {
                            if s.last != n {
                                s.messages += 1;
                                s.by_model += by_model;
                            }
                            s.last = n;
                            s.place = place;
                        }
                        None => {
                            stats.insert(name.to_owned(), Stats { messages: 1, by_model, last: n, place });
                        }
                    }
                }
            }
        }
        // The heaviest first; only as many as the index may keep, and some to spare for those the
        // view shows, are looked for in the view (a long session uses tens of thousands of names).
        let mut names: Vec<(u32, String, Stats)> = stats
            .into_iter()
            .filter(|(name, _)| !shown.contains(name.as_str()))
            .map(|(name, s)| (weight(&s, total, &name), name, s))
            .collect();
        names.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        names.truncate(MAX_SEEN * 4);
        let needles: Vec<String> = names.iter().map(|(_, n, _)| normalize(n)).collect();
        let found = visible.find(needles.iter().map(String::as_str));
        let mut found = found.into_iter();
        names.retain(|_| !found.next().unwrap_or(false));
        let mut out: Vec<SeenName> = names
            .into_iter()
            .map(|(weight, name, s)| SeenName {
                weight,
                name,
                at: Some(s.last),
                place: places[s.place].clone(),
            })
            .collect();
        // Those an earlier ledger listed, still not shown, after them.
        let earlier: Vec<&SeenName> =
            self.seen.iter().filter(|e| !out.iter().any(|o| o.name == e.name)).collect();
        let needles: Vec<String> = earlier.iter().map(|e| normalize(&e.name)).collect();
        let found = visible.find(needles.iter().map(String::as_str));
        out.extend(
            earlier
                .into_iter()
                .zip(found)
                .filter(|(e, found)| !found && !shown.contains(e.name.as_str()))
                .map(|(e, _)| SeenName { weight: e.weight / 2, ..e.clone() }),
        );
        out.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.name.cmp(&b.name)));
        out.truncate(MAX_SEEN);
        out
    }

    /// The names within `budget` tokens, heaviest first, written grouped by the message they were
    /// last seen in, latest first; with the tokens it takes. Empty when none fits.
    pub(super) fn render_seen(&self, budget: usize, tokens: &dyn TokenCounter) -> (String, usize) {
        if self.seen.is_empty() || budget == 0 {
            return (String::new(), 0);
        }
        let line = |at: Option<usize>, place: &str, names: &[&str]| {
            let at = at.map(|n| format!("#{n} ")).unwrap_or_default();
            let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            format!("- {at}{place}: {}\n", names.join(", "))
        };
        let mut used = tokens.count_text_cached(SEEN_HEADER) + 2;
        // Each group with the tokens its line takes, counted as written.
        let mut groups: Vec<(Option<usize>, &str, Vec<&str>, usize)> = Vec::new();
        for s in &self.seen {
            let group = groups.iter().position(|(at, place, _, _)| *at == s.at && *place == s.place);
            let (names, was): (Vec<&str>, usize) = match group {
                Some(g) => (groups[g].2.iter().copied().chain([s.name.as_str()]).collect(), groups[g].3),
                None => (vec![s.name.as_str()], 0),
            };
            let cost = tokens.count_text_cached(&line(s.at, &s.place, &names));
            if used + cost - was > budget {
                continue;
            }
            used += cost - was;
            match group {
                Some(g) => {
                    groups[g].2 = names;
                    groups[g].3 = cost;
                }
                None => groups.push((s.at, &s.place, names, cost)),
            }
        }
        if groups.is_empty() {
            return (String::new(), 0);
        }
        groups.sort_by_key(|(at, _, _, _)| std::cmp::Reverse(*at));
        let mut out = format!("\n{SEEN_HEADER}\n");
        for (at, place, names, _) in groups {
            out.push_str(&line(at, place, &names));
        }
        (out, used)
    }

    /// Reads one line of the names' section back (`- #80 the result of …: `a`, `b``).
    pub(super) fn parse_seen_line(&mut self, line: &str) {
        let Some(item) = line.strip_prefix("- ") else { return };
        let (at, rest) = super::parse::leading_number(item);
        let Some((place, names)) = rest.split_once(": `") else { return };
        let names = format!("`{names}");
        for name in names.split("`, `") {
            let name = name.trim_matches('`');
            if !name.is_empty() {
                // Read back in the order written; what a later run gathers weighs more.
                let weight = u32::try_from(MAX_SEEN.saturating_sub(self.seen.len())).unwrap_or(0);
                self.seen.push(SeenName { name: name.to_owned(), at, place: place.to_owned(), weight });
            }
        }
    }
}

/// The names of a text the index lists: [`names_in`]'s, a path without the line it was cited at
/// (`src/lib.rs:40` → `src/lib.rs`), and `SCREAMING_CASE` names (constants, environment
/// variables: `SPEC_WORKFLOW_CODEX_QUEUE`).
fn index_names(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = names_in(text)
        .into_iter()
        .map(|name| match name.split_once(':') {
            Some((path, at))
                if path.contains(['/', '.'])
                    && !at.is_empty()
                    && at.bytes().all(|b| b.is_ascii_digit() || b == b':') =>
            {
                path
            }
            _ => name,
        })
        .collect();
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let core = word.trim_matches('_');
        if core.len() >= 4
            && core.contains('_')
            && core.starts_with(|c: char| c.is_ascii_uppercase())
            && core.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            out.push(word);
        }
    }
    out
}

/// Whether a name looks like a credential rather than a name: a known key or token prefix
/// (`sk-`, `ghp_`, `AKIA`, `xoxb-`, …), or a long run of mixed letters and digits.
fn looks_secret(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sk-",
        "sk_",
        "pk_live",
        "rk_live",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "xoxa-",
        "AKIA",
        "ASIA",
        "AIza",
        "ya29.",
        "hf_",
        "npm_",
    ];
    if PREFIXES.iter().any(|p| name.starts_with(p)) {
        return true;
    }
    let digits = name.bytes().filter(u8::is_ascii_digit).count();
    let upper = name.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = name.bytes().filter(u8::is_ascii_lowercase).count();
    name.len() >= 24 && !name.contains(['/', '.']) && digits >= 4 && upper >= 2 && lower >= 2
}

/// The weight of a name (see the module docs): messages that used it, the model's counted twice,
/// scaled up to twice for the latest, twice for a path and half for a qualified name, per token it
/// takes to write.
fn weight(s: &Stats, total: usize, name: &str) -> u32 {
    let uses = (s.messages + s.by_model) as f64;
    let late = 1.0 + s.last as f64 / total as f64;
    let cost = name.len() as f64 / 4.0 + 3.0;
    // A path is what a later turn names most (it opens, edits, runs it again); a qualified name
    // (`HashMap::new`, `fmt::Result`) is mostly the language's own.
    let kind = if name.contains("::") {
        0.5
    } else if name.contains(['/', '.']) {
        2.0
    } else {
        1.0
    };
    (uses * late * kind / cost * 1000.0).round().min(f64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContentBlock, ToolResultPart};
    use crate::tokens::TiktokenCounter;

    fn call(id: &str, command: &str) -> Message {
        Message::new(
            id,
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: format!("c{id}"),
                name: "shell".into(),
                input: serde_json::json!({ "command": command }),
            }],
        )
    }

    fn result(id: &str, of: &str, text: &str) -> Message {
        Message::new(
            id,
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: format!("c{of}"),
                content: vec![ToolResultPart::Text { text: text.into() }],
                is_error: false,
            }],
        )
    }

    #[test]
    fn hidden_names_not_in_view_are_listed_with_where_they_were_last_seen() {
        let hidden = [
            call("1", "rg -n codex"),
            result(
                "2",
                "1",
                "moonmind/workflows/speckit_celery/tasks.py:12: queue = SPEC_WORKFLOW_CODEX_QUEUE\n\
                 api_service/db/models.py:40: class SpecWorkflowRun(Base):",
            ),
            Message::new(
                "3",
                Role::Assistant,
                vec![ContentBlock::text("SpecWorkflowRun lives in api_service/db/models.py; kept_name too.")],
            ),
        ];
        let numbered: Vec<(usize, &Message)> = hidden.iter().enumerate().map(|(i, m)| (i + 1, m)).collect();
        let kept = Message::new("4", Role::User, vec![ContentBlock::text("Now look at kept_name again.")]);
        let visible = Haystack::of(&[&kept]);
        let seen = Ledger::default().names_seen(&numbered, &visible);
        let names: Vec<&str> = seen.iter().map(|s| s.name.as_str()).collect();
        for want in [
            "moonmind/workflows/speckit_celery/tasks.py",
            "SPEC_WORKFLOW_CODEX_QUEUE",
            "SpecWorkflowRun",
            "api_service/db/models.py",
        ] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        assert!(!names.contains(&"kept_name"), "a name in view is not listed: {names:?}");
        // The model's own use, and the later one, weigh more; the place is the last one seen.
        let run = seen.iter().find(|s| s.name == "SpecWorkflowRun").unwrap();
        let queue = seen.iter().find(|s| s.name == "SPEC_WORKFLOW_CODEX_QUEUE").unwrap();
        assert!(run.weight > queue.weight, "{seen:?}");
        assert_eq!((run.at, run.place.as_str()), (Some(3), "the assistant's message"));
        assert_eq!(queue.place, "the result of shell rg -n codex");

        // Rendered within a budget, grouped by place, latest first; read back as written.
        let ledger = Ledger { seen, ..Ledger::default() };
        let counter = TiktokenCounter::for_model("gpt-4o");
        let (text, used) = ledger.render_seen(400, &counter);
        assert!(used <= 400 && used > 0, "{used}");
        assert!(text.starts_with(&format!("\n{SEEN_HEADER}\n- #3 the assistant's message: ")), "{text}");
        assert!(text.contains("- #2 the result of shell rg -n codex: "), "{text}");
        let block =
            format!("{}\n{}{text}{}", super::super::OPEN_TAG, super::super::INTRO, super::super::CLOSE_TAG);
        let back = Ledger::parse(&block).expect("a ledger");
        let mut names: Vec<String> = back.seen.iter().map(|s| s.name.clone()).collect();
        let mut want: Vec<String> = ledger.seen.iter().map(|s| s.name.clone()).collect();
        names.sort();
        want.sort();
        assert_eq!(names, want);
        // A budget too small for one group writes nothing.
        assert_eq!(ledger.render_seen(5, &counter), (String::new(), 0));
    }

    #[test]
    fn secrets_are_never_listed() {
        let read_env = Message::new(
            "1",
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: "c1".into(),
                name: "Read".into(),
                input: serde_json::json!({ "file_path": "/repo/.env" }),
            }],
        );
        let hidden = [
            read_env,
            result(
                "2",
                "1",
                "DATABASE_URL=postgres://app:hunter2@db/app\nstripe_secret_live_key=abc_def_123",
            ),
            Message::new(
                "3",
                Role::Assistant,
                vec![ContentBlock::text(
                    "The token ghp_abcdefghijklmnop1234 and sk_live_9xYzAbCdEf are set; use load_env.",
                )],
            ),
        ];
        let numbered: Vec<(usize, &Message)> = hidden.iter().enumerate().map(|(i, m)| (i + 1, m)).collect();
        let seen = Ledger::default().names_seen(&numbered, &Haystack::default());
        let names: Vec<&str> = seen.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"load_env"), "{names:?}");
        for secret in [
            "stripe_secret_live_key",
            "abc_def_123",
            "ghp_abcdefghijklmnop1234",
            "sk_live_9xYzAbCdEf",
            "DATABASE_URL",
        ] {
            assert!(!names.contains(&secret), "{secret} listed: {names:?}");
        }
    }

    #[test]
    fn names_the_working_state_shows_are_not_listed_again() {
        let hidden = [Message::new(
            "1",
            Role::Assistant,
            vec![ContentBlock::text("I changed parse_config in src/config.rs and load_env.")],
        )];
        let numbered: Vec<(usize, &Message)> = vec![(1, &hidden[0])];
        let mut ledger = Ledger::default();
        ledger.files.push(super::super::FileTouch::new("src/config.rs", super::super::FileAction::Edited));
        let seen = ledger.names_seen(&numbered, &Haystack::default());
        let names: Vec<&str> = seen.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"parse_config") && names.contains(&"load_env"), "{names:?}");
        assert!(!names.contains(&"src/config.rs"), "{names:?}");
    }
}
