//! Token counting (SPEC §6): tiktoken encodings chosen by model family, a documented estimate for
//! images, and a per-message cache so that recounting a conversation after one new message costs
//! only that message.
//!
//! | model family (prefix of the model id)                | encoding      |
//! |------------------------------------------------------|---------------|
//! | `gpt-4o`, `gpt-4.1`, `gpt-4.5`, `gpt-5`, `o1`, `o3`, `o4`, `chatgpt-4o`, `gpt-oss` | `o200k_base` |
//! | `gpt-4`, `gpt-3.5`, `text-embedding-3`, `text-embedding-ada` | `cl100k_base` |
//! | anything else (Claude, Llama, Qwen, Mistral, Gemini, SmolLM, …) | `o200k_base`, an approximation: those models' own tokenizers are not public or not shipped |
//!
//! Counting is count-only and gives exactly tiktoken-rs's `encode_ordinary(text).len()`
//! (`tests/tokens_oracle.rs` proves it on a corpus and by property tests, tiktoken-rs being the
//! oracle): [`split`] cuts the text as each encoding's regex does, written out by hand;
//! [`bpe`] counts each piece (one lookup for a piece that is a token, else the merge loop). The
//! vocabularies are tiktoken-rs's, in a compact form generated into `vocab/` by
//! `examples/token_tables.rs`; the build script lays each out as a hash table ([`layout`]) that is
//! read in place, so the first count of an encoding parses and builds nothing. A counter keeps the
//! counts of recent pieces by their bytes (`bpe::PieceCache`): a text's words repeat.
//!
//! Images count [`IMAGE_TOKENS`] each: Anthropic's documented cost of an image at the largest size
//! it accepts without resizing (about 1.15 megapixels, `width × height / 750`), so the estimate
//! errs on the safe side.
//!
//! A message costs its blocks plus [`MESSAGE_OVERHEAD`]; a conversation adds [`REPLY_PRIMING`]
//! and its system prompt — OpenAI's documented accounting for chat messages. A block kept as read
//! (an opaque block: `thinking`, …) costs the tokens of its JSON; a file's count adds its tool
//! definitions' JSON ([`tool_definition_tokens`]). [`ReadableCounter`] counts what a model reads:
//! opaque blocks by their text, their blobs (encrypted reasoning, signatures) left out.

mod bpe;
mod layout;
mod readable;
mod split;
mod unicode;
#[rustfmt::skip]
mod unicode_table;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

pub use readable::{ReadableCounter, is_blob, readable_text};

use crate::model::{ContentBlock, Message, ToolResultPart};
use bpe::{PieceCache, Vocab};

/// Tokens counted for one image.
pub const IMAGE_TOKENS: usize = 1_600;
/// Tokens of framing per message (role and separators).
pub const MESSAGE_OVERHEAD: usize = 4;
/// Tokens that prime the model's reply, counted once per conversation.
pub const REPLY_PRIMING: usize = 3;

/// A tiktoken encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// GPT-4o and later.
    O200kBase,
    /// GPT-4 and GPT-3.5.
    Cl100kBase,
}

impl Encoding {
    /// The encoding's name as tiktoken spells it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    /// The encoding used for a model id (see the table in this module's docs).
    pub fn for_model(model: &str) -> Encoding {
        let m = model.to_ascii_lowercase();
        let m = m.rsplit('/').next().unwrap_or(&m);
        const O200K: [&str; 9] =
            ["gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss"];
        const CL100K: [&str; 4] = ["gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada"];
        if O200K.iter().any(|p| m.starts_with(p)) {
            Encoding::O200kBase
        } else if CL100K.iter().any(|p| m.starts_with(p)) {
            Encoding::Cl100kBase
        } else {
            Encoding::O200kBase
        }
    }
}

