//! Context Condenser's core: the conversation model, token counting, the condensation providers,
//! their registry and the manager, the LLM layer and the chat agent. Pure Rust: no IO, no clock, no
//! network. What the core needs from outside (a clock, an HTTP fetch, a timer) comes in through the
//! traits of [`host`], which the host implements.
//!
//! The modules form layers; each uses only the layers below it (ARCHITECTURE.md draws them, and
//! `tests/layers.rs` fails on an upward or circular `use`):
//!
//! 1. [`host`], [`error`] — capabilities the host lends; the one [`ErrorKind`] and typed errors.
//! 2. [`model`] — messages, content blocks, conversations, the API view, condense ids.
//! 3. [`tokens`], [`limits`], [`config`], [`pins`] — counting; the numbers the core owns; provider
//!    forms; what the user's pins keep.
//! 4. [`profile`], [`ledger`] — LLM profiles, generation parameters, capabilities, reported
//!    usage; the state ledger a condensation keeps, and its probes.
//! 5. [`formats`], [`tools`], [`billing`] — one module per wire dialect (own format, OpenAI,
//!    Anthropic): conversation files in and out, the streaming request of each wire, its SSE
//!    events and error bodies decoded; CLI agents described in YAML, their argv and their output;
//!    the models' published prices and a model of each provider's prompt cache.
//! 6. [`llm`] — prompts and their adapters, the HTTP client with retries, the CLI tool client, the
//!    stream collector.
//! 7. [`provider`] — the provider contract and the template that runs every provider.
//! 8. [`providers`] — lossless, truncation, native, manual.
//! 9. [`registry`], then [`manager`] — providers by id with their settings; picking and running.
//! 10. [`settings`], [`agent`] — the settings panel's cards and checks; the chat agent.
//! 11. [`gateway`] — a local gateway's decisions for the agents' own requests: dialects,
//!     sessions, condensations frozen and replayed byte for byte.
//! 12. `testing` (feature `testing`) — a scripted LLM, a step clock and the agent bench for tests.

pub mod agent;
pub mod billing;
pub mod config;
pub mod error;
pub mod formats;
pub mod gateway;
pub mod host;
pub mod ledger;
pub mod limits;
pub mod llm;
pub mod manager;
pub mod model;
pub mod pins;
pub mod profile;
pub mod provider;
pub mod providers;
pub mod registry;
pub mod settings;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tokens;
pub mod tools;

pub use error::{CondenseError, ErrorInfo, ErrorKind, LlmError, ParseError};
pub use host::{AbortSignal, Clock};
pub use manager::CondensationManager;
pub use model::{ContentBlock, Conversation, Message, Role};
pub use provider::{
    CondensationOptions, CondensationProvider, CondensationResult, ProviderMeta, Services, TargetFloor,
    run_provider,
};
pub use registry::{ProviderConfig, ProviderConfigUpdate, ProviderInfo, ProviderRegistry};
pub use tokens::{Encoding, ReadableCounter, TiktokenCounter, TokenCounter};
