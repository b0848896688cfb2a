//! Which session a request belongs to. Agents that name their session are taken at their word;
//! for the others, a hash of what stays fixed over a session: its system prompt and first user
//! message.
//!
//! The hash is FNV-1a ([`crate::model::hash`]): the key is persisted by the host and must be the
//! same across runs, builds and platforms.

use std::fmt;

use serde_json::Value;

pub use crate::model::hash::fnv1a;
use crate::model::hash::{Fnv1aWriter, fnv1a_from};

use super::dialect::Request;
use super::http::{SHOWN_CHARS, shown, shows_as_is};

/// A session's identity, by where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKey {
    /// The `x-context-condenser-session` header: the operator's explicit choice, so it wins.
    Header(String),
    /// Claude Code's `session_<uuid>` inside `metadata.user_id` (or the whole user id), with the
    /// request's model after an `@`: Claude Code sends small side requests (titles, summaries of
    /// a command's output) to another model under the same id, and those are conversations of
    /// their own, not a rewind of the main one (a prompt cache is per model anyway).
    ClaudeCode(String),
    /// Codex's `prompt_cache_key`, its session id.
    PromptCacheKey(String),
    /// FNV-1a of the system prompt and the first user message.
    Hash(u64),
    /// Another conversation under the same key, which agreed with the key's first one (or none
    /// of it) up to where it went its own way: its `n`th branch, from 1 (see
    /// [`super::Sessions::forward_request`]).
    Branch(Box<SessionKey>, u32),
}

impl SessionKey {
    /// The key's branch `n`: the key itself for 0.
    pub fn branch(&self, n: u32) -> SessionKey {
        match n {
            0 => self.clone(),
            n => SessionKey::Branch(Box::new(self.clone()), n),
        }
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionKey::Header(s) => write!(f, "header:{s}"),
            SessionKey::ClaudeCode(s) => write!(f, "claude-code:{s}"),
            SessionKey::PromptCacheKey(s) => write!(f, "prompt-cache-key:{s}"),
            SessionKey::Hash(h) => write!(f, "hash:{h:016x}"),
            SessionKey::Branch(base, n) => write!(f, "{base}~{n}"),
        }
    }
}

/// The `session_<uuid>` part of a Claude Code user id, if it has one.
fn claude_session(user_id: &str) -> Option<&str> {
    let at = user_id.find("session_")?;
    let rest = &user_id[at..];
    let end = "session_".len()
        + rest["session_".len()..]
            .find(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
            .unwrap_or(rest.len() - 8);
    (end > "session_".len()).then(|| &rest[..end])
}

/// `value` without its `cache_control` keys, at any depth.
fn without_cache_control(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(without_cache_control);
        }
        Value::Array(items) => items.iter_mut().for_each(without_cache_control),
        _ => {}
    }
}

/// Whether message `raw` is the user's (not a system, tool or model item), in any dialect.
fn is_user(raw: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow, default)]
        role: Option<&'a str>,
    }
    serde_json::from_str::<Head<'_>>(raw).ok().and_then(|h| h.role) == Some("user")
}

/// A client's name for its session as the key holds it: itself when it shows as it is (see
/// [`shows_as_is`]), else its first characters as shown, escaped, and a hash of the whole, so a
/// long or hostile id can neither fill a log line, `/stats` or the state file, nor merge two
/// sessions whose ids begin alike.
fn bounded(id: &str) -> String {
    if shows_as_is(id) {
        id.to_owned()
    } else {
        format!("{}#{:016x}", shown(id, SHOWN_CHARS - 20), fnv1a(id.as_bytes()))
    }
}

/// The session of `request`: the header, else Claude Code's session id, else Codex's
/// `prompt_cache_key`, else the hash.
pub fn session_key(request: &Request<'_>, header: Option<&str>) -> SessionKey {
    if let Some(h) = header.map(str::trim).filter(|h| !h.is_empty()) {
        return SessionKey::Header(bounded(h));
    }
    if let Some(user_id) = request.user_id.as_deref().filter(|u| !u.is_empty()) {
        let id = claude_session(user_id).unwrap_or(user_id);
        return SessionKey::ClaudeCode(bounded(&match request.model.as_deref().filter(|m| !m.is_empty()) {
            Some(model) => format!("{id}@{model}"),
            None => id.to_owned(),
        }));
    }
    if let Some(key) = request.prompt_cache_key.as_deref().filter(|k| !k.is_empty()) {
        return SessionKey::PromptCacheKey(bounded(key));
    }
    SessionKey::Hash(content_hash(request))
}

