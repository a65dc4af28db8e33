//! The built-in toolsets, one row each: the one table `build.rs` (what to
//! build, embed and precompile), `embedded.rs` (the component bytes),
//! `config.rs` (which set names need no declaration), `agent.rs` (what runs
//! a set, its grants and when it is enabled) and the MCP server (which set is
//! hidden where nobody can answer) read. Adding a built-in set starts here.
//!
//! Plain data with no crate paths: `build.rs` includes this file as it is.

/// How a built-in set runs.
pub enum Runs {
    /// In the host process (the shell: it needs the sandbox's namespaces).
    Native,
    /// As a WebAssembly component built from a workspace package (its
    /// fields are `build.rs`'s: the host finds the bytes by set name).
    #[allow(dead_code)]
    Component {
        /// The cargo package (`iota-code`); its library builds to
        /// `<package with _>.wasm`.
        package: &'static str,
        /// The file `build.rs` leaves in `IOTA_COMPONENTS_DIR` (`code.wasm`),
        /// beside its `.sha256` and its precompiled `.cwasm`.
        file: &'static str,
    },
}

/// When a set is enabled besides being named under an agent's `tools:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enabling {
    /// Only when named.
    Named,
    /// Also by `mode: agent` and `mode: bot`, unless already enabled.
    ByMode,
    /// Also in every interactive session, unless named (`ask: false` opts
    /// out); where nobody can answer it offers nothing.
    WhenInteractive,
}

/// One built-in toolset.
pub struct BuiltinSet {
    /// Its name under `tools:`.
    pub name: &'static str,
    /// What runs it.
    pub runs: Runs,
    /// The capabilities a component is granted, as config words (`read`,
    /// `write`, …; see `capability::CAPABILITIES`).
    pub grants: &'static [&'static str],
    /// Directories under `$HOME` it may also read (preopened read-only when
    /// they exist).
    pub home_dirs: &'static [&'static str],
    /// When it is enabled.
    pub enabling: Enabling,
}

/// Every built-in set, in the order the spec lists them.
pub const BUILTIN_SETS: [BuiltinSet; 4] = [
    BuiltinSet {
        name: "shell",
        runs: Runs::Native,
        grants: &[],
        home_dirs: &[],
        enabling: Enabling::Named,
    },
    BuiltinSet {
        name: "code",
        runs: Runs::Component {
            package: "iota-code",
            file: "code.wasm",
        },
        grants: &["read", "write", "session", "parallel"],
        home_dirs: &[],
        enabling: Enabling::Named,
    },
    BuiltinSet {
        name: "skills",
        runs: Runs::Component {
            package: "iota-skills",
            file: "skills.wasm",
        },
        grants: &["read"],
        // The user's own skills, beside the project's (.iota/skills under the root).
        home_dirs: &[".iota/skills"],
        enabling: Enabling::ByMode,
    },
    BuiltinSet {
        name: "ask",
        runs: Runs::Component {
            package: "iota-ask",
            file: "ask.wasm",
        },
        grants: &["ui"],
        home_dirs: &[],
        enabling: Enabling::WhenInteractive,
    },
];

/// The built-in set called `name`.
pub fn builtin_set(name: &str) -> Option<&'static BuiltinSet> {
    BUILTIN_SETS.iter().find(|set| set.name == name)
}

/// Whether the set called `name` only exists where somebody can answer
/// (its built-in row is enabled [`Enabling::WhenInteractive`]).
pub fn needs_someone_to_answer(name: &str) -> bool {
    builtin_set(name).is_some_and(|set| set.enabling == Enabling::WhenInteractive)
}
