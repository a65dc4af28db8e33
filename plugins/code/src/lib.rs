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
pub mod fanout;
pub mod file_io;
pub mod glob;
pub mod grep;
pub mod ledger;
pub mod list_dir;
pub mod literals;
pub mod read_file;
pub mod walk;
pub mod write_file;

#[cfg(target_arch = "wasm32")]
mod component;

use iota_toolset::args::decode;
use iota_toolset::config::yaml11_bool;
use iota_toolset::jail::Jail;
use iota_toolset::session::SessionStore;
use iota_toolset::tool::call;
use iota_toolset::{Approval, ToolResult, ToolSpec};
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
    let mut tools = vec![
        ToolSpec::reader::<glob::Args>(glob::NAME),
        ToolSpec::reader::<grep::Args>(grep::NAME),
        ToolSpec::reader::<list_dir::Args>(list_dir::NAME),
        ToolSpec::reader::<read_file::Args>(read_file::NAME),
    ];
    if !config.read_only {
        let approval = if config.auto_write {
            Approval::Never
        } else {
            Approval::Required
        };
        tools.push(ToolSpec::writer::<edit_file::Args>(edit_file::NAME, approval));
        tools.push(ToolSpec::writer::<write_file::Args>(write_file::NAME, approval));
    }
    tools
}

/// Runs one call of `tool` with its JSON arguments text.
pub fn invoke(ctx: &Ctx, config: &CodeConfig, tool: &str, args: &str) -> ToolResult {
    match tool {
        glob::NAME => call(tool, args, |args| glob::run(ctx, &args)),
        grep::NAME => call(tool, args, |args| grep::run(ctx, &args)),
        grep::PIECE => grep::run_piece(ctx, args),
        glob::PIECE => glob::run_piece(ctx, args),
        list_dir::NAME => call(tool, args, |args| list_dir::run(ctx, &args)),
        read_file::NAME => call(tool, args, |args| read_file::run(ctx, &args)),
        edit_file::NAME if !config.read_only => call(tool, args, |args| edit_file::run(ctx, &args)),
        write_file::NAME if !config.read_only => call(tool, args, |args| write_file::run(ctx, &args)),
        other => ToolResult::error(other, format!("unknown tool: {other}")),
    }
}

/// The diff a writer call would make, for the approval question.
pub fn preview(ctx: &Ctx, tool: &str, args: &str) -> Option<String> {
    match tool {
        edit_file::NAME => edit_file::plan(ctx, &decode(args).ok()?).ok().map(|plan| plan.diff),
        write_file::NAME => write_file::plan(ctx, &decode(args).ok()?)
            .ok()
            .and_then(|plan| plan.diff),
        _ => None,
    }
}
