//! The gateway's state as bytes, for the host's state directory: every session held (each of its
//! messages' hash and length, its frozen condensations byte for byte, its figures and the recall
//! files it keeps) and the totals, as versioned JSON. A host keeps it as files
//! ([`Snapshot::files`]): an index with the totals, and one file per session, named by its key's
//! hash, written only when that session changed ([`SavedFiles`]); a bad session file is set aside
//! alone. The whole state as one file, every session inline (the layout of versions 1 and 2), is
//! read too, and a host moving from it writes its sessions as files. A restarted gateway replays
//! the same condensations, so the upstream's cache survives the restart too: a request is matched to its
//! session by the hashes, and the messages' texts come back with it. The bodies themselves are
//! not saved (version 1 saved them: a gateway of twelve 20 MB sessions wrote 250 MB after every
//! request); a version 1 file is still read.
//!
//! Condensations are stored as raw JSON ([`RawValue`]), not as strings: their bytes come back
//! exactly, which the replay depends on. Loading checks everything the store relies on (the version, each
//! condensation's range within its session, in order, apart), so a file cut short by a crash or
//! edited by hand is refused whole, never half read; within a readable file, each session is checked
//! alone, and one that fails is set aside (its JSON handed to the host to keep) while the others
//! load. A file of a newer version is never read.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::decide::{Gateway, GatewayConfig, SessionState};
use super::dialect::{ArrayKind, Dialect};
use super::recall::Kept;
use super::session_key::{SessionKey, fnv1a};
use super::sessions::{Frozen, Original};
use super::stats::SessionStats;

/// The version of the state written; an older file is read (version 1 held the messages' texts,
/// version 2 kept every session in one file), a newer one refused.
pub const STATE_VERSION: u32 = 3;

/// Why a saved state cannot be used at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// Written by a newer gateway: never read, and never to be overwritten (the host refuses to
    /// start on it, or starts without a file, and says how to move it).
    Newer {
        /// The file's version.
        version: u32,
    },
    /// Not a state file this gateway can read (cut short, an older version, not JSON); the
    /// gateway starts afresh.
    Unreadable(String),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::Newer { version } => write!(
                f,
                "the state file is version {version}, written by a newer gateway; this one reads {STATE_VERSION}"
            ),
            StateError::Unreadable(why) => f.write_str(why),
        }
    }
}

/// A saved session that could not be read back, set aside so that the others load: its raw
/// JSON, for the host to keep beside the state file, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    /// Its position among the saved sessions (the inline ones first, then the files).
    pub index: usize,
    /// The session file it was read from, when it was one ([`SessionFile::name`]).
    pub file: Option<String>,
    /// Why it was set aside.
    pub why: String,
    /// Its JSON as saved.
    pub raw: String,
}

/// The file's layout. `S` is a [`SavedSession`] when saving, a session's raw JSON when loading.
/// A session's `R` holds a message's raw JSON: borrowed from the held texts when saving (nothing
/// is copied on the way to the writer), owned when loading.
#[derive(Serialize, Deserialize)]
struct Saved<S> {
    version: u32,
    totals: SessionStats,
    /// Least recently used first, so loading restores the order of eviction. Read back as raw
    /// JSON, each session then on its own.
    sessions: Vec<S>,
}

/// A session as saved. `O` is a message: `(hash, length)` from version 2 on, its raw JSON in
/// version 1.
#[derive(Serialize, Deserialize)]
struct SavedSession<R, O = (u64, usize)> {
    key: SessionKey,
    dialect: Dialect,
    kind: ArrayKind,
    originals: Vec<O>,
    frozen: Vec<SavedFrozen<R>>,
    stats: SessionStats,
    /// The recall files it keeps, oldest first (absent in a file written before them).
    #[serde(default)]
    recall: Vec<Kept>,
}

#[derive(Serialize, Deserialize)]
struct SavedFrozen<R> {
    start: usize,
    end: usize,
    replacement: R,
}

/// Checks a saved session's condensations: non-empty ranges within its messages, in order and
/// apart, each replacing message a JSON object.
fn check<O>(s: &SavedSession<Box<RawValue>, O>) -> Result<(), String> {
    let mut at = 0;
    for f in &s.frozen {
        if f.start < at || f.start >= f.end || f.end > s.originals.len() {
            return Err(format!("session {}: condensation {}..{} is out of place", s.key, f.start, f.end));
        }
        if !f.replacement.get().starts_with('{') {
            return Err(format!("session {}: a condensation's message is not an object", s.key));
        }
        at = f.end;
    }
    Ok(())
}

