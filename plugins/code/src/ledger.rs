//! The read ledger: read_file records the modification time (and size) of
//! every file it serves; edit_file, and write_file on an existing file,
//! require that record and refuse when the file has changed since — the model
//! can never blind-overwrite the user's edits. It lives in the host's session,
//! so it lasts across the calls of one session.

use iota_toolset::files::FileHead;
use iota_toolset::session::SessionStore;
use std::path::Path;

/// `<path> has not been read in this session — read it with read_file before modifying it`
pub fn not_read(path: &str) -> String {
    format!("{path} has not been read in this session — read it with read_file before modifying it")
}

/// `<path> changed on disk after it was read — read it again before modifying it`
pub fn changed(path: &str) -> String {
    format!("{path} changed on disk after it was read — read it again before modifying it")
}

fn key(path: &Path) -> String {
    format!("read:{}", path.display())
}

/// What the ledger keeps of a file: its modification time and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    modified_ns: u64,
    size: u64,
}

impl Stamp {
    /// The stamp of a version of the call's file (`writes`): the same
    /// `stat`, taken by the host on the file it holds.
    pub fn of_version(version: &iota_toolset::writes::Version) -> Stamp {
        Stamp {
            modified_ns: version.modified_ns,
            size: version.size,
        }
    }

    /// The stamp of the host's `read-head` answer: the same `stat`, taken on
    /// the open file.
    pub fn of_head(head: &FileHead) -> Stamp {
        Stamp {
            modified_ns: head.modified_ns,
            size: head.size,
        }
    }

    fn bytes(self) -> Vec<u8> {
        let mut out = self.modified_ns.to_le_bytes().to_vec();
        out.extend_from_slice(&self.size.to_le_bytes());
        out
    }
}

/// Records that `path` was served (or written) as `stamp` describes it.
pub fn record(session: &dyn SessionStore, path: &Path, stamp: Stamp) {
    session.set(&key(path), &stamp.bytes());
}

/// Checks that `path` was read this session and is unchanged since (`stamp`
/// is what it is now); the error is the text the model reads, naming the path
/// as written.
pub fn check(session: &dyn SessionStore, path: &Path, stamp: Stamp, written: &str) -> Result<(), String> {
    match session.get(&key(path)) {
        None => Err(not_read(written)),
        Some(recorded) if recorded != stamp.bytes() => Err(changed(written)),
        Some(_) => Ok(()),
    }
}
