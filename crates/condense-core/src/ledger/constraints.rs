//! The sentences of a user's words that constrain the work — prohibitions ("do not push"),
//! requirements ("tests must pass"), conditions ("wait until I approve"), approvals — found by
//! cue words in the languages the sessions use (English, Chinese, Japanese, German, French,
//! Spanish). The ledger keeps them whole before it cuts anything else of a message, and each is
//! a probe, so a lost instruction shows as missing and is put back.
//!
//! Pasted content is not read for them: fenced code, indented code, lines of a condensation's
//! own notes. A sentence longer than [`MAX_CHARS`] is prose from a pasted document, not an
//! instruction a person typed.

use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

/// A constraint sentence longer than this many characters is not one.
pub(crate) const MAX_CHARS: usize = 400;

/// Cues whose match must stand as whole words (ASCII, matched lowercase).
const WORD_CUES: &[&str] = &[
    // Prohibitions.
    "do not",
    "don't",
    "dont",
    "never",
    "must not",
    "mustn't",
    "should not",
    "shouldn't",
    "cannot",
    "can't",
    "may not",
    "avoid",
    "not allowed",
    "forbidden",
    "prohibited",
    "no need to",
    "stop",
    "refrain",
    "nothing else",
    "don’t",
    // Requirements.
    "must",
    "should",
    "shall",
    "need to",
    "needs to",
    "have to",
    "has to",
    "make sure",
    "ensure",
    "always",
    "only",
    "required",
    "require",
    "requires",
    "requirement",
    "mandatory",
    "at most",
    "at least",
    "no more than",
    "instead of",
    "keep the",
    "keep it",
    "use only",
    "important",
    // Conditions and approvals.
    "until",
    "unless",
    "before you",
    "before proceeding",
    "before moving",
    "before continuing",
    "wait for",
    "approve",
    "approval",
    "approved",
    "confirm",
    "confirmation",
    "permission",
    "ask me",
    "check with me",
    "one at a time",
    "one phase at a time",
    // German.
    "nicht",
    "niemals",
    "immer",
    "muss",
    "müssen",
    "darfst",
    "keine",
    "erst wenn",
    "bitte nur",
    // French.
    "ne pas",
    "ne jamais",
    "jamais",
    "toujours",
    "doit",
    "doivent",
    "il faut",
    "sans",
    "avant de",
    "attends",
    // Spanish.
    "nunca",
    "siempre",
    "debe",
    "deben",
    "hasta que",
    "no hagas",
    "no uses",
    "sin",
    "antes de",
];

/// Cues matched anywhere (Chinese and Japanese write no spaces between words).
const CJK_CUES: &[&str] = &[
    // Chinese: prohibitions, requirements, conditions, approvals.
    "不要",
    "不能",
    "不得",
    "不可",
    "不允许",
    "不准",
    "别",
    "禁止",
    "请勿",
    "勿",
    "避免",
    "必须",
    "务必",
    "一定要",
    "需要",
    "应该",
    "应当",
    "只能",
    "只允许",
    "只需",
    "仅",
    "确保",
    "保持",
    "确认",
    "批准",
    "同意",
    "审批",
    "审核",
    "直到",
    "之前",
    "除非",
    "先",
    "再继续",
    "每次只",
    "一次只",
    // Japanese.
    "しないで",
    "してはいけ",
    "ないでください",
    "必ず",
    "禁止",
    "確認",
    "承認",
    "まで待",
    "だけ",
    "してください",
];

fn word_cues() -> &'static AhoCorasick {
    static CUES: OnceLock<AhoCorasick> = OnceLock::new();
    CUES.get_or_init(|| AhoCorasick::new(WORD_CUES).expect("the cues build an automaton"))
}

fn cjk_cues() -> &'static AhoCorasick {
    static CUES: OnceLock<AhoCorasick> = OnceLock::new();
    CUES.get_or_init(|| AhoCorasick::new(CJK_CUES).expect("the cues build an automaton"))
}

/// Prohibitions that stay instructions when asked as a question ("Could you not touch X?").
const QUESTION_CUES: &[&str] = &["do not", "don't", "don’t", "never", "must not", "不要", "别", "禁止"];

/// Whether a sentence constrains the work (see the module docs). A question asks rather than
/// rules ("Where should I look?"), unless it forbids.
pub fn is_constraint(sentence: &str) -> bool {
    let chars = sentence.chars().count();
    if !(3..=MAX_CHARS).contains(&chars) {
        return false;
    }
    let trimmed = sentence.trim_end();
    if trimmed.ends_with('?') || trimmed.ends_with('？') {
        let lower = trimmed.to_lowercase();
        return QUESTION_CUES.iter().any(|c| lower.contains(c));
    }
    if cjk_cues().is_match(sentence) {
        return true;
    }
    let lower = sentence.to_lowercase();
    let bytes = lower.as_bytes();
    let word = |at: usize| lower[at..].chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_');
    word_cues().find_overlapping_iter(&lower).any(|m| {
        let before = m.start() > 0 && {
            let prev = lower[..m.start()].chars().next_back().expect("not at the start");
            prev.is_alphanumeric() || prev == '_'
        };
        let after = m.end() < bytes.len() && word(m.end());
        !before && !after
    })
}

/// The byte ranges of the constraint sentences of `text`, in order, each trimmed of whitespace
/// and of a list marker (`- `, `* `, `1. `).
pub(crate) fn constraint_ranges(text: &str) -> Vec<Range<usize>> {
    sentences(text).into_iter().filter(|r| is_constraint(&text[r.clone()])).collect()
}

