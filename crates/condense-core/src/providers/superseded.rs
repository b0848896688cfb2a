//! The `superseded` provider (issue 25): no LLM, zero cost, undoable. A tool result that a later
//! message makes stale is hidden behind a one-line placeholder naming what replaced it and where:
//!
//! - a file read (Claude Code's `Read`, Cline's and Roo's `read_file`, a shell `cat`, `nl` or
//!   `sed -n` of one path, the text editor tool's `view`) whose path is read again whole (or the
//!   same part of it) or written, edited or deleted later (`Edit`, `Write`, `apply_patch`,
//!   `write_to_file`, `replace_in_file`, …); an edit's own result (Cline's holds the whole file)
//!   likewise;
//! - a command's output (`Bash`, `shell`, `execute_command`, `exec_command`) when the same
//!   command, whitespace aside and in the same working directory, runs again later;
//! - a client context block (Cline's and Roo's environment details, task progress reminders,
//!   resumption notices) when a later one of its kind follows.
//!
//! e.g. `[read of src/app.rs: 1,234 tokens hidden by Context Condenser; superseded by the edit of
//! it in message 57; id r3f9a21c0]` (the id recalls it: [`super::recall`]). Message numbers count the messages the model sees from 1, as they stood
//! when the run began. Results sent as user text (`[read_file for 'x'] Result:`) keep their
//! header. Only a result's content is replaced, so every tool call keeps its result.
//!
//! It runs alone or as `smart`'s pass after `lossless` and before `mask`; the tool names are read
//! as the state ledger reads them (`ledger::file_action`, `is_shell`, `patch_files`), and the
//! results found, sized and replaced as `mask` does.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::config::{ConfigField, ConfigForm, Form, ledger_field};
use crate::error::CondenseError;
use crate::ledger::{FileAction, file_action, is_shell, patch_files, strings};
use crate::model::{ContentBlock, next_condense_id};
use crate::provider::{
    CondensationContext, CondensationOptions, CondensationProvider, Condensed, Services, TemplateToken,
    apply_edits,
};

use super::encoded::encoded_results;
use super::mask::{
    Found, Location, find_client_context, find_results, found_id, hidden, hidden_note, lists_files, saving,
};
use super::recall::Roots;
use crate::provider::{Needs, ProviderMeta};

/// Configuration of the `superseded` provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SupersededConfig {
    /// Messages at the end kept as they are (a run's own `keep_last` takes precedence).
    pub keep_last: usize,
    /// Results smaller than this many tokens are left alone: their placeholder would save little.
    pub min_tokens: usize,
    /// Hide file reads (and edit results) that a later read or change of the same file replaces.
    pub files: bool,
    /// Hide command output that a later run of the same command replaces.
    pub commands: bool,
    /// Hide client context blocks that a later one of the same kind replaces.
    pub client_context: bool,
    /// Whether the state ledger goes in with the condensation (read by the template).
    pub ledger: bool,
}

impl Default for SupersededConfig {
    fn default() -> Self {
        SupersededConfig {
            keep_last: 2,
            min_tokens: 100,
            files: true,
            commands: true,
            client_context: true,
            ledger: true,
        }
    }
}

impl ConfigForm for SupersededConfig {
    fn fields() -> Vec<ConfigField> {
        vec![
            ConfigField::integer(
                "keep_last",
                "Keep last",
                "Messages at the end of the conversation left as they are.",
                0,
                None,
            )
            .unit("messages"),
            ConfigField::integer(
                "min_tokens",
                "Smallest result",
                "Results smaller than this are left alone: their placeholder would save little.",
                0,
                None,
            )
            .unit("tokens"),
            ConfigField::boolean(
                "files",
                "File reads",
                "Hide a file's content read earlier once the file is read again or changed.",
            ),
            ConfigField::boolean(
                "commands",
                "Command output",
                "Hide a command's output once the same command runs again (tests, builds, lints).",
            ),
            ConfigField::boolean(
                "client_context",
                "Older client context",
                "Hide the context a client such as Cline or Roo sends again each turn (environment details, task progress reminders) once a later one of its kind follows.",
            ),
            ledger_field(),
        ]
    }

