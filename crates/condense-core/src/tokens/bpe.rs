//! A count-only byte-pair encoder over a vocabulary laid out at build time (`layout.rs`): the
//! table is read in place, so opening it parses nothing and allocates nothing.
//!
//! Counting a piece looks it up whole first (most pieces are one token); otherwise it runs
//! tiktoken's merge loop — the pair of lowest rank merged first, the leftmost among equals — on a
//! buffer of part boundaries, and counts the parts left, without building token ids. Tokens are
//! compared by id, which orders them as their ranks do (see `layout.rs`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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

    /// The count of a piece of two bytes or more that is no token, by the merge loop: the scan
    /// while the piece is short (it is faster there), the heap from [`HEAP_FROM`] bytes on (the
    /// scan is quadratic in the piece's length: a run of 200,000 letters took seconds).
    fn merge_count(&self, piece: &[u8]) -> usize {
        if piece.len() > EXACT_UP_TO {
            return slices(piece).map(|slice| self.count(slice)).sum();
        }
        if piece.len() < 64 {
            let mut parts = [(0u32, NONE); 64];
            self.merge(piece, &mut parts[..piece.len() + 1])
        } else if piece.len() < HEAP_FROM {
            let mut parts = vec![(0u32, NONE); piece.len() + 1];
            self.merge(piece, &mut parts)
        } else {
            self.merge_heap(piece)
        }
    }

    /// The same merges as [`Vocab::merge`], in O(n log n): the part boundaries are a linked list
    /// and the candidate pairs wait in a priority queue keyed by `(id, start)`, so the pair taken
    /// is the one of lowest rank, the leftmost among equals — the pair the scan would pick. A
    /// pair that a merge changed stays queued until taken and is then passed over: it is stale
    /// when its boundary's pair no longer has its id (a removed boundary's pair is `NONE`, never
    /// queued). Returns the number of tokens.
    pub(super) fn merge_heap(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        debug_assert!(n >= 2 && n < u32::MAX as usize);
        // Boundary `i` starts a part when it is live; `n` is the end. `next[i]` and `prev[i]` link
        // the live boundaries (`prev` of the first is never read); `pair[i]` is the id of the
        // bytes of the part at `i` and the part after it, `NONE` when they are no token.
        let mut next: Vec<u32> = (1..=n as u32 + 1).collect();
        let mut prev: Vec<u32> = (0..=n as u32).map(|i| i.wrapping_sub(1)).collect();
        let mut pair: Vec<Id> = vec![NONE; n + 1];
        let key = |id: Id, at: usize| u64::from(id) << 32 | at as u64;
        let mut queue = MergeQueue::default();
        for i in 0..n - 1 {
            pair[i] = self.pair(piece[i], piece[i + 1]);
            if pair[i] != NONE {
                queue.push(key(pair[i], i));
            }
        }
        // The id of the bytes from live boundary `i` to the second live boundary after it.
        let span = |next: &[u32], i: usize| -> Id {
            let j = next[i] as usize;
            if j >= n { NONE } else { self.id(&piece[i..next[j] as usize]) }
        };
        let mut tokens = n;
        while let Some(k) = queue.pop() {
            let (id, i) = ((k >> 32) as Id, (k & u64::from(u32::MAX)) as usize);
            if pair[i] != id {
                continue;
            }
            // Merge the part at `i` with the next: boundary `j` goes.
            let j = next[i] as usize;
            let after = next[j];
            next[i] = after;
            if (after as usize) <= n {
                prev[after as usize] = i as u32;
            }
            pair[j] = NONE;
            tokens -= 1;
            pair[i] = span(&next, i);
            if pair[i] != NONE {
                queue.push(key(pair[i], i));
            }
            if i > 0 {
                let p = prev[i] as usize;
                pair[p] = span(&next, p);
                if pair[p] != NONE {
                    queue.push(key(pair[p], p));
                }
            }
        }
        tokens
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

/// The merge queue of [`Vocab::merge_heap`], whose keys are `rank << 32 | start`. A merge's new
/// pairs rank above the pair merged when a token's rank exceeds the ranks of the tokens it is
/// made of, as in tiktoken's vocabularies: then the pairs of the lowest rank queued are all there
/// is of that rank once it is reached, and are taken in the order of their starts, sorted once.
/// The ranks above wait in a radix heap over ranks (a key moves between its buckets a few times,
/// each a sequential pass, where a binary heap of a megabyte's pairs misses the cache at every
/// level); a key below the current rank, which no shipped vocabulary makes, waits in a binary
/// heap, so the order stays exact for any vocabulary.
struct MergeQueue {
    /// The rank being taken.
    rank: u64,
    /// The keys of that rank, sorted, and how many of them were taken.
    current: Vec<u64>,
    taken: usize,
    /// Bucket `b` holds keys whose rank's highest bit differing from `rank` is bit `b - 1`.
    buckets: [Vec<u64>; 33],
    /// Keys of a rank below `rank`.
    low: BinaryHeap<Reverse<u64>>,
}

impl Default for MergeQueue {
    fn default() -> Self {
        MergeQueue {
            rank: 0,
            current: Vec::new(),
            taken: 0,
            buckets: std::array::from_fn(|_| Vec::new()),
            low: BinaryHeap::new(),
        }
    }
}

impl MergeQueue {
    /// The bucket of a key of a rank above `rank`.
    #[inline(always)]
    fn bucket(rank: u64, key: u64) -> usize {
        (64 - ((key >> 32) ^ rank).leading_zeros()) as usize
    }

    #[inline]
    fn push(&mut self, key: u64) {
        if key >> 32 <= self.rank {
            // Not above the rank being taken (no id is 0, so the first keys are above): a
            // vocabulary whose merges are not monotone.
            self.low.push(Reverse(key));
        } else {
            self.buckets[Self::bucket(self.rank, key)].push(key);
        }
    }

    /// The smallest key, taken out.
    fn pop(&mut self) -> Option<u64> {
        if self.taken == self.current.len() {
            self.current.clear();
            self.taken = 0;
            // The first bucket that holds keys holds the lowest rank: it becomes the rank taken,
            // its keys of that rank the current ones, and the others spread to lower buckets.
            if let Some(b) = (1..33).find(|&b| !self.buckets[b].is_empty()) {
                let mut keys = std::mem::take(&mut self.buckets[b]);
                self.rank = keys.iter().map(|k| k >> 32).min().expect("a bucket with keys");
                for &k in &keys {
                    if k >> 32 == self.rank {
                        self.current.push(k);
                    } else {
                        self.buckets[Self::bucket(self.rank, k)].push(k);
                    }
                }
                // Pushed in order of start most of the time: then this only checks.
                self.current.sort_unstable();
                // Keep the emptied bucket's allocation for later keys.
                keys.clear();
                self.buckets[b] = keys;
            }
        }
        let radix = self.current.get(self.taken).copied();
        match (self.low.peek(), radix) {
            (Some(&Reverse(low)), Some(radix)) if low < radix => self.low.pop().map(|r| r.0),
            (_, Some(radix)) => {
                self.taken += 1;
                Some(radix)
            }
            (Some(_), None) => self.low.pop().map(|r| r.0),
            (None, None) => None,
        }
    }
}

/// The longest piece counted whole. The heap's merge holds about 46 bytes for each byte of its
/// piece: a 50 MB run of one letter (one piece; no text has such a piece, a hostile request can)
/// would take 2.3 GB. A longer piece is counted in slices of this size (512 KiB), each exactly; its count
/// may then differ from tiktoken's by a token or two a slice (one in a few hundred thousand), and
/// counting it takes tens of megabytes whatever its length.
pub(super) const EXACT_UP_TO: usize = 1 << 19;

/// `piece` in slices of about [`EXACT_UP_TO`] bytes, each cut before a UTF-8 lead byte (never
/// inside a character).
fn slices(piece: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = piece;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut cut = EXACT_UP_TO.min(rest.len());
        while cut < rest.len() && rest[cut] & 0xc0 == 0x80 {
            cut += 1;
        }
        let (slice, after) = rest.split_at(cut);
        rest = after;
        Some(slice)
    })
}

