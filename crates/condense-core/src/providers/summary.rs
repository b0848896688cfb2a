//! What `native` and `manual` share: which messages a summary stands in for, the sectioned prompt
//! that asks for it, and how the answer enters the conversation.

use serde::{Deserialize, Serialize};

use crate::config::{ConfigField, ConfigForm, SharedSettings};
use crate::error::CondenseError;
use crate::llm::{ChatMessage, ChatRole, PromptBundle};
use crate::model::{ContentBlock, Message, Role, next_condense_id, tool_result_text};
use crate::provider::CondensationContext;

/// The fewest visible messages worth summarizing.
pub const MIN_MESSAGES: usize = 5;
/// The fewest tokens worth summarizing.
pub const MIN_TOKENS: usize = 200;
/// The fewest messages since the last summary before another.
pub const MIN_MESSAGES_SINCE_SUMMARY: usize = 3;
/// Messages at the end kept as they are, unless configured.
pub const DEFAULT_KEEP_LAST: usize = 3;

/// The default instructions: the sections of Roo Code's condense prompt.
pub const SUMMARY_PROMPT: &str = "\
Write a detailed summary of the conversation above, so that the work can go on without it. \
Capture the user's explicit requests, what was done, the technical details, code and decisions \
needed to continue.

Use these sections:
1. Primary request and intent: everything the user asked for, in detail.
2. Key technical concepts: technologies, frameworks and ideas that came up.
3. Files and code: each file read, changed or created, why it matters, and the important snippets.
4. Errors and fixes: problems met and how they were fixed, including the user's feedback.
5. Problem solving: what was solved and any troubleshooting still going on.
6. All user messages: every message the user wrote (not tool results), listed.
7. Pending tasks: what the user asked for that is not done yet.
8. Current work: precisely what was being worked on just before this summary.
9. Next step: the next step, in line with the most recent request; quote the latest messages \
verbatim to show exactly where the work stopped.";

/// How the summary must be written.
pub const OUTPUT_INSTRUCTIONS: &str =
    "Answer with the summary only, in Markdown, under the numbered section headings above.";

/// The form field of how many messages to keep; its default is the configuration type's.
pub fn keep_last_field() -> ConfigField {
    ConfigField::integer(
        "keep_last",
        "Keep last",
        "Messages at the end of the conversation kept word for word after the summary.",
        0,
        None,
    )
    .unit("messages")
}

/// The form field of the summary instructions: the shared custom prompt, which resets to
/// [`SUMMARY_PROMPT`].
pub fn prompt_field() -> ConfigField {
    SharedSettings::custom_prompt_field().with_default(SUMMARY_PROMPT)
}

/// The shared rule on a custom prompt (see [`SharedSettings`]), for a configuration that carries
/// one.
pub fn check_prompt(custom_prompt: Option<&str>) -> Result<(), String> {
    SharedSettings { custom_prompt: custom_prompt.map(str::to_owned), condensing_profile: None }.check()
}

/// The settings both summary providers share; `native`'s configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummaryConfig {
    /// Messages at the end kept as they are.
    pub keep_last: usize,
    /// Instructions replacing [`SUMMARY_PROMPT`].
    pub custom_prompt: Option<String>,
    /// Keep the state ledger of what the summary hides (see `crate::ledger`).
    pub ledger: bool,
}

impl Default for SummaryConfig {
    fn default() -> Self {
        SummaryConfig { keep_last: DEFAULT_KEEP_LAST, custom_prompt: None, ledger: true }
    }
}

/// The form of a provider that calls an LLM: the profile that writes is shared too.
impl ConfigForm for SummaryConfig {
    fn fields() -> Vec<ConfigField> {
        vec![
            keep_last_field(),
            prompt_field(),
            SharedSettings::condensing_profile_field(),
            crate::config::ledger_field(),
        ]
    }

    fn check(&self) -> Result<(), String> {
        check_prompt(self.custom_prompt.as_deref())
    }
}

/// Which messages a summary replaces: the visible ones between the first and the kept tail, but
/// the pinned ones.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryPlan {
    /// Index (in the whole list) of the first visible message, kept.
    pub first: usize,
    /// Indices of the visible messages the summary stands in for (pinned ones left out).
    pub middle: Vec<usize>,
    /// Index of the first message of the kept tail.
    pub tail_start: usize,
}

