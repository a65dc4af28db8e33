//! The component's exports: discovery over the preopened skill directories.

use crate::{catalog, load_skill, manifest};
use iota_toolset::tool::call;
use iota_toolset::{Context, Guest, ToolResult, ToolSpec};
use std::path::{Path, PathBuf};

struct Skills;

/// The project's skills first, then `~/.iota/skills` (the host's read-dirs).
fn bases(ctx: &Context) -> Vec<PathBuf> {
    let home = ctx.read_dirs.first().map(PathBuf::from);
    catalog::bases(Path::new(&ctx.root), home.as_deref())
}

impl Guest for Skills {
    fn describe(_: Context) -> Result<Vec<ToolSpec>, String> {
        // Any configuration value is ignored.
        Ok(crate::describe())
    }

    fn prompt(ctx: Context) -> Option<String> {
        catalog::prompt(&catalog::discover(&bases(&ctx)))
    }

    fn preview(_: Context, _: String, _: String) -> Option<String> {
        None
    }

    fn invoke(ctx: Context, tool: String, args: String) -> ToolResult {
        if tool != load_skill::NAME {
            // The host's entry points for MCP's Skills extension.
            return ToolResult::from_outcome(tool.clone(), manifest::run(&bases(&ctx), &tool, &args));
        }
        call(&tool, &args, |args| load_skill::run(&bases(&ctx), &args))
    }
}

iota_toolset::export!(Skills);
