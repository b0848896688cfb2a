//! The core's modules form layers: each top-level module may use only modules of lower layers.
//! This test reads the sources and fails on an upward or same-layer reference (`crate::x` where
//! `x` is not below), which is also what rules out circles. ARCHITECTURE.md draws the same table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Lowest first. A module may use the modules of the layers before its own.
const LAYERS: &[&[&str]] = &[
    &["host", "error"],
    &["model"],
    &["tokens", "limits", "config", "pins"],
    &["profile", "ledger"],
    &["formats", "tools", "billing"],
    &["llm"],
    &["provider"],
    &["providers"],
    &["registry"],
    &["manager"],
    &["settings", "agent"],
    &["gateway"],
    &["testing"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a source text names as `crate::x`, outside comments.
fn references(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
        // `use crate::{a, b}` groups.
        if let Some(group) = code.split("crate::{").nth(1) {
            for item in group.split(['}', ',']) {
                let name: String =
                    item.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// The references of one file of `module` (in layer `own`) that break the layering.
fn check(file: &str, module: &str, own: usize, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for used in references(text) {
        if used == module {
            continue;
        }
        match layer_of(&used) {
            Some(layer) if layer < own => {}
            Some(layer) => problems.push(format!(
                "{file}: `{module}` (layer {own}) uses `{used}` (layer {layer}): only lower layers may be used"
            )),
            None => problems.push(format!("{file}: uses `crate::{used}`, which is in no layer")),
        }
    }
    problems
}

#[test]
#[allow(clippy::disallowed_methods, reason = "a test reading the crate's own sources")]
fn every_module_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut problems = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under src");
        let first = relative.components().next().expect("a file").as_os_str().to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        if module == "lib" {
            continue;
        }
        let Some(own) = layer_of(&module) else {
            problems.push(format!("{}: module `{module}` is in no layer of LAYERS", relative.display()));
            continue;
        };
        seen.insert(module.clone(), own);
        let text = std::fs::read_to_string(file).expect("a readable source");
        problems.extend(check(&relative.display().to_string(), &module, own, &text));
    }
    assert!(problems.is_empty(), "layering broken:\n{}", problems.join("\n"));
    let all: usize = LAYERS.iter().map(|l| l.len()).sum();
    assert_eq!(seen.len(), all, "every layer's module exists: {seen:?}");
}

#[test]
fn the_reference_reader_finds_paths_and_groups_but_not_comments() {
    let text = "use crate::model::Message;\nuse crate::{error, host::Clock};\n// crate::agent\nx(crate::llm::collect)";
    assert_eq!(references(text), ["model", "error", "host", "llm"]);
}

#[test]
fn an_upward_or_same_layer_use_is_reported() {
    let llm = layer_of("llm").unwrap();
    assert!(check("llm/profile.rs", "llm", llm, "use crate::model::Message;").is_empty());
    let upward = check("llm/profile.rs", "llm", llm, "use crate::agent::THRESHOLD_MIN;");
    assert_eq!(upward.len(), 1, "{upward:?}");
    assert!(upward[0].contains("uses `agent`"), "{upward:?}");
    let tokens = layer_of("tokens").unwrap();
    assert_eq!(check("tokens.rs", "tokens", tokens, "use crate::limits::X;").len(), 1, "same layer");
    assert_eq!(check("x.rs", "tokens", tokens, "crate::nowhere::f()").len(), 1, "unknown module");
}
