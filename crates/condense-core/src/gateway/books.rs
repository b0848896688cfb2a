//! The gateway's books (issue 40): what each answer's request was billed, and what it would have
//! been billed had the gateway sent the client's bytes, so that the money shown is the money
//! saved — net of the prompt cache a condensation (or a summary's splice) makes the upstream
//! write again, negative until the condensations have paid for it.
//!
//! Each session keeps two models of its provider's prompt cache ([`PromptCache`], by the model's
//! rules): one fed the requests as forwarded, one fed the client's own requests, both in the order
//! and at the times they were sent. For an answer, both requests are billed by their own model;
//! the difference is what condensing saved on that request. What the upstream does that the
//! model does not (a cache evicted early, a cold start) happens to both requests alike, so it
//! stays out of the difference; the bill the report shows is the upstream's own (its usage).
//!
//! The tokens are the upstream's, not an estimate of ours: a request's pieces (the tool
//! definitions, the system prompt, each message) are counted by the core, and every reported
//! usage tells the upstream's total for the forwarded request. Pieces the upstream has counted
//! before keep that count; those new to it (the messages appended since) share what the total
//! leaves, in proportion to the core's counts. A piece is keyed by its content without cache
//! breakpoints, so a message Claude Code marked in one request and not in the next is one piece.
//! A condensation's replacing message arrives together with the client's newest messages; those
//! are priced at the ratio the client's recent messages have shown, and the replacement takes the
//! rest. Where a reported read ends between pieces learned together (the first request's tools,
//! system prompt and first messages; a request that reads only up to the system prompt's
//! breakpoint), it tells how their total divides. Since the client's request differs from the
//! forwarded one only in messages the upstream counted before they were condensed, the bill
//! without condensing is in the upstream's tokens too. A piece's tokens are spread over its cache
//! blocks by their bytes.
//!
//! The books are not saved with the state: after a restart both caches start cold (the first
//! request is written whole in both) and the messages condensed before are priced at the ratio.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::billing::{Billed, Block, CacheRules, PromptCache, Spans, Ttl};
use crate::model::hash::{Fnv1aWriter, fnv1a, fnv1a_from};
use crate::tokens::{MESSAGE_OVERHEAD, TokenCounter};

use super::dialect::{Dialect, Request};

/// One cache block of a piece: its content's hash (role included, breakpoint left out, since
/// moving a breakpoint does not change what is cached), its weight (its bytes), its breakpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Cell {
    hash: u64,
    weight: f64,
    breakpoint: Option<Ttl>,
}

/// A part of a request the books count by the upstream's tokens.
#[derive(Debug, Clone)]
pub(super) struct Piece {
    /// The hash of its exact text.
    key: u64,
    /// The core's count of it.
    ours: f64,
    cells: Arc<[Cell]>,
    kind: Kind,
}

/// What a piece is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The tool definitions or the system prompt.
    Fixed,
    /// One of the client's messages.
    Message,
    /// A condensation's replacing message (the gateway's text, not the client's).
    Replacement,
}

/// A request as the books see it: its pieces, in the order the provider caches them.
#[derive(Debug, Clone, Default)]
pub(super) struct Prompt {
    pieces: Vec<Piece>,
}

impl Prompt {
    /// The core's count of the whole request.
    pub(super) fn ours(&self) -> f64 {
        self.pieces.iter().map(|p| p.ours).sum()
    }

    /// Whether it carries any cache breakpoint.
    fn has_breakpoints(&self) -> bool {
        self.pieces.iter().any(|p| p.cells.iter().any(|c| c.breakpoint.is_some()))
    }
}

fn cell(role: &str, block: &Value) -> Cell {
    let start = fnv1a(role.as_bytes());
    let (written, breakpoint) = match (block.as_object(), block.get("cache_control")) {
        (Some(map), Some(control)) => {
            (Fnv1aWriter::json(start, &WithoutCacheControl(map)), Some(Ttl::of_cache_control(control)))
        }
        _ => (Fnv1aWriter::json(start, block), None),
    };
    written_cell(written, breakpoint)
}

