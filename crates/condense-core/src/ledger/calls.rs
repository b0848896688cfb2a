//! What single tool calls and results say, each read alone: the results Cline and Roo send back as
//! text (`[tool for 'arg'] Result:`), `apply_patch` headers, what a tool does to a file, a
//! command's outcome (its exit code or first error line), todo items and checklists. Pure
//! functions of one text or JSON value, shared with the providers that read the same formats.

use super::{COMMAND_CHARS, FileAction, Todo, one_line};

/// A tool result Cline or Roo sent back as user text.
pub(super) struct EncodedResult<'a> {
    /// Where its `[tool for 'arg'] Result:` header starts.
    pub(super) start: usize,
    pub(super) tool: String,
    pub(super) arg: Option<String>,
    /// Up to the next header or the end.
    pub(super) body: &'a str,
}

/// Reads a header line `[tool for 'arg'] Result:` (or `[tool] Result:`): the tool and argument.
pub(crate) fn parse_header(line: &str) -> Option<(String, Option<String>)> {
    let inner = line.trim_end().strip_prefix('[')?.strip_suffix("] Result:")?;
    let (tool, arg) = match inner.split_once(" for ") {
        Some((tool, rest)) => {
            let rest = rest.trim();
            let arg =
                rest.strip_prefix('\'').and_then(|r| r.rfind('\'').map(|end| &r[..end])).unwrap_or(rest);
            (tool, Some(arg.to_owned()))
        }
        None => (inner, None),
    };
    let valid = !tool.is_empty() && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    valid.then(|| (tool.to_owned(), arg))
}

/// The header lines of tool results sent as text (Cline, Roo) in `text`: where each starts, with
/// what each names and where its line ends. A header's argument may run over several lines (a
/// question of `ask_followup_question`, a multi-line command): it ends at the first line ending
/// in `'] Result:`, at most [`HEADER_LINES`] lines on.
pub(crate) fn encoded_headers(text: &str) -> Vec<(usize, usize, String, Option<String>)> {
    let mut out = Vec::new();
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .scan(0, |at, line| {
            let start = *at;
            *at += line.len();
            Some((start, line))
        })
        .collect();
    let mut i = 0;
    while i < lines.len() {
        let (start, line) = lines[i];
        i += 1;
        if !line.starts_with('[') {
            continue;
        }
        if let Some((tool, arg)) = parse_header(line.trim_end_matches(['\n', '\r'])) {
            out.push((start, start + line.len(), tool, arg));
            continue;
        }
        // `[tool for '…` opening an argument that ends on a later line.
        let opens = line.split_once(" for '").is_some_and(|(tool, _)| {
            tool.len() > 1 && tool[1..].chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
        if !opens {
            continue;
        }
        let ends = lines[i..]
            .iter()
            .take(HEADER_LINES)
            .position(|(_, l)| l.trim_end_matches(['\n', '\r']).trim_end().ends_with("'] Result:"));
        if let Some(k) = ends {
            let (last_start, last) = lines[i + k];
            let end = last_start + last.len();
            if let Some((tool, arg)) = parse_header(text[start..end].trim_end_matches(['\n', '\r'])) {
                out.push((start, end, tool, arg));
                i += k + 1;
            }
        }
    }
    out
}

/// The most lines a text-encoded tool result's header may span.
const HEADER_LINES: usize = 40;

/// Each `[tool for 'arg'] Result:` header in a text, with its body up to the next header.
pub(super) fn encoded_tool_results(text: &str) -> Vec<EncodedResult<'_>> {
    // (start of header, end of header, tool, arg)
    let headers = encoded_headers(text);
    let ends: Vec<usize> = headers.iter().skip(1).map(|h| h.0).chain(std::iter::once(text.len())).collect();
    headers
        .into_iter()
        .zip(ends)
        .map(|((start, end, tool, arg), body_end)| EncodedResult {
            start,
            tool,
            arg,
            body: &text[end..body_end],
        })
        .collect()
}

/// Every string in a JSON value, depth first.
pub(crate) fn strings(value: &serde_json::Value) -> Vec<&str> {
    let mut out = Vec::new();
    fn walk<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
        match v {
            serde_json::Value::String(s) => out.push(s),
            serde_json::Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            serde_json::Value::Object(map) => map.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    walk(value, &mut out);
    out
}

/// The files of an `apply_patch` patch: `*** Add File:`, `*** Update File:`, `*** Delete File:`,
/// `*** Move to:`.
pub(crate) fn patch_files(text: &str) -> Vec<(String, FileAction)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        for (prefix, action) in [
            ("*** Add File: ", FileAction::Created),
            ("*** Update File: ", FileAction::Edited),
            ("*** Delete File: ", FileAction::Deleted),
            ("*** Move to: ", FileAction::Created),
        ] {
            if let Some(path) = line.strip_prefix(prefix) {
                out.push((path.trim().to_owned(), action));
            }
        }
    }
    out
}

