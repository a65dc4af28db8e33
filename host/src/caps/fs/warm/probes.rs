//! What the warm tree asks the filesystem of a directory it opened, before
//! it watches it: which directory it is (device and inode), and whether its
//! filesystem reports every change to a watch ([`reports_every_change`]).

use nix::sys::statfs::{self, FsType};
use std::os::unix::fs::MetadataExt;

/// A directory's device and inode.
pub(in crate::caps::fs) type Identity = (u64, u64);

/// What watching an opened directory needs to know of it, found before the
/// lock is taken.
#[derive(Clone, Copy)]
pub(super) struct Opened {
    /// Its device and inode.
    pub(super) identity: Identity,
    /// On a filesystem whose every change reaches a watch.
    pub(super) local: bool,
}

impl Opened {
    /// The facts of the opened `dir`; `None` when it cannot be `stat`ed.
    pub(super) fn examine(dir: &std::fs::File) -> Option<Opened> {
        Some(Opened {
            identity: identity(dir)?,
            local: reports_every_change(dir),
        })
    }
}

/// `file`'s device and inode.
pub(in crate::caps::fs) fn identity(file: &std::fs::File) -> Option<Identity> {
    file.metadata().ok().map(|m| (m.dev(), m.ino()))
}

/// Whether every change to `dir` reaches its inotify watch: true only for
/// local filesystems, whose changes all pass through this kernel. On NFS,
/// SMB, FUSE and the like another machine or a daemon changes the tree
/// without an event, so a kept listing could go stale silently.
fn reports_every_change(dir: &std::fs::File) -> bool {
    /// ZFS, ramfs and bcachefs, which nix names no constant for.
    const ZFS: FsType = FsType(0x2fc1_2fc1);
    const RAMFS: FsType = FsType(0x8584_58f6);
    const BCACHEFS: FsType = FsType(0xca45_1a4e);
    let Ok(found) = statfs::fstatfs(dir) else {
        return false;
    };
    [
        statfs::EXT4_SUPER_MAGIC, // ext2, ext3 and ext4 share it
        statfs::BTRFS_SUPER_MAGIC,
        statfs::XFS_SUPER_MAGIC,
        statfs::F2FS_SUPER_MAGIC,
        statfs::TMPFS_MAGIC,
        statfs::OVERLAYFS_SUPER_MAGIC,
        ZFS,
        RAMFS,
        BCACHEFS,
    ]
    .contains(&found.filesystem_type())
}
