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

use crate::files::{self, Target, numbered};
use crate::{Ctx, ledger};
use iota_toolset::ToolResult;
use iota_toolset::args::Args;
use iota_toolset::output::{OUTPUT_CAP, window};
use iota_toolset::size::{kb, mb};

/// The tool's name.
pub const NAME: &str = "read_file";
/// What the model reads about it.
pub const DESCRIPTION: &str = "Read a text file under the project root, with line numbers \
(six columns, a tab, the line). Use offset and limit to read a window of a long file. \
A file must be read before edit_file or write_file may change it.";
/// JSON Schema of the arguments.
pub const PARAMETERS: &str = r#"{"type":"object","properties":{"path":{"type":"string","description":"The file, relative to the project root."},"offset":{"type":"integer","description":"1-based first line. Default 1."},"limit":{"type":"integer","description":"How many lines to return. Default: all remaining."}},"required":["path"],"additionalProperties":false}"#;

/// Room kept under the cap for the closing note.
const NOTE_ROOM: usize = 256;

/// Runs one read_file call.
pub fn run(ctx: &Ctx, args: &Args) -> ToolResult {
    let written = match args.required_str("path") {
        Ok(p) => p,
        Err(e) => return ToolResult::error(NAME, e),
    };
    let header = format!("{NAME} {written}");
    ToolResult::from_outcome(header, read(ctx, args, written))
}

fn positive(args: &Args, name: &str) -> Result<Option<usize>, String> {
    match args.optional_int(name)? {
        None => Ok(None),
        Some(n) if n >= 1 => Ok(Some(n as usize)),
        Some(n) => Err(format!("{name} must be a positive integer, got {n}")),
    }
}

fn read(ctx: &Ctx, args: &Args, written: &str) -> Result<String, String> {
    let target = Target::resolve(&ctx.jail, written)?;
    let offset = positive(args, "offset")?.unwrap_or(1);
    let limit = positive(args, "limit")?;
    // Stat first: a FIFO or device is refused before anything opens it.
    target.regular_file(&ctx.jail)?;
    let mut file = std::fs::File::open(&target.abs).map_err(|e| target.error_text(&ctx.jail, &e))?;
    let meta = file.metadata().map_err(|e| target.error_text(&ctx.jail, &e))?;
    let mut bytes = Vec::new();
    files::read_up_to(&mut file, meta.len(), files::MAX_READ, &mut bytes)
        .map_err(|e| target.error_text(&ctx.jail, &e))?;
    if files::is_binary(&bytes) {
        return Err(format!(
            "{written} looks like a binary file ({}); read_file only serves text",
            kb(meta.len())
        ));
    }
    ledger::record(ctx.session, &target.abs, &meta);
    if bytes.is_empty() {
        return Ok("[file is empty]".to_string());
    }

    let text = String::from_utf8_lossy(&bytes);
    let lines = files::lines(&text);
    let total = lines.len();
    if offset > total {
        return Err(format!("offset {offset} is past the end of {written} ({total} lines)"));
    }
    let end = limit.map_or(total, |l| total.min(offset.saturating_add(l - 1)));

    let shown = window(&lines, offset, end, OUTPUT_CAP - NOTE_ROOM, numbered);
    let (mut out, last) = (shown.text, shown.last);
    if meta.len() > files::MAX_READ {
        out.push_str(&format!(
            "[file is {}; only the first 20 MB was read]\n",
            mb(meta.len())
        ));
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
