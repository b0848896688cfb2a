//! Every input a fuzz target once crashed on (fuzz/regressions/<target>/), replayed through the
//! same checks as the target, in the ordinary test run.

use condense_core::formats::{parse_conversation, to_anthropic, to_openai};

#[allow(clippy::disallowed_methods, reason = "a test reading the kept fuzz inputs")]
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = format!("{}/../../fuzz/regressions/{target}", env!("CARGO_MANIFEST_DIR"));
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    entries
        .map(|e| e.unwrap().path())
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn conversation_regressions_round_trip_through_both_exports() {
    let found = inputs("conversation");
    assert!(!found.is_empty(), "the regression inputs are there");
    for (name, bytes) in found {
        let Ok(text) = std::str::from_utf8(&bytes) else { continue };
        let Ok(parsed) = parse_conversation(text) else { continue };
        for export in [to_openai(&parsed.conversation), to_anthropic(&parsed.conversation)] {
            let again = parse_conversation(&export.to_string());
            assert!(again.is_ok(), "{name}: an export does not parse: {:?}", again.err());
        }
    }
}
