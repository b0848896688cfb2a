//! The assistant's findings and decisions: the sentences of its text that state a cause ("the
//! test fails because …"), a conclusion ("it turns out …"), a change made ("I changed `parse`
//! to …"), a plan ("next, I'll …") or an approach ruled out ("that did not work"), found by cue
//! words in the languages the constraint finder knows. A change or a plan counts only when it
//! names something concrete (a `code span`, a path, an identifier): "Let me look at it" is not a
//! finding; "I'll move `retry` into src/backoff.rs" is.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

use super::constraints::sentences;

/// Characters a finding may have; longer is a paragraph, not a statement.
const MAX_CHARS: usize = 360;
const MIN_CHARS: usize = 16;
/// Bytes a change or a plan must have to be a finding.
const CONCRETE_MIN: usize = 30;

/// What a cue says, weakest last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cue {
    /// A cause, a conclusion, a fix, or an approach ruled out: kept on its own.
    Strong,
    /// A change made or a plan: kept when it names something concrete.
    Concrete,
}

/// Cues matched as whole words, lowercase.
const WORD_CUES: &[(&str, Cue)] = &[
    ("because", Cue::Strong),
    ("caused by", Cue::Strong),
    ("the cause", Cue::Strong),
    ("root cause", Cue::Strong),
    ("the reason", Cue::Strong),
    ("due to", Cue::Strong),
    ("the problem is", Cue::Strong),
    ("the problem was", Cue::Strong),
    ("the issue is", Cue::Strong),
    ("the issue was", Cue::Strong),
    ("the bug is", Cue::Strong),
    ("the bug was", Cue::Strong),
    ("that's why", Cue::Strong),
    ("this is why", Cue::Strong),
    ("which is why", Cue::Strong),
    ("turns out", Cue::Strong),
    ("found that", Cue::Strong),
    ("i found", Cue::Strong),
    ("confirmed", Cue::Strong),
    ("this means", Cue::Strong),
    ("which means", Cue::Strong),
    ("the fix is", Cue::Strong),
    ("the fix was", Cue::Strong),
    ("now passes", Cue::Strong),
    ("now pass", Cue::Strong),
    ("tests pass", Cue::Strong),
    ("all tests pass", Cue::Strong),
    ("works now", Cue::Strong),
    ("is fixed", Cue::Strong),
    ("didn't work", Cue::Strong),
    ("did not work", Cue::Strong),
    ("doesn't work", Cue::Strong),
    ("does not work", Cue::Strong),
    ("won't work", Cue::Strong),
    ("not the cause", Cue::Strong),
    ("not the issue", Cue::Strong),
    ("not the problem", Cue::Strong),
    ("ruled out", Cue::Strong),
    ("still fails", Cue::Strong),
    ("still failing", Cue::Strong),
    ("same error", Cue::Strong),
    ("didn't help", Cue::Strong),
    ("did not help", Cue::Strong),
    ("instead of", Cue::Strong),
    ("the error is", Cue::Strong),
    ("the error was", Cue::Strong),
    ("fails with", Cue::Strong),
    ("failed with", Cue::Strong),
    ("is missing", Cue::Strong),
    ("is not defined", Cue::Strong),
    ("doesn't exist", Cue::Strong),
    ("does not exist", Cue::Strong),
    ("i've changed", Cue::Concrete),
    ("i changed", Cue::Concrete),
    ("i've updated", Cue::Concrete),
    ("i updated", Cue::Concrete),
    ("i've added", Cue::Concrete),
    ("i added", Cue::Concrete),
    ("i've removed", Cue::Concrete),
    ("i removed", Cue::Concrete),
    ("i've fixed", Cue::Concrete),
    ("i fixed", Cue::Concrete),
    ("fixed", Cue::Concrete),
    ("i've implemented", Cue::Concrete),
    ("implemented", Cue::Concrete),
    ("i've replaced", Cue::Concrete),
    ("replaced", Cue::Concrete),
    ("renamed", Cue::Concrete),
    ("i've moved", Cue::Concrete),
    ("moved", Cue::Concrete),
    ("refactored", Cue::Concrete),
    ("i've created", Cue::Concrete),
    ("created", Cue::Concrete),
    ("next, i", Cue::Concrete),
    ("next i", Cue::Concrete),
    ("i'll", Cue::Concrete),
    ("i will", Cue::Concrete),
    ("the plan", Cue::Concrete),
    ("we need to", Cue::Concrete),
    ("i need to", Cue::Concrete),
    ("should be", Cue::Concrete),
    ("defined in", Cue::Concrete),
    ("is defined", Cue::Concrete),
    ("is used", Cue::Concrete),
    ("uses", Cue::Concrete),
    ("calls", Cue::Concrete),
    ("returns", Cue::Concrete),
    ("expects", Cue::Concrete),
    // German, French, Spanish.
    ("weil", Cue::Strong),
    ("ursache", Cue::Strong),
    ("liegt an", Cue::Strong),
    ("behoben", Cue::Strong),
    ("geändert", Cue::Concrete),
    ("als nächstes", Cue::Concrete),
    ("parce que", Cue::Strong),
    ("la cause", Cue::Strong),
    ("corrigé", Cue::Strong),
    ("j'ai modifié", Cue::Concrete),
    ("ensuite", Cue::Concrete),
    ("porque", Cue::Strong),
    ("la causa", Cue::Strong),
    ("corregido", Cue::Strong),
    ("he cambiado", Cue::Concrete),
    ("a continuación", Cue::Concrete),
];

