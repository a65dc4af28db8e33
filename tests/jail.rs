//! The path jail, attacked. Every test asserts effects on the host: files
//! outside the root unchanged or never created, no outside path or content in
//! any output.

use crate::support;

use serde_json::json;
use std::os::unix::fs::{FileTypeExt, symlink};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use support::{Project, assert_err};

const SECRET: &str = "TOP-SECRET-OUTSIDE-CONTENT";

fn outside_message(p: &Project, written: &str) -> String {
    format!("path is outside the project root ({}): {written}", p.root().display())
}

/// A project with a secret file outside the root.
fn project() -> Project {
    let p = Project::new().auto_write();
    std::fs::write(p.outside().join("secret.txt"), SECRET).unwrap();
    p
}

fn assert_no_leak(text: &str, p: &Project) {
    assert!(!text.contains(SECRET), "outside content leaked: {text}");
    assert!(
        !text.contains(&*p.outside().to_string_lossy()),
        "outside path leaked: {text}"
    );
}

#[test]
fn dot_dot_absolute_and_nested_escapes_are_refused_for_every_tool() {
    let p = project();
    let secret = p.outside().join("secret.txt");
    let escapes = [
        "../aux/secret.txt",
        "sub/../../aux/secret.txt",
        "/etc/passwd",
        secret.to_str().unwrap(),
    ];
    for written in escapes {
        let want = outside_message(&p, written);
        let rs = p.calls(&[
            ("read_file", json!({"path": written})),
            ("write_file", json!({"path": written, "content": "pwned"})),
            (
                "edit_file",
                json!({"path": written, "old_string": "TOP", "new_string": "pwned"}),
            ),
            ("list_dir", json!({"path": written})),
            ("glob", json!({"pattern": "*", "path": written})),
            ("grep", json!({"pattern": "SECRET", "path": written})),
        ]);
        for r in &rs {
            assert_err(r, &want);
        }
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), SECRET);
    assert!(!std::fs::read_to_string("/etc/passwd").unwrap().contains("pwned"));
}

