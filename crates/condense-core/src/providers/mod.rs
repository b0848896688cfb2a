//! The built-in condensation providers.

mod coverage;
pub mod degenerate;
mod encoded;
pub mod floor;
mod handover;
mod lossless;
pub mod manual;
mod mask;
pub mod native;
pub mod recall;
mod relevance;
mod smart;
pub mod summary;
mod superseded;
mod trim_parameters;
mod truncation;

pub use encoded::thousands;
pub use handover::{HandoverConfig, HandoverProvider};
pub use lossless::{LosslessConfig, LosslessProvider};
pub use manual::{ManualConfig, ManualProvider};
pub use mask::{MaskConfig, MaskProvider};
pub use native::NativeProvider;
pub use relevance::is_todo_call;
pub use smart::{Pass, Preset, SmartConfig, SmartProvider};
pub use summary::SummaryConfig;
pub use superseded::{SupersededConfig, SupersededProvider};
pub use trim_parameters::{TrimConfig, TrimParametersProvider};
pub use truncation::{TruncationConfig, TruncationProvider};
