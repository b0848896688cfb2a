//! Prompts as structured values (seed 004): a [`PromptBundle`] says what to ask; a
//! [`PromptAdapter`] says how one kind of client asks it — one readable block for people and
//! manual mode, or the parts of an API request.

use serde::{Deserialize, Serialize};

use crate::formats::{ApiRequest, ChatMessage, ChatRole};
use crate::profile::{GenerationParams, ProviderCapabilities};

/// A structured prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct PromptBundle {
    /// Role, standards and constraints: the system prompt where there is one.
    pub system_context: String,
    /// The task.
    pub request: String,
    /// The form the answer must take.
    pub output_instructions: String,
    /// Few-shot examples.
    pub examples: Vec<String>,
    /// Turns before the request.
    pub conversation_history: Vec<ChatMessage>,
    /// The phase's generation parameters.
    pub generation_params: Option<GenerationParams>,
    /// The caller's bookkeeping. Never sent to a model.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// How the request uses the provider's prompt cache; `None`: not at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheHint>,
}

/// How a bundle asks to be cached (see [`crate::formats::ApiCache`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CacheHint {
    /// The conversation's cache key: a chat's id.
    pub key: String,
    /// The number of leading history turns that were sent before, as a request's whole
    /// conversation: the moving breakpoint closes them, so this request reads them from the cache
    /// and writes nothing after. `None`: the breakpoint is on the last turn (the request itself),
    /// written for the next request to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_before: Option<usize>,
}

/// Turns a bundle into what one kind of client needs.
pub trait PromptAdapter {
    /// One readable block: for manual mode, logs and previews.
    fn render_for_display(&self, bundle: &PromptBundle) -> String;
    /// The parts of an API request.
    fn to_api_request(&self, bundle: &PromptBundle, caps: &ProviderCapabilities) -> ApiRequest;
}

/// The answer size asked for when neither the phase nor the model says.
pub const DEFAULT_MAX_OUTPUT_TOKENS: usize = 4096;

/// The adapter of API clients: the system context as system prompt (with the examples), the
/// history as turns, the request and output instructions as the last user turn.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiAdapter;

impl PromptAdapter for ApiAdapter {
    fn render_for_display(&self, bundle: &PromptBundle) -> String {
        let mut out = String::new();
        if !bundle.system_context.is_empty() {
            out.push_str(&format!("[system]\n{}\n\n", system_with_examples(bundle)));
        }
        for m in &bundle.conversation_history {
            out.push_str(&format!("[{}]\n{}\n\n", m.role.as_str(), m.content));
        }
        out.push_str(&format!("[user]\n{}", last_turn(bundle)));
        out
    }

    fn to_api_request(&self, bundle: &PromptBundle, caps: &ProviderCapabilities) -> ApiRequest {
        let params = bundle.generation_params.unwrap_or_default().clamped(caps);
        let mut turns: Vec<ChatMessage> = if caps.supports_multi_turn {
            bundle.conversation_history.clone()
        } else if bundle.conversation_history.is_empty() {
            Vec::new()
        } else {
            // One turn only: the history becomes a transcript inside the user's message.
            let transcript = bundle
                .conversation_history
                .iter()
                .map(|m| format!("[{}]\n{}", m.role.as_str(), m.content))
                .collect::<Vec<_>>()
                .join("\n\n");
            vec![ChatMessage::user(transcript)]
        };
        // The turns the cached prefix ends with, before they are made to alternate.
        let prefix = bundle
            .cache
            .as_ref()
            .and_then(|c| c.sent_before)
            .filter(|&n| caps.supports_multi_turn && n > 0 && n <= turns.len());
        turns.push(ChatMessage::user(last_turn(bundle)));
        let mut system = Some(system_with_examples(bundle)).filter(|s| !s.is_empty());
        let mut shift = 0;
        if !caps.supports_system_prompt
            && let Some(s) = system.take()
        {
            turns.insert(0, ChatMessage::user(s));
            shift = 1;
        }
        // The breakpoint's turn: the one that closes the prefix, when the turn after it does not
        // merge into it (else the prefix's bytes would change); otherwise the last.
        let closes = prefix.and_then(|n| {
            let (head, rest) = turns.split_at(n + shift);
            let merges = rest.first().zip(head.last()).is_some_and(|(a, b)| a.role == b.role);
            (!merges).then(|| alternate(head.to_vec()).len() - 1)
        });
        let messages = alternate(turns);
        let cache = bundle.cache.as_ref().map(|c| crate::formats::ApiCache {
            key: c.key.clone(),
            breakpoint: closes.unwrap_or(messages.len() - 1),
        });
        ApiRequest {
            system,
            messages,
            max_tokens: params.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
            temperature: params.temperature,
            cache,
        }
    }
}

/// The adapter of manual mode: one self-contained block to paste into any chat.
#[derive(Debug, Clone, Copy, Default)]
pub struct ManualAdapter;

impl PromptAdapter for ManualAdapter {
    fn render_for_display(&self, bundle: &PromptBundle) -> String {
        let mut parts = vec![format!("## Instructions\n\n{}", bundle.system_context.trim())];
        if !bundle.conversation_history.is_empty() {
            let transcript = bundle
                .conversation_history
                .iter()
                .map(|m| format!("### {}\n\n{}", capitalised(m.role.as_str()), m.content.trim()))
                .collect::<Vec<_>>()
                .join("\n\n");
            parts.push(format!("## Conversation\n\n{transcript}"));
        }
        parts.push(format!("## Your task\n\n{}", bundle.request.trim()));
        if !bundle.output_instructions.is_empty() {
            parts.push(format!("## Output format\n\n{}", bundle.output_instructions.trim()));
        }
        if !bundle.examples.is_empty() {
            let examples = bundle
                .examples
                .iter()
                .enumerate()
                .map(|(i, e)| format!("### Example {}\n\n{e}", i + 1))
                .collect::<Vec<_>>()
                .join("\n\n");
            parts.push(format!("## Examples\n\n{examples}"));
        }
        parts.join("\n\n---\n\n") + "\n"
    }

