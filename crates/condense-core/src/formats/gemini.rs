//! Gemini CLI's files, in two shapes.
//!
//! A saved chat (`/chat save <tag>` writes `~/.gemini/tmp/<project>/checkpoint-<tag>.json`): the
//! chat's history as the Gemini API holds it, a list of `Content`s — `{"role": "user" | "model",
//! "parts": [...]}` — bare (older versions) or as `{"history": [...], "authType"}`. A part is one
//! of `{"text"}` (with `"thought": true`, the model's thought), `{"inlineData": {"mimeType",
//! "data"}}`, `{"fileData"}`, `{"functionCall": {"id"?, "name", "args"}}` on the model's turn,
//! `{"functionResponse": {"id"?, "name", "response"}}` on the user's, `{"executableCode"}`, … A
//! saved chat has no times and no system prompt (the CLI sends its system prompt apart); its first
//! turns are the CLI's own environment setup, kept as the messages they are.
//!
//! A headless run's transcript (`gemini --output-format stream-json`): one JSON event per line —
//! `init` (`session_id`, `model`), `message` (`role` `user` or `assistant`, `content` text, and
//! `delta: true` on each piece of an answer as it streams), `tool_use` (`tool_name`, `tool_id`,
//! `parameters`), `tool_result` (`tool_id`, `status` `success` or `error`, `output`, `error`
//! `{type, message}`), `error` (a warning the CLI shows), `result` (the run's status and stats),
//! each with its `timestamp`.
//!
//! Both become the conversation the model saw: texts as text, images (inline `image/*` data) as
//! images, calls as `tool_use` blocks on the assistant's turn and their responses as
//! `tool_result`s on the next user turn; the pieces of one streamed answer joined into one text.
//! A saved chat's calls usually carry no id (the CLI gives its response one of its own): a call
//! keeps its `id` when it has one, else gets `call_<content>_<part>` (its place in the file, so
//! the same file always gives the same ids), and each response answers the call of the turn before
//! with its id, else the first one not yet answered with its name. Any other part, and a stream's
//! event of a kind not listed above, is kept as read (an opaque block named by the part's field —
//! `thought`, `executableCode`, `fileData`, … — or by the event's `type`); `init`, `error` and
//! `result` events are the CLI's, not the model's, and are skipped. A part's `thoughtSignature`
//! (an encrypted token only the Gemini API reads back) is not kept. Messages are `m1`, `m2`, …

use serde_json::{Map, Value, json};

use super::read::{add_turn, epoch_ms, role_at};
use crate::error::ParseError;
use crate::model::{ContentBlock, Conversation, ImageSource, Message, OpaqueBlock, Role, ToolResultPart};

/// Whether a list is a saved chat's history: `Content`s, each with `parts` and no `content`,
/// which neither OpenAI's nor Anthropic's messages have.
pub(super) fn looks_like_chat(list: &[Value]) -> bool {
    !list.is_empty() && list.iter().all(|c| c.get("parts").is_some() && c.get("content").is_none())
}

/// Whether JSON lines are a stream-json transcript: an `init` event with its `session_id`, or a
/// `message` event with a role and text.
pub(super) fn looks_like_stream(lines: &[Value]) -> bool {
    lines.iter().any(|v| match v.get("type").and_then(Value::as_str) {
        Some("init") => v.get("session_id").is_some(),
        Some("message") => v.get("role").is_some_and(Value::is_string) && v.get("content").is_some(),
        _ => false,
    })
}

/// The fields of a part that say something about it rather than being it.
const METADATA: [&str; 4] = ["thought", "thoughtSignature", "videoMetadata", "partMetadata"];

/// A call of the model's turn not answered yet.
struct OpenCall {
    id: String,
    name: String,
}

