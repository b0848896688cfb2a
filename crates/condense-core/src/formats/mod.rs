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
mod dispatch;
mod gemini;
mod native;
mod openai;
mod read;
mod sse;
mod wire;

use serde_json::Value;

use crate::error::ParseError;
use crate::model::{Conversation, FORMAT_TAG};

use read::strip_position;

pub use anthropic::{ANTHROPIC_VERSION, to_anthropic};
pub use openai::to_openai;
pub use sse::{MAX_SSE_EVENT_BYTES, MAX_SSE_LINE_BYTES, SseEvent, SseParser};
pub(crate) use wire::Decoder;
pub use wire::{ApiCache, ApiRequest, ChatMessage, ChatRole, Wire};

/// The conversation of an API request body (or its message list) in one of the wire dialects
/// an agent sends: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, Gemini. The gateway
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
    /// The Gemini API's `contents`: `Content`s of parts (text, `functionCall`,
    /// `functionResponse`, …), as Gemini CLI's saved chats hold them.
    Gemini,
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
        RequestDialect::Gemini => match value {
            Value::Array(contents) => gemini::from_chat(contents, "contents"),
            _ => Err(ParseError::at("contents", "expected a list of Contents")),
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

/// The JSON Schema of the project's conversation format.
pub fn conversation_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Conversation)).expect("schema serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

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
