//! What a shell command does to files, read from its text: the reads (`cat`, `sed -n 'A,Bp'`,
//! `head`, `tail`, `nl`), the writes (a redirect, `tee`, a heredoc), the deletions and moves, so
//! that an agent working through a shell (Codex, Claude Code's `Bash`, Gemini's
//! `run_shell_command`) has its files in the ledger like one with file tools. And the command as
//! the ledger shows it: a heredoc by its target and size, not its body.
//!
//! The text is split into simple commands at `&&`, `||`, `;`, `|` and line ends outside quotes,
//! each into words with the shell's quoting; nothing is expanded or run.

use super::FileAction;

/// What one command line does to files, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ShellEffects {
    /// `(path, action)`; a read's first line is in `reads`.
    pub(crate) files: Vec<(String, FileAction)>,
    /// The files printed whole or in part, with the first line printed (`sed -n '40,80p'` → 40).
    pub(crate) reads: Vec<(String, usize)>,
    /// Whether it lists files (`ls`, `find`, `git status`): its output names paths.
    pub(crate) listing: bool,
    /// Whether it searches files' text (`rg`, `grep`): its output is the lines found.
    pub(crate) searching: bool,
    /// The files a heredoc wrote whole, with the text it wrote.
    pub(crate) written: Vec<(String, String)>,
}

/// Programs that print a file's text.
const READERS: &[&str] = &["cat", "head", "tail", "nl", "less", "more", "bat", "batcat", "type"];

/// The effects of a command line (see the module docs).
pub(crate) fn effects(command: &str) -> ShellEffects {
    let (script, heredocs) = split_heredocs(command);
    let mut out = ShellEffects::default();
    for simple in simple_commands(&script) {
        let words = words(&simple);
        simple_effects(&words, &mut out);
    }
    for heredoc in heredocs {
        let Some(target) = heredoc.target else { continue };
        if !out.files.iter().any(|(p, _)| *p == target) {
            out.files.push((target.clone(), FileAction::Created));
        }
        out.written.push((target, heredoc.body));
    }
    out
}

/// The command as the ledger shows it: each heredoc's body left out, named by its size.
pub(crate) fn display(command: &str) -> String {
    let (script, heredocs) = split_heredocs(command);
    if heredocs.is_empty() {
        return command.to_owned();
    }
    let sizes: Vec<String> = heredocs
        .iter()
        .map(|h| match &h.target {
            Some(t) => format!("[a heredoc of {} lines written to {t}]", h.lines),
            None => format!("[a heredoc of {} lines]", h.lines),
        })
        .collect();
    format!("{} {}", script.trim_end(), sizes.join(" "))
}

/// A heredoc's body taken out of a command: its size, and the file it went to when the command
/// that read it wrote one (`cat <<'EOF' > f`, `tee f <<EOF`).
struct Heredoc {
    lines: usize,
    target: Option<String>,
    body: String,
}

/// The script with every heredoc body removed (the `<<WORD` lines kept), and the heredocs.
fn split_heredocs(command: &str) -> (String, Vec<Heredoc>) {
    if !command.contains("<<") {
        return (command.to_owned(), Vec::new());
    }
    let mut script = String::new();
    let mut heredocs = Vec::new();
    let mut lines = command.lines();
    while let Some(line) = lines.next() {
        script.push_str(line);
        script.push('\n');
        let Some(word) = heredoc_word(line) else { continue };
        let mut count = 0;
        let mut text = String::new();
        for body in lines.by_ref() {
            if body.trim() == word {
                break;
            }
            count += 1;
            text.push_str(body);
            text.push('\n');
        }
        let target = line_target(line);
        heredocs.push(Heredoc { lines: count, target, body: text });
    }
    (script, heredocs)
}

/// The delimiter of a heredoc opened on this line (`<<'EOF'`, `<<-EOF`, `<< "END"`).
fn heredoc_word(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = line[at + 2..].trim_start_matches('-').trim_start();
    if rest.starts_with('<') {
        // `<<<` is a here-string.
        return None;
    }
    let word: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The file a heredoc's line writes to: its `>` redirect, or `tee`'s argument.
fn line_target(line: &str) -> Option<String> {
    let mut out = ShellEffects::default();
    for simple in simple_commands(line) {
        let words = words(&simple);
        simple_effects(&words, &mut out);
    }
    out.files.into_iter().find(|(_, a)| *a != FileAction::Read).map(|(p, _)| p)
}

/// The simple commands of a script: split at `&&`, `||`, `;`, `|` and line ends outside quotes.
fn simple_commands(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), _) if c == q => {
                quote = None;
                current.push(c);
            }
            (Some(_), '\\') => {
                current.push(c);
                if let Some(n) = chars.next() {
                    current.push(n);
                }
            }
            (Some(_), _) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            (None, '\\') => {
                current.push(c);
                if let Some(n) = chars.next() {
                    current.push(n);
                }
            }
            (None, ';' | '\n') => out.push(std::mem::take(&mut current)),
            (None, '&') if chars.peek() == Some(&'&') => {
                chars.next();
                out.push(std::mem::take(&mut current));
            }
            (None, '|') => {
                if chars.peek() == Some(&'|') {
                    chars.next();
                }
                out.push(std::mem::take(&mut current));
            }
            _ => current.push(c),
        }
    }
    out.push(current);
    out.into_iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
}

