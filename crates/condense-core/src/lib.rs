//! Context Condenser's core: the conversation model, token counting, the condensation providers,
//! their registry and the manager. Pure Rust: no IO, no clock, no network. What the core needs from
//! outside (a clock, later an HTTP fetch and a command runner) comes in through traits the host
//! implements.

pub mod agent;
pub mod error;
pub mod formats;
pub mod llm;
pub mod manager;
pub mod model;
pub mod provider;
pub mod providers;
pub mod registry;
pub mod settings;
pub mod tokens;

pub use error::{CondenseError, ErrorInfo, ParseError};
pub use manager::CondensationManager;
pub use model::{ContentBlock, Conversation, Message, Role};
pub use provider::{
    Clock, CondensationOptions, CondensationProvider, CondensationResult, Services, run_provider,
};
pub use registry::{ProviderConfig, ProviderConfigUpdate, ProviderInfo, ProviderRegistry};
pub use tokens::{Encoding, TiktokenCounter, TokenCounter};
