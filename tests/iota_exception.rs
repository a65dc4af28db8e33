//! The iota exception's parser against bash itself. Thousands of lines are
//! generated from a grammar of quotes, expansions, operators and redirections
//! around a stub binary; every line the host would let out of the sandbox is
//! run by bash under strace, which must show exactly one command executed —
//! the stub — with exactly the words the parser read. A line the parser
//! refuses stays in the sandbox, so only acceptance needs proof.

use crate::support;

use iota_host::internals::{Open, Redirection, SimpleCommand, iota_call, redirections_allowed};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A small deterministic generator (xorshift64*), so a failure can be replayed
/// from the seed the test prints.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const FIRST_WORDS: &[&str] = &[
    "iota-stub",
    "iota-stub",
    "./iota-stub",
    "'iota-stub'",
    "\"iota-stub\"",
    "iota\\-stub",
    "io'ta'-stub",
    "io\"ta\"-stub",
    "eval",
    "exec",
    "command",
    "$'iota-stub'",
    "~/iota-stub",
    "iota-st?b",
    "iota-stu[b]",
    "{iota-stub,x}",
    "X=1",
    "\\iota-stub",
    "iota-stub\\ ",
];

/// Words that stand for themselves, or should.
const PLAIN: &[&str] = &[
    "a",
    "--flag",
    "-m",
    "x=1",
    "%",
    "+",
    ",",
    "@",
    ":",
    "^",
    "1",
    "2",
    "run",
    "--version",
    "a.b/c",
];

/// Quoting, right and wrong.
const QUOTED: &[&str] = &[
    "'a b'",
    "'$(touch P)'",
    "'\"'",
    "\"a b\"",
    "\"a\\\"b\"",
    "\"\\$x\"",
    "\"\\\\\"",
    "\"\\`\"",
    "\"$x\"",
    "\"`touch P`\"",
    "\"a!b\"",
    "''",
    "\"\"",
    "'",
    "\"",
    "\"a\\nb\"",
    "'é'",
    "\"é\"",
    "'a\tb'",
];

const ESCAPES: &[&str] = &[
    "\\ ", "\\$", "\\'", "\\\"", "\\;", "\\|", "\\&", "\\\\", "\\\n", "\\", "\\>", "\\#", "\\*", "\\~",
];

const EXPANSIONS: &[&str] = &[
    "$(touch P)",
    "`touch P`",
    "$'\\''",
    "$'x'",
    "$\"x\"",
    "<(touch P)",
    ">(touch P)",
    "$[1]",
    "$((1))",
    "${X}",
    "$X",
    "$",
    "{a,b}",
    "~",
    "~/x",
    "*",
    "?",
    "[a]",
    "#",
    "!",
    "(",
    ")",
    "((",
    "[[",
    "]]",
    "{",
    "}",
    "é",
    "\u{a0}",
];

const OPERATORS: &[&str] = &[
    ";", "|", "&", "&&", "||", "\n", "\r", ";touch P", "|touch P", "&touch P",
];

const REDIRECTIONS: &[&str] = &[
    "2>&1",
    ">&2",
    "1>&2",
    ">/dev/null",
    "> /dev/null",
    "2>/dev/null",
    "&>/dev/null",
    "&>>/dev/null",
    ">>/dev/null",
    "</dev/null",
    "0</dev/null",
    "1>/dev/null",
    "2>'/dev/null'",
    "> \"/dev/null\"",
    "<f",
    ">f",
    ">>f",
    "2>f",
    "<<<x",
    "<<EOF",
    "<>f",
    ">|f",
    "3>&1",
    "2>&-",
    ">&",
    "9>/dev/null",
    "'>'",
    "\">\"",
    ">/dev/nul",
    ">/dev/null/",
];

const SEPARATORS: &[&str] = &[" ", " ", " ", "\t", "  ", ""];

fn line(rng: &mut Rng) -> String {
    let mut line = String::new();
    if rng.below(8) == 0 {
        line.push_str(rng.pick(&[" ", "\t"]));
    }
    line.push_str(rng.pick(FIRST_WORDS));
    for _ in 0..rng.below(7) {
        line.push_str(rng.pick(SEPARATORS));
        // Mostly what the parser accepts, so that many lines reach bash.
        let class = match rng.below(20) {
            0..=6 => PLAIN,
            7..=10 => QUOTED,
            11..=12 => ESCAPES,
            13..=15 => REDIRECTIONS,
            16..=18 => EXPANSIONS,
            _ => OPERATORS,
        };
        line.push_str(rng.pick(class));
    }
    line
}

/// strace's `-xx` strings: every byte as `\xNN`.
fn unhex(s: &str) -> Vec<u8> {
    s.split("\\x")
        .filter(|h| !h.is_empty())
        .map(|h| u8::from_str_radix(&h[..2], 16).unwrap())
        .collect()
}

