//! Reading and counting an agent's messages: the raw JSON of a request's messages read as the
//! core's [`Message`]s (with the importers of [`crate::formats`], so tool calls, results and the
//! user's words read as they do in a file), and counted with the core's [`TokenCounter`].
//!
//! A request is counted as the fixed part (system prompt, tool definitions, the reply priming)
//! plus each message. A message's count is cached in its session by the hash of its exact text,
//! so a warm request (a session that grew by one or two messages) counts only what is new: the
//! rest is one map lookup per message.
//!
//! Anthropic publishes no tokenizer for Claude: its models are counted in `o200k_base`, as
//! [`crate::tokens::Encoding::for_model`] does for every model it does not know, an estimate
//! within some percent of Anthropic's own count. The threshold leaves room for that.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::formats::{RequestDialect, request_conversation};
use crate::model::Message;
use crate::tokens::{Encoding, MESSAGE_OVERHEAD, REPLY_PRIMING, TiktokenCounter, TokenCounter};

use super::books::{Cell, message_cells};
use super::dialect::{Dialect, Request};
use super::session_key::fnv1a;

/// The importers' name of a gateway dialect.
fn request_dialect(dialect: Dialect) -> RequestDialect {
    match dialect {
        Dialect::AnthropicMessages => RequestDialect::AnthropicMessages,
        Dialect::ChatCompletions => RequestDialect::ChatCompletions,
        Dialect::Responses => RequestDialect::Responses,
        Dialect::Gemini => RequestDialect::Gemini,
    }
}

/// Messages given as raw JSON texts, read as the core's messages, and the system prompt any
/// leading system or developer message makes. Fails on a text that is not a message of the
/// dialect.
pub(super) fn read_messages(
    dialect: Dialect,
    texts: &[&str],
) -> Result<(Option<String>, Vec<Message>), String> {
    let values = texts.iter().map(|t| serde_json::from_str::<Value>(t)).collect::<Result<Vec<_>, _>>();
    let values = values.map_err(|e| e.to_string())?;
    let conversation =
        request_conversation(request_dialect(dialect), &Value::Array(values)).map_err(|e| e.to_string())?;
    Ok((conversation.system, conversation.messages))
}

/// One counter per encoding, shared by every session: their piece caches warm up across
/// sessions, since agents' requests repeat the same words. With the counts of the messages
/// [`precount`] read, by their cache key ([`count_key`]), so that a host counts a request's new
/// messages outside the gateway's state, and only those.
#[derive(Debug)]
pub struct Counters {
    o200k: TiktokenCounter,
    cl100k: TiktokenCounter,
    messages: Mutex<HashMap<u64, usize>>,
    /// The books' cells of the messages read, by their texts' hashes: a message another session
    /// sent (or this one, before it was forgotten) is not parsed again under the state's lock.
    cells: Mutex<HashMap<u64, Arc<[Cell]>>>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            o200k: TiktokenCounter::new(Encoding::O200kBase),
            cl100k: TiktokenCounter::new(Encoding::Cl100kBase),
            messages: Mutex::new(HashMap::new()),
            cells: Mutex::new(HashMap::new()),
        }
    }
}

