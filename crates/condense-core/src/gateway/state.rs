//! The gateway's state as bytes, for the host's state directory: every session held (each of its
//! messages' hash and length, its frozen condensations byte for byte, its figures and the recall
//! files it keeps) and the totals, as versioned JSON. A restarted gateway replays the same
//! condensations, so the upstream's cache survives the restart too: a request is matched to its
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

/// The version of the state written; an older file is read (version 1 held the messages' texts),
/// a newer one refused.
pub const STATE_VERSION: u32 = 2;

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
    /// Its position among the saved sessions.
    pub index: usize,
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
}

impl Snapshot {
    /// The state written as JSON to `out` (see the module docs).
    pub fn write_to(&self, out: impl std::io::Write) -> Result<(), serde_json::Error> {
        let sessions = self
            .sessions
            .iter()
            .filter_map(|s| {
                // Every text was read from a request as JSON; a text that is not is left out
                // rather than written as a file that cannot be read back.
                let raw = |t| serde_json::from_str::<&RawValue>(t).ok();
                let frozen = s
                    .frozen
                    .iter()
                    .map(|f| {
                        let replacement = raw(&f.replacement)?;
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
            })
            .collect();
        let saved = Saved { version: STATE_VERSION, totals: self.totals.clone(), sessions };
        serde_json::to_writer(out, &saved)
    }
}

impl Gateway {
    /// The state as JSON bytes (see the module docs).
    pub fn save(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.save_to(&mut out).map(|()| out).unwrap_or_default()
    }

    /// The state written as JSON to `out` (a file, for a host), the messages' texts borrowed
    /// rather than copied: a save holds no second copy of the sessions.
    pub fn save_to(&self, out: impl std::io::Write) -> Result<(), serde_json::Error> {
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
                }
            })
            .collect();
        Snapshot { totals: self.totals.clone(), sessions }
    }

    /// A gateway with the state [`Gateway::save`] wrote, and the sessions of it that could not be
    /// read back (each checked alone: one bad session is set aside, the others load). A file of a
    /// newer version, or one that is not a state file at all, is an error; nothing of it is used.
    pub fn load(config: GatewayConfig, bytes: &[u8]) -> Result<(Gateway, Vec<SetAside>), StateError> {
        let mut gateway = Gateway::new(config).map_err(StateError::Unreadable)?;
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let unreadable =
            |e: serde_json::Error| StateError::Unreadable(format!("the state file is not readable: {e}"));
        let version: Version = serde_json::from_slice(bytes).map_err(unreadable)?;
        if version.version > STATE_VERSION {
            return Err(StateError::Newer { version: version.version });
        }
        if version.version == 0 {
            return Err(StateError::Unreadable(format!(
                "the state file is version {}; this gateway reads 1 to {STATE_VERSION}",
                version.version
            )));
        }
        let saved: Saved<Box<RawValue>> = serde_json::from_slice(bytes).map_err(unreadable)?;
        let mut set_aside = Vec::new();
        gateway.totals = saved.totals;
        for (index, raw) in saved.sessions.into_iter().enumerate() {
            let read = read_session(version.version, raw.get())
                .map_err(|e| format!("session {index} is not readable: {e}"))
                .and_then(|s| check(&s).map(|()| s));
            let s = match read {
                Ok(s) if gateway.sessions.messages(&s.key).is_none() => s,
                Ok(s) => {
                    set_aside.push(SetAside {
                        index,
                        why: format!("session {} is saved twice", s.key),
                        raw: raw.get().into(),
                    });
                    continue;
                }
                Err(why) => {
                    set_aside.push(SetAside { index, why, raw: raw.get().into() });
                    continue;
                }
            };
            let originals = s.originals.iter().map(|&(hash, len)| Original::hollow(hash, len)).collect();
            let frozen = s
                .frozen
                .iter()
                .map(|f| Frozen { range: f.start..f.end, replacement: f.replacement.get().into() })
                .collect();
            gateway.sessions.restore(s.key.clone(), s.dialect, s.kind, originals, frozen);
            let mut state = SessionState::new(s.key, s.stats);
            state.recall = s.recall;
            gateway.states.insert(state.key.to_string(), state);
        }
        let sessions = &gateway.sessions;
        gateway.states.retain(|_, s| sessions.messages(&s.key).is_some());
        Ok((gateway, set_aside))
    }
}

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
