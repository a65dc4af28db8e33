//! The code toolset's spec rows, tool by tool, through the built binary and
//! the real component. Each test is named after the row it proves.

use crate::support;

use serde_json::json;
use support::{Project, assert_err, assert_ok, set_mtime};

// ---------------------------------------------------------------- glob

#[test]
fn glob_lists_newest_first_with_ties_in_lexical_order() {
    let p = Project::new();
    set_mtime(&p.write("b.rs", ""), 100);
    set_mtime(&p.write("a.rs", ""), 100);
    set_mtime(&p.write("src/new.rs", ""), 300);
    set_mtime(&p.write("src/old.rs", ""), 50);
    let r = p.call("glob", json!({"pattern": "*.rs"}));
    assert_ok(&r, "src/new.rs\na.rs\nb.rs\nsrc/old.rs");
    assert_eq!(r.header, "glob *.rs");
    assert_eq!(r.presentation, "group");
}

#[test]
fn glob_pattern_without_slash_matches_at_any_depth_with_slash_is_root_relative() {
    let p = Project::new();
    p.write("main.go", "");
    p.write("cmd/x/main.go", "");
    p.write("cmd/a.go", "");
    assert_ok(&p.call("glob", json!({"pattern": "cmd/*.go"})), "cmd/a.go");
    let all = p.call("glob", json!({"pattern": "*.go"}));
    assert_eq!(all.text.lines().count(), 3);
    assert_ok(
        &p.call("glob", json!({"pattern": "main.?o", "path": "cmd"})),
        "cmd/x/main.go",
    );
}

#[test]
fn glob_excludes_git_and_root_gitignore_matches() {
    let p = Project::new();
    p.write(".gitignore", "target/\n*.log\n");
    p.write(".git/config.rs", "");
    p.write("target/debug/x.rs", "");
    p.write("keep.rs", "");
    p.write("deep/skip.log", "");
    p.write(".hidden.rs", "");
    let r = p.call("glob", json!({"pattern": "*"}));
    let mut lines: Vec<&str> = r.text.lines().collect();
    lines.sort();
    assert_eq!(lines, vec![".gitignore", ".hidden.rs", "keep.rs"]);
}