/// The key a message's count is kept by: its text's hash, and the encoding (one session may
/// ask two models).
fn count_key(hash: u64, counter: &dyn TokenCounter) -> u64 {
    hash ^ (counter.encoding() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The counts of a request's messages, made by [`precount`] before the gateway's state is
/// taken: what [`CountCache::absorb`] takes in.
#[derive(Debug, Default)]
pub(super) struct Precounts {
    counts: Vec<(u64, usize)>,
    /// The books' cells of the request's messages (Anthropic's: one per block, which reading
    /// parses the message), by their texts' hashes: read here when the counters had not read them.
    pub(super) cells: Vec<(u64, Arc<[Cell]>)>,
    /// The request's task line ([`Request::task_line`]), which reads its first user messages
    /// whole.
    pub(super) task_line: Option<String>,
}

/// Counts what counting `request` needs, without the gateway's state: each message the counters
/// have not counted before (the others are looked up), and the system prompt and tools (which
/// the counter keeps). A host calls it for a request before it takes the state, so that the
/// decision, made under the state's lock, finds every count made.
pub(super) fn precount(counters: &Counters, request: &Request<'_>) -> Precounts {
    let counter = counters.for_model(request.model.as_deref().unwrap_or_default());
    fixed_tokens(request, counter);
    let keys: Vec<u64> = request.hashes.iter().map(|&h| count_key(h, counter)).collect();
    let known: Vec<Option<usize>> = {
        let cache = counters.messages.lock().unwrap_or_else(PoisonError::into_inner);
        keys.iter().map(|k| cache.get(k).copied()).collect()
    };
    let counts: Vec<(u64, usize)> = keys
        .iter()
        .zip(&known)
        .zip(&request.messages)
        .map(|((&key, &known), m)| {
            (key, known.unwrap_or_else(|| message_tokens(request.dialect, m.get(), counter)))
        })
        .collect();
    // The cells of every message, those new to the counters read now: the session's books look
    // them up, and a session new to a message already sent would otherwise read it in the lock.
    let had: Vec<Option<Arc<[Cell]>>> = {
        let cache = counters.cells.lock().unwrap_or_else(PoisonError::into_inner);
        request.hashes.iter().map(|h| cache.get(h).cloned()).collect()
    };
    let cells: Vec<(u64, Arc<[Cell]>)> = had
        .iter()
        .zip(request.texts())
        .map(|(had, (hash, text))| {
            (hash, had.clone().unwrap_or_else(|| message_cells(request.dialect, text).into()))
        })
        .collect();
    {
        let mut cache = counters.cells.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() + cells.len() > MAX_COUNTS * 2 {
            cache.clear();
        }
        for ((hash, read), had) in cells.iter().zip(&had) {
            if had.is_none() {
                cache.insert(*hash, Arc::clone(read));
            }
        }
    }
    {
        // Held for the inserts alone: another request's precount looks its counts up here.
        let mut cache = counters.messages.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() + counts.len() > MAX_COUNTS * 2 {
            cache.clear();
        }
        for (&(key, n), known) in counts.iter().zip(&known) {
            if known.is_none() {
                cache.insert(key, n);
            }
        }
    }
    Precounts { counts, cells, task_line: request.task_line() }
}

impl Counters {
    /// The counter of `model`'s encoding.
    pub(super) fn for_model(&self, model: &str) -> &TiktokenCounter {
        match Encoding::for_model(model) {
            Encoding::O200kBase => &self.o200k,
            Encoding::Cl100kBase => &self.cl100k,
        }
    }
}

/// Tokens of one message given as raw JSON: the core's count of the message it reads as (a
/// leading system message counts as a system prompt). A text the importers refuse is counted as
/// its JSON text, so a count never fails.
pub(super) fn message_tokens(dialect: Dialect, text: &str, counter: &dyn TokenCounter) -> usize {
    match read_messages(dialect, &[text]) {
        Ok((system, messages)) => {
            system.map_or(0, |s| counter.count_text(&s) + MESSAGE_OVERHEAD)
                + messages.iter().map(|m| counter.count_message(m)).sum::<usize>()
        }
        Err(_) => counter.count_text(text) + MESSAGE_OVERHEAD,
    }
}

/// Tokens of a request without its messages: the system prompt (for Chat Completions it is in the
/// messages, counted there), the tool definitions' JSON, the reply priming.
pub(super) fn fixed_tokens(request: &Request<'_>, counter: &dyn TokenCounter) -> usize {
    let system = match request.dialect {
        Dialect::ChatCompletions => 0,
        _ if request.system.is_empty() => 0,
        _ => counter.count_text_cached(&request.system) + MESSAGE_OVERHEAD,
    };
    let tools = request.tools.map_or(0, |t: &RawValue| counter.count_text_cached(t.get()));
    system + tools + REPLY_PRIMING
}

/// A session's counts of message texts, by a hash of the text and the encoding.
#[derive(Debug, Default)]
pub(super) struct CountCache {
    counts: HashMap<u64, usize>,
}

/// Counts the cache holds at most before it starts again: far more messages than a session
/// holds, so only a session rewritten many times over ever drops its counts.
const MAX_COUNTS: usize = 1 << 16;

impl CountCache {
    /// Tokens of a message text whose FNV-1a hash is `hash` (the session store keeps it).
    pub(super) fn tokens(
        &mut self,
        dialect: Dialect,
        hash: u64,
        text: &str,
        counter: &dyn TokenCounter,
    ) -> usize {
        let key = count_key(hash, counter);
        if let Some(&n) = self.counts.get(&key) {
            return n;
        }
        let n = message_tokens(dialect, text, counter);
        if self.counts.len() >= MAX_COUNTS {
            self.counts.clear();
        }
        self.counts.insert(key, n);
        n
    }

    /// Takes in the counts a host made before the decision ([`precount`]).
    pub(super) fn absorb(&mut self, precounts: &Precounts) {
        if self.counts.len() + precounts.counts.len() > MAX_COUNTS {
            self.counts.clear();
        }
        self.counts.extend(precounts.counts.iter().copied());
    }

    /// Tokens of a message text whose hash is not known yet.
    pub(super) fn tokens_of(&mut self, dialect: Dialect, text: &str, counter: &dyn TokenCounter) -> usize {
        self.tokens(dialect, fnv1a(text.as_bytes()), text, counter)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{self, ANTHROPIC_TURNS, CHAT_TURNS, RESPONSES_ITEMS};
    use super::*;
    use crate::model::{ContentBlock, Role};

    #[test]
    fn a_precount_brings_the_cells_of_every_message_read_once() {
        let counters = Counters::default();
        let body = fixtures::anthropic(&ANTHROPIC_TURNS[..5]);
        let request = Request::parse(Dialect::AnthropicMessages, body.as_bytes()).unwrap();
        let first = precount(&counters, &request);
        // Another session sending the same messages: counted and read already, yet its
        // precount brings each message's cells, so its books read none under the state's lock.
        let again = precount(&counters, &request);
        assert_eq!(again.cells.len(), 5);
        for ((h1, c1), (h2, c2)) in first.cells.iter().zip(&again.cells) {
            assert_eq!(h1, h2);
            assert!(Arc::ptr_eq(c1, c2), "the cells read once are shared");
        }
    }

    #[test]
    fn each_dialect_reads_as_the_cores_messages() {
        let (system, messages) = read_messages(Dialect::AnthropicMessages, &ANTHROPIC_TURNS[..3]).unwrap();
        assert_eq!(system, None);
        assert_eq!(messages.len(), 3);
        assert!(matches!(messages[1].content[2], ContentBlock::ToolUse { .. }));
        assert!(matches!(messages[2].content[0], ContentBlock::ToolResult { .. }));

        let (system, messages) = read_messages(Dialect::ChatCompletions, &CHAT_TURNS[..5]).unwrap();
        assert_eq!(system.as_deref(), Some("You are Cline, a coding agent.\n\nPrefer small diffs."));
        assert_eq!(
            messages.iter().map(|m| m.role).collect::<Vec<_>>(),
            [Role::User, Role::Assistant, Role::User]
        );

        let (system, messages) = read_messages(Dialect::Responses, &RESPONSES_ITEMS[..5]).unwrap();
        assert!(system.unwrap().contains("sandbox: workspace-write"));
        assert_eq!(messages.len(), 3, "the reasoning and the call make one assistant turn");
        assert!(matches!(messages[2].content[0], ContentBlock::ToolResult { .. }));
    }

    #[test]
    fn a_count_is_cached_by_the_texts_hash_and_never_fails() {
        let counter = TiktokenCounter::new(Encoding::O200kBase);
        let mut cache = CountCache::default();
        let n = cache.tokens_of(Dialect::AnthropicMessages, ANTHROPIC_TURNS[2], &counter);
        assert!(n > 20, "{n}");
        let encoded = counter.encoded_messages();
        assert_eq!(cache.tokens_of(Dialect::AnthropicMessages, ANTHROPIC_TURNS[2], &counter), n);
        assert_eq!(counter.encoded_messages(), encoded, "answered from the cache");
        let odd = r#"{"role":"narrator","content":"once upon a time"}"#;
        assert!(cache.tokens_of(Dialect::AnthropicMessages, odd, &counter) > 0);
    }

    #[test]
    fn the_fixed_part_is_the_system_prompt_and_the_tools() {
        let counter = TiktokenCounter::new(Encoding::O200kBase);
        let body = fixtures::anthropic(&ANTHROPIC_TURNS[..1]);
        let request = Request::parse(Dialect::AnthropicMessages, body.as_bytes()).unwrap();
        let fixed = fixed_tokens(&request, &counter);
        let system = counter.count_text(&request.system) + MESSAGE_OVERHEAD;
        let tools = counter.count_text(request.tools.unwrap().get());
        assert_eq!(fixed, system + tools + REPLY_PRIMING);
        let body = fixtures::chat(&CHAT_TURNS);
        let request = Request::parse(Dialect::ChatCompletions, body.as_bytes()).unwrap();
        assert_eq!(
            fixed_tokens(&request, &counter),
            counter.count_text(request.tools.unwrap().get()) + REPLY_PRIMING
        );
    }
}
