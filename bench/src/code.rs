//! The code toolset against its native peers, side by side in one run.
//!
//! Corpora: (a) the cargo registry sources on this machine, (b) a generated
//! tree of 100,000 files (fixed seed). Contenders for each operation: our tool
//! through the real component in process (the path iota takes), the same tool
//! code built natively, the command-line peer (`rg`, `fd`, `ls`), and
//! yoagent's tools (`search` runs rg or grep underneath, `list_files` runs
//! find). Then a small read_file in process and `iota-host call` end to end
//! (warm compile cache, and the cold first run) with peak RSS.
//!
//! Patterns match rarely, so every contender scans the whole tree (our tools
//! stop at 100 matches; rg and fd do not).

use crate::report::Report;
use crate::timing::{median, median_command, mib, paired, peak_rss, run_timed};
use crate::tree;
use iota_host::{Host, HostSession};
use iota_toolset::jail::Jail;
use iota_toolset::session::MemorySession;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Runs of each in-process operation (the median is reported).
const RUNS: usize = 7;
/// A pattern with two alternatives: the regex engine's slow case in Wasm.
const ALTERNATION: &str = "zq[x]jv_never_|fn iota_bench_marker";
/// A plain identifier, what a model greps for most.
const LITERAL: &str = "iota_bench_marker_never";
/// The same without regard to case: a literal per case variant.
const IGNORING_CASE: &str = "(?i)iota_bench_marker_never";
/// The glob every contender runs.
const GLOB: &str = "*.toml";

/// Runs every code-toolset measurement into `report`.
pub fn run(report: &mut Report, iota_host: &Path) {
    let peers = Peers::find(report);
    if let Some(registry) = registry_sources() {
        corpus(report, "cargo registry sources", &registry, &peers, iota_host);
    } else {
        report.line("\n(no cargo registry sources on this machine: corpus (a) left out)");
    }
    let generated = generated_tree();
    corpus(report, "generated tree, 100,000 files", &generated, &peers, iota_host);
    small_calls(report, &generated, iota_host);
}

/// Only the small read_file calls (in process, end to end warm and cold), on
/// the generated tree: a quick run while working on call overhead.
pub fn run_small(report: &mut Report, iota_host: &Path) {
    small_calls(report, &generated_tree(), iota_host);
}

/// Only the grep rows on the registry sources, ours against rg: a quick run
/// while working on the search.
pub fn run_grep(report: &mut Report) {
    let peers = Peers::find(report);
    let Some(registry) = registry_sources() else {
        report.line("\n(no cargo registry sources on this machine)");
        return;
    };
    report.table(&format!(
        "grep on the cargo registry sources: {} files",
        tree::count_files(&registry)
    ));
    grep_rows(report, &Component::load(&registry), &registry, &peers, None);
}

/// Files in the generated tree (the size the performance targets name).
const GENERATED_FILES: usize = 100_000;

fn generated_tree() -> PathBuf {
    let at = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/tmp/bench-tree-100k");
    tree::generate(&at, GENERATED_FILES)
}

fn registry_sources() -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = cargo_home.join("registry").join("src");
    src.is_dir().then(|| std::fs::canonicalize(src).unwrap())
}

/// The command-line peers found on PATH.
struct Peers {
    rg: Option<&'static str>,
    fd: Option<&'static str>,
}

impl Peers {
    fn find(report: &mut Report) -> Peers {
        let has = |name: &str| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let peers = Peers {
            rg: has("rg").then_some("rg"),
            fd: ["fd", "fdfind"].into_iter().find(|n| has(n)),
        };
        if peers.rg.is_none() || peers.fd.is_none() {
            report.line("\n(rg or fd missing: apt-get install ripgrep fd-find for every peer column)");
        }
        peers
    }
}

/// Our tools through the component, in process, as iota runs them.
struct Component {
    host: Host,
    /// One session across calls: its tree is warm after the first.
    session: HostSession,
}

