//! What the template does after a provider's hook: the state ledger and its probes, which put
//! back what a condensation must not lose ([`keep_what_matters`]), and the invariants every
//! output keeps (no message lost, tool calls paired), also offered to callers as
//! [`check_condensed`].

use std::cell::RefCell;

use crate::error::CondenseError;
use crate::ledger::{self, Haystack, Later, Ledger};
use crate::model::{ContentBlock, Message, api_view, check_tool_pairs, next_condense_id, same_blocks};
use crate::tokens::TokenCounter;

use super::input::{Entry, RunInput, materialize};
use super::{CondensationContext, CondensationOptions, Condensed, METRIC_RETENTION, Retention};

/// Whether a run keeps a ledger: the configuration's `ledger`, on when absent.
pub(super) fn ledger_on(options: &CondensationOptions) -> bool {
    options.config.get("ledger").and_then(serde_json::Value::as_bool).unwrap_or(true)
}

/// The tokens to keep free for the ledger under a target: the ledger of the whole view (an upper
/// bound of what the hidden part will need, its user words and working state within their
/// budgets), at most [`LEDGER_MAX_PERCENT`] of the target.
pub(super) fn ledger_reserve(
    ctx: &CondensationContext<'_>,
    options: &CondensationOptions,
    tokens: &dyn TokenCounter,
) -> usize {
    let Some(target) = options.target_within() else { return 0 };
    let budget = ledger::budget_for(Some(target), ctx.prev_context_tokens);
    let estimate = Ledger::of(&ctx.view());
    if estimate.is_empty() {
        return 0;
    }
    tokens.count_text_cached(&estimate.render(budget, tokens)).min(target * LEDGER_MAX_PERCENT / 100)
}

/// A run within its target lands at this share of it or more, in percent, when it can.
const LAND_PERCENT: usize = 80;

/// With a summary, the working state takes at most this part of the words' budget.
const SUMMARY_WORK_DIVISOR: usize = 8;

/// The most of a target, in percent, the room kept for the ledger takes: the user's words'
/// share and the working state's, and the block's own lines.
const LEDGER_MAX_PERCENT: usize = ledger::BUDGET_PERCENT + ledger::WORK_PERCENT;

/// The messages of a run's output (`after`) that its input (`before`) showed and the run hid
/// (`hid`), by their place in `after`, each with its number among the conversation's own
/// messages (what the working state names as `#N`).
pub(crate) fn hidden_by_run(
    before: &[Message],
    after: &[Message],
    hid: impl Fn(&Message) -> bool,
) -> Vec<(usize, Option<usize>)> {
    let was_visible: std::collections::HashSet<&str> =
        before.iter().filter(|m| m.is_visible()).map(|m| m.id.as_str()).collect();
    let numbers: std::collections::HashMap<&str, usize> = before
        .iter()
        .filter(|m| m.condense_id.is_none() && !m.is_summary)
        .enumerate()
        .map(|(n, m)| (m.id.as_str(), n + 1))
        .collect();
    (0..after.len())
        .filter(|&i| hid(&after[i]) && was_visible.contains(after[i].id.as_str()))
        .map(|i| (i, numbers.get(after[i].id.as_str()).copied()))
        .collect()
}

/// The hidden messages to gather a ledger from, numbered, each hidden tool result preceded by
/// the visible message that made its call (a provider that hides results alone, as `mask` does,
/// leaves the calls in view): a result is read by what its call asked for.
pub(crate) fn with_calls<'a>(
    messages: &'a [Message],
    hidden: &[(Option<usize>, &'a Message)],
) -> Vec<(usize, &'a Message)> {
    let hidden_calls: std::collections::HashSet<&str> = hidden
        .iter()
        .flat_map(|(_, m)| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    let mut out: Vec<(usize, &Message)> = Vec::with_capacity(hidden.len());
    let mut added: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for &(n, m) in hidden {
        for block in &m.content {
            let ContentBlock::ToolResult { tool_use_id, .. } = block else { continue };
            if hidden_calls.contains(tool_use_id.as_str()) {
                continue;
            }
            let caller = messages.iter().find(|c| {
                c.is_visible()
                    && c.content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::ToolUse { id, .. } if id == tool_use_id))
            });
            if let Some(caller) = caller
                && added.insert(caller.id.as_str())
            {
                // A call message kept in view carries no ledger of what it did: only its calls.
                out.push((n.unwrap_or(0).saturating_sub(1), caller));
            }
        }
        out.push((n.unwrap_or(0), m));
    }
    out
}

