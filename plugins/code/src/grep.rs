//! grep — searches file contents under the project root with a regular
//! expression.
//!
//! Spec: "Binary files (a NUL in the first 8,000 bytes), files over 10 MB, .git
//! and root-.gitignore matches are skipped." Parameters pattern (Rust regex
//! syntax, not trimmed; empty: missing required argument: pattern; malformed:
//! invalid regular expression: <error>), path, include (without / it matches
//! the basename, with one the root-relative path; malformed: invalid include
//! pattern: <include>), context (clamped to 0–10). "Output lines are path:line:
//! text for a match and path:line- text for a context line, in ascending line
//! order per file, each line clipped at 500 bytes with …. The search stops
//! after 100 matches or when the output passes 64 KB: [stopped after N matches;
//! refine the pattern or use include to narrow the search]. Nothing found is no
//! matches for <pattern>."

use crate::literals::RequiredLiterals;
use crate::{Ctx, files, walk};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use iota_toolset::ToolResult;
use iota_toolset::bulk::{self, Content};
use iota_toolset::output::{OUTPUT_CAP, clip};
use schemars::JsonSchema;
use serde::Deserialize;

/// The tool's name.
pub const NAME: &str = "grep";
/// Search file contents under the project root with a regular expression (Rust regex syntax: no
/// backreferences or lookaround). Returns path:line: text for each matching line (path:line- text for
/// context lines), at most 100 matches. Binary files, files over 10 MB, .git and files matched by the
/// root .gitignore are skipped.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// Regular expression in Rust regex syntax. Not trimmed.
    pub pattern: String,
    /// Directory to search, relative to the project root. Default: the root.
    pub path: Option<String>,
    /// Filename glob filter: without / it matches the file name (*.rs), with / the root-relative path (src/**).
    pub include: Option<String>,
    /// Lines of context around each match, 0-10. Default 0.
    pub context: Option<i64>,
}

/// Matches shown before the search stops.
pub const MAX_MATCHES: usize = 100;
/// Files larger than this are skipped.
pub const MAX_FILE: u64 = 10 * 1024 * 1024;
/// Each output line's text is clipped at this many bytes.
pub const LINE_CLIP: usize = 500;
/// Files read per host call.
const BATCH: usize = 128;
/// Context is clamped to this many lines.
pub const MAX_CONTEXT: i64 = 10;

/// Runs one grep call.
pub fn run(ctx: &Ctx, args: &Args) -> ToolResult {
    let header = format!("{NAME} {}", args.pattern);
    ToolResult::from_outcome(header, search(ctx, args))
}

/// Compiles `pattern` for line-oriented search, with the spec's error text.
pub fn compile(pattern: &str) -> Result<RegexMatcher, String> {
    // The regex crate's own message is the one the model knows how to read.
    regex::Regex::new(pattern).map_err(|e| format!("invalid regular expression: {e}"))?;
    RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| format!("invalid regular expression: {e}"))
}

/// Compiles the include filter: (matcher, whether it matches whole paths).
fn compile_include(include: &str) -> Result<(globset::GlobMatcher, bool), String> {
    let whole_path = include.contains('/');
    globset::GlobBuilder::new(include)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| (g.compile_matcher(), whole_path))
        .map_err(|_| format!("invalid include pattern: {include}"))
}

fn search(ctx: &Ctx, args: &Args) -> Result<String, String> {
    let pattern = &args.pattern;
    let include = args.include.as_deref().map(compile_include).transpose()?;
    let context = args.context.unwrap_or(0).clamp(0, MAX_CONTEXT) as usize;
    let matcher = compile(pattern)?;
    let required = RequiredLiterals::of(pattern);
    let start = walk::start_dir(&ctx.jail, args.path.as_deref())?;

    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        // Binary files are recognised up front (NUL in the first 8,000 bytes).
        .binary_detection(BinaryDetection::none())
        .build();
    let mut out = Output::default();
    // Files are read in batches, one host call each (see iota_toolset::bulk).
    let mut walk = walk::entries(&ctx.jail, &start);
    while !out.stopped {
        let batch = candidates(ctx, &mut walk, include.as_ref());
        if batch.paths.is_empty() {
            break;
        }
        for (rel, content) in batch.rels.iter().zip(bulk::read_files(&batch.paths, MAX_FILE)) {
            // Too large or unreadable files are skipped.
            let Content::Data(buf) = content else { continue };
            if required.as_ref().is_some_and(|r| !r.may_match(&buf)) || files::is_binary(&buf) {
                continue;
            }
            let mut sink = FileSink { rel, out: &mut out };
            // An error from one file (it cannot happen on a slice) skips that file.
            let _ = searcher.search_slice(&matcher, &buf, &mut sink);
            if out.stopped {
                break;
            }
        }
    }
    Ok(out.finish(pattern))
}

/// The next files to search: absolute paths for the host, root-relative
/// ones for the output.
#[derive(Default)]
struct Batch {
    paths: Vec<String>,
    rels: Vec<String>,
}

/// Up to [`BATCH`] regular files from the walk that pass the include filter.
fn candidates(
    ctx: &Ctx,
    walk: &mut impl Iterator<Item = walk::Entry>,
    include: Option<&(globset::GlobMatcher, bool)>,
) -> Batch {
    let mut batch = Batch::default();
    for entry in walk.by_ref() {
        if !entry.is_file() {
            continue;
        }
        let rel = ctx.jail.relative(&entry.path);
        if let Some((glob, whole_path)) = include {
            let subject = if *whole_path {
                rel.as_str()
            } else {
                rel.rsplit('/').next().unwrap_or(&rel)
            };
            if !glob.is_match(subject) {
                continue;
            }
        }
        batch.paths.push(entry.path.to_string_lossy().into_owned());
        batch.rels.push(rel);
        if batch.paths.len() == BATCH {
            break;
        }
    }
    batch
}

/// The output under construction and the reasons to stop.
#[derive(Default)]
struct Output {
    text: String,
    matches: usize,
    stopped: bool,
}

impl Output {
    const FOOTER_ROOM: usize = 128;

    /// Appends one line; false (and stopped) when it would pass the cap.
    fn push(&mut self, rel: &str, number: u64, separator: char, line: &[u8]) -> bool {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end_matches(['\n', '\r']);
        let row = format!("{rel}:{number}{separator} {}\n", clip(line, LINE_CLIP));
        if self.text.len() + row.len() > OUTPUT_CAP - Self::FOOTER_ROOM {
            self.stopped = true;
            return false;
        }
        self.text.push_str(&row);
        true
    }

    fn finish(mut self, pattern: &str) -> String {
        if self.matches == 0 {
            return format!("no matches for {pattern}");
        }
        if self.stopped {
            self.text.push_str(&format!(
                "[stopped after {} matches; refine the pattern or use include to narrow the search]",
                self.matches
            ));
        } else {
            self.text.pop();
        }
        self.text
    }
}

struct FileSink<'a> {
    rel: &'a str,
    out: &'a mut Output,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.out.matches == MAX_MATCHES {
            self.out.stopped = true;
            return Ok(false);
        }
        let first = mat.line_number().unwrap_or(0);
        // A match spans one line here (line-oriented search); iterate anyway.
        for (i, line) in mat.lines().enumerate() {
            if !self.out.push(self.rel, first + i as u64, ':', line) {
                return Ok(false);
            }
        }
        self.out.matches += 1;
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        Ok(self
            .out
            .push(self.rel, ctx.line_number().unwrap_or(0), '-', ctx.bytes()))
    }
}
