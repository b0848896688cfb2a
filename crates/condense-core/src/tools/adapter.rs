//! The tool adapter contract (seed 002) and the one generic adapter every YAML entry uses: it
//! checks the model, finds the program, builds the argv and the temporary files, has the host
//! run it, and turns what the program printed (or how it failed) into an answer or a typed error.

use std::rc::Rc;

use super::config::{OutputSource, PromptVia, ToolEntry};
use super::output::normalize;
use super::shim::{is_batch_file, parse_cmd_shim, windows_folder};
use crate::error::{ErrorKind, LlmError, redact_secrets};
use crate::host::{
    AbortSignal, ArgPart, CommandErrorKind, CommandOutput, CommandRunner, CommandSpec, MAX_SHIM_BYTES,
};
use crate::profile::{ModelUse, Usage};

/// The longest prompt passed as one argument (Linux refuses a single argument over 128 KiB).
pub const MAX_PROMPT_ARGUMENT_BYTES: usize = 100_000;

/// The most bytes of output a tool may print before it is stopped.
pub const MAX_TOOL_OUTPUT_BYTES: usize = 32 * 1024 * 1024;

/// What to ask a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRequest {
    /// The model, one of the entry's.
    pub model: String,
    /// The whole prompt.
    pub prompt: String,
    /// The working directory; the host's when absent.
    pub cwd: Option<String>,
}

/// What a tool answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResponse {
    /// The answer.
    pub text: String,
    /// The token counts it reported.
    pub usage: Option<Usage>,
    /// The cost it reported, in US dollars.
    pub cost_usd: Option<f64>,
    /// The model it says answered.
    pub model: Option<String>,
}

/// Where a tool's program was looked for, and found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The program's path, when found.
    pub found: Option<String>,
    /// Every place looked at, in order.
    pub searched: Vec<String>,
}

/// The contract of a tool adapter: what it can do, which models it takes, and one run.
#[async_trait::async_trait(?Send)]
pub trait ToolAdapter {
    /// What the tool may be used for: the chat model, the condensing model.
    fn capabilities(&self) -> &[ModelUse];

    /// Whether the tool takes the model; the error names the models it takes.
    fn validate_model(&self, model: &str) -> Result<(), LlmError>;

    /// Runs the tool once; the error is typed (`llm_tool_not_found`, `llm_tool_failed`,
    /// `llm_timeout`, `llm_cancelled`, `llm_malformed_stream`) and never carries a secret.
    async fn execute(&self, request: &ToolRequest, abort: &AbortSignal) -> Result<ToolResponse, LlmError>;
}

/// The adapter of every YAML entry.
pub struct GenericAdapter {
    entry: ToolEntry,
    runner: Rc<dyn CommandRunner>,
}

/// Expands a leading `~` (the home directory) and `${VAR}`s; `None` when a variable is unset.
pub fn expand(text: &str, runner: &dyn CommandRunner) -> Option<String> {
    let mut out = String::new();
    let mut rest = text;
    if rest == "~" || rest.starts_with("~/") || rest.starts_with("~\\") {
        let home = runner.env_var("HOME").or_else(|| runner.env_var("USERPROFILE"))?;
        out.push_str(&home);
        rest = &rest[1..];
    }
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}')? + start;
        out.push_str(&runner.env_var(&rest[start + 2..end])?);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// The last lines of a program's standard error, at most 2,000 characters.
fn tail(stderr: &str) -> String {
    let trimmed = stderr.trim_end();
    let lines: Vec<&str> = trimmed.lines().collect();
    let last = lines[lines.len().saturating_sub(12)..].join("\n");
    let count = last.chars().count();
    if count > 2000 { format!("…{}", last.chars().skip(count - 2000).collect::<String>()) } else { last }
}

impl GenericAdapter {
    /// An adapter for an entry, running programs through the host's runner.
    pub fn new(entry: ToolEntry, runner: Rc<dyn CommandRunner>) -> Self {
        GenericAdapter { entry, runner }
    }

    /// The entry.
    pub fn entry(&self) -> &ToolEntry {
        &self.entry
    }

    /// Looks for the program: the entry's paths for this platform, then its binary (on the PATH
    /// when it is a bare name).
    pub fn locate(&self) -> Located {
        let runner = &*self.runner;
        let config = &self.entry.config;
        let mut searched = Vec::new();
        let platform = runner.platform();
        let candidates = config.paths.get(&platform).into_iter().flatten();
        for candidate in candidates.filter_map(|c| expand(c, runner)) {
            if let Some(found) = runner.locate(&candidate) {
                return Located { found: Some(found), searched };
            }
            searched.push(candidate);
        }
        let binary = expand(&config.binary.value, runner).unwrap_or_else(|| config.binary.value.clone());
        let found = runner.locate(&binary);
        searched.push(if binary.contains(['/', '\\']) { binary } else { format!("`{binary}` on the PATH") });
        Located { found, searched }
    }