    fn check(&self) -> Result<(), String> {
        if !self.files && !self.commands && !self.client_context {
            return Err("nothing to look for: turn on files, commands, client_context or more".into());
        }
        Ok(())
    }
}

/// Hides tool results and client context that later ones replace.
#[derive(Debug, Default, Clone, Copy)]
pub struct SupersededProvider;

/// What a tool call did, as far as replacing earlier content goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Act {
    /// Read a file; `part` names a partial read's range (`offset=10 limit=50`, `1,80p`).
    Read { path: String, part: Option<String> },
    /// Wrote, edited or deleted a file.
    Change { path: String, action: FileAction },
    /// Ran a shell command (whitespace collapsed) in a working directory, when the call named one.
    Run { command: String, dir: Option<String> },
}

impl Act {
    /// Whether `self`, coming later, replaces what `earlier`'s result shows.
    fn replaces(&self, earlier: &Act) -> bool {
        match (earlier, self) {
            (Act::Read { path, part }, Act::Read { path: p, part: later }) => {
                path == p && (later.is_none() || later == part)
            }
            (Act::Change { path, .. }, Act::Read { path: p, part: None }) => path == p,
            (Act::Read { path, .. } | Act::Change { path, .. }, Act::Change { path: p, .. }) => path == p,
            (Act::Run { command, dir }, Act::Run { command: c, dir: d }) => command == c && dir == d,
            _ => false,
        }
    }

    /// What a result of this act held, for its placeholder: `read of src/x.rs`.
    fn what(&self) -> String {
        match self {
            Act::Read { path, .. } => format!("read of {}", shorten(path)),
            Act::Change { path, action } => {
                format!("result of the {} of {}", change_word(*action), shorten(path))
            }
            Act::Run { command, .. } => format!("output of `{}`", shorten(command)),
        }
    }

    /// This act as the one that replaced another: `the edit of it`.
    fn by(&self) -> String {
        match self {
            Act::Read { .. } => "the read of it".into(),
            Act::Change { action, .. } => format!("the {} of it", change_word(*action)),
            Act::Run { .. } => "its later run".into(),
        }
    }

    fn is_command(&self) -> bool {
        matches!(self, Act::Run { .. })
    }
}

fn change_word(action: FileAction) -> &'static str {
    match action {
        FileAction::Created => "write",
        FileAction::Deleted => "deletion",
        FileAction::Edited | FileAction::Read => "edit",
    }
}

