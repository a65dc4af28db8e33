//! An example third-party toolset, built the way a toolset author would:
//! depend on `iota-toolset`, `serde` and `schemars`; declare each tool by its
//! arguments struct (its doc comments are what the model reads); implement
//! `Guest`; build for wasm32-wasip2.
//!
//! One tool, `todos`, lists the TODO and FIXME comments under a directory of
//! the project. It only reads files, so its component imports the filesystem
//! and nothing else: `iota-host inspect` shows exactly that.

#![deny(missing_docs)]

use iota_toolset::jail::Jail;
use iota_toolset::output::join_capped;
use iota_toolset::{ToolResult, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::Path;

/// The tool's name.
pub const NAME: &str = "todos";

/// At most this many comments are listed.
pub const MAX_FOUND: usize = 100;

/// List TODO and FIXME comments under a directory of the project, as path:line: text.
#[derive(Deserialize, JsonSchema)]
pub struct Args {
    /// Directory to search, relative to the project root. Default: the root.
    pub path: Option<String>,
}

/// The tool as the model sees it: a reader, described by [`Args`].
pub fn spec() -> ToolSpec {
    ToolSpec::reader::<Args>(NAME)
}

/// Runs one call against the project at `root`.
pub fn run(root: &str, args: &Args) -> ToolResult {
    let jail = Jail::new(root);
    let written = args.path.as_deref().unwrap_or(".");
    let outcome = jail.resolve(written).map(|dir| {
        let mut found = Vec::new();
        collect(&jail, &dir, &mut found);
        found.sort();
        if found.is_empty() {
            return "no TODO or FIXME comments".to_string();
        }
        let total = found.len();
        join_capped(found.iter().take(MAX_FOUND).map(String::as_str), |shown| {
            (shown.cut_by_cap || total > MAX_FOUND).then(|| format!("[showing {} of {total}]", shown.rows))
        })
    });
    ToolResult::from_outcome(NAME, outcome)
}

fn collect(jail: &Jail, dir: &Path, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        if kind.is_dir() && entry.file_name() != ".git" {
            collect(jail, &path, found);
        } else if kind.is_file()
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            for (i, line) in text.lines().enumerate() {
                if line.contains("TODO") || line.contains("FIXME") {
                    found.push(format!("{}:{}: {}", jail.relative(&path), i + 1, line.trim()));
                }
            }
        }
    }
}

#[cfg(target_arch = "wasm32")]
mod component {
    use iota_toolset::{Context, Guest, ToolResult, ToolSpec};

    struct Todo;

    impl Guest for Todo {
        fn describe(_: Context) -> Result<Vec<ToolSpec>, String> {
            Ok(vec![super::spec()])
        }

        fn prompt(_: Context) -> Option<String> {
            None
        }

        fn preview(_: Context, _: String, _: String) -> Option<String> {
            None
        }

        fn invoke(ctx: Context, _tool: String, args: String) -> ToolResult {
            iota_toolset::tool::call(super::NAME, &args, |args| super::run(&ctx.root, &args))
        }
    }

    iota_toolset::export!(Todo);
}
