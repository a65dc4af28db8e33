//! The built-in toolset components, compiled by build.rs and embedded in the
//! binary so a fresh install needs no files beside it.

use crate::config::Capability;
use std::collections::BTreeSet;

/// `code.wasm`: glob, grep, list_dir, read_file, edit_file, write_file.
pub const CODE_WASM: &[u8] = include_bytes!(concat!(env!("IOTA_COMPONENTS_DIR"), "/code.wasm"));

/// A built-in Wasm toolset: its bytes and what it is granted.
pub struct Builtin {
    /// The component.
    pub wasm: &'static [u8],
    /// Its grants.
    pub grants: BTreeSet<Capability>,
}

/// The embedded component for a built-in set name, if this build has one.
pub fn builtin(name: &str) -> Option<Builtin> {
    match name {
        "code" => Some(Builtin {
            wasm: CODE_WASM,
            grants: BTreeSet::from([Capability::FsRead, Capability::FsWrite, Capability::Session]),
        }),
        _ => None,
    }
}
