//! The numbers the core owns: threshold range and defaults, the request limit, the loop guard's
//! rate, the defaults of a profile, the largest conversation file a host reads, and the
//! automatic-condensation settings built on them. Hosts
//! and settings panels read these from the engine (never copies), and a test checks that the
//! extension's `package.json` agrees with them.

use serde::{Deserialize, Serialize};

/// The threshold when neither the settings nor the profile name one.
pub const DEFAULT_THRESHOLD_PERCENT: u8 = 80;
/// The lowest threshold a user may set, globally or per profile.
pub const THRESHOLD_MIN: i32 = 10;
/// The highest threshold.
pub const THRESHOLD_MAX: i32 = 100;
/// The minimum gain of an automatic condensation, in percent of the window, by default.
pub const DEFAULT_MIN_GAIN_PERCENT: f64 = 5.0;
/// The share of the window kept free on top of the longest answer.
pub const BUFFER_PERCENT: usize = 10;
/// Automatic condensations allowed in any minute.
pub const MAX_AUTO_PER_MINUTE: usize = 3;
/// The provider used when the settings name none: `smart`, which condenses an ordinary chat
/// (lossless alone finds nothing to do where no content repeats): its LLM-free passes first, a
/// summary by the condensing profile (in a chat, else the chat's own), truncation last, so that
/// it lands on its target offline too.
pub const DEFAULT_PROVIDER: &str = "smart";
/// The longest answer of a profile that names none, in tokens, when its window is large enough:
/// see [`default_max_output_for`].
pub const DEFAULT_MAX_OUTPUT: usize = 4096;
/// A profile that names no longest answer gets at most this share of its window, in percent.
pub const DEFAULT_MAX_OUTPUT_WINDOW_PERCENT: usize = 25;
/// The lowest temperature a profile's phase may set.
pub const TEMPERATURE_MIN: f64 = 0.0;
/// The highest temperature a profile's phase may set (OpenAI's; the core clamps Anthropic's to 0–1).
pub const TEMPERATURE_MAX: f64 = 2.0;

/// The largest conversation file a host reads, in bytes (256 MB): a bigger one is refused, by its
/// size, before it is read into memory (the CLI, and the extension's Open Session File…).
pub const MAX_CONVERSATION_BYTES: u64 = 256 << 20;

/// The longest answer of a profile that names none: [`DEFAULT_MAX_OUTPUT`], or a quarter of the
/// window when that is smaller (a 4,096-token window answers in up to 1,024 tokens), so that the
/// default always leaves room for the prompt.
pub fn default_max_output_for(context_window: usize) -> usize {
    DEFAULT_MAX_OUTPUT.min(context_window * DEFAULT_MAX_OUTPUT_WINDOW_PERCENT / 100).max(1)
}

/// The user's automatic-condensation settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AutoCondense {
    /// The off switch: when false nothing is condensed without the user asking.
    pub enabled: bool,
    /// The global threshold, in percent of the context window; a profile may override it.
    pub threshold_percent: u8,
    /// An automatic condensation that saves less than this share of the window is not applied.
    pub min_gain_percent: f64,
}

impl Default for AutoCondense {
    fn default() -> Self {
        AutoCondense {
            enabled: true,
            threshold_percent: DEFAULT_THRESHOLD_PERCENT,
            min_gain_percent: DEFAULT_MIN_GAIN_PERCENT,
        }
    }
}

impl AutoCondense {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), String> {
        if !(THRESHOLD_MIN..=THRESHOLD_MAX).contains(&i32::from(self.threshold_percent)) {
            return Err(format!(
                "the threshold must be {THRESHOLD_MIN} to {THRESHOLD_MAX} percent, got {}",
                self.threshold_percent
            ));
        }
        if !(0.0..=100.0).contains(&self.min_gain_percent) {
            return Err(format!("the minimum gain must be 0 to 100 percent, got {}", self.min_gain_percent));
        }
        Ok(())
    }

    /// The threshold for a profile whose own threshold is `profile_threshold`: its own unless it
    /// is `-1` or absent, else the global one; `None` when automatic condensation is off.
    pub fn threshold_for(&self, profile_threshold: Option<i32>) -> Option<u8> {
        if !self.enabled {
            return None;
        }
        match profile_threshold {
            Some(t @ 1..=100) => Some(t as u8),
            _ => Some(self.threshold_percent),
        }
    }
}

