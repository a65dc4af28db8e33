//! Third-party toolsets a user can trust: a `sha256:` pin refuses any other
//! bytes, and `inspect --policy` prints the least-privilege declaration that
//! loads the component with exactly what it asks for.

use crate::support;

use support::{COMPONENTS, Project};

/// `inspect --policy FILE`'s declaration, checked to be YAML.
fn policy(p: &Project, wasm: &str) -> String {
    let out = p.run(&["inspect", wasm, "--policy"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    serde_yaml::from_str::<serde_yaml::Value>(&text).expect("the policy is YAML");
    text
}

/// The printed declaration plus an agent that enables `set`.
fn config_with(policy: &str, set: &str) -> String {
    format!("{policy}agents:\n  a:\n    tools:\n      {set}:\n")
}

#[test]
fn inspect_policy_declares_what_loads_and_nothing_more() {
    for (file, set, tool, grants) in [
        ("todo.wasm", "todo", "todos", vec![]),
        ("hostile.wasm", "hostile", "spin", vec!["process", "parallel"]),
    ] {
        let wasm = format!("{COMPONENTS}/{file}");
        let printed = policy(&Project::new(), &wasm);
        let doc: serde_yaml::Value = serde_yaml::from_str(&printed).unwrap();
        let decl = &doc["toolsets"][set];
        let canonical = std::fs::canonicalize(&wasm).unwrap();
        assert_eq!(decl["path"].as_str(), canonical.to_str(), "{printed}");
        let digest = support::inspect(&Project::new(), &wasm)["sha256"].clone();
        assert_eq!(decl["sha256"].as_str(), digest.as_str(), "{printed}");
        let granted: Vec<&str> = decl["grant"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(|g| g.as_str())
            .collect();
        assert_eq!(granted, grants, "{printed}");

        // Exactly that loads: the tools are listed, with no warning.
        let p = Project::new().config(&config_with(&printed, set));
        let out = p.run(&["tools"]);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains(&format!("{tool} ({set})")), "{stdout}");
        assert!(stderr.is_empty(), "{stderr}");
        let inspected = support::inspect(&p, &wasm);
        assert_eq!(inspected["config"]["missing"], serde_json::json!([]), "{inspected}");

        // And nothing less: without any one of its grants it is refused.
        for dropped in &grants {
            let narrowed = printed.replace(&format!("    - {dropped}\n"), "");
            assert_ne!(narrowed, printed, "the grant {dropped} was not found in {printed}");
            let out = Project::new().config(&config_with(&narrowed, set)).run(&["tools"]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "without {dropped}: {stderr}");
            assert!(stderr.contains("which its config does not grant"), "{stderr}");
        }
    }
}

#[test]
fn inspect_policy_refuses_what_is_not_a_toolset() {
    let p = Project::new();
    let not_wasm = p.write("notes.wasm", "not a component");
    let out = p.run(&["inspect", not_wasm.to_str().unwrap(), "--policy"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_pinned_component_with_other_bytes_is_refused_naming_both_digests() {
    let dir = tempfile::tempdir().unwrap();
    let installed = dir.path().join("todo.wasm");
    std::fs::copy(format!("{COMPONENTS}/todo.wasm"), &installed).unwrap();
    let printed = policy(&Project::new(), installed.to_str().unwrap());
    let p = Project::new().config(&config_with(&printed, "todo"));
    assert!(p.run(&["tools"]).status.success());
    let pinned = support::inspect(&p, installed.to_str().unwrap())["sha256"]
        .as_str()
        .unwrap()
        .to_string();

    // Swapped for another valid component (one that asks for no more than
    // the declaration grants would still be refused: the pin is the check).
    std::fs::copy(format!("{COMPONENTS}/skills.wasm"), &installed).unwrap();
    let actual = support::inspect(&p, installed.to_str().unwrap())["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let out = p.run(&["call", "list_dir", "{}"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "iota-host: toolset \"todo\": refused: {} has sha256 {actual}, but the config pins sha256 {pinned}; the file is not the one that was pinned (inspect it again, and update sha256: only if you trust it)",
            installed.display()
        )
    );
    assert!(out.stdout.is_empty(), "nothing ran");

    // One byte changed is as foreign as a whole other file.
    let mut bytes = std::fs::read(format!("{COMPONENTS}/todo.wasm")).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&installed, &bytes).unwrap();
    let out = p.run(&["tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("but the config pins sha256 {pinned}")));
}

#[test]
fn a_pin_that_is_not_a_sha256_digest_is_a_config_error() {
    for bad in ["abc", "sha256:zz", "md5:0123"] {
        let p = Project::new().config(&format!(
            "toolsets:\n  todo:\n    path: {COMPONENTS}/todo.wasm\n    sha256: \"{bad}\"\nagents:\n  a:\n    tools:\n      todo:\n"
        ));
        let out = p.run(&["tools"]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "sha256 must be 64 hexadecimal digits (as `iota-host inspect` prints), got {bad:?}"
            )),
            "{stderr}"
        );
    }
    // The digest as registries print it (`sha256:` and capitals) is accepted.
    let digest = support::inspect(&Project::new(), &format!("{COMPONENTS}/todo.wasm"))["sha256"]
        .as_str()
        .unwrap()
        .to_uppercase();
    let p = Project::new().config(&format!(
        "toolsets:\n  todo:\n    path: {COMPONENTS}/todo.wasm\n    sha256: \"sha256:{digest}\"\nagents:\n  a:\n    tools:\n      todo:\n"
    ));
    let out = p.run(&["tools"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
