//! `condense eval`: runs providers on conversation files through the same core path as
//! `condense run` (`CondensationManager::condense`, hence the template) and measures each run:
//! tokens before → after, reduction, retention of probes, cost and time. One row per file ×
//! provider; a failed or skipped run is a row too, never the end of the command. Progress on
//! stderr (`crate::progress`) names the case at hand once the command has taken a second.

mod future;
mod probes;
mod render;
mod rows;

use std::path::Path;

use clap::{Args, ValueEnum};
use condense_cli::native::NativeClock;
use condense_core::llm::LlmProvider;
use condense_core::provider::Needs;
use condense_core::{
    Clock, CondensationManager, CondensationOptions, Conversation, ErrorInfo, ReadableCounter, Services,
    TiktokenCounter, TokenCounter,
};

use crate::input::{Failure, read_conversation, read_text, usage};
use crate::llm;
use crate::out::Sink;
use crate::progress::{Progress, name};
pub(crate) use probes::parse_probe_file;
use probes::{Probe, ViewText, derived_probes};
pub(crate) use rows::{RetentionRow, Row, Status};

/// The `eval` subcommand's arguments.
#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// Providers to run, comma-separated; default: every registered provider that can run without
    /// an LLM, plus the LLM ones when an LLM is given.
    #[arg(long, value_delimiter = ',')]
    providers: Option<Vec<String>>,
    /// Tokens to get down to, for every file.
    #[arg(long, conflicts_with = "target_percent")]
    target_tokens: Option<usize>,
    /// Tokens to get down to, in percent of each file's API view (1–100). With `--references`,
    /// a comma-separated list (default 20,30,40), each in percent of the past's readable tokens.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u8).range(1..=100))]
    target_percent: Vec<u8>,
    /// A probe file (one phrase per line, `#` comments) for every file; when absent, `X.probes`
    /// beside a file `X.json` is used if it exists.
    #[arg(long)]
    probes: Option<String>,
    /// Output format: `table` by default on stdout, `json` by default in FILE with `-o FILE`.
    #[arg(long, value_enum)]
    format: Option<OutputFormat>,
    /// The same as `--format json`: the rows as one JSON document.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Write the rows to FILE (JSON unless `--format` says otherwise) instead of stdout; at a
    /// terminal the table is shown too.
    #[command(flatten)]
    output: crate::out::OutputArgs,
    /// Measure future-reference recall instead of retention: cut each session (`--cut`), condense
    /// the past alone to `--target-percent` of its tokens (30 by default), and count how many of the
    /// things the agent named after the cut that the past held are still in the condensed past.
    #[arg(long)]
    references: bool,
    /// Where `--references` cuts each session, in percent of its messages; comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "40,50,60,70", value_parser = clap::value_parser!(u8).range(1..=99), requires = "references")]
    cut: Vec<u8>,
    /// With `--references`: write each condensed past to this folder as a conversation file
    /// (`<file>-cut<N>-t<T>-<provider>.json`), to read what was kept.
    #[arg(long, requires = "references")]
    save: Option<String>,
    /// The LLM for providers that call one (native); its model also picks the tokenizer.
    #[command(flatten)]
    llm: llm::LlmArgs,
    /// Conversation files (own, OpenAI or Anthropic format).
    #[arg(required = true)]
    files: Vec<String>,
}

/// How the rows are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// Aligned columns for a terminal.
    Table,
    /// One JSON document.
    Json,
    /// A Markdown table (for EVAL.md).
    Markdown,
}

/// What the provider needs besides the conversation (an LLM for native, a person for manual).
fn needs(manager: &CondensationManager, id: &str) -> Needs {
    manager.registry().get(id).map_or(Needs::Nothing, |p| p.needs())
}

/// The providers to run: the ones asked for (each must be registered), or the default set.
fn pick_providers(
    manager: &CondensationManager,
    asked: Option<&[String]>,
    with_llm: bool,
) -> Result<Vec<String>, Failure> {
    let known: Vec<String> = manager.list_providers(false).into_iter().map(|p| p.id).collect();
    match asked {
        Some(asked) => {
            let mut out = Vec::new();
            for id in asked.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
                if !known.iter().any(|k| k == id) {
                    return Err(usage(format!(
                        "unknown provider `{id}` in --providers; known providers: {}",
                        known.join(", ")
                    )));
                }
                if !out.iter().any(|o| o == id) {
                    out.push(id.to_owned());
                }
            }
            if out.is_empty() {
                return Err(usage(format!("--providers is empty; known providers: {}", known.join(", "))));
            }
            Ok(out)
        }
        None => Ok(known
            .into_iter()
            .filter(|id| match needs(manager, id) {
                Needs::Nothing => true,
                Needs::Llm => with_llm,
                Needs::Person => false,
            })
            .collect()),
    }
}

