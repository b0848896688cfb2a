//! Future-reference recall (`condense eval --references`): what a condensation keeps of what the
//! agent goes on to need.
//!
//! A session is cut at a share of its messages (on a turn boundary: the past ends where a request
//! would, the next message being the model's). The **references** are what the agent named in
//! its messages after the cut — file paths, `code spans`, code identifiers (`snake_case`,
//! `camelCase`, `PascalCase` with two humps or more, `a::b`), error codes (`E0308`, `TS2345`) —
//! that had appeared in the past, anywhere (a tool's output included): what the agent needed from
//! its past to carry on. The past alone is condensed to a share of its tokens, and a reference is
//! kept when its text occurs, as written, in what the model would be sent (the text of the
//! condensed past's API view).
//!
//! The measure is this command's own: it reads the session, never the condenser's ledger or
//! probes, so a condensation cannot pass it by describing itself. Baselines beside the providers:
//! `none` (the past as it is, every reference kept, all its tokens) and `user-only` (the user's own
//! words alone, what a compaction that keeps the user's messages keeps without its summary).

use std::collections::BTreeSet;

use condense_core::ledger::{user_words, view_text};
use condense_core::model::api_view;
use condense_core::{
    CondensationOptions, CondensationResult, ContentBlock, Conversation, ErrorInfo, Message, Role,
    TokenCounter,
};
use serde::Serialize;

/// What a reference is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// A file path, or a file name with a known extension.
    Path,
    /// A code identifier.
    Identifier,
    /// An error code.
    Error,
    /// The text of a `code span` that is none of the above.
    Code,
}

/// One thing the agent named after the cut that it had seen before it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct Reference {
    pub(crate) kind: Kind,
    pub(crate) text: String,
}

/// Extensions that make a bare name a file name (`tasks.py`), not a sentence's last word.
const EXTENSIONS: &[&str] = &[
    "py",
    "rs",
    "ts",
    "tsx",
    "js",
    "jsx",
    "mjs",
    "cjs",
    "json",
    "jsonl",
    "toml",
    "yaml",
    "yml",
    "md",
    "go",
    "java",
    "kt",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cs",
    "rb",
    "php",
    "sh",
    "bash",
    "sql",
    "html",
    "css",
    "scss",
    "txt",
    "lock",
    "cfg",
    "ini",
    "xml",
    "proto",
    "swift",
    "vue",
    "svelte",
    "conf",
    "env",
    "ipynb",
    "csv",
    "lua",
    "zig",
    "ex",
    "exs",
    "scala",
    "gradle",
    "dart",
    "r",
    "pl",
    "ps1",
    "bat",
    "dockerfile",
    "tf",
    "mdx",
    "rst",
    "pyi",
    "cfg",
    "log",
    "patch",
    "diff",
];

fn is_extension(ext: &str) -> bool {
    EXTENSIONS.iter().any(|e| e.eq_ignore_ascii_case(ext))
}

/// Characters a path or identifier token is made of.
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | '~' | ':')
}

/// A path: a separator with a named segment and a file name with an extension, or two
/// separators; or a bare file name with a known extension. URLs and `and/or` are not paths.
fn as_path(token: &str) -> Option<&str> {
    let t = token.trim_end_matches([':', '.', '-']);
    // `path:12` and `path:12:5` name the path at a line.
    let t = match t.split_once(':') {
        Some((p, at))
            if !at.is_empty() && at.chars().all(|c| c.is_ascii_digit() || matches!(c, ':' | '-')) =>
        {
            p
        }
        _ => t,
    };
    let t = t.strip_prefix("./").unwrap_or(t);
    if t.len() < 4
        || t.contains("://")
        || t.contains("::")
        || t.starts_with("//")
        || t.contains(char::is_whitespace)
    {
        return None;
    }
    let last = t.rsplit('/').next().unwrap_or(t);
    let ext = last.rsplit_once('.');
    let named_ext = ext.is_some_and(|(stem, ext)| {
        !stem.is_empty() && stem.chars().any(|c| c.is_ascii_alphabetic()) && is_extension(ext)
    });
    let slashes = t.matches('/').count();
    let segments_named =
        t.split('/').filter(|s| !s.is_empty()).all(|s| s.chars().any(|c| c.is_ascii_alphabetic()));
    if slashes >= 1 && segments_named && (named_ext || slashes >= 2) {
        return Some(t.trim_end_matches('/'));
    }
    (slashes == 0 && named_ext).then_some(t)
}

