//! The skills toolset's spec rows (load_skill), through the binary.

use crate::support;

use serde_json::json;
use support::{Project, assert_err, assert_ok, tool_names};

const CONFIG: &str = "agents:\n  a:\n    tools:\n      skills:\n";

fn skill(dir: &std::path::Path, name: &str, description: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}"),
    )
    .unwrap();
}

fn project() -> Project {
    let p = Project::new().config(CONFIG).with_home();
    skill(
        &p.path(".iota/skills/deploy"),
        "deploy",
        "Ship the app.",
        "# Deploy\nRun make ship.\n",
    );
    p.write(".iota/skills/deploy/references/api.md", "line 1\nline 2\nline 3\n");
    p
}

#[test]
fn instructions_come_back_with_name_and_directory_without_frontmatter() {
    let p = project();
    let r = p.call("load_skill", json!({"skill": "deploy"}));
    assert_ok(
        &r,
        &format!(
            "skill: deploy, directory: {}\n\n# Deploy\nRun make ship.",
            p.path(".iota/skills/deploy").display()
        ),
    );
    assert_eq!(r.header, "load_skill deploy");
    assert_eq!(r.presentation, "group");
}

#[test]
fn bundled_files_and_windows() {
    let p = project();
    let rs = p.calls(&[
        ("load_skill", json!({"skill": "deploy", "file": "references/api.md"})),
        (
            "load_skill",
            json!({"skill": "deploy", "file": "references/api.md", "offset": 2, "limit": 1}),
        ),
        (
            "load_skill",
            json!({"skill": "deploy", "file": "references/api.md", "offset": 2}),
        ),
    ]);
    assert_ok(&rs[0], "line 1\nline 2\nline 3");
    assert_ok(&rs[1], "line 2\n[showing lines 2-2 of 3]");
    assert_ok(&rs[2], "line 2\nline 3");
}

#[test]
fn escaping_paths_are_refused() {
    let p = project();
    for file in ["../other/SKILL.md", "/etc/passwd", "references/../../../x"] {
        assert_err(
            &p.call("load_skill", json!({"skill": "deploy", "file": file})),
            &format!("file must be a relative path inside the skill's directory, got \"{file}\""),
        );
    }
    assert_err(
        &p.call("load_skill", json!({"skill": ""})),
        "missing required argument: skill",
    );
}

#[test]
fn unknown_skills_in_both_forms() {
    let p = project();
    skill(&p.path(".iota/skills/build"), "build", "Build it.", "b\n");
    assert_err(
        &p.call("load_skill", json!({"skill": "nope"})),
        "unknown skill \"nope\"; available skills: build, deploy",
    );
    let empty = Project::new().config(CONFIG).with_home();
    assert_err(
        &empty.call("load_skill", json!({"skill": "x"})),
        "unknown skill \"x\": no skills are installed",
    );
}

#[test]
fn the_output_cap_and_the_20_mb_read_limit() {
    let p = project();
    let long: String = (1..=3000).map(|i| format!("{i:0>40}\n")).collect();
    p.write(".iota/skills/deploy/long.txt", long);
    let r = p.call("load_skill", json!({"skill": "deploy", "file": "long.txt"}));
    assert!(r.text.len() <= 65_536);
    let last = r.text.lines().last().unwrap();
    let shown = r.text.lines().count() - 1;
    assert_eq!(
        last,
        format!(
            "[output truncated at 64 KB — showing lines 1-{shown} of 3000; call load_skill again with offset={shown} and a limit to continue]"
        )
    );
    let big = vec![b'y'; 21 * 1024 * 1024];
    p.write(".iota/skills/deploy/big.txt", &big);
    let r = p.call("load_skill", json!({"skill": "deploy", "file": "big.txt", "offset": 2}));
    assert_ok(
        &r,
        &format!("[file is {} bytes; only the first 20 MB was read]", 21 * 1024 * 1024),
    );
}

#[test]
fn project_skills_come_first_then_the_home_ones() {
    let p = project();
    let home = p.home().unwrap().join(".iota/skills");
    skill(&home.join("deploy"), "deploy", "Home deploy.", "home version\n");
    skill(&home.join("lint"), "lint", "Lint the code.", "# Lint\n");
    let out = p.run(&["prompt"]);
    let prompt = String::from_utf8_lossy(&out.stdout);
    assert!(
        prompt.contains("- deploy: Ship the app.\n- lint: Lint the code.\n"),
        "{prompt}"
    );
    let rs = p.calls(&[
        ("load_skill", json!({"skill": "deploy"})),
        ("load_skill", json!({"skill": "lint"})),
    ]);
    assert!(
        rs[0].text.ends_with("Run make ship."),
        "the project's skill wins: {}",
        rs[0].text
    );
    assert_ok(
        &rs[1],
        &format!("skill: lint, directory: {}\n\n# Lint", home.join("lint").display()),
    );
}

#[test]
fn a_symlink_out_of_the_skill_is_refused_by_the_jail() {
    let p = project();
    std::fs::write(p.outside().join("secret.txt"), "SECRET").unwrap();
    std::os::unix::fs::symlink(p.outside().join("secret.txt"), p.path(".iota/skills/deploy/link.txt")).unwrap();
    let r = p.call("load_skill", json!({"skill": "deploy", "file": "link.txt"}));
    assert!(r.is_error && !r.text.contains("SECRET"), "{}", r.text);
    assert_eq!(
        r.text,
        format!(
            "cannot read {}: it leads outside the project and ~/.iota/skills, which the skills set may not read",
            p.path(".iota/skills/deploy/link.txt").display()
        )
    );
}

#[test]
fn mode_agent_enables_skills_and_any_value_is_ignored() {
    let p = Project::new()
        .config("agents:\n  a:\n    mode: agent\n    tools:\n      code: off\n")
        .with_home();
    assert_eq!(tool_names(&p), ["load_skill"]);
    let p = Project::new()
        .config("agents:\n  a:\n    mode: bot\n    tools:\n      skills: {whatever: 1}\n")
        .with_home();
    assert_eq!(tool_names(&p), ["load_skill"], "declaring both changes nothing");
}
