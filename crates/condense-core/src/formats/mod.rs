//! Conversations and requests in the wire dialects, one module per dialect: `native` (this
//! project's format and `CondensationResult` documents), `openai` (Chat Completions, also spoken
//! by Ollama, LM Studio, llama.cpp, vLLM, OpenRouter) and `anthropic` (Messages). Each dialect
//! module holds everything about its dialect: importing its conversations, exporting the API view
//! as its request, the streaming HTTP request of its wire, decoding its SSE events. This module
//! detects the format of a file, dispatches to the dialects, and holds what importing shares and
//! the JSON Schema; `wire` holds what the HTTP dialects share: the neutral [`ApiRequest`] they
//! encode, the `Decoder`'s state, the error bodies both wires send. Session files other agents write are read too, each by its own module:
//! `claude_code` (Claude Code's JSONL sessions and sub-agent transcripts), `codex` (Codex CLI's
//! JSONL rollouts), `cline` (Cline's and Roo Code's `api_conversation_history.json`; their
//! `ui_messages.json` is refused with a pointer to it), `gemini` (Gemini CLI's saved chats and
//! `stream-json` transcripts). Every import error names where it is, e.g.
//! `messages[12].content[1]: missing field \`type\`` or `line 4.message.content: …`.

mod anthropic;
mod claude_code;
mod cline;
mod codex;
mod gemini;
mod native;
mod openai;
mod sse;
mod wire;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ParseError;
use crate::model::{ContentBlock, Conversation, FORMAT_TAG, Message, Role};

pub use anthropic::{ANTHROPIC_VERSION, to_anthropic};
pub use openai::to_openai;
pub use sse::{MAX_SSE_EVENT_BYTES, MAX_SSE_LINE_BYTES, SseEvent, SseParser};
pub(crate) use wire::Decoder;
pub use wire::{ApiCache, ApiRequest, ChatMessage, ChatRole, Wire};

/// The conversation of an API request body (or its message list) in one of the wire dialects
/// an agent sends: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses. The gateway
/// reads agents' requests with the same importers as their files, so its condensations read
/// tool calls, results and the user's words exactly as a condensation of a file does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestDialect {
    /// `{"system", "messages"}` of content blocks.
    AnthropicMessages,
    /// `{"messages"}` with `tool_calls` and `tool` messages.
    ChatCompletions,
    /// `input` items: messages, function calls and their outputs, reasoning.
    Responses,
}

/// Reads the messages of a request in `dialect`: for Anthropic and Chat Completions a list of
/// messages (or a document holding `messages`), for Responses a list of `input` items.
/// Leading system and developer messages become the system prompt.
pub fn request_conversation(dialect: RequestDialect, value: &Value) -> Result<Conversation, ParseError> {
    match dialect {
        RequestDialect::AnthropicMessages => anthropic::from_anthropic(value),
        RequestDialect::ChatCompletions => openai::from_openai(value),
        RequestDialect::Responses => match value {
            Value::Array(items) => codex::from_responses_input(items),
            _ => Err(ParseError::at("input", "expected a list of input items")),
        },
    }
}

/// The formats a conversation file can be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// This project's format ([`FORMAT_TAG`]).
    Native,
    /// A `CondensationResult` written by `condense run`.
    CondensationResult,
    /// OpenAI Chat Completions: `{"messages": [...]}` or a bare list.
    OpenAi,
    /// Anthropic Messages: `{"system", "messages": [...]}`.
    Anthropic,
    /// A Claude Code session: JSON lines of events.
    ClaudeCode,
    /// A Codex CLI rollout: JSON lines of `{timestamp, type, payload}` records.
    Codex,
    /// A Cline or Roo Code task history: Anthropic messages with a `ts`.
    Cline,
    /// A Gemini CLI chat saved by `/chat save`: Gemini `Content`s, bare or as `{"history"}`.
    GeminiChat,
    /// A Gemini CLI `--output-format stream-json` transcript: JSON lines of events.
    GeminiStream,
}

/// A conversation read from a file, with the format it was in.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The conversation.
    pub conversation: Conversation,
    /// What the file was.
    pub format: SourceFormat,
}

