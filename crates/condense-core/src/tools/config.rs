//! The YAML schema of a tool entry, and the registry of entries from every source: the shipped
//! file, then the user's, then the workspace's; a later entry replaces an earlier one with the
//! same id. Errors name the file, the line and the column (serde-saphyr reports them), and a
//! check after parsing names the tool and the field.
//!
//! Seed 002's own sample loads as written: `env_vars` is another spelling of `env`, an entry
//! without `output` prints plain text on standard output, and `< {prompt_file}` in the command
//! template puts the prompt on standard input (see `template.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_saphyr::{Location, Spanned};

use super::template::{Template, parse_template};
use crate::error::{ErrorKind, LlmError};
use crate::profile::ModelUse;

/// The entries shipped with the product.
pub const SHIPPED_YAML: &str = include_str!("shipped.yaml");

/// Where the shipped entries say they come from.
pub const SHIPPED_ORIGIN: &str = "shipped";

/// Where the prompt goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PromptVia {
    /// Written to the program's standard input.
    #[default]
    Stdin,
    /// Written to a temporary file named by `{prompt_file}`.
    File,
    /// Passed as one argument, `{prompt}`.
    Argument,
}

impl PromptVia {
    /// The name written in YAML.
    fn as_str(self) -> &'static str {
        match self {
            PromptVia::Stdin => "stdin",
            PromptVia::File => "file",
            PromptVia::Argument => "argument",
        }
    }
}

/// How the program's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// The whole output is the answer.
    Text,
    /// One JSON document; fields are read by path.
    Json,
    /// One JSON event per line; a field is read from the last event that matches.
    Jsonl,
}

/// Which stream holds the answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputSource {
    /// Standard output.
    #[default]
    Stdout,
    /// The temporary file named by `{output_file}`.
    OutputFile,
}

/// A value read from a JSON document or event: the `path` (dotted keys, array indexes, `$first`
/// for the first value of an object or array, `$first_key` for its first key) of the last
/// document whose fields equal `when` (each key a path too).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Extract {
    /// Paths and the values they must hold; empty: every document.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub when: BTreeMap<String, serde_json::Value>,
    /// Where the value is.
    pub path: String,
}

impl<'de> Deserialize<'de> for Extract {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// A bare path, or the full form.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Path(String),
            Full {
                #[serde(default)]
                when: BTreeMap<String, serde_json::Value>,
                path: String,
            },
        }
        Ok(match Form::deserialize(d)? {
            Form::Path(path) => Extract { when: BTreeMap::new(), path },
            Form::Full { when, path } => Extract { when, path },
        })
    }
}

/// Where the reported token counts are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageExtract {
    /// Paths and the values they must hold; empty: every document.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub when: BTreeMap<String, serde_json::Value>,
    /// The path of the input tokens.
    pub input: String,
    /// The path of the output tokens.
    pub output: String,
}

/// How to read what the program printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Text, one JSON document, or JSON lines.
    pub format: OutputFormat,
    /// Standard output (default) or the output file.
    #[serde(default)]
    pub source: OutputSource,
    /// The answer's text (JSON formats; required there).
    #[serde(default)]
    pub text: Option<Extract>,
    /// An error the tool reports in its output, with its message.
    #[serde(default)]
    pub error: Option<Extract>,
    /// The token counts the tool reports.
    #[serde(default)]
    pub usage: Option<UsageExtract>,
    /// The cost in US dollars the tool reports.
    #[serde(default)]
    pub cost: Option<Extract>,
    /// The model the tool says answered.
    #[serde(default)]
    pub model: Option<Extract>,
}