/// An identifier: `snake_case` (an inner `_`), `camelCase`, `PascalCase` with two humps or
/// more, `SCREAMING_CASE`; four characters or more, starting with a letter or `_`.
fn is_identifier(word: &str) -> bool {
    let chars: Vec<char> = word.chars().collect();
    if chars.len() < 4
        || !(chars[0].is_ascii_alphabetic() || chars[0] == '_')
        || !chars.iter().all(|c| c.is_ascii_alphanumeric() || *c == '_')
    {
        return false;
    }
    let core = word.trim_matches('_');
    let inner_underscore = core.contains('_') && core.chars().any(|c| c.is_ascii_alphabetic());
    // A lower-case letter followed by an upper-case one: a hump.
    let humps = chars.windows(2).filter(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase()).count();
    let camel = chars[0].is_ascii_lowercase() && humps >= 1;
    let pascal = chars[0].is_ascii_uppercase()
        && humps >= 1
        && core.chars().filter(|c| c.is_ascii_uppercase()).count() >= 2;
    inner_underscore || camel || pascal
}

/// An error code: `E0308` (rustc), `TS2345` (TypeScript), `ERR_…` is an identifier already.
fn is_error_code(word: &str) -> bool {
    let (letters, digits): (String, String) = word.chars().partition(|c| c.is_ascii_alphabetic());
    matches!(letters.as_str(), "E" | "TS" | "CS" | "C")
        && (4..=5).contains(&digits.len())
        && word.starts_with(letters.as_str())
        && word[letters.len()..].chars().all(|c| c.is_ascii_digit())
}

/// A code span that names a symbol as called or with its parameters (`factorial()`,
/// `parse(input)`, `NestedItem<T>`) stands for the symbol's name; any other span as written.
fn symbol_of(span: &str) -> &str {
    let name_end = span.find(['(', '<']).unwrap_or(span.len());
    let name = &span[..name_end];
    let closed = span.ends_with(')') || span.ends_with('>');
    let is_name = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':'))
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    if name_end < span.len() && closed && is_name { name } else { span }
}

/// The references a text names (see the module docs).
pub(crate) fn references_in(text: &str, out: &mut BTreeSet<Reference>) {
    // `code spans` on one line.
    for line in text.lines() {
        let mut rest = line;
        while let Some(open) = rest.find('`') {
            let after = &rest[open + 1..];
            if after.starts_with('`') {
                // A fence or an empty span: past its run of backticks.
                rest = after.trim_start_matches('`');
                continue;
            }
            let Some(close) = after.find('`') else { break };
            let span = symbol_of(after[..close].trim());
            if (3..=80).contains(&span.chars().count()) {
                let (kind, text) = match as_path(span) {
                    Some(path) => (Kind::Path, path),
                    None if is_identifier(span) => (Kind::Identifier, span),
                    None if is_error_code(span) => (Kind::Error, span),
                    None => (Kind::Code, span),
                };
                out.insert(Reference { kind, text: text.to_owned() });
            }
            rest = &after[close + 1..];
        }
    }
    // Paths, identifiers and error codes among the words.
    for token in text.split(|c: char| !token_char(c)).filter(|t| !t.is_empty()) {
        if let Some(path) = as_path(token) {
            out.insert(Reference { kind: Kind::Path, text: path.to_owned() });
            continue;
        }
        for word in token.split(['.', '/', ':', '-', '~']).filter(|w| !w.is_empty()) {
            if is_identifier(word) {
                out.insert(Reference { kind: Kind::Identifier, text: word.to_owned() });
            } else if is_error_code(word) {
                out.insert(Reference { kind: Kind::Error, text: word.to_owned() });
            }
        }
    }
}

/// The texts the agent wrote in a message: its text blocks, without the tags of the tool calls a
/// client writes as XML in them (Cline's `<read_file><path>…</path></read_file>`), and the
/// argument *values* of its tool calls (an argument that is itself a JSON object in a string, as
/// some clients send, by its values too). Tool and argument names are the client's vocabulary,
/// not the working state.
fn agent_texts(m: &Message) -> Vec<String> {
    let mut out = Vec::new();
    for block in &m.content {
        match block {
            ContentBlock::Text { text, client: None } => out.push(without_tags(text)),
            ContentBlock::ToolUse { input, .. } => values(input, &mut out),
            _ => {}
        }
    }
    out
}

