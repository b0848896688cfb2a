//! The CLI's side of the LLM layer: a blocking native HTTP client (ureq: small, maintained, rustls,
//! no async runtime to embed) behind the core's `HttpClient`, a sleeping timer, the native command
//! runner for CLI tools (`--llm cli --tool ID`), and LLM profiles from flags or a file with keys
//! from the environment.

use std::rc::Rc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use condense_cli::native::{NativeClock, NativeHttp, NativeTimer};
use condense_cli::runner::NativeRunner;
use condense_core::llm::{
    CliLlm, CondensePolicy, GenerationParams, HttpLlm, LlmKind, LlmProfile, LlmProvider, RetryPolicy,
};
use condense_core::tools::{ToolRegistry, ToolSource};

use crate::input::{Failure, usage};

/// The client kinds, as flags spell them.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum KindFlag {
    Openai,
    Anthropic,
    OpenaiCompatible,
    /// A CLI agent, with --tool ID (see `condense tools`).
    Cli,
}

/// Where the LLM is.
#[derive(Debug, Clone, Args)]
pub(crate) struct LlmArgs {
    /// Client kind; with --model, --base-url for openai-compatible, --tool for cli.
    #[arg(long, value_enum, conflicts_with = "profile")]
    llm: Option<KindFlag>,
    /// The CLI tool a `--llm cli` runs: claude-code, codex, gemini, or an entry of --tools-file.
    #[arg(long)]
    tool: Option<String>,
    /// A YAML file of more CLI tool entries; repeat it for more files, a later entry replacing an
    /// earlier one with the same id.
    #[arg(long = "tools-file", value_name = "FILE")]
    tools_files: Vec<String>,
    /// Base URL, e.g. http://127.0.0.1:11434/v1 for Ollama. For openai and anthropic, without it:
    /// $OPENAI_BASE_URL or $ANTHROPIC_BASE_URL when set, else the vendor's API.
    #[arg(long)]
    base_url: Option<String>,
    /// Model id.
    #[arg(long)]
    model: Option<String>,
    /// Environment variable holding the API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY).
    #[arg(long)]
    api_key_env: Option<String>,
    /// Context window of the model, in tokens (default 128000, or the CLI tool's).
    #[arg(long)]
    context_window: Option<usize>,
    /// Longest answer, in tokens; by default 4096, or a quarter of a smaller context window.
    #[arg(long)]
    max_output: Option<usize>,
    /// Longest summary (the condense phase's answer), in tokens; by default the longest answer.
    #[arg(long)]
    condense_max_output: Option<usize>,
    /// Temperature of summary requests (the condense phase).
    #[arg(long, default_value_t = 0.2)]
    condense_temperature: f64,
    /// Temperature of chat requests (the chat phase); the server's default when absent.
    #[arg(long)]
    temperature: Option<f64>,
    /// US dollars per million input tokens.
    #[arg(long, default_value_t = 0.0)]
    price_in: f64,
    /// US dollars per million output tokens.
    #[arg(long, default_value_t = 0.0)]
    price_out: f64,
    /// US dollars per million input tokens written to the prompt cache (Anthropic: 1.25× the
    /// input price); the input price when absent.
    #[arg(long)]
    price_cache_write: Option<f64>,
    /// US dollars per million input tokens read from the prompt cache (Anthropic: 0.1× the input
    /// price); the input price when absent.
    #[arg(long)]
    price_cache_read: Option<f64>,
    /// When automatic condensations run: threshold, or cache-aware (the default with a cache
    /// price).
    #[arg(long, value_parser = ["threshold", "cache-aware"])]
    condense_policy: Option<String>,
    /// An LLM profile as a JSON file (see README), instead of the flags above.
    #[arg(long)]
    profile: Option<String>,
    /// Seconds without a byte from the server before giving up.
    #[arg(long, default_value_t = 60)]
    timeout_secs: u64,
    /// Seconds a whole request may take, however the server dribbles (default 600, or the
    /// profile file's `deadline_secs`).
    #[arg(long)]
    deadline_secs: Option<u64>,
    /// Retries on 429 and 5xx before the first byte of an answer.
    #[arg(long, default_value_t = 3)]
    max_retries: u32,
}

