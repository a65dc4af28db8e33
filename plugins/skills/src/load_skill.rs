//! load_skill — returns a skill's instructions and its directory, or one of
//! its files.
//!
//! Spec: skill (exactly as the catalog lists it; empty: missing required
//! argument: skill); file (relative to the skill's directory; an absolute path
//! or one that escapes with .. is refused: file must be a relative path inside
//! the skill's directory, got "…"); offset; limit. "The instructions come back
//! as skill: <name>, directory: <path>, a blank line, then the SKILL.md body
//! without its frontmatter; a file comes back as its content. Files are read up
//! to 20 MB ([file is N bytes; only the first 20 MB was read] as the last line,
//! so it takes part in windowing) and output is capped at 64 KB: [output
//! truncated at 64 KB — showing lines A-B of N; call load_skill again with
//! offset=B and a limit to continue], or [showing lines A-B of N] for a window
//! that ends early. An unknown name is unknown skill "x"; available skills: a,
//! b, c — or unknown skill "x": no skills are installed."

use crate::catalog::{self, Skill};
use iota_toolset::ToolResult;
use iota_toolset::args::positive;
use iota_toolset::jail::clean;
use iota_toolset::output::OUTPUT_CAP;
use schemars::JsonSchema;
use serde::Deserialize;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The tool's name.
pub const NAME: &str = "load_skill";
/// Load a skill from the catalog in the system prompt: returns its instructions and its directory (the
/// base for its bundled files and scripts). With file, returns one of its bundled files instead,
/// relative to the skill's directory. offset and limit window long content.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// The skill's name, exactly as the catalog lists it.
    pub skill: String,
    /// A bundled file to read instead of the instructions, relative to the skill's directory (references/api.md).
    pub file: Option<String>,
    /// 1-based first line of the window. Default 1.
    pub offset: Option<i64>,
    /// How many lines to return. Default: all remaining.
    pub limit: Option<i64>,
}

/// Files are read up to 20 MB.
pub const MAX_READ: u64 = 20 * 1024 * 1024;
const NOTE_ROOM: usize = 256;

/// Runs one load_skill call against the skill bases.
pub fn run(bases: &[PathBuf], args: &Args) -> ToolResult {
    let header = format!("{NAME} {}", args.skill);
    ToolResult::from_outcome(header, load(bases, args))
}

fn load(bases: &[PathBuf], args: &Args) -> Result<String, String> {
    let (name, file) = (args.skill.as_str(), args.file.as_deref());
    let offset = positive(args.offset, "offset")?.unwrap_or(1);
    let limit = positive(args.limit, "limit")?;
    let skills = catalog::discover(bases);
    let skill = find(&skills, name)?;
    let (prefix, content) = match file {
        None => {
            let text = std::fs::read_to_string(skill.dir.join("SKILL.md"))
                .map_err(|e| cannot_read(&skill.dir.join("SKILL.md"), &e))?;
            let (_, body) = catalog::split_frontmatter(&text);
            (
                format!(
                    "skill: {}, directory: {}\n\n",
                    skill.name,
                    iota_toolset::jail::shown_path(&skill.dir)
                ),
                body.to_string(),
            )
        }
        Some(file) => (String::new(), read_bundled(skill, file)?),
    };
    Ok(format!("{prefix}{}", window(&content, offset, limit)?))
}

/// The skill called `name`, or the unknown-skill text.
pub fn find<'a>(skills: &'a [Skill], name: &str) -> Result<&'a Skill, String> {
    skills.iter().find(|s| s.name == name).ok_or_else(|| {
        if skills.is_empty() {
            format!("unknown skill \"{name}\": no skills are installed")
        } else {
            let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
            format!("unknown skill \"{name}\"; available skills: {}", names.join(", "))
        }
    })
}

/// Where a bundled file is: `file` must be relative and stay inside the
/// skill's directory (a symlink pointing out is followed).
pub fn bundled_path(skill: &Skill, file: &str) -> Result<PathBuf, String> {
    let relative = Path::new(file);
    let escapes = relative.is_absolute()
        || clean(relative).components().next() == Some(Component::ParentDir)
        || file.contains('\0');
    if escapes {
        return Err(format!(
            "file must be a relative path inside the skill's directory, got \"{file}\""
        ));
    }
    Ok(skill.dir.join(clean(relative)))
}

/// `cannot read <path>: <why>`, in words where the preopen refused a link
/// pointing out (WASI's bare `EPERM` would read "os error 63").
pub fn cannot_read(path: &Path, err: &std::io::Error) -> String {
    if iota_toolset::jail::Jail::is_escape(err) {
        format!(
            "cannot read {}: it leads outside the project and ~/.iota/skills, which the skills set may not read",
            path.display()
        )
    } else {
        format!("cannot read {}: {err}", path.display())
    }
}

/// A bundled file's text, read up to 20 MB with the note as its last line.
fn read_bundled(skill: &Skill, file: &str) -> Result<String, String> {
    let path = bundled_path(skill, file)?;
    let missing = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => format!("file does not exist: {}", path.display()),
        _ => cannot_read(&path, &e),
    };
    // Looked at before it is opened: opening a FIFO waits for a writer.
    let kind = std::fs::metadata(&path).map_err(missing)?.file_type();
    if !kind.is_file() && !kind.is_dir() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let mut handle = std::fs::File::open(&path).map_err(missing)?;
    let len = handle.metadata().map(|m| m.len()).unwrap_or(0);
    if handle.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(format!("{} is a directory, not a file", path.display()));
    }
    let mut bytes = Vec::with_capacity(len.min(MAX_READ) as usize);
    (&mut handle)
        .take(MAX_READ)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot_read(&path, &e))?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if len > MAX_READ {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[file is {len} bytes; only the first 20 MB was read]\n"));
    }
    Ok(text)
}

/// Lines `offset..offset+limit` of `content`, within the 64 KB cap.
fn window(content: &str, offset: usize, limit: Option<usize>) -> Result<String, String> {
    let lines: Vec<&str> = content.lines().collect();
    let total = lines.len();
    if total == 0 {
        return Ok(String::new());
    }
    if offset > total {
        return Err(format!("offset {offset} is past the end ({total} lines)"));
    }
    let end = limit.map_or(total, |l| total.min(offset.saturating_add(l - 1)));
    let shown = iota_toolset::output::window(&lines, offset, end, OUTPUT_CAP - NOTE_ROOM, |_, line, out| {
        out.push_str(line)
    });
    let mut out = shown.text;
    if shown.truncated {
        out.push_str(&format!(
            "[output truncated at 64 KB — showing lines {offset}-{} of {total}; call load_skill again with offset={} and a limit to continue]",
            shown.last, shown.last
        ));
        return Ok(out);
    }
    if end < total {
        out.push_str(&format!("[showing lines {offset}-{end} of {total}]"));
    } else {
        out.pop();
    }
    Ok(out)
}
