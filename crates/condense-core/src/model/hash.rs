//! FNV-1a (64 bits), written out: what the core persists or shows by hash — a gateway's session
//! key, a recall id — must be the same across runs, builds and platforms, which std's and
//! foldhash's hashers do not promise.

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 64 bits, continuing from `state` (start with [`fnv1a`]).
pub fn fnv1a_from(mut state: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        state ^= u64::from(b);
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

/// FNV-1a, 64 bits: stable across runs and platforms.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_from(FNV_OFFSET, bytes)
}

/// FNV-1a of what is written to it, and how many bytes: the hash of a value's JSON without the
/// JSON (`serde_json::to_writer`), which for a text of 50 MB would be 50 MB more (and a buffer
/// grown to 100 MB) held only to be hashed.
#[derive(Debug, Clone, Copy)]
pub struct Fnv1aWriter {
    /// The hash so far.
    pub hash: u64,
    /// The bytes written.
    pub len: usize,
}

impl Fnv1aWriter {
    /// A hash continuing from `state` ([`fnv1a`] of what came before, or of nothing).
    pub fn from(state: u64) -> Self {
        Fnv1aWriter { hash: state, len: 0 }
    }

    /// The hash and length of `value`'s compact JSON, as `serde_json::to_vec` writes it,
    /// continuing from `state`.
    pub fn json(state: u64, value: &impl serde::Serialize) -> Self {
        let mut writer = Self::from(state);
        // Writing to this writer never fails, and a `Serialize` of the core's never does.
        let _ = serde_json::to_writer(&mut writer, value);
        writer
    }
}

impl std::io::Write for Fnv1aWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.hash = fnv1a_from(self.hash, bytes);
        self.len += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_hashes_a_value_as_its_json() {
        let value = serde_json::json!({"type": "text", "text": "a \"quoted\"\n line", "n": [1, 2.5, null]});
        let bytes = serde_json::to_vec(&value).unwrap();
        let written = Fnv1aWriter::json(fnv1a(b"role"), &value);
        assert_eq!((written.hash, written.len), (fnv1a_from(fnv1a(b"role"), &bytes), bytes.len()));
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a_from(fnv1a(b"foo"), b"bar"), fnv1a(b"foobar"));
    }
}
