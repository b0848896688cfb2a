//! No file of the CLI imports one that imports it back, directly or through others (the gateway's
//! `proxy` and `summarize` share their state through `decide`, below both).

#[test]
fn no_import_circle() {
    condense_imports::assert_no_circle(env!("CARGO_MANIFEST_DIR"));
}
