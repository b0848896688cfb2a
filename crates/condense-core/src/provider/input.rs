//! A run's input as the template reads it once ([`RunInput`]), and the lists of messages the
//! template builds from a provider's output ([`Entry`], [`materialize`]): what the template
//! (`template`) and the checks after a provider's hook (`checks`) both work on.

use std::cell::RefCell;

use crate::ledger::{self, Haystack, Later};
use crate::model::{Message, api_view, check_tool_pairs};
use crate::tokens::{Encoding, PositionCounts, TokenCounter};

/// A run's input as the template reads it, once: each visible message's tokens, so that the
/// count of a result adds up the counts of the input messages it keeps and counts only the ones
/// the run added (never hashing the kept ones again), and whether its tool pairs were valid;
/// and, each computed on first use and shared by the run's attempts, a message's text as the
/// probes read it ([`ledger::piece`]) and what it shows of files, commands and todos
/// ([`Later::of_message`]).
pub(super) struct RunInput<'a> {
    pub(super) messages: &'a [Message],
    /// The system prompt with its framing, and the reply priming: `count_request` of no message.
    pub(super) fixed: usize,
    /// Each message's tokens; 0 for a hidden one, which no count of a view reads.
    counts: Vec<usize>,
    /// Whether the input's API view has valid tool pairs (then the result's must too).
    pub(super) pairs_valid: bool,
    pieces: RefCell<Vec<Option<String>>>,
    later: RefCell<Vec<Option<Later>>>,
}

impl<'a> RunInput<'a> {
    pub(super) fn new(messages: &'a [Message], system: Option<&str>, tokens: &dyn TokenCounter) -> Self {
        let counts =
            messages.iter().map(|m| if m.is_visible() { tokens.count_message(m) } else { 0 }).collect();
        RunInput {
            messages,
            fixed: tokens.count_request(system, &[]),
            counts,
            pairs_valid: check_tool_pairs(&api_view(messages)).is_ok(),
            pieces: RefCell::new(vec![None; messages.len()]),
            later: RefCell::new(vec![None; messages.len()]),
        }
    }

    /// Tokens of the input's API view: `count_request` of it.
    pub(super) fn tokens(&self) -> usize {
        self.fixed + self.counts.iter().sum::<usize>()
    }

    /// Tokens of a result's API view: `count_request` of it. `origin` says which of its messages
    /// are input messages (checked equal but for being hidden by `check_result`): their counts
    /// are known; the others are counted.
    pub(super) fn tokens_of(
        &self,
        messages: &[Message],
        origin: &[Option<usize>],
        tokens: &dyn TokenCounter,
    ) -> usize {
        let visible = messages.iter().enumerate().filter(|(_, m)| m.is_visible());
        self.fixed + visible.map(|(j, m)| self.count(origin[j], m, tokens)).sum::<usize>()
    }

    /// Tokens of a visible message of a result: the count taken at the start when it is input
    /// message `origin`, else counted.
    pub(super) fn count(&self, origin: Option<usize>, message: &Message, tokens: &dyn TokenCounter) -> usize {
        match origin {
            Some(i) => self.counts[i],
            None => tokens.count_message(message),
        }
    }

    /// Appends input message `i`'s text as the probes read it.
    pub(super) fn push_piece(&self, i: usize, haystack: &mut Haystack) {
        let mut pieces = self.pieces.borrow_mut();
        haystack.push(pieces[i].get_or_insert_with(|| ledger::piece(&self.messages[i])));
    }

    /// What input message `i` shows of files, commands and todos, added to `later`.
    pub(super) fn add_later(&self, i: usize, later: &mut Later) {
        let mut cache = self.later.borrow_mut();
        later.add(cache[i].get_or_insert_with(|| Later::of_message(&self.messages[i])));
    }
}

/// The counts a run's input holds for the counter its provider and the template's steps use
/// ([`PositionCounter`]): an input message is answered from the count the template took at the
/// start (a hidden one was not counted); any other message, and every text, goes to the host's
/// counter.
impl PositionCounts for RunInput<'_> {
    fn get(&self, at: usize, _: Encoding) -> Option<usize> {
        self.messages[at].is_visible().then(|| self.counts[at])
    }

    fn record(&self, _: usize, _: Encoding, _: usize) {}
}

/// A message of a list the template builds from a provider's output: one of the output's own,
/// by index, or one made here (a message with the ledger added or taken off, and the original it
/// replaces, hidden). Only the made ones are new values; the list becomes messages once chosen.
#[derive(Debug)]
pub(super) enum Entry {
    Kept(usize),
    Made(Message),
}

/// The messages of `entries`, the kept ones moved out of `messages`; with the input position of
/// each kept one that is an input message (by `origin`, over `messages`), `None` for the others.
pub(super) fn materialize(
    entries: Vec<Entry>,
    messages: Vec<Message>,
    origin: &[Option<usize>],
) -> (Vec<Message>, Vec<Option<usize>>) {
    let mut slots: Vec<Option<Message>> = messages.into_iter().map(Some).collect();
    entries
        .into_iter()
        .map(|e| match e {
            Entry::Kept(j) => (slots[j].take().expect("an output message is kept once"), origin[j]),
            Entry::Made(m) => (m, None),
        })
        .unzip()
}
