//! Reading what a tool printed: the answer's text, an error it reports, the usage, cost and model,
//! from plain text, one JSON document, or JSON lines (the last event that matches).

use serde_json::Value;

use super::config::{Extract, OutputFormat, OutputSpec};
use crate::profile::Usage;

/// What a tool's output says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Normalized {
    /// The answer; `None` when the output holds none.
    pub text: Option<String>,
    /// An error the tool reports in its output.
    pub error: Option<String>,
    /// The token counts it reports.
    pub usage: Option<Usage>,
    /// The cost it reports, in US dollars.
    pub cost_usd: Option<f64>,
    /// The model it says answered.
    pub model: Option<String>,
}

/// Reads a value by path: dotted keys, array indexes, `$first` (the first value of an object or
/// array) and `$first_key` (the first key of an object, as a string).
pub fn lookup(doc: &Value, path: &str) -> Option<Value> {
    let mut at = doc;
    let segments: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    for (i, segment) in segments.iter().enumerate() {
        at = match (*segment, at) {
            ("$first_key", Value::Object(map)) if i + 1 == segments.len() => {
                return map.keys().next().map(|k| Value::String(k.clone()));
            }
            ("$first", Value::Object(map)) => map.values().next()?,
            ("$first", Value::Array(items)) => items.first()?,
            (key, Value::Object(map)) => map.get(key)?,
            (index, Value::Array(items)) => items.get(index.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    (!at.is_null()).then(|| at.clone())
}

fn matches(doc: &Value, extract_when: &std::collections::BTreeMap<String, Value>) -> bool {
    extract_when.iter().all(|(path, want)| lookup(doc, path).as_ref() == Some(want))
}

/// The value of the last document that matches and holds the path.
fn find(docs: &[Value], extract: &Extract) -> Option<Value> {
    docs.iter().rev().filter(|d| matches(d, &extract.when)).find_map(|d| lookup(d, &extract.path))
}

fn as_text(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

fn as_count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_f64().filter(|f| f.is_finite() && *f >= 0.0).map(|f| f as u64))
}

/// The documents of a JSON output: the whole text, or, when a tool printed something before its
/// JSON, from the first line that starts one.
fn json_documents(raw: &str) -> Result<Vec<Value>, String> {
    let trimmed = raw.trim();
    if let Ok(v) = serde_json::from_str(trimmed) {
        return Ok(vec![v]);
    }
    let mut offset = 0;
    for line in raw.split_inclusive('\n') {
        if line.trim_start().starts_with(['{', '['])
            && let Ok(v) = serde_json::from_str(raw[offset..].trim())
        {
            return Ok(vec![v]);
        }
        offset += line.len();
    }
    Err(format!("the output is not JSON: {}", head(trimmed)))
}

fn head(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut cut: String = line.chars().take(120).collect();
    if cut.len() < line.len() || text.lines().nth(1).is_some() {
        cut.push('…');
    }
    if cut.is_empty() { "(nothing)".into() } else { cut }
}

/// Reads a tool's output by its spec. `Err` when the output cannot be read at all (not JSON
/// where JSON was promised).
pub fn normalize(spec: &OutputSpec, raw: &str) -> Result<Normalized, String> {
    let docs = match spec.format {
        OutputFormat::Text => {
            let text = raw.trim();
            return Ok(Normalized {
                text: (!text.is_empty()).then(|| text.to_owned()),
                ..Normalized::default()
            });
        }
        OutputFormat::Json => json_documents(raw)?,
        OutputFormat::Jsonl => {
            let docs: Vec<Value> = raw.lines().filter_map(|l| serde_json::from_str(l.trim()).ok()).collect();
            if docs.is_empty() && !raw.trim().is_empty() {
                return Err(format!("the output has no JSON line: {}", head(raw.trim())));
            }
            docs
        }
    };
    let get = |e: &Option<Extract>| e.as_ref().and_then(|e| find(&docs, e));
    let usage = spec.usage.as_ref().and_then(|u| {
        let doc = docs.iter().rev().find(|d| matches(d, &u.when) && lookup(d, &u.input).is_some())?;
        Some(Usage::new(
            as_count(&lookup(doc, &u.input)?)?,
            lookup(doc, &u.output).as_ref().and_then(as_count).unwrap_or(0),
        ))
    });
    Ok(Normalized {
        text: get(&spec.text).map(as_text),
        error: get(&spec.error).filter(|v| *v != Value::Bool(false)).map(as_text),
        usage,
        cost_usd: get(&spec.cost).and_then(|v| v.as_f64()).filter(|c| c.is_finite() && *c >= 0.0),
        model: get(&spec.model).map(as_text),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::config::ToolRegistry;

    fn spec(id: &str) -> OutputSpec {
        ToolRegistry::shipped().get(id).unwrap().config.output.clone()
    }

    #[test]
    fn paths_read_keys_indexes_and_first_entries() {
        let doc = json!({"a": {"b": [1, {"c": "x"}]}, "m": {"gpt-5": {"n": 3}}, "z": null});
        assert_eq!(lookup(&doc, "a.b.1.c"), Some(json!("x")));
        assert_eq!(lookup(&doc, "m.$first.n"), Some(json!(3)));
        assert_eq!(lookup(&doc, "m.$first_key"), Some(json!("gpt-5")));
        assert_eq!(lookup(&doc, "a.b.9"), None);
        assert_eq!(lookup(&doc, "z"), None);
        assert_eq!(lookup(&doc, "a.b.x"), None);
    }

    #[test]
    fn claude_codes_json_result_is_read_with_usage_cost_and_model() {
        let out = json!({"type": "result", "subtype": "success", "is_error": false, "result": "The summary.",
            "session_id": "s", "total_cost_usd": 0.0123,
            "usage": {"input_tokens": 1200, "cache_read_input_tokens": 0, "output_tokens": 80},
            "modelUsage": {"claude-sonnet-4-5-20250929": {"inputTokens": 1200}}});
        let n = normalize(&spec("claude-code"), &out.to_string()).unwrap();
        assert_eq!(n.text.as_deref(), Some("The summary."));
        assert_eq!(n.error, None);
        assert_eq!(n.usage, Some(Usage::new(1200, 80)));
        assert_eq!(n.cost_usd, Some(0.0123));
        assert_eq!(n.model.as_deref(), Some("claude-sonnet-4-5-20250929"));

        let failed = json!({"type": "result", "subtype": "error_during_execution", "is_error": true,
            "result": "API Error: 529 overloaded"});
        let n = normalize(&spec("claude-code"), &failed.to_string()).unwrap();
        assert_eq!(n.error.as_deref(), Some("API Error: 529 overloaded"));
    }

    #[test]
    fn codex_jsonl_gives_the_last_agent_message_and_the_turns_usage() {
        let lines = [
            json!({"type": "thread.started", "thread_id": "t"}),
            json!({"type": "item.completed", "item": {"type": "agent_message", "text": "first"}}),
            json!({"type": "item.completed", "item": {"type": "reasoning", "text": "thinking"}}),
            json!({"type": "item.completed", "item": {"type": "agent_message", "text": "last"}}),
            json!({"type": "turn.completed", "usage": {"input_tokens": 50, "cached_input_tokens": 0, "output_tokens": 7}}),
        ];
        let raw = lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n") + "\nnot json\n";
        let n = normalize(&spec("codex"), &raw).unwrap();
        assert_eq!(n.text.as_deref(), Some("last"));
        assert_eq!(n.usage, Some(Usage::new(50, 7)));
        let failed = [
            json!({"type": "error", "message": "quota"}),
            json!({"type": "turn.failed", "error": {"message": "quota exceeded"}}),
        ];
        let raw = failed.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
        let n = normalize(&spec("codex"), &raw).unwrap();
        assert_eq!((n.text, n.error.as_deref()), (None, Some("quota exceeded")));
        assert!(normalize(&spec("codex"), "plain words").unwrap_err().contains("no JSON line"));
    }

    #[test]
    fn geminis_json_reads_response_and_per_model_stats() {
        let out = json!({"response": "Hi", "stats": {"models": {"gemini-2.5-pro": {"tokens": {"prompt": 24, "candidates": 3}}}}});
        let n = normalize(&spec("gemini"), &format!("Loaded cached credentials.\n{out}")).unwrap();
        assert_eq!(n.text.as_deref(), Some("Hi"));
        assert_eq!(n.usage, Some(Usage::new(24, 3)));
        assert_eq!(n.model.as_deref(), Some("gemini-2.5-pro"));
        let failed = json!({"error": {"type": "ApiError", "message": "quota", "code": 429}});
        assert_eq!(normalize(&spec("gemini"), &failed.to_string()).unwrap().error.as_deref(), Some("quota"));
        assert!(normalize(&spec("gemini"), "Segmentation fault").unwrap_err().contains("not JSON"));
    }
}