/// Reads a saved chat's history (`path` is where the list is: `history`, or empty for a bare list).
pub(super) fn from_chat(list: &[Value], path: &str) -> Result<Conversation, ParseError> {
    let mut messages: Vec<Message> = Vec::new();
    let mut open: Vec<OpenCall> = Vec::new();
    for (i, content) in list.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if !content.is_object() {
            return Err(ParseError::at(at, "expected a Content object (`role` and `parts`)"));
        }
        let role = match role_at(content, &at, &["user", "model"])?.as_str() {
            "model" => Role::Assistant,
            _ => Role::User,
        };
        let parts = match content.get("parts") {
            Some(Value::Array(parts)) => parts,
            _ => return Err(ParseError::at(format!("{at}.parts"), "expected a list of parts")),
        };
        // A new model turn: the calls of the one before that were never answered stay so.
        if role == Role::Assistant && messages.last().is_none_or(|m| m.role != Role::Assistant) {
            open.clear();
        }
        let mut blocks = Vec::with_capacity(parts.len());
        for (j, part) in parts.iter().enumerate() {
            let at = format!("{at}.parts[{j}]");
            let Some(part) = part.as_object() else {
                return Err(ParseError::at(at, "expected a part (an object)"));
            };
            blocks.push(chat_part(part, role, (i, j), &mut open, &at)?);
        }
        add_turn(&mut messages, role, blocks, 0);
    }
    if messages.is_empty() {
        return Err(ParseError::at(path, "a Gemini CLI chat without messages"));
    }
    Ok(Conversation::new(messages))
}

/// One part of a saved chat's `Content` as a block; `place` is the content's and the part's index.
fn chat_part(
    part: &Map<String, Value>,
    role: Role,
    place: (usize, usize),
    open: &mut Vec<OpenCall>,
    at: &str,
) -> Result<ContentBlock, ParseError> {
    let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
    match (part.get("text"), part.get("functionCall"), part.get("functionResponse"), part.get("inlineData")) {
        (Some(Value::String(text)), ..) if !thought => return Ok(ContentBlock::text(text.clone())),
        (Some(text), ..) if !text.is_string() => {
            return Err(ParseError::at(format!("{at}.text"), "expected a string"));
        }
        (_, Some(Value::Object(call)), ..) if role == Role::Assistant => {
            let name = field(call, "name", &format!("{at}.functionCall"))?;
            let id = match call.get("id").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => format!("call_{}_{}", place.0, place.1),
            };
            let input = match call.get("args") {
                None | Some(Value::Null) => json!({}),
                Some(args) => args.clone(),
            };
            open.push(OpenCall { id: id.clone(), name: name.clone() });
            return Ok(ContentBlock::ToolUse { id, name, input });
        }
        (_, _, Some(Value::Object(response)), _) if role == Role::User => {
            let name = field(response, "name", &format!("{at}.functionResponse"))?;
            let own = response.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
            let answered = own
                .and_then(|id| open.iter().position(|c| c.id == id))
                .or_else(|| open.iter().position(|c| c.name == name));
            let tool_use_id = match (answered, own) {
                (Some(k), _) => open.remove(k).id,
                (None, Some(id)) => id.to_owned(),
                (None, None) => format!("call_{}_{}", place.0, place.1),
            };
            let (content, is_error) = response_content(response);
            return Ok(ContentBlock::ToolResult { tool_use_id, content, is_error });
        }
        (.., Some(Value::Object(data))) => {
            if let Some(source) = image(data) {
                return Ok(ContentBlock::Image { source });
            }
        }
        _ => {}
    }
    opaque(part, if thought { "thought" } else { kind(part) })
        .ok_or_else(|| ParseError::at(format!("{at}.type"), "a part's own `type` names a typed block"))
}

/// The name of a part that is not read as a typed block: its first field that is not metadata.
fn kind(part: &Map<String, Value>) -> &str {
    part.keys().map(String::as_str).find(|k| !METADATA.contains(k)).unwrap_or("part")
}

/// A part or an event kept as read, with a `type` naming it when it has none of its own.
/// A `type` of its own that names a typed block (`text`, `image`, …) cannot be kept so: `None`.
fn opaque(value: &Map<String, Value>, kind: &str) -> Option<ContentBlock> {
    let mut map = value.clone();
    if !map.get("type").is_some_and(Value::is_string) {
        // First, as the other blocks have it; the part's own fields follow unchanged.
        map.shift_insert(0, "type".to_owned(), Value::String(kind.to_owned()));
    }
    OpaqueBlock::new(map).map(ContentBlock::Opaque)
}

/// An `inlineData` part's image, when it is one (`image/*` with its base64 data).
fn image(data: &Map<String, Value>) -> Option<ImageSource> {
    let media_type = data.get("mimeType").and_then(Value::as_str).filter(|m| m.starts_with("image/"))?;
    let data = data.get("data").and_then(Value::as_str)?;
    Some(ImageSource::Base64 { media_type: media_type.to_owned(), data: data.to_owned() })
}

