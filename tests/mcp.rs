//! `iota-host serve` driven by the official MCP Python SDK (`mcp` from PyPI,
//! installed by .ci/run into target/mcp-venv): one real session.

use crate::support;

use std::path::{Path, PathBuf};
use support::{BIN, Project, python, run_client};

#[test]
fn a_real_session_with_the_python_sdk() {
    let Some(python) = python() else { return };
    let p = Project::new().config("agents:\n  a:\n    tools:\n      shell:\n      code:\n        auto_write: true\n");
    p.write("a.txt", "old text\n");
    std::fs::write(p.root().parent().unwrap().join("outside.txt"), "SECRET").unwrap();
    let step = run_client(&python, "mcp_client.py", &p, &[]);

    let tools = step("list")["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "shell",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "edit_file",
            "write_file"
        ]
    );
    let hint = |name: &str, key: &str| tools.iter().find(|t| t["name"] == name).unwrap()[key].clone();
    assert_eq!(hint("read_file", "read_only"), true);
    assert_eq!(hint("edit_file", "destructive"), true);
    for (tool, idempotent) in [
        ("read_file", true),
        ("write_file", true),
        ("edit_file", true),
        ("shell", false),
    ] {
        assert_eq!(hint(tool, "idempotent"), idempotent, "{tool}");
    }
    assert_eq!(
        hint("shell", "open_world"),
        false,
        "a sandboxed shell without the network stays in"
    );
    assert_eq!(hint("grep", "open_world"), false);
    assert!(tools.iter().all(|t| t["schema_type"] == "object"));

    assert_eq!(step("read")["text"], "     1\told text");
    assert_eq!(
        step("edit")["text"],
        "1 replacement in a.txt\n     1\tnew text",
        "the ledger lasts across calls"
    );
    assert_eq!(step("reread")["text"], "     1\tnew text");
    let refused = step("refused");
    assert_eq!(refused["is_error"], true);
    assert!(
        refused["text"]
            .as_str()
            .unwrap()
            .starts_with("shell was not executed: it requires interactive approval"),
        "{refused}"
    );
    let jail = step("jail");
    assert_eq!(
        jail["text"],
        format!(
            "path is outside the project root ({}): ../outside.txt",
            p.root().display()
        )
    );
    assert_eq!(step("grep")["text"], "a.txt:1: new text");
    assert_eq!(step("shell")["text"], "from-shell");
    assert!(
        step("background")["text"]
            .as_str()
            .unwrap()
            .starts_with("Started background job b")
    );
    let logged = step("logged")["messages"].as_array().unwrap().clone();
    assert_eq!(
        logged.len(),
        1,
        "the notice also arrived at once as a log message: {logged:?}"
    );
    assert!(
        logged[0]
            .as_str()
            .unwrap()
            .contains("] sleep 1; echo job-done\njob-done")
    );
    let after = step("after-job")["text"].as_str().unwrap().to_string();
    assert!(
        after.starts_with("[background job b")
            && support::notice_elapsed(&after)
                .0
                .contains("finished: exit 0 after Ns] sleep 1; echo job-done\njob-done\n\n"),
        "the notice leads the next result: {after}"
    );
    assert!(after.ends_with("a.txt (9 B)"), "{after}");
}

/// A raw JSON-RPC client over the server's stdio.
pub(crate) struct Raw {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Raw {
    pub(crate) fn start(p: &Project) -> Raw {
        Raw::start_with(p.command(), "{}")
    }

    /// A connection to `iota-host` started as `command`, whose client
    /// declares `capabilities` (JSON).
    pub(crate) fn start_with(command: std::process::Command, capabilities: &str) -> Raw {
        let mut raw = Raw::spawn(command);
        raw.send(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{capabilities},"clientInfo":{{"name":"raw","version":"1"}}}}}}"#
        ));
        raw.reply(1);
        raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        raw
    }

    pub(crate) fn send(&mut self, line: &str) {
        self.try_send(line).unwrap();
    }

    fn try_send(&mut self, line: &str) -> std::io::Result<()> {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("still connected");
        writeln!(stdin, "{line}")?;
        stdin.flush()
    }

    /// The response to request `id` (other messages are skipped).
    pub(crate) fn reply(&self, id: u64) -> serde_json::Value {
        self.next_message(|v| v["id"] == id)
    }

    /// The next message for which `wanted` holds (others are skipped).
    pub(crate) fn next_message(&self, wanted: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        loop {
            let line = self.lines.recv_timeout(support::EVENTUALLY).expect("a reply in time");
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if wanted(&v) {
                return v;
            }
        }
    }
}

impl Raw {
    /// Closes the connection the way a client does, and waits for the server to exit.
    pub(crate) fn close(&mut self) -> std::process::ExitStatus {
        self.stdin.take();
        self.child.wait().unwrap()
    }
}

