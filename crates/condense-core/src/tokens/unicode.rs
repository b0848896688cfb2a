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

/// Code points per block of [`BLOCK_RUNS`].
const BLOCK_BITS: u32 = 8;
/// Blocks of 256 code points, up to U+10FFFF.
const BLOCKS: usize = 0x11_0000 >> BLOCK_BITS;

/// For each block of 256 code points, the index of the run its first code point is in: a
/// character's run is searched for only among its block's runs (one to a few), not among all
/// 3,000. Computed at compile time from the generated table.
static BLOCK_RUNS: [u16; BLOCKS + 1] = {
    let starts = &unicode_table::STARTS;
    let mut out = [0u16; BLOCKS + 1];
    let mut run = 0;
    let mut block = 0;
    while block <= BLOCKS {
        let first = (block as u32) << BLOCK_BITS;
        while run + 1 < starts.len() && starts[run + 1] <= first {
            run += 1;
        }
        out[block] = run as u16;
        block += 1;
    }
    out
};

/// The flags of any character.
#[inline]
pub(super) fn flags(c: char) -> u8 {
    let cp = c as u32;
    if cp < 0x80 {
        return ascii(cp as u8);
    }
    let block = (cp >> BLOCK_BITS) as usize;
    // The runs that can hold `cp`: from its block's first code point's run to the next block's.
    let (lo, hi) = (usize::from(BLOCK_RUNS[block]), usize::from(BLOCK_RUNS[block + 1]) + 1);
    let runs = &unicode_table::STARTS[lo..hi];
    // STARTS[lo] <= cp (STARTS[0] is 0x80), so the point is at least 1.
    unicode_table::FLAGS[lo + runs.partition_point(|&s| s <= cp) - 1]
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