/// Every string value in a JSON value, depth first; a string holding a JSON object or array is
/// read for its values.
fn values(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => {
            let t = s.trim_start();
            match (t.starts_with(['{', '[']))
                .then(|| serde_json::from_str::<serde_json::Value>(s).ok())
                .flatten()
            {
                Some(inner @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))) => {
                    values(&inner, out)
                }
                _ => out.push(s.clone()),
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| values(i, out)),
        serde_json::Value::Object(map) => map.values().for_each(|i| values(i, out)),
        _ => {}
    }
}

/// A text without its XML-style tags of lower-case names (`<read_file>`, `</path>`,
/// `<requires_approval>`): each tag becomes a line break, what is between them stays.
fn without_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name = after.strip_prefix('/').unwrap_or(after);
        let len =
            name.bytes().take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_').count();
        let is_tag = len > 0 && name.as_bytes()[0].is_ascii_lowercase() && name[len..].starts_with('>');
        if is_tag {
            out.push('\n');
            rest = &name[len + 1..];
        } else {
            out.push('<');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Where a session of `messages` (its API view) is cut near `percent` of them: the first index
/// at or after that share where the model's message follows a user's, so the past ends where a
/// request would. `None` when no such place leaves both sides non-empty.
pub(crate) fn cut_index(messages: &[&Message], percent: u8) -> Option<usize> {
    let start = (messages.len() * usize::from(percent) / 100).max(1);
    (start..messages.len())
        .find(|&i| messages[i].role == Role::Assistant && messages[i - 1].role == Role::User)
}

/// The references of the messages after the cut that the past holds.
pub(crate) fn future_references(
    past: &[&Message],
    future: &[&Message],
    system: Option<&str>,
) -> Vec<Reference> {
    let mut named = BTreeSet::new();
    for m in future.iter().filter(|m| m.role == Role::Assistant) {
        for text in agent_texts(m) {
            references_in(&text, &mut named);
        }
    }
    let past_text = format!("{}\n{}", system.unwrap_or(""), view_text(past));
    named.into_iter().filter(|r| past_text.contains(&r.text)).collect()
}

/// One session × cut × provider.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RecallRow {
    pub(crate) file: String,
    /// The cut, in percent of the messages asked for, and where it fell.
    pub(crate) cut_percent: u8,
    /// The target, in percent of the past's readable tokens.
    pub(crate) target_percent: u8,
    pub(crate) past_messages: usize,
    pub(crate) future_messages: usize,
    /// A provider's id, or `none` / `user-only`.
    pub(crate) provider: String,
    /// Tokens of the past as it is, and of the condensed past.
    pub(crate) past_tokens: usize,
    pub(crate) target_tokens: usize,
    pub(crate) tokens_after: usize,
    pub(crate) references: usize,
    pub(crate) kept: usize,
    /// The references lost, in order.
    pub(crate) missing: Vec<Reference>,
    pub(crate) time_ms: f64,
    pub(crate) error: Option<ErrorInfo>,
    /// The user's instructions and facts the core's ledger checks (issue 25's probes): kept of
    /// all, when the provider ran.
    pub(crate) instructions: Option<(usize, usize)>,
    /// Whether every tool call of the condensed past still has its result.
    pub(crate) pairs_valid: bool,
    /// The note of a run that could not meet its target.
    pub(crate) note: Option<String>,
}

impl RecallRow {
    pub(crate) fn kept_pct(&self) -> f64 {
        if self.references == 0 { 100.0 } else { self.kept as f64 * 100.0 / self.references as f64 }
    }
}

/// Whether each reference occurs in the condensed past's API view (system prompt included).
fn kept(references: &[Reference], messages: &[&Message], system: Option<&str>) -> (usize, Vec<Reference>) {
    let text = format!("{}\n{}", system.unwrap_or(""), view_text(messages));
    let missing: Vec<Reference> = references.iter().filter(|r| !text.contains(&r.text)).cloned().collect();
    (references.len() - missing.len(), missing)
}

/// Runs a provider on a conversation: its result (or why it could not run) and the time taken,
/// in milliseconds.
pub(crate) type Condense<'a> =
    &'a dyn Fn(&Conversation, &str, CondensationOptions) -> (Result<CondensationResult, ErrorInfo>, f64);

