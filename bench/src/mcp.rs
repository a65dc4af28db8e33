//! `iota-host serve` over stdio: calls per second of the same `read_file`
//! work in each protocol era, beside the reference filesystem server
//! (`@modelcontextprotocol/server-filesystem`, npm) in the same run; and one
//! long session, to see whether its memory stays flat over thousands of
//! calls. (Figures, not tests: they depend on the allocator and the machine.)

use crate::report::Report;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Calls in the long session, and the one after which the baseline is taken.
const CALLS: u64 = 2000;
const WARM_UP: u64 = 100;
/// Calls timed per server for the rate.
const RATE_CALLS: u64 = 1000;

/// Where `.ci/run`-style installs put the reference server:
/// `npm install --prefix target/mcp-peer @modelcontextprotocol/server-filesystem`.
const PEER: &str = "target/mcp-peer/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";

/// The request metadata a 2026-07-28 client sends on every request.
const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}"#;

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

/// One MCP server on stdio, spoken to one line at a time.
struct Session {
    child: Child,
    input: Option<ChildStdin>,
    /// Taken by a reader thread when requests are pipelined ([`load`]).
    output: Option<BufReader<ChildStdout>>,
    /// `_meta` for every request (2026-07-28), or none (the handshake era).
    meta: Option<&'static str>,
}

impl Session {
    /// Starts `server`; with `meta`, speaks 2026-07-28 (no handshake),
    /// otherwise opens with `initialize`.
    fn start(mut server: Command, meta: Option<&'static str>) -> Session {
        let mut child = server
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let mut session = Session {
            input: child.stdin.take(),
            output: Some(BufReader::new(child.stdout.take().unwrap())),
            child,
            meta,
        };
        if meta.is_none() {
            session.request(
                1,
                "initialize",
                r#""protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}"#,
            );
            session.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        }
        session
    }

    fn send(&mut self, line: &str) {
        let input = self.input.as_mut().unwrap();
        writeln!(input, "{line}").unwrap();
        input.flush().unwrap();
    }