impl LlmArgs {
    /// Whether an LLM was described at all.
    pub(crate) fn given(&self) -> bool {
        self.llm.is_some() || self.profile.is_some()
    }

    /// The profile the flags or the file describe.
    pub(crate) fn profile(&self) -> Result<LlmProfile, Failure> {
        if let Some(path) = &self.profile {
            let mut profile = read_profile(path)?;
            profile.deadline_secs = self.deadline_secs.or(profile.deadline_secs);
            profile.validate().map_err(|e| usage(e.message))?;
            return Ok(profile);
        }
        let kind = match self.llm {
            Some(KindFlag::Openai) => LlmKind::Openai,
            Some(KindFlag::Anthropic) => LlmKind::Anthropic,
            Some(KindFlag::OpenaiCompatible) => LlmKind::OpenaiCompatible,
            Some(KindFlag::Cli) => LlmKind::Cli,
            None => return Err(usage("no LLM given: pass --llm KIND --model M (or --profile FILE)")),
        };
        let mut window = self.context_window.unwrap_or(128_000);
        if kind == LlmKind::Cli {
            let tools = self.tools()?;
            let id = self.tool.as_deref().ok_or_else(|| {
                let known = tools.entries().iter().map(|e| e.id.as_str()).collect::<Vec<_>>().join(", ");
                usage(format!("--llm cli needs --tool ID; the tools: {known} (see `condense tools`)"))
            })?;
            let entry = tools.get(id).map_err(|e| usage(e.message))?;
            if self.model.is_none() {
                let models = entry.config.models.join(", ");
                return Err(usage(format!("--llm cli needs --model; the models of {id}: {models}")));
            }
            window = self.context_window.or(entry.config.context_window).unwrap_or(window);
        } else if self.tool.is_some() {
            return Err(usage("--tool belongs to --llm cli"));
        }
        let model = self.model.clone().ok_or_else(|| usage("--llm needs --model"))?;
        let defaults = LlmProfile::new(model.clone(), kind, model.clone(), window);
        let profile = LlmProfile {
            tool: self.tool.clone().filter(|_| kind == LlmKind::Cli),
            base_url: self.base_url.clone(),
            // 0: derived from the window (LlmProfile::output_limit).
            max_output: self.max_output.unwrap_or(0),
            price_input_per_mtok: self.price_in,
            price_output_per_mtok: self.price_out,
            price_cache_write_per_mtok: self.price_cache_write,
            price_cache_read_per_mtok: self.price_cache_read,
            condense_policy: match self.condense_policy.as_deref() {
                Some("cache-aware") => Some(CondensePolicy::CacheAware),
                Some(_) => Some(CondensePolicy::Threshold),
                None => None,
            },
            api_key_ref: self.api_key_env.clone(),
            deadline_secs: self.deadline_secs,
            chat: GenerationParams { temperature: self.temperature, ..defaults.chat },
            condense: GenerationParams {
                max_output_tokens: self.condense_max_output,
                temperature: Some(self.condense_temperature),
                ..defaults.condense
            },
            ..defaults
        };
        profile.validate().map_err(|e| usage(e.message))?;
        Ok(profile)
    }

    /// The CLI tools: the shipped entries, then each --tools-file. A file that cannot be used
    /// fails naming its line and column.
    pub(crate) fn tools(&self) -> Result<ToolRegistry, Failure> {
        tools(&self.tools_files)
    }

    /// A client for a profile: a CLI tool run natively, or HTTP with its key from the environment.
    pub(crate) fn client(&self, profile: LlmProfile) -> Result<Box<dyn LlmProvider>, Failure> {
        if profile.kind == LlmKind::Cli {
            let runner = Rc::new(NativeRunner::new());
            let llm = CliLlm::new(profile, &self.tools()?, runner).map_err(|e| usage(e.message))?;
            return Ok(Box::new(llm));
        }
        Ok(Box::new(self.http_client(profile)?))
    }

