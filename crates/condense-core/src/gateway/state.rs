//! The gateway's state as bytes, for the host's state directory: every session held (its
//! original messages and frozen condensations, byte for byte, its figures and the recall files it
//! keeps) and the totals, as versioned JSON. A restarted gateway replays the same condensations,
//! so the upstream's cache survives the restart too.
//!
//! Messages are stored as raw JSON ([`RawValue`]), not as strings: their bytes come back exactly,
//! which the replay depends on. Loading checks everything the store relies on (the version, each
//! condensation's range within its session, in order, apart), so a file cut short by a crash or
//! edited by hand is refused whole, never half read.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::decide::{Gateway, GatewayConfig, SessionState};
use super::dialect::{ArrayKind, Dialect};
use super::recall::Kept;
use super::session_key::SessionKey;
use super::sessions::Frozen;
use super::stats::SessionStats;

/// The version of the state written; a file of another version is refused.
pub const STATE_VERSION: u32 = 1;

/// The file's layout. `R` holds a message's raw JSON: borrowed from the held texts when saving
/// (nothing is copied on the way to the writer), owned when loading.
#[derive(Serialize, Deserialize)]
struct Saved<R> {
    version: u32,
    totals: SessionStats,
    /// Least recently used first, so loading restores the order of eviction.
    sessions: Vec<SavedSession<R>>,
}

#[derive(Serialize, Deserialize)]
struct SavedSession<R> {
    key: SessionKey,
    dialect: Dialect,
    kind: ArrayKind,
    originals: Vec<R>,
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
fn check(s: &SavedSession<Box<RawValue>>) -> Result<(), String> {
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

impl Gateway {
    /// The state as JSON bytes (see the module docs).
    pub fn save(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.save_to(&mut out).map(|()| out).unwrap_or_default()
    }

    /// The state written as JSON to `out` (a file, for a host), the messages' texts borrowed
    /// rather than copied: a save holds no second copy of the sessions.
    pub fn save_to(&self, out: impl std::io::Write) -> Result<(), serde_json::Error> {
        let sessions = self
            .sessions
            .by_age()
            .into_iter()
            .filter_map(|(key, s)| {
                // Every text was read from a request as JSON; a text that is not is left out
                // rather than written as a file that cannot be read back.
                let raw = |t| serde_json::from_str::<&RawValue>(t).ok();
                let originals = s.originals.iter().map(|o| raw(&o.text)).collect::<Option<Vec<_>>>()?;
                let frozen = s
                    .frozen
                    .iter()
                    .map(|f| {
                        let replacement = raw(&f.replacement)?;
                        Some(SavedFrozen { start: f.range.start, end: f.range.end, replacement })
                    })
                    .collect::<Option<Vec<_>>>()?;
                let state = self.states.get(&key.to_string());
                let stats = state.map(|st| st.stats.clone()).unwrap_or_default();
                let recall = state.map(|st| st.recall.clone()).unwrap_or_default();
                Some(SavedSession {
                    key: key.clone(),
                    dialect: s.dialect,
                    kind: s.kind,
                    originals,
                    frozen,
                    stats,
                    recall,
                })
            })
            .collect();
        let saved = Saved { version: STATE_VERSION, totals: self.totals.clone(), sessions };
        serde_json::to_writer(out, &saved)
    }

    /// A gateway with the state [`Gateway::save`] wrote. A file of another version, cut short or
    /// inconsistent is an error; nothing of it is used.
    pub fn load(config: GatewayConfig, bytes: &[u8]) -> Result<Gateway, String> {
        let mut gateway = Gateway::new(config)?;
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let version: Version =
            serde_json::from_slice(bytes).map_err(|e| format!("the state file is not readable: {e}"))?;
        if version.version != STATE_VERSION {
            return Err(format!(
                "the state file is version {}; this gateway reads {STATE_VERSION}",
                version.version
            ));
        }
        let saved: Saved<Box<RawValue>> =
            serde_json::from_slice(bytes).map_err(|e| format!("the state file is not readable: {e}"))?;
        for s in &saved.sessions {
            check(s)?;
        }
        gateway.totals = saved.totals;
        for s in saved.sessions {
            let originals = s.originals.iter().map(|o| o.get().into()).collect();
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
        Ok(gateway)
    }
}
