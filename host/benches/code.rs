//! The code toolset against its native peers, side by side in one run.
//!
//! Corpora: (a) the cargo registry sources on this machine, (b) a generated
//! tree of 20,000 files (fixed seed). For each: grep through the component
//! (in process, the path iota takes), the same tool code built natively, and
//! `rg` with one thread and with its default threads; glob against `fd`. Then
//! a small read_file call in process, and `iota-host call read_file` end to
//! end against `cat`. Prints medians and ratios; never asserts on time.
//!
//! Patterns match rarely, so every contender scans the whole tree (the tools
//! stop at 100 matches; rg and fd do not).

mod common;

use common::{median, ms};
use iota_host::agent::AgentTools;
use iota_host::caps::ui::{NoUi, Ui};
use iota_host::config::Config;
use iota_host::engine::Engine;
use iota_host::round::Call;
use iota_host::session::Session;
use iota_toolset::jail::Jail;
use iota_toolset::session::MemorySession;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const GREP_PATTERN: &str = "zq[x]jv_never_|fn iota_bench_marker";
const GLOB_PATTERN: &str = "*.toml";

fn main() {
    let registry = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|h| h.join("registry").join("src"))
        .filter(|p| p.is_dir());
    let generated = generate_tree(
        &PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-tree-20k"),
        20_000,
    );
    let peers = Peers::find();
    println!("# iota-host code toolset benchmark\n");
    println!(
        "machine: {} cores; medians; ratio = ours / peer (lower is better)\n",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if let Some(registry) = &registry {
        corpus("cargo registry sources", registry, &peers);
    } else {
        println!("(no cargo registry sources found: corpus (a) skipped)\n");
    }
    corpus("generated tree, 20,000 files", &generated, &peers);
    small_calls(&generated, &peers);
}

struct Peers {
    rg: Option<String>,
    fd: Option<String>,
}

impl Peers {
    fn find() -> Peers {
        let has = |name: &str| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let rg = has("rg").then(|| "rg".to_string());
        let fd = ["fd", "fdfind"].into_iter().find(|n| has(n)).map(str::to_string);
        if rg.is_none() || fd.is_none() {
            println!("(install ripgrep and fd-find for the peer columns: apt-get install ripgrep fd-find)\n");
        }
        Peers { rg, fd }
    }
}

fn run_quiet(cmd: &mut Command) {
    let out = cmd.output().expect("peer command runs");
    assert!(out.status.code().is_some_and(|c| c <= 1), "peer failed: {cmd:?}");
}

fn host_for(root: &Path) -> (AgentTools, Arc<Session>, Arc<dyn Ui>) {
    let config = Config::parse("agents:\n  b:\n    tools:\n      code:\n", "bench", Path::new(".")).unwrap();
    let engine = Engine::new().unwrap();
    let ui: Arc<dyn Ui> = Arc::new(NoUi);
    let (tools, _) = AgentTools::load(&engine, &config, config.agent(None).unwrap(), root, &ui).unwrap();
    (tools, Arc::new(Session::new()), ui)
}

fn row(what: &str, ours: Duration, peer_name: &str, peer: Option<Duration>) {
    match peer {
        Some(p) => println!(
            "| {what} | {} | {peer_name} | {} | {:.2}x |",
            ms(ours),
            ms(p),
            ours.as_secs_f64() / p.as_secs_f64()
        ),
        None => println!("| {what} | {} | {peer_name} | n/a | n/a |", ms(ours)),
    }
}