/// A simple command's words, quotes removed (no expansion). A redirect operator is a word of
/// its own (`>`, `>>`, `2>`, `&>`), its target the next.
fn words(simple: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut started = false;
    let mut quote: Option<char> = None;
    let mut chars = simple.chars().peekable();
    let flush = |out: &mut Vec<String>, current: &mut String, started: &mut bool| {
        if *started {
            out.push(std::mem::take(current));
            *started = false;
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    current.push(n);
                }
            }
            (Some(_), _) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    current.push(n);
                    started = true;
                }
            }
            (None, c) if c.is_whitespace() => flush(&mut out, &mut current, &mut started),
            (None, '>') => {
                // `2>`, `&>`: the digits or `&` before it belong to the operator.
                let operator = if started && (current.chars().all(|d| d.is_ascii_digit()) || current == "&") {
                    started = false;
                    std::mem::take(&mut current) + ">"
                } else {
                    flush(&mut out, &mut current, &mut started);
                    ">".to_owned()
                };
                let operator = if chars.peek() == Some(&'>') {
                    chars.next();
                    operator + ">"
                } else {
                    operator
                };
                // `2>&1`: a descriptor, not a file.
                if chars.peek() == Some(&'&') {
                    chars.next();
                    while chars.peek().is_some_and(|d| d.is_ascii_digit() || *d == '-') {
                        chars.next();
                    }
                    continue;
                }
                out.push(operator);
            }
            (None, '<') => {
                flush(&mut out, &mut current, &mut started);
                // `<<` (a heredoc) and `<<<` (a here-string) are one operator each.
                let mut operator = "<".to_owned();
                while chars.peek() == Some(&'<') {
                    chars.next();
                    operator.push('<');
                }
                if operator == "<<" && chars.peek() == Some(&'-') {
                    chars.next();
                }
                out.push(operator);
            }
            (None, c) => {
                current.push(c);
                started = true;
            }
        }
    }
    flush(&mut out, &mut current, &mut started);
    out
}

/// Whether a word names a file one might read or write: not an option, a variable, a glob, a
/// device, or a number.
fn is_file_word(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('-')
        && !word.starts_with('$')
        && !word.contains(['*', '?', '{', '}', '`', '=', '(', ')'])
        && !word.starts_with("/dev/")
        && !word.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '.')
        && word.chars().any(|c| c.is_ascii_alphanumeric())
}

