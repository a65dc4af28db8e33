//! glob — finds files by name pattern under the project root, newest first.
//!
//! Spec: "a glob over root-relative paths with *, ? and **. A pattern without /
//! is prefixed with **/, so *.go matches at any depth. Empty: missing required
//! argument: pattern; malformed: invalid glob pattern: <pattern>." Returns one
//! root-relative path per line, newest modification first (ties keep the walk's
//! lexical order). At most 200 results are shown, out of at most 10,000
//! candidates collected: [showing the 200 newest of N matches; narrow the
//! pattern to see the rest] (where the 64 KB output cap shows fewer, the note
//! counts those and says so). Nothing found is no files match <pattern>, not an
//! error. .git and anything the root .gitignore matches are excluded.

use crate::{Ctx, fanout, walk};
use iota_toolset::ToolResult;
use iota_toolset::files::{self, modified_ns};
use iota_toolset::output::join_capped;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

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
            found.extend(
                matched
                    .matches
                    .into_iter()
                    .take(room)
                    .map(|Match(rel, modified)| (modified, rel)),
            );
            found.len() < CANDIDATES
        },
    )?;

    if found.is_empty() {
        return Ok(format!("no files match {pattern}"));
    }
    // Stable: ties keep the walk's lexical order.
    found.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    let total = found.len();
    Ok(join_capped(
        found.iter().take(SHOWN).map(|(_, rel)| rel.as_str()),
        |shown| {
            if shown.cut_by_cap {
                let shown = shown.rows;
                Some(format!(
                    "[showing the {shown} newest of {total} matches, as many as fit in the 64 KB output cap; narrow the pattern to see the rest]"
                ))
            } else {
                (total > SHOWN).then(|| {
                    format!("[showing the {SHOWN} newest of {total} matches; narrow the pattern to see the rest]")
                })
            }
        },
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

/// A matching file: its root-relative path and modification time
/// (nanoseconds since the Unix epoch, 0 when unknown or earlier). A tuple,
/// so that it travels from a worker as a JSON array, without keys.
#[derive(Serialize, Deserialize)]
struct Match(String, u64);

/// Runs one piece in a worker instance.
pub fn run_piece(ctx: &Ctx, input: &str) -> ToolResult {
    fanout::answer(PIECE, input, |piece, budget| match_piece(ctx, piece, budget))
}

/// The files of one piece that match, in walk order, at most [`CANDIDATES`],
/// walked until the budget is spent.
fn match_piece(ctx: &Ctx, piece: Piece, budget: fanout::Budget) -> Matched {
    let Some(matcher) = LAST.with(|last| last.get(piece.pattern, |p| Matcher::new(p).ok())) else {
        return Matched::default();
    };
    let mut found = Vec::new();
    let mut rest = Vec::new();
    // Regular files are stat'ed after the walk, a directory's matches in one
    // host call: a stat each through WASI was most of a glob's time.
    let mut by_dir = ByDir::default();
    let mut walk = walk::entries_of(&ctx.jail, piece.entries);
    for walked in 1.. {
        // Looked at before an entry is taken: a directory taken is listed.
        if walked % ENTRIES_PER_LOOK == 0 && budget.spent() {
            rest = walk.into_rest();
            break;
        }
        let Some(entry) = walk.next_entry() else { break };
        if entry.is_dir() {
            continue;
        }
        let rel = entry.relative(&ctx.jail);
        if !matcher.is_match(&rel, entry.is_plain().then(|| entry.name())) {
            continue;
        }
        // A symlink counts when it leads to a file inside the root; one that
        // leads out (or nowhere) is skipped, so no outside path is ever listed.
        let modified_ns = if entry.is_symlink() {
            match std::fs::metadata(entry.path_text()) {
                Ok(meta) if meta.is_file() => {
                    std::fs::symlink_metadata(entry.path_text()).map_or(0, |m| modified_ns(&m))
                }
                _ => continue,
            }
        } else if entry.is_file() {
            by_dir.add(&entry, found.len());
            0
        } else {
            continue;
        };
        found.push(Match(rel.into_owned(), modified_ns));
        if found.len() >= CANDIDATES {
            break;
        }
    }
    by_dir.stat_into(&mut found);
    Matched { matches: found, rest }
}

/// A regular file matched: its index among the matches, and its name,
/// `None` when it is the tail of the match's relative form.
type MatchedFile = (usize, Option<String>);

/// The regular files a piece matched, by directory, to be stat'ed with one
/// `stat-names` call per directory.
#[derive(Default)]
struct ByDir {
    /// Each directory, and its files.
    dirs: Vec<(String, Vec<MatchedFile>)>,
    /// Where each directory is in `dirs`.
    index: HashMap<String, usize>,
}

impl ByDir {
    /// The file `entry`, the match at index `at`.
    fn add(&mut self, entry: &walk::EntryRef<'_>, at: usize) {
        let dir = entry.dir_text();
        // A directory's files come one after another, between its subdirectories.
        let known = match self.dirs.last() {
            Some((last, _)) if last == dir => Some(self.dirs.len() - 1),
            _ => self.index.get(dir).copied(),
        };
        let i = known.unwrap_or_else(|| {
            self.index.insert(dir.to_string(), self.dirs.len());
            self.dirs.push((dir.to_string(), Vec::new()));
            self.dirs.len() - 1
        });
        // A plain name ends the relative form; any other is kept as listed.
        let name = (!entry.is_plain()).then(|| entry.name().to_string());
        self.dirs[i].1.push((at, name));
    }

    /// Each file's modification time into its match. A directory gone since
    /// it was listed leaves its files at 0, as a failed stat of each would.
    fn stat_into(self, found: &mut [Match]) {
        for (dir, files) in self.dirs {
            let stats = {
                let names: Vec<&str> = files
                    .iter()
                    .map(|(at, name)| match name {
                        Some(name) => name.as_str(),
                        None => found[*at].0.rsplit('/').next().unwrap_or_default(),
                    })
                    .collect();
                files::stat_names(&dir, &names)
            };
            let Ok(stats) = stats else { continue };
            for ((at, _), stat) in files.iter().zip(stats) {
                found[*at].1 = stat.map_or(0, |s| s.modified_ns);
            }
        }
    }
}

thread_local! {
    /// Compiling the glob was a quarter of a piece's time.
    static LAST: fanout::LastCompiled<String, Matcher> = const { fanout::LastCompiled::new() };
}

/// A glob as a walk matches it, entry after entry: most entries of a tree
/// do not match, and are told so by comparing a few bytes.
struct Matcher {
    set: globset::GlobSet,
    /// The pattern only ever matches text without `/`: then a path matches
    /// exactly when its last component does, and only that is matched.
    by_name: bool,
    /// What every match ends with: the pattern's tail after its last
    /// special character.
    suffix: String,
}

impl Matcher {
    fn new(pattern: &str) -> Result<Matcher, String> {
        // With a literal separator, only a `/` of the pattern matches one
        // (not `*`, `?` nor a class), and a `**` after an escaped `{` or `,`
        // (globset reads it as `/**`).
        let by_name = !pattern.contains('/') && !pattern.contains("**");
        let tail = pattern
            .rfind(['*', '?', '[', ']', '{', '}', ',', '\\', '/'])
            .map_or(0, |i| i + 1);
        Ok(Matcher {
            set: compile(pattern)?,
            by_name,
            suffix: pattern[tail..].to_string(),
        })
    }

    /// Whether the entry whose root-relative form is `rel` matches; `name`
    /// is its last component, when known to be `rel`'s own tail.
    fn is_match(&self, rel: &str, name: Option<&str>) -> bool {
        let subject = match (self.by_name, name) {
            (false, _) => rel,
            (true, Some(name)) => name,
            (true, None) => rel.rsplit('/').next().unwrap_or(rel),
        };
        // By the text itself: a `Path` would be decoded again, byte by byte.
        subject.ends_with(self.suffix.as_str())
            && self
                .set
                .is_match_candidate(&globset::Candidate::from_bytes(subject.as_bytes()))
    }
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

    #[test]
    fn the_walks_matcher_answers_as_the_whole_glob_does() {
        let patterns = [
            "*.toml",
            "Cargo.toml",
            "*_test.go",
            "*.{rs,toml}",
            "a?c",
            "a[!x]b",
            "a[/]b",
            "**",
            "**/x.rs",
            "a**b",
            "src/*.rs",
            "src/**/*.rs",
            "./x.rs",
            "\\*.rs",
            "x\\",
            "*",
            "{a,b/c}.rs",
            "*.",
            ".*",
            "{a\\,**}",
            "{a\\,**}.rs",
            "{\\{**,b}",
        ];
        let rels = [
            "Cargo.toml",
            "x/Cargo.toml",
            "x/aCargo.toml",
            "a.toml",
            "a/b.toml.orig",
            "a_test.go",
            "b/c.rs",
            "src/a.rs",
            "src/a/b.rs",
            "x.rs",
            "y/x.rs",
            "abc",
            "q/abc",
            "a/b",
            "axb",
            "ayb",
            "*.rs",
            "d/*.rs",
            "x\\",
            "a.",
            ".hidden",
            "d/.hidden",
            "",
            "a**b",
            "aqqb",
            "a/qb",
            "a/x.rs",
            "/x",
            "x//y",
            "a/b/c",
        ];
        for pattern in patterns {
            let (Ok(set), Ok(matcher)) = (compile(pattern), Matcher::new(pattern)) else {
                assert!(compile(pattern).is_err() && Matcher::new(pattern).is_err(), "{pattern}");
                continue;
            };
            for rel in rels {
                let expected = set.is_match(rel);
                let name = rel.rsplit('/').next();
                assert_eq!(matcher.is_match(rel, name), expected, "{pattern} on {rel}");
                assert_eq!(matcher.is_match(rel, None), expected, "{pattern} on {rel}");
            }
        }
    }
}