/// `text`'s first line, at most 80 characters.
fn shorten(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// A path as compared: trimmed, without a leading `./`.
fn path_key(path: &str) -> String {
    let path = path.trim();
    path.strip_prefix("./").unwrap_or(path).to_owned()
}

/// The argument names a call gives its file in.
const PATH_KEYS: &[&str] =
    &["file_path", "path", "filePath", "target_file", "notebook_path", "absolute_path", "file"];

/// The argument names of a partial read's range.
const PART_KEYS: &[&str] =
    &["offset", "limit", "view_range", "start_line", "end_line", "line_start", "line_end"];

/// The command a shell call runs: `command` or `cmd`, a string or an argument list (`bash -lc
/// SCRIPT` runs the script).
fn command_of(input: &serde_json::Value) -> Option<String> {
    let value = input.get("command").or_else(|| input.get("cmd"))?;
    let words: Vec<&str> = match value {
        serde_json::Value::String(s) => return Some(s.clone()),
        serde_json::Value::Array(items) => items.iter().filter_map(serde_json::Value::as_str).collect(),
        _ => return None,
    };
    let script = match words[..] {
        [sh, flag, script] if sh.ends_with("sh") && flag.starts_with('-') => script.to_owned(),
        _ => words.join(" "),
    };
    Some(script)
}

/// The file a simple shell command prints whole or in part: `cat PATH`, `nl -ba PATH`,
/// `sed -n '1,80p' PATH`. Anything with a pipe, a list or a redirection is a command.
fn shell_read(command: &str) -> Option<Act> {
    if command.contains(['|', ';', '&', '>', '<', '$', '`', '\n']) {
        return None;
    }
    let words: Vec<&str> = command.split_whitespace().map(|w| w.trim_matches(['\'', '"'])).collect();
    let (program, args) = words.split_first()?;
    let (flags, operands): (Vec<&str>, Vec<&str>) = args.iter().partition(|a| a.starts_with('-'));
    let read = |path: &str, part: Option<String>| Some(Act::Read { path: path_key(path), part });
    match (*program, operands.as_slice()) {
        ("cat" | "nl", [path]) => read(path, None),
        ("sed", [script, path]) if flags == ["-n"] && script.ends_with('p') => {
            read(path, Some((*script).to_owned()))
        }
        _ => None,
    }
}

/// What a structured tool call did: the files a patch names, a file tool's path, or the command
/// a shell tool ran (a file read when it only prints one).
fn acts_of_call(name: &str, input: &serde_json::Value) -> Vec<Act> {
    let patched: Vec<Act> = strings(input)
        .into_iter()
        .flat_map(patch_files)
        .map(|(path, action)| Act::Change { path: path_key(&path), action })
        .collect();
    if !patched.is_empty() {
        return patched;
    }
    let lower = name.to_ascii_lowercase();
    let path = PATH_KEYS.iter().find_map(|k| input.get(*k).and_then(serde_json::Value::as_str));
    // Anthropic's text editor tool names its operation in `command`.
    let action = match input.get("command").and_then(serde_json::Value::as_str) {
        Some("view") if lower.contains("edit") => Some(FileAction::Read),
        _ => file_action(&lower),
    };
    match (action, path) {
        (Some(FileAction::Read), Some(path)) => {
            let part: Vec<String> =
                PART_KEYS.iter().filter_map(|k| input.get(*k).map(|v| format!("{k}={v}"))).collect();
            let part = (!part.is_empty()).then(|| part.join(" "));
            return vec![Act::Read { path: path_key(path), part }];
        }
        (Some(action), Some(path)) => return vec![Act::Change { path: path_key(path), action }],
        _ => {}
    }
    if !is_shell(&lower) {
        return Vec::new();
    }
    let Some(command) = command_of(input) else { return Vec::new() };
    let dir = input.get("workdir").or_else(|| input.get("cwd")).and_then(serde_json::Value::as_str);
    vec![
        shell_read(&command)
            .unwrap_or_else(|| Act::Run { command: words(&command), dir: dir.map(str::to_owned) }),
    ]
}

/// What a result sent as text did, by its header's tool and argument.
fn act_of_encoded(tool: &str, arg: Option<&str>) -> Option<Act> {
    let lower = tool.to_ascii_lowercase();
    let arg = arg?;
    if is_shell(&lower) {
        return Some(shell_read(arg).unwrap_or_else(|| Act::Run { command: words(arg), dir: None }));
    }
    match file_action(&lower)? {
        FileAction::Read => Some(Act::Read { path: path_key(arg), part: None }),
        action => Some(Act::Change { path: path_key(arg), action }),
    }
}

/// `text` with its whitespace collapsed to single spaces.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where a result is: its message and, within it, its location as `mask` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Site {
    Block(usize, usize),
    Encoded(usize, usize),
}

impl Site {
    fn of(found: &Found) -> Option<Site> {
        match found.location {
            Location::Block(bi) => Some(Site::Block(found.message, bi)),
            Location::Encoded(n) => Some(Site::Encoded(found.message, n)),
            Location::Client(..) => None,
        }
    }
}

/// One act of the view: the message it counts from (a change: its call's; a read or a run: its
/// result's) and where its result is, when it has one.
#[derive(Debug)]
struct Event {
    message: usize,
    act: Act,
    result: Option<Site>,
    /// Whether the result shows this act alone (a patch of several files does not).
    sole: bool,
}

