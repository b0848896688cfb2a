//! The state ledger: what a condensation must not forget, gathered by code (never by an LLM) from
//! the messages it hides — the user's own words, the files touched, the commands run and their
//! outcome, the todo list — and rendered as one delimited block the model reads beside the
//! summary (or alone, for providers that write none).
//!
//! Extraction reads the public formats of the common agents: Claude Code's tools (`Read`,
//! `Write`, `Edit`, `MultiEdit`, `NotebookEdit`, `Bash`, `TodoWrite`), Codex (`shell` with
//! `apply_patch` and its `*** Update File:` headers, `update_plan`), Cline and Roo (`read_file`,
//! `write_to_file`, `replace_in_file`, `apply_diff`, `insert_content`, `search_and_replace`,
//! `execute_command`, `update_todo_list`, `task_progress`, in tool calls or as XML in the
//! assistant's text, and their results sent back as user text: `[read_file for 'x'] Result:`),
//! and OpenAI function calls with the same argument keys.
//!
//! A rendered block reads back with [`Ledger::parse`], so a later condensation merges the ledger
//! an earlier one left instead of repeating it. [`Ledger::probes`] lists the facts a condensation
//! is checked against ([`check_probes`]).
//!
//! The rooms: this file holds the ledger's types; `gather` reads messages into a ledger, with
//! `calls` (what one tool call or result says) and `words` (the user's own words in a text);
//! `render` writes a ledger as its block, `parse` reads it back; `probes` checks a condensation
//! against it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::ContentBlock;

mod calls;
mod constraints;
mod errors;
mod fences;
mod findings;
mod gather;
mod names;
mod outline;
mod parse;
mod pasted;
mod probes;
mod render;
mod seen;
mod shell;
mod words;

#[cfg(test)]
pub(crate) use calls::parse_header;
pub(crate) use calls::{encoded_headers, file_action, is_shell, patch_files, strings};
pub use constraints::{constraints, is_constraint};
pub use names::names_in;
pub use pasted::{cut_pasted, own_words, pasted_ranges};
pub use probes::{Haystack, Later, check_probes, check_probes_in, normalize, piece, view_text};
pub use render::Live;
pub use words::user_words;

/// The first line of a rendered ledger.
pub const OPEN_TAG: &str = "<context_condenser_ledger>";
/// The last line of a rendered ledger.
pub const CLOSE_TAG: &str = "</context_condenser_ledger>";
/// The share of a target, in percent, the user's words may take in the ledger.
pub const BUDGET_PERCENT: usize = 15;
/// The share of a target, in percent, the working state may take in the ledger (beside the
/// user's words' [`BUDGET_PERCENT`]).
pub const WORK_PERCENT: usize = 30;
/// The most room the names of what was hidden take of the working state's budget (what it left
/// unused): one part in this many of it.
const SEEN_DIVISOR: usize = 3;
/// Characters of a user message's start that make its probe.
pub const PROBE_CHARS: usize = 80;
/// A user message this short is put back whole when the probes miss it; a longer one by its start.
pub const SHORT_CHARS: usize = 300;
/// Commands longer than this many characters are cut.
const COMMAND_CHARS: usize = 200;
/// A message cut to fit the budget keeps about this many characters of its head, and half of it
/// of its tail.
const HEAD_CHARS: usize = 600;

const INTRO: &str = "Kept by Context Condenser, by code, from the messages it hid.";
const USER_HEADER: &str = "## The user's own words";
/// The headers of the files and commands of ledgers written before the working state had a
/// section of its own; they still read back.
const OLD_FILES_HEADER: &str = "## Files touched (latest state)";
const OLD_COMMANDS_HEADER: &str = "## Commands run";
const TODOS_HEADER: &str = "## Todo list (latest version)";
const NOTES_HEADER: &str = "## Also not to lose";
const WORK_HEADER: &str = "## Working state (#N: the message it was last seen in)";
const FILES_HEADER: &str = "### Files";
const ERRORS_HEADER: &str = "### Errors and test results";
const COMMANDS_HEADER: &str = "### Commands run";
const FINDINGS_HEADER: &str = "### Findings and decisions";
const NAMES_HEADER: &str = "### Names still in play";
const SEEN_HEADER: &str = "## Other names in what was hidden (#N: the message each was last seen in)";
const MESSAGE_PREFIX: &str = "### User message";

