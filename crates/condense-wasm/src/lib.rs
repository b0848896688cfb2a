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
//! [`chat_api`] (chat tasks and cancel), [`tools_api`] (the CLI tools `cli` profiles run).

mod chat_api;
mod conversation_api;
mod convert;
mod engine;
mod host;
mod llm_api;
mod settings_api;
mod tools_api;
mod types;

pub use engine::CondenseEngine;

#[wasm_bindgen::prelude::wasm_bindgen(start)]
fn start() {
    console_error_panic_hook::set_once();
}
