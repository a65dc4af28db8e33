//! Worker tasks (`iota:toolset/workers`): grep's output over many batches is
//! exactly the one-instance output, and a task never has more than the call
//! that submitted it — not its writes, not workers of its own, not more time.

use crate::support;

use serde_json::json;
use support::{COMPONENTS, Project};

#[test]
fn grep_over_many_batches_keeps_walk_order_and_the_caps() {
    let p = Project::new();
    // 600 files, five batches and more: a/ never matches, every third file of
    // b/ does on its second line, every file of c/ does.
    for i in 0..200 {
        p.write(&format!("a/f{i:03}.txt"), "nothing here\n");
        let b = if i % 3 == 0 {
            format!("x\nhit b {i}\n")
        } else {
            "x\n".to_string()
        };
        p.write(&format!("b/f{i:03}.txt"), b);
        p.write(&format!("c/f{i:03}.txt"), format!("hit c {i}\n"));
    }
    let only_b: Vec<String> = (0..200)
        .step_by(3)
        .map(|i| format!("b/f{i:03}.txt:2: hit b {i}"))
        .collect();
    support::assert_ok(&p.call("grep", json!({"pattern": "hit b"})), &only_b.join("\n"));

    let r = p.call("grep", json!({"pattern": "hit"}));
    let mut expected = only_b.clone();
    expected.extend((0..33).map(|i| format!("c/f{i:03}.txt:1: hit c {i}")));
    expected.push("[stopped after 100 matches; refine the pattern or use include to narrow the search]".into());
    support::assert_ok(&r, &expected.join("\n"));

    let r = p.call("grep", json!({"pattern": "hit c 19[0-9]", "context": 1}));
    let expected: Vec<String> = (190..200).map(|i| format!("c/f{i}.txt:1: hit c {i}")).collect();
    support::assert_ok(&r, &expected.join("\n"));
}

fn hostile(grant: &str, timeout: u64) -> Project {
    Project::new().config(&format!(
        "toolsets:\n  hostile:\n    path: {COMPONENTS}/hostile.wasm\n    grant: [{grant}]\n    limits: {{timeout: {timeout}}}\nagents:\n  a:\n    tools:\n      hostile:\n"
    ))
}

#[test]
fn a_task_has_the_callers_view_of_the_files_not_its_tools() {
    let p = hostile("process, parallel, write", 20);
    let target = p.path("written.txt");
    let outside = p.outside().join("written.txt");
    let scribble = |path: &std::path::Path| json!({"path": path.to_str().unwrap(), "text": "x"});
    // The writer itself asks first, and nobody can answer here.
    let direct = p.call("scribble", scribble(&target));
    assert!(direct.is_error, "{}", direct.text);
    // Through a reader's tasks it gets the reader's read-only view.
    for path in [&target, &outside] {
        let r = p.call("fanout", json!({"tool": "scribble", "input": scribble(path)}));
        assert!(r.text.starts_with("task failed: cannot write"), "{}", r.text);
    }
    assert!(!target.exists() && !outside.exists(), "nothing was written");
}

#[test]
fn a_task_cannot_submit_tasks() {
    let p = hostile("process, parallel", 20);
    let r = p.call("fanout", json!({"tool": "fanout", "input": {"tool": "echo"}}));
    support::assert_ok(&r, "task ok: submit refused: a task cannot submit tasks");
}

#[test]
fn outstanding_tasks_are_bounded() {
    let p = hostile("process, parallel", 20);
    let r = p.call("fanout", json!({"tool": "echo", "input": {"n": 1}, "count": 1000}));
    let lines: Vec<&str> = r.text.lines().collect();
    assert_eq!(
        lines[0],
        "submit refused: too many tasks outstanding (at most 64): wait for some first"
    );
    assert_eq!(lines.len(), 65);
    assert!(lines[1..].iter().all(|l| *l == "task ok: echo {\"n\":1}"), "{}", r.text);
}

