//! iota-host: runs iota's toolsets. Every toolset but `shell` is a
//! WebAssembly component that gets its powers only through the WIT interfaces
//! in `wit/toolset.wit`; this crate is the host that loads, limits and calls
//! them. See ARCHITECTURE.md for the map and the data flow of one call.

#![deny(missing_docs)]

pub mod agent;
pub mod approval;
pub mod audit;
pub mod caps;
pub mod cli;
pub mod config;
pub mod describe_cache;
pub mod embedded;
pub mod engine;
pub mod host_state;
pub mod inspect;
pub mod mcp;
pub mod present;
pub mod round;
pub mod secret;
pub mod session;
pub mod shell;
pub mod toolset;
pub mod wasm_toolset;