impl Raw {
    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server as `kill -9` would, and reaps it.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_cancelled_call_stops_its_command_and_the_session_goes_on() {
    let p =
        Project::new().config("agents:\n  a:\n    tools:\n      shell: {sandbox: off, auto_run: true}\n      code:\n");
    let mut raw = Raw::start(&p);
    let marker = format!("sleep 604.{}", support::run_tag());
    raw.send(&format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"shell","arguments":{{"command":"{marker}"}}}}}}"#
    ));
    support::eventually("the command runs", || !support::processes_matching(&marker).is_empty());
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"user"}}"#);
    support::eventually("cancelling the call killed its command", || {
        support::processes_matching(&marker).is_empty()
    });
    raw.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"shell","arguments":{"command":"echo still here"}}}"#);
    assert_eq!(raw.reply(4)["result"]["content"][0]["text"], "still here");
}

#[test]
fn cancelling_one_call_stops_it_alone() {
    let p =
        Project::new().config("agents:\n  a:\n    tools:\n      shell: {sandbox: off, auto_run: true}\n      code:\n");
    let mut raw = Raw::start(&p);
    let marker = format!("sleep 605.{}", support::run_tag());
    // Both run side by side (the shell is parallel); only id 3 is cancelled.
    raw.send(&format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"shell","arguments":{{"command":"{marker}"}}}}}}"#
    ));
    raw.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 2; echo sibling > two.txt; echo two-done"}}}"#);
    support::eventually("the command runs", || !support::processes_matching(&marker).is_empty());
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"user"}}"#);
    support::eventually("cancelling the call killed its command", || {
        support::processes_matching(&marker).is_empty()
    });
    assert_eq!(raw.reply(4)["result"]["content"][0]["text"], "two-done");
    assert_eq!(p.read("two.txt"), b"sibling\n");
}

#[test]
fn a_cancelled_call_withdraws_its_open_question_and_a_late_answer_writes_nothing() {
    let p = Project::new().config("agents:\n  a:\n    tools:\n      code:\n");
    let mut raw = Raw::start_with(p.command_asking_the_client(), r#"{"elicitation":{}}"#);
    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"new.txt","content":"hi"}}}"#);
    let asked = raw.next_message(|v| v["method"] == "elicitation/create");
    assert_eq!(
        asked["params"]["message"].as_str().unwrap().lines().next(),
        Some("Allow write_file new.txt?")
    );
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"user"}}"#);
    let withdrawn = raw.next_message(|v| v["method"] == "notifications/cancelled");
    assert_eq!(withdrawn["params"]["requestId"], asked["id"], "{withdrawn}");
    // The person answers after all: the question is gone, so nothing is written.
    raw.send(
        &serde_json::json!({
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": {"action": "accept", "content": {"decision": "allow once"}},
        })
        .to_string(),
    );
    raw.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_dir","arguments":{}}}"#);
    let listed = raw.reply(4);
    assert!(!p.path("new.txt").exists(), "{listed}");
    assert!(
        !listed["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("new.txt"),
        "{listed}"
    );
}

/// Approvals, `choose` and `confirm` through a client that answers forms, in
/// the protocol era `mode` selects ("auto": 2026-07-28 with multi round-trip
/// requests; "legacy": the initialize handshake with elicitation requests).
fn questions_reach_the_client(mode: &str, protocol: &str) {
    let Some(python) = python() else { return };
    let p = Project::new().config("agents:\n  a:\n    tools:\n      code:\n");
    let step = run_client(&python, "mcp_elicit.py", &p, &[mode]);
    assert_eq!(step("protocol")["version"], protocol);
    let listed = step("list");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"choose") && names.contains(&"confirm"),
        "a client that can answer gets ask: {names:?}"
    );
    let elicited = step("elicited");
    assert_eq!(elicited[0]["message"], "Allow write_file new.txt?");
    assert_eq!(elicited[0]["fields"], serde_json::json!(["decision"]));
    assert_eq!(step("write")["text"], "wrote 3 B to new.txt (created)");
    assert_eq!(p.read("new.txt"), b"hi\n");
    assert_eq!(
        elicited[1]["fields"],
        serde_json::json!(["q0", "q0_other", "q1", "q1_other"])
    );
    assert_eq!(
        step("choose")["text"],
        "Extras: Tests, Docs\nLanguage: Go, zig (custom answer)"
    );
    assert_eq!(step("confirm")["text"], "The user chose: Ship it");
    for refused in ["declined", "denied"] {
        assert_eq!(
            step(refused)["text"],
            "write_file was not executed: the user denied it."
        );
    }
    assert!(!p.path("other.txt").exists());
    assert_eq!(step("session")["text"], "wrote 1 B to s1.txt (created)");
    assert_eq!(
        step("session-again")["text"],
        "wrote 1 B to s2.txt (created)",
        "allow for this session lasts for the session"
    );
    assert_eq!(
        elicited.as_array().unwrap().len(),
        6,
        "the session's second write is not asked about"
    );
    assert_eq!(step("unanswered")["left"], 0);
}