#[test]
fn a_root_gitignore_that_is_no_regular_file_ignores_nothing_and_blocks_nothing() {
    let p = Project::new();
    p.write("keep.rs", "hit\n");
    // A FIFO opened for reading waits for a writer: read through WASI, it
    // held every walk until the call's deadline.
    nix::unistd::mkfifo(&p.path(".gitignore"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert_ok(&p.call("glob", json!({"pattern": "*.rs"})), "keep.rs");
    assert_ok(&p.call("grep", json!({"pattern": "hit"})), "keep.rs:1: hit");
    std::fs::remove_file(p.path(".gitignore")).unwrap();
    std::fs::create_dir(p.path(".gitignore")).unwrap();
    assert_ok(&p.call("glob", json!({"pattern": "*.rs"})), "keep.rs");
}

#[test]
fn glob_refusals_and_empty_result() {
    let p = Project::new();
    assert_err(&p.call("glob", json!({})), "missing required argument: pattern");
    assert_err(
        &p.call("glob", json!({"pattern": ""})),
        "missing required argument: pattern",
    );
    assert_err(&p.call("glob", json!({"pattern": "a[b"})), "invalid glob pattern: a[b");
    assert_ok(&p.call("glob", json!({"pattern": "*.zig"})), "no files match *.zig");
    p.write("file.txt", "");
    assert_err(
        &p.call("glob", json!({"pattern": "*", "path": "file.txt"})),
        "not a directory: file.txt",
    );
    assert_err(
        &p.call("glob", json!({"pattern": "*", "path": "nope"})),
        "not a directory: nope",
    );
}

#[test]
fn glob_shows_the_200_newest_of_n() {
    let p = Project::new();
    for i in 0..250 {
        set_mtime(&p.write(&format!("f{i:03}.txt"), ""), 1000 + i);
    }
    let r = p.call("glob", json!({"pattern": "*.txt"}));
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines.len(), 201);
    assert_eq!(lines[0], "f249.txt");
    assert_eq!(lines[199], "f050.txt");
    assert_eq!(
        lines[200],
        "[showing the 200 newest of 250 matches; narrow the pattern to see the rest]"
    );
}

/// Where the 64 KB output cap shows fewer than 200, the note counts the
/// paths shown and names the cap.
#[test]
fn glob_cut_by_the_output_cap_says_how_many_it_shows() {
    let p = Project::new();
    let dir = "d".repeat(200);
    for i in 0..210 {
        set_mtime(&p.write(&format!("{dir}/{i:03}{}.txt", "f".repeat(190)), ""), 1000 + i);
    }
    let r = p.call("glob", json!({"pattern": "*.txt"}));
    assert!(r.text.len() <= 65_536);
    let shown = r.text.lines().filter(|l| l.ends_with(".txt")).count();
    assert!(shown < 200, "{shown}");
    assert!(
        r.text.ends_with(&format!(
            "[showing the {shown} newest of 210 matches, as many as fit in the 64 KB output cap; narrow the pattern to see the rest]"
        )),
        "{}",
        &r.text[r.text.len() - 200..]
    );
}

#[test]
fn glob_collects_at_most_10000_candidates() {
    let p = Project::new();
    for d in 0..11 {
        for i in 0..1000 {
            p.write(&format!("d{d:02}/f{i:04}.txt"), "");
        }
    }
    let r = p.call("glob", json!({"pattern": "*.txt"}));
    assert!(
        r.text
            .ends_with("[showing the 200 newest of 10000 matches; narrow the pattern to see the rest]"),
        "{}",
        &r.text[r.text.len() - 200..]
    );
}

// ---------------------------------------------------------------- grep

#[test]
fn grep_formats_matches_and_context_in_line_order() {
    let p = Project::new();
    p.write("a.txt", "one\ntwo\nthree\nfour\nfive\n");
    p.write("b.txt", "two\n");
    let r = p.call("grep", json!({"pattern": "two|four", "context": 1}));
    assert_ok(
        &r,
        "a.txt:1- one\na.txt:2: two\na.txt:3- three\na.txt:4: four\na.txt:5- five\nb.txt:1: two",
    );
    assert_eq!(r.header, "grep two|four");
}

/// The host skips files that hold none of a pattern's required literals
/// (`read-files-containing`); every file with a match must still be found:
/// each case variant, Unicode case folding (the Kelvin sign matches `k`),
/// each alternative, a match at a file's very start and end.
#[test]
fn grep_finds_every_file_a_case_insensitive_or_alternation_pattern_matches() {
    let p = Project::new();
    p.write("a.txt", "Task at the start");
    p.write("b.txt", "no match here\nends with TASK");
    p.write("c.txt", "ta\u{17f}\u{212a} in Unicode");
    p.write("d.txt", "t a s k, tas, ask");
    p.write("e.txt", "xx tAsK xx\nfn iota_marker\n");
    p.write("f.txt", "zqxjv_ here");
    for i in 0..40 {
        p.write(&format!("g/filler{i:02}.txt"), "nothing of interest\n");
    }
    let r = p.call("grep", json!({"pattern": "(?i)task"}));
    assert_ok(
        &r,
        "a.txt:1: Task at the start\nb.txt:2: ends with TASK\nc.txt:1: ta\u{17f}\u{212a} in Unicode\ne.txt:1: xx tAsK xx",
    );
    let r = p.call("grep", json!({"pattern": "zq[x]jv_|fn iota"}));
    assert_ok(&r, "e.txt:2: fn iota_marker\nf.txt:1: zqxjv_ here");
    let r = p.call("grep", json!({"pattern": "(?i)FN IOTA|ZQXJV"}));
    assert_ok(&r, "e.txt:2: fn iota_marker\nf.txt:1: zqxjv_ here");
}

#[test]
fn grep_context_is_clamped_to_0_10() {
    let p = Project::new();
    let text: String = (1..=30).map(|i| format!("l{i}\n")).collect();
    p.write("a.txt", text.replace("l15\n", "HIT\n"));
    let r = p.call("grep", json!({"pattern": "HIT", "context": 50}));
    assert_eq!(r.text.lines().count(), 21);
    assert!(r.text.starts_with("a.txt:5- l5\n"));
    let r = p.call("grep", json!({"pattern": "HIT", "context": -3}));
    assert_ok(&r, "a.txt:15: HIT");
}

#[test]
fn grep_pattern_is_not_trimmed_and_uses_rust_regex_syntax() {
    let p = Project::new();
    p.write("a.txt", "x foo\nfoo\n");
    assert_ok(&p.call("grep", json!({"pattern": " foo"})), "a.txt:1: x foo");
    assert_ok(&p.call("grep", json!({"pattern": "^fo{2}$"})), "a.txt:2: foo");
    let r = p.call("grep", json!({"pattern": "(a"}));
    assert!(
        r.is_error && r.text.starts_with("invalid regular expression: "),
        "{}",
        r.text
    );
    let r = p.call("grep", json!({"pattern": "(a)\\1"}));
    assert!(
        r.is_error && r.text.starts_with("invalid regular expression: "),
        "{}",
        r.text
    );
    assert_err(
        &p.call("grep", json!({"pattern": ""})),
        "missing required argument: pattern",
    );
    assert_ok(&p.call("grep", json!({"pattern": "zzz"})), "no matches for zzz");
}

#[test]
fn grep_include_matches_basename_without_slash_and_path_with_one() {
    let p = Project::new();
    p.write("src/a.rs", "hit\n");
    p.write("src/b.go", "hit\n");
    p.write("cmd/c.rs", "hit\n");
    assert_ok(
        &p.call("grep", json!({"pattern": "hit", "include": "*.rs"})),
        "cmd/c.rs:1: hit\nsrc/a.rs:1: hit",
    );
    assert_ok(
        &p.call("grep", json!({"pattern": "hit", "include": "src/**"})),
        "src/a.rs:1: hit\nsrc/b.go:1: hit",
    );
    assert_ok(
        &p.call("grep", json!({"pattern": "hit", "path": "cmd"})),
        "cmd/c.rs:1: hit",
    );
    assert_err(
        &p.call("grep", json!({"pattern": "hit", "include": "a[b"})),
        "invalid include pattern: a[b",
    );
}

#[test]
fn grep_skips_binary_large_git_and_gitignored_files() {
    let p = Project::new();
    p.write(".gitignore", "ignored/\n");
    p.write("bin.dat", b"hit\0hit\n");
    let mut late_nul = b"hit\n".to_vec();
    late_nul.extend(std::iter::repeat_n(b'a', 8000));
    late_nul.push(0);
    p.write("late.dat", &late_nul);
    let mut big = b"hit\n".to_vec();
    big.resize(10 * 1024 * 1024 + 1, b'a');
    p.write("big.txt", &big);
    p.write(".git/HEAD", "hit\n");
    p.write("ignored/x.txt", "hit\n");
    p.write("ok.txt", "hit\n");
    assert_ok(
        &p.call("grep", json!({"pattern": "^hit"})),
        "late.dat:1: hit\nok.txt:1: hit",
    );
}

#[test]
fn grep_clips_lines_at_500_bytes() {
    let p = Project::new();
    p.write("a.txt", format!("hit{}\n", "é".repeat(400)));
    let r = p.call("grep", json!({"pattern": "hit"}));
    let text = r.text.strip_prefix("a.txt:1: ").unwrap();
    assert!(text.ends_with('…'));
    assert!(text.len() <= 500 + '…'.len_utf8());
    assert!(text.len() >= 498);
}

#[test]
fn grep_stops_after_100_matches() {
    let p = Project::new();
    let text: String = (1..=150).map(|i| format!("hit {i}\n")).collect();
    p.write("a.txt", text);
    let r = p.call("grep", json!({"pattern": "hit"}));
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines.len(), 101);
    assert_eq!(lines[99], "a.txt:100: hit 100");
    assert_eq!(
        lines[100],
        "[stopped after 100 matches; refine the pattern or use include to narrow the search]"
    );
}