/// One user message's own words, client wrappers removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserWords {
    /// The words, verbatim (or cut to head and tail by a rendering over budget).
    pub text: String,
}

/// What was done to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileAction {
    /// Read only.
    Read,
    /// Created (or written from scratch).
    Created,
    /// Changed.
    Edited,
    /// Deleted.
    Deleted,
}

impl FileAction {
    /// The word the ledger writes.
    pub fn as_str(self) -> &'static str {
        match self {
            FileAction::Read => "read",
            FileAction::Created => "created",
            FileAction::Edited => "edited",
            FileAction::Deleted => "deleted",
        }
    }

    fn parse(word: &str) -> Option<FileAction> {
        Some(match word {
            "read" => FileAction::Read,
            "created" => FileAction::Created,
            "edited" => FileAction::Edited,
            "deleted" => FileAction::Deleted,
            _ => return None,
        })
    }
}

/// A file and the latest thing done to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileTouch {
    /// The path as the tool named it.
    pub path: String,
    /// The latest state: a read does not undo an edit; an edit of a created file keeps it created.
    pub action: FileAction,
    /// The message of its latest touch (see [`Ledger::of_numbered`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<usize>,
    /// The symbols the text the agent saw of it defines, with their lines: `fn parse l.10`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outline: Vec<String>,
    /// What its latest edits changed: the symbols and each hunk's first changed line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    /// For a document (Markdown, text), the paths and code names its text mentions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mentions: Vec<String>,
}

impl FileTouch {
    /// A file with what was done to it and nothing else known.
    pub fn new(path: impl Into<String>, action: FileAction) -> Self {
        FileTouch {
            path: path.into(),
            action,
            at: None,
            outline: Vec::new(),
            changes: Vec::new(),
            mentions: Vec::new(),
        }
    }
}

/// A command and, when its result showed it, its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommandRun {
    /// The command, on one line (a heredoc by its target and size).
    pub command: String,
    /// `exit N`, or the first error line; absent when the result did not show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The message of its latest run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<usize>,
    /// The result line that sums it up (a test run's or a build's), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The paths its result listed (a search, a listing, a sub-agent's report), the first few,
    /// then `+N more`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listed: Vec<String>,
    /// The lines a search found, the first few.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<String>,
}

impl CommandRun {
    /// A command with its outcome and nothing else known.
    pub fn new(command: impl Into<String>, outcome: Option<String>) -> Self {
        CommandRun {
            command: command.into(),
            outcome,
            at: None,
            summary: None,
            listed: Vec::new(),
            matches: Vec::new(),
        }
    }
}

/// An error or a failing test a result reported, and whether a later run passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorSeen {
    /// What identifies it across runs (`E0308 src/lib.rs:40:5`, `test retry::backoff`); a
    /// ledger read back keys it by its text.
    pub key: String,
    /// What it says, on one line, with where it is.
    pub text: String,
    /// The message of its latest report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<usize>,
    /// The command that reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// How it was resolved: `` `cargo test` passed at #30 ``; absent while it stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<String>,
}

/// A sentence of the assistant's stating a cause, a conclusion, a change, a plan or a dead end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The sentence, verbatim.
    pub text: String,
    /// Its message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<usize>,
}

/// A name the kept messages still use whose context the condensation hid, and what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NameSeen {
    /// The symbol, path or error name, as written.
    pub name: String,
    /// Where it was defined or last seen, and the line that shows it.
    pub what: String,
}

/// A name the hidden messages hold that nothing in view shows: where it was last seen, and how
/// much a later turn is likely to need it (see `ledger::seen`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SeenName {
    /// The path, symbol or error name, as written.
    pub name: String,
    /// The message it was last seen in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<usize>,
    /// Where in that message: `the result of shell rg -n codex`, `the user's message`.
    pub place: String,
    /// Its weight among the others (higher: listed first when the budget is short).
    pub weight: u32,
}

