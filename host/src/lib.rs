//! iota-host: runs iota's toolsets. Every toolset but `shell` is a
//! WebAssembly component that gets its powers only through the WIT interfaces
//! in `wit/toolset.wit`; this crate is the host that loads, limits and calls
//! them. See ARCHITECTURE.md for the map and the data flow of one call.
//!
//! The API is [`Host`]: build one from a config, list its [`tools`](Host::tools),
//! open a [`session`](Host::session) and [`call`](HostSession::call) tools in
//! it, with questions going to a [`Ui`] of your own. The command line and the
//! MCP server are front ends over it, behind the `cli` and `mcp` features (on
//! by default). Every other module is private; [`internals`] names the few
//! pieces this repository's own black-box tests and benchmarks reach, with no
//! stability promise.

#![deny(missing_docs)]

mod api;

pub use api::{CallResult, Error, Host, HostBuilder, HostSession, JobInfo, ToolInfo};
pub use caps::ui::{Approval, ApprovalRequest, NoUi, ScriptedUi, Ui};
pub use toolset::{Failure, Presentation};
pub use wit::iota::toolset::ui::{Answer, Choice, Question};

mod admission;
mod agent;
mod approval;
mod audit;
mod builtin_sets;
mod capability;
mod caps;
#[cfg(feature = "cli")]
mod cli;
mod config;
mod describe_cache;
mod description;
mod embedded;
mod engine;
#[cfg(unix)]
mod gitlinks;
mod host_state;
#[cfg(feature = "cli")]
mod inspect;
#[cfg(feature = "mcp")]
mod mcp;
mod platform;
#[cfg(feature = "cli")]
mod present;
mod project;
mod protected;
mod provenance;
mod registry;
#[cfg(feature = "cli")]
mod registry_client;
mod round;
mod scratch;
mod secret;
mod session;
mod shell;
mod toolset;
mod wasm_toolset;
mod wit;

/// Runs the command line (`iota-host`'s `main`); returns the exit code.
#[cfg(feature = "cli")]
pub fn cli_main() -> std::process::ExitCode {
    cli::main()
}

/// What this repository's black-box tests and benchmarks reach below the
/// facade: the sandbox's pieces (to measure and attack them directly), the
/// iota-exception parser (checked against bash), the shell set in process,
/// and the engine's bounds. Not an API: no stability promise.
#[doc(hidden)]
pub mod internals {
    pub use crate::admission::MAX_IN_FLIGHT;
    pub use crate::caps::fs::{MAX_WARM_ENTRIES, WarmStats};
    pub use crate::config::EMBEDDED_DEFAULT;
    pub use crate::engine::{KEEP_COMPILED, KEEP_DESCRIBED, POOLED_INSTANCES};
    pub use crate::protected::PROTECTED_AT_ROOT;
    pub use crate::session::Session;
    pub use crate::shell::ShellToolset;
    #[cfg(unix)]
    pub use crate::shell::credentials::{
        Base as CredentialBase, KNOWN as KNOWN_CREDENTIALS, env_table as credential_variables_table,
        table as credentials_table,
    };
    pub use crate::shell::home::{TOOLCHAINS as HOME_TOOLCHAINS, table as toolchains_table};
    pub use crate::shell::iota::{Open, Redirection, SimpleCommand, iota_call};
    pub use crate::shell::sandbox::{Policy, bwrap_args, find_on_path, probe};
    #[cfg(target_os = "linux")]
    pub use crate::shell::seccomp::filter_fds;
    pub use crate::toolset::{Arguments, CallPlan, Cleared, Toolset};

    /// The approval gate on what `set` resolved for `plan` now: the call
    /// cleared to run, or none (refused, or waiting for an answer).
    pub fn gate(
        set: &dyn Toolset,
        plan: &CallPlan,
        session: &std::sync::Arc<crate::session::Session>,
        ui: &std::sync::Arc<dyn crate::Ui>,
    ) -> Option<Cleared> {
        crate::approval::gate(set, plan, set.resolve(plan), session, ui, &Default::default()).cleared
    }

    /// Whether an iota line's `redirections`, made in `cwd`, may run outside
    /// the sandbox of the project at `root` (`shell/redirect.rs`).
    pub fn redirections_allowed(redirections: &[Redirection], root: &std::path::Path, cwd: &std::path::Path) -> bool {
        let Some(cwd) = crate::project::fold_beneath(root, cwd) else {
            return false;
        };
        crate::project::ProjectRoot::open(root)
            .is_ok_and(|root| crate::shell::redirect::allowed(redirections, &root, &cwd))
    }

    /// Worker tasks `session`'s calls have submitted so far.
    pub fn worker_tasks(session: &crate::HostSession) -> u64 {
        session.session.tasks()
    }

    /// What `session`'s warm tree holds and has served.
    pub fn warm_tree(session: &crate::HostSession) -> WarmStats {
        crate::caps::fs::WarmTree::of(&session.session).stats()
    }
}
