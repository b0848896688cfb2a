//! The hidden originals of the gateway's condensations, as files the agent reads with its own
//! tools (issue 36).
//!
//! A condensation replaces a range of the client's messages upstream; the client keeps them, but
//! the model no longer sees them. So each condensation's range is also written, readable as
//! text (each message's role, its text, its tool calls and results), to a file under the host's
//! state directory, `<dir>/<session>/<id>.md`, and the text that replaces the range names that
//! file in one line ([`recall_line`]): the agent reads it with its file tool when it needs what
//! was hidden. The gateway runs on the agent's machine, so the path is one the agent can open. No
//! tool is added to the client's request and no answer is held back to catch a call: gateways
//! that inject a recall tool and buffer the stream to intercept it saw almost no calls, and broke
//! streams.
//!
//! Everything here is decided without IO: the file's path (from the configured directory, the
//! session's name and the content), its text and the line. The host writes the bytes (0600)
//! before the request carrying the condensation leaves, and removes what the core evicts: each
//! session keeps at most [`RecallConfig::max_session_bytes`] of files, the oldest going first,
//! and the files of a session the gateway forgets go with it. The id is the recall id of the
//! file's text ([`crate::providers::recall::recall_id`]): the same range gives the same path, and
//! a frozen condensation names the same path on every replay and after a restart.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::model::hash::fnv1a;
use crate::model::{ContentBlock, ImageSource, Message, ToolResultPart};
use crate::providers::recall::{recall_id, result_text};
use crate::providers::thousands;

use crate::tokens::TokenCounter;

use super::count::{CountCache, read_messages};
use super::dialect::Dialect;
use super::freeze::replacement;
use super::plan::Plan;
use super::sessions::Session;

/// The most bytes of recall files a session keeps by default: 8 MiB, some dozens of
/// condensations of a long agent session.
pub const RECALL_SESSION_BYTES: usize = 8 << 20;

/// Where the host keeps recall files, and how much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallConfig {
    /// The absolute directory the files go under (`<state dir>/recall`), written as the agent's
    /// file tool will read it.
    pub dir: String,
    /// The most bytes of files one session keeps; the oldest are removed first.
    pub max_session_bytes: usize,
}

impl RecallConfig {
    /// Why this configuration cannot be used, if it cannot.
    pub(super) fn check(&self) -> Result<(), String> {
        if !is_absolute(&self.dir) {
            return Err(format!("the recall directory {:?} is not an absolute path", self.dir));
        }
        if self.max_session_bytes < 1024 {
            return Err("a session's recall files must be allowed at least 1 KB".into());
        }
        Ok(())
    }

    /// The separator the directory is written with: `\` for a Windows path without `/`.
    fn separator(&self) -> char {
        if self.dir.contains('\\') && !self.dir.contains('/') { '\\' } else { '/' }
    }

    /// The file of `session` with `text`.
    fn path(&self, session: &str, text: &str) -> String {
        let sep = self.separator();
        let dir = self.dir.trim_end_matches(['/', '\\']);
        format!("{dir}{sep}{}{sep}{}.md", session_dir(session), recall_id(text))
    }
}

/// Whether `path` is absolute on unix or Windows (`/x`, `C:\x`, `C:/x`, `\\server\x`).
fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with('/')
        || path.starts_with("\\\\")
        || (b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/'))
}

/// A session's folder name: its name with only letters, digits and `._-` kept (at most 60),
/// then a hash of the whole name, so two names never share a folder.
fn session_dir(session: &str) -> String {
    let readable: String = session
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .take(60)
        .collect();
    let readable = readable.trim_matches(['-', '.']);
    format!("{readable}-{:08x}", fnv1a(session.as_bytes()) as u32)
}

/// The line the replacing text starts with, naming the file.
pub(super) fn recall_line(path: &str) -> String {
    format!("The hidden messages are in {path}; read that file with your file tool if you need them.")
}

/// What the host does on disk for the recall files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecallOp {
    /// Write `text` to `path` (creating its folders), readable by the user alone, before the
    /// request it came with is sent.
    Write {
        /// The absolute path.
        path: String,
        /// The file's text.
        text: String,
    },
    /// Remove the file at `path` (gone already is fine), and its folder if that leaves it empty.
    Remove {
        /// The absolute path.
        path: String,
    },
}

/// A recall file a session keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Kept {
    pub(super) path: String,
    pub(super) bytes: usize,
}

/// A condensation's recall file, decided: where, what, and the line that names it.
#[derive(Debug)]
pub(super) struct RecallFile {
    pub(super) path: String,
    pub(super) text: String,
}