impl Component {
    fn load(root: &Path) -> Component {
        let host = Host::builder()
            .config_yaml("agents:\n  b:\n    tools:\n      code:\n")
            .root(root)
            .build()
            .unwrap();
        Component {
            session: host.session(),
            host,
        }
    }

    /// A call in a session of its own: nothing of the tree is known yet.
    fn call(&self, tool: &str, args: &Value) -> String {
        Component::checked(tool, self.host.session().call(tool, args.clone()))
    }

    /// A call in the session every such call shares (as an agent calls,
    /// over one MCP connection): the tree is warm from the calls before.
    fn call_again(&self, tool: &str, args: &Value) -> String {
        Component::checked(tool, self.session.call(tool, args.clone()))
    }

    fn checked(tool: &str, result: iota_host::CallResult) -> String {
        assert!(!result.is_error, "{tool}: {}", result.text);
        result.text
    }
}

/// The same tool code, built natively.
fn native(root: &Path, tool: &str, args: &Value) {
    let session = MemorySession::default();
    let ctx = iota_code::Ctx {
        jail: Jail::new(root),
        session: &session,
    };
    let result = iota_code::invoke(&ctx, &iota_code::CodeConfig::default(), tool, &args.to_string());
    assert!(!result.is_error, "{tool}: {}", result.text);
}

/// yoagent's tools, in process on a Tokio runtime.
struct Yoagent {
    runtime: tokio::runtime::Runtime,
}

impl Yoagent {
    fn new() -> Yoagent {
        Yoagent {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        }
    }

    fn call(&self, tool: &dyn yoagent::types::AgentTool, args: Value) {
        let ctx = yoagent::types::ToolContext::new("bench", tool.name());
        let result = self.runtime.block_on(tool.execute(args, ctx));
        assert!(result.is_ok(), "yoagent {}: {:?}", tool.name(), result.err());
    }
}

/// `ours` against the peer command, paired run by run ([`paired`]); the
/// peer's time is `None` when it is not installed (ours is then timed alone).
fn against_peer(ours: impl FnMut(), program: Option<&str>, args: &[&str], cwd: &Path) -> (Duration, Option<Duration>) {
    let Some(program) = program else {
        return (median(RUNS, ours), None);
    };
    let peer = || {
        run_timed(Command::new(program).args(args).current_dir(cwd));
    };
    let (ours, peer) = paired(RUNS, ours, peer);
    (ours, Some(peer))
}

fn peer_time(program: Option<&str>, args: &[&str], cwd: &Path) -> Option<Duration> {
    let program = program?;
    Some(
        median_command(RUNS, || {
            let mut cmd = Command::new(program);
            cmd.args(args).current_dir(cwd);
            cmd
        })
        .0,
    )
}

/// Our grep against rg (and, with `yoagent`, the native build of the same
/// code and yoagent's search) for the literal and the alternation.
fn grep_rows(report: &mut Report, ours: &Component, root: &Path, peers: &Peers, yoagent: Option<&Yoagent>) {
    for (label, pattern) in [
        ("grep, literal", LITERAL),
        ("grep, alternation", ALTERNATION),
        ("grep, ignoring case", IGNORING_CASE),
    ] {
        let args = json!({ "pattern": pattern });
        let rg_args = |extra: &[&'static str]| {
            let mut rg_args = vec!["-uu", "-n", "--no-heading"];
            rg_args.extend_from_slice(extra);
            rg_args.extend_from_slice(&["-e", pattern, "."]);
            rg_args
        };
        let (time, rg2) = against_peer(|| drop(ours.call("grep", &args)), peers.rg, &rg_args(&[]), root);
        report.row(label, time, "rg -j1", peer_time(peers.rg, &rg_args(&["-j1"]), root));
        report.row(label, time, "rg (2 threads)", rg2);
        // The session's first search lists, its second watches and keeps.
        ours.call_again("grep", &args);
        ours.call_again("grep", &args);
        let (again, rg2) = against_peer(|| drop(ours.call_again("grep", &args)), peers.rg, &rg_args(&[]), root);
        report.row(&format!("{label}, repeated in a session"), again, "rg (2 threads)", rg2);
        let Some(yoagent) = yoagent else { continue };
        let search = yoagent::tools::SearchTool::new().with_root(root.to_string_lossy());
        report.row(
            label,
            time,
            "same code, native",
            Some(median(RUNS, || native(root, "grep", &args))),
        );
        let yo = median(RUNS, || {
            yoagent.call(&search, json!({ "pattern": pattern, "case_sensitive": true }))
        });
        report.row(label, time, "yoagent search", Some(yo));
    }
}