/// One item of the todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// The item, on one line.
    pub text: String,
    /// Done, or still open (pending or in progress).
    pub done: bool,
}

/// What a condensation must not forget (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Ledger {
    /// The user's own words, oldest first.
    pub user_messages: Vec<UserWords>,
    /// Files touched, in the order of their latest touch.
    pub files: Vec<FileTouch>,
    /// Commands run, in the order of their latest run.
    pub commands: Vec<CommandRun>,
    /// The latest version of the todo list.
    pub todos: Vec<Todo>,
    /// Errors and failing tests, in the order of their latest report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ErrorSeen>,
    /// The assistant's findings and decisions, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Names still in play (set by the condensation that knows what it kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<NameSeen>,
    /// The other names of what was hidden, heaviest first (set by the condensation that knows
    /// what it kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<SeenName>,
    /// User messages an earlier rendering named by count instead of quoting.
    #[serde(default)]
    pub earlier_unquoted: usize,
    /// Short items the probes put back (the start of a user message, a file, an open todo).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A fact a condensation is checked against: found when `needle` occurs in the text the model
/// sees (whitespace-normalized, case-insensitive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Probe {
    /// What the probe stands for, for people: `user: …`, `file: …`, `todo: …`.
    pub label: String,
    /// The text that must be found.
    pub needle: String,
    /// What to put back when the needle is missing.
    pub restore: String,
}

impl Ledger {
    /// Whether there is nothing to keep.
    pub fn is_empty(&self) -> bool {
        self.user_messages.is_empty()
            && self.files.is_empty()
            && self.commands.is_empty()
            && self.todos.is_empty()
            && self.errors.is_empty()
            && self.findings.is_empty()
            && self.names.is_empty()
            && self.earlier_unquoted == 0
            && self.notes.is_empty()
    }
}

/// Whether a text block is a ledger (its text starts with [`OPEN_TAG`]).
pub fn is_ledger_block(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Text { text, .. } if text.trim_start().starts_with(OPEN_TAG))
}

/// The tokens the user's words of a ledger may take for a target (or, with none, for the
/// current context size).
pub fn budget_for(target_tokens: Option<usize>, context_tokens: usize) -> usize {
    target_tokens.unwrap_or(context_tokens) * BUDGET_PERCENT / 100
}

/// What a rendering of a ledger may take, in tokens: the user's words' share and the working
/// state's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The user's words (instructions are kept past it).
    pub words: usize,
    /// The working state (files changed are named past it).
    pub work: usize,
}

impl Budget {
    /// The budget under a target: [`BUDGET_PERCENT`] of it for the words and [`WORK_PERCENT`]
    /// for the working state. Without a target (a summary that sets its own size, a run with
    /// none), the words' share of the context for each.
    pub fn for_target(target_tokens: Option<usize>, context_tokens: usize) -> Budget {
        let words = budget_for(target_tokens, context_tokens);
        let work = target_tokens.map_or(words, |t| t * WORK_PERCENT / 100);
        Budget { words, work }
    }
}