#[test]
fn grep_stops_when_output_passes_64_kb() {
    let p = Project::new();
    // Every fifth line matches; with context 2 each match brings five long lines.
    let text: String = (0..500)
        .map(|i| format!("{} {}\n", if i % 5 == 2 { "hit" } else { "ctx" }, "x".repeat(600)))
        .collect();
    p.write("a.txt", text);
    let r = p.call("grep", json!({"pattern": "hit", "context": 2}));
    assert!(r.text.len() <= 65_536, "{}", r.text.len());
    let last = r.text.lines().last().unwrap();
    let n = r.text.lines().filter(|l| l.contains(": hit ")).count();
    assert!(n < 100, "the byte cap, not the match cap, stopped it");
    assert_eq!(
        last,
        format!("[stopped after {n} matches; refine the pattern or use include to narrow the search]")
    );
}

// ---------------------------------------------------------------- list_dir

#[test]
fn list_dir_shows_dirs_with_slash_and_files_with_size_sorted() {
    let p = Project::new();
    p.write("src/main.rs", "");
    p.write("Cargo.toml", vec![b'a'; 1229]);
    p.write("README.md", vec![b'a'; 39322]);
    p.write("tiny", "abc");
    let r = p.call("list_dir", json!({}));
    assert_ok(&r, "Cargo.toml (1.2 KB)\nREADME.md (38.4 KB)\nsrc/\ntiny (3 B)");
    assert_eq!(r.header, "list_dir .");
}

