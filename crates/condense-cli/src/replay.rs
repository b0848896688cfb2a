//! `condense replay`: a recorded session replayed turn by turn under each condensation policy
//! asked for, and what its input would be billed with the provider's prompt cache (the core's
//! `agent::replay`; the LLM, when the provider needs one, is the profile's, reached over HTTP);
//! with `--through-gateway`, its requests shaped as Claude Code sends them and decided by the
//! core's gateway (`gateway::replay_through_gateway`). A line per policy for people, or a JSON
//! object per line (`--json`, `-o FILE`); progress on stderr names the policy at hand once the
//! command has taken a second.

use clap::{Args, ValueEnum};
use condense_cli::native::NativeClock;
use condense_core::agent::replay::{ClientContext, ReplayOptions, ReplayPolicy, ReplayReport, replay};
use condense_core::billing::Ttl;
use condense_core::gateway::{GatewayPolicy, GatewayReplay, GatewayReplayReport, replay_through_gateway};
use condense_core::provider::Needs;
use condense_core::{CondensationManager, TiktokenCounter};

use crate::input::{Failure, read_conversation, read_text, usage};
use crate::out::OutputArgs;
use crate::out::Sink;
use crate::progress::Progress;
use crate::{eval, llm};

/// The policies `--policy` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PolicyFlag {
    /// Never condense (the window is ignored).
    None,
    /// At the threshold percent of the window, or the request limit.
    Threshold,
    /// When it pays for the cache it rewrites; always at the threshold or the limit.
    CacheAware,
}

/// The arguments of `condense replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The policies to compare, comma-separated; all three when absent.
    #[arg(long, value_enum, value_delimiter = ',')]
    policy: Vec<PolicyFlag>,
    /// The condensation provider (see `condense providers`); the default provider when absent.
    #[arg(long)]
    provider: Option<String>,
    /// A probe file (one phrase per line) of what must survive; FILE's `.probes` beside it when
    /// absent and present.
    #[arg(long)]
    probes: Option<String>,
    /// Minutes the prompt cache keeps a prefix after its last use: 5, or 60 (Anthropic's 1-hour
    /// lifetime, its writes billed at twice the input price).
    #[arg(long, default_value_t = 5, value_parser = cache_minutes)]
    cache_minutes: u32,
    /// The client's system prompt and tool definitions (JSON: `{"client", "system", "tools"}`),
    /// sent before the session's own: FILE's `.context.json` beside it when absent and present.
    #[arg(long, value_name = "CONTEXT")]
    context: Option<String>,
    /// Replay the session's requests as Claude Code sends them through the gateway (smart),
    /// under `none` (sent as they are), `threshold` and `cache-aware`, billed by Anthropic's
    /// cache rules at the profile's model's published prices; `--policy` picks among them.
    #[arg(long)]
    through_gateway: bool,
    /// Print one JSON object per policy, one per line.
    #[arg(long)]
    json: bool,
    /// Write the JSON objects to FILE instead (one per line); at a terminal the lines for people
    /// are shown too.
    #[command(flatten)]
    output: OutputArgs,
    /// The chat model: its window, prices and cache prices bill the session, and it writes the
    /// summaries of a provider that needs an LLM.
    #[command(flatten)]
    llm: llm::LlmArgs,
    /// The recorded session (any format `condense count` reads).
    file: String,
}

/// `--cache-minutes`: Anthropic keeps a prefix 5 minutes or an hour.
fn cache_minutes(text: &str) -> Result<u32, String> {
    match text.trim() {
        "5" => Ok(5),
        "60" => Ok(60),
        other => Err(format!("{other:?}: a prompt cache keeps a prefix 5 or 60 minutes")),
    }
}

