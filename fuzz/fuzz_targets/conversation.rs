//! Conversation files in every format: parsed (or refused with a located error, never a panic);
//! what parses is viewed, checked and exported to both wire formats, and the export parses again.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(parsed) = condense_core::formats::parse_conversation(text) else { return };
    let c = parsed.conversation;
    let view = c.api_view();
    let _ = condense_core::model::check_tool_pairs(&view);
    for export in [condense_core::formats::to_openai(&c), condense_core::formats::to_anthropic(&c)] {
        let again = condense_core::formats::parse_conversation(&export.to_string());
        assert!(again.is_ok(), "an export does not parse: {:?}", again.err());
    }
});