#[test]
fn list_dir_symlink_shows_its_own_size_and_is_never_a_directory() {
    let p = Project::new();
    p.write("real/a.txt", "x");
    std::os::unix::fs::symlink("real", p.path("link")).unwrap();
    let r = p.call("list_dir", json!({"path": "."}));
    assert_ok(&r, "link (4 B)\nreal/");
}

#[test]
fn list_dir_caps_at_500_entries() {
    let p = Project::new();
    for i in 0..600 {
        p.write(&format!("d/f{i:03}"), "");
    }
    let r = p.call("list_dir", json!({"path": "d"}));
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(lines.len(), 501);
    assert_eq!(lines[0], "f000 (0 B)");
    assert_eq!(lines[500], "[showing 500 of 600 entries]");
}

/// A listing the 64 KB output cap cuts says so, counting what it shows.
#[test]
fn list_dir_cut_by_the_output_cap_says_how_many_it_shows() {
    let p = Project::new();
    for i in 0..300 {
        p.write(&format!("d/{i:03}{}", "n".repeat(240)), "x");
    }
    let r = p.call("list_dir", json!({"path": "d"}));
    assert!(r.text.len() <= 65_536);
    let shown = r.text.lines().filter(|l| l.ends_with("(1 B)")).count();
    assert!(shown < 300, "{shown}");
    assert!(
        r.text.ends_with(&format!(
            "[showing {shown} of 300 entries, as many as fit in the 64 KB output cap]"
        )),
        "{}",
        &r.text[r.text.len() - 200..]
    );
}

#[test]
fn list_dir_empty_and_not_a_directory() {
    let p = Project::new();
    std::fs::create_dir(p.path("empty")).unwrap();
    p.write("file", "");
    assert_ok(&p.call("list_dir", json!({"path": "empty"})), "[directory is empty]");
    assert_err(&p.call("list_dir", json!({"path": "file"})), "not a directory: file");
    assert_err(
        &p.call("list_dir", json!({"path": "missing"})),
        "not a directory: missing",
    );
}

// ---------------------------------------------------------------- read_file

#[test]
fn read_file_numbers_lines_in_six_columns_and_a_tab() {
    let p = Project::new();
    p.write("a.txt", "alpha\r\nbeta\n");
    let r = p.call("read_file", json!({"path": "a.txt"}));
    assert_ok(&r, "     1\talpha\n     2\tbeta");
    assert_eq!(r.header, "read_file a.txt");
}

#[test]
fn read_file_windows() {
    let p = Project::new();
    p.write("a.txt", "1\n2\n3\n4\n5\n");
    assert_ok(
        &p.call("read_file", json!({"path": "a.txt", "offset": 2, "limit": 2})),
        "     2\t2\n     3\t3\n[showing lines 2-3 of 5]",
    );
    assert_ok(
        &p.call("read_file", json!({"path": "a.txt", "offset": 4})),
        "     4\t4\n     5\t5\n[showing lines 4-5 of 5]",
    );
    assert_ok(
        &p.call("read_file", json!({"path": "a.txt", "limit": 100})),
        "     1\t1\n     2\t2\n     3\t3\n     4\t4\n     5\t5",
    );
    assert_err(
        &p.call("read_file", json!({"path": "a.txt", "offset": 9})),
        "offset 9 is past the end of a.txt (5 lines)",
    );
}