/// A message without its ledger blocks.
fn without_ledger(m: &Message) -> Message {
    let mut m = m.clone();
    m.content.retain(|b| !ledger::is_ledger_block(b));
    m
}

/// A message as the model would see it without any ledger: without its ledger blocks, unless it
/// is pinned (a pinned message is never edited, so a ledger it carries stays).
fn bare(m: &Message) -> Message {
    if m.pinned { m.clone() } else { without_ledger(m) }
}

/// The template's last step: the state ledger and the probes (see [`crate::ledger`]).
///
/// The ledger of what this run hid (visible before, hidden after), merged with the ledger the
/// view carried (which moves here), less what the kept messages still show, is added as a text
/// block to this run's summary, else to an edited copy of the first visible message; the probes
/// of those facts are checked against the final view, and what is missing is put back by code.
/// With the ledger off, a summary gets the missing items in a short block; other runs only
/// report retention. Returns the output with, for each message moved over unchanged from `c`,
/// the input position `origin` gave it (`None` for the messages made here and the run's own).
pub(super) fn keep_what_matters(
    input: &RunInput<'_>,
    ctx: &CondensationContext<'_>,
    options: &CondensationOptions,
    tokens: &dyn TokenCounter,
    mut c: Condensed,
    origin: Vec<Option<usize>>,
    keep: bool,
) -> (Condensed, Vec<Option<usize>>) {
    let origin = origin.as_slice();
    let cid = next_condense_id(ctx.messages);
    let hidden_at =
        hidden_by_run(ctx.messages, &c.messages, |m| m.condense_parent.as_deref() == Some(cid.as_str()));
    let Some(&(first_hidden, _)) = hidden_at.first() else { return (c, origin.to_vec()) };
    let hidden: Vec<(Option<usize>, &Message)> =
        hidden_at.iter().map(|&(i, n)| (n, &c.messages[i])).collect();
    // The ledger the view carries now, from an earlier run: it moves into this run's.
    // A pinned message is never edited: a ledger it carries stays there, and none is added to it.
    let host = c
        .messages
        .iter()
        .position(|m| m.is_visible() && !m.pinned && m.content.iter().any(ledger::is_ledger_block));
    let mut full = host
        .and_then(|h| {
            c.messages[h].content.iter().find_map(|b| match b {
                ContentBlock::Text { text, .. } if ledger::is_ledger_block(b) => Ledger::parse(text),
                _ => None,
            })
        })
        .unwrap_or_default();
    let gathered = with_calls(&c.messages, &hidden);
    full.merge(Ledger::of_numbered(&gathered));
    let probes = full.probes();
    let summary_at = c
        .messages
        .iter()
        .position(|m| m.is_visible() && m.is_summary && m.condense_id.as_deref() == Some(cid.as_str()));

    if !keep {
        let all: Vec<Entry> = (0..c.messages.len()).map(Entry::Kept).collect();
        let (found, missing) = Output::new(input, &c.messages, origin).check(&probes, &all);
        let mut verdict = (found.len(), missing.iter().map(|p| p.label.clone()).collect::<Vec<_>>());
        let mut repaired = 0;
        if let (Some(s), false) = (summary_at, missing.is_empty()) {
            let items: Vec<String> = missing.iter().map(|p| format!("- {}", p.restore)).collect();
            c.messages[s].content.push(ContentBlock::text(format!(
                "Items the summary left out (restored by Context Condenser):\n{}",
                items.join("\n")
            )));
            repaired = missing.len();
            let (found, missing) = Output::new(input, &c.messages, origin).check(&probes, &all);
            verdict = (found.len(), missing.iter().map(|p| p.label.clone()).collect());
        }
        let retention = Retention { kept: verdict.0, probes: probes.len(), repaired, missing: verdict.1 };
        c.metrics.insert(METRIC_RETENTION.into(), serde_json::to_value(retention).expect("serializes"));
        // Only a message the run added (its summary) was edited.
        return (c, origin.to_vec());
    }

    // What the model still sees without any ledger, and the later state of what it shows: read
    // only for what the ledger holds (user words and notes look for their text; files, commands
    // and todos for a later state).
    let output = Output::new(input, &c.messages, origin);
    let mut pruned = full.clone();
    let later = if pruned.files.is_empty() && pruned.commands.is_empty() && pruned.todos.is_empty() {
        Later::default()
    } else {
        output.later_than(first_hidden)
    };
    let visible = output.bare_haystack();
    pruned.prune_in(&later, &visible);
    // The names the kept messages still use whose context went with the hidden ones.
    let kept_messages: Vec<&Message> = c.messages.iter().filter(|m| m.is_visible()).collect();
    // Names explain the rest of a ledger; alone they are not worth one.
    if !pruned.is_empty() {
        let read: Vec<(Option<usize>, &Message)> = gathered.iter().map(|(n, m)| (Some(*n), *m)).collect();
        pruned.names = pruned.names_in_play(&kept_messages, &read, &visible);
        pruned.seen = pruned.names_seen(&gathered, &visible);
    }

    let mut budget = ledger::Budget::for_target(options.target_tokens, ctx.prev_context_tokens);
    // A summary of the hidden turns tells their working state already, in its own sections: the
    // ledger's is then the short list a summary may miss.
    if summary_at.is_some() {
        budget.work = budget.work.min(budget.words / SUMMARY_WORK_DIVISOR);
    }
    let place = summary_at.or_else(|| c.messages.iter().position(|m| m.is_visible() && !m.pinned));
    // The ledger, with what the probes still miss put back as notes; and whether the probes were
    // all found in that very list.
    // The working state fills the room the target leaves, up to its share: over the target, it
    // is rendered again with its budget lowered by the overshoot (the words and the files changed
    // stay whatever their size).
    let fit = |kept: &Ledger, live: &ledger::Live| {
        let mut budget = budget;
        let mut out = insert_ledger(&c.messages, &cid, host, place, kept, budget, tokens, live);
        if let Some(target) = options.target_tokens {
            for _ in 0..4 {
                let size = output.tokens_of(&out, tokens);
                if size <= target || budget.work == 0 {
                    break;
                }
                // At least an eighth less each time: items leave whole, not token by token.
                budget.work = budget.work.saturating_sub((size - target).max(budget.work / 8));
                out = insert_ledger(&c.messages, &cid, host, place, kept, budget, tokens, live);
            }
            // Still over: the names of what was hidden (a room beside the working state's) go
            // before anything else would.
            if output.tokens_of(&out, tokens) > target && !kept.seen.is_empty() {
                let lean = Ledger { seen: Vec::new(), ..kept.clone() };
                out = insert_ledger(&c.messages, &cid, host, place, &lean, budget, tokens, live);
            }
            // Under the target's band, the working state takes the room left beyond its share
            // (more of its items detailed), as long as the run stays within the target.
            let size = output.tokens_of(&out, tokens);
            if size < target * LAND_PERCENT / 100 && budget.work > 0 {
                let wider = ledger::Budget { work: budget.work + (target - size), ..budget };
                let more = insert_ledger(&c.messages, &cid, host, place, kept, wider, tokens, live);
                if output.tokens_of(&more, tokens) <= target {
                    return (more, budget);
                }
            }
        }
        (out, budget)
    };
    let build = |mut kept: Ledger| {
        let live = kept.live_in(&visible);
        let (out, used) = fit(&kept, &live);
        let (_, missing) = output.check(&probes, &out);
        if missing.is_empty() {
            return (out, kept, 0, true, used);
        }
        kept.notes.extend(missing.iter().map(|p| p.restore.clone()));
        let (out, used) = fit(&kept, &live);
        (out, kept, missing.len(), false, used)
    };
    let (mut out, mut kept, mut repaired, mut all_found, mut used) = build(pruned.clone());
    if output.tokens_of(&out, tokens) > ctx.prev_context_tokens {
        // No room for all of it: keep what the probes check (the user's words, the files changed,
        // the open todos); files only read and commands go.
        let mut lean = pruned;
        lean.files.retain(|f| f.action != ledger::FileAction::Read);
        for f in &mut lean.files {
            f.outline.clear();
            f.changes.clear();
        }
        lean.commands.clear();
        lean.errors.clear();
        lean.findings.clear();
        lean.names.clear();
        lean.seen.clear();
        lean.todos.retain(|t| !t.done);
        (out, kept, repaired, all_found, used) = build(lean);
    }
    let (found, missing) = if all_found {
        (probes.len(), Vec::new())
    } else {
        let (found, missing) = output.check(&probes, &out);
        (found.len(), missing.iter().map(|p| p.label.clone()).collect())
    };
    let retention = Retention { kept: found, probes: probes.len(), repaired, missing };
    let block_tokens = if kept.is_empty() {
        0
    } else {
        tokens.count_text_cached(&kept.render_within(used, tokens, &kept.live_in(&visible)))
    };
    c.metrics.insert(
        "ledger".into(),
        serde_json::json!({
            "user_messages": kept.user_messages.len(),
            "files": kept.files.len(),
            "commands": kept.commands.len(),
            "todos": kept.todos.len(),
            "errors": kept.errors.len(),
            "findings": kept.findings.len(),
            "names": kept.names.len(),
            "seen": kept.seen.len(),
            "tokens": block_tokens,
            "working_state_budget": used.work,
            // The working state got less than its share because the run kept too much else.
            "squeezed": used.work < budget.work,
        }),
    );
    c.metrics.insert(METRIC_RETENTION.into(), serde_json::to_value(retention).expect("serializes"));
    drop(output);
    drop(visible);
    let (messages, kept) = materialize(out, std::mem::take(&mut c.messages), origin);
    c.messages = messages;
    (c, kept)
}

