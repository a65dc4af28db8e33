//! iota-host: runs iota's toolsets. Every toolset but `shell` is a
//! WebAssembly component that gets its powers only through the WIT interfaces
//! in `wit/toolset.wit`; this crate is the host that loads, limits and calls
//! them. See ARCHITECTURE.md for the map and the data flow of one call.
//!
//! The API is [`Host`]: build one from a config, list its [`tools`](Host::tools),
//! open a [`session`](Host::session) and [`call`](HostSession::call) tools in
//! it, with questions going to a [`Ui`] of your own. The command line and the
//! MCP server are front ends over it, behind the `cli` and `mcp` features (on
//! by default). The modules below the facade are hidden from these docs: they
//! are public only for this repository's own black-box tests and benchmarks,
//! with no stability promise.

#![deny(missing_docs)]

mod api;

pub use api::{CallResult, Host, HostBuilder, HostSession, JobInfo, ToolInfo};
pub use caps::bindings::iota::toolset::ui::{Answer, Choice, Question};
pub use caps::ui::{Approval, ApprovalRequest, NoUi, ScriptedUi, Ui};
pub use toolset::Presentation;

#[doc(hidden)]
pub mod agent;
#[doc(hidden)]
pub mod approval;
#[doc(hidden)]
pub mod audit;
#[doc(hidden)]
pub mod caps;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod config;
#[doc(hidden)]
pub mod describe_cache;
#[doc(hidden)]
pub mod embedded;
#[doc(hidden)]
pub mod engine;
#[doc(hidden)]
pub mod host_state;
#[doc(hidden)]
pub mod inspect;
#[cfg(feature = "mcp")]
#[doc(hidden)]
pub mod mcp;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod present;
#[doc(hidden)]
pub mod round;
#[doc(hidden)]
pub mod secret;
#[doc(hidden)]
pub mod session;
#[doc(hidden)]
pub mod shell;
#[doc(hidden)]
pub mod toolset;
#[doc(hidden)]
pub mod wasm_toolset;
