//! CLI agents as models (seed 002, SPEC §7): tools described in YAML (the shipped entries for
//! Claude Code, Codex and Gemini CLI, then the user's and the workspace's files), one
//! [`ToolAdapter`] contract and one [`GenericAdapter`] for every entry. The core decides what to
//! run, as an argv (never a shell string); the host's [`CommandRunner`](crate::host::CommandRunner)
//! runs it.

mod adapter;
mod config;
mod output;
mod shim;
mod template;

pub use adapter::{
    GenericAdapter, Located, MAX_PROMPT_ARGUMENT_BYTES, MAX_TOOL_OUTPUT_BYTES, ToolAdapter, ToolRequest,
    ToolResponse, expand,
};
pub use config::{
    Extract, OutputFormat, OutputSource, OutputSpec, PromptVia, SHIPPED_ORIGIN, SHIPPED_YAML, ToolConfig,
    ToolConfigError, ToolEntry, ToolRegistry, ToolSource, UsageExtract, parse_tools,
};
pub use output::{Normalized, lookup, normalize};
pub use shim::{CmdShim, Interpreter, is_batch_file, parse_cmd_shim};
pub use template::{PLACEHOLDERS, Piece, Template, TemplateError, parse_template};