fn corpus(name: &str, root: &Path, peers: &Peers) {
    let root = std::fs::canonicalize(root).unwrap();
    let (tools, session, ui) = host_for(&root);
    let call = |tool: &str, args: serde_json::Value| {
        let r = tools.call(
            &session,
            &ui,
            &Call {
                tool: tool.into(),
                args: args.to_string(),
            },
        );
        assert!(!r.result.is_error, "{}", r.result.text);
        r.result.text
    };
    let native_session = MemorySession::default();
    let native_ctx = iota_code::Ctx {
        jail: Jail::new(&root),
        session: &native_session,
    };
    let native_config = iota_code::CodeConfig::default();
    let native = |tool: &str, args: serde_json::Value| {
        let r = iota_code::invoke(&native_ctx, &native_config, tool, &args.to_string());
        assert!(!r.is_error, "{}", r.text);
    };
    let runs = 5;
    let grep_args = serde_json::json!({"pattern": GREP_PATTERN});
    let glob_args = serde_json::json!({"pattern": GLOB_PATTERN});

    let grep_ours = median(runs, || {
        call("grep", grep_args.clone());
    });
    let grep_native = median(runs, || native("grep", grep_args.clone()));
    let rg = |threads: Option<&str>| {
        peers.rg.as_ref().map(|rg| {
            median(runs, || {
                let mut cmd = Command::new(rg);
                cmd.args(["-uu", "-n", "--no-heading"]);
                if let Some(j) = threads {
                    cmd.args(["-j", j]);
                }
                run_quiet(cmd.arg("-e").arg(GREP_PATTERN).arg(&root));
            })
        })
    };
    let (rg1, rg_default) = (rg(Some("1")), rg(None));
    let glob_ours = median(runs, || {
        call("glob", glob_args.clone());
    });
    let glob_native = median(runs, || native("glob", glob_args.clone()));
    let fd = peers.fd.as_ref().map(|fd| {
        median(runs, || {
            run_quiet(
                Command::new(fd)
                    .args(["-uu", "-g", GLOB_PATTERN, "."])
                    .current_dir(&root),
            )
        })
    });
    let files = count_files(&root);
    println!("## {name} ({files} files, {})\n", root.display());
    println!("| operation | ours (component) | peer | peer time | ratio |");
    println!("|---|---|---|---|---|");
    row("grep", grep_ours, "rg -j1", rg1);
    row("grep", grep_ours, "rg (default threads)", rg_default);
    row("grep", grep_ours, "same code, native", Some(grep_native));
    row("glob", glob_ours, "fd -uu -g", fd);
    row("glob", glob_ours, "same code, native", Some(glob_native));
    println!();
}

fn small_calls(root: &Path, peers: &Peers) {
    let _ = peers;
    let root = std::fs::canonicalize(root).unwrap();
    let (tools, session, ui) = host_for(&root);
    let args = serde_json::json!({"path": "d000/f00001.rs"}).to_string();
    let call = Call {
        tool: "read_file".into(),
        args: args.clone(),
    };
    let in_process = median(500, || {
        tools.call(&session, &ui, &call);
    });
    let native_session = MemorySession::default();
    let ctx = iota_code::Ctx {
        jail: Jail::new(&root),
        session: &native_session,
    };
    let native = median(500, || {
        iota_code::invoke(&ctx, &iota_code::CodeConfig::default(), "read_file", &args);
    });
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_iota-host"));
    let end_to_end = median(30, || {
        run_quiet(
            Command::new(&bin)
                .arg("--root")
                .arg(&root)
                .args(["call", "read_file", &args]),
        );
    });
    let cat = median(30, || run_quiet(Command::new("cat").arg(root.join("d000/f00001.rs"))));
    println!("## small read_file (one 1 KB file)\n");
    println!("| operation | ours | peer | peer time | ratio |");
    println!("|---|---|---|---|---|");
    println!(
        "| read_file in process (fresh instance per call) | {:.1} µs | same code, native | {:.1} µs | {:.2}x |",
        in_process.as_secs_f64() * 1e6,
        native.as_secs_f64() * 1e6,
        in_process.as_secs_f64() / native.as_secs_f64()
    );
    row("`iota-host call read_file`, warm cache", end_to_end, "cat", Some(cat));
    println!();
}

fn count_files(root: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => n += 1,
                _ => {}
            }
        }
    }
    n
}

/// A deterministic tree of `files` source-like files, 100 per directory.
fn generate_tree(root: &Path, files: usize) -> PathBuf {
    let marker = root.join(".complete");
    if marker.exists() {
        return root.to_path_buf();
    }
    let _ = std::fs::remove_dir_all(root);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let words = [
        "let", "fn", "struct", "impl", "match", "value", "error", "config", "tool", "path", "self", "return",
    ];
    for i in 0..files {
        let dir = root.join(format!("d{:03}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        let lines = 10 + (next() % 60) as usize;
        let mut text = String::new();
        for _ in 0..lines {
            let n = 3 + (next() % 10) as usize;
            let line: Vec<&str> = (0..n).map(|_| words[(next() % words.len() as u64) as usize]).collect();
            text.push_str(&line.join(" "));
            text.push('\n');
        }
        let ext = if i % 10 == 0 { "toml" } else { "rs" };
        std::fs::write(dir.join(format!("f{i:05}.{ext}")), text).unwrap();
    }
    std::fs::write(&marker, "").unwrap();
    root.to_path_buf()
}
