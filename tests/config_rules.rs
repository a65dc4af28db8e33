//! The config rules of the spec's "Built-in toolsets" section and the CLI's
//! config discovery, through the binary.

use crate::support;

use support::{Project, tool_names};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn key_presence_enables_and_every_yaml11_false_spelling_disables() {
    let p = Project::new().config("agents:\n  a:\n    tools:\n      code:\n");
    assert_eq!(tool_names(&p).len(), 6);
    for off in ["false", "no", "off", "No", "OFF", "False", "n"] {
        let p = Project::new().config(&format!("agents:\n  a:\n    tools:\n      code: {off}\n"));
        assert!(tool_names(&p).is_empty(), "code: {off} disables the set");
    }
}

#[test]
fn an_unknown_set_fails_the_load() {
    let p = Project::new().config("agents:\n  a:\n    tools:\n      browser:\n");
    let out = p.run(&["tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown toolset \"browser\""), "{}", stderr(&out));
    let p = Project::new().config("agents:\n  a:\n    tools:\n      agent:\n");
    let out = p.run(&["tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("toolset \"agent\" was renamed to \"skills\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_value_that_does_not_decode_is_a_warning_and_the_set_is_left_out() {
    let p = Project::new().config("agents:\n  a:\n    tools:\n      code: [1, 2]\n");
    let out = p.run(&["tools"]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(
        stderr(&out),
        "iota-host: warning: toolset \"code\": config must be a mapping (auto_write, read_only): invalid type: sequence, expected a mapping (ignored)\n"
    );
    let p = Project::new().config("agents:\n  a:\n    tools:\n      code:\n        auto_write: perhaps\n");
    let out = p.run(&["tools"]);
    assert!(
        stderr(&out)
            .starts_with("iota-host: warning: toolset \"code\": config must be a mapping (auto_write, read_only): "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn read_only_with_auto_write_is_refused() {
    let p = Project::new().config("agents:\n  a:\n    tools:\n      code: {read_only: true, auto_write: true}\n");
    let out = p.run(&["tools"]);
    assert_eq!(
        stderr(&out),
        "iota-host: warning: toolset \"code\": read_only and auto_write contradict each other: auto_write approves writes the set does not offer (ignored)\n"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn shell_config_refusals_use_the_specs_texts() {
    let p = Project::new().config("agents:\n  a:\n    tools:\n      shell:\n        sandbox: on\n      code:\n");
    let out = p.run(&["tools"]);
    assert!(
        stderr(&out).contains(
            "iota-host: warning: toolset \"shell\": sandbox must be \"auto\" or \"off\", got \"on\" (ignored)"
        ),
        "{}",
        stderr(&out)
    );
    let p = Project::new().config("agents:\n  a:\n    tools:\n      shell: 3\n");
    let out = p.run(&["tools"]);
    assert!(
        stderr(&out).contains("toolset \"shell\": config must be a mapping (sandbox, network, auto_run, write): invalid type: number `3`, expected a mapping (ignored)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn yaml11_booleans_are_accepted_inside_a_set() {
    let p = Project::new().config("agents:\n  a:\n    tools:\n      code:\n        auto_write: yes\n");
    let out = p.run(&["tools", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let write = text.lines().find(|l| l.contains("\"write_file\"")).unwrap();
    assert!(write.contains("\"approval\":\"never\""), "{write}");
}

#[test]
fn config_discovery_env_then_dot_iota_then_embedded() {
    let p = Project::new();
    // Embedded default: the code set with its defaults (writers gated).
    let out = p.command().args(["tools", "--json"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("\"write_file\"") && text.contains("\"approval\":\"required\""));
    // ./.iota/config.yaml in the working directory.
    p.write(
        ".iota/config.yaml",
        "agents:\n  a:\n    tools:\n      code: {read_only: true}\n",
    );
    let out = p.command().args(["tools", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let names = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        names.contains("\"name\":\"read_file\""),
        "the project's config was read: {names}"
    );
    assert!(!names.contains("\"name\":\"write_file\""));
    // $IOTA_CONFIG wins over it.
    let env_config = p.outside().join("env.yaml");
    std::fs::write(&env_config, "agents:\n  a:\n    tools:\n      code: off\n").unwrap();
    let out = p
        .command()
        .env("IOTA_CONFIG", &env_config)
        .args(["tools", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
}

#[test]
fn agent_selection() {
    let p = Project::new().config("agents:\n  a:\n    tools: {code: off}\n  b:\n    tools: {code: }\n");
    let out = p.run(&["tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("choose one with --agent"));
    assert_eq!(
        p.run(&["--agent", "b", "tools", "--json"])
            .stdout
            .iter()
            .filter(|&&b| b == b'\n')
            .count(),
        6
    );
    let out = p.run(&["--agent", "zz", "tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no agent \"zz\" (agents: a, b)"));
}

#[test]
fn usage_errors_exit_2() {
    let p = Project::new();
    assert_eq!(p.run(&["call", "read_file"]).status.code(), Some(2));
    assert_eq!(p.run(&["call", "read_file", "not json"]).status.code(), Some(2));
    assert_eq!(p.run(&["frobnicate"]).status.code(), Some(2));
    let out = p.run(&["call", "nope", "{}"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "unknown tool: nope\n");
}

#[test]
fn text_mode_prints_exactly_what_the_model_reads() {
    let p = Project::new();
    p.write("a.txt", "x\n");
    let out = p.run(&["call", "read_file", r#"{"path":"a.txt"}"#, "list_dir", "{}"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "     1\tx\na.txt (2 B)\n");
    let stderr = support::without_cache_notice(&out.stderr);
    assert!(stderr.is_empty(), "no header on a non-terminal stderr: {stderr}");
}

/// The project's own `./.iota/config.yaml` every loosening key of which is
/// planted: each is ignored, with one warning naming them all; what it
/// restricts stays; nothing it would have allowed happens.
#[test]
fn a_project_config_may_restrict_but_never_loosen() {
    let p = Project::new().with_home();
    let outside = support::visible_outside_dir();
    p.write(
        ".iota/config.yaml",
        format!(
            "audit: {0}/audit.jsonl\ntoolsets:\n  todo:\n    path: {1}/todo.wasm\n    grant: [write, process]\nagents:\n  default:\n    tools:\n      shell: {{sandbox: off, auto_run: true, network: true, write: [{0}], env: {{pass: [AWS_SECRET_ACCESS_KEY]}}, max_processes: 100000}}\n      code: {{auto_write: true, read_only: false}}\n      todo:\n",
            outside.path().display(),
            support::COMPONENTS
        ),
    );
    let out = write_and_escape(&p, outside.path());
    let err = stderr(&out);
    assert!(
        err.contains("warning: .iota/config.yaml is the project's own config, which may restrict but not loosen what runs: ignored toolsets, audit, agents.default.tools.todo, agents.default.tools.shell.sandbox, agents.default.tools.shell.auto_run, agents.default.tools.shell.network, agents.default.tools.shell.write, agents.default.tools.shell.env, agents.default.tools.shell.max_processes, agents.default.tools.code.auto_write; to trust this project, list it in ~/.iota/config.yaml under trusted_projects: ["),
        "{err}"
    );
    assert_eq!(
        err.matches("warning: .iota/config.yaml").count(),
        1,
        "one warning: {err}"
    );
    // The writer asked (nobody could answer) instead of writing; the command
    // was asked about (no sandbox: off, no auto_run) or sandboxed, never run
    // outside; no audit log was written where the project said.
    assert!(!p.path("written.txt").exists());
    assert!(!outside.path().join("escaped").exists());
    assert!(!outside.path().join("audit.jsonl").exists());
    assert_eq!(out.status.code(), Some(1));
}

/// A project the user lists in `~/.iota/config.yaml` keeps its own config in
/// full, without a warning.
#[test]
fn a_trusted_project_keeps_its_config() {
    let p = Project::new().with_home();
    let home = p.home().unwrap().to_path_buf();
    std::fs::create_dir_all(home.join(".iota")).unwrap();
    std::fs::write(
        home.join(".iota/config.yaml"),
        format!(
            "trusted_projects: [{}]\nagents:\n  default:\n    tools:\n      code:\n",
            p.root().display()
        ),
    )
    .unwrap();
    p.write(
        ".iota/config.yaml",
        "agents:\n  default:\n    tools:\n      code: {auto_write: true}\n",
    );
    let out = p
        .command()
        .args(["call", "write_file", r#"{"path":"written.txt","content":"x"}"#])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    assert_eq!(p.read("written.txt"), b"x");
}

/// Without a project config, the user's `~/.iota/config.yaml` is the config.
#[test]
fn the_users_own_config_is_found_in_the_home_directory() {
    let p = Project::new().with_home();
    let home = p.home().unwrap().to_path_buf();
    std::fs::create_dir_all(home.join(".iota")).unwrap();
    std::fs::write(
        home.join(".iota/config.yaml"),
        "agents:\n  mine:\n    tools:\n      ask: false\n",
    )
    .unwrap();
    let out = p.command().args(["tools"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).is_empty(),
        "agent mine has no tools"
    );
}

/// A tag on a set's value (`!x {sandbox: off}`) hides nothing from the
/// restriction.
#[test]
fn a_tagged_value_in_a_project_config_is_restricted_too() {
    let p = Project::new();
    let outside = support::visible_outside_dir();
    p.write(
        ".iota/config.yaml",
        "agents:\n  a:\n    tools:\n      shell: !x {sandbox: \"off\", auto_run: true}\n      code: !y {auto_write: true}\n",
    );
    let out = write_and_escape(&p, outside.path());
    let err = stderr(&out);
    assert!(
        err.contains(
            "ignored agents.a.tools.shell.sandbox, agents.a.tools.shell.auto_run, agents.a.tools.code.auto_write;"
        ),
        "{err}"
    );
    assert!(!p.path("written.txt").exists());
    assert!(!outside.path().join("escaped").exists());
}

/// Where the user has a config of their own, an untrusted project's config
/// cannot replace it (it could turn back on what the user turned off).
#[test]
fn an_untrusted_project_config_does_not_replace_the_users_own() {
    let p = Project::new();
    let home = p.home().unwrap().to_path_buf();
    std::fs::create_dir_all(home.join(".iota")).unwrap();
    std::fs::write(
        home.join(".iota/config.yaml"),
        "agents:\n  mine:\n    tools:\n      code: {read_only: true}\n",
    )
    .unwrap();
    p.write(
        ".iota/config.yaml",
        "agents:\n  theirs:\n    tools:\n      shell:\n      code:\n",
    );
    let out = p.command().args(["tools", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let names = String::from_utf8_lossy(&out.stdout);
    assert!(names.contains("\"name\":\"read_file\""), "{names}");
    assert!(
        !names.contains("\"name\":\"write_file\"") && !names.contains("\"name\":\"shell\""),
        "{names}"
    );
    assert!(
        stderr(&out).contains("warning: .iota/config.yaml is the project's own config and the project is not trusted: ignored in favour of ~/.iota/config.yaml"),
        "{}",
        stderr(&out)
    );
}

/// What a loosened config would let through: a write without asking and a
/// command that touches `outside` (which only an unsandboxed run can).
fn write_and_escape(p: &Project, outside: &std::path::Path) -> std::process::Output {
    p.command()
        .args([
            "call",
            "--json",
            "write_file",
            r#"{"path":"written.txt","content":"x"}"#,
            "shell",
        ])
        .arg(format!(r#"{{"command":"touch {}/escaped"}}"#, outside.display()))
        .output()
        .unwrap()
}
