//! The catalog for MCP's Skills extension (SEP-2640): `skills/list`,
//! `skills/get` and the `skill://` resources, answered from the same
//! discovery as `load_skill` (bases in order, a name found earlier wins,
//! frontmatter rules, the unknown-skill text, the path rule for files).
//!
//! These are internal entry points (WIT `toolset.invoke` with a name the set
//! does not list, which the model is never offered): the host's MCP server
//! calls them and turns the JSON they answer into the protocol's shapes.
//! - `skills/list` `{}`: every skill's [`Manifest`], as a JSON list.
//! - `skills/get` `{"skill": name}`: one [`Manifest`].
//! - `skills/read` `{"skill": name, "file": path}`: one file's bytes, as
//!   `{"text": …}` when they are UTF-8 and `{"base64": …}` otherwise.

use crate::catalog::{self, Skill};
use crate::load_skill::{self, MAX_READ};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The entry point that lists every skill.
pub const LIST: &str = "skills/list";
/// The entry point for one skill.
pub const GET: &str = "skills/get";
/// The entry point that reads one file of a skill.
pub const READ: &str = "skills/read";

/// How many files a skill's manifest lists at most; how deep it looks.
const MAX_FILES: usize = 1000;
const MAX_DEPTH: usize = 8;

/// One skill as the Skills extension describes it.
#[derive(Debug, Serialize)]
pub struct Manifest {
    /// Its name, as the catalog lists it.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Every frontmatter field the author wrote, as JSON.
    pub frontmatter: serde_json::Map<String, serde_json::Value>,
    /// Its files (`SKILL.md` first), up to [`MAX_FILES`].
    pub files: Vec<FileEntry>,
}

/// One file of a skill.
#[derive(Debug, Serialize)]
pub struct FileEntry {
    /// Relative to the skill's directory, `/`-separated.
    pub path: String,
    /// Its length in bytes.
    pub size: u64,
    /// The SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
}

/// The arguments of `skills/get` and `skills/read`.
#[derive(Debug, Deserialize)]
pub struct Args {
    /// The skill's name.
    pub skill: String,
    /// For `skills/read`: the file, relative to the skill's directory.
    pub file: Option<String>,
}

/// Runs one entry point; its JSON answer, or the error text.
pub fn run(bases: &[PathBuf], entry: &str, args: &str) -> Result<String, String> {
    let skills = catalog::discover(bases);
    let answer = match entry {
        LIST => serde_json::to_value(skills.iter().map(manifest).collect::<Vec<_>>()),
        GET | READ => {
            let args: Args = serde_json::from_str(args).map_err(|e| format!("invalid arguments: {e}"))?;
            let skill = load_skill::find(&skills, &args.skill)?;
            match (entry, args.file) {
                (GET, _) => serde_json::to_value(manifest(skill)),
                (_, Some(file)) => serde_json::to_value(read(skill, &file)?),
                (_, None) => return Err("missing required argument: file".into()),
            }
        }
        _ => return Err(format!("unknown tool: {entry}")),
    };
    answer.map(|v| v.to_string()).map_err(|e| e.to_string())
}

fn manifest(skill: &Skill) -> Manifest {
    let text = std::fs::read_to_string(skill.dir.join("SKILL.md")).unwrap_or_default();
    let frontmatter = catalog::split_frontmatter(&text)
        .0
        .and_then(|f| serde_yaml::from_str::<serde_json::Value>(f).ok())
        .and_then(|v| match v {
            serde_json::Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default();
    let mut files = Vec::new();
    collect(&skill.dir, &skill.dir, 0, &mut files);
    files.sort_by(|a, b| (a.path != "SKILL.md", &a.path).cmp(&(b.path != "SKILL.md", &b.path)));
    Manifest {
        name: skill.name.clone(),
        description: skill.description.clone(),
        frontmatter,
        files,
    }
}

/// The regular files under `dir` (links to files followed, as `load_skill`
/// reads them; linked directories not, so no loop), each at most 20 MB.
fn collect(top: &Path, dir: &Path, depth: usize, files: &mut Vec<FileEntry>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if files.len() >= MAX_FILES {
            return;
        }
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            if depth < MAX_DEPTH {
                collect(top, &path, depth + 1, files);
            }
            continue;
        }
        let Ok(bytes) = read_at_most(&path) else { continue };
        let Ok(relative) = path.strip_prefix(top) else { continue };
        let Some(relative) = relative.to_str() else { continue };
        files.push(FileEntry {
            path: relative.replace('\\', "/"),
            size: bytes.len() as u64,
            sha256: hex(&Sha256::digest(&bytes)),
        });
    }
}

/// A regular file's bytes, refused past [`MAX_READ`]. The type is checked
/// before the open: opening a FIFO would wait for a writer for ever.
fn read_at_most(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| load_skill::cannot_read(path, &e))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let file = std::fs::File::open(path).map_err(|e| load_skill::cannot_read(path, &e))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.len() > MAX_READ {
        return Err(format!("{} is {} bytes, over 20 MB", path.display(), meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_READ)
        .read_to_end(&mut bytes)
        .map_err(|e| load_skill::cannot_read(path, &e))?;
    Ok(bytes)
}

/// The bytes of one file, by `load_skill`'s path rule.
fn read(skill: &Skill, file: &str) -> Result<serde_json::Value, String> {
    let path = load_skill::bundled_path(skill, file)?;
    let bytes = read_at_most(&path)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => serde_json::json!({ "text": text }),
        Err(e) => serde_json::json!({ "base64": base64::engine::general_purpose::STANDARD.encode(e.into_bytes()) }),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_lists_skill_md_first_with_digests_and_the_whole_frontmatter() {
        let dir = std::env::temp_dir().join(format!("iota-skills-manifest-{}", std::process::id()));
        let skill = dir.join(".iota/skills/pdf");
        std::fs::create_dir_all(skill.join("references")).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: pdf\ndescription: PDFs\nlicense: MIT\n---\nbody\n",
        )
        .unwrap();
        std::fs::write(skill.join("references/api.md"), "abc").unwrap();
        let bases = catalog::bases(&dir, None);
        let listed: serde_json::Value = serde_json::from_str(&run(&bases, LIST, "{}").unwrap()).unwrap();
        let pdf = &listed[0];
        assert_eq!(pdf["name"], "pdf");
        assert_eq!(pdf["frontmatter"]["license"], "MIT");
        assert_eq!(pdf["files"][0]["path"], "SKILL.md");
        assert_eq!(pdf["files"][1]["path"], "references/api.md");
        assert_eq!(
            pdf["files"][1]["sha256"],
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let read: serde_json::Value =
            serde_json::from_str(&run(&bases, READ, r#"{"skill":"pdf","file":"references/api.md"}"#).unwrap()).unwrap();
        assert_eq!(read["text"], "abc");
        assert_eq!(
            run(&bases, READ, r#"{"skill":"pdf","file":"../../x"}"#).unwrap_err(),
            "file must be a relative path inside the skill's directory, got \"../../x\""
        );
        assert_eq!(
            run(&bases, GET, r#"{"skill":"nope"}"#).unwrap_err(),
            "unknown skill \"nope\"; available skills: pdf"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