#[test]
fn a_sibling_whose_name_extends_the_roots_is_outside() {
    let p = project();
    let evil = p.root().with_file_name("root_evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("x.txt"), SECRET).unwrap();
    let abs = evil.join("x.txt");
    for written in ["../root_evil/x.txt", abs.to_str().unwrap()] {
        assert_err(
            &p.call("read_file", json!({"path": written})),
            &outside_message(&p, written),
        );
        assert_err(
            &p.call("write_file", json!({"path": written, "content": "pwned"})),
            &outside_message(&p, written),
        );
    }
    assert_eq!(std::fs::read_to_string(abs).unwrap(), SECRET);
}

#[test]
fn symlinks_out_absolute_or_relative_are_refused_with_the_jail_message() {
    let p = project();
    symlink(p.outside().join("secret.txt"), p.path("abs_link")).unwrap();
    symlink("../aux/secret.txt", p.path("rel_link")).unwrap();
    for link in ["abs_link", "rel_link"] {
        let rs = p.calls(&[
            ("read_file", json!({"path": link})),
            ("write_file", json!({"path": link, "content": "pwned"})),
            (
                "edit_file",
                json!({"path": link, "old_string": "TOP", "new_string": "pwned"}),
            ),
        ]);
        for r in &rs {
            assert_err(r, &outside_message(&p, link));
        }
    }
    assert_eq!(std::fs::read_to_string(p.outside().join("secret.txt")).unwrap(), SECRET);
}

#[test]
fn a_symlinked_directory_out_is_never_walked_or_listed_into() {
    let p = project();
    symlink(p.outside(), p.path("escape")).unwrap();
    p.write("inside.txt", "fine\n");
    let rs = p.calls(&[
        ("glob", json!({"pattern": "**/*"})),
        ("grep", json!({"pattern": "SECRET"})),
        ("grep", json!({"pattern": "fine"})),
        ("list_dir", json!({})),
        ("list_dir", json!({"path": "escape"})),
        ("read_file", json!({"path": "escape/secret.txt"})),
        ("glob", json!({"pattern": "*", "path": "escape"})),
    ]);
    for r in &rs {
        assert_no_leak(&r.text, &p);
    }
    assert!(!rs[0].text.contains("secret.txt"), "{}", rs[0].text);
    assert_eq!(rs[1].text, "no matches for SECRET");
    assert_eq!(rs[2].text, "inside.txt:1: fine");
    assert_err(&rs[4], &outside_message(&p, "escape"));
    assert_err(&rs[5], &outside_message(&p, "escape/secret.txt"));
}

#[test]
fn a_dangling_symlink_out_creates_nothing_outside() {
    let p = project();
    let target = p.outside().join("created-by-write.txt");
    symlink(&target, p.path("dangling")).unwrap();
    symlink(p.outside().join("newdir"), p.path("dangling_dir")).unwrap();
    let rs = p.calls(&[
        ("write_file", json!({"path": "dangling", "content": "pwned"})),
        ("write_file", json!({"path": "dangling_dir/x.txt", "content": "pwned"})),
    ]);
    assert_err(&rs[0], &outside_message(&p, "dangling"));
    assert_err(&rs[1], &outside_message(&p, "dangling_dir/x.txt"));
    assert!(!target.exists(), "nothing was created outside");
    assert!(!p.outside().join("newdir").exists(), "no directory was created outside");
}

/// A link's `..` is taken from the directory the OS reached, not from the
/// text: through a linked `sub`, `sub/../.git/config` is `x/.git/config`.
/// The write lands where a read of the same path read (and where the
/// approval question says), never in the root's `.git`. That is a nested
/// repository's own directory, so the write is asked about even under
/// `auto_write`, and refused where nobody can answer.
#[test]
fn a_link_through_a_linked_directory_writes_where_the_os_resolves_it() {
    let unanswered = project();
    let p = project().answers(r#"["once"]"#);
    let config = "[core]\n\tbare = false\n";
    let planted = format!("{config}\tfsmonitor = touch PWNED\n");
    for q in [&unanswered, &p] {
        q.write(".git/config", config);
        q.write("x/.git/config", config);
        std::fs::create_dir_all(q.path("x/y")).unwrap();
        symlink("x/y", q.path("sub")).unwrap();
        symlink("sub/../.git/config", q.path("a.txt")).unwrap();
        symlink("x/y", q.path("d")).unwrap();
        symlink("../.git/config", q.path("x/y/b.txt")).unwrap();
    }
    for (path, step) in [
        ("a.txt", "a final link"),
        ("d/b.txt", "a link below a linked directory"),
    ] {
        let refused = unanswered.calls(&[
            ("read_file", json!({"path": path})),
            ("write_file", json!({"path": path, "content": planted})),
        ]);
        assert!(
            refused[1].text.contains("requires interactive approval"),
            "{step}: {}",
            refused[1].text
        );
        assert_eq!(
            unanswered.read("x/.git/config"),
            config.as_bytes(),
            "{step}: not written unasked"
        );
        let rs = p.calls(&[
            ("read_file", json!({"path": path})),
            ("write_file", json!({"path": path, "content": planted})),
        ]);
        assert!(!rs[1].is_error, "{step}: {}", rs[1].text);
        assert_eq!(
            p.read(".git/config"),
            config.as_bytes(),
            "{step}: the root's .git is untouched"
        );
        assert_eq!(
            p.read("x/.git/config"),
            planted.as_bytes(),
            "{step}: it wrote what it read"
        );
        p.write("x/.git/config", config);
    }
}

#[test]
fn a_symlink_loop_does_not_hang() {
    let p = project();
    symlink("loop_b", p.path("loop_a")).unwrap();
    symlink("loop_a", p.path("loop_b")).unwrap();
    let rs = p.calls(&[
        ("read_file", json!({"path": "loop_a"})),
        ("write_file", json!({"path": "loop_a", "content": "x"})),
        ("glob", json!({"pattern": "*"})),
        ("grep", json!({"pattern": "x"})),
        ("list_dir", json!({})),
    ]);
    assert_err(&rs[0], "cannot read loop_a: Too many levels of symbolic links");
    assert_err(&rs[1], "loop_a is not a regular file");
    assert_eq!(rs[4].text, "loop_a (6 B)\nloop_b (6 B)");
}

#[test]
fn nul_and_huge_paths_are_errors_not_crashes() {
    let p = project();
    let huge = "a/".repeat(5000) + "x";
    let rs = p.calls(&[
        ("read_file", json!({"path": "a\u{0}b"})),
        ("write_file", json!({"path": "a\u{0}b", "content": "x"})),
        ("read_file", json!({"path": huge})),
        ("write_file", json!({"path": huge, "content": "x"})),
        ("list_dir", json!({})),
    ]);
    assert_err(&rs[0], r#"path must not contain a NUL byte: "a\0b""#);
    assert_err(&rs[1], r#"path must not contain a NUL byte: "a\0b""#);
    assert_err(&rs[2], &format!("cannot read {huge}: File name too long"));
    assert_err(&rs[3], &format!("cannot write {huge}: File name too long"));
    assert!(!p.path("a").exists(), "no directory was made for it");
    assert_eq!(rs[4].text, "[directory is empty]");
}

#[test]
fn a_fifo_never_blocks_a_tool() {
    let p = project();
    mkfifo(&p.path("pipe"));
    p.write("a.txt", "pipe\n");
    let mut child = p
        .command()
        .args([
            "call",
            "--json",
            "read_file",
            r#"{"path":"pipe"}"#,
            "grep",
            r#"{"pattern":"pipe"}"#,
            "glob",
            r#"{"pattern":"*"}"#,
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("a tool blocked on the FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("pipe is not a regular file"), "{text}");
    assert!(text.contains("a.txt:1: pipe"), "{text}");
}

/// A project whose agent has only the hostile fixture, granted writes, with
/// one approval (`once`) scripted.
fn hostile_writer() -> Project {
    project()
        .config(&format!(
            "toolsets:\n  hostile:\n    path: {}/hostile.wasm\n    grant: [process, parallel, write]\nagents:\n  a:\n    tools:\n      hostile:\n",
            support::COMPONENTS
        ))
        .answers(r#"["once"]"#)
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

/// A toolset's own WASI opens never wait either, and open nothing but
/// regular files and directories: the FIFO has no other end, so an open that
/// waited would hold the call's host thread, where no time limit reaches, for
/// ever. However it is opened (to read, as a directory, through a followed
/// symlink), it is refused at once, as is a Unix socket; files and
/// directories open to read, and a symlink still does not lead out. Nothing
/// opens to write, even in this approved writer's call: its WASI view is
/// read-only (its one file is written through `writes`).
#[test]
fn a_toolsets_own_open_of_a_fifo_never_waits() {
    let p = hostile_writer();
    let root = p.root().to_path_buf();
    mkfifo(&root.join("pipe"));
    symlink("pipe", root.join("pipe-link")).unwrap();
    symlink(p.outside().join("secret.txt"), root.join("out-link")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();
    p.write("file.txt", "inside");
    std::fs::create_dir(root.join("dir")).unwrap();
    let opens = [
        ("pipe", "read"),
        ("pipe", "write"),
        ("pipe", "read+write"),
        ("pipe", "write+truncate"),
        ("pipe", "directory"),
        ("pipe-link", "read+follow"),
        ("pipe-link", "read"),
        ("sock", "read"),
        ("out-link", "read+follow"),
        ("file.txt", "read"),
        ("dir", "directory"),
        ("new.txt", "write+create"),
        ("file.txt", "read+write"),
    ];
    let opens: Vec<_> = opens
        .iter()
        .map(|(path, how)| json!({"path": path, "how": how}))
        .collect();
    let r = p.call_finishes("openat", json!({ "opens": opens }));
    assert_no_leak(&r.text, &p);
    assert_eq!(
        r.text.lines().collect::<Vec<_>>(),
        [
            "pipe (read): refused: unsupported",
            "pipe (write): refused: not-permitted",
            "pipe (read+write): refused: not-permitted",
            "pipe (write+truncate): refused: not-permitted",
            "pipe (directory): refused: not-directory",
            "pipe-link (read+follow): refused: unsupported",
            "pipe-link (read): refused: loop",
            "sock (read): refused: unsupported",
            "out-link (read+follow): refused: not-permitted",
            r#"file.txt (read): a file: "inside""#,
            "dir (directory): a directory",
            "new.txt (write+create): refused: not-permitted",
            "file.txt (read+write): refused: not-permitted",
        ],
        "{}",
        r.text
    );
    assert!(!root.join("new.txt").exists());
    assert_eq!(std::fs::read_to_string(root.join("file.txt")).unwrap(), "inside");
    assert_eq!(std::fs::read_to_string(p.outside().join("secret.txt")).unwrap(), SECRET);
    assert!(
        std::fs::symlink_metadata(root.join("pipe"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

/// The port of `open-at` keeps wasmtime-wasi's permission checks: through a
/// read-only preopen (a reader's task) a file opens to read, and nothing
/// opens to write, create or truncate; a FIFO is refused before any of that
/// matters.
#[test]
fn a_read_only_toolsets_own_open_writes_nothing() {
    let p = project().config(&format!(
        "toolsets:\n  hostile:\n    path: {}/hostile.wasm\n    grant: [process, parallel]\nagents:\n  a:\n    tools:\n      hostile:\n",
        support::COMPONENTS
    ));
    let root = p.root().to_path_buf();
    mkfifo(&root.join("pipe"));
    p.write("file.txt", "inside");
    let opens = [
        ("file.txt", "read"),
        ("file.txt", "write"),
        ("file.txt", "read+truncate"),
        ("new.txt", "write+create"),
        ("new.txt", "create"),
        ("pipe", "read"),
    ];
    let opens: Vec<_> = opens
        .iter()
        .map(|(path, how)| json!({"path": path, "how": how}))
        .collect();
    let r = p.call_finishes("fanout", json!({"tool": "openat", "input": {"opens": opens}}));
    assert_eq!(
        r.text,
        [
            r#"task ok: file.txt (read): a file: "inside""#,
            "file.txt (write): refused: not-permitted",
            "file.txt (read+truncate): refused: not-permitted",
            "new.txt (write+create): refused: not-permitted",
            "new.txt (create): refused: not-permitted",
            "pipe (read): refused: unsupported",
        ]
        .join("\n"),
        "{}",
        r.text
    );
    assert_eq!(std::fs::read_to_string(root.join("file.txt")).unwrap(), "inside");
    assert!(!root.join("new.txt").exists());
}

/// Setting times through symlinks opened the target to write, then to read,
/// in wasmtime-wasi, and so waited on a FIFO for ever. A component's WASI
/// view is read-only now, in an approved writer's call too (its one file is
/// written through `writes`), so every `set-times-at` is refused at once,
/// following links or not, and no time moves anywhere.
#[test]
fn a_toolsets_touch_of_a_fifo_never_waits() {
    let p = hostile_writer();
    let root = p.root().to_path_buf();
    mkfifo(&root.join("pipe"));
    symlink("pipe", root.join("pipe-link")).unwrap();
    p.write("file.txt", "inside");
    symlink("file.txt", root.join("file-link")).unwrap();
    let secret = p.outside().join("secret.txt");
    symlink(&secret, root.join("out-link")).unwrap();
    let modified = |path: &Path| std::fs::symlink_metadata(path).unwrap().modified().unwrap();
    let watched = [
        root.join("pipe"),
        root.join("file.txt"),
        root.join("file-link"),
        secret.clone(),
    ];
    let before: Vec<_> = watched.iter().map(|p| modified(p)).collect();
    let paths = ["pipe", "pipe-link", "file-link", "out-link"];
    for follow in [true, false] {
        let r = p.call_finishes("touch", json!({ "paths": paths, "follow": follow }));
        let refused: Vec<String> = paths.iter().map(|p| format!("{p}: refused: not-permitted")).collect();
        assert_eq!(r.text.lines().collect::<Vec<_>>(), refused, "{}", r.text);
    }
    let after: Vec<_> = watched.iter().map(|p| modified(p)).collect();
    assert_eq!(before, after, "no time moved");
}

/// Swaps `name` between a regular file inside and a symlink to the secret
/// outside, atomically (rename), `swaps` times.
fn swapper(root: &Path, outside: &Path, swaps: usize, done: Arc<AtomicBool>, count: Arc<AtomicUsize>) {
    let target = root.join("race.txt");
    let file_tmp = root.join(".race-file");
    let link_tmp = root.join(".race-link");
    for i in 0..swaps {
        if i % 2 == 0 {
            let _ = std::fs::remove_file(&link_tmp);
            symlink(outside.join("secret.txt"), &link_tmp).unwrap();
            std::fs::rename(&link_tmp, &target).unwrap();
        } else {
            std::fs::write(&file_tmp, "inside\n").unwrap();
            std::fs::rename(&file_tmp, &target).unwrap();
        }
        count.fetch_add(1, Ordering::Relaxed);
        std::thread::yield_now();
    }
    done.store(true, Ordering::Relaxed);
}

#[test]
fn a_read_write_race_against_symlink_swaps_leaks_nothing() {
    let p = project();
    p.write("race.txt", "inside\n");
    let host = support::LibraryHost::new(&p);
    let done = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicUsize::new(0));
    let (root, outside) = (p.root().to_path_buf(), p.outside().to_path_buf());
    let (d, c) = (done.clone(), count.clone());
    let thread = std::thread::spawn(move || swapper(&root, &outside, 1000, d, c));
    let mut calls = 0;
    let mut served = 0;
    while !done.load(Ordering::Relaxed) || calls < 200 {
        for tool in ["read_file", "write_file", "grep"] {
            let args = match tool {
                "read_file" => json!({"path": "race.txt"}),
                "write_file" => json!({"path": "race.txt", "content": "written\n"}),
                _ => json!({"pattern": "SECRET|inside"}),
            };
            let r = host.call(tool, args);
            assert_no_leak(&r.text, &p);
            if !r.is_error {
                served += 1;
            }
            calls += 1;
        }
    }
    thread.join().unwrap();
    assert_eq!(count.load(Ordering::Relaxed), 1000);
    assert_eq!(
        std::fs::read_to_string(p.outside().join("secret.txt")).unwrap(),
        SECRET,
        "the outside file is unchanged"
    );
    assert!(served > 0, "some calls ran against the inside file ({calls} calls)");
}

/// `iota:toolset/files` read-files, attacked directly by a component: every
/// way out of the root is unreadable, a FIFO does not block, limits hold.
#[test]
fn bulk_reads_stay_inside_the_root() {
    let p = project().config(&format!(
        "toolsets:\n  hostile:\n    path: {}/hostile.wasm\n    grant: [process, parallel]\nagents:\n  a:\n    tools:\n      hostile:\n",
        support::COMPONENTS
    ));
    let (root, outside) = (p.root().to_path_buf(), p.outside().to_path_buf());
    p.write("inside.txt", "inside");
    p.write("big.txt", "0123456789");
    symlink(outside.join("secret.txt"), root.join("abs-link")).unwrap();
    let outside_name = outside.file_name().unwrap().to_string_lossy().into_owned();
    symlink(format!("../{outside_name}/secret.txt"), root.join("rel-link")).unwrap();
    symlink(&outside, root.join("dir-link")).unwrap();
    symlink("inside.txt", root.join("in-link")).unwrap();
    mkfifo(&root.join("pipe"));
    let at = |rel: &str| root.join(rel).to_string_lossy().into_owned();
    let paths = vec![
        at("inside.txt"),
        format!("{}/../{outside_name}/secret.txt", root.display()),
        outside.join("secret.txt").to_string_lossy().into_owned(),
        at("abs-link"),
        at("rel-link"),
        at("dir-link/secret.txt"),
        at("pipe"),
        root.to_string_lossy().into_owned(),
        at("big.txt"),
        "/proc/self/environ".to_string(),
        "relative.txt".to_string(),
        at("in-link"),
    ];
    let r = p.call_finishes("bulk", json!({ "paths": paths, "max": 9 }));
    assert_no_leak(&r.text, &p);
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines.len(), paths.len(), "{}", r.text);
    assert_eq!(lines[0], "data: inside");
    for (i, line) in lines.iter().enumerate().skip(1).take(7) {
        assert!(line.starts_with("unreadable: "), "{}: {line}", paths[i]);
    }
    assert_eq!(lines[8], "too large: 10");
    assert!(lines[9].starts_with("unreadable: "), "{}", lines[9]);
    assert!(lines[10].starts_with("unreadable: "), "{}", lines[10]);
    assert_eq!(
        lines[11], "data: inside",
        "a relative symlink inside the root is followed"
    );
    assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), SECRET);

    // read-files-containing: the same answers for every way out, whatever
    // the needles; "lacks" for an outside file would tell what it holds.
    let cases = [
        (vec!["inside"], false, true),
        (vec![SECRET], false, false),
        (vec!["TOP-SECRET", "nowhere"], false, false),
        (vec!["top-secret"], true, false),
        (vec!["INSIDE"], false, false),
        (vec!["INSIDE"], true, true),
        (vec![""], false, true),
    ];
    for (needles, fold_case, holds) in cases {
        let args = json!({ "paths": paths, "max": 9, "needles": needles, "fold_case": fold_case });
        let r = p.call_finishes("bulk", args);
        assert_no_leak(&r.text, &p);
        let lines: Vec<&str> = r.text.lines().collect();
        assert_eq!(lines.len(), paths.len(), "{}", r.text);
        let inside = if holds { "data: inside" } else { "lacks the needles" };
        assert_eq!(lines[0], inside, "{needles:?}");
        assert_eq!(lines[11], inside, "{needles:?}");
        for (i, line) in lines
            .iter()
            .enumerate()
            .skip(1)
            .take(7)
            .chain(lines.iter().enumerate().skip(9).take(2))
        {
            assert!(line.starts_with("unreadable: "), "{needles:?}: {}: {line}", paths[i]);
        }
        assert_eq!(lines[8], "too large: 10", "{needles:?}");
    }

    // list-dir: the root lists, every way out is refused.
    std::fs::create_dir(root.join("sub")).unwrap();
    let dirs = vec![
        root.to_string_lossy().into_owned(),
        at("sub"),
        format!("{}/../{outside_name}", root.display()),
        outside.to_string_lossy().into_owned(),
        at("dir-link"),
        at("abs-link"),
        "/".to_string(),
        "/etc".to_string(),
        at("sub/../.."),
    ];
    let r = p.call("listdir", json!({ "paths": dirs }));
    assert!(
        !r.text.contains("secret.txt"),
        "an outside directory was listed: {}",
        r.text
    );
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines.len(), dirs.len(), "{}", r.text);
    assert_eq!(
        lines[0],
        "listed: abs-link big.txt dir-link in-link inside.txt pipe rel-link sub"
    );
    assert_eq!(lines[1], "listed: ");
    for (i, line) in lines.iter().enumerate().skip(2) {
        assert!(line.starts_with("refused: "), "{}: {line}", dirs[i]);
    }

    // stat-names: the entries of a directory inside, a symlink not followed
    // (its own size, not its target's); a name that is not one plain
    // component is looked at nowhere, and a directory outside is refused.
    // The names travel joined by `/`, so `../x` arrives as `..` and `x`.
    let outside_secret = outside.join("secret.txt").to_string_lossy().into_owned();
    let too_long = "x".repeat(256);
    let names = [
        "inside.txt",
        "abs-link",
        "sub",
        "missing",
        "..",
        ".",
        "",
        &outside_name,
        "secret.txt",
        &too_long,
        "pipe",
        "rel-link",
    ];
    let r = p.call("statnames", json!({ "paths": dirs, "names": names }));
    assert!(
        !r.text.contains(&format!("File {}", SECRET.len())),
        "an outside file was stat'ed: {}",
        r.text
    );
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines.len(), dirs.len(), "{}", r.text);
    let stats: Vec<&str> = lines[0].strip_prefix("stats: ").unwrap().split(", ").collect();
    assert_eq!(stats.len(), names.len(), "{}", lines[0]);
    assert_eq!(stats[0], "Kind::File 6");
    assert_eq!(stats[1], format!("Kind::Symlink {}", outside_secret.len()));
    assert!(stats[2].starts_with("Kind::Directory "), "{}", stats[2]);
    for (name, stat) in names.iter().zip(&stats).skip(3).take(7) {
        assert_eq!(*stat, "none", "{name:?}");
    }
    assert_eq!(stats[10], "Kind::Other 0", "a FIFO is stat'ed, never opened");
    assert_eq!(
        stats[11],
        format!("Kind::Symlink {}", format!("../{outside_name}/secret.txt").len())
    );
    assert_eq!(lines[1], format!("stats: {}", vec!["none"; names.len()].join(", ")));
    for (i, line) in lines.iter().enumerate().skip(2) {
        assert!(line.starts_with("refused: "), "{}: {line}", dirs[i]);
    }
    // One call copies at most 16,384 names and 1 MiB of them (in process:
    // such arguments are past what a command line holds).
    let library = support::LibraryHost::new(&p);
    let root_only = [root.to_string_lossy().into_owned()];
    let r = library.call(
        "statnames",
        json!({ "paths": root_only, "names": vec!["inside.txt"; 16_384] }),
    );
    assert!(
        r.text.starts_with("stats: Kind::File 6, "),
        "{}",
        r.text.chars().take(80).collect::<String>()
    );
    let r = library.call(
        "statnames",
        json!({ "paths": root_only, "names": vec!["inside.txt"; 16_385] }),
    );
    assert_eq!(r.text, "refused: more than 16384 names");
    let r = library.call(
        "statnames",
        json!({ "paths": root_only, "names": vec!["x".repeat(255); 4_200] }),
    );
    assert_eq!(r.text, "refused: more than 1048576 bytes of names");
}

/// `read-files-containing` over more files than one answer holds: exactly
/// the files with a needle come in, at their own index, through several
/// answers (the 256 KiB and 8 MiB budgets), and no needles keep nothing.
#[test]
fn bulk_reads_containing_hand_over_exactly_the_files_with_a_needle() {
    let p = project().config(&format!(
        "toolsets:\n  hostile:\n    path: {}/hostile.wasm\n    grant: [process, parallel]\nagents:\n  a:\n    tools:\n      hostile:\n",
        support::COMPONENTS
    ));
    // 150 files of 100 KiB: 15 MiB to look through; every seventh holds a
    // needle, at its very end or (every fourteenth) its very start.
    let filler = "x".repeat(100 << 10);
    let mut paths = Vec::new();
    for i in 0..150 {
        let body = match i % 14 {
            0 => format!("alpha{filler}"),
            7 => format!("{filler}omega"),
            _ => filler.clone(),
        };
        p.write(&format!("f{i:03}.txt"), &body);
        paths.push(p.root().join(format!("f{i:03}.txt")).to_string_lossy().into_owned());
    }
    let r = p.call("bulk", json!({ "paths": paths, "needles": ["alpha", "omega"] }));
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines.len(), paths.len());
    for (i, line) in lines.iter().enumerate() {
        match i % 14 {
            0 => assert_eq!(*line, "data: 102405 bytes: alpha…xxxxx", "{i}"),
            7 => assert_eq!(*line, "data: 102405 bytes: xxxxx…omega", "{i}"),
            _ => assert_eq!(*line, "lacks the needles", "{i}"),
        }
    }
    let r = p.call("bulk", json!({ "paths": paths, "needles": [] }));
    // One line per path (an empty answer would satisfy `all`), each empty-handed.
    assert_eq!(r.text.lines().count(), paths.len(), "{}", r.text);
    assert!(
        r.text.lines().all(|l| l == "lacks the needles"),
        "no needles keep nothing"
    );
}
