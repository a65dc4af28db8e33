//! The session-warm tree (`host/src/caps/fs/warm.rs`): a session's grep and
//! glob answer from the directory listings it already read, kept true by
//! inotify, and grep skips the files its content filters rule out
//! (`host/src/caps/fs/contents.rs`), checked against each file's `stat`.
//! Every warm answer is compared with a fresh session's (which reads the
//! tree anew) after each kind of change, made between calls and while calls
//! run; no answer ever names anything outside the root.

use crate::support::{self, LibraryHost, Project};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// A name only files outside the root carry: it must never appear.
const OUTSIDE: &str = "OUTSIDE_ONLY";

/// The searches compared: the whole tree, one extension, below a
/// subdirectory, a literal, a case-folded literal, a regex.
fn queries() -> Vec<(&'static str, Value)> {
    vec![
        ("glob", json!({"pattern": "**/*"})),
        ("glob", json!({"pattern": "**/*.rs"})),
        ("glob", json!({"pattern": "**/*", "path": "deep"})),
        ("glob", json!({"pattern": "*", "path": "deep/x/y"})),
        ("glob", json!({"pattern": "**/*", "path": "link"})),
        ("grep", json!({"pattern": "needle"})),
        ("grep", json!({"pattern": "(?i)NEEDLE", "include": "*.rs"})),
        ("grep", json!({"pattern": "nee+dle|OUTSIDE", "path": "deep"})),
    ]
}

fn answers(host: &LibraryHost) -> Vec<String> {
    answers_to(host, queries())
}

fn answers_to(host: &LibraryHost, queries: Vec<(&str, Value)>) -> Vec<String> {
    queries
        .into_iter()
        .map(|(tool, args)| {
            let r = host.call(tool, args.clone());
            format!("{tool} {args}: {}{}", if r.is_error { "error: " } else { "" }, r.text)
        })
        .collect()
}

/// The warm session answers exactly what a fresh one does, and neither
/// names anything outside.
fn assert_true(p: &Project, warm: &LibraryHost, after: &str) {
    assert_true_to(p, warm, after, queries);
}

