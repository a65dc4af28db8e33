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

use crate::{Ctx, fanout, walk};
use iota_toolset::ToolResult;
use iota_toolset::files::{self, modified_ns};
use iota_toolset::jail::path_text;
use iota_toolset::output::join_capped;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;

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
    compile(pattern)?;
    let start = walk::start_dir(&ctx.jail, args.path.as_deref())?;

    // Pieces of the walk are matched by workers, their answers joined in
    // walk order up to the candidate cap.
    let mut found: Vec<(u64, String)> = Vec::new();
    fanout::in_walk_order(
        PIECE,
        &ctx.jail,
        &start,
        |entries| Piece {
            pattern: pattern.clone(),
            entries,
        },
        |piece| match_piece(ctx, piece, fanout::Budget::whole()),
        |matched: Matched| {
            let room = CANDIDATES - found.len();
            found.extend(matched.matches.into_iter().take(room).map(|m| (m.modified_ns, m.rel)));
            found.len() < CANDIDATES
        },
    )?;

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

/// The internal tool a worker runs for one piece of the walk: not described,
/// so the model never sees it; its arguments are a [`Piece`], its text the
/// piece's matches as JSON.
pub const PIECE: &str = "glob-piece";

/// Entries walked between looks at the clock.
const ENTRIES_PER_LOOK: usize = 256;

/// One piece of a glob for a worker.
#[derive(Serialize, Deserialize)]
struct Piece {
    pattern: String,
    entries: Vec<walk::Entry>,
}

/// What one piece gave: its matches in walk order, and the part of the
/// piece its budget left unwalked.
#[derive(Default, Serialize, Deserialize)]
struct Matched {
    matches: Vec<Match>,
    rest: Vec<walk::Entry>,
}

impl fanout::Answer for Matched {
    fn take_rest(&mut self) -> Vec<walk::Entry> {
        std::mem::take(&mut self.rest)
    }
}

/// A matching file: its root-relative path and modification time.
#[derive(Serialize, Deserialize)]
struct Match {
    rel: String,
    /// Nanoseconds since the Unix epoch (0 when unknown or earlier).
    modified_ns: u64,
}

/// Runs one piece in a worker instance.
pub fn run_piece(ctx: &Ctx, input: &str) -> ToolResult {
    fanout::answer(PIECE, input, |piece, budget| match_piece(ctx, piece, budget))
}

/// The files of one piece that match, in walk order, at most [`CANDIDATES`],
/// walked until the budget is spent.
fn match_piece(ctx: &Ctx, piece: Piece, budget: fanout::Budget) -> Matched {
    let Some(matcher) = LAST.with(|last| last.get(piece.pattern, |p| compile(p).ok())) else {
        return Matched::default();
    };
    let mut found = Vec::new();
    let mut rest = Vec::new();
    // Regular files are stat'ed after the walk, a directory's matches in one
    // host call: a stat each through WASI was most of a glob's time.
    let mut files_in: HashMap<PathBuf, Vec<(usize, String)>> = HashMap::new();
    let mut walk = walk::entries_of(&ctx.jail, piece.entries);
    for walked in 1.. {
        // Looked at before an entry is taken: a directory taken is listed.
        if walked % ENTRIES_PER_LOOK == 0 && budget.spent() {
            rest = walk.into_rest();
            break;
        }
        let Some(entry) = walk.next() else { break };
        if entry.is_dir() {
            continue;
        }
        let rel = entry.relative(&ctx.jail);
        // By the text itself: a `Path` would be decoded again, byte by byte.
        if !matcher.is_match_candidate(&globset::Candidate::from_bytes(rel.as_bytes())) {
            continue;
        }
        let rel = rel.into_owned();
        // A symlink counts when it leads to a file inside the root; one that
        // leads out (or nowhere) is skipped, so no outside path is ever listed.
        let modified_ns = if entry.is_symlink() {
            match std::fs::metadata(entry.path()) {
                Ok(meta) if meta.is_file() => std::fs::symlink_metadata(entry.path()).map_or(0, |m| modified_ns(&m)),
                _ => continue,
            }
        } else if entry.is_file() {
            let path = entry.path();
            if let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) {
                files_in
                    .entry(dir.to_path_buf())
                    .or_default()
                    .push((found.len(), name.to_string()));
            }
            0
        } else {
            continue;
        };
        found.push(Match { rel, modified_ns });
        if found.len() >= CANDIDATES {
            break;
        }
    }
    for (dir, named) in files_in {
        let (at, names): (Vec<usize>, Vec<String>) = named.into_iter().unzip();
        // A directory gone since it was listed leaves its files at 0, as a
        // failed stat of each would.
        let Ok(stats) = files::stat_names(&path_text(&dir), &names) else {
            continue;
        };
        for (i, stat) in at.into_iter().zip(stats) {
            found[i].modified_ns = stat.map_or(0, |s| s.modified_ns);
        }
    }
    Matched { matches: found, rest }
}

thread_local! {
    /// Compiling the glob was a quarter of a piece's time.
    static LAST: fanout::LastCompiled<String, globset::GlobSet> = const { fanout::LastCompiled::new() };
}

/// Compiles a glob the way the spec reads it: `*` and `?` stay inside one
/// path segment, and a pattern without `/` matches at any depth.
pub fn compile(pattern: &str) -> Result<globset::GlobSet, String> {
    let full = if pattern.contains('/') {
        pattern.to_string()
    } else {
        format!("**/{pattern}")
    };
    let full = full.strip_prefix("./").unwrap_or(&full);
    let invalid = |_| format!("invalid glob pattern: {pattern}");
    let glob = globset::GlobBuilder::new(full)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(invalid)?;
    // A set of one, not the glob's own matcher: a set picks a strategy
    // (`**/*.rs` compares extensions) where the matcher always runs a regex.
    globset::GlobSet::new([glob]).map_err(invalid)
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
        // Patterns a set answers without its regex: an extension, a name.
        let m = compile("*.toml").unwrap();
        assert!(m.is_match("Cargo.toml") && m.is_match("a/b/Cargo.toml"));
        assert!(!m.is_match("a.toml/b") && !m.is_match("a/b.toml.orig"));
        let m = compile("Cargo.toml").unwrap();
        assert!(m.is_match("Cargo.toml") && m.is_match("x/Cargo.toml"));
        assert!(!m.is_match("x/ACargo.toml") && !m.is_match("Cargo.toml/x"));
        let m = compile("src/*.rs").unwrap();
        assert!(m.is_match("src/a.rs") && !m.is_match("src/a/b.rs") && !m.is_match("x/src/a.rs"));
        assert_eq!(compile("a[").unwrap_err(), "invalid glob pattern: a[");
    }
}
