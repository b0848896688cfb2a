//! What the native benchmarks share: the guard that keeps them out of `cargo test --all-targets`,
//! and their command-line arguments.
#![allow(clippy::disallowed_macros, reason = "a benchmark run by hand prints to a terminal")]

/// Whether the benchmark was started by `cargo bench` (which passes `--bench`). `cargo test
/// --all-targets` (scripts/test-all) runs a harness-less bench without it: a benchmark is not a
/// test, so then it only says how to run it, and this is false.
pub(crate) fn started_by_cargo_bench(name: &str) -> bool {
    if std::env::args().any(|a| a == "--bench") {
        return true;
    }
    println!("a benchmark: run it with `cargo bench -p condense-cli --bench {name}`");
    false
}

/// The value after `name` on the command line (`-- --rounds 21`).
pub(crate) fn arg(name: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != name).nth(1)
}