/// One tool, as its YAML entry describes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// The name people read; the id when absent.
    #[serde(default)]
    pub name: Option<String>,
    /// The program: a bare name looked up on the PATH, or a path.
    pub binary: Spanned<String>,
    /// Places to look first, per platform (`linux`, `macos`, `windows`); `~` and `${VAR}` are
    /// expanded.
    #[serde(default)]
    pub paths: BTreeMap<String, Vec<String>>,
    /// The command line: `{binary}` first, then arguments with `{model}`, `{prompt}`,
    /// `{prompt_file}`, `{output_file}`; `< {prompt_file}` says the prompt goes to standard
    /// input. Any other shell operator is an error where it is written.
    pub command_template: Spanned<String>,
    /// Where the prompt goes.
    #[serde(default)]
    pub prompt_via: PromptVia,
    /// The models the tool accepts.
    pub models: Vec<String>,
    /// Variables set for the program; `${VAR}` is the host's variable (an entry whose
    /// variables are unset is left out). Written `env`, or `env_vars` as seed 002 spells it;
    /// not both.
    #[serde(default = "no_variables")]
    pub env: Spanned<BTreeMap<String, String>>,
    /// `env` as seed 002 spells it: read while the entry is checked, then moved into `env`.
    #[serde(default)]
    env_vars: Option<Spanned<BTreeMap<String, String>>>,
    /// What it may be used for: `chat` (the chat model), `summarize` (the condensing model);
    /// both when absent. Any other value is an error where it is written.
    #[serde(default = "default_capabilities")]
    pub capabilities: Spanned<Vec<ModelUse>>,
    /// The models' context window, in tokens, offered as the profile's default.
    #[serde(default)]
    pub context_window: Option<usize>,
    /// How its output is read; plain text on standard output when left out.
    #[serde(default = "text_on_stdout")]
    pub output: OutputSpec,
    /// Seconds before the program and its children are killed.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
}

fn default_timeout_secs() -> u64 {
    300
}

fn default_capabilities() -> Spanned<Vec<ModelUse>> {
    let nowhere = Location::UNKNOWN;
    Spanned { value: ModelUse::ALL.to_vec(), referenced: nowhere, defined: nowhere }
}

fn no_variables() -> Spanned<BTreeMap<String, String>> {
    let nowhere = Location::UNKNOWN;
    Spanned { value: BTreeMap::new(), referenced: nowhere, defined: nowhere }
}

/// What an entry without `output` prints: the answer, as plain text, on standard output.
fn text_on_stdout() -> OutputSpec {
    OutputSpec {
        format: OutputFormat::Text,
        source: OutputSource::Stdout,
        text: None,
        error: None,
        usage: None,
        cost: None,
        model: None,
    }
}

/// A YAML file of tools.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolFile {
    #[serde(default)]
    tools: BTreeMap<String, ToolConfig>,
}

/// A source of tool entries: where it comes from (a path, or `shipped`) and its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolSource {
    /// A path, or `shipped`.
    pub origin: String,
    /// The YAML.
    pub text: String,
}

/// A tool file that cannot be used: where, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{origin}:{line}:{column}: {message}")]
pub struct ToolConfigError {
    /// The file.
    pub origin: String,
    /// 1-based line; 0 when unknown.
    pub line: u64,
    /// 1-based column; 0 when unknown.
    pub column: u64,
    /// What is wrong.
    pub message: String,
}

/// A tool ready to run: its id, where its entry came from, its entry and parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    /// The id (`claude-code`).
    pub id: String,
    /// The file it came from.
    pub origin: String,
    /// The entry.
    pub config: ToolConfig,
    /// The command template, split into arguments.
    pub template: Template,
}

impl ToolEntry {
    /// The name people read.
    pub fn name(&self) -> &str {
        self.config.name.as_deref().unwrap_or(&self.id)
    }

    /// What the tool may be used for.
    pub fn capabilities(&self) -> &[ModelUse] {
        &self.config.capabilities.value
    }

