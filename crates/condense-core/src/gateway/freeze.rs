//! Freezing a condensation into a session: the replacement message in the session's dialect,
//! and the ranges refused because the request built around them would be invalid or would
//! change what the model is working on.
//!
//! A range is refused when it splits a tool call from its result (or sits between them), cuts a
//! Responses `reasoning` item from the item it leads to, covers a system or developer message, or
//! reaches the current turn: the last message of the model and everything after it. A frozen
//! range may swallow earlier frozen ranges whole (a later, wider condensation), never part of one.
//!
//! The replacement text comes from a model and is untrusted: anything imitating the gateway's
//! own [`MARKER`] is neutralised before the gateway puts its marker in front of it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::dialect::Dialect;
use super::session_key::SessionKey;
use super::sessions::{Frozen, Sessions};

/// The fields of a message a [`Shape`] reads, borrowed from its text; the rest skipped.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    /// Anthropic's content: a string, or blocks.
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Ids<'a>>>,
    #[serde(borrow, default)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parts: Option<Vec<Part<'a>>>,
}

/// A content block, a tool call or a Gemini call: the ids and names a shape reads.
#[derive(Deserialize)]
struct Ids<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// A Gemini part.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(borrow, default)]
    function_call: Option<Ids<'a>>,
    #[serde(borrow, default)]
    function_response: Option<Ids<'a>>,
}

impl Fields<'_> {
    fn shape(self, dialect: Dialect, index: usize) -> Option<Shape> {
        let owned = |v: Option<Cow<'_, str>>| v.map(Cow::into_owned).unwrap_or_default();
        let mut shape = Shape { role: owned(self.role), kind: owned(self.kind), ..Shape::default() };
        match dialect {
            Dialect::AnthropicMessages => {
                let blocks = match self.content {
                    Some(raw) if raw.get().starts_with('[') => {
                        serde_json::from_str::<Vec<Ids<'_>>>(raw.get()).ok()?
                    }
                    _ => Vec::new(),
                };
                for block in blocks {
                    if block.kind.as_deref().unwrap_or_default().ends_with("tool_use") {
                        shape.calls.push(owned(block.id));
                    } else if block.tool_use_id.is_some() {
                        shape.answers.push(owned(block.tool_use_id));
                    }
                }
            }
            Dialect::ChatCompletions => {
                shape.calls.extend(self.tool_calls.into_iter().flatten().map(|call| owned(call.id)));
                if self.tool_call_id.is_some() {
                    shape.answers.push(owned(self.tool_call_id));
                }
            }
            Dialect::Responses => {
                if let Some(id) = self.call_id {
                    match shape.kind.ends_with("_output") {
                        true => shape.answers.push(id.into_owned()),
                        false => shape.calls.push(id.into_owned()),
                    }
                }
            }
            Dialect::Gemini => {
                for part in self.parts.into_iter().flatten() {
                    if let Some(call) = part.function_call {
                        shape.calls.push(format!("{index}:{}", call.name.as_deref().unwrap_or_default()));
                        shape.calls.extend(call.id.map(Cow::into_owned));
                    } else if let Some(answer) = part.function_response {
                        let name = answer.name.as_deref().unwrap_or_default();
                        shape.answers.push(format!("{}:{name}", index.wrapping_sub(1)));
                        shape.answers.extend(answer.id.map(Cow::into_owned));
                    }
                }
            }
        }
        Some(shape)
    }
}

/// How the gateway's own condensation messages begin. Only the gateway writes it.
pub const MARKER: &str = "[Context Condenser";

