//! The host's own state (compiled components, remembered descriptions, the
//! sandbox probe's memo, the key that seals them) is out of every sandboxed
//! command's reach and verified before use. Each test asserts what the host
//! then does, not what it says.

use crate::support;

use serde_json::json;
use support::Project;

/// The files of a state directory and their bytes (a directory in it by its
/// name alone: `sandbox-cache` holds what sandboxed commands wrote to their
/// project's cache, theirs to change, and nothing the host trusts).
fn snapshot(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let bytes = if e.path().is_dir() {
                Vec::new()
            } else {
                std::fs::read(e.path()).unwrap()
            };
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect()
}

fn compiled(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect()
}

/// Inside the sandbox the state directory is an empty, read-only mount:
/// nothing in it can be read (the key), changed or replaced. The home here
/// is one a sandboxed command can see whole (`home: visible`; by default
/// it would not see the state's directory at all), with its `.cache`
/// writable (the spec's cache directory, where the host state used to
/// live); the state is at its default place under it.
#[test]
fn sandboxed_commands_cannot_see_or_change_the_host_state() {
    if !support::sandbox_works() {
        return;
    }
    let p =
        Project::new().config("agents:\n  a:\n    tools:\n      shell: {auto_run: true, home: visible}\n      code:\n");
    p.write("a.txt", "hello\n");
    let home = support::visible_outside_dir();
    let run = |tool: &str, args: serde_json::Value| {
        let out = p
            .command()
            .env_remove("IOTA_CACHE_DIR")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env("HOME", home.path())
            .args(["call", tool, &args.to_string()])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(run("read_file", json!({"path": "a.txt"})), "     1\thello\n");
    // The host's own writes for the shell (its probes' memos, the project's
    // cache, a notice said once) are made by a first command.
    assert_eq!(
        run("shell", json!({"command": "true"})),
        "[command produced no output]\n"
    );
    // Wherever the host keeps its state (the key that seals it, the
    // remembered descriptions) under this home.
    let state = walk(home.path())
        .into_iter()
        .find(|p| p.file_name().is_some_and(|name| name == "key"))
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .expect("the host state kept under the home");
    let before = snapshot(&state);
    let text = run(
        "shell",
        json!({"command": format!(
            "cd {0} && ls -A | wc -l; cat key; for f in *; do echo x > \"$f\"; done; echo x > key; echo x > new.cwasm; cd .. && mv {0} moved; true",
            state.display()
        )}),
    );
    assert!(text.starts_with("0\n"), "the state directory is empty inside: {text}");
    assert_eq!(snapshot(&state), before, "nothing in it changed: {text}");
    assert!(!state.parent().unwrap().join("moved").exists());
}

/// Every file below `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A compiled component the host did not write is never loaded: a byte
/// flipped in its code, or another component's file put in its place. The
/// call still gives the right answer (the host compiles afresh) and the file
/// is the host's own again afterwards.
#[test]
fn a_patched_or_swapped_compiled_component_is_never_loaded() {
    // Third-party components are the ones compiled and cached: the example
    // toolset and the hostile fixture.
    let components = support::COMPONENTS;
    let p = Project::new()
        .config(&format!(
            "toolsets:\n  todo: {components}/todo.wasm\n  hostile:\n    path: {components}/hostile.wasm\n    grant: [process, parallel]\nagents:\n  a:\n    tools:\n      todo:\n      hostile:\n"
        ))
        .with_private_cache();
    p.write("a.txt", "TODO: hello\n");
    let todos = || p.call("todos", json!({}));
    assert_eq!(todos().text, "a.txt:1: TODO: hello");
    let state = p.cache();
    let files = compiled(&state);
    assert_eq!(files.len(), 2, "todo and hostile: {files:?}");
    let todo_digest = std::fs::read_to_string(format!("{components}/todo.wasm.sha256")).unwrap();
    let (todo, hostile) = if files[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with(todo_digest.trim())
    {
        (&files[0], &files[1])
    } else {
        (&files[1], &files[0])
    };
    let original = std::fs::read(todo).unwrap();
    for planted in [
        // The hostile component's own, valid file under todo's name.
        std::fs::read(hostile).unwrap(),
        // Todo's file with one byte of its machine code changed.
        {
            let mut patched = original.clone();
            let middle = patched.len() / 2;
            patched[middle] ^= 0x01;
            patched
        },
    ] {
        std::fs::write(todo, &planted).unwrap();
        assert_eq!(todos().text, "a.txt:1: TODO: hello", "the right component answered");
        assert_ne!(
            std::fs::read(todo).unwrap(),
            planted,
            "the planted file was replaced, not used"
        );
    }
}

/// A memo that says the sandbox fails, written by anyone but the host, is no
/// memo: the next session probes afresh and stays sandboxed.
#[test]
fn a_flipped_probe_memo_changes_nothing() {
    if !support::sandbox_works() {
        return;
    }
    let p = Project::new().auto_run().with_private_cache();
    let outside = support::visible_outside_dir();
    let probe = |p: &Project| {
        p.call(
            "shell",
            json!({"command": format!("touch {}/escaped", outside.path().display())}),
        )
    };
    probe(&p);
    let memo = p.cache().join("sandbox-probe");
    let text = std::fs::read(&memo).unwrap();
    let flipped = String::from_utf8_lossy(&text).replacen("works", "fails", 1);
    std::fs::write(&memo, flipped.as_bytes()).unwrap();
    let r = probe(&p);
    assert!(r.text.contains("Read-only file system"), "{}", r.text);
    assert!(!outside.path().join("escaped").exists(), "the command stayed sandboxed");
}

/// A state directory that is a link, or one others may write, is not used
/// (and nothing is written through the link); the host still works.
#[test]
fn a_state_directory_that_is_a_link_or_open_to_others_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new().config("agents:\n  a:\n    tools:\n      code:\n");
    p.write("a.txt", "hello\n");
    let victim = p.outside().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let link = p.outside().join("state-link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let open = p.outside().join("state-open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    for (dir, why) in [
        (&link, "is not a directory (a link or a file)"),
        (&open, "is not the user's own, or others may write to it"),
    ] {
        let out = p
            .command()
            .env("IOTA_CACHE_DIR", dir)
            .args(["call", "read_file", r#"{"path":"a.txt"}"#])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "     1\thello\n");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("warning: the host state directory {} {why}", dir.display())),
            "{err}"
        );
    }
    assert_eq!(
        std::fs::read_dir(&victim).unwrap().count(),
        0,
        "nothing written through the link"
    );
    assert_eq!(
        std::fs::read_dir(&open).unwrap().count(),
        0,
        "nothing kept where others may write"
    );
}

/// A sandboxed set refuses a root that would make everything writable, and
/// a writable directory that holds the host's state.
#[test]
fn a_sandboxed_set_refuses_a_root_of_slash_or_home_and_writable_state() {
    if !support::sandbox_works() {
        return;
    }
    let p = Project::new().with_home();
    let home = p.home().unwrap().to_path_buf();
    let config = p.outside().join("c.yaml");
    std::fs::write(&config, "agents:\n  a:\n    tools:\n      shell:\n").unwrap();
    for (root, what) in [
        ("/", "the whole filesystem"),
        (home.to_str().unwrap(), "the whole home directory"),
    ] {
        let out = std::process::Command::new(support::BIN)
            .env("HOME", &home)
            .env("IOTA_CACHE_DIR", p.outside().join("state"))
            .args(["--non-interactive", "--config"])
            .arg(&config)
            .args([
                "--root",
                root,
                "call",
                "shell",
                r#"{"command":"touch /iota-should-not-exist"}"#,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("the project root {root} would make {what} writable to sandboxed commands; run from the project's directory or pass --root <project directory> (ignored)")),
            "{err}"
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("unknown tool: shell"));
    }
    assert!(!std::path::Path::new("/iota-should-not-exist").exists());
    // A write: path holding the state directory.
    std::fs::write(
        &config,
        format!(
            "agents:\n  a:\n    tools:\n      shell:\n        write: [{}]\n",
            p.outside().display()
        ),
    )
    .unwrap();
    // What loading the sets says with the state kept at `state`.
    let stderr_with_state = |state: &std::path::Path| {
        let mut command = std::process::Command::new(support::BIN);
        p.isolate(&mut command)
            .env("IOTA_CACHE_DIR", state)
            .args(["--non-interactive", "--config"])
            .arg(&config)
            .arg("--root")
            .arg(p.root())
            .arg("tools");
        String::from_utf8_lossy(&command.output().unwrap().stderr).into_owned()
    };
    let err = stderr_with_state(&p.outside().join("state"));
    assert!(err.contains("holds the host's state directory"), "{err}");
    // The cache directory the sandbox writes, holding the state.
    std::fs::write(&config, "agents:\n  a:\n    tools:\n      shell:\n").unwrap();
    let err = stderr_with_state(&home.join(".cache/iota/state"));
    assert!(
        err.contains(&format!(
            "{} is writable to sandboxed commands and holds the host's state directory",
            home.join(".cache").display()
        )),
        "{err}"
    );
}