#[test]
fn spinning_tasks_stop_at_the_callers_deadline() {
    let p = hostile("process, parallel", 2);
    let rs = p.calls(&[
        ("fanout", json!({"tool": "spin", "count": 3})),
        ("fanout", json!({"tool": "spin", "count": 3, "abandon": true})),
        ("echo", json!({})),
    ]);
    // The caller waits for its tasks in the host until the deadline they
    // share, and stops with them.
    assert_eq!(
        rs[0].text,
        "toolset \"hostile\" ran past its time limit (2s) and was stopped"
    );
    support::assert_ok(&rs[1], "abandoned 3");
    support::assert_ok(&rs[2], "echo {}");
}

#[test]
fn glob_over_many_pieces_sorts_newest_first_with_ties_in_walk_order() {
    let p = Project::new();
    for dir in ["a", "b", "c"] {
        for i in 0..100 {
            let path = p.write(&format!("{dir}/f{i:03}.txt"), "x");
            support::set_mtime(&path, 1_000_000);
        }
    }
    support::set_mtime(&p.path("a/f010.txt"), 2_000_000);
    support::set_mtime(&p.path("c/f050.txt"), 3_000_000);
    let r = p.call("glob", json!({"pattern": "*.txt"}));
    let mut expected = vec!["c/f050.txt".to_string(), "a/f010.txt".to_string()];
    let ties = ["a", "b", "c"]
        .into_iter()
        .flat_map(|dir| (0..100).map(move |i| format!("{dir}/f{i:03}.txt")))
        .filter(|rel| rel != "a/f010.txt" && rel != "c/f050.txt");
    expected.extend(ties.take(198));
    expected.push("[showing the 200 newest of 300 matches; narrow the pattern to see the rest]".into());
    support::assert_ok(&r, &expected.join("\n"));
}

#[test]
fn a_piece_past_its_time_is_finished_by_pieces_of_its_rest_in_walk_order() {
    // Seventy top directories, so the walk is cut as it stands: d01 holds
    // 20,000 files two levels down, far more than a task gets through in
    // its time, so that task hands back the rest of its walk.
    let tree = |deep_dirs: usize| {
        let p = Project::new();
        for d in 0..70 {
            p.write(&format!("d{d:02}/f.txt"), format!("hit top {d}\n"));
        }
        for d in 0..deep_dirs {
            for f in 0..100 {
                let text = if f == 50 && d % 10 == 0 {
                    format!("hit deep {d}\n")
                } else {
                    "nothing\n".to_string()
                };
                let path = p.write(&format!("d01/x/d{d:03}/f{f:03}.txt"), text);
                if f == 50 {
                    support::set_mtime(&path, 1_000_000);
                }
            }
        }
        p
    };
    let tasks_of = |p: &Project, tool: &str, args: serde_json::Value| {
        let host = support::LibraryHost::new(p);
        let r = host.call(tool, args);
        (r, host.worker_tasks())
    };
    let small = tree(1);
    let (_, small_grep) = tasks_of(&small, "grep", json!({"pattern": "hit"}));
    let (_, small_glob) = tasks_of(&small, "glob", json!({"pattern": "f050.txt"}));

    let p = tree(200);
    let (r, tasks) = tasks_of(&p, "grep", json!({"pattern": "hit"}));
    let mut expected = vec![
        "d00/f.txt:1: hit top 0".to_string(),
        "d01/f.txt:1: hit top 1".to_string(),
    ];
    expected.extend(
        (0..200)
            .step_by(10)
            .map(|d| format!("d01/x/d{d:03}/f050.txt:1: hit deep {d}")),
    );
    expected.extend((2..70).map(|d| format!("d{d:02}/f.txt:1: hit top {d}")));
    support::assert_ok(&r, &expected.join("\n"));
    assert!(
        tasks > small_grep,
        "no rest was handed back: {tasks} tasks, as many as without the large piece"
    );

    let (r, tasks) = tasks_of(&p, "glob", json!({"pattern": "f050.txt"}));
    let expected: Vec<String> = (0..200).map(|d| format!("d01/x/d{d:03}/f050.txt")).collect();
    support::assert_ok(&r, &expected.join("\n"));
    assert!(
        tasks > small_glob,
        "no rest was handed back: {tasks} tasks, as many as without the large piece"
    );
}
