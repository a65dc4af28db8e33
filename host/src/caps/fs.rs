//! The filesystem capability: WASI preopens of the project root.
//!
//! The root is preopened both at `.` and at its absolute path, so a guest can
//! use the absolute paths it reports to the model. wasmtime's preopen refuses
//! every path that leaves the root — `..`, absolute paths elsewhere, and any
//! symlink whose target is outside (even an absolute one pointing back in) —
//! which is stricter than the spec's lexical jail and is kept deliberately.

use anyhow::{Context as _, Result};
use std::path::Path;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// What a call may do to the project root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsAccess {
    /// No filesystem at all.
    None,
    /// Read-only: readers, previews, toolsets without the write grant.
    ReadOnly,
    /// Read-write: approved calls of writing tools with the write grant.
    ReadWrite,
}

/// Adds the preopens for `access` to `builder`: the root, and `read_dirs`
/// read-only at their absolute paths.
pub fn preopen(
    builder: &mut WasiCtxBuilder,
    root: &Path,
    read_dirs: &[std::path::PathBuf],
    access: FsAccess,
) -> Result<()> {
    let perms = match access {
        FsAccess::None => return Ok(()),
        FsAccess::ReadOnly => FsPerms::ReadOnly,
        FsAccess::ReadWrite => FsPerms::ReadWrite,
    };
    let absolute = root.to_str().context("the project root is not valid UTF-8")?;
    builder
        .preopened_dir(root, ".", perms)
        .and_then(|b| b.preopened_dir(root, absolute, perms))
        .map_err(anyhow::Error::from)
        .with_context(|| format!("cannot open the project root {}", root.display()))?;
    for dir in read_dirs {
        let guest = dir.to_str().context("a readable directory's path is not valid UTF-8")?;
        builder
            .preopened_dir(dir, guest, FsPerms::ReadOnly)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("cannot open {}", dir.display()))?;
    }
    Ok(())
}