/// [`assert_true`] for other queries.
fn assert_true_to(p: &Project, warm: &LibraryHost, after: &str, queries: fn() -> Vec<(&'static str, Value)>) {
    let (warm, fresh) = (answers_to(warm, queries()), answers_to(&LibraryHost::new(p), queries()));
    for (w, f) in warm.iter().zip(&fresh) {
        assert_eq!(w, f, "after {after}: the warm answer differs from a fresh walk's");
        assert!(!w.contains(OUTSIDE), "after {after}: {w}");
    }
}

/// A project on the checkout's own filesystem (`target/tmp`), not `/tmp`:
/// content filters are learned only on ext4 and XFS (`Version::learnable`),
/// and `/tmp` is often a tmpfs.
fn project() -> Project {
    let p = Project::new_in(Path::new(env!("CARGO_TARGET_TMPDIR")))
        .config("agents:\n  default:\n    tools:\n      code:\n        auto_write: true\n      shell:\n");
    p.write(".gitignore", "ignored/\n");
    p.write("src/a.rs", "fn a() { needle }\n");
    p.write("src/sub/b.rs", "fn b() { NEEDLE }\n");
    p.write("docs/c.md", "a needle in docs\n");
    p.write("deep/x/y/z/d.rs", "needle deep down\n");
    p.write("deep/x/y/e.txt", "neeedle\n");
    p.write("ignored/f.rs", "needle ignored\n");
    // A symlink inside the root to a directory the walk never enters: a
    // search may start there.
    p.write("ignored/deeper/k.rs", "needle behind a link\n");
    symlink(Path::new("ignored/deeper"), &p.path("link"));
    std::fs::create_dir_all(p.outside().join(OUTSIDE)).unwrap();
    std::fs::write(p.outside().join(format!("{OUTSIDE}/{OUTSIDE}.rs")), "needle OUTSIDE\n").unwrap();
    std::fs::write(p.outside().join(format!("{OUTSIDE}.rs")), "needle OUTSIDE\n").unwrap();
    p
}

fn symlink(target: &Path, at: &Path) {
    std::os::unix::fs::symlink(target, at).unwrap();
}

/// Waits until the files written so far may be learned: a file's content
/// is learned only once its change time is five seconds old. Whether
/// `p`'s files may be learned at all: a test of what the filters do
/// cannot pass without them (`support::require`).
fn settle(p: &Project) -> bool {
    use nix::sys::statfs::{EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC, statfs};
    let kind = statfs(p.root()).unwrap().filesystem_type();
    std::thread::sleep(std::time::Duration::from_millis(5500));
    support::require(
        &format!(
            "a filesystem content filters learn on (ext4, XFS) at {}",
            p.root().display()
        ),
        [EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC].contains(&kind),
    )
}

/// One change made to the tree between two rounds of queries.
type Change<'a> = Box<dyn Fn() + 'a>;

#[test]
fn warm_answers_equal_a_fresh_walk_after_every_kind_of_change() {
    let p = project();
    // Every file is learned by the second round: each change below meets
    // the content filters too.
    let learnable = settle(&p);
    let warm = LibraryHost::new(&p);
    assert_true(&p, &warm, "nothing");
    let first = warm.warm_tree();
    assert!(first.kept_dirs >= 8, "the walk's listings are kept: {first:?}");
    assert_true(&p, &warm, "nothing, again");
    let again = warm.warm_tree();
    assert!(
        again.hits > first.hits,
        "the second round answers from the tree: {again:?}"
    );

    let root = p.root().to_path_buf();
    let changes: Vec<(&str, Change)> = vec![
        (
            "creating a file",
            Box::new(|| drop(p.write("src/new.rs", "needle new\n"))),
        ),
        (
            "deleting a file",
            Box::new(|| std::fs::remove_file(p.path("src/a.rs")).unwrap()),
        ),
        (
            "renaming a file",
            Box::new(|| std::fs::rename(p.path("docs/c.md"), p.path("docs/c.rs")).unwrap()),
        ),
        (
            "renaming a directory and making another at its name",
            Box::new(|| {
                std::fs::rename(p.path("deep/x"), p.path("deep/w")).unwrap();
                p.write("deep/x/y/other.rs", "needle other\n");
            }),
        ),
        (
            "moving a link's target away and making another at its name",
            Box::new(|| {
                std::fs::rename(p.path("ignored"), p.path("ignored-old")).unwrap();
                p.write("ignored/deeper/other.rs", "needle other\n");
            }),
        ),
        (
            "renaming it back",
            Box::new(|| {
                std::fs::remove_dir_all(p.path("deep/x")).unwrap();
                std::fs::rename(p.path("deep/w"), p.path("deep/x")).unwrap();
            }),
        ),
        (
            "creating a directory tree",
            Box::new(|| drop(p.write("made/one/two/g.rs", "needle made\n"))),
        ),
        (
            "deleting a directory tree",
            Box::new(|| std::fs::remove_dir_all(p.path("made")).unwrap()),
        ),
        (
            "touching a file",
            Box::new(|| support::set_mtime(&p.path("src/sub/b.rs"), 4_000_000_000)),
        ),
        (
            "changing a file's content",
            Box::new(|| drop(p.write("docs/c.rs", "no longer\n"))),
        ),
        (
            "making a directory unreadable",
            Box::new(|| chmod(&p.path("deep/x/y/z"), 0o000)),
        ),
        (
            "making it readable again",
            Box::new(|| chmod(&p.path("deep/x/y/z"), 0o755)),
        ),
        (
            "editing .gitignore",
            Box::new(|| drop(p.write(".gitignore", "ignored/\nsrc/sub/\n"))),
        ),
        (
            "swapping a file for a symlink out of the root",
            Box::new(|| {
                std::fs::remove_file(p.path("src/new.rs")).unwrap();
                symlink(&p.outside().join(format!("{OUTSIDE}.rs")), &p.path("src/new.rs"));
            }),
        ),
        (
            "swapping a listed directory for a symlink out of the root",
            Box::new(|| {
                std::fs::rename(p.path("deep/x/y"), p.path("moved-y")).unwrap();
                symlink(&p.outside().join(OUTSIDE), &p.path("deep/x/y"));
            }),
        ),
        (
            "swapping an ancestor for a symlink to a copy outside",
            Box::new(|| {
                let copy = p.outside().join("x");
                std::fs::create_dir_all(copy.join("y")).unwrap();
                std::fs::write(copy.join(format!("y/{OUTSIDE}.rs")), "needle OUTSIDE\n").unwrap();
                std::fs::remove_file(p.path("deep/x/y")).unwrap();
                std::fs::rename(p.path("deep/x"), p.path("deep-x-real")).unwrap();
                symlink(&copy, &p.path("deep/x"));
            }),
        ),
        (
            "a relative symlink inside the root in its place",
            Box::new(|| {
                std::fs::remove_file(p.path("deep/x")).unwrap();
                symlink(Path::new("../deep-x-real"), &p.path("deep/x"));
            }),
        ),
        (
            "the real directory back",
            Box::new(|| {
                std::fs::remove_file(p.path("deep/x")).unwrap();
                std::fs::rename(p.path("deep-x-real"), p.path("deep/x")).unwrap();
                std::fs::rename(p.path("moved-y"), p.path("deep/x/y")).unwrap();
            }),
        ),
        (
            "replacing the root's contents wholesale",
            Box::new(|| {
                std::fs::rename(p.path("deep"), root.join("old-deep")).unwrap();
                p.write("deep/x/y/h.rs", "needle replaced\n");
            }),
        ),
    ];
    for (change, make) in &changes {
        // Every directory the queries list is warm when the change comes.
        answers(&warm);
        make();
        assert_true(&p, &warm, change);
    }
    let last = warm.warm_tree();
    assert!(last.hits > again.hits);
    assert!(!learnable || last.unread_files > again.unread_files, "{last:?}");
}

/// Searches that all start below the root, none inside another's tree:
/// only listing their starts' parents keeps them.
fn queries_below() -> Vec<(&'static str, Value)> {
    vec![
        ("grep", json!({"pattern": "needle|OUTSIDE", "path": "deep/x"})),
        ("glob", json!({"pattern": "**/*", "path": "src/sub"})),
        ("grep", json!({"pattern": "needle|OUTSIDE", "path": "link"})),
    ]
}

/// A session whose searches never start at the root keeps their trees from
/// its second round, and stays true through changes above their starts,
/// where its only watches are the ones listing the parents added.
#[test]
fn searches_below_the_root_are_kept_and_stay_true() {
    let p = project();
    let warm = LibraryHost::new(&p);
    assert_true_to(&p, &warm, "nothing", queries_below);
    assert_eq!(warm.warm_tree().kept_dirs, 0, "a first round keeps nothing");
    answers_to(&warm, queries_below());
    // The root, deep, deep/x, deep/x/y, deep/x/y/z, src and src/sub; not
    // link, a symlink.
    assert_eq!(warm.warm_tree().kept_dirs, 7, "the second round keeps them");

    // Each change; the directories kept before it, after the last one; and
    // how many of them the searches list.
    let changes: Vec<(&str, usize, u64, Change)> = vec![
        (
            "renaming an ancestor and making another at its name",
            7,
            4,
            Box::new(|| {
                std::fs::rename(p.path("deep"), p.path("deep-old")).unwrap();
                p.write("deep/x/y/other.rs", "needle other\n");
            }),
        ),
        (
            "swapping an ancestor for a symlink to a directory inside the root",
            6,
            3,
            Box::new(|| {
                std::fs::rename(p.path("deep"), p.path("deep-new")).unwrap();
                symlink(Path::new("deep-old"), &p.path("deep"));
            }),
        ),
        (
            "swapping an ancestor for a symlink out of the root",
            3,
            1,
            Box::new(|| {
                let copy = p.outside().join("below");
                std::fs::create_dir_all(copy.join("x/y")).unwrap();
                std::fs::write(copy.join(format!("x/y/{OUTSIDE}.rs")), "needle OUTSIDE\n").unwrap();
                std::fs::remove_file(p.path("deep")).unwrap();
                symlink(&copy, &p.path("deep"));
            }),
        ),
        (
            "the real directory back",
            3,
            1,
            Box::new(|| {
                std::fs::remove_file(p.path("deep")).unwrap();
                std::fs::rename(p.path("deep-old"), p.path("deep")).unwrap();
            }),
        ),
        (
            "creating a file at a start",
            7,
            4,
            Box::new(|| drop(p.write("deep/x/new.rs", "needle new\n"))),
        ),
        (
            "renaming the root's child above another start",
            7,
            4,
            Box::new(|| std::fs::rename(p.path("src"), p.path("src-old")).unwrap()),
        ),
    ];
    for (change, kept, hits, make) in &changes {
        // Kept again after the last change (a symlink's tree is not), and
        // answered from the tree.
        answers_to(&warm, queries_below());
        let before = warm.warm_tree();
        assert_eq!(before.kept_dirs, *kept, "before {change}: {before:?}");
        answers_to(&warm, queries_below());
        let after = warm.warm_tree();
        assert_eq!(after.hits - before.hits, *hits, "before {change}: {after:?}");
        make();
        assert_true_to(&p, &warm, change, queries_below);
    }
}

#[test]
fn a_change_of_content_is_seen_whatever_its_way_in() {
    // Each change puts the needle into a file the session's filters know
    // to lack it. Its size stays, and where the change allows its
    // modification time is set back: only the change time tells.
    let p = project();
    for name in ["in_place", "hard_link", "mapped", "dirty_mapped", "renamed_over"] {
        p.write(&format!("known/{name}.rs"), "nothing to see\n");
    }
    p.write("known/replacement.txt", "needle to see!\n");
    let outside_link = p.outside().join("hard_link.rs");
    std::fs::hard_link(p.path("known/hard_link.rs"), &outside_link).unwrap();
    // A process maps a file and dirties its page before the session learns
    // it: a later write to that page makes no fault, and so sets no
    // change time, unless the page was written back (made clean) first.
    let dirty = Mapped::new(&p.path("known/dirty_mapped.rs"));
    dirty.write(b"nothing");
    if !settle(&p) {
        return;
    }
    let warm = LibraryHost::new(&p);
    assert_true(&p, &warm, "nothing");
    answers(&warm);
    let learned = warm.warm_tree();
    assert!(learned.known_files >= 10, "the searched files are learned: {learned:?}");
    answers(&warm);
    let ruled_out = warm.warm_tree();
    assert!(
        ruled_out.unread_files > learned.unread_files,
        "a third round reads no file its filters rule out: {ruled_out:?}"
    );

    let keeping_mtime = |path: &Path, write: &dyn Fn(&Path)| {
        let meta = std::fs::metadata(path).unwrap();
        write(path);
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(meta.modified().unwrap()).unwrap();
        assert_eq!(std::fs::metadata(path).unwrap().len(), meta.len());
    };
    let changes: Vec<(&str, Change)> = vec![
        (
            "rewriting a file, its size and modification time kept",
            Box::new(|| {
                keeping_mtime(&p.path("known/in_place.rs"), &|path| {
                    std::fs::write(path, "needle to see!\n").unwrap()
                })
            }),
        ),
        (
            "writing through a hard link outside the root",
            Box::new(|| {
                keeping_mtime(&outside_link, &|path| {
                    use std::os::unix::fs::FileExt;
                    let file = std::fs::File::options().write(true).open(path).unwrap();
                    file.write_all_at(b"needle", 0).unwrap();
                })
            }),
        ),
        (
            "writing through a shared memory mapping",
            Box::new(|| {
                let mapped = Mapped::new(&p.path("known/mapped.rs"));
                mapped.write(b"needle");
                mapped.sync();
            }),
        ),
        (
            "writing again through a mapping dirtied before the file was learned",
            Box::new(|| dirty.write(b"needle")),
        ),
        (
            "renaming another file over it",
            Box::new(|| std::fs::rename(p.path("known/replacement.txt"), p.path("known/renamed_over.rs")).unwrap()),
        ),
    ];
    for (change, make) in &changes {
        answers(&warm);
        make();
        assert_true(&p, &warm, change);
    }
    let found = warm.call("grep", json!({"pattern": "needle", "path": "known"})).text;
    for name in ["in_place", "hard_link", "mapped", "dirty_mapped", "renamed_over"] {
        assert!(found.contains(&format!("known/{name}.rs:1:")), "{name}: {found}");
    }
}

/// grep reads a file that begins with a UTF-16 byte-order mark transcoded
/// to UTF-8 (as ripgrep does), so its raw bytes hold none of the pattern's
/// literals: neither the host's needle search nor a filter learned from
/// those bytes may rule it out, in a session's first round or any later.
#[test]
fn a_utf16_file_is_found_by_every_round_of_a_session() {
    let p = project();
    // Nothing ASCII, so no NUL byte: the file is not taken for binary.
    let text = "\u{4e2d}\u{6587}\u{5b57}";
    let wide = |bom: [u8; 2], encode: fn(u16) -> [u8; 2]| -> Vec<u8> {
        bom.into_iter().chain(text.encode_utf16().flat_map(encode)).collect()
    };
    p.write("wide/le.txt", wide([0xFF, 0xFE], u16::to_le_bytes));
    p.write("wide/be.txt", wide([0xFE, 0xFF], u16::to_be_bytes));
    p.write("wide/utf8.txt", format!("{text}\n"));
    p.write("wide/other.txt", "\u{4e2d}\u{6587} only\n");
    if !settle(&p) {
        return;
    }
    let warm = LibraryHost::new(&p);
    let expected = format!("wide/be.txt:1: {text}\nwide/le.txt:1: {text}\nwide/utf8.txt:1: {text}");
    for round in ["first", "learning", "filtered"] {
        let r = warm.call("grep", json!({"pattern": text}));
        assert_eq!(r.text, expected, "{round} round");
        let r = warm.call("grep", json!({"pattern": format!("(?i){text}")}));
        assert_eq!(r.text, expected, "{round} round, ignoring case");
    }
    let stats = warm.warm_tree();
    assert!(stats.known_files >= 4, "the files were learned: {stats:?}");
    assert!(stats.unread_files >= 1, "a filter ruled out other.txt: {stats:?}");
}

/// A whole file mapped shared, read and write, until dropped.
struct Mapped {
    at: std::ptr::NonNull<std::ffi::c_void>,
    len: std::num::NonZeroUsize,
}

impl Mapped {
    fn new(path: &Path) -> Mapped {
        use nix::sys::mman::{MapFlags, ProtFlags, mmap};
        let file = std::fs::File::options().read(true).write(true).open(path).unwrap();
        let len = usize::try_from(file.metadata().unwrap().len()).unwrap();
        let len = std::num::NonZeroUsize::new(len).unwrap();
        let flags = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        // SAFETY: a fresh shared mapping of a file this test owns; the
        // mapping outlives the descriptor, as mappings do.
        let at = unsafe { mmap(None, len, flags, MapFlags::MAP_SHARED, &file, 0).unwrap() };
        Mapped { at, len }
    }

    /// Writes `bytes` at the start, through the mapping only.
    fn write(&self, bytes: &[u8]) {
        assert!(bytes.len() <= self.len.get());
        // SAFETY: within the mapping, which lives until `drop`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.at.as_ptr().cast::<u8>(), bytes.len()) };
    }

    /// Writes the mapped pages back to the file.
    fn sync(&self) {
        use nix::sys::mman::{MsFlags, msync};
        // SAFETY: the mapping, whole.
        unsafe { msync(self.at, self.len.get(), MsFlags::MS_SYNC).unwrap() };
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        let _ = unsafe { nix::sys::mman::munmap(self.at, self.len.get()) };
    }
}

#[test]
fn the_hosts_own_writes_and_shell_commands_are_seen() {
    let p = project();
    let warm = LibraryHost::new(&p);
    assert_true(&p, &warm, "nothing");
    let r = warm.call(
        "write_file",
        json!({"path": "src/written.rs", "content": "needle written\n"}),
    );
    assert!(!r.is_error, "{}", r.text);
    assert_true(&p, &warm, "write_file");
    let r = warm.call(
        "edit_file",
        json!({"path": "src/written.rs", "old_string": "needle", "new_string": "pin"}),
    );
    assert!(!r.is_error, "{}", r.text);
    assert_true(&p, &warm, "edit_file");
    if !support::require("a working sandbox (bubblewrap)", support::sandbox_works()) {
        return;
    }
    let r = warm.call(
        "shell",
        json!({"command": "mkdir -p src/shell/deeper && echo needle > src/shell/deeper/s.rs && rm -r deep/x/y/z && ln -s / deep/root"}),
    );
    assert!(!r.is_error, "{}", r.text);
    assert_true(&p, &warm, "a shell command");
}

#[test]
fn changes_made_while_calls_run_never_leave_a_stale_or_outside_answer() {
    let p = project();
    settle(&p);
    let warm = LibraryHost::new(&p);
    let stop = AtomicBool::new(false);
    let outside = p.outside().join(OUTSIDE);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Churn: files and directories appear and go, and a listed
            // directory keeps turning into a symlink out of the root.
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let _ = std::fs::write(p.path(&format!("src/churn{}.rs", n % 7)), "needle churn\n");
                let _ = std::fs::remove_file(p.path(&format!("src/churn{}.rs", (n + 3) % 7)));
                let _ = std::fs::create_dir_all(p.path(&format!("deep/x/c{}", n % 5)));
                let _ = std::fs::remove_dir(p.path(&format!("deep/x/c{}", (n + 2) % 5)));
                if std::fs::rename(p.path("deep/x/y"), p.path("y-aside")).is_ok() {
                    let _ = std::os::unix::fs::symlink(&outside, p.path("deep/x/y"));
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(p.path("deep/x/y"));
                    let _ = std::fs::rename(p.path("y-aside"), p.path("deep/x/y"));
                }
            }
        });
        for _ in 0..25 {
            for answer in answers(&warm) {
                assert!(!answer.contains(OUTSIDE), "while the tree changed: {answer}");
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_true(&p, &warm, "changes made during calls");
    assert!(warm.warm_tree().hits > 0, "{:?}", warm.warm_tree());
}

/// A session keeps the directory it opened as its root (`project.rs`):
/// when the root's parent is renamed away and another directory put at the
/// same path, nothing above the root being watched, the session's answers
/// stay those of the directory it opened, now at its new path, never a mix
/// and never the newcomer's.
#[test]
fn a_root_whose_parent_was_renamed_away_stays_the_directory_opened() {
    let p = project();
    let root = p.outside().join("a/proj");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/old.rs"), "needle old\n").unwrap();
    let warm = LibraryHost::at(&p, &root);
    answers(&warm);
    answers(&warm);
    assert!(warm.warm_tree().hits > 0, "{:?}", warm.warm_tree());
    std::fs::rename(p.outside().join("a"), p.outside().join("a-old")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/new.rs"), "needle new\n").unwrap();
    let moved = p.outside().join("a-old/proj");
    let (warm, fresh) = (answers(&warm), answers(&LibraryHost::at(&p, &moved)));
    assert_eq!(warm, fresh, "the warm answers are the opened directory's");
    assert!(warm.iter().all(|a| !a.contains("new.rs")), "{warm:?}");
}

#[test]
fn names_that_only_decode_alike_are_never_taken_for_one_another() {
    // `a\xff` (a directory, listed as `a\u{FFFD}` after lossy decoding)
    // beside a symlink really named `a\u{FFFD}` to t/d: the listing says
    // "directory", the open follows the link. Kept, it would go on
    // answering t/d's old contents when t is swapped.
    use std::os::unix::ffi::OsStrExt;
    let p = project();
    let undecodable = std::ffi::OsStr::from_bytes(b"a\xff");
    std::fs::create_dir_all(p.root().join(undecodable)).unwrap();
    std::fs::write(p.root().join(undecodable).join("real.rs"), "needle real\n").unwrap();
    p.write("t/d/k.rs", "needle before\n");
    symlink(Path::new("t/d"), &p.path("a\u{FFFD}"));
    let warm = LibraryHost::new(&p);
    assert_true(&p, &warm, "nothing");
    answers(&warm);
    std::fs::rename(p.path("t"), p.path("t2")).unwrap();
    p.write("t/d/new.rs", "needle after\n");
    assert_true(&p, &warm, "swapping the link's target");
}

#[test]
fn a_mount_or_unmount_over_a_listed_directory_is_seen() {
    // A mount changes a listing without any inotify event (only possible
    // outside the sandbox, whose seccomp filter refuses mounts).
    let p = project();
    let warm = LibraryHost::new(&p);
    answers(&warm);
    answers(&warm);
    let Some(mounted) = support::Tmpfs::mount(&p.path("deep/x"), None) else {
        return;
    };
    p.write("deep/x/mounted.rs", "needle on the mount\n");
    assert_true(&p, &warm, "a mount");
    answers(&warm);
    drop(mounted);
    assert_true(&p, &warm, "an unmount");
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
