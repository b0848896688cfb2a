//! The fast token counter against its oracles: tiktoken-rs's `encode_ordinary(text).len()` for
//! the counts, fancy-regex running tiktoken's own patterns for the pieces, regex-syntax for the
//! character classes, and the generated files against what `examples/token_tables.rs` writes.

#[path = "common/token_tables.rs"]
mod token_tables;

use std::sync::OnceLock;

use condense_core::TiktokenCounter;
use condense_core::tokens::{Encoding, TokenCounter, char_flags, count_in, split_pieces};
use proptest::prelude::*;
use tiktoken_rs::CoreBPE;

const CL100K_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+(?!\S)",
    r"|\s+",
);

fn oracle(encoding: Encoding) -> &'static CoreBPE {
    static O200K: OnceLock<CoreBPE> = OnceLock::new();
    static CL100K: OnceLock<CoreBPE> = OnceLock::new();
    match encoding {
        Encoding::O200kBase => O200K.get_or_init(|| tiktoken_rs::o200k_base().unwrap()),
        Encoding::Cl100kBase => CL100K.get_or_init(|| tiktoken_rs::cl100k_base().unwrap()),
    }
}

fn pattern(encoding: Encoding) -> &'static fancy_regex::Regex {
    static O200K: OnceLock<fancy_regex::Regex> = OnceLock::new();
    static CL100K: OnceLock<fancy_regex::Regex> = OnceLock::new();
    match encoding {
        Encoding::O200kBase => O200K.get_or_init(|| fancy_regex::Regex::new(O200K_PATTERN).unwrap()),
        Encoding::Cl100kBase => CL100K.get_or_init(|| fancy_regex::Regex::new(CL100K_PATTERN).unwrap()),
    }
}

/// One counter per encoding for the whole test run, so its piece cache holds the pieces of every
/// text checked before (by any test thread): a count answered from the cache is checked too.
fn shared_counter(encoding: Encoding) -> &'static TiktokenCounter {
    static O200K: OnceLock<TiktokenCounter> = OnceLock::new();
    static CL100K: OnceLock<TiktokenCounter> = OnceLock::new();
    match encoding {
        Encoding::O200kBase => O200K.get_or_init(|| TiktokenCounter::new(Encoding::O200kBase)),
        Encoding::Cl100kBase => CL100K.get_or_init(|| TiktokenCounter::new(Encoding::Cl100kBase)),
    }
}

fn oracle_pieces(encoding: Encoding, text: &str) -> Vec<&str> {
    pattern(encoding).find_iter(text).map(|m| m.unwrap().as_str()).collect()
}

const BOTH: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

/// Same pieces as the regex, same count as tiktoken-rs, in both encodings: uncached
/// (`count_in`), through a counter whose piece cache is warm with earlier texts, and through a
/// fresh counter, first with its cache cold, then again with it filled by this text.
fn check(text: &str) -> Result<(), TestCaseError> {
    for encoding in BOTH {
        prop_assert_eq!(
            split_pieces(encoding, text),
            oracle_pieces(encoding, text),
            "{:?} pieces of {:?}",
            encoding,
            text
        );
        let expected = oracle(encoding).encode_ordinary(text).len();
        prop_assert_eq!(count_in(encoding, text), expected, "{:?} count of {:?}", encoding, text);
        let shared = shared_counter(encoding).count_text(text);
        prop_assert_eq!(shared, expected, "{:?} count of {:?} (warm piece cache)", encoding, text);
        let fresh = TiktokenCounter::new(encoding);
        prop_assert_eq!(
            fresh.count_text(text),
            expected,
            "{:?} count of {:?} (cold piece cache)",
            encoding,
            text
        );
        prop_assert_eq!(
            fresh.count_text(text),
            expected,
            "{:?} count of {:?} (its own pieces cached)",
            encoding,
            text
        );
    }
    Ok(())
}

