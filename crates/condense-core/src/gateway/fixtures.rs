//! Request bodies for the gateway's tests, written from the public API formats: Claude Code's
//! Anthropic Messages (system blocks with `cache_control`, `thinking` with `signature`, tools,
//! `metadata.user_id`), a Chat Completions agent with `tool_calls`, and Codex's Responses
//! (`reasoning` with `encrypted_content`, `function_call`/`function_call_output`,
//! `prompt_cache_key`). Each turn is a message's exact text, escapes included, so the tests can
//! check that the gateway keeps bytes.

/// A Claude Code session, one message per entry.
pub(super) const ANTHROPIC_TURNS: [&str; 9] = [
    r#"{"role":"user","content":[{"type":"text","text":"<system-reminder>\nAs you answer, use the context below.\n</system-reminder>"},{"type":"text","text":"Fix the failing test in src/parse.rs \u2014 keep the API caf\u00e9-compatible."}]}"#,
    r#"{"role":"assistant","content":[{"type":"thinking","thinking":"The user wants the test fixed. Read the file first.","signature":"EqQBCkgIBxABGAIiQL1c9Xk2mZ0tq3Y4nR8v/abc+def=="},{"type":"text","text":"I'll read the file."},{"type":"tool_use","id":"toolu_01A","name":"Read","input":{"file_path":"/repo/src/parse.rs"}}]}"#,
    r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","content":"     1\tfn parse(s: &str) -> u32 {\n     2\t    s.parse().unwrap()\n     3\t}\n"}]}"#,
    r#"{"role":"assistant","content":[{"type":"thinking","thinking":"Run the tests.","signature":"EpYBCkgIBxABGAIiQHq0Zz9=="},{"type":"tool_use","id":"toolu_02B","name":"Bash","input":{"command":"cargo test parse","description":"Run the parse tests"}}]}"#,
    r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_02B","content":"test parse::empty ... FAILED\nthread 'parse::empty' panicked","is_error":true}]}"#,
    r#"{"role":"assistant","content":[{"type":"text","text":"The empty string panics; I made `parse` return `Option<u32>`."}]}"#,
    r#"{"role":"user","content":[{"type":"text","text":"Now add a test for whitespace.","cache_control":{"type":"ephemeral"}}]}"#,
    r#"{"role":"assistant","content":[{"type":"tool_use","id":"toolu_03C","name":"Edit","input":{"file_path":"/repo/src/parse.rs","old_string":"}","new_string":"}\n#[test] fn ws() {}"}}]}"#,
    r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_03C","content":[{"type":"text","text":"Edited."}],"cache_control":{"type":"ephemeral"}}]}"#,
];

/// The Claude Code session id inside [`anthropic`]'s `metadata.user_id`.
pub(super) const CLAUDE_SESSION: &str = "session_3f2a9c1e-7b4d-4e8a-9c0f-1d2e3f4a5b6c";

/// The model of [`anthropic`]'s requests.
pub(super) const CLAUDE_MODEL: &str = "claude-sonnet-4-5";

/// The session key of [`anthropic`]'s requests.
pub(super) fn claude_key() -> super::SessionKey {
    super::SessionKey::ClaudeCode(format!("{CLAUDE_SESSION}@{CLAUDE_MODEL}"))
}

/// A Claude Code request over `turns`: the message array sits between keys the gateway does not
/// read, so a splice that moves a byte outside it shows.
pub(super) fn anthropic(turns: &[&str]) -> String {
    format!(
        concat!(
            r#"{{"model":"claude-sonnet-4-5","max_tokens":32000,"#,
            r#""system":[{{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude.","cache_control":{{"type":"ephemeral"}}}},"#,
            r#"{{"type":"text","text":"Be concise.","cache_control":{{"type":"ephemeral"}}}}],"#,
            r#""messages":[{}],"#,
            r#""tools":[{{"name":"Read","description":"Reads a file","input_schema":{{"type":"object","properties":{{"file_path":{{"type":"string"}}}},"required":["file_path"]}}}}],"#,
            r#""metadata":{{"user_id":"user_9a8b7c_account_1f2e3d4c-0000-4000-8000-000000000001_{}"}},"#,
            r#""thinking":{{"type":"enabled","budget_tokens":31999}},"#,
            r#""context_management":{{"edits":[{{"type":"clear_thinking_20251015","keep":"all"}}]}},"stream":true}}"#
        ),
        turns.join(","),
        CLAUDE_SESSION,
    )
}

/// A Chat Completions agent's session (Cline's shape), one message per entry.
pub(super) const CHAT_TURNS: [&str; 8] = [
    r#"{"role":"system","content":"You are Cline, a coding agent."}"#,
    r#"{"role":"developer","content":[{"type":"text","text":"Prefer small diffs."}]}"#,
    r#"{"role":"user","content":"<task>\nRename `foo` to `bar` in lib.rs\n</task>"}"#,
    r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc123","type":"function","function":{"name":"read_files","arguments":"{\"paths\":[\"lib.rs\"]}"}}]}"#,
    r#"{"role":"tool","tool_call_id":"call_abc123","content":"fn foo() {}\n"}"#,
    r#"{"role":"assistant","content":"Renamed. Anything else?"}"#,
    r#"{"role":"user","content":"Also update the README."}"#,
    r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call_def456","type":"function","function":{"name":"read_files","arguments":"{\"paths\":[\"README.md\"]}"}}]}"#,
];

/// A Chat Completions request over `turns`.
pub(super) fn chat(turns: &[&str]) -> String {
    format!(
        concat!(
            r#"{{"model":"gpt-4.1","messages":[{}],"#,
            r#""tools":[{{"type":"function","function":{{"name":"read_files","parameters":{{"type":"object"}}}}}}],"#,
            r#""stream":true,"stream_options":{{"include_usage":true}},"temperature":0}}"#
        ),
        turns.join(",")
    )
}

/// A Codex session's Responses input items.
pub(super) const RESPONSES_ITEMS: [&str; 8] = [
    r#"{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>sandbox: workspace-write</permissions instructions>"}]}"#,
    r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"Why does `make check` fail?"}]}"#,
    r#"{"type":"reasoning","summary":[{"type":"summary_text","text":"**Running the build**"}],"content":null,"encrypted_content":"gAAAAABo1X2vQ0bX8c9d-ENCRYPTED-1=="}"#,
    r#"{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"make check\"]}","call_id":"call_Xy12"}"#,
    r#"{"type":"function_call_output","call_id":"call_Xy12","output":"{\"output\":\"error: missing header\\n\",\"metadata\":{\"exit_code\":2}}"}"#,
    r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A header is missing; I added it."}]}"#,
    r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"Run it again."}]}"#,
    r#"{"type":"reasoning","summary":[],"content":null,"encrypted_content":"gAAAAABo1X2wENCRYPTED-2=="}"#,
];

/// A Codex request over `items`.
pub(super) fn responses(items: &[&str]) -> String {
    format!(
        concat!(
            r#"{{"model":"gpt-5-codex","instructions":"You are Codex, a coding agent.","input":[{}],"#,
            r#""tools":[{{"type":"function","name":"shell","parameters":{{"type":"object"}}}}],"tool_choice":"auto","#,
            r#""parallel_tool_calls":false,"reasoning":{{"effort":"medium","summary":"auto"}},"store":false,"stream":true,"#,
            r#""include":["reasoning.encrypted_content"],"prompt_cache_key":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}}"#
        ),
        items.join(",")
    )
}
