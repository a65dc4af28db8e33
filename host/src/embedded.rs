//! The built-in toolset components, compiled by build.rs and embedded in the
//! binary so a fresh install needs no files beside it. Which sets they are
//! comes from [`crate::builtin_sets`]; build.rs writes the table below from it.

use crate::builtin_sets::BuiltinSet;
use crate::capability::Capability;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// What build.rs made of one built-in component.
struct Embedded {
    /// The set it implements.
    set: &'static str,
    /// The Wasm bytes.
    wasm: &'static [u8],
    /// Their sha256, so loading a built-in does not hash megabytes.
    sha256: &'static str,
    /// Its native code: wasmtime's `precompile_component` with the engine's
    /// own settings, so a first run needs no compile.
    native: &'static [u8],
}

// `static EMBEDDED: [Embedded; N]`, one row per component of `BUILTIN_SETS`.
include!(concat!(env!("IOTA_COMPONENTS_DIR"), "/embedded_components.rs"));

/// The row for this very slice of Wasm (found by address: equal bytes a user
/// declared elsewhere are not the embedded ones).
fn embedded(wasm: &[u8]) -> Option<&'static Embedded> {
    EMBEDDED.iter().find(|made| std::ptr::eq(made.wasm, wasm))
}

/// A built-in's native code, compiled by build.rs, for the very slice of
/// Wasm it was compiled from.
pub fn precompiled(wasm: &[u8]) -> Option<&'static [u8]> {
    embedded(wasm).map(|made| made.native)
}

/// The sha256 build.rs computed for an embedded component's bytes (the very
/// slice, by address).
pub fn known_sha256(wasm: &[u8]) -> Option<&'static str> {
    embedded(wasm).map(|made| made.sha256)
}

/// A built-in Wasm toolset: its bytes and what it is granted.
pub struct Builtin {
    /// The component.
    pub wasm: &'static [u8],
    /// Its grants.
    pub grants: BTreeSet<Capability>,
    /// Directories beyond the root it may read (preopened read-only).
    pub read_dirs: Vec<PathBuf>,
}

/// The embedded component of built-in set `set`, with its grants and the
/// directories under `$HOME` of its row that exist.
pub fn builtin(set: &BuiltinSet) -> Option<Builtin> {
    let wasm = EMBEDDED.iter().find(|made| made.set == set.name)?.wasm;
    let grants = set
        .grants
        .iter()
        .map(|word| Capability::parse(word).expect("BUILTIN_SETS grants only capability words"))
        .collect();
    let home = crate::platform::home_dir();
    let read_dirs = set
        .home_dirs
        .iter()
        .filter_map(|dir| Some(home.as_ref()?.join(dir)))
        .filter(|dir| dir.is_dir())
        .collect();
    Some(Builtin {
        wasm,
        grants,
        read_dirs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_sets::{BUILTIN_SETS, Runs};
    use crate::engine::sha256_hex;

    #[test]
    fn build_time_digests_match_the_embedded_bytes() {
        for made in &EMBEDDED {
            assert_eq!(known_sha256(made.wasm), Some(sha256_hex(made.wasm).as_str()));
            // Equal bytes elsewhere (a file a user declared) are hashed as usual.
            let copy = Vec::from(made.wasm);
            assert_eq!(known_sha256(&copy), None);
        }
    }

    #[test]
    fn every_component_row_is_embedded_with_grants_that_parse() {
        for set in &BUILTIN_SETS {
            let builtin = builtin(set);
            match set.runs {
                Runs::Component { .. } => {
                    let builtin = builtin.unwrap_or_else(|| panic!("{} is embedded", set.name));
                    assert_eq!(builtin.grants.len(), set.grants.len(), "{}", set.name);
                }
                Runs::Native => assert!(builtin.is_none(), "{} runs natively", set.name),
            }
        }
    }
}
