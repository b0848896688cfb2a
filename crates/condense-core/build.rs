//! Lays out each compact vocabulary (`src/tokens/vocab/*.bin`) as the table the counter reads in
//! place (`src/tokens/layout.rs`), into `$OUT_DIR/*.table`: the hash table is built here, once,
//! rather than on each process's first count.
#![allow(clippy::disallowed_methods, reason = "a build script reads and writes files at build time")]

#[path = "src/tokens/layout.rs"]
mod layout;

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo::rerun-if-changed=src/tokens/layout.rs");
    for name in ["o200k_base", "cl100k_base"] {
        let source = format!("src/tokens/vocab/{name}.bin");
        println!("cargo::rerun-if-changed={source}");
        let compact = std::fs::read(&source).expect("the compact vocabulary is readable");
        std::fs::write(out.join(format!("{name}.table")), layout::lay_out(&compact))
            .expect("OUT_DIR is writable");
    }
}
