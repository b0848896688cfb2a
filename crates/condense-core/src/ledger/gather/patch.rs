//! Codex's `apply_patch`: the files of a patch (`*** Add File:`, `*** Update File:`,
//! `*** Delete File:`, `*** Move to:`), what each hunk changes, and a new file's text.

use crate::ledger::calls::patch_files;
use crate::ledger::{FileAction, Ledger, one_line};

use super::state::{MAX_MENTIONS, add_change, mentions};

impl Ledger {
    /// One file of an `apply_patch` patch. What its added lines refer to joins what the file
    /// referred to.
    pub(super) fn patched(&mut self, hunk: PatchFile, at: Option<usize>) {
        self.touch(&hunk.path, hunk.action, at);
        let whole = (hunk.action == FileAction::Created).then_some(hunk.added.as_str());
        self.change(&hunk.path, whole, hunk.changes);
        if hunk.action != FileAction::Created {
            let added = mentions(&hunk.path, &hunk.added);
            if let Some(file) = self.file_mut(&hunk.path) {
                for name in added {
                    if !file.mentions.contains(&name) && file.mentions.len() < MAX_MENTIONS {
                        file.mentions.push(name);
                    }
                }
            }
        }
    }
}

/// One file of an `apply_patch` patch: what is done to it, what its hunks change, and for a
/// new file its text.
pub(super) struct PatchFile {
    path: String,
    action: FileAction,
    changes: Vec<String>,
    added: String,
}

/// The files of an `apply_patch` patch with their hunks: `@@ context` names the symbol a hunk is
/// in; its first `+` line is what changed.
pub(super) fn patch_hunks(text: &str) -> Vec<PatchFile> {
    if !text.contains("*** ") {
        return Vec::new();
    }
    let mut out: Vec<PatchFile> = Vec::new();
    let files = patch_files(text);
    if files.is_empty() {
        return out;
    }
    let mut current: Option<PatchFile> = None;
    let mut context = String::new();
    let mut first_added: Option<String> = None;
    let flush_hunk = |file: &mut PatchFile, context: &mut String, first: &mut Option<String>| {
        if let Some(line) = first.take() {
            let line = one_line(&line, 100);
            let quoted = if line.contains('`') { format!("\"{line}\"") } else { format!("`{line}`") };
            let place = one_line(context, 80);
            let place = place.trim_end_matches([':', '{', ' ']);
            let change = if place.is_empty() { quoted } else { format!("{place}: {quoted}") };
            add_change(&mut file.changes, change);
        }
        context.clear();
    };
    for line in text.lines() {
        let header = [
            ("*** Add File: ", FileAction::Created),
            ("*** Update File: ", FileAction::Edited),
            ("*** Delete File: ", FileAction::Deleted),
            ("*** Move to: ", FileAction::Created),
        ]
        .into_iter()
        .find_map(|(p, a)| line.trim().strip_prefix(p).map(|path| (path.trim().to_owned(), a)));
        if let Some((path, action)) = header {
            if let Some(mut f) = current.take() {
                flush_hunk(&mut f, &mut context, &mut first_added);
                out.push(f);
            }
            current = Some(PatchFile { path, action, changes: Vec::new(), added: String::new() });
            continue;
        }
        let Some(file) = current.as_mut() else { continue };
        if let Some(ctx) = line.strip_prefix("@@") {
            flush_hunk(file, &mut context, &mut first_added);
            context = ctx.trim().to_owned();
        } else if let Some(added) = line.strip_prefix('+') {
            file.added.push_str(added);
            file.added.push('\n');
            if file.action != FileAction::Created && first_added.is_none() && !added.trim().is_empty() {
                first_added = Some(added.trim().to_owned());
            }
        } else if line.starts_with("*** End Patch") {
            flush_hunk(file, &mut context, &mut first_added);
        }
    }
    if let Some(mut f) = current.take() {
        flush_hunk(&mut f, &mut context, &mut first_added);
        out.push(f);
    }
    out
}
