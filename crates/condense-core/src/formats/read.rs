//! What the readers of conversation files share: a document's message list, roles, system prompt
//! and tool definitions read with the path of any error, typed reading that names the block or
//! role it does not know, turns built from a session file's items, and RFC 3339 times.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ParseError;
use crate::model::{ContentBlock, Message, Role};

/// Adds blocks to the last message when it has the same role (one turn's items), else a new one
/// (`m1`, `m2`, … by position): for the session files whose records are items of a turn (Codex's,
/// Gemini CLI's). A user's words after tool results start a new message, so results stay right
/// after the call.
pub(super) fn add_turn(messages: &mut Vec<Message>, role: Role, content: Vec<ContentBlock>, ts: i64) {
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

pub(super) fn strip_position(message: &str) -> &str {
    message.rsplit_once(" at line ").map_or(message, |(m, _)| m)
}

/// Deserializes with the path of any error, and says "unknown block type" for content blocks.
pub(super) fn typed<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, ParseError> {
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

/// The messages of an OpenAI or Anthropic document (`{"system", "messages"}` or a bare list).
pub(super) fn message_list(value: &Value) -> (&[Value], Option<&Value>) {
    match value {
        Value::Array(list) => (list, None),
        Value::Object(o) => {
            (o.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice), o.get("system"))
        }
        _ => (&[], None),
    }
}

/// A message's role at `path`, one of `allowed`.
pub(super) fn role_at(m: &Value, path: &str, allowed: &[&str]) -> Result<String, ParseError> {
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
pub(super) fn system_text(value: Option<&Value>, path: &str) -> Result<Option<String>, ParseError> {
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
pub(super) fn tool_definitions(value: &Value, path: &str) -> Result<Vec<Value>, ParseError> {
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
}
