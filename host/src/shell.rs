//! The native `shell` toolset. Its configuration is decoded here with the
//! spec's refusal texts; the tool itself (sandbox, jobs, output caps) is the
//! next capability to land.

pub mod config;