#[test]
fn questions_travel_as_multi_round_trip_requests_to_a_2026_client() {
    questions_reach_the_client("auto", "2026-07-28");
}

#[test]
fn questions_travel_as_elicitation_requests_to_a_handshake_client() {
    questions_reach_the_client("legacy", "2025-11-25");
}

#[test]
fn a_forged_altered_foreign_replayed_or_stale_request_state_runs_nothing() {
    let Some(python) = python() else { return };
    let p = Project::new().config("agents:\n  a:\n    tools:\n      code:\n");
    p.write("e.txt", "old\n");
    p.write(".git/config", "[core]\n\tbare = false\n");
    std::os::unix::fs::symlink(".git/config", p.path("l.txt")).unwrap();
    let step = run_client(&python, "mcp_rounds.py", &p, &[]);
    let asked = step("asked");
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(asked["message"], "Allow write_file w.txt?");
    assert_eq!(asked["file"], serde_json::Value::Null, "asking wrote nothing");
    let invalid = "requestState is not valid for this call";
    for (name, refusal) in [
        ("forged", invalid),
        ("altered", invalid),
        ("other-arguments", invalid),
        ("other-tool", invalid),
        ("foreign", invalid),
        ("no-state", "inputResponses came without the requestState"),
        ("no-answer", "the retry lacks inputResponses"),
    ] {
        let refused = step(name);
        assert_eq!(refused["code"], -32602, "{name}: {refused}");
        assert!(
            refused["error"].as_str().unwrap().starts_with(refusal),
            "{name}: {refused}"
        );
        assert_eq!(refused["file"], serde_json::Value::Null, "{name} wrote nothing");
    }
    let allowed = step("allowed");
    assert_eq!(allowed["text"], "wrote 1 B to w.txt (created)");
    assert_eq!(allowed["file"], "A");
    let replayed = step("replayed");
    assert!(
        replayed["error"]
            .as_str()
            .unwrap()
            .starts_with("requestState was already used"),
        "{replayed}"
    );
    assert_eq!(replayed["file"], "Z", "a replayed approval wrote nothing");
    let previewed = step("previewed");
    assert!(previewed["diff"].as_str().unwrap().contains("+new"), "{previewed}");
    let changed = step("changed");
    assert_eq!(changed["is_error"], true);
    assert_eq!(
        changed["text"],
        "write_file was not executed: what it would do changed after the question was answered (the file or the question is not the one shown); nothing ran. Call it again to be asked anew."
    );
    assert_eq!(
        changed["file"], "changed meanwhile\n",
        "the write the user never saw did not happen"
    );
    assert_eq!(step("swap-asked")["message"], "Allow write_file a.txt?");
    let swapped = step("swapped");
    assert_eq!(swapped["is_error"], true, "{swapped}");
    assert_eq!(
        p.read(".git/config"),
        b"[core]\n\tbare = false\n",
        "a link swapped in after the question cannot carry the answer into .git: {swapped}"
    );
    assert_eq!(
        step("linked-asked")["message"],
        "Allow write_file l.txt → .git/config (protected: it changes what runs outside the sandbox)?"
    );
}