/// What a tool does to the file it names, by its (lowercased) name.
pub(crate) fn file_action(lower: &str) -> Option<FileAction> {
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&["search", "list", "glob", "grep", "find"]) && !has(&["replace"]) {
        None
    } else if has(&["delete", "remove"]) {
        Some(FileAction::Deleted)
    } else if has(&["edit", "replace", "patch", "diff", "insert", "modify", "update_file"]) {
        Some(FileAction::Edited)
    } else if has(&["write", "create", "save"]) {
        Some(FileAction::Created)
    } else if has(&["read", "view", "open", "cat"]) {
        Some(FileAction::Read)
    } else {
        None
    }
}

/// What a tool call is about, for a person: its path, command or query argument (a command
/// given as a list of words joined, `bash -lc` dropped).
pub(crate) fn main_argument(input: &serde_json::Value) -> Option<String> {
    let keys = [
        "file_path",
        "path",
        "filePath",
        "absolute_path",
        "target_file",
        "notebook_path",
        "command",
        "cmd",
        "pattern",
        "query",
        "url",
    ];
    keys.iter().find_map(|k| match input.get(*k)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(parts) => {
            let parts: Vec<&str> = parts.iter().filter_map(serde_json::Value::as_str).collect();
            Some(match parts.as_slice() {
                [shell, flag, script] if shell.ends_with("sh") && flag.starts_with('-') => {
                    (*script).to_owned()
                }
                _ => parts.join(" "),
            })
        }
        _ => None,
    })
}

/// Whether a tool runs shell commands.
pub(crate) fn is_shell(lower: &str) -> bool {
    [
        "bash",
        "shell",
        "execute_command",
        "run_command",
        "run_terminal_cmd",
        "exec_command",
        "terminal",
        "shell_command",
    ]
    .iter()
    .any(|n| lower == *n || lower.ends_with(n))
}

/// A command's outcome as its result shows it: the exit code (read in the whole result, a
/// tool's wrapper included), else the first error line (of its output, `body`).
pub(super) fn outcome(text: &str, body: &str, is_error: bool) -> Option<String> {
    let (code, in_text) = scan_outcome(text);
    // The output is most often the result itself: read once.
    let failure = if body.len() == text.len() { in_text } else { scan_outcome(body).1 };
    // No line can look failed when the text holds none of the words.
    let error_line = match failure {
        true => body.lines().map(str::trim).find(|l| looks_failed(l)).map(|l| one_line(l, 160)),
        false => None,
    };
    if let Some(code) = code {
        return Some(match (code, error_line) {
            (0, _) => "exit 0".to_owned(),
            (c, Some(line)) => format!("exit {c}: {line}"),
            (c, None) => format!("exit {c}"),
        });
    }
    match error_line {
        Some(line) => Some(format!("error: {line}")),
        None if is_error => Some(format!(
            "failed: {}",
            one_line(body.lines().find(|l| !l.trim().is_empty()).unwrap_or(""), 160)
        )),
        None => None,
    }
}

/// Whether a line reports a failure (`error[E0308]`, `FAILED`, `Traceback`), and not a count of
/// none (`0 failed`, `0 errors`).
fn looks_failed(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    if !FAILURE_WORDS.iter().any(|w| lower.contains(w)) {
        return false;
    }
    let none = ["0 failed", "0 errors", "0 error", "no errors", "test result: ok", "0 failures"];
    // A passing test whose name has the word (`test parse_error ... ok`).
    let passing = lower.ends_with(" ok") || lower.ends_with(" passed") || lower.ends_with("✓");
    !passing && !none.iter().any(|n| lower.contains(n))
}

