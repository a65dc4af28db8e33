//! edit_file — replaces an exact string in a file, byte for byte; the file's
//! encoding outside the edited span is never touched.
//!
//! Spec: "The file must have been read this session and be unchanged since;
//! files over 20 MB are refused (<path> is too large to edit (X MB)). On
//! success the model reads N replacement(s) in <path> followed by a few
//! numbered lines around the first change, and you see the diff." Refusals, in
//! the order checked: not read yet, changed since, empty old_string (old_string
//! must not be empty (use write_file to create or replace a whole file)), no
//! change (old_string and new_string are identical), not found (old_string not
//! found in <path> — it must match the file content exactly, whitespace
//! included; read the file again if unsure), ambiguous (old_string appears N
//! times in <path>; extend it with surrounding context to make it unique, or
//! set replace_all), cannot write (cannot write <path>: <error>).

use crate::file_io::{self, Target, numbered, plain};
use crate::{Ctx, ledger};
use iota_toolset::ToolResult;
use iota_toolset::args::MaybeEmpty;
use iota_toolset::files::Content;
use iota_toolset::size::mb;
use memchr::memmem;
use schemars::JsonSchema;
use serde::Deserialize;

/// The tool's name.
pub const NAME: &str = "edit_file";
/// Replace an exact string in a file under the project root. old_string must match the file byte for
/// byte, whitespace and indentation included, and be unique unless replace_all is set (extend it with
/// surrounding lines to disambiguate). The file must have been read with read_file in this session and
/// be unchanged since. Prefer this to write_file for changes inside an existing file.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// The file, relative to the project root.
    pub path: String,
    /// The exact text to replace, whitespace and indentation included.
    pub old_string: MaybeEmpty,
    /// The replacement.
    pub new_string: MaybeEmpty,
    /// Replace every occurrence instead of requiring uniqueness. Default false.
    pub replace_all: Option<bool>,
}

/// Lines of the new content shown around the first change.
const SNIPPET_CONTEXT: usize = 3;

/// An edit worked out but not yet written.
pub struct Plan {
    target: Target,
    new: Vec<u8>,
    count: usize,
    /// Byte range of the first replacement in the new content.
    first: (usize, usize),
    /// Unified diff of the change.
    pub diff: String,
}

/// Works out the edit, checking every refusal in the spec's order.
pub fn plan(ctx: &Ctx, args: &Args) -> Result<Plan, String> {
    let written = args.path.as_str();
    let (old, new) = (&*args.old_string, &*args.new_string);
    let replace_all = args.replace_all.unwrap_or(false);
    let target = Target::resolve(&ctx.jail, written)?;
    let meta = target.regular_file(&ctx.jail)?;
    if meta.len() > file_io::MAX_READ {
        return Err(format!("{written} is too large to edit ({})", mb(meta.len())));
    }
    ledger::check(ctx.session, &target.abs, ledger::Stamp::of(&meta), written)?;
    if old.is_empty() {
        return Err("old_string must not be empty (use write_file to create or replace a whole file)".into());
    }
    if old == new {
        return Err("old_string and new_string are identical".into());
    }
    // Read by the host, which opens without blocking and reads regular files
    // only: a FIFO swapped in since the check above would have held a WASI
    // read, and the call, past its deadline.
    let path = iota_toolset::jail::path_text(&target.abs).into_owned();
    let content = match iota_toolset::files::read_files(&[path], file_io::MAX_READ).pop() {
        Some(Content::Data(content)) => content,
        Some(Content::TooLarge(size)) => return Err(format!("{written} is too large to edit ({})", mb(size))),
        Some(Content::Unreadable(why)) => return Err(format!("cannot read {written}: {why}")),
        None => return Err(format!("cannot read {written}")),
    };
    let found: Vec<usize> = memmem::find_iter(&content, old.as_bytes()).collect();
    // find_iter may report overlapping occurrences; replacement needs disjoint ones.
    let mut starts = Vec::with_capacity(found.len());
    for start in found {
        if starts.last().is_none_or(|&prev| start >= prev + old.len()) {
            starts.push(start);
        }
    }
    match starts.len() {
        0 => {
            return Err(format!(
                "old_string not found in {written} — it must match the file content exactly, whitespace included; read the file again if unsure"
            ));
        }
        1 => {}
        n if !replace_all => {
            return Err(format!(
                "old_string appears {n} times in {written}; extend it with surrounding context to make it unique, or set replace_all"
            ));
        }
        _ => {}
    }
    let mut out = Vec::with_capacity(content.len() + starts.len() * new.len());
    let mut copied = 0;
    for &start in &starts {
        out.extend_from_slice(&content[copied..start]);
        out.extend_from_slice(new.as_bytes());
        copied = start + old.len();
    }
    out.extend_from_slice(&content[copied..]);
    let first = (starts[0], starts[0] + new.len());
    let diff = file_io::unified_diff(
        &ctx.jail.relative(&target.abs),
        &String::from_utf8_lossy(&content),
        &String::from_utf8_lossy(&out),
    );
    Ok(Plan {
        target,
        new: out,
        count: starts.len(),
        first,
        diff,
    })
}

/// Runs one edit_file call.
pub fn run(ctx: &Ctx, args: &Args) -> ToolResult {
    let header = format!("{NAME} {}", args.path);
    let plan = match plan(ctx, args) {
        Ok(plan) => plan,
        Err(e) => return ToolResult::error(header, e),
    };
    let written = &plan.target.written;
    if let Err(e) = file_io::write_atomic(&plan.target.abs, &plan.new) {
        return ToolResult::error(header, format!("cannot write {written}: {}", plain(&e)));
    }
    if let Ok(meta) = std::fs::metadata(&plan.target.abs) {
        ledger::record(ctx.session, &plan.target.abs, ledger::Stamp::of(&meta));
    }
    let noun = if plan.count == 1 { "replacement" } else { "replacements" };
    let text = format!("{} {noun} in {written}\n{}", plan.count, snippet(&plan.new, plan.first));
    ToolResult::ok(header, text).with_diff(Some(plan.diff))
}

/// Numbered lines of `content` around the byte range `span`.
fn snippet(content: &[u8], span: (usize, usize)) -> String {
    let line_of = |at: usize| content[..at.min(content.len())].iter().filter(|&&b| b == b'\n').count();
    let first_line = line_of(span.0);
    let last_line = line_of(span.1.saturating_sub(1).max(span.0));
    let text = String::from_utf8_lossy(content);
    let lines = file_io::lines(&text);
    let from = first_line.saturating_sub(SNIPPET_CONTEXT);
    let to = (last_line + SNIPPET_CONTEXT + 1).min(lines.len());
    let mut rows = String::new();
    for (i, line) in lines.iter().enumerate().take(to).skip(from) {
        if i > from {
            rows.push('\n');
        }
        numbered(i + 1, &iota_toolset::output::clip(line, 500), &mut rows);
    }
    rows
}