/// The constraint sentences of `text`, verbatim.
pub fn constraints(text: &str) -> Vec<&str> {
    constraint_ranges(text).into_iter().map(|r| &text[r]).collect()
}

/// The sentences of `text` a person may have typed: its lines outside fenced and indented code
/// and outside this project's own notes, split at sentence ends.
pub(super) fn sentences(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let fenced = super::fences::fences(text);
    for (start, line) in super::fences::outside(text, &fenced) {
        let Some(line) = line else { continue };
        let trimmed = line.trim();
        let indented = line.starts_with("    ") || line.starts_with('\t');
        let note = trimmed.starts_with('[') && trimmed.contains("Context Condenser");
        if trimmed.is_empty() || indented || note {
            continue;
        }
        split_line(text, start..start + line.trim_end().len(), &mut out);
    }
    out
}

/// Splits one line (`range` of `text`) at sentence ends: `.`, `!`, `?` before whitespace, and
/// the full-width `。！？；` anywhere.
fn split_line(text: &str, range: Range<usize>, out: &mut Vec<Range<usize>>) {
    let line = &text[range.clone()];
    let mut from = 0;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = match c {
            '。' | '！' | '？' | '；' => Some(i + c.len_utf8()),
            '.' | '!' | '?' => {
                let next = chars.peek().map(|&(_, n)| n);
                match next {
                    Some(n) if n.is_whitespace() => Some(i + 1),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(end) = end
            && !abbreviation(&line[from..end])
        {
            push_sentence(text, range.start + from, range.start + end, out);
            from = end;
        }
    }
    push_sentence(text, range.start + from, range.end, out);
}

/// Whether a sentence "ends" in a common abbreviation or a list number, where it does not end.
fn abbreviation(piece: &str) -> bool {
    let last = piece.trim().rsplit(char::is_whitespace).next().unwrap_or("").to_ascii_lowercase();
    matches!(last.as_str(), "e.g." | "i.e." | "etc." | "vs." | "mr." | "dr." | "no.")
        || (piece.trim() == last
            && last.len() <= 3
            && last.ends_with('.')
            && last[..last.len() - 1].chars().all(|c| c.is_ascii_digit()))
}

/// Adds `text[start..end]` trimmed of whitespace and a leading list marker, when anything is left.
fn push_sentence(text: &str, start: usize, end: usize, out: &mut Vec<Range<usize>>) {
    let piece = &text[start..end];
    let lead = piece.len() - piece.trim_start().len();
    let mut s = start + lead;
    let body = &text[s..end];
    for marker in ["- ", "* ", "• ", "> "] {
        if let Some(rest) = body.strip_prefix(marker) {
            s = end - rest.len();
            break;
        }
    }
    let body = &text[s..end];
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && digits <= 3 && matches!(body.as_bytes().get(digits), Some(b'.' | b')')) {
        let rest = body[digits + 1..].trim_start();
        s = end - rest.len();
    }
    let e = s + text[s..end].trim_end().len();
    if e > s {
        out.push(s..e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_prohibitions_requirements_and_approvals() {
        let text = "Let's build the importer. Do one phase at a time; do not proceed until I approve.\n\
                    The output looks fine to me.\n- Tests must pass before you commit\n\
                    Thanks!";
        assert_eq!(
            constraints(text),
            vec![
                "Do one phase at a time; do not proceed until I approve.",
                "Tests must pass before you commit"
            ]
        );
    }

    #[test]
    fn questions_ask_unless_they_forbid() {
        assert!(!is_constraint("Where should I look first, and how do I test it?"));
        assert!(!is_constraint("Should we use only SQLite?"));
        assert!(is_constraint("Could you not touch the migrations, and never push?"));
        assert!(is_constraint("能不能不要修改接口？"));
    }

    #[test]
    fn cue_words_stand_alone() {
        // "mustard", "firstly"… are not cues; "stopwatch" neither.
        assert!(!is_constraint("Add mustard to the shopping list app."));
        assert!(!is_constraint("The stopwatch widget renders."));
        assert!(is_constraint("Stop after the failing test."));
        assert!(is_constraint("Don't touch the CI config."));
        assert!(is_constraint("Don’t touch the CI config."));
    }

    #[test]
    fn chinese_and_other_languages() {
        let text = "请帮我重构这个模块。不要修改公共接口！每完成一步都要等我确认再继续。";
        assert_eq!(constraints(text), vec!["不要修改公共接口！", "每完成一步都要等我确认再继续。"]);
        assert!(is_constraint("Bitte nicht den Main-Branch ändern."));
        assert!(is_constraint("Ne pas modifier les tests."));
        assert!(is_constraint("Nunca borres los datos."));
        assert!(is_constraint("本番のデータベースには触らないでください。"));
    }

    #[test]
    fn pasted_code_and_notes_are_not_read() {
        let text = "Here is the log:\n```\nerror: value must not be null\n```\n    \
                    if x { never_return() }\n[… 300 characters cut by Context Condenser …]\nFix it.";
        assert!(constraints(text).is_empty(), "{:?}", constraints(text));
    }

    #[test]
    fn abbreviations_and_list_numbers_do_not_end_a_sentence() {
        let text = "1. Use only std, e.g. no serde. 2. Keep it small.";
        assert_eq!(constraints(text), vec!["Use only std, e.g. no serde.", "Keep it small."]);
        // A number that ends a sentence ends it.
        let text = "Do not merge phase 2. The report is fine.";
        assert_eq!(constraints(text), vec!["Do not merge phase 2."]);
    }

    #[test]
    fn long_sentences_are_documents() {
        let long = format!("You must {}.", "read this clause ".repeat(40));
        assert!(!is_constraint(&long));
    }
}