    /// What to start for the program found at `found`, and the arguments that go before the
    /// template's: the program itself, but for a Windows batch file (`.cmd`, `.bat`), which only
    /// a shell runs: an npm shim is read (through the host's `read_text`) and its program started
    /// directly — `node` (the `node.exe` beside the shim, else the PATH's) with the package's
    /// script, or the executable it names. Any other batch file is `llm_config`.
    pub fn launch(&self, found: String) -> Result<(String, Vec<String>), LlmError> {
        let runner = &*self.runner;
        if runner.platform() != "windows" || !is_batch_file(&found) {
            return Ok((found, Vec::new()));
        }
        let id = &self.entry.id;
        let refuse = |why: &str| {
            LlmError::new(
                ErrorKind::LlmConfig,
                format!(
                    "{id}: {found} is a batch file, which only a shell runs, and {why}; point the entry's \
                     `paths` for windows at the program itself (an .exe, or node with its script)"
                ),
            )
        };
        let text = runner.read_text(&found, MAX_SHIM_BYTES).ok_or_else(|| refuse("it could not be read"))?;
        let shim = parse_cmd_shim(&text)
            .ok_or_else(|| refuse("it is not an npm shim whose program can be started directly"))?;
        let folder = windows_folder(&found);
        let target = format!("{folder}\\{}", shim.target);
        let Some(interpreter) = shim.interpreter else {
            if !target.to_ascii_lowercase().ends_with(".exe") {
                return Err(refuse("the program it starts is not an .exe"));
            }
            let program = runner
                .locate(&target)
                .ok_or_else(|| refuse(&format!("the program it starts, {target}, is not there")))?;
            return Ok((program, Vec::new()));
        };
        let beside = format!("{folder}\\{}.exe", interpreter.name);
        let program = runner.locate(&beside).or_else(|| runner.locate(&interpreter.name)).ok_or_else(|| {
            LlmError::new(
                ErrorKind::LlmToolNotFound,
                format!(
                    "{id}: {found} starts its script with `{}`, which was not found: looked at {beside}, `{}` on the PATH",
                    interpreter.name, interpreter.name
                ),
            )
        })?;
        let mut args = interpreter.args;
        args.push(target);
        Ok((program, args))
    }

    /// The variables set for the program: each `${VAR}` expanded from the host's environment;
    /// an entry whose variable is unset is left out, so the program's own default applies.
    pub fn environment(&self) -> Vec<(String, String)> {
        let runner = &*self.runner;
        let vars = &self.entry.config.env.value;
        vars.iter().filter_map(|(k, v)| Some((k.clone(), expand(v, runner)?))).collect()
    }

    /// What to run for a request, the program being at `program`.
    pub fn command(&self, program: String, request: &ToolRequest) -> Result<CommandSpec, LlmError> {
        let config = &self.entry.config;
        if config.prompt_via == PromptVia::Argument && request.prompt.len() > MAX_PROMPT_ARGUMENT_BYTES {
            return Err(LlmError::new(
                ErrorKind::LlmConfig,
                format!(
                    "{}: the prompt ({} bytes) is too long for one argument (at most {MAX_PROMPT_ARGUMENT_BYTES}); \
                     set prompt_via: stdin or file in its entry",
                    self.entry.id,
                    request.prompt.len()
                ),
            ));
        }
        let template = &self.entry.template;
        Ok(CommandSpec {
            program,
            args: template.arguments(&request.model, &request.prompt),
            env: self.environment(),
            // `< {prompt_file}` in the template is this too: the check refuses it beside any
            // other prompt_via, and it is no argument.
            stdin: (config.prompt_via == PromptVia::Stdin).then(|| request.prompt.clone()),
            prompt_file: template.mentions("{prompt_file}").then(|| request.prompt.clone()),
            output_file: template.mentions("{output_file}"),
            cwd: request.cwd.clone(),
            timeout_ms: config.timeout_secs.saturating_mul(1000),
            max_output_bytes: MAX_TOOL_OUTPUT_BYTES,
        })
    }

    /// The secrets an error message must not show: the values of the entry's variables.
    fn secrets(&self) -> Vec<String> {
        self.environment().into_iter().map(|(_, v)| v).collect()
    }

    fn error(&self, kind: ErrorKind, message: String) -> LlmError {
        let secrets = self.secrets();
        let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
        LlmError::new(kind, redact_secrets(&format!("{}: {message}", self.entry.id), &secrets))
    }

