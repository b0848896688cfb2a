//! Context Condenser's core for JavaScript. The only crate that knows `JsValue`: it converts
//! values, injects the host's capabilities (see [`host`]) and forwards to `condense-core`.
//!
//! Data objects (conversations, results, profiles, prompt bundles) keep the core's JSON shape, the
//! one `schema/conversation.schema.json` publishes and the CLI reads and writes; call options are
//! camelCase like any JS API. Every failure is an `Error` with a `kind` (see
//! `condense_core::ErrorKind`).
//!
//! The one class, `CondenseEngine`, is declared in [`engine`] and its methods are grouped by area,
//! each area in its own file: [`settings_api`] (providers and settings), [`conversation_api`]
//! (conversations: parse, count, condense, undo), [`llm_api`] (LLM calls and Test Connection),
//! [`chat_api`] (chat tasks and cancel), [`held_api`] (tasks the engine keeps between calls, named
//! by handle), [`tools_api`] (the CLI tools `cli` profiles run).

mod chat_api;
mod conversation_api;
mod convert;
mod engine;
mod held;
mod held_api;
mod host;
mod llm_api;
mod settings_api;
mod text;
mod tools_api;
mod types;

pub use engine::CondenseEngine;

/// The input that makes a test build of the engine panic (feature `test-panic`): a chat message or
/// a conversation text equal to it. The shipped package has no such trigger.
#[cfg(feature = "test-panic")]
pub const TEST_PANIC_MARKER: &str = "__context_condenser_test_panic__";

/// Panics on [`TEST_PANIC_MARKER`] in a test build; nothing otherwise.
#[inline]
fn test_panic(_input: &str) {
    #[cfg(feature = "test-panic")]
    if _input == TEST_PANIC_MARKER {
        panic!("the test build panics on purpose on its marker input");
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

thread_local! {
    /// The host's function told of a panic (see [`on_panic`]).
    static PANIC_LISTENER: std::cell::RefCell<Option<js_sys::Function>> = const { std::cell::RefCell::new(None) };
}

/// Registers the function called with a panic's message just before the panic traps this
/// WebAssembly instance. A trap inside a promise's task leaves that promise pending forever and
/// the instance unusable (a borrow never released, the task queue stopped): the host learns of it
/// here, fails the calls in flight and builds a fresh instance. The function must not call into
/// the engine.
#[wasm_bindgen::prelude::wasm_bindgen(js_name = onPanic)]
pub fn on_panic(listener: js_sys::Function) {
    PANIC_LISTENER.with(|l| *l.borrow_mut() = Some(listener));
}

fn panic_hook(info: &std::panic::PanicHookInfo<'_>) {
    console_error_panic_hook::hook(info);
    let message = wasm_bindgen::JsValue::from(info.to_string());
    PANIC_LISTENER.with(|l| {
        if let Some(f) = l.try_borrow().ok().as_deref().and_then(Option::as_ref) {
            let _ = f.call1(&wasm_bindgen::JsValue::NULL, &message);
        }
    });
}

#[wasm_bindgen::prelude::wasm_bindgen(start)]
fn start() {
    std::panic::set_hook(Box::new(panic_hook));
}