/// The messages with the earlier ledger taken off its host (`host`) and `ledger` (when not
/// empty) added as a text block to the message at `place`, as entries over `messages`. A message
/// this run added is edited in place; any other is hidden under `cid` and followed by its edited
/// copy, so undo removes the ledger with the condensation.
#[allow(clippy::too_many_arguments)]
fn insert_ledger(
    messages: &[Message],
    cid: &str,
    host: Option<usize>,
    place: Option<usize>,
    ledger: &Ledger,
    budget: ledger::Budget,
    tokens: &dyn TokenCounter,
    live: &ledger::Live,
) -> Vec<Entry> {
    let block = (!ledger.is_empty()).then(|| ContentBlock::text(ledger.render_within(budget, tokens, live)));
    let mut out = Vec::with_capacity(messages.len() + 2);
    for (i, m) in messages.iter().enumerate() {
        let mut content = None;
        if host == Some(i) {
            content = Some(without_ledger(m).content);
        }
        if let (true, Some(block)) = (place == Some(i), &block) {
            let mut blocks = content.take().unwrap_or_else(|| m.content.clone());
            blocks.push(block.clone());
            content = Some(blocks);
        }
        match content {
            None => out.push(Entry::Kept(i)),
            Some(blocks) if m.condense_id.as_deref() == Some(cid) => {
                out.push(Entry::Made(Message { content: blocks, ..m.clone() }));
            }
            Some(blocks) => {
                out.push(Entry::Made(Message { condense_parent: Some(cid.to_owned()), ..m.clone() }));
                if !blocks.is_empty() {
                    out.push(Entry::Made(Message {
                        id: format!("{}.{cid}", m.id),
                        content: blocks,
                        condense_id: Some(cid.to_owned()),
                        condense_parent: None,
                        ..m.clone()
                    }));
                }
            }
        }
    }
    out
}

