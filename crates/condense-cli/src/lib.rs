//! The native side of Context Condenser, shared by the `condense` binary and the Rust tests that
//! run the core against real servers.

pub mod bench_inputs;
pub mod native;
pub mod runner;