/// FNV-1a of the system prompt, a separator byte no UTF-8 text holds, and the first user
/// message's bytes. A client's cache breakpoint (`cache_control`) moves on from the first
/// message after the first request, so it is left out of the hash.
fn content_hash(request: &Request<'_>) -> u64 {
    let mut h = fnv1a(request.system.as_bytes());
    h = fnv1a_from(h, &[0xff]);
    let first = request.messages.iter().map(|m| m.get()).find(|m| is_user(m));
    // A Responses `input` string is the user's message itself.
    let first = first.or_else(|| request.messages.first().map(|m| m.get()).filter(|m| m.starts_with('"')));
    if let Some(first) = first {
        match serde_json::from_str::<Value>(first) {
            Ok(mut value) => {
                without_cache_control(&mut value);
                // Hashed as written: the message's JSON is not built whole.
                h = Fnv1aWriter::json(h, &value).hash;
            }
            Err(_) => h = fnv1a_from(h, first.as_bytes()),
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::*;
    use crate::gateway::Dialect;

    fn parse(dialect: Dialect, body: &str) -> Request<'_> {
        Request::parse(dialect, body.as_bytes()).unwrap()
    }

    #[test]
    fn claude_code_is_known_by_the_session_in_its_user_id() {
        let body = fixtures::anthropic(&fixtures::ANTHROPIC_TURNS[..1]);
        let key = session_key(&parse(Dialect::AnthropicMessages, &body), None);
        assert_eq!(key, fixtures::claude_key());
        let side = body.replace(fixtures::CLAUDE_MODEL, "claude-haiku-4-5");
        assert_ne!(
            session_key(&parse(Dialect::AnthropicMessages, &side), None),
            key,
            "a side request to another model is a session of its own"
        );
        assert_eq!(claude_session("user_ab_account_cd_session_"), None);
        let whole = r#"{"messages":[],"metadata":{"user_id":"alice"}}"#;
        assert_eq!(
            session_key(&parse(Dialect::AnthropicMessages, whole), None),
            SessionKey::ClaudeCode("alice".into())
        );
    }

    #[test]
    fn codex_is_known_by_its_prompt_cache_key_and_the_header_wins() {
        let body = fixtures::responses(&fixtures::RESPONSES_ITEMS[..2]);
        let request = parse(Dialect::Responses, &body);
        assert_eq!(
            session_key(&request, None),
            SessionKey::PromptCacheKey("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".into())
        );
        assert_eq!(session_key(&request, Some(" team-a ")), SessionKey::Header("team-a".into()));
        assert_eq!(
            session_key(&request, Some("")).to_string(),
            "prompt-cache-key:0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
        );
    }

    #[test]
    fn a_long_or_hostile_session_id_is_bounded_and_kept_apart() {
        let body = fixtures::responses(&fixtures::RESPONSES_ITEMS[..2]);
        let request = parse(Dialect::Responses, &body);
        let long_a = format!("{}a", "x".repeat(100_000));
        let long_b = format!("{}b", "x".repeat(100_000));
        let a = session_key(&request, Some(&long_a)).to_string();
        let b = session_key(&request, Some(&long_b)).to_string();
        assert!(a.chars().count() <= SHOWN_CHARS + 10, "{}", a.len());
        assert_ne!(a, b, "ids that begin alike stay two sessions");
        let forged = session_key(&request, Some("probe\r\ngateway: forged")).to_string();
        assert!(!forged.contains(['\r', '\n']) && forged.contains("probe\\r\\n"), "{forged}");
        assert_eq!(
            session_key(&request, Some("team-a")).to_string(),
            "header:team-a",
            "a plain id is itself"
        );
    }

    #[test]
    fn other_clients_are_known_by_system_prompt_and_first_user_message() {
        let first = fixtures::chat(&fixtures::CHAT_TURNS[..3]);
        let later = fixtures::chat(&fixtures::CHAT_TURNS);
        let a = session_key(&parse(Dialect::ChatCompletions, &first), None);
        assert!(matches!(a, SessionKey::Hash(_)));
        assert_eq!(a, session_key(&parse(Dialect::ChatCompletions, &later), None), "stable over the session");
        let other = later.replace("Rename `foo`", "Rename `baz`");
        assert_ne!(a, session_key(&parse(Dialect::ChatCompletions, &other), None));
        let other_system = later.replace("You are Cline", "You are Roo");
        assert_ne!(a, session_key(&parse(Dialect::ChatCompletions, &other_system), None));
    }

    #[test]
    fn the_hash_ignores_a_moving_cache_breakpoint_and_is_the_same_on_every_platform() {
        let bare = r#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}"#;
        let marked = r#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}"#;
        let a = session_key(&parse(Dialect::AnthropicMessages, bare), None);
        assert_eq!(a, session_key(&parse(Dialect::AnthropicMessages, marked), None));
        // Pinned: a change of this number re-keys every persisted session.
        assert_eq!(a.to_string(), "hash:dff3fcdb3931f463");
        let string_input = r#"{"input":"hi"}"#;
        assert!(matches!(session_key(&parse(Dialect::Responses, string_input), None), SessionKey::Hash(_)));
    }
}