/// What one simple command does (see [`effects`]).
fn simple_effects(words: &[String], out: &mut ShellEffects) {
    let mut add = |path: &str, action: FileAction| {
        if is_file_word(path) && !out.files.iter().any(|(p, a)| p == path && *a == action) {
            out.files.push((path.to_owned(), action));
        }
    };
    // Redirects write; `<` reads.
    let mut args: Vec<&str> = Vec::new();
    let mut i = 0;
    let mut redirected: Vec<(String, FileAction)> = Vec::new();
    while i < words.len() {
        let w = words[i].as_str();
        if matches!(w, ">" | "1>" | "&>") {
            if let Some(t) = words.get(i + 1) {
                redirected.push((t.clone(), FileAction::Created));
            }
            i += 2;
            continue;
        }
        if matches!(w, ">>" | "1>>" | "&>>") {
            if let Some(t) = words.get(i + 1) {
                redirected.push((t.clone(), FileAction::Edited));
            }
            i += 2;
            continue;
        }
        if w.ends_with('>') && w[..w.len() - 1].chars().all(|c| c.is_ascii_digit()) || w.ends_with(">>") {
            // `2> log`: a log file, written.
            if let Some(t) = words.get(i + 1) {
                redirected.push((t.clone(), FileAction::Created));
            }
            i += 2;
            continue;
        }
        if w == "<" || w == "<<" || w == "<<<" {
            i += 2;
            continue;
        }
        args.push(w);
        i += 1;
    }
    // Leading environment assignments and wrappers.
    while let Some(first) = args.first() {
        if first.contains('=') && !first.starts_with('-')
            || matches!(*first, "sudo" | "env" | "time" | "command" | "exec" | "nohup")
        {
            args.remove(0);
        } else {
            break;
        }
    }
    let Some((program, rest)) = args.split_first() else {
        for (p, a) in redirected {
            add(&p, a);
        }
        return;
    };
    let program = program.rsplit('/').next().unwrap_or(program);
    let operands: Vec<&str> = rest.iter().copied().filter(|w| !w.starts_with('-')).collect();
    let git_listing = program == "git" && matches!(operands.first(), Some(&("status" | "ls-files")));
    if matches!(program, "ls" | "find" | "fd" | "tree") || git_listing {
        out.listing = true;
    }
    let git_grep = program == "git" && matches!(operands.first(), Some(&"grep"));
    if matches!(program, "rg" | "grep" | "ag" | "ack") || git_grep {
        out.searching = true;
    }
    match program {
        p if READERS.contains(&p) => {
            for path in operands.iter().filter(|w| is_file_word(w)) {
                add(path, FileAction::Read);
                out.reads.push(((*path).to_owned(), 1));
            }
        }
        "sed" => {
            let in_place = rest.iter().any(|w| *w == "-i" || w.starts_with("-i") || *w == "--in-place");
            // The script is the first operand unless `-e`/`-n` gave it; the files follow.
            let (script, files) = match operands.split_first() {
                Some((s, f)) => (*s, f.to_vec()),
                None => ("", Vec::new()),
            };
            let first =
                script.split([',', 'p']).next().and_then(|n| n.trim().parse::<usize>().ok()).unwrap_or(1);
            for path in files.into_iter().filter(|w| is_file_word(w)) {
                if in_place {
                    add(path, FileAction::Edited);
                } else {
                    add(path, FileAction::Read);
                    out.reads.push((path.to_owned(), first));
                }
            }
        }
        "tee" => {
            let append = rest.iter().any(|w| *w == "-a" || *w == "--append");
            for path in &operands {
                add(path, if append { FileAction::Edited } else { FileAction::Created });
            }
        }
        "rm" | "unlink" => {
            for path in &operands {
                add(path, FileAction::Deleted);
            }
        }
        "mv" if operands.len() == 2 => {
            add(operands[0], FileAction::Deleted);
            add(operands[1], FileAction::Created);
        }
        "cp" if operands.len() == 2 => add(operands[1], FileAction::Created),
        "touch" => {
            for path in &operands {
                add(path, FileAction::Created);
            }
        }
        "git" if matches!(operands.first(), Some(&"rm")) => {
            for path in &operands[1..] {
                add(path, FileAction::Deleted);
            }
        }
        "git" if matches!(operands.first(), Some(&"mv")) && operands.len() == 3 => {
            add(operands[1], FileAction::Deleted);
            add(operands[2], FileAction::Created);
        }
        _ => {}
    }
    for (p, a) in redirected {
        add(&p, a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(command: &str) -> Vec<(String, FileAction)> {
        effects(command).files
    }

    #[test]
    fn codex_reads_and_writes_through_the_shell() {
        let e = effects("sed -n '120,200p' moonmind/workflows/speckit_celery/tasks.py");
        assert_eq!(e.files, [("moonmind/workflows/speckit_celery/tasks.py".into(), FileAction::Read)]);
        assert_eq!(e.reads, [("moonmind/workflows/speckit_celery/tasks.py".into(), 120)]);
        assert_eq!(
            files("cat api_service/db/models.py | head -50 && nl -ba src/lib.rs | sed -n '1,80p'"),
            [("api_service/db/models.py".into(), FileAction::Read), ("src/lib.rs".into(), FileAction::Read)]
        );
        assert_eq!(files("rg -n \"def submit\" moonmind"), []);
        assert_eq!(files("ls -la src && git status"), []);
        let heredoc = "cat <<'EOF' > tests/contract/test_workflow_api.py\nimport pytest\n\ndef test_x():\n    assert 1\nEOF";
        assert_eq!(files(heredoc), [("tests/contract/test_workflow_api.py".into(), FileAction::Created)]);
        assert_eq!(
            display(heredoc),
            "cat <<'EOF' > tests/contract/test_workflow_api.py [a heredoc of 4 lines written to tests/contract/test_workflow_api.py]"
        );
        assert_eq!(files("cat > notes.md << \"END\"\nx\nEND"), [("notes.md".into(), FileAction::Created)]);
        assert_eq!(files("echo done >> CHANGELOG.md"), [("CHANGELOG.md".into(), FileAction::Edited)]);
        assert_eq!(files("cargo test 2>&1 | tail -20"), []);
        assert_eq!(files("pytest -q > /dev/null 2> err.log"), [("err.log".into(), FileAction::Created)]);
        assert_eq!(
            files("git mv old.py new.py; rm -f build/out.o"),
            [
                ("old.py".into(), FileAction::Deleted),
                ("new.py".into(), FileAction::Created),
                ("build/out.o".into(), FileAction::Deleted)
            ]
        );
        assert_eq!(files("sed -i 's/a/b/' src/x.rs"), [("src/x.rs".into(), FileAction::Edited)]);
        assert_eq!(files("python - <<'PY'\nopen('x.txt','w').write('a > b')\nPY"), []);
        assert_eq!(files("echo 'a > b; cat c.txt'"), []);
    }
}