#[test]
fn read_file_empty_binary_missing_and_directory() {
    let p = Project::new();
    p.write("empty", "");
    p.write("bin", vec![0u8; 3 * 1024]);
    std::fs::create_dir(p.path("dir")).unwrap();
    assert_ok(&p.call("read_file", json!({"path": "empty"})), "[file is empty]");
    assert_err(
        &p.call("read_file", json!({"path": "bin"})),
        "bin looks like a binary file (3.0 KB); read_file only serves text",
    );
    let missing = p.path("nope.txt");
    assert_err(
        &p.call("read_file", json!({"path": "nope.txt"})),
        &format!("file does not exist: {}", missing.display()),
    );
    assert_err(
        &p.call("read_file", json!({"path": "dir"})),
        &format!("{} is a directory, not a file", p.path("dir").display()),
    );
    assert_err(&p.call("read_file", json!({})), "missing required argument: path");
}

#[test]
fn read_file_hits_the_64_kb_cap_with_a_continuation_note() {
    let p = Project::new();
    let text: String = (1..=2000).map(|i| format!("{i:0>60}\n")).collect();
    p.write("big.txt", text);
    let r = p.call("read_file", json!({"path": "big.txt"}));
    assert!(r.text.len() <= 65_536);
    let last = r.text.lines().last().unwrap();
    let shown = r.text.lines().count() - 1;
    assert_eq!(
        last,
        format!(
            "[output truncated — showing lines 1-{shown} of 2000; call read_file with offset={} to continue]",
            shown + 1
        )
    );
    let next = p.call("read_file", json!({"path": "big.txt", "offset": shown + 1, "limit": 1}));
    assert_ok(
        &next,
        &format!(
            "{:>6}\t{:0>60}\n[showing lines {}-{} of 2000]",
            shown + 1,
            shown + 1,
            shown + 1,
            shown + 1
        ),
    );
}

#[test]
fn read_file_cuts_a_single_line_longer_than_the_cap() {
    let p = Project::new();
    p.write("one.txt", format!("{}\nsecond\n", "y".repeat(100_000)));
    let r = p.call("read_file", json!({"path": "one.txt"}));
    assert!(r.text.len() <= 65_536);
    assert!(r.text.starts_with("     1\tyyyy"));
    assert!(r.text.contains("…\n"));
    assert!(
        r.text
            .ends_with("[output truncated — showing lines 1-1 of 2; call read_file with offset=2 to continue]")
    );
}

#[test]
fn read_file_reads_the_first_20_mb_of_a_larger_file() {
    let p = Project::new();
    let line = format!("{}\n", "z".repeat(99));
    p.write("huge.txt", line.repeat(21 * 1024 * 1024 / 100 + 1));
    let r = p.call("read_file", json!({"path": "huge.txt", "offset": 200_000, "limit": 1}));
    assert!(
        r.text.contains("[file is 21.0 MB; only the first 20 MB was read]"),
        "{}",
        r.text
    );
    assert!(
        r.text.ends_with(&format!(
            "[showing lines 200000-200000 of {}]",
            20 * 1024 * 1024 / 100 + 1
        )),
        "{}",
        r.text
    );
}

// ---------------------------------------------------------------- edit_file

#[test]
fn edit_file_replaces_and_reports_with_numbered_lines_and_a_diff() {
    let p = Project::new().auto_write();
    p.write("a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    let rs = p.calls(&[
        ("read_file", json!({"path": "a.rs"})),
        (
            "edit_file",
            json!({"path": "a.rs", "old_string": "fn b() {}", "new_string": "fn b() { todo!() }"}),
        ),
    ]);
    assert_ok(
        &rs[1],
        "1 replacement in a.rs\n     1\tfn a() {}\n     2\tfn b() { todo!() }\n     3\tfn c() {}",
    );
    assert_eq!(rs[1].presentation, "expanded");
    assert_eq!(rs[1].header, "edit_file a.rs");
    let diff = rs[1].diff.as_deref().unwrap();
    assert!(diff.contains("--- a/a.rs\n+++ b/a.rs\n"), "{diff}");
    assert!(diff.contains("-fn b() {}\n+fn b() { todo!() }\n"), "{diff}");
    assert_eq!(p.read("a.rs"), b"fn a() {}\nfn b() { todo!() }\nfn c() {}\n");
}

