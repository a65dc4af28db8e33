//! The library as an embedder sees it: the example runs a round with its own
//! `Ui` and prints the notices, and the crate without its front ends pulls in
//! no command-line, terminal or MCP crates.

use crate::support;

use std::path::PathBuf;
use std::process::Command;

/// `cargo test` builds the examples beside the test binaries.
fn example(name: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    deps.parent().unwrap().join("examples").join(name)
}

#[test]
fn the_embedding_example_runs_a_round_and_prints_the_notice() {
    if !support::sandbox_works() {
        return;
    }
    let out = support::Project::new()
        .isolate(&mut Command::new(example("embed")))
        .output()
        .expect("the example is built by cargo test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "tools: glob, grep, list_dir, read_file, edit_file, write_file, shell"
    );
    assert_eq!(lines[1], "asked: allow write_file hello.txt? -> allow once");
    assert_eq!(lines[2], "write_file hello.txt: wrote 6 B to hello.txt (created)");
    assert_eq!(lines[3], "read_file hello.txt:      1\thello");
    assert!(
        lines[4].starts_with("shell (background) sleep 1; echo job done: Started background job b"),
        "{stdout}"
    );
    assert!(
        regex::Regex::new(r"^notice: \[background job b\d+ finished: exit 0 after \d+s\] sleep 1; echo job done$")
            .unwrap()
            .is_match(lines[5]),
        "{stdout}"
    );
    assert_eq!(lines[6], "job done");
}

#[test]
fn without_default_features_no_cli_terminal_or_mcp_crate_is_pulled_in() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-p",
            "iota-host",
            "--no-default-features",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.contains("wasmtime v"), "the tree lists the engine: {tree}");
    for front_end in ["clap v", "crossterm v", "rmcp v", "indicatif v"] {
        assert!(
            !tree.lines().any(|l| l.starts_with(front_end)),
            "{front_end} in the embedder's tree"
        );
    }
}

/// Holds its answer until released, and says when it is asked.
struct HeldAnswer {
    asked: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl iota_host::Ui for HeldAnswer {
    fn interactive(&self) -> bool {
        true
    }
    fn approve(&self, _: &iota_host::ApprovalRequest<'_>) -> iota_host::Approval {
        self.asked.lock().unwrap().send(()).unwrap();
        self.release.lock().unwrap().recv().unwrap();
        iota_host::Approval::Once
    }
    fn choose(&self, _: &[iota_host::Question]) -> Option<Vec<iota_host::Answer>> {
        None
    }
    fn confirm(&self, _: &str, _: &str, _: &str) -> Option<bool> {
        None
    }
}

/// A session shared between threads follows the round rule: a call that may
/// not run in parallel (a writer) runs alone, so a reader started while the
/// writer waits for its answer waits too, and both then finish.
#[test]
fn calls_from_several_threads_on_one_session_follow_the_round_rule() {
    let project = support::Project::new();
    std::fs::write(project.root().join("a.txt"), "a\n").unwrap();
    let (asked, was_asked) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel();
    let ui = HeldAnswer {
        asked: asked.into(),
        release: released.into(),
    };
    let host = iota_host::Host::builder()
        .config_yaml("agents:\n  a:\n    tools:\n      code:\n      ask: false\n")
        .root(project.root())
        .ui(std::sync::Arc::new(ui))
        .state_dir(None)
        .build()
        .unwrap();
    let session = host.session();
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| session.call_json("write_file", r#"{"path": "b.txt", "content": "b"}"#));
        was_asked.recv().unwrap();
        let reader = scope.spawn(|| session.call_json("read_file", r#"{"path": "a.txt"}"#));
        // Unanswered, the writer holds the session: the reader cannot have
        // run (alone, it takes milliseconds).
        std::thread::sleep(std::time::Duration::from_millis(300));
        let reader_ran = reader.is_finished();
        release.send(()).unwrap();
        let (written, read) = (writer.join().unwrap(), reader.join().unwrap());
        assert!(!reader_ran, "a reader ran while a writer held the session");
        assert!(!written.is_error, "{}", written.text);
        assert_eq!(read.text, "     1\ta");
    });
    assert_eq!(std::fs::read_to_string(project.root().join("b.txt")).unwrap(), "b");
}

/// A failed call says why as data beside the text the model reads: a tool
/// nobody offers, arguments that make no call, a question nobody can answer,
/// a denial, the tool's own error, a command past its time; a call that
/// worked says nothing.
#[test]
fn a_failed_call_says_why_as_data() {
    use iota_host::Failure;
    let project = support::Project::new();
    std::fs::write(project.root().join("a.txt"), "a\n").unwrap();
    let build = |ui: std::sync::Arc<dyn iota_host::Ui>| {
        iota_host::Host::builder()
            .config_yaml(
                "agents:\n  a:\n    tools:\n      code:\n      shell:\n        sandbox: off\n      ask: false\n",
            )
            .root(project.root())
            .ui(ui)
            .state_dir(None)
            .build()
            .unwrap()
    };
    let nobody = build(std::sync::Arc::new(iota_host::NoUi)).session();
    let failure = |result: &iota_host::CallResult| (result.failure, result.is_error);
    let read = nobody.call_json("read_file", r#"{"path": "a.txt"}"#);
    assert_eq!(failure(&read), (None, false), "{}", read.text);
    let unknown = nobody.call_json("read_fil", "{}");
    assert_eq!(failure(&unknown), (Some(Failure::UnknownTool), true));
    let missing = nobody.call_json("read_file", r#"{"path": "nope.txt"}"#);
    assert_eq!(failure(&missing), (Some(Failure::Tool), true), "{}", missing.text);
    let unasked = nobody.call_json("write_file", r#"{"path": "b.txt", "content": "b"}"#);
    assert_eq!(
        failure(&unasked),
        (Some(Failure::NobodyToApprove), true),
        "{}",
        unasked.text
    );
    let shell = nobody.call_json("shell", r#"{"command": 7}"#);
    assert_eq!(
        failure(&shell),
        (Some(Failure::InvalidArguments), true),
        "{}",
        shell.text
    );
    let answers = iota_host::ScriptedUi::parse(r#"["deny", "once"]"#).unwrap();
    let asking = build(std::sync::Arc::new(answers)).session();
    let denied = asking.call_json("write_file", r#"{"path": "b.txt", "content": "b"}"#);
    assert_eq!(failure(&denied), (Some(Failure::Denied), true), "{}", denied.text);
    let slow = asking.call_json("shell", r#"{"command": "sleep 5", "timeout": 0.2}"#);
    assert_eq!(failure(&slow), (Some(Failure::TimeLimit), true), "{}", slow.text);
    assert!(!project.root().join("b.txt").exists(), "nothing was allowed to write");
}
