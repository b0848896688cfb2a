//! Session files other agents write, read from `tests/fixtures/sessions/`: each format detected,
//! read as the model saw it, exported back to the same API view; every LLM-free provider (and the
//! manual request) run on each, keeping a valid view and every opaque block whole; Cline's
//! `ui_messages.json` refused with a pointer to the history beside it; and a large Claude Code
//! session (hundreds of messages, about 300k tokens), generated here.

mod common;

use common::{StepClock, block_on, counter};
use condense_core::formats::{SourceFormat, parse_conversation, to_anthropic, to_openai};
use condense_core::model::{
    ClientContext, ContentBlock, Message, Role, api_view, check_tool_pairs, undo_last,
};
use condense_core::providers::manual::render_request;
use condense_core::{CondensationManager, CondensationOptions, Conversation, Services, TokenCounter};
use serde_json::{Value, json};

/// A fixture's text, built into the test (the core's tests do no IO either).
fn fixture(name: &str) -> String {
    match name {
        "claude-code.jsonl" => include_str!("../../../tests/fixtures/sessions/claude-code.jsonl"),
        "claude-code-subagent.jsonl" => {
            include_str!("../../../tests/fixtures/sessions/claude-code-subagent.jsonl")
        }
        "codex-rollout.jsonl" => include_str!("../../../tests/fixtures/sessions/codex-rollout.jsonl"),
        "cline-api_conversation_history.json" => {
            include_str!("../../../tests/fixtures/sessions/cline-api_conversation_history.json")
        }
        "anthropic-thinking.json" => include_str!("../../../tests/fixtures/sessions/anthropic-thinking.json"),
        "openai-tools.json" => include_str!("../../../tests/fixtures/sessions/openai-tools.json"),
        "gemini-checkpoint.json" => include_str!("../../../tests/fixtures/sessions/gemini-checkpoint.json"),
        "gemini-stream.jsonl" => include_str!("../../../tests/fixtures/sessions/gemini-stream.jsonl"),
        "cline-ui_messages.json" => include_str!("../../../tests/fixtures/sessions/cline-ui_messages.json"),
        other => panic!("no fixture {other}"),
    }
    .to_owned()
}

const FIXTURES: [(&str, SourceFormat); 8] = [
    ("claude-code.jsonl", SourceFormat::ClaudeCode),
    ("claude-code-subagent.jsonl", SourceFormat::ClaudeCode),
    ("codex-rollout.jsonl", SourceFormat::Codex),
    ("cline-api_conversation_history.json", SourceFormat::Cline),
    ("anthropic-thinking.json", SourceFormat::Anthropic),
    ("openai-tools.json", SourceFormat::OpenAi),
    ("gemini-checkpoint.json", SourceFormat::GeminiChat),
    ("gemini-stream.jsonl", SourceFormat::GeminiStream),
];

fn opaque(messages: &[&Message]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::Opaque(o) => Some(o.json()),
            _ => None,
        })
        .collect()
}

#[test]
fn each_format_is_detected() {
    for (name, format) in FIXTURES {
        let parsed = parse_conversation(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(parsed.format, format, "{name}");
        assert!(check_tool_pairs(&parsed.conversation.api_view()).is_ok(), "{name}");
    }
}

#[test]
fn claude_code_follows_the_live_chain() {
    let c = parse_conversation(&fixture("claude-code.jsonl")).unwrap().conversation;
    let ids: Vec<&str> = c.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "u0000000-0000-4000-8000-000000000001",
            "a0000000-0000-4000-8000-000000000001",
            "u0000000-0000-4000-8000-000000000002",
            "a0000000-0000-4000-8000-000000000004",
            "u0000000-0000-4000-8000-000000000003",
            "a0000000-0000-4000-8000-000000000007",
            "u0000000-0000-4000-8000-000000000005",
            "a0000000-0000-4000-8000-000000000008",
        ]
    );
    // One assistant message per API message: thinking, text and the call, merged again.
    let kinds: Vec<&str> = c.messages[1].content.iter().map(ContentBlock::kind).collect();
    assert_eq!(kinds, ["thinking", "text", "tool_use"]);
    // The two results of one message's two calls are one user message.
    assert_eq!(c.messages[4].content.len(), 2);
    assert_eq!(c.messages[0].ts, 1_755_162_723_114);
    let all = serde_json::to_string(&c).unwrap();
    assert!(!all.contains("Only src/checkout.ts"), "the side chain is skipped");
    assert!(!all.contains("whole test suite"), "the abandoned branch is skipped");
    assert!(c.system.is_none());
}

