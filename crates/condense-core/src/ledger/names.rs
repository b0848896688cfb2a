//! What of the working state is still live, and the names still in play: after a condensation,
//! the messages it kept name files, symbols, errors and commands. An item of the working state
//! they name ranks first ([`Ledger::live_in`]); a name they use whose context the condensation
//! hid, and that the working state does not already show, is listed with where it was last seen
//! and the line that shows it ([`Ledger::names_in_play`]).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use aho_corasick::AhoCorasick;

use crate::model::{ContentBlock, Message, Role, ToolResultPart};

use super::calls::{command_output, strings};
use super::probes::{Haystack, normalize};
use super::render::Live;
use super::words::condenser_stub;
use super::{Ledger, NameSeen, one_line};

/// The most names listed.
const MAX_NAMES: usize = 16;
/// Characters of the line that shows a name.
const LINE_CHARS: usize = 140;

/// A walk through hidden messages, block by block: what each block is, for a person (`the result of
/// shell rg -n codex`, `a call to Read src/lib.rs`, `the user's message`), and the texts to read
/// names in. The calls on a file whose values may be secrets (`.env`, `.tfvars`) are skipped with
/// their results: no line of them is quoted, no name of them listed.
#[derive(Default)]
pub(super) struct Walk<'a> {
    calls: HashMap<&'a str, String>,
    secret: HashSet<&'a str>,
}

impl<'a> Walk<'a> {
    /// The place and texts of `block` of `m`, the blocks before it walked; `None` for a block with
    /// nothing to read. `clients`: whether a client's wrapper text is read too.
    pub(super) fn block(
        &mut self,
        m: &'a Message,
        block: &'a ContentBlock,
        clients: bool,
    ) -> Option<(String, Vec<Cow<'a, str>>)> {
        Some(match block {
            ContentBlock::Text { text, client } if !condenser_stub(text) && (clients || client.is_none()) => {
                let who = match (m.role, client) {
                    (_, Some(kind)) => format!("the client's {}", kind.label()),
                    (Role::User, None) => "the user's message".to_owned(),
                    (Role::Assistant, None) => "the assistant's message".to_owned(),
                };
                (who, vec![Cow::Borrowed(text.as_str())])
            }
            ContentBlock::ToolUse { id, name, input } => {
                let main = super::calls::main_argument(input);
                if main.as_deref().is_some_and(|a| a.split_whitespace().any(super::outline::holds_secrets)) {
                    self.secret.insert(id.as_str());
                    return None;
                }
                let about =
                    main.map_or_else(|| name.clone(), |a| format!("{name} {}", one_line(&a, PLACE_CHARS)));
                self.calls.insert(id.as_str(), about.clone());
                (format!("a call to {about}"), strings(input).into_iter().map(Cow::Borrowed).collect())
            }
            ContentBlock::ToolResult { tool_use_id, content, .. } => {
                if self.secret.contains(tool_use_id.as_str()) {
                    return None;
                }
                let about =
                    self.calls.get(tool_use_id.as_str()).cloned().unwrap_or_else(|| "a tool".to_owned());
                // A command's output without its tool's wrapper (Codex's JSON), read in lines.
                let texts = content
                    .iter()
                    .filter_map(|p| match p {
                        ToolResultPart::Text { text } if !condenser_stub(text) => Some(command_output(text)),
                        _ => None,
                    })
                    .collect();
                (format!("the result of {about}"), texts)
            }
            _ => return None,
        })
    }
}

/// Characters of the call a place names (its path or command).
const PLACE_CHARS: usize = 60;

impl Ledger {
    /// The items of the working state that `visible` (the kept messages' text, [`normalize`]d)
    /// names: a file by its path or its name, or a symbol of its outline; an error by its code or
    /// test; a command by its text; a finding by a `code span` of it.
    pub fn live_in(&self, visible: &Haystack) -> Live {
        let mut needles: Vec<String> = Vec::new();
        let mut owners: Vec<(u8, usize)> = Vec::new();
        let mut add = |kind: u8, i: usize, needle: &str| {
            let n = normalize(needle);
            if n.chars().count() >= 4 {
                needles.push(n);
                owners.push((kind, i));
            }
        };
        for (i, f) in self.files.iter().enumerate() {
            add(0, i, &f.path);
            let name = f.path.rsplit('/').next().unwrap_or(&f.path);
            if name.contains('.') {
                add(0, i, name);
            }
            for symbol in &f.outline {
                // `fn parse l.10` → `parse`, when it is a telling name.
                let name = symbol.split(' ').nth(1).unwrap_or("");
                if telling(name) {
                    add(0, i, name);
                }
            }
        }
        for (i, e) in self.errors.iter().enumerate() {
            let key = e.key.strip_prefix("test ").unwrap_or(&e.key);
            add(1, i, key.split_whitespace().next().unwrap_or(key));
        }
        for (i, c) in self.commands.iter().enumerate() {
            add(2, i, &c.command.chars().take(60).collect::<String>());
        }
        for (i, f) in self.findings.iter().enumerate() {
            for span in code_spans(&f.text) {
                add(3, i, span);
            }
        }
        let mut live = Live::default();
        for (found, (kind, i)) in visible.find(needles.iter().map(String::as_str)).into_iter().zip(owners) {
            if !found {
                continue;
            }
            let set = match kind {
                0 => &mut live.files,
                1 => &mut live.errors,
                2 => &mut live.commands,
                _ => &mut live.findings,
            };
            set.insert(i);
        }
        live
    }

