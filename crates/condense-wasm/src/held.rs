//! The tasks an engine holds between calls, so that a turn moves only what changed across the
//! boundary: chats (a `ChatTask`) and conversation files the meter follows (a `Conversation`),
//! each named by the host with a `TaskHandle {id, revision}`. Bounded: the least recently used
//! task goes first past [`CAPACITY`], and the host may release one. Each held task keeps the token
//! count of each of its messages per encoding, so that the context check after a new message
//! counts only that message and looks the others up by position, never hashing or serialising
//! them. No `JsValue` here: the calls are in `held_api.rs`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use condense_core::agent::{ChatTask, CondensationPreview, PreviewOutcome};
use condense_core::tokens::{PositionCounter, PositionCounts};
use condense_core::{Conversation, Encoding, Message, TokenCounter};
use condense_protocol::calls::TaskHandle;

/// How many tasks an engine holds at most: the open chats and files of one window.
pub(crate) const CAPACITY: usize = 8;

/// What is held under an id.
#[derive(Debug, Clone)]
pub(crate) enum HeldItem {
    /// A chat.
    Chat(ChatTask),
    /// A conversation file.
    Doc(Conversation),
}

impl HeldItem {
    pub(crate) fn messages(&self) -> &[Message] {
        match self {
            HeldItem::Chat(t) => &t.conversation.messages,
            HeldItem::Doc(c) => &c.messages,
        }
    }
}

/// One held task: its revision and, per encoding, the tokens of each message by position. Shared
/// (`Rc`) with a call that works on it across an await (`condense`), so that no borrow of
/// the held tasks is kept meanwhile.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub(crate) revision: u32,
    pub(crate) item: HeldItem,
    counts: RefCell<HashMap<Encoding, Vec<Option<usize>>>>,
}

impl Held {
    /// What a request of the task sends: its system prompt and its API view.
    pub(crate) fn request(&self) -> (Option<&str>, Vec<&Message>) {
        match &self.item {
            HeldItem::Chat(t) => (t.conversation.system.as_deref(), t.conversation.api_view()),
            HeldItem::Doc(c) => (c.system.as_deref(), c.api_view()),
        }
    }

    /// A counter that answers this task's messages from the held counts and records new ones.
    pub(crate) fn counter<'a>(&'a self, inner: &'a dyn TokenCounter) -> PositionCounter<'a> {
        PositionCounter::new(inner, self.item.messages(), self)
    }
}

/// The held tasks, least recently used first.
#[derive(Debug, Default)]
pub(crate) struct HeldTasks {
    tasks: Vec<(String, Rc<Held>)>,
    /// The next revision handed out: revisions never repeat within an engine, so a handle from
    /// before an eviction and a new hold of the same id is refused.
    next_revision: u32,
    /// The previews shown and not applied, by the id of the task they are of: one each (a new
    /// preview replaces the one before), at most [`CAPACITY`].
    previews: Vec<(String, CondensationPreview)>,
}

impl HeldTasks {
    /// Holds `item` under `id`, replacing what was held there. The counts of the messages equal
    /// to those held before at the same position are kept. Returns the new handle.
    pub(crate) fn hold(&mut self, id: &str, item: HeldItem) -> TaskHandle {
        let counts = match self.take(id) {
            Some(old) => carry_counts(old.item.messages(), item.messages(), &old.counts.borrow()),
            None => HashMap::new(),
        };
        self.insert(id, item, counts)
    }

    /// The task held under the handle's id at the handle's revision, now the most recently used.
    pub(crate) fn get(&mut self, handle: &TaskHandle) -> Option<&Rc<Held>> {
        let at = self.tasks.iter().position(|(id, h)| *id == handle.id && h.revision == handle.revision)?;
        let entry = self.tasks.remove(at);
        self.tasks.push(entry);
        self.tasks.last().map(|(_, h)| h)
    }