/// A line missing from the chain (a sanitizer or a cut removed it): the chain goes on with the
/// message before it in the file, instead of ending at the gap.
#[test]
fn claude_code_reads_on_past_a_missing_line() {
    let text = fixture("claude-code.jsonl");
    let gone = "\"uuid\":\"u0000000-0000-4000-8000-000000000002\"";
    let kept: Vec<&str> = text.lines().filter(|l| !l.replace(' ', "").contains(gone)).collect();
    assert_eq!(kept.len() + 1, text.lines().count(), "one line removed");
    let c = parse_conversation(&kept.join("\n")).unwrap().conversation;
    let ids: Vec<&str> = c.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.first(), Some(&"u0000000-0000-4000-8000-000000000001"), "{ids:?}");
    assert!(!ids.contains(&"u0000000-0000-4000-8000-000000000002"));
    assert_eq!(ids.last(), Some(&"a0000000-0000-4000-8000-000000000008"));
    assert!(ids.len() >= 6, "{ids:?}");
}

#[test]
fn codex_reads_what_the_model_saw() {
    let c = parse_conversation(&fixture("codex-rollout.jsonl")).unwrap().conversation;
    let system = c.system.as_deref().unwrap();
    assert!(system.starts_with("Prefer small, reviewed patches."), "{system}");
    assert!(system.contains("<permissions instructions>"), "{system}");
    let roles: String = c.messages.iter().map(|m| if m.role == Role::User { 'u' } else { 'a' }).collect();
    assert_eq!(roles, "uauauauauaua");
    // The UI's copies (`event_msg`) are not read: the user's words appear once.
    assert_eq!(serde_json::to_string(&c).unwrap().matches("returns 500 when the database").count(), 1);
    assert_eq!(c.messages[1].content[0].kind(), "reasoning");
    let ContentBlock::ToolUse { id, name, input } = &c.messages[1].content[1] else { panic!() };
    assert_eq!((id.as_str(), name.as_str()), ("call_Qx1mHealth01", "shell"));
    assert_eq!(input["command"][2], "rg -n \"/health\" src");
    let ContentBlock::ToolUse { name, input, .. } = &c.messages[5].content[1] else { panic!() };
    assert_eq!(name, "apply_patch");
    assert!(input["input"].as_str().unwrap().starts_with("*** Begin Patch"));
    assert!(
        matches!(&c.messages[6].content[0], ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == "call_Qx1mPatch01")
    );
    assert_eq!(c.messages[0].ts, 1_756_821_791_240);
}