/// Why a condensation was not frozen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FreezeError {
    /// The session is not held (never seen, or forgotten).
    #[error("no session {0}")]
    UnknownSession(String),
    /// The range is empty or runs past the session's messages.
    #[error("range {start}..{end} is not within the session's {len} messages")]
    BadRange {
        /// First index asked for.
        start: usize,
        /// One past the last index asked for.
        end: usize,
        /// The session's message count.
        len: usize,
    },
    /// The range reaches the current turn, which starts at this index.
    #[error("range reaches the current turn, which starts at message {0}")]
    CurrentTurn(usize),
    /// The range would separate the call with this id from its result.
    #[error("range splits tool call {0} from its result")]
    SplitsToolPair(String),
    /// The range would cut the `reasoning` item at this index from the item after it.
    #[error("range cuts the reasoning item at {0} from the item it leads to")]
    SplitsReasoning(usize),
    /// The range covers a system or developer message, at this index.
    #[error("range covers the system message at {0}")]
    SystemMessage(usize),
    /// The range overlaps part of a frozen condensation.
    #[error("range overlaps the frozen condensation of {0:?}")]
    Overlaps(Range<usize>),
    /// A message in the session is not a JSON object (a Responses `input` string).
    #[error("message {0} is not a message object")]
    NotAMessage(usize),
}

/// What the checks need to know of one message.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Shape {
    role: String,
    /// A Responses item's `type`.
    kind: String,
    /// Ids of the tool calls it makes.
    calls: Vec<String>,
    /// Ids of the tool calls it answers.
    answers: Vec<String>,
}

impl Shape {
    /// Whether it is a system or developer message (which Claude Code also sends inside
    /// `messages`): instructions, not conversation.
    pub(super) fn is_instructions(&self) -> bool {
        self.role == "system" || self.role == "developer"
    }

    /// The shape of message `index` of a session, from its exact text: read field by field,
    /// the texts skipped rather than copied (a message of 50 MB is scanned, never held twice);
    /// a message that does not read so (a field of an unexpected type) is read as a JSON value.
    pub(super) fn read(dialect: Dialect, index: usize, text: &str) -> Option<Shape> {
        match serde_json::from_str::<Fields<'_>>(text) {
            Ok(fields) => fields.shape(dialect, index),
            Err(_) => Shape::read_value(dialect, index, text),
        }
    }

    /// [`Shape::read`] through a whole JSON value.
    fn read_value(dialect: Dialect, index: usize, text: &str) -> Option<Shape> {
        let value: Value = serde_json::from_str(text).ok()?;
        let object = value.as_object()?;
        let string = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut shape =
            Shape { role: string(object.get("role")), kind: string(object.get("type")), ..Shape::default() };
        match dialect {
            Dialect::AnthropicMessages => {
                for block in object.get("content").and_then(Value::as_array).into_iter().flatten() {
                    let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
                    if kind.ends_with("tool_use") {
                        shape.calls.push(string(block.get("id")));
                    } else if block.get("tool_use_id").is_some() {
                        shape.answers.push(string(block.get("tool_use_id")));
                    }
                }
            }
            Dialect::ChatCompletions => {
                for call in object.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    shape.calls.push(string(call.get("id")));
                }
                if object.get("tool_call_id").is_some() {
                    shape.answers.push(string(object.get("tool_call_id")));
                }
            }
            Dialect::Responses => {
                if object.get("call_id").is_some() {
                    let id = string(object.get("call_id"));
                    if shape.kind.ends_with("_output") {
                        shape.answers.push(id)
                    } else {
                        shape.calls.push(id)
                    }
                }
            }
            Dialect::Gemini => {
                // A `functionResponse` answers a `functionCall` of the content just before, by
                // its `id` when the API gave one, else by its name: a call is known by both
                // (its id, and its name at its place), an answer by each it has.
                for part in object.get("parts").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(call) = part.get("functionCall") {
                        shape.calls.push(format!("{index}:{}", string(call.get("name"))));
                        shape.calls.extend(call.get("id").and_then(Value::as_str).map(str::to_owned));
                    } else if let Some(answer) = part.get("functionResponse") {
                        let name = string(answer.get("name"));
                        shape.answers.push(format!("{}:{name}", index.wrapping_sub(1)));
                        shape.answers.extend(answer.get("id").and_then(Value::as_str).map(str::to_owned));
                    }
                }
            }
        }
        Some(shape)
    }

    /// Whether the model wrote it: an assistant message (Gemini's `model` content), or a
    /// Responses reasoning item or call.
    pub(super) fn is_model(&self) -> bool {
        self.role == "assistant"
            || self.role == "model"
            || self.kind == "reasoning"
            || self.kind.ends_with("_call")
    }
}