/// A function response's content and whether it failed. Gemini CLI answers `{"output": text}`
/// or `{"error": text}`: the text alone; any other response as its JSON. Images the response
/// carries in its own `parts` (newer models' multimodal responses) follow as images.
fn response_content(response: &Map<String, Value>) -> (Vec<ToolResultPart>, bool) {
    let body = response.get("response");
    let is_error = body.and_then(|b| b.get("error")).is_some_and(|e| !e.is_null());
    let text = match body {
        Some(Value::Object(o)) if o.len() == 1 => match o.iter().next() {
            Some((key, Value::String(s))) if key == "output" || key == "error" => s.clone(),
            _ => Value::Object(o.clone()).to_string(),
        },
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(v) => v.to_string(),
    };
    let mut content = vec![ToolResultPart::Text { text }];
    for part in response.get("parts").and_then(Value::as_array).into_iter().flatten() {
        match part.get("inlineData").and_then(Value::as_object).and_then(image) {
            Some(source) => content.push(ToolResultPart::Image { source }),
            None => content.push(ToolResultPart::Text { text: part.to_string() }),
        }
    }
    (content, is_error)
}

fn field(object: &Map<String, Value>, key: &str, path: &str) -> Result<String, ParseError> {
    match object.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ParseError::at(format!("{path}.{key}"), "expected a string")),
        None => Err(ParseError::at(path, format!("missing field `{key}`"))),
    }
}

