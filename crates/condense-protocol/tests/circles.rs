//! No file of the protocol imports one that imports it back, directly or through others.

#[test]
fn no_import_circle() {
    condense_imports::assert_no_circle(env!("CARGO_MANIFEST_DIR"));
}
