//! Many calls at once (issue 48): on one connection and on many, every call
//! is answered, and answered right; writes land in the order they were
//! sent; past the host's bound a call is answered "busy" at once. Latencies
//! are printed (`--nocapture`), never asserted: this machine's speed is not
//! the property.

use crate::mcp::Raw;
use crate::support::Project;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Files under `src/` in the load project.
const SOURCES: usize = 30;

/// A project with [`SOURCES`] Rust files and a note, writes allowed.
fn load_project() -> Project {
    let p = Project::new().auto_write();
    for i in 0..SOURCES {
        p.write(&format!("src/f{i}.rs"), format!("fn f{i}() {{}} // needle_{i}\n"));
    }
    p.write("notes.txt", "the notes\n");
    p
}

/// Call `i` of a mixed load from connection `conn`: globs, greps, reads,
/// listings and writes (each to its own file), and what its answer must say.
fn mixed_call(conn: usize, i: usize) -> (&'static str, Value, String) {
    match i % 5 {
        0 => ("glob", json!({"pattern": "src/**/*.rs"}), "src/f17.rs".to_string()),
        1 => {
            let k = i % SOURCES;
            (
                "grep",
                json!({"pattern": format!("needle_{k}$")}),
                format!("src/f{k}.rs"),
            )
        }
        2 => (
            "read_file",
            json!({"path": "notes.txt"}),
            "     1\tthe notes".to_string(),
        ),
        3 => ("list_dir", json!({"path": "src"}), "f0.rs".to_string()),
        _ => (
            "write_file",
            json!({"path": format!("out/c{conn}/w{i}.txt"), "content": format!("written {conn} {i}\n")}),
            format!("out/c{conn}/w{i}.txt"),
        ),
    }
}

fn request(id: usize, tool: &str, args: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}).to_string()
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

fn is_error(reply: &Value) -> bool {
    reply["result"]["isError"] == true || reply.get("error").is_some()
}

/// Sends `calls` mixed calls on `raw` all at once (ids from 100) and checks
/// every answer; the latencies, sorted.
fn mixed_load(p: &Project, raw: &mut Raw, conn: usize, calls: usize) -> Vec<Duration> {
    let mut sent = HashMap::new();
    for i in 0..calls {
        let (tool, args, _) = mixed_call(conn, i);
        sent.insert(100 + i, Instant::now());
        raw.send(&request(100 + i, tool, &args));
    }
    let mut latencies = Vec::with_capacity(calls);
    let mut answered = HashMap::new();
    while answered.len() < calls {
        let reply = raw.next_message(|v| v["id"].as_u64().is_some_and(|id| id >= 100));
        let id = reply["id"].as_u64().unwrap() as usize;
        latencies.push(sent[&id].elapsed());
        assert!(answered.insert(id, reply).is_none(), "call {id} answered twice");
    }
    for i in 0..calls {
        let (tool, _, expected) = mixed_call(conn, i);
        let reply = &answered[&(100 + i)];
        assert!(!is_error(reply), "{tool} call {i} failed: {reply}");
        assert!(
            text(reply).contains(&expected),
            "{tool} call {i}: {expected:?} not in {reply}"
        );
        if tool == "write_file" {
            assert_eq!(p.read(&expected), format!("written {conn} {i}\n").as_bytes());
        }
    }
    latencies.sort();
    latencies
}

/// The replies to requests `ids`, in whatever order they come.
fn collect(raw: &Raw, ids: std::ops::Range<u64>) -> HashMap<u64, Value> {
    let mut replies = HashMap::new();
    while replies.len() < ids.end.saturating_sub(ids.start) as usize {
        let reply = raw.next_message(|v| v["id"].as_u64().is_some_and(|id| ids.contains(&id)));
        replies.insert(reply["id"].as_u64().unwrap(), reply);
    }
    replies
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

#[test]
fn a_thousand_mixed_calls_at_once_on_one_connection_are_all_answered_right() {
    let p = load_project();
    let mut raw = Raw::start(&p);
    let started = Instant::now();
    let latencies = mixed_load(&p, &mut raw, 0, 1000);
    eprintln!(
        "1000 calls in flight on one connection: {:.1} s, p50 {:?}, p99 {:?}",
        started.elapsed().as_secs_f64(),
        percentile(&latencies, 50),
        percentile(&latencies, 99)
    );
    // The session goes on.
    raw.send(&request(5000, "read_file", &json!({"path": "notes.txt"})));
    assert_eq!(text(&raw.reply(5000)), "     1\tthe notes");
}

#[test]
fn sixteen_connections_of_two_hundred_calls_on_one_project_are_all_answered_right() {
    let p = load_project();
    let latencies = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..16)
            .map(|conn| {
                let p = &p;
                scope.spawn(move || mixed_load(p, &mut Raw::start(p), conn, 200))
            })
            .collect();
        let mut all: Vec<Duration> = runs.into_iter().flat_map(|run| run.join().unwrap()).collect();
        all.sort();
        all
    });
    eprintln!(
        "16 connections x 200 calls: p50 {:?}, p99 {:?}",
        percentile(&latencies, 50),
        percentile(&latencies, 99)
    );
}

