//! The pre-tokenizers: each encoding's split pattern written out by hand, piece by piece exactly
//! as tiktoken's regex (leftmost-first alternation, greedy, backtracking) cuts a text.
//!
//! cl100k_base:
//! `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
//!
//! o200k_base, with `U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`, `W = [\p{Ll}\p{Lm}\p{Lo}\p{M}]` and
//! `C = (?i:'s|'t|'re|'ve|'m|'ll|'d)`:
//! `[^\r\n\p{L}\p{N}]?U*W+C?|[^\r\n\p{L}\p{N}]?U+W*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
//!
//! Every character starts a match of some alternative, so the pieces cover the text. The three
//! whitespace alternatives come down to: a run of whitespace up to its last line break if it has
//! one; else the whole run at the end of the text; else the run but its last character (which
//! then prefixes the next piece) if it has two or more; else the one character.

use super::unicode::{LETTER, LOWER, NEWLINE, NUMBER, SPACE, UPPER, at};

/// Calls `piece` with each piece of `text`, in order, for cl100k_base's pattern.
#[inline]
pub(super) fn cl100k<'a>(text: &'a str, mut piece: impl FnMut(&'a str)) {
    let mut i = 0;
    while i < text.len() {
        let end = cl100k_end(text, i);
        piece(&text[i..end]);
        i = end;
    }
}

/// Calls `piece` with each piece of `text`, in order, for o200k_base's pattern.
#[inline]
pub(super) fn o200k<'a>(text: &'a str, mut piece: impl FnMut(&'a str)) {
    let mut i = 0;
    while i < text.len() {
        let end = o200k_end(text, i);
        piece(&text[i..end]);
        i = end;
    }
}

/// Bit 7 of each byte of a word.
const HIGH: u64 = 0x8080_8080_8080_8080;
/// Each byte of a word.
const ONES: u64 = 0x0101_0101_0101_0101;

/// Bit 7 set for each byte of `word` that is ASCII and, once `flip` is xor-ed into it, a lowercase
/// ASCII letter: `flip` 0 tests for `a-z`, `0x20` in each byte for `A-Z`.
#[inline(always)]
fn ascii_lower(word: u64, flip: u64) -> u64 {
    let x = (word ^ flip) & !HIGH;
    // Each byte is below 0x80, so the sums carry into no other byte.
    let from_a = x + 0x1f * ONES;
    let after_z = x + 0x05 * ONES;
    from_a & !after_z & !word & HIGH
}

