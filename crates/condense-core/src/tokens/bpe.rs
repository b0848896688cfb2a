//! A count-only byte-pair encoder over a vocabulary laid out at build time (`layout.rs`): the
//! table is read in place, so opening it parses nothing and allocates nothing.
//!
//! Counting a piece looks it up whole first (most pieces are one token); otherwise it runs
//! tiktoken's merge loop — the pair of lowest rank merged first, the leftmost among equals — on a
//! buffer of part boundaries, and counts the parts left, without building token ids. Tokens are
//! compared by id, which orders them as their ranks do (see `layout.rs`).

use super::layout::{HEADER, ID_MASK, NONE, PAIRS, fingerprint, hash, home, mix, tail};

/// A token's id (see `layout.rs`); [`NONE`] for a byte string that is no token.
type Id = u32;

/// One encoding's vocabulary, ready to count: views of its table.
pub(super) struct Vocab {
    /// Every token in rank order, each as its length byte then its bytes.
    blob: &'static [u8],
    /// The hash table, four bytes a slot.
    slots: &'static [u8],
    /// `slots` has `1 << slot_bits` slots.
    slot_bits: u32,
    /// The id of each two-byte token, four bytes an entry.
    pairs: &'static [u8],
}

#[inline(always)]
fn u32_at(bytes: &[u8], i: usize) -> u32 {
    let at = 4 * i;
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

impl Vocab {
    /// Views a table written by `layout::lay_out`. The tables are generated at build time and
    /// checked by tests, so a malformed one is a build defect.
    pub(super) fn open(table: &'static [u8]) -> Vocab {
        let slot_bits = u32_at(table, 1);
        let blob_len = u32_at(table, 2) as usize;
        let blob = &table[HEADER..HEADER + blob_len];
        let slots_at = (HEADER + blob_len).next_multiple_of(4);
        let slots_end = slots_at + (4 << slot_bits);
        assert_eq!(table.len(), slots_end + 4 * PAIRS, "a vocabulary table of the expected size");
        Vocab { blob, slots: &table[slots_at..slots_end], slot_bits, pairs: &table[slots_end..] }
    }

    /// The number of tokens.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        let mut n = 0;
        let mut at = 0;
        while at < self.blob.len() {
            at += 1 + usize::from(self.blob[at]);
            n += 1;
        }
        n
    }

    /// The id of a two-byte string.
    #[inline(always)]
    fn pair(&self, a: u8, b: u8) -> Id {
        u32_at(self.pairs, usize::from(a) << 8 | usize::from(b))
    }

    /// The id of a byte string, or `NONE`.
    #[inline]
    fn id(&self, piece: &[u8]) -> Id {
        if piece.len() == 2 {
            return self.pair(piece[0], piece[1]);
        }
        self.id_hashed(piece, hash(piece))
    }

    /// The id of a byte string of three bytes or more, given its hash.
    #[inline]
    fn id_hashed(&self, piece: &[u8], h: u64) -> Id {
        let fp = fingerprint(h, self.slot_bits);
        let mask = (1usize << self.slot_bits) - 1;
        let mut slot = home(h, self.slot_bits);
        loop {
            let entry = u32_at(self.slots, slot);
            if entry == 0 {
                return NONE;
            }
            if entry & !ID_MASK == fp {
                let id = (entry & ID_MASK) as usize;
                let len = usize::from(self.blob[id - 1]);
                if len == piece.len() && &self.blob[id..id + len] == piece {
                    return id as Id;
                }
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
        if self.id(piece) != NONE {
            return 1;
        }
        self.merge_count(piece)
    }

    /// [`Vocab::count`], answered from `cache` when it holds the piece (pieces of three to
    /// [`MAX_CACHED`] bytes; shorter ones cost one table read anyway).
    #[inline]
    pub(super) fn count_cached(&self, piece: &[u8], cache: &mut PieceCache) -> usize {
        let len = piece.len();
        match len {
            0 | 1 => return len,
            2 => return if self.pair(piece[0], piece[1]) != NONE { 1 } else { 2 },
            _ if len > MAX_CACHED => return self.count(piece),
            _ => {}
        }
        // The piece's words are its cache key, and they hash to its hash (`layout::hash`).
        let mut key = [0u64; 3];
        let mut h = len as u64;
        for (i, word) in piece.chunks(8).enumerate() {
            key[i] = tail(word);
            h = mix(h, key[i]);
        }
        let entry = cache.entry(h);
        if entry.key == key && entry.len_count as usize & 0xff == len {
            return entry.len_count as usize >> 8;
        }
        let n = if self.id_hashed(piece, h) != NONE { 1 } else { self.merge_count(piece) };
        *entry = CacheEntry { key, len_count: (n << 8 | len) as u64 };
        n
    }

    /// The count of a piece of two bytes or more that is no token, by the merge loop.
    fn merge_count(&self, piece: &[u8]) -> usize {
        if piece.len() < 64 {
            let mut parts = [(0u32, NONE); 64];
            self.merge(piece, &mut parts[..piece.len() + 1])
        } else {
            let mut parts = vec![(0u32, NONE); piece.len() + 1];
            self.merge(piece, &mut parts)
        }
    }

    /// tiktoken's `_byte_pair_merge`, counting: `parts` holds `(start, id of the pair that starts
    /// there)` for each part boundary, the last one the piece's end. Returns the number of tokens.
    fn merge(&self, piece: &[u8], parts: &mut [(u32, Id)]) -> usize {
        let n = piece.len();
        for (i, part) in parts.iter_mut().enumerate().take(n) {
            let id = if i + 1 < n { self.pair(piece[i], piece[i + 1]) } else { NONE };
            *part = (i as u32, id);
        }
        parts[n] = (n as u32, NONE);
        let mut len = n + 1;
        // The id of the part that would start at boundary `i` once boundary `i + 1` is gone.
        let id_after = |parts: &[(u32, Id)], len: usize, i: usize| {
            if i + 3 < len { self.id(&piece[parts[i].0 as usize..parts[i + 3].0 as usize]) } else { NONE }
        };
        loop {
            let mut min = (NONE, 0);
            for (i, &(_, id)) in parts[..len - 1].iter().enumerate() {
                if id < min.0 {
                    min = (id, i);
                }
            }
            if min.0 == NONE {
                break;
            }
            let i = min.1;
            if i > 0 {
                parts[i - 1].1 = id_after(parts, len, i - 1);
            }
            parts[i].1 = id_after(parts, len, i);
            parts.copy_within(i + 2..len, i + 1);
            len -= 1;
        }
        len - 1
    }
}

/// The longest piece the cache holds: three words of key.
const MAX_CACHED: usize = 24;
/// log2 of the cache's entries: 4,096 entries, 128 KiB, small enough to stay in a core's cache.
const CACHE_BITS: u32 = 12;

/// A piece and its count in 32 bytes: the piece's bytes as three zero-padded little-endian
/// words, then its length and count (`count << 8 | len`); length 0 for an empty entry.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
pub(super) struct CacheEntry {
    key: [u64; 3],
    len_count: u64,
}

/// A direct-mapped cache of the counts of recent pieces, keyed by their bytes (an entry answers
/// only for exactly its piece, so the cache changes no count, only how fast it comes): the words
/// of a text repeat, and a hit reads one line that stays in the CPU's cache where a vocabulary
/// lookup reads two that rarely are. Allocated on first use.
#[derive(Default)]
pub(super) struct PieceCache {
    entries: Vec<CacheEntry>,
}

impl PieceCache {
    /// The entry a piece with hash `h` goes to.
    #[inline(always)]
    fn entry(&mut self, h: u64) -> &mut CacheEntry {
        if self.entries.is_empty() {
            self.entries = vec![CacheEntry::default(); 1 << CACHE_BITS];
        }
        // The top bits, as for the vocabulary's slots: they depend on every byte.
        let i = (h >> (64 - CACHE_BITS)) as usize;
        &mut self.entries[i]
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::lay_out;
    use super::*;

    /// A table laid out from a small vocabulary, leaked for the `'static` views.
    fn vocab(tokens: &[&[u8]]) -> Vocab {
        let mut compact = (tokens.len() as u32).to_le_bytes().to_vec();
        compact.extend(tokens.iter().map(|t| t.len() as u8));
        compact.extend(tokens.iter().flat_map(|t| t.iter().copied()));
        Vocab::open(Box::leak(lay_out(&compact).into_boxed_slice()))
    }

    /// Every token of both shipped vocabularies is found in the hash table, with the id of its
    /// place in the blob: ids increase with rank.
    #[test]
    fn shipped_tables_find_every_token_in_rank_order() {
        for encoding in [super::super::Encoding::O200kBase, super::super::Encoding::Cl100kBase] {
            let v = super::super::shared_vocab(encoding);
            let mut at = 0;
            let mut n = 0;
            while at < v.blob.len() {
                let len = usize::from(v.blob[at]);
                let token = &v.blob[at + 1..at + 1 + len];
                assert_eq!(v.id(token), (at + 1) as Id, "{encoding:?} token {n} {token:?}");
                at += 1 + len;
                n += 1;
            }
            assert_eq!(n, v.len());
            assert_eq!(n, if encoding == super::super::Encoding::O200kBase { 199_998 } else { 100_256 });
        }
    }

    /// Pieces that share a cache entry each get their own count: an entry answers only for the
    /// bytes it holds.
    #[test]
    fn the_piece_cache_answers_only_for_its_own_piece() {
        let v = super::super::shared_vocab(super::super::Encoding::O200kBase);
        let entry = |p: &[u8]| hash(p) >> (64 - CACHE_BITS);
        let first = b" zqxjkvbq".to_vec();
        // Another piece of the same length in the same entry (one in 4,096 is).
        let second = (0u32..)
            .map(|i| format!(" zq{i:06}").into_bytes())
            .find(|p| p.len() == first.len() && entry(p) == entry(&first))
            .unwrap();
        let mut cache = PieceCache::default();
        for piece in [&first, &second, &first, &second, &b" the"[..].to_vec(), &first] {
            assert_eq!(
                v.count_cached(piece, &mut cache),
                v.count(piece),
                "{:?}",
                String::from_utf8_lossy(piece)
            );
        }
        assert_ne!(v.count(&first), v.count(&second), "pieces with different counts, so a mix-up would show");
    }

    #[test]
    fn ids_order_tokens_as_their_ranks() {
        let tokens: Vec<Vec<u8>> = (0..=255u8)
            .map(|b| vec![b])
            .chain([b"ab".to_vec(), b"abc".to_vec(), b"cd".to_vec(), b"abcd".to_vec()])
            .collect();
        let refs: Vec<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
        let v = vocab(&refs);
        assert_eq!(v.len(), tokens.len());
        let ids: Vec<Id> = refs.iter().map(|t| v.id(t)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase with rank: {ids:?}");
        assert_eq!(v.id(b"bc"), NONE);
        assert_eq!(v.id(b"abcde"), NONE);
        assert_eq!(v.id(b"bcd"), NONE);
        // "abcd": one token; "abcdab": "abcd" + "ab"; "cdab" has no merge joining "cd" and "ab".
        assert_eq!(v.count(b"abcd"), 1);
        assert_eq!(v.count(b"abcdab"), 2);
        assert_eq!(v.count(b"cdab"), 2);
        assert_eq!(v.count(b"xyz"), 3);
    }
}