/// The cell of what was hashed as written: its hash, its bytes as its weight.
fn written_cell(written: Fnv1aWriter, breakpoint: Option<Ttl>) -> Cell {
    Cell { hash: written.hash, weight: written.len.max(1) as f64, breakpoint }
}

/// A block's object without its `cache_control`, serialized in its order: what is cached.
struct WithoutCacheControl<'a>(&'a Map<String, Value>);

impl Serialize for WithoutCacheControl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().filter(|(key, _)| key.as_str() != "cache_control"))
    }
}

/// A content given as a string: the one text block the API reads it as,
/// `{"type":"text","text":…}`, serialized without a copy of the text.
struct TextBlock<'a>(&'a str);

impl Serialize for TextBlock<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", "text")?;
        map.serialize_entry("text", self.0)?;
        map.end()
    }
}

/// The cell of a content given as a string.
fn text_cell(role: &str, text: &str) -> Cell {
    written_cell(Fnv1aWriter::json(fnv1a(role.as_bytes()), &TextBlock(text)), None)
}

/// One cell for a whole text: a message of a dialect whose cache has no breakpoints.
fn whole(role: &str, text: &str) -> Cell {
    Cell {
        hash: fnv1a_from(fnv1a(role.as_bytes()), text.as_bytes()),
        weight: text.len().max(1) as f64,
        breakpoint: None,
    }
}

/// The cells of blocks given as a string or an array of blocks (Anthropic's `content`, `system`).
fn blocks_cells(role: &str, content: &Value, text: &str) -> Vec<Cell> {
    match content {
        Value::String(s) => vec![text_cell(role, s)],
        Value::Array(blocks) if !blocks.is_empty() => blocks.iter().map(|b| cell(role, b)).collect(),
        _ => vec![whole(role, text)],
    }
}

/// A message's cells: in Anthropic's dialect one per content block (a string is one text block,
/// as the API reads it); in OpenAI's, whose cache has no breakpoints, the message whole.
pub(super) fn message_cells(dialect: Dialect, text: &str) -> Vec<Cell> {
    if dialect != Dialect::AnthropicMessages {
        return vec![whole("message", text)];
    }
    if let Some(cells) = borrowed_cells(text) {
        return cells;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value) => {
            let role = value.get("role").and_then(Value::as_str).unwrap_or_default().to_owned();
            blocks_cells(&role, value.get("content").unwrap_or(&Value::Null), text)
        }
        Err(_) => vec![whole("message", text)],
    }
}

/// The fields a message's cells read, borrowed from its text.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

/// The cells of a message object whose content is a string or absent, read without a copy of its
/// text (one message of 50 MB would be parsed into 50 MB more); `None`: read it whole (blocks,
/// or a message this reader does not read as the whole reader does: not an object, a field
/// twice or of another type).
fn borrowed_cells(text: &str) -> Option<Vec<Cell>> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let fields: Fields<'_> = serde_json::from_str(text).ok()?;
    let role = fields.role.as_deref().unwrap_or_default();
    let Some(content) = fields.content else { return Some(vec![whole(role, text)]) };
    match content.get().as_bytes().first() {
        // Borrowed when it has no escapes (serde reads a `Cow` alone into an owned copy).
        Some(b'"') => match serde_json::from_str::<&str>(content.get()) {
            Ok(borrowed) => Some(vec![text_cell(role, borrowed)]),
            Err(_) => Some(vec![text_cell(role, &serde_json::from_str::<String>(content.get()).ok()?)]),
        },
        Some(b'n') => Some(vec![whole(role, text)]),
        _ => None,
    }
}

/// Cells by the hash of the text they were read from (a message is read once per session), with
/// the key of the piece they make.
#[derive(Debug, Default)]
pub(super) struct CellCache {
    cells: HashMap<u64, (Arc<[Cell]>, u64)>,
}

/// Texts whose cells the cache holds before it starts again.
const MAX_CELLS: usize = 1 << 16;

impl CellCache {
    /// Takes in the cells of messages read before the decision (by their texts' hashes), so that
    /// reading them, which parses each message, is done outside the gateway's lock.
    pub(super) fn absorb(&mut self, read: Vec<(u64, Arc<[Cell]>)>) {
        for (text_key, cells) in read {
            self.get(text_key, || cells);
        }
    }

