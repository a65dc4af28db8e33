//! Embedding iota-host: load an agent's tools from a config, answer their
//! questions with a `Ui` of your own, run a round and print the notices of
//! background jobs. `cargo run -p iota-host --example embed` (CI runs it).

use iota_host::{Answer, Approval, ApprovalRequest, Host, Question, Ui};
use std::sync::Arc;

/// Allows every call once and says what it was asked; declines questions.
struct AllowOnce;

impl Ui for AllowOnce {
    fn interactive(&self) -> bool {
        true
    }
    fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        println!("asked: allow {}? -> allow once", request.header);
        Approval::Once
    }
    fn choose(&self, _: &[Question]) -> Option<Vec<Answer>> {
        None
    }
    fn confirm(&self, _: &str, _: &str, _: &str) -> Option<bool> {
        None
    }
}

fn main() -> anyhow::Result<()> {
    let project = tempfile::tempdir()?;
    let host = Host::builder()
        .config_yaml("agents:\n  default:\n    tools:\n      code:\n      shell:\n      ask: false\n")
        .root(project.path())
        .ui(Arc::new(AllowOnce))
        .build()?;
    for warning in host.warnings() {
        eprintln!("warning: {warning}");
    }
    let names: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
    println!("tools: {}", names.join(", "));

    let session = host.session();
    let written = session.call(
        "write_file",
        serde_json::json!({"path": "hello.txt", "content": "hello\n"}),
    );
    println!("{}: {}", written.header, written.text);
    let round = session.round(&[
        ("read_file", serde_json::json!({"path": "hello.txt"})),
        (
            "shell",
            serde_json::json!({"command": "sleep 1; echo job done", "background": true}),
        ),
    ]);
    for result in &round {
        println!("{}: {}", result.header, result.text.lines().next().unwrap_or(""));
    }
    session.wait_for_jobs();
    for notice in session.take_notices() {
        println!("notice: {notice}");
    }
    Ok(())
}
