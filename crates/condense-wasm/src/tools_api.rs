//! `CondenseEngine`'s CLI tools: the registry `cli` profiles run (the shipped entries, then the
//! host's YAML sources) and each tool's status, its program located through the host.

use condense_core::tools::{GenericAdapter, Located, ToolConfigError, ToolRegistry, ToolSource};
use condense_protocol::calls::ToolStatus;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

use crate::convert::{from_js, to_js};
use crate::engine::CondenseEngine;
use crate::host::JsRunner;

#[wasm_bindgen]
impl CondenseEngine {
    /// Replaces the tool registry by the shipped entries, then each source's in order (a later
    /// entry with the same id replaces an earlier one). A source that cannot be used is left out;
    /// returns the errors of those, each naming its file, line and column.
    #[wasm_bindgen(js_name = setToolSources, unchecked_return_type = "ToolConfigError[]")]
    pub fn set_tool_sources(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ToolSource[]")] sources: JsValue,
    ) -> Result<JsValue, JsValue> {
        let sources: Vec<ToolSource> = from_js(&sources, "the tool sources")?;
        if sources.is_empty() {
            // The shipped entries alone: parsed when a tool is first needed.
            self.inner.set_tools(None);
            return to_js(&Vec::<ToolConfigError>::new());
        }
        let (registry, errors) = ToolRegistry::load(&sources);
        for e in &errors {
            self.inner.host.log("warn", &format!("tool file left out: {e}"));
        }
        self.inner.set_tools(Some(registry));
        to_js(&errors)
    }

    /// Every tool, shipped first, with where its program was found (through the host's `locate`;
    /// nothing is found on a host that cannot run programs).
    #[wasm_bindgen(unchecked_return_type = "ToolStatus[]")]
    pub fn tools(&self) -> Result<JsValue, JsValue> {
        let registry = self.inner.tools();
        let runner = JsRunner::of(&self.inner.host);
        let statuses: Vec<ToolStatus> = registry
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
            .collect();
        to_js(&statuses)
    }
}
