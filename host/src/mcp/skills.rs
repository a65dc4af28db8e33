//! MCP's Skills extension (`io.modelcontextprotocol/skills`, SEP-2640):
//! `skills/list`, `skills/get` and the `skill://` resources they name,
//! served when the agent has the `skills` set.
//!
//! Nothing about skills is decided here: the `skills` component answers
//! through its internal entry points (`skills/list`, `skills/get`,
//! `skills/read`, see `plugins/skills/src/manifest.rs`) from the same
//! discovery as `load_skill`, and this module only turns its JSON into the
//! protocol's shapes. A skill whose name the extension does not allow
//! (lowercase letters, digits and single hyphens, at most 64) stays out of
//! the listing; `load_skill` still loads it.

use crate::api::HostSession;
use rmcp::model::{
    ListResourcesResult, ListSkillsResult, ReadResourceResult, Resource, ResourceContents, Skill, SkillFrontmatter,
    SkillResource, SkillResources,
};
use serde::Deserialize;
use std::sync::Arc;

/// The built-in set that serves skills (a row of [`crate::builtin_sets`]).
pub const SET: &str = "skills";

/// The URI scheme of skill files.
pub const SCHEME: &str = "skill://";

/// One skill as the component describes it.
#[derive(Debug, Deserialize)]
struct Manifest {
    name: String,
    description: String,
    frontmatter: serde_json::Map<String, serde_json::Value>,
    files: Vec<FileEntry>,
}

#[derive(Debug, Deserialize)]
struct FileEntry {
    path: String,
    size: u64,
    sha256: String,
}

/// A file's bytes as the component sends them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Bytes {
    Text(String),
    Base64(String),
}

/// The `skill://` URI of `path` in skill `name`.
pub fn uri(name: &str, path: &str) -> String {
    let encoded: String = path
        .split('/')
        .map(|segment| {
            segment
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
                    _ => format!("%{b:02X}"),
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/");
    format!("{SCHEME}{name}/{encoded}")
}

/// The skill name and file path a `skill://` URI names.
fn parse(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (name, path) = rest.split_once('/')?;
    let decoded = percent_decode(path)?;
    (!name.is_empty() && !decoded.is_empty()).then(|| (name.to_string(), decoded))
}

fn percent_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// The skills of one MCP session, through the `skills` component.
pub struct Skills {
    session: Arc<HostSession>,
}

impl Skills {
    /// Skills served by `session`'s `skills` set.
    pub fn new(session: Arc<HostSession>) -> Skills {
        Skills { session }
    }

    /// Calls one of the component's entry points; its JSON answer.
    fn entry<T: for<'de> Deserialize<'de>>(&self, entry: &str, args: serde_json::Value) -> Result<T, String> {
        let text = self.session.call_entry(SET, entry, args)?;
        serde_json::from_str(&text).map_err(|e| format!("the skills set answered {entry} wrongly: {e}"))
    }

    fn skill(manifest: Manifest) -> Option<Skill> {
        let mut frontmatter = SkillFrontmatter::new(&manifest.name, &manifest.description);
        frontmatter.extra = manifest.frontmatter;
        frontmatter.extra.remove("name");
        frontmatter.extra.remove("description");
        let files = manifest
            .files
            .iter()
            .map(|f| SkillResource::new(uri(&manifest.name, &f.path), format!("sha256:{}", f.sha256), f.size))
            .collect();
        let skill = Skill::new(
            uri(&manifest.name, "SKILL.md"),
            frontmatter,
            SkillResources::Files(files),
        );
        skill.validate().is_ok().then_some(skill)
    }

    /// `skills/list`: every skill the extension can name.
    pub fn list(&self) -> Result<ListSkillsResult, String> {
        let manifests: Vec<Manifest> = self.entry("skills/list", serde_json::json!({}))?;
        Ok(ListSkillsResult::with_all_items(
            manifests.into_iter().filter_map(Skills::skill).collect(),
        ))
    }

    /// `skills/get`: the skill whose `SKILL.md` is at `uri`.
    pub fn get(&self, uri: &str) -> Result<Skill, String> {
        let (name, path) = parse(uri).ok_or_else(|| format!("{uri} is not a skill:// URI"))?;
        if path != "SKILL.md" {
            return Err(format!("{uri} is not the uri of a SKILL.md"));
        }
        let manifest: Manifest = self.entry("skills/get", serde_json::json!({ "skill": name }))?;
        Skills::skill(manifest).ok_or_else(|| format!("skill {name:?} has a name the skills extension does not allow"))
    }

    /// `resources/read` of a `skill://` URI: the file's bytes, unchanged.
    pub fn read(&self, uri: &str) -> Result<ReadResourceResult, String> {
        let (name, path) = parse(uri).ok_or_else(|| format!("{uri} is not a skill:// URI"))?;
        let bytes: Bytes = self.entry("skills/read", serde_json::json!({ "skill": name, "file": path }))?;
        let contents = match bytes {
            Bytes::Text(text) => ResourceContents::TextResourceContents {
                uri: uri.to_string(),
                mime_type: Some(
                    if path.ends_with(".md") {
                        "text/markdown"
                    } else {
                        "text/plain"
                    }
                    .into(),
                ),
                text,
                meta: None,
            },
            Bytes::Base64(blob) => ResourceContents::blob(blob, uri),
        };
        Ok(ReadResourceResult::new(vec![contents]))
    }

    /// `resources/list`: each skill's `SKILL.md`.
    pub fn resources(&self) -> Result<ListResourcesResult, String> {
        let resources = self
            .list()?
            .skills
            .into_iter()
            .map(|skill| {
                Resource::new(skill.uri.clone(), skill.frontmatter.name.clone())
                    .with_description(skill.frontmatter.description.clone())
                    .with_mime_type("text/markdown")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn uris_round_trip_with_spaces_and_nesting() {
        let uri = super::uri("pdf", "references/api notes.md");
        assert_eq!(uri, "skill://pdf/references/api%20notes.md");
        assert_eq!(
            super::parse(&uri),
            Some(("pdf".into(), "references/api notes.md".into()))
        );
        assert_eq!(super::parse("skill://pdf/"), None);
        assert_eq!(super::parse("file:///etc/passwd"), None);
    }
}