/// Reads a conversation in any supported format: one JSON document, or JSON lines (a Claude
/// Code session, a Codex rollout, a Gemini CLI stream-json transcript).
pub fn parse_conversation(text: &str) -> Result<Parsed, ParseError> {
    // This project's own documents, in one pass; anything else (or anything wrong) the general way.
    if let Some(conversation) = native::from_tagged_text(text)
        && check_ids(&conversation).is_ok()
    {
        return Ok(Parsed { conversation, format: SourceFormat::Native });
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => match json_lines(text) {
            Some(lines) => return parse_lines(&lines?),
            None => {
                return Err(ParseError::at(
                    "",
                    format!(
                        "invalid JSON at line {} column {}: {}",
                        e.line(),
                        e.column(),
                        strip_position(&e.to_string())
                    ),
                ));
            }
        },
    };
    // A session file of one line is one JSON document.
    if value.is_object() && value.get("messages").is_none() && value.get("format").is_none() {
        let lines = [value];
        if claude_code::looks_like(&lines) || codex::looks_like(&lines) || gemini::looks_like_stream(&lines) {
            return parse_lines(&lines);
        }
        let [value] = lines;
        return parse_value(value);
    }
    parse_value(value)
}

fn parse_value(value: Value) -> Result<Parsed, ParseError> {
    let format = detect(&value)?;
    let conversation = match format {
        SourceFormat::Native => native::from_native(value)?,
        SourceFormat::CondensationResult => native::from_condensation_result(value)?,
        SourceFormat::OpenAi => openai::from_openai(&value)?,
        SourceFormat::Anthropic => anthropic::from_anthropic(&value)?,
        SourceFormat::Cline => cline::from_cline(value.as_array().map_or(&[][..], Vec::as_slice))?,
        SourceFormat::GeminiChat => match &value {
            Value::Array(list) => gemini::from_chat(list, "")?,
            _ => gemini::from_chat(value["history"].as_array().map_or(&[][..], Vec::as_slice), "history")?,
        },
        SourceFormat::ClaudeCode | SourceFormat::Codex | SourceFormat::GeminiStream => {
            unreachable!("JSON lines are read by parse_lines")
        }
    };
    check_ids(&conversation)?;
    Ok(Parsed { conversation, format })
}

/// The records of a JSON lines file, when its first line is a JSON object: `None` when the text
/// is not JSON lines at all, an error naming the first line that is not a JSON object.
fn json_lines(text: &str) -> Option<Result<Vec<Value>, ParseError>> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, first) = lines.next()?;
    if !serde_json::from_str::<Value>(first).is_ok_and(|v| v.is_object()) {
        return None;
    }
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            out.push(Value::Null);
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v @ Value::Object(_)) => out.push(v),
            Ok(_) => return Some(Err(ParseError::at(format!("line {}", n + 1), "expected a JSON object"))),
            Err(e) => {
                return Some(Err(ParseError::at(
                    format!("line {}", n + 1),
                    format!("invalid JSON at column {}: {}", e.column(), strip_position(&e.to_string())),
                )));
            }
        }
    }
    Some(Ok(out))
}

/// Reads JSON lines (`lines[i]` is line `i + 1`, `null` for a blank line) in the format they are.
fn parse_lines(lines: &[Value]) -> Result<Parsed, ParseError> {
    let (conversation, format) = if claude_code::looks_like(lines) {
        (claude_code::from_claude_code(lines)?, SourceFormat::ClaudeCode)
    } else if codex::looks_like(lines) {
        (codex::from_codex(lines)?, SourceFormat::Codex)
    } else if gemini::looks_like_stream(lines) {
        (gemini::from_stream(lines)?, SourceFormat::GeminiStream)
    } else {
        return Err(ParseError::at(
            "",
            "JSON lines, but neither a Claude Code session (events with `uuid` and `message`), a Codex rollout (records with `type` and `payload`) nor a Gemini CLI stream-json transcript (events `init`, `message`, …)",
        ));
    };
    check_ids(&conversation)?;
    Ok(Parsed { conversation, format })
}

/// Adds blocks to the last message when it has the same role (one turn's items), else a new one
/// (`m1`, `m2`, … by position): for the session files whose records are items of a turn (Codex's,
/// Gemini CLI's). A user's words after tool results start a new message, so results stay right
/// after the call.
fn add_turn(messages: &mut Vec<Message>, role: Role, content: Vec<ContentBlock>, ts: i64) {
    if content.is_empty() {
        return;
    }
    let is_result = |b: &ContentBlock| matches!(b, ContentBlock::ToolResult { .. });
    if let Some(last) = messages.last_mut()
        && last.role == role
        && (role == Role::Assistant || last.content.iter().all(is_result) == content.iter().all(is_result))
    {
        last.content.extend(content);
        return;
    }
    let mut m = Message::new(format!("m{}", messages.len() + 1), role, content);
    m.ts = ts;
    messages.push(m);
}