fn corpus(report: &mut Report, name: &str, root: &Path, peers: &Peers, iota_host: &Path) {
    let ours = Component::load(root);
    let yoagent = Yoagent::new();
    let list_files = yoagent::tools::ListFilesTool::new();
    let at = root.to_string_lossy().into_owned();
    let files = tree::count_files(root);
    report.table(&format!(
        "{name}: {files} files, {}",
        human_size(tree::total_size(root))
    ));

    grep_rows(report, &ours, root, peers, Some(&yoagent));
    report.line(
        "| grep, files with matches | — | rg -l | — | not a mode of the spec's grep (its output is path:line: text) |",
    );

    let args = json!({ "pattern": GLOB });
    let fd_args = ["-uu", "-g", GLOB, "."];
    let (time, fd) = against_peer(|| drop(ours.call("glob", &args)), peers.fd, &fd_args, root);
    report.row("glob", time, "fd -uu -g", fd);
    ours.call_again("glob", &args);
    ours.call_again("glob", &args);
    let (again, fd) = against_peer(|| drop(ours.call_again("glob", &args)), peers.fd, &fd_args, root);
    report.row("glob, repeated in a session", again, "fd -uu -g", fd);
    report.row(
        "glob",
        time,
        "same code, native",
        Some(median(RUNS, || native(root, "glob", &args))),
    );
    let yo = median(RUNS, || {
        yoagent.call(&list_files, json!({ "path": at, "pattern": GLOB, "max_depth": 64 }))
    });
    report.row("glob", time, "yoagent list_files", Some(yo));

    below_root_rows(report, &ours, root, peers);

    // list_dir on the widest directory of the corpus.
    let (dir, entries) = tree::widest_dir(root);
    let rel = dir.strip_prefix(root).unwrap().to_string_lossy().into_owned();
    let label = format!("list_dir ({entries} entries)");
    let args = json!({ "path": if rel.is_empty() { ".".to_string() } else { rel.clone() } });
    let time = median(RUNS, || {
        ours.call("list_dir", &args);
    });
    report.row(
        &label,
        time,
        "ls -la",
        peer_time(Some("ls"), &["-la", dir.to_str().unwrap()], root),
    );
    report.row(
        &label,
        time,
        "same code, native",
        Some(median(RUNS, || native(root, "list_dir", &args))),
    );
    let yo = median(RUNS, || {
        yoagent.call(&list_files, json!({ "path": dir.to_string_lossy(), "max_depth": 1 }))
    });
    report.row(&label, time, "yoagent list_files", Some(yo));

    // The product as an agent runs it: one process per call, compile cache warm.
    let grep = json!({"pattern": ALTERNATION});
    end_to_end(
        report,
        iota_host,
        root,
        "grep",
        &grep,
        ("rg", peers.rg),
        &["-uu", "-n", "-e", ALTERNATION, "."],
    );
    let glob = json!({"pattern": GLOB});
    end_to_end(
        report,
        iota_host,
        root,
        "glob",
        &glob,
        ("fd", peers.fd),
        &["-uu", "-g", GLOB, "."],
    );
}

