//! write_file — creates or overwrites a whole file; parent directories are
//! created.
//!
//! Spec: "A new file needs no prior read and is created with mode 0644; an
//! existing one must have been read this session and be unchanged since, with
//! the same two refusals as edit_file. A path that is a directory (<path> is a
//! directory) or not a regular file (<path> is not a regular file) is refused.
//! On success: wrote X KB to <path> (created) or (overwritten), and the diff
//! against the previous content — unless the old file was too large to read
//! whole, in which case no diff is shown rather than a lying one." content: an
//! empty string is valid; a missing or non-string value is missing required
//! argument: content.

use crate::file_io::{self, Target};
use crate::{Ctx, ledger};
use iota_toolset::ToolResult;
use iota_toolset::args::MaybeEmpty;
use iota_toolset::size::human;
use iota_toolset::writes::{self, Refusal, Version};
use schemars::JsonSchema;
use serde::Deserialize;

/// The tool's name.
pub const NAME: &str = "write_file";
/// Create or overwrite a whole file under the project root; parent directories are created. An
/// existing file must have been read with read_file in this session and be unchanged since. Prefer
/// edit_file for changes inside an existing file.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// The file, relative to the project root.
    pub path: String,
    /// The full content. May be empty.
    pub content: MaybeEmpty,
}

/// A write worked out but not yet done.
pub struct Plan {
    target: Target,
    content: String,
    /// What the file was when planned: its version, or `None` for a new file.
    expect: Option<Version>,
    /// Diff against the previous content; none for a file too large to read whole.
    pub diff: Option<String>,
}

/// Works out the write, checking every refusal. What is there is read
/// through the host's hold on the call's file (`writes`), the file the
/// question named and the write will replace: a symlink inside the root
/// leads to the file it names, already followed by the host.
pub fn plan(ctx: &Ctx, args: &Args) -> Result<Plan, String> {
    let written = args.path.as_str();
    let content = args.content.0.clone();
    let target = Target::resolve(&ctx.jail, written)?;
    let Some(current) = writes::read(file_io::MAX_READ).map_err(|why| refusal(ctx, written, why))? else {
        let diff = file_io::unified_diff(&ctx.jail.relative(&target.abs), "", &content);
        return Ok(Plan {
            target,
            content,
            expect: None,
            diff: Some(diff),
        });
    };
    ledger::check(
        ctx.session,
        &target.abs,
        ledger::Stamp::of_version(&current.version),
        written,
    )?;
    let diff = current.data.map(|old| {
        file_io::unified_diff(
            &ctx.jail.relative(&target.abs),
            &String::from_utf8_lossy(&old),
            &content,
        )
    });
    Ok(Plan {
        target,
        content,
        expect: Some(current.version),
        diff,
    })
}

/// Runs one write_file call.
pub fn run(ctx: &Ctx, args: &Args) -> ToolResult {
    let header = format!("{NAME} {}", args.path);
    let plan = match plan(ctx, args) {
        Ok(plan) => plan,
        Err(e) => return ToolResult::error(header, e),
    };
    let written = &plan.target.written;
    let version = match writes::replace(plan.content.as_bytes(), plan.expect) {
        Ok(version) => version,
        // Something came (or changed) since the plan looked.
        Err(Refusal::Changed) if plan.expect.is_none() => return ToolResult::error(header, ledger::not_read(written)),
        Err(Refusal::Changed) => return ToolResult::error(header, ledger::changed(written)),
        Err(why) => return ToolResult::error(header, refusal(ctx, written, why)),
    };
    ledger::record(ctx.session, &plan.target.abs, ledger::Stamp::of_version(&version));
    let how = if plan.expect.is_none() {
        "created"
    } else {
        "overwritten"
    };
    let text = format!("wrote {} to {written} ({how})", human(plan.content.len() as u64));
    ToolResult::ok(header, text).with_diff(plan.diff)
}

/// The text the model reads when the host will not read or write the file.
fn refusal(ctx: &Ctx, written: &str, why: Refusal) -> String {
    match why {
        Refusal::Outside => ctx.jail.outside(written),
        Refusal::Directory => format!("{written} is a directory"),
        Refusal::NotRegular => format!("{written} is not a regular file"),
        Refusal::Changed => ledger::changed(written),
        Refusal::NotApproved => format!("cannot write {written}: this call was not approved to write it"),
        Refusal::Other(why) => format!("cannot write {written}: {why}"),
    }
}
