//! Context Condenser's core for JavaScript. The only crate that knows `JsValue`: it converts
//! values, injects the host's capabilities (see [`host`]) and forwards to `condense-core`.
//!
//! Data objects (conversations, results, profiles, prompt bundles) keep the core's JSON shape, the
//! one `schema/conversation.schema.json` publishes and the CLI reads and writes; call options are
//! camelCase like any JS API. Every failure is an `Error` with a `kind` (see
//! `condense_core::ErrorKind`).
//!
//! Two classes. `CondenseEngine` is declared in [`engine`] and its methods are grouped by area,
//! each area in its own file: [`settings_api`] (providers and settings), [`conversation_api`]
//! (one-shot calls on a conversation value: parse, count, the manual request), [`llm_api`] (Test
//! Connection), [`chat_api`] (held tasks, chats and conversation files alike, named by handle:
//! hold, preview, apply, undo; and a chat's turns), [`held_api`] (a held file's count, condense
//! and text), [`tools_api`] (the CLI tools `cli` profiles run).
//! `Gateway` ([`gateway`]) is made by the engine's `startGateway` and lives until the host stops
//! it; its methods are in [`gateway_api`]. Each file describes its methods once in
//! [`surface::engine_api!`], which makes both the method and its TypeScript declaration
//! (`src/engine.d.ts`, kept current by a test).

mod chat_api;
mod conversation_api;
mod convert;
mod engine;
mod gateway;
mod gateway_api;
mod held;
mod held_api;
mod host;
mod llm_api;
mod panic;
mod settings_api;
mod surface;
mod text;
mod tools_api;
mod types;

pub use engine::CondenseEngine;
pub use gateway::Gateway;
#[cfg(feature = "test-panic")]
pub use panic::TEST_PANIC_MARKER;
pub use panic::on_panic;

/// The TypeScript declaration of the engine's methods (`src/engine.d.ts`), from their description.
pub fn typescript_declaration() -> String {
    surface::declaration(&methods())
}

/// Every method `engine_api!` describes, in the order of the declaration file.
fn methods() -> Vec<surface::Method> {
    [
        chat_api::methods(),
        held_api::methods(),
        conversation_api::methods(),
        settings_api::methods(),
        tools_api::methods(),
        llm_api::methods(),
        gateway::methods(),
        gateway_api::methods(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod boundary {
    //! The boundary's own tests: the declaration file is the one the methods describe, and no
    //! method takes a whole chat.

    /// `src/engine.d.ts`, as the methods describe it now.
    const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/engine.d.ts");

    #[test]
    fn the_declaration_file_is_current() {
        let want = super::typescript_declaration();
        if std::env::var_os("CONDENSE_WRITE_SURFACE").is_some() {
            std::fs::write(PATH, &want).expect("write engine.d.ts");
        }
        let have = std::fs::read_to_string(PATH).unwrap_or_default();
        assert!(
            have == want,
            "crates/condense-wasm/src/engine.d.ts is stale: run CONDENSE_WRITE_SURFACE=1 cargo test -p condense-wasm boundary"
        );
    }

    /// A method's name without the words that only say what a held task is.
    fn without_kind(name: &str) -> String {
        let mut words = Vec::new();
        let mut word = String::new();
        for c in name.chars() {
            if c.is_ascii_uppercase() && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            word.push(c.to_ascii_lowercase());
        }
        words.push(word);
        words.retain(|w| !["held", "chat", "file", "conversation", "doc"].contains(&w.as_str()));
        words.concat()
    }

    #[test]
    fn no_two_methods_differ_only_by_what_the_task_is() {
        assert_eq!(without_kind("previewHeld"), "preview");
        assert_eq!(without_kind("holdConversation"), without_kind("holdChat"));
        let methods = super::methods();
        for (i, a) in methods.iter().enumerate() {
            for b in &methods[i + 1..] {
                assert!(
                    a.class != b.class || without_kind(a.name) != without_kind(b.name),
                    "{}.{} and {}.{} are one call for two kinds of held task: let the handle say which",
                    a.class,
                    a.name,
                    b.class,
                    b.name
                );
            }
        }
    }

    #[test]
    fn no_type_string_is_written_by_hand_but_the_hosts() {
        // wasm-bindgen's own type strings: every method's types come from its Rust description.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).expect("src reads") {
            let path = entry.expect("an entry").path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file reads");
            for attribute in ["unchecked_param_type", "unchecked_return_type", "typescript_type"] {
                for (at, _) in text.match_indices(&format!("{attribute} = \"")) {
                    let rest = &text[at + attribute.len() + 4..];
                    let ty = &rest[..rest.find('"').unwrap_or(0)];
                    if !(attribute == "unchecked_param_type" && ty == "Host") {
                        found.push(format!("{}: {attribute} = {ty:?}", path.display()));
                    }
                }
            }
        }
        assert!(found.is_empty(), "type strings written by hand: {found:?}");
        // And the check reads what it looks for: the constructor's `Host` is one.
        let engine = std::fs::read_to_string(format!("{dir}/engine.rs")).expect("engine.rs reads");
        assert!(engine.contains("unchecked_param_type = \"Host\""));
    }

    #[test]
    fn every_method_takes_handles_or_plain_values() {
        let methods = super::methods();
        let mut names: Vec<(&str, &str)> = methods.iter().map(|m| (m.class, m.name)).collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count, "a method of a class is described twice");
        // The engine's surface stays small: the gateway is an object of its own, a held task's
        // undo one method whatever the handle holds (issue 39).
        let engine = methods.iter().filter(|m| m.class == "CondenseEngine").count();
        assert!(engine <= 30, "CondenseEngine has {engine} methods: at most 30");
        for m in &methods {
            for (param, ts, _) in &m.params {
                assert!(
                    !ts.contains("ChatTask") && !ts.contains("CondensationPreview"),
                    "{}({param}: {ts}) takes a whole chat or preview: name it by handle or id",
                    m.name
                );
            }
        }
    }
}

/// Benchmarks only (feature `bench`): tiktoken-rs's own count of a text, `encode_ordinary` with the
/// encoding named (`o200k_base` or `cl100k_base`), the tables loaded on the first call.
#[cfg(feature = "bench")]
#[wasm_bindgen::prelude::wasm_bindgen(js_name = benchTiktokenCount)]
pub fn bench_tiktoken_count(text: &str, encoding: &str) -> usize {
    use std::sync::OnceLock;
    static O200K: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
    static CL100K: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
    let bpe = if encoding == "cl100k_base" {
        CL100K.get_or_init(|| tiktoken_rs::cl100k_base().expect("embedded tables parse"))
    } else {
        O200K.get_or_init(|| tiktoken_rs::o200k_base().expect("embedded tables parse"))
    };
    bpe.encode_ordinary(text).len()
}