/// What a conversation costs in tokens: the request as a whole and each visible message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TokenReport {
    /// The model the count is for.
    pub model: String,
    /// The encoding the model uses.
    pub encoding: String,
    /// Tokens of the API view, system prompt and reply priming included.
    pub total_tokens: usize,
    /// The same with the opaque blobs left out (encrypted reasoning, thinking signatures,
    /// base64): the text a model reads, which `condense eval --references` sets its targets in
    /// ([`ReadableCounter`]).
    pub readable_tokens: usize,
    /// Each visible message's tokens, in order.
    pub messages: Vec<MessageTokens>,
}

/// One message's share of a [`TokenReport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MessageTokens {
    /// The message's id.
    pub id: String,
    /// Its tokens, framing included.
    pub tokens: usize,
}

impl TokenReport {
    /// Counts the API view of a conversation for a model.
    pub fn of(conversation: &crate::model::Conversation, model: &str) -> TokenReport {
        TokenReport::counted(conversation, model, &TiktokenCounter::for_model(model))
    }

    /// Counts the API view of a conversation with a given counter (for `model`'s encoding), so
    /// that a host keeping its counter across calls recounts only the messages it has not seen.
    pub fn counted(
        conversation: &crate::model::Conversation,
        model: &str,
        counter: &dyn TokenCounter,
    ) -> TokenReport {
        let view = conversation.api_view();
        // Each message counted once: the total is the request without messages (the system
        // prompt and the reply priming) plus the messages' counts.
        let messages: Vec<MessageTokens> = view
            .iter()
            .map(|m| MessageTokens { id: m.id.clone(), tokens: counter.count_message(m) })
            .collect();
        let fixed = counter.count_request(conversation.system.as_deref(), &[])
            + tool_definition_tokens(counter, &conversation.tools);
        let readable = ReadableCounter::new(counter);
        TokenReport {
            model: model.to_owned(),
            encoding: counter.encoding().name().to_owned(),
            total_tokens: fixed + messages.iter().map(|m| m.tokens).sum::<usize>(),
            readable_tokens: fixed + view.iter().map(|m| readable.count_message(m)).sum::<usize>(),
            messages,
        }
    }
}

/// Tokens of a request's tool definitions (their JSON text). They go with every request and no
/// condensation can shrink them: a count of the file includes them, a provider's target does not.
pub fn tool_definition_tokens(counter: &dyn TokenCounter, tools: &[serde_json::Value]) -> usize {
    tools.iter().map(|t| counter.count_text(&t.to_string())).sum()
}

/// Counts tokens. Implementations must be deterministic.
pub trait TokenCounter {
    /// The encoding in use.
    fn encoding(&self) -> Encoding;
    /// Tokens of a plain text.
    fn count_text(&self, text: &str) -> usize;
    /// Tokens of one message, framing included.
    fn count_message(&self, message: &Message) -> usize;
    /// Tokens of a text a conversation holds (a block's text, a rendered ledger): the same as
    /// [`TokenCounter::count_text`], which a counter may answer from a cache, since providers
    /// count the same texts on every run over a conversation. The default does not cache.
    fn count_text_cached(&self, text: &str) -> usize {
        self.count_text(text)
    }
    /// Tokens of a request: the system prompt, the messages and the reply priming.
    fn count_request(&self, system: Option<&str>, messages: &[&Message]) -> usize {
        let system = system.map_or(0, |s| self.count_text(s) + MESSAGE_OVERHEAD);
        system + REPLY_PRIMING + messages.iter().map(|m| self.count_message(m)).sum::<usize>()
    }
}

/// The tiktoken counter: the vocabulary opens on first use, never at construction; message
/// counts are cached by a hash of what the count reads (see [`message_key`]), and the counts of
/// recent pieces (words, mostly) by their bytes, so a text's repeated words are looked up once.
pub struct TiktokenCounter {
    encoding: Encoding,
    bpe: OnceLock<&'static Vocab>,
    cache: Mutex<KeyedCounts>,
    /// Counts of texts by a hash of the text (see [`TokenCounter::count_text_cached`]).
    texts: Mutex<KeyedCounts>,
    pieces: Mutex<PieceCache>,
    encoded_messages: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .field("loaded", &self.bpe.get().is_some())
            .finish()
    }
}

