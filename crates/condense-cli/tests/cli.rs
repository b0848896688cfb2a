//! The `condense` binary on the shipped example and the fixtures: exit codes, outputs, formats.

use assert_cmd::Command;
use serde_json::Value;

fn root(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

fn condense(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("condense").unwrap().args(args).assert()
}

fn json_of(assert: &assert_cmd::assert::Assert) -> Value {
    serde_json::from_slice(&assert.get_output().stdout).expect("stdout is JSON")
}

fn stderr_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

const EXAMPLE: &str = "examples/coding-session.json";

fn total_tokens(file: &str) -> u64 {
    json_of(&condense(&["count", file]).success())["total_tokens"].as_u64().unwrap()
}

/// The visible messages of a `run` output's conversation.
fn visible(result: &Value) -> Vec<Value> {
    result["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("condense_parent").is_none_or(Value::is_null))
        .cloned()
        .collect()
}

#[test]
fn truncation_gets_the_example_under_2000_tokens_keeping_first_and_last() {
    let example = root(EXAMPLE);
    let before = total_tokens(&example);
    assert!(before > 4000, "the example is realistic in size: {before}");
    let out = condense(&["run", "--provider", "truncation", "--target-tokens", "2000", &example]).success();
    let result = json_of(&out);
    assert!(result["error"].is_null());
    let after = result["new_context_tokens"].as_u64().unwrap();
    assert!(after < 2000, "{after}");
    assert_eq!(result["metrics"]["target_met"], true);
    assert_eq!(result["metrics"]["provider_id"], "truncation");

    let input: Value = serde_json::from_str(&std::fs::read_to_string(&example).unwrap()).unwrap();
    let original = input["messages"].as_array().unwrap();
    let kept = visible(&result);
    // The first message is kept, with the state ledger of what was hidden after its own text.
    let mut first = kept.first().unwrap().clone();
    let blocks = first["content"].as_array_mut().unwrap();
    let ledger = blocks.pop().unwrap();
    assert!(ledger["text"].as_str().unwrap().starts_with("<context_condenser_ledger>"), "{ledger}");
    assert_eq!(first["content"], original[0]["content"]);
    let n = 3; // the provider's default keep_last
    assert_eq!(&kept[kept.len() - n..], &original[original.len() - n..]);

    // The output is itself a valid input: counting it agrees with the result.
    let path = std::env::temp_dir().join(format!("condense-cli-trunc-{}.json", std::process::id()));
    std::fs::write(&path, &out.get_output().stdout).unwrap();
    let recount = total_tokens(path.to_str().unwrap());
    std::fs::remove_file(&path).ok();
    assert_eq!(recount, after);
}

#[test]
fn lossless_lowers_the_example_with_nothing_lost() {
    let example = root(EXAMPLE);
    let before = total_tokens(&example);
    let result = json_of(&condense(&["run", "--provider", "lossless", &example]).success());
    assert!(result["error"].is_null());
    let after = result["new_context_tokens"].as_u64().unwrap();
    assert!(after < before, "{after} < {before}");
    // Nothing lost: every hidden message's tool result text is still in the view, byte-identical.
    let view_text = serde_json::to_string(&visible(&result)).unwrap();
    let hidden: Vec<&Value> = result["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("condense_parent").is_some_and(|p| !p.is_null()))
        .collect();
    assert!(!hidden.is_empty());
    for m in hidden {
        for block in m["content"].as_array().unwrap() {
            for part in block["content"].as_array().into_iter().flatten() {
                let text = serde_json::to_string(&part["text"]).unwrap();
                assert!(view_text.contains(&text), "lost: {}", &text[..text.len().min(60)]);
            }
        }
    }
}

#[test]
fn broken_json_exits_2_naming_the_location() {
    let out = condense(&["run", "--provider", "truncation", &root("tests/fixtures/broken.json")]).code(2);
    let err = stderr_of(&out);
    assert!(err.contains("line 5 column 3"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(out.get_output().stdout.is_empty());
}

#[test]
fn an_unknown_block_type_is_kept_as_read() {
    let file = root("tests/fixtures/unknown-block.json");
    condense(&["count", &file]).success();
    let view = json_of(&condense(&["view", "--format", "anthropic", &file]).success());
    assert_eq!(view["messages"][1]["content"][0], serde_json::json!({"type": "foo", "text": "?"}));
}

#[test]
fn a_malformed_block_exits_2_naming_its_place() {
    let out = condense(&["count", &root("tests/fixtures/malformed-block.json")]).code(2);
    let err = stderr_of(&out);
    assert!(err.contains("messages[1].content[0]: missing field `id`"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

#[test]
fn a_broken_session_line_exits_2_naming_the_line() {
    let dir = std::env::temp_dir().join(format!("condense-cli-broken-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("session.jsonl");
    let good = std::fs::read_to_string(root("tests/fixtures/sessions/claude-code.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines[3] = "{\"type\": \"assistant\", \"uuid\": ";
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = condense(&["count", file.to_str().unwrap()]).code(2);
    let err = stderr_of(&out);
    assert!(err.contains("line 4: invalid JSON"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Cline's `ui_messages.json` is refused as bad input, naming the file to open instead.
#[test]
fn clines_ui_messages_exits_2_naming_the_history() {
    let file = root("tests/fixtures/sessions/cline-ui_messages.json");
    let out = condense(&["count", &file]).code(2);
    let err = stderr_of(&out);
    assert!(err.contains("this is Cline's ui_messages.json (what the chat panel shows)"), "{err}");
    assert!(err.contains("open api_conversation_history.json in the same task folder"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

/// Each agent's session file: counted, condensed by truncation, viewed as an Anthropic request.
#[test]
fn session_files_of_every_agent_are_read() {
    for name in [
        "claude-code.jsonl",
        "codex-rollout.jsonl",
        "cline-api_conversation_history.json",
        "anthropic-thinking.json",
        "openai-tools.json",
        "claude-code-subagent.jsonl",
        "gemini-checkpoint.json",
        "gemini-stream.jsonl",
    ] {
        let file = root(&format!("tests/fixtures/sessions/{name}"));
        let before = total_tokens(&file);
        assert!(before > 100, "{name}: {before}");
        let target = (before / 2).to_string();
        let run = condense(&["run", "--provider", "truncation", "--target-tokens", &target, &file]);
        let result = json_of(&run);
        assert!(!visible(&result).is_empty(), "{name}");
        // The result is a conversation file: the input's tool definitions are in it, as read.
        let input = condense(&["view", "--format", "anthropic", &file]).success();
        assert_eq!(result["tools"], json_of(&input)["tools"], "{name}: the run's document keeps the tools");
        match run.get_output().status.code() {
            Some(0) => assert!(result["error"].is_null(), "{name}"),
            // A small file whose middle holds only blocks kept whole: nothing to cut, said so;
            // or one whose first message and last three are more than half: the floor named.
            Some(1) => match result["error"]["kind"].as_str() {
                Some("nothing_to_condense") => {}
                Some("target_below_floor") => {
                    assert!(result["error"]["message"].as_str().unwrap().contains("below the floor of"))
                }
                other => panic!("{name}: {other:?}"),
            },
            other => panic!("{name}: exit {other:?}"),
        }
        let view = json_of(&condense(&["view", "--format", "anthropic", &file]).success());
        let messages = view["messages"].as_array().unwrap();
        assert!(messages.len() >= 5, "{name}: {} messages", messages.len());
        if name == "anthropic-thinking.json" {
            let input: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            assert_eq!(view["messages"][1], input["messages"][1], "thinking blocks go back verbatim");
            assert_eq!(view["tools"], input["tools"]);
        }
    }
}

#[test]
fn an_unknown_provider_exits_2_naming_the_known_ones() {
    let out = condense(&["run", "--provider", "magic", &root(EXAMPLE)]).code(2);
    let err = stderr_of(&out);
    assert!(err.contains("'magic' not found"), "{err}");
    assert!(err.contains("lossless, manual, mask, native, smart, superseded, truncation"), "{err}");
}

#[test]
fn a_failed_condensation_exits_1_with_the_originals() {
    // Two messages: nothing between the first and the kept last ones.
    let input = r#"{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}"#;
    let out = Command::cargo_bin("condense")
        .unwrap()
        .args(["run", "--provider", "truncation", "-"])
        .write_stdin(input)
        .assert()
        .code(1);
    let result = json_of(&out);
    assert_eq!(result["error"]["kind"], "nothing_to_condense");
    assert_eq!(result["messages"].as_array().unwrap().len(), 2);
    assert!(result["new_context_tokens"].is_null());
}

#[test]
fn count_reports_per_message_tokens_by_model_family() {
    let file = root("tests/fixtures/openai-chat.json");
    let o200k = json_of(&condense(&["count", &file]).success());
    assert_eq!(o200k["encoding"], "o200k_base");
    let messages = o200k["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5, "the system message is not a message");
    let cl100k = json_of(&condense(&["count", "--model", "gpt-4-turbo", &file]).success());
    assert_eq!(cl100k["encoding"], "cl100k_base");
    assert_eq!(cl100k["model"], "gpt-4-turbo");
}

#[test]
fn providers_lists_the_registry_by_priority() {
    let list = json_of(&condense(&["providers"]).success());
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["native", "lossless", "truncation", "manual", "superseded", "mask", "smart"]);
    for p in list.as_array().unwrap() {
        for key in ["name", "description", "enabled", "priority"] {
            assert!(p.get(key).is_some(), "{key} in {p}");
        }
    }
}

#[test]
fn a_pinned_message_survives_truncation() {
    let file = root("tests/fixtures/small-session.json");
    let original: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let id = original["messages"][2]["id"].as_str().unwrap().to_owned();
    let pinned = condense(&["pin", "--id", &id, &file]).success();
    let pinned_doc: Value = serde_json::from_slice(&pinned.get_output().stdout).unwrap();
    assert_eq!(pinned_doc["messages"][2]["pinned"], true);
    let condensed = Command::cargo_bin("condense")
        .unwrap()
        // Above the floor, which the pinned message raises (a lower target is refused, naming it).
        .args(["run", "--provider", "truncation", "--target-tokens", "330", "-"])
        .write_stdin(pinned.get_output().stdout.clone())
        .assert()
        .success();
    let result: Value = serde_json::from_slice(&condensed.get_output().stdout).unwrap();
    let kept = result["messages"].as_array().unwrap().iter().find(|m| m["id"] == id.as_str()).unwrap();
    assert_eq!(kept, &pinned_doc["messages"][2], "the pinned message is unchanged and visible");
    let unpinned = Command::cargo_bin("condense")
        .unwrap()
        .args(["pin", "--unpin", "--id", &id, "-"])
        .write_stdin(pinned.get_output().stdout.clone())
        .assert()
        .success();
    let unpinned: Value = serde_json::from_slice(&unpinned.get_output().stdout).unwrap();
    assert!(
        unpinned["messages"].as_array().unwrap().iter().all(|m| m.get("pinned").is_none()),
        "pair unpinned"
    );
    let missing = condense(&["pin", "--id", "no-such-id", &file]).code(1);
    assert!(stderr_of(&missing).contains("no message with id no-such-id"));
}

#[test]
fn undo_restores_the_previous_view() {
    let file = root("tests/fixtures/small-session.json");
    let condensed = condense(&["run", "--provider", "truncation", "--target-tokens", "200", &file]).success();
    let undone = Command::cargo_bin("condense")
        .unwrap()
        .args(["undo", "-"])
        .write_stdin(condensed.get_output().stdout.clone())
        .assert()
        .success();
    let view_of = |input: Vec<u8>| {
        Command::cargo_bin("condense")
            .unwrap()
            .args(["view", "--format", "anthropic", "-"])
            .write_stdin(input)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone()
    };
    let original_view: Value = serde_json::from_slice(&view_of(std::fs::read(&file).unwrap())).unwrap();
    let undone_view: Value = serde_json::from_slice(&view_of(undone.get_output().stdout.clone())).unwrap();
    assert_eq!(undone_view["messages"], original_view["messages"]);
    // And there is nothing left to undo on the original.
    let again = condense(&["undo", &file]).code(1);
    assert!(stderr_of(&again).contains("nothing to undo"));
}

#[test]
fn view_writes_each_wire_format_without_hidden_messages() {
    let file = root("tests/fixtures/small-session.json");
    let condensed = condense(&["run", "--provider", "lossless", &file]).success().get_output().stdout.clone();
    let openai = Command::cargo_bin("condense")
        .unwrap()
        .args(["view", "--format", "openai", "-"])
        .write_stdin(condensed.clone())
        .assert()
        .success();
    let openai = json_of(&openai);
    let messages = openai["messages"].as_array().unwrap();
    // OpenAI: tool results become `tool` messages answering the assistant's `tool_calls`.
    let tool_ids: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_ids, ["call_1", "call_2", "call_3", "call_4", "call_5"]);
    let text = serde_json::to_string(&openai).unwrap();
    assert!(!text.contains("condense_parent"), "no project fields on the wire");

    let anthropic = Command::cargo_bin("condense")
        .unwrap()
        .args(["view", "--format", "anthropic", &file])
        .assert()
        .success();
    let anthropic = json_of(&anthropic);
    assert_eq!(anthropic["system"], "You are a coding assistant with tools.");
    assert_eq!(anthropic["messages"].as_array().unwrap().len(), 13);
}

#[test]
fn openai_and_anthropic_inputs_condense_alike() {
    for fixture in ["tests/fixtures/openai-chat.json", "tests/fixtures/anthropic-messages.json"] {
        let out = condense(&[
            "run",
            "--provider",
            "truncation",
            "--target-tokens",
            "40",
            "--keep-last",
            "1",
            &root(fixture),
        ]);
        let result = json_of(&out.success());
        assert!(result["error"].is_null(), "{fixture}: {}", result["error"]);
        assert!(result["new_context_tokens"].as_u64().unwrap() < total_tokens(&root(fixture)));
        let view = visible(&result);
        assert_eq!(view[0]["content"][0]["text"], "What is in README.md?", "{fixture}");
    }
}

#[test]
fn the_published_schema_is_the_one_the_code_writes() {
    let out = condense(&["schema"]).success();
    let printed: Value = json_of(&out);
    let published: Value =
        serde_json::from_str(&std::fs::read_to_string(root("schema/conversation.schema.json")).unwrap())
            .unwrap();
    assert_eq!(printed, published, "regenerate with `condense schema > schema/conversation.schema.json`");
}

#[test]
fn a_missing_file_is_a_usage_error() {
    let out = condense(&["count", "/nonexistent/conversation.json"]).code(2);
    assert!(stderr_of(&out).starts_with("condense: cannot read /nonexistent/conversation.json"));
}

#[test]
fn oversized_invalid_and_deeply_nested_inputs_exit_2_with_one_line() {
    let dir = std::env::temp_dir().join(format!("condense-cli-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A sparse 300 MB file: refused by its size, before a byte of it is read.
    let big = dir.join("big.json");
    std::fs::File::create(&big).unwrap().set_len(300 << 20).unwrap();
    let err = stderr_of(&condense(&["count", big.to_str().unwrap()]).code(2));
    assert!(err.contains("is 300 MB: conversation files of more than 256 MB are refused"), "{err}");

    let bad = dir.join("latin1.json");
    std::fs::write(&bad, b"{\"messages\": [{\"role\": \"user\", \"content\": \"caf\xe9\"}]}").unwrap();
    let err = stderr_of(&condense(&["count", bad.to_str().unwrap()]).code(2));
    assert!(err.contains("not UTF-8 text"), "{err}");

    let deep = dir.join("deep.json");
    std::fs::write(&deep, format!("{}{}", "[".repeat(100_000), "]".repeat(100_000))).unwrap();
    let err = stderr_of(&condense(&["count", deep.to_str().unwrap()]).code(2));
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let err = stderr_of(
        &Command::cargo_bin("condense")
            .unwrap()
            .args(["count", "-"])
            .write_stdin(vec![b' '; (256 << 20) + 1])
            .assert()
            .code(2),
    );
    assert!(err.contains("stdin holds more than 256 MB"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every recall id (`; id r3f9a21c0`) the visible messages of a result name, with the text it
/// stands in for.
fn named_ids(result: &Value) -> Vec<String> {
    let text = serde_json::to_string(&visible(result)).unwrap();
    let mut ids: Vec<String> = text
        .match_indices("; id r")
        .map(|(at, _)| text[at + "; id ".len()..][..9].to_owned())
        .filter(|id| id[1..].bytes().all(|b| b.is_ascii_hexdigit()))
        .collect();
    ids.dedup();
    ids
}

#[test]
fn recall_prints_what_a_placeholder_hid_from_a_result_or_a_conversation_file() {
    // A real Claude Code transcript, masked: each placeholder's id gives back the tool result it
    // hid, from the CondensationResult and from the transcript itself.
    let session = root("tests/fixtures/real/claude-code-python-to-rust-port.jsonl");
    let out = condense(&["run", "--provider", "mask", &session, "--no-summary"]);
    let out = out.success();
    let result = json_of(&out);
    assert!(result["error"].is_null(), "{}", result["error"]);
    let dir = std::env::temp_dir().join(format!("condense-cli-recall-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("result.json");
    std::fs::write(&saved, &out.get_output().stdout).unwrap();
    let saved = saved.to_str().unwrap();

    let hidden: Vec<&Value> = result["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("condense_parent").is_some_and(|p| !p.is_null()))
        .collect();
    let results_hidden: Vec<String> = hidden
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            parts => parts
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        })
        .collect();
    let ids = named_ids(&result);
    assert!(!ids.is_empty(), "mask wrote no placeholder with an id");
    for id in &ids {
        let from_result = condense(&["recall", id, saved]).success();
        let text = String::from_utf8(from_result.get_output().stdout.clone()).unwrap();
        assert!(
            results_hidden.iter().any(|r| text == *r || text == format!("{r}\n")),
            "{id} printed something no hidden result holds: {}",
            &text[..text.len().min(200)]
        );
        // The transcript before the condensation holds it too, in Claude Code's own format.
        let from_transcript = condense(&["recall", id, &session]).success();
        assert_eq!(from_transcript.get_output().stdout, from_result.get_output().stdout);
    }

    // An id nothing has, and a word that is no id: exit 2, saying which.
    let unknown = condense(&["recall", "r00000000", saved]).code(2);
    assert!(stderr_of(&unknown).contains("no content has the id r00000000"), "{}", stderr_of(&unknown));
    let malformed = condense(&["recall", "3f9a21c0", saved]).code(2);
    assert!(stderr_of(&malformed).contains("is not a recall id"), "{}", stderr_of(&malformed));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn recall_reads_a_truncated_argument_and_a_stub_from_stdin() {
    let file = root(EXAMPLE);
    let condensed =
        condense(&["run", "--provider", "truncation", "--target-tokens", "5000", &file, "--no-summary"]);
    let stdout = condensed.success().get_output().stdout.clone();
    let result: Value = serde_json::from_slice(&stdout).unwrap();
    let ids = named_ids(&result);
    assert!(!ids.is_empty(), "truncation wrote no stub with an id");
    // Every string and every object of the input file: what an id may give back.
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let (mut strings, mut objects) = (Vec::new(), Vec::new());
    let mut stack = vec![&input];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => strings.push(s.as_str()),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                objects.push(v);
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    for id in ids {
        let recalled = Command::cargo_bin("condense")
            .unwrap()
            .args(["recall", &id, "-"])
            .write_stdin(stdout.clone())
            .assert()
            .success();
        // The original, and a line end if it had none.
        let printed = String::from_utf8(recalled.get_output().stdout.clone()).unwrap();
        let text = printed.strip_suffix('\n').unwrap_or(&printed);
        assert!(!text.contains("by Context Condenser"), "{id} printed a placeholder: {text}");
        // Whatever it was (a result, arguments, a message's text), the input file holds it.
        let arguments: Option<Value> = serde_json::from_str(text).ok().filter(Value::is_object);
        assert!(
            strings.contains(&text)
                || strings.contains(&printed.as_str())
                || arguments.is_some_and(|a| objects.contains(&&a)),
            "{id}: {text}"
        );
    }
}