/// The state to save, taken at one moment without copying a message (the held texts are
/// shared), so that a host writes it, which for large sessions takes a while, without holding
/// the gateway: [`Gateway::snapshot`], then [`Snapshot::write_to`].
#[derive(Debug)]
pub struct Snapshot {
    totals: SessionStats,
    sessions: Vec<SnapshotSession>,
}

#[derive(Debug)]
struct SnapshotSession {
    key: SessionKey,
    dialect: Dialect,
    kind: ArrayKind,
    /// Each message's hash and length.
    originals: Vec<(u64, usize)>,
    frozen: Vec<Frozen>,
    stats: SessionStats,
    recall: Vec<Kept>,
    /// Its turn of use, for the order of eviction.
    used: u64,
}

/// A session saved in a file of its own: the version, its turn of use (restored oldest first),
/// the session.
#[derive(Serialize, Deserialize)]
struct SessionEntry<S> {
    version: u32,
    used: u64,
    session: S,
}

/// The state as a host keeps it: the index (the version and the totals) and one file per
/// session.
#[derive(Debug)]
pub struct StateFiles {
    /// The index's JSON (`state.json`).
    pub index: Vec<u8>,
    /// Every session's file.
    pub sessions: Vec<SessionFile>,
}

/// A session's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFile {
    /// Its name: the FNV-1a of its session's key in hex, `.json` (a key is the client's text;
    /// this name is always a plain file name).
    pub name: String,
    /// Its JSON.
    pub bytes: Vec<u8>,
}

/// What to do on disk to save the state: the index to write, the session files that changed (new
/// ones included), the files of sessions no longer held.
#[derive(Debug)]
pub struct StateChanges {
    /// The index's JSON, written each time (it is small: the totals).
    pub index: Vec<u8>,
    /// The session files to write, whole.
    pub write: Vec<SessionFile>,
    /// The names of the session files to remove.
    pub remove: Vec<String>,
}

/// What a host last wrote of each session's file (its hash), so that a save writes only the
/// sessions that changed and removes those the gateway let go.
#[derive(Debug, Default, Clone)]
pub struct SavedFiles {
    written: std::collections::HashMap<String, u64>,
}

impl SavedFiles {
    /// The session files read at start that the gateway goes on from ([`Gateway::load_files`]):
    /// those it set aside are the host's to keep, never the gateway's to write over or remove.
    /// Unchanged sessions are not written again. (A state refused whole leaves the gateway none:
    /// [`SavedFiles::default`].)
    pub fn loaded(files: &[SessionFile], set_aside: &[SetAside]) -> SavedFiles {
        let aside: std::collections::HashSet<&str> =
            set_aside.iter().filter_map(|s| s.file.as_deref()).collect();
        let written = files
            .iter()
            .filter(|f| !aside.contains(f.name.as_str()))
            .map(|f| (f.name.clone(), fnv1a(&f.bytes)));
        SavedFiles { written: written.collect() }
    }

    /// What to write and remove to save `files`, taken as done: a host whose write of a file
    /// failed says so ([`SavedFiles::unsaved`]).
    pub fn changes(&mut self, files: StateFiles) -> StateChanges {
        let mut held = std::collections::HashSet::new();
        let mut write = Vec::new();
        for file in files.sessions {
            let hash = fnv1a(&file.bytes);
            held.insert(file.name.clone());
            if self.written.get(&file.name) != Some(&hash) {
                self.written.insert(file.name.clone(), hash);
                write.push(file);
            }
        }
        let mut remove: Vec<String> =
            self.written.keys().filter(|name| !held.contains(*name)).cloned().collect();
        remove.sort();
        for name in &remove {
            self.written.remove(name);
        }
        StateChanges { index: files.index, write, remove }
    }

    /// The file `name` could not be written (or removed): the next save does it again.
    pub fn unsaved(&mut self, name: &str) {
        self.written.insert(name.to_owned(), 0);
    }
}

/// The file name of a session: its key's hash.
pub fn session_file_name(key: &SessionKey) -> String {
    format!("{:016x}.json", fnv1a(key.to_string().as_bytes()))
}

impl Snapshot {
    /// The state as files: the index, and each session's file.
    pub fn files(&self) -> StateFiles {
        let index = Saved::<SavedSession<&RawValue>> {
            version: STATE_VERSION,
            totals: self.totals.clone(),
            sessions: Vec::new(),
        };
        let sessions = self
            .sessions
            .iter()
            .filter_map(|s| {
                let entry = SessionEntry { version: STATE_VERSION, used: s.used, session: saved_session(s)? };
                Some(SessionFile { name: session_file_name(&s.key), bytes: serde_json::to_vec(&entry).ok()? })
            })
            .collect();
        StateFiles { index: serde_json::to_vec(&index).unwrap_or_default(), sessions }
    }

