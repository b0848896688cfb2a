//! Where the binary's output goes. Every byte the binary writes passes through here (the crate's
//! `clippy.toml` bans `print!`, `println!`, `eprint!` and `eprintln!`, which panic on a closed
//! stream):
//! - stdout: a reader that went away (`condense count FILE | head -1`) is not an error. The output
//!   is dropped and the command ends with the status it reached, with nothing on stderr — the
//!   behaviour of ripgrep and most Rust CLIs, which cannot reset SIGPIPE without `unsafe`.
//! - `-o FILE`: the output is written to a temporary file beside FILE, synced, then renamed over
//!   it, so FILE is either the old file or the whole new one, never half written.
//! - stderr: one-line notes, whose failure is ignored (there is nowhere left to report it), and
//!   the progress line of a long command at a terminal (`progress.rs`).

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use crate::input::{Failure, usage};

/// Writes text to stdout. A closed pipe swallows it (`Ok`); any other failure (a full disk
/// behind `> file`) ends the command with exit 2.
pub(crate) fn stdout(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(usage(format!("cannot write to stdout: {e}"))),
    }
}

/// One line on stderr; a failure to write it is ignored.
pub(crate) fn note(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Where a command's document goes: the `-o FILE` flag (with its `--force`) of every command that
/// writes one.
#[derive(Debug, clap::Args)]
pub(crate) struct OutputArgs {
    /// Write the output to FILE instead of stdout (atomically: a temporary file beside it, then
    /// renamed). Refused when FILE is the input file, unless --force.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<String>,
    /// With -o naming the input file: replace it.
    #[arg(long, requires = "output")]
    pub(crate) force: bool,
}

impl OutputArgs {
    /// The sink for a command reading `input`.
    pub(crate) fn sink(&self, input: &str) -> Result<Sink, Failure> {
        Sink::new(self.output.as_deref(), input, self.force)
    }
}

/// Where a command's document goes: stdout, or a file named by `-o`.
#[derive(Debug, Clone)]
pub(crate) enum Sink {
    Stdout,
    File(PathBuf),
}

impl Sink {
    /// The sink for `-o FILE` (`-o -` is stdout). Writing over the input file is refused unless
    /// `force`: the output is another document (a CondensationResult, in this project's format)
    /// and the caller most likely mistyped; `--force` says the overwrite is meant.
    pub(crate) fn new(output: Option<&str>, input: &str, force: bool) -> Result<Sink, Failure> {
        let path = match output {
            None | Some("-") => return Ok(Sink::Stdout),
            Some(path) => PathBuf::from(path),
        };
        if input != "-" && !force && same_file(Path::new(input), &path) {
            return Err(usage(format!(
                "-o {}: that is the input file; pass --force to replace it (the previous \
                 conversation stays inside the result: `condense undo` brings it back)",
                path.display()
            )));
        }
        Ok(Sink::File(path))
    }

    /// Writes the whole text to the sink.
    pub(crate) fn write(&self, text: &str) -> Result<(), Failure> {
        match self {
            Sink::Stdout => stdout(text),
            Sink::File(path) => write_atomically(path, text.as_bytes())
                .map_err(|e| usage(format!("cannot write {}: {e}", path.display()))),
        }
    }

    /// Writes a value as pretty JSON and a newline.
    pub(crate) fn json(&self, value: &impl serde::Serialize) -> Result<(), Failure> {
        let mut text = serde_json::to_string_pretty(value).expect("JSON values serialize");
        text.push('\n');
        self.write(&text)
    }
}

/// Whether two paths name the same existing file (through links too).
fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    }
}

/// Writes `bytes` to a temporary file in `path`'s directory, then renames it over `path`. An
/// existing file keeps its permissions, and a symbolic link stays a link (its target is replaced).
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(e) if e.kind() == ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(e),
    };
    let name = target
        .file_name()
        .ok_or_else(|| std::io::Error::new(ErrorKind::InvalidInput, "not a file name"))?
        .to_string_lossy()
        .into_owned();
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let temp = dir.join(format!(".{name}.condense-{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        if let Ok(old) = std::fs::metadata(&target) {
            file.set_permissions(old.permissions())?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, &target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}