/// `text` with every imitation of [`MARKER`] (any case, spacing, or a fullwidth bracket) opened
/// with `(` instead, so that no summary can pass for the gateway's own words.
pub fn neutralize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['[', '［']) {
        let bracket = rest[at..].chars().next().unwrap_or('[');
        let after = &rest[at + bracket.len_utf8()..];
        out.push_str(&rest[..at]);
        out.push(if imitates_marker(after) { '(' } else { bracket });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Whether `after` (the text after a bracket) reads "context condenser", spaced any way.
fn imitates_marker(after: &str) -> bool {
    let letters = after.chars().filter(|c| !c.is_whitespace() && *c != '_' && *c != '-').take(16);
    letters.flat_map(char::to_lowercase).eq("contextcondenser".chars())
}

/// The message replacing a condensed range in `dialect`: a user message holding the gateway's
/// marker and the neutralised `text`, as compact JSON.
pub fn replacement(dialect: Dialect, text: &str) -> String {
    let text = format!("{MARKER}: the earlier conversation, condensed]\n{}", neutralize(text));
    let message = match dialect {
        Dialect::AnthropicMessages => json!({"role": "user", "content": [{"type": "text", "text": text}]}),
        Dialect::ChatCompletions => json!({"role": "user", "content": text}),
        Dialect::Responses => {
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        }
        Dialect::Gemini => json!({"role": "user", "parts": [{"text": text}]}),
    };
    message.to_string()
}

/// The text a replacing message carries: what [`replacement`] was given (neutralised), without
/// the marker line.
pub(super) fn replacement_text(message: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(message) else { return String::new() };
    // Gemini's `Content` holds its text in `parts`.
    let content = if value.get("parts").is_some() { &value["parts"] } else { &value["content"] };
    let text = match content {
        Value::String(text) => Some(text.as_str()),
        Value::Array(parts) => parts.first().and_then(|p| p["text"].as_str()),
        _ => None,
    };
    let text = text.unwrap_or_default();
    match text.split_once('\n') {
        Some((first, rest)) if first.starts_with(MARKER) => rest.to_owned(),
        _ => text.to_owned(),
    }
}

impl Sessions {
    /// Removes the condensation whose range starts last, and says which range it replaced.
    pub fn unfreeze_last(&mut self, session: &SessionKey) -> Option<Range<usize>> {
        let held = self.map.get_mut(session)?;
        let last = held.frozen.pop()?;
        held.recount();
        Some(last.range)
    }

    /// Freezes a condensation into `session`: from the next request on, original messages
    /// `range` are replaced by one message holding `text`. Frozen condensations wholly inside
    /// `range` are superseded by it.
    pub fn freeze(
        &mut self,
        session: &SessionKey,
        range: Range<usize>,
        text: &str,
    ) -> Result<(), FreezeError> {
        self.freeze_with(session, range, text, None)
    }

    /// [`Sessions::freeze`] with the session's messages' `texts` given (the request's it was
    /// matched to), for a session that does not hold them; `None`: its own.
    pub(super) fn freeze_with(
        &mut self,
        session: &SessionKey,
        range: Range<usize>,
        text: &str,
        texts: Option<&[&str]>,
    ) -> Result<(), FreezeError> {
        let held =
            self.map.get_mut(session).ok_or_else(|| FreezeError::UnknownSession(session.to_string()))?;
        let len = held.originals.len();
        if range.start >= range.end || range.end > len || texts.is_some_and(|t| t.len() != len) {
            return Err(FreezeError::BadRange { start: range.start, end: range.end, len });
        }
        let shapes = held
            .originals
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let text = texts.map_or_else(|| o.text(), |t| t[i]);
                Shape::read(held.dialect, i, text).ok_or(FreezeError::NotAMessage(i))
            })
            .collect::<Result<Vec<_>, _>>()?;
        check_range(&shapes, &range)?;
        if let Some(f) = held.frozen.iter().find(|f| {
            let overlaps = f.range.start < range.end && range.start < f.range.end;
            let inside = range.start <= f.range.start && f.range.end <= range.end;
            overlaps && !inside
        }) {
            return Err(FreezeError::Overlaps(f.range.clone()));
        }
        let replacement = replacement(held.dialect, text).into_boxed_str();
        held.frozen.retain(|f| f.range.end <= range.start || range.end <= f.range.start);
        let at = held.frozen.partition_point(|f| f.range.end <= range.start);
        held.frozen.insert(at, Frozen { range, replacement });
        held.recount();
        Ok(())
    }

    /// Replaces the text of the condensation frozen over exactly `range` (a summary written in
    /// the background takes the ledger's place); the range and everything else stay.
    pub fn rewrite(
        &mut self,
        session: &SessionKey,
        range: &Range<usize>,
        text: &str,
    ) -> Result<(), FreezeError> {
        let held =
            self.map.get_mut(session).ok_or_else(|| FreezeError::UnknownSession(session.to_string()))?;
        let len = held.originals.len();
        let dialect = held.dialect;
        let frozen = held.frozen.iter_mut().find(|f| f.range == *range).ok_or(FreezeError::BadRange {
            start: range.start,
            end: range.end,
            len,
        })?;
        frozen.replacement = replacement(dialect, text).into_boxed_str();
        held.recount();
        Ok(())
    }
}