/// Runs the command: every file × provider, then the output in the chosen format.
pub(crate) fn run(args: EvalArgs) -> Result<u8, Failure> {
    // `-o FILE` may name none of the inputs (unless --force).
    for file in &args.files {
        args.output.sink(file)?;
    }
    let sink = args.output.sink("-")?;
    let manager = CondensationManager::with_builtin_providers();
    let profile = if args.llm.given() { Some(args.llm.profile()?) } else { None };
    let progress = Progress::start("condense eval");
    let client: Option<Box<dyn LlmProvider>> = match profile.clone() {
        Some(p) => Some(progress.watch(args.llm.client(p)?)),
        None => None,
    };
    let providers = pick_providers(&manager, args.providers.as_deref(), client.is_some())?;
    let counter = TiktokenCounter::for_model(profile.as_ref().map_or("gpt-4o", |p| p.model.as_str()));
    let shared_probes = match &args.probes {
        Some(path) => Some(parse_probe_file(&progress.read(path, || read_text(path))?)),
        None => None,
    };
    // Every file is read and checked before anything runs, so a typo fails fast.
    let mut inputs = Vec::new();
    for file in &args.files {
        let conversation = progress.read(file, || read_conversation(file))?.conversation;
        let probes = match &shared_probes {
            Some(p) => p.clone(),
            None => beside_probes(file)?,
        };
        inputs.push((file, conversation, probes));
    }
    if args.references {
        // The text the model reads is the measure: opaque blobs (encrypted reasoning, thinking
        // signatures) are not the budget, for the targets nor for the providers deciding.
        let readable = ReadableCounter::new(&counter);
        let run = Run { manager: &manager, counter: &readable, llm: client.as_deref(), target: None };
        return references(&args, &run, &providers, &inputs, progress, &sink);
    }
    let target_percent = match args.target_percent.as_slice() {
        [] => None,
        [one] => Some(*one),
        _ => return Err(usage("--target-percent takes one share, or a list with --references")),
    };
    let mut rows = Vec::new();
    for (file, conversation, file_probes) in &inputs {
        for id in &providers {
            let target = match (args.target_tokens, target_percent) {
                (Some(t), _) => Some(t),
                (None, Some(p)) => Some(view_tokens(&counter, conversation) * usize::from(p) / 100),
                (None, None) => None,
            };
            let run = Run { manager: &manager, counter: &counter, llm: client.as_deref(), target };
            let total = inputs.len() * providers.len();
            progress.step(format!("{} of {total} · {id} on {}", rows.len() + 1, name(file)));
            rows.push(run.row(file, conversation, id, file_probes));
        }
    }
    progress.finish();
    let json =
        || serde_json::to_string_pretty(&serde_json::json!({ "rows": rows })).expect("rows serialize") + "\n";
    emit(&args, &sink, || render::table(&rows), || render::markdown(&rows), json)
}

/// Writes the rows where they go: in the format asked (`--format`, `--json`), to stdout (a table
/// by default) or to `-o FILE` (JSON by default), and then, at a terminal, the table for the
/// person and where the rows went.
fn emit(
    args: &EvalArgs,
    sink: &Sink,
    table: impl Fn() -> String,
    markdown: impl FnOnce() -> String,
    json: impl FnOnce() -> String,
) -> Result<u8, Failure> {
    let asked = if args.json { Some(OutputFormat::Json) } else { args.format };
    let text = |format| match format {
        OutputFormat::Table => table(),
        OutputFormat::Markdown => markdown(),
        OutputFormat::Json => json(),
    };
    match sink {
        Sink::Stdout => crate::out::stdout(&text(asked.unwrap_or(OutputFormat::Table)))?,
        Sink::File(path) => {
            sink.write(&text(asked.unwrap_or(OutputFormat::Json)))?;
            if std::io::IsTerminal::is_terminal(&std::io::stdout()) && !args.json {
                crate::out::stdout(&format!("{}  written to {}\n", table(), path.display()))?;
            }
        }
    }
    Ok(0)
}

/// `--references`: every file × cut, the baselines and each provider.
fn references(
    args: &EvalArgs,
    run: &Run<'_>,
    providers: &[String],
    inputs: &[(&String, Conversation, Vec<Probe>)],
    progress: Progress,
    sink: &Sink,
) -> Result<u8, Failure> {
    if args.target_tokens.is_some() {
        return Err(usage("--references condenses each past to a share of its tokens: use --target-percent"));
    }
    let targets = if args.target_percent.is_empty() { vec![20, 30, 40] } else { args.target_percent.clone() };
    let mut rows = Vec::new();
    let total = inputs.len() * args.cut.len() * targets.len();
    let mut n = 0;
    for (file, conversation, _) in inputs {
        for &cut_percent in &args.cut {
            for &target_percent in &targets {
                n += 1;
                let session = future::Session {
                    file,
                    conversation,
                    cut_percent,
                    target_percent,
                    save: args.save.as_deref(),
                };
                let at = format!("{n} of {total} · {}, cut at {cut_percent}%, {target_percent}%", name(file));
                progress.step(at.clone());
                let condense = |c: &Conversation, id: &str, options: CondensationOptions| {
                    progress.step(format!("{at} · {id}"));
                    run.condense(c, id, options)
                };
                if let Some(more) = future::rows(&session, providers, run.counter, &condense) {
                    rows.extend(more);
                }
            }
        }
    }
    progress.finish();
    let json =
        || serde_json::to_string_pretty(&serde_json::json!({ "rows": rows })).expect("rows serialize") + "\n";
    emit(
        args,
        sink,
        || render::recall_table(&rows) + "\n" + &render::recall_means(&rows, false),
        || render::recall_summary(&rows) + "\n" + &render::recall_means(&rows, true),
        json,
    )
}