/// Checks a condensed message list against the conversation it was made from, as the template
/// checks every provider's output (see `check_result`): for a result kept by the host and applied
/// later (a preview), so that what is applied is still a valid condensation of what is there.
pub fn check_condensed(
    before: &[Message],
    system: Option<&str>,
    after: Vec<Message>,
) -> Result<(), CondenseError> {
    let ctx = CondensationContext { messages: before, system, prev_context_tokens: 0 };
    let pairs_valid = check_tool_pairs(&ctx.view()).is_ok();
    check_result(&ctx, Condensed { messages: after, ..Default::default() }, pairs_valid, None).map(|_| ())
}

/// The invariants every provider's output must keep: every input message is still there,
/// unchanged but for `condense_parent`, in the same order; a visible pinned message stays
/// visible (so neither hidden nor replaced by an edited copy); and the API view stays valid when
/// the input's was (`input_pairs_valid`). Returns the output with, for each of its messages, the
/// position of the input message it is (`None` for a message the provider added).
/// `compared`, when given, says which output messages were compared with their input message
/// already and moved since (by position, as this returns it): their content is not compared again.
pub(super) fn check_result(
    ctx: &CondensationContext<'_>,
    c: Condensed,
    input_pairs_valid: bool,
    compared: Option<&[Option<usize>]>,
) -> Result<(Condensed, Vec<Option<usize>>), CondenseError> {
    let mut origin = vec![None; c.messages.len()];
    let mut rest = c.messages.iter().enumerate();
    for (i, original) in ctx.messages.iter().enumerate() {
        let (j, found) = rest.by_ref().find(|(_, m)| m.id == original.id).ok_or_else(|| {
            CondenseError::Internal(format!("message {} was lost by the provider", original.id))
        })?;
        if original.pinned && original.is_visible() && !found.is_visible() {
            return Err(CondenseError::Internal(format!(
                "message {} is pinned but the provider hid or edited it",
                original.id
            )));
        }
        let known = compared.and_then(|c| c.get(j).copied().flatten()) == Some(i);
        if !known && !same_but_hidden(original, found) {
            return Err(CondenseError::Internal(format!(
                "message {} was changed in place instead of hidden and copied",
                original.id
            )));
        }
        origin[j] = Some(i);
    }
    if input_pairs_valid {
        check_tool_pairs(&api_view(&c.messages)).map_err(|e| {
            CondenseError::Internal(format!("the condensed conversation has a broken tool pair: {e}"))
        })?;
    }
    Ok((c, origin))
}

