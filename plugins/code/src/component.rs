//! The component's exports: the `iota:toolset/toolset` interface over the
//! tool logic, with the host's session as the read ledger's store.

use crate::{CodeConfig, Ctx};
use iota_toolset::jail::Jail;
use iota_toolset::session::HostSession;
use iota_toolset::{Context, Guest, ToolResult, ToolSpec};

struct Code;

impl Guest for Code {
    fn describe(ctx: Context) -> Result<Vec<ToolSpec>, String> {
        CodeConfig::decode(&ctx.config).map(|config| crate::describe(&config))
    }

    fn prompt(_: Context) -> Option<String> {
        None
    }

    fn preview(ctx: Context, tool: String, args: String) -> Option<String> {
        let session = HostSession;
        let call = Ctx {
            jail: Jail::new(&ctx.root),
            session: &session,
        };
        crate::preview(&call, &tool, &args)
    }

    fn invoke(ctx: Context, tool: String, args: String) -> ToolResult {
        let config = match CodeConfig::decode(&ctx.config) {
            Ok(config) => config,
            Err(e) => return ToolResult::error(tool, e),
        };
        let session = HostSession;
        let call = Ctx {
            jail: Jail::new(&ctx.root),
            session: &session,
        };
        crate::invoke(&call, &config, &tool, &args)
    }
}

iota_toolset::export!(Code);
