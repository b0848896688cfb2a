//! The sessions the gateway holds, and the body it forwards for a request.
//!
//! A session keeps the original messages it has seen (each one's exact text and a hash of it) and
//! its frozen condensations: a range of original indices and the exact text of the message that
//! replaces them. A request's messages are matched to the originals by hash, longest common
//! prefix first; what is new is appended, and a prefix that stops matching (the client rewound,
//! edited or compacted its history) starts a branch that keeps only the condensations wholly
//! inside the common prefix. The forwarded body is the client's body with the message array
//! rebuilt from the frozen replacements and the client's own message texts, so every request
//! between two condensations extends the previous one byte for byte. With nothing to replace,
//! the client's body goes out as it came, not a byte changed.
//!
//! The store is bounded by sessions and bytes. Over the bytes, the least recently used sessions
//! first let go of their messages' texts (kept: each message's hash and length, and the
//! condensations, so the session still replays them when its client comes back, the texts coming
//! back with that request); over that still, or over the sessions, they are forgotten. The session
//! a request is using stays whole, so one session larger than the bound is held while in use.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use super::GatewayError;
use super::dialect::{ArrayKind, Dialect, Request};
use super::session_key::{SessionKey, session_key};

/// How much the store holds before it forgets the least recently used sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most sessions held.
    pub max_sessions: usize,
    /// The most bytes of message text held, originals and replacements together (a message
    /// known by its hash only counts 16).
    pub max_bytes: usize,
    /// A session whose messages' texts come to more than this keeps their hashes only: its
    /// requests bring the texts each time (what condenses reads the request's), so a large body
    /// is never copied into the store. A smaller one keeps them, for the view's preview between
    /// requests.
    pub keep_texts_bytes: usize,
}

impl Default for Limits {
    /// 64 sessions and 64 MiB of texts: a hundred agent sessions of 600 KB requests hold their
    /// texts, and any number beyond replay from their hashes; a gateway on a laptop serves a
    /// handful at a time.
    fn default() -> Self {
        Limits { max_sessions: 64, max_bytes: 64 << 20, keep_texts_bytes: 8 << 20 }
    }
}

/// One message as the client sent it.
#[derive(Debug, Clone)]
pub(super) struct Original {
    /// FNV-1a of its text.
    pub(super) hash: u64,
    /// Its text's length in bytes.
    pub(super) len: usize,
    /// The message's exact JSON text; `None` in a session read back from a saved state (which
    /// keeps hashes and condensations, not the bodies), until a request repeating the message
    /// gives it back.
    text: Option<Box<str>>,
}

impl Original {
    /// A message as a request sent it.
    pub(super) fn new(hash: u64, text: &str) -> Original {
        Original { hash, len: text.len(), text: Some(text.into()) }
    }

    /// A saved message: its hash and length, its text to come with the next request.
    pub(super) fn hollow(hash: u64, len: usize) -> Original {
        Original { hash, len, text: None }
    }

    /// Its text (empty while hollow: a session is whole again once its request is matched, before
    /// anything reads it; see [`Session::is_hollow`]).
    pub(super) fn text(&self) -> &str {
        self.text.as_deref().unwrap_or_default()
    }

    /// Whether a request's message is this one: the same hash and length, and the same text
    /// when it is held.
    fn is(&self, hash: u64, text: &str) -> bool {
        self.hash == hash && self.len == text.len() && self.text.as_deref().is_none_or(|t| t == text)
    }
}

/// A condensation frozen into a session: replayed byte for byte on every request until the
/// client's history stops matching inside its range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frozen {
    /// The original message indices it replaces.
    pub range: Range<usize>,
    /// The replacing message's exact JSON text, in the session's dialect.
    pub replacement: Box<str>,
}

/// One conversation the gateway follows.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) dialect: Dialect,
    /// Whether the latest request sent a Responses `input` string rather than an array.
    pub(super) kind: ArrayKind,
    pub(super) originals: Vec<Original>,
    /// Sorted by range, never overlapping.
    pub(super) frozen: Vec<Frozen>,
    pub(super) last_used: u64,
    bytes: usize,
}