#[test]
fn cline_keeps_its_times_and_marks_its_wrappers() {
    let text = fixture("cline-api_conversation_history.json");
    let c = parse_conversation(&text).unwrap().conversation;
    assert_eq!(c.messages.len(), 9);
    assert_eq!(c.messages[0].ts, 1_755_695_531_000);
    assert!(c.messages[2].text().starts_with("[read_file for 'src/theme.css'] Result:"));
    // The environment blocks and the bare resumption notice are client context; the block with
    // the user's new instructions is not.
    let marks: Vec<(usize, ClientContext)> = c
        .messages
        .iter()
        .enumerate()
        .flat_map(|(i, m)| {
            m.content.iter().filter_map(move |b| match b {
                ContentBlock::Text { client: Some(k), .. } => Some((i, *k)),
                _ => None,
            })
        })
        .collect();
    use ClientContext::{EnvironmentDetails as Env, TaskResumption as Resumed};
    assert_eq!(marks, [(0, Env), (2, Env), (4, Env), (6, Env), (7, Resumed), (7, Env)]);
    // The API view is the file's messages exactly: the marks are the project's, not the API's.
    let input: Value = serde_json::from_str(&text).unwrap();
    let out = to_anthropic(&c);
    let wanted: Vec<Value> = input
        .as_array()
        .unwrap()
        .iter()
        .map(|m| json!({"role": m["role"], "content": m["content"]}))
        .collect();
    assert_eq!(out["messages"].as_array().unwrap(), &wanted);
    assert!(!to_openai(&c).to_string().contains("\"client\""));
    assert!(serde_json::to_string(&c).unwrap().contains("\"client\":\"environment_details\""));
}

/// The number of blocks a list of Claude Code events' messages hold (a string content is one).
fn event_blocks<'a>(events: impl Iterator<Item = &'a Value>) -> usize {
    events
        .map(|e| match &e["message"]["content"] {
            Value::String(_) => 1,
            Value::Array(blocks) => blocks.len(),
            _ => 0,
        })
        .sum()
}

fn block_count(c: &Conversation) -> usize {
    c.messages.iter().map(|m| m.content.len()).sum()
}

/// The `tool_use` blocks of a conversation, as id and name.
fn calls(c: &Conversation) -> Vec<(&str, &str)> {
    c.messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, .. } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect()
}

/// The `tool_result` blocks of a conversation, as the id answered and whether the call failed.
fn results(c: &Conversation) -> Vec<(&str, bool)> {
    c.messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, is_error, .. } => Some((tool_use_id.as_str(), *is_error)),
            _ => None,
        })
        .collect()
}

/// A sub-agent's transcript (`agent-<id>.jsonl`: every event on a side chain) is a conversation
/// of its own, read as a session is: from the sub-agent's prompt to its report.
#[test]
fn a_claude_code_sub_agent_transcript_is_its_own_conversation() {
    let text = fixture("claude-code-subagent.jsonl");
    let c = parse_conversation(&text).unwrap().conversation;
    let ids: Vec<&str> = c.messages.iter().map(|m| &m.id[m.id.len() - 2..]).collect();
    assert_eq!(ids, ["01", "02", "05", "06", "09", "11"]);
    let kinds: Vec<Vec<&str>> =
        c.messages.iter().map(|m| m.content.iter().map(ContentBlock::kind).collect()).collect();
    assert_eq!(
        kinds,
        [
            vec!["text"],
            vec!["text", "tool_use"],
            vec!["tool_result"],
            vec!["text", "tool_use", "tool_use"],
            vec!["tool_result", "tool_result"],
            vec!["text"],
        ]
    );
    assert!(c.messages[0].text().starts_with("Find every caller of cartTotal()"));
    assert!(c.messages[5].text().contains("src/widgets/miniCart.tsx:17"));
    assert_eq!(c.messages[0].ts, 1_761_055_331_305);
    assert!(check_tool_pairs(&c.api_view()).is_ok());
    // Every block of every message event is in the conversation: none lost to the side chain.
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(block_count(&c), event_blocks(events.iter().filter(|e| e["message"].is_object())));
}

/// A main session with side-chain lines in it still reads its main chain only, whoever wrote them.
#[test]
fn a_main_session_still_skips_side_chains() {
    let main = fixture("claude-code.jsonl");
    let alone = parse_conversation(&main).unwrap().conversation;
    let with_agent = format!("{main}{}", fixture("claude-code-subagent.jsonl"));
    assert_eq!(parse_conversation(&with_agent).unwrap().conversation, alone);
}

