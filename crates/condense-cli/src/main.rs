//! `condense`: the native front door of Context Condenser. Runs the same core as the VS Code
//! extension on conversation files.
//!
//! Exit codes: 0 success; 1 the condensation (or undo) failed — the typed error is in the output;
//! 2 bad input or usage, or an output that cannot be written, with one line on stderr. A reader
//! that closes the output pipe early is not a failure (see `out.rs`).

use condense_cli::native::NativeClock;
use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use condense_core::AbortSignal;
use condense_core::formats;
use condense_core::llm::{CacheHint, LlmProvider, ModelUse, PromptBundle, collect};
use condense_core::providers::summary::to_chat;
use condense_core::{
    CondensationManager, CondensationOptions, Conversation, Services, TiktokenCounter, TokenCounter,
};
use serde_json::json;

use input::{Failure, read_conversation, read_text, usage};
use out::{OutputArgs, Sink, note};
use progress::Progress;

mod eval;
mod gateway;
mod input;
mod llm;
mod out;
mod progress;
mod replay;
mod report;
mod summary;

/// Condense LLM conversations: count tokens, de-duplicate, truncate, undo.
#[derive(Debug, Parser)]
#[command(name = "condense", version, about, args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Count the tokens of a conversation's API view, per message.
    Count {
        /// Model whose tokenizer to use.
        #[arg(long, default_value = "gpt-4o")]
        model: String,
        /// Print the JSON report (each message's count) even at a terminal, where a short report
        /// for people is the default (the JSON goes to stdout whenever stdout is not a terminal,
        /// and to FILE with `-o FILE`).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        output: OutputArgs,
        /// Conversation file (own, OpenAI or Anthropic format), or `-` for stdin.
        file: String,
    },
    /// Condense a conversation: at a terminal, a short report for people; else (or with `--json`,
    /// or to FILE with `-o FILE`) the CondensationResult as JSON. Progress on stderr when it takes
    /// more than a second and stderr is a terminal.
    Run {
        /// Provider id (see `condense providers`); the default provider when absent.
        #[arg(long)]
        provider: Option<String>,
        /// Tokens to get down to.
        #[arg(long)]
        target_tokens: Option<usize>,
        /// Messages at the end kept as they are.
        #[arg(long)]
        keep_last: Option<usize>,
        /// Manual provider, step one: print the summary request to paste into any LLM.
        #[arg(long, conflicts_with = "answer")]
        render: bool,
        /// Manual provider, step two: the file holding the LLM's answer (`-` for stdin).
        #[arg(long)]
        answer: Option<String>,
        /// The condensing profile: a separate, cheaper LLM profile (JSON file) to write the native
        /// summary with.
        #[arg(long, alias = "condense-profile")]
        condensing_profile: Option<String>,
        /// The LLM, for the native provider; its model also picks the tokenizer.
        #[command(flatten)]
        llm: llm::LlmArgs,
        /// Print one line on stderr saying what happened (tokens before → after, messages hidden
        /// and edited, time, cost); the default when stderr is a terminal.
        #[arg(long, overrides_with = "no_summary")]
        summary: bool,
        /// Never print that line.
        #[arg(long, overrides_with = "summary")]
        no_summary: bool,
        /// Print the CondensationResult as JSON even at a terminal, where a short report for
        /// people is the default (the JSON goes to stdout whenever stdout is not a terminal, and
        /// to FILE with `-o FILE`).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        output: OutputArgs,
        /// Conversation file, or `-` for stdin.
        file: String,
    },
    /// Send the conversation plus one new user message (read from stdin) to an LLM and stream the
    /// answer to stdout; usage and cost go to stderr.
    Chat {
        /// The LLM.
        #[command(flatten)]
        llm: llm::LlmArgs,
        /// Conversation file.
        file: String,
    },
    /// List the registered providers as JSON.
    Providers,
    /// List the CLI tools that can serve as a model (`--llm cli --tool ID`): id, name, where the
    /// entry comes from, its models, and where its program was found or looked for.
    Tools {
        /// A YAML file of more tool entries (repeatable).
        #[arg(long = "tools-file", value_name = "FILE")]
        tools_files: Vec<String>,
        /// Print JSON instead of lines for people.
        #[arg(long)]
        json: bool,
    },
    /// Pin a message (with its tool-pair partners) so that no condensation hides or edits it;
    /// prints the conversation.
    Pin {
        #[command(flatten)]
        output: OutputArgs,
        /// Conversation file, or `-` for stdin.
        file: String,
        /// The message's id.
        #[arg(long)]
        id: String,
        /// Unpin it instead.
        #[arg(long)]
        unpin: bool,
    },
    /// Undo the last condensation of a conversation (or of a CondensationResult).
    Undo {
        #[command(flatten)]
        output: OutputArgs,
        /// Conversation file, or `-` for stdin.
        file: String,
    },
    /// Print the original content a placeholder's id stands for (`…; id r3f9a21c0]`): a tool
    /// result, a tool call's arguments, a message's text. The condensation hid it and kept it, so
    /// the conversation (or the CondensationResult `condense run` printed) still holds it.
    Recall {
        /// The id the placeholder names, e.g. r3f9a21c0.
        id: String,
        /// Conversation or CondensationResult file, or `-` for stdin.
        file: String,
    },
    /// Print the API view in a provider's wire format.
    View {
        /// Wire format.
        #[arg(long, value_enum)]
        format: WireFormat,
        #[command(flatten)]
        output: OutputArgs,
        /// Conversation or CondensationResult file, or `-` for stdin.
        file: String,
    },
    /// Print the JSON Schema of the conversation format.
    Schema,
    /// Run providers on conversation files and print, per file and provider: tokens before →
    /// after, reduction, retention of probes, cost and time.
    Eval(eval::EvalArgs),
    /// Run a local gateway that agents (Claude Code, Codex, Cline, Roo, Continue) point their base
    /// URL at: requests pass to the Anthropic and OpenAI APIs, answers stream back.
    Gateway(gateway::GatewayArgs),
    /// Replay a recorded session turn by turn (each assistant answer a turn) under condensation
    /// policies (none, threshold, cache-aware) and print what its input is billed under the
    /// profile's prices with a prompt cache: cost (summary calls included), cache reads and
    /// writes, peak context, condensations and retention.
    Replay(replay::ReplayArgs),
    /// Write the token benchmark's inputs (generated deterministically) into a directory:
    /// `prose-and-code.md`, `tool-chat.json` (this project's format) and `short-strings.json`.
    #[command(hide = true)]
    BenchInputs {
        /// The directory, created if missing.
        dir: String,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum WireFormat {
    Openai,
    Anthropic,
}

/// Prints each tool with where its program is.
fn list_tools(tools: &condense_core::tools::ToolRegistry, json: bool) -> Result<(), Failure> {
    let runner = std::rc::Rc::new(condense_cli::runner::NativeRunner::new());
    let rows: Vec<serde_json::Value> = tools
        .entries()
        .iter()
        .map(|entry| {
            let adapter = condense_core::tools::GenericAdapter::new(entry.clone(), runner.clone());
            let located = adapter.locate();
            json!({
                "id": entry.id,
                "name": entry.name(),
                "origin": entry.origin,
                "models": entry.config.models,
                "capabilities": entry.capabilities(),
                "context_window": entry.config.context_window,
                "found": located.found,
                "searched": located.searched,
            })
        })
        .collect();
    if json {
        return Sink::Stdout.json(&rows);
    }
    let mut text = String::new();
    for row in &rows {
        let status = match row["found"].as_str() {
            Some(path) => format!("found at {path}"),
            None => {
                let searched: Vec<&str> =
                    row["searched"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
                format!("not found (looked at {})", searched.join(", "))
            }
        };
        let models: Vec<&str> =
            row["models"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
        text.push_str(&format!(
            "{}  {} ({}): {status}\n",
            row["id"].as_str().unwrap_or(""),
            row["name"].as_str().unwrap_or(""),
            row["origin"].as_str().unwrap_or("")
        ));
        text.push_str(&format!("    models: {}\n", models.join(", ")));
        let uses: Vec<&str> =
            row["capabilities"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
        text.push_str(&format!("    capabilities: {}\n", uses.join(", ")));
    }
    out::stdout(&text)
}

/// Streams one answer to stdout. Exit 1 with the typed error on stderr when the call fails; the
/// text that did arrive stays on stdout. A reader that goes away (`| head -c 100`) cancels the
/// request and ends the command quietly with exit 0, as a closed pipe does for every command.
fn chat(
    client: &dyn LlmProvider,
    conversation: &Conversation,
    question: &str,
    file: &str,
) -> Result<u8, Failure> {
    use std::hash::{Hash, Hasher};
    use std::io::Write;
    // The file is the chat: its cache key, hashed (no path leaves the machine).
    let mut key = std::hash::DefaultHasher::new();
    file.hash(&mut key);
    let bundle = PromptBundle {
        system_context: conversation.system.clone().unwrap_or_default(),
        conversation_history: conversation.api_view().into_iter().map(to_chat).collect(),
        request: question.to_owned(),
        generation_params: Some(client.profile().chat),
        cache: Some(CacheHint { key: format!("condense-chat-{:016x}", key.finish()), sent_before: None }),
        ..Default::default()
    };
    let abort = AbortSignal::new();
    let mut stdout = std::io::stdout().lock();
    // Why writing stopped: a closed pipe (quiet) or another error (reported).
    let mut write_error: Option<std::io::Error> = None;
    let stream = client.stream_completion(&bundle, &abort);
    let outcome = futures::executor::block_on(collect(stream, &abort, |delta| {
        if write_error.is_some() {
            return;
        }
        if let Err(e) = stdout.write_all(delta.as_bytes()).and_then(|()| stdout.flush()) {
            write_error = Some(e);
            abort.abort();
        }
    }));
    if write_error.is_none()
        && let Err(e) = writeln!(stdout).and_then(|()| stdout.flush())
    {
        write_error = Some(e);
    }
    match write_error {
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(0),
        Some(e) => return Err(usage(format!("cannot write to stdout: {e}"))),
        None => {}
    }
    match outcome {
        Ok(answer) => {
            let cost = client.answer_cost(&answer);
            let finish = answer.finish_reason.unwrap_or_else(|| "unknown".into());
            note(&match answer.usage {
                Some(u) => format!(
                    "usage: input_tokens={} output_tokens={} cache_read_tokens={} cache_write_tokens={} \
                     cost_usd={cost:.6} finish_reason={finish}",
                    u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens,
                ),
                None => format!("usage: not reported by the server; finish_reason={finish}"),
            });
            Ok(0)
        }
        Err(e) => Err(Failure(1, format!("{}: {} (after {} attempt(s))", e.kind, e.message, e.attempts))),
    }
}

fn run(cli: Cli) -> Result<u8, Failure> {
    match cli.command {
        Command::Count { model, json, output, file } => {
            let sink = output.sink(&file)?;
            let progress = Progress::start("condense count");
            let conversation = progress.read(&file, || read_conversation(&file))?.conversation;
            progress.step("counting tokens");
            let report = condense_core::tokens::TokenReport::of(&conversation, &model);
            progress.finish();
            // At a terminal, with neither `--json` nor `-o FILE`, a person reads a report; with
            // `-o FILE`, the JSON goes there and the person reads where it went.
            let terminal = std::io::stdout().is_terminal();
            match (&sink, output.output.is_some()) {
                (Sink::File(path), _) => {
                    sink.json(&report)?;
                    if terminal && !json {
                        let path = path.display().to_string();
                        out::stdout(&report::count(&file, &conversation, &report, Some(&path)))?;
                    }
                }
                (Sink::Stdout, false) if terminal && !json => {
                    out::stdout(&report::count(&file, &conversation, &report, None))?;
                }
                (Sink::Stdout, _) => sink.json(&report)?,
            }
            Ok(0)
        }
        Command::Run {
            provider,
            target_tokens,
            keep_last,
            render,
            answer,
            condensing_profile,
            llm,
            summary,
            no_summary,
            json,
            output,
            file,
        } => {
            let sink = output.sink(&file)?;
            // At a terminal, with neither `--json` nor `-o FILE`, a person reads a report.
            let terminal = std::io::stdout().is_terminal();
            let for_people = terminal && !json && output.output.is_none();
            let progress = Progress::start("condense run");
            let conversation = progress.read(&file, || read_conversation(&file))?.conversation;
            let manager = CondensationManager::with_builtin_providers();
            let profile = if llm.given() { Some(llm.profile()?) } else { None };
            let counter = TiktokenCounter::for_model(profile.as_ref().map_or("gpt-4o", |p| p.model.as_str()));
            let mut options = CondensationOptions { target_tokens, keep_last, ..Default::default() };
            if (render || answer.is_some()) && provider.as_deref() != Some("manual") {
                return Err(usage("--render and --answer belong to --provider manual"));
            }
            if render {
                let text = condense_core::providers::manual::render_request(
                    &conversation.messages,
                    conversation.system.as_deref(),
                    &options,
                    &counter,
                )
                .map_err(|e| Failure(1, e.to_string()))?;
                progress.finish();
                sink.write(&text)?;
                return Ok(0);
            }
            if let Some(path) = &answer {
                let text = progress.read(path, || read_text(path))?;
                options.config = json!({ "answer": text });
            }
            // The native provider writes with the condensing profile if one is given, else the LLM;
            // its calls are shown on the progress line.
            let client = match (&condensing_profile, profile) {
                (Some(path), _) => Some(llm.client(llm::read_profile(path)?)?),
                (None, Some(p)) => Some(llm.client(p)?),
                (None, None) => None,
            }
            .map(|c| progress.watch(c));
            // The LLM `run` lends is the condensing model: a CLI tool without `summarize` is refused.
            if let Some(c) = &client {
                c.serves(ModelUse::Summarize).map_err(|e| usage(e.message))?;
            }
            if provider.as_deref() == Some("native") && client.is_none() {
                return Err(usage(
                    "the native provider needs an LLM: --llm KIND --model M, or --profile FILE",
                ));
            }
            progress.step("counting tokens");
            let tokens_before =
                counter.count_request(conversation.system.as_deref(), &conversation.api_view());
            let shown = provider.as_deref().unwrap_or(manager.default_provider());
            progress.step(shown);
            let clock = NativeClock::start();
            let mut services = Services::new(&counter, &clock);
            if let Some(c) = &client {
                services = services.with_llm(c.as_ref());
            }
            let result = futures::executor::block_on(manager.condense(
                &conversation,
                provider.as_deref(),
                options,
                services,
            ))
            .map_err(|e| usage(e.to_string()))?;
            progress.finish();
            let cx = summary::Context {
                provider: provider.as_deref().unwrap_or("default provider"),
                input: &conversation.messages,
                tokens_before,
                llm: client.is_some(),
            };
            if for_people {
                out::stdout(&report::run(&cx, &result, None))?;
                return Ok(if result.is_ok() { 0 } else { 1 });
            }
            // The result carries the system prompt too, so that it is a complete conversation
            // file for `count`, `view`, `undo` and a further `run`.
            sink.json(&result.to_document(&conversation))?;
            if let (true, false, false, Some(path)) = (terminal, json, no_summary, output.output.as_deref()) {
                out::stdout(&report::run(&cx, &result, Some(path)))?;
                return Ok(if result.is_ok() { 0 } else { 1 });
            }
            let show_summary = !no_summary && (summary || std::io::stderr().is_terminal());
            if show_summary {
                note(&summary::line(&cx, &result));
            } else if let Some(error) = result.error.as_ref().filter(|_| result.cost > 0.0) {
                // A run that failed after the model answered still cost money: say so in the log.
                note(&format!("condense: {}: the failed run still cost ${:.6}", error.kind, result.cost));
            }
            Ok(if result.is_ok() { 0 } else { 1 })
        }
        Command::Chat { llm, file } => {
            let conversation = read_conversation(&file)?.conversation;
            let question = read_text("-")?;
            if question.trim().is_empty() {
                return Err(usage("write the new user message on stdin"));
            }
            let client = llm.client(llm.profile()?)?;
            // A CLI tool without `chat` cannot be the chat model.
            client.serves(ModelUse::Chat).map_err(|e| usage(e.message))?;
            chat(client.as_ref(), &conversation, question.trim(), &file)
        }
        Command::Tools { tools_files, json } => {
            list_tools(&llm::tools(&tools_files)?, json)?;
            Ok(0)
        }
        Command::Providers => {
            Sink::Stdout.json(&CondensationManager::with_builtin_providers().list_providers(false))?;
            Ok(0)
        }
        Command::Pin { output, file, id, unpin } => {
            let sink = output.sink(&file)?;
            let conversation = read_conversation(&file)?.conversation;
            let (messages, _) = condense_core::pins::set_pinned(&conversation.messages, &id, !unpin)
                .map_err(|e| Failure(1, e.to_string()))?;
            sink.json(&Conversation { messages, ..conversation })?;
            Ok(0)
        }
        Command::Undo { output, file } => {
            let sink = output.sink(&file)?;
            let conversation = read_conversation(&file)?.conversation;
            match condense_core::model::undo_last(&conversation.messages) {
                Some((_, messages)) => {
                    sink.json(&Conversation { messages, ..conversation })?;
                    Ok(0)
                }
                None => Err(Failure(1, "nothing to undo: the conversation has no condensation".into())),
            }
        }
        Command::Recall { id, file } => {
            if !condense_core::providers::recall::is_recall_id(&id) {
                return Err(usage(format!(
                    "{id:?} is not a recall id: a placeholder names one as `id r` and 8 hex digits, e.g. r3f9a21c0"
                )));
            }
            let conversation = read_conversation(&file)?.conversation;
            let Some(found) = condense_core::providers::recall::recall(&conversation.messages, &id) else {
                return Err(usage(format!("{file}: no content has the id {id}")));
            };
            let mut text = found.text;
            if !text.ends_with('\n') {
                text.push('\n');
            }
            out::stdout(&text)?;
            Ok(0)
        }
        Command::View { format, output, file } => {
            let sink = output.sink(&file)?;
            let conversation = read_conversation(&file)?.conversation;
            sink.json(&match format {
                WireFormat::Openai => formats::to_openai(&conversation),
                WireFormat::Anthropic => formats::to_anthropic(&conversation),
            })?;
            Ok(0)
        }
        Command::Schema => {
            Sink::Stdout.json(&formats::conversation_schema())?;
            Ok(0)
        }
        Command::Eval(args) => eval::run(args),
        Command::Gateway(args) => gateway::run(args),
        Command::Replay(args) => replay::run(args),
        Command::BenchInputs { dir } => {
            use condense_cli::bench_inputs;
            let dir = std::path::Path::new(&dir);
            let write = |name: &str, text: String| {
                std::fs::write(dir.join(name), text)
                    .map_err(|e| Failure(2, format!("{}: {e}", dir.join(name).display())))
            };
            std::fs::create_dir_all(dir).map_err(|e| Failure(2, format!("{}: {e}", dir.display())))?;
            write("prose-and-code.md", bench_inputs::prose_and_code())?;
            let chat =
                serde_json::to_string_pretty(&bench_inputs::tool_chat()).expect("JSON values serialize");
            write("tool-chat.json", chat)?;
            let strings =
                serde_json::to_string(&bench_inputs::short_strings()).expect("JSON values serialize");
            write("short-strings.json", strings)?;
            Ok(0)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(Failure(code, message)) => {
            note(&format!("condense: {message}"));
            ExitCode::from(code)
        }
    }
}
