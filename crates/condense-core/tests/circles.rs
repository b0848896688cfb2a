//! No file of the core imports one that imports it back, directly or through others: within a
//! module as between modules (`layers.rs` orders the modules; this reads every file).

#[test]
fn no_import_circle() {
    condense_imports::assert_no_circle(env!("CARGO_MANIFEST_DIR"));
}