    /// The names the words of `kept` (the messages the condensation kept, without any ledger) use that
    /// `hidden` (what it hid, with each message's number) holds and the working state does not
    /// show: each with where it was last seen and the line that shows it, the names of the
    /// latest kept messages first.
    pub fn names_in_play(
        &self,
        kept: &[&Message],
        hidden: &[(Option<usize>, &Message)],
        visible: &Haystack,
    ) -> Vec<NameSeen> {
        let shown = self.shown_names();
        let mut candidates: Vec<String> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for m in kept.iter().rev() {
            for text in message_texts(m) {
                for name in names_in(text) {
                    if !shown.contains(name) && seen.insert(name.to_owned()) {
                        candidates.push(name.to_owned());
                    }
                }
            }
        }
        if candidates.is_empty() {
            return Vec::new();
        }
        let Ok(searcher) = AhoCorasick::new(&candidates) else { return Vec::new() };
        // The last place each is seen in what was hidden.
        let mut last: HashMap<usize, (NameSeen, String)> = HashMap::new();
        let mut walk = Walk::default();
        for (at, m) in hidden {
            for block in &m.content {
                let Some((what, texts)) = walk.block(m, block, false) else { continue };
                for text in &texts {
                    let text: &str = text;
                    for hit in searcher.find_iter(text) {
                        let k = hit.pattern().as_usize();
                        if !whole_word(text, hit.start(), hit.end()) {
                            continue;
                        }
                        let line = line_at(text, hit.start());
                        let place = at.map(|n| format!(" #{n}")).unwrap_or_default();
                        let full = text[text[..hit.start()].rfind('\n').map_or(0, |i| i + 1)..]
                            .lines()
                            .next()
                            .unwrap_or("")
                            .to_owned();
                        last.insert(
                            k,
                            (
                                NameSeen {
                                    name: candidates[k].clone(),
                                    what: format!("last seen in {what}{place}: «{line}»"),
                                },
                                full,
                            ),
                        );
                    }
                }
            }
        }
        let mut out: Vec<(NameSeen, String)> =
            (0..candidates.len()).filter_map(|k| last.remove(&k)).collect();
        // A name whose line the model still sees (a copy kept elsewhere) has its context.
        let lines: Vec<String> = out.iter().map(|(_, line)| normalize(line)).collect();
        let seen = visible.find(lines.iter().map(String::as_str));
        let mut seen = seen.into_iter();
        out.retain(|_| !seen.next().unwrap_or(false));
        out.truncate(MAX_NAMES);
        out.into_iter().map(|(n, _)| n).collect()
    }

    /// The names the working state shows already: paths, file names, outline symbols, and the
    /// words of errors, commands and findings.
    pub(super) fn shown_names(&self) -> HashSet<&str> {
        let mut out: HashSet<&str> = HashSet::new();
        for f in &self.files {
            out.insert(f.path.as_str());
            out.insert(f.path.rsplit('/').next().unwrap_or(&f.path));
            for s in &f.outline {
                if let Some(name) = s.split(' ').nth(1) {
                    out.insert(name);
                }
            }
        }
        for text in self
            .errors
            .iter()
            .map(|e| e.text.as_str())
            .chain(self.commands.iter().map(|c| c.command.as_str()))
            .chain(self.findings.iter().map(|f| f.text.as_str()))
        {
            out.extend(names_in(text));
        }
        out
    }
}

/// Whether a symbol's name tells something (`parse_config`, `SpecWorkflowRun`), not a word any
/// text has (`main`, `new`, `run`).
fn telling(name: &str) -> bool {
    name.len() >= 5 && (name.contains('_') || name.chars().skip(1).any(|c| c.is_ascii_uppercase()))
}

/// The `code spans` of a text.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).map(str::trim).filter(|s| (3..=60).contains(&s.len())).collect()
}

/// The words of a kept message: its text blocks (what the user and the model say, not what
/// tools carry).
fn message_texts(m: &Message) -> Vec<&str> {
    m.content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, client: None } if !super::is_ledger_block(block) => {
                Some(text.as_str())
            }
            _ => None,
        })
        .collect()
}

