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
use crate::{Ctx, fanout, file_io, walk};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use iota_toolset::ToolResult;
use iota_toolset::files::{self, Content};
use iota_toolset::output::{OUTPUT_CAP, clip};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
/// Files taken from the walk at a time (read a host answer, about 256 KiB, at a time).
const BATCH: usize = 256;
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
    matcher(pattern)
}

/// The line matcher of `pattern`, which a worker builds once [`compile`]
/// has accepted the pattern in the call's own instance.
fn matcher(pattern: &str) -> Result<RegexMatcher, String> {
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
    args.include.as_deref().map(compile_include).transpose()?;
    compile(pattern)?;
    let context = args.context.unwrap_or(0).clamp(0, MAX_CONTEXT) as usize;
    let start = walk::start_dir(&ctx.jail, args.path.as_deref())?;

    // Pieces of the walk are searched by workers; their rows are replayed
    // here in walk order, so the caps stop the output exactly where a
    // search in one instance would.
    let mut out = Output::default();
    fanout::in_walk_order(
        PIECE,
        &ctx.jail,
        &start,
        |entries| Piece {
            pattern: pattern.clone(),
            context,
            include: args.include.clone(),
            entries,
        },
        |piece| search_piece(ctx, piece, fanout::Budget::whole()),
        |found: Found| {
            out.replay(found);
            !out.stopped
        },
    )?;
    Ok(out.finish(pattern))
}

/// The internal tool a worker runs for one piece of the walk: not described,
/// so the model never sees it; its arguments are a [`Piece`], its text a
/// [`Found`] as JSON.
pub const PIECE: &str = "grep-piece";

/// One piece of a grep for a worker.
#[derive(Serialize, Deserialize)]
struct Piece {
    pattern: String,
    context: usize,
    include: Option<String>,
    entries: Vec<walk::Entry>,
}

/// What one piece gave: the rows in order, whether a cap stopped it (an
/// event past the rows would pass the cap in the caller too), and the part
/// of the piece its budget left unsearched.
#[derive(Default, Serialize, Deserialize)]
struct Found {
    rows: Vec<(bool, String)>,
    stopped: bool,
    rest: Vec<walk::Entry>,
}

impl fanout::Answer for Found {
    fn take_rest(&mut self) -> Vec<walk::Entry> {
        std::mem::take(&mut self.rest)
    }
}

/// Runs one piece in a worker instance.
pub fn run_piece(ctx: &Ctx, input: &str) -> ToolResult {
    fanout::answer(PIECE, input, |piece, budget| search_piece(ctx, piece, budget))
}

/// Searches the files of one piece, with the caps of a whole search, a
/// batch at a time until the budget is spent.
fn search_piece(ctx: &Ctx, piece: Piece, budget: fanout::Budget) -> Found {
    let include = piece.include.as_deref().and_then(|i| compile_include(i).ok());
    let search = LAST.with(|last| {
        last.get((piece.pattern, piece.context), |(pattern, context)| {
            Some(FileSearch::new(pattern, *context))
        })
    });
    let Some(search) = search else {
        return Found::default();
    };
    let mut out = Output::default();
    let mut rest = Vec::new();
    let mut walk = walk::entries_of(&ctx.jail, piece.entries);
    while !out.stopped {
        let batch = candidates(ctx, &mut walk, include.as_ref());
        if batch.paths.is_empty() || !search.batch(&batch, &mut out) {
            break;
        }
        if budget.spent() && !out.stopped {
            rest = walk.into_rest();
            break;
        }
    }
    Found {
        rows: out.rows,
        stopped: out.stopped,
        rest,
    }
}

/// A compiled search of files: the matcher, the literal prefilter and the
/// line searcher with its context.
struct FileSearch {
    pattern: String,
    /// Built when the first file reaches it: with required literals, a
    /// search of a tree that holds none of them (often, in a session that
    /// repeats it) never needs the regex, whose compiling costs more than
    /// the rest of such a search of a warm tree's piece.
    matcher: std::cell::OnceCell<Option<RegexMatcher>>,
    required: Option<RequiredLiterals>,
    searcher: std::cell::RefCell<Searcher>,
}

thread_local! {
    /// The last search compiled, by pattern and context.
    static LAST: fanout::LastCompiled<(String, usize), FileSearch> = const { fanout::LastCompiled::new() };
}

impl FileSearch {
    fn new(pattern: &str, context: usize) -> FileSearch {
        let searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            // Binary files are recognised up front (NUL in the first 8,000 bytes).
            .binary_detection(BinaryDetection::none())
            .build();
        FileSearch {
            pattern: pattern.to_string(),
            matcher: std::cell::OnceCell::new(),
            required: RequiredLiterals::of(pattern),
            searcher: std::cell::RefCell::new(searcher),
        }
    }