/// One pass over a command's output for what [`outcome`] reads: the exit code it shows (`Exit
/// code: 1`, `exit code 1`, `"exit_code": 1`, `exited with code 1`: the first of [`EXIT_MARKERS`]
/// whose number reads), and whether any of [`FAILURE_WORDS`] occurs, all in any ASCII case.
fn scan_outcome(text: &str) -> (Option<i64>, bool) {
    // Where each marker first occurs: the places they have in `text.to_ascii_lowercase()`, which
    // moves no byte. Matches come by their end, so a marker's first is its leftmost.
    let mut first = [None; EXIT_MARKERS.len()];
    let mut failure = false;
    for m in outcome_words().find_overlapping_iter(text) {
        match m.pattern().as_usize() {
            k if k < EXIT_MARKERS.len() => {
                first[k].get_or_insert(m.end());
            }
            _ => failure = true,
        }
    }
    // The markers in their order: the first whose number reads wins.
    for end in first.into_iter().flatten() {
        let rest = text[end..].trim_start();
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
        if let Ok(code) = digits.parse() {
            return (Some(code), failure);
        }
    }
    (None, failure)
}

/// The markers an exit code follows, in the order [`scan_outcome`] tries them.
const EXIT_MARKERS: [&str; 6] =
    ["exit code:", "exit code", "\"exit_code\":", "exit_code:", "exited with code", "exit status"];

/// The words a line reporting a failure holds ([`looks_failed`]).
const FAILURE_WORDS: [&str; 6] = ["error", "failed", "panicked", "traceback", "exception", "fatal"];

/// The calls Cline and Roo write as XML in the assistant's text, in the order `Ledger::xml_calls`
/// reads them, with what each does to the files its `<path>` names.
pub(super) const XML_CALLS: [(&str, Option<FileAction>); 8] = [
    ("read_file", Some(FileAction::Read)),
    ("write_to_file", Some(FileAction::Created)),
    ("replace_in_file", Some(FileAction::Edited)),
    ("apply_diff", Some(FileAction::Edited)),
    ("insert_content", Some(FileAction::Edited)),
    ("search_and_replace", Some(FileAction::Edited)),
    ("execute_command", None),
    ("update_todo_list", None),
];

/// The tags of [`XML_CALLS`] as they open, then `task_progress`'s.
pub(super) const XML_TAGS: [&str; 9] = [
    "<read_file>",
    "<write_to_file>",
    "<replace_in_file>",
    "<apply_diff>",
    "<insert_content>",
    "<search_and_replace>",
    "<execute_command>",
    "<update_todo_list>",
    "<task_progress>",
];

/// [`XML_TAGS`] as one automaton (see [`outcome_words`]).
pub(super) fn xml_tags() -> &'static aho_corasick::AhoCorasick {
    static TAGS: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    TAGS.get_or_init(|| aho_corasick::AhoCorasick::new(XML_TAGS).expect("nine tags build an automaton"))
}

/// [`EXIT_MARKERS`] then [`FAILURE_WORDS`], in any ASCII case, as one automaton built on first
/// use: a constant table, like the vocabularies, not state. A DFA without a prefilter: the
/// words start with letters as common as `e`, on which a prefilter would stop at every turn.
fn outcome_words() -> &'static aho_corasick::AhoCorasick {
    static WORDS: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    WORDS.get_or_init(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .prefilter(false)
            .build(EXIT_MARKERS.iter().chain(&FAILURE_WORDS))
            .expect("twelve words build an automaton")
    })
}

/// A command's output without its tool's wrapper: Codex's `{"output": …, "metadata": …}` and
/// `Exit code: 0 / Wall time / Output:` header.
pub(super) fn command_output(text: &str) -> std::borrow::Cow<'_, str> {
    let t = text.trim_start();
    if t.starts_with("{\"output\"")
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(t)
        && let Some(output) = value.get("output").and_then(serde_json::Value::as_str)
    {
        return output.to_owned().into();
    }
    if let Some(at) = text.find("\nOutput:\n")
        && text[..at].lines().any(|l| l.starts_with("Exit code:") || l.starts_with("Wall time:"))
    {
        return text[at + "\nOutput:\n".len()..].into();
    }
    text.into()
}