/// The client context a replay sends: the one given, else FILE's `.context.json` beside it.
fn context_of(args: &ReplayArgs) -> Result<Option<ClientContext>, Failure> {
    let path = match &args.context {
        Some(path) => path.clone(),
        None => {
            let beside = format!(
                "{}.context.json",
                args.file.rsplit_once('.').map_or(args.file.as_str(), |(stem, _)| stem)
            );
            if !std::path::Path::new(&beside).exists() {
                return Ok(None);
            }
            beside
        }
    };
    let text = read_text(&path)?;
    serde_json::from_str(&text).map(Some).map_err(|e| usage(format!("{path}: not a client context: {e}")))
}

/// Where the reports go: each policy's as it is done, to stdout (a line for people, or JSON with
/// `--json`); with `-o FILE`, all of them as JSON lines into FILE at the end, and the lines for
/// people at a terminal.
struct Reports {
    sink: Sink,
    json: bool,
    terminal: bool,
    /// The JSON lines for FILE.
    lines: String,
}

impl Reports {
    fn new(args: &ReplayArgs) -> Result<Reports, Failure> {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
        Ok(Reports { sink: args.output.sink(&args.file)?, json: args.json, terminal, lines: String::new() })
    }

    /// One policy's report: its JSON and its line for people.
    fn push(&mut self, progress: &Progress, json: String, line: String) -> Result<(), Failure> {
        match &self.sink {
            Sink::Stdout => {
                progress.above(|| Sink::Stdout.write(&format!("{}\n", if self.json { json } else { line })))
            }
            Sink::File(_) => {
                self.lines.push_str(&json);
                self.lines.push('\n');
                match self.terminal && !self.json {
                    true => progress.above(|| Sink::Stdout.write(&format!("{line}\n"))),
                    false => Ok(()),
                }
            }
        }
    }

    /// Writes FILE, and says where it went.
    fn finish(self) -> Result<(), Failure> {
        if let Sink::File(path) = &self.sink {
            self.sink.write(&self.lines)?;
            if self.terminal && !self.json {
                Sink::Stdout.write(&format!("  written to {}\n", path.display()))?;
            }
        }
        Ok(())
    }
}

pub(crate) fn run(args: ReplayArgs) -> Result<u8, Failure> {
    let mut reports = Reports::new(&args)?;
    let progress = Progress::start("condense replay");
    let session = progress.read(&args.file, || read_conversation(&args.file))?.conversation;
    let profile = args.llm.profile()?;
    let context = context_of(&args)?;
    if args.through_gateway {
        return through_gateway(&args, &session, &profile, context.as_ref(), progress, reports);
    }
    let manager = CondensationManager::with_builtin_providers();
    let provider = args.provider.clone().unwrap_or_else(|| manager.default_provider().to_owned());
    let needs = manager
        .registry()
        .get(&provider)
        .ok_or_else(|| usage(format!("no provider '{provider}'; known: {}", manager.registry().known_ids())))?
        .meta()
        .needs;
    let client =
        if needs == Needs::Llm { Some(progress.watch(args.llm.client(profile.clone())?)) } else { None };
    // The probe file as `condense eval` reads it: the one given, else FILE's beside it.
    let probes: Vec<String> = match &args.probes {
        Some(path) => eval::parse_probe_file(&read_text(path)?),
        None => eval::beside_probes(&args.file)?,
    }
    .into_iter()
    .map(|p| p.needle)
    .collect();
    let policies = if args.policy.is_empty() {
        vec![PolicyFlag::None, PolicyFlag::Threshold, PolicyFlag::CacheAware]
    } else {
        args.policy.clone()
    };
    let counter = TiktokenCounter::for_model(&profile.model);
    let clock = NativeClock::start();
    let mut failed = false;
    let total = policies.len();
    for (n, flag) in policies.into_iter().enumerate() {
        let policy = match flag {
            PolicyFlag::None => ReplayPolicy::None,
            PolicyFlag::Threshold => ReplayPolicy::Threshold,
            PolicyFlag::CacheAware => ReplayPolicy::CacheAware,
        };
        progress.step(format!("{} ({} of {total})", policy.as_str(), n + 1));
        let options = ReplayOptions {
            ttl: if args.cache_minutes > 5 { Ttl::OneHour } else { Ttl::FiveMinutes },
            context: context.clone(),
            probes: probes.clone(),
            ..ReplayOptions::new(policy, provider.clone())
        };
        let report = futures::executor::block_on(replay(
            &session,
            &profile,
            &manager,
            &options,
            &counter,
            &clock,
            client.as_deref(),
        ))
        .map_err(|e| Failure(1, e.to_string()))?;
        failed |= report.over_limit > 0 && policy != ReplayPolicy::None;
        let json = serde_json::to_string(&report).expect("a report serializes");
        reports.push(&progress, json, describe(&report))?;
    }
    progress.finish();
    reports.finish()?;
    Ok(if failed { 1 } else { 0 })
}