/// Cline's `ui_messages.json` (the chat panel's records) is not the conversation: refused, naming
/// the file that is.
#[test]
fn clines_ui_messages_is_refused_naming_the_history() {
    let e = parse_conversation(&fixture("cline-ui_messages.json")).unwrap_err();
    assert_eq!(e.path, "");
    assert_eq!(
        e.message,
        "this is Cline's ui_messages.json (what the chat panel shows); open api_conversation_history.json in the same task folder, which holds the conversation sent to the model"
    );
    // Pretty-printed, as Roo Code writes it, too.
    let records: Value = serde_json::from_str(&fixture("cline-ui_messages.json")).unwrap();
    let pretty = serde_json::to_string_pretty(&records).unwrap();
    assert!(parse_conversation(&pretty).unwrap_err().message.contains("api_conversation_history.json"));
}

/// A chat saved by Gemini CLI's `/chat save`: every part a block, calls given stable ids and
/// answered by their responses, thoughts and images kept.
#[test]
fn gemini_chats_pair_calls_and_responses() {
    let text = fixture("gemini-checkpoint.json");
    let input: Value = serde_json::from_str(&text).unwrap();
    let c = parse_conversation(&text).unwrap().conversation;
    let history = input["history"].as_array().unwrap();
    assert_eq!(c.messages.len(), history.len());
    let parts: usize = history.iter().map(|h| h["parts"].as_array().unwrap().len()).sum();
    assert_eq!(block_count(&c), parts, "every part is one block");
    let (calls, results) = (calls(&c), results(&c));
    assert_eq!(
        calls,
        [
            ("call_3_2", "read_file"),
            ("call_5_1", "replace"),
            ("call_5_2", "search_file_content"),
            ("call_7_1", "replace"),
            ("call_10_0", "run_shell_command"),
            ("call_12_0", "run_shell_command"),
        ]
    );
    let answered: Vec<&str> = results.iter().map(|(id, _)| *id).collect();
    assert_eq!(answered, calls.iter().map(|(id, _)| *id).collect::<Vec<_>>());
    assert_eq!(results.iter().filter(|(_, failed)| *failed).count(), 1, "the declined call failed");
    assert!(check_tool_pairs(&c.api_view()).is_ok());
    let ContentBlock::ToolUse { input: args, .. } = &c.messages[3].content[2] else { panic!() };
    assert_eq!(args["absolute_path"], "/home/dev/api/src/routes/health.ts");
    assert_eq!(c.messages[3].content[0].kind(), "thought");
    assert_eq!(c.messages[9].content[1].kind(), "image");
    assert!(c.messages[0].text().starts_with("This is the Gemini CLI."));
    assert!(c.system.is_none());
}

/// A `gemini --output-format stream-json` transcript: each streamed answer one text, calls and
/// results by `tool_id`, the CLI's own events (init, warnings, the result's stats) left out.
#[test]
fn gemini_streams_join_each_answer() {
    let text = fixture("gemini-stream.jsonl");
    let c = parse_conversation(&text).unwrap().conversation;
    let roles: String = c.messages.iter().map(|m| if m.role == Role::User { 'u' } else { 'a' }).collect();
    assert_eq!(roles, "uauaua");
    assert_eq!(
        c.messages[1].content[0],
        ContentBlock::text("I'll look at the CI workflow and the test configuration.")
    );
    assert_eq!(c.messages[0].ts, 1_760_100_001_010);
    assert_eq!(c.messages[1].ts, 1_760_100_004_100);
    // Every piece the model said, and every user message, is there, in order.
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let said = |role: &str| -> String {
        events
            .iter()
            .filter(|e| e["type"] == "message" && e["role"] == role)
            .map(|e| e["content"].as_str().unwrap())
            .collect()
    };
    let held = |role: Role| -> String {
        c.messages.iter().filter(|m| m.role == role).map(|m| m.text()).collect::<Vec<_>>().concat()
    };
    assert_eq!(held(Role::Assistant), said("assistant"));
    assert_eq!(held(Role::User), said("user"));
    let (calls, results) = (calls(&c), results(&c));
    let used: Vec<&str> =
        events.iter().filter(|e| e["type"] == "tool_use").map(|e| e["tool_id"].as_str().unwrap()).collect();
    assert_eq!(calls.iter().map(|(id, _)| *id).collect::<Vec<_>>(), used);
    assert_eq!(results.iter().map(|(id, _)| *id).collect::<Vec<_>>(), used);
    assert_eq!(results.iter().map(|(_, failed)| *failed).collect::<Vec<_>>(), [false, false, true]);
    assert!(check_tool_pairs(&c.api_view()).is_ok());
    let all = serde_json::to_string(&c).unwrap();
    assert!(!all.contains("Loop detection") && !all.contains("total_tokens"), "{all}");
}

