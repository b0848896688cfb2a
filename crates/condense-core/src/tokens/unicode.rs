//! The character classes of the split patterns, as one byte of flags per character: a table for
//! ASCII, a generated run table (from regex-syntax, the crate that parses tiktoken's patterns) for
//! the rest. `tests/tokens_oracle.rs` checks every code point against regex-syntax.

use super::unicode_table;

/// `\p{L}`.
pub(super) const LETTER: u8 = 1;
/// `\p{N}`.
pub(super) const NUMBER: u8 = 2;
/// `\s` (Unicode `White_Space`).
pub(super) const SPACE: u8 = 4;
/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
pub(super) const UPPER: u8 = 8;
/// o200k's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
pub(super) const LOWER: u8 = 16;
/// `\r` or `\n`.
pub(super) const NEWLINE: u8 = 32;

const fn ascii_flags(b: u8) -> u8 {
    match b {
        b'A'..=b'Z' => LETTER | UPPER,
        b'a'..=b'z' => LETTER | LOWER,
        b'0'..=b'9' => NUMBER,
        b'\r' | b'\n' => SPACE | NEWLINE,
        b'\t' | 0x0b | 0x0c | b' ' => SPACE,
        _ => 0,
    }
}

static ASCII: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = ascii_flags(b as u8);
        b += 1;
    }
    t
};

/// The flags of an ASCII byte.
#[inline(always)]
pub(super) fn ascii(b: u8) -> u8 {
    ASCII[usize::from(b & 0x7f)]
}

/// The flags of any character.
#[inline]
pub(super) fn flags(c: char) -> u8 {
    let cp = c as u32;
    if cp < 0x80 {
        return ascii(cp as u8);
    }
    let i = unicode_table::STARTS.partition_point(|&s| s <= cp);
    // STARTS[0] is 0x80, so i >= 1 here.
    unicode_table::FLAGS[i - 1]
}

/// The flags of the character that starts at byte `at` of `text`, and its length in bytes.
#[inline(always)]
pub(super) fn at(text: &str, at: usize) -> (u8, usize) {
    let b = text.as_bytes()[at];
    if b < 0x80 {
        return (ascii(b), 1);
    }
    let c = text[at..].chars().next().unwrap_or('\0');
    (flags(c), c.len_utf8())
}
