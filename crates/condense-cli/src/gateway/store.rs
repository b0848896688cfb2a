//! The gateway's state on disk, in the state directory: `state.json` (the index: the version
//! and the totals) and one file per session in `sessions/`, each written only when its session
//! changed and removed when the gateway lets the session go (the core says which:
//! `SavedFiles`). A state of one file (version 2, every session inline) is read, and its sessions
//! are written as files at the first save.
//!
//! Each file is written whole to a temporary file (created 0600: the state names sessions, which
//! are the user's business), synced, then renamed over its name, and the folders are synced; so a
//! gateway killed mid-write leaves the previous file or the new one, never half of one, and a
//! temporary file is never read back. A file larger than [`MAX_STATE_BYTES`] is neither written
//! nor read. The directories are created 0700. The recall files the core decides on go in its `recall` folder, each 0600
//! ([`apply_recall`]).

use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use condense_core::gateway::{RecallOp, SavedFiles, SessionFile, StateChanges};

/// The largest state file written or read: the core bounds what it holds (its sessions' bytes);
/// this is the backstop against a file that is not ours.
pub(crate) const MAX_STATE_BYTES: u64 = 512 << 20;

const FILE: &str = "state.json";
/// The folder of the session files, in the state directory.
const SESSIONS: &str = "sessions";
/// The folder of the recall files, in the state directory.
const RECALL: &str = "recall";
/// How temporary files begin; any left by a killed gateway are removed at start.
const TEMP_PREFIX: &str = ".state.json.";
/// How a session file's temporary file begins, in `sessions/`.
const SESSION_TEMP_PREFIX: &str = ".";

/// The state directory when none is given: the user's data directory
/// (`$XDG_DATA_HOME`, else `~/.local/share`; `~/Library/Application Support` on macOS;
/// `%LOCALAPPDATA%` on Windows), then `context-condenser/gateway`.
pub(crate) fn default_dir() -> Option<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = if cfg!(windows) {
        env("LOCALAPPDATA")
    } else if cfg!(target_os = "macos") {
        env("HOME").map(|h| h.join("Library/Application Support"))
    } else {
        env("XDG_DATA_HOME").or_else(|| env("HOME").map(|h| h.join(".local/share")))
    };
    base.map(|b| b.join("context-condenser").join("gateway"))
}

/// The state file of one directory.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    dir: PathBuf,
    /// What was last written of each session's file. Held from a save's snapshot to its renames:
    /// saves go one at a time, in the order their snapshots were taken, so an older state never
    /// lands over a newer one.
    saving: std::sync::Arc<std::sync::Mutex<SavedFiles>>,
}

impl Store {
    /// Opens (creating) the directory, and removes temporary files a killed gateway left.
    pub(crate) fn open(dir: &Path) -> std::io::Result<Store> {
        create_private_dir(&dir.join(SESSIONS))?;
        for (folder, prefix) in [(dir.to_path_buf(), TEMP_PREFIX), (dir.join(SESSIONS), SESSION_TEMP_PREFIX)]
        {
            for entry in std::fs::read_dir(folder)?.flatten() {
                if entry.file_name().to_string_lossy().starts_with(prefix) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Ok(Store { dir: dir.to_path_buf(), saving: std::sync::Arc::default() })
    }

    /// The state file's path.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// The folder of the recall files, absolute (the condensations name files in it for the
    /// agent to open, from its own working directory): `recall` in the state directory.
    pub(crate) fn recall_dir(&self) -> std::io::Result<String> {
        let dir = std::path::absolute(&self.dir)?.join(RECALL);
        dir.into_os_string().into_string().map_err(|_| std::io::Error::other("the path is not UTF-8"))
    }

    /// The saved state: the index, `None` when there is none yet, and the session files (their
    /// names and bytes); an error says why it cannot be used.
    pub(crate) fn read(&self) -> Result<(Option<Vec<u8>>, Vec<SessionFile>), String> {
        let index = read_bounded(&self.path())?;
        let folder = self.dir.join(SESSIONS);
        let entries =
            std::fs::read_dir(&folder).map_err(|e| format!("cannot read {}: {e}", folder.display()))?;
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".json") && !n.starts_with(SESSION_TEMP_PREFIX))
            .collect();
        names.sort();
        let mut files = Vec::new();
        for name in names {
            if let Some(bytes) = read_bounded(&folder.join(&name))? {
                files.push(SessionFile { name, bytes });
            }
        }
        Ok((index, files))
    }