/// Whether `found` is `original`, but for a `condense_parent` set where the original had none
/// (hidden by this run): every field compared, none copied.
fn same_but_hidden(original: &Message, found: &Message) -> bool {
    let Message { id, ts, role, content, is_summary, condense_id, condense_parent, interrupted, pinned } =
        original;
    (condense_parent.is_none() || *condense_parent == found.condense_parent)
        && *id == found.id
        && *ts == found.ts
        && *role == found.role
        && *is_summary == found.is_summary
        && *condense_id == found.condense_id
        && *interrupted == found.interrupted
        && *pinned == found.pinned
        && same_blocks(content, &found.content)
}

/// A provider's output as the template's last step reads it: for the messages that are input
/// messages (by `origin`), their tokens and texts come from the run's [`RunInput`]; the ones
/// the provider added are counted and read once here.
struct Output<'a> {
    input: &'a RunInput<'a>,
    messages: &'a [Message],
    origin: &'a [Option<usize>],
    pieces: RefCell<Vec<Option<String>>>,
}

impl<'a> Output<'a> {
    fn new(input: &'a RunInput<'a>, messages: &'a [Message], origin: &'a [Option<usize>]) -> Self {
        Output { input, messages, origin, pieces: RefCell::new(vec![None; messages.len()]) }
    }

