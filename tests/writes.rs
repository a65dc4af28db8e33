//! The write capability: a writing call changes exactly the one file its
//! gate decided on, resolved once and held open (`caps/writes.rs`).
//! Attacks assert effects on disk: what is in `.git`, what a file holds.

use crate::support::{self, COMPONENTS, Project};
use serde_json::json;
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Every entry under `dir`, recursively, with its contents: what a test
/// compares before and after.
fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    support::tree(dir)
        .into_iter()
        .map(|(name, content, _)| (name, content))
        .collect()
}

/// Another process, one the session knows nothing of (another session's
/// sandboxed job, say), flips `d` between a fresh directory and a link to
/// `.git` as fast as it can, while the model writes `d/commondir` and
/// `d/hooks/pre-commit` a thousand times under `auto_write`. The gate
/// decides on where each write lands and the write goes through the
/// directory it decided on, so whatever the flips do in between, nothing
/// lands in `.git`: a write either goes into a `d` that was a directory, or
/// is refused (protected, asked, nobody to answer; or its directory went
/// away).
#[test]
fn a_link_flipped_by_a_process_the_session_does_not_know_never_moves_a_write() {
    let p = Project::new().auto_write();
    std::fs::create_dir_all(p.path(".git/hooks")).unwrap();
    p.write(".git/config", "[core]\n\tbare = false\n");
    let before = snapshot(&p.path(".git"));
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU64::new(0));
    // `d` and `spare` swap places atomically (renameat2's exchange): one is
    // a directory, the other a link to `.git`. The directory is emptied
    // whenever it is the spare, so every write to it creates a file.
    std::fs::create_dir_all(p.path("d/hooks")).unwrap();
    symlink(".git", p.path("spare")).unwrap();
    let flipper = {
        let (stop, flips, root) = (stop.clone(), flips.clone(), p.root().to_path_buf());
        std::thread::spawn(move || {
            let d = std::ffi::CString::new(root.join("d").into_os_string().into_encoded_bytes()).unwrap();
            let spare = std::ffi::CString::new(root.join("spare").into_os_string().into_encoded_bytes()).unwrap();
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: two valid C strings; a plain system call.
                let swapped = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        d.as_ptr(),
                        libc::AT_FDCWD,
                        spare.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(swapped, 0, "{}", std::io::Error::last_os_error());
                flips.fetch_add(1, Ordering::Relaxed);
                let spare = root.join("spare");
                if !spare.is_symlink() {
                    let _ = std::fs::remove_file(spare.join("commondir"));
                    let _ = std::fs::remove_file(spare.join("hooks/pre-commit"));
                }
            }
        })
    };
    let mut calls = Vec::new();
    for i in 0..500 {
        calls.push((
            "write_file",
            json!({"path": "d/commondir", "content": format!("../evil{i}\n")}),
        ));
        calls.push((
            "write_file",
            json!({"path": "d/hooks/pre-commit", "content": "#!/bin/sh\ntouch PWNED\n"}),
        ));
    }
    let started = std::time::Instant::now();
    let rs = p.calls(&calls);
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    assert_eq!(rs.len(), 1000);
    let flips = flips.load(Ordering::Relaxed);
    let landed = rs.iter().filter(|r| !r.is_error).count();
    let refused_as_protected = rs
        .iter()
        .filter(|r| r.text.contains("requires interactive approval"))
        .count();
    eprintln!("{flips} flips in {took:?}; {landed} written, {refused_as_protected} refused as protected");
    assert!(
        flips > 100 && landed > 0 && refused_as_protected > 0,
        "the link was flipped throughout ({flips} times) and both sides of it were met: {landed} written, {refused_as_protected} refused as protected"
    );
    assert_eq!(snapshot(&p.path(".git")), before, "a write landed in .git");
    assert!(!p.path("PWNED").exists());
}

fn scribe() -> Project {
    Project::new().config(&format!(
        "toolsets:\n  scribe:\n    path: {COMPONENTS}/scribe.wasm\n    grant: [write, parallel]\nagents:\n  a:\n    tools:\n      scribe:\n"
    ))
}

