//! The built-in condensation providers.

mod lossless;
pub mod manual;
pub mod native;
pub mod summary;
mod truncation;

pub use lossless::{LosslessConfig, LosslessProvider};
pub use manual::{ManualConfig, ManualProvider};
pub use native::NativeProvider;
pub use summary::SummaryConfig;
pub use truncation::{TruncationConfig, TruncationProvider};