/// The quoted strings of one strace line, decoded, in order.
fn strings(line: &str) -> Vec<Vec<u8>> {
    line.split('"').skip(1).step_by(2).map(unhex).collect()
}

/// One execve bash made: the program and its argv, as bytes.
type Exec = (Vec<u8>, Vec<Vec<u8>>);

/// What bash executed for `line` in `dir`: every execve after bash's own, and
/// how many processes it forked.
fn executed(dir: &Path, line: &str) -> (Vec<Exec>, usize) {
    let trace = dir.join("trace");
    let status = Command::new(tool("strace"))
        .args([
            "-f",
            "-qq",
            "-s",
            "65536",
            "-xx",
            "-e",
            "trace=execve,clone,clone3,fork,vfork",
            "-o",
        ])
        .arg(&trace)
        .arg(tool("bash"))
        .args(["-c", line])
        .current_dir(dir)
        .env_clear()
        .env("PATH", dir)
        .env("HOME", dir.join("home"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    let _ = status;
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut execs = Vec::new();
    let mut forks = 0;
    for record in text.lines() {
        let call = record.split_once(' ').map_or(record, |(_, rest)| rest.trim_start());
        if call.starts_with("execve(") {
            let mut strings = strings(call);
            let program = strings.remove(0);
            execs.push((program, strings));
        } else if ["clone(", "clone3(", "fork(", "vfork("]
            .iter()
            .any(|c| call.starts_with(c))
        {
            forks += 1;
        }
    }
    // The first is bash itself.
    execs.remove(0);
    (execs, forks)
}

/// A program on the test's own PATH (the lines run with PATH = the stub's
/// directory alone).
fn tool(name: &str) -> PathBuf {
    iota_host::internals::find_on_path(name).unwrap_or_else(|| panic!("{name} on PATH"))
}

#[test]
fn every_line_the_parser_lets_out_runs_exactly_the_binary_with_its_words() {
    if !support::require(
        "strace (apt-get install strace)",
        Command::new("strace")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success()),
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir_path = std::fs::canonicalize(dir.path()).unwrap();
    let stub = dir_path.join("iota-stub");
    std::fs::copy("/bin/true", &stub).unwrap();
    std::fs::create_dir(dir_path.join("home")).unwrap();
    let running: PathBuf = std::fs::canonicalize(&stub).unwrap();
    let path_var = dir_path.to_str().unwrap().to_string();

    let seed: u64 = std::env::var("IOTA_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1074_e8ce_97a1_0001);
    let mut rng = Rng(seed);
    let (mut generated, mut accepted) = (0, 0);
    let mut disagreements = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while generated < 20_000 {
        let line = line(&mut rng);
        generated += 1;
        if !seen.insert(line.clone()) {
            continue;
        }
        let Some(SimpleCommand { words, redirections }) = iota_call(&line, Some(&running), &dir_path, Some(&path_var))
        else {
            continue;
        };
        // A target outside the directory keeps the line in the sandbox.
        if !redirections_allowed(&redirections, &dir_path, &dir_path) {
            continue;
        }
        // An input that is not there ends the line before anything runs, in
        // bash as in the host.
        let runs = redirections.iter().all(|r| match r {
            Redirection::File {
                target,
                open: Open::Read,
                ..
            } => dir_path.join(target).exists(),
            _ => true,
        });
        // The files the line's redirections name may appear; nothing else may.
        // (Only names in the directory: `/dev/null` is a target too.)
        let targets: Vec<String> = redirections
            .iter()
            .filter_map(|r| match r {
                Redirection::File { target, .. } if !target.contains('/') => Some(target.clone()),
                _ => None,
            })
            .collect();
        accepted += 1;
        let (execs, forks) = executed(&dir_path, &line);
        let ran_stub = execs.len() == 1
            && std::fs::canonicalize(dir_path.join(std::ffi::OsStr::from_bytes(&execs[0].0)))
                .is_ok_and(|p| p == running);
        let same_words =
            execs.len() == 1 && execs[0].1 == words.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
        let expected = |name: &str| ["iota-stub", "home", "trace"].contains(&name) || targets.iter().any(|t| t == name);
        let stray = std::fs::read_dir(&dir_path)
            .unwrap()
            .flatten()
            .any(|e| !expected(e.file_name().to_str().unwrap_or("")));
        for target in &targets {
            let _ = std::fs::remove_file(dir_path.join(target));
        }
        let ran_as_expected = if runs { ran_stub && same_words } else { execs.is_empty() };
        if !ran_as_expected || forks > 1 || stray {
            disagreements.push(format!(
                "{line:?}: parser {words:?}; bash ran {:?} with {forks} fork(s)",
                execs
                    .iter()
                    .map(|(p, a)| (
                        String::from_utf8_lossy(p).into_owned(),
                        a.iter()
                            .map(|w| String::from_utf8_lossy(w).into_owned())
                            .collect::<Vec<_>>()
                    ))
                    .collect::<Vec<_>>()
            ));
            for entry in std::fs::read_dir(&dir_path).unwrap().flatten() {
                if !["iota-stub", "home", "trace"].contains(&entry.file_name().to_str().unwrap_or("")) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }
    println!(
        "iota exception differential: seed {seed:#x}, {generated} lines generated, {} distinct, {accepted} accepted and checked against bash, {} disagreements",
        seen.len(),
        disagreements.len()
    );
    assert!(accepted >= 1000, "the grammar reaches bash often enough ({accepted})");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// `files` with what the shell itself says of a failed redirection (bash:
/// `/usr/bin/bash: line 1: TARGET: reason`; the host: `iota-host: TARGET:
/// reason`) cut to the part after the name, which must be the same.
fn said_by_the_shell(files: Vec<(String, Vec<u8>, u32)>, marker: &str) -> Vec<(String, String, u32)> {
    files
        .into_iter()
        .map(|(name, content, mode)| {
            let text = String::from_utf8_lossy(&content)
                .lines()
                .map(|line| {
                    line.find(marker)
                        .map_or(line, |at| &line[at + marker.len()..])
                        .to_string()
                        + "\n"
                })
                .collect();
            (name, text, mode)
        })
        .collect()
}

/// One case's directory, the same on both sides: an input, an old file to
/// truncate or append to, a subdirectory.
fn case_dir(dir: &Path) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("in.txt"), "input\n").unwrap();
    std::fs::write(dir.join("old.txt"), "old\n").unwrap();
}

/// Redirections the differential combines: files new and old, truncated and
/// appended, both streams, dups before and after, a missing input, a
/// missing directory, `/dev/null`.
const FILE_REDIRECTIONS: &[&str] = &[
    ">o1",
    ">>o1",
    "> o2",
    "1>o3",
    "2>e1",
    "2>>e1",
    "&>b",
    "&>>b",
    "2>&1",
    ">&2",
    "1>&2",
    "<in.txt",
    "< missing",
    ">sub/o4",
    ">nosuch/o5",
    ">old.txt",
    ">>old.txt",
    "&>>old.txt",
    "2>/dev/null",
    "&>/dev/null",
    "> 'quoted name'",
];

#[test]
fn redirections_the_host_performs_leave_the_files_bash_leaves() {
    if !support::sandbox_works() {
        return;
    }
    // Lines of the binary itself, writing to stdout (--version) or stderr (a
    // flag it refuses), with one to three redirections.
    let mut rng = Rng(0x0ed1_7ec7_1035_0002);
    let mut lines = Vec::new();
    for program in ["--version", "--no-such-flag"] {
        for r in FILE_REDIRECTIONS {
            lines.push(format!("{} {program} {r}", support::BIN));
        }
    }
    while lines.len() < 240 {
        let program = rng.pick(&["--version", "--no-such-flag"]);
        let mut line = format!("{} {program}", support::BIN);
        for _ in 0..2 + rng.below(2) {
            line.push(' ');
            line.push_str(rng.pick(FILE_REDIRECTIONS));
        }
        lines.push(line);
    }
    let bash_side = tempfile::tempdir().unwrap();
    let p = support::Project::new().auto_run();
    let calls: Vec<(&str, serde_json::Value)> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            case_dir(&bash_side.path().join(format!("c{i}")));
            case_dir(&p.path(&format!("c{i}")));
            ("shell", serde_json::json!({"command": line, "cwd": format!("c{i}")}))
        })
        .collect();
    let mut bash_said = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let out = Command::new(tool("bash"))
            .args(["-c", &format!("({line}) 2>&1")])
            .current_dir(bash_side.path().join(format!("c{i}")))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        bash_said.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let results = p.calls(&calls);
    let version = format!("iota-host {}", env!("CARGO_PKG_VERSION"));
    for (i, (line, result)) in lines.iter().zip(&results).enumerate() {
        assert!(
            result.header.ends_with("(outside the sandbox)"),
            "{line}: not run by the host itself: {}",
            result.header
        );
        let case = format!("c{i}");
        assert_eq!(
            said_by_the_shell(support::tree(&p.path(&case)), "iota-host: "),
            said_by_the_shell(support::tree(&bash_side.path().join(&case)), "bash: line 1: "),
            "{line}: the files differ from bash's"
        );
        // What reaches the call's output is what reached bash's terminal.
        assert_eq!(
            result.text.contains(&version),
            bash_said[i].contains(&version),
            "{line}: host said {:?}, bash {:?}",
            result.text,
            bash_said[i]
        );
        assert_eq!(
            result.text.contains("--no-such-flag"),
            bash_said[i].contains("--no-such-flag"),
            "{line}: host said {:?}, bash {:?}",
            result.text,
            bash_said[i]
        );
    }
}
