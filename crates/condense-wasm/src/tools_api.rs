//! `CondenseEngine`'s CLI tools: the registry `cli` profiles run (the shipped entries, then the
//! host's YAML sources) and each tool's status, its program located through the host.

use std::rc::Rc;

use condense_core::tools::{GenericAdapter, Located, ToolConfigError, ToolRegistry, ToolSource};
use condense_protocol::calls::ToolStatus;
use wasm_bindgen::prelude::*;

use crate::engine::{CondenseEngine, Inner};
use crate::host::JsRunner;
use crate::surface::engine_api;

crate::surface::data!(ToolSource, ToolConfigError, ToolStatus);

engine_api! {
    impl CondenseEngine;

    /// Replaces the tool registry by the shipped entries, then each source's in order (a later
    /// entry with the same id replaces an earlier one). A source that cannot be used is left
    /// out; returns the errors of those, each naming its file, line and column.
    sync fn setToolSources = set_tool_sources(sources: Vec<ToolSource>) -> Vec<ToolConfigError>;

    /// Every tool, shipped first, with where its program was found (through the host's
    /// `locate`; nothing is found on a host that cannot run programs).
    sync fn tools = tools() -> Vec<ToolStatus>;
}

fn set_tool_sources(inner: &Rc<Inner>, sources: Vec<ToolSource>) -> Result<Vec<ToolConfigError>, JsValue> {
    if sources.is_empty() {
        // The shipped entries alone: parsed when a tool is first needed.
        inner.set_tools(None);
        return Ok(Vec::new());
    }
    let (registry, errors) = ToolRegistry::load(&sources);
    for e in &errors {
        inner.host.log("warn", &format!("tool file left out: {e}"));
    }
    inner.set_tools(Some(registry));
    Ok(errors)
}

fn tools(inner: &Rc<Inner>) -> Result<Vec<ToolStatus>, JsValue> {
    let registry = inner.tools();
    let runner = JsRunner::of(&inner.host);
    Ok(registry
        .entries()
        .iter()
        .map(|entry| {
            let located = match &runner {
                Some(r) => GenericAdapter::new(entry.clone(), Rc::new(r.clone())).locate(),
                None => Located {
                    found: None,
                    searched: vec!["nowhere: this host cannot run programs".to_owned()],
                },
            };
            ToolStatus::new(entry, located)
        })
        .collect())
}
