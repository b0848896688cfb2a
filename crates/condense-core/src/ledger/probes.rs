//! Checking a condensation against its ledger: [`Ledger::probes`] lists the facts that must stay
//! visible, [`check_probes`] looks for them in the normalized text the model sees ([`Haystack`]),
//! and [`Ledger::prune`] leaves out what later messages still show. Normalization lives here,
//! since probes and pruning compare by it.

use crate::model::{ContentBlock, Message, ToolResultPart};

use super::calls::strings;
use super::{FileAction, Ledger, PROBE_CHARS, Probe, SHORT_CHARS, constraints, one_line};

impl Ledger {
    /// Leaves out what the model still sees elsewhere: user words whose whole text is in
    /// `visible_text`, and the files, commands and todo list that `later` (the ledger of the
    /// visible messages that come after the hidden ones) shows in a later state.
    pub fn prune(&mut self, later: &Ledger, visible_text: &str) {
        self.prune_in(&Later::of_ledger(later), &Haystack(normalize(visible_text)));
    }

    /// [`Ledger::prune`] with what the later messages show already gathered and the visible text
    /// already normalized; every needle is looked for in one pass over it.
    pub fn prune_in(&mut self, later: &Later, visible: &Haystack) {
        let words: Vec<String> = self.user_messages.iter().map(|w| normalize(&w.text)).collect();
        let notes: Vec<String> = self.notes.iter().map(|n| normalize(n)).collect();
        let found = visible.find(words.iter().chain(&notes).map(String::as_str));
        let (words_found, notes_found) = found.split_at(words.len());
        let mut seen = words_found.iter();
        self.user_messages.retain(|_| !seen.next().copied().unwrap_or(false));
        let mut seen = notes_found.iter();
        self.notes.retain(|_| !seen.next().copied().unwrap_or(false));
        // A file touched later stays when the ledger knows more of it than the later messages
        // show: what a hidden read showed of it (unless a later one shows its text again), what
        // hidden edits changed.
        // A file created, edited or deleted stays named: a later condensation may hide the later
        // message that touches it, and what was done to it would be lost.
        self.files.retain(|f| {
            let knows_more = f.action != FileAction::Read
                || !f.changes.is_empty()
                || (!f.outline.is_empty() || !f.mentions.is_empty()) && !later.shown.contains(&f.path);
            !later.files.contains(&f.path) || knows_more
        });
        self.commands.retain(|c| !later.commands.contains(&c.command));
        // A later run of the command that reported an error shows where it stands now.
        self.errors.retain(|e| e.command.as_ref().is_none_or(|c| !later.commands.contains(c)));
        if !self.findings.is_empty() {
            let texts: Vec<String> = self.findings.iter().map(|f| normalize(&f.text)).collect();
            let mut found = visible.find(texts.iter().map(String::as_str)).into_iter();
            self.findings.retain(|_| !found.next().unwrap_or(false));
        }
        if later.todos {
            self.todos.clear();
        }
    }

    /// The facts to check after a condensation: every user message (its start), every file
    /// created, edited or deleted (its path), every open todo (its text).
    pub fn probes(&self) -> Vec<Probe> {
        let mut out = Vec::new();
        for w in &self.user_messages {
            let needle = words_key(&w.text).trim_end().to_owned();
            if needle.is_empty() {
                continue;
            }
            // A short message (an instruction) comes back whole; a long one (a pasted log) by its
            // start.
            let restore = if w.text.chars().count() <= SHORT_CHARS {
                w.text.clone()
            } else {
                head_of(&w.text, PROBE_CHARS)
            };
            out.push(Probe { label: format!("user: {}", preview(&w.text)), needle, restore });
            // Every instruction of it, whole: a cut one is found missing and put back.
            for sentence in constraints(&w.text) {
                out.push(Probe {
                    label: format!("instruction: {}", preview(sentence)),
                    needle: sentence.to_owned(),
                    restore: sentence.to_owned(),
                });
            }
        }
        for f in self.files.iter().filter(|f| f.action != FileAction::Read) {
            out.push(Probe {
                label: format!("file: {} {}", f.action.as_str(), f.path),
                needle: f.path.clone(),
                restore: format!("{} {}", f.action.as_str(), f.path),
            });
        }
        for t in self.todos.iter().filter(|t| !t.done) {
            out.push(Probe {
                label: format!("todo: {}", preview(&t.text)),
                needle: t.text.clone(),
                restore: format!("open todo: {}", t.text),
            });
        }
        out
    }
}

