//! YAML tool entries: any text parses or fails with a located error, never a panic; an entry that
//! parses builds an argv for any prompt and reads any output by its spec.
#![no_main]
use condense_core::tools::{ToolSource, normalize, parse_tools};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // The YAML, then (after a NUL) a prompt and an output to read.
    let mut parts = text.splitn(3, '\0');
    let yaml = parts.next().unwrap_or("");
    let prompt = parts.next().unwrap_or("prompt");
    let output = parts.next().unwrap_or("");
    match parse_tools(&ToolSource { origin: "fuzz.yaml".into(), text: yaml.into() }) {
        Ok(entries) => {
            for entry in entries {
                let argv = entry.template.arguments(&entry.config.models[0], prompt);
                assert_eq!(argv.len(), entry.template.args.len());
                let _ = normalize(&entry.config.output, output);
            }
        }
        Err(e) => assert_eq!(e.origin, "fuzz.yaml"),
    }
});
