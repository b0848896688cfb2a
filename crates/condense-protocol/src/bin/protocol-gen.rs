//! Writes the generated TypeScript protocol (`protocol/src/generated.ts`), or with `--check`
//! exits 1 when the committed file is stale.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join(condense_protocol::GENERATED_PATH);
    let fresh = condense_protocol::typescript();
    let check = std::env::args().any(|a| a == "--check");
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if check {
        if current == fresh {
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "protocol-gen: {} is stale; run `cargo run -p condense-protocol --bin protocol-gen`",
            path.display()
        );
        return ExitCode::FAILURE;
    }
    if current != fresh {
        if let Err(e) = std::fs::write(&path, fresh) {
            eprintln!("protocol-gen: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        eprintln!("protocol-gen: wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
