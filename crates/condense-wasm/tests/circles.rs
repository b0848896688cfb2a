//! No file of the bindings imports one that imports it back, directly or through others: the
//! method files use the engine, never the other way round.

#[test]
fn no_import_circle() {
    condense_imports::assert_no_circle(env!("CARGO_MANIFEST_DIR"));
}
