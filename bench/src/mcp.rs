//! One long MCP session: does `iota-host serve` keep its memory flat over
//! thousands of calls? (A figure, not a test: it depends on the allocator
//! and the machine.)

use crate::report::Report;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Calls in the session, and the one after which the baseline is taken.
const CALLS: u64 = 2000;
const WARM_UP: u64 = 100;

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Runs the session against the release `iota_host` and reports its memory.
pub fn run(report: &mut Report, iota_host: &Path) {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "hello\n").unwrap();
    let mut server = Command::new(iota_host)
        .args(["--non-interactive", "--root"])
        .arg(root.path())
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("iota-host serve starts");
    let mut input = server.stdin.take().unwrap();
    let mut output = BufReader::new(server.stdout.take().unwrap());
    let mut send = |line: String| {
        writeln!(input, "{line}").unwrap();
        input.flush().unwrap();
    };
    let mut reply = String::new();
    let mut next = |reply: &mut String| {
        reply.clear();
        output.read_line(reply).unwrap();
    };
    send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#.into());
    next(&mut reply);
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into());
    let calls = [
        ("read_file", r#"{"path":"a.txt"}"#),
        ("grep", r#"{"pattern":"hello"}"#),
        ("list_dir", "{}"),
        ("glob", r#"{"pattern":"*.txt"}"#),
    ];
    let mut after_warm_up = 0;
    for id in 10..10 + CALLS {
        let (tool, args) = calls[(id % 4) as usize];
        send(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
        ));
        next(&mut reply);
        if id == 10 + WARM_UP {
            after_warm_up = rss_kib(server.id());
        }
    }
    let end = rss_kib(server.id());
    drop(input);
    let _ = server.wait();
    report.line(format!("\n## serve: memory over one long session\n\nRSS of `iota-host serve` after {WARM_UP} calls (read_file, grep, list_dir, glob in turn): {} MiB; after {CALLS}: {} MiB.", after_warm_up / 1024, end / 1024));
}