    /// Searches a batch of files in order, reading them a host answer at a
    /// time; false if the regex could not be built (then nothing is found).
    fn batch(&self, batch: &Batch, out: &mut Output) -> bool {
        let mut searcher = self.searcher.borrow_mut();
        let mut built = true;
        let search = |i: usize, content: Content| {
            // Too large or unreadable files are skipped.
            let Content::Data(buf) = content else { return true };
            if file_io::is_binary(&buf) {
                return true;
            }
            // The call's instance accepted the pattern: a worker's build
            // cannot fail, and would search nothing if it did.
            let Some(matcher) = self.matcher.get_or_init(|| matcher(&self.pattern).ok()) else {
                built = false;
                return false;
            };
            let mut sink = FileSink {
                rel: &batch.rels[i],
                out: &mut *out,
            };
            // An error from one file (it cannot happen on a slice) skips that file.
            let _ = searcher.search_slice(matcher, &buf, &mut sink);
            !out.stopped
        };
        match &self.required {
            // The host hands over only the files that hold a required literal.
            Some(required) => {
                files::each_file_containing(&batch.paths, MAX_FILE, required.needles(), required.fold_case(), search)
            }
            None => files::each_file(&batch.paths, MAX_FILE, search),
        }
        built
    }
}

/// The next files to search: absolute paths for the host, root-relative
/// ones for the output.
#[derive(Default)]
struct Batch {
    paths: Vec<String>,
    rels: Vec<String>,
}

/// Up to [`BATCH`] regular files from the walk that pass the include filter.
fn candidates(ctx: &Ctx, walk: &mut walk::Walk, include: Option<&(globset::GlobMatcher, bool)>) -> Batch {
    let mut batch = Batch::default();
    while let Some(entry) = walk.next_entry() {
        if !entry.is_file() {
            continue;
        }
        let rel = entry.relative(&ctx.jail);
        if let Some((glob, whole_path)) = include {
            let subject = if *whole_path {
                &rel
            } else {
                rel.rsplit('/').next().unwrap_or(&rel)
            };
            if !glob.is_match(subject) {
                continue;
            }
        }
        batch.rels.push(rel.into_owned());
        batch.paths.push(entry.path_text().to_string());
        if batch.paths.len() == BATCH {
            break;
        }
    }
    batch
}

/// The output under construction and the reasons to stop: rows, each a
/// match or a context line, already formatted.
#[derive(Default)]
struct Output {
    rows: Vec<(bool, String)>,
    len: usize,
    matches: usize,
    stopped: bool,
}

impl Output {
    const FOOTER_ROOM: usize = 128;

    /// Adds a match row; false (and stopped) at the match cap or the size cap.
    fn matched(&mut self, row: String) -> bool {
        if self.matches == MAX_MATCHES {
            self.stopped = true;
            return false;
        }
        let kept = self.push(true, row);
        if kept {
            self.matches += 1;
        }
        kept
    }

    /// Adds a context row; false (and stopped) when it would pass the size cap.
    fn context(&mut self, row: String) -> bool {
        self.push(false, row)
    }

    fn push(&mut self, is_match: bool, row: String) -> bool {
        if self.len + row.len() + 1 > OUTPUT_CAP - Self::FOOTER_ROOM {
            self.stopped = true;
            return false;
        }
        self.len += row.len() + 1;
        self.rows.push((is_match, row));
        true
    }

    /// Takes a piece's rows as if they were found here.
    fn replay(&mut self, found: Found) {
        for (is_match, row) in found.rows {
            let kept = if is_match { self.matched(row) } else { self.context(row) };
            if !kept {
                return;
            }
        }
        // There the piece stopped at a cap; the same next event passes it here too.
        self.stopped |= found.stopped;
    }

    fn finish(self, pattern: &str) -> String {
        if self.matches == 0 {
            return format!("no matches for {pattern}");
        }
        let mut text = String::with_capacity(self.len + Self::FOOTER_ROOM);
        for (_, row) in &self.rows {
            text.push_str(row);
            text.push('\n');
        }
        if self.stopped {
            text.push_str(&format!(
                "[stopped after {} matches; refine the pattern or use include to narrow the search]",
                self.matches
            ));
        } else {
            text.pop();
        }
        text
    }
}

/// One output line: `path:line: text` for a match, `path:line- text` for
/// context, the text clipped.
fn row(rel: &str, number: u64, separator: char, line: &[u8]) -> String {
    let line = String::from_utf8_lossy(line);
    let line = line.trim_end_matches(['\n', '\r']);
    format!("{rel}:{number}{separator} {}", clip(line, LINE_CLIP))
}

struct FileSink<'a> {
    rel: &'a str,
    out: &'a mut Output,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        // A match is one line here: the search is line-oriented.
        let number = mat.line_number().unwrap_or(0);
        Ok(self.out.matched(row(self.rel, number, ':', mat.bytes())))
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let number = ctx.line_number().unwrap_or(0);
        Ok(self.out.context(row(self.rel, number, '-', ctx.bytes())))
    }
}