/// Cues matched anywhere (Chinese and Japanese).
const CJK_CUES: &[(&str, Cue)] = &[
    ("因为", Cue::Strong),
    ("原因", Cue::Strong),
    ("问题是", Cue::Strong),
    ("问题在于", Cue::Strong),
    ("导致", Cue::Strong),
    ("发现", Cue::Strong),
    ("已修复", Cue::Strong),
    ("修复了", Cue::Strong),
    ("不行", Cue::Strong),
    ("无效", Cue::Strong),
    ("改为", Cue::Concrete),
    ("已经", Cue::Concrete),
    ("接下来", Cue::Concrete),
    ("下一步", Cue::Concrete),
    ("修正しました", Cue::Strong),
    ("次に", Cue::Concrete),
];

fn word_cues() -> &'static AhoCorasick {
    static CUES: OnceLock<AhoCorasick> = OnceLock::new();
    CUES.get_or_init(|| {
        AhoCorasick::new(WORD_CUES.iter().map(|(w, _)| w)).expect("the cues build an automaton")
    })
}

fn cjk_cues() -> &'static AhoCorasick {
    static CUES: OnceLock<AhoCorasick> = OnceLock::new();
    CUES.get_or_init(|| {
        AhoCorasick::new(CJK_CUES.iter().map(|(w, _)| w)).expect("the cues build an automaton")
    })
}

/// The strongest cue of a sentence, if any.
fn cue(sentence: &str) -> Option<Cue> {
    let mut best: Option<Cue> =
        cjk_cues().find_overlapping_iter(sentence).map(|m| CJK_CUES[m.pattern().as_usize()].1).min();
    let lower = sentence.to_lowercase();
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    for m in word_cues().find_overlapping_iter(&lower) {
        let before = word(lower[..m.start()].chars().next_back());
        let after = word(lower[m.end()..].chars().next());
        if !before && !after {
            let c = WORD_CUES[m.pattern().as_usize()].1;
            best = Some(best.map_or(c, |b| b.min(c)));
        }
    }
    best
}

/// Whether a sentence names something concrete: a `code span`, a path, or an identifier
/// (`snake_case`, `camelCase`, `Type::name`).
pub(crate) fn concrete(sentence: &str) -> bool {
    if sentence.matches('`').count() >= 2 {
        return true;
    }
    sentence.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '\'')).any(|w| {
        let w = w.trim_end_matches(['.', ':', '!', '?']);
        let path = w.contains('/')
            && w.chars().filter(|c| c.is_ascii_alphabetic()).count() >= 2
            && !w.contains("://");
        let file = w.rsplit_once('.').is_some_and(|(s, e)| {
            !s.is_empty()
                && (1..=5).contains(&e.len())
                && e.chars().all(|c| c.is_ascii_lowercase())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
        let snake =
            w.trim_matches('_').contains('_') && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let camel = w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && w.chars().any(|c| c.is_ascii_uppercase())
            && w.chars().all(|c| c.is_ascii_alphanumeric());
        path || file || snake || camel || w.contains("::")
    })
}

/// The findings of an assistant's text, verbatim, in order.
pub(crate) fn findings(text: &str) -> Vec<&str> {
    sentences(text)
        .into_iter()
        .map(|r| &text[r])
        .filter(|s| {
            // At least MIN_CHARS bytes (a Chinese sentence says as much in fewer characters).
            if s.len() < MIN_CHARS || s.chars().count() > MAX_CHARS || s.trim_end().ends_with('?') {
                return false;
            }
            match cue(s) {
                Some(Cue::Strong) => true,
                // A change or a plan says what and where: a few words naming a thing are not one.
                Some(Cue::Concrete) => s.len() >= CONCRETE_MIN && concrete(s),
                None => false,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_changes_plans_and_dead_ends() {
        let text = "Let me look at the file. The test fails because `Backoff::next` overflows at 2^32. \
                    I changed `next` to use `saturating_mul`. I'll run it again. \
                    Next, I'll move the clock into src/clock.rs. Bumping the timeout did not work. \
                    Is it the config?\n```\nfixed because x\n```";
        assert_eq!(
            findings(text),
            [
                "The test fails because `Backoff::next` overflows at 2^32.",
                "I changed `next` to use `saturating_mul`.",
                "Next, I'll move the clock into src/clock.rs.",
                "Bumping the timeout did not work."
            ]
        );
        assert_eq!(findings("问题在于配置文件没有加载。我来看看。"), ["问题在于配置文件没有加载。"]);
        assert!(findings("Becauseless words, and a moved-on line.").is_empty());
    }
}