impl Session {
    /// Recounts the bytes held, after a change.
    pub(super) fn recount(&mut self) {
        self.bytes = self.originals.iter().map(|o| o.text.as_ref().map_or(16, |t| t.len())).sum::<usize>()
            + self.frozen.iter().map(|f| f.replacement.len()).sum::<usize>();
    }

    /// Whether some of its messages are known by their hashes only: read back from a saved state
    /// and not yet repeated by a request. What reads the messages' texts waits for that request.
    pub(super) fn is_hollow(&self) -> bool {
        self.originals.iter().any(|o| o.text.is_none())
    }

    /// Lets go of its messages' texts, keeping their hashes and lengths (the caller recounts).
    fn let_go_of_texts(&mut self) {
        for o in &mut self.originals {
            o.text = None;
        }
    }
}

/// How a request's messages relate to what the session had seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continuity {
    /// The session was not known (or was known in another dialect).
    New,
    /// The request repeats every known message and appends `appended` more.
    Extended {
        /// Messages new to the session.
        appended: usize,
    },
    /// The request agrees with the known messages only on the first `common`; the rest was
    /// replaced, and `dropped` condensations reaching past `common` were forgotten.
    Branched {
        /// The length of the common prefix.
        common: usize,
        /// Condensations forgotten.
        dropped: usize,
    },
}

/// The request to forward.
#[derive(Debug)]
pub struct Forward<'a> {
    /// The session the request belongs to.
    pub session: SessionKey,
    /// The body to send upstream: the client's own when nothing was replaced.
    pub body: Cow<'a, str>,
    /// The byte range of the message array (or `input` string) in `body`.
    pub messages: Range<usize>,
    /// How the request continued the session.
    pub continuity: Continuity,
    /// How many frozen condensations were spliced in.
    pub replayed: usize,
}

/// The most conversations held under one session key: the key and its branches.
const MAX_BRANCHES: u32 = 4;

/// The sessions the gateway follows, bounded, least recently used forgotten first.
#[derive(Debug, Default)]
pub struct Sessions {
    limits: Limits,
    pub(super) map: HashMap<SessionKey, Session>,
    tick: u64,
}

/// How many leading messages `incoming` shares with `known`: same hash and length, and same text
/// where the text is held.
pub(super) fn common_prefix(known: &[Original], incoming: &[(u64, &str)]) -> usize {
    known.iter().zip(incoming).take_while(|(k, (hash, text))| k.is(*hash, text)).count()
}

impl Sessions {
    /// An empty store with these bounds.
    pub fn new(limits: Limits) -> Sessions {
        Sessions { limits, map: HashMap::new(), tick: 0 }
    }

    /// The sessions held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The bytes of message text held over all sessions.
    pub fn bytes(&self) -> usize {
        self.map.values().map(|s| s.bytes).sum()
    }

    /// How many original messages `session` holds, if it is held.
    pub fn messages(&self, session: &SessionKey) -> Option<usize> {
        self.map.get(session).map(|s| s.originals.len())
    }

    /// The condensations frozen into `session`, in order.
    pub fn frozen(&self, session: &SessionKey) -> Option<&[Frozen]> {
        self.map.get(session).map(|s| s.frozen.as_slice())
    }

