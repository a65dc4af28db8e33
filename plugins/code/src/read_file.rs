//! read_file — returns a text file's content with line numbers, optionally
//! windowed. Reading a file is what allows it to be edited afterwards.
//!
//! Spec: "Each row is the line number right-aligned in six columns, a tab, and
//! the line. Files are read up to 20 MB — a larger one carries [file is X MB;
//! only the first 20 MB was read]. A binary file is refused: <path> looks like a
//! binary file (X KB); read_file only serves text. An empty file is [file is
//! empty]. A window that is not the whole file ends with [showing lines A-B of
//! N]; one that hits the 64 KB cap ends with [output truncated — showing lines
//! A-B of N; call read_file with offset=C to continue], and a single line longer
//! than the cap is cut with … rather than making the window empty. A file that
//! is not there: file does not exist: <absolute path>; a directory: <absolute
//! path> is a directory, not a file." Past the end: offset N is past the end of
//! <path> (M lines).

use crate::file_io::{self, Target, numbered};
use crate::{Ctx, ledger};
use iota_toolset::ToolResult;
use iota_toolset::args::positive;
use iota_toolset::files;
use iota_toolset::output::{OUTPUT_CAP, window};
use iota_toolset::size::{kb, mb};
use schemars::JsonSchema;
use serde::Deserialize;

/// The tool's name.
pub const NAME: &str = "read_file";
/// Read a text file under the project root, with line numbers (six columns, a tab, the line). Use
/// offset and limit to read a window of a long file. A file must be read before edit_file or write_file
/// may change it.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// The file, relative to the project root.
    pub path: String,
    /// 1-based first line. Default 1.
    pub offset: Option<i64>,
    /// How many lines to return. Default: all remaining.
    pub limit: Option<i64>,
}

/// Room kept under the cap for the closing note.
const NOTE_ROOM: usize = 256;

/// Runs one read_file call.
pub fn run(ctx: &Ctx, args: &Args) -> ToolResult {
    let header = format!("{NAME} {}", args.path);
    ToolResult::from_outcome(header, read(ctx, args, &args.path))
}

fn read(ctx: &Ctx, args: &Args, written: &str) -> Result<String, String> {
    let target = Target::resolve(&ctx.jail, written)?;
    let offset = positive(args.offset, "offset")?.unwrap_or(1);
    let limit = positive(args.limit, "limit")?;
    let head = files::read_head(&target.abs.to_string_lossy(), file_io::MAX_READ)
        .map_err(|why| target.refusal(&ctx.jail, why))?;
    let bytes = &head.data;
    if file_io::is_binary(bytes) {
        return Err(format!(
            "{written} looks like a binary file ({}); read_file only serves text",
            kb(head.size)
        ));
    }
    ledger::record(ctx.session, &target.abs, ledger::Stamp::of_head(&head));
    if bytes.is_empty() {
        return Ok("[file is empty]".to_string());
    }

    let text = String::from_utf8_lossy(bytes);
    let lines = file_io::lines(&text);
    let total = lines.len();
    if offset > total {
        return Err(format!("offset {offset} is past the end of {written} ({total} lines)"));
    }
    let end = limit.map_or(total, |l| total.min(offset.saturating_add(l - 1)));

    let shown = window(&lines, offset, end, OUTPUT_CAP - NOTE_ROOM, numbered);
    let (mut out, last) = (shown.text, shown.last);
    if head.size > file_io::MAX_READ {
        out.push_str(&format!("[file is {}; only the first 20 MB was read]\n", mb(head.size)));
    }
    if shown.truncated {
        out.push_str(&format!(
            "[output truncated — showing lines {offset}-{last} of {total}; call read_file with offset={} to continue]",
            last + 1
        ));
    } else if offset > 1 || end < total {
        out.push_str(&format!("[showing lines {offset}-{end} of {total}]"));
    } else {
        out.pop();
    }
    Ok(out)
}
