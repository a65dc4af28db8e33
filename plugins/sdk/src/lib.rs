//! Guest-side SDK for iota toolsets.
//!
//! A toolset is a WebAssembly component built against the `iota:toolset` WIT
//! package (see `wit/toolset.wit`). This crate holds what every toolset needs:
//! the generated bindings, argument decoding with the spec's error texts, the
//! lexical path jail, the output cap and the session store. The tool logic of a
//! toolset is plain Rust over `std::fs`, so the same code also builds natively
//! (for benchmarks and unit tests); only the export glue is Wasm-specific.
//!
//! ```text
//! struct MyToolset;
//! impl iota_toolset::Guest for MyToolset { /* describe, prompt, preview, invoke */ }
//! iota_toolset::export!(MyToolset);
//! ```

#![deny(missing_docs)]

pub mod args;
pub mod config;
pub mod files;
pub mod jail;
pub mod output;
pub mod session;
pub mod size;
pub mod tool;
pub mod workers;
pub mod writes;

/// Bindings generated from `wit/toolset.wit`.
#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "toolset-host",
        pub_export_macro: true,
        default_bindings_module: "iota_toolset::bindings",
        export_macro_name: "export",
    });
}

pub use bindings::export;
pub use bindings::exports::iota::toolset::toolset::Guest;
pub use bindings::iota::toolset::types::{Approval, Context, Presentation, ToolResult, ToolSpec};

impl ToolResult {
    /// A successful result.
    pub fn ok(header: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult {
            text: text.into(),
            is_error: false,
            header: header.into(),
            diff: None,
        }
    }

    /// A failed or refused call: the model reads `text`.
    pub fn error(header: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult {
            text: text.into(),
            is_error: true,
            header: header.into(),
            diff: None,
        }
    }

    /// The result of a tool body that returns the model's text or the refusal text.
    pub fn from_outcome(header: impl Into<String>, outcome: Result<String, String>) -> Self {
        match outcome {
            Ok(text) => ToolResult::ok(header, text),
            Err(text) => ToolResult::error(header, text),
        }
    }

    /// The same result with the diff the user is shown.
    pub fn with_diff(mut self, diff: Option<String>) -> Self {
        self.diff = diff;
        self
    }
}