/// Milliseconds since the Unix epoch of an RFC 3339 time (`2025-06-23T10:15:30.123Z`,
/// `…+02:00`); `None` when it is not one.
pub(crate) fn epoch_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(r)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut ms = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &frac[..digits.min(3)]);
        ms = padded.parse::<i64>().ok()?;
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "Z" | "z" | "" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && &o[3..4] == ":" => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o[1..3].parse::<i64>().ok()? * 60 + o[4..6].parse::<i64>().ok()?)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3_600 + mi * 60 + s) - offset_min * 60) * 1_000 + ms)
}

fn strip_position(message: &str) -> &str {
    message.rsplit_once(" at line ").map_or(message, |(m, _)| m)
}

/// Tells the format from the document's shape.
pub fn detect(value: &Value) -> Result<SourceFormat, ParseError> {
    let messages = match value {
        Value::Array(list) => list,
        Value::Object(o) => {
            // An empty tag is this project's too: chats saved before their conversation carried
            // the tag wrote `"format": ""`.
            if matches!(o.get("format").and_then(Value::as_str), Some(FORMAT_TAG | "")) {
                return Ok(SourceFormat::Native);
            }
            if let Some(f) = o.get("format") {
                return Err(ParseError::at(
                    "format",
                    format!("unknown format {f}, expected \"{FORMAT_TAG}\""),
                ));
            }
            if o.contains_key("messages")
                && (o.contains_key("metrics") || o.contains_key("new_context_tokens"))
            {
                return Ok(SourceFormat::CondensationResult);
            }
            // A Gemini CLI chat saved as `{"history": [...], "authType"}`.
            if !o.contains_key("messages")
                && let Some(Value::Array(history)) = o.get("history")
                && (history.is_empty() || gemini::looks_like_chat(history))
            {
                return Ok(SourceFormat::GeminiChat);
            }
            match o.get("messages") {
                Some(Value::Array(list)) => list,
                Some(_) => return Err(ParseError::at("messages", "expected a list of messages")),
                None => {
                    return Err(ParseError::at(
                        "",
                        "expected an object with \"messages\" or a list of messages",
                    ));
                }
            }
        }
        _ => return Err(ParseError::at("", "expected an object with \"messages\" or a list of messages")),
    };
    if value.is_array() && cline::is_ui_messages(messages) {
        return Err(ParseError::at("", cline::UI_MESSAGES));
    }
    if value.is_array() && gemini::looks_like_chat(messages) {
        return Ok(SourceFormat::GeminiChat);
    }
    if value.is_array() && cline::looks_like(messages) {
        return Ok(SourceFormat::Cline);
    }
    Ok(if openai::looks_like(messages) { SourceFormat::OpenAi } else { SourceFormat::Anthropic })
}

/// Deserializes with the path of any error, and says "unknown block type" for content blocks.
fn typed<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, ParseError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let mut path = match (prefix.is_empty(), inner.as_str()) {
            (_, ".") => prefix.to_owned(),
            (true, p) => p.to_owned(),
            (false, p) if p.starts_with('[') => format!("{prefix}{p}"),
            (false, p) => format!("{prefix}.{p}"),
        };
        let mut message = e.inner().to_string();
        if let Some(rest) = message.strip_prefix("unknown variant `")
            && let Some((name, expected)) = rest.split_once('`')
        {
            let what = if path.ends_with(".role") { "role" } else { "block type" };
            // The tag names the block; point at the block, not at its `type` field.
            if let Some(block) = path.strip_suffix(".type") {
                path = block.to_owned();
            }
            message = format!("unknown {what} \"{name}\"{expected}");
        }
        ParseError { path, message: strip_position(&message).to_owned() }
    })
}

/// Message ids must be unique: condensation metadata refers to them.
fn check_ids(c: &Conversation) -> Result<(), ParseError> {
    // foldhash, not SipHash: this runs on every read of a conversation (each `countTokens`).
    let mut seen = std::collections::HashSet::with_capacity_and_hasher(
        c.messages.len(),
        foldhash::fast::FixedState::default(),
    );
    for (i, m) in c.messages.iter().enumerate() {
        if m.id.is_empty() {
            return Err(ParseError::at(format!("messages[{i}].id"), "empty message id"));
        }
        if !seen.insert(m.id.as_str()) {
            return Err(ParseError::at(
                format!("messages[{i}].id"),
                format!("duplicate message id \"{}\"", m.id),
            ));
        }
    }
    Ok(())
}