#[test]
fn edit_file_refusals_in_the_specs_order() {
    let p = Project::new().auto_write();
    p.write("a.txt", "x y x\n");
    let edit = |old: &str, new: &str| json!({"path": "a.txt", "old_string": old, "new_string": new});
    assert_err(
        &p.call("edit_file", edit("x", "z")),
        "a.txt has not been read in this session — read it with read_file before modifying it",
    );
    let rs = p.calls(&[
        ("read_file", json!({"path": "a.txt"})),
        ("edit_file", edit("", "z")),
        ("edit_file", edit("y", "y")),
        ("edit_file", edit("nope", "z")),
        ("edit_file", edit("x", "z")),
        ("edit_file", json!({"path": "a.txt", "old_string": "x"})),
    ]);
    assert_err(
        &rs[1],
        "old_string must not be empty (use write_file to create or replace a whole file)",
    );
    assert_err(&rs[2], "old_string and new_string are identical");
    assert_err(
        &rs[3],
        "old_string not found in a.txt — it must match the file content exactly, whitespace included; read the file again if unsure",
    );
    assert_err(
        &rs[4],
        "old_string appears 2 times in a.txt; extend it with surrounding context to make it unique, or set replace_all",
    );
    assert_err(&rs[5], "missing required argument: new_string");
    assert_eq!(p.read("a.txt"), b"x y x\n", "no refusal touched the file");
}

#[test]
fn edit_and_write_refuse_a_file_changed_since_it_was_read() {
    // The ledger lives in one session; the library API holds the session
    // open while the file changes behind it, as an editor would change it.
    let p = Project::new().auto_write();
    let path = p.write("a.txt", "old\n");
    let host = support::LibraryHost::new(&p);
    assert!(!host.call("read_file", json!({"path": "a.txt"})).is_error);
    std::fs::write(&path, "changed by the user\n").unwrap();
    let changed = "a.txt changed on disk after it was read — read it again before modifying it";
    assert_err(
        &host.call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "changed", "new_string": "x"}),
        ),
        changed,
    );
    assert_err(
        &host.call("write_file", json!({"path": "a.txt", "content": "x"})),
        changed,
    );
    // A same-size change with only the time moved is caught too.
    assert!(!host.call("read_file", json!({"path": "a.txt"})).is_error);
    set_mtime(&path, 12345);
    assert_err(
        &host.call("write_file", json!({"path": "a.txt", "content": "x"})),
        changed,
    );
    // Reading again clears it, and the tool's own write keeps the ledger current.
    assert!(!host.call("read_file", json!({"path": "a.txt"})).is_error);
    assert!(
        !host
            .call(
                "edit_file",
                json!({"path": "a.txt", "old_string": "changed", "new_string": "edited"})
            )
            .is_error
    );
    let r = host.call(
        "edit_file",
        json!({"path": "a.txt", "old_string": "edited", "new_string": "again"}),
    );
    assert!(!r.is_error, "{}", r.text);
    assert_eq!(p.read("a.txt"), b"again by the user\n");
}

#[test]
fn edit_file_replace_all_and_byte_exactness() {
    let p = Project::new().auto_write();
    let mut bytes = b"\xff\xfe latin1 \xe9 ".to_vec();
    bytes.extend_from_slice(b"x=1; x=1;\n");
    p.write("raw.txt", &bytes);
    let rs = p.calls(&[
        ("read_file", json!({"path": "raw.txt"})),
        (
            "edit_file",
            json!({"path": "raw.txt", "old_string": "x=1", "new_string": "x=2", "replace_all": true}),
        ),
    ]);
    assert!(rs[1].text.starts_with("2 replacements in raw.txt\n"), "{}", rs[1].text);
    let mut want = b"\xff\xfe latin1 \xe9 ".to_vec();
    want.extend_from_slice(b"x=2; x=2;\n");
    assert_eq!(p.read("raw.txt"), want, "bytes outside the edited spans are untouched");
}

#[test]
fn edit_file_refuses_files_over_20_mb() {
    let p = Project::new().auto_write();
    p.write("big.txt", vec![b'a'; 21 * 1024 * 1024]);
    let r = p.call(
        "edit_file",
        json!({"path": "big.txt", "old_string": "a", "new_string": "b"}),
    );
    assert_err(&r, "big.txt is too large to edit (21.0 MB)");
}

// ---------------------------------------------------------------- write_file

