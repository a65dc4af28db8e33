//! The ask toolset's spec rows (choose, confirm), answered through
//! `--answers`, and its presence rules.

use crate::support;

use serde_json::json;
use support::{Project, assert_err, assert_ok, tool_names};

const CONFIG: &str = "agents:\n  a:\n    tools:\n      code: off\n";

fn question(header: &str, labels: &[&str]) -> serde_json::Value {
    json!({"header": header, "question": format!("{header}?"), "options": labels.iter().map(|l| json!({"label": l})).collect::<Vec<_>>()})
}

#[test]
fn on_by_default_interactively_absent_otherwise_and_off_with_false() {
    let p = Project::new().config(CONFIG);
    assert!(
        tool_names(&p).is_empty(),
        "a non-interactive session offers no ask tools"
    );
    let p = Project::new().config(CONFIG).answers("[]");
    assert_eq!(tool_names(&p), ["choose", "confirm"]);
    let p = Project::new()
        .config("agents:\n  a:\n    tools:\n      ask: false\n")
        .answers("[]");
    assert!(tool_names(&p).is_empty(), "ask: false disables it even interactively");
}

#[test]
fn choose_answers_one_row_per_question() {
    let p = Project::new()
        .config(CONFIG)
        .answers(r#"[[["Rust"], {"selected": ["Tests", "Docs"], "custom": "Benchmarks"}, []]]"#);
    let r = p.call(
        "choose",
        json!({"questions": [question("Language", &["Rust", "Go"]), question("Extras that are long", &["Tests", "Docs"]), question("Nothing", &["A", "B"])]}),
    );
    assert_ok(
        &r,
        "Language: Rust\nExtras that are…: Tests, Docs, Benchmarks (custom answer)\nNothing: (nothing selected)",
    );
    assert_eq!(r.presentation, "surface");
}

#[test]
fn choose_declined() {
    let p = Project::new().config(CONFIG).answers("[null]");
    assert_ok(
        &p.call("choose", json!({"questions": [question("Q", &["A", "B"])]})),
        "The user declined to answer.",
    );
}

#[test]
fn choose_refusals_word_for_word() {
    let p = Project::new().config(CONFIG).answers("[]");
    let five: Vec<_> = (0..5).map(|i| question(&format!("q{i}"), &["A"])).collect();
    let rs = p.calls(&[
        ("choose", json!({})),
        ("choose", json!({"questions": []})),
        ("choose", json!({"questions": five})),
        ("choose", json!({"questions": [question("a", &["A"]), "text"]})),
        (
            "choose",
            json!({"questions": [{"header": "", "question": "q", "options": [{"label": "A"}]}]}),
        ),
        (
            "choose",
            json!({"questions": [{"header": "h", "question": "q", "options": [{"label": ""}]}]}),
        ),
    ]);
    assert_err(&rs[0], "choose: questions must be a non-empty array");
    assert_err(&rs[1], "choose: questions must be a non-empty array");
    assert_err(&rs[2], "choose: at most 4 questions per call");
    assert_err(&rs[3], "choose: questions[1] must be an object");
    assert_err(&rs[4], "choose: questions[0] needs header and question");
    assert_err(&rs[5], "choose: questions[0] needs at least one option with a label");
}

#[test]
fn confirm_labels_and_decline() {
    let p = Project::new()
        .config(CONFIG)
        .answers(r#"[true, false, "Ship it", null]"#);
    let rs = p.calls(&[
        ("confirm", json!({"question": "Deploy?"})),
        ("confirm", json!({"question": "Deploy?"})),
        (
            "confirm",
            json!({"question": "Deploy?", "yes_label": "Ship it", "no_label": "Wait"}),
        ),
        ("confirm", json!({"question": "Deploy?"})),
        ("confirm", json!({"question": " "})),
    ]);
    assert_ok(&rs[0], "The user chose: Yes");
    assert_ok(&rs[1], "The user chose: No");
    assert_ok(&rs[2], "The user chose: Ship it");
    assert_ok(&rs[3], "The user declined to answer.");
    assert_err(&rs[4], "confirm: question is required");
}
