//! The black-box suites, one module per concern, linked into one test binary
//! (one link of wasmtime instead of one per suite). `support` holds what they
//! share: temporary projects, the built binary, the results it prints.

mod support;

mod approval;
mod ask;
mod code_tools;
mod config_rules;
mod embedding;
mod host_state;
mod iota_exception;
mod jail;
mod limits;
mod load;
mod mcp;
mod platforms;
mod registry;
mod sandbox;
mod shell;
mod skills;
mod startup;
mod structure;
mod supply_chain;
mod terminal;
mod warm_tree;
mod windows;
mod workers;
mod writes;