/// Checks probes against the text the model sees: `(kept, missing)`.
pub fn check_probes<'a>(probes: &'a [Probe], haystack: &str) -> (Vec<&'a Probe>, Vec<&'a Probe>) {
    check_probes_in(probes, &Haystack(normalize(haystack)))
}

/// [`check_probes`] against text already normalized, every needle looked for in one pass.
pub fn check_probes_in<'a>(probes: &'a [Probe], visible: &Haystack) -> (Vec<&'a Probe>, Vec<&'a Probe>) {
    let needles: Vec<String> = probes.iter().map(|p| normalize(&p.needle)).collect();
    let found = visible.find(needles.iter().map(String::as_str));
    let mut kept = Vec::new();
    let mut missing = Vec::new();
    for (p, found) in probes.iter().zip(found) {
        if found { kept.push(p) } else { missing.push(p) }
    }
    (kept, missing)
}

/// What the messages after the hidden ones show of files, commands and the todo list: the
/// parts of their [`Ledger`] that [`Ledger::prune_in`] reads. The union of the messages' own is
/// the whole list's, so a caller may gather it message by message (see [`Later::of_message`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Later {
    /// The paths of the files they touch.
    pub files: std::collections::HashSet<String>,
    /// The paths of the files whose text they show (a read, a whole write).
    pub shown: std::collections::HashSet<String>,
    /// The commands they run.
    pub commands: std::collections::HashSet<String>,
    /// Whether they carry a todo list.
    pub todos: bool,
}

impl Later {
    /// What a ledger shows.
    pub fn of_ledger(ledger: &Ledger) -> Later {
        Later {
            files: ledger.files.iter().map(|f| f.path.clone()).collect(),
            shown: ledger
                .files
                .iter()
                .filter(|f| !f.outline.is_empty() || !f.mentions.is_empty())
                .map(|f| f.path.clone())
                .collect(),
            commands: ledger.commands.iter().map(|c| c.command.clone()).collect(),
            todos: !ledger.todos.is_empty(),
        }
    }

    /// What one message shows: its own ledger's (a file's path, a command and a todo list are
    /// each found within one message, whatever came before it).
    pub fn of_message(message: &Message) -> Later {
        Later::of_ledger(&Ledger::of(&[message]))
    }

    /// Adds what another part of the list shows.
    pub fn add(&mut self, other: &Later) {
        self.files.extend(other.files.iter().cloned());
        self.shown.extend(other.shown.iter().cloned());
        self.commands.extend(other.commands.iter().cloned());
        self.todos |= other.todos;
    }
}

/// The text the model sees, [`normalize`]d: what probes and pruning look for needles in. Built
/// message by message ([`Haystack::push`]), it is the same as `normalize(&view_text(messages))`:
/// the words of one message never run into the next one's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Haystack(String);

impl Haystack {
    /// The normalized view text of these messages.
    pub fn of(messages: &[&Message]) -> Haystack {
        let mut out = Haystack::default();
        for m in messages {
            out.push(&piece(m));
        }
        out
    }

    /// Appends one message's normalized text (its [`piece`]).
    pub fn push(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        self.0.push_str(piece);
    }