/// The sessions the newest importers read condense, and what is written back (this project's
/// format, or `condense run`'s result) reads again with every message, hidden ones included.
#[test]
fn new_sessions_condense_and_read_back() {
    let tokens = counter();
    for name in ["claude-code-subagent.jsonl", "gemini-checkpoint.json", "gemini-stream.jsonl"] {
        let c = parse_conversation(&fixture(name)).unwrap().conversation;
        let before = tokens.count_request(c.system.as_deref(), &c.api_view());
        // Small sessions: their last messages are most of them, so the target stays above the
        // floor (the first message and the last three).
        let result = run(&c, "truncation", Some(before * 9 / 10));
        check(name, "truncation", &c, &result);
        assert!(result.error.is_none(), "{name}: {:?}", result.error);
        assert!(result.new_context_tokens.unwrap() < before, "{name}");
        let written = Conversation { messages: result.messages.clone(), ..c.clone() };
        let again = parse_conversation(&serde_json::to_string_pretty(&written).unwrap()).unwrap();
        assert_eq!(again.format, SourceFormat::Native, "{name}");
        assert_eq!(again.conversation, written, "{name}");
        let document = parse_conversation(&serde_json::to_string(&result).unwrap()).unwrap();
        assert_eq!(document.conversation.messages, result.messages, "{name}");
        for m in &c.messages {
            assert!(result.messages.iter().any(|r| r.id == m.id), "{name}: {} lost", m.id);
        }
    }
}

/// The messages of a document, as its API view is compared: role and content blocks, a content
/// string being one text block (a tool result's as well), as the API reads them.
fn anthropic_messages(doc: &Value) -> Vec<Value> {
    doc["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut content = match &m["content"] {
                Value::String(s) => json!([{"type": "text", "text": s}]),
                other => other.clone(),
            };
            for block in content.as_array_mut().unwrap() {
                if block["type"] == "tool_result"
                    && let Some(s) = block["content"].as_str()
                {
                    block["content"] = json!([{"type": "text", "text": s}]);
                }
            }
            json!({"role": m["role"], "content": content})
        })
        .collect()
}