    /// The cells of the text hashing to `text_key`, and the piece's key: a hash of the cells,
    /// so that a message with its breakpoint and the same message without it (Claude Code moves
    /// its breakpoint on to the newest message) are one piece, as they are one prefix upstream.
    fn get(&mut self, text_key: u64, read: impl FnOnce() -> Arc<[Cell]>) -> (Arc<[Cell]>, u64) {
        if let Some((cells, key)) = self.cells.get(&text_key) {
            return (Arc::clone(cells), *key);
        }
        if self.cells.len() >= MAX_CELLS {
            self.cells.clear();
        }
        let cells: Arc<[Cell]> = read();
        let key = cells.iter().fold(fnv1a(b"piece"), |h, c| fnv1a_from(h, &c.hash.to_le_bytes()));
        self.cells.insert(text_key, (Arc::clone(&cells), key));
        (cells, key)
    }

    /// The piece of one message whose text hashes to `text_key`, counted `ours` by the core.
    pub(super) fn message(&mut self, dialect: Dialect, text_key: u64, text: &str, ours: usize) -> Piece {
        let (cells, key) = self.get(text_key, || message_cells(dialect, text).into());
        Piece { key, ours: ours as f64, cells, kind: Kind::Message }
    }

    /// The pieces before the messages, in the provider's order: the tool definitions (each one a
    /// block in Anthropic's dialect), then the system prompt where it is its own key.
    pub(super) fn fixed(&mut self, request: &Request<'_>, counter: &dyn TokenCounter) -> Vec<Piece> {
        let dialect = request.dialect;
        let mut pieces = Vec::new();
        if let Some(tools) = request.tools {
            let text = tools.get();
            let (cells, key) = self.get(fnv1a_from(fnv1a(b"tools"), text.as_bytes()), || {
                match serde_json::from_str::<Value>(text) {
                    Ok(value) if dialect == Dialect::AnthropicMessages => blocks_cells("tools", &value, text),
                    _ => vec![whole("tools", text)],
                }
                .into()
            });
            let ours = counter.count_text_cached(text) as f64;
            pieces.push(Piece { key, ours, cells, kind: Kind::Fixed });
        }
        if let Some(system) = request.system_raw {
            let text = system.get();
            let (cells, key) = self.get(fnv1a_from(fnv1a(b"system"), text.as_bytes()), || {
                match serde_json::from_str::<Value>(text) {
                    Ok(value) if dialect == Dialect::AnthropicMessages => {
                        blocks_cells("system", &value, text)
                    }
                    _ => vec![whole("system", text)],
                }
                .into()
            });
            let ours = (counter.count_text_cached(&request.system) + MESSAGE_OVERHEAD) as f64;
            pieces.push(Piece { key, ours, cells, kind: Kind::Fixed });
        }
        pieces
    }
}

/// A message of a prompt: its text's hash, the text, the core's count, and whether it is a
/// condensation's replacing message.
pub(super) type Message<'t> = (u64, &'t str, usize, bool);

/// A prompt from its fixed pieces and its messages.
pub(super) fn prompt<'t>(
    fixed: &[Piece],
    messages: impl IntoIterator<Item = Message<'t>>,
    dialect: Dialect,
    cells: &mut CellCache,
) -> Prompt {
    let mut pieces = fixed.to_vec();
    pieces.extend(messages.into_iter().map(|(key, text, ours, replacement)| Piece {
        kind: if replacement { Kind::Replacement } else { Kind::Message },
        ..cells.message(dialect, key, text, ours)
    }));
    Prompt { pieces }
}

/// A request decided and not yet answered: what the books bill once its usage comes.
#[derive(Debug, Clone)]
pub(super) struct PendingBill {
    /// The model asked for.
    pub(super) model: String,
    /// The request as the client sent it, and as forwarded.
    pub(super) client: Prompt,
    pub(super) forwarded: Prompt,
    /// Where its bill falls in each cache, found when it was sent (see [`Book::send`]).
    pub(super) client_spans: Spans,
    pub(super) forwarded_spans: Spans,
}