/// Chooses what to summarize, or says why there is nothing to. The tail starts at a user message
/// that answers no tool call where possible, so the summary (an assistant turn) keeps the roles
/// alternating and no tool result loses its call.
pub fn plan(ctx: &CondensationContext<'_>, keep_last: usize) -> Result<SummaryPlan, CondenseError> {
    let visible = ctx.visible();
    if visible.len() < MIN_MESSAGES {
        return Err(CondenseError::NothingToCondense(format!(
            "{} messages; a summary needs at least {MIN_MESSAGES}",
            visible.len()
        )));
    }
    if ctx.prev_context_tokens < MIN_TOKENS {
        return Err(CondenseError::NothingToCondense(format!(
            "{} tokens; a summary needs at least {MIN_TOKENS}",
            ctx.prev_context_tokens
        )));
    }
    if let Some(last_summary) = visible.iter().rposition(|&i| ctx.messages[i].is_summary) {
        let since = visible.len() - 1 - last_summary;
        if since < MIN_MESSAGES_SINCE_SUMMARY {
            return Err(CondenseError::NothingToCondense(format!(
                "{since} messages since the last summary; at least {MIN_MESSAGES_SINCE_SUMMARY} are needed"
            )));
        }
    }
    let answers_a_call =
        |i: usize| ctx.messages[i].content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. }));
    let clean_start = |i: usize| ctx.messages[i].role == Role::User && !answers_a_call(i);
    let wanted = visible.len().saturating_sub(keep_last).max(1);
    let mut start = wanted;
    while start > 1 && start < visible.len() && !clean_start(visible[start]) {
        start -= 1;
    }
    if start <= 1 || (start < visible.len() && !clean_start(visible[start])) {
        // No clean user turn: settle for a tail that at least answers no hidden call.
        start = wanted;
        while start > 1 && start < visible.len() && answers_a_call(visible[start]) {
            start -= 1;
        }
    }
    if start <= 1 {
        return Err(CondenseError::NothingToCondense(format!(
            "nothing between the first message and the last {keep_last} to summarize"
        )));
    }
    // Pinned messages (with their tool-pair partners) in the middle stay where they are; the
    // summary stands in for the rest and comes after the last message it hides.
    let pinned = ctx.pinned();
    let middle: Vec<usize> = visible[1..start].iter().copied().filter(|i| !pinned.contains(i)).collect();
    if middle.is_empty() {
        return Err(CondenseError::NothingToCondense(format!(
            "every message between the first and the last {keep_last} is pinned"
        )));
    }
    Ok(SummaryPlan {
        first: visible[0],
        middle,
        tail_start: visible.get(start).copied().unwrap_or(ctx.messages.len()),
    })
}

/// [`plan`] with a kept tail that leaves the context within `target`: while the first message,
/// the kept tail and `reserve` tokens (room for the summary) come to more than `target`, the tail
/// keeps fewer of the last messages, down to one. `keep_last` is what the user asked to keep when
/// there is room for it; a request that would not fit the model at all is worse than a shorter
/// tail. With no target the plan is [`plan`]'s; when even the shortest tail does not fit, that
/// tail's plan is the best there is.
pub fn plan_within(
    ctx: &CondensationContext<'_>,
    keep_last: usize,
    target: Option<usize>,
    reserve: usize,
    tokens: &dyn crate::tokens::TokenCounter,
) -> Result<SummaryPlan, CondenseError> {
    let planned = plan(ctx, keep_last)?;
    let Some(target) = target else { return Ok(planned) };
    let kept = |p: &SummaryPlan| {
        let hidden: std::collections::BTreeSet<usize> = p.middle.iter().copied().collect();
        let view: Vec<&Message> = (0..ctx.messages.len())
            .filter(|i| ctx.messages[*i].is_visible() && !hidden.contains(i))
            .map(|i| &ctx.messages[i])
            .collect();
        tokens.count_request(ctx.system, &view) + reserve
    };
    let mut best = planned;
    let mut n = keep_last;
    while kept(&best) > target && n > 1 {
        n -= 1;
        match plan(ctx, n) {
            // A shorter request may land on the same clean start: try fewer still.
            Ok(p) if p.tail_start > best.tail_start => best = p,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(best)
}

/// A message as a plain-text prompt turn: tool calls and results written out, so that any model
/// can read it without tool definitions.
pub fn to_chat(m: &Message) -> ChatMessage {
    let role = match m.role {
        Role::User => ChatRole::User,
        Role::Assistant => ChatRole::Assistant,
    };
    ChatMessage { role, content: as_text(m) }
}

/// A message as plain text for a prompt: tool calls and results written out.
fn as_text(message: &Message) -> String {
    let mut parts = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text, .. } => parts.push(text.clone()),
            ContentBlock::ToolUse { name, input, .. } => parts.push(format!("[tool call: {name} {input}]")),
            ContentBlock::ToolResult { content, is_error, .. } => {
                let label = if *is_error { "tool error" } else { "tool result" };
                parts.push(format!("[{label}]\n{}", tool_result_text(content)));
            }
            ContentBlock::Image { .. } => parts.push("[image]".into()),
            ContentBlock::Opaque(block) => parts.push(block.prompt_text()),
        }
    }
    parts.join("\n")
}