/// Every act of the visible messages, in order.
fn events(ctx: &CondensationContext<'_>) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    // A call's id → its acts and where their events are, once pushed.
    let mut calls: HashMap<&str, (Vec<Act>, Vec<usize>)> = HashMap::new();
    for (mi, m) in ctx.messages.iter().enumerate().filter(|(_, m)| m.is_visible()) {
        for (bi, block) in m.content.iter().enumerate() {
            match block {
                ContentBlock::ToolUse { id, name, input } => {
                    let acts = acts_of_call(name, input);
                    // A change counts from its call; its result, when it comes, is attached.
                    let mut at = Vec::new();
                    for act in acts.iter().filter(|a| matches!(a, Act::Change { .. })) {
                        at.push(out.len());
                        out.push(Event {
                            message: mi,
                            act: act.clone(),
                            result: None,
                            sole: acts.len() == 1,
                        });
                    }
                    calls.insert(id, (acts, at));
                }
                ContentBlock::ToolResult { tool_use_id, .. } => {
                    let Some((acts, at)) = calls.remove(tool_use_id.as_str()) else { continue };
                    let site = Some(Site::Block(mi, bi));
                    for &e in &at {
                        out[e].result = site;
                    }
                    let sole = acts.len() == 1;
                    for act in acts.into_iter().filter(|a| !matches!(a, Act::Change { .. })) {
                        out.push(Event { message: mi, act, result: site, sole });
                    }
                }
                _ => {}
            }
        }
        for (n, e) in encoded_results(m).into_iter().enumerate() {
            if let Some(act) = act_of_encoded(&e.tool, e.arg.as_deref()) {
                out.push(Event { message: mi, act, result: Some(Site::Encoded(mi, n)), sole: true });
            }
        }
    }
    out
}

/// One result to hide, with its placeholder.
struct Plan<'a> {
    found: &'a Found,
    text: String,
    command: bool,
}

/// What lists show of the provider, and what it needs.
const META: ProviderMeta = ProviderMeta {
    id: "superseded",
    name: "Superseded content",
    description: "Hides file reads replaced by a later read or edit of the same file, command output replaced by a later run of the same command, and older client context, each behind a placeholder naming what replaced it and where. No LLM, no cost, undoable.",
    needs: Needs::Nothing,
};

#[async_trait::async_trait(?Send)]
impl CondensationProvider for SupersededProvider {
    fn meta(&self) -> &ProviderMeta {
        &META
    }

    fn config_form(&self) -> Form {
        Form::of::<SupersededConfig>()
    }