    /// Whether the tool may serve `used`; `llm_tool_unsupported` naming the tool and what it
    /// supports when it may not (a tool without `chat` cannot be the chat model, one without
    /// `summarize` cannot be the condensing model).
    pub fn require(&self, used: ModelUse) -> Result<(), LlmError> {
        if self.capabilities().contains(&used) {
            return Ok(());
        }
        let supports = self.capabilities().iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ");
        Err(LlmError::new(
            ErrorKind::LlmToolUnsupported,
            format!(
                "tool '{}' cannot be {}: its entry's capabilities are [{supports}], without {used}; \
                 choose a profile whose tool lists {used}",
                self.id,
                used.role()
            ),
        ))
    }
}

fn at(origin: &str, location: Option<Location>, message: String) -> ToolConfigError {
    let (line, column) = location.map_or((0, 0), |l| (l.line(), l.column()));
    ToolConfigError { origin: origin.to_owned(), line, column, message }
}

/// The line and column, in the YAML `text`, of the byte `at` of a string value, when the source
/// shows that character as written: the same character, with as many like it before it (an
/// escape that makes or hides one leaves the question open: `None`).
fn inside(text: &str, value: &Spanned<String>, at: usize) -> Option<(u64, u64)> {
    let location = value.referenced;
    let span = location.span();
    let start = usize::try_from(span.byte_offset()?).ok()?;
    let len = usize::try_from(span.byte_len()?).ok()?;
    let raw = text.get(start..start.checked_add(len)?)?;
    let wanted = value.value.get(at..)?.chars().next()?;
    if raw.matches(wanted).count() != value.value.matches(wanted).count() {
        return None;
    }
    let nth = value.value.get(..at)?.matches(wanted).count();
    let (offset, _) = raw.match_indices(wanted).nth(nth)?;
    let before = &raw[..offset];
    let count = |s: &str| s.chars().count() as u64;
    Some(match before.rfind('\n') {
        None => (location.line(), location.column() + count(before)),
        Some(newline) => {
            (location.line() + before.matches('\n').count() as u64, count(&before[newline + 1..]) + 1)
        }
    })
}

/// Parses one file of entries, checking each.
pub fn parse_tools(source: &ToolSource) -> Result<Vec<ToolEntry>, ToolConfigError> {
    let file: ToolFile = serde_saphyr::from_str(&source.text).map_err(|e| {
        // The message without the snippet: the location goes in front, as compilers print it.
        let message = e.without_snippet().to_string();
        let message = message
            .split_once(": ")
            .filter(|(head, _)| head.contains("line "))
            .map_or(message.clone(), |(_, rest)| rest.to_owned());
        // Some messages end with the location too: it is said once, in front.
        let message = match message.rfind(" at line ") {
            Some(at) if message[at..].contains(", column ") => message[..at].to_owned(),
            _ => message,
        };
        at(&source.origin, e.location(), message.trim_start_matches("error: ").to_owned())
    })?;
    file.tools.into_iter().map(|(id, config)| check_entry(source, id, config)).collect()
}