impl TiktokenCounter {
    /// A counter for an encoding. Cheap: nothing is loaded yet.
    pub fn new(encoding: Encoding) -> Self {
        TiktokenCounter {
            encoding,
            bpe: OnceLock::new(),
            cache: Mutex::new(KeyedCounts::default()),
            texts: Mutex::new(KeyedCounts::default()),
            pieces: Mutex::new(PieceCache::default()),
            encoded_messages: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// A counter for a model id.
    pub fn for_model(model: &str) -> Self {
        Self::new(Encoding::for_model(model))
    }

    /// Whether the encoder has been loaded.
    pub fn is_loaded(&self) -> bool {
        self.bpe.get().is_some()
    }

    /// How many messages were encoded rather than answered from the cache, since construction.
    pub fn encoded_messages(&self) -> usize {
        self.encoded_messages.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn bpe(&self) -> &'static Vocab {
        self.bpe.get_or_init(|| shared_vocab(self.encoding))
    }

    fn count_blocks(&self, message: &Message) -> usize {
        message.content.iter().map(|b| self.count_block(b)).sum::<usize>() + MESSAGE_OVERHEAD
    }

    fn count_block(&self, block: &ContentBlock) -> usize {
        match block {
            ContentBlock::Text { text, .. } => self.count_text(text),
            ContentBlock::ToolUse { id: _, name, input } => {
                self.count_text(name) + self.count_text(&input.to_string())
            }
            ContentBlock::ToolResult { content, .. } => content
                .iter()
                .map(|p| match p {
                    ToolResultPart::Text { text } => self.count_text(text),
                    ToolResultPart::Image { .. } => IMAGE_TOKENS,
                })
                .sum(),
            ContentBlock::Image { .. } => IMAGE_TOKENS,
            // A block kept as read costs what its JSON costs.
            ContentBlock::Opaque(block) => self.count_text(&block.json()),
        }
    }
}

/// The vocabularies are immutable tables, so one per encoding serves every counter in the
/// process: a second engine, or a counter rebuilt for a new model of the same family, loads
/// nothing. Only the encodings asked for are ever read.
fn shared_vocab(encoding: Encoding) -> &'static Vocab {
    static O200K: OnceLock<Vocab> = OnceLock::new();
    static CL100K: OnceLock<Vocab> = OnceLock::new();
    match encoding {
        Encoding::O200kBase => {
            O200K.get_or_init(|| Vocab::open(include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.table"))))
        }
        Encoding::Cl100kBase => {
            CL100K.get_or_init(|| Vocab::open(include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.table"))))
        }
    }
}

/// Tokens of a text in an encoding, exactly as tiktoken's `encode_ordinary(text).len()`.
pub fn count_in(encoding: Encoding, text: &str) -> usize {
    count_with(shared_vocab(encoding), encoding, text)
}

fn count_with(vocab: &Vocab, encoding: Encoding, text: &str) -> usize {
    let mut n = 0;
    match encoding {
        Encoding::O200kBase => split::o200k(text, |piece| n += vocab.count(piece.as_bytes())),
        Encoding::Cl100kBase => split::cl100k(text, |piece| n += vocab.count(piece.as_bytes())),
    }
    n
}

/// [`count_with`], each piece looked up in `cache` first.
fn count_cached(vocab: &Vocab, encoding: Encoding, text: &str, cache: &mut PieceCache) -> usize {
    let mut n = 0;
    match encoding {
        Encoding::O200kBase => split::o200k(text, |p| n += vocab.count_cached(p.as_bytes(), cache)),
        Encoding::Cl100kBase => split::cl100k(text, |p| n += vocab.count_cached(p.as_bytes(), cache)),
    }
    n
}

/// Tokens of a text for a model (its encoding by [`Encoding::for_model`]).
pub fn count_text(text: &str, model: &str) -> usize {
    count_in(Encoding::for_model(model), text)
}

/// The pieces a text splits into before the byte-pair merges, as the encoding's regex cuts it
/// (for tests and diagnostics).
pub fn split_pieces(encoding: Encoding, text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    match encoding {
        Encoding::O200kBase => split::o200k(text, |p| out.push(p)),
        Encoding::Cl100kBase => split::cl100k(text, |p| out.push(p)),
    }
    out
}

/// A character's flags in the split patterns' classes (bits: letter 1, number 2, whitespace 4,
/// o200k's upper class 8, its lower class 16, `\r` or `\n` 32), for the test that checks them
/// against regex-syntax.
#[doc(hidden)]
pub fn char_flags(c: char) -> u8 {
    unicode::flags(c)
}

/// Texts shorter than this (bytes) do not wait for the piece cache (see `count_text`).
const SHORT_TEXT: usize = 64 << 10;

/// Counts by a cache key that is already a hash (see [`message_key`]): the map uses the key as its
/// own hash rather than hashing it again.
type KeyedCounts = HashMap<u64, usize, std::hash::BuildHasherDefault<PreHashed>>;

/// Counts a cache holds at most: past this it starts again empty, so an engine that lives as long
/// as a VS Code window (counting every version of a growing file) holds at most about 24 MB of
/// counts per map. A conversation of a million messages still has every count cached.
const MAX_CACHED_COUNTS: usize = 1 << 20;

/// Caches a count, emptying a full cache first.
fn remember(cache: &mut KeyedCounts, key: u64, count: usize) {
    if cache.len() >= MAX_CACHED_COUNTS {
        cache.clear();
    }
    cache.insert(key, count);
}

/// The hasher of [`KeyedCounts`]: the key, a well-mixed 64-bit hash, as is.
#[derive(Default)]
struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here; any other input is folded in, never dropped.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

/// The hasher of the cache keys: foldhash's quality variant with a fixed seed (every input bit
/// reaches every output bit), so two different messages share a key with odds of about 2⁻⁶⁴.
/// SipHash, hashing each key and then the key again for the map, took a tenth of the samples of a
/// cached `countTokens` in a profile; foldhash does not show among its top thirty.
fn key_hasher() -> impl Hasher {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0x6363_6f6e_6465_6e73).build_hasher()
}

/// The cache key of a message's count: a hash of exactly what `TiktokenCounter::count_block`
/// reads — the role, each block's kind, texts, tool names and tool input (walked as a JSON tree,
/// in order, every string and number with its kind) — without serialising anything. Ids, the
/// error flag and images' sources are left out: the count does not read them (an image counts
/// [`IMAGE_TOKENS`] whatever it shows). Change this with `count_block`.
fn message_key(message: &Message) -> u64 {
    let mut h = key_hasher();
    message.role.hash(&mut h);
    h.write_usize(message.content.len());
    for block in &message.content {
        match block {
            // The client-context mark changes nothing the model reads.
            ContentBlock::Text { text, .. } => {
                h.write_u8(0);
                text.hash(&mut h);
            }
            ContentBlock::ToolUse { id: _, name, input } => {
                h.write_u8(1);
                name.hash(&mut h);
                hash_json(input, &mut h);
            }
            ContentBlock::ToolResult { content, .. } => {
                h.write_u8(2);
                h.write_usize(content.len());
                for part in content {
                    match part {
                        ToolResultPart::Text { text } => {
                            h.write_u8(0);
                            text.hash(&mut h);
                        }
                        ToolResultPart::Image { .. } => h.write_u8(1),
                    }
                }
            }
            ContentBlock::Image { .. } => h.write_u8(3),
            // Counted by its JSON: every field, in order.
            ContentBlock::Opaque(block) => {
                h.write_u8(4);
                h.write_usize(block.fields().len());
                for (key, value) in block.fields() {
                    key.hash(&mut h);
                    hash_json(value, &mut h);
                }
            }
        }
    }
    h.finish()
}

/// Hashes a JSON value's tree: each node's kind, then its content; arrays and objects with their
/// length, objects' entries in their order (the order `to_string` writes and the count reads).
fn hash_json(value: &serde_json::Value, h: &mut impl Hasher) {
    use serde_json::Value;
    match value {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => {
            h.write_u8(1);
            b.hash(h);
        }
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                h.write_u8(2);
                h.write_u64(u);
            } else if let Some(i) = n.as_i64() {
                h.write_u8(3);
                h.write_i64(i);
            } else {
                h.write_u8(4);
                h.write_u64(n.as_f64().unwrap_or_default().to_bits());
            }
        }
        Value::String(s) => {
            h.write_u8(5);
            s.hash(h);
        }
        Value::Array(items) => {
            h.write_u8(6);
            h.write_usize(items.len());
            for item in items {
                hash_json(item, h);
            }
        }
        Value::Object(map) => {
            h.write_u8(7);
            h.write_usize(map.len());
            for (k, v) in map {
                k.hash(h);
                hash_json(v, h);
            }
        }
    }
}

impl TokenCounter for TiktokenCounter {
    fn encoding(&self) -> Encoding {
        self.encoding
    }

    fn count_text(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        // A long text holds the piece cache while it is counted (a 50 MB body: a fraction of a
        // second), so a short one never waits for it: it counts without the cache when the cache
        // is busy, to the same count. A long one waits its turn (a short one holds it briefly).
        let cache = match text.len() < SHORT_TEXT {
            true => self.pieces.try_lock().ok(),
            false => self.pieces.lock().ok(),
        };
        match cache {
            Some(mut cache) => count_cached(self.bpe(), self.encoding, text, &mut cache),
            // Busy, or a panic while it was held (none is expected) left an entry half written:
            // count without it.
            None => count_with(self.bpe(), self.encoding, text),
        }
    }

    fn count_message(&self, message: &Message) -> usize {
        let key = message_key(message);
        if let Some(n) = self.cache.lock().ok().and_then(|c| c.get(&key).copied()) {
            return n;
        }
        let n = self.count_blocks(message);
        self.encoded_messages.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut c) = self.cache.lock() {
            remember(&mut c, key, n);
        }
        n
    }

    fn count_text_cached(&self, text: &str) -> usize {
        let mut h = key_hasher();
        text.hash(&mut h);
        let key = h.finish();
        if let Some(n) = self.texts.lock().ok().and_then(|c| c.get(&key).copied()) {
            return n;
        }
        let n = self.count_text(text);
        if let Ok(mut c) = self.texts.lock() {
            remember(&mut c, key, n);
        }
        n
    }
}

/// Where a [`PositionCounter`] finds the counts of its list's messages: the count of the message
/// at a position, when known, and a place to record one made now.
pub trait PositionCounts {
    /// The count of the message at `at` by `encoding`, when known.
    fn get(&self, at: usize, encoding: Encoding) -> Option<usize>;
    /// Records the count of the message at `at`, made now (a store that keeps none ignores it).
    fn record(&self, at: usize, encoding: Encoding, count: usize);
}

/// A counter over one list of messages: a message of the list (a reference into it, found by its
/// address: views and checks hand out references into the list itself) is answered from its
/// position's count, counted by `inner` and recorded the first time; any other message, and every
/// text, goes to `inner`. The template's counter over a run's input and the engine's over a held
/// task are this one type.
pub struct PositionCounter<'a> {
    inner: &'a dyn TokenCounter,
    messages: &'a [Message],
    counts: &'a dyn PositionCounts,
}