    /// An HTTP client for a profile, with its key from the environment.
    pub(crate) fn http_client(&self, mut profile: LlmProfile) -> Result<HttpLlm, Failure> {
        let mut from_env = None;
        if profile.base_url.is_none() {
            profile.base_url = base_url_from_env(profile.kind);
            from_env = profile.base_url.as_ref().and(base_url_env(profile.kind));
        }
        let var = profile.api_key_ref.clone().or_else(|| match profile.kind {
            LlmKind::Openai => Some("OPENAI_API_KEY".into()),
            LlmKind::Anthropic => Some("ANTHROPIC_API_KEY".into()),
            LlmKind::OpenaiCompatible | LlmKind::Manual | LlmKind::Cli => None,
        });
        let key = match &var {
            Some(var) => match std::env::var(var) {
                Ok(k) if !k.is_empty() => Some(k),
                _ if profile.kind == LlmKind::OpenaiCompatible => None,
                _ => {
                    return Err(usage(format!("the API key is missing: set the environment variable {var}")));
                }
            },
            None => None,
        };
        http_llm(profile, key, self.max_retries, self.timeout_secs).map_err(|e| match from_env {
            Some(var) => usage(format!("{var}: {}", e.1)),
            None => e,
        })
    }
}

/// An HTTP client for a profile with the key given (the gateway's `--summarize-with-upstream`
/// lends the request's own), with the flags' default retries and idle timeout.
pub(crate) fn keyed_client(profile: LlmProfile, key: Option<String>) -> Result<HttpLlm, Failure> {
    http_llm(profile, key, 3, 60)
}

fn http_llm(
    profile: LlmProfile,
    key: Option<String>,
    retries: u32,
    idle_secs: u64,
) -> Result<HttpLlm, Failure> {
    let retry = RetryPolicy { max_retries: retries, jitter_seed: seed(), ..RetryPolicy::default() };
    let http = Rc::new(NativeHttp::new(Duration::from_secs(idle_secs.max(1))));
    let llm = HttpLlm::new(profile, key, http, Rc::new(NativeTimer), retry).map_err(|e| usage(e.message))?;
    Ok(llm.with_clock(Rc::new(NativeClock::start())))
}

/// The environment variable that replaces a kind's default base URL, as the official OpenAI
/// and Anthropic SDKs read it: `OPENAI_BASE_URL` (with its `/v1`) and `ANTHROPIC_BASE_URL`
/// (without). It applies only when neither `--base-url` nor the profile file gives one.
pub(crate) fn base_url_env(kind: LlmKind) -> Option<&'static str> {
    match kind {
        LlmKind::Openai => Some("OPENAI_BASE_URL"),
        LlmKind::Anthropic => Some("ANTHROPIC_BASE_URL"),
        LlmKind::OpenaiCompatible | LlmKind::Manual | LlmKind::Cli => None,
    }
}

fn base_url_from_env(kind: LlmKind) -> Option<String> {
    base_url_env(kind).and_then(|var| std::env::var(var).ok()).filter(|url| !url.trim().is_empty())
}

fn seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Reads an LLM profile file, naming the field at fault.
pub(crate) fn read_profile(path: &str) -> Result<LlmProfile, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| usage(format!("cannot read {path}: {e}")))?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    let profile: LlmProfile = serde_path_to_error::deserialize(de)
        .map_err(|e| usage(format!("{path}: {}: {}", e.path(), e.inner())))?;
    profile.validate().map_err(|e| usage(format!("{path}: {}", e.message)))?;
    Ok(profile)
}

/// The shipped tool entries, then those of each file in order; a file that cannot be read or
/// used fails (exit 2) naming the file, line and column.
pub(crate) fn tools(files: &[String]) -> Result<ToolRegistry, Failure> {
    let sources = files
        .iter()
        .map(|path| {
            let text =
                std::fs::read_to_string(path).map_err(|e| usage(format!("cannot read {path}: {e}")))?;
            Ok(ToolSource { origin: path.clone(), text })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    ToolRegistry::strict(&sources).map_err(|e| usage(e.to_string()))
}
