//! What tells the warm tree of changes: the inotify instance its watches
//! report to and the mount table, in one epoll set. A lookup polls the set
//! outside the tree's lock and leaves what it saw here; the lock holder takes
//! it and reads the events (`watches.rs` decides what they make untrue).

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// What the watches report: a name in a directory appearing, disappearing
/// or changing kind, and the directory itself going or changing mode.
fn watch_mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_ONLYDIR
}

/// What reports changes: the inotify instance, and the mount table.
pub(super) struct Queues {
    /// The watches' queue: `watches.rs` reads its events and removes watches.
    pub(super) inotify: Inotify,
    /// `/proc/self/mountinfo`, for mounts and unmounts: only held open here
    /// (epoll forgets a file when its last descriptor closes) and asked
    /// through `ready`.
    _mounts: std::fs::File,
    /// Both of them in one epoll set. A `poll` of the two asked each file
    /// afresh at every lookup (a warm walk makes one per directory: a
    /// twelfth of its time); the set is told of a change when it is queued,
    /// during the system call that makes it, so waiting on it with no
    /// timeout reads a ready list, and an empty one costs next to nothing.
    ready: Epoll,
    /// What polls saw and no lock holder has applied yet: [`SEEN_MOUNTS`],
    /// [`SEEN_EVENTS`]. Readiness may reach one waiter only: the mount
    /// table tells a change to the first look at it, and some kernels let
    /// an `epoll_wait` with no timeout answer nothing while another thread
    /// scans the same set (a race fixed upstream in 2025). So every poll
    /// leaves what it saw here, and the lock holder takes what every poll
    /// finished or under way saw.
    seen: AtomicU8,
    /// Polls under way: one may have seen something it has not yet left
    /// in `seen`.
    polling: AtomicUsize,
}

/// The mount table changed; also its tag in [`Queues::ready`].
pub(super) const SEEN_MOUNTS: u8 = 1;
/// Inotify events are queued; also the queue's tag in [`Queues::ready`].
pub(super) const SEEN_EVENTS: u8 = 2;

impl Queues {
    /// The queues of a new tree, or `None` where inotify, the mount table
    /// or epoll is unavailable.
    pub(super) fn open() -> Option<Queues> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        let mounts = std::fs::File::open("/proc/self/mountinfo").ok()?;
        Queues::new(inotify, mounts)
    }

    /// The queues, or `None` when epoll refuses them. A mount change between
    /// opening the table and adding it is not told; nothing is kept yet.
    fn new(inotify: Inotify, mounts: std::fs::File) -> Option<Queues> {
        let ready = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).ok()?;
        let tagged = |flags, seen: u8| EpollEvent::new(flags, u64::from(seen));
        ready.add(&mounts, tagged(EpollFlags::EPOLLPRI, SEEN_MOUNTS)).ok()?;
        ready.add(&inotify, tagged(EpollFlags::EPOLLIN, SEEN_EVENTS)).ok()?;
        Some(Queues {
            inotify,
            _mounts: mounts,
            ready,
            seen: AtomicU8::new(0),
            polling: AtomicUsize::new(0),
        })
    }

    /// Looks at what is pending, in one system call, and leaves it in
    /// `seen`: a lookup that finds nothing pending (the common case, once
    /// per directory of a warm walk) makes no other.
    pub(super) fn poll(&self) {
        self.polling.fetch_add(1, Ordering::SeqCst);
        let seen = self.poll_once();
        if seen != 0 {
            self.seen.fetch_or(seen, Ordering::SeqCst);
        }
        self.polling.fetch_sub(1, Ordering::SeqCst);
    }

    /// What every poll finished or under way saw since the last lock holder
    /// asked: asked under the tree's lock, after this worker's own poll.
    /// A poll under way is one system call long, and then waits for the
    /// lock, so the wait ends.
    pub(super) fn take_seen(&self) -> u8 {
        while self.polling.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
        self.seen.swap(0, Ordering::SeqCst)
    }

    /// One look at the ready list: [`SEEN_MOUNTS`] and [`SEEN_EVENTS`] for
    /// what it holds. The table is ready only with a change (it was added
    /// for `EPOLLPRI`, and `EPOLLERR` comes with it).
    fn poll_once(&self) -> u8 {
        let mut ready = [EpollEvent::empty(); 2];
        match self.ready.wait(&mut ready, EpollTimeout::ZERO) {
            Ok(count) => ready[..count.min(ready.len())].iter().fold(0, |seen, event| {
                seen | (event.data() as u8 & (SEEN_MOUNTS | SEEN_EVENTS))
            }),
            // No answer: trust nothing, and read whatever is queued.
            Err(_) => SEEN_MOUNTS | SEEN_EVENTS,
        }
    }

    /// Watches the opened directory `dir` itself, through its descriptor
    /// (not its path, which may name another directory by now).
    pub(super) fn watch(&self, dir: &std::fs::File) -> nix::Result<WatchDescriptor> {
        let through = format!("/proc/self/fd/{}", dir.as_raw_fd());
        self.inotify.add_watch(through.as_str(), watch_mask())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// What a poll saw reaches the lock holder, even when its own poll saw
    /// nothing: the mount table tells a change to one look, and epoll may
    /// answer nothing to one waiter while another scans the set.
    #[test]
    fn what_another_workers_poll_saw_reaches_the_lock_holder() {
        for seen in [SEEN_MOUNTS, SEEN_EVENTS] {
            let inotify = Inotify::init(InitFlags::IN_NONBLOCK).unwrap();
            let queues = Queues::new(inotify, std::fs::File::open("/proc/self/mountinfo").unwrap());
            let queues = Arc::new(queues.unwrap());
            assert_eq!(queues.take_seen(), 0);
            // Another worker inside its poll, which saw something.
            queues.polling.fetch_add(1, Ordering::SeqCst);
            let other = queues.clone();
            let polling = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                other.seen.fetch_or(seen, Ordering::SeqCst);
                other.polling.fetch_sub(1, Ordering::SeqCst);
            });
            queues.poll();
            assert_eq!(queues.take_seen(), seen, "waited for the poll under way");
            polling.join().unwrap();
            assert_eq!(queues.take_seen(), 0, "told once");
        }
    }

    /// A queued inotify event is seen by a poll and read by the holder.
    #[test]
    fn a_queued_event_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK).unwrap();
        inotify.add_watch(tmp.path(), watch_mask()).unwrap();
        let queues = Queues::new(inotify, std::fs::File::open("/proc/self/mountinfo").unwrap()).unwrap();
        queues.poll();
        assert_eq!(queues.take_seen(), 0);
        std::fs::write(tmp.path().join("new"), "").unwrap();
        queues.poll();
        assert_eq!(queues.take_seen(), SEEN_EVENTS);
    }
}
