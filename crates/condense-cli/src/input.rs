//! What every command shares below the entry point: the failure that ends a command, and the
//! input files read within the core's size limit.

use std::io::Read;

use condense_core::formats::{self, Parsed};

/// A failure that ends the command: the exit code and the line for stderr.
pub(crate) struct Failure(pub(crate) u8, pub(crate) String);

pub(crate) fn usage(message: impl Into<String>) -> Failure {
    Failure(2, message.into())
}

pub(crate) fn read_conversation(file: &str) -> Result<Parsed, Failure> {
    let text = read_text(file)?;
    formats::parse_conversation(&text).map_err(|e| usage(format!("{file}: {e}")))
}

/// The largest input file read, in bytes: a bigger one is refused before it is read into memory.
/// The core's limit, which the extension reads too.
pub(crate) const MAX_INPUT_BYTES: u64 = condense_core::limits::MAX_CONVERSATION_BYTES;

/// A whole text file, or stdin for `-`, of at most [`MAX_INPUT_BYTES`].
pub(crate) fn read_text(file: &str) -> Result<String, Failure> {
    let limit = MAX_INPUT_BYTES >> 20;
    let too_big =
        |what: String| usage(format!("{what}: conversation files of more than {limit} MB are refused"));
    let mut bytes = Vec::new();
    if file == "-" {
        std::io::stdin()
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| usage(format!("cannot read stdin: {e}")))?;
        if bytes.len() as u64 > MAX_INPUT_BYTES {
            return Err(too_big(format!("stdin holds more than {limit} MB")));
        }
    } else {
        let size = std::fs::metadata(file).map_err(|e| usage(format!("cannot read {file}: {e}")))?.len();
        if size > MAX_INPUT_BYTES {
            return Err(too_big(format!("{file} is {} MB", size >> 20)));
        }
        bytes = std::fs::read(file).map_err(|e| usage(format!("cannot read {file}: {e}")))?;
    }
    String::from_utf8(bytes).map_err(|e| usage(format!("cannot read {file}: not UTF-8 text ({e})")))
}