    /// Reads `body` as a request in `dialect`, brings its session up to date, and builds the
    /// body to forward. `header` is the `x-context-condenser-session` header, if sent. An error
    /// means the body could not be read; the host forwards it untouched.
    pub fn forward<'a>(
        &mut self,
        dialect: Dialect,
        body: &'a [u8],
        header: Option<&str>,
    ) -> Result<Forward<'a>, GatewayError> {
        let request = Request::parse(dialect, body)?;
        Ok(self.forward_request(&request, header))
    }

    /// [`Sessions::forward`] of a request already read, for a caller that reads more of it
    /// (its model, its tools) than the store does, so the body is read once.
    pub fn forward_request<'a>(&mut self, request: &Request<'a>, header: Option<&str>) -> Forward<'a> {
        let dialect = request.dialect;
        let incoming: Vec<(u64, &str)> = request.texts().collect();
        let key = self.branch_for(&session_key(request, header), dialect, &incoming);
        self.tick += 1;
        let tick = self.tick;
        let fresh = || Session {
            dialect,
            kind: request.kind,
            originals: Vec::new(),
            frozen: Vec::new(),
            last_used: tick,
            bytes: 0,
        };
        let session = self.map.entry(key.clone()).or_insert_with(fresh);
        let known = session.originals.len();
        let continuity = if session.dialect != dialect || known == 0 {
            *session = fresh();
            Continuity::New
        } else {
            let common = common_prefix(&session.originals, &incoming);
            if common == known {
                Continuity::Extended { appended: incoming.len() - common }
            } else {
                session.originals.truncate(common);
                let before = session.frozen.len();
                session.frozen.retain(|f| f.range.end <= common);
                Continuity::Branched { common, dropped: before - session.frozen.len() }
            }
        };
        // The messages kept are the request's first ones: those known by their hash only take
        // their texts from it, unless the session is too large to keep them.
        let keep = incoming.iter().map(|(_, text)| text.len()).sum::<usize>() <= self.limits.keep_texts_bytes;
        if keep {
            for (o, &(_, text)) in session.originals.iter_mut().zip(&incoming) {
                o.text.get_or_insert_with(|| text.into());
            }
        } else {
            session.let_go_of_texts();
        }
        let start = session.originals.len();
        session.originals.extend(incoming[start..].iter().map(|&(hash, text)| match keep {
            true => Original::new(hash, text),
            false => Original::hollow(hash, text.len()),
        }));
        session.kind = request.kind;
        session.last_used = tick;
        session.recount();
        let (body, messages, replayed) = splice(request, &session.frozen);
        self.evict_except(&key);
        Forward { session: key, body, messages, continuity, replayed }
    }

    /// The session under `base` that `incoming` continues: the branch whose every known message
    /// it repeats (the longest such). Else the branch it agrees with longest, cut back to where
    /// they part (a client that edits its latest messages, as Claude Code moves its cache
    /// breakpoint, continues in place) — unless that would forget a condensation: then a new
    /// branch, started with the messages they share and the condensations within them (replayed
    /// byte for byte, so the cache they were written to holds), while the old branch stays for
    /// its own conversation. Two conversations under one key (two agents with the same opening, a
    /// sub-agent under its parent's id) so keep their own condensations instead of undoing each
    /// other's on every request. With every branch taken, the closest is cut back.
    fn branch_for(&mut self, base: &SessionKey, dialect: Dialect, incoming: &[(u64, &str)]) -> SessionKey {
        let mut extends: Option<(SessionKey, usize)> = None;
        let mut closest: Option<(SessionKey, usize)> = None;
        let mut free = None;
        for n in 0..MAX_BRANCHES {
            let key = base.branch(n);
            let Some(session) = self.map.get(&key).filter(|s| s.dialect == dialect) else {
                if !self.map.contains_key(&key) && free.is_none() {
                    free = Some(key);
                }
                continue;
            };
            let (known, common) = (session.originals.len(), common_prefix(&session.originals, incoming));
            if known > 0 && common == known && extends.as_ref().is_none_or(|(_, k)| known > *k) {
                extends = Some((key.clone(), known));
            }
            if closest.as_ref().is_none_or(|(_, c)| common > *c) {
                closest = Some((key, common));
            }
        }
        if let Some((key, _)) = extends {
            return key;
        }
        match (closest, free) {
            // No branch of this key yet (or none of this dialect): the key itself.
            (None, Some(free)) => free,
            (Some((closest, common)), Some(free))
                if self.map[&closest].frozen.iter().any(|f| f.range.end > common) =>
            {
                let parent = &self.map[&closest];
                let seeded = Session {
                    dialect,
                    kind: parent.kind,
                    originals: parent.originals[..common].to_vec(),
                    frozen: parent.frozen.iter().filter(|f| f.range.end <= common).cloned().collect(),
                    last_used: parent.last_used,
                    bytes: 0,
                };
                self.map.insert(free.clone(), seeded);
                free
            }
            (Some((closest, _)), _) => closest,
            (None, None) => base.clone(),
        }
    }

    /// The sessions held, least recently used first, for saving the store.
    pub(super) fn by_age(&self) -> Vec<(&SessionKey, &Session)> {
        let mut all: Vec<_> = self.map.iter().collect();
        all.sort_by_key(|(_, s)| s.last_used);
        all
    }

    /// Puts back a saved session, as used at `used` (its saved turn; `None`: the most recently
    /// used). The caller has checked that the frozen ranges are sorted, disjoint and within the
    /// originals, and restores sessions oldest first.
    pub(super) fn restore(
        &mut self,
        key: SessionKey,
        dialect: Dialect,
        kind: ArrayKind,
        originals: Vec<Original>,
        frozen: Vec<Frozen>,
        used: Option<u64>,
    ) {
        self.tick = used.map_or(self.tick + 1, |used| used.max(self.tick));
        let mut session = Session { dialect, kind, originals, frozen, last_used: self.tick, bytes: 0 };
        session.recount();
        self.map.insert(key.clone(), session);
        self.evict_except(&key);
    }

    /// Lets the least recently used sessions other than `keep` go of their texts, then forgets
    /// them, until the bounds hold.
    fn evict_except(&mut self, keep: &SessionKey) {
        let mut bytes = self.bytes();
        if bytes > self.limits.max_bytes {
            let mut by_age: Vec<(u64, SessionKey)> = self
                .map
                .iter()
                .filter(|(k, s)| *k != keep && s.originals.iter().any(|o| o.text.is_some()))
                .map(|(k, s)| (s.last_used, k.clone()))
                .collect();
            by_age.sort_unstable();
            for (_, key) in by_age {
                if bytes <= self.limits.max_bytes {
                    break;
                }
                let session = self.map.get_mut(&key).expect("listed above");
                bytes -= session.bytes;
                session.let_go_of_texts();
                session.recount();
                bytes += session.bytes;
            }
        }
        while self.map.len() > self.limits.max_sessions || self.bytes() > self.limits.max_bytes {
            let oldest = self.map.iter().filter(|(k, _)| *k != keep).min_by_key(|(_, s)| s.last_used);
            let Some(oldest) = oldest.map(|(k, _)| k.clone()) else { break };
            self.map.remove(&oldest);
        }
    }
}