/// A call that wrote its file is answered as one that did, even when its
/// answer is past the set's output limit: cut, with a note, never dropped
/// as a failure (issue 48: the model read "failed" for a write that was
/// made).
#[test]
fn a_write_made_is_said_even_past_the_output_limit() {
    let p = scribe().answers(r#"["once"]"#);
    let r = p.call(
        "replace",
        json!({"path": "a.txt", "text": "new", "expect": "absent", "pad": 2 << 20}),
    );
    assert!(!r.is_error, "{}", &r.text[r.text.len().saturating_sub(300)..]);
    assert!(r.text.contains("replaced: 3 bytes"), "{}", &r.text[..200]);
    assert!(
        r.text
            .ends_with("cut here, and the diff left out — the file was written]"),
        "{}",
        &r.text[r.text.len() - 200..]
    );
    assert!(r.text.len() <= 1024 * 1024);
    assert_eq!(p.read("a.txt"), b"new");
    // A call that wrote nothing is dropped past the limit, as before.
    let r = p.call(
        "replace",
        json!({"path": "a.txt", "text": "newer", "expect": "absent", "pad": 2 << 20}),
    );
    assert!(
        r.is_error && r.text.ends_with("the result was dropped"),
        "{}",
        &r.text[..200.min(r.text.len())]
    );
    assert_eq!(p.read("a.txt"), b"new");
}

/// A full disk is said in words the model can act on, and leaves nothing
/// behind: not the file, not a temporary one.
#[test]
fn a_full_disk_is_said_and_leaves_nothing() {
    let p = Project::new().auto_write();
    let full = p.path("full");
    std::fs::create_dir(&full).unwrap();
    let Some(_mounted) = support::Tmpfs::mount(&full, Some("size=64k")) else {
        return;
    };
    let r = p.call(
        "write_file",
        json!({"path": "full/big.txt", "content": "x".repeat(100_000)}),
    );
    assert!(r.is_error, "{}", r.text);
    assert_eq!(
        r.text,
        "cannot write full/big.txt: the disk is full (no space left on device); free some space and call again; nothing was written"
    );
    assert_eq!(
        std::fs::read_dir(&full).unwrap().count(),
        0,
        "nothing left in the directory"
    );
}

/// A component approved to write one file has no other way to write: its
/// WASI view is read-only (the approved file included), a preview made
/// before anyone decided cannot write, and a worker task of the approved
/// call cannot either. The one file is written, once, and only while it is
/// what the component expects.
#[test]
fn an_approved_writer_changes_its_one_file_and_nothing_else() {
    let p = scribe().answers(r#"["once"]"#);
    p.write("a.txt", "old");
    p.write(".git/config", "[core]\n");
    let abs = |rel: &str| p.path(rel).to_string_lossy().into_owned();

    // By WASI, the approved file and another: both refused.
    let r = p.call(
        "scribble",
        json!({"path": abs("a.txt"), "also": abs(".git/config"), "text": "x"}),
    );
    assert!(r.text.lines().all(|l| l.starts_with("cannot write")), "{}", r.text);
    assert_eq!(p.read("a.txt"), b"old");
    assert_eq!(p.read(".git/config"), b"[core]\n");

    // The preview tries before the question; the person says no.
    let denied = scribe().answers(r#"["deny"]"#);
    denied.write("b.txt", "old");
    let r = denied.call("replace", json!({"path": "b.txt", "text": "new", "expect": "current"}));
    assert!(r.is_error && r.text.contains("denied"), "{}", r.text);
    assert_eq!(denied.read("b.txt"), b"old", "the preview wrote nothing");

    // Expectations are checked when the write is made.
    let r = p.call("replace", json!({"path": "a.txt", "text": "new", "expect": "absent"}));
    assert!(r.text.ends_with("refused: Refusal::Changed"), "{}", r.text);
    let r = p.call("replace", json!({"path": "a.txt", "text": "new", "expect": "stale"}));
    assert!(r.text.ends_with("refused: Refusal::Changed"), "{}", r.text);
    assert_eq!(p.read("a.txt"), b"old");
    let r = p.call("replace", json!({"path": "a.txt", "text": "new", "expect": "current"}));
    assert_eq!(
        r.text,
        format!("target: Ok({:?})\nholds Some(\"old\")\nreplaced: 3 bytes", abs("a.txt")),
    );
    assert_eq!(p.read("a.txt"), b"new");

    // A task of the approved call is not the call.
    let r = p.call("delegate", json!({"path": "c.txt", "text": "mine"}));
    let (task, _) = r.text.split_once("\nitself: ").unwrap();
    assert_eq!(
        task,
        "task: target: Err(Refusal::NotApproved)\nunreadable: Refusal::NotApproved\nrefused: Refusal::NotApproved"
    );
    assert!(r.text.ends_with("replaced: 4 bytes"), "{}", r.text);
    assert_eq!(p.read("c.txt"), b"mine");

    // Nothing was left behind in the project by any of it.
    let names: Vec<String> = snapshot(p.root()).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, [".git/", ".git/config", "a.txt", "c.txt"]);
}

/// A repository's own directory anywhere under the root is protected like
/// the root's: a nested `.git`, a bare repository in a subdirectory, and
/// the same reached through a link, are asked about even under `auto_write`
/// and refused where nobody can answer; the question names where the write
/// lands.
#[test]
fn a_write_into_any_repository_under_the_root_asks() {
    let p = Project::new().auto_write();
    p.write("sub/.git/config", "[core]\n");
    for dir in ["vendor/lib.git/objects", "vendor/lib.git/refs"] {
        std::fs::create_dir_all(p.path(dir)).unwrap();
    }
    p.write("vendor/lib.git/HEAD", "ref: refs/heads/main\n");
    p.write("vendor/lib.git/config", "[core]\n\tbare = true\n");
    symlink("sub/.git", p.path("g")).unwrap();
    let before = snapshot(p.root());
    let planted = "[core]\n\tfsmonitor = touch PWNED\n";
    for path in [
        "sub/.git/config",
        "sub/.git/hooks/pre-commit",
        "g/config",
        "vendor/lib.git/config",
        "vendor/lib.git/hooks/post-checkout",
        "new/.git/config",
        "sub/.git/info/exclude",
    ] {
        let r = p.call("write_file", json!({"path": path, "content": planted}));
        assert!(r.text.contains("requires interactive approval"), "{path}: {}", r.text);
    }
    assert_eq!(snapshot(p.root()), before, "nothing was written");
    let r = p.call("write_file", json!({"path": "vendor/x.txt", "content": "fine"}));
    assert!(!r.is_error, "{}", r.text);
}

/// A new file gets 0644 (less the umask), a replaced one keeps its mode,
/// and neither leaves a temporary file beside it.
#[test]
fn a_write_keeps_the_files_mode_and_leaves_nothing_beside_it() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new().auto_write();
    p.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(p.path("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    let rs = p.calls(&[
        ("read_file", json!({"path": "run.sh"})),
        (
            "write_file",
            json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
        ),
        ("write_file", json!({"path": "deep/new/file.txt", "content": "x"})),
        (
            "edit_file",
            json!({"path": "run.sh", "old_string": "hi", "new_string": "there"}),
        ),
    ]);
    assert!(rs.iter().all(|r| !r.is_error), "{rs:?}");
    let mode = |rel: &str| std::fs::metadata(p.path(rel)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("run.sh"), 0o750);
    assert_eq!(mode("deep/new/file.txt") & 0o600, 0o600);
    assert_eq!(p.read("run.sh"), b"#!/bin/sh\necho there\n");
    let names: Vec<String> = snapshot(p.root()).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["deep/", "deep/new/", "deep/new/file.txt", "run.sh"]);
}

