//! Every input a fuzz target once crashed on (fuzz/regressions/<target>/), replayed through the
//! same checks as the target, in the ordinary test run. Each kept input has its expected outcome
//! written here, and the test fails on a kept input without one, on an outcome without its input,
//! and on an input whose outcome changed: none can pass by being skipped.

use condense_core::formats::{parse_conversation, to_anthropic, to_openai};

/// What a kept conversation input must do today.
#[derive(Debug, Clone, Copy)]
enum Conversation {
    /// It parses, and both exports parse again.
    RoundTrips,
    /// It is refused, with an error that says this.
    #[expect(dead_code, reason = "no kept input is refused today; an input that crashed the parser would be")]
    Refused(&'static str),
}

/// The kept inputs of the `conversation` target, by file name, with what each must do.
const CONVERSATION: &[(&str, Conversation)] = &[
    // An assistant message with `content: null` and no tool calls was exported as `null`, which no
    // importer accepts (the second `role` wins, as in JSON.parse).
    ("empty-assistant-null-content.json", Conversation::RoundTrips),
];

#[allow(clippy::disallowed_methods, reason = "a test reading the kept fuzz inputs")]
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = format!("{}/../../fuzz/regressions/{target}", env!("CARGO_MANIFEST_DIR"));
    let mut found: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    found.sort();
    found
}

#[test]
fn every_kept_conversation_input_has_its_outcome() {
    let found = inputs("conversation");
    let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    let expected: Vec<&str> = CONVERSATION.iter().map(|(n, _)| *n).collect();
    for name in &names {
        assert!(expected.contains(name), "fuzz/regressions/conversation/{name} has no expected outcome here");
    }
    for name in &expected {
        assert!(names.contains(name), "{name} is expected but not in fuzz/regressions/conversation/");
    }
    for (name, bytes) in found {
        let outcome = CONVERSATION.iter().find(|(n, _)| *n == name).unwrap().1;
        let text = std::str::from_utf8(&bytes).map_err(|e| e.to_string());
        let parsed = text.and_then(|t| parse_conversation(t).map_err(|e| e.to_string()));
        match (outcome, parsed) {
            (Conversation::RoundTrips, Ok(parsed)) => {
                for export in [to_openai(&parsed.conversation), to_anthropic(&parsed.conversation)] {
                    let again = parse_conversation(&export.to_string());
                    assert!(again.is_ok(), "{name}: an export does not parse: {:?}", again.err());
                }
            }
            (Conversation::RoundTrips, Err(e)) => panic!("{name} should parse and round-trip, but: {e}"),
            (Conversation::Refused(says), Err(e)) => assert!(e.contains(says), "{name}: refused with {e:?}"),
            (Conversation::Refused(_), Ok(_)) => panic!("{name} should be refused, but it parses"),
        }
    }
}
