//! The read ledger: read_file records the modification time (and size) of
//! every file it serves; edit_file, and write_file on an existing file,
//! require that record and refuse when the file has changed since — the model
//! can never blind-overwrite the user's edits. It lives in the host's session,
//! so it lasts across the calls of one session.

use iota_toolset::session::SessionStore;
use std::fs::Metadata;
use std::path::Path;
use std::time::UNIX_EPOCH;

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

/// What the ledger keeps of a file: modification time in nanoseconds and size.
fn stamp(meta: &Metadata) -> Vec<u8> {
    let nanos = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut out = nanos.to_le_bytes().to_vec();
    out.extend_from_slice(&meta.len().to_le_bytes());
    out
}

/// Records that `path` was served (or written) as it is per `meta`.
pub fn record(session: &dyn SessionStore, path: &Path, meta: &Metadata) {
    session.set(&key(path), &stamp(meta));
}

/// Checks that `path` was read this session and is unchanged since; the
/// error is the text the model reads, naming the path as written.
pub fn check(session: &dyn SessionStore, path: &Path, meta: &Metadata, written: &str) -> Result<(), String> {
    match session.get(&key(path)) {
        None => Err(not_read(written)),
        Some(recorded) if recorded != stamp(meta) => Err(changed(written)),
        Some(_) => Ok(()),
    }
}