/// The request for a summary: the first message and the middle as the conversation, then the
/// instructions as the last turn — small models follow an instruction best when it comes last.
pub fn bundle(ctx: &CondensationContext<'_>, plan: &SummaryPlan, config: &SummaryConfig) -> PromptBundle {
    let conversation_history = std::iter::once(plan.first)
        .chain(plan.middle.iter().copied())
        .map(|i| to_chat(&ctx.messages[i]))
        .collect();
    let mut metadata = serde_json::Map::new();
    metadata.insert("messages_summarized".into(), plan.middle.len().into());
    PromptBundle {
        system_context: "You summarize software engineering conversations between a user and an AI \
            coding assistant, faithfully and completely."
            .into(),
        request: config.custom_prompt.clone().unwrap_or_else(|| SUMMARY_PROMPT.to_owned()),
        output_instructions: OUTPUT_INSTRUCTIONS.into(),
        examples: Vec::new(),
        conversation_history,
        generation_params: None,
        metadata,
        cache: None,
    }
}

/// The conversation with the middle hidden under a new condensation id and the summary in its
/// place, an assistant message marked `is_summary`.
pub fn apply(messages: &[Message], plan: &SummaryPlan, summary: &str) -> (String, Vec<Message>) {
    let condense_id = next_condense_id(messages);
    let last_hidden = *plan.middle.last().expect("a plan has a middle");
    let mut out = Vec::with_capacity(messages.len() + 1);
    for (i, m) in messages.iter().enumerate() {
        let mut m = m.clone();
        if plan.middle.binary_search(&i).is_ok() {
            m.condense_parent = Some(condense_id.clone());
        }
        out.push(m);
        if i == last_hidden {
            let mut s = Message::new(
                format!("{condense_id}.summary"),
                Role::Assistant,
                vec![ContentBlock::text(summary.trim())],
            );
            s.ts = messages[last_hidden].ts;
            s.is_summary = true;
            s.condense_id = Some(condense_id.clone());
            out.push(s);
        }
    }
    (condense_id, out)
}