/// How many requests may await their usage at once; beyond, the oldest are dropped (their
/// answers are counted, not booked). A bill holds two lists of its request's pieces (some tens
/// of KB for a long session), and a request whose answer reports no usage leaves its bill behind:
/// far more than a few agents keep in flight, and a bounded few MB.
pub(super) const MAX_PENDING_BILLS: usize = 64;

/// One session's books: the upstream's counts of its pieces, and the two cache models.
#[derive(Debug, Clone)]
pub(super) struct Book {
    /// The upstream's tokens of each piece it has counted, by the piece's key.
    upstream: HashMap<u64, f64>,
    /// The upstream's tokens over the core's, over every reported request: the ratio that
    /// prices a piece the upstream has not counted yet.
    reported: f64,
    counted: f64,
    /// The same over the client's messages learned alone (no replacement among them): the ratio
    /// that prices the client's messages arriving together with a replacement, which takes the
    /// rest (the gateway's text counts apart from the client's).
    messages_reported: f64,
    messages_counted: f64,
    /// The pieces learned from one reported total together, by piece: a read reported to end
    /// between two pieces of a group tells how the group's total divides.
    groups: HashMap<u64, u64>,
    /// Each group's pieces: their keys and the core's counts.
    members: HashMap<u64, Vec<(u64, f64)>>,
    next_group: u64,
    /// The cache as the forwarded requests left it, and as the client's would have.
    paid: PromptCache,
    unpaid: PromptCache,
    /// The model the caches are for (a cache is the model's own).
    model: String,
}

fn group_of_key(groups: &HashMap<u64, u64>, key: u64) -> Option<u64> {
    groups.get(&key).copied()
}

/// How much the client's messages learned before the latest weigh in the ratio that prices the
/// next ones, per group learned since.
const RATIO_DECAY: f64 = 0.5;

/// Pieces the books remember the upstream's count of before they start again.
const MAX_PIECES: usize = 1 << 16;

impl Book {
    /// Empty books for a session of `model` whose cache follows `rules`.
    pub(super) fn new(model: &str, rules: CacheRules) -> Book {
        Book {
            upstream: HashMap::new(),
            reported: 0.0,
            counted: 0.0,
            messages_reported: 0.0,
            messages_counted: 0.0,
            groups: HashMap::new(),
            members: HashMap::new(),
            next_group: 0,
            paid: PromptCache::new(rules),
            unpaid: PromptCache::new(rules),
            model: model.to_owned(),
        }
    }

    /// The model the books are kept for.
    pub(super) fn model(&self) -> &str {
        &self.model
    }

    /// The upstream's tokens per token of the core's, so far (1 before any usage).
    pub(super) fn ratio(&self) -> f64 {
        if self.counted > 0.0 { self.reported / self.counted } else { 1.0 }
    }

    /// A piece's tokens in the upstream's count: known, else estimated.
    fn tokens(&self, piece: &Piece) -> f64 {
        self.upstream.get(&piece.key).copied().unwrap_or(piece.ours * self.ratio())
    }

