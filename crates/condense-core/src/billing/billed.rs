//! What one prompt was billed as: the unit both the cache model ([`super::cache`]) produces and
//! the price table ([`super::prices`]) prices.

/// What one prompt was billed as, in tokens (fractional when the tokens are estimates).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Billed {
    /// Read from the cache.
    pub read: f64,
    /// Written with a 5-minute lifetime (OpenAI, Gemini: every write).
    pub write_5m: f64,
    /// Written with a 1-hour lifetime.
    pub write_1h: f64,
    /// Neither read nor written.
    pub uncached: f64,
}

impl Billed {
    /// Every token of the prompt.
    pub fn total(&self) -> f64 {
        self.read + self.write_5m + self.write_1h + self.uncached
    }

    /// Adds `other`.
    pub fn add(&mut self, other: &Billed) {
        self.read += other.read;
        self.write_5m += other.write_5m;
        self.write_1h += other.write_1h;
        self.uncached += other.uncached;
    }
}