/// Whether a profile's own threshold is allowed: `-1` (the global one) or the threshold range.
pub fn check_profile_threshold(t: i32) -> Result<(), String> {
    if t == -1 || (THRESHOLD_MIN..=THRESHOLD_MAX).contains(&t) {
        Ok(())
    } else {
        Err(format!(
            "threshold_percent must be -1 (the global value) or {THRESHOLD_MIN} to {THRESHOLD_MAX}, got {t}"
        ))
    }
}

/// How far under the rejected request's size, in percent, a condensation after a "context too long"
/// answer aims: the model's tokenizer counts more than ours.
pub const OVERFLOW_MARGIN_PERCENT: usize = 15;

/// The most tokens a request may hold: the window less the longest answer and a 10% buffer.
pub fn request_limit(context_window: usize, max_output: usize) -> usize {
    let buffer = context_window * BUFFER_PERCENT / 100;
    context_window.saturating_sub(max_output).saturating_sub(buffer)
}

/// The limits and defaults as one value, for hosts and settings panels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Limits {
    /// See [`THRESHOLD_MIN`].
    pub threshold_min: i32,
    /// See [`THRESHOLD_MAX`].
    pub threshold_max: i32,
    /// See [`DEFAULT_THRESHOLD_PERCENT`].
    pub default_threshold_percent: u8,
    /// See [`DEFAULT_MIN_GAIN_PERCENT`].
    pub default_min_gain_percent: f64,
    /// See [`BUFFER_PERCENT`].
    pub buffer_percent: usize,
    /// See [`MAX_AUTO_PER_MINUTE`].
    pub max_auto_per_minute: usize,
    /// See [`DEFAULT_PROVIDER`].
    pub default_provider: String,
    /// See [`DEFAULT_MAX_OUTPUT`].
    pub default_max_output: usize,
    /// See [`MAX_CONVERSATION_BYTES`].
    pub max_conversation_bytes: u64,
    /// See [`TEMPERATURE_MIN`].
    pub temperature_min: f64,
    /// See [`TEMPERATURE_MAX`].
    pub temperature_max: f64,
}

impl Limits {
    /// The core's limits.
    pub fn current() -> Self {
        Limits {
            threshold_min: THRESHOLD_MIN,
            threshold_max: THRESHOLD_MAX,
            default_threshold_percent: DEFAULT_THRESHOLD_PERCENT,
            default_min_gain_percent: DEFAULT_MIN_GAIN_PERCENT,
            buffer_percent: BUFFER_PERCENT,
            max_auto_per_minute: MAX_AUTO_PER_MINUTE,
            default_provider: DEFAULT_PROVIDER.to_owned(),
            default_max_output: DEFAULT_MAX_OUTPUT,
            max_conversation_bytes: MAX_CONVERSATION_BYTES,
            temperature_min: TEMPERATURE_MIN,
            temperature_max: TEMPERATURE_MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_the_profiles_own_else_the_global_one_and_none_when_off() {
        let auto = AutoCondense::default();
        assert_eq!(auto.threshold_for(None), Some(80));
        assert_eq!(auto.threshold_for(Some(-1)), Some(80));
        assert_eq!(auto.threshold_for(Some(60)), Some(60));
        let off = AutoCondense { enabled: false, ..auto };
        assert_eq!(off.threshold_for(Some(60)), None);
        assert!(AutoCondense { threshold_percent: 0, ..AutoCondense::default() }.validate().is_err());
        assert!(AutoCondense { min_gain_percent: -1.0, ..AutoCondense::default() }.validate().is_err());
        assert!(check_profile_threshold(150).is_err());
        assert!(check_profile_threshold(-1).is_ok());
        assert!(check_profile_threshold(THRESHOLD_MIN).is_ok());
    }

    #[test]
    fn the_request_limit_leaves_room_for_the_answer_and_the_buffer() {
        assert_eq!(request_limit(1000, 300), 600);
        assert_eq!(request_limit(1000, 2000), 0);
    }

    #[test]
    fn the_default_answer_is_a_quarter_of_a_small_window_and_4096_at_most() {
        assert_eq!(default_max_output_for(4096), 1024);
        assert_eq!(default_max_output_for(128_000), DEFAULT_MAX_OUTPUT);
        assert_eq!(default_max_output_for(16_384), DEFAULT_MAX_OUTPUT);
        assert_eq!(default_max_output_for(2), 1);
    }
}
