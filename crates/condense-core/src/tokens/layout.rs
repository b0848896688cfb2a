//! The vocabulary's run-time layout, built at compile time: `build.rs` includes this file to lay
//! out each compact `vocab/*.bin` into `$OUT_DIR/*.table`, and `bpe.rs` reads that table in place,
//! so a first count parses nothing and builds nothing.
//!
//! A table, every integer little endian:
//!
//! | bytes | what |
//! |---|---|
//! | 4 | the number of tokens |
//! | 4 | `slot_bits`: the hash table has `1 << slot_bits` slots |
//! | 4 | the blob's length |
//! | blob | every token in rank order, each as its length byte then its bytes |
//! | 0–3 | zeros, so the slots start at a multiple of four |
//! | 4 × slots | the hash table: `fingerprint << ID_BITS | id`, 0 for an empty slot |
//! | 4 × 65,536 | the id of each two-byte token by `first << 8 \| second`, else [`NONE`] |
//!
//! A token's **id** is the offset of its first byte in the blob. Tokens are laid out in rank
//! order, so ids order tokens exactly as ranks do (what the merge loop compares) and no table of
//! ranks or offsets is needed; the length byte sits just before the id. A slot's fingerprint is
//! the [`FINGERPRINT_BITS`] hash bits below those that pick the slot, so most probes of a byte
//! string that is no token end without touching the blob. Collisions are resolved by linear
//! probing; the table is at most half full.

/// Bits of a slot that hold the id.
pub(crate) const ID_BITS: u32 = 21;
/// The id part of a slot.
pub(crate) const ID_MASK: u32 = (1 << ID_BITS) - 1;
/// Bits of a slot that hold the fingerprint.
pub(crate) const FINGERPRINT_BITS: u32 = 32 - ID_BITS;
/// The id of a byte string that is no token: above every id.
pub(crate) const NONE: u32 = u32::MAX;
/// The header's length in bytes.
pub(crate) const HEADER: usize = 12;
/// Entries of the table of two-byte tokens.
pub(crate) const PAIRS: usize = 1 << 16;

/// FxHash's step over eight bytes at a time: the hash of a byte string is `mix` over its
/// little-endian words (the last one zero-padded), starting from its length. The top bits of the
/// result depend on every input bit, so they pick the slot and the fingerprint (the low bits
/// depend only on the first bytes of each word).
#[inline(always)]
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = mix(h, u64::from_le_bytes(c.try_into().expect("eight bytes")));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        h = mix(h, tail(rest));
    }
    h
}

/// One step of the hash.
#[inline(always)]
pub(crate) fn mix(h: u64, word: u64) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    (h.rotate_left(5) ^ word).wrapping_mul(K)
}

/// The little-endian word of one to eight bytes, zero-padded: read with overlapping loads rather
/// than copied into a buffer (a copy then a wide load stalls the CPU's store forwarding).
#[inline(always)]
pub(crate) fn tail(rest: &[u8]) -> u64 {
    let n = rest.len();
    if n >= 4 {
        let lo = u64::from(u32::from_le_bytes(rest[..4].try_into().expect("four bytes")));
        let hi = u64::from(u32::from_le_bytes(rest[n - 4..].try_into().expect("four bytes")));
        // The bytes both loads hold are the same, so or-ing them is harmless.
        lo | hi << (8 * (n - 4))
    } else {
        u64::from(rest[0]) | u64::from(rest[n / 2]) << (8 * (n / 2)) | u64::from(rest[n - 1]) << (8 * (n - 1))
    }
}

/// The slot a hash starts probing at, for a table of `1 << slot_bits` slots.
#[inline(always)]
pub(crate) fn home(h: u64, slot_bits: u32) -> usize {
    (h >> (64 - slot_bits)) as usize
}

/// A hash's fingerprint, in place in a slot (above the id).
#[inline(always)]
pub(crate) fn fingerprint(h: u64, slot_bits: u32) -> u32 {
    let bits = (h >> (64 - slot_bits - FINGERPRINT_BITS)) as u32 & ((1 << FINGERPRINT_BITS) - 1);
    bits << ID_BITS
}

/// Lays out a compact vocabulary (the token count as a u32, one length byte per token, then the
/// tokens' bytes, in rank order) as the table described above. Panics on a vocabulary the layout
/// cannot hold (a blob of 2 MiB or more).
#[allow(dead_code, reason = "used by the build script and by the tests, not at run time")]
pub(crate) fn lay_out(compact: &[u8]) -> Vec<u8> {
    let count = u32::from_le_bytes(compact[..4].try_into().expect("a vocabulary header")) as usize;
    let lengths = &compact[4..4 + count];
    let bytes = &compact[4 + count..];
    let blob_len = count + bytes.len();
    assert!(blob_len <= ID_MASK as usize, "a blob of {blob_len} bytes does not fit the ids");
    // At most half full (both encodings' tables are 38% full): short probe sequences, and most
    // misses end at an empty slot at once.
    let slot_bits = (count * 2).next_power_of_two().trailing_zeros();
    let mut blob = Vec::with_capacity(blob_len);
    let mut slots = vec![0u32; 1 << slot_bits];
    let mut pairs = vec![NONE; PAIRS];
    let mask = slots.len() - 1;
    let mut at = 0;
    for &len in lengths {
        let token = &bytes[at..at + usize::from(len)];
        at += usize::from(len);
        blob.push(len);
        let id = blob.len() as u32;
        blob.extend_from_slice(token);
        if token.len() == 2 {
            pairs[usize::from(token[0]) << 8 | usize::from(token[1])] = id;
        }
        let h = hash(token);
        let mut slot = home(h, slot_bits);
        while slots[slot] != 0 {
            slot = (slot + 1) & mask;
        }
        slots[slot] = fingerprint(h, slot_bits) | id;
    }
    assert_eq!(at, bytes.len(), "the vocabulary's lengths add up to its bytes");
    let mut out = Vec::with_capacity(HEADER + blob_len + 3 + 4 * (slots.len() + PAIRS));
    out.extend_from_slice(&(count as u32).to_le_bytes());
    out.extend_from_slice(&slot_bits.to_le_bytes());
    out.extend_from_slice(&(blob_len as u32).to_le_bytes());
    out.extend_from_slice(&blob);
    out.resize(out.len().next_multiple_of(4), 0);
    for v in slots.iter().chain(&pairs) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_is_its_bytes_zero_padded() {
        let bytes = [0x81u8, 0x02, 0xf3, 0x04, 0x05, 0xa6, 0x07, 0xff];
        for n in 1..=8 {
            let mut padded = [0u8; 8];
            padded[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(tail(&bytes[..n]), u64::from_le_bytes(padded), "{n} bytes");
        }
    }
}
