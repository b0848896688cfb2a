//! Helpers shared by the core's integration tests.
#![allow(dead_code, unreachable_pub)]

use condense_core::TiktokenCounter;
use condense_core::model::{ContentBlock, Message, Role};
pub use condense_core::testing::StepClock;

pub fn counter() -> TiktokenCounter {
    TiktokenCounter::new(condense_core::Encoding::O200kBase)
}

pub fn text(id: &str, role: Role, t: &str) -> Message {
    Message::new(id, role, vec![ContentBlock::text(t)])
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

/// Cases per property: `ci` by default, or `CONDENSE_PROPTEST_CASES` for the long mode of
/// RELIABILITY.md (10,000).
pub fn cases(ci: u32) -> u32 {
    std::env::var("CONDENSE_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(ci)
}