    /// Learns the upstream's counts from a forwarded request it reported `total` prompt tokens
    /// for (see the module's documentation). The pieces new to the upstream share what the total
    /// leaves, in proportion to the core's counts; when a condensation's replacing message is
    /// among them, the client's messages beside it are priced at the ratio their kind has shown
    /// and the replacement takes the rest, since the client's request differs from the forwarded
    /// one by exactly the replacement.
    pub(super) fn learn(&mut self, prompt: &Prompt, total: f64) {
        let known: f64 = prompt.pieces.iter().filter_map(|p| self.upstream.get(&p.key)).sum();
        let new: Vec<&Piece> = prompt.pieces.iter().filter(|p| !self.upstream.contains_key(&p.key)).collect();
        let left = (total - known).max(0.0);
        if self.upstream.len() + new.len() > MAX_PIECES {
            self.upstream.clear();
        }
        let ours = |pieces: &[&Piece]| pieces.iter().map(|p| p.ours).sum::<f64>();
        let (replacements, client): (Vec<&Piece>, Vec<&Piece>) =
            new.iter().partition(|p| p.kind == Kind::Replacement);
        let messages_ratio =
            (self.messages_counted > 0.0).then(|| self.messages_reported / self.messages_counted);
        let mut shares: Vec<(u64, f64)> = Vec::new();
        match messages_ratio {
            Some(ratio) if !replacements.is_empty() && ratio * ours(&client) <= left => {
                let rest = left - ratio * ours(&client);
                shares.extend(client.iter().map(|p| (p.key, p.ours * ratio)));
                let of = ours(&replacements);
                shares.extend(replacements.iter().map(|p| {
                    (p.key, if of > 0.0 { rest * p.ours / of } else { rest / replacements.len() as f64 })
                }));
            }
            _ => {
                let of = ours(&new);
                shares.extend(
                    new.iter().map(|p| {
                        (p.key, if of > 0.0 { left * p.ours / of } else { left / new.len() as f64 })
                    }),
                );
                if !new.is_empty() && new.iter().all(|p| p.kind == Kind::Message) {
                    // The latest messages weigh most: the next ones are most like them.
                    self.messages_reported = self.messages_reported * RATIO_DECAY + left;
                    self.messages_counted = self.messages_counted * RATIO_DECAY + of;
                }
            }
        }
        let group = self.next_group;
        self.next_group += 1;
        if self.groups.len() + shares.len() > MAX_PIECES {
            self.groups.clear();
            self.members.clear();
        }
        self.groups.extend(shares.iter().map(|(key, _)| (*key, group)));
        self.members.insert(group, new.iter().map(|p| (p.key, p.ours)).collect());
        self.upstream.extend(shares);
        self.reported += total;
        self.counted += prompt.ours();
    }

    /// Learns from where a forwarded request's reported read ended (`read` tokens, after the
    /// first `end` blocks, as the cache model found it when the request was sent):
    /// when the cache model has it end between two pieces learned from one total, the pieces
    /// before the end must add up to `read`, and the group's total is divided again so that
    /// they do. (The first request's tool definitions and system prompt are learned together
    /// with its first message; a request that reads only up to the system prompt's breakpoint
    /// tells them apart.)
    pub(super) fn pin(&mut self, prompt: &Prompt, read: f64, total: f64, end: usize) {
        if end == 0 || read <= 0.0 {
            return;
        }
        // The piece the read ends with, if it ends at a piece's end.
        let mut cells = 0;
        let Some(last) = prompt.pieces.iter().position(|p| {
            cells += p.cells.len();
            cells >= end
        }) else {
            return;
        };
        if cells != end {
            return;
        }
        let before: f64 = prompt.pieces[..=last].iter().map(|p| self.tokens(p)).sum();
        let delta = read - before;
        if delta.abs() < 0.5 {
            return;
        }
        let group_of = |p: &Piece| self.groups.get(&p.key).copied();
        let Some(group) = prompt.pieces[..=last]
            .iter()
            .filter_map(group_of)
            .find(|g| prompt.pieces[last + 1..].iter().any(|p| group_of(p) == Some(*g)))
        else {
            return;
        };
        // The group's pieces before the end, and all its others (in the request after the end,
        // or condensed away since).
        let ahead: Vec<(u64, f64)> = prompt.pieces[..=last]
            .iter()
            .filter(|p| group_of(p) == Some(group))
            .map(|p| (p.key, p.ours))
            .collect();
        let behind: Vec<(u64, f64)> = self.members[&group]
            .iter()
            .filter(|(key, _)| !ahead.iter().any(|(k, _)| k == key))
            .copied()
            .collect();
        let behind_total: f64 =
            behind.iter().map(|(k, _)| self.upstream.get(k).copied().unwrap_or(0.0)).sum();
        // No more can move than the pieces after the end hold.
        let delta = delta.min(behind_total);
        let spread = |pieces: &[(u64, f64)], amount: f64, upstream: &mut HashMap<u64, f64>| {
            let ours: f64 = pieces.iter().map(|(_, o)| o).sum();
            for (key, o) in pieces {
                let share = if ours > 0.0 { o / ours } else { 1.0 / pieces.len() as f64 };
                if let Some(v) = upstream.get_mut(key) {
                    *v = (*v + amount * share).max(0.0);
                }
            }
        };
        spread(&ahead, delta, &mut self.upstream);
        spread(&behind, -delta, &mut self.upstream);
        // The request's own total stays what the upstream reported: the pieces it brought take
        // the difference (its replacing message first, the gateway's text being the estimate).
        let now: f64 = prompt.pieces.iter().map(|p| self.tokens(p)).sum();
        let latest = self.next_group.checked_sub(1);
        let own: Vec<&Piece> =
            prompt.pieces.iter().filter(|p| group_of_key(&self.groups, p.key) == latest).collect();
        let replacements: Vec<(u64, f64)> =
            own.iter().filter(|p| p.kind == Kind::Replacement).map(|p| (p.key, p.ours)).collect();
        let takers = if replacements.is_empty() {
            own.iter().map(|p| (p.key, p.ours)).collect()
        } else {
            replacements
        };
        if group != latest.unwrap_or(u64::MAX) && !takers.is_empty() {
            spread(&takers, total - now, &mut self.upstream);
        }
    }

