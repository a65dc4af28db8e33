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

use crate::file_io::{self, Target, numbered};
use crate::{Ctx, ledger};
use iota_toolset::ToolResult;
use iota_toolset::args::MaybeEmpty;
use iota_toolset::files::HeadError;
use iota_toolset::size::mb;
use iota_toolset::writes::{self, Refusal, Version};
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
    /// The version the edit was worked out from.
    expect: Version,
    count: usize,
    /// Byte range of the first replacement in the new content.
    first: (usize, usize),
    /// Unified diff of the change.
    pub diff: String,
}

/// Works out the edit, checking every refusal in the spec's order. The
/// file is read through the host's hold on the call's file (`writes`), the
/// one the question named and the write will replace, never waiting on a
/// FIFO: one open for its stat and its bytes.
pub fn plan(ctx: &Ctx, args: &Args) -> Result<Plan, String> {
    let written = args.path.as_str();
    let (old, new) = (&*args.old_string, &*args.new_string);
    let replace_all = args.replace_all.unwrap_or(false);
    let target = Target::resolve(&ctx.jail, written)?;
    let current = writes::read(file_io::MAX_READ)
        .map_err(|why| target.refusal(&ctx.jail, head_error(why)))?
        .ok_or_else(|| target.refusal(&ctx.jail, HeadError::NotFound))?;
    let Some(content) = current.data else {
        return Err(format!("{written} is too large to edit ({})", mb(current.version.size)));
    };
    ledger::check(
        ctx.session,
        &target.abs,
        ledger::Stamp::of_version(&current.version),
        written,
    )?;
    if old.is_empty() {
        return Err("old_string must not be empty (use write_file to create or replace a whole file)".into());
    }
    if old == new {
        return Err("old_string and new_string are identical".into());
    }
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
        expect: current.version,
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
    let version = match writes::replace(&plan.new, Some(plan.expect)) {
        Ok(version) => version,
        Err(Refusal::Changed) => return ToolResult::error(header, ledger::changed(written)),
        Err(Refusal::Other(why)) => return ToolResult::error(header, format!("cannot write {written}: {why}")),
        Err(why) => return ToolResult::error(header, plan.target.refusal(&ctx.jail, head_error(why))),
    };
    ledger::record(ctx.session, &plan.target.abs, ledger::Stamp::of_version(&version));
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

/// A refusal of the host's hold on the file, as the file tools word a file
/// they cannot read.
fn head_error(why: Refusal) -> HeadError {
    match why {
        Refusal::Outside => HeadError::Outside,
        Refusal::Directory => HeadError::Directory,
        Refusal::NotRegular => HeadError::NotRegular,
        Refusal::NotApproved => HeadError::Other("this call was not approved to write it".into()),
        Refusal::Changed => HeadError::Other("it changed while it was read".into()),
        Refusal::Other(why) => HeadError::Other(why),
    }
}