/// What one session's rows need.
pub(crate) struct Session<'a> {
    pub(crate) file: &'a str,
    pub(crate) conversation: &'a Conversation,
    pub(crate) cut_percent: u8,
    pub(crate) target_percent: u8,
    /// A folder to write each condensed past to.
    pub(crate) save: Option<&'a str>,
}

/// The rows of one session at one cut: the baselines, then each provider; `None` when the session
/// cannot be cut there.
pub(crate) fn rows(
    session: &Session<'_>,
    providers: &[String],
    counter: &dyn TokenCounter,
    condense: Condense<'_>,
) -> Option<Vec<RecallRow>> {
    let conversation = session.conversation;
    let view = api_view(&conversation.messages);
    let cut = cut_index(&view, session.cut_percent)?;
    let (past, future) = view.split_at(cut);
    let system = conversation.system.as_deref();
    let references = future_references(past, future, system);
    let past_conversation = Conversation {
        format: conversation.format.clone(),
        system: conversation.system.clone(),
        tools: conversation.tools.clone(),
        messages: past.iter().map(|m| (*m).clone()).collect(),
    };
    let past_tokens = counter.count_request(system, past);
    let target = past_tokens * usize::from(session.target_percent) / 100;
    let row = |provider: &str| RecallRow {
        file: session.file.to_owned(),
        cut_percent: session.cut_percent,
        target_percent: session.target_percent,
        past_messages: past.len(),
        future_messages: future.len(),
        provider: provider.to_owned(),
        past_tokens,
        target_tokens: target,
        tokens_after: past_tokens,
        references: references.len(),
        kept: references.len(),
        missing: Vec::new(),
        time_ms: 0.0,
        error: None,
        instructions: None,
        pairs_valid: true,
        note: None,
    };
    let mut out =
        vec![RecallRow { pairs_valid: condense_core::model::check_tool_pairs(past).is_ok(), ..row("none") }];
    // The user's own words alone.
    let words: Vec<Message> = past
        .iter()
        .filter(|m| m.role == Role::User)
        .filter_map(|m| {
            let text: Vec<&str> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text, client: None } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let words = user_words(&text.join("\n"));
            (!words.trim().is_empty())
                .then(|| Message::new(&m.id, Role::User, vec![ContentBlock::text(words)]))
        })
        .collect();
    let words_view: Vec<&Message> = words.iter().collect();
    let (k, missing) = kept(&references, &words_view, system);
    out.push(RecallRow {
        tokens_after: counter.count_request(system, &words_view),
        kept: k,
        missing,
        ..row("user-only")
    });
    for id in providers {
        let options = CondensationOptions { target_tokens: Some(target), ..Default::default() };
        let (result, time_ms) = condense(&past_conversation, id, options);
        let mut r = RecallRow { time_ms, ..row(id) };
        match result {
            Ok(result) if result.is_ok() => {
                let after = api_view(&result.messages);
                let (k, missing) = kept(&references, &after, system);
                r.tokens_after = result.new_context_tokens.unwrap_or(past_tokens);
                if let Some(dir) = session.save {
                    save(dir, session, id, &past_conversation, result.messages.clone());
                }
                r.kept = k;
                r.missing = missing;
                r.pairs_valid = condense_core::model::check_tool_pairs(&after).is_ok();
                if let Some(metrics) = &result.metrics {
                    r.instructions = metrics.retention().map(|ret| (ret.kept, ret.probes));
                    r.note = metrics.extra.get("note").and_then(|n| n.as_str()).map(str::to_owned);
                }
            }
            Ok(result) => r.error = result.error,
            Err(e) => r.error = Some(e),
        }
        out.push(r);
    }
    Some(out)
}