/// The length of the run of ASCII bytes of `class` (`LOWER`, `UPPER` or `LETTER`) at the start of
/// `bytes`, eight at a time: the whole of an English word in one or two steps. Stops early near
/// the end, and at a non-ASCII byte, where `run` goes on one character at a time.
#[inline(always)]
fn ascii_run(bytes: &[u8], class: u8) -> usize {
    let mut n = 0;
    while let Some(chunk) = bytes.get(n..n + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let inside = match class {
            LOWER => ascii_lower(word, 0),
            UPPER => ascii_lower(word, 0x20 * ONES),
            _ => ascii_lower(word, 0) | ascii_lower(word, 0x20 * ONES),
        };
        let outside = !inside & HIGH;
        if outside != 0 {
            return n + (outside.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n
}

/// The end of the run of characters from `i` whose flags share a bit with `class`.
#[inline(always)]
fn run(text: &str, mut i: usize, class: u8) -> usize {
    let bytes = text.as_bytes();
    if matches!(class, LOWER | UPPER | LETTER) {
        i += ascii_run(&bytes[i..], class);
    }
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if super::unicode::ascii(b) & class == 0 {
                break;
            }
            i += 1;
        } else {
            let (f, n) = at(text, i);
            if f & class == 0 {
                break;
            }
            i += n;
        }
    }
    i
}

/// The end of the run of characters from `i` that are not whitespace, letters or numbers
/// (`[^\s\p{L}\p{N}]+`, possibly empty).
#[inline(always)]
fn run_other(text: &str, mut i: usize) -> usize {
    while i < text.len() {
        let (f, n) = at(text, i);
        if f & (SPACE | LETTER | NUMBER) != 0 {
            break;
        }
        i += n;
    }
    i
}

/// The length of `(?i:s|t|re|ve|m|ll|d)` at `i` (the part after the apostrophe), or 0. `(?i:s)`
/// also matches U+017F LATIN SMALL LETTER LONG S, as Unicode case folding has it.
#[inline]
fn contraction(text: &str, i: usize) -> usize {
    let b = text.as_bytes();
    let lower = |j: usize| b.get(j).map(|c| c.to_ascii_lowercase());
    match lower(i) {
        Some(b's' | b't' | b'm' | b'd') => 1,
        Some(b'r' | b'v') if lower(i + 1) == Some(b'e') => 2,
        Some(b'l') if lower(i + 1) == Some(b'l') => 2,
        Some(0xc5) if b.get(i + 1) == Some(&0xbf) => 2,
        _ => 0,
    }
}

/// `'` and a contraction at `i`: its length, or 0.
#[inline]
fn apostrophe_contraction(text: &str, i: usize) -> usize {
    if text.as_bytes().get(i) == Some(&b'\'') {
        let n = contraction(text, i + 1);
        if n > 0 {
            return n + 1;
        }
    }
    0
}

/// The three whitespace alternatives at `i`, where a whitespace character starts.
#[inline]
fn whitespace_end(text: &str, i: usize) -> usize {
    let mut j = i;
    let mut last_newline_end = None;
    let mut last_start = i;
    let mut count = 0usize;
    while j < text.len() {
        let (f, n) = at(text, j);
        if f & SPACE == 0 {
            break;
        }
        if f & NEWLINE != 0 {
            last_newline_end = Some(j + n);
        }
        last_start = j;
        count += 1;
        j += n;
    }
    if count == 0 {
        // Unreachable (every other character starts an earlier alternative); one character, so
        // a split always moves on.
        return i + at(text, i).1;
    }
    // `\s*[\r\n]+`: up to the run's last line break.
    if let Some(end) = last_newline_end {
        return end;
    }
    // `\s+(?!\S)`: the whole run at the end of the text, else all but its last character.
    if j == text.len() {
        return j;
    }
    if count >= 2 {
        return last_start;
    }
    // `\s+`.
    j
}

/// Digits: `\p{N}{1,3}` at `i`, where a number starts.
#[inline]
fn digits_end(text: &str, mut i: usize) -> usize {
    for _ in 0..3 {
        if i >= text.len() {
            break;
        }
        let (f, n) = at(text, i);
        if f & NUMBER == 0 {
            break;
        }
        i += n;
    }
    i
}

/// ` ?[^\s\p{L}\p{N}]+` followed by the run of `tail` characters, at `i`, if it matches there.
#[inline]
fn punctuation_end(text: &str, i: usize, f: u8, slash: bool) -> Option<usize> {
    let start = if text.as_bytes()[i] == b' ' {
        let next = i + 1;
        if next < text.len() && at(text, next).0 & (SPACE | LETTER | NUMBER) == 0 {
            next
        } else {
            return None;
        }
    } else if f & (SPACE | LETTER | NUMBER) == 0 {
        i
    } else {
        return None;
    };
    let mut j = run_other(text, start);
    let bytes = text.as_bytes();
    while j < bytes.len() && (bytes[j] == b'\r' || bytes[j] == b'\n' || (slash && bytes[j] == b'/')) {
        j += 1;
    }
    Some(j)
}

fn cl100k_end(text: &str, i: usize) -> usize {
    let (f, n) = at(text, i);
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    let c = apostrophe_contraction(text, i);
    if c > 0 {
        return i + c;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if f & LETTER != 0 {
        return run(text, i, LETTER);
    }
    if f & (NEWLINE | NUMBER) == 0 && i + n < text.len() && at(text, i + n).0 & LETTER != 0 {
        return run(text, i + n, LETTER);
    }
    // \p{N}{1,3}
    if f & NUMBER != 0 {
        return digits_end(text, i);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
    if let Some(end) = punctuation_end(text, i, f, false) {
        return end;
    }
    whitespace_end(text, i)
}

/// `U*`, greedy, at `p`: where the run ends, and the end of its last character that `W` also
/// matches (where `W+` can start when the engine backtracks into the run).
#[inline]
fn upper_run(text: &str, p: usize) -> (usize, Option<usize>) {
    let mut j = p;
    let mut last_lower_end = None;
    while j < text.len() {
        let (f, n) = at(text, j);
        if f & UPPER == 0 {
            break;
        }
        j += n;
        if f & LOWER != 0 {
            last_lower_end = Some(j);
        }
    }
    (j, last_lower_end)
}

/// o200k's first alternative after its optional prefix: `U*W+C?` at `p`.
#[inline]
fn o200k_lower_word(text: &str, p: usize) -> Option<usize> {
    let (j, last_lower_end) = upper_run(text, p);
    let end =
        if j < text.len() && at(text, j).0 & LOWER != 0 { run(text, j, LOWER) } else { last_lower_end? };
    Some(end + apostrophe_contraction(text, end))
}

/// o200k's second alternative after its optional prefix: `U+W*C?` at `p`.
#[inline]
fn o200k_upper_word(text: &str, p: usize) -> Option<usize> {
    let j = run(text, p, UPPER);
    if j == p {
        return None;
    }
    let end = run(text, j, LOWER);
    Some(end + apostrophe_contraction(text, end))
}

/// o200k's first alternative at `p`, else its second (after the same prefix, or none): `U*W+C?`,
/// else `U+W*C?`, in one scan. Where the first fails, `U*` stopped at a character outside `W`
/// having passed none inside it, so the second is that same run of `U` and an empty `W*`.
#[inline]
fn o200k_word(text: &str, p: usize) -> Option<usize> {
    let (j, last_lower_end) = upper_run(text, p);
    let end = if j < text.len() && at(text, j).0 & LOWER != 0 {
        run(text, j, LOWER)
    } else if let Some(end) = last_lower_end {
        end
    } else if j > p {
        j
    } else {
        return None;
    };
    Some(end + apostrophe_contraction(text, end))
}

fn o200k_end(text: &str, i: usize) -> usize {
    let (f, n) = at(text, i);
    // The optional prefix `[^\r\n\p{L}\p{N}]`: tried with it first, then without.
    let prefixed = f & (NEWLINE | LETTER | NUMBER) == 0 && i + n < text.len();
    if f & (UPPER | LOWER) == 0 {
        // No word starts at this character (both alternatives without the prefix fail at once):
        // only after it, with it as the prefix.
        if prefixed && let Some(end) = o200k_word(text, i + n) {
            return end;
        }
    } else if !prefixed {
        // A letter (or a mark at the end): the word from here.
        if let Some(end) = o200k_word(text, i) {
            return end;
        }
    } else {
        // A mark, which is both a prefix and in U and W: the four tries in the regex's order.
        if let Some(end) = o200k_lower_word(text, i + n) {
            return end;
        }
        if let Some(end) = o200k_lower_word(text, i) {
            return end;
        }
        if let Some(end) = o200k_upper_word(text, i + n) {
            return end;
        }
        if let Some(end) = o200k_upper_word(text, i) {
            return end;
        }
    }
    // \p{N}{1,3}
    if f & NUMBER != 0 {
        return digits_end(text, i);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
    if let Some(end) = punctuation_end(text, i, f, true) {
        return end;
    }
    whitespace_end(text, i)
}

#[cfg(test)]
mod tests {
    use super::super::unicode::ascii;
    use super::*;

    /// Eight bytes at a time finds the same run as one at a time, for every byte in every place.
    #[test]
    fn ascii_runs_stop_where_the_class_ends() {
        for class in [LOWER, UPPER, LETTER] {
            for stop in 0..=255u8 {
                for at in 0..10 {
                    let mut bytes = b"abcdefghijklmnop".to_vec();
                    if class == UPPER {
                        bytes.make_ascii_uppercase();
                    } else if class == LETTER {
                        bytes = b"aBcDeFgHiJkLmNoP".to_vec();
                    }
                    bytes[at] = stop;
                    let expected = bytes.iter().take_while(|&&b| b < 0x80 && ascii(b) & class != 0).count();
                    assert_eq!(ascii_run(&bytes, class), expected, "class {class}, byte {stop:#x} at {at}");
                }
            }
        }
    }
}