/// The recall file of original messages `range` of `session` (its `originals`' texts, in
/// `dialect`); an error says why there is none (the messages cannot be read, or the file would
/// be larger than the session may keep).
pub(super) fn recall_file(
    config: &RecallConfig,
    session: &str,
    dialect: Dialect,
    originals: &[&str],
    range: &Range<usize>,
) -> Result<RecallFile, String> {
    let (system, messages) = read_messages(dialect, originals)?;
    let text = render(range, system.as_deref(), &messages);
    if text.len() > config.max_session_bytes {
        return Err(format!(
            "the hidden messages take {} bytes, more than a session's recall files may ({} bytes)",
            thousands(text.len()),
            thousands(config.max_session_bytes)
        ));
    }
    Ok(RecallFile { path: config.path(session, &text), text })
}

/// Makes the recall file of plan `p` of `session` (named `name`) and puts the line naming it in
/// front of the plan's text; what the line costs in tokens comes off what the plan saves. The
/// error says why there is no file (the plan is then left as it was).
pub(super) fn attach(
    config: &RecallConfig,
    name: &str,
    session: &Session,
    texts: &[&str],
    p: &mut Plan,
    cache: &mut CountCache,
    counter: &dyn TokenCounter,
) -> Result<RecallFile, String> {
    let file = recall_file(config, name, session.dialect, &texts[p.range.clone()], &p.range)?;
    let text = format!("{}\n\n{}", recall_line(&file.path), p.text);
    let before = cache.tokens_of(session.dialect, &replacement(session.dialect, &p.text), counter);
    let after = cache.tokens_of(session.dialect, &replacement(session.dialect, &text), counter);
    p.saved = p.saved.saturating_sub(after.saturating_sub(before));
    p.text = text;
    Ok(file)
}

/// Books `file` into a session's `kept` files (the same path is kept once) and says what the
/// host does: remove the oldest files beyond `max_bytes`, then write it. Returns the operations
/// and how many files were evicted.
pub(super) fn keep(kept: &mut Vec<Kept>, file: RecallFile, max_bytes: usize) -> (Vec<RecallOp>, usize) {
    kept.retain(|k| k.path != file.path);
    let mut ops = Vec::new();
    let mut total: usize = kept.iter().map(|k| k.bytes).sum::<usize>() + file.text.len();
    let mut evicted = 0;
    while total > max_bytes && !kept.is_empty() {
        let oldest = kept.remove(0);
        total -= oldest.bytes;
        evicted += 1;
        ops.push(RecallOp::Remove { path: oldest.path });
    }
    kept.push(Kept { path: file.path.clone(), bytes: file.text.len() });
    ops.push(RecallOp::Write { path: file.path, text: file.text });
    (ops, evicted)
}

/// The file's text: a heading, then each hidden message with its role, its text, its tool calls
/// (the arguments as pretty JSON) and results, as plain text the agent's file tool shows line by
/// line.
fn render(range: &Range<usize>, system: Option<&str>, messages: &[Message]) -> String {
    let mut out = format!(
        "# Messages {} to {} of this conversation, hidden by Context Condenser\n\n\
         The model was sent a summary in their place; this is what they said, as the client sent it.\n",
        range.start + 1,
        range.end
    );
    if let Some(system) = system.filter(|s| !s.trim().is_empty()) {
        out.push_str(&format!("\n## Instructions\n\n{}\n", system.trim_end()));
    }
    for (n, m) in messages.iter().enumerate() {
        out.push_str(&format!("\n## {}. {}\n", n + 1, m.role.as_str()));
        for block in &m.content {
            out.push('\n');
            match block {
                ContentBlock::Text { text, client: Some(kind) } => {
                    out.push_str(&format!("(the client's {})\n{}\n", kind.label(), text.trim_end()));
                }
                ContentBlock::Text { text, client: None } => out.push_str(&format!("{}\n", text.trim_end())),
                ContentBlock::ToolUse { id, name, input } => {
                    let args = serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string());
                    out.push_str(&format!("Tool call {name} ({id}):\n{args}\n"));
                }
                ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                    let error = if *is_error { ", an error" } else { "" };
                    let text = match content.iter().any(|p| matches!(p, ToolResultPart::Image { .. })) {
                        false => result_text(content).into_owned(),
                        true => content
                            .iter()
                            .map(|p| match p {
                                ToolResultPart::Text { text } => text.clone(),
                                ToolResultPart::Image { source } => image_note(source),
                            })
                            .collect::<Vec<_>>()
                            .join("\n"),
                    };
                    out.push_str(&format!("Tool result ({tool_use_id}{error}):\n{}\n", text.trim_end()));
                }
                ContentBlock::Image { source } => out.push_str(&format!("{}\n", image_note(source))),
                ContentBlock::Opaque(block) => out.push_str(&format!("[{} block]\n", block.kind())),
            }
        }
    }
    out
}

