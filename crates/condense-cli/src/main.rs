//! `condense`: the native front door of Context Condenser. Runs the same core as the VS Code
//! extension on conversation files.
//!
//! Exit codes: 0 success; 1 the condensation (or undo) failed — the typed error is in the output;
//! 2 bad input or usage, with one line on stderr.

use std::io::Read;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use condense_core::formats::{self, Parsed};
use condense_core::{
    Clock, CondensationManager, CondensationOptions, Conversation, Services, TiktokenCounter, TokenCounter,
};
use serde_json::json;

/// Condense LLM conversations: count tokens, de-duplicate, truncate, undo.
#[derive(Debug, Parser)]
#[command(name = "condense", version, about)]
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
        /// Conversation file (own, OpenAI or Anthropic format), or `-` for stdin.
        file: String,
    },
    /// Condense a conversation and print the CondensationResult as JSON.
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
        /// Model whose tokenizer to use.
        #[arg(long, default_value = "gpt-4o")]
        model: String,
        /// Conversation file, or `-` for stdin.
        file: String,
    },
    /// List the registered providers as JSON.
    Providers,
    /// Undo the last condensation of a conversation (or of a CondensationResult).
    Undo {
        /// Conversation file, or `-` for stdin.
        file: String,
    },
    /// Print the API view in a provider's wire format.
    View {
        /// Wire format.
        #[arg(long, value_enum)]
        format: WireFormat,
        /// Conversation or CondensationResult file, or `-` for stdin.
        file: String,
    },
    /// Print the JSON Schema of the conversation format.
    Schema,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum WireFormat {
    Openai,
    Anthropic,
}

/// The wall clock of this process, for timing condensations.
struct NativeClock(Instant);

impl Clock for NativeClock {
    fn now_ms(&self) -> f64 {
        self.0.elapsed().as_secs_f64() * 1000.0
    }
}

/// A failure that ends the command: the exit code and the line for stderr.
struct Failure(u8, String);

fn usage(message: impl Into<String>) -> Failure {
    Failure(2, message.into())
}

fn read_conversation(file: &str) -> Result<Parsed, Failure> {
    let mut text = String::new();
    if file == "-" {
        std::io::stdin().read_to_string(&mut text).map_err(|e| usage(format!("cannot read stdin: {e}")))?;
    } else {
        text = std::fs::read_to_string(file).map_err(|e| usage(format!("cannot read {file}: {e}")))?;
    }
    formats::parse_conversation(&text).map_err(|e| usage(format!("{file}: {e}")))
}

fn print_json(value: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(value).expect("JSON values serialize"));
}

fn run(cli: Cli) -> Result<u8, Failure> {
    match cli.command {
        Command::Count { model, file } => {
            let conversation = read_conversation(&file)?.conversation;
            let counter = TiktokenCounter::for_model(&model);
            let view = conversation.api_view();
            let total = counter.count_request(conversation.system.as_deref(), &view);
            let messages: Vec<_> =
                view.iter().map(|m| json!({"id": m.id, "tokens": counter.count_message(m)})).collect();
            print_json(&json!({
                "model": model,
                "encoding": counter.encoding().name(),
                "total_tokens": total,
                "messages": messages,
            }));
            Ok(0)
        }
        Command::Run { provider, target_tokens, keep_last, model, file } => {
            let conversation = read_conversation(&file)?.conversation;
            let manager = CondensationManager::with_builtin_providers();
            let counter = TiktokenCounter::for_model(&model);
            let clock = NativeClock(Instant::now());
            let services = Services::new(&counter, &clock);
            let options = CondensationOptions { target_tokens, keep_last, ..Default::default() };
            let result = futures::executor::block_on(manager.condense(
                &conversation,
                provider.as_deref(),
                options,
                services,
            ))
            .map_err(|e| usage(e.to_string()))?;
            // The result carries the system prompt too, so that it is a complete conversation
            // file for `count`, `view`, `undo` and a further `run`.
            let mut out = serde_json::to_value(&result).expect("results serialize");
            if let (Some(system), Some(obj)) = (&conversation.system, out.as_object_mut()) {
                obj.insert("system".into(), system.clone().into());
            }
            print_json(&out);
            Ok(if result.is_ok() { 0 } else { 1 })
        }
        Command::Providers => {
            print_json(&CondensationManager::with_builtin_providers().list_providers(false));
            Ok(0)
        }
        Command::Undo { file } => {
            let conversation = read_conversation(&file)?.conversation;
            match condense_core::model::undo_last(&conversation.messages) {
                Some((_, messages)) => {
                    print_json(&Conversation { messages, ..conversation });
                    Ok(0)
                }
                None => Err(Failure(1, "nothing to undo: the conversation has no condensation".into())),
            }
        }
        Command::View { format, file } => {
            let conversation = read_conversation(&file)?.conversation;
            print_json(&match format {
                WireFormat::Openai => formats::to_openai(&conversation),
                WireFormat::Anthropic => formats::to_anthropic(&conversation),
            });
            Ok(0)
        }
        Command::Schema => {
            print_json(&formats::conversation_schema());
            Ok(0)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(Failure(code, message)) => {
            eprintln!("condense: {message}");
            ExitCode::from(code)
        }
    }
}
