//! Describe answers remembered across runs, so a start-up instantiates no
//! component: `iota-host call read_file` loads only the set that owns
//! `read_file`, and only when the call runs.
//!
//! A set's description is a function of its bytes, its context (config,
//! root, read directories) and whether anybody can be asked: `describe` runs
//! with no filesystem, an empty session and no process runner. The one way it
//! could depend on more is by asking the user a question; an answer given
//! after such a question is never remembered. The key covers all of these
//! plus the host's version, in the same sealed state directory as compiled
//! components; a file that cannot be read, verified or parsed is a miss.

use crate::engine::sha256_hex;
use crate::host_state::StateDir;
use crate::wit::iota::toolset::types::Context;
use crate::wit::{ApprovalRule, Presentation, ToolSpec};
use serde::{Deserialize, Serialize};

/// What loading a component learns without calling a tool: its imports (the
/// grant check) and its tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Described {
    /// The component's import names, as `caps::imports` reads them.
    pub imports: Vec<String>,
    /// What `describe` returned.
    pub tools: Vec<StoredSpec>,
}

/// A [`ToolSpec`] as stored on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSpec {
    name: String,
    description: String,
    parameters: String,
    approval_required: bool,
    parallel: bool,
    presentation: String,
    read_only: bool,
}

impl From<&ToolSpec> for StoredSpec {
    fn from(spec: &ToolSpec) -> StoredSpec {
        StoredSpec {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
            approval_required: spec.approval == ApprovalRule::Required,
            parallel: spec.parallel,
            presentation: spec.presentation.word().to_string(),
            read_only: spec.read_only,
        }
    }
}

impl StoredSpec {
    /// The spec again; `None` for a presentation this host does not know.
    pub fn to_spec(&self) -> Option<ToolSpec> {
        let presentation = [Presentation::Group, Presentation::Expanded, Presentation::Surface]
            .into_iter()
            .find(|p| p.word() == self.presentation)?;
        Some(ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
            approval: if self.approval_required {
                ApprovalRule::Required
            } else {
                ApprovalRule::Never
            },
            parallel: self.parallel,
            presentation,
            read_only: self.read_only,
        })
    }
}

/// The file name the answer for a component (`digest`, its sha256) described
/// in `ctx`, with or without anybody to ask, is kept under in the host state.
pub fn name(digest: &str, ctx: &Context, interactive: bool) -> String {
    // Length-prefixed fields: no two different inputs concatenate alike.
    let mut input = Vec::new();
    let fields = [env!("CARGO_PKG_VERSION"), digest, &ctx.config, &ctx.root]
        .into_iter()
        .chain(ctx.read_dirs.iter().map(String::as_str))
        .chain([if interactive { "interactive" } else { "nobody to ask" }]);
    for field in fields {
        input.extend_from_slice(&(field.len() as u64).to_le_bytes());
        input.extend_from_slice(field.as_bytes());
    }
    format!("describe-{}.json", sha256_hex(&input))
}

/// The remembered answer `name`, if there is one the host sealed.
pub fn load(state: &StateDir, name: &str) -> Option<(Vec<String>, Vec<ToolSpec>)> {
    let described: Described = serde_json::from_slice(&state.read(name)?).ok()?;
    let tools = described.tools.iter().map(StoredSpec::to_spec).collect::<Option<_>>()?;
    crate::engine::mark_used(&state.dir().join(name));
    Some((described.imports, tools))
}

/// Remembers an answer; a cache that cannot be written only costs the next
/// start a describe.
pub fn store<'a>(state: &StateDir, name: &str, imports: &[String], tools: impl IntoIterator<Item = &'a ToolSpec>) {
    let described = Described {
        imports: imports.to_vec(),
        tools: tools.into_iter().map(StoredSpec::from).collect(),
    };
    if let Ok(json) = serde_json::to_vec(&described) {
        let _ = state.write(name, &json);
        crate::engine::prune(state.dir());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(config: &str) -> Context {
        Context {
            config: config.into(),
            root: "/project".into(),
            read_dirs: vec![],
        }
    }

    #[test]
    fn every_input_changes_the_key() {
        let base = name("abc", &ctx("null"), true);
        assert_eq!(base, name("abc", &ctx("null"), true));
        assert_ne!(base, name("abd", &ctx("null"), true));
        assert_ne!(base, name("abc", &ctx("{\"auto_write\":true}"), true));
        assert_ne!(base, name("abc", &ctx("null"), false));
        let mut other_root = ctx("null");
        other_root.root = "/other".into();
        assert_ne!(base, name("abc", &other_root, true));
        let mut read_dir = ctx("null");
        read_dir.read_dirs = vec!["/home/u/.iota/skills".into()];
        assert_ne!(base, name("abc", &read_dir, true));
    }

    #[test]
    fn specs_round_trip_and_garbage_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::open(&dir.path().join("state")).unwrap();
        let spec = ToolSpec {
            name: "grep".into(),
            description: "Search.".into(),
            parameters: "{\"type\":\"object\"}".into(),
            approval: ApprovalRule::Never,
            parallel: true,
            presentation: Presentation::Group,
            read_only: true,
        };
        let file = name("abc", &ctx("null"), false);
        assert!(load(&state, &file).is_none());
        store(
            &state,
            &file,
            &["wasi:cli/stdout@0.2.6".to_string()],
            std::slice::from_ref(&spec),
        );
        let (imports, tools) = load(&state, &file).unwrap();
        assert_eq!(imports, ["wasi:cli/stdout@0.2.6"]);
        assert_eq!(StoredSpec::from(&tools[0]), StoredSpec::from(&spec));
        state
            .write(&file, b"{\"imports\": [], \"tools\": [{\"name\": 1}]}")
            .unwrap();
        assert!(load(&state, &file).is_none(), "sealed but not a description");
        std::fs::write(state.dir().join(&file), "{\"imports\": [], \"tools\": []}").unwrap();
        assert!(load(&state, &file).is_none(), "a description the host did not seal");
    }
}