/// `X.probes` beside `X.json`, when there is one.
pub(crate) fn beside_probes(file: &str) -> Result<Vec<Probe>, Failure> {
    if file == "-" {
        return Ok(Vec::new());
    }
    let path = Path::new(file).with_extension("probes");
    if !path.is_file() {
        return Ok(Vec::new());
    }
    Ok(parse_probe_file(&read_text(&path.to_string_lossy())?))
}

fn view_tokens(counter: &dyn TokenCounter, conversation: &Conversation) -> usize {
    counter.count_request(conversation.system.as_deref(), &conversation.api_view())
}

/// What one run needs from the command.
struct Run<'a> {
    manager: &'a CondensationManager,
    counter: &'a dyn TokenCounter,
    llm: Option<&'a dyn LlmProvider>,
    target: Option<usize>,
}

impl Run<'_> {
    /// One run of a provider on a conversation, through the manager: its result, or why it could
    /// not run; and the time it took, in milliseconds.
    fn condense(
        &self,
        conversation: &Conversation,
        id: &str,
        options: CondensationOptions,
    ) -> (Result<condense_core::CondensationResult, ErrorInfo>, f64) {
        let clock = NativeClock::start();
        let mut services = Services::new(self.counter, &clock);
        if let Some(llm) = self.llm {
            services = services.with_llm(llm);
        }
        let start = clock.now_ms();
        let outcome =
            futures::executor::block_on(self.manager.condense(conversation, Some(id), options, services));
        (outcome.map_err(|e| e.to_info()), clock.now_ms() - start)
    }

    fn row(&self, file: &str, conversation: &Conversation, id: &str, file_probes: &[Probe]) -> Row {
        let before = view_tokens(self.counter, conversation);
        let mut row = Row {
            file: file.to_owned(),
            provider: id.to_owned(),
            status: Status::Skipped,
            target_tokens: self.target,
            tokens_before: before,
            tokens_after: before,
            reduction_pct: 0.0,
            retention: None,
            cost: 0.0,
            time_ms: 0.0,
            error: None,
            skipped: None,
            passes: Vec::new(),
            summary_truncated: false,
            core_retention: None,
        };
        match needs(self.manager, id) {
            Needs::Llm if self.llm.is_none() => {
                row.skipped = Some("needs an LLM: pass --llm KIND --model M, or --profile FILE".into());
                return row;
            }
            Needs::Person => {
                row.skipped = Some(
                    "needs a summary pasted by a person (condense run --provider manual --render)".into(),
                );
                return row;
            }
            _ => {}
        }
        let clock = NativeClock::start();
        let mut services = Services::new(self.counter, &clock);
        if let Some(llm) = self.llm {
            services = services.with_llm(llm);
        }
        let options = CondensationOptions { target_tokens: self.target, ..Default::default() };
        let start = clock.now_ms();
        let outcome =
            futures::executor::block_on(self.manager.condense(conversation, Some(id), options, services));
        row.time_ms = clock.now_ms() - start;
        let result = match outcome {
            Ok(result) => result,
            // Unknown ids were refused before; a disabled provider is reported in its row.
            Err(e) => {
                row.status = Status::Failed;
                row.error = Some(e.to_info());
                return row;
            }
        };
        row.cost = result.cost;
        row.error = result.error.clone();
        row.status = if result.is_ok() { Status::Ok } else { Status::Failed };
        row.tokens_after = result.new_context_tokens.unwrap_or(before);
        if before > 0 {
            row.reduction_pct = (before as f64 - row.tokens_after as f64) * 100.0 / before as f64;
        }
        if let Some(metrics) = &result.metrics {
            row.passes = metrics.passes();
            row.summary_truncated = metrics.summary_truncated();
            row.core_retention = metrics.retention();
        }
        let derived = derived_probes(&conversation.messages, &result.messages);
        let view = ViewText::of(&result.messages);
        let all: Vec<&Probe> = derived.iter().chain(file_probes).collect();
        let missing: Vec<Probe> = all.iter().filter(|p| !view.contains(p)).map(|p| (*p).clone()).collect();
        row.retention = Some(RetentionRow {
            kept: all.len() - missing.len(),
            probes: all.len(),
            derived: derived.len(),
            missing,
        });
        row
    }
}