/// An image, named rather than copied.
fn image_note(source: &ImageSource) -> String {
    match source {
        ImageSource::Base64 { media_type, data } => {
            format!("[an image, {media_type}, {} bytes of base64]", thousands(data.len()))
        }
        ImageSource::Url { url } => format!("[an image at {url}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &str, max: usize) -> RecallConfig {
        RecallConfig { dir: dir.into(), max_session_bytes: max }
    }

    #[test]
    fn a_path_is_the_directory_a_readable_session_folder_and_the_contents_id() {
        let c = config("/home/me/.local/share/context-condenser/gateway/recall/", 1 << 20);
        let path = c.path("claude-code:session_9f1c-77@claude-sonnet-4-5", "hidden");
        let hash = fnv1a(b"claude-code:session_9f1c-77@claude-sonnet-4-5") as u32;
        assert_eq!(
            path,
            format!(
                "/home/me/.local/share/context-condenser/gateway/recall/claude-code-session_9f1c-77-claude-sonnet-4-5-{hash:08x}/{}.md",
                recall_id("hidden")
            )
        );
        let windows = config(r"C:\Users\me\AppData\Local\context-condenser\gateway\recall", 1 << 20);
        assert!(
            windows
                .path("header:a/b", "x")
                .starts_with(r"C:\Users\me\AppData\Local\context-condenser\gateway\recall\header-a-b-")
        );
        assert!(!session_dir("../../etc").contains(".."), "{}", session_dir("../../etc"));
        assert_ne!(
            session_dir("header:a b"),
            session_dir("header:a-b"),
            "names that read the same differ by hash"
        );
        assert!(config("relative/dir", 1 << 20).check().is_err());
        assert!(config("/abs", 10).check().is_err());
        assert!(config(r"D:\abs", 1 << 20).check().is_ok());
    }

    #[test]
    fn the_file_shows_each_message_its_calls_and_results() {
        let originals = [
            r#"{"role":"assistant","content":[{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/w/a.rs"}}]}"#,
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"fn a() {}\nfn b() {}"}]}"#,
        ];
        let c = config("/state/recall", 1 << 20);
        let file = recall_file(&c, "s", Dialect::AnthropicMessages, &originals, &(3..5)).unwrap();
        assert_eq!(
            file.text,
            "# Messages 4 to 5 of this conversation, hidden by Context Condenser\n\n\
             The model was sent a summary in their place; this is what they said, as the client sent it.\n\
             \n## 1. assistant\n\nReading it.\n\nTool call Read (toolu_1):\n{\n  \"file_path\": \"/w/a.rs\"\n}\n\
             \n## 2. user\n\nTool result (toolu_1):\nfn a() {}\nfn b() {}\n"
        );
        assert!(
            file.path.starts_with("/state/recall/s-")
                && file.path.ends_with(&format!("/{}.md", recall_id(&file.text)))
        );
        let small = config("/state/recall", 1024);
        let big = format!(r#"{{"role":"user","content":"{}"}}"#, "x".repeat(2000));
        assert!(
            recall_file(&small, "s", Dialect::ChatCompletions, &[&big], &(0..1))
                .unwrap_err()
                .contains("more than")
        );
    }

    #[test]
    fn a_session_keeps_its_newest_files_within_its_bytes() {
        let file = |n: usize, len: usize| RecallFile { path: format!("/r/s/{n}.md"), text: "x".repeat(len) };
        let mut kept = Vec::new();
        assert_eq!(keep(&mut kept, file(1, 400), 1000).1, 0);
        assert_eq!(keep(&mut kept, file(2, 400), 1000).1, 0);
        let (ops, evicted) = keep(&mut kept, file(3, 400), 1000);
        assert_eq!(evicted, 1);
        assert_eq!(ops[0], RecallOp::Remove { path: "/r/s/1.md".into() });
        assert!(matches!(&ops[1], RecallOp::Write { path, .. } if path == "/r/s/3.md"));
        assert_eq!(kept.iter().map(|k| k.path.as_str()).collect::<Vec<_>>(), ["/r/s/2.md", "/r/s/3.md"]);
        // The same file again is kept once, as the newest.
        keep(&mut kept, file(2, 400), 1000);
        assert_eq!(kept.iter().map(|k| k.path.as_str()).collect::<Vec<_>>(), ["/r/s/3.md", "/r/s/2.md"]);
    }
}
