//! The `code` toolset: glob and grep locate files, list_dir explores,
//! read_file returns line-numbered content, edit_file and write_file change
//! files. Everything is confined to the project root.
//!
//! Each tool is one file named after it; its top comment quotes the spec row
//! it implements. The logic is plain Rust over `std::fs`: inside the component
//! the WASI preopen of the project root is the filesystem, natively (for
//! benchmarks and unit tests) it is the real one. `component.rs` is the only
//! Wasm-specific part.

#![deny(missing_docs)]

pub mod edit_file;
pub mod files;
pub mod glob;
pub mod grep;
pub mod ledger;
pub mod list_dir;
pub mod read_file;
pub mod walk;
pub mod write_file;

#[cfg(target_arch = "wasm32")]
mod component;

use iota_toolset::args::Args;
use iota_toolset::config::yaml11_bool;
use iota_toolset::jail::Jail;
use iota_toolset::session::SessionStore;
use iota_toolset::{Approval, Presentation, ToolResult, ToolSpec};
use serde::Deserialize;

/// `tools.code` in the config file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodeConfig {
    /// edit_file and write_file run without approval.
    #[serde(deserialize_with = "yaml11_bool")]
    pub auto_write: bool,
    /// Leave the two writers out entirely.
    #[serde(deserialize_with = "yaml11_bool")]
    pub read_only: bool,
}

/// Refusal when both options are set.
pub const CONTRADICTION: &str =
    "read_only and auto_write contradict each other: auto_write approves writes the set does not offer";

impl CodeConfig {
    /// Decodes the set's configuration (JSON text of its YAML value).
    pub fn decode(config: &str) -> Result<CodeConfig, String> {
        let config: CodeConfig = iota_toolset::config::decode(config, "auto_write, read_only")?;
        if config.read_only && config.auto_write {
            return Err(CONTRADICTION.to_string());
        }
        Ok(config)
    }
}

/// Everything one call needs: the jail, the session and the configuration.
pub struct Ctx<'a> {
    /// The project root and its path rules.
    pub jail: Jail,
    /// Where the read ledger lives.
    pub session: &'a dyn SessionStore,
}

/// The tools this configuration offers, in the order the model sees them.
pub fn describe(config: &CodeConfig) -> Vec<ToolSpec> {
    let reader = |name: &str, description: &str, parameters: &str| ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters: parameters.to_string(),
        approval: Approval::Never,
        parallel: true,
        presentation: Presentation::Group,
        read_only: true,
    };
    let writer_approval = if config.auto_write {
        Approval::Never
    } else {
        Approval::Required
    };
    let writer = |name: &str, description: &str, parameters: &str| ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters: parameters.to_string(),
        approval: writer_approval,
        parallel: false,
        presentation: Presentation::Expanded,
        read_only: false,
    };
    let mut tools = vec![
        reader(glob::NAME, glob::DESCRIPTION, glob::PARAMETERS),
        reader(grep::NAME, grep::DESCRIPTION, grep::PARAMETERS),
        reader(list_dir::NAME, list_dir::DESCRIPTION, list_dir::PARAMETERS),
        reader(read_file::NAME, read_file::DESCRIPTION, read_file::PARAMETERS),
    ];
    if !config.read_only {
        tools.push(writer(edit_file::NAME, edit_file::DESCRIPTION, edit_file::PARAMETERS));
        tools.push(writer(
            write_file::NAME,
            write_file::DESCRIPTION,
            write_file::PARAMETERS,
        ));
    }
    tools
}

/// Runs one call of `tool` with its JSON arguments text.
pub fn invoke(ctx: &Ctx, config: &CodeConfig, tool: &str, args: &str) -> ToolResult {
    let args = match Args::parse(args) {
        Ok(args) => args,
        Err(e) => return ToolResult::error(tool, e),
    };
    match tool {
        glob::NAME => glob::run(ctx, &args),
        grep::NAME => grep::run(ctx, &args),
        list_dir::NAME => list_dir::run(ctx, &args),
        read_file::NAME => read_file::run(ctx, &args),
        edit_file::NAME if !config.read_only => edit_file::run(ctx, &args),
        write_file::NAME if !config.read_only => write_file::run(ctx, &args),
        other => ToolResult::error(other, format!("unknown tool: {other}")),
    }
}

/// The diff a writer call would make, for the approval question.
pub fn preview(ctx: &Ctx, tool: &str, args: &str) -> Option<String> {
    let args = Args::parse(args).ok()?;
    match tool {
        edit_file::NAME => edit_file::plan(ctx, &args).ok().map(|plan| plan.diff),
        write_file::NAME => write_file::plan(ctx, &args).ok().and_then(|plan| plan.diff),
        _ => None,
    }
}