    /// The cache blocks of a prompt, in the upstream's tokens.
    pub(super) fn blocks(&self, prompt: &Prompt) -> Vec<Block> {
        let mut out = Vec::with_capacity(prompt.pieces.iter().map(|p| p.cells.len()).sum());
        let mut key = fnv1a(b"prompt");
        for piece in &prompt.pieces {
            let tokens = self.tokens(piece);
            let weight: f64 = piece.cells.iter().map(|c| c.weight).sum();
            for c in piece.cells.iter() {
                key = fnv1a_from(key, &c.hash.to_le_bytes());
                out.push(Block { key, tokens: tokens * c.weight / weight, breakpoint: c.breakpoint });
            }
        }
        out
    }

    /// The upstream's tokens of a prompt, estimated.
    pub(super) fn total(&self, prompt: &Prompt) -> f64 {
        self.pieces_total(&prompt.pieces)
    }

    /// The upstream's tokens of some pieces, estimated.
    pub(super) fn pieces_total(&self, pieces: &[Piece]) -> f64 {
        pieces.iter().map(|p| self.tokens(p)).sum()
    }

    /// Sends a request to both caches as it is decided (as the client sent it, as forwarded),
    /// in the order requests go out, whether or not its usage ever comes: the caches are what
    /// the policy weighs against. Says where each bill falls, to be priced once the usage tells
    /// the upstream's counts ([`Book::bill`]).
    pub(super) fn send(
        &mut self,
        client: &Prompt,
        forwarded: &Prompt,
        now_ms: i64,
        retention: Ttl,
    ) -> (Spans, Spans) {
        self.paid.set_retention(retention);
        self.unpaid.set_retention(retention);
        let (c, f) = (self.blocks(client), self.blocks(forwarded));
        (self.unpaid.send(&c, now_ms), self.paid.send(&f, now_ms))
    }

    /// Prices an answered request in both caches, in the upstream's counts as learned so far:
    /// (as the client sent it, as forwarded).
    pub(super) fn bill(&self, pending: &PendingBill) -> (Billed, Billed) {
        let tokens = |prompt: &Prompt| self.blocks(prompt).iter().map(|b| b.tokens).collect::<Vec<f64>>();
        (
            pending.client_spans.billed(&tokens(&pending.client)),
            pending.forwarded_spans.billed(&tokens(&pending.forwarded)),
        )
    }

    /// What the forwarded requests' cache would bill `prompt` now, without keeping anything:
    /// for weighing a condensation before it is made.
    pub(super) fn try_paid(&self, prompt: &Prompt, now_ms: i64) -> Billed {
        self.paid.clone().bill(&self.blocks(prompt), now_ms)
    }

    /// Whether the forwarded requests' cache holds anything alive at `now_ms`.
    pub(super) fn warm(&self, now_ms: i64) -> bool {
        self.paid.is_warm(now_ms)
    }