const CORPUS: &[&str] = &[
    "",
    "hello world",
    "tiktoken is great!",
    "Ünïcödé façade — naïve café",
    "こんにちは世界、元気ですか？",
    "fn main() {\n    println!(\"{}\", 42);\n}\n",
    "🦀 Rust 🚀 emoji 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 skin 👍🏽",
    "antidisestablishmentarianism",
    "I'm sure you'll see they've done what we'd said: it's John's, ISN'T IT? YOU'RE RIGHT, I'D SAY WE'LL",
    "'s 's 'S 'ſ 'll 'LL 'lL 're 'Re 've 'VE 'm 'M 'd 'D 'x '' ''s",
    "don'tſ DON'T Don'T don’t l'été it'ſ IT'ſ 'ſtuff 'ſ1 'Ster 'lls 'rex 'veal",
    "1 12 123 1234 12345 123456 3.14159 1,000,000 0x7fff_ffff ١٢٣٤٥ 四五六 ⅠⅡⅢⅣ ²³",
    "a  b   c    d\te\t\tf \t g\n\nh \n i\r\nj\r\n\r\n  k \u{a0}l\u{3000}\u{3000}m\u{2028}n\u{85}o",
    "   ",
    "\n",
    " \n ",
    "trailing   ",
    "  leading",
    "\t\t\tindent\n\t\t\tmore",
    "x\u{a0}\u{a0}y",
    "שלום עולם! مرحبا بالعالم؟ ١٢٣",
    "e\u{301}te\u{301} n\u{303} a\u{308}\u{304} \u{301}\u{301}abc A\u{301}BC",
    "ǅungla ǈ ǋ ᾈ ᾉ Σίσυφος ΣΊΣΥΦΟΣ ﬁﬂ ß ẞ",
    "#include <stdio.h>\nint main(void) { return printf(\"%d\\n\", 1 << 3) != 0; }\n",
    "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\\u00e9\"}}",
    "2024-05-01T12:34:56.789Z ERROR [worker-3] request_id=ab12 failed: timeout after 30000ms (retry 2/5)\n",
    "src/main.rs:42:17: error[E0308]: mismatched types\n  --> src/lib.rs:10:5\n   |\n10 |     let x: u32 = \"s\";\n",
    "## Heading\n\n- item one\n- item **two**\n\n```rust\nlet v = vec![1, 2, 3];\n```\n\n> quote //// ///\n",
    "https://example.com/path/to/file.html?query=1&b=2#frag //comment /* block */ a//b ///\n//",
    "!!!???... ---- ==== ____ ```` ~~~ *** ### $$$ %%% ^^^ &&& |||",
    "A/B/C /usr/bin/env \\path\\to\\file .\\r\\n",
    "ALLCAPS CamelCase camelCase snake_case kebab-case SCREAMING_SNAKE XMLHttpRequest iOS",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝐁𝐨𝐥𝐝 ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "\u{feff}BOM \u{200b}zero\u{200b}width \u{200d}joiner \u{fe0f}",
    "ok\r\rtwo carriage\r returns\r",
    "mixed\t \n\t \r\n  \t",
    "한국어 텍스트와 中文混合 text",
    "ไทย ภาษา ไทย",
    "हिन्दी भाषा",
    "\u{0}\u{1}\u{7f} control\u{1b}[31mred\u{1b}[0m",
];

#[test]
fn corpus_matches_tiktoken() {
    for text in CORPUS {
        check(text).unwrap();
    }
}

#[test]
fn long_inputs_match_tiktoken() {
    let long: String = CORPUS.concat().repeat(20);
    check(&long).unwrap();
    check(&" ".repeat(5000)).unwrap();
    check(&format!("{}x", " ".repeat(300))).unwrap();
    check(&"=".repeat(3000)).unwrap();
    check(&"ab".repeat(2000)).unwrap();
    check(&"\n".repeat(100)).unwrap();
}

/// Long single pieces, where the merge runs by the heap (issue 24: the merge loop was quadratic
/// in a piece's length): runs of one letter, base64 of zero bytes, a word repeated without spaces,
/// mixed-case runs, a run of CJK. Each is one piece (or a few) of tens of thousands of bytes, and
/// tiktoken-rs (whose own merge is quadratic) still counts them in a second or two.
#[test]
fn long_pieces_match_tiktoken() {
    check(&"L".repeat(60_000)).unwrap();
    check(&format!("{}=", "A".repeat(40_000))).unwrap();
    check(&"abc".repeat(12_000)).unwrap();
    check(&"TheQuickBrownFox".repeat(2_000)).unwrap();
    check(&"中文".repeat(5_000)).unwrap();
}

/// A piece of up to 10,000 bytes from a small alphabet (so that merges cascade and equal pairs
/// compete), with or without a leading space.
fn long_piece() -> impl Strategy<Value = String> {
    let alphabets: &[&[char]] =
        &[&['L'], &['A'], &['a', 'b'], &['e', 't', 'h'], &['x', 'Y', 'z', 'é'], &['中', '文', '字']];
    (0..alphabets.len(), 128usize..10_000, any::<bool>()).prop_flat_map(move |(a, len, space)| {
        let chars = alphabets[a];
        let n = len / chars[0].len_utf8();
        proptest::collection::vec(proptest::sample::select(chars), n).prop_map(move |v| {
            format!("{}{}", if space { " " } else { "" }, v.into_iter().collect::<String>())
        })
    })
}

