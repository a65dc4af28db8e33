//! The `skills` toolset: one tool, `load_skill`, that activates a skill from
//! the catalog in the system prompt and reads its bundled files.
//!
//! Skills live in `<root>/.iota/skills/<dir>/SKILL.md` and
//! `~/.iota/skills/<dir>/SKILL.md` (the project's first), each with YAML
//! frontmatter `name` and `description`. They are re-discovered on every call,
//! so the answer always matches the catalog the model just read. The set takes
//! no configuration and only ever reads.

#![deny(missing_docs)]

pub mod catalog;
pub mod load_skill;
pub mod manifest;

#[cfg(target_arch = "wasm32")]
mod component;

use iota_toolset::ToolSpec;

/// The tool the set offers.
pub fn describe() -> Vec<ToolSpec> {
    vec![ToolSpec {
        parallel: false,
        ..ToolSpec::reader::<load_skill::Args>(load_skill::NAME)
    }]
}
