//! The four request dialects the gateway reads, and the view of one request body it works on.
//!
//! The view borrows the body: each message is the exact text the client sent (a
//! [`RawValue`](serde_json::value::RawValue) slice of the body), and the message array is a byte
//! range of it. Nothing is re-serialized here, so a forwarded body can be spliced together from
//! the client's own bytes and every key and block the gateway does not read survives untouched.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::GatewayError;

/// The wire dialect of a request, known from its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// Anthropic Messages (`/v1/messages`): Claude Code, Cline and Roo with Anthropic.
    AnthropicMessages,
    /// OpenAI Chat Completions (`/v1/chat/completions`): Cline, Roo, Continue.
    ChatCompletions,
    /// OpenAI Responses (`/v1/responses`; the ChatGPT backend's `/responses`): Codex.
    Responses,
    /// The Gemini API (`/v1beta/models/{model}:generateContent` and `:streamGenerateContent`):
    /// Gemini CLI. The model is in the path, the conversation is `contents`.
    Gemini,
}

impl Dialect {
    /// The dialect of a request path, with or without a query string and a routing prefix
    /// (`/anthropic/v1/messages?beta=true`). Other paths (`count_tokens`, model lists) are not
    /// conversations: `None`.
    pub fn from_path(path: &str) -> Option<Dialect> {
        let path = path.split(['?', '#']).next().unwrap_or_default().trim_end_matches('/');
        if path.ends_with("/v1/messages") {
            Some(Dialect::AnthropicMessages)
        } else if path.ends_with("/v1/chat/completions") {
            Some(Dialect::ChatCompletions)
        } else if path.ends_with("/responses") {
            Some(Dialect::Responses)
        } else if gemini_method(path).is_some_and(|m| m == "generateContent" || m == "streamGenerateContent")
        {
            Some(Dialect::Gemini)
        } else {
            None
        }
    }

    /// The top-level key holding the conversation.
    pub fn messages_key(self) -> &'static str {
        match self {
            Dialect::AnthropicMessages | Dialect::ChatCompletions => "messages",
            Dialect::Responses => "input",
            Dialect::Gemini => "contents",
        }
    }
}

/// The model and the method of a Gemini API path (`…/models/gemini-2.5-pro:generateContent`,
/// query excluded): `("gemini-2.5-pro", "generateContent")`.
pub fn gemini_model_and_method(path: &str) -> Option<(&str, &str)> {
    let path = path.split(['?', '#']).next().unwrap_or_default().trim_end_matches('/');
    let (_, call) = path.rsplit_once("/models/")?;
    let (model, method) = call.split_once(':')?;
    (!model.is_empty() && !model.contains('/')).then_some((model, method))
}

/// The method of a Gemini API path (`generateContent`, `countTokens`, …).
fn gemini_method(path: &str) -> Option<&str> {
    gemini_model_and_method(path).map(|(_, method)| method)
}

/// How the conversation sits in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrayKind {
    /// A JSON array of messages (or Responses input items).
    Array,
    /// A Responses `input` given as one string: a single user message, never condensed.
    String,
}

/// One request body, read without copying its messages.
#[derive(Debug)]
pub struct Request<'a> {
    /// The dialect the body was read in.
    pub dialect: Dialect,
    /// The whole body.
    pub body: &'a str,
    /// The byte range of the message array (brackets included), or of the `input` string.
    pub array: Range<usize>,
    /// Whether the conversation is an array or a Responses `input` string.
    pub kind: ArrayKind,
    /// Each message's exact text, in order; for an `input` string, the string literal.
    pub messages: Vec<&'a RawValue>,
    /// The FNV-1a hash of each message's text ([`super::fnv1a`]), in order: what the sessions
    /// match and the counts are kept by, made once, with the parse.
    pub hashes: Vec<u64>,
    /// The model asked for.
    pub model: Option<String>,
    /// The system prompt's text: Anthropic `system`, Chat's leading system and developer
    /// messages, Responses `instructions`. Blocks are joined with blank lines.
    pub system: String,
    /// Claude Code's `metadata.user_id`.
    pub user_id: Option<String>,
    /// Codex's `prompt_cache_key`.
    pub prompt_cache_key: Option<String>,
    /// The tool definitions' exact text, when the request has any: they go with every request
    /// and count toward its size.
    pub tools: Option<&'a RawValue>,
    /// The system prompt's exact text where it is its own key: Anthropic's `system` (a string or
    /// blocks, which may carry cache breakpoints), Responses' `instructions`.
    pub system_raw: Option<&'a RawValue>,
    /// OpenAI's `prompt_cache_retention` (`"24h"`: the prompt is kept a day).
    pub cache_retention: Option<String>,
}