    /// Keeps the preview a run made of the task `id`, if it made one, until it is applied or
    /// replaced: its result (the whole new message list) stays here, only what it shows crosses.
    pub(crate) fn keep_outcome(&mut self, id: &str, outcome: &PreviewOutcome) {
        if let PreviewOutcome::Ready { preview } = outcome {
            self.keep_preview(id, (**preview).clone());
        }
    }

    fn keep_preview(&mut self, id: &str, preview: CondensationPreview) {
        self.previews.retain(|(i, _)| i != id);
        if self.previews.len() >= CAPACITY {
            self.previews.remove(0);
        }
        self.previews.push((id.to_owned(), preview));
    }

    /// The preview `preview_id` of the task `id`, taken out (applied once).
    pub(crate) fn take_preview(&mut self, id: &str, preview_id: &str) -> Option<CondensationPreview> {
        let at = self.previews.iter().position(|(i, p)| i == id && p.condense_id == preview_id)?;
        Some(self.previews.remove(at).1)
    }

    /// Puts back a preview taken out by [`take_preview`](Self::take_preview) that was not applied.
    pub(crate) fn restore_preview(&mut self, id: &str, preview: CondensationPreview) {
        if !self.previews.iter().any(|(i, _)| i == id) {
            self.previews.push((id.to_owned(), preview));
        }
    }

    /// Lets the task `id` go, with its preview: whether it was held.
    pub(crate) fn release(&mut self, id: &str) -> bool {
        self.previews.retain(|(i, _)| i != id);
        self.take(id).is_some()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.tasks.len()
    }

    fn take(&mut self, id: &str) -> Option<Rc<Held>> {
        let at = self.tasks.iter().position(|(i, _)| i == id)?;
        Some(self.tasks.remove(at).1)
    }

    fn insert(
        &mut self,
        id: &str,
        item: HeldItem,
        counts: HashMap<Encoding, Vec<Option<usize>>>,
    ) -> TaskHandle {
        self.next_revision = self.next_revision.wrapping_add(1);
        let revision = self.next_revision;
        if self.tasks.len() >= CAPACITY {
            self.tasks.remove(0);
        }
        self.tasks.push((id.to_owned(), Rc::new(Held { revision, item, counts: RefCell::new(counts) })));
        TaskHandle { id: id.to_owned(), revision }
    }
}

/// The counts of the new messages that equal old ones: the old message at the same position, else
/// the old message with the same id (a message's count depends on its content only; a turn
/// appends or hides, and a condensation inserts its copies among the messages it hides, so most
/// of a chat or a file carries over either way).
fn carry_counts(
    old: &[Message],
    new: &[Message],
    counts: &HashMap<Encoding, Vec<Option<usize>>>,
) -> HashMap<Encoding, Vec<Option<usize>>> {
    let by_id: HashMap<&str, usize> = old.iter().enumerate().map(|(i, m)| (m.id.as_str(), i)).collect();
    let from: Vec<Option<usize>> = new
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let same = |j: &usize| same_content(&old[*j], m);
            Some(i)
                .filter(|i| *i < old.len())
                .filter(same)
                .or_else(|| by_id.get(m.id.as_str()).copied().filter(same))
        })
        .collect();
    counts
        .iter()
        .map(|(encoding, list)| {
            let carried = from.iter().map(|at| at.and_then(|j| list.get(j).copied().flatten())).collect();
            (*encoding, carried)
        })
        .collect()
}

/// Whether two messages count the same: the same role and content (what the counter reads).
fn same_content(a: &Message, b: &Message) -> bool {
    a.role == b.role && condense_core::model::same_blocks(&a.content, &b.content)
}

/// A held task's counts by position, per encoding: what its [`PositionCounter`] answers from and
/// records into, so a count carries over the task's turns.
impl PositionCounts for Held {
    fn get(&self, at: usize, encoding: Encoding) -> Option<usize> {
        self.counts.borrow().get(&encoding).and_then(|c| c.get(at).copied().flatten())
    }