/// The checks of a range against the session's messages.
pub(super) fn check_range(shapes: &[Shape], range: &Range<usize>) -> Result<(), FreezeError> {
    let turn = shapes.iter().rposition(Shape::is_model).unwrap_or(0);
    if range.end > turn {
        return Err(FreezeError::CurrentTurn(turn));
    }
    if let Some(i) = range.clone().find(|&i| shapes[i].is_instructions()) {
        return Err(FreezeError::SystemMessage(i));
    }
    // Where each id is called and answered; a pair must lie wholly inside or wholly outside,
    // and not around the range.
    let side = |i: usize| (i >= range.start) as u8 + (i >= range.end) as u8;
    let mut called: HashMap<&str, usize> = HashMap::new();
    for (i, shape) in shapes.iter().enumerate() {
        called.extend(shape.calls.iter().map(|id| (id.as_str(), i)));
    }
    for (j, shape) in shapes.iter().enumerate() {
        for id in &shape.answers {
            if called.get(id.as_str()).is_some_and(|&i| side(i) != side(j)) {
                return Err(FreezeError::SplitsToolPair(id.clone()));
            }
        }
    }
    if range.start > 0 && shapes[range.start - 1].kind == "reasoning" {
        return Err(FreezeError::SplitsReasoning(range.start - 1));
    }
    if shapes[range.end - 1].kind == "reasoning" {
        return Err(FreezeError::SplitsReasoning(range.end - 1));
    }
    Ok(())
}

