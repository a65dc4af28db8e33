//! glob — finds files by name pattern under the project root, newest first.
//!
//! Spec: "a glob over root-relative paths with *, ? and **. A pattern without /
//! is prefixed with **/, so *.go matches at any depth. Empty: missing required
//! argument: pattern; malformed: invalid glob pattern: <pattern>." Returns one
//! root-relative path per line, newest modification first (ties keep the walk's
//! lexical order). At most 200 results are shown, out of at most 10,000
//! candidates collected: [showing the 200 newest of N matches; narrow the
//! pattern to see the rest]. Nothing found is no files match <pattern>, not an
//! error. .git and anything the root .gitignore matches are excluded.

use crate::{Ctx, walk};
use iota_toolset::ToolResult;
use iota_toolset::output::join_capped;
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::SystemTime;

/// The tool's name.
pub const NAME: &str = "glob";
/// Find files by name pattern under the project root, newest first. The pattern is a glob over
/// root-relative paths with *, ? and ** (a pattern without / matches at any depth, so *.rs finds every
/// Rust file). .git and files matched by the root .gitignore are excluded. Returns one path per line, at
/// most 200.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// Glob over root-relative paths, e.g. **/*.rs or src/*.go. Without / it matches at any depth.
    pub pattern: String,
    /// Directory to search, relative to the project root. Default: the root.
    pub path: Option<String>,
}

/// Results shown.
pub const SHOWN: usize = 200;
/// Candidates collected before the walk stops.
pub const CANDIDATES: usize = 10_000;

/// Runs one glob call.
pub fn run(ctx: &Ctx, args: &Args) -> ToolResult {
    let header = format!("{NAME} {}", args.pattern);
    ToolResult::from_outcome(header, search(ctx, args))
}

fn search(ctx: &Ctx, args: &Args) -> Result<String, String> {
    let pattern = &args.pattern;
    let matcher = compile(pattern)?;
    let start = walk::start_dir(&ctx.jail, args.path.as_deref())?;

    let mut found: Vec<(SystemTime, String)> = Vec::new();
    for entry in walk::entries(&ctx.jail, &start) {
        if entry.is_dir() {
            continue;
        }
        let rel = ctx.jail.relative(&entry.path);
        if !matcher.is_match(&rel) {
            continue;
        }
        // A symlink counts when it leads to a file inside the root; one that
        // leads out (or nowhere) is skipped, so no outside path is ever listed.
        let meta = if entry.is_symlink() {
            match std::fs::metadata(&entry.path) {
                Ok(meta) if meta.is_file() => std::fs::symlink_metadata(&entry.path).ok(),
                _ => continue,
            }
        } else if entry.is_file() {
            std::fs::symlink_metadata(&entry.path).ok()
        } else {
            continue;
        };
        let modified = meta.and_then(|m| m.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
        found.push((modified, rel));
        if found.len() >= CANDIDATES {
            break;
        }
    }

    if found.is_empty() {
        return Ok(format!("no files match {pattern}"));
    }
    // Stable: ties keep the walk's lexical order.
    found.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    let total = found.len();
    let footer = (total > SHOWN)
        .then(|| format!("[showing the {SHOWN} newest of {total} matches; narrow the pattern to see the rest]"));
    Ok(join_capped(
        found.iter().take(SHOWN).map(|(_, rel)| rel.as_str()),
        footer.as_deref(),
    ))
}

/// Compiles a glob the way the spec reads it: `*` and `?` stay inside one
/// path segment, and a pattern without `/` matches at any depth.
pub fn compile(pattern: &str) -> Result<globset::GlobMatcher, String> {
    let full = if pattern.contains('/') {
        pattern.to_string()
    } else {
        format!("**/{pattern}")
    };
    let full = full.strip_prefix("./").unwrap_or(&full);
    globset::GlobBuilder::new(full)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|_| format!("invalid glob pattern: {pattern}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_without_slash_match_at_any_depth() {
        let m = compile("*.go").unwrap();
        assert!(m.is_match("main.go"));
        assert!(m.is_match("cmd/x/main.go"));
        let m = compile("cmd/*.go").unwrap();
        assert!(m.is_match("cmd/a.go"));
        assert!(!m.is_match("cmd/x/a.go"));
        assert!(compile("src/**/*.rs").unwrap().is_match("src/a/b/c.rs"));
        assert_eq!(compile("a[").unwrap_err(), "invalid glob pattern: a[");
    }
}
