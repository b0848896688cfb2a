//! Whether a summary a model wrote is degenerate, and so must not be applied: a small model can
//! fall into a loop and write one line or one short phrase again and again until its output
//! limit, or stop at the limit before it wrote any of the sections it was asked for.
//!
//! Two cheap checks, linear in the text:
//! - **repeated lines**: lines (their list markers and enumerators left out, case ignored) that
//!   occur three times or more, wherever they are; what their repeats add is measured in
//!   characters;
//! - **repeated word runs**: a phrase of up to [`MAX_PERIOD_WORDS`] words said three times or
//!   more in a row, inside one line or across lines; what its repeats add is measured in words.
//!
//! A summary is degenerate when either makes up [`REPEAT_SHARE_PERCENT`] of its text or more,
//! so a structured summary whose sections repeat a short line ("None.", a file path, `---`) now
//! and then is not. A summary cut at its output limit is degenerate when it holds none of the
//! sections its prompt asked for ([`sections_asked`]); one cut after some of them is kept (and
//! flagged as cut by the provider).

use std::collections::HashMap;

/// The share of a summary's text, in percent, that repeats must make up for it to be degenerate.
pub const REPEAT_SHARE_PERCENT: usize = 50;
/// The fewest times a line or a phrase occurs for its repeats to count.
pub const MIN_REPEATS: usize = 3;
/// The longest phrase, in words, whose back-to-back repeats are looked for.
pub const MAX_PERIOD_WORDS: usize = 24;
/// The longest repeated unit quoted in a reason, in characters.
const QUOTE_CHARS: usize = 60;

/// Why a summary is degenerate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Degenerate {
    /// One line or phrase (or a few) repeated for most of the text.
    Repeats {
        /// The unit repeated most, as it first appears.
        unit: String,
        /// The share of the text its repeats (and any other repeats) make up, in percent.
        share_percent: usize,
    },
    /// Cut at the output limit before any of the sections asked for.
    CutWithoutSections {
        /// The finish reason the model gave (`length`, `max_tokens`).
        finish_reason: String,
        /// How many sections the prompt asked for.
        asked: usize,
    },
}

impl std::fmt::Display for Degenerate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Degenerate::Repeats { unit, share_percent } => {
                write!(f, "it repeats \"{}\": repeats make up {share_percent}% of it", quote(unit))
            }
            Degenerate::CutWithoutSections { finish_reason, asked } => write!(
                f,
                "it was cut at its output limit, finish reason \"{finish_reason}\", before any of the {asked} sections asked for"
            ),
        }
    }
}

fn quote(unit: &str) -> String {
    let one_line = unit.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= QUOTE_CHARS {
        return one_line;
    }
    let head: String = one_line.chars().take(QUOTE_CHARS).collect();
    format!("{head}…")
}

/// Whether a summary is degenerate: it repeats itself (see [`repetition`]), or `finish_reason`
/// says it was cut at its output limit and it holds none of `sections` (see [`sections_found`]).
/// With no sections known (a custom prompt without numbered sections), a cut summary is judged
/// by its repeats only.
pub fn check(text: &str, finish_reason: Option<&str>, sections: &[String]) -> Option<Degenerate> {
    if let Some(r) = repetition(text) {
        return Some(r);
    }
    let cut = finish_reason.filter(|r| matches!(*r, "length" | "max_tokens"))?;
    if !sections.is_empty() && sections_found(text, sections) == 0 {
        return Some(Degenerate::CutWithoutSections { finish_reason: cut.to_owned(), asked: sections.len() });
    }
    None
}

/// A repetition that makes up [`REPEAT_SHARE_PERCENT`] of `text` or more: repeated lines
/// (by characters) or a phrase said again and again in a row (by words).
pub fn repetition(text: &str) -> Option<Degenerate> {
    let by_lines = repeated_lines(text);
    let by_words = repeated_runs(text);
    [by_lines, by_words]
        .into_iter()
        .flatten()
        .filter(|(_, share)| *share >= REPEAT_SHARE_PERCENT)
        .max_by_key(|(_, share)| *share)
        .map(|(unit, share_percent)| Degenerate::Repeats { unit, share_percent })
}

