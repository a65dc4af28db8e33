//! A misbehaving component is stopped by its limits with an error naming the
//! limit, and the host and every other toolset keep working. Capability
//! grants are checked before a component is instantiated.

use crate::support;

use serde_json::json;
use support::{COMPONENTS, Project};

fn hostile(grant: &str) -> Project {
    hostile_with(grant, "{timeout: 2, memory: 64}")
}

/// The hostile fixture (granted `grant`, with `limits`) beside `code`.
fn hostile_with(grant: &str, limits: &str) -> Project {
    Project::new().config(&format!(
        "toolsets:\n  hostile:\n    path: {COMPONENTS}/hostile.wasm\n    grant: [{grant}]\n    limits: {limits}\nagents:\n  a:\n    tools:\n      hostile:\n      code:\n"
    ))
}

#[test]
fn a_component_importing_an_ungranted_capability_is_refused_at_load() {
    let p = hostile("ui, parallel");
    support::assert_refused_for_process(&p.run(&["tools"]));
}

/// A component's command ends with the component's call: the host kills it at
/// the call's deadline, whatever the component asked for.
#[test]
fn a_granted_process_command_stops_at_the_components_deadline() {
    let p = hostile("process, parallel");
    if !support::sandbox_works() {
        return;
    }
    let tag = support::run_tag();
    let r = p.call("run", json!({"line": format!("sleep 30.{tag}; touch late")}));
    // Killed at the deadline: the component sees no exit code, or is itself
    // stopped by the same deadline first.
    assert!(
        r.text == "[exit None]" || r.text == "toolset \"hostile\" ran past its time limit (2s) and was stopped",
        "{}",
        r.text
    );
    // The command was killed, not left to finish: its file never comes, and
    // its process is gone (polled: a killed process is reaped in moments).
    assert!(!p.path("late").exists());
    support::eventually("the command is gone with its call", || {
        support::processes_matching(&format!("sleep 30.{tag}")).is_empty()
    });
}

#[test]
fn a_granted_process_request_runs_in_the_shell_sandbox() {
    let p = hostile("process, parallel");
    if !support::sandbox_works() {
        // No sandbox: the unsandboxed run needs approval, and nobody can give it.
        let r = p.call("run", json!({"line": "echo hi"}));
        assert!(
            r.is_error
                && r.text
                    .starts_with("shell was not executed: it requires interactive approval"),
            "{}",
            r.text
        );
        return;
    }
    let dir = support::visible_outside_dir();
    let outside = dir.path().join("x");
    let rs = p.calls(&[
        ("run", json!({"line": "echo hi; pwd"})),
        ("run", json!({"line": format!("touch {}", outside.display())})),
        ("run", json!({"line": "exit 4"})),
    ]);
    assert_eq!(rs[0].text, format!("hi\n{}\n[exit Some(0)]", p.root().display()));
    assert!(rs[1].text.contains("Read-only file system"), "{}", rs[1].text);
    assert!(!outside.exists(), "the component's command could not write outside");
    assert_eq!(rs[2].text, "[exit Some(4)]");
}

#[test]
fn an_endless_loop_hits_the_time_limit_and_the_next_call_works() {
    let p = hostile("process, parallel");
    p.write("a.txt", "still here\n");
    let rs = p.calls(&[("spin", json!({})), ("read_file", json!({"path": "a.txt"}))]);
    assert_eq!(
        rs[0].text,
        "toolset \"hostile\" ran past its time limit (2s) and was stopped"
    );
    assert!(rs[0].is_error);
    assert_eq!(rs[1].text, "     1\tstill here");
}

#[test]
fn unbounded_allocation_hits_the_memory_limit_and_the_next_call_works() {
    let p = hostile("process, parallel");
    p.write("a.txt", "still here\n");
    let rs = p.calls(&[
        ("hog", json!({})),
        ("echo", json!({"a": 1})),
        ("read_file", json!({"path": "a.txt"})),
    ]);
    assert_eq!(
        rs[0].text,
        "toolset \"hostile\" ran past its memory limit (64 MiB) and was stopped"
    );
    assert!(rs[0].is_error);
    assert_eq!(rs[1].text, "echo {\"a\":1}", "the same set works again");
    assert_eq!(rs[2].text, "     1\tstill here", "and so does another set");
}

