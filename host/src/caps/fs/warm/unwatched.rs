//! The warm tree where no kernel watches directories for the host
//! (everything but Linux): nothing is kept, every listing is read afresh,
//! and what searches learn of file contents stays empty
//! (`contents::Version::learnable` is false there). The same interface as
//! the watched tree, so `caps/fs.rs` does not know which it has.

use super::contents::KnownContents;
use super::{Entry, FilesRoot, WarmStats};
use std::path::Path;
use std::sync::Arc;

/// Entries the tree keeps at most: none here; the same bound as Linux's
/// is reported so the limits are stated once.
pub const MAX_ENTRIES: usize = 250_000;

/// One session's kept listings: none.
#[derive(Default)]
pub struct WarmTree {
    contents: KnownContents,
}

impl std::fmt::Debug for WarmTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WarmTree(unwatched)")
    }
}

/// Which directory a root is: nothing to compare where nothing is kept.
pub(in crate::caps::fs) type Identity = ();

/// Opens a directory of the root a listing is asked in.
pub(in crate::caps::fs) type OpenAbove<'a> = dyn Fn(&Path) -> Result<super::Listable, String> + 'a;

/// The identity of an opened root.
pub(in crate::caps::fs) fn identity(_file: &std::fs::File) -> Option<Identity> {
    Some(())
}

impl WarmTree {
    /// The listing of `dir`, read now.
    pub fn list(
        &self,
        _root: &FilesRoot,
        _dir: &Path,
        open: impl FnOnce() -> Result<super::Listable, String>,
        read: impl FnOnce(super::Listable) -> Result<Vec<Entry>, String>,
        _open_above: Option<&OpenAbove>,
    ) -> Result<Arc<Vec<Entry>>, String> {
        read(open()?).map(Arc::new)
    }

    /// Which of `dirs` have a kept listing: none.
    pub fn kept(&self, dirs: &[Option<(&FilesRoot, &Path)>]) -> Vec<bool> {
        vec![false; dirs.len()]
    }

    /// What the session knows of its files' contents.
    pub fn contents(&self) -> &KnownContents {
        &self.contents
    }

    /// What the tree holds and has served.
    pub fn stats(&self) -> WarmStats {
        let (known_files, unread_files) = self.contents.stats();
        WarmStats {
            kept_dirs: 0,
            hits: 0,
            known_files,
            unread_files,
        }
    }

    /// Forgets every listing: there are none.
    pub fn clear(&self) {}
}