    fn to_api_request(&self, bundle: &PromptBundle, caps: &ProviderCapabilities) -> ApiRequest {
        let params = bundle.generation_params.unwrap_or_default().clamped(caps);
        ApiRequest {
            system: None,
            messages: vec![ChatMessage::user(self.render_for_display(bundle))],
            max_tokens: params.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
            temperature: params.temperature,
            cache: None,
        }
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn system_with_examples(bundle: &PromptBundle) -> String {
    let mut s = bundle.system_context.clone();
    for (i, e) in bundle.examples.iter().enumerate() {
        s.push_str(&format!("\n\nExample {}:\n{e}", i + 1));
    }
    s
}

fn last_turn(bundle: &PromptBundle) -> String {
    [bundle.request.trim(), bundle.output_instructions.trim()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Merges consecutive turns of the same role and makes the list start with the user, as the
/// Anthropic API requires and every other accepts.
fn alternate(turns: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(turns.len());
    for t in turns {
        match out.last_mut() {
            Some(last) if last.role == t.role => {
                last.content.push_str("\n\n");
                last.content.push_str(&t.content);
            }
            None if t.role == ChatRole::Assistant => {
                out.push(ChatMessage::user("(conversation continues)"));
                out.push(t);
            }
            _ => out.push(t),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle() -> PromptBundle {
        let mut metadata = serde_json::Map::new();
        metadata.insert("secret_bookkeeping".into(), "never-sent".into());
        PromptBundle {
            system_context: "You summarize.".into(),
            request: "Summarize the conversation above.".into(),
            output_instructions: "Use sections.".into(),
            examples: vec![],
            conversation_history: vec![
                ChatMessage::user("hi"),
                ChatMessage::user("more"),
                ChatMessage::assistant("hello"),
            ],
            generation_params: Some(GenerationParams {
                max_input_tokens: Some(100_000),
                max_output_tokens: Some(8000),
                temperature: Some(1.7),
            }),
            cache: None,
            metadata,
        }
    }

    #[test]
    fn the_breakpoint_closes_the_prefix_sent_before_unless_the_next_turn_merges_into_it() {
        let history = ["u1", "a1", "u2", "a2", "u3"]
            .map(|t| if t.starts_with('u') { ChatMessage::user(t) } else { ChatMessage::assistant(t) });
        let at = |sent_before| {
            let b = PromptBundle {
                conversation_history: history.to_vec(),
                request: "summarize".into(),
                cache: Some(CacheHint { key: "c".into(), sent_before }),
                ..Default::default()
            };
            ApiAdapter.to_api_request(&b, &ProviderCapabilities::default()).cache.unwrap().breakpoint
        };
        assert_eq!(at(Some(3)), 2, "the last request sent u1 a1 u2: u2 carries its breakpoint again");
        assert_eq!(at(None), 4, "a chat request: its last turn");
        assert_eq!(at(Some(5)), 4, "u3 merges with the request's turn: the last");
        let plain = ApiAdapter.to_api_request(&PromptBundle::default(), &ProviderCapabilities::default());
        assert_eq!(plain.cache, None);
    }

    #[test]
    fn params_are_clamped_by_capabilities() {
        let caps = ProviderCapabilities {
            max_context_tokens: Some(8192),
            max_output_tokens: Some(2048),
            ..Default::default()
        };
        let p = bundle().generation_params.unwrap().clamped(&caps);
        assert_eq!(
            p,
            GenerationParams {
                max_input_tokens: Some(6144),
                max_output_tokens: Some(2048),
                temperature: Some(1.0)
            }
        );
        let no_temp = ProviderCapabilities { supports_temperature: false, ..caps };
        assert_eq!(bundle().generation_params.unwrap().clamped(&no_temp).temperature, None);
    }

    #[test]
    fn api_requests_alternate_and_never_carry_metadata() {
        let caps = ProviderCapabilities { max_output_tokens: Some(2048), ..Default::default() };
        let req = ApiAdapter.to_api_request(&bundle(), &caps);
        assert_eq!(req.system.as_deref(), Some("You summarize."));
        let roles: Vec<ChatRole> = req.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [ChatRole::User, ChatRole::Assistant, ChatRole::User]);
        assert_eq!(req.messages[0].content, "hi\n\nmore");
        assert_eq!(req.messages[2].content, "Summarize the conversation above.\n\nUse sections.");
        assert_eq!(req.max_tokens, 2048);
        assert!(!serde_json::to_string(&req).unwrap().contains("never-sent"));
        let no_system = ProviderCapabilities { supports_system_prompt: false, ..caps };
        let req = ApiAdapter.to_api_request(&bundle(), &no_system);
        assert_eq!(req.system, None);
        assert!(req.messages[0].content.starts_with("You summarize.\n\nhi"));
    }

    #[test]
    fn manual_mode_is_one_readable_block() {
        let text = ManualAdapter.render_for_display(&bundle());
        assert!(text.starts_with("## Instructions\n\nYou summarize."));
        let task = text.find("## Your task").unwrap();
        assert!(text.find("### User\n\nhi").unwrap() < task, "the conversation comes before the task");
        assert!(!text.contains("never-sent"));
    }
}
