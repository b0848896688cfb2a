//! `condense replay`: a recorded session replayed turn by turn under each condensation policy
//! asked for, and what its input would be billed with a prompt cache (the core's
//! `agent::replay`; the LLM, when the provider needs one, is the profile's, reached over HTTP).

use clap::{Args, ValueEnum};
use condense_cli::native::NativeClock;
use condense_core::agent::replay::{ReplayOptions, ReplayPolicy, ReplayReport, replay};
use condense_core::provider::Needs;
use condense_core::{CondensationManager, TiktokenCounter};

use crate::out::Sink;
use crate::{Failure, eval, llm, read_conversation, read_text, usage};

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
    /// Minutes the prompt cache keeps a prefix after its last use.
    #[arg(long, default_value_t = 5)]
    cache_minutes: u32,
    /// Print one JSON object per policy, one per line.
    #[arg(long)]
    json: bool,
    /// The chat model: its window, prices and cache prices bill the session, and it writes the
    /// summaries of a provider that needs an LLM.
    #[command(flatten)]
    llm: llm::LlmArgs,
    /// The recorded session (any format `condense count` reads).
    file: String,
}

pub(crate) fn run(args: ReplayArgs) -> Result<u8, Failure> {
    let session = read_conversation(&args.file)?.conversation;
    let profile = args.llm.profile()?;
    let manager = CondensationManager::with_builtin_providers();
    let provider = args.provider.clone().unwrap_or_else(|| manager.default_provider().to_owned());
    let needs = manager
        .registry()
        .get(&provider)
        .ok_or_else(|| usage(format!("no provider '{provider}'; known: {}", manager.registry().known_ids())))?
        .meta()
        .needs;
    let client = if needs == Needs::Llm { Some(args.llm.client(profile.clone())?) } else { None };
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
    for flag in policies {
        let policy = match flag {
            PolicyFlag::None => ReplayPolicy::None,
            PolicyFlag::Threshold => ReplayPolicy::Threshold,
            PolicyFlag::CacheAware => ReplayPolicy::CacheAware,
        };
        let options = ReplayOptions {
            lifetime_ms: i64::from(args.cache_minutes) * 60_000,
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
        if args.json {
            Sink::Stdout
                .write(&format!("{}\n", serde_json::to_string(&report).expect("a report serializes")))?;
        } else {
            Sink::Stdout.write(&format!("{}\n", describe(&report)))?;
        }
    }
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
