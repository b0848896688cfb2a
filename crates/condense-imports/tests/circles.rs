//! This crate's own files form no circle.

#[test]
fn no_import_circle() {
    condense_imports::assert_no_circle(env!("CARGO_MANIFEST_DIR"));
}