#[test]
fn a_writes_temporary_file_is_never_listed_found_or_searched() {
    let p = Project::new();
    p.write("kept.txt", "needle here\n");
    // What a host killed mid-write on a filesystem without unnamed files
    // leaves: a temporary beside its file, under the name writes make.
    let left = ".big.bin.iota-0123456789abcdef0123456789abcdef.tmp";
    p.write(left, "needle in a half-made file\n");
    p.write(&format!("sub/{left}"), "needle\n");
    let listed = p.call("list_dir", json!({"path": "."}));
    assert!(!listed.text.contains(".iota-"), "{}", listed.text);
    assert!(listed.text.contains("kept.txt"), "{}", listed.text);
    let found = p.call("glob", json!({"pattern": "**/*"}));
    assert!(!found.text.contains(".iota-"), "{}", found.text);
    let hidden = p.call("glob", json!({"pattern": "**/.*.tmp"}));
    assert!(!hidden.text.contains(".iota-"), "{}", hidden.text);
    let searched = p.call("grep", json!({"pattern": "needle"}));
    assert!(!searched.text.contains(".iota-"), "{}", searched.text);
    assert!(searched.text.contains("kept.txt"), "{}", searched.text);
    // A name that only looks like one is the user's, and shown.
    p.write(".notes.iota-draft.tmp", "needle\n");
    let theirs = p.call("grep", json!({"pattern": "needle"}));
    assert!(theirs.text.contains(".notes.iota-draft.tmp"), "{}", theirs.text);
}

#[test]
fn hosts_killed_while_writing_leave_nothing_in_the_project_after_the_next_start() {
    let p = Project::new().auto_write();
    let big = "x".repeat(1 << 20);
    for trial in 0..5 {
        let mut raw = crate::mcp::Raw::start(&p);
        for i in 0..40 {
            // A file's first write creates it, the next ones replace it.
            let args = json!({"path": format!("t{trial}/f{}.txt", i % 4), "content": format!("{trial} {i} {big}")});
            raw.send(
                &json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {"name": "write_file", "arguments": args}})
                    .to_string(),
            );
        }
        // Killed mid-stream, at a different point each time.
        std::thread::sleep(std::time::Duration::from_millis(30 + 40 * trial));
        raw.kill();
    }
    // The next host starts (and runs nothing that writes).
    assert!(!p.call("list_dir", json!({})).is_error);
    let left: Vec<String> = snapshot(p.root())
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.contains(".iota-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Every file there is whole: one write's content, never part of one.
    let files = snapshot(p.root());
    assert!(
        files.iter().any(|(name, _)| name.ends_with(".txt")),
        "the hosts wrote before they were killed"
    );
    for (name, content) in files {
        assert!(
            name.ends_with('/') || content.ends_with(big.as_bytes()),
            "{name} is cut short"
        );
    }
}