fn check_entry(
    source: &ToolSource,
    id: String,
    mut config: ToolConfig,
) -> Result<ToolEntry, ToolConfigError> {
    let origin = source.origin.as_str();
    let template_at = Some(config.command_template.referenced);
    let fail = |location, message: String| Err(at(origin, location, format!("tools.{id}: {message}")));
    // A place in the template: its line and column when the YAML shows it as written, else the
    // template's.
    let in_template = |offset: usize, message: String| {
        let mut e = at(origin, template_at, format!("tools.{id}: command_template: {message}"));
        if let Some((line, column)) = inside(&source.text, &config.command_template, offset) {
            (e.line, e.column) = (line, column);
        }
        Err(e)
    };
    if id.trim().is_empty() || id.chars().any(char::is_whitespace) {
        return fail(Some(config.binary.referenced), format!("the id {id:?} must be one word"));
    }
    if config.binary.value.trim().is_empty() {
        return fail(Some(config.binary.referenced), "binary is empty".into());
    }
    if config.models.is_empty() {
        return fail(Some(config.binary.referenced), "models lists no model".into());
    }
    if config.timeout_secs == 0 {
        return fail(Some(config.binary.referenced), "timeout_secs must be above 0".into());
    }
    if config.capabilities.value.is_empty() {
        return fail(
            Some(config.capabilities.referenced),
            "capabilities lists nothing: give chat, summarize or both (both when left out)".into(),
        );
    }
    if let Some(env_vars) = config.env_vars.take() {
        if config.env.referenced != Location::UNKNOWN {
            return fail(
                Some(env_vars.referenced),
                "env and env_vars are both given: they are one setting (env_vars is seed 002's \
                 spelling of env); keep one"
                    .into(),
            );
        }
        config.env = env_vars;
    }
    let template = match parse_template(&config.command_template.value) {
        Ok(t) => t,
        Err(e) => match e.at {
            Some(offset) => return in_template(offset, e.message),
            None => return fail(template_at, format!("command_template: {}", e.message)),
        },
    };
    if let Some(offset) = template.stdin_redirect
        && config.prompt_via != PromptVia::Stdin
    {
        let via = config.prompt_via.as_str();
        let m = format!(
            "`< {{prompt_file}}` puts the prompt on standard input, but prompt_via says {via}; \
             leave prompt_via out (or write stdin), or take `< {{prompt_file}}` out"
        );
        return in_template(offset, m);
    }
    let needs = match config.prompt_via {
        PromptVia::Stdin => None,
        PromptVia::File => Some("{prompt_file}"),
        PromptVia::Argument => Some("{prompt}"),
    };
    if let Some(placeholder) = needs
        && !template.mentions(placeholder)
    {
        return fail(
            template_at,
            format!("command_template: prompt_via {:?} needs {placeholder}", config.prompt_via),
        );
    }
    if config.output.source == OutputSource::OutputFile && !template.mentions("{output_file}") {
        return fail(template_at, "command_template: output source output_file needs {output_file}".into());
    }
    if config.output.format != OutputFormat::Text && config.output.text.is_none() {
        return fail(template_at, "output: a JSON format needs `text`, the path of the answer".into());
    }
    Ok(ToolEntry { id, origin: origin.to_owned(), config, template })
}

/// Every tool known, by id: the shipped entries, then those of each source in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRegistry {
    entries: Vec<ToolEntry>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::shipped()
    }
}

impl ToolRegistry {
    /// The shipped entries only.
    pub fn shipped() -> Self {
        let shipped = ToolSource { origin: SHIPPED_ORIGIN.into(), text: SHIPPED_YAML.into() };
        let entries = parse_tools(&shipped).expect("the shipped tool entries parse");
        ToolRegistry { entries }
    }

    /// The shipped entries, then each source's; a source that cannot be used is left out and its
    /// error returned beside the registry.
    pub fn load(sources: &[ToolSource]) -> (Self, Vec<ToolConfigError>) {
        let mut registry = Self::shipped();
        let mut errors = Vec::new();
        for source in sources {
            match parse_tools(source) {
                Ok(entries) => entries.into_iter().for_each(|e| registry.insert(e)),
                Err(e) => errors.push(e),
            }
        }
        (registry, errors)
    }

    /// The shipped entries, then each source's; the first source that cannot be used fails.
    pub fn strict(sources: &[ToolSource]) -> Result<Self, ToolConfigError> {
        let (registry, mut errors) = Self::load(sources);
        if errors.is_empty() { Ok(registry) } else { Err(errors.remove(0)) }
    }

    fn insert(&mut self, entry: ToolEntry) {
        match self.entries.iter_mut().find(|e| e.id == entry.id) {
            Some(slot) => *slot = entry,
            None => self.entries.push(entry),
        }
    }

    /// Every entry, shipped first.
    pub fn entries(&self) -> &[ToolEntry] {
        &self.entries
    }