/// Background jobs, progress, cancellation and logs in the protocol era
/// `mode` selects, with a client that declares the tasks extension.
fn jobs_reach_the_client(mode: &str, protocol: &str) {
    let Some(python) = python() else { return };
    let p =
        Project::new().config("agents:\n  a:\n    tools:\n      shell: {sandbox: off, auto_run: true}\n      code:\n");
    let tag = support::run_tag().to_string();
    let step = run_client(&python, "mcp_jobs.py", &p, &[mode, &tag]);
    let modern = protocol == "2026-07-28";
    assert_eq!(step("protocol")["version"], protocol);
    let background = step("background");
    let finished =
        regex::Regex::new(r"^\[background job (b\d+) finished: exit 0 after \d+s\] sleep 1; echo job-done\njob-done")
            .unwrap();
    if modern {
        let task = step("task");
        let task = &task.as_array().map_or(task.clone(), |t| t[0].clone());
        assert_eq!(task["status"], "working");
        assert!(
            task["message"].as_str().unwrap().starts_with(&format!(
                "Started background job {} (pid ",
                task["id"].as_str().unwrap()
            )),
            "{task}"
        );
        let done = step("task-done");
        let done = &done[0];
        assert_eq!(done["id"], task["id"]);
        assert_eq!(done["status"], "completed");
        assert!(finished.is_match(done["text"].as_str().unwrap()), "{done}");
        assert_eq!(background["text"], "task completed");
    } else {
        assert!(
            background["text"]
                .as_str()
                .unwrap()
                .starts_with("Started background job b"),
            "{background}"
        );
    }
    let progress = step("progress");
    let text = progress["text"].as_str().unwrap();
    assert!(finished.is_match(text), "the notice comes with the next result: {text}");
    assert!(text.ends_with("\n\nlong-done"), "{text}");
    let reports = progress["reports"].as_array().unwrap();
    assert!(reports.len() >= 2, "a 3 s call reports its progress: {progress}");
    let seconds: Vec<f64> = reports.iter().map(|r| r["progress"].as_f64().unwrap()).collect();
    assert!(seconds.windows(2).all(|w| w[0] < w[1]), "{seconds:?}");
    assert!(
        reports
            .iter()
            .all(|r| r["message"].as_str().unwrap().starts_with("running for ")),
        "{progress}"
    );
    if modern {
        let done = step("task-done");
        assert_eq!(done[1]["status"], "cancelled");
        assert_eq!(step("cancelled")["left"], 0, "tasks/cancel killed the job's tree");
    }
    let cancelled = step("call-cancelled");
    assert_eq!(cancelled["ran"], true);
    assert_eq!(cancelled["left"], 0, "cancelling the call stopped its whole tree");
    let after = step("after");
    let logged = after["logged"].as_array().unwrap();
    if modern {
        assert_eq!(step("unresolved-task")["status"], "working");
        let opted_in =
            regex::Regex::new(r"^\[background job b\d+ finished: exit 0 after \d+s\] sleep 1; echo opted-in\nopted-in")
                .unwrap();
        assert!(
            logged.len() == 1 && opted_in.is_match(logged[0].as_str().unwrap()),
            "a log message only while a request that opted in runs: {logged:?}"
        );
    } else {
        assert!(
            logged.iter().any(|m| finished.is_match(m.as_str().unwrap())),
            "{logged:?}"
        );
    }
}

#[test]
fn jobs_become_tasks_with_progress_and_cancellation_for_a_2026_client() {
    jobs_reach_the_client("auto", "2026-07-28");
}

#[test]
fn jobs_notices_progress_and_cancellation_for_a_handshake_client() {
    jobs_reach_the_client("legacy", "2025-11-25");
}

#[test]
fn the_shell_is_open_world_only_with_the_network_or_without_the_sandbox() {
    for (shell, open) in [
        ("{network: true}", true),
        ("{sandbox: off}", true),
        ("{}", !support::sandbox_works()),
    ] {
        let p = Project::new().config(&format!("agents:\n  a:\n    tools:\n      shell: {shell}\n"));
        let mut raw = Raw::start(&p);
        raw.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
        let listed = raw.reply(2);
        let hints = &listed["result"]["tools"][0]["annotations"];
        assert_eq!(hints["openWorldHint"], open, "shell: {shell}: {listed}");
        assert_eq!(hints["idempotentHint"], false);
    }
}