#[test]
fn write_file_creates_with_parents_and_reports_created() {
    let p = Project::new().auto_write();
    let r = p.call("write_file", json!({"path": "new/dir/a.txt", "content": "hello\n"}));
    assert_ok(&r, "wrote 6 B to new/dir/a.txt (created)");
    assert_eq!(p.read("new/dir/a.txt"), b"hello\n");
    assert!(r.diff.unwrap().contains("+hello"));
    let r = p.call("write_file", json!({"path": "empty.txt", "content": ""}));
    assert_ok(&r, "wrote 0 B to empty.txt (created)");
    assert_err(
        &p.call("write_file", json!({"path": "x.txt"})),
        "missing required argument: content",
    );
    assert_err(
        &p.call("write_file", json!({"path": "x.txt", "content": 5})),
        "missing required argument: content",
    );
}

#[test]
fn write_file_overwrites_only_what_was_read() {
    let p = Project::new().auto_write();
    p.write("a.txt", "old\n");
    assert_err(
        &p.call("write_file", json!({"path": "a.txt", "content": "new\n"})),
        "a.txt has not been read in this session — read it with read_file before modifying it",
    );
    let rs = p.calls(&[
        ("read_file", json!({"path": "a.txt"})),
        ("write_file", json!({"path": "a.txt", "content": "new content\n"})),
    ]);
    assert_ok(&rs[1], "wrote 12 B to a.txt (overwritten)");
    assert!(rs[1].diff.as_deref().unwrap().contains("-old\n+new content\n"));
    assert_eq!(p.read("a.txt"), b"new content\n");
}

/// Replacing a 5 MB file with a few bytes is a write that happened: the
/// answer says so, with its diff cut at 64 KB (before, the diff took 10-27 s
/// of CPU and, past the host's output limit, turned the answer into an
/// error while the file was replaced).
#[test]
fn a_write_whose_diff_is_huge_answers_that_it_wrote() {
    let p = Project::new().auto_write();
    let line = "a line of the old file, long enough to count\n";
    p.write("big.txt", line.repeat(5 * 1024 * 1024 / line.len()));
    let rs = p.calls(&[
        ("read_file", json!({"path": "big.txt", "limit": 1})),
        ("write_file", json!({"path": "big.txt", "content": "small\n"})),
    ]);
    assert_ok(&rs[1], "wrote 6 B to big.txt (overwritten)");
    let diff = rs[1].diff.as_deref().unwrap();
    assert!(
        diff.len() <= 64 * 1024 && diff.ends_with("[diff cut at 64 KB]\n"),
        "{}",
        &diff[diff.len() - 100..]
    );
    assert!(diff.starts_with("--- a/big.txt\n+++ b/big.txt\n"));
    assert_eq!(p.read("big.txt"), b"small\n");
}

#[test]
fn write_file_refuses_directories_and_non_regular_files() {
    let p = Project::new().auto_write();
    std::fs::create_dir(p.path("dir")).unwrap();
    nix_mkfifo(&p.path("fifo"));
    assert_err(
        &p.call("write_file", json!({"path": "dir", "content": "x"})),
        "dir is a directory",
    );
    assert_err(
        &p.call("write_file", json!({"path": "fifo", "content": "x"})),
        "fifo is not a regular file",
    );
}

#[test]
fn write_file_shows_no_diff_when_the_old_file_was_too_large() {
    let p = Project::new().auto_write();
    p.write("big.txt", vec![b'a'; 21 * 1024 * 1024]);
    let rs = p.calls(&[
        ("read_file", json!({"path": "big.txt", "limit": 1})),
        ("write_file", json!({"path": "big.txt", "content": "small\n"})),
    ]);
    assert_ok(&rs[1], "wrote 6 B to big.txt (overwritten)");
    assert_eq!(rs[1].diff, None);
}

#[test]
fn read_only_leaves_the_writers_out() {
    let p = Project::new().config("agents:\n  r:\n    tools:\n      code:\n        read_only: true\n");
    let names = support::tool_names(&p);
    assert_eq!(names, ["glob", "grep", "list_dir", "read_file"]);
    let r = p.call("write_file", json!({"path": "a", "content": ""}));
    assert_err(&r, "unknown tool: write_file");
}

/// mkfifo through the shell's coreutils, to keep the test free of libc.
pub fn nix_mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}