/// The names a text uses: `code spans` that are one word, identifiers (`snake_case`,
/// `camelCase`, `PascalCase` of two humps, `a::b`) and paths with a file name.
pub fn names_in(text: &str) -> Vec<&str> {
    // A code span that is one word and reads as a name (not a plain word such as `pending`).
    let mut out: Vec<&str> = code_spans(text)
        .into_iter()
        .filter(|s| {
            !s.contains(char::is_whitespace)
                && (identifier(s) || s.contains(['/', '.', '_', '-', ':']))
                && s.chars().any(|c| c.is_alphabetic())
        })
        .collect();
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '.' | ':' | '-')))
    {
        // A path's leading `.` (`.specify/…`) is its own; a sentence's last one is not.
        let word = word.trim_end_matches(['.', ':', '-']).trim_start_matches([':', '-']);
        if word.len() < 4 {
            continue;
        }
        let path = word.contains('/')
            && word.rsplit('/').next().is_some_and(|n| n.contains('.'))
            && !word.contains("//");
        if path || identifier(word) {
            out.push(word);
        }
    }
    out
}

/// `snake_case`, `camelCase`, `PascalCase` with two humps, `Type::name`.
fn identifier(word: &str) -> bool {
    if word.contains("::") {
        return word
            .split("::")
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    }
    if !word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || word.starts_with(|c: char| c.is_ascii_digit())
    {
        return false;
    }
    let humps =
        word.as_bytes().windows(2).filter(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase()).count();
    let snake = word.trim_matches('_').contains('_') && word.chars().any(|c| c.is_ascii_lowercase());
    let camel = word.starts_with(|c: char| c.is_ascii_lowercase()) && humps >= 1;
    let pascal = word.starts_with(|c: char| c.is_ascii_uppercase()) && humps >= 2;
    snake || camel || pascal
}

/// Whether `text[start..end]` stands as a whole name (no name character around it).
fn whole_word(text: &str, start: usize, end: usize) -> bool {
    let name = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    !name(text[..start].chars().next_back()) && !name(text[end..].chars().next())
}

/// The line of `text` around byte `at`, on one line, at most [`LINE_CHARS`] characters around it.
fn line_at(text: &str, at: usize) -> String {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = text[start..end].trim();
    if line.chars().count() <= LINE_CHARS {
        return line.to_owned();
    }
    // Centred on the name.
    let offset = text[start..at].trim_start().chars().count();
    let from = offset.saturating_sub(LINE_CHARS / 2);
    let cut: String = line.chars().skip(from).take(LINE_CHARS).collect();
    format!("…{}…", cut.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_a_text() {
        assert_eq!(
            names_in(
                "Set `wan_drop_leaked_dns` in etc/config/firewall.cfg, then call parseArgs and Config::load; not Main, `pending` or the."
            ),
            [
                "wan_drop_leaked_dns",
                "wan_drop_leaked_dns",
                "etc/config/firewall.cfg",
                "parseArgs",
                "Config::load"
            ]
        );
    }

    #[test]
    fn a_name_kept_messages_use_is_explained_from_what_was_hidden() {
        let hidden = [
            Message::new(
                "a1",
                Role::Assistant,
                vec![ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "Bash".into(),
                    input: serde_json::json!({"command": "uci show firewall"}),
                }],
            ),
            Message::new(
                "u1",
                Role::User,
                vec![ContentBlock::tool_result_text(
                    "t1",
                    "firewall.@rule[3]=rule\nfirewall.@rule[3].name='wan_drop_leaked_dns'\n",
                )],
            ),
        ];
        let kept = [Message::new(
            "a2",
            Role::Assistant,
            vec![ContentBlock::text("Now enable `wan_drop_leaked_dns`.")],
        )];
        let hidden: Vec<(Option<usize>, &Message)> = vec![(Some(4), &hidden[0]), (Some(5), &hidden[1])];
        let names = Ledger::default().names_in_play(&[&kept[0]], &hidden, &Haystack::default());
        assert_eq!(names.len(), 1);
        assert_eq!(names[0].name, "wan_drop_leaked_dns");
        assert_eq!(
            names[0].what,
            "last seen in the result of Bash uci show firewall #5: «firewall.@rule[3].name='wan_drop_leaked_dns'»"
        );
    }

    #[test]
    fn no_line_of_a_file_of_secrets_explains_a_name() {
        let hidden_messages = [
            Message::new(
                "a",
                Role::Assistant,
                vec![ContentBlock::ToolUse {
                    id: "c1".into(),
                    name: "Read".into(),
                    input: serde_json::json!({"file_path": "/repo/.env"}),
                }],
            ),
            Message::new(
                "u",
                Role::User,
                vec![ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: vec![ToolResultPart::Text {
                        text: "STRIPE_KEY=sk-live-123\nload_env_file=1".into(),
                    }],
                    is_error: false,
                }],
            ),
        ];
        let hidden: Vec<(Option<usize>, &Message)> = hidden_messages.iter().map(|m| (Some(1), m)).collect();
        let kept =
            [Message::new("k", Role::Assistant, vec![ContentBlock::text("Now load_env_file is set.")])];
        let names = Ledger::default().names_in_play(&[&kept[0]], &hidden, &Haystack::default());
        assert!(names.iter().all(|n| !n.what.contains("sk-live-123")), "{names:?}");
        assert!(names.is_empty(), "{names:?}");
    }
}
