//! The two wire formats: OpenAI Chat Completions (also spoken by Ollama, LM Studio, llama.cpp,
//! vLLM, OpenRouter) and Anthropic Messages. Requests out, SSE events in, error bodies mapped to
//! typed errors.

use serde_json::{Value, json};

use super::prompt::ApiRequest;
use super::sse::SseEvent;
use crate::error::{ErrorKind, LlmError};
use crate::host::HttpRequest;
use crate::profile::{LlmKind, LlmProfile, Usage};

/// The Anthropic API version sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The wire format of a client kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl Wire {
    /// The wire format a profile speaks, if it speaks one.
    pub fn of(kind: LlmKind) -> Option<Wire> {
        match kind {
            LlmKind::Openai | LlmKind::OpenaiCompatible => Some(Wire::OpenAi),
            LlmKind::Anthropic => Some(Wire::Anthropic),
            LlmKind::Manual => None,
        }
    }

    /// The streaming HTTP request for an API request.
    pub fn build(
        self,
        profile: &LlmProfile,
        api_key: Option<&str>,
        req: &ApiRequest,
    ) -> Result<HttpRequest, LlmError> {
        let base = profile.base_url().ok_or_else(|| {
            LlmError::new(ErrorKind::LlmConfig, format!("profile '{}' has no base_url", profile.id))
        })?;
        let messages: Vec<Value> =
            req.messages.iter().map(|m| json!({"role": m.role.as_str(), "content": m.content})).collect();
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), "text/event-stream".to_owned()),
        ];
        let body = match self {
            Wire::OpenAi => {
                let mut all = Vec::with_capacity(messages.len() + 1);
                if let Some(s) = &req.system {
                    all.push(json!({"role": "system", "content": s}));
                }
                all.extend(messages);
                let mut body = json!({
                    "model": profile.model,
                    "messages": all,
                    "stream": true,
                    "stream_options": {"include_usage": true},
                });
                // OpenAI itself wants `max_completion_tokens`; compatible servers know `max_tokens`.
                let max_key =
                    if profile.kind == LlmKind::Openai { "max_completion_tokens" } else { "max_tokens" };
                body[max_key] = req.max_tokens.into();
                if let Some(t) = req.temperature {
                    body["temperature"] = t.into();
                }
                match api_key {
                    Some(key) => headers.push(("authorization".into(), format!("Bearer {key}"))),
                    None if profile.kind == LlmKind::Openai => {
                        return Err(LlmError::new(
                            ErrorKind::LlmConfig,
                            format!("profile '{}' has no API key", profile.id),
                        ));
                    }
                    None => {} // local servers often need none
                }
                body
            }
            Wire::Anthropic => {
                let mut body = json!({
                    "model": profile.model,
                    "max_tokens": req.max_tokens,
                    "messages": messages,
                    "stream": true,
                });
                if let Some(s) = &req.system {
                    body["system"] = s.clone().into();
                }
                if let Some(t) = req.temperature {
                    body["temperature"] = t.into();
                }
                let key = api_key.ok_or_else(|| {
                    LlmError::new(ErrorKind::LlmConfig, format!("profile '{}' has no API key", profile.id))
                })?;
                headers.push(("x-api-key".into(), key.to_owned()));
                headers.push(("anthropic-version".into(), ANTHROPIC_VERSION.into()));
                body
            }
        };
        let path = match self {
            Wire::OpenAi => "/chat/completions",
            Wire::Anthropic => "/v1/messages",
        };
        Ok(HttpRequest {
            method: "POST".into(),
            url: format!("{base}{path}"),
            headers,
            body: body.to_string(),
        })
    }

    /// The typed error for an error status and its body.
    pub fn status_error(self, status: u16, retry_after_ms: Option<u64>, body: &str) -> LlmError {
        let parsed: Option<Value> = serde_json::from_str(body).ok();
        let error = parsed.as_ref().and_then(|v| v.get("error"));
        let message = error
            .and_then(|e| e.get("message").and_then(Value::as_str).or_else(|| e.as_str()))
            .map(str::to_owned)
            .unwrap_or_else(|| {
                let snippet: String = body.chars().take(200).collect();
                if snippet.trim().is_empty() { format!("HTTP {status}") } else { snippet }
            });
        let code = error
            .map(|e| {
                ["code", "type"]
                    .iter()
                    .filter_map(|k| e.get(*k).and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let kind = match status {
            401 | 403 => ErrorKind::LlmAuth,
            429 => ErrorKind::LlmRateLimit,
            400 | 413 if is_overflow(&code, &message) => ErrorKind::LlmContextOverflow,
            500..=599 => ErrorKind::LlmServer,
            _ => ErrorKind::LlmBadRequest,
        };
        LlmError { status: Some(status), retry_after_ms, ..LlmError::new(kind, message) }
    }
}

/// Whether an error says the prompt is too long, in the words of OpenAI, Anthropic, llama.cpp,
/// Ollama or vLLM.
fn is_overflow(code: &str, message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    code.contains("context_length_exceeded")
        || code.contains("exceed_context_size")
        || m.contains("prompt is too long")
        || m.contains("maximum context length")
        || m.contains("context length")
        || m.contains("context window")
        || m.contains("exceeds the available context size")
}

/// Decodes a stream's events into deltas, remembering the usage and stop reason.
#[derive(Debug, Default)]
pub(super) struct Decoder {
    /// The role, once announced.
    pub(super) role: Option<String>,
    /// Tokens reported so far.
    pub usage: Option<Usage>,
    /// Why the model stopped.
    pub finish_reason: Option<String>,
    /// Whether the stream's end marker arrived.
    pub done: bool,
    /// The model the server named.
    pub model: Option<String>,
}

/// What one event meant.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Decoded {
    /// Text to append.
    pub content: String,
    /// The role, on the first event that names it.
    pub(super) role: Option<String>,
}

impl Decoder {
    /// Decodes one event.
    pub(super) fn event(&mut self, wire: Wire, event: &SseEvent) -> Result<Decoded, LlmError> {
        match wire {
            Wire::OpenAi => self.openai(event),
            Wire::Anthropic => self.anthropic(event),
        }
    }

    fn openai(&mut self, event: &SseEvent) -> Result<Decoded, LlmError> {
        let mut out = Decoded::default();
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(out);
        }
        let v = parse(&event.data)?;
        if let Some(e) = v.get("error") {
            return Err(stream_error(e));
        }
        if let Some(model) = v.get("model").and_then(Value::as_str)
            && self.model.is_none()
        {
            self.model = Some(model.to_owned());
        }
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.usage =
                Some(Usage { input_tokens: n("prompt_tokens"), output_tokens: n("completion_tokens") });
        }
        for choice in v.get("choices").and_then(Value::as_array).into_iter().flatten() {
            let delta = choice.get("delta");
            if let Some(role) = delta.and_then(|d| d.get("role")).and_then(Value::as_str)
                && self.role.is_none()
            {
                self.role = Some(role.to_owned());
                out.role = Some(role.to_owned());
            }
            if let Some(text) = delta.and_then(|d| d.get("content")).and_then(Value::as_str) {
                out.content.push_str(text);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        Ok(out)
    }

    fn anthropic(&mut self, event: &SseEvent) -> Result<Decoded, LlmError> {
        let mut out = Decoded::default();
        let v = parse(&event.data)?;
        let kind = event.event.as_deref().or_else(|| v.get("type").and_then(Value::as_str)).unwrap_or("");
        let n = |u: &Value, k: &str| u.get(k).and_then(Value::as_u64);
        match kind {
            "message_start" => {
                let message = v.get("message").ok_or_else(|| malformed("message_start without a message"))?;
                let role = message.get("role").and_then(Value::as_str).unwrap_or("assistant").to_owned();
                self.role = Some(role.clone());
                out.role = Some(role);
                self.model = message.get("model").and_then(Value::as_str).map(str::to_owned);
                if let Some(u) = message.get("usage") {
                    self.usage = Some(Usage {
                        input_tokens: n(u, "input_tokens").unwrap_or(0)
                            + n(u, "cache_creation_input_tokens").unwrap_or(0)
                            + n(u, "cache_read_input_tokens").unwrap_or(0),
                        output_tokens: n(u, "output_tokens").unwrap_or(0),
                    });
                }
            }
            "content_block_delta" => {
                let delta = v.get("delta").ok_or_else(|| malformed("content_block_delta without a delta"))?;
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    out.content.push_str(text);
                }
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.finish_reason = Some(reason.to_owned());
                }
                if let Some(output) = v.get("usage").and_then(|u| n(u, "output_tokens")) {
                    let usage = self.usage.get_or_insert_with(Usage::default);
                    usage.output_tokens = output;
                }
            }
            "message_stop" => self.done = true,
            "error" => return Err(stream_error(v.get("error").unwrap_or(&v))),
            _ => {} // ping, content_block_start, content_block_stop
        }
        Ok(out)
    }
}