impl<'a> PositionCounter<'a> {
    /// A counter over `messages`, whose counts `counts` holds.
    pub fn new(inner: &'a dyn TokenCounter, messages: &'a [Message], counts: &'a dyn PositionCounts) -> Self {
        PositionCounter { inner, messages, counts }
    }
}

impl TokenCounter for PositionCounter<'_> {
    fn encoding(&self) -> Encoding {
        self.inner.encoding()
    }

    fn count_text(&self, text: &str) -> usize {
        self.inner.count_text(text)
    }

    fn count_text_cached(&self, text: &str) -> usize {
        self.inner.count_text_cached(text)
    }

    fn count_message(&self, message: &Message) -> usize {
        let Some(at) = crate::model::position_in(self.messages, message) else {
            return self.inner.count_message(message);
        };
        let encoding = self.inner.encoding();
        if let Some(n) = self.counts.get(at, encoding) {
            return n;
        }
        let n = self.inner.count_message(message);
        self.counts.record(at, encoding, n);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    /// Reference counts computed with OpenAI's Python `tiktoken` 0.8.0 (`encode_ordinary`) on the
    /// same BPE tables.
    const TEXTS: [&str; 7] = [
        "hello world",
        "tiktoken is great!",
        "Ünïcödé façade — naïve café",
        "こんにちは世界、元気ですか？",
        "fn main() {\n    println!(\"{}\", 42);\n}\n",
        "🦀 Rust 🚀 emoji",
        "antidisestablishmentarianism",
    ];

    #[test]
    fn a_short_text_is_counted_while_another_count_holds_the_piece_cache() {
        let counter = TiktokenCounter::new(Encoding::O200kBase);
        let expected = counter.count_text(TEXTS[2]);
        // What a long text's count on another thread does: hold the cache while it counts. A
        // short text counted meanwhile does not wait (here, on this thread, it would never end).
        let held = counter.pieces.lock().unwrap();
        assert_eq!(counter.count_text(TEXTS[2]), expected);
        assert_eq!(
            counter.count_text(&TEXTS[4].repeat(10)),
            count_with(counter.bpe(), counter.encoding, &TEXTS[4].repeat(10))
        );
        drop(held);
        assert_eq!(counter.count_text(TEXTS[2]), expected);
    }

    #[test]
    fn cl100k_matches_tiktoken() {
        let c = TiktokenCounter::new(Encoding::Cl100kBase);
        let got: Vec<usize> = TEXTS.iter().map(|t| c.count_text(t)).collect();
        assert_eq!(got, [2, 6, 13, 10, 11, 8, 6]);
    }

    #[test]
    fn o200k_matches_tiktoken() {
        let c = TiktokenCounter::new(Encoding::O200kBase);
        let got: Vec<usize> = TEXTS.iter().map(|t| c.count_text(t)).collect();
        assert_eq!(got, [2, 6, 10, 8, 11, 7, 6]);
    }

    #[test]
    fn model_families_pick_their_encoding() {
        assert_eq!(Encoding::for_model("gpt-4o-mini"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("openai/gpt-4.1"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("gpt-4-turbo"), Encoding::Cl100kBase);
        assert_eq!(Encoding::for_model("gpt-3.5-turbo"), Encoding::Cl100kBase);
        assert_eq!(Encoding::for_model("claude-sonnet-4-5"), Encoding::O200kBase);
    }

    #[test]
    fn encoder_loads_lazily_and_messages_are_cached() {
        let c = TiktokenCounter::new(Encoding::O200kBase);
        assert!(!c.is_loaded());
        let mut msgs: Vec<Message> = (0..10)
            .map(|i| {
                Message::new(format!("m{i}"), Role::User, vec![ContentBlock::text(format!("message {i}"))])
            })
            .collect();
        let first = c.count_request(None, &msgs.iter().collect::<Vec<_>>());
        assert!(c.is_loaded());
        assert_eq!(c.encoded_messages(), 10);
        msgs.push(Message::new("m10", Role::Assistant, vec![ContentBlock::text("one more")]));
        let second = c.count_request(None, &msgs.iter().collect::<Vec<_>>());
        assert_eq!(c.encoded_messages(), 11, "only the new message is encoded");
        assert_eq!(second, first + c.count_text("one more") + MESSAGE_OVERHEAD);
    }

    #[test]
    fn cache_keys_follow_what_the_count_reads() {
        let call = |id: &str, input: serde_json::Value| {
            Message::new(
                "a",
                Role::Assistant,
                vec![ContentBlock::ToolUse { id: id.into(), name: "grep".into(), input }],
            )
        };
        let base = message_key(&call("c1", serde_json::json!({"path": "src", "n": [1, {"x": true}]})));
        // What the count reads changes the key: a nested value, a number's kind, the key order.
        for other in [
            serde_json::json!({"path": "src", "n": [1, {"x": false}]}),
            serde_json::json!({"path": "src", "n": [1.0, {"x": true}]}),
            serde_json::json!({"n": [1, {"x": true}], "path": "src"}),
            serde_json::json!({"path": "src", "n": [1, {"x": true}, null]}),
        ] {
            assert_ne!(message_key(&call("c1", other.clone())), base, "{other}");
        }
        // The call's id does not change the count, nor the key.
        assert_eq!(message_key(&call("c2", serde_json::json!({"path": "src", "n": [1, {"x": true}]}))), base);
        // Text moved between blocks, or a role changed, is another message.
        let text = |role: Role, parts: &[&str]| {
            Message::new("m", role, parts.iter().map(|p| ContentBlock::text(*p)).collect())
        };
        assert_ne!(
            message_key(&text(Role::User, &["ab", "c"])),
            message_key(&text(Role::User, &["a", "bc"]))
        );
        assert_ne!(message_key(&text(Role::User, &["a"])), message_key(&text(Role::Assistant, &["a"])));
    }

    #[test]
    fn cached_text_counts_are_the_texts_counts() {
        let c = TiktokenCounter::new(Encoding::O200kBase);
        for text in TEXTS.iter().chain(TEXTS.iter()) {
            assert_eq!(c.count_text_cached(text), c.count_text(text), "{text}");
        }
        assert_eq!(c.texts.lock().unwrap().len(), TEXTS.len(), "each text counted once");
        assert_eq!(c.count_text_cached(""), 0);
    }

    /// A full cache starts again empty (the engine lives as long as a window); what it then
    /// holds is still right.
    #[test]
    fn a_full_cache_starts_again() {
        let mut cache = KeyedCounts::default();
        for key in 0..MAX_CACHED_COUNTS as u64 {
            remember(&mut cache, key, 1);
        }
        assert_eq!(cache.len(), MAX_CACHED_COUNTS);
        remember(&mut cache, u64::MAX, 7);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get(&u64::MAX), Some(&7));
    }

    #[test]
    fn a_report_totals_the_request_and_lists_each_visible_message() {
        let c = TiktokenCounter::new(Encoding::O200kBase);
        let mut conversation = crate::model::Conversation::new(vec![
            Message::new("a", Role::User, vec![ContentBlock::text("How do I split a string in Rust?")]),
            Message::new("b", Role::Assistant, vec![ContentBlock::text("Use `str::split`.")]),
        ]);
        conversation.system = Some("You are terse.".into());
        conversation.tools = vec![serde_json::json!({"name": "grep", "input_schema": {"type": "object"}})];
        let report = TokenReport::counted(&conversation, "gpt-4o", &c);
        let view = conversation.api_view();
        let fresh = TiktokenCounter::new(Encoding::O200kBase);
        assert_eq!(
            report.total_tokens,
            fresh.count_request(Some("You are terse."), &view)
                + tool_definition_tokens(&fresh, &conversation.tools)
        );
        let ids: Vec<&str> = report.messages.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(report.messages[1].tokens, fresh.count_message(view[1]));
        assert_eq!(c.encoded_messages(), 2, "each message counted once");
    }

    #[test]
    fn images_use_the_documented_estimate() {
        let c = TiktokenCounter::new(Encoding::O200kBase);
        let m = Message::new(
            "i",
            Role::User,
            vec![ContentBlock::Image {
                source: crate::model::ImageSource::Url { url: "https://x/y.png".into() },
            }],
        );
        assert_eq!(c.count_message(&m), IMAGE_TOKENS + MESSAGE_OVERHEAD);
    }
}