    async fn condense_internal(
        &self,
        ctx: &CondensationContext<'_>,
        options: &CondensationOptions,
        services: Services<'_>,
        _token: TemplateToken,
    ) -> Result<Condensed, CondenseError> {
        let config: SupersededConfig = options.typed_config(self.id())?;
        let tokens = services.tokens;
        let keep_last = options.keep_last.unwrap_or(config.keep_last);
        let visible = ctx.visible();
        // The number the model sees each message by, from 1.
        let number: HashMap<usize, usize> = visible.iter().enumerate().map(|(n, &mi)| (mi, n + 1)).collect();
        let mut protected: BTreeSet<usize> =
            visible[visible.len().saturating_sub(keep_last)..].iter().copied().collect();
        protected.extend(ctx.pinned());
        let open = |f: &Found| !protected.contains(&f.message) && f.tokens >= config.min_tokens;

        let results = find_results(ctx, tokens);
        let by_site: HashMap<Site, &Found> = results.iter().filter_map(|f| Some((Site::of(f)?, f))).collect();
        let events = events(ctx);
        let roots = Roots::new(ctx.messages);
        let id = |found: &Found| found_id(&roots, &ctx.messages[found.message], found);
        let mut plans: Vec<Plan<'_>> = Vec::new();
        for (i, e) in events.iter().enumerate() {
            let wanted = if e.act.is_command() { config.commands } else { config.files };
            let Some(found) = e.result.and_then(|s| by_site.get(&s)).filter(|f| wanted && e.sole && open(f))
            else {
                continue;
            };
            // The latest act that replaces it: never itself replaced.
            let Some(by) =
                events[i + 1..].iter().rev().find(|l| l.message > e.message && l.act.replaces(&e.act))
            else {
                continue;
            };
            let why = format!("superseded by {} in message {}", by.act.by(), number[&by.message]);
            let text = hidden_note(&e.act.what(), found.tokens, found.images, &why, &id(found));
            plans.push(Plan { found, text, command: e.act.is_command() });
        }
        let client = if config.client_context { find_client_context(ctx, tokens) } else { Vec::new() };
        for (i, found) in client.iter().enumerate().filter(|(_, f)| open(f)) {
            let Location::Client(_, kind) = found.location else { continue };
            let listing = lists_files(ctx.messages, found);
            let later = client[i + 1..].iter().rev().find(|l| {
                l.message > found.message
                    && matches!(l.location, Location::Client(_, k) if k == kind)
                    && (!listing || lists_files(ctx.messages, l))
            });
            let Some(later) = later else { continue };
            let what = format!("the client's {}", kind.label());
            let why = format!("superseded by the one in message {}", number[&later.message]);
            let text = hidden_note(&what, found.tokens, 0, &why, &id(found));
            plans.push(Plan { found, text, command: false });
        }
        // Oldest first (a result shows one act, so none is planned twice).
        plans.sort_by_key(|p| p.found.message);

        let target = options.target_tokens;
        let floor = target.map(|t| t * 4 / 5);
        let mut total = ctx.prev_context_tokens;
        let mut replaced: BTreeMap<usize, Vec<ContentBlock>> = BTreeMap::new();
        let (mut files, mut commands, mut clients, mut hidden_tokens) = (0usize, 0usize, 0usize, 0usize);
        for plan in plans {
            if target.is_some_and(|t| total <= t) {
                break;
            }
            let found = plan.found;
            let edit = |m: &_, content: &[ContentBlock]| hidden(m, content, found, plan.text.clone());
            let Some((next, saved)) = saving(tokens, ctx.messages, &replaced, found, edit) else { continue };
            // Passed over when it would land far below the target: mask or truncation can do better.
            if floor.is_some_and(|f| total.saturating_sub(saved) < f) {
                continue;
            }
            total -= saved;
            replaced.insert(found.message, next);
            hidden_tokens += found.tokens;
            match (&found.location, plan.command) {
                (Location::Client(..), _) => clients += 1,
                (_, true) => commands += 1,
                (_, false) => files += 1,
            }
        }
        if replaced.is_empty() {
            return Err(CondenseError::NothingToCondense(format!(
                "{} tool results and {} client context blocks, none of {} tokens or more replaced by a later read, edit or run of the same file or command, or a later one of its kind, before the last {keep_last} messages",
                results.len(),
                client.len(),
                config.min_tokens
            )));
        }
        let condense_id = next_condense_id(ctx.messages);
        let messages = apply_edits(ctx.messages, &condense_id, &replaced, &BTreeSet::new());
        let mut metrics = serde_json::Map::new();
        metrics.insert("condense_id".into(), condense_id.into());
        metrics.insert("file_results_hidden".into(), files.into());
        metrics.insert("command_outputs_hidden".into(), commands.into());
        metrics.insert("client_context_hidden".into(), clients.into());
        metrics.insert("tokens_hidden".into(), hidden_tokens.into());
        metrics.insert("messages_edited".into(), replaced.len().into());
        if let Some(t) = target {
            metrics.insert("target_tokens".into(), t.into());
            metrics.insert("target_met".into(), (total <= t).into());
        }
        Ok(Condensed { messages, summary: None, cost: 0.0, metrics })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{ClientContext, Message, Role, undo_last};
    use crate::provider::{CondensationResult, run_provider};
    use crate::providers::recall::{recall, recall_id};
    use crate::tokens::{Encoding, TiktokenCounter};

    struct Still;

    impl crate::host::Clock for Still {
        fn now_ms(&self) -> f64 {
            0.0
        }
    }

    /// A body of some 400 tokens, different for each `seed`.
    fn body(seed: &str) -> String {
        (0..60).map(|i| format!("{seed} line {i}: let value_{i} = compute({i});\n")).collect()
    }

    fn user(id: &str, text: &str) -> Message {
        Message::new(id, Role::User, vec![ContentBlock::text(text)])
    }

    fn call(id: &str, name: &str, input: serde_json::Value) -> Message {
        Message::new(
            format!("a-{id}"),
            Role::Assistant,
            vec![ContentBlock::ToolUse { id: id.into(), name: name.into(), input }],
        )
    }

    fn result(id: &str, text: &str) -> Message {
        Message::new(format!("r-{id}"), Role::User, vec![ContentBlock::tool_result_text(id, text)])
    }

    /// The conversation run through the template with `config` (the ledger off, so that only
    /// the provider's edits show).
    fn run(messages: &[Message], config: serde_json::Value) -> CondensationResult {
        let tokens = TiktokenCounter::new(Encoding::O200kBase);
        let mut config = config;
        config["ledger"] = false.into();
        let options = CondensationOptions { config, ..Default::default() };
        let result = futures::executor::block_on(run_provider(
            &SupersededProvider,
            messages,
            None,
            &options,
            Services::new(&tokens, &Still),
        ));
        if result.is_ok() {
            let (_, undone) = undo_last(&result.messages).expect("a condensation to undo");
            assert_eq!(undone, messages, "undo gives the conversation back");
        }
        result
    }

    /// The text the model sees of each visible message (its text blocks and tool results), in
    /// order, trimmed.
    fn view(result: &CondensationResult) -> Vec<String> {
        let text = |m: &Message| {
            let parts: Vec<String> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text, .. } => Some(text.clone()),
                    ContentBlock::ToolResult { content, .. } => Some(crate::model::tool_result_text(content)),
                    _ => None,
                })
                .collect();
            parts.join("\n").trim().to_owned()
        };
        result.messages.iter().filter(|m| m.is_visible()).map(text).collect()
    }

    /// How a placeholder ends: `why` and the id that recalls `hidden`, which the result holds.
    fn ending(result: &CondensationResult, why: &str, hidden: &str) -> String {
        let id = recall_id(hidden);
        let recalled = recall(&result.messages, &id).expect("the hidden original is recalled by its id");
        assert_eq!(recalled.text, hidden);
        format!("{why}; id {id}]")
    }

    /// A closing exchange, so the messages before it are outside the default kept tail.
    fn closing() -> [Message; 2] {
        [Message::new("done", Role::Assistant, vec![ContentBlock::text("Done.")]), user("thanks", "Thanks.")]
    }

    #[test]
    fn a_claude_code_read_is_superseded_by_an_edit_of_the_same_path() {
        let mut messages = vec![
            user("task", "Fix the retry in src/app.rs."),
            call("t1", "Read", json!({"file_path": "src/app.rs"})),
            result("t1", &body("app")),
            call("t2", "Edit", json!({"file_path": "src/app.rs", "old_string": "a", "new_string": "b"})),
            result("t2", "The file src/app.rs has been updated."),
        ];
        messages.extend(closing());
        let result = run(&messages, json!({}));
        assert!(result.is_ok(), "{:?}", result.error);
        let view = view(&result);
        let end = ending(
            &result,
            "hidden by Context Condenser; superseded by the edit of it in message 4",
            &body("app"),
        );
        assert!(view[2].starts_with("[read of src/app.rs: ") && view[2].ends_with(&end), "{}", view[2]);
        // The call and the pairing stay; only the result's text changed.
        assert_eq!(view.len(), messages.len());
        assert!(crate::model::check_tool_pairs(&crate::model::api_view(&result.messages)).is_ok());
        let metrics = result.metrics.unwrap();
        assert_eq!(metrics.extra["file_results_hidden"], 1);
    }

    #[test]
    fn a_read_is_superseded_by_a_later_read_and_the_later_one_stays() {
        let mut messages = vec![
            user("task", "Look at src/app.rs twice."),
            call("t1", "Read", json!({"file_path": "./src/app.rs"})),
            result("t1", &body("first")),
            call("t2", "Read", json!({"file_path": "src/app.rs"})),
            result("t2", &body("second")),
        ];
        messages.extend(closing());
        let result = run(&messages, json!({}));
        let end = ending(&result, "superseded by the read of it in message 5", &body("first"));
        let view = view(&result);
        assert!(view[2].ends_with(&end), "{}", view[2]);
        assert_eq!(view[4], body("second").trim());
        // A partial later read replaces no whole earlier one.
        messages[3] = call("t2", "Read", json!({"file_path": "src/app.rs", "offset": 10, "limit": 5}));
        let partial = run(&messages, json!({}));
        assert_eq!(partial.error.unwrap().kind.as_str(), "nothing_to_condense");
    }

    #[test]
    fn a_codex_cat_is_superseded_by_apply_patch() {
        let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-old\n+new\n*** End Patch";
        let mut messages = vec![
            user("task", "Change lib.rs."),
            call("c1", "shell", json!({"command": ["bash", "-lc", "cat src/lib.rs"], "workdir": "/w"})),
            result("c1", &body("lib")),
            call("c2", "shell", json!({"command": ["apply_patch", patch]})),
            result("c2", "Success. Updated the following files:\nM src/lib.rs"),
        ];
        messages.extend(closing());
        let result = run(&messages, json!({}));
        let end = ending(&result, "superseded by the edit of it in message 4", &body("lib"));
        let view = view(&result);
        assert!(view[2].starts_with("[read of src/lib.rs: "), "{}", view[2]);
        assert!(view[2].ends_with(&end), "{}", view[2]);
    }

    #[test]
    fn a_cline_read_sent_as_text_is_superseded_by_the_next_read_its_header_kept() {
        let read =
            |id: &str, seed: &str| user(id, &format!("[read_file for 'src/a.py'] Result:\n{}", body(seed)));
        let assistant = |id: &str| {
            Message::new(
                id,
                Role::Assistant,
                vec![ContentBlock::text("<read_file>\n<path>src/a.py</path>\n</read_file>")],
            )
        };
        let mut messages = vec![user("task", "<task>Read a.py</task>"), assistant("a1"), read("r1", "one")];
        messages.extend([assistant("a2"), read("r2", "two")]);
        messages.extend(closing());
        let result = run(&messages, json!({}));
        // The body, as the encoded result holds it: without its trailing newline.
        let end = ending(&result, "superseded by the read of it in message 5", body("one").trim_end());
        let view = view(&result);
        assert!(
            view[2].starts_with("[read_file for 'src/a.py'] Result:\n[read of src/a.py: "),
            "{}",
            view[2]
        );
        assert!(view[2].ends_with(&end), "{}", view[2]);
        assert!(view[4].contains("two line 59"));
    }

    #[test]
    fn the_same_command_run_twice_hides_the_older_output_only() {
        let mut messages = vec![
            user("task", "Make the tests pass."),
            call("b1", "Bash", json!({"command": "cargo  test"})),
            result("b1", &body("fail")),
            call("b2", "Bash", json!({"command": "cargo clippy"})),
            result("b2", &body("lint")),
            call("b3", "Bash", json!({"command": "cargo test"})),
            result("b3", &body("pass")),
        ];
        messages.extend(closing());
        let result = run(&messages, json!({}));
        let end = ending(&result, "superseded by its later run in message 7", &body("fail"));
        let view = view(&result);
        assert!(view[2].starts_with("[output of `cargo test`: "), "{}", view[2]);
        assert!(view[2].ends_with(&end), "{}", view[2]);
        // A different command is no later run of it; the newer run stays.
        assert_eq!(view[4], body("lint").trim());
        assert_eq!(view[6], body("pass").trim());
        assert_eq!(result.metrics.unwrap().extra["command_outputs_hidden"], 1);
        // Commands off: nothing else qualifies.
        let off = run(&messages, json!({"commands": false}));
        assert_eq!(off.error.unwrap().kind.as_str(), "nothing_to_condense");
    }

    #[test]
    fn nothing_in_the_kept_tail_or_too_small_is_hidden() {
        let messages = vec![
            user("task", "Run it."),
            call("b1", "Bash", json!({"command": "make"})),
            result("b1", &body("one")),
            call("b2", "Bash", json!({"command": "make"})),
            result("b2", &body("two")),
        ];
        // The older run is among the last 3 messages kept.
        let kept = run(&messages, json!({"keep_last": 3}));
        let error = kept.error.unwrap();
        assert_eq!(error.kind.as_str(), "nothing_to_condense");
        assert!(error.message.contains("before the last 3 messages"), "{}", error.message);
        assert!(run(&messages, json!({"keep_last": 2})).is_ok());
        let small = run(&messages, json!({"keep_last": 0, "min_tokens": 10_000}));
        assert_eq!(small.error.unwrap().kind.as_str(), "nothing_to_condense");
    }

    #[test]
    fn older_client_context_is_superseded_by_the_next_of_its_kind() {
        let env = |n: usize| {
            let text = format!("<environment_details>\n{}</environment_details>", body(&format!("env{n}")));
            ContentBlock::Text { text, client: Some(ClientContext::EnvironmentDetails) }
        };
        let turn = |id: &str, words: &str, n: usize| {
            Message::new(id, Role::User, vec![ContentBlock::text(words), env(n)])
        };
        let reply = |id: &str| Message::new(id, Role::Assistant, vec![ContentBlock::text("On it.")]);
        let mut messages = vec![turn("u1", "Start.", 1), reply("a1"), turn("u2", "Go on.", 2), reply("a2")];
        messages.extend(closing());
        let result = run(&messages, json!({}));
        let copy = result.messages.iter().find(|m| m.is_visible() && m.id.starts_with("u1")).unwrap();
        assert_eq!(copy.content[0], ContentBlock::text("Start."));
        let ContentBlock::Text { text, client } = &copy.content[1] else { panic!("{copy:?}") };
        assert_eq!(*client, Some(ClientContext::EnvironmentDetails), "the mark stays");
        assert!(text.starts_with("[the client's environment details: "), "{text}");
        let env1 = format!("<environment_details>\n{}</environment_details>", body("env1"));
        assert!(text.ends_with(&ending(&result, "superseded by the one in message 3", &env1)), "{text}");
        assert_eq!(result.metrics.unwrap().extra["client_context_hidden"], 1);
    }

    #[test]
    fn shell_reads_and_calls_are_read_as_the_ledger_reads_them() {
        let read = |path: &str, part: Option<&str>| {
            Some(Act::Read { path: path.into(), part: part.map(Into::into) })
        };
        assert_eq!(shell_read("cat src/a.rs"), read("src/a.rs", None));
        assert_eq!(shell_read("nl -ba ./src/a.rs"), read("src/a.rs", None));
        assert_eq!(shell_read("sed -n '1,80p' src/a.rs"), read("src/a.rs", Some("1,80p")));
        assert_eq!(shell_read("cat a | grep x"), None);
        assert_eq!(shell_read("cat a b"), None);
        assert_eq!(
            acts_of_call("str_replace_based_edit_tool", &json!({"command": "view", "path": "x.py"})),
            [Act::Read { path: "x.py".into(), part: None }]
        );
        assert_eq!(
            acts_of_call("exec_command", &json!({"cmd": "npm  test"})),
            [Act::Run { command: "npm test".into(), dir: None }]
        );
        assert_eq!(
            act_of_encoded("write_to_file", Some("a.py")),
            Some(Act::Change { path: "a.py".into(), action: FileAction::Created })
        );
        assert!(acts_of_call("Grep", &json!({"pattern": "x", "path": "src"})).is_empty());
    }
}