    fn record(&self, at: usize, encoding: Encoding, count: usize) {
        let len = self.item.messages().len();
        let mut counts = self.counts.borrow_mut();
        let list = counts.entry(encoding).or_insert_with(|| vec![None; len]);
        list.resize(len, None);
        list[at] = Some(count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use condense_core::{ContentBlock, Role, TiktokenCounter};

    fn msg(id: &str, text: &str) -> Message {
        Message::new(id, Role::User, vec![ContentBlock::text(text)])
    }

    fn doc(texts: &[&str]) -> HeldItem {
        HeldItem::Doc(Conversation::new(
            texts.iter().enumerate().map(|(i, t)| msg(&format!("m{i}"), t)).collect(),
        ))
    }

    /// Counts every message of a held task through its counter; the inner counter's number of
    /// messages encoded afterwards says how many were not answered from the held counts.
    fn count_all(tasks: &mut HeldTasks, handle: &TaskHandle, inner: &TiktokenCounter) -> usize {
        let held = tasks.get(handle).expect("held");
        let counter = held.counter(inner);
        held.item.messages().iter().map(|m| counter.count_message(m)).sum()
    }

    #[test]
    fn a_handle_names_one_revision_and_the_oldest_task_goes_first() {
        let mut tasks = HeldTasks::default();
        let first = tasks.hold("a", doc(&["x"]));
        let second = tasks.hold("a", doc(&["x", "y"]));
        assert!(tasks.get(&first).is_none(), "an older revision is refused");
        assert!(tasks.get(&second).is_some());
        for i in 0..CAPACITY {
            tasks.hold(&format!("other{i}"), doc(&["z"]));
        }
        assert_eq!(tasks.len(), CAPACITY);
        assert!(tasks.get(&second).is_none(), "the least recently used task was evicted");
        assert!(tasks.release("other7"));
        assert!(!tasks.release("other7"));
        let again = tasks.hold("a", doc(&["x", "y"]));
        assert_ne!(again, second, "a revision is never handed out twice");
    }

    #[test]
    fn counts_carry_over_and_an_append_counts_only_the_new_message() {
        // A separate counter per step: its own cache must not hide a recount.
        let mut tasks = HeldTasks::default();
        let h = tasks.hold("a", doc(&["one two", "three", "four five six"]));
        let warm = TiktokenCounter::new(Encoding::O200kBase);
        let total = count_all(&mut tasks, &h, &warm);
        assert_eq!(warm.encoded_messages(), 3);

        let h = tasks.hold("a", doc(&["one two", "three", "four five six", "seven"]));
        let fresh = TiktokenCounter::new(Encoding::O200kBase);
        let after = count_all(&mut tasks, &h, &fresh);
        assert_eq!(fresh.encoded_messages(), 1, "only the added message is counted");
        assert_eq!(after, total + fresh.count_message(&msg("x", "seven")));

        // Held again with the second message changed: only it is recounted.
        let h = tasks.hold("a", doc(&["one two", "THREE", "four five six", "seven"]));
        let fresh = TiktokenCounter::new(Encoding::O200kBase);
        count_all(&mut tasks, &h, &fresh);
        assert_eq!(fresh.encoded_messages(), 1);
    }

    #[test]
    fn counts_follow_a_message_that_moved() {
        // A condensation's shape: a copy inserted before the rest, which keep their ids.
        let mut tasks = HeldTasks::default();
        let h = tasks.hold("a", doc(&["one two", "three", "four five six"]));
        let warm = TiktokenCounter::new(Encoding::O200kBase);
        count_all(&mut tasks, &h, &warm);
        let HeldItem::Doc(before) = &tasks.get(&h).expect("held").item else { unreachable!() };
        let mut messages = before.messages.clone();
        messages[0].condense_parent = Some("c1".into());
        messages.insert(1, msg("m0.c1", "one"));
        let h = tasks.hold("a", HeldItem::Doc(Conversation::new(messages)));
        let fresh = TiktokenCounter::new(Encoding::O200kBase);
        count_all(&mut tasks, &h, &fresh);
        assert_eq!(fresh.encoded_messages(), 1, "only the inserted copy is counted");
    }
}