    /// Moves a session file the core set aside out of `sessions/`, beside the state file, as
    /// `state.set-aside.<n>.json` with the first `n` not taken: its new path.
    pub(crate) fn set_aside_file(&self, name: &str) -> std::io::Result<PathBuf> {
        let from = self.dir.join(SESSIONS).join(name);
        // Linked first: a name taken fails, never replaced; then the file leaves the folder.
        let kept = self.first_set_aside(|path| std::fs::hard_link(&from, path))?;
        std::fs::remove_file(&from)?;
        Ok(kept)
    }

    /// Keeps a saved session the core set aside beside the state file, as
    /// `state.set-aside.<n>.json` with the first `n` not taken (never over an earlier one), 0600:
    /// its path.
    pub(crate) fn set_aside(&self, raw: &str) -> std::io::Result<PathBuf> {
        self.first_set_aside(|path| {
            let mut file = private_options(false).create_new(true).open(path)?;
            file.write_all(raw.as_bytes())?;
            file.sync_all()
        })
    }

    /// Places what was set aside at the first `state.set-aside.<n>.json` that `place` does not
    /// find taken (it fails with `AlreadyExists` there): its path.
    fn first_set_aside(&self, place: impl Fn(&Path) -> std::io::Result<()>) -> std::io::Result<PathBuf> {
        let mut n = 1;
        loop {
            let path = self.dir.join(format!("state.set-aside.{n}.json"));
            match place(&path) {
                Ok(()) => return Ok(path),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// The turn of one save, with what was written before: held while its snapshot is taken
    /// and written.
    pub(crate) fn saving(&self) -> std::sync::MutexGuard<'_, SavedFiles> {
        self.saving.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Does `changes` on disk: the changed session files, then the index, each replaced
    /// atomically, then the files of sessions let go removed; the folders synced. Returns the
    /// session files that could not be written or removed (the next save does them again) and
    /// the first error.
    pub(crate) fn write_changes(&self, changes: &StateChanges) -> (Vec<String>, Option<std::io::Error>) {
        let folder = self.dir.join(SESSIONS);
        let mut failed = Vec::new();
        let mut first = None;
        for file in &changes.write {
            let temp = folder.join(format!("{SESSION_TEMP_PREFIX}{}.{}.tmp", file.name, std::process::id()));
            if let Err(e) = replace(&temp, &folder.join(&file.name), |out| out.write_all(&file.bytes)) {
                failed.push(file.name.clone());
                first.get_or_insert(e);
            }
        }
        if !changes.write.is_empty()
            && let Err(e) = sync_dir(&folder)
        {
            first.get_or_insert(e);
        }
        if let Err(e) = self.write_with(|out| out.write_all(&changes.index)) {
            first.get_or_insert(e);
        }
        for name in &changes.remove {
            match std::fs::remove_file(folder.join(name)) {
                Err(e) if e.kind() != ErrorKind::NotFound => {
                    failed.push(name.clone());
                    first.get_or_insert(e);
                }
                _ => {}
            }
        }
        (failed, first)
    }

    /// Replaces the state file with what `write` writes, atomically: into a private temporary
    /// file, synced, then renamed over the state file. A failed or oversized write leaves the
    /// state file as it was.
    pub(crate) fn write_with(
        &self,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let temp = self.dir.join(format!("{TEMP_PREFIX}{}.tmp", std::process::id()));
        replace(&temp, &self.path(), write)?;
        sync_dir(&self.dir)
    }
}

/// A file of the state, `None` when there is none; an error when it cannot be read or is larger
/// than [`MAX_STATE_BYTES`].
fn read_bounded(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_STATE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_STATE_BYTES {
        return Err(format!("{} is larger than {} MB", path.display(), MAX_STATE_BYTES >> 20));
    }
    Ok(Some(bytes))
}

/// Writes `path` with what `write` writes, atomically: into the private temporary file `temp`,
/// synced, then renamed over `path`. A failed or oversized write leaves `path` as it was.
fn replace(
    temp: &Path,
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let result = (|| {
        let file = private_file(temp)?;
        let mut out = std::io::BufWriter::new(file);
        write(&mut out)?;
        let file = out.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        if file.metadata()?.len() > MAX_STATE_BYTES {
            return Err(std::io::Error::new(
                ErrorKind::InvalidData,
                format!("the state is larger than {} MB; not written", MAX_STATE_BYTES >> 20),
            ));
        }
        file.sync_all()?;
        std::fs::rename(temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(temp);
    }
    result
}

/// Syncs a folder: the renames in it reach the disk with its entries.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Does what the core says on disk for the recall files, in order: each file written whole,
/// readable by its owner alone (its folders created 0700), each removed file's folder removed
/// once empty. Returns the files that could not be written, with why.
pub(crate) fn apply_recall(ops: Vec<RecallOp>) -> Vec<(String, String)> {
    let mut failed = Vec::new();
    for op in ops {
        match op {
            RecallOp::Write { path, text } => {
                let written = (|| {
                    let path = Path::new(&path);
                    if let Some(parent) = path.parent() {
                        create_private_dir(parent)?;
                    }
                    let mut file = private_file(path)?;
                    file.write_all(text.as_bytes())?;
                    file.sync_all()
                })();
                if let Err(e) = written {
                    failed.push((path, e.to_string()));
                }
            }
            RecallOp::Remove { path } => {
                let path = Path::new(&path);
                let _ = std::fs::remove_file(path);
                if let Some(parent) = path.parent() {
                    // Fails while the folder holds other files, as it should.
                    let _ = std::fs::remove_dir(parent);
                }
            }
        }
    }
    failed
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// A new file readable and writable by its owner alone (on unix; elsewhere the directory's
/// permissions apply). An old temporary file of the same name is replaced.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    private_options(true).open(path)
}

/// Options that write a file readable and writable by its owner alone; `replace`: created or
/// truncated.
fn private_options(replace: bool) -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if replace {
        options.create(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("condense-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_state_is_written_whole_and_read_back_and_leftovers_are_removed() {
        let dir = scratch("roundtrip");
        let store = Store::open(&dir.join("nested")).unwrap();
        assert_eq!(store.read(), Ok((None, Vec::new())));
        store.write_with(|out| out.write_all(b"{\"a\":1}")).unwrap();
        store.write_with(|out| out.write_all(b"{\"a\":2}")).unwrap();
        assert_eq!(store.read(), Ok((Some(b"{\"a\":2}".to_vec()), Vec::new())));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir_mode = std::fs::metadata(dir.join("nested")).unwrap().permissions().mode();
            assert_eq!(dir_mode & 0o777, 0o700);
        }
        // A gateway killed mid-write leaves a temporary file: never read, removed at start.
        let leftover = dir.join("nested").join(format!("{TEMP_PREFIX}999.tmp"));
        std::fs::write(&leftover, b"{\"a\":").unwrap();
        let store = Store::open(&dir.join("nested")).unwrap();
        assert!(!leftover.exists());
        assert_eq!(store.read(), Ok((Some(b"{\"a\":2}".to_vec()), Vec::new())));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn session_files_are_written_as_they_change_removed_when_let_go_and_read_back() {
        let dir = scratch("sessions");
        let store = Store::open(&dir).unwrap();
        let file =
            |name: &str, text: &str| SessionFile { name: name.into(), bytes: text.as_bytes().to_vec() };
        let changes = |write: Vec<SessionFile>, remove: &[&str]| StateChanges {
            index: b"{\"version\":3}".to_vec(),
            write,
            remove: remove.iter().map(|n| n.to_string()).collect(),
        };
        let (failed, error) =
            store.write_changes(&changes(vec![file("a.json", "1"), file("b.json", "2")], &[]));
        assert!(failed.is_empty() && error.is_none(), "{failed:?} {error:?}");
        let (failed, error) = store.write_changes(&changes(vec![file("b.json", "3")], &["a.json"]));
        assert!(failed.is_empty() && error.is_none(), "{failed:?} {error:?}");
        // A temporary file a kill left in the sessions' folder: removed at start, never read.
        std::fs::write(dir.join(SESSIONS).join(".b.json.999.tmp"), "half").unwrap();
        let store = Store::open(&dir).unwrap();
        let (index, files) = store.read().unwrap();
        assert_eq!(index.as_deref(), Some(&b"{\"version\":3}"[..]));
        assert_eq!(files, vec![file("b.json", "3")]);
        assert!(!dir.join(SESSIONS).join(".b.json.999.tmp").exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(SESSIONS).join("b.json")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Set aside: moved beside the index, out of the folder read at start.
        let kept = store.set_aside_file("b.json").unwrap();
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "3");
        assert_eq!(store.read().unwrap().1, Vec::new());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_default_directory_is_in_the_users_data_directory() {
        let dir = default_dir().unwrap();
        assert!(dir.ends_with("context-condenser/gateway"), "{}", dir.display());
    }
}