/// The messages of an OpenAI or Anthropic document (`{"system", "messages"}` or a bare list).
fn message_list(value: &Value) -> (&[Value], Option<&Value>) {
    match value {
        Value::Array(list) => (list, None),
        Value::Object(o) => {
            (o.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice), o.get("system"))
        }
        _ => (&[], None),
    }
}

fn role_at(m: &Value, path: &str, allowed: &[&str]) -> Result<String, ParseError> {
    match m.get("role") {
        Some(Value::String(r)) if allowed.contains(&r.as_str()) => Ok(r.clone()),
        Some(Value::String(r)) => Err(ParseError::at(
            format!("{path}.role"),
            format!("unknown role \"{r}\", expected one of {}", allowed.join(", ")),
        )),
        Some(_) => Err(ParseError::at(format!("{path}.role"), "expected a string")),
        None => Err(ParseError::at(path, "missing field `role`")),
    }
}

/// A document's `system`: a string, or a list of text blocks joined by blank lines.
fn system_text(value: Option<&Value>, path: &str) -> Result<Option<String>, ParseError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Array(parts)) => {
            let mut out = Vec::new();
            for (i, p) in parts.iter().enumerate() {
                match p.get("text").and_then(Value::as_str) {
                    Some(t) => out.push(t.to_owned()),
                    None => return Err(ParseError::at(format!("{path}[{i}]"), "expected a text block")),
                }
            }
            Ok(Some(out.join("\n\n")))
        }
        Some(_) => Err(ParseError::at(path, "expected a string or a list of text blocks")),
    }
}

/// A document's tool definitions (`tools`, at `path`): a list of objects, kept as read.
fn tool_definitions(value: &Value, path: &str) -> Result<Vec<Value>, ParseError> {
    match value.get("tools") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => {
            for (i, t) in list.iter().enumerate() {
                if !t.is_object() {
                    return Err(ParseError::at(
                        format!("{path}[{i}]"),
                        "expected a tool definition (an object)",
                    ));
                }
            }
            Ok(list.clone())
        }
        Some(_) => Err(ParseError::at(path, "expected a list of tool definitions")),
    }
}

/// The JSON Schema of the project's conversation format.
pub fn conversation_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Conversation)).expect("schema serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_become_epoch_milliseconds() {
        assert_eq!(epoch_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(epoch_ms("2025-08-14T09:12:03.114Z"), Some(1_755_162_723_114));
        assert_eq!(epoch_ms("2025-08-14T11:12:03.1+02:00"), Some(1_755_162_723_100));
        assert_eq!(epoch_ms("2000-02-29T12:00:00.123456Z"), Some(951_825_600_123));
        assert_eq!(epoch_ms("yesterday"), None);
        assert_eq!(epoch_ms("2025-13-01T00:00:00Z"), None);
    }

    #[test]
    fn a_session_of_one_line_is_read_as_a_session() {
        let line = r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}"#;
        let p = parse_conversation(line).unwrap();
        assert_eq!(p.format, SourceFormat::ClaudeCode);
        assert_eq!(p.conversation.messages[0].id, "u1");
        let rollout = r#"{"timestamp":"2025-09-02T14:03:15.002Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#;
        assert_eq!(parse_conversation(rollout).unwrap().format, SourceFormat::Codex);
        let e = parse_conversation("{\"a\": 1}\n{\"b\": 2}\n").unwrap_err();
        assert!(e.message.contains("neither a Claude Code session"), "{e}");
        // An OpenAI list with a `ts` is not taken for a Cline history.
        let list = r#"[{"role":"system","content":"s","ts":1},{"role":"user","content":"hi"}]"#;
        assert_eq!(parse_conversation(list).unwrap().format, SourceFormat::OpenAi);
    }

    #[test]
    fn broken_json_names_line_and_column() {
        let e = parse_conversation("{\n  \"messages\": [\n    {\"role\": \"user\",, }\n").unwrap_err();
        assert!(e.to_string().contains("line 3 column"), "{e}");
    }
}