#[test]
fn a_panic_is_an_error_result_naming_it() {
    let p = hostile("process, parallel");
    let rs = p.calls(&[("crash", json!({})), ("echo", json!({}))]);
    assert!(rs[0].is_error);
    assert!(
        rs[0].text.starts_with("toolset \"hostile\" crashed: "),
        "{}",
        rs[0].text
    );
    assert!(rs[0].text.contains("fixture crashed on purpose"), "{}", rs[0].text);
    assert!(!rs[1].is_error);
}

#[test]
fn flooding_stdout_is_stopped() {
    let p = hostile("process, parallel");
    let rs = p.calls(&[("flood", json!({})), ("echo", json!({}))]);
    assert!(rs[0].is_error);
    assert_eq!(
        rs[0].text,
        "toolset \"hostile\" wrote more than 1024 KiB to stdout/stderr and was stopped"
    );
    assert!(!rs[1].is_error);
}

#[test]
fn a_result_over_the_output_limit_is_dropped_with_an_error_naming_it() {
    // The default limit is 1 MiB; the fixture returns 4 MiB.
    let p = hostile("process, parallel");
    let rs = p.calls(&[("huge", json!({})), ("echo", json!({}))]);
    assert!(rs[0].is_error);
    assert_eq!(
        rs[0].text,
        "toolset \"hostile\" returned 4096 KiB, over its output limit (1024 KiB); the result was dropped"
    );
    assert!(!rs[1].is_error);

    // Raised in the config, the same result comes through whole.
    let p = Project::new().config(&format!(
        "toolsets:\n  hostile:\n    path: {COMPONENTS}/hostile.wasm\n    grant: [process, parallel]\n    limits: {{output: 8192}}\nagents:\n  a:\n    tools:\n      hostile:\n"
    ));
    let rs = p.calls(&[("huge", json!({}))]);
    assert!(!rs[0].is_error, "{}", &rs[0].text[..200.min(rs[0].text.len())]);
    assert_eq!(rs[0].text.len(), 4 << 20);
}

/// Every way a component hands the host data is bounded by the host, not by
/// the component's memory: one crossing (strings aliasing one buffer are
/// copied each), the session state it keeps across calls, the task data a
/// call holds, the answers of one bulk read, the files it holds open, and
/// the paths the warm tree remembers.
#[test]
fn a_component_cannot_make_the_host_hold_more_than_its_bounds() {
    let p = hostile("process, parallel");
    p.write("a.txt", "held\n");
    let mib = 1 << 20;
    let rs = p.calls(&[
        // 24 paths aliasing one 4 MiB buffer: 96 MiB, past the 64 MiB memory limit
        // (and under wasmtime's own default of 128 MiB).
        ("alias", json!({"size": 4 * mib, "count": 24})),
        ("alias", json!({"size": 4 * mib, "count": 12})),
        ("keep", json!({"size": mib, "count": 100})),
        ("keep", json!({"size": mib, "count": 60})),
        ("fanout", json!({"pad": 12 * mib, "count": 6})),
        ("echo", json!({})),
        // 10,000 paths that are not there: each answer counts, so one
        // answer is a prefix, however little data it carries.
        ("alias", json!({"size": 10, "count": 10_000})),
        ("hoard_files", json!({"path": "a.txt", "count": 1000})),
        ("hoard_files", json!({"path": "a.txt", "count": 200})),
        (
            "listdir",
            json!({"paths": [format!("{}/{}", p.root().display(), "d/".repeat(2100))]}),
        ),
    ]);
    assert_eq!(
        rs[0].text,
        "toolset \"hostile\" handed the host more in one crossing than its memory limit (64 MiB) left room for beside its memory, and was stopped"
    );
    assert!(rs[0].is_error);
    assert_eq!(rs[1].text, "12 answers", "48 MiB in one crossing is allowed");
    assert_eq!(
        rs[2].text,
        "toolset \"hostile\" kept more than 64 MiB in its session state and was stopped"
    );
    assert!(rs[2].is_error);
    assert_eq!(rs[3].text, "kept 60", "values replaced under the same keys fit again");
    let lines: Vec<&str> = rs[4].text.lines().collect();
    assert_eq!(
        lines,
        [
            "submit refused: too much task data held (inputs and results, at most 64 MiB): wait for some first",
            "task ok: 12582917 bytes",
            "task ok: 12582917 bytes",
            "task ok: 12582917 bytes",
            "task ok: 12582917 bytes",
            "task ok: 12582917 bytes",
        ],
        "five 12 MiB inputs are held, a sixth is not"
    );
    assert!(!rs[5].is_error, "the set works after each refusal");
    let answered: usize = rs[6].text.trim_end_matches(" answers").parse().unwrap();
    assert!((1..=4097).contains(&answered), "{}", rs[6].text);
    assert_eq!(
        rs[7].text,
        "toolset \"hostile\" held more than 256 handles (open files, streams) at once and was stopped"
    );
    assert_eq!(rs[8].text, "holding 200");
    assert_eq!(rs[9].text, "refused: a path longer than 4096 bytes");
}