/// Characters chosen where the patterns' decisions are made: every kind of whitespace, line
/// breaks, apostrophes and contraction letters in both cases (and the long s that `(?i:s)`
/// matches), digits from several scripts, letters of every case class, combining marks, symbols,
/// emoji and joiners, right-to-left text, the slash o200k treats apart.
const ALPHABET: &[char] = &[
    ' ',
    ' ',
    ' ',
    '\t',
    '\n',
    '\r',
    '\u{b}',
    '\u{c}',
    '\u{85}',
    '\u{a0}',
    '\u{1680}',
    '\u{2000}',
    '\u{2028}',
    '\u{2029}',
    '\u{202f}',
    '\u{3000}',
    '\'',
    '\'',
    '’',
    's',
    'S',
    't',
    'T',
    'r',
    'R',
    'e',
    'E',
    'v',
    'V',
    'm',
    'M',
    'l',
    'L',
    'd',
    'D',
    'ſ',
    'K',
    'a',
    'z',
    'Z',
    'é',
    'É',
    'ǅ',
    'ᾈ',
    'ʰ',
    'ª',
    '中',
    'ア',
    '한',
    'ß',
    'Σ',
    'ς',
    '\u{301}',
    '\u{308}',
    '\u{903}',
    '\u{20dd}',
    '0',
    '5',
    '9',
    '٣',
    '४',
    'Ⅻ',
    '½',
    '²',
    '.',
    ',',
    '!',
    '?',
    '-',
    '_',
    '/',
    '/',
    '\\',
    '"',
    '(',
    ')',
    '{',
    '}',
    '#',
    '*',
    '`',
    '@',
    '$',
    '€',
    '🦀',
    '👍',
    '\u{1f3fd}',
    '\u{200d}',
    '\u{fe0f}',
    '\u{200b}',
    'א',
    'ש',
    'م',
    'ر',
    '\u{0}',
    '\u{1b}',
    '\u{ffff}',
    '\u{10ffff}',
];

fn adversarial() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        4 => proptest::sample::select(ALPHABET).prop_map(String::from),
        1 => proptest::sample::select(vec![
            "'s", "'ſ", "'LL", "'Re", "'vE", "'m", "'D", "'t", "\r\n", "  \n", " \t ", "123", "1234567", "don't", "WE'LL",
            "the", " the", "The", "HTTP", "http://", "//", "    ", "\u{3000} ", "e\u{301}", "x86_64",
        ])
        .prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
}

/// Cases per property: 256 by default, or `CONDENSE_PROPTEST_CASES` for a longer run.
fn cases() -> u32 {
    std::env::var("CONDENSE_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn adversarial_text_matches_tiktoken(text in adversarial()) {
        check(&text)?;
    }

    #[test]
    fn any_text_matches_tiktoken(text in any::<String>()) {
        check(&text)?;
    }

    #[test]
    fn ascii_text_matches_tiktoken(text in "[ -~\t\n\r]{0,80}") {
        check(&text)?;
    }
}

proptest! {
    // An eighth of the cases: tiktoken-rs's merge is quadratic, a 10,000-byte piece costs it ~0.1 s.
    #![proptest_config(ProptestConfig::with_cases((cases() / 8).max(16)))]

    #[test]
    fn long_pieces_match_tiktoken_property(text in long_piece()) {
        check(&text)?;
    }
}

#[test]
fn every_code_point_has_the_flags_of_regex_syntax() {
    let expected = token_tables::flags();
    for (cp, &want) in expected.iter().enumerate() {
        let Some(c) = char::from_u32(cp as u32) else { continue };
        // Bit 32 (`\r` or `\n`) is the splitter's own, not a class of the tables.
        assert_eq!(char_flags(c) & 31, want, "U+{cp:04X}");
    }
    assert_eq!(char_flags('\r') & 32, 32);
    assert_eq!(char_flags('\n') & 32, 32);
    assert_eq!(char_flags(' ') & 32, 0);
}

#[test]
fn contraction_letters_fold_as_regex_syntax_does() {
    // The splitter knows `(?i:s)` as s, S and ſ, and the other letters as their two ASCII cases.
    for letter in ['s', 't', 'r', 'e', 'v', 'm', 'l', 'd'] {
        let mut want = vec![letter, letter.to_ascii_uppercase()];
        if letter == 's' {
            want.push('ſ');
        }
        want.sort();
        assert_eq!(token_tables::case_variants(letter), want, "(?i:{letter})");
    }
}

#[test]
fn generated_files_are_up_to_date() {
    let hint = "run `cargo run -p condense-core --example token_tables` and commit the result";
    let o200k = token_tables::compact(&token_tables::vocabulary("o200k_base"));
    assert!(o200k == include_bytes!("../src/tokens/vocab/o200k_base.bin"), "o200k_base.bin is stale: {hint}");
    let cl100k = token_tables::compact(&token_tables::vocabulary("cl100k_base"));
    assert!(
        cl100k == include_bytes!("../src/tokens/vocab/cl100k_base.bin"),
        "cl100k_base.bin is stale: {hint}"
    );
    assert!(
        token_tables::unicode_table() == include_str!("../src/tokens/unicode_table.rs"),
        "unicode_table.rs is stale: {hint}"
    );
}