/// Pieces this long and longer merge by the heap ([`Vocab::merge_heap`]).
const HEAP_FROM: usize = 128;

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

    /// The heap merges exactly as the scan does (the scan is tiktoken's loop; the oracle test
    /// checks it against tiktoken-rs): on pieces from small alphabets, so that merges cascade
    /// and equal pairs compete, in both shipped vocabularies.
    #[test]
    fn the_heap_merges_as_the_scan_does() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let alphabets: [&[u8]; 5] = [b"L", b"A=", b"ab", b"eth ", b"\xe4\xb8\xad\x80\xe6abc0/"];
        let pieces = (0..alphabets.len(), 2usize..700).prop_flat_map(move |(a, len)| {
            proptest::collection::vec(proptest::sample::select(alphabets[a]), len)
        });
        let mut runner = TestRunner::new(Config { cases: 256, ..Config::default() });
        for encoding in [super::super::Encoding::O200kBase, super::super::Encoding::Cl100kBase] {
            let v = super::super::shared_vocab(encoding);
            runner
                .run(&pieces, |piece| {
                    let mut parts = vec![(0u32, NONE); piece.len() + 1];
                    prop_assert_eq!(v.merge_heap(&piece), v.merge(&piece, &mut parts), "{:?}", piece);
                    Ok(())
                })
                .unwrap();
        }
    }

    /// The heap merges as the scan does with vocabularies whose ranks are in any order (a
    /// token may rank below the tokens it is made of, which the shipped ones never do): the
    /// merge queue's fallback keeps the order exact.
    #[test]
    fn the_heap_merges_as_the_scan_does_with_any_ranks() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let extra = proptest::collection::vec(
            proptest::collection::vec(proptest::sample::select(&b"abc"[..]), 2..5),
            1..30,
        );
        let piece = proptest::collection::vec(proptest::sample::select(&b"abc"[..]), 2..400);
        let mut runner = TestRunner::new(Config { cases: 256, ..Config::default() });
        runner
            .run(&(extra, piece), |(extra, piece)| {
                let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
                for t in extra {
                    if !tokens.contains(&t) {
                        tokens.push(t);
                    }
                }
                let refs: Vec<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
                let v = vocab(&refs);
                let mut parts = vec![(0u32, NONE); piece.len() + 1];
                prop_assert_eq!(
                    v.merge_heap(&piece),
                    v.merge(&piece, &mut parts),
                    "{:?} with {:?}",
                    piece,
                    &tokens[256..]
                );
                Ok(())
            })
            .unwrap();
    }

    /// Runs of 200,000 and 400,000 letters are counted (the scan would take minutes on them) and
    /// a run tokenizes periodically: twice the letters, twice the tokens.
    #[test]
    fn long_runs_are_counted_periodically() {
        let v = super::super::shared_vocab(super::super::Encoding::O200kBase);
        let run = vec![b'L'; 200_000];
        let tokens = v.count(&run);
        assert!(tokens > 0 && tokens < run.len());
        // Twice the length, about twice the tokens: the run tokenizes periodically.
        let double = v.count(&vec![b'L'; 400_000]);
        assert!(double.abs_diff(2 * tokens) <= 2, "{tokens} then {double}");
    }

    /// A piece longer than [`EXACT_UP_TO`] (512 KiB) is counted in slices: within a token a slice of the
    /// whole (a run tokenizes periodically), and never cut inside a character.
    #[test]
    fn a_piece_over_the_exact_limit_is_counted_in_slices_near_the_whole() {
        let v = super::super::shared_vocab(super::super::Encoding::O200kBase);
        let exact = v.count(&vec![b'a'; EXACT_UP_TO]);
        let sliced = v.count(&vec![b'a'; 3 * EXACT_UP_TO]);
        assert!(sliced.abs_diff(3 * exact) <= 3, "{exact} then {sliced}");
        let text = "é".repeat(EXACT_UP_TO);
        assert!(slices(text.as_bytes()).all(|s| std::str::from_utf8(s).is_ok()));
        assert_eq!(slices(text.as_bytes()).map(<[u8]>::len).sum::<usize>(), text.len());
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