/// A wait in the host (a WASI sleep) ends at the call's deadline, and the time
/// spent there counts: no epoch tick reaches a call waiting in the host.
#[test]
fn a_sleep_past_the_deadline_is_stopped_at_it() {
    let p = hostile("process, parallel");
    let started = std::time::Instant::now();
    let rs = p.calls(&[
        ("nap", json!({"ms": u64::MAX / 2})),
        ("nap", json!({"ms": 1500})),
        ("echo", json!({})),
    ]);
    assert_eq!(
        rs[0].text,
        "toolset \"hostile\" ran past its time limit (2s) and was stopped"
    );
    assert_eq!(rs[1].text, "rested", "a sleep within the limit");
    assert!(!rs[2].is_error);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );

    // 4.5 s asleep in the host, then a loop: stopped at 5 s of wall time,
    // not 5 s of time in the component (9.5 s).
    let p = hostile_with("process, parallel", "{timeout: 5}");
    let started = std::time::Instant::now();
    let r = p.call("nap", json!({"ms": 4500, "spin": true}));
    let took = started.elapsed();
    assert_eq!(
        r.text,
        "toolset \"hostile\" ran past its time limit (5s) and was stopped"
    );
    assert!(took < std::time::Duration::from_secs(8), "{took:?}");
}

/// WASI `read-directory` reads a whole directory into the host and keeps it
/// while its stream is open: what a store holds that way is bounded.
#[test]
fn directory_listings_held_through_wasi_are_bounded() {
    // Time enough to list 20,000 names 33 times on a loaded machine.
    let p = hostile_with("process, parallel", "{timeout: 60}");
    // 20,000 names of 200 bytes: 5.28 MB a listing, as counted (64 bytes an
    // entry besides its name); twelve fit in 64 MiB, a thirteenth does not.
    for i in 0..20_000 {
        p.write(&format!("big/{i:0>200}"), "");
    }
    let rs = p.calls(&[
        ("hoard_dirs", json!({"path": "big", "count": 20})),
        ("hoard_dirs", json!({"path": "big", "count": 12})),
        ("hoard_dirs", json!({"path": "big", "count": 20, "keep": false})),
    ]);
    assert!(rs[0].text.starts_with("after 12: "), "{}", rs[0].text);
    assert_eq!(rs[1].text, "holding 12, listed 0", "each call's store starts afresh");
    assert_eq!(rs[2].text, "holding 0, listed 20", "a dropped listing is released");
}

/// The process's soft limit of open files is raised to its hard limit: the
/// files components hold are the process's, and 1,024 (a common soft
/// default) is less than one parallel call may hold on four cores.
#[test]
fn the_host_raises_its_soft_open_files_limit() {
    use std::os::unix::process::CommandExt;
    let p = Project::new();
    let (_, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    assert!(hard > 256, "a hard limit to raise to: {hard}");
    let mut cmd = p.command();
    cmd.arg("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null());
    // SAFETY: setrlimit is async-signal-safe, and nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, 256, hard)
                .map_err(std::io::Error::from)
        });
    }
    let mut child = cmd.spawn().unwrap();
    let limits = format!("/proc/{}/limits", child.id());
    let soft = || -> Option<u64> {
        let text = std::fs::read_to_string(&limits).ok()?;
        let line = text.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse().ok()
    };
    support::eventually("the soft limit is raised", || soft() == Some(hard));
    let _ = child.kill();
    let _ = child.wait();
}