    /// Turns how the program ended into the answer or a typed error.
    fn answer(&self, out: CommandOutput) -> Result<ToolResponse, LlmError> {
        let spec = &self.entry.config.output;
        let raw = match spec.source {
            OutputSource::Stdout => out.stdout.as_str(),
            OutputSource::OutputFile => out.output_file.as_deref().unwrap_or(""),
        };
        let read = normalize(spec, raw);
        let stderr = tail(&out.stderr);
        let with_stderr = |m: String| if stderr.is_empty() { m } else { format!("{m}\n{stderr}") };
        match (out.exit_code, read) {
            (Some(0), Ok(n)) => {
                if let Some(e) = n.error {
                    return Err(
                        self.error(ErrorKind::LlmToolFailed, format!("the tool reported an error: {e}"))
                    );
                }
                let Some(text) = n.text.filter(|t| !t.trim().is_empty()) else {
                    let at = spec.text.as_ref().map_or("its output".to_owned(), |e| format!("`{}`", e.path));
                    let m = format!("the tool ended without an answer at {at}");
                    return Err(self.error(ErrorKind::LlmMalformedStream, with_stderr(m)));
                };
                Ok(ToolResponse { text, usage: n.usage, cost_usd: n.cost_usd, model: n.model })
            }
            (Some(0), Err(why)) => Err(self.error(ErrorKind::LlmMalformedStream, with_stderr(why))),
            (code, read) => {
                let how =
                    code.map_or("was killed by a signal".to_owned(), |c| format!("exited with status {c}"));
                // Some tools (Gemini CLI) write their error document to standard error.
                let from_stderr = || normalize(spec, &out.stderr).ok().and_then(|n| n.error);
                let reported = read.ok().and_then(|n| n.error.or(n.text)).or_else(from_stderr);
                let m = match reported {
                    Some(r) => format!("the tool {how}: {r}"),
                    None => format!("the tool {how}"),
                };
                Err(self.error(ErrorKind::LlmToolFailed, with_stderr(m)))
            }
        }
    }
}

#[async_trait::async_trait(?Send)]
impl ToolAdapter for GenericAdapter {
    fn capabilities(&self) -> &[ModelUse] {
        self.entry.capabilities()
    }

    fn validate_model(&self, model: &str) -> Result<(), LlmError> {
        let models = &self.entry.config.models;
        if models.iter().any(|m| m == model) {
            return Ok(());
        }
        Err(LlmError::new(
            ErrorKind::LlmConfig,
            format!("tool '{}' has no model '{model}'; its models: {}", self.entry.id, models.join(", ")),
        ))
    }

    async fn execute(&self, request: &ToolRequest, abort: &AbortSignal) -> Result<ToolResponse, LlmError> {
        self.validate_model(&request.model)?;
        let located = self.locate();
        let Some(program) = located.found else {
            let m = format!(
                "the program `{}` was not found; looked at {}",
                self.entry.config.binary.value,
                located.searched.join(", ")
            );
            return Err(LlmError::new(ErrorKind::LlmToolNotFound, format!("{}: {m}", self.entry.id)));
        };
        let (program, lead) = self.launch(program)?;
        let mut spec = self.command(program, request)?;
        spec.args.splice(0..0, lead.into_iter().map(|text| vec![ArgPart::Text { text }]));
        match self.runner.run(spec, abort).await {
            Ok(out) => self.answer(out),
            Err(e) => {
                let secs = self.entry.config.timeout_secs;
                let (kind, m) = match e.kind {
                    CommandErrorKind::Timeout => (
                        ErrorKind::LlmTimeout,
                        format!(
                            "the tool ran longer than {secs} s and was stopped, with the processes it started"
                        ),
                    ),
                    CommandErrorKind::Cancelled => {
                        (ErrorKind::LlmCancelled, "cancelled by the user".to_owned())
                    }
                    CommandErrorKind::Spawn => {
                        (ErrorKind::LlmToolFailed, format!("cannot start it: {}", e.message))
                    }
                    CommandErrorKind::TooMuchOutput => (
                        ErrorKind::LlmToolFailed,
                        format!("it printed more than {} MB and was stopped", MAX_TOOL_OUTPUT_BYTES >> 20),
                    ),
                    CommandErrorKind::Io => (ErrorKind::LlmToolFailed, e.message.clone()),
                };
                let stderr = tail(&e.stderr);
                let m = if stderr.is_empty() || kind == ErrorKind::LlmCancelled {
                    m
                } else {
                    format!("{m}\n{stderr}")
                };
                Err(self.error(kind, m))
            }
        }
    }
}