/// The body to forward for `request` with `frozen` spliced in: its text, the message array's
/// range in it, and how many condensations it replays. Without any, the client's body itself.
pub(super) fn splice<'a>(request: &Request<'a>, frozen: &[Frozen]) -> (Cow<'a, str>, Range<usize>, usize) {
    // An `input` string is one message, the current turn, which no condensation may cover.
    if frozen.is_empty() || request.kind == ArrayKind::String {
        return (Cow::Borrowed(request.body), request.array.clone(), 0);
    }
    let body = request.body;
    let mut out = String::with_capacity(body.len());
    out.push_str(&body[..request.array.start]);
    let start = out.len();
    out.push('[');
    let mut next = frozen.iter().peekable();
    let mut i = 0;
    while i < request.messages.len() {
        if i > 0 {
            out.push(',');
        }
        match next.next_if(|f| f.range.start == i) {
            Some(f) => {
                out.push_str(&f.replacement);
                i = f.range.end;
            }
            None => {
                out.push_str(request.messages[i].get());
                i += 1;
            }
        }
    }
    out.push(']');
    let end = out.len();
    out.push_str(&body[request.array.end..]);
    (Cow::Owned(out), start..end, frozen.len())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::fixtures::{self, ANTHROPIC_TURNS, CHAT_TURNS, RESPONSES_ITEMS};
    use super::*;

    fn array<'f>(f: &'f Forward<'_>) -> &'f str {
        &f.body[f.messages.clone()]
    }

    #[test]
    fn without_a_condensation_the_client_body_goes_out_unchanged() {
        let mut sessions = Sessions::default();
        for n in 1..=ANTHROPIC_TURNS.len() {
            let body = fixtures::anthropic(&ANTHROPIC_TURNS[..n]);
            let f = sessions.forward(Dialect::AnthropicMessages, body.as_bytes(), None).unwrap();
            assert!(matches!(f.body, Cow::Borrowed(_)));
            assert_eq!(f.body, body);
            let expected = if n == 1 { Continuity::New } else { Continuity::Extended { appended: 1 } };
            assert_eq!(f.continuity, expected, "request {n}");
        }
        assert_eq!(sessions.len(), 1);
        let key = fixtures::claude_key();
        assert_eq!(sessions.messages(&key), Some(ANTHROPIC_TURNS.len()));
    }

    #[test]
    fn a_frozen_condensation_is_spliced_in_and_everything_else_is_the_clients_bytes() {
        let mut sessions = Sessions::default();
        let body = fixtures::anthropic(&ANTHROPIC_TURNS[..7]);
        let key = sessions.forward(Dialect::AnthropicMessages, body.as_bytes(), None).unwrap().session;
        sessions.freeze(&key, 1..5, "Read parse.rs; the empty-string test failed.").unwrap();

        let body = fixtures::anthropic(&ANTHROPIC_TURNS);
        let f = sessions.forward(Dialect::AnthropicMessages, body.as_bytes(), None).unwrap();
        assert_eq!(f.replayed, 1);
        let request = Request::parse(Dialect::AnthropicMessages, body.as_bytes()).unwrap();
        assert_eq!(&f.body[..f.messages.start], &body[..request.array.start], "the head is the client's");
        assert_eq!(&f.body[f.messages.end..], &body[request.array.end..], "the tail is the client's");
        let replacement = &sessions.frozen(&key).unwrap()[0].replacement;
        let expected =
            [ANTHROPIC_TURNS[0], replacement, ANTHROPIC_TURNS[5], ANTHROPIC_TURNS[6], ANTHROPIC_TURNS[7]];
        assert_eq!(array(&f), format!("[{},{}]", expected.join(","), ANTHROPIC_TURNS[8]));
        let parsed: serde_json::Value = serde_json::from_str(&f.body).unwrap();
        assert_eq!(parsed["messages"].as_array().unwrap().len(), 6);
        assert!(
            !f.body.contains("EqQBCkgIBxABGAIiQL1c9Xk2mZ0tq3Y4nR8v"),
            "the condensed thinking is replaced"
        );
        assert!(f.body.contains(r#"caf\u00e9-compatible"#), "escapes kept as the client wrote them");
    }

    #[test]
    fn responses_and_chat_completions_splice_the_same_way() {
        let mut sessions = Sessions::default();
        let body = fixtures::responses(&RESPONSES_ITEMS[..7]);
        let key = sessions.forward(Dialect::Responses, body.as_bytes(), None).unwrap().session;
        sessions.freeze(&key, 1..5, "Ran make check; a header was missing.").unwrap();
        let body = fixtures::responses(&RESPONSES_ITEMS);
        let f = sessions.forward(Dialect::Responses, body.as_bytes(), None).unwrap();
        let replacement = &sessions.frozen(&key).unwrap()[0].replacement;
        let kept =
            [RESPONSES_ITEMS[0], replacement, RESPONSES_ITEMS[5], RESPONSES_ITEMS[6], RESPONSES_ITEMS[7]];
        assert_eq!(array(&f), format!("[{}]", kept.join(",")));
        assert!(f.body.ends_with(r#""prompt_cache_key":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}"#));
        assert!(f.body.contains("gAAAAABo1X2wENCRYPTED-2=="), "the current turn's reasoning is kept");

        let body = fixtures::chat(&CHAT_TURNS[..7]);
        let key = sessions.forward(Dialect::ChatCompletions, body.as_bytes(), None).unwrap().session;
        sessions.freeze(&key, 2..5, "Renamed foo to bar.").unwrap();
        let body = fixtures::chat(&CHAT_TURNS);
        let f = sessions.forward(Dialect::ChatCompletions, body.as_bytes(), None).unwrap();
        assert!(array(&f).starts_with(&format!("[{},{},{{\"role\":\"user\"", CHAT_TURNS[0], CHAT_TURNS[1])));
        assert!(array(&f).ends_with(&format!("{},{},{}]", CHAT_TURNS[5], CHAT_TURNS[6], CHAT_TURNS[7])));
        assert_eq!(sessions.len(), 2);
    }

    #[test]
    fn a_rewind_past_a_condensation_is_a_branch_of_its_own_and_the_old_one_stays() {
        let mut sessions = Sessions::default();
        let body = fixtures::anthropic(&ANTHROPIC_TURNS);
        let key = sessions.forward(Dialect::AnthropicMessages, body.as_bytes(), None).unwrap().session;
        sessions.freeze(&key, 1..3, "Read parse.rs.").unwrap();
        sessions.freeze(&key, 3..5, "The empty-string test failed.").unwrap();
        // The user rewinds to before the second pair and asks something else.
        let edited = r#"{"role":"user","content":"Skip the tests; just explain the bug."}"#;
        let body = fixtures::anthropic(&[
            ANTHROPIC_TURNS[0],
            ANTHROPIC_TURNS[1],
            ANTHROPIC_TURNS[2],
            ANTHROPIC_TURNS[3],
            edited,
        ]);
        let f = sessions.forward(Dialect::AnthropicMessages, body.as_bytes(), None).unwrap();
        // A branch, started with the 4 messages in common and the condensation inside them.
        assert_eq!(f.session, key.branch(1));
        assert_eq!(f.continuity, Continuity::Extended { appended: 1 });
        assert_eq!(f.replayed, 1);
        let first = &sessions.frozen(&f.session).unwrap()[0];
        assert_eq!(first.range, 1..3);
        assert_eq!(sessions.messages(&f.session), Some(5));
        // The first conversation keeps both of its condensations, and goes on replaying them.
        assert_eq!(sessions.frozen(&key).unwrap().len(), 2);
        let whole = fixtures::anthropic(&ANTHROPIC_TURNS);
        let again = sessions.forward(Dialect::AnthropicMessages, whole.as_bytes(), None).unwrap();
        assert_eq!((again.session, again.replayed), (key, 2));
        // And the branch its one.
        let f = sessions.forward(Dialect::AnthropicMessages, body.as_bytes(), None).unwrap();
        assert_eq!((f.session.to_string().ends_with("~1"), f.replayed), (true, 1));
    }

    #[test]
    fn two_conversations_with_one_opening_each_replay_their_own_condensation_and_branches_are_bounded() {
        let mut sessions = Sessions::default();
        let shared = &ANTHROPIC_TURNS[..3];
        let a = |n: usize| {
            let mut turns: Vec<String> = shared.iter().map(|t| t.to_string()).collect();
            turns.extend(
                (0..n).map(|i| format!(r#"{{"role":"{}","content":"A-{i}"}}"#, ["user", "assistant"][i % 2])),
            );
            fixtures::anthropic(&turns.iter().map(String::as_str).collect::<Vec<_>>())
        };
        let b = |n: usize| a(n).replace("\"A-", "\"B-");
        let key = sessions.forward(Dialect::AnthropicMessages, a(6).as_bytes(), None).unwrap().session;
        sessions.freeze(&key, 3..7, "A's middle.").unwrap();
        // B shares the opening; cutting A back would forget A's condensation: B gets a branch.
        let b6 = b(6);
        let fb = sessions.forward(Dialect::AnthropicMessages, b6.as_bytes(), None).unwrap();
        assert_eq!(fb.session, key.branch(1));
        sessions.freeze(&fb.session, 3..7, "B's middle.").unwrap();
        for n in [7, 8, 9] {
            let (an, bn) = (a(n), b(n));
            let fa = sessions.forward(Dialect::AnthropicMessages, an.as_bytes(), None).unwrap();
            assert_eq!((&fa.session, fa.replayed), (&key, 1), "A replays A's");
            assert!(fa.body.contains("A's middle.") && !fa.body.contains("B's middle."));
            let fb = sessions.forward(Dialect::AnthropicMessages, bn.as_bytes(), None).unwrap();
            assert_eq!((&fb.session, fb.replayed), (&key.branch(1), 1), "B replays B's");
            assert!(fb.body.contains("B's middle."));
        }
        // Conversations past the bound of branches cut the closest back rather than grow.
        for c in ["c", "d", "e", "f"] {
            let body = a(6).replace("\"A-", &format!("\"{c}-"));
            let f = sessions.forward(Dialect::AnthropicMessages, body.as_bytes(), None).unwrap();
            if let Ok(()) = sessions.freeze(&f.session, 3..7, "middle") {}
        }
        assert!(sessions.len() <= MAX_BRANCHES as usize, "{} sessions", sessions.len());
    }

    #[test]
    fn a_moving_cache_breakpoint_keeps_the_condensations_before_it() {
        let mut sessions = Sessions::default();
        let body = fixtures::anthropic(&ANTHROPIC_TURNS[..7]);
        let key = sessions.forward(Dialect::AnthropicMessages, body.as_bytes(), None).unwrap().session;
        sessions.freeze(&key, 1..5, "Read parse.rs; the empty-string test failed.").unwrap();
        // Claude Code moves `cache_control` from message 6 to the newest message.
        let moved = ANTHROPIC_TURNS[6].replace(r#","cache_control":{"type":"ephemeral"}"#, "");
        let mut turns = ANTHROPIC_TURNS.to_vec();
        turns[6] = &moved;
        let body = fixtures::anthropic(&turns);
        let f = sessions.forward(Dialect::AnthropicMessages, body.as_bytes(), None).unwrap();
        assert_eq!(f.continuity, Continuity::Branched { common: 6, dropped: 0 });
        assert_eq!(f.replayed, 1);
        assert!(array(&f).contains(&moved));
    }

    #[test]
    fn the_store_forgets_the_least_recently_used_sessions_first() {
        let mut sessions =
            Sessions::new(Limits { max_sessions: 2, max_bytes: usize::MAX, ..Limits::default() });
        let body = fixtures::chat(&CHAT_TURNS[..3]);
        for name in ["a", "b", "a", "c"] {
            sessions.forward(Dialect::ChatCompletions, body.as_bytes(), Some(name)).unwrap();
        }
        assert_eq!(sessions.len(), 2);
        assert!(sessions.messages(&SessionKey::Header("b".into())).is_none(), "b was the least recent");
        assert!(sessions.messages(&SessionKey::Header("a".into())).is_some());

        // Over the bytes, the older sessions first let go of their texts, and are kept.
        let body = fixtures::chat(&CHAT_TURNS[..7]);
        // Room for one session's texts and the others' hashes.
        let bound = body.len() + 400;
        let mut sessions = Sessions::new(Limits { max_sessions: 10, max_bytes: bound, ..Limits::default() });
        let key = sessions.forward(Dialect::ChatCompletions, body.as_bytes(), Some("a")).unwrap().session;
        sessions.freeze(&key, 2..5, "Read it.").unwrap();
        for name in ["b", "c"] {
            sessions.forward(Dialect::ChatCompletions, body.as_bytes(), Some(name)).unwrap();
        }
        assert_eq!(sessions.len(), 3, "all three are kept");
        assert!(sessions.bytes() <= bound);
        let hollow = |s: &Sessions, n: &str| s.map[&SessionKey::Header(n.into())].is_hollow();
        assert!(hollow(&sessions, "a") && hollow(&sessions, "b") && !hollow(&sessions, "c"));
        // A hollow session still replays its condensation, and takes its texts back.
        let again = fixtures::chat(&CHAT_TURNS[..8]);
        let f = sessions.forward(Dialect::ChatCompletions, again.as_bytes(), Some("a")).unwrap();
        assert_eq!((f.continuity, f.replayed), (Continuity::Extended { appended: 1 }, 1));
        assert!(array(&f).contains("Read it."));
        assert!(!hollow(&sessions, "a") && hollow(&sessions, "c"), "the session in use is whole");

        // Beyond what even their hashes fit, they are forgotten; the session in use stays.
        let mut sessions = Sessions::new(Limits { max_sessions: 10, max_bytes: 40, ..Limits::default() });
        for name in ["a", "b", "c"] {
            sessions.forward(Dialect::ChatCompletions, body.as_bytes(), Some(name)).unwrap();
        }
        assert_eq!(sessions.len(), 1);
        assert!(sessions.messages(&SessionKey::Header("c".into())).is_some(), "the session in use stays");
    }

    #[test]
    fn the_same_key_in_another_dialect_is_a_session_of_its_own() {
        let mut sessions = Sessions::default();
        let chat = fixtures::chat(&CHAT_TURNS);
        let key = sessions.forward(Dialect::ChatCompletions, chat.as_bytes(), Some("s")).unwrap().session;
        sessions.freeze(&key, 2..5, "Renamed.").unwrap();
        let responses = fixtures::responses(&RESPONSES_ITEMS);
        let f = sessions.forward(Dialect::Responses, responses.as_bytes(), Some("s")).unwrap();
        assert_eq!(f.continuity, Continuity::New);
        assert_eq!(f.body, responses);
        // A branch of its own: the first session keeps its condensation.
        assert_eq!(f.session, key.branch(1));
        assert_eq!(sessions.frozen(&key).map(<[Frozen]>::len), Some(1));
    }

    /// A generated Chat Completions conversation: a system message, then user and assistant
    /// turns whose texts hold escapes and non-ASCII, some assistant turns calling a tool.
    fn conversation(texts: &[(String, bool)]) -> Vec<String> {
        let mut out = vec![r#"{"role":"system","content":"sys"}"#.to_owned()];
        for (i, (text, tool)) in texts.iter().enumerate() {
            let text = serde_json::to_string(text).unwrap();
            out.push(format!(r#"{{"role":"user","content":{text}}}"#));
            if *tool {
                out.push(format!(
                    r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"c{i}","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}]}}"#
                ));
                out.push(format!(r#"{{"role":"tool","tool_call_id":"c{i}","content":{text}}}"#));
            }
            out.push(format!(r#"{{"role":"assistant","content":{text}}}"#));
        }
        out
    }

    proptest! {
        /// Between two condensations each forwarded message array extends the previous one byte
        /// for byte; with none frozen, the forwarded body is the client's.
        #[test]
        fn forwarded_requests_extend_each_other_between_condensations(
            texts in proptest::collection::vec(("[a-z \\n\"\\\\é✓]{0,12}", any::<bool>()), 2..12),
            freezes in proptest::collection::vec((any::<u8>(), any::<u8>()), 1..4),
        ) {
            let messages = conversation(&texts);
            let mut sessions = Sessions::new(Limits::default());
            let mut previous: Option<String> = None;
            let mut any_frozen = false;
            for n in 2..=messages.len() {
                let refs: Vec<&str> = messages[..n].iter().map(String::as_str).collect();
                let body = fixtures::chat(&refs);
                let f = sessions.forward(Dialect::ChatCompletions, body.as_bytes(), None).unwrap();
                if !any_frozen {
                    prop_assert_eq!(&f.body, &body);
                }
                prop_assert!(serde_json::from_str::<serde_json::Value>(&f.body).is_ok(), "{}", f.body);
                let now = array(&f).to_owned();
                if let Some(previous) = &previous {
                    prop_assert!(now.starts_with(&previous[..previous.len() - 1]), "{} then {}", previous, now);
                }
                previous = Some(now);
                // Now and then, freeze a range; a refused one changes nothing.
                if n % 3 == 0 {
                    let (a, b) = freezes[(n / 3) % freezes.len()];
                    let (start, end) = (1 + a as usize % n, 1 + b as usize % n);
                    let (start, end) = (start.min(end), start.max(end) + 1);
                    if sessions.freeze(&f.session, start..end, "summary").is_ok() {
                        any_frozen = true;
                        previous = None;
                    }
                }
            }
        }
    }
}
