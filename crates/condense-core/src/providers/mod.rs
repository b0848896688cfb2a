//! The built-in condensation providers.

mod lossless;
pub mod manual;
mod native;
pub mod summary;
mod truncation;

pub use lossless::{LosslessConfig, LosslessProvider};
pub use manual::{ManualConfig, ManualProvider};
pub use native::NativeProvider;
pub use summary::SummaryConfig;
pub use truncation::{TruncationConfig, TruncationProvider};

/// Reads a provider's configuration from JSON: `null` means the defaults; unknown fields are an
/// error naming them.
pub(crate) fn parse_config<T: serde::de::DeserializeOwned + Default>(
    value: &serde_json::Value,
) -> Result<T, String> {
    if value.is_null() {
        return Ok(T::default());
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." { e.inner().to_string() } else { format!("{path}: {}", e.inner()) }
    })
}