/// grep and glob with a `path`: the largest part of the tree
/// ([`tree::largest_part`]), in a session whose searches all start there (the tree keeps the
/// directories above it only by listing them itself), against the peers
/// run in that directory.
fn below_root_rows(report: &mut Report, ours: &Component, root: &Path, peers: &Peers) {
    let (dir, files) = tree::largest_part(root);
    let name = dir.strip_prefix(root).unwrap().to_string_lossy().into_owned();
    let rows = [
        (
            "grep, literal",
            json!({ "pattern": LITERAL, "path": name }),
            peers.rg,
            vec!["-uu", "-n", "--no-heading", "-e", LITERAL, "."],
        ),
        (
            "glob",
            json!({ "pattern": GLOB, "path": name }),
            peers.fd,
            vec!["-uu", "-g", GLOB, "."],
        ),
    ];
    for (label, args, peer, peer_args) in rows {
        let tool = label.split(',').next().unwrap();
        let label = format!("{label}, below one directory ({files} files)");
        let peer_name = format!("{} in it", peer.unwrap_or("peer"));
        let (time, first_peer) = against_peer(|| drop(ours.call(tool, &args)), peer, &peer_args, &dir);
        report.row(&label, time, &peer_name, first_peer);
        let session = ours.host.session();
        let call = || Component::checked(tool, session.call(tool, args.clone()));
        call();
        call();
        let (again, peer) = against_peer(|| drop(call()), peer, &peer_args, &dir);
        report.row(&format!("{label}, repeated in a session"), again, &peer_name, peer);
    }
}

/// `iota-host call TOOL ARGS` as one process, against the peer's command
/// line, with both peak RSS.
fn end_to_end(
    report: &mut Report,
    iota_host: &Path,
    root: &Path,
    tool: &str,
    args: &Value,
    (peer_name, peer): (&str, Option<&str>),
    peer_args: &[&str],
) {
    let ours = || {
        let mut cmd = Command::new(iota_host);
        cmd.arg("--root").arg(root).args(["call", tool, &args.to_string()]);
        cmd
    };
    let (time, peer_time) = against_peer(
        || {
            run_timed(&mut ours());
        },
        peer,
        peer_args,
        root,
    );
    let peer_rss = peer.and_then(|peer| peak_rss(Command::new(peer).args(peer_args).current_dir(root)));
    report.row(
        &format!(
            "`iota-host call {tool}`, end to end (peak RSS {})",
            mib(peak_rss(&ours()))
        ),
        time,
        &format!("{peer_name} (peak RSS {})", mib(peer_rss)),
        peer_time,
    );
}

fn small_calls(report: &mut Report, root: &Path, iota_host: &Path) {
    let ours = Component::load(root);
    let file = "d0000/f00001.rs";
    let args = json!({ "path": file });
    report.table("small read_file (one 1 KB file)");
    let in_process = median(500, || {
        ours.call("read_file", &args);
    });
    let native_time = median(500, || native(root, "read_file", &args));
    report.row(
        "read_file in process (fresh instance per call)",
        in_process,
        "same code, native",
        Some(native_time),
    );
    let call = |cache: Option<&Path>| {
        let mut cmd = Command::new(iota_host);
        cmd.arg("--root")
            .arg(root)
            .args(["call", "read_file", &args.to_string()]);
        if let Some(cache) = cache {
            cmd.env("IOTA_CACHE_DIR", cache);
        }
        cmd
    };
    let (warm, rss) = median_command(30, || call(None));
    let (cat, _) = median_command(30, || {
        let mut cmd = Command::new("cat");
        cmd.arg(root.join(file));
        cmd
    });
    report.row(
        &format!("`iota-host call read_file`, warm cache (peak RSS {})", mib(rss)),
        warm,
        "cat",
        Some(cat),
    );
    // Cold: an empty compile cache, so the first call compiles code.wasm.
    let cold_cache = tempfile::tempdir().unwrap();
    let cold = crate::timing::run_timed(&mut call(Some(cold_cache.path())));
    let cold_cache = tempfile::tempdir().unwrap();
    let cold_rss = crate::timing::peak_rss(&call(Some(cold_cache.path())));
    report.row(
        &format!(
            "`iota-host call read_file`, cold first run (peak RSS {})",
            mib(cold_rss)
        ),
        cold,
        "cat",
        Some(cat),
    );
}

fn human_size(bytes: u64) -> String {
    format!("{:.0} MB", bytes as f64 / 1e6)
}
