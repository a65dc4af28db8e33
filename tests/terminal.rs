//! A real terminal: iota-host under tmux, answered with keystrokes. Runs where
//! tmux is installed (CI installs it); elsewhere it prints why it skipped.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};
use support::{BIN, Project, cache_dir};

/// tmux on a server of the test's own (`-L`, named for its session), with no
/// user configuration: never the user's server or their `.tmux.conf`.
fn tmux(session: &str, args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(["-L", session, "-f", "/dev/null"])
        .args(args)
        .output()
        .expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits until the pane shows `text`; returns the screen.
fn wait_for(session: &str, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let screen = tmux(session, &["capture-pane", "-p", "-t", session]);
        if screen.contains(text) {
            return screen;
        }
        assert!(Instant::now() < deadline, "the screen never showed {text:?}:\n{screen}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_two_question_choose_and_an_approval_answered_with_keys() {
    if !support::require(
        "tmux (apt-get install tmux)",
        Command::new("tmux").arg("-V").output().is_ok(),
    ) {
        return;
    }
    // A time limit shorter than the person takes to answer: their time is
    // not the call's.
    let p = Project::new().config(&format!(
        "toolsets:\n  ask:\n    path: {}/ask.wasm\n    grant: [ui]\n    limits: {{timeout: 2}}\nagents:\n  a:\n    tools:\n      code:\n      ask:\n",
        support::COMPONENTS
    ));
    let out = p.outside().join("out.json");
    let choose = r#"{"questions":[{"header":"Extras","question":"Which extras?","multiple":true,"options":[{"label":"Tests"},{"label":"Docs","description":"the README"},{"label":"Bench"}]},{"header":"Language","question":"Which language?","options":[{"label":"Rust"},{"label":"Go"}]}]}"#;
    let write = r#"{"path":"picked.txt","content":"hi\n"}"#;
    let script = format!(
        "cd '{root}' && HOME='{home}' NO_COLOR=1 IOTA_CACHE_DIR='{cache}' '{BIN}' --root . --config '{config}' call --json choose '{choose}' write_file '{write}' > '{out}'; echo EXIT=$? >> '{out}'; sleep 60",
        root = p.root().display(),
        home = p.home().unwrap().display(),
        cache = cache_dir().display(),
        config = p.outside().join("config.yaml").display(),
        out = out.display(),
    );
    let session = format!("iota-test-{}-choose", std::process::id());
    tmux(
        &session,
        &["new-session", "-d", "-s", &session, "-x", "120", "-y", "40", &script],
    );
    let cleanup = scopeguard(&session);

    // The surface is drawn line by line: wait for its last line.
    let screen = wait_for(&session, "Enter submit all · Esc decline");
    // The surface: tabs, the question, its choices with descriptions, Other…, the key help.
    assert!(screen.contains("[Extras]  Language"), "{screen}");
    assert!(screen.contains("> [ ] Tests"), "{screen}");
    assert!(screen.contains("  [ ] Docs — the README"), "{screen}");
    assert!(screen.contains("\n  Other…"), "{screen}");
    std::thread::sleep(Duration::from_secs(3));
    // Multi-select Tests and Bench; Tab to the second question; type an Other… answer.
    tmux(
        &session,
        &["send-keys", "-t", &session, "Space", "Down", "Down", "Space"],
    );
    let screen = wait_for(&session, "> [x] Bench");
    assert!(screen.contains("  [x] Tests"), "{screen}");
    tmux(
        &session,
        &["send-keys", "-t", &session, "Tab", "Down", "Down", "z", "i", "g"],
    );
    let screen = wait_for(&session, "> Other… zig");
    assert!(screen.contains(" Extras  [Language]"), "{screen}");
    tmux(&session, &["send-keys", "-t", &session, "Enter"]);
    // The approval question shows the writer's diff and the three answers.
    // The question is drawn line by line: wait for its last answer.
    let screen = wait_for(&session, "Allow for this session\n  Deny");
    assert!(
        screen.contains("+++ b/picked.txt") && screen.contains("+hi"),
        "{screen}"
    );
    assert!(
        screen.contains("> Allow once\n  Allow for this session\n  Deny"),
        "{screen}"
    );
    tmux(&session, &["send-keys", "-t", &session, "Enter"]);

    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&out).unwrap_or_default().contains("EXIT=") {
        assert!(Instant::now() < deadline, "iota-host did not finish");
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["text"], "Extras: Tests, Bench\nLanguage: zig (custom answer)");
    assert_eq!(lines[1]["text"], "wrote 3 B to picked.txt (created)");
    assert!(text.ends_with("EXIT=0\n"), "{text}");
    assert_eq!(p.read("picked.txt"), b"hi\n");
    drop(cleanup);
}

/// Kills the tmux session however the test ends.
fn scopeguard(session: &str) -> impl Drop + '_ {
    struct Kill<'a>(&'a str);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = Command::new("tmux").args(["-L", self.0, "kill-server"]).output();
        }
    }
    Kill(session)
}