/// The top-level keys the gateway reads; serde skips every other key.
#[derive(Deserialize)]
struct Top<'a> {
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(default)]
    model: Option<String>,
    #[serde(borrow, default)]
    system: Option<&'a RawValue>,
    #[serde(borrow, default)]
    instructions: Option<&'a RawValue>,
    #[serde(borrow, default)]
    contents: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "systemInstruction", alias = "system_instruction")]
    system_instruction: Option<&'a RawValue>,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    prompt_cache_key: Option<String>,
    #[serde(borrow, default)]
    tools: Option<&'a RawValue>,
    #[serde(default)]
    prompt_cache_retention: Option<String>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    user_id: Option<String>,
}

/// The byte offset of `part` in `whole`; `part` is a slice of `whole` (a borrowed raw value).
fn offset_in(whole: &str, part: &str) -> usize {
    part.as_ptr() as usize - whole.as_ptr() as usize
}

/// The text of a system prompt given as a string or as text blocks.
fn system_text(value: &Value) -> String {
    text_of(value, "\n\n").unwrap_or_default()
}

/// The text of a content given as a string or as blocks (their `text`, joined with `joiner`);
/// `None` for any other value.
fn text_of(value: &Value, joiner: &str) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => Some(
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(joiner),
        ),
        _ => None,
    }
}

/// The leading system and developer messages of a Chat Completions request, as text.
fn leading_system(messages: &[&RawValue]) -> String {
    #[derive(Deserialize)]
    struct Head {
        #[serde(default)]
        role: String,
        #[serde(default)]
        content: Option<Value>,
    }
    let mut parts = Vec::new();
    for raw in messages {
        let Ok(head) = serde_json::from_str::<Head>(raw.get()) else { break };
        if head.role != "system" && head.role != "developer" {
            break;
        }
        parts.push(head.content.as_ref().map(system_text).unwrap_or_default());
    }
    parts.join("\n\n")
}