/// A todo from a JSON item: `{content|step|text, status}` or `{…, completed: bool}`.
pub(super) fn json_todo(item: &serde_json::Value) -> Option<Todo> {
    let text =
        ["content", "step", "text", "title"].iter().find_map(|k| item.get(*k).and_then(|v| v.as_str()))?;
    let done = item.get("status").and_then(|v| v.as_str()).is_some_and(|s| s == "completed" || s == "done")
        || item.get("completed").and_then(|v| v.as_bool()).unwrap_or(false);
    Some(Todo { text: one_line(text, COMMAND_CHARS), done })
}

/// A checkbox line: `- [ ] x`, `* [x] x`, `[-] x` (in progress: open).
pub(super) fn checkbox(line: &str) -> Option<Todo> {
    let t = line.trim_start();
    let t = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")).unwrap_or(t);
    let (mark, text) = t.strip_prefix('[').and_then(|r| r.split_once(']'))?;
    let done = match mark {
        "x" | "X" => true,
        " " | "-" | "~" | "" => false,
        _ => return None,
    };
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(Todo { text: one_line(text, COMMAND_CHARS), done })
}

pub(super) fn checklist(text: &str) -> Vec<Todo> {
    text.lines().filter_map(checkbox).collect()
}

/// A todo list in a user's message: checkbox lines, or a numbered list under a line that names a
/// todo list (`TODO:`, `Todo list:`, `## TODO`).
pub(super) fn user_todos(words: &str) -> Option<Vec<Todo>> {
    // Only Markdown task lists (`- [ ]`): bare `[ ]` lines in a user's message are more often
    // data (a pasted file) than the task's todo list.
    let boxes: Vec<Todo> = words
        .lines()
        .filter(|l| l.trim_start().starts_with("- [") || l.trim_start().starts_with("* ["))
        .filter_map(checkbox)
        .collect();
    if !boxes.is_empty() {
        return Some(boxes);
    }
    let mut list = Vec::new();
    let mut under_todo = false;
    for line in words.lines() {
        let t = line.trim();
        let lower = t.to_ascii_lowercase();
        if lower.contains("todo") && (t.ends_with(':') || t.starts_with('#')) {
            under_todo = true;
            list.clear();
            continue;
        }
        if !under_todo || t.is_empty() {
            continue;
        }
        let numbered = t.split_once(['.', ')']).filter(|(n, rest)| {
            !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && rest.starts_with(' ')
        });
        match numbered {
            Some((_, rest)) => list.push(Todo { text: one_line(rest, COMMAND_CHARS), done: false }),
            // Another paragraph ends the list.
            None => under_todo = list.is_empty(),
        }
    }
    (!list.is_empty()).then_some(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exit code as first read (every marker searched in the lowercased text).
    fn reference_exit_code(text: &str) -> Option<i64> {
        let lower = text.to_ascii_lowercase();
        for marker in EXIT_MARKERS {
            if let Some(at) = lower.find(marker) {
                let rest = lower[at + marker.len()..].trim_start();
                let digits: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
                if let Ok(code) = digits.parse() {
                    return Some(code);
                }
            }
        }
        None
    }

    proptest::proptest! {
        /// One pass for every marker reads the same code as a search per marker: markers in any
        /// case, overlapping (`exit code` in `exit code:`), repeated, followed by no number, by
        /// `-`, by whitespace of any kind; non-ASCII around them.
        /// The failure flag of the same pass is "some failure word occurs", in any case.
        #[test]
        fn failure_words_are_found_in_any_case(text in "(Error|FAILED|panicked|TraceBack|exception|Fatal|err|fail|x| |\\n){0,12}") {
            let lower = text.to_ascii_lowercase();
            proptest::prop_assert_eq!(scan_outcome(&text).1, FAILURE_WORDS.iter().any(|w| lower.contains(w)));
        }

        #[test]
        fn exit_codes_read_as_before(
            text in "((Exit Code|EXIT CODE:|exit_code:|\"exit_code\":|exited with code|Exit status|exit)[ \\t\\n\\u{a0}]{0,2}|[0-9]{1,3}|-|é|x| ){0,16}",
        ) {
            proptest::prop_assert_eq!(scan_outcome(&text).0, reference_exit_code(&text));
        }
    }
}