/// A stream write past what check-write permitted traps, as WASI says:
/// wasmtime-wasi's streams would take a crossing's worth each (a file
/// stream's written on a thread that outlives the call). Its stdout is the
/// one output stream every component has.
#[test]
fn a_stream_write_past_its_permit_is_stopped() {
    let p = hostile_with("process, parallel", "{}");
    let rs = p.calls(&[
        ("bigwrite", json!({"size": 8 << 20})),
        ("bigwrite", json!({"size": 4096})),
    ]);
    assert_eq!(
        rs[0].text,
        "toolset \"hostile\" wrote more at once than its output stream permitted (check-write) and was stopped"
    );
    assert_eq!(rs[1].text, "wrote 4096", "within the permit");
}

#[test]
fn a_tool_name_collision_fails_the_load_naming_both_sets() {
    let p = Project::new().config(&format!(
        "toolsets:\n  mycode:\n    path: {COMPONENTS}/code.wasm\n    grant: [write, parallel]\nagents:\n  a:\n    tools:\n      code:\n      mycode:\n"
    ));
    let out = p.run(&["tools"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tool \"glob\" is offered by both toolset \"code\" and toolset \"mycode\""),
        "{err}"
    );
}

#[test]
fn inspect_reports_what_a_component_imports() {
    let p = Project::new();
    let report = support::inspect(&p, &format!("{COMPONENTS}/code.wasm"));
    let caps = support::capability_names(&report);
    assert_eq!(
        caps,
        ["read", "write", "session", "parallel"],
        "code reads files, writes the one an approved call names, keeps the ledger and searches on every core; no ui, no process"
    );
    assert_eq!(report["package"], "iota:toolset@0.1.3");
    assert_eq!(report["tools"].as_array().unwrap().len(), 6);
    assert_eq!(report["sha256"].as_str().unwrap().len(), 64);
    // The other built-ins ask for exactly what their specs need.
    let skills = support::inspect(&p, &format!("{COMPONENTS}/skills.wasm"));
    assert_eq!(support::capability_names(&skills), ["read"], "skills only reads");
    assert_eq!(skills["tools"][0]["name"], "load_skill");
    let ask = support::inspect(&p, &format!("{COMPONENTS}/ask.wasm"));
    assert_eq!(support::capability_names(&ask), ["ui"], "ask only puts questions");
    for report in [&skills, &ask] {
        let imports = report["imports"].as_array().unwrap();
        assert!(
            !imports
                .iter()
                .any(|i| i.as_str().unwrap().starts_with("iota:toolset/process")),
            "{imports:?}"
        );
    }
    let out = p.run(&["inspect", &format!("{COMPONENTS}/hostile.wasm")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("process  run commands in the shell sandbox"), "{text}");
    // Its bulk reads count as `read` (see also caps' unit test), its tasks as `parallel`.
    let hostile = support::inspect(&p, &format!("{COMPONENTS}/hostile.wasm"));
    assert_eq!(
        support::capability_names(&hostile),
        ["read", "session", "process", "parallel"]
    );
    let imports: Vec<&str> = hostile["imports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i.as_str())
        .collect();
    assert!(imports.contains(&"iota:toolset/files@0.1.3"), "{imports:?}");
    assert!(imports.contains(&"iota:toolset/workers@0.1.3"), "{imports:?}");
}

#[test]
fn the_rust_example_toolset_loads_answers_and_asks_only_to_read() {
    let p = Project::new().config(&format!(
        "toolsets:\n  todo: {COMPONENTS}/todo.wasm\nagents:\n  a:\n    tools:\n      todo:\n"
    ));
    p.write("src/a.rs", "fn a() {}\n// TODO: test a\n");
    p.write("b.txt", "FIXME later\n");
    p.write(".git/x", "TODO not this\n");
    let rs = p.calls(&[
        ("todos", json!({})),
        ("todos", json!({"path": "src"})),
        ("todos", json!({"path": "../x"})),
    ]);
    assert_eq!(rs[0].text, "b.txt:1: FIXME later\nsrc/a.rs:2: // TODO: test a");
    assert_eq!(rs[1].text, "src/a.rs:2: // TODO: test a");
    assert_eq!(
        rs[2].text,
        format!("path is outside the project root ({}): ../x", p.root().display())
    );
    let report = support::inspect(&p, &format!("{COMPONENTS}/todo.wasm"));
    let caps = support::capability_names(&report);
    assert_eq!(caps, ["read"], "it reads files and asks for nothing else");
    assert_eq!(report["config"]["missing"], serde_json::json!([]));
}

/// A toolset built against `iota:toolset@0.1.0`, before `files.stat-names`
/// (0.1.1), `files.list-dir-packed` (0.1.2) and `writes` (0.1.3), still loads and answers:
/// the host's interfaces are a
/// semver-compatible superset, and wasmtime resolves 0.1.0 names to them.
/// The older build is today's example with every contract name set back
/// to 0.1.0 (the same length, so the binary stays valid).
#[test]
fn a_toolset_built_against_the_previous_contract_version_still_loads() {
    let built = std::fs::read(format!("{COMPONENTS}/todo.wasm")).unwrap();
    let names = regex::bytes::Regex::new(r"(iota:toolset(/[a-z-]+)?)@0\.1\.3").unwrap();
    let older = names.replace_all(&built, &b"${1}@0.1.0"[..]).into_owned();
    assert!(
        names.find(&older).is_none() && older != built,
        "the example names the contract's version"
    );
    let p = Project::new();
    let path = p.outside().join("todo-0.1.0.wasm");
    std::fs::write(&path, &older).unwrap();
    let report = support::inspect(&p, &path.to_string_lossy());
    assert_eq!(report["package"], "iota:toolset@0.1.0");
    assert_eq!(support::capability_names(&report), ["read"]);
    let p = p.config(&format!(
        "toolsets:\n  todo: {}\nagents:\n  a:\n    tools:\n      todo:\n",
        path.display()
    ));
    p.write("b.txt", "FIXME later\n");
    assert_eq!(p.call("todos", json!({})).text, "b.txt:1: FIXME later");
}

#[test]
fn sockets_are_linked_but_every_way_out_fails() {
    let p = hostile("process, parallel");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    udp.set_nonblocking(true).unwrap();
    let addr = tcp.local_addr().unwrap().to_string();
    let r = p.call("net", json!({"addr": addr}));
    assert!(!r.text.contains("Ok("), "no socket operation succeeded: {}", r.text);
    assert!(tcp.accept().is_err(), "no TCP connection reached the host");
    let mut buf = [0u8; 8];
    assert!(udp.recv_from(&mut buf).is_err(), "no UDP datagram reached the host");
    let out = p.run(&["inspect", &format!("{COMPONENTS}/hostile.wasm")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("network  imports wasi:sockets"), "{text}");
}

/// componentize-py, which .ci/run installs into target/mcp-venv.
fn componentize_py() -> Option<std::path::PathBuf> {
    let bin = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-venv/bin/componentize-py");
    support::require(
        "componentize-py (target/mcp-venv/bin/pip install componentize-py)",
        bin.exists(),
    )
    .then_some(bin)
}

#[test]
fn the_python_example_toolset_builds_loads_and_answers() {
    let Some(componentize) = componentize_py() else { return };
    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let p = Project::new();
    let wasm = p.outside().join("wordcount.wasm");
    let out = std::process::Command::new(componentize)
        .current_dir(&repo)
        .args([
            "-d",
            "wit",
            "-w",
            "reader",
            "componentize",
            "-p",
            "plugins/examples/wordcount",
            "app",
            "-o",
        ])
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let p = p.config(&format!(
        "toolsets:\n  wc: {}\nagents:\n  a:\n    tools:\n      wc:\n",
        wasm.display()
    ));
    p.write("a.txt", "one two\nthree\n");
    let rs = p.calls(&[
        ("wordcount", json!({"path": "a.txt"})),
        ("wordcount", json!({"path": "../x"})),
        ("wordcount", json!({})),
    ]);
    assert_eq!(rs[0].text, "2 lines, 3 words, 14 bytes");
    assert_eq!(
        rs[1].text,
        format!("path is outside the project root ({}): ../x", p.root().display())
    );
    assert_eq!(rs[2].text, "missing required argument: path");

    let report = support::inspect(&p, wasm.to_str().unwrap());
    let caps = support::capability_names(&report);
    assert_eq!(
        caps,
        ["read"],
        "CPython reads files; its socket imports are linked but disabled"
    );
    assert!(!report["disabled_imports"].as_array().unwrap().is_empty());
    // Its least-privilege declaration loads it with exactly what it asks.
    crate::supply_chain::policy_loads_exactly(wasm.to_str().unwrap(), "wordcount", "wordcount", &[]);

    // The same component over MCP, with the official Python SDK.
    let Some(python) = support::python() else { return };
    let step = support::run_client(&python, "mcp_call.py", &p, &["wordcount", r#"{"path": "a.txt"}"#]);
    let tools = step("list")["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "wordcount");
    assert_eq!(tools[0]["schema"]["required"], json!(["path"]));
    assert_eq!(step("call")["text"], "2 lines, 3 words, 14 bytes");
    assert_eq!(step("call")["is_error"], false);
}

#[test]
fn more_calls_than_pooled_instances_wait_for_a_slot() {
    let p = hostile("process, parallel");
    let host = support::LibraryHost::new(&p);
    let calls = iota_host::internals::POOLED_INSTANCES as usize + 8;
    std::thread::scope(|scope| {
        let naps: Vec<_> = (0..calls)
            .map(|_| scope.spawn(|| host.call("nap", json!({"ms": 300}))))
            .collect();
        for nap in naps {
            support::assert_ok(&nap.join().unwrap(), "rested");
        }
    });
}

#[test]
fn a_reused_instance_slot_keeps_nothing_of_the_last_call() {
    let p = hostile("process, parallel");
    let host = support::LibraryHost::new(&p);
    for _ in 0..3 {
        // The scan finds the secret in the instance that left it...
        support::assert_ok(&host.call("stash", json!({})), "run found: true, static set: true");
        // ...and nothing of it in the next one, though it reuses the slot.
        support::assert_ok(&host.call("peek", json!({})), "run found: false, static set: false");
    }
}

/// A component with only the default grants cannot make the host read a
/// huge file: whatever size it allows (here `u64::MAX`, which once
/// overflowed), a file over 20 MB is answered "too large" without being read,
/// and the host's peak memory stays small.
#[test]
fn bulk_reads_are_bounded_by_the_host_whatever_the_component_allows() {
    // (The fixture imports `process` and `workers` too, so they are granted
    // for it to load at all; reading in bulk needs only the default grants.)
    let p = hostile("process, parallel");
    let huge = std::fs::File::create(p.path("huge.bin")).unwrap();
    huge.set_len(5 << 30).unwrap();
    std::fs::write(p.path("big.bin"), vec![b'b'; 30 << 20]).unwrap();
    std::fs::write(p.path("ok.bin"), vec![b'o'; 1 << 20]).unwrap();
    let paths: Vec<String> = ["huge.bin", "big.bin", "ok.bin"]
        .iter()
        .map(|f| p.path(f).display().to_string())
        .collect();
    let args = json!({"paths": paths, "max": u64::MAX}).to_string();
    let run = support::run_measured(p.command().args(["call", "bulk", &args]));
    assert_eq!(
        run.stdout,
        format!(
            "too large: {}\ntoo large: {}\ndata: {} bytes: ooooo…ooooo\n",
            5u64 << 30,
            30 << 20,
            1 << 20
        )
    );
    let peak_mib = run.peak_mib;
    assert!(peak_mib < 256, "host peak RSS {peak_mib} MiB");
}

/// What the host may hold for a component beyond its memory limit and the
/// host's own base: the allocator's rounding, the last string lifted before
/// the crossing's budget ran out, the instance's bookkeeping.
const SLACK_MIB: i64 = 8;

/// `p` configured with the hostile fixture granted `process, parallel`,
/// `config` as its set's value and a memory limit of `memory` MiB: the same
/// project, so the component compiled once stays compiled.
fn hostile_configured(p: Project, config: &str, memory: u64) -> Project {
    p.config(&format!(
        "toolsets:\n  hostile:\n    path: {COMPONENTS}/hostile.wasm\n    grant: [process, parallel]\n    limits: {{memory: {memory}}}\nagents:\n  a:\n    tools:\n      hostile: {config}\n"
    ))
}

/// What the host does for a component's description or a list it hands
/// over is bounded by what the component paid for: thirty tool specs whose
/// schemas all point at one 1 MiB string (`[0,0,…]`, the most JSON values per
/// byte), a schema nested 200 deep, and 2.4 million empty paths to
/// `read-files-containing`. The description is refused at load naming its
/// bound, the read answers a bounded prefix, and the host's peak memory
/// stays within the set's memory limit plus the same host's peak without
/// the attack (its fixed base), measured with wait4.
#[test]
fn what_a_component_hands_the_host_costs_the_host_no_more_than_its_memory_limit() {
    let memory = 32;
    let mut p = hostile_configured(Project::new(), "{}", memory);
    // The first run compiles the component (its peak is Cranelift's); the
    // base is a run that finds it compiled, as every run below does.
    assert_eq!(p.run(&["tools"]).status.code(), Some(0));
    let base = support::run_measured(p.command().args(["tools"]));
    assert_eq!(base.code, 0, "{}", base.stderr);
    let within = |peak: i64, what: &str| {
        assert!(
            peak <= base.peak_mib + memory as i64 + SLACK_MIB,
            "{what}: host peak {peak} MiB, base {} MiB, memory limit {memory} MiB",
            base.peak_mib
        );
    };
    for (config, refusal) in [
        (
            "{schemas: {count: 20, size: 1048576}}",
            "toolset \"hostile\" describes its tools in 20481 KiB, more than the 1024 KiB a set's description may take",
        ),
        (
            "{schemas: {count: 40, size: 1048576}}",
            "toolset \"hostile\" handed the host more in one crossing than its memory limit (32 MiB) left room for beside its memory, and was stopped",
        ),
        (
            "{schemas: {count: 1, deep: 200}}",
            "toolset \"hostile\": the parameters of tool \"t0\" nest 200 deep, more than 32",
        ),
        (
            "{schemas: {count: 300, size: 8}}",
            "toolset \"hostile\" describes 300 tools, more than the 256 a set may have",
        ),
    ] {
        p = hostile_configured(p, config, memory);
        let run = support::run_measured(p.command().args(["tools"]));
        assert_eq!(run.code, 2, "{config}: {}", run.stdout);
        assert!(run.stderr.contains(refusal), "{config}: {}", run.stderr);
        within(run.peak_mib, config);
        eprintln!("{config}: host peak {} MiB, base {} MiB", run.peak_mib, base.peak_mib);
    }
    // 2.4 million empty paths, all aliasing one buffer: wasmtime would copy
    // each (24 bytes), more than the memory limit leaves room for beside
    // the component's own 48 MB of them; 400,000 fit, and the host looks at
    // no more of them than one answer holds.
    let p = hostile_configured(p, "{}", 64);
    for (count, stopped) in [(2_400_000, true), (400_000, false)] {
        let args = json!({"size": 0, "count": count, "needles": ["x"]}).to_string();
        let run = support::run_measured(p.command().args(["call", "alias", &args]));
        if stopped {
            assert_eq!(
                run.stdout.trim_end(),
                "toolset \"hostile\" handed the host more in one crossing than its memory limit (64 MiB) left room for beside its memory, and was stopped"
            );
        } else {
            let answered: usize = run.stdout.trim_end().trim_end_matches(" answers").parse().unwrap_or(0);
            assert!((1..=4097).contains(&answered), "{}{}", run.stdout, run.stderr);
        }
        eprintln!(
            "{count} paths: host peak {} MiB, base {} MiB",
            run.peak_mib, base.peak_mib
        );
        assert!(
            run.peak_mib <= base.peak_mib + 64 + SLACK_MIB,
            "{count} paths to read-files-containing: host peak {} MiB, base {} MiB",
            run.peak_mib,
            base.peak_mib
        );
    }
}