    /// The normalized text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Which needles (normalized already) occur in the text, in one pass for all of them. An
    /// empty needle is found.
    pub fn find<'n>(&self, needles: impl IntoIterator<Item = &'n str>) -> Vec<bool> {
        let needles: Vec<&str> = needles.into_iter().collect();
        let mut found: Vec<bool> = needles.iter().map(|n| n.is_empty()).collect();
        let wanted: Vec<usize> = (0..needles.len()).filter(|&i| !found[i]).collect();
        if wanted.is_empty() {
            return found;
        }
        let patterns: Vec<&str> = wanted.iter().map(|&i| needles[i]).collect();
        let searcher = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::Standard)
            .build(&patterns)
            .expect("a few needles build an automaton");
        let mut left = wanted.len();
        let mut hit = vec![false; wanted.len()];
        for m in searcher.find_overlapping_iter(&self.0) {
            let k = m.pattern().as_usize();
            if !hit[k] {
                hit[k] = true;
                left -= 1;
                if left == 0 {
                    break;
                }
            }
        }
        for (k, &i) in wanted.iter().enumerate() {
            found[i] = hit[k];
        }
        found
    }
}

/// One message's text as the probes read it: `normalize(&view_text(&[message]))`, without
/// building the view text first.
pub fn piece(message: &Message) -> String {
    let mut out = String::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text, .. } => push_normalized(text, &mut out),
            ContentBlock::ToolUse { name, input, .. } => {
                push_normalized(name, &mut out);
                for s in strings(input) {
                    push_normalized(s, &mut out);
                }
            }
            ContentBlock::ToolResult { content, .. } => {
                for p in content {
                    if let ToolResultPart::Text { text } = p {
                        push_normalized(text, &mut out);
                    }
                }
            }
            ContentBlock::Image { .. } | ContentBlock::Opaque(_) => {}
        }
    }
    out
}

/// Everything a model reads in these messages, as one text: text blocks, tool names and the
/// string values of their arguments, tool result texts.
pub fn view_text(messages: &[&Message]) -> String {
    let mut out = String::new();
    for m in messages {
        for block in &m.content {
            match block {
                ContentBlock::Text { text, .. } => out.push_str(text),
                ContentBlock::ToolUse { name, input, .. } => {
                    out.push_str(name);
                    for s in strings(input) {
                        out.push('\n');
                        out.push_str(s);
                    }
                }
                ContentBlock::ToolResult { content, .. } => {
                    for p in content {
                        if let ToolResultPart::Text { text } = p {
                            out.push_str(text);
                            out.push('\n');
                        }
                    }
                }
                ContentBlock::Image { .. } | ContentBlock::Opaque(_) => {}
            }
            out.push('\n');
        }
    }
    out
}

/// The shortest start of `text` whose normalized form has `chars` characters (all of it when
/// shorter): what a probe needs to find again.
fn head_of(text: &str, chars: usize) -> String {
    let text = text.trim();
    let mut seen = 0;
    let mut last_space = true;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if !(space && last_space) {
            seen += 1;
        }
        last_space = space;
        if seen >= chars {
            return text[..i + c.len_utf8()].to_owned();
        }
    }
    text.to_owned()
}

/// Lowercase, whitespace collapsed to single spaces, trimmed: how probes are compared.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_normalized(text, &mut out);
    out
}

/// Appends the words of `text`, lowercased, to `out`, each after one space unless `out` is
/// empty: `normalize` of what `out` held, whitespace, then `text`. Lowercasing word by word is
/// lowercasing the whole (see [`normalized_head`]); a word of ASCII letters is lowercased in
/// place, and whitespace is `char::is_whitespace`, read byte by byte where it is ASCII.
fn push_normalized(text: &str, out: &mut String) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        // Skip whitespace.
        let (space, len) = space_at(text, at);
        if space {
            at += len;
            continue;
        }
        // The word runs to the next whitespace.
        let start = at;
        let mut ascii = true;
        while at < bytes.len() {
            let (space, len) = space_at(text, at);
            if space {
                break;
            }
            ascii &= len == 1;
            at += len;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        let word = &text[start..at];
        if ascii {
            let from = out.len();
            out.push_str(word);
            out[from..].make_ascii_lowercase();
        } else {
            out.push_str(&word.to_lowercase());
        }
    }
}

/// Whether the character at byte `at` of `text` is whitespace, and its length in bytes.
fn space_at(text: &str, at: usize) -> (bool, usize) {
    let b = text.as_bytes()[at];
    if b < 0x80 {
        return (matches!(b, b'\t'..=b'\r' | b' '), 1);
    }
    let c = text[at..].chars().next().expect("`at` is a character boundary");
    (c.is_whitespace(), c.len_utf8())
}