/// Applies a summary and checks it pays: the new conversation and the metrics both summary
/// providers report, or `context_grew` when the summary would not shrink the context.
pub fn apply_checked(
    ctx: &CondensationContext<'_>,
    tokens: &dyn crate::tokens::TokenCounter,
    plan: &SummaryPlan,
    summary: &str,
) -> Result<(Vec<Message>, serde_json::Map<String, serde_json::Value>), CondenseError> {
    let (condense_id, messages) = apply(ctx.messages, plan, summary);
    let after = ctx.tokens_of(tokens, &messages);
    if after >= ctx.prev_context_tokens {
        return Err(CondenseError::ContextGrew { before: ctx.prev_context_tokens, after });
    }
    let mut metrics = serde_json::Map::new();
    metrics.insert("condense_id".into(), condense_id.into());
    metrics.insert("messages_summarized".into(), plan.middle.len().into());
    metrics.insert("summary_tokens".into(), tokens.count_text(summary).into());
    Ok((messages, metrics))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{Encoding, TiktokenCounter, TokenCounter};

    fn msg(id: &str, role: Role, blocks: Vec<ContentBlock>) -> Message {
        Message::new(id, role, blocks)
    }

    fn ctx_of(messages: &[Message]) -> usize {
        let t = TiktokenCounter::new(Encoding::O200kBase);
        t.count_request(None, &crate::model::api_view(messages))
    }

    fn long(n: usize) -> String {
        "words that carry meaning ".repeat(n)
    }

    #[test]
    fn the_tail_starts_at_a_clean_user_turn() {
        let call = |id: &str| ContentBlock::ToolUse {
            id: id.into(),
            name: "read_file".into(),
            input: serde_json::json!({}),
        };
        let messages = vec![
            msg("a", Role::User, vec![ContentBlock::text(long(20))]),
            msg("b", Role::Assistant, vec![ContentBlock::text("ok"), call("t1")]),
            msg("c", Role::User, vec![ContentBlock::tool_result_text("t1", long(20))]),
            msg("d", Role::Assistant, vec![call("t2")]),
            msg("e", Role::User, vec![ContentBlock::tool_result_text("t2", long(5))]),
            msg("f", Role::Assistant, vec![ContentBlock::text("done")]),
            msg("g", Role::User, vec![ContentBlock::text("thanks")]),
        ];
        let tokens = ctx_of(&messages);
        let ctx = CondensationContext { messages: &messages, system: None, prev_context_tokens: tokens };
        // The last 3 would start at `e`, a tool result. No clean user turn lies between the first
        // message and `e`, so the tail moves back just far enough to keep `e` with its call `d`.
        let p = plan(&ctx, 3).unwrap();
        assert_eq!(p.first, 0);
        assert_eq!(p.middle, [1, 2]);
        assert_eq!(p.tail_start, 3);
        let (cid, out) = apply(&messages, &p, "summary text");
        assert_eq!(cid, "c1");
        let view = crate::model::api_view(&out);
        let ids: Vec<&str> = view.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["a", "c1.summary", "d", "e", "f", "g"]);
        crate::model::check_tool_pairs(&view).unwrap();
        assert_eq!(crate::model::undo_last(&out).unwrap().1, messages);
    }

    #[test]
    fn a_target_shortens_the_kept_tail_down_to_one_message_but_no_further() {
        let t = TiktokenCounter::new(Encoding::O200kBase);
        let mut messages = alternating(8, "short turn");
        // The last three: a long question, a long answer, a new question.
        messages.push(msg("q", Role::User, vec![ContentBlock::text(long(200))]));
        messages.push(msg("r", Role::Assistant, vec![ContentBlock::text(long(200))]));
        messages.push(msg("s", Role::User, vec![ContentBlock::text(long(30))]));
        let before = ctx_of(&messages);
        let ctx = CondensationContext { messages: &messages, system: None, prev_context_tokens: before };
        let wide = plan(&ctx, 3).unwrap();
        assert_eq!(wide.tail_start, 8, "the last three start at the long question");
        // No target, or room for the whole tail: keep-last's plan.
        assert_eq!(plan_within(&ctx, 3, None, 100, &t).unwrap(), wide);
        assert_eq!(plan_within(&ctx, 3, Some(before + 100), 100, &t).unwrap(), wide);
        // Room for the first message, the new question and the summary only: the long pair goes.
        let narrow = plan_within(&ctx, 3, Some(400), 100, &t).unwrap();
        assert_eq!(narrow.tail_start, 10);
        assert_eq!(narrow.middle, (1..10).collect::<Vec<_>>());
        // No room even for that: the new question still stays (the shortest tail there is).
        assert_eq!(plan_within(&ctx, 3, Some(10), 100, &t).unwrap().tail_start, 10);
    }

    /// `n` messages alternating user and assistant, each saying `text`.
    fn alternating(n: usize, text: &str) -> Vec<Message> {
        (0..n)
            .map(|i| {
                let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
                msg(&format!("m{i}"), role, vec![ContentBlock::text(text)])
            })
            .collect()
    }

    #[test]
    fn guards_refuse_with_reasons() {
        let few = alternating(4, &long(30));
        let ctx = CondensationContext { messages: &few, system: None, prev_context_tokens: ctx_of(&few) };
        assert!(plan(&ctx, 3).unwrap_err().to_string().contains("at least 5"));
        let short = alternating(6, "hi");
        let ctx = CondensationContext { messages: &short, system: None, prev_context_tokens: ctx_of(&short) };
        assert!(plan(&ctx, 3).unwrap_err().to_string().contains("at least 200"));
        let mut recent = alternating(8, &long(30));
        recent[6].is_summary = true;
        let ctx =
            CondensationContext { messages: &recent, system: None, prev_context_tokens: ctx_of(&recent) };
        assert!(plan(&ctx, 3).unwrap_err().to_string().contains("1 messages since the last summary"));
    }
}