/// The text on one line, at most `max` characters (cut with `…`).
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::calls::{XML_CALLS, XML_TAGS};
    use super::*;
    use crate::model::{Message, Role, ToolResultPart};
    use crate::tokens::{Encoding, TiktokenCounter};
    use serde_json::json;

    fn user(id: &str, text: &str) -> Message {
        Message::new(id, Role::User, vec![ContentBlock::text(text)])
    }

    fn call(id: &str, name: &str, input: serde_json::Value) -> ContentBlock {
        ContentBlock::ToolUse { id: id.into(), name: name.into(), input }
    }

    fn of(messages: &[Message]) -> Ledger {
        Ledger::of(&messages.iter().collect::<Vec<_>>())
    }

    fn counter() -> TiktokenCounter {
        TiktokenCounter::new(Encoding::O200kBase)
    }

    #[test]
    fn claude_code_tools_give_files_commands_and_todos() {
        let messages = vec![
            user("u1", "Fix the flaky retry test. Never touch prod.yaml."),
            Message::new(
                "a1",
                Role::Assistant,
                vec![
                    call("toolu_01", "Read", json!({"file_path": "/repo/src/retry.rs"})),
                    call("toolu_02", "Edit", json!({"file_path": "/repo/src/retry.rs", "old_string": "a", "new_string": "b"})),
                    call("toolu_03", "Write", json!({"file_path": "/repo/tests/retry_flaky.rs", "content": "#[test]"})),
                    call("toolu_04", "Bash", json!({"command": "cargo test -p retry", "description": "Run tests"})),
                    call(
                        "toolu_05",
                        "TodoWrite",
                        json!({"todos": [
                            {"content": "Reproduce the flake", "status": "completed", "activeForm": "Reproducing"},
                            {"content": "Add a deterministic clock", "status": "in_progress", "activeForm": "Adding"},
                            {"content": "Update CHANGELOG", "status": "pending", "activeForm": "Updating"}
                        ]}),
                    ),
                ],
            ),
            Message::new(
                "u2",
                Role::User,
                vec![
                    ContentBlock::tool_result_text("toolu_01", "fn retry() {}"),
                    ContentBlock::tool_result_text("toolu_02", "The file has been updated."),
                    ContentBlock::tool_result_text("toolu_03", "File created successfully"),
                    ContentBlock::ToolResult {
                        tool_use_id: "toolu_04".into(),
                        content: vec![ToolResultPart::Text {
                            text: "running 3 tests\ntest retry::backoff ... FAILED\nerror: test failed, to rerun pass `-p retry --lib`".into(),
                        }],
                        is_error: true,
                    },
                    ContentBlock::tool_result_text("toolu_05", "Todos have been modified successfully."),
                ],
            ),
        ];
        let l = of(&messages);
        let files: Vec<(&str, FileAction)> = l.files.iter().map(|f| (f.path.as_str(), f.action)).collect();
        assert_eq!(
            files,
            [("/repo/src/retry.rs", FileAction::Edited), ("/repo/tests/retry_flaky.rs", FileAction::Created)]
        );
        // What the read showed and what the edit changed; the new file's outline.
        assert_eq!(l.files[0].outline, ["fn retry l.1"]);
        assert_eq!(l.files[0].changes, ["`b`"]);
        assert_eq!(l.files[1].changes, ["written whole, 1 lines"]);
        assert_eq!(l.errors.len(), 1);
        assert_eq!(l.errors[0].text, "test retry::backoff failed");
        assert_eq!(l.commands[0].command, "cargo test -p retry");
        assert_eq!(l.commands.len(), 1);
        assert_eq!(l.commands[0].command, "cargo test -p retry");
        assert_eq!(l.commands[0].outcome.as_deref(), Some("error: test retry::backoff ... FAILED"));
        assert_eq!(
            l.todos.iter().map(|t| (t.text.as_str(), t.done)).collect::<Vec<_>>(),
            [
                ("Reproduce the flake", true),
                ("Add a deterministic clock", false),
                ("Update CHANGELOG", false)
            ]
        );
        // Tool results are never the user's words.
        assert_eq!(
            l.user_messages,
            [UserWords { text: "Fix the flaky retry test. Never touch prod.yaml.".into() }]
        );
    }

    #[test]
    fn codex_apply_patch_and_shell_exit_codes() {
        let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-old\n+new\n*** Add File: src/new.rs\n+fn x() {}\n*** Delete File: src/old.rs\n*** End Patch";
        let messages = vec![
            Message::new(
                "a1",
                Role::Assistant,
                vec![
                    call("call_1", "shell", json!({"command": ["apply_patch", patch]})),
                    call("call_2", "shell", json!({"command": ["bash", "-lc", "npm test"], "workdir": "/w"})),
                    call(
                        "call_3",
                        "update_plan",
                        json!({"plan": [{"step": "Patch lib", "status": "completed"}, {"step": "Run the tests", "status": "pending"}]}),
                    ),
                ],
            ),
            Message::new(
                "u1",
                Role::User,
                vec![
                    ContentBlock::tool_result_text(
                        "call_1",
                        "{\"output\":\"Done!\",\"metadata\":{\"exit_code\":0}}",
                    ),
                    ContentBlock::tool_result_text(
                        "call_2",
                        "{\"output\":\"FAIL src/a.test.ts\\nTypeError: x is not a function\",\"metadata\":{\"exit_code\":1,\"duration_seconds\":2.1}}",
                    ),
                    ContentBlock::tool_result_text("call_3", "Plan updated"),
                ],
            ),
        ];
        let l = of(&messages);
        let files: Vec<(&str, FileAction)> = l.files.iter().map(|f| (f.path.as_str(), f.action)).collect();
        assert_eq!(
            files,
            [
                ("src/lib.rs", FileAction::Edited),
                ("src/new.rs", FileAction::Created),
                ("src/old.rs", FileAction::Deleted)
            ]
        );
        // apply_patch is a file edit, not a command.
        assert_eq!(
            l.commands,
            [CommandRun {
                at: None,
                summary: None,
                listed: Vec::new(),
                matches: Vec::new(),
                command: "npm test".into(),
                outcome: Some("exit 1: TypeError: x is not a function".into())
            }]
        );
        assert_eq!(l.todos[1], Todo { text: "Run the tests".into(), done: false });
    }

    #[test]
    fn cline_xml_calls_and_text_encoded_results() {
        let messages = vec![
            user(
                "u0",
                "<task>\nAdd dark mode to the settings page. Use CSS variables only.\n</task>\n<environment_details>\n# VSCode Visible Files\nsrc/App.tsx\n</environment_details>",
            ),
            Message::new(
                "a1",
                Role::Assistant,
                vec![ContentBlock::text(
                    "I'll read the file first.\n<read_file>\n<path>src/settings.css</path>\n<task_progress>\n- [x] Read the styles\n- [ ] Add the dark palette\n</task_progress>\n</read_file>",
                )],
            ),
            user(
                "u1",
                "[read_file for 'src/settings.css'] Result:\n:root { --bg: white; }\n\n<environment_details>\n# Current Time\n10:00\n</environment_details>",
            ),
            Message::new(
                "a2",
                Role::Assistant,
                vec![ContentBlock::text(
                    "<replace_in_file>\n<path>src/settings.css</path>\n<diff>...</diff>\n</replace_in_file>\n<execute_command>\n<command>npm run lint</command>\n<requires_approval>false</requires_approval>\n</execute_command>",
                )],
            ),
            user(
                "u2",
                "[replace_in_file for 'src/settings.css'] Result:\nThe content was successfully saved.\n[execute_command for 'npm run lint'] Result:\nCommand executed.\nOutput:\nerror  'x' is defined but never used  no-unused-vars\n<feedback>\nAlso keep the high-contrast theme working.\n</feedback>",
            ),
        ];
        let l = of(&messages);
        assert_eq!(l.files, [FileTouch::new("src/settings.css", FileAction::Edited)]);
        assert_eq!(
            l.commands,
            [CommandRun {
                at: None,
                summary: None,
                listed: Vec::new(),
                matches: Vec::new(),
                command: "npm run lint".into(),
                outcome: Some("error: error 'x' is defined but never used no-unused-vars".into())
            }]
        );
        assert_eq!(
            l.todos,
            [
                Todo { text: "Read the styles".into(), done: true },
                Todo { text: "Add the dark palette".into(), done: false }
            ]
        );
        let words: Vec<&str> = l.user_messages.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(
            words,
            [
                "Add dark mode to the settings page. Use CSS variables only.",
                "Also keep the high-contrast theme working."
            ]
        );
    }

    #[test]
    fn the_tags_looked_for_are_the_calls_read() {
        let calls: Vec<String> = XML_CALLS.iter().map(|(tag, _)| format!("<{tag}>")).collect();
        assert_eq!(XML_TAGS[..XML_CALLS.len()], calls);
        assert_eq!(XML_TAGS[XML_CALLS.len()], "<task_progress>");
        // A text naming none of them but with other tags (code) gives nothing.
        assert_eq!(
            of(&[Message::new(
                "a",
                Role::Assistant,
                vec![ContentBlock::text("let v: Vec<u8> = x; <b>bold</b>")]
            )]),
            Ledger::default()
        );
    }
    #[test]
    fn user_checklists_and_numbered_todo_lists() {
        let l = of(&[user("u", "Plan:\n- [x] parser\n- [ ] printer\n- [ ] docs")]);
        assert_eq!(l.todos.iter().filter(|t| !t.done).count(), 2);
        let l = of(&[user("u", "TODO:\n1. rename the crate\n2) publish 0.2\n\nThanks!")]);
        assert_eq!(
            l.todos,
            [
                Todo { text: "rename the crate".into(), done: false },
                Todo { text: "publish 0.2".into(), done: false }
            ]
        );
        assert!(of(&[user("u", "1. first we talk\n2. then we code")]).todos.is_empty());
        // A pasted todo.txt is data, not the task's list.
        assert!(of(&[user("u", "the file was:\n[ ] buy milk\n[x] file taxes")]).todos.is_empty());
        // Roo's update_todo_list: the latest version wins.
        let roo = |id: &str, todos: &str| {
            Message::new("a", Role::Assistant, vec![call(id, "update_todo_list", json!({ "todos": todos }))])
        };
        let l = of(&[roo("t1", "[ ] a\n[ ] b"), roo("t2", "[x] a\n[-] b\n[ ] c")]);
        assert_eq!(l.todos.iter().map(|t| t.done).collect::<Vec<_>>(), [true, false, false]);
    }

    fn sample() -> Ledger {
        Ledger {
            user_messages: vec![
                UserWords { text: "Build the CLI.\n\n## Rules\n- never push to main".into() },
                UserWords { text: "Use tabs.".into() },
            ],
            files: vec![
                FileTouch::new("src/main.rs", FileAction::Edited),
                FileTouch::new("docs/a b.md", FileAction::Read),
            ],
            commands: vec![
                CommandRun::new("cargo build", Some("exit 0".into())),
                CommandRun::new("ls", None),
            ],
            todos: vec![
                Todo { text: "write docs".into(), done: false },
                Todo { text: "parse".into(), done: true },
            ],
            earlier_unquoted: 0,
            notes: vec!["open todo: ship it".into()],
            ..Ledger::default()
        }
    }

    #[test]
    fn render_parses_back() {
        let l = sample();
        let text = l.render(10_000, &counter());
        assert!(text.starts_with(OPEN_TAG) && text.ends_with(CLOSE_TAG));
        assert_eq!(Ledger::parse(&format!("Summary.\n\n{text}\ntrailing")), Some(l));
        assert_eq!(Ledger::parse("no ledger here"), None);
    }

    #[test]
    fn merge_does_not_duplicate() {
        let mut l = sample();
        l.merge(sample());
        assert_eq!(l, sample());
        // A ledger found in messages merges with what they show.
        let text = sample().render(10_000, &counter());
        let mut summary = Message::new(
            "s",
            Role::Assistant,
            vec![ContentBlock::text("the summary"), ContentBlock::text(text)],
        );
        summary.is_summary = true;
        let later = Message::new(
            "a",
            Role::Assistant,
            vec![call("t", "Write", json!({"file_path": "docs/a b.md", "content": "x"}))],
        );
        let merged = of(&[summary, user("u", "Use tabs."), later]);
        assert_eq!(merged.user_messages.len(), 2);
        assert_eq!(
            merged.files.last().map(|f| (f.path.as_str(), f.action)),
            Some(("docs/a b.md", FileAction::Edited))
        );
    }

    #[test]
    fn budget_cuts_long_messages_first_then_names_the_oldest() {
        let t = counter();
        let log = (0..400).map(|i| format!("line {i}: INFO request served in {i} ms\n")).collect::<String>();
        let l = Ledger {
            user_messages: vec![
                UserWords { text: "First: build a log viewer.".into() },
                UserWords { text: format!("Here is the log:\n{log}") },
                UserWords { text: "Rule: keep it under 100 lines.".into() },
            ],
            ..Ledger::default()
        };
        // Enough room for short messages, not for the log: the log is cut to head and tail.
        let text = l.render(600, &t);
        assert!(text.contains("characters cut by Context Condenser"), "{text}");
        assert!(text.contains("line 0: INFO") && text.contains("line 399: INFO"));
        assert!(
            text.contains("Rule: keep it under 100 lines.") && text.contains("First: build a log viewer.")
        );
        assert!(!text.contains("not quoted"));
        // Almost no room: the first stays, the others go down to their instructions; one with
        // none is named by count.
        let text = l.render(20, &t);
        assert!(text.contains("First: build a log viewer."));
        assert!(text.contains("(1 earlier user messages not quoted)"), "{text}");
        assert!(text.contains(
            "[its instructions only, the rest cut by Context Condenser]\nRule: keep it under 100 lines."
        ));
        assert!(!text.contains("line 0: INFO"));
        let parsed = Ledger::parse(&text).unwrap();
        assert_eq!(parsed.earlier_unquoted, 1);
        // Read back, the instruction is still one: the probes find it in the rendering.
        let probes = parsed.probes();
        assert!(probes.iter().any(|p| p.needle == "Rule: keep it under 100 lines."));
        let (_, missing) = check_probes(&probes, &text);
        assert!(missing.is_empty(), "{missing:?}");
    }

    #[test]
    fn a_multi_line_question_echo_is_not_the_users_words() {
        let text = "[ask_followup_question for 'Which database should I use?\nOptions: Postgres, or SQLite if it's local'] Result:\n<answer>\nSQLite, and do not add an ORM.\n</answer>";
        assert_eq!(user_words(text), "SQLite, and do not add an ORM.");
        let headers = encoded_headers(text);
        assert_eq!(headers.len(), 1);
        assert_eq!(headers[0].2, "ask_followup_question");
        assert!(headers[0].3.as_deref().unwrap().ends_with("if it's local"));
        // Without its closing line within reach, it is the user's text as written.
        let open = "[ask_followup_question for 'never closed\nstill the user's";
        assert_eq!(user_words(open), open);
    }

    #[test]
    fn probes_and_prune() {
        let l = sample();
        let probes = l.probes();
        let labels: Vec<&str> = probes.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "user: Build the CLI. ## Rules - never push to main",
                "instruction: never push to main",
                "user: Use tabs.",
                "file: edited src/main.rs",
                "todo: write docs"
            ]
        );
        let (kept, missing) = check_probes(&probes, "USE   tabs. then src/main.rs and\nwrite docs");
        assert_eq!((kept.len(), missing.len()), (3, 2));
        assert_eq!(missing[0].restore, "Build the CLI.\n\n## Rules\n- never push to main");
        assert_eq!(missing[1].restore, "never push to main");
        let long =
            Ledger { user_messages: vec![UserWords { text: "word  ".repeat(80) }], ..Ledger::default() };
        let probe = &long.probes()[0];
        assert!(probe.needle.chars().count() >= PROBE_CHARS - 1);
        assert!(normalize(&probe.restore).contains(&probe.needle) && probe.restore.len() < 100);
        let mut pruned = sample();
        let later =
            Ledger { files: vec![FileTouch::new("src/main.rs", FileAction::Read)], ..Ledger::default() };
        pruned.prune(&later, "Use tabs.");
        assert_eq!(pruned.user_messages.len(), 1);
        // An edited file stays named though a later message reads it: a later condensation may
        // hide that read; a file only read goes.
        assert_eq!(pruned.files.len(), 2);
        let mut read_only = sample();
        read_only.files = vec![FileTouch::new("src/main.rs", FileAction::Read)];
        read_only.prune(&later, "");
        assert!(read_only.files.is_empty());
        assert_eq!(pruned.todos.len(), 2);
    }
}