fn parse(data: &str) -> Result<Value, LlmError> {
    serde_json::from_str(data).map_err(|e| {
        let snippet: String = data.chars().take(80).collect();
        malformed(&format!("an event is not JSON ({e}): {snippet}"))
    })
}

fn malformed(message: &str) -> LlmError {
    LlmError::new(ErrorKind::LlmMalformedStream, message)
}

/// An error event inside a stream: overloads and server errors are `server`, the rest by type.
fn stream_error(e: &Value) -> LlmError {
    let message = e.get("message").and_then(Value::as_str).unwrap_or("error event in the stream").to_owned();
    let kind_text = e.get("type").and_then(Value::as_str).unwrap_or("");
    let kind = match kind_text {
        "rate_limit_error" => ErrorKind::LlmRateLimit,
        "authentication_error" | "permission_error" => ErrorKind::LlmAuth,
        "invalid_request_error" if is_overflow(kind_text, &message) => ErrorKind::LlmContextOverflow,
        _ => ErrorKind::LlmServer,
    };
    LlmError::new(kind, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::prompt::ChatMessage;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.to_owned() }
    }

    #[test]
    fn openai_requests_stream_with_usage_and_the_right_token_field() {
        let req = ApiRequest {
            system: Some("sys".into()),
            messages: vec![ChatMessage::user("hi")],
            max_tokens: 100,
            temperature: Some(0.2),
        };
        let p = LlmProfile::new("o", LlmKind::Openai, "gpt-4o", 128_000);
        let http = Wire::OpenAi.build(&p, Some("sk-test"), &req).unwrap();
        assert_eq!(http.url, "https://api.openai.com/v1/chat/completions");
        assert_eq!(http.header("Authorization"), Some("Bearer sk-test"));
        let body: Value = serde_json::from_str(&http.body).unwrap();
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_completion_tokens"], 100);
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "sys"}));
        let local = LlmProfile {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            ..LlmProfile::new("l", LlmKind::OpenaiCompatible, "m", 4096)
        };
        let http = Wire::OpenAi.build(&local, None, &req).unwrap();
        assert_eq!(http.header("authorization"), None);
        assert!(http.body.contains("\"max_tokens\":100"));
        assert_eq!(Wire::OpenAi.build(&p, None, &req).unwrap_err().kind, ErrorKind::LlmConfig);
    }

    #[test]
    fn anthropic_requests_carry_version_and_key() {
        let req = ApiRequest {
            system: Some("sys".into()),
            messages: vec![ChatMessage::user("hi")],
            max_tokens: 100,
            temperature: None,
        };
        let p = LlmProfile::new("a", LlmKind::Anthropic, "claude-sonnet-4-5", 200_000);
        let http = Wire::Anthropic.build(&p, Some("key"), &req).unwrap();
        assert_eq!(http.url, "https://api.anthropic.com/v1/messages");
        assert_eq!(http.header("x-api-key"), Some("key"));
        assert_eq!(http.header("anthropic-version"), Some(ANTHROPIC_VERSION));
        let body: Value = serde_json::from_str(&http.body).unwrap();
        assert_eq!(body["system"], "sys");
        assert!(body.get("temperature").is_none());
    }

    #[test]
    fn openai_stream_decodes_text_usage_and_stop() {
        let mut d = Decoder::default();
        let first = d.event(Wire::OpenAi, &ev(None, r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#)).unwrap();
        assert_eq!(first.role.as_deref(), Some("assistant"));
        let text = d
            .event(
                Wire::OpenAi,
                &ev(None, r#"{"choices":[{"index":0,"delta":{"content":"Hé"},"finish_reason":null}]}"#),
            )
            .unwrap();
        assert_eq!(text.content, "Hé");
        d.event(Wire::OpenAi, &ev(None, r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#))
            .unwrap();
        d.event(
            Wire::OpenAi,
            &ev(
                None,
                r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#,
            ),
        )
        .unwrap();
        d.event(Wire::OpenAi, &ev(None, "[DONE]")).unwrap();
        assert!(d.done);
        assert_eq!(d.finish_reason.as_deref(), Some("stop"));
        assert_eq!(d.usage, Some(Usage { input_tokens: 12, output_tokens: 3 }));
        let err = d
            .event(Wire::OpenAi, &ev(None, r#"{"error":{"message":"boom","type":"server_error"}}"#))
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::LlmServer);
        assert_eq!(
            d.event(Wire::OpenAi, &ev(None, "{not json")).unwrap_err().kind,
            ErrorKind::LlmMalformedStream
        );
    }

    #[test]
    fn anthropic_stream_decodes_text_usage_and_stop() {
        let mut d = Decoder::default();
        d.event(Wire::Anthropic, &ev(Some("message_start"), r#"{"type":"message_start","message":{"id":"m","role":"assistant","usage":{"input_tokens":25,"output_tokens":1}}}"#)).unwrap();
        d.event(Wire::Anthropic, &ev(Some("ping"), r#"{"type":"ping"}"#)).unwrap();
        let t = d.event(Wire::Anthropic, &ev(Some("content_block_delta"), r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#)).unwrap();
        assert_eq!(t.content, "Hello");
        d.event(
            Wire::Anthropic,
            &ev(
                Some("message_delta"),
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}"#,
            ),
        )
        .unwrap();
        d.event(Wire::Anthropic, &ev(Some("message_stop"), r#"{"type":"message_stop"}"#)).unwrap();
        assert!(d.done);
        assert_eq!(d.usage, Some(Usage { input_tokens: 25, output_tokens: 15 }));
        assert_eq!(d.finish_reason.as_deref(), Some("end_turn"));
        let e = d
            .event(
                Wire::Anthropic,
                &ev(
                    Some("error"),
                    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ),
            )
            .unwrap_err();
        assert_eq!((e.kind, e.message.as_str()), (ErrorKind::LlmServer, "Overloaded"));
    }

    #[test]
    fn error_statuses_map_to_kinds() {
        let cases = [
            (
                401,
                r#"{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}"#,
                ErrorKind::LlmAuth,
            ),
            (
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
                ErrorKind::LlmRateLimit,
            ),
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#,
                ErrorKind::LlmContextOverflow,
            ),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
                ErrorKind::LlmContextOverflow,
            ),
            (
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
                ErrorKind::LlmContextOverflow,
            ),
            (400, r#"{"error":{"message":"bad temperature"}}"#, ErrorKind::LlmBadRequest),
            (
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ErrorKind::LlmServer,
            ),
            (502, "<html>bad gateway</html>", ErrorKind::LlmServer),
        ];
        for (status, body, kind) in cases {
            let e = Wire::OpenAi.status_error(status, None, body);
            assert_eq!(e.kind, kind, "{status} {body}");
            assert_eq!(e.status, Some(status));
        }
        assert_eq!(Wire::OpenAi.status_error(401, None, "").message, "HTTP 401");
    }
}