    /// Appends output message `j`'s text as the probes read it.
    fn push_piece(&self, j: usize, haystack: &mut Haystack) {
        match self.origin[j] {
            Some(i) => self.input.push_piece(i, haystack),
            None => {
                let mut pieces = self.pieces.borrow_mut();
                haystack.push(pieces[j].get_or_insert_with(|| ledger::piece(&self.messages[j])));
            }
        }
    }

    /// Whether output message `j` reads the same without its ledger blocks (see [`bare`]).
    fn is_bare(&self, j: usize) -> bool {
        let m = &self.messages[j];
        m.pinned || !m.content.iter().any(ledger::is_ledger_block)
    }

    /// The normalized text of the output's API view with every ledger taken off (but a pinned
    /// message's): what the model still sees without any ledger.
    fn bare_haystack(&self) -> Haystack {
        let mut haystack = Haystack::default();
        for (j, m) in self.messages.iter().enumerate().filter(|(_, m)| m.is_visible()) {
            if self.is_bare(j) {
                self.push_piece(j, &mut haystack);
            } else {
                haystack.push(&ledger::piece(&bare(m)));
            }
        }
        haystack
    }

    /// What the visible messages after `first` show of files, commands and todos, without any
    /// ledger but a pinned message's.
    fn later_than(&self, first: usize) -> Later {
        let mut later = Later::default();
        for (j, m) in self.messages.iter().enumerate().skip(first + 1).filter(|(_, m)| m.is_visible()) {
            match self.origin[j] {
                Some(i) if self.is_bare(j) => self.input.add_later(i, &mut later),
                _ => later.add(&Later::of_message(&bare(m))),
            }
        }
        // A file's text shown by a call in one message and its result in the next (Claude
        // Code's, OpenAI's): read over the visible messages as one list.
        let visible: Vec<&Message> =
            self.messages.iter().skip(first + 1).filter(|m| m.is_visible() && self.is_plain(m)).collect();
        later.add(&Later { shown: Later::of_ledger(&Ledger::of(&visible)).shown, ..Later::default() });
        later
    }

    /// Whether a message carries no ledger (the one to read past).
    fn is_plain(&self, m: &Message) -> bool {
        m.pinned || !m.content.iter().any(ledger::is_ledger_block)
    }

    /// The normalized text of the API view of `entries`.
    fn haystack(&self, entries: &[Entry]) -> Haystack {
        let mut haystack = Haystack::default();
        for e in entries {
            match e {
                Entry::Kept(j) if self.messages[*j].is_visible() => self.push_piece(*j, &mut haystack),
                Entry::Made(m) if m.is_visible() => haystack.push(&ledger::piece(m)),
                _ => {}
            }
        }
        haystack
    }

    /// Tokens of the API view of `entries`, as `count_request` counts it.
    fn tokens_of(&self, entries: &[Entry], tokens: &dyn TokenCounter) -> usize {
        let count = |e: &Entry| match e {
            Entry::Kept(j) if self.messages[*j].is_visible() => {
                self.input.count(self.origin[*j], &self.messages[*j], tokens)
            }
            Entry::Made(m) if m.is_visible() => tokens.count_message(m),
            _ => 0,
        };
        self.input.fixed + entries.iter().map(count).sum::<usize>()
    }

    /// The probes found and missing in the API view of `entries`; the view's text is read only
    /// when there are probes.
    fn check<'p>(
        &self,
        probes: &'p [ledger::Probe],
        entries: &[Entry],
    ) -> (Vec<&'p ledger::Probe>, Vec<&'p ledger::Probe>) {
        if probes.is_empty() {
            return (Vec::new(), Vec::new());
        }
        ledger::check_probes_in(probes, &self.haystack(entries))
    }
}