/// A line as it is compared: without its list marker or enumerator (`- `, `* `, `1. `, `## `,
/// `[ ]`), lower case, its spaces collapsed.
fn line_key(line: &str) -> String {
    let rest = line
        .trim()
        .trim_start_matches(|c: char| matches!(c, '#' | '*' | '-' | '+' | '>' | '•') || c.is_whitespace());
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    let rest = rest.strip_prefix(['.', ')']).unwrap_or(rest);
    let rest = rest.trim_start();
    let rest = ["[ ]", "[x]", "[X]"].iter().find_map(|b| rest.strip_prefix(b)).unwrap_or(rest);
    rest.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The line repeated most (as first written) and the share of the text, in percent of its
/// characters, that the repeats of every line occurring [`MIN_REPEATS`] times or more make up.
fn repeated_lines(text: &str) -> Option<(String, usize)> {
    let mut seen: HashMap<String, (usize, &str)> = HashMap::new();
    let mut total = 0usize;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let key = line_key(line);
        total += key.chars().count().max(1);
        seen.entry(key).or_insert((0, line)).0 += 1;
    }
    let mut excess = 0usize;
    let mut worst: Option<(usize, &str)> = None;
    for (key, (count, first)) in &seen {
        if *count < MIN_REPEATS || key.is_empty() {
            continue;
        }
        let extra = (count - 1) * key.chars().count();
        excess += extra;
        if worst.is_none_or(|(w, _)| extra > w) {
            worst = Some((extra, first));
        }
    }
    let (_, unit) = worst?;
    Some((unit.to_owned(), excess * 100 / total.max(1)))
}

/// A word as it is compared: lower case, without the punctuation around it (a word of
/// punctuation only stays as it is).
fn word_key(word: &str) -> String {
    let bare = word.trim_matches(|c: char| c.is_ascii_punctuation());
    if bare.is_empty() { word.to_owned() } else { bare.to_lowercase() }
}

/// The phrase repeated back to back over the most words (as first written) and the share of the
/// words, in percent, that the repeats of every phrase of up to [`MAX_PERIOD_WORDS`] words said
/// [`MIN_REPEATS`] times or more in a row make up.
fn repeated_runs(text: &str) -> Option<(String, usize)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let keys: Vec<String> = words.iter().map(|w| word_key(w)).collect();
    let n = keys.len();
    let mut repeat = vec![false; n];
    // The longest run: (words its repeats cover, its start, its period).
    let mut longest: Option<(usize, usize, usize)> = None;
    for period in 1..=MAX_PERIOD_WORDS.min(n / MIN_REPEATS) {
        let mut i = 0;
        while i + period < n {
            if keys[i] != keys[i + period] {
                i += 1;
                continue;
            }
            // keys[start + period..end + period] repeat the words `period` before them.
            let start = i;
            while i + period < n && keys[i] == keys[i + period] {
                i += 1;
            }
            let covered = i - start;
            if covered >= (MIN_REPEATS - 1) * period {
                repeat[start + period..i + period].iter_mut().for_each(|r| *r = true);
                if longest.is_none_or(|(c, _, _)| covered > c) {
                    longest = Some((covered, start, period));
                }
            }
        }
    }
    let (_, start, period) = longest?;
    let share = repeat.iter().filter(|r| **r).count() * 100 / n.max(1);
    Some((words[start..start + period].join(" "), share))
}

/// The section titles a summary prompt asks for: the text before the colon of each of its
/// numbered lines (`1. Primary request and intent: …`). A numbered line without a colon is an
/// instruction, not a section. Empty for a prompt without any.
pub fn sections_asked(prompt: &str) -> Vec<String> {
    prompt
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let digits = line.chars().take_while(char::is_ascii_digit).count();
            let rest = line[digits..].strip_prefix(['.', ')'])?;
            let (title, _) = rest.split_once(':')?;
            let title = title.trim();
            (digits > 0 && !title.is_empty() && title.split_whitespace().count() <= 8)
                .then(|| title.to_owned())
        })
        .collect()
}

