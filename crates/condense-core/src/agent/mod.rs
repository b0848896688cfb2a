//! The chat agent (seed 001, SPEC §6): `DefaultAgent` keeps a chat task's history, turns each input
//! into [`AgentEvent`]s, and keeps the context inside the model's window by condensing
//! automatically before a request, and once more when the API still answers "context overflow".
//!
//! The agent reads no clock and does no IO: the host lends it the LLM clients, the condensation
//! manager, a token counter, a clock for timings, the wall-clock time of the input and an abort
//! signal (see [`Turn`]). A [`ChatTask`] is plain data, saved by the host and handed back for the
//! next input, so a chat survives a reload with everything Undo needs.
//!
//! - [`task`]: the saved chat and how full its context is;
//! - [`policy`]: when to condense (threshold, request limit) and the loop guard;
//! - [`cache`]: the `cache-aware` policy's weighing, and the prefix cache a replay bills by;
//! - [`replay`]: a recorded session replayed turn by turn under a policy, billed;
//! - [`events`]: the inputs and the events, the protocol with the host;
//! - [`turn`]: the engine that works on one input;
//! - [`preview`]: a condensation shown before it is applied, and pins.

pub mod cache;
pub mod events;
pub mod policy;
pub mod preview;
pub mod replay;
pub mod task;
pub mod turn;

pub use events::{AgentEvent, AgentInput, CondenseOutcome};
pub use policy::{CondenseReason, ContextStatus, GuardState, TokenSource};
pub use preview::{
    CondensationPreview, PreviewEstimate, PreviewFailure, PreviewMessage, PreviewOutcome, apply_to, preview,
    preview_conversation,
};
pub use task::{ChatTask, CondensationRecord, ReportedUsage};
pub use turn::{DefaultAgent, Turn, live_request, weigh_condensation};
