//! The capability table: what a toolset may be granted beyond the baseline
//! ([`Capability`]), and each capability's row in [`CAPABILITIES`] (its config
//! word, its meaning, the imports that ask for it); a grant's word decoded
//! from the config. A leaf: it imports no other module of the crate, so the
//! config, the granter and `inspect` all read it and none of them each other.

use serde::Deserialize;

/// Which capabilities a toolset may use beyond the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Read the project root (WASI preopen, read-only).
    FsRead,
    /// Write the project root, for approved calls of tools that write.
    FsWrite,
    /// Keep per-session state.
    Session,
    /// Ask the user questions.
    Ui,
    /// Run sandboxed commands.
    Process,
    /// Run parts of a call on several cores at once.
    Parallel,
}

/// One home per capability: its config word, what it lets a component do,
/// and the WIT imports that ask for it. `Capability::word`, `meaning` and
/// `parse`, the import classification (`caps::classify`), the grant errors
/// and `inspect` all read this table, so adding a capability starts here.
#[derive(Debug)]
pub struct CapabilityInfo {
    /// The capability.
    pub capability: Capability,
    /// Its word in config (`grant: [...]`) and in messages.
    pub word: &'static str,
    /// What it lets a component do, for `inspect` and the grant error.
    pub meaning: &'static str,
    /// The imports that ask for it: an interface (`iota:toolset/ui`) or, ending
    /// in `/`, every interface of a package (`wasi:filesystem/`).
    pub imports: &'static [&'static str],
}

/// Every capability, in the order messages list them.
pub const CAPABILITIES: [CapabilityInfo; 6] = [
    CapabilityInfo {
        capability: Capability::FsRead,
        word: "read",
        meaning: "read files under the project root",
        imports: &["wasi:filesystem/", "iota:toolset/files"],
    },
    CapabilityInfo {
        capability: Capability::FsWrite,
        word: "write",
        meaning: "create and change the file an approved call names under the project root",
        imports: &["iota:toolset/writes"],
    },
    CapabilityInfo {
        capability: Capability::Session,
        word: "session",
        meaning: "keep state across the calls of one session",
        imports: &["iota:toolset/session"],
    },
    CapabilityInfo {
        capability: Capability::Ui,
        word: "ui",
        meaning: "ask the user questions",
        imports: &["iota:toolset/ui"],
    },
    CapabilityInfo {
        capability: Capability::Process,
        word: "process",
        meaning: "run commands in the shell sandbox",
        imports: &["iota:toolset/process"],
    },
    CapabilityInfo {
        capability: Capability::Parallel,
        word: "parallel",
        meaning: "run parts of a call on several cores at once (memory limit per core)",
        imports: &["iota:toolset/workers"],
    },
];

impl Capability {
    fn info(self) -> &'static CapabilityInfo {
        CAPABILITIES
            .iter()
            .find(|info| info.capability == self)
            .expect("every capability has a row in CAPABILITIES")
    }

    /// The word used in config (`grant: [...]`) and in messages.
    pub fn word(self) -> &'static str {
        self.info().word
    }

    /// What it lets a component do, for `inspect`.
    pub fn meaning(self) -> &'static str {
        self.info().meaning
    }

    /// The capability a config word names.
    pub fn parse(word: &str) -> Option<Capability> {
        CAPABILITIES
            .iter()
            .find(|info| info.word == word)
            .map(|info| info.capability)
    }

    /// The capability an import interface (`iota:toolset/ui`, without its
    /// version) asks for, if any.
    pub fn of_import(interface: &str) -> Option<Capability> {
        CAPABILITIES
            .iter()
            .find(|info| {
                info.imports.iter().any(|import| match import.strip_suffix('/') {
                    Some(_) => interface.starts_with(import),
                    None => interface == *import,
                })
            })
            .map(|info| info.capability)
    }

    /// Every config word, for messages: `read, write, session, ui, process, parallel`.
    pub fn words() -> String {
        CAPABILITIES.iter().map(|info| info.word).collect::<Vec<_>>().join(", ")
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Capability, D::Error> {
        let word = String::deserialize(deserializer)?;
        Capability::parse(&word)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown capability {word:?} ({})", Capability::words())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capability_table_names_every_capability_and_its_imports() {
        for info in &CAPABILITIES {
            assert_eq!(Capability::parse(info.word), Some(info.capability));
            assert_eq!(info.capability.word(), info.word);
        }
        assert_eq!(
            Capability::of_import("iota:toolset/workers"),
            Some(Capability::Parallel)
        );
        assert_eq!(Capability::of_import("wasi:filesystem/types"), Some(Capability::FsRead));
        assert_eq!(Capability::of_import("iota:toolset/types"), None);
        assert_eq!(Capability::of_import("wasi:sockets/tcp"), None);
        let err = serde_yaml::from_str::<Capability>("gpu").unwrap_err();
        assert!(
            err.to_string()
                .contains("unknown capability \"gpu\" (read, write, session, ui, process, parallel)"),
            "{err}"
        );
    }
}