#[test]
fn anthropic_blocks_go_back_exactly_as_read() {
    let text = fixture("anthropic-thinking.json");
    let input: Value = serde_json::from_str(&text).unwrap();
    let c = parse_conversation(&text).unwrap().conversation;
    let out = to_anthropic(&c);
    assert_eq!(out["system"], input["system"]);
    assert_eq!(out["tools"], input["tools"]);
    assert_eq!(anthropic_messages(&out), anthropic_messages(&input));
    // Thinking, redacted thinking, server tools, a document and a cited text are kept whole.
    let kinds: Vec<&str> = c.messages.iter().flat_map(|m| &m.content).map(ContentBlock::kind).collect();
    for kind in ["document", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result"] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    assert_eq!(opaque(&c.api_view()).len(), 7);
    // The OpenAI view has no place for them: left out, but the cited text goes as text.
    let openai = to_openai(&c).to_string();
    assert!(!openai.contains("signature") && !openai.contains("redacted_thinking"), "{openai}");
    assert!(openai.contains("October in Lisbon averages 22"), "{openai}");
}

#[test]
fn openai_tools_are_counted_and_exported() {
    let text = fixture("openai-tools.json");
    let input: Value = serde_json::from_str(&text).unwrap();
    let c = parse_conversation(&text).unwrap().conversation;
    assert_eq!(c.tools.len(), 2);
    let out = to_openai(&c);
    assert_eq!(out["tools"], input["tools"]);
    assert_eq!(out["messages"], input["messages"]);
    let with_tools = condense_core::tokens::TokenReport::of(&c, "gpt-4.1").total_tokens;
    let without = condense_core::tokens::TokenReport::of(&Conversation { tools: Vec::new(), ..c }, "gpt-4.1");
    assert!(with_tools > without.total_tokens + 50, "{with_tools} vs {}", without.total_tokens);
}

#[test]
fn every_session_round_trips() {
    for (name, _) in FIXTURES {
        let c = parse_conversation(&fixture(name)).unwrap().conversation;
        // Import → export → import gives the same API view, in either API's form.
        let anthropic = to_anthropic(&c);
        let again = parse_conversation(&anthropic.to_string()).unwrap().conversation;
        assert_eq!(to_anthropic(&again), anthropic, "{name}");
        let openai = to_openai(&c);
        let again = parse_conversation(&openai.to_string()).unwrap().conversation;
        assert_eq!(to_openai(&again), openai, "{name}");
        // The project's own format keeps everything, ids and times included.
        let native = serde_json::to_string(&c).unwrap();
        assert_eq!(parse_conversation(&native).unwrap().conversation, c, "{name}");
    }
}

fn run(c: &Conversation, provider: &str, target: Option<usize>) -> condense_core::CondensationResult {
    let manager = CondensationManager::with_builtin_providers();
    let tokens = counter();
    let clock = StepClock::default();
    let options = CondensationOptions { target_tokens: target, ..Default::default() };
    block_on(manager.condense(c, Some(provider), options, Services::new(&tokens, &clock))).unwrap()
}

/// A run's result: undone exactly, a valid view, and every opaque block of its view one of the
/// input's, unchanged.
fn check(name: &str, provider: &str, c: &Conversation, result: &condense_core::CondensationResult) {
    if let Some(e) = &result.error {
        assert_eq!(result.messages, c.messages, "{name} {provider}: {}", e.message);
        return;
    }
    let view = api_view(&result.messages);
    assert!(check_tool_pairs(&view).is_ok(), "{name} {provider}: {:?}", check_tool_pairs(&view));
    let before = opaque(&c.api_view());
    for block in opaque(&view) {
        assert!(before.contains(&block), "{name} {provider}: an opaque block was edited: {block}");
    }
    assert_eq!(undo_last(&result.messages).unwrap().1, c.messages, "{name} {provider}");
}

#[test]
fn providers_run_on_every_session() {
    let tokens = counter();
    for (name, _) in FIXTURES {
        let c = parse_conversation(&fixture(name)).unwrap().conversation;
        let before = tokens.count_request(c.system.as_deref(), &c.api_view());
        for (provider, target) in [
            ("lossless", None),
            ("truncation", Some(before / 2)),
            ("superseded", None),
            ("mask", None),
            ("smart", Some(before / 2)),
        ] {
            check(name, provider, &c, &run(&c, provider, target));
        }
        let options = CondensationOptions { config: json!({"keep_last": 2}), ..Default::default() };
        match render_request(&c.messages, c.system.as_deref(), &options, &tokens) {
            Ok(prompt) => assert!(!prompt.is_empty(), "{name}"),
            // The smallest file is below a summary's minimum.
            Err(e) => assert!(before < 200 && e.to_string().contains("nothing to condense"), "{name}: {e}"),
        }
    }
}

/// A Claude Code session of `turns` turns: a prompt, then per turn a split assistant message
/// (thinking, text, a tool call) and its result, with side chains between.
fn big_claude_code_session(turns: usize) -> String {
    let mut out = String::new();
    let mut parent = Value::Null;
    let mut line = |v: Value| {
        out.push_str(&v.to_string());
        out.push('\n');
    };
    let event = |kind: &str, uuid: &str, parent: &Value, message: Value, side: bool| {
        json!({"parentUuid": parent, "isSidechain": side, "sessionId": "big", "cwd": "/w", "type": kind,
               "message": message, "uuid": uuid, "timestamp": "2025-08-14T09:00:00.000Z"})
    };
    line(event(
        "user",
        "u0",
        &parent,
        json!({"role": "user", "content": "Refactor the modules one by one."}),
        false,
    ));
    parent = json!("u0");
    for t in 0..turns {
        let mid = format!("msg_{t}");
        let parts = [
            json!({"type": "thinking", "thinking": format!("Turn {t}: the next module."), "signature": format!("sig{t}")}),
            json!({"type": "text", "text": format!("Reading module {t}.")}),
            json!({"type": "tool_use", "id": format!("toolu_{t}"), "name": "Read", "input": {"file_path": format!("/w/src/m{t}.rs")}}),
        ];
        for (k, part) in parts.into_iter().enumerate() {
            let uuid = format!("a{t}-{k}");
            line(event(
                "assistant",
                &uuid,
                &parent,
                json!({"id": mid, "role": "assistant", "content": [part]}),
                false,
            ));
            parent = json!(uuid);
        }
        if t % 10 == 0 {
            line(event(
                "user",
                &format!("side{t}"),
                &Value::Null,
                json!({"role": "user", "content": "side"}),
                true,
            ));
        }
        let body: String =
            (0..120).map(|i| format!("fn f{t}_{i}(x: u64) -> u64 {{ x * {i} + {t} }}\n")).collect();
        let uuid = format!("r{t}");
        let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{t}"), "content": body}]});
        line(event("user", &uuid, &parent, result, false));
        parent = json!(uuid);
    }
    out
}

#[test]
fn a_large_claude_code_session_condenses_to_its_target() {
    let text = big_claude_code_session(120);
    let parsed = parse_conversation(&text).unwrap();
    assert_eq!(parsed.format, SourceFormat::ClaudeCode);
    let c = parsed.conversation;
    assert_eq!(c.messages.len(), 241);
    let tokens = counter();
    let before = tokens.count_request(None, &c.api_view());
    assert!((250_000..400_000).contains(&before), "{before} tokens");
    for provider in ["truncation", "smart"] {
        let target = before / 4;
        let result = run(&c, provider, Some(target));
        check("large", provider, &c, &result);
        assert!(result.error.is_none(), "{provider}: {:?}", result.error);
        let after = result.new_context_tokens.unwrap();
        assert!(after <= target, "{provider}: {after} > {target}");
    }
}

/// The client's wrappers — environment details, a task resumption notice, Codex's environment
/// context — are not the user's words; what the user wrote inside them is.
#[test]
fn the_ledger_quotes_the_user_not_the_client() {
    for name in ["cline-api_conversation_history.json", "codex-rollout.jsonl", "claude-code.jsonl"] {
        let c = parse_conversation(&fixture(name)).unwrap().conversation;
        let ledger = condense_core::ledger::Ledger::of(&c.api_view());
        let words: Vec<&str> = ledger.user_messages.iter().map(|w| w.text.as_str()).collect();
        let all = words.join("\n");
        for client in [
            "environment_details",
            "TASK RESUMPTION",
            "New instructions for task continuation",
            "environment_context",
            "Result:",
        ] {
            assert!(!all.contains(client), "{name}: {client} in the user's words: {words:#?}");
        }
        match name {
            "cline-api_conversation_history.json" => {
                assert!(words[0].starts_with("Add a dark mode toggle"), "{words:#?}");
                assert!(words.contains(&"Also remember the choice in localStorage."), "{words:#?}");
            }
            "codex-rollout.jsonl" => {
                assert!(words[0].starts_with("The /health endpoint returns 500"), "{words:#?}")
            }
            _ => assert!(words[0].starts_with("The cart total shows"), "{words:#?}"),
        }
    }
}
