//! Helpers shared by the core's integration tests.
#![allow(dead_code, unreachable_pub)]

use std::cell::Cell;

use condense_core::model::{ContentBlock, Message, Role};
use condense_core::{Clock, TiktokenCounter};

/// A clock that advances 5 ms each time it is read.
#[derive(Default)]
pub struct StepClock(Cell<f64>);

impl Clock for StepClock {
    fn now_ms(&self) -> f64 {
        let t = self.0.get();
        self.0.set(t + 5.0);
        t
    }
}

pub fn counter() -> TiktokenCounter {
    TiktokenCounter::new(condense_core::Encoding::O200kBase)
}

pub fn text(id: &str, role: Role, t: &str) -> Message {
    Message::new(id, role, vec![ContentBlock::text(t)])
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}