/// What tells one user message from another in a ledger, and its probe's needle: the first
/// [`PROBE_CHARS`] characters of its [`normalize`]d text.
pub(super) fn words_key(text: &str) -> String {
    normalized_head(text, PROBE_CHARS)
}

/// `normalize(text).chars().take(chars)`, normalizing only the words it needs. Word by word is
/// the same as the whole: lowercasing reads a character's context (a final sigma) only within
/// its word, since whitespace is neither cased nor case-ignorable.
fn normalized_head(text: &str, chars: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        if count >= chars {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
            count += 1;
        }
        let lower = word.to_lowercase();
        count += lower.chars().count();
        out.push_str(&lower);
    }
    out.chars().take(chars).collect()
}

fn preview(text: &str) -> String {
    one_line(text, 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;
    use serde_json::json;

    /// `normalize` as first written: the reference the fast one must equal.
    fn reference_normalize(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
    }

    /// Texts with whitespace of every kind (ASCII, the vertical tab, NEL, no-break and em
    /// spaces, the ideographic space), sigmas, characters whose lowercase is longer (İ) and
    /// ASCII words, for the properties below.
    const MIXED: &str = "([ \\t\\n\\r\\u{b}\\u{c}\\u{85}\\u{a0}\\u{2003}\\u{3000}]|[aZΣσςİẞé.'’:/]|ΑΣ|ΣΑ|src|Main|\\.rs){0,60}";

    proptest::proptest! {
        #[test]
        fn normalize_is_the_reference(text in MIXED) {
            proptest::prop_assert_eq!(normalize(&text), reference_normalize(&text));
        }

        /// A haystack built message by message is the normalized view text, and finds exactly
        /// the needles `str::contains` finds in it, across messages too.
        #[test]
        fn haystack_pieces_join_to_the_view_text(
            texts in proptest::collection::vec((MIXED, proptest::bool::ANY), 0..6),
            needles in proptest::collection::vec(MIXED, 0..6),
        ) {
            let messages: Vec<Message> = texts
                .iter()
                .enumerate()
                .map(|(i, (t, call))| {
                    let block = if *call {
                        ContentBlock::ToolUse { id: format!("t{i}"), name: "Read".into(), input: json!({"path": t, "n": [t, 1]}) }
                    } else {
                        ContentBlock::text(t.clone())
                    };
                    Message::new(format!("m{i}"), Role::Assistant, vec![block, ContentBlock::tool_result_text("x", t.clone())])
                })
                .collect();
            let refs: Vec<&Message> = messages.iter().collect();
            let whole = reference_normalize(&view_text(&refs));
            let hay = Haystack::of(&refs);
            proptest::prop_assert_eq!(hay.as_str(), whole.as_str());
            // Needles taken from the text itself too, so that some are found across messages.
            let mut all: Vec<String> = needles.iter().map(|n| normalize(n)).collect();
            for (k, n) in needles.iter().enumerate() {
                let chars: Vec<char> = whole.chars().collect();
                let from = (n.len() * 7 + k) % (chars.len() + 1);
                let to = (from + n.len() + 3).min(chars.len());
                all.push(chars[from..to].iter().collect::<String>().trim().to_owned());
            }
            let found = hay.find(all.iter().map(String::as_str));
            let expected: Vec<bool> = all.iter().map(|n| whole.contains(n.as_str())).collect();
            proptest::prop_assert_eq!(found, expected);
        }

        /// The head normalized word by word is the whole text's normalized head: whitespace of
        /// every kind, final and medial sigmas, characters whose lowercase is longer (İ).
        #[test]
        fn normalized_head_is_the_normalized_texts_head(
            text in "([ \\t\\n\\u{a0}\\u{2003}]|[aZΣσςİẞé.'’:]|ΑΣ|ΣΑ){0,60}",
            chars in 0usize..40,
        ) {
            let whole: String = normalize(&text).chars().take(chars).collect();
            proptest::prop_assert_eq!(normalized_head(&text, chars), whole);
        }
    }
}