/// `skills/list`, `skills/get` and `skill://` resources in the protocol era
/// `mode` selects: the same skills `load_skill` finds, bytes true to their
/// digests, refusals in load_skill's words.
fn skills_reach_the_client(mode: &str) {
    let Some(python) = python() else { return };
    let p = Project::new().config("agents:\n  a:\n    tools:\n      skills:\n");
    p.write(
        ".iota/skills/pdf/SKILL.md",
        "---\nname: pdf-tools\ndescription: Read and fill PDF forms\nlicense: MIT\n---\n# PDF\nUse scripts/fill.py.\n",
    );
    p.write(".iota/skills/pdf/scripts/fill.py", "print('fill')\n");
    std::fs::create_dir_all(p.path(".iota/skills/pdf/assets")).unwrap();
    std::fs::write(p.path(".iota/skills/pdf/assets/logo.bin"), [0u8, 159, 146, 150, 255]).unwrap();
    p.write(
        ".iota/skills/loose/SKILL.md",
        "---\nname: Not Allowed\ndescription: a name SEP-2640 refuses\n---\nbody\n",
    );
    std::fs::write(p.root().parent().unwrap().join("secret.txt"), "SECRET").unwrap();
    let fifo = p.path(".iota/skills/pdf/pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let step = run_client(&python, "mcp_skills.py", &p, &[mode]);
    assert_eq!(
        step("capabilities")["extensions"],
        serde_json::json!(["io.modelcontextprotocol/skills", "io.modelcontextprotocol/tasks"])
    );
    let listed = step("list");
    assert_eq!(
        listed["skills"],
        serde_json::json!([{
            "uri": "skill://pdf-tools/SKILL.md",
            "name": "pdf-tools",
            "description": "Read and fill PDF forms",
            "extra": {"license": "MIT"},
            "files": ["skill://pdf-tools/SKILL.md", "skill://pdf-tools/assets/logo.bin", "skill://pdf-tools/scripts/fill.py"],
        }]),
        "the skill whose name the extension refuses stays out"
    );
    let verified = step("verified");
    let verified = verified.as_array().unwrap();
    assert_eq!(verified.len(), 3);
    assert!(verified.iter().all(|v| v["ok"] == true), "{verified:?}");
    assert!(
        verified[0]["head"]
            .as_str()
            .unwrap()
            .starts_with("---\nname: pdf-tools"),
        "SKILL.md whole, frontmatter included"
    );
    assert_eq!(step("get")["files"], 3);
    let unknown = step("get-unknown");
    assert_eq!(
        unknown["error"],
        "unknown skill \"nope\"; available skills: Not Allowed, pdf-tools"
    );
    let escape = step("read-escape");
    assert_eq!(
        escape["error"],
        "file must be a relative path inside the skill's directory, got \"../../../secret.txt\""
    );
    assert!(
        step("read-missing")["error"]
            .as_str()
            .unwrap()
            .starts_with("cannot read "),
        "{}",
        step("read-missing")
    );
}

#[test]
fn skills_are_served_over_the_skills_extension_to_a_2026_client() {
    skills_reach_the_client("auto");
}

#[test]
fn skills_are_served_over_the_skills_extension_to_a_handshake_client() {
    skills_reach_the_client("legacy");
}

/// A background job outlives the thread that started it: tokio's idle
/// blocking threads exit after ten seconds, and a sandboxed command dies
/// with the thread that forked its bwrap (`--die-with-parent`).
#[test]
fn a_background_job_outlives_the_idle_thread_that_started_it() {
    if !support::sandbox_works() {
        return;
    }
    let p = Project::new().config("agents:\n  a:\n    tools:\n      shell:\n      code:\n");
    let mut raw = Raw::start(&p);
    let marker = format!("sleep 13.{}", support::run_tag());
    raw.send(&format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"shell","arguments":{{"command":"{marker}; echo survived","background":true}}}}}}"#
    ));
    let started = raw.reply(2);
    assert!(
        started["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Started background job"),
        "{started}"
    );
    support::eventually("the job runs", || !support::processes_matching(&marker).is_empty());
    support::eventually("the job ends", || support::processes_matching(&marker).is_empty());
    // The process is gone from /proc a moment before the host has reaped it
    // and queued its notice, so the notice leads one of the next results.
    let survived = regex::Regex::new(&format!(
        r"finished: exit 0 after \d+s\] {marker}; echo survived\nsurvived"
    ))
    .unwrap();
    let mut id = 2;
    let mut seen = Vec::new();
    support::eventually("the job's notice arrives", || {
        id += 1;
        raw.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"list_dir","arguments":{{}}}}}}"#
        ));
        let text = raw.reply(id)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string();
        let found = survived.is_match(&text);
        seen.push(text);
        found
    });
    assert!(
        !seen
            .iter()
            .any(|text| text.contains("finished: exit") && !survived.is_match(text)),
        "{seen:?}"
    );
}

/// The MCP Inspector CLI .ci/run installs into target/mcp-inspector.
fn inspector() -> Option<PathBuf> {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-inspector/node_modules/.bin/mcp-inspector");
    support::require(
        "the MCP Inspector (npm install --prefix target/mcp-inspector @modelcontextprotocol/inspector)",
        bin.exists(),
    )
    .then_some(bin)
}

#[test]
fn the_mcp_inspector_cli_lists_and_calls() {
    let Some(inspector) = inspector() else { return };
    let p = Project::new();
    p.write("a.txt", "hello\n");
    let run = |args: &[&str]| {
        let mut inspector = std::process::Command::new(&inspector);
        // The Inspector passes the server only HOME, PATH and a few more;
        // the cache goes by -e.
        p.isolate(&mut inspector)
            .arg("--cli")
            .arg("-e")
            .arg(format!("IOTA_CACHE_DIR={}", p.cache().display()))
            .args([BIN, "--root"])
            .arg(p.root())
            .arg("serve")
            .args(args);
        let out = inspector.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let listed = run(&["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read_file") && names.contains(&"shell"), "{names:?}");
    let called = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "read_file",
        "--tool-arg",
        "path=a.txt",
    ]);
    assert_eq!(called["content"][0]["text"], "     1\thello");
    assert_eq!(called["isError"], false);
}