    /// Sends request `id` and waits for its response line.
    fn request(&mut self, id: u64, method: &str, params: &str) -> String {
        let meta = self.meta.map_or(String::new(), |m| format!("{m},"));
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{meta}{params}}}}}"#
        ));
        let mut reply = String::new();
        loop {
            reply.clear();
            let output = self.output.as_mut().expect("replies read in turn");
            assert!(output.read_line(&mut reply).unwrap() > 0, "the server closed");
            let ours = [format!(r#""id":{id},"#), format!(r#""id":{id}}}"#)];
            if ours.iter().any(|tag| reply.contains(tag.as_str())) {
                return reply;
            }
        }
    }

    fn call(&mut self, id: u64, tool: &str, args: &str) -> String {
        self.request(id, "tools/call", &format!(r#""name":"{tool}","arguments":{args}"#))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        drop(self.input.take());
        let _ = self.child.wait();
    }
}

/// Times [`RATE_CALLS`] calls of `tool` with `args` after a warm-up of ten.
fn rate(session: &mut Session, tool: &str, args: &str) -> Duration {
    for id in 2..12 {
        let reply = session.call(id, tool, args);
        assert!(reply.contains("hello"), "{tool} answered: {reply}");
    }
    let started = Instant::now();
    for id in 100..100 + RATE_CALLS {
        session.call(id, tool, args);
    }
    started.elapsed()
}

/// Runs both measurements against the release `iota_host`.
pub fn run(report: &mut Report, iota_host: &Path) {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("a.txt");
    std::fs::write(&file, "hello\n").unwrap();
    let ours = |meta| {
        let mut server = Command::new(iota_host);
        server
            .args(["--non-interactive", "--root"])
            .arg(root.path())
            .arg("serve");
        Session::start(server, meta)
    };
    let per_second = |d: Duration| RATE_CALLS as f64 / d.as_secs_f64();

    report.line(format!(
        "\n## serve: calls per second over stdio\n\n{RATE_CALLS} `read_file` calls of a 6-byte file, one at a time, each waiting for its reply; ratio = calls per second over the reference's (higher is better).\n"
    ));
    report.line("| server | protocol | calls/s | ratio to the reference |\n|---|---|---:|---:|");
    let modern = rate(&mut ours(Some(MODERN_META)), "read_file", r#"{"path":"a.txt"}"#);
    let legacy = rate(&mut ours(None), "read_file", r#"{"path":"a.txt"}"#);
    let peer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(PEER);
    let reference = peer.exists().then(|| {
        let mut server = Command::new("node");
        server.arg(&peer).arg(root.path());
        let args = format!(r#"{{"path":"{}"}}"#, file.display());
        rate(&mut Session::start(server, None), "read_text_file", &args)
    });
    for (who, protocol, took) in [
        ("iota-host", "2026-07-28", Some(modern)),
        ("iota-host", "2025-06-18", Some(legacy)),
        ("server-filesystem (node)", "2025-06-18", reference),
    ] {
        let Some(took) = took else {
            report.line(format!("| {who} | {protocol} | not installed: npm install --prefix target/mcp-peer @modelcontextprotocol/server-filesystem | |"));
            continue;
        };
        let ratio = reference.map_or("".into(), |r| format!("{:.2}x", per_second(took) / per_second(r)));
        report.line(format!("| {who} | {protocol} | {:.0} | {ratio} |", per_second(took)));
    }

    let mut session = ours(None);
    let calls = [
        ("read_file", r#"{"path":"a.txt"}"#),
        ("grep", r#"{"pattern":"hello"}"#),
        ("list_dir", "{}"),
        ("glob", r#"{"pattern":"*.txt"}"#),
    ];
    let mut after_warm_up = 0;
    for id in 10..10 + CALLS {
        let (tool, args) = calls[(id % 4) as usize];
        session.call(id, tool, args);
        if id == 10 + WARM_UP {
            after_warm_up = rss_kib(session.child.id());
        }
    }
    let end = rss_kib(session.child.id());
    report.line(format!("\n## serve: memory over one long session\n\nRSS of `iota-host serve` after {WARM_UP} calls (read_file, grep, list_dir, glob in turn): {} MiB; after {CALLS}: {} MiB.", after_warm_up / 1024, end / 1024));
    drop(session);

    concurrency(report, iota_host, root.path(), &peer);
}

/// Calls per load level in the concurrency rows.
const LOAD_CALLS: u64 = 2000;

/// What one load level measured: calls per second and latency percentiles.
struct Load {
    per_second: f64,
    p50: Duration,
    p99: Duration,
    /// The server's CPU time (user and system) per call.
    cpu_per_call: Duration,
}

/// CPU time (user + system) process `pid` has used so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as u64;
    Duration::from_secs_f64(ticks as f64 / per_second as f64)
}

/// Keeps `in_flight` requests outstanding on `server` (stdio, handshake era)
/// until [`LOAD_CALLS`] are answered, each the next of `call(i)`; every
/// answer must be a success.
fn load(server: Command, in_flight: u64, call: &dyn Fn(u64) -> (String, String)) -> Load {
    let mut session = Session::start(server, None);
    let output = session.output.take().expect("a fresh session");
    let (tx, replies) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut output = output;
        let mut line = String::new();
        loop {
            line.clear();
            if output.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
            if tx.send((Instant::now(), reply)).is_err() {
                break;
            }
        }
    });
    let mut sent = std::collections::HashMap::new();
    let mut latencies = Vec::with_capacity(LOAD_CALLS as usize);
    let started = Instant::now();
    let mut next = 0;
    let send = |session: &mut Session, sent: &mut std::collections::HashMap<u64, Instant>, i: u64| {
        let (tool, args) = call(i);
        let id = 1000 + i;
        sent.insert(id, Instant::now());
        session.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
        ));
    };
    while next < in_flight.min(LOAD_CALLS) {
        send(&mut session, &mut sent, next);
        next += 1;
    }
    while (latencies.len() as u64) < LOAD_CALLS {
        let (at, reply) = replies.recv().expect("the server answers");
        let Some(id) = reply["id"].as_u64().filter(|id| *id >= 1000) else {
            continue;
        };
        assert!(
            reply["result"]["isError"] != true && reply.get("error").is_none(),
            "call {id}: {reply}"
        );
        latencies.push(at - sent[&id]);
        if next < LOAD_CALLS {
            send(&mut session, &mut sent, next);
            next += 1;
        }
    }
    let took = started.elapsed();
    let cpu = cpu_time(session.child.id());
    drop(session);
    let _ = reader.join();
    latencies.sort();
    let at = |p: usize| latencies[(latencies.len() * p / 100).min(latencies.len() - 1)];
    Load {
        per_second: LOAD_CALLS as f64 / took.as_secs_f64(),
        p50: at(50),
        p99: at(99),
        cpu_per_call: cpu / LOAD_CALLS as u32,
    }
}

/// Many calls in flight on one connection: `read_file` beside the reference
/// server, and a mix with writes (which run alone, in arrival order).
fn concurrency(report: &mut Report, iota_host: &Path, root: &Path, peer: &Path) {
    let config = root.join("load.yaml");
    std::fs::write(&config, "agents:\n  a:\n    tools:\n      code: {auto_write: true}\n").unwrap();
    let ours = || {
        let mut server = Command::new(iota_host);
        server.arg("--config").arg(&config).arg("--root").arg(root).arg("serve");
        server
    };
    let file = root.join("a.txt");
    let read = |_| ("read_file".to_string(), r#"{"path":"a.txt"}"#.to_string());
    let peer_read = |_| {
        let args = format!(r#"{{"path":"{}"}}"#, file.display());
        ("read_text_file".to_string(), args)
    };
    let mixed = |i: u64| match i % 5 {
        0 => ("glob".to_string(), r#"{"pattern":"**/*.txt"}"#.to_string()),
        1 => ("grep".to_string(), r#"{"pattern":"hello"}"#.to_string()),
        2 => ("read_file".to_string(), r#"{"path":"a.txt"}"#.to_string()),
        3 => ("list_dir".to_string(), "{}".to_string()),
        _ => (
            "write_file".to_string(),
            format!(r#"{{"path":"load/w{i}.txt","content":"{i}\n"}}"#),
        ),
    };
    report.line(format!(
        "\n## serve: calls in flight on one connection\n\n{LOAD_CALLS} calls per row, the client keeping N requests outstanding (a reply lets the next go). `read_file` of a 6-byte file beside the reference server; then a mix of glob, grep, read_file, list_dir and write_file (each to its own file), where every write runs alone and in arrival order. The server's CPU per call shows whether waiting costs anything (a spinning wait would grow it with the load). One run.\n"
    ));
    report.line("| in flight | read_file calls/s | p50 | p99 | CPU/call | reference calls/s | p99 | ratio | mixed calls/s | p50 | p99 | CPU/call |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    for in_flight in [1, 16, 64, 500] {
        let reads = load(ours(), in_flight, &read);
        let reference = peer.exists().then(|| {
            let mut server = Command::new("node");
            server.arg(peer).arg(root);
            load(server, in_flight, &peer_read)
        });
        let _ = std::fs::remove_dir_all(root.join("load"));
        let mix = load(ours(), in_flight, &mixed);
        let (ref_rate, ref_p99, ratio) =
            reference
                .as_ref()
                .map_or(("not installed".into(), String::new(), String::new()), |r| {
                    (
                        format!("{:.0}", r.per_second),
                        ms(r.p99),
                        format!("{:.2}x", reads.per_second / r.per_second),
                    )
                });
        let us = |d: Duration| format!("{:.0} µs", d.as_secs_f64() * 1e6);
        report.line(format!(
            "| {in_flight} | {:.0} | {} | {} | {} | {ref_rate} | {ref_p99} | {ratio} | {:.0} | {} | {} | {} |",
            reads.per_second,
            ms(reads.p50),
            ms(reads.p99),
            us(reads.cpu_per_call),
            mix.per_second,
            ms(mix.p50),
            ms(mix.p99),
            us(mix.cpu_per_call)
        ));
    }
}
