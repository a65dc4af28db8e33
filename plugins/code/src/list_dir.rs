//! list_dir — lists one directory level under the project root.
//!
//! Spec: "directories with a trailing /, files with their size, sorted by name.
//! A symlink shows its own size and is never listed as a directory. At most 500
//! entries: [showing 500 of N entries]." (Where the 64 KB output cap shows
//! fewer: [showing K of N entries, as many as fit in the 64 KB output cap].)
//! "An empty directory is [directory is
//! empty]; one that cannot be read, cannot list <dir>: <error>." A directory
//! argument that is not one is `not a directory: <as written>`.

use crate::Ctx;
use crate::file_io::plain;
use iota_toolset::ToolResult;
use iota_toolset::files;
use iota_toolset::jail::Jail;
use iota_toolset::output::join_capped;
use iota_toolset::size::human;
use schemars::JsonSchema;
use serde::Deserialize;

/// The tool's name.
pub const NAME: &str = "list_dir";
/// List one directory level under the project root: directories with a trailing /, files with their
/// size, sorted by name. At most 500 entries.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// Directory to list, relative to the project root. Default: the root.
    pub path: Option<String>,
}

/// Entries shown.
pub const MAX_ENTRIES: usize = 500;

/// Runs one list_dir call.
pub fn run(ctx: &Ctx, args: &Args) -> ToolResult {
    let written = args.path.as_deref().unwrap_or(".");
    let header = format!("{NAME} {written}");
    ToolResult::from_outcome(header, list(ctx, written))
}

fn list(ctx: &Ctx, written: &str) -> Result<String, String> {
    let abs = ctx.jail.resolve(written)?;
    match std::fs::metadata(&abs) {
        Ok(meta) if meta.is_dir() => {}
        Err(e) if Jail::is_escape(&e) => return Err(ctx.jail.outside(written)),
        _ => return Err(format!("not a directory: {written}")),
    }
    let read = std::fs::read_dir(&abs).map_err(|e| format!("cannot list {written}: {}", plain(&e)))?;
    // Each entry's name and whether it is a directory (its own type: a
    // symlink is never shown as one); the others' sizes come from one host
    // call (WASI refuses to list a name that does not decode).
    let mut listed: Vec<(String, bool)> = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| format!("cannot list {written}: {}", plain(&e)))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        listed.push((entry.file_name().to_string_lossy().into_owned(), is_dir));
    }
    let others: Vec<String> = listed
        .iter()
        .filter(|(_, is_dir)| !is_dir)
        .map(|(name, _)| name.clone())
        .collect();
    // In the same order as `others`; a directory gone since it was read
    // leaves sizes at 0, as a failed stat of each entry would.
    let mut sizes = files::stat_names(&abs.to_string_lossy(), &others)
        .unwrap_or_default()
        .into_iter()
        .map(|stat| stat.map_or(0, |s| s.size));
    let mut rows: Vec<(String, String)> = listed
        .into_iter()
        .map(|(name, is_dir)| {
            let row = if is_dir {
                format!("{name}/")
            } else {
                format!("{name} ({})", human(sizes.next().unwrap_or(0)))
            };
            (name, row)
        })
        .collect();
    if rows.is_empty() {
        return Ok("[directory is empty]".to_string());
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let total = rows.len();
    Ok(join_capped(
        rows.iter().take(MAX_ENTRIES).map(|(_, row)| row.as_str()),
        |shown| {
            if shown.cut_by_cap {
                let shown = shown.rows;
                Some(format!(
                    "[showing {shown} of {total} entries, as many as fit in the 64 KB output cap]"
                ))
            } else {
                (total > MAX_ENTRIES).then(|| format!("[showing {MAX_ENTRIES} of {total} entries]"))
            }
        },
    ))
}
