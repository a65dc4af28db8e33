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

use crate::file_io::{self, Target, plain};
use crate::{Ctx, ledger};
use iota_toolset::ToolResult;
use iota_toolset::args::MaybeEmpty;
use iota_toolset::jail::Jail;
use iota_toolset::size::human;
use schemars::JsonSchema;
use serde::Deserialize;
use std::io::ErrorKind;
use std::path::PathBuf;

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
    /// Where the bytes go: the path itself, or the file a symlink inside the
    /// root leads to (never a path outside: the preopen refuses those).
    destination: PathBuf,
    content: String,
    created: bool,
    /// Diff against the previous content; none for a new file or one too large to read whole.
    pub diff: Option<String>,
}

/// Works out the write, checking every refusal.
pub fn plan(ctx: &Ctx, args: &Args) -> Result<Plan, String> {
    let written = args.path.as_str();
    let content = args.content.0.clone();
    let target = Target::resolve(&ctx.jail, written)?;
    let escape = |e: &std::io::Error| Jail::is_escape(e).then(|| ctx.jail.outside(written));
    let link = match std::fs::symlink_metadata(&target.abs) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let rel = ctx.jail.relative(&target.abs);
            let diff = file_io::unified_diff(&rel, "", &content);
            return Ok(Plan {
                destination: target.abs.clone(),
                target,
                content,
                created: true,
                diff: Some(diff),
            });
        }
        Err(e) => return Err(escape(&e).unwrap_or_else(|| format!("cannot write {written}: {}", plain(&e)))),
    };
    if link.is_dir() {
        return Err(format!("{written} is a directory"));
    }
    let (destination, meta) = if link.file_type().is_symlink() {
        // Follow the link inside the root only: the preopen refuses a way out
        // (EPERM), and a dangling link is not a file to overwrite.
        let meta = std::fs::metadata(&target.abs)
            .map_err(|e| escape(&e).unwrap_or_else(|| format!("{written} is not a regular file")))?;
        (resolve_link(ctx, &target)?, meta)
    } else {
        (target.abs.clone(), link)
    };
    if meta.is_dir() {
        return Err(format!("{written} is a directory"));
    }
    if !meta.is_file() {
        return Err(format!("{written} is not a regular file"));
    }
    ledger::check(ctx.session, &target.abs, ledger::Stamp::of(&meta), written)?;
    let diff = if meta.len() <= file_io::MAX_READ {
        std::fs::read(&destination).ok().map(|old| {
            file_io::unified_diff(
                &ctx.jail.relative(&target.abs),
                &String::from_utf8_lossy(&old),
                &content,
            )
        })
    } else {
        None
    };
    Ok(Plan {
        target,
        destination,
        content,
        created: false,
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
    if plan.created
        && let Some(parent) = plan.destination.parent()
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return ToolResult::error(header, write_error(ctx, written, &e));
    }
    if let Err(e) = file_io::write_atomic(&plan.destination, plan.content.as_bytes()) {
        return ToolResult::error(header, write_error(ctx, written, &e));
    }
    if let Ok(meta) = std::fs::metadata(&plan.destination) {
        ledger::record(ctx.session, &plan.target.abs, ledger::Stamp::of(&meta));
    }
    let how = if plan.created { "created" } else { "overwritten" };
    let text = format!("wrote {} to {written} ({how})", human(plan.content.len() as u64));
    ToolResult::ok(header, text).with_diff(plan.diff)
}

/// The jail message for an escape the preopen caught, else `cannot write <path>: <error>`.
fn write_error(ctx: &Ctx, written: &str, err: &std::io::Error) -> String {
    if Jail::is_escape(err) {
        ctx.jail.outside(written)
    } else {
        format!("cannot write {written}: {}", plain(err))
    }
}

/// Where a symlink inside the root finally leads, worked out the way the
/// OS resolves it (WASI has no realpath): from the root, one component at a
/// time, every link followed where it is met and `..` taken from the
/// directory reached so far, not from the text — `sub/../x` through a
/// linked `sub` is not `x`. Every step must stay inside the root; the host's
/// approval gate resolves the same way, so the question names this file.
fn resolve_link(ctx: &Ctx, target: &Target) -> Result<PathBuf, String> {
    let root = ctx.jail.root();
    let outside = || ctx.jail.outside(&target.written);
    let relative = target.abs.strip_prefix(root).map_err(|_| outside())?;
    // What is left to walk, last component first.
    let mut pending: Vec<std::ffi::OsString> = relative.iter().rev().map(Into::into).collect();
    let mut current = root.to_path_buf();
    let mut hops = 0;
    while let Some(part) = pending.pop() {
        if part == "." {
            continue;
        }
        if part == ".." {
            if current == root {
                return Err(outside());
            }
            current.pop();
            continue;
        }
        let next = current.join(&part);
        let is_link = std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            current = next;
            continue;
        }
        hops += 1;
        if hops > 40 {
            return Err(format!("{} is not a regular file", target.written));
        }
        let link = std::fs::read_link(&next).map_err(|e| write_error(ctx, &target.written, &e))?;
        let rest = if link.is_absolute() {
            current = root.to_path_buf();
            link.strip_prefix(root).map_err(|_| outside())?.to_path_buf()
        } else {
            link
        };
        pending.extend(rest.iter().rev().map(Into::into));
    }
    Ok(current)
}