#[test]
fn writes_and_reads_of_one_file_take_effect_in_the_order_they_were_sent() {
    let p = Project::new().auto_write();
    let mut raw = Raw::start(&p);
    send_write_read_pairs(&mut raw);
    each_read_saw_the_write_before_it(&p, &raw);
}

/// Pairs of calls sent back to back, never waiting: `write_file seq.txt`
/// with `v0`…`v99`, each followed by a `read_file` of it (ids 100…299).
fn send_write_read_pairs(raw: &mut Raw) {
    for j in 0..100 {
        raw.send(&request(
            100 + 2 * j,
            "write_file",
            &json!({"path": "seq.txt", "content": format!("v{j}")}),
        ));
        raw.send(&request(101 + 2 * j, "read_file", &json!({"path": "seq.txt"})));
    }
}

/// Each read of [`send_write_read_pairs`] saw the write sent before it, and
/// the last write is what stays.
fn each_read_saw_the_write_before_it(p: &Project, raw: &Raw) {
    let replies = collect(raw, 100..300);
    for j in 0..100 {
        let wrote = &replies[&(100 + 2 * j)];
        assert!(!is_error(wrote), "{wrote}");
        assert_eq!(text(&replies[&(101 + 2 * j)]), format!("     1\tv{j}"));
    }
    assert_eq!(p.read("seq.txt"), b"v99");
}

#[test]
fn past_the_bound_a_call_is_answered_busy_at_once_and_the_rest_are_answered_right() {
    let bound = iota_host::internals::MAX_IN_FLIGHT;
    // A command that needs asking runs alone (the answer is scripted here):
    // every read sent after it waits for it, in flight, and then reads what
    // it wrote.
    let p = Project::new()
        .config("agents:\n  a:\n    tools:\n      shell: {sandbox: off}\n      code:\n")
        .answers(r#"["once"]"#);
    let mut raw = Raw::start(&p);
    raw.send(&request(
        2,
        "shell",
        &json!({"command": "sleep 4; echo slept > marker.txt; echo done"}),
    ));
    let over = 50;
    for id in 3..3 + bound + over - 1 {
        raw.send(&request(id, "read_file", &json!({"path": "marker.txt"})));
    }
    let accepted = 3..2 + bound;
    let mut busy = Vec::new();
    let mut shell_done = false;
    for _ in 0..bound + over {
        let reply = raw.next_message(|v| v["id"].as_u64().is_some_and(|id| id >= 2));
        let id = reply["id"].as_u64().unwrap() as usize;
        if id == 2 {
            assert_eq!(text(&reply), "done");
            shell_done = true;
        } else if accepted.contains(&id) {
            assert_eq!(
                text(&reply),
                "     1\tslept",
                "read {id} ran before the command it waits for: {reply}"
            );
        } else {
            assert!(!shell_done, "a call past the bound waited: {reply}");
            assert!(is_error(&reply));
            assert!(text(&reply).starts_with("iota-host is busy: "), "{reply}");
            busy.push(id);
        }
    }
    assert_eq!(busy.len(), over, "exactly the calls past {bound} are refused");
    // The line is free again.
    raw.send(&request(1, "read_file", &json!({"path": "marker.txt"})));
    assert_eq!(text(&raw.reply(1)), "     1\tslept");
}

#[test]
fn order_holds_however_late_the_server_reads_what_was_sent() {
    // No clock decides a place: a server stopped for seconds (job control, a
    // paused container) with pairs queued still runs them in the order sent.
    let p = Project::new().auto_write();
    let mut raw = Raw::start(&p);
    send_write_read_pairs(&mut raw);
    let pid = nix::unistd::Pid::from_raw(raw.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    each_read_saw_the_write_before_it(&p, &raw);
}

#[test]
fn an_id_in_use_or_one_that_is_no_id_is_refused_with_it_and_the_first_runs() {
    let p = Project::new().auto_write();
    let mut raw = Raw::start(&p);
    // Sent together: the second id 7 while the first is in flight.
    raw.send(&request(7, "write_file", &json!({"path": "a.txt", "content": "A"})));
    raw.send(&request(7, "write_file", &json!({"path": "a.txt", "content": "C"})));
    raw.send(r#"{"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{"name":"list_dir","arguments":{}}}"#);
    let mut sevens = Vec::new();
    let mut refused_float = false;
    while sevens.len() < 2 || !refused_float {
        let reply = raw.next_message(|v| v["id"] == 7 || v["id"] == 2.5);
        if reply["id"] == 2.5 {
            assert_eq!(reply["error"]["code"], -32600, "{reply}");
            refused_float = true;
        } else {
            sevens.push(reply);
        }
    }
    let refused: Vec<_> = sevens.iter().filter(|r| r.get("error").is_some()).collect();
    assert_eq!(refused.len(), 1, "{sevens:?}");
    assert!(
        refused[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already used by a request in flight")
    );
    assert_eq!(p.read("a.txt"), b"A", "the refused request ran nothing");
    // Answered, the id is free again.
    raw.send(&request(7, "read_file", &json!({"path": "a.txt"})));
    assert_eq!(text(&raw.reply(7)), "     1\tA");
}