    /// The entry of a tool; an unknown id names the known ones.
    pub fn get(&self, id: &str) -> Result<&ToolEntry, LlmError> {
        self.entries.iter().find(|e| e.id == id).ok_or_else(|| {
            let known = self.entries.iter().map(|e| e.id.as_str()).collect::<Vec<_>>().join(", ");
            LlmError::new(ErrorKind::LlmConfig, format!("unknown tool '{id}'; known tools: {known}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> ToolSource {
        ToolSource { origin: "tools.yaml".into(), text: text.into() }
    }

    const MINIMAL: &str = "tools:\n  echo:\n    binary: echo\n    command_template: \"{binary} {prompt}\"\n    prompt_via: argument\n    models: [m]\n    output: { format: text }\n";

    #[test]
    fn the_shipped_entries_parse_with_their_fields() {
        let registry = ToolRegistry::shipped();
        let ids: Vec<_> = registry.entries().iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["claude-code", "codex", "gemini"]);
        let claude = registry.get("claude-code").unwrap();
        assert_eq!(claude.config.binary.value, "claude");
        assert_eq!(claude.config.output.cost.as_ref().unwrap().path, "total_cost_usd");
        let codex = registry.get("codex").unwrap();
        assert_eq!(codex.config.output.format, OutputFormat::Jsonl);
        assert_eq!(codex.config.output.text.as_ref().unwrap().when["item.type"], "agent_message");
    }

    #[test]
    fn a_later_source_adds_and_replaces_entries() {
        let (registry, errors) = ToolRegistry::load(&[source(MINIMAL)]);
        assert!(errors.is_empty());
        assert_eq!(registry.entries().len(), 4);
        let replaced = MINIMAL.replace("echo:", "codex:");
        let (registry, _) = ToolRegistry::load(&[source(&replaced)]);
        assert_eq!(registry.entries().len(), 3);
        assert_eq!(registry.get("codex").unwrap().config.binary.value, "echo");
        assert_eq!(registry.get("codex").unwrap().origin, "tools.yaml");
    }

    #[test]
    fn bad_yaml_names_the_file_line_and_column() {
        let e = parse_tools(&source("tools:\n  x:\n    binary: x\n    modls: [a]\n")).unwrap_err();
        assert_eq!((e.origin.as_str(), e.line, e.column), ("tools.yaml", 4, 5));
        assert!(e.message.contains("unknown field `modls`"), "{e}");
        assert!(e.to_string().starts_with("tools.yaml:4:5: "), "{e}");
        let e = parse_tools(&source(&MINIMAL.replace("models: [m]", "models: [m]\n    timeout_secs: soon")))
            .unwrap_err();
        assert_eq!(e.line, 7, "{e}");
        let e = parse_tools(&source("tools:\n  a: [\n")).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn checks_after_parsing_name_the_tool_and_field_where_they_are() {
        let e = parse_tools(&source(&MINIMAL.replace("{binary} {prompt}", "{binary}"))).unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(
            e.message.contains("tools.echo: command_template: prompt_via Argument needs {prompt}"),
            "{e}"
        );
        let e = parse_tools(&source(&MINIMAL.replace("{binary} {prompt}", "{binary} {promt}"))).unwrap_err();
        assert!(e.message.contains("unknown placeholder {promt}"), "{e}");
        let e = parse_tools(&source(&MINIMAL.replace("models: [m]", "models: []"))).unwrap_err();
        assert!(e.message.contains("models lists no model"), "{e}");
        let e = parse_tools(&source(&MINIMAL.replace("{ format: text }", "{ format: json }"))).unwrap_err();
        assert!(e.message.contains("needs `text`"), "{e}");
    }

    #[test]
    fn capabilities_are_chat_and_summarize_checked_where_they_are_written() {
        // Left out: both.
        let entry = parse_tools(&source(MINIMAL)).unwrap().remove(0);
        assert_eq!(entry.capabilities(), [ModelUse::Chat, ModelUse::Summarize]);
        assert!(entry.require(ModelUse::Chat).is_ok() && entry.require(ModelUse::Summarize).is_ok());
        let summarize_only = MINIMAL.replace("models: [m]", "models: [m]\n    capabilities: [summarize]");
        let entry = parse_tools(&source(&summarize_only)).unwrap().remove(0);
        assert_eq!(entry.capabilities(), [ModelUse::Summarize]);
        let e = entry.require(ModelUse::Chat).unwrap_err();
        assert_eq!(e.kind, ErrorKind::LlmToolUnsupported);
        assert_eq!(
            e.message,
            "tool 'echo' cannot be the chat model: its entry's capabilities are [summarize], without chat; \
             choose a profile whose tool lists chat"
        );
        // An unknown value is an error at its line and column, naming the known ones.
        let typo = MINIMAL.replace("models: [m]", "models: [m]\n    capabilities: [chat, sumarize]");
        let e = parse_tools(&source(&typo)).unwrap_err();
        assert_eq!((e.line, e.column), (7, 26), "{e}");
        assert!(!e.message.contains("at line"), "the location is said once, in front: {e}");
        assert!(e.message.contains("sumarize") && e.message.contains("summarize"), "{e}");
        let e = parse_tools(&source(&MINIMAL.replace("models: [m]", "models: [m]\n    capabilities: chat")))
            .unwrap_err();
        assert_eq!(e.line, 7, "{e}");
        // An empty list is refused where it is written.
        let none = MINIMAL.replace("models: [m]", "models: [m]\n    capabilities: []");
        let e = parse_tools(&source(&none)).unwrap_err();
        assert_eq!(e.line, 7, "{e}");
        assert!(e.message.contains("tools.echo: capabilities lists nothing"), "{e}");
        // Every shipped tool serves both.
        for entry in ToolRegistry::shipped().entries() {
            assert_eq!(entry.capabilities(), ModelUse::ALL, "{}", entry.id);
        }
    }

    /// MINIMAL with another command template, written as a JSON string (valid YAML).
    fn with_template(template: &str) -> String {
        MINIMAL.replace("\"{binary} {prompt}\"", &serde_json::to_string(template).unwrap())
    }

    #[test]
    fn seed_002s_spellings_are_read_env_vars_no_output_and_the_prompt_file_on_stdin() {
        let yaml = "tools:\n  g:\n    binary: gemini\n    command_template: \"{binary} --model {model} < {prompt_file}\"\n    models: [a]\n    env_vars:\n      KEY: \"${KEY}\"\n";
        let entry = parse_tools(&source(yaml)).unwrap().remove(0);
        assert_eq!(entry.config.env.value, BTreeMap::from([("KEY".to_owned(), "${KEY}".to_owned())]));
        assert_eq!(entry.config.env_vars, None, "moved into env");
        assert_eq!(entry.config.output, text_on_stdout());
        assert_eq!(entry.config.prompt_via, PromptVia::Stdin);
        assert_eq!(entry.template.stdin_redirect, Some(25));
        assert!(!entry.template.mentions("{prompt_file}"));
        // Both spellings at once: refused where the second is, naming both.
        let both = yaml.replace("    env_vars:", "    env: { KEY: x }\n    env_vars:");
        let e = parse_tools(&source(&both)).unwrap_err();
        assert_eq!((e.line, e.column), (8, 7), "{e}");
        assert!(e.message.contains("tools.g: env and env_vars are both given"), "{e}");
        let both = yaml.replace("    env_vars:", "    env: {}\n    env_vars:");
        assert!(parse_tools(&source(&both)).is_err(), "an empty env is still given");
        // `env` alone is as before.
        let env = parse_tools(&source(&yaml.replace("env_vars:", "env:"))).unwrap().remove(0);
        assert_eq!(env.config.env.value, entry.config.env.value);
    }

    #[test]
    fn the_prompt_file_on_stdin_and_another_prompt_via_is_refused_at_the_redirect() {
        for via in ["file", "argument"] {
            let yaml = with_template("{binary} {prompt} {prompt_file} < {prompt_file}")
                .replace("prompt_via: argument", &format!("prompt_via: {via}"));
            let e = parse_tools(&source(&yaml)).unwrap_err();
            let line = yaml.lines().nth(3).unwrap();
            assert_eq!((e.line, e.column), (4, line.find("< {").unwrap() as u64 + 1), "{e}");
            assert!(
                e.message.contains(&format!(
                    "tools.echo: command_template: `< {{prompt_file}}` puts the prompt on standard input, \
                     but prompt_via says {via}"
                )),
                "{e}"
            );
        }
        let stdin = with_template("{binary} < {prompt_file}").replace("argument", "stdin");
        assert!(parse_tools(&source(&stdin)).is_ok());
    }

    #[test]
    fn each_shell_operator_is_refused_at_its_line_and_column_naming_it() {
        // The template, the operator, and text after it that is unique on the YAML line.
        let cases = [
            ("{binary} {prompt} | tee log", "|", "| tee"),
            ("{binary} {prompt} > out.txt", ">", "> out"),
            ("{binary} {prompt} >> out.txt", ">>", ">> out"),
            ("{binary} {prompt} && echo done", "&&", "&& echo"),
            ("{binary} {prompt} || echo failed", "||", "|| echo"),
            ("{binary} {prompt}; rm -rf ~", ";", "; rm"),
            ("{binary} {prompt} --key `cat key`", "`", "`cat"),
            ("{binary} {prompt} --key $(cat key)", "$(", "$(cat"),
            ("{binary} {prompt} --key \"$(cat key)\"", "$(", "$(cat"),
            ("{binary} -p \"quoted | fine\" {prompt} &", "&", "&\""),
            ("{binary} {prompt} < input.txt", "<", "< input"),
            ("{binary} -p 'é—🦀' {prompt} | x", "|", "| x"),
        ];
        for (template, op, there) in cases {
            let yaml = with_template(template);
            let e = parse_tools(&source(&yaml)).unwrap_err();
            let line = yaml.lines().nth(3).unwrap();
            let column = line[..line.find(there).unwrap()].chars().count() as u64 + 1;
            assert_eq!((e.origin.as_str(), e.line, e.column), ("tools.yaml", 4, column), "{template}: {e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("tools.yaml:4:{column}: tools.echo: command_template: `{op}` (")),
                "{e}"
            );
        }
        // A template over several lines: the operator's own line.
        let folded =
            MINIMAL.replace("\"{binary} {prompt}\"", "\"{binary}\n      {prompt}\n      | tee log\"");
        let e = parse_tools(&source(&folded)).unwrap_err();
        assert_eq!((e.line, e.column), (6, 7), "{e}");
        // Where the YAML hides the character in an escape, the template's own place.
        let escaped = MINIMAL.replace("\"{binary} {prompt}\"", "\"{binary} {prompt} \\x7c tee\"");
        let e = parse_tools(&source(&escaped)).unwrap_err();
        assert_eq!((e.line, e.column), (4, 23), "{e}");
        assert!(e.message.contains("`|` ("), "{e}");
    }

    #[test]
    fn an_unknown_tool_names_the_known_ones() {
        let e = ToolRegistry::shipped().get("claud").unwrap_err();
        assert_eq!(e.kind, ErrorKind::LlmConfig);
        assert!(e.message.contains("known tools: claude-code, codex, gemini"), "{}", e.message);
    }

    #[test]
    fn load_keeps_good_sources_beside_a_bad_one() {
        let (registry, errors) = ToolRegistry::load(&[source("tools: ["), source(MINIMAL)]);
        assert_eq!(errors.len(), 1);
        assert!(registry.get("echo").is_ok());
        assert!(ToolRegistry::strict(&[source("tools: [")]).is_err());
    }
}