/// One line for people.
fn describe(r: &ReplayReport) -> String {
    let over = match r.over_limit {
        0 => String::new(),
        1 => " · 1 request over the limit".to_owned(),
        n => format!(" · {n} requests over the limit"),
    };
    format!(
        "{:<11} input ${:.4} (summaries ${:.4}) · cache read {} · written {} · uncached {} · peak {} tokens · {} condensations · retention {}/{} ({:.0}%) · {} turns{over}",
        r.policy.as_str(),
        r.input_cost,
        r.summary_cost,
        r.cache_read_tokens,
        r.cache_write_tokens,
        r.uncached_tokens,
        r.peak_context,
        r.condensations,
        r.probes_kept,
        r.probes,
        r.retention * 100.0,
        r.turns,
    )
}

/// `--through-gateway`: the session's requests through the core's gateway under each policy.
fn through_gateway(
    args: &ReplayArgs,
    session: &condense_core::Conversation,
    profile: &condense_core::llm::LlmProfile,
    context: Option<&ClientContext>,
    progress: Progress,
    mut reports: Reports,
) -> Result<u8, Failure> {
    let percent =
        profile.threshold_percent.unwrap_or(i32::from(condense_core::limits::DEFAULT_THRESHOLD_PERCENT));
    let threshold = f64::from(percent) / 100.0;
    let replay =
        GatewayReplay { session, context, model: &profile.model, window: profile.context_window, threshold };
    let policies = if args.policy.is_empty() {
        vec![PolicyFlag::None, PolicyFlag::Threshold, PolicyFlag::CacheAware]
    } else {
        args.policy.clone()
    };
    let counter = TiktokenCounter::for_model(&profile.model);
    let total = policies.len();
    for (n, flag) in policies.into_iter().enumerate() {
        let policy_name = flag.to_possible_value().map_or_else(String::new, |v| v.get_name().to_owned());
        progress.step(format!("{policy_name} through the gateway ({} of {total})", n + 1));
        let policy = match flag {
            PolicyFlag::None => None,
            PolicyFlag::Threshold => Some(GatewayPolicy::Threshold),
            PolicyFlag::CacheAware => Some(GatewayPolicy::CacheAware),
        };
        let report = replay_through_gateway(&replay, policy, &counter).map_err(|e| Failure(1, e))?;
        let json = serde_json::to_string(&report).expect("a report serializes");
        reports.push(&progress, json, describe_gateway(&report))?;
    }
    progress.finish();
    reports.finish()?;
    Ok(0)
}

/// One line for people.
fn describe_gateway(r: &GatewayReplayReport) -> String {
    format!(
        "{:<11} input ${:.4} · cache read {} · written {} · uncached {} · peak {} tokens · {} condensations ({} at the threshold, {} early) · the gateway's books: saved ${:.4} · {} requests",
        r.policy,
        r.input_cost,
        r.cache_read_tokens,
        r.cache_write_tokens,
        r.uncached_tokens,
        r.peak_tokens,
        r.forced + r.early,
        r.forced,
        r.early,
        r.books_saved_usd,
        r.requests,
    )
}
