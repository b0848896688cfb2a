//! A count-only byte-pair encoder. The vocabulary comes from a compact file generated from
//! tiktoken-rs's tables (`vocab/*.bin`, written by `examples/token_tables.rs`): the token count,
//! one length byte per token, then the tokens' bytes in rank order. Loading it builds two tables
//! over the embedded bytes, nothing is copied: an open-addressing hash table from a token's bytes
//! to its rank, and a direct table of the two-byte tokens (the first merges of every piece).
//!
//! Counting a piece looks it up whole first (most pieces are one token); otherwise it runs
//! tiktoken's merge loop — the pair of lowest rank merged first, the leftmost among equals — on a
//! buffer of part boundaries, and counts the parts left, without building token ids.

/// A rank; `NONE` for a byte string that is no token.
type Rank = u32;
const NONE: Rank = Rank::MAX;

/// One encoding's vocabulary, ready to count.
pub(super) struct Vocab {
    /// Every token's bytes, in rank order.
    bytes: &'static [u8],
    /// Token `r` is `bytes[offsets[r]..offsets[r + 1]]`.
    offsets: Vec<u32>,
    /// Rank + 1 of the token in each slot, 0 for an empty slot; the length is a power of two.
    slots: Vec<u32>,
    /// `64 - log2(slots.len())`: a hash's top bits pick its slot.
    shift: u32,
    /// The rank of each two-byte token, by `first << 8 | second`.
    pairs: Vec<Rank>,
}

/// FxHash's step over eight bytes at a time. The top bits of the result depend on every input
/// bit, so they pick the slot (the low bits depend only on the first bytes of each word).
#[inline(always)]
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h
}

impl Vocab {
    /// Reads a compact vocabulary. The files are generated and checked by tests, so a malformed
    /// one is a build defect.
    pub(super) fn load(data: &'static [u8]) -> Vocab {
        let count = u32::from_le_bytes(data[..4].try_into().expect("a vocabulary header")) as usize;
        let lengths = &data[4..4 + count];
        let bytes = &data[4 + count..];
        let mut offsets = Vec::with_capacity(count + 1);
        let mut at = 0u32;
        offsets.push(0);
        for &len in lengths {
            at += u32::from(len);
            offsets.push(at);
        }
        assert_eq!(at as usize, bytes.len(), "the vocabulary's lengths add up to its bytes");
        let size = (count * 2).next_power_of_two();
        let shift = 64 - size.trailing_zeros();
        let mut vocab = Vocab { bytes, offsets, slots: vec![0; size], shift, pairs: vec![NONE; 1 << 16] };
        let mask = size - 1;
        for rank in 0..count {
            let token = vocab.token(rank as Rank);
            if token.len() == 2 {
                vocab.pairs[usize::from(token[0]) << 8 | usize::from(token[1])] = rank as Rank;
            }
            let mut slot = (hash(token) >> shift) as usize;
            while vocab.slots[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            vocab.slots[slot] = rank as u32 + 1;
        }
        vocab
    }

    #[inline(always)]
    fn token(&self, rank: Rank) -> &'static [u8] {
        let r = rank as usize;
        &self.bytes[self.offsets[r] as usize..self.offsets[r + 1] as usize]
    }

    /// The rank of a byte string, or `NONE`.
    #[inline]
    fn rank(&self, piece: &[u8]) -> Rank {
        if piece.len() == 2 {
            return self.pairs[usize::from(piece[0]) << 8 | usize::from(piece[1])];
        }
        let mask = self.slots.len() - 1;
        let mut slot = (hash(piece) >> self.shift) as usize;
        loop {
            let entry = self.slots[slot];
            if entry == 0 {
                return NONE;
            }
            if self.token(entry - 1) == piece {
                return entry - 1;
            }
            slot = (slot + 1) & mask;
        }
    }

    /// The number of tokens of one piece of a split text.
    #[inline]
    pub(super) fn count(&self, piece: &[u8]) -> usize {
        if piece.len() <= 1 {
            return piece.len();
        }
        if self.rank(piece) != NONE {
            return 1;
        }
        if piece.len() < 64 {
            let mut parts = [(0u32, NONE); 64];
            self.merge(piece, &mut parts[..piece.len() + 1])
        } else {
            let mut parts = vec![(0u32, NONE); piece.len() + 1];
            self.merge(piece, &mut parts)
        }
    }

    /// tiktoken's `_byte_pair_merge`, counting: `parts` holds `(start, rank of the pair that
    /// starts there)` for each part boundary, the last one the piece's end. Returns the number of
    /// tokens.
    fn merge(&self, piece: &[u8], parts: &mut [(u32, Rank)]) -> usize {
        let n = piece.len();
        for (i, part) in parts.iter_mut().enumerate().take(n) {
            let rank = if i + 1 < n {
                self.pairs[usize::from(piece[i]) << 8 | usize::from(piece[i + 1])]
            } else {
                NONE
            };
            *part = (i as u32, rank);
        }
        parts[n] = (n as u32, NONE);
        let mut len = n + 1;
        // The rank of the part that would start at boundary `i` once boundary `i + 1` is gone.
        let rank_after = |parts: &[(u32, Rank)], len: usize, i: usize| {
            if i + 3 < len { self.rank(&piece[parts[i].0 as usize..parts[i + 3].0 as usize]) } else { NONE }
        };
        loop {
            let mut min = (NONE, 0);
            for (i, &(_, rank)) in parts[..len - 1].iter().enumerate() {
                if rank < min.0 {
                    min = (rank, i);
                }
            }
            if min.0 == NONE {
                break;
            }
            let i = min.1;
            if i > 0 {
                parts[i - 1].1 = rank_after(parts, len, i - 1);
            }
            parts[i].1 = rank_after(parts, len, i);
            parts.copy_within(i + 2..len, i + 1);
            len -= 1;
        }
        len - 1
    }
}