/// An approval question whose command line carries escape sequences (clear
/// the line, move up, retitle the window) shows them as text: the screen
/// keeps what was on it, and the user reads the command that would run.
#[test]
fn escape_sequences_in_an_approval_question_are_shown_inert() {
    if !support::require(
        "tmux (apt-get install tmux)",
        Command::new("tmux").arg("-V").output().is_ok(),
    ) {
        return;
    }
    let p = Project::new().config("agents:\n  a:\n    tools:\n      shell: {sandbox: off}\n");
    let out = p.outside().join("out.json");
    let args = p.outside().join("args.json");
    // The line a model might send: after the real command, sequences that
    // erase the prompt's line and draw a harmless-looking one in its place.
    std::fs::write(
        &args,
        r#"{"command":"touch pwned \u001b[2K\u001b[1A\u001b[2K\u001b]0;title\u0007\rAllow shell ls -la"}"#,
    )
    .unwrap();
    let script = format!(
        "cd '{root}' && echo MARKER-BEFORE && HOME='{home}' NO_COLOR=1 IOTA_CACHE_DIR='{cache}' '{BIN}' --root . --config '{config}' call --json shell \"$(cat '{args}')\" > '{out}'; echo EXIT=$? >> '{out}'; sleep 60",
        root = p.root().display(),
        home = p.home().unwrap().display(),
        cache = cache_dir().display(),
        config = p.outside().join("config.yaml").display(),
        args = args.display(),
        out = out.display(),
    );
    let session = format!("iota-test-{}-inert", std::process::id());
    tmux(
        &session,
        &["new-session", "-d", "-s", &session, "-x", "160", "-y", "20", &script],
    );
    let cleanup = scopeguard(&session);
    let screen = wait_for(&session, "Allow for this session\n  Deny");
    assert!(
        screen.contains("Allow shell touch pwned ^[[2K^[[1A^[[2K^[]0;title^G^MAllow shell ls -la"),
        "{screen}"
    );
    assert!(screen.contains("MARKER-BEFORE"), "nothing above was erased: {screen}");
    // Deny: Down twice, Enter.
    tmux(&session, &["send-keys", "-t", &session, "Down", "Down", "Enter"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&out).unwrap_or_default().contains("EXIT=") {
        assert!(Instant::now() < deadline, "iota-host did not finish");
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("shell was not executed: the user denied it."), "{text}");
    assert!(!p.path("pwned").exists());
    drop(cleanup);
}

/// A sandboxed command tries to push input into the terminal iota-host runs
/// in (TIOCSTI on /dev/tty and on every descriptor it has). Checked on the
/// host side: the next line the terminal's shell reads is the one typed
/// after the call, not anything injected.
#[test]
fn a_sandboxed_command_cannot_type_into_the_users_terminal() {
    if !support::require(
        "tmux (apt-get install tmux)",
        Command::new("tmux").arg("-V").output().is_ok(),
    ) || !support::sandbox_works()
    {
        return;
    }
    let p = Project::new().config("agents:\n  a:\n    tools:\n      shell:\n");
    let out = p.outside().join("out.txt");
    let probe = "import fcntl, termios, os\nfds = list(range(3))\ntry:\n    fds.append(os.open('/dev/tty', os.O_RDWR))\nexcept OSError as e:\n    print('no tty', e.errno)\nfor fd in fds:\n    for c in 'INJECTED\\n':\n        try:\n            fcntl.ioctl(fd, termios.TIOCSTI, c.encode())\n        except OSError:\n            pass\nprint('probed')\n";
    std::fs::write(p.outside().join("probe.py"), probe).unwrap();
    std::fs::copy(p.outside().join("probe.py"), p.path("probe.py")).unwrap();
    let script = format!(
        "cd '{root}' && HOME='{home}' NO_COLOR=1 IOTA_CACHE_DIR='{cache}' '{BIN}' --root . --config '{config}' call shell '{{\"command\":\"python3 probe.py\"}}' > '{out}' 2>&1; echo READY; read line; echo \"READ:$line\" >> '{out}'; sleep 60",
        root = p.root().display(),
        home = p.home().unwrap().display(),
        cache = cache_dir().display(),
        config = p.outside().join("config.yaml").display(),
        out = out.display(),
    );
    let session = format!("iota-test-{}-tiocsti", std::process::id());
    tmux(
        &session,
        &["new-session", "-d", "-s", &session, "-x", "120", "-y", "20", &script],
    );
    let cleanup = scopeguard(&session);
    wait_for(&session, "READY");
    tmux(&session, &["send-keys", "-t", &session, "TYPED", "Enter"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&out).unwrap_or_default().contains("READ:") {
        assert!(Instant::now() < deadline, "the shell never read its line");
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("probed"), "the probe ran: {text}");
    assert!(
        text.ends_with("READ:TYPED\n"),
        "nothing reached the terminal's input: {text}"
    );
    drop(cleanup);
}