    /// Whether a prompt would be cached at all by its breakpoints (Anthropic) or automatically.
    pub(super) fn caches(&self, prompt: &Prompt) -> bool {
        match self.paid.rules() {
            CacheRules::Breakpoints { .. } => prompt.has_breakpoints(),
            CacheRules::Automatic { .. } => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(key: u64, ours: f64, cells: usize, mark_last: bool) -> Piece {
        let cells: Vec<Cell> = (0..cells)
            .map(|i| Cell {
                hash: key * 100 + i as u64,
                weight: 10.0,
                breakpoint: (mark_last && i + 1 == cells).then_some(Ttl::FiveMinutes),
            })
            .collect();
        Piece {
            key,
            ours,
            cells: cells.into(),
            kind: if key == 99 { Kind::Replacement } else { Kind::Message },
        }
    }

    #[test]
    fn the_upstreams_counts_are_learned_piece_by_piece() {
        let mut book = Book::new("m", CacheRules::Breakpoints { min_tokens: 0 });
        let first = Prompt { pieces: vec![piece(1, 100.0, 1, true), piece(2, 50.0, 1, false)] };
        book.learn(&first, 300.0);
        assert_eq!(book.total(&first), 300.0);
        assert_eq!(book.upstream[&1], 200.0);
        // A second request adds a piece: it gets what the total leaves.
        let second = Prompt {
            pieces: vec![piece(1, 100.0, 1, true), piece(2, 50.0, 1, false), piece(3, 10.0, 1, false)],
        };
        book.learn(&second, 345.0);
        assert_eq!(book.upstream[&3], 45.0);
        assert_eq!(book.upstream[&1], 200.0, "known counts stay");
        // A piece never reported is estimated at the ratio so far: 645 / 310.
        let other = Prompt { pieces: vec![piece(9, 31.0, 1, false)] };
        assert!((book.total(&other) - 31.0 * 645.0 / 310.0).abs() < 1e-9);
    }

    #[test]
    fn the_same_requests_bill_the_same_in_both_caches_and_a_rewrite_shows() {
        let mut book = Book::new("m", CacheRules::Breakpoints { min_tokens: 0 });
        let history: Vec<Piece> = (0..6).map(|k| piece(k, 1_000.0, 2, false)).collect();
        let mut sent = Vec::new();
        for (t, p) in history.iter().enumerate() {
            sent.push(p.clone());
            let mut pieces = sent.clone();
            let last = pieces.len() - 1;
            pieces[last] = piece(p.key, p.ours, 2, true);
            let prompt = Prompt { pieces };
            book.learn(&prompt, 1_000.0 * (t + 1) as f64);
            let (client_spans, forwarded_spans) = book.send(&prompt, &prompt, t as i64, Ttl::FiveMinutes);
            let pending = PendingBill {
                model: "m".into(),
                client: prompt.clone(),
                forwarded: prompt,
                client_spans,
                forwarded_spans,
            };
            let (unpaid, paid) = book.bill(&pending);
            assert_eq!(unpaid, paid, "request {t}");
        }
        // The forwarded request drops pieces 1..4 for a small replacement: everything after the
        // first piece is written again, while the client's request reads all it sent before.
        let replacement = piece(99, 100.0, 1, false);
        let client = Prompt { pieces: (0..7).map(|k| piece(k, 1_000.0, 2, k == 6)).collect() };
        let forwarded = Prompt {
            pieces: vec![
                piece(0, 1_000.0, 2, false),
                replacement,
                piece(4, 1_000.0, 2, false),
                piece(5, 1_000.0, 2, false),
                piece(6, 1_000.0, 2, true),
            ],
        };
        let (client_spans, forwarded_spans) = book.send(&client, &forwarded, 10, Ttl::FiveMinutes);
        book.learn(&forwarded, 4_100.0);
        let pending = PendingBill { model: "m".into(), client, forwarded, client_spans, forwarded_spans };
        let (unpaid, paid) = book.bill(&pending);
        assert_eq!(unpaid.read, 6_000.0);
        assert_eq!(unpaid.write_5m, 1_000.0);
        // The forwarded request reads only the first request's prefix (written at its breakpoint
        // then) and writes the rest anew.
        assert_eq!(paid.read, 1_000.0);
        assert_eq!(paid.write_5m, 3_100.0);
    }

    #[test]
    fn anthropic_blocks_are_keyed_without_their_breakpoints_and_strings_read_as_text_blocks() {
        let marked = r#"{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}}]}"#;
        let plain = r#"{"role":"user","content":"hi"}"#;
        let a = message_cells(Dialect::AnthropicMessages, marked);
        let b = message_cells(Dialect::AnthropicMessages, plain);
        assert_eq!(a[0].hash, b[0].hash);
        assert_eq!(a[0].breakpoint, Some(Ttl::OneHour));
        assert_eq!(b[0].breakpoint, None);
        let assistant = r#"{"role":"assistant","content":"hi"}"#;
        assert_ne!(
            message_cells(Dialect::AnthropicMessages, assistant)[0].hash,
            b[0].hash,
            "the role counts"
        );
        assert_eq!(message_cells(Dialect::ChatCompletions, plain).len(), 1);
    }

    /// The cells as the whole JSON reads them: the message parsed whole, each block serialized
    /// (a string as its text block), `cache_control` left out.
    fn cells_read_whole(text: &str) -> Vec<(u64, usize, Option<Ttl>)> {
        let whole_text =
            |role: &str| vec![(fnv1a_from(fnv1a(role.as_bytes()), text.as_bytes()), text.len().max(1), None)];
        let Ok(value) = serde_json::from_str::<Value>(text) else { return whole_text("message") };
        let role = value.get("role").and_then(Value::as_str).unwrap_or_default().to_owned();
        let block = |b: &Value| {
            let mut bare = b.clone();
            let ttl = bare
                .as_object_mut()
                .and_then(|m| m.shift_remove("cache_control"))
                .map(|c| Ttl::of_cache_control(&c));
            let bytes = serde_json::to_vec(&bare).unwrap();
            (fnv1a_from(fnv1a(role.as_bytes()), &bytes), bytes.len().max(1), ttl)
        };
        match value.get("content") {
            Some(Value::String(s)) => vec![block(&serde_json::json!({"type": "text", "text": s}))],
            Some(Value::Array(blocks)) if !blocks.is_empty() => blocks.iter().map(block).collect(),
            _ => whole_text(&role),
        }
    }

    proptest::proptest! {
        /// Read without a copy of its text, a message has the cells reading it whole gives.
        #[test]
        fn cells_read_borrowed_are_the_cells_read_whole(
            role in proptest::prop_oneof![
                proptest::strategy::Just("\"role\":\"user\",".to_owned()),
                proptest::strategy::Just("\"role\":null,".to_owned()),
                proptest::strategy::Just("\"role\":7,".to_owned()),
                proptest::strategy::Just(String::new()),
            ],
            text in "[a-z \"\\\\\n\u{e9}\u{1F600}]{0,40}",
            shape in 0..7usize,
            space in proptest::bool::ANY,
        ) {
            let string = serde_json::to_string(&text).unwrap();
            let content = match shape {
                0 => format!("\"content\":{string}"),
                1 => format!("\"content\":[{{\"type\":\"text\",\"text\":{string},\"cache_control\":{{\"type\":\"ephemeral\"}}}}]"),
                2 => format!("\"content\":[{{\"cache_control\":{{\"type\":\"ephemeral\",\"ttl\":\"1h\"}},\"type\":\"text\",\"text\":{string}}}]"),
                3 => "\"content\":null".to_owned(),
                4 => format!("\"content\":{string},\"content\":\"twice\""),
                5 => "\"content\":[]".to_owned(),
                _ => format!("\"content\":{string},\"extra\":{{\"k\":[{string}]}}"),
            };
            let message = if space { format!(" {{ {role} {content} }}") } else { format!("{{{role}{content}}}") };
            let cells: Vec<_> = message_cells(Dialect::AnthropicMessages, &message)
                .iter()
                .map(|c| (c.hash, c.weight as usize, c.breakpoint))
                .collect();
            proptest::prop_assert_eq!(cells, cells_read_whole(&message), "{}", message);
        }
    }
}