    /// The state written as one JSON file to `out`, every session inline: the layout version 2
    /// wrote, which is still read (the tests write it; hosts write [`Snapshot::files`]).
    #[cfg(test)]
    pub(crate) fn write_to(&self, out: impl std::io::Write) -> Result<(), serde_json::Error> {
        let sessions = self.sessions.iter().filter_map(saved_session).collect();
        let saved = Saved { version: STATE_VERSION, totals: self.totals.clone(), sessions };
        serde_json::to_writer(out, &saved)
    }
}

/// A session as saved, its condensations borrowed. Every text was read from a request as JSON; a
/// session with a text that is not is left out rather than written as a file that cannot be read
/// back.
fn saved_session(s: &SnapshotSession) -> Option<SavedSession<&RawValue>> {
    let frozen = s
        .frozen
        .iter()
        .map(|f| {
            let replacement = serde_json::from_str::<&RawValue>(&f.replacement).ok()?;
            Some(SavedFrozen { start: f.range.start, end: f.range.end, replacement })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(SavedSession {
        key: s.key.clone(),
        dialect: s.dialect,
        kind: s.kind,
        originals: s.originals.clone(),
        frozen,
        stats: s.stats.clone(),
        recall: s.recall.clone(),
    })
}

impl Gateway {
    /// The state as one file's JSON bytes, every session inline ([`Snapshot::write_to`]).
    #[cfg(test)]
    pub(crate) fn save(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.save_to(&mut out).map(|()| out).unwrap_or_default()
    }

    /// The state written as JSON to `out` (a file, for a host), the messages' texts borrowed
    /// rather than copied: a save holds no second copy of the sessions.
    #[cfg(test)]
    pub(crate) fn save_to(&self, out: impl std::io::Write) -> Result<(), serde_json::Error> {
        self.snapshot().write_to(out)
    }

    /// The state to save, as it is now (see [`Snapshot`]): the sessions least recently used
    /// first, their texts shared rather than copied.
    pub fn snapshot(&self) -> Snapshot {
        let sessions = self
            .sessions
            .by_age()
            .into_iter()
            .map(|(key, s)| {
                let state = self.states.get(&key.to_string());
                SnapshotSession {
                    key: key.clone(),
                    dialect: s.dialect,
                    kind: s.kind,
                    originals: s.originals.iter().map(|o| (o.hash, o.len)).collect(),
                    frozen: s.frozen.clone(),
                    stats: state.map(|st| st.stats.clone()).unwrap_or_default(),
                    recall: state.map(|st| st.recall.clone()).unwrap_or_default(),
                    used: s.last_used,
                }
            })
            .collect();
        Snapshot { totals: self.totals.clone(), sessions }
    }

    /// A gateway with the state `Gateway::save` wrote, and the sessions of it that could not be
    /// read back (each checked alone: one bad session is set aside, the others load). A file of a
    /// newer version, or one that is not a state file at all, is an error; nothing of it is used.
    #[cfg(test)]
    pub(crate) fn load(config: GatewayConfig, bytes: &[u8]) -> Result<(Gateway, Vec<SetAside>), StateError> {
        Gateway::load_files(config, Some(bytes), &[])
    }

    /// A gateway with the state a host kept as files ([`Snapshot::files`]): the index, if any
    /// (or a whole state of one file, whose sessions are inline), and the session files. A
    /// session that cannot be read is set aside (named by its file, when it had one) and the
    /// others load; an index or a session file of a newer version refuses the whole state.
    pub fn load_files(
        config: GatewayConfig,
        index: Option<&[u8]>,
        files: &[SessionFile],
    ) -> Result<(Gateway, Vec<SetAside>), StateError> {
        let mut gateway = Gateway::new(config).map_err(StateError::Unreadable)?;
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let version_of = |bytes: &[u8], what: &str| -> Result<u32, StateError> {
            let version: Version = serde_json::from_slice(bytes)
                .map_err(|e| StateError::Unreadable(format!("{what} is not readable: {e}")))?;
            if version.version > STATE_VERSION {
                return Err(StateError::Newer { version: version.version });
            }
            Ok(version.version)
        };
        // A newer session file refuses the state before anything of it is used.
        for file in files {
            if let Err(StateError::Newer { version }) = version_of(&file.bytes, &file.name) {
                return Err(StateError::Newer { version });
            }
        }
        let mut read: Vec<ReadSession> = Vec::new();
        let mut set_aside = Vec::new();
        let mut index_at = 0;
        if let Some(bytes) = index {
            let saved = version_of(bytes, "the state file").and_then(|version| {
                if version == 0 {
                    return Err(StateError::Unreadable(format!(
                        "the state file is version {version}; this gateway reads 1 to {STATE_VERSION}"
                    )));
                }
                let saved: Saved<Box<RawValue>> = serde_json::from_slice(bytes)
                    .map_err(|e| StateError::Unreadable(format!("the state file is not readable: {e}")))?;
                Ok((version, saved))
            });
            match saved {
                Ok((version, saved)) => {
                    gateway.totals = saved.totals;
                    for raw in saved.sessions {
                        let index = index_at;
                        index_at += 1;
                        match read_session(version, raw.get())
                            .map_err(|e| format!("session {index} is not readable: {e}"))
                            .and_then(|s| check(&s).map(|()| s))
                        {
                            Ok(s) => read.push((None, index, None, raw.get().into(), s)),
                            Err(why) => {
                                set_aside.push(SetAside { index, file: None, why, raw: raw.get().into() })
                            }
                        }
                    }
                }
                // An index that cannot be read, beside session files: it held only the totals,
                // which start again; it is set aside and the sessions load.
                Err(StateError::Unreadable(why)) if !files.is_empty() => {
                    let raw = String::from_utf8_lossy(bytes).into_owned();
                    set_aside.push(SetAside { index: index_at, file: None, why, raw });
                    index_at += 1;
                }
                Err(e) => return Err(e),
            }
        }
        for file in files {
            let index = index_at;
            index_at += 1;
            let raw = String::from_utf8_lossy(&file.bytes).into_owned();
            let entry = serde_json::from_slice::<SessionEntry<SavedSession<Box<RawValue>>>>(&file.bytes)
                .map_err(|e| format!("{} is not readable: {e}", file.name))
                .and_then(|e| check(&e.session).map(|()| e));
            match entry {
                Ok(e) => read.push((Some(e.used), index, Some(file.name.clone()), raw, e.session)),
                Err(why) => set_aside.push(SetAside { index, file: Some(file.name.clone()), why, raw }),
            }
        }
        // Oldest first: the inline sessions in their order (no turn saved), then the files by
        // their turn.
        read.sort_by_key(|(used, index, ..)| (*used, *index));
        for (used, index, file, raw, s) in read {
            if gateway.sessions.messages(&s.key).is_some() {
                set_aside.push(SetAside {
                    index,
                    file,
                    why: format!("session {} is saved twice", s.key),
                    raw,
                });
                continue;
            }
            let originals = s.originals.iter().map(|&(hash, len)| Original::hollow(hash, len)).collect();
            let frozen = s
                .frozen
                .iter()
                .map(|f| Frozen { range: f.start..f.end, replacement: f.replacement.get().into() })
                .collect();
            gateway.sessions.restore(s.key.clone(), s.dialect, s.kind, originals, frozen, used);
            let mut state = SessionState::new(s.key, s.stats);
            state.recall = s.recall;
            gateway.states.insert(state.key.to_string(), state);
        }
        set_aside.sort_by_key(|s| s.index);
        let sessions = &gateway.sessions;
        gateway.states.retain(|_, s| sessions.messages(&s.key).is_some());
        Ok((gateway, set_aside))
    }
}

/// A session read from the state: its turn of use (saved in a session's file), its position and
/// file, its JSON as saved, the session.
type ReadSession = (Option<u64>, usize, Option<String>, String, SavedSession<Box<RawValue>>);

/// A saved session of a file of `version`: from version 1, which held each message's JSON, its
/// messages' hashes and lengths.
fn read_session(version: u32, raw: &str) -> Result<SavedSession<Box<RawValue>>, serde_json::Error> {
    if version >= 2 {
        return serde_json::from_str(raw);
    }
    let s: SavedSession<Box<RawValue>, Box<RawValue>> = serde_json::from_str(raw)?;
    Ok(SavedSession {
        originals: s.originals.iter().map(|o| (fnv1a(o.get().as_bytes()), o.get().len())).collect(),
        key: s.key,
        dialect: s.dialect,
        kind: s.kind,
        frozen: s.frozen,
        stats: s.stats,
        recall: s.recall,
    })
}