/// Reads a stream-json transcript's events (one per line; `lines[i]` is line `i + 1`, `null` for
/// a blank line).
pub(super) fn from_stream(lines: &[Value]) -> Result<Conversation, ParseError> {
    let mut messages: Vec<Message> = Vec::new();
    for (i, event) in lines.iter().enumerate() {
        let Some(object) = event.as_object() else { continue };
        let at = format!("line {}", i + 1);
        let ts = object.get("timestamp").and_then(Value::as_str).and_then(epoch_ms).unwrap_or(0);
        let kind = match object.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(_) => return Err(ParseError::at(format!("{at}.type"), "expected a string")),
            None => return Err(ParseError::at(at, "missing field `type`")),
        };
        match kind {
            "message" => {
                let role = match role_at(event, &at, &["user", "assistant"])?.as_str() {
                    "assistant" => Role::Assistant,
                    _ => Role::User,
                };
                let text = match object.get("content") {
                    Some(Value::String(s)) => s,
                    Some(_) => return Err(ParseError::at(format!("{at}.content"), "expected a string")),
                    None => return Err(ParseError::at(at, "missing field `content`")),
                };
                let delta = object.get("delta").and_then(Value::as_bool) == Some(true);
                // A piece of the answer streaming: joined to the text it continues.
                if delta
                    && let Some(last) = messages.last_mut()
                    && last.role == role
                    && let Some(ContentBlock::Text { text: before, .. }) = last.content.last_mut()
                {
                    before.push_str(text);
                    continue;
                }
                if !text.is_empty() {
                    add_turn(&mut messages, role, vec![ContentBlock::text(text.clone())], ts);
                }
            }
            "tool_use" => {
                let id = field(object, "tool_id", &at)?;
                let name = field(object, "tool_name", &at)?;
                let input = match object.get("parameters") {
                    None | Some(Value::Null) => json!({}),
                    Some(v) => v.clone(),
                };
                add_turn(&mut messages, Role::Assistant, vec![ContentBlock::ToolUse { id, name, input }], ts);
            }
            "tool_result" => {
                let tool_use_id = field(object, "tool_id", &at)?;
                let failed = object.get("status").and_then(Value::as_str) == Some("error");
                let text = match (object.get("output"), object.get("error")) {
                    (Some(Value::String(s)), _) => s.clone(),
                    (Some(v), _) if !v.is_null() => v.to_string(),
                    (_, Some(e)) if !e.is_null() => match e.get("message").and_then(Value::as_str) {
                        Some(message) => message.to_owned(),
                        None => e.to_string(),
                    },
                    _ => String::new(),
                };
                let block = ContentBlock::ToolResult {
                    tool_use_id,
                    content: vec![ToolResultPart::Text { text }],
                    is_error: failed,
                };
                add_turn(&mut messages, Role::User, vec![block], ts);
            }
            // The CLI's own: the session's start, its warnings, the run's end and stats.
            "init" | "error" | "result" => {}
            other => {
                let block = opaque(object, other).ok_or_else(|| {
                    ParseError::at(
                        format!("{at}.type"),
                        format!("unknown event \"{other}\", named like a content block"),
                    )
                })?;
                add_turn(&mut messages, Role::Assistant, vec![block], ts);
            }
        }
    }
    if messages.is_empty() {
        return Err(ParseError::at(
            "",
            "a Gemini CLI stream-json transcript without user or assistant messages",
        ));
    }
    Ok(Conversation::new(messages))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::{SourceFormat, parse_conversation};
    use crate::model::check_tool_pairs;

    #[test]
    fn calls_without_ids_get_stable_ones_and_responses_answer_them_by_name() {
        let chat = json!([
            {"role": "user", "parts": [{"text": "Read a.txt and b.txt."}]},
            {"role": "model", "parts": [
                {"text": "Reading both.", "thoughtSignature": "c2ln"},
                {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}},
                {"functionCall": {"name": "read_file", "args": {"path": "b.txt"}}},
                {"functionCall": {"name": "list_directory", "args": {"path": "."}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "list_directory-1-ab", "name": "list_directory", "response": {"output": "a.txt b.txt"}}},
                {"functionResponse": {"id": "read_file-1-cd", "name": "read_file", "response": {"output": "alpha"}}},
                {"functionResponse": {"id": "read_file-1-ef", "name": "read_file", "response": {"error": "b.txt: permission denied"}}}
            ]},
            {"role": "model", "parts": [{"text": "a.txt says alpha; b.txt cannot be read."}]}
        ]);
        let c = from_chat(chat.as_array().unwrap(), "").unwrap();
        let ids: Vec<(&str, &str)> = c.messages[1]
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, name, .. } => Some((id.as_str(), name.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(
            ids,
            [("call_1_1", "read_file"), ("call_1_2", "read_file"), ("call_1_3", "list_directory")]
        );
        let results: Vec<(&str, bool)> = c.messages[2]
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, is_error, .. } => {
                    Some((tool_use_id.as_str(), *is_error))
                }
                _ => None,
            })
            .collect();
        assert_eq!(results, [("call_1_3", false), ("call_1_1", false), ("call_1_2", true)]);
        assert!(check_tool_pairs(&c.api_view()).is_ok());
        // The same file reads the same ids again.
        assert_eq!(from_chat(chat.as_array().unwrap(), "").unwrap(), c);
    }

    #[test]
    fn a_call_with_an_id_is_answered_by_it() {
        let chat = json!({"history": [
            {"role": "user", "parts": [{"text": "What time is it?"}]},
            {"role": "model", "parts": [
                {"functionCall": {"id": "t1", "name": "clock", "args": {}}},
                {"functionCall": {"id": "t2", "name": "clock", "args": {"zone": "UTC"}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "t2", "name": "clock", "response": {"output": "12:00Z"}}},
                {"functionResponse": {"id": "t1", "name": "clock", "response": {"time": "14:00", "zone": "CEST"}}}
            ]}
        ], "authType": "oauth-personal"});
        let p = parse_conversation(&chat.to_string()).unwrap();
        assert_eq!(p.format, SourceFormat::GeminiChat);
        let ContentBlock::ToolResult { tool_use_id, content, .. } = &p.conversation.messages[2].content[1]
        else {
            panic!()
        };
        assert_eq!(tool_use_id, "t1");
        assert_eq!(content, &[ToolResultPart::Text { text: r#"{"time":"14:00","zone":"CEST"}"#.to_owned() }]);
    }

    #[test]
    fn other_parts_are_kept_as_read() {
        let chat = json!([
            {"role": "user", "parts": [
                {"text": "What is in this picture and this PDF?"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0x"}}
            ]},
            {"role": "model", "parts": [
                {"text": "The user wants a description.", "thought": true, "thoughtSignature": "c2ln"},
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                {"text": "A cat, and an invoice."}
            ]}
        ]);
        let c = parse_conversation(&chat.to_string()).unwrap().conversation;
        let kinds: Vec<&str> = c.messages.iter().flat_map(|m| &m.content).map(ContentBlock::kind).collect();
        assert_eq!(kinds, ["text", "image", "inlineData", "thought", "executableCode", "text"]);
        let ContentBlock::Opaque(thought) = &c.messages[1].content[0] else { panic!() };
        assert_eq!(
            thought.json(),
            r#"{"type":"thought","text":"The user wants a description.","thought":true,"thoughtSignature":"c2ln"}"#
        );
    }

    #[test]
    fn chat_errors_are_located() {
        let e =
            parse_conversation(r#"[{"role":"model","parts":[{"functionCall":{"args":{}}}]}]"#).unwrap_err();
        assert_eq!(e.to_string(), "[0].parts[0].functionCall: missing field `name`");
        let e = parse_conversation(r#"{"history":[{"role":"tool","parts":[]}]}"#).unwrap_err();
        assert!(e.to_string().starts_with("history[0].role: unknown role \"tool\""), "{e}");
        let e = parse_conversation(r#"{"history":[]}"#).unwrap_err();
        assert_eq!(e.to_string(), "history: a Gemini CLI chat without messages");
    }

    #[test]
    fn a_streams_unknown_events_are_kept_as_read() {
        let lines = [
            r#"{"type":"message","role":"user","content":"Hi"}"#,
            r#"{"type":"thought","subject":"Greeting","description":"Say hello back."}"#,
            r#"{"type":"message","role":"assistant","content":"Hello!","delta":true}"#,
        ];
        let c = parse_conversation(&lines.join("\n")).unwrap().conversation;
        let kinds: Vec<&str> = c.messages[1].content.iter().map(ContentBlock::kind).collect();
        assert_eq!(kinds, ["thought", "text"]);
        let ContentBlock::Opaque(thought) = &c.messages[1].content[0] else { panic!() };
        assert_eq!(thought.json(), lines[1]);
        let e = parse_conversation(&format!("{}\n{{\"type\":\"image\"}}", lines[0])).unwrap_err();
        assert_eq!(e.to_string(), "line 2.type: unknown event \"image\", named like a content block");
    }

    #[test]
    fn a_stream_joins_the_answers_pieces() {
        let lines = [
            r#"{"type":"init","timestamp":"2025-10-10T12:00:00.000Z","session_id":"s1","model":"gemini-2.5-pro"}"#,
            r#"{"type":"message","timestamp":"2025-10-10T12:00:00.100Z","role":"user","content":"List the files."}"#,
            r#"{"type":"message","timestamp":"2025-10-10T12:00:01.000Z","role":"assistant","content":"I'll","delta":true}"#,
            r#"{"type":"message","timestamp":"2025-10-10T12:00:01.100Z","role":"assistant","content":" list them.","delta":true}"#,
            r#"{"type":"tool_use","timestamp":"2025-10-10T12:00:01.200Z","tool_name":"list_directory","tool_id":"ls-1","parameters":{"path":"."}}"#,
            r#"{"type":"tool_result","timestamp":"2025-10-10T12:00:01.300Z","tool_id":"ls-1","status":"error","error":{"type":"PERMISSION","message":"denied"}}"#,
            r#"{"type":"message","timestamp":"2025-10-10T12:00:02.000Z","role":"assistant","content":"Permission","delta":true}"#,
            r#"{"type":"message","timestamp":"2025-10-10T12:00:02.100Z","role":"assistant","content":" denied.","delta":true}"#,
            r#"{"type":"result","timestamp":"2025-10-10T12:00:02.200Z","status":"success","stats":{"total_tokens":10}}"#,
        ];
        let p = parse_conversation(&lines.join("\n")).unwrap();
        assert_eq!(p.format, SourceFormat::GeminiStream);
        let c = p.conversation;
        assert_eq!(c.messages.len(), 4);
        assert_eq!(c.messages[1].content[0], ContentBlock::text("I'll list them."));
        assert_eq!(c.messages[1].ts, 1_760_097_601_000);
        let ContentBlock::ToolResult { is_error, content, .. } = &c.messages[2].content[0] else { panic!() };
        assert!(*is_error);
        assert_eq!(content, &[ToolResultPart::Text { text: "denied".to_owned() }]);
        assert_eq!(c.messages[3].text(), "Permission denied.");
        assert!(check_tool_pairs(&c.api_view()).is_ok());
        // A line of its own is a stream too.
        assert_eq!(parse_conversation(lines[1]).unwrap().format, SourceFormat::GeminiStream);
    }
}
