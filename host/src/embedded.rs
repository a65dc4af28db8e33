//! The built-in toolset components, compiled by build.rs and embedded in the
//! binary so a fresh install needs no files beside it.

use crate::config::Capability;
use std::collections::BTreeSet;

/// `code.wasm`: glob, grep, list_dir, read_file, edit_file, write_file.
pub static CODE_WASM: &[u8] = include_bytes!(concat!(env!("IOTA_COMPONENTS_DIR"), "/code.wasm"));

/// `skills.wasm`: load_skill.
pub static SKILLS_WASM: &[u8] = include_bytes!(concat!(env!("IOTA_COMPONENTS_DIR"), "/skills.wasm"));

/// `ask.wasm`: choose, confirm.
pub static ASK_WASM: &[u8] = include_bytes!(concat!(env!("IOTA_COMPONENTS_DIR"), "/ask.wasm"));

/// What build.rs made of one embedded component besides its bytes.
struct Made {
    /// The Wasm bytes, the very slice embedded above (found by address).
    wasm: &'static [u8],
    /// Their sha256, so loading a built-in does not hash megabytes.
    sha256: &'static str,
    /// Its native code: wasmtime's `precompile_component` with the engine's
    /// own settings, so a first run needs no compile.
    native: &'static [u8],
}

/// The built-ins, as build.rs left them in `IOTA_COMPONENTS_DIR`.
static MADE: [Made; 3] = [
    Made {
        wasm: CODE_WASM,
        sha256: include_str!(concat!(env!("IOTA_COMPONENTS_DIR"), "/code.wasm.sha256")),
        native: include_bytes!(concat!(env!("IOTA_COMPONENTS_DIR"), "/code.cwasm")),
    },
    Made {
        wasm: SKILLS_WASM,
        sha256: include_str!(concat!(env!("IOTA_COMPONENTS_DIR"), "/skills.wasm.sha256")),
        native: include_bytes!(concat!(env!("IOTA_COMPONENTS_DIR"), "/skills.cwasm")),
    },
    Made {
        wasm: ASK_WASM,
        sha256: include_str!(concat!(env!("IOTA_COMPONENTS_DIR"), "/ask.wasm.sha256")),
        native: include_bytes!(concat!(env!("IOTA_COMPONENTS_DIR"), "/ask.cwasm")),
    },
];

fn made(wasm: &[u8]) -> Option<&'static Made> {
    MADE.iter().find(|made| std::ptr::eq(made.wasm, wasm))
}

/// A built-in's native code, compiled by build.rs, for the very slice of
/// Wasm it was compiled from.
pub fn precompiled(wasm: &[u8]) -> Option<&'static [u8]> {
    made(wasm).map(|made| made.native)
}

/// The sha256 build.rs computed for an embedded component's bytes (the very
/// slice, by address).
pub fn known_sha256(wasm: &[u8]) -> Option<&'static str> {
    made(wasm).map(|made| made.sha256)
}

/// A built-in Wasm toolset: its bytes and what it is granted.
pub struct Builtin {
    /// The component.
    pub wasm: &'static [u8],
    /// Its grants.
    pub grants: BTreeSet<Capability>,
    /// Directories beyond the root it may read (preopened read-only).
    pub read_dirs: Vec<std::path::PathBuf>,
}

/// The embedded component for a built-in set name, if this build has one.
pub fn builtin(name: &str) -> Option<Builtin> {
    match name {
        "code" => Some(Builtin {
            wasm: CODE_WASM,
            grants: BTreeSet::from([
                Capability::FsRead,
                Capability::FsWrite,
                Capability::Session,
                Capability::Parallel,
            ]),
            read_dirs: Vec::new(),
        }),
        "skills" => Some(Builtin {
            wasm: SKILLS_WASM,
            grants: BTreeSet::from([Capability::FsRead]),
            // The user's own skills, beside the project's (.iota/skills under the root).
            read_dirs: std::env::var_os("HOME")
                .map(|home| std::path::PathBuf::from(home).join(".iota").join("skills"))
                .filter(|dir| dir.is_dir())
                .into_iter()
                .collect(),
        }),
        "ask" => Some(Builtin {
            wasm: ASK_WASM,
            grants: BTreeSet::from([Capability::Ui]),
            read_dirs: Vec::new(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod digest_tests {
    use super::*;
    use crate::engine::sha256_hex;

    #[test]
    fn build_time_digests_match_the_embedded_bytes() {
        for wasm in [CODE_WASM, SKILLS_WASM, ASK_WASM] {
            assert_eq!(known_sha256(wasm), Some(sha256_hex(wasm).as_str()));
            // Equal bytes elsewhere (a file a user declared) are hashed as usual.
            let copy = Vec::from(wasm);
            assert_eq!(known_sha256(&copy), None);
        }
    }
}