/// User plus system CPU time of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// The hostile fixture with an hour's time limit, beside `code`.
fn hostile_for_an_hour() -> Project {
    Project::new().config(&format!(
        "toolsets:\n  hostile:\n    path: {}/hostile.wasm\n    grant: [process, parallel]\n    limits: {{timeout: 3600}}\nagents:\n  a:\n    tools:\n      hostile:\n      code:\n",
        support::COMPONENTS
    ))
}

/// A writer runs alone, so it can only start once the call before it has
/// stopped; with an hour's time limit, only a cancellation stops that call
/// within the reply's deadline.
fn assert_a_writer_starts_next(raw: &mut Raw) {
    raw.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x","content":"y"}}}"#);
    let reply = raw.reply(4);
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("write_file was not executed")
    );
}

#[test]
fn a_cancelled_component_call_is_interrupted() {
    let p = hostile_for_an_hour();
    let mut raw = Raw::start(&p);
    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"spin","arguments":{}}}"#);
    // Spinning shows as CPU time in the server; then it is cancelled.
    let pid = raw.child.id();
    let cpu_start = cpu_ticks(pid);
    support::eventually("the component spins", || cpu_ticks(pid) > cpu_start + 20);
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#);
    assert_a_writer_starts_next(&mut raw);
}

/// A call asleep in the host (a WASI sleep, where no epoch tick reaches) is
/// stopped by its cancellation too, not only at its deadline.
#[test]
fn a_cancelled_component_call_asleep_in_the_host_is_interrupted() {
    let p = hostile_for_an_hour();
    let mut raw = Raw::start(&p);
    raw.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nap","arguments":{"ms":3600000}}}"#);
    std::thread::sleep(std::time::Duration::from_secs(1));
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#);
    assert_a_writer_starts_next(&mut raw);
}

#[test]
fn a_cancelled_component_calls_command_is_killed() {
    if !support::sandbox_works() {
        return;
    }
    let p = hostile_for_an_hour();
    let mut raw = Raw::start(&p);
    let marker = format!("sleep 607.{}", support::run_tag());
    raw.send(&format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"run","arguments":{{"line":"{marker}"}}}}}}"#
    ));
    support::eventually("the component's command runs", || {
        !support::processes_matching(&marker).is_empty()
    });
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#);
    support::eventually("cancelling the call killed its command", || {
        support::processes_matching(&marker).is_empty()
    });
    assert_a_writer_starts_next(&mut raw);
}

#[test]
fn closing_the_connection_kills_its_jobs() {
    let p = Project::new().config("agents:\n  a:\n    tools:\n      shell: {sandbox: off, auto_run: true}\n");
    let mut raw = Raw::start(&p);
    let marker = format!("sleep 606.{}", support::run_tag());
    raw.send(&format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"shell","arguments":{{"command":"{marker}","background":true}}}}}}"#
    ));
    assert!(
        raw.reply(3)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Started background job b")
    );
    support::eventually("the job runs", || !support::processes_matching(&marker).is_empty());
    assert!(raw.close().success());
    support::eventually("the session's job died with it", || {
        support::processes_matching(&marker).is_empty()
    });
}

/// SIGTERM, SIGINT and SIGHUP end `serve` as a client's leaving does: its
/// jobs killed, the placeholders its sandbox made in the project and its
/// scratch directory (private /tmp, job logs) removed, then the process,
/// with 128 + the signal's number (issue 48: SIGTERM left all three).
#[test]
fn a_signal_ends_the_server_and_leaves_nothing_behind() {
    if !support::sandbox_works() {
        return;
    }
    use nix::sys::signal::Signal;
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        let p = Project::new().config("agents:\n  a:\n    tools:\n      shell:\n");
        let mut raw = Raw::start(&p);
        let marker = format!("sleep 607.{}", support::run_tag());
        raw.send(&format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"shell","arguments":{{"command":"{marker}","background":true}}}}}}"#
        ));
        let reply = raw.reply(3);
        let text = reply["result"]["content"][0]["text"].as_str().unwrap().to_string();
        let log = text
            .split("Output: ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| panic!("{text}"));
        let scratch = log.parent().and_then(Path::parent).unwrap().to_path_buf();
        support::eventually("the job runs", || !support::processes_matching(&marker).is_empty());
        assert!(p.path(".git").is_dir() && scratch.is_dir(), "{text}");
        let pid = nix::unistd::Pid::from_raw(raw.child.id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
        let status = raw.child.wait().unwrap();
        assert_eq!(status.code(), Some(128 + signal as i32), "{signal:?}");
        assert!(
            support::processes_matching(&marker).is_empty(),
            "{signal:?}: the job is gone"
        );
        for placeholder in [".git", ".iota", "HEAD"] {
            assert!(
                !p.path(placeholder).exists(),
                "{signal:?}: {placeholder} left in the project"
            );
        }
        assert!(!scratch.exists(), "{signal:?}: {} left", scratch.display());
    }
}