/// The first two words of a title, lower case: what a heading must start with to name it.
fn title_key(title: &str) -> String {
    title.split_whitespace().take(2).map(word_key).collect::<Vec<_>>().join(" ")
}

/// How many of `sections` the summary names: a line that starts, after its heading marks,
/// enumerator and emphasis, with the first two words of a section's title counts for it.
pub fn sections_found(text: &str, sections: &[String]) -> usize {
    let starts: Vec<String> = text
        .lines()
        .map(|line| {
            let rest = line.trim_start_matches(|c: char| {
                c.is_ascii_digit()
                    || c.is_whitespace()
                    || matches!(c, '#' | '*' | '_' | '-' | '.' | ')' | '>')
            });
            rest.split_whitespace().take(2).map(word_key).collect::<Vec<_>>().join(" ")
        })
        .collect();
    sections.iter().filter(|s| starts.contains(&title_key(s))).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::summary::SUMMARY_PROMPT;

    /// What a capable model writes: numbered sections, bullet lists, paths and commands, some
    /// short lines repeated across sections.
    const GOOD: &str = "\
## 1. Primary request and intent
- Port the CSV importer in src/import/ to the new Reader API.
- Rules: never touch config/prod.toml, keep the public function names, run cargo test after each edit.

## 2. Key technical concepts
- Rust, the Reader API (`Reader::field`), `Result<Field, ImportError>`.

## 3. Files and code
- src/import/mod_0.rs: parse_field_0_* ported to `reader.field(at)?`.
- src/import/mod_1.rs: parse_field_1_* ported to `reader.field(at)?`.
- src/import/mod_2.rs: parse_field_2_* ported to `reader.field(at)?`.

## 4. Errors and fixes
- error[E0308]: mismatched types in src/import/mod_0.rs:10: expected `Field`, found `Option<Field>`. Fixed with `?`.
- None.

## 5. Problem solving
- The Option/Result mismatch came from `row.get`; `reader.field` returns a Result.

## 6. All user messages
- \"Port the CSV importer in src/import/ to the new Reader API. Rules: …\"
- \"Good, go on with mod_1. Remember: keep the names.\"
- \"Good, go on with mod_2. Remember: keep the names.\"
- \"Good, go on with mod_3. Remember: keep the names.\"

## 7. Pending tasks
- [ ] mod_3
- [ ] update the changelog

## 8. Current work
- Porting mod_3.

## 9. Next step
- Read src/import/mod_3.rs and port it; the user said: \"Good, go on with mod_3. Remember: keep the names.\"
";

    fn sections() -> Vec<String> {
        sections_asked(SUMMARY_PROMPT)
    }

    #[test]
    fn the_default_prompt_asks_for_nine_sections_and_a_good_summary_names_them_all() {
        let s = sections();
        assert_eq!(s.len(), 9, "{s:?}");
        assert_eq!(s[0], "Primary request and intent");
        assert_eq!(s[8], "Next step");
        assert_eq!(sections_found(GOOD, &s), 9);
        // Headings as small models write them: bold, numbered items, other cases.
        let loose = "1. **Primary Request and Intent**: port it\n**2. Key technical concepts:** Rust\n### FILES AND CODE\n";
        assert_eq!(sections_found(loose, &s), 3);
        assert_eq!(sections_found("The user wants the importer ported.", &s), 0);
    }

    #[test]
    fn a_good_structured_summary_is_not_degenerate_even_when_cut() {
        assert_eq!(check(GOOD, Some("stop"), &sections()), None);
        // Cut in its fourth section: kept (the provider flags it as cut).
        let cut = &GOOD[..GOOD.find("## 4.").unwrap() + 40];
        assert_eq!(check(cut, Some("length"), &sections()), None);
    }

    #[test]
    fn structured_summaries_with_repeated_short_lines_are_not_degenerate() {
        // Every empty section says "None." and the same file comes up in several sections.
        let sparse = "\
# Summary
1. Primary request and intent: fix the failing test in tests/api.rs.
2. Key technical concepts: None.
3. Files and code:
   - tests/api.rs
4. Errors and fixes: None.
5. Problem solving: None.
6. All user messages:
   - \"fix the failing test\"
   - \"continue\"
   - \"continue\"
   - \"continue\"
7. Pending tasks: None.
8. Current work: tests/api.rs
9. Next step: run `cargo test --test api` again.
";
        assert_eq!(check(sparse, Some("stop"), &sections()), None);
        // A summary that lists a table and a todo list with the same bullet shape.
        let table = "\
| file | change |
| --- | --- |
| src/a.rs | renamed `foo` to `bar` |
| src/b.rs | renamed `foo` to `bar` |
| src/c.rs | renamed `foo` to `bar` |
| src/d.rs | added a test for `bar` |

Pending: - [ ] src/e.rs - [ ] src/f.rs - [ ] the changelog. The user asked to keep every public name, to run the tests after each edit and never to touch config/prod.toml; the last test run passed.";
        assert_eq!(check(table, Some("stop"), &sections()), None);
        // A summary in the style of Claude Code's compaction: bold headings, nested bullets, a
        // code block whose closing braces repeat, the same file named in several sections.
        let compact = "\
Analysis:
The conversation is a port of the importer to the Reader API, module by module.

Summary:
1. **Primary Request and Intent:**
   - Port the CSV importer in `src/import/` to the new Reader API.
   - Keep the public function names; never touch `config/prod.toml`; run `cargo test` after each edit.
2. **Key Technical Concepts:**
   - `Reader::field(at)` returns `Result<Field, ImportError>`; `Row::get` returned `Option<&Field>`.
3. **Files and Code Sections:**
   - `src/import/reader.rs`
     - Added the Reader:
       ```rust
       impl Reader {
           pub fn field(&self, at: usize) -> Result<Field, ImportError> {
               self.row.get(at).cloned().ok_or(ImportError::Missing(at))
           }
       }
       ```
   - `src/import/mod_0.rs`
     - `parse_field_0_*` now call `reader.field(at)?`.
   - `src/import/mod_1.rs`
     - `parse_field_1_*` now call `reader.field(at)?`.
4. **Errors and fixes:**
   - `error[E0308]: mismatched types` in `src/import/mod_0.rs:10`: fixed with `?`.
5. **Problem Solving:**
   - The tests pass after each module.
6. **All user messages:**
   - \"Port the CSV importer in src/import/ to the new Reader API. Rules: ...\"
   - \"Good, go on with mod_1. Remember: keep the names.\"
   - \"Good, go on with mod_2. Remember: keep the names.\"
7. **Pending Tasks:**
   - Port `src/import/mod_2.rs`.
   - Update the changelog.
8. **Current Work:**
   - `src/import/mod_2.rs`
9. **Optional Next Step:**
   - Read `src/import/mod_2.rs`, as the user asked: \"Good, go on with mod_2. Remember: keep the names.\"
";
        assert_eq!(check(compact, Some("stop"), &sections()), None);
        assert_eq!(sections_found(compact, &sections()), 8, "\"Optional next step\" is not \"Next step\"");
        // A faithful quote of a user who repeated themselves a little.
        let quoted = "The user said \"go on, go on, go on\" after each module; the importer is ported up to mod_7, the tests pass, and the changelog is still to be updated as the user asked at the start.";
        assert_eq!(check(quoted, Some("stop"), &sections()), None);
    }

    #[test]
    fn one_line_repeated_to_the_limit_is_degenerate() {
        // What SmolLM2-135M wrote for a 5.4k-token coding chat.
        let looped = format!("Summary of the conversation:\n{}", "[tool result]\n".repeat(200));
        let d = check(&looped, Some("length"), &sections()).unwrap();
        let Degenerate::Repeats { unit, share_percent } = &d else { panic!("{d:?}") };
        assert_eq!(unit, "[tool result]");
        assert!(*share_percent > 90, "{share_percent}");
        assert!(d.to_string().starts_with("it repeats \"[tool result]\""), "{d}");
        // The same with a finish reason of stop, with headings before the loop, and numbered.
        assert!(check(&looped, Some("stop"), &sections()).is_some());
        let headed = format!(
            "## 1. Primary request and intent\nPort the importer.\n## 3. Files and code\n{}",
            "- src/import/mod_0.rs\n".repeat(40)
        );
        assert!(check(&headed, Some("length"), &sections()).is_some());
        // And what it wrote another time: its own headings, three of them in a loop. They name
        // sections, so only the repeats give it away.
        let headings = format!(
            "Here is a summary of the conversation:\n\n[Summary]\n\n[Key Technical Concepts]\n\n{}",
            "[Files and Code]\n\n[Error and Fixes]\n\n[Problem Solving]\n\n".repeat(40)
        );
        assert!(sections_found(&headings, &sections()) >= 3);
        assert!(matches!(check(&headings, Some("length"), &sections()), Some(Degenerate::Repeats { .. })));
        let numbered: String =
            (1..60).map(|i| format!("{i}. The user asked for the tests to pass.\n")).collect();
        assert!(check(&numbered, None, &sections()).is_some());
    }

    #[test]
    fn a_phrase_repeated_within_one_line_is_degenerate() {
        let one_line = format!("The user wants {}", "the importer ported and ".repeat(80));
        let Some(Degenerate::Repeats { unit, share_percent }) = check(&one_line, Some("length"), &sections())
        else {
            panic!("not caught")
        };
        assert!(share_percent > 90, "{share_percent}");
        assert!(unit.contains("importer"), "{unit}");
        // A single word too, and a cycle of a few lines.
        assert!(repetition(&"ok ".repeat(50)).is_some());
        let cycle = "Reading src/a.rs.\n[tool result]\nRunning the tests.\n".repeat(20);
        assert!(repetition(&cycle).is_some());
    }

    #[test]
    fn repeats_below_half_of_the_text_are_not_degenerate() {
        let mixed = format!("{}\n{}", GOOD, "[tool result]\n".repeat(10));
        assert_eq!(repetition(&mixed), None);
    }

    #[test]
    fn a_cut_summary_without_any_section_is_degenerate_unless_no_sections_were_asked() {
        let prose = "The user and the assistant worked on the importer for a long time, reading each module and then porting it to the Reader API while the tests ran after every";
        let d = check(prose, Some("length"), &sections()).unwrap();
        assert_eq!(d, Degenerate::CutWithoutSections { finish_reason: "length".into(), asked: 9 });
        assert!(d.to_string().contains("before any of the 9 sections"), "{d}");
        assert!(check(prose, Some("max_tokens"), &sections()).is_some());
        // Not cut: prose is the model's choice.
        assert_eq!(check(prose, Some("stop"), &sections()), None);
        assert_eq!(check(prose, None, &sections()), None);
        // A custom prompt that names no sections: a cut answer is judged by its repeats only.
        assert!(sections_asked("Summarize the conversation in one paragraph.").is_empty());
        assert_eq!(check(prose, Some("length"), &[]), None);
        // A custom prompt's own numbered sections count.
        let custom =
            sections_asked("Summarize.\n1. Goals: what the user wants.\n2) Open questions: what is unclear.");
        assert_eq!(custom, ["Goals", "Open questions"]);
        assert!(sections_asked("Rules:\n1. Keep it short.\n2. Quote the user.").is_empty());
        assert_eq!(check("## Goals\nport the importer, and then", Some("length"), &custom), None);
    }

    #[test]
    fn long_units_are_quoted_short() {
        let unit = "word ".repeat(30);
        let d = Degenerate::Repeats { unit, share_percent: 80 };
        assert!(d.to_string().contains("word word") && d.to_string().contains('…'), "{d}");
    }
}
