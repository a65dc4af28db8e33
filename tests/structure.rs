//! The host's shape, checked: its modules import one another without a
//! circle, the front ends (`cli`, `mcp`) reach the rest only through the
//! facade (`api.rs`), and the leaves import nothing of the crate. Read from
//! the sources: every `crate::` path in code (comments and unit-test modules
//! left out; a name the crate root re-exports counts as the module it comes
//! from), folded to the top-level module it names. ARCHITECTURE.md draws the
//! layers this keeps.

use crate::support;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The front ends: they import only the facade, the leaves and themselves.
const FRONT_ENDS: [&str; 2] = ["cli", "mcp"];

/// Modules that import nothing of the crate; anyone may import them.
const LEAVES: [&str; 6] = ["builtin_sets", "capability", "platform", "present", "secret", "wit"];

/// Who imports whom: module → imported module → where (`file:line`).
type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

#[test]
fn the_host_has_no_import_circle() {
    let graph = graph(RootNames::Defining);
    if let Some(circle) = find_circle(&graph) {
        let steps: Vec<String> = circle
            .windows(2)
            .map(|pair| format!("{} -> {} ({})", pair[0], pair[1], graph[&pair[0]][&pair[1]].join(", ")))
            .collect();
        panic!("an import circle:\n  {}", steps.join("\n  "));
    }
}

#[test]
fn the_front_ends_reach_the_host_only_through_the_facade() {
    // What the crate root re-exports is the public API: the facade too.
    let past = imports_of(&graph(RootNames::Facade), &FRONT_ENDS, |module| {
        module != "api" && !LEAVES.contains(&module)
    });
    assert!(
        past.is_empty(),
        "front ends importing past api.rs:\n  {}",
        past.join("\n  ")
    );
}

#[test]
fn the_leaves_import_nothing_of_the_crate() {
    let graph = graph(RootNames::Defining);
    for leaf in LEAVES {
        assert!(graph.contains_key(leaf), "no module {leaf}: update LEAVES");
    }
    let imports = imports_of(&graph, &LEAVES, |_| true);
    assert!(
        imports.is_empty(),
        "leaves importing the crate:\n  {}",
        imports.join("\n  ")
    );
}

/// The imports of `modules` that `counts`, each as `from -> to (places)`.
fn imports_of(graph: &Graph, modules: &[&str], counts: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for from in modules {
        for (to, places) in graph.get(*from).into_iter().flatten() {
            if counts(to) {
                found.push(format!("{from} -> {to} ({})", places.join(", ")));
            }
        }
    }
    found
}

/// The check itself, on a made-up crate: it sees a circle through a grouped
/// import and through a root re-export, and not one in a comment or a test.
#[test]
fn the_check_sees_circles_however_they_are_written() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path();
    let write = |name: &str, text: &str| {
        let path = src.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\npub use a::Thing;\n");
    write("a.rs", "use crate::{b::Other};\npub struct Thing;\n");
    write("b.rs", "// crate::a::Thing in a comment\npub struct Other;\n");
    assert!(find_circle(&graph_of(src, RootNames::Defining)).is_none());
    write("b/inner.rs", "fn f() -> crate::Thing { todo!() }\n");
    let circle = find_circle(&graph_of(src, RootNames::Defining)).expect("b/inner.rs uses crate::Thing, which is a's");
    assert_eq!(circle.first(), circle.last());
    write("b/inner.rs", "#[cfg(test)]\nmod tests {\n    use crate::a::Thing;\n}\n");
    assert!(
        find_circle(&graph_of(src, RootNames::Defining)).is_none(),
        "a unit-test module is not the module's"
    );
}

/// What a name the crate root re-exports (`crate::Ui`) counts as.
#[derive(Clone, Copy)]
enum RootNames {
    /// The module that defines it.
    Defining,
    /// The facade, `api`: the public API.
    Facade,
}

fn graph(root_names: RootNames) -> Graph {
    graph_of(&support::workspace().join("host/src"), root_names)
}

/// The import graph of the crate whose sources are in `src`.
fn graph_of(src: &Path, root_names: RootNames) -> Graph {
    let mut reexports = root_reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default());
    if let RootNames::Facade = root_names {
        reexports.values_mut().for_each(|module| *module = "api".to_string());
    }
    let mut graph = Graph::new();
    for file in rust_files(src) {
        let relative = file.strip_prefix(src).unwrap();
        let module = relative
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string())
            .unwrap();
        if module == "lib" || module == "main" {
            continue;
        }
        let edges = graph.entry(module.clone()).or_default();
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, imported) in imports(&text, &reexports) {
            if imported != module {
                let place = format!("{}:{line}", relative.display());
                edges.entry(imported).or_default().push(place);
            }
        }
    }
    graph
}

/// The names `lib.rs` re-exports at the crate root, with their modules.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = path.split("::").next().unwrap_or_default().trim().to_string();
        let last = path.rsplit("::").next().unwrap_or_default();
        for name in last.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.split(" as ").last().unwrap_or_default().trim();
            if !name.is_empty() {
                names.insert(name.to_string(), module.clone());
            }
        }
    }
    names
}

/// Each `crate::` path in `text`'s code with its line, as the top-level
/// module it names; a grouped `crate::{a::X, b::Y}` gives each.
fn imports(text: &str, reexports: &BTreeMap<String, String>) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        if line.trim() == "#[cfg(test)]"
            && lines
                .get(at + 1)
                .is_some_and(|l| l.trim_start().starts_with("mod tests"))
        {
            at = end_of_block(&lines, at + 1);
            continue;
        }
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(start) = rest.find("crate::") {
            rest = &rest[start + "crate::".len()..];
            let names: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
                // A group may span lines: read to its closing brace.
                let mut text = group.to_string();
                let mut next = at + 1;
                while !text.contains('}') && next < lines.len() {
                    text.push_str(lines[next]);
                    next += 1;
                }
                let inside = text.split('}').next().unwrap_or_default();
                inside.split(',').map(|p| first_segment(p.trim())).collect()
            } else {
                vec![first_segment(rest)]
            };
            for name in names.into_iter().filter(|n| !n.is_empty()) {
                let module = if name.starts_with(|c: char| c.is_ascii_lowercase()) {
                    Some(name)
                } else {
                    reexports.get(&name).cloned()
                };
                found.extend(module.map(|m| (at + 1, m)));
            }
        }
        at += 1;
    }
    found
}

/// The identifier `path` starts with.
fn first_segment(path: &str) -> String {
    path.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The line after the block that opens on line `start` closes.
fn end_of_block(lines: &[&str], start: usize) -> usize {
    let mut depth = 0i64;
    for (i, line) in lines.iter().enumerate().skip(start) {
        depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
        if depth <= 0 && line.contains('}') {
            return i + 1;
        }
    }
    lines.len()
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// A circle of imports, as the modules on it (the first repeated at the
/// end), if the graph has one.
fn find_circle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(graph: &Graph, module: &str, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut circle = path[at..].to_vec();
            circle.push(module.to_string());
            return Some(circle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        for next in graph.get(module).into_iter().flat_map(|edges| edges.keys()) {
            if graph.contains_key(next)
                && let Some(circle) = visit(graph, next, path, done)
            {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| visit(graph, module, &mut Vec::new(), &mut done))
}