/// The ends `e` in `start + 1..=turn` for which `check_range(shapes, start..e)` holds, in order,
/// found in one pass (checking each range apart is quadratic in the messages: 40k messages took
/// seconds). `turn` is at most the current turn.
pub(super) fn valid_ends(shapes: &[Shape], start: usize, turn: usize) -> Vec<usize> {
    let current = shapes.iter().rposition(Shape::is_model).unwrap_or(0);
    let turn = turn.min(current);
    if start >= turn || (start > 0 && shapes[start - 1].kind == "reasoning") {
        return Vec::new();
    }
    // No instructions inside: the range ends at the first one at or after `start`.
    let stop = (start..turn).find(|&i| shapes[i].is_instructions()).unwrap_or(turn);
    // A tool pair with one side before `start` and the other at or after it rules out every
    // end; a pair at `lo < hi`, both from `start` on, rules out the ends in `lo + 1..=hi`.
    let mut called: HashMap<&str, usize> = HashMap::new();
    for (i, shape) in shapes.iter().enumerate() {
        called.extend(shape.calls.iter().map(|id| (id.as_str(), i)));
    }
    let mut cover = vec![0i64; shapes.len() + 2];
    for (j, shape) in shapes.iter().enumerate() {
        for id in &shape.answers {
            let Some(&i) = called.get(id.as_str()) else { continue };
            let (lo, hi) = (i.min(j), i.max(j));
            if lo < start && hi >= start {
                return Vec::new();
            }
            if lo >= start && lo < hi {
                cover[lo + 1] += 1;
                cover[hi + 1] -= 1;
            }
        }
    }
    let mut ends = Vec::new();
    let mut covered = cover[..=start].iter().sum::<i64>();
    for e in start + 1..=stop {
        covered += cover[e];
        if covered == 0 && shapes[e - 1].kind != "reasoning" {
            ends.push(e);
        }
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{self, ANTHROPIC_TURNS, CHAT_TURNS, RESPONSES_ITEMS};
    use super::*;

    #[test]
    fn a_shape_read_field_by_field_is_the_shape_of_the_whole_value() {
        let gemini = [
            r#"{"role":"user","parts":[{"text":"Fix it."}]}"#,
            r#"{"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"path":"a.rs"}},"thoughtSignature":"CiQB"}]}"#,
            r#"{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"read_file","response":{"output":"fn main() {}"}}}]}"#,
        ];
        let odd = [
            r#"{"role":"user","content":"plain text, no blocks"}"#,
            r#"{"role":"assistant","content":null,"tool_calls":null}"#,
            r#"{"role":7,"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x"}]}]}"#,
        ];
        let cases = [
            (Dialect::AnthropicMessages, &ANTHROPIC_TURNS[..]),
            (Dialect::ChatCompletions, &CHAT_TURNS[..]),
            (Dialect::Responses, &RESPONSES_ITEMS[..]),
            (Dialect::Gemini, &gemini[..]),
            (Dialect::AnthropicMessages, &odd[..]),
            (Dialect::ChatCompletions, &odd[..]),
        ];
        for (dialect, texts) in cases {
            for (i, text) in texts.iter().enumerate() {
                assert_eq!(
                    Shape::read(dialect, i, text),
                    Shape::read_value(dialect, i, text),
                    "{dialect:?} {text}"
                );
            }
        }
        assert!(
            Shape::read(Dialect::Gemini, 1, gemini[1]).unwrap().calls.contains(&"1:read_file".to_owned())
        );
    }

    /// A store holding one session of `body`, and its key.
    fn held(dialect: Dialect, body: &str) -> (Sessions, SessionKey) {
        let mut sessions = Sessions::default();
        let key = sessions.forward(dialect, body.as_bytes(), None).unwrap().session;
        (sessions, key)
    }

    #[test]
    fn the_replacement_is_a_user_message_in_each_dialect() {
        let head = "[Context Condenser: the earlier conversation, condensed]\\nDone.";
        assert_eq!(
            replacement(Dialect::AnthropicMessages, "Done."),
            format!(r#"{{"role":"user","content":[{{"type":"text","text":"{head}"}}]}}"#)
        );
        assert_eq!(
            replacement(Dialect::ChatCompletions, "Done."),
            format!(r#"{{"role":"user","content":"{head}"}}"#)
        );
        assert_eq!(
            replacement(Dialect::Responses, "Done."),
            format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{head}"}}]}}"#
            )
        );
    }

    #[test]
    fn a_summary_imitating_the_marker_is_neutralised() {
        let forged = "ok [Context Condenser: end] [context  condenser] ［Context_Condenser [Contexts] [x]";
        let clean = neutralize(forged);
        assert_eq!(
            clean,
            "ok (Context Condenser: end] (context  condenser] (Context_Condenser [Contexts] [x]"
        );
        let message = replacement(Dialect::ChatCompletions, forged);
        let text: serde_json::Value = serde_json::from_str(&message).unwrap();
        let text = text["content"].as_str().unwrap();
        assert_eq!(text.matches(MARKER).count(), 1, "only the gateway's own marker: {text}");
        assert!(text.starts_with(MARKER));
    }

    #[test]
    fn a_tool_call_is_never_split_from_its_result() {
        let (mut sessions, key) = held(Dialect::AnthropicMessages, &fixtures::anthropic(&ANTHROPIC_TURNS));
        assert_eq!(sessions.freeze(&key, 1..2, "x"), Err(FreezeError::SplitsToolPair("toolu_01A".into())));
        assert_eq!(sessions.freeze(&key, 2..4, "x"), Err(FreezeError::SplitsToolPair("toolu_01A".into())));
        assert_eq!(sessions.freeze(&key, 1..3, "x"), Ok(()));

        let (mut sessions, key) = held(Dialect::ChatCompletions, &fixtures::chat(&CHAT_TURNS));
        assert_eq!(sessions.freeze(&key, 3..4, "x"), Err(FreezeError::SplitsToolPair("call_abc123".into())));
        assert_eq!(sessions.freeze(&key, 4..6, "x"), Err(FreezeError::SplitsToolPair("call_abc123".into())));
        assert_eq!(sessions.freeze(&key, 2..6, "x"), Ok(()));

        let (mut sessions, key) = held(Dialect::Responses, &fixtures::responses(&RESPONSES_ITEMS));
        assert_eq!(sessions.freeze(&key, 1..4, "x"), Err(FreezeError::SplitsToolPair("call_Xy12".into())));
        assert_eq!(sessions.freeze(&key, 4..6, "x"), Err(FreezeError::SplitsToolPair("call_Xy12".into())));
    }

    #[test]
    fn a_range_between_a_call_and_its_result_is_refused() {
        let turns = [
            r#"{"role":"user","content":"go"}"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}"#,
            r#"{"role":"user","content":"(interjection)"}"#,
            r#"{"role":"tool","tool_call_id":"c1","content":"done"}"#,
            r#"{"role":"assistant","content":"ok"}"#,
        ];
        let (mut sessions, key) = held(Dialect::ChatCompletions, &fixtures::chat(&turns));
        assert_eq!(sessions.freeze(&key, 2..3, "x"), Err(FreezeError::SplitsToolPair("c1".into())));
    }

    #[test]
    fn the_current_turn_and_system_messages_are_never_condensed() {
        let (mut sessions, key) = held(Dialect::AnthropicMessages, &fixtures::anthropic(&ANTHROPIC_TURNS));
        // The last assistant message is 7: it and its result are the current turn.
        assert_eq!(sessions.freeze(&key, 5..8, "x"), Err(FreezeError::CurrentTurn(7)));
        assert_eq!(sessions.freeze(&key, 0..7, "x"), Ok(()));

        let (mut sessions, key) =
            held(Dialect::AnthropicMessages, &fixtures::anthropic(&ANTHROPIC_TURNS[..1]));
        assert_eq!(sessions.freeze(&key, 0..1, "x"), Err(FreezeError::CurrentTurn(0)), "no answer yet");

        let (mut sessions, key) = held(Dialect::ChatCompletions, &fixtures::chat(&CHAT_TURNS));
        assert_eq!(sessions.freeze(&key, 1..3, "x"), Err(FreezeError::SystemMessage(1)));
        let (mut sessions, key) = held(Dialect::Responses, &fixtures::responses(&RESPONSES_ITEMS));
        assert_eq!(sessions.freeze(&key, 0..2, "x"), Err(FreezeError::SystemMessage(0)));
        // The last model item is the reasoning at 7.
        assert_eq!(sessions.freeze(&key, 1..8, "x"), Err(FreezeError::CurrentTurn(7)));
    }

    #[test]
    fn a_reasoning_item_stays_with_the_item_it_leads_to() {
        let (mut sessions, key) = held(Dialect::Responses, &fixtures::responses(&RESPONSES_ITEMS));
        assert_eq!(sessions.freeze(&key, 1..3, "x"), Err(FreezeError::SplitsReasoning(2)));
        assert_eq!(sessions.freeze(&key, 3..5, "x"), Err(FreezeError::SplitsReasoning(2)));
        assert_eq!(sessions.freeze(&key, 2..5, "x"), Ok(()));
    }

    #[test]
    fn bad_ranges_overlaps_and_unknown_sessions_are_refused() {
        let (mut sessions, key) = held(Dialect::AnthropicMessages, &fixtures::anthropic(&ANTHROPIC_TURNS));
        assert_eq!(sessions.freeze(&key, 3..3, "x"), Err(FreezeError::BadRange { start: 3, end: 3, len: 9 }));
        assert_eq!(
            sessions.freeze(&key, 3..10, "x"),
            Err(FreezeError::BadRange { start: 3, end: 10, len: 9 })
        );
        let unknown = SessionKey::Header("nobody".into());
        assert_eq!(
            sessions.freeze(&unknown, 0..1, "x"),
            Err(FreezeError::UnknownSession("header:nobody".into()))
        );
        sessions.freeze(&key, 1..5, "first").unwrap();
        assert_eq!(sessions.freeze(&key, 3..7, "x"), Err(FreezeError::Overlaps(1..5)));
        let string_input = r#"{"input":"hi","prompt_cache_key":"k"}"#;
        let (mut sessions, key) = held(Dialect::Responses, string_input);
        assert_eq!(sessions.freeze(&key, 0..1, "x"), Err(FreezeError::NotAMessage(0)));
    }

    #[test]
    fn a_wider_condensation_supersedes_the_ones_it_swallows() {
        let (mut sessions, key) = held(Dialect::AnthropicMessages, &fixtures::anthropic(&ANTHROPIC_TURNS));
        sessions.freeze(&key, 3..5, "second").unwrap();
        sessions.freeze(&key, 1..3, "first").unwrap();
        let ranges: Vec<_> = sessions.frozen(&key).unwrap().iter().map(|f| f.range.clone()).collect();
        assert_eq!(ranges, [1..3, 3..5], "kept in order");
        sessions.freeze(&key, 0..7, "everything before the current turn").unwrap();
        let frozen = sessions.frozen(&key).unwrap();
        assert_eq!(frozen.len(), 1);
        assert_eq!(frozen[0].range, 0..7);
        let body = fixtures::anthropic(&ANTHROPIC_TURNS);
        let f = sessions.forward(Dialect::AnthropicMessages, body.as_bytes(), None).unwrap();
        let expected =
            format!("[{},{},{}]", frozen_text(&sessions, &key), ANTHROPIC_TURNS[7], ANTHROPIC_TURNS[8]);
        assert_eq!(&f.body[f.messages.clone()], expected);
    }

    fn frozen_text(sessions: &Sessions, key: &SessionKey) -> String {
        sessions.frozen(key).unwrap()[0].replacement.to_string()
    }

    mod one_pass {
        use proptest::prelude::*;

        use super::super::{Shape, check_range, valid_ends};

        /// A message: its role (0 user, 1 assistant, 2 system), whether it is a reasoning item,
        /// the ids it calls and answers (from a few, so that pairs form, cross and repeat).
        fn shape() -> impl Strategy<Value = Shape> {
            (
                0..3u8,
                prop::bool::weighted(0.1),
                prop::collection::vec(0..6u8, 0..2),
                prop::collection::vec(0..6u8, 0..2),
            )
                .prop_map(|(role, reasoning, calls, answers)| Shape {
                    role: ["user", "assistant", "system"][role as usize].into(),
                    kind: if reasoning { "reasoning".into() } else { String::new() },
                    calls: calls.iter().map(|c| format!("call_{c}")).collect(),
                    answers: answers.iter().map(|a| format!("call_{a}")).collect(),
                })
        }

        proptest! {
            #[test]
            fn the_ends_found_in_one_pass_are_the_ranges_check_range_allows(
                shapes in prop::collection::vec(shape(), 1..40),
                start in 0..40usize,
            ) {
                let turn = shapes.iter().rposition(Shape::is_model).unwrap_or(0);
                let start = start % shapes.len();
                let each: Vec<usize> =
                    (start + 1..=turn).filter(|&e| check_range(&shapes, &(start..e)).is_ok()).collect();
                prop_assert_eq!(valid_ends(&shapes, start, turn), each);
            }
        }
    }
}