impl<'a> Request<'a> {
    /// Reads `body` in `dialect`. Fails on a body that is not JSON or has no conversation; the
    /// caller forwards such a body untouched.
    pub fn parse(dialect: Dialect, body: &'a [u8]) -> Result<Request<'a>, GatewayError> {
        let body = std::str::from_utf8(body).map_err(|e| GatewayError::Malformed(e.to_string()))?;
        let top: Top<'a> = serde_json::from_str(body).map_err(|e| GatewayError::Malformed(e.to_string()))?;
        let raw = match dialect {
            Dialect::AnthropicMessages | Dialect::ChatCompletions => top.messages,
            Dialect::Responses => top.input,
            Dialect::Gemini => top.contents,
        }
        .ok_or(GatewayError::NoConversation(dialect.messages_key()))?;
        let text = raw.get();
        let array = offset_in(body, text)..offset_in(body, text) + text.len();
        let (kind, messages) = match text.as_bytes().first() {
            Some(b'[') => {
                let items: Vec<&'a RawValue> =
                    serde_json::from_str(text).map_err(|e| GatewayError::Malformed(e.to_string()))?;
                (ArrayKind::Array, items)
            }
            Some(b'"') if dialect == Dialect::Responses => (ArrayKind::String, vec![raw]),
            _ => return Err(GatewayError::NoConversation(dialect.messages_key())),
        };
        let value = |raw: Option<&RawValue>| raw.and_then(|r| serde_json::from_str::<Value>(r.get()).ok());
        let system = match dialect {
            Dialect::AnthropicMessages => value(top.system).as_ref().map(system_text).unwrap_or_default(),
            Dialect::ChatCompletions => leading_system(&messages),
            Dialect::Responses => match value(top.instructions) {
                Some(Value::String(s)) => s,
                _ => String::new(),
            },
            // A `Content` whose parts hold the text (a bare string is accepted by the API too).
            Dialect::Gemini => match value(top.system_instruction) {
                Some(Value::String(s)) => s,
                Some(content) => content.get("parts").map(system_text).unwrap_or_default(),
                None => String::new(),
            },
        };
        let system_raw = match dialect {
            Dialect::AnthropicMessages => top.system,
            Dialect::ChatCompletions => None,
            Dialect::Responses => top.instructions,
            Dialect::Gemini => top.system_instruction,
        };
        let hashes = messages.iter().map(|m| super::fnv1a(m.get().as_bytes())).collect();
        Ok(Request {
            dialect,
            body,
            array,
            kind,
            messages,
            hashes,
            model: top.model,
            system,
            user_id: top.metadata.and_then(|m| m.user_id),
            prompt_cache_key: top.prompt_cache_key,
            tools: top.tools,
            system_raw: system_raw.filter(|r| r.get() != "null"),
            cache_retention: top.prompt_cache_retention,
        })
    }

    /// The request with the model its `path` names when its body names none: the Gemini API puts
    /// the model in the path (`/v1beta/models/gemini-2.5-pro:generateContent`), not the body.
    pub fn with_path_model(mut self, path: &str) -> Self {
        if self.model.is_none() {
            self.model = gemini_model_and_method(path).map(|(model, _)| model.to_owned());
        }
        self
    }

    /// Each message's hash and exact text, in order: what the sessions match and the counts and
    /// the books are kept by.
    pub fn texts(&self) -> impl Iterator<Item = (u64, &'a str)> + '_ {
        self.hashes.iter().zip(&self.messages).map(|(&hash, &message)| (hash, message.get()))
    }

    /// The byte range of message `i` in the body.
    pub fn message_range(&self, i: usize) -> Range<usize> {
        let text = self.messages[i].get();
        let start = offset_in(self.body, text);
        start..start + text.len()
    }

    /// The first line of the user's task: the first of the first user messages (among the first
    /// [`TASK_SEARCH`]) that holds the user's own words once what the client wraps around them
    /// is taken out (Claude Code's system reminders, Codex's environment context, Cline's
    /// environment details), at most [`TASK_CHARS`] characters. What tells two sessions of one
    /// client apart in the view.
    pub fn task_line(&self) -> Option<String> {
        if self.kind == ArrayKind::String {
            // A Responses `input` string is the user's message itself.
            let text: String = serde_json::from_str(self.messages.first()?.get()).ok()?;
            return first_line(&crate::ledger::user_words(&text));
        }
        self.messages.iter().take(TASK_SEARCH).find_map(|raw| {
            // A message of megabytes (a pasted file, a hostile body) is not read for a title:
            // parsing it would cost a copy of it, twice, for 80 characters.
            if raw.get().len() > TASK_MESSAGE_BYTES {
                return None;
            }
            let message: Value = serde_json::from_str(raw.get()).ok()?;
            if message.get("role").and_then(Value::as_str) != Some("user") {
                return None;
            }
            // Gemini's `Content` holds its text in `parts`.
            let text = text_of(message.get("content").or_else(|| message.get("parts"))?, "\n")?;
            first_line(&crate::ledger::user_words(&text))
        })
    }
}

/// The largest message [`Request::task_line`] reads, in bytes.
const TASK_MESSAGE_BYTES: usize = 256 << 10;

/// How many of a request's first messages [`Request::task_line`] looks through.
const TASK_SEARCH: usize = 8;
/// The longest task line kept, in characters.
pub(super) const TASK_CHARS: usize = 80;

/// The first line of `text` that is not blank, trimmed, cut at [`TASK_CHARS`] with an ellipsis.
fn first_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(match line.chars().count() > TASK_CHARS {
        true => format!("{}…", line.chars().take(TASK_CHARS - 1).collect::<String>()),
        false => line.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::*;

    #[test]
    fn the_task_line_is_the_users_first_words_without_the_clients_wrappers() {
        let claude = br#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>\nAs you answer, use the context.\n</system-reminder>"},{"type":"text","text":"Fix the failing parser test in src/parse.rs\nthen run it"}]}]}"#;
        let request = Request::parse(Dialect::AnthropicMessages, claude).expect("parses");
        assert_eq!(request.task_line().as_deref(), Some("Fix the failing parser test in src/parse.rs"));
        // Codex: its instructions and environment come first, as user messages.
        let codex = br#"{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/w</cwd>\n</environment_context>"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"Add a --json flag"}]}]}"#;
        let request = Request::parse(Dialect::Responses, codex).expect("parses");
        assert_eq!(request.task_line().as_deref(), Some("Add a --json flag"));
        let long = format!(
            r#"{{"model":"m","messages":[{{"role":"system","content":"s"}},{{"role":"user","content":"{}"}}]}}"#,
            "word ".repeat(40)
        );
        let request = Request::parse(Dialect::ChatCompletions, long.as_bytes()).expect("parses");
        let line = request.task_line().expect("a line");
        assert_eq!(line.chars().count(), TASK_CHARS);
        assert!(line.ends_with('…'));
        let pasted = format!(
            r#"{{"model":"m","messages":[{{"role":"user","content":"{}"}},{{"role":"user","content":"Review it"}}]}}"#,
            "x".repeat(TASK_MESSAGE_BYTES)
        );
        let request = Request::parse(Dialect::ChatCompletions, pasted.as_bytes()).expect("parses");
        assert_eq!(request.task_line().as_deref(), Some("Review it"), "a message of megabytes is not read");
        let none = br#"{"model":"m","messages":[{"role":"assistant","content":"hi"}]}"#;
        assert_eq!(Request::parse(Dialect::ChatCompletions, none).expect("parses").task_line(), None);
    }

    #[test]
    fn the_dialect_comes_from_the_path() {
        assert_eq!(Dialect::from_path("/v1/messages"), Some(Dialect::AnthropicMessages));
        assert_eq!(Dialect::from_path("/anthropic/v1/messages?beta=true"), Some(Dialect::AnthropicMessages));
        assert_eq!(Dialect::from_path("/openai/v1/chat/completions"), Some(Dialect::ChatCompletions));
        assert_eq!(Dialect::from_path("/v1/responses/"), Some(Dialect::Responses));
        assert_eq!(Dialect::from_path("/responses"), Some(Dialect::Responses), "the ChatGPT backend's");
        assert_eq!(
            Dialect::from_path("/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"),
            Some(Dialect::Gemini)
        );
        assert_eq!(
            Dialect::from_path("/v1beta/models/gemini-2.5-flash:generateContent"),
            Some(Dialect::Gemini)
        );
        assert_eq!(Dialect::from_path("/v1beta/models/gemini-2.5-flash:countTokens"), None);
        assert_eq!(Dialect::from_path("/v1beta/models/:generateContent"), None);
        assert_eq!(
            gemini_model_and_method("/v1beta/models/gemini-2.5-pro:countTokens?key=k"),
            Some(("gemini-2.5-pro", "countTokens"))
        );
        assert_eq!(Dialect::from_path("/v1/messages/count_tokens"), None);
        assert_eq!(Dialect::from_path("/v1/models"), None);
    }

    #[test]
    fn anthropic_messages_keep_their_exact_bytes_and_place() {
        let body = fixtures::anthropic(&fixtures::ANTHROPIC_TURNS[..4]);
        let r = Request::parse(Dialect::AnthropicMessages, body.as_bytes()).unwrap();
        assert_eq!(r.messages.len(), 4);
        assert_eq!(r.model.as_deref(), Some("claude-sonnet-4-5"));
        assert!(r.system.starts_with("You are Claude Code"), "{}", r.system);
        assert!(r.system.contains("Be concise."), "both blocks: {}", r.system);
        assert!(r.user_id.as_deref().unwrap().contains("session_"));
        assert_eq!(&body[r.array.clone()], format!("[{}]", fixtures::ANTHROPIC_TURNS[..4].join(",")));
        for (i, turn) in fixtures::ANTHROPIC_TURNS[..4].iter().enumerate() {
            assert_eq!(&body[r.message_range(i)], *turn, "message {i}");
        }
    }

    #[test]
    fn chat_completions_system_is_the_leading_system_and_developer_messages() {
        let body = fixtures::chat(&fixtures::CHAT_TURNS);
        let r = Request::parse(Dialect::ChatCompletions, body.as_bytes()).unwrap();
        assert_eq!(r.system, "You are Cline, a coding agent.\n\nPrefer small diffs.");
        assert_eq!(r.messages.len(), fixtures::CHAT_TURNS.len());
        assert_eq!(r.messages[3].get(), fixtures::CHAT_TURNS[3]);
    }

    #[test]
    fn responses_input_is_an_array_or_a_string() {
        let body = fixtures::responses(&fixtures::RESPONSES_ITEMS);
        let r = Request::parse(Dialect::Responses, body.as_bytes()).unwrap();
        assert_eq!(r.kind, ArrayKind::Array);
        assert_eq!(r.system, "You are Codex, a coding agent.");
        assert_eq!(r.prompt_cache_key.as_deref(), Some("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"));
        assert_eq!(r.messages[1].get(), fixtures::RESPONSES_ITEMS[1]);

        let body =
            r#"{"model":"gpt-5-codex","instructions":"Be brief.","input":"list the files","stream":true}"#;
        let r = Request::parse(Dialect::Responses, body.as_bytes()).unwrap();
        assert_eq!(r.kind, ArrayKind::String);
        assert_eq!(&body[r.array.clone()], r#""list the files""#);
    }

    #[test]
    fn gemini_contents_system_instruction_and_the_model_from_the_path() {
        let body = r#"{"contents":[{"role":"user","parts":[{"text":"<session_context>x</session_context>"}]},{"role":"user","parts":[{"text":"Fix the build"}]}],"systemInstruction":{"role":"user","parts":[{"text":"You are Gemini CLI."},{"text":"Be brief."}]},"tools":[{"functionDeclarations":[]}]}"#;
        let r = Request::parse(Dialect::Gemini, body.as_bytes()).unwrap();
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.system, "You are Gemini CLI.\n\nBe brief.");
        assert!(r.system_raw.unwrap().get().starts_with(r#"{"role":"user""#));
        assert!(r.tools.is_some());
        assert_eq!(r.model, None, "the body names no model");
        let r = r.with_path_model("/v1beta/models/gemini-2.5-pro:generateContent");
        assert_eq!(r.model.as_deref(), Some("gemini-2.5-pro"));
        assert_eq!(
            r.task_line().as_deref(),
            Some("Fix the build"),
            "Gemini CLI's session context is its own"
        );
        let snake = r#"{"contents":[],"system_instruction":{"parts":[{"text":"s"}]}}"#;
        assert_eq!(Request::parse(Dialect::Gemini, snake.as_bytes()).unwrap().system, "s");
        assert_eq!(
            Request::parse(Dialect::Gemini, br#"{"messages":[]}"#).unwrap_err(),
            GatewayError::NoConversation("contents")
        );
    }

    #[test]
    fn pretty_printed_bodies_are_read_in_place() {
        let body = "{\n  \"model\": \"gpt-4o\",\n  \"messages\": [\n    {\"role\": \"user\", \"content\": \"hi\"}\n  ]\n}";
        let r = Request::parse(Dialect::ChatCompletions, body.as_bytes()).unwrap();
        assert_eq!(&body[r.array.clone()], "[\n    {\"role\": \"user\", \"content\": \"hi\"}\n  ]");
        assert_eq!(&body[r.message_range(0)], "{\"role\": \"user\", \"content\": \"hi\"}");
    }

    #[test]
    fn a_body_without_a_conversation_or_not_json_is_refused() {
        let no_messages = Request::parse(Dialect::AnthropicMessages, br#"{"model":"x"}"#).unwrap_err();
        assert_eq!(no_messages, GatewayError::NoConversation("messages"));
        let string_messages = Request::parse(Dialect::ChatCompletions, br#"{"messages":"hi"}"#).unwrap_err();
        assert_eq!(string_messages, GatewayError::NoConversation("messages"));
        assert!(matches!(
            Request::parse(Dialect::Responses, b"{\"input\":["),
            Err(GatewayError::Malformed(_))
        ));
        assert!(matches!(Request::parse(Dialect::Responses, b"\xff"), Err(GatewayError::Malformed(_))));
    }
}
