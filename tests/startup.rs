//! Start-up with remembered descriptions: a start instantiates no component,
//! a call compiles or loads only the set that owns its tool, and a remembered
//! description never widens what a component is granted.

use crate::support;

use serde_json::json;
use std::path::{Path, PathBuf};
use support::{COMPONENTS, Project};

fn files_named(dir: &Path, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| {
                    let name = p.file_name().unwrap().to_string_lossy();
                    name.starts_with(prefix) && name.ends_with(suffix)
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

fn compiled(p: &Project) -> Vec<PathBuf> {
    files_named(&p.cache(), "", ".cwasm")
}

fn tools_json(p: &Project) -> String {
    let out = p.run(&["tools", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The built-in sets plus the example toolset, which (third-party) is
/// compiled at its first use and cached.
fn with_todo() -> Project {
    Project::new()
        .config(&format!(
            "toolsets:\n  todo: {}/todo.wasm\nagents:\n  default:\n    tools:\n      code:\n      skills:\n      todo:\n",
            support::COMPONENTS
        ))
        .with_private_cache()
}

#[test]
fn a_remembered_start_loads_nothing_and_a_call_loads_only_its_set() {
    let p = with_todo();
    p.write("a.txt", "hello\n");
    let described = tools_json(&p);
    assert_eq!(
        compiled(&p).len(),
        3,
        "the first start keeps every set's native code: the built-ins' from the binary, todo's compiled"
    );
    assert_eq!(files_named(&p.cache(), "describe-", ".json").len(), 3);

    for file in compiled(&p) {
        std::fs::remove_file(file).unwrap();
    }
    assert_eq!(
        tools_json(&p),
        described,
        "the remembered description is the description"
    );
    assert!(compiled(&p).is_empty(), "listing the tools compiled nothing");

    support::assert_ok(&p.call("read_file", json!({"path": "a.txt"})), "     1\thello");
    assert_eq!(compiled(&p).len(), 1, "calling read_file loaded code only");
    support::assert_ok(&p.call("todos", json!({})), "no TODO or FIXME comments");
    assert_eq!(compiled(&p).len(), 2, "calling todos loaded todo only");
}

#[test]
fn a_changed_config_value_is_described_again() {
    let p = Project::new().with_private_cache();
    let p = p.config("agents:\n  default:\n    tools:\n      code:\n");
    let writers_asking = tools_json(&p);
    let p = p.config("agents:\n  default:\n    tools:\n      code:\n        auto_write: true\n");
    let writers_not_asking = tools_json(&p);
    assert_ne!(writers_asking, writers_not_asking);
    let write_file = writers_not_asking
        .lines()
        .find(|l| l.contains("\"name\":\"write_file\""))
        .unwrap();
    assert!(write_file.contains("\"approval\":\"never\""), "{write_file}");
    let p = p.config("agents:\n  default:\n    tools:\n      code:\n        read_only: true\n");
    assert!(!tools_json(&p).contains("\"name\":\"write_file\""));
}

fn hostile(p: Project, grant: &str) -> Project {
    p.config(&format!(
        "toolsets:\n  hostile:\n    path: {COMPONENTS}/hostile.wasm\n    grant: [{grant}]\nagents:\n  a:\n    tools:\n      hostile:\n"
    ))
}

#[test]
fn a_remembered_description_still_meets_the_grant_check() {
    let p = hostile(Project::new().with_private_cache(), "process, parallel");
    tools_json(&p);
    let p = hostile(p, "ui, parallel");
    support::assert_refused_for_process(&p.run(&["tools"]));
}

#[test]
fn a_forged_description_cannot_widen_the_grants() {
    let p = hostile(Project::new().with_private_cache(), "process, parallel");
    tools_json(&p);
    // Whoever can write the cache claims the component imports nothing.
    let [remembered] = &files_named(&p.cache(), "describe-", ".json")[..] else {
        panic!("one description remembered");
    };
    // The file ends in the host's 32-byte tag; the forger can change the
    // JSON before it but cannot make a new tag without the key.
    let sealed = std::fs::read(remembered).unwrap();
    let mut forged: serde_json::Value = serde_json::from_slice(&sealed[..sealed.len() - 32]).unwrap();
    forged["imports"] = json!([]);
    std::fs::write(remembered, forged.to_string()).unwrap();

    // The forged file is no description (its tag fails), so the component
    // is described afresh and its real imports refused at load, before any
    // call. (Were the tag right, the real imports would still be checked
    // before its first instance: a_remembered_description_… above.)
    let p = hostile(p, "ui, parallel");
    let out = p.run(&["call", "echo", r#"{"text":"hi"}"#]);
    support::assert_refused_for_process(&out);
    assert!(out.stdout.is_empty(), "nothing ran");
}

#[test]
fn an_unreadable_description_is_described_again() {
    let p = Project::new()
        .config("agents:\n  default:\n    tools:\n      code:\n")
        .with_private_cache();
    let described = tools_json(&p);
    for file in files_named(&p.cache(), "describe-", ".json") {
        std::fs::write(file, "{\"imports\": [], \"tools\": [{\"name\": 1}]}").unwrap();
    }
    assert_eq!(tools_json(&p), described);
}

#[test]
fn the_cache_keeps_the_most_recently_used_files_only() {
    use iota_host::internals::{KEEP_COMPILED, KEEP_DESCRIBED};
    // One set, compiled and described once.
    let p = Project::new()
        .config(&format!(
            "toolsets:\n  todo: {}/todo.wasm\nagents:\n  default:\n    tools:\n      todo:\n",
            support::COMPONENTS
        ))
        .with_private_cache();
    // What earlier builds left: stale components and descriptions, oldest first.
    std::fs::create_dir_all(p.cache()).unwrap();
    let stale = |name: String, i: usize| {
        let path = p.cache().join(name);
        std::fs::write(&path, b"stale").unwrap();
        support::set_mtime(&path, 1_000_000 + i as u64);
        path
    };
    let stale_compiled: Vec<PathBuf> = (0..KEEP_COMPILED + 10)
        .map(|i| stale(format!("{i:064x}-0000000000000000.cwasm"), i))
        .collect();
    let stale_described: Vec<PathBuf> = (0..KEEP_DESCRIBED + 10)
        .map(|i| stale(format!("describe-{i:064x}.json"), i))
        .collect();
    // Each stale component's remembered verification, and one left by a
    // component already gone.
    let memo = |compiled: &PathBuf| PathBuf::from(format!("{}.verified", compiled.display()));
    for compiled in &stale_compiled {
        std::fs::write(memo(compiled), b"stale").unwrap();
    }
    let orphan = p.cache().join(format!("{:064x}-0000000000000000.cwasm.verified", 9999));
    std::fs::write(&orphan, b"stale").unwrap();

    tools_json(&p);
    // A memo goes with its component, and only with it.
    for compiled in &stale_compiled {
        assert_eq!(memo(compiled).exists(), compiled.exists(), "{}", compiled.display());
    }
    assert!(!orphan.exists());
    // The fresh files, and after them the most recent stale ones, are kept.
    let kept = |all: &[PathBuf], keep: usize| -> (Vec<PathBuf>, Vec<PathBuf>) {
        let (old, fresh): (Vec<PathBuf>, Vec<PathBuf>) = all.iter().cloned().partition(|f| {
            std::fs::metadata(f).unwrap().modified().unwrap()
                < std::time::UNIX_EPOCH + std::time::Duration::from_secs(2_000_000)
        });
        assert_eq!(fresh.len(), 1, "{fresh:?}");
        assert_eq!(all.len(), keep);
        (old, fresh)
    };
    let (old, fresh_compiled) = kept(&compiled(&p), KEEP_COMPILED);
    assert_eq!(old, stale_compiled[stale_compiled.len() - (KEEP_COMPILED - 1)..]);
    let described = files_named(&p.cache(), "describe-", ".json");
    let (old, fresh_described) = kept(&described, KEEP_DESCRIBED);
    assert_eq!(old, stale_described[stale_described.len() - (KEEP_DESCRIBED - 1)..]);

    // Using a file marks it: a remembered description read at start is the
    // most recent again, however old its file was.
    support::set_mtime(&fresh_described[0], 1_000);
    tools_json(&p);
    let used = std::fs::metadata(&fresh_described[0]).unwrap().modified().unwrap();
    assert!(used > std::time::SystemTime::now() - std::time::Duration::from_secs(3600));
    assert!(fresh_compiled[0].exists());
}