/// What a client sends wrong is answered and the connection goes on:
/// malformed JSON gets JSON-RPC's parse error, a message over the 4 MiB
/// limit an error carrying its id (never held whole: 40 MiB here), and the
/// next request is served as usual.
#[test]
fn malformed_and_oversized_messages_are_answered() {
    let p = Project::new().config("agents:\n  a:\n    tools:\n      code:\n");
    let mut raw = Raw::start(&p);
    raw.send("{this is not json");
    assert_eq!(
        raw.reply_null(),
        serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}})
    );
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"{}"}}}}}}"#,
        "a".repeat(40 << 20)
    );
    raw.send(&huge);
    assert_eq!(
        raw.reply(7),
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "message too large: over 4194304 bytes (the limit of iota-host serve)"}})
    );
    raw.send(r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#);
    assert_eq!(raw.reply(8)["result"]["tools"].as_array().unwrap().len(), 6);
    assert!(raw.close().success());
}

impl Raw {
    /// The next error reply that has no id (skipping other messages).
    fn reply_null(&self) -> serde_json::Value {
        self.next_message(|v| v["id"].is_null() && v.get("error").is_some())
    }
}

/// A small deterministic generator for the fuzz below (xorshift64*).
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One message of the fuzz: its line, and the id a reply must carry when
/// one is owed.
fn fuzzed_message(dice: &mut Dice, i: usize, meta: &serde_json::Value) -> (String, Option<serde_json::Value>) {
    use serde_json::json;
    let id = if dice.below(4) == 0 {
        json!(format!("s{i}\"\\é\u{1}"))
    } else {
        json!(1000 + i as u64)
    };
    let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let wrong = [json!(7), json!("x"), json!([1]), json!(null), json!(true), json!(1e308)];
    let mut pick = |n: usize| dice.below(n as u64) as usize;
    let request = |method: &str, params: Option<serde_json::Value>| {
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(mut params) = params {
            if let Some(object) = params.as_object_mut()
                && !meta.is_null()
            {
                object.insert("_meta".into(), meta.clone());
            }
            request["params"] = params;
        } else if !meta.is_null() {
            request["params"] = json!({"_meta": meta});
        }
        request.to_string()
    };
    match pick(16) {
        0 => (request("tools/list", None), Some(id)),
        1 => (request("ping", None), Some(id)),
        2 => {
            let path = ["a.txt", "../../etc/passwd", "", "\u{0}", "x/../../y"][pick(5)];
            let args = json!({"name": "read_file", "arguments": {"path": path, "offset": pick(5), "limit": 1}});
            (request("tools/call", Some(args)), Some(id))
        }
        3 => {
            let args = json!({"name": "read_file", "arguments": wrong[pick(wrong.len())]});
            (request("tools/call", Some(args)), Some(id))
        }
        4 => {
            let args = json!({"name": wrong[pick(wrong.len())], "arguments": {}});
            (request("tools/call", Some(args)), Some(id))
        }
        5 => {
            let mut line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"});
            line["params"] = wrong[pick(wrong.len())].clone();
            (line.to_string(), Some(id))
        }
        6 => {
            let method = [
                "foo/bar",
                "",
                "tools/lists",
                "resources/read",
                "prompts/get",
                "completion/complete",
            ][pick(6)];
            (request(method, Some(json!({"x": 1}))), Some(id))
        }
        7 => {
            // Nested past any parser's recursion limit, in the arguments or
            // at the top of the params.
            let depth = [100, 129, 200, 5_000, 100_000][pick(5)];
            let line = if pick(2) == 0 {
                format!(
                    r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"grep","arguments":{{"pattern":"a","x":{}}}}},"id":{id}}}"#,
                    deep(depth)
                )
            } else {
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{}}}"#,
                    deep(depth)
                )
            };
            (line, Some(id))
        }
        8 => {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"a.txt","offset":123456789012345678901234567890,"limit":-1e400}}}}}}"#
            );
            (line, Some(id))
        }
        9 => {
            let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1000 + pick(i + 1), "reason": "fuzz"}});
            (cancelled.to_string(), None)
        }
        10 => {
            let line = [
                "}{",
                "null",
                "42",
                "\"text\"",
                "[]",
                "[1,2]",
                "{\"jsonrpc\":\"2.0\"}",
                "\u{feff}{",
                "{\"method\":7}",
            ][pick(9)];
            (line.to_string(), None)
        }
        11 => (format!(r#"{{"jsonrpc":"2.0","id":{id}}}"#), Some(id)),
        12 => (format!(r#"{{"jsonrpc":"1.0","id":{id},"method":"ping"}}"#), Some(id)),
        13 => (
            format!(r#"{{"id":{id},"method":"ping","params":{{"_meta":7}}}}"#),
            Some(id),
        ),
        14 => {
            // A huge number as the id is not one a reply can carry.
            (
                r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#.to_string(),
                None,
            )
        }
        _ => (
            request(
                "tools/call",
                Some(json!({"name": "glob", "arguments": {"pattern": "**/*"}})),
            ),
            Some(id),
        ),
    }
}

/// A structured fuzz of `serve` in both protocol eras: framing, nesting
/// past every parser's limit, every params field with wrong types, huge
/// numbers, unknown methods, interleaved cancellations. Every request with
/// an id a reply can carry is answered with that id, the server stays
/// alive and answers after it all, and its memory stays bounded.
#[test]
fn every_request_is_answered_whatever_it_holds() {
    // A failure names its seed; IOTA_FUZZ_SEED replays it.
    let seed = std::env::var("IOTA_FUZZ_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15 ^ u64::from(support::run_tag()));
    for era in ["handshake", "2026-07-28"] {
        let p = Project::new().config("agents:\n  a:\n    tools:\n      code:\n");
        p.write("a.txt", "a\n");
        let (mut raw, meta) = if era == "handshake" {
            (Raw::start(&p), serde_json::Value::Null)
        } else {
            let meta = serde_json::json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            });
            (Raw::bare(&p), meta)
        };
        // Before anything else: a notification and a stray response, which
        // rmcp ends the connection at before it has a lifecycle.
        raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
        raw.send(r#"{"jsonrpc":"2.0","id":77,"result":{}}"#);
        let mut dice = Dice(seed);
        let mut owed: Vec<(serde_json::Value, String)> = Vec::new();
        let mut cancelled = std::collections::HashSet::new();
        for i in 0..400 {
            let (line, id) = fuzzed_message(&mut dice, i, &meta);
            if let Err(e) = raw.try_send(&line) {
                let status = raw.child.try_wait();
                panic!(
                    "{era}, seed {seed:#x}: the server stopped reading at message {i} ({e}; {status:?}): {}",
                    line.chars().take(300).collect::<String>()
                );
            }
            owed.extend(id.map(|id| (id, line.chars().take(300).collect())));
            // A request the client cancelled is owed no reply (MCP: the
            // receiver should not send one).
            if let Ok(message) = serde_json::from_str::<serde_json::Value>(&line)
                && message["method"] == "notifications/cancelled"
            {
                cancelled.insert(message["params"]["requestId"].to_string());
            }
        }
        owed.retain(|(id, _)| !cancelled.contains(&id.to_string()));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut answered = std::collections::HashSet::new();
        let open = |answered: &std::collections::HashSet<String>| {
            owed.iter().any(|(id, _)| !answered.contains(&id.to_string()))
        };
        while open(&answered) && std::time::Instant::now() < deadline {
            let Ok(line) = raw.lines.recv_timeout(std::time::Duration::from_secs(10)) else {
                break;
            };
            let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
            if reply.get("method").is_none() {
                answered.insert(reply["id"].to_string());
            }
        }
        let unanswered: Vec<&(serde_json::Value, String)> = owed
            .iter()
            .filter(|(id, _)| !answered.contains(&id.to_string()))
            .collect();
        assert!(
            unanswered.is_empty(),
            "{era}, seed {seed:#x}: {} of {} requests had no reply: {unanswered:?}",
            unanswered.len(),
            owed.len()
        );
        let mut last = serde_json::json!({"jsonrpc": "2.0", "id": 999_999, "method": "tools/list"});
        if !meta.is_null() {
            last["params"] = serde_json::json!({"_meta": meta});
        }
        raw.send(&last.to_string());
        assert_eq!(
            raw.reply(999_999)["result"]["tools"].as_array().map(Vec::len),
            Some(6),
            "{era}: alive"
        );
        let status = std::fs::read_to_string(format!("/proc/{}/status", raw.child.id())).unwrap();
        let peak_kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap();
        assert!(peak_kib < 256 << 10, "{era}: server peak {} MiB", peak_kib >> 10);
        assert!(raw.close().success(), "{era}");
    }
}

impl Raw {
    /// A connection that never sends `initialize`: a 2026-07-28 client,
    /// whose every request carries its protocol version.
    fn bare(p: &Project) -> Raw {
        Raw::spawn(p.command())
    }

    /// `iota-host serve` started as `command`, its stdout read line by line.
    fn spawn(mut command: std::process::Command) -> Raw {
        let mut child = command
            .arg("serve")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Raw {
            child,
            stdin: Some(stdin),
            lines,
        }
    }
}
