//! The iota exception's parser against bash itself. Thousands of lines are
//! generated from a grammar of quotes, expansions, operators and redirections
//! around a stub binary; every line the host would let out of the sandbox is
//! run by bash under strace, which must show exactly one command executed —
//! the stub — with exactly the words the parser read. A line the parser
//! refuses stays in the sandbox, so only acceptance needs proof.

use crate::support;

use iota_host::internals::{SimpleCommand, iota_call};
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
        let Some(SimpleCommand { words, .. }) = iota_call(&line, Some(&running), &dir_path, Some(&path_var)) else {
            continue;
        };
        accepted += 1;
        let (execs, forks) = executed(&dir_path, &line);
        let ran_stub = execs.len() == 1
            && std::fs::canonicalize(dir_path.join(std::ffi::OsStr::from_bytes(&execs[0].0)))
                .is_ok_and(|p| p == running);
        let same_words =
            execs.len() == 1 && execs[0].1 == words.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
        let stray = std::fs::read_dir(&dir_path)
            .unwrap()
            .flatten()
            .any(|e| !["iota-stub", "home", "trace"].contains(&e.file_name().to_str().unwrap_or("")));
        if !ran_stub || !same_words || forks > 1 || stray {
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
