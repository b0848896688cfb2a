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