/// Writes a condensed past as a conversation file in `dir` (best effort: a failure is reported on
/// stderr, the measure goes on).
fn save(dir: &str, session: &Session<'_>, provider: &str, past: &Conversation, messages: Vec<Message>) {
    let stem =
        std::path::Path::new(session.file).file_stem().map_or("session".into(), |s| s.to_string_lossy());
    let path = std::path::Path::new(dir)
        .join(format!("{stem}-cut{}-t{}-{provider}.json", session.cut_percent, session.target_percent));
    let conversation = Conversation { messages, ..past.clone() };
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        std::fs::write(&path, serde_json::to_string_pretty(&conversation).unwrap_or_default())
    });
    if let Err(e) = written {
        crate::out::note(&format!("condense eval: cannot write {}: {e}", path.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(text: &str) -> Vec<(Kind, String)> {
        let mut out = BTreeSet::new();
        references_in(text, &mut out);
        out.into_iter().map(|r| (r.kind, r.text)).collect()
    }

    #[test]
    fn paths_identifiers_codes_and_spans() {
        let found = refs(
            "Open `moonmind/workflows/speckit_celery/tasks.py` and fix SpecWorkflowRun in api_service/db/models.py; \
             see tasks.py, error[E0308] and the `--dry-run` flag. It is and/or maybe 1.2.3 at https://x.io/a/b.py.",
        );
        let has = |k: Kind, t: &str| found.iter().any(|(kk, tt)| *kk == k && tt == t);
        assert!(has(Kind::Path, "moonmind/workflows/speckit_celery/tasks.py"), "{found:?}");
        assert!(has(Kind::Path, "api_service/db/models.py"));
        assert!(has(Kind::Path, "tasks.py"));
        assert!(has(Kind::Identifier, "SpecWorkflowRun"));
        assert!(has(Kind::Error, "E0308"));
        assert!(has(Kind::Code, "--dry-run"));
        let spans = refs("Call `factorial()` or `NestedItem<T>`, then `a + b`.");
        assert!(
            spans.iter().any(|(_, t)| t == "factorial") && spans.iter().any(|(_, t)| t == "NestedItem"),
            "{spans:?}"
        );
        assert!(spans.iter().any(|(_, t)| t == "a + b"));
        let placed = refs("See src/lib.rs:40:5 and `tests/test_<name>.py`.");
        assert!(placed.iter().any(|(k, t)| *k == Kind::Path && t == "src/lib.rs"), "{placed:?}");
        assert!(placed.iter().any(|(_, t)| t == "tests/test_<name>.py"), "{placed:?}");
        assert!(
            !found.iter().any(|(_, t)| t == "and/or" || t.contains("1.2.3") || t.contains("x.io")),
            "{found:?}"
        );
    }

    #[test]
    fn plain_words_are_not_identifiers() {
        for w in ["Error", "test", "Hello", "API", "URLs", "the_", "_x"] {
            assert!(!is_identifier(w), "{w}");
        }
        for w in ["wan_drop_leaked_dns", "parseArgs", "TypeError", "MAX_SIZE"] {
            assert!(is_identifier(w), "{w}");
        }
    }

    #[test]
    fn tool_names_and_argument_names_are_not_references() {
        // Cline writes its calls as XML in the text: the tags are its vocabulary, their values the
        // working state.
        let text = without_tags(
            "<replace_in_file>\n<path>src/billing/charges.ts</path>\n<requires_approval>false</requires_approval>\n\
             </replace_in_file> and `Array<ChargeInput>` stays",
        );
        assert!(!text.contains("replace_in_file") && !text.contains("requires_approval"), "{text}");
        assert!(text.contains("src/billing/charges.ts") && text.contains("Array<ChargeInput>"), "{text}");
        // Arguments by their values, a JSON object in a string too; never by their names.
        let call = Message::new(
            "a",
            Role::Assistant,
            vec![
                ContentBlock::ToolUse {
                    id: "1".into(),
                    name: "Edit".into(),
                    input: serde_json::json!({"file_path": "src/lib.rs", "old_string": "fn parse_args()", "replace_all": false}),
                },
                ContentBlock::ToolUse {
                    id: "2".into(),
                    name: "shell".into(),
                    input: serde_json::json!({"arguments": "{\"command\": [\"rg\", \"load_config\"], \"workdir\": \"/repo\"}"}),
                },
            ],
        );
        let texts = agent_texts(&call);
        assert_eq!(texts, ["src/lib.rs", "fn parse_args()", "rg", "load_config", "/repo"]);
    }

    #[test]
    fn only_what_the_past_held_counts() {
        let past = [Message::new(
            "u",
            Role::User,
            vec![ContentBlock::text("The log shows parse_config failing in src/config.rs")],
        )];
        let future = [Message::new(
            "a",
            Role::Assistant,
            vec![ContentBlock::text("I changed parse_config and added new_helper in src/config.rs")],
        )];
        let past: Vec<&Message> = past.iter().collect();
        let future: Vec<&Message> = future.iter().collect();
        let found: Vec<String> =
            future_references(&past, &future, None).into_iter().map(|r| r.text).collect();
        assert_eq!(found, ["src/config.rs", "parse_config"]);
    }
}
