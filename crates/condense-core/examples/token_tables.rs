//! Writes the fast token counter's generated files from the oracles (tiktoken-rs's vocabularies,
//! regex-syntax's character classes): `src/tokens/vocab/*.bin` and `src/tokens/unicode_table.rs`.
//! Run it after upgrading tiktoken-rs or regex-syntax:
//! `cargo run -p condense-core --example token_tables`. `tests/tokens_oracle.rs` fails while a
//! committed file differs from what this writes.
#![allow(clippy::disallowed_methods, reason = "a build tool writing the generated files")]

#[path = "../tests/common/token_tables.rs"]
mod token_tables;

use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tokens");
    for name in ["o200k_base", "cl100k_base"] {
        let bytes = token_tables::compact(&token_tables::vocabulary(name));
        let path = dir.join("vocab").join(format!("{name}.bin"));
        std::fs::write(&path, &bytes).expect("the vocabulary file is writable");
        println!("{} ({} bytes)", path.display(), bytes.len());
    }
    let path = dir.join("unicode_table.rs");
    std::fs::write(&path, token_tables::unicode_table()).expect("the table is writable");
    println!("{}", path.display());
}
