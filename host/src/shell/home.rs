//! What of the home directory a sandboxed command sees.
//!
//! By default an allow-list: the home directory is an empty read-only
//! directory but for the toolchains' own directories ([`TOOLCHAINS`]) and
//! what `read:` adds, each read-only, with the credentials found inside them
//! still hidden (`credentials.rs`). Why not the whole home minus the
//! credentials found there: a search for secrets is a list of the places
//! someone thought of. A review of that mode read Firefox's logins under
//! `~/snap`, an age key under `~/.config/sops`, an API key exported in
//! `~/.bashrc`, and, with the search's bound exhausted by a sandboxed
//! command's own files, whatever the search had not reached yet. What a
//! build needs from the home directory is short and known; what holds a
//! secret is neither. `home: visible` keeps the old view for those who want
//! it, with its limits in docs/credentials.md.

use std::path::{Path, PathBuf};

/// One path of the home directory shown by default, and what needs it.
#[derive(Debug)]
pub struct Shown {
    /// Relative to the home directory.
    pub path: &'static str,
    /// Whose it is, and why a build reads it.
    pub why: &'static str,
}

const fn shown(path: &'static str, why: &'static str) -> Shown {
    Shown { path, why }
}

/// The home directory's paths a sandboxed command sees by default
/// (`home: toolchains`): where language toolchains and version managers
/// install compilers, interpreters and packages, and git's identity. None
/// is a place a tool keeps a login; a credential file inside one
/// (`~/.cargo/credentials.toml`) is hidden all the same.
pub const TOOLCHAINS: &[Shown] = &[
    shown(".cargo", "Rust: cargo, installed binaries, the registry's sources"),
    shown(".rustup", "Rust: toolchains"),
    shown(
        ".local/bin",
        "binaries installed per user (pipx, uv tool, the XDG convention)",
    ),
    shown(".local/lib", "Python packages installed with pip --user"),
    shown(".local/share/uv/python", "Python interpreters installed by uv"),
    shown(".local/share/mise", "mise: installed runtimes"),
    shown(".local/share/pnpm", "pnpm: its binary and global packages"),
    shown(".local/share/fnm", "fnm: Node versions"),
    shown(".nvm", "nvm: Node versions"),
    shown(".volta", "Volta: Node toolchains"),
    shown(".bun", "Bun"),
    shown(".deno", "Deno"),
    shown(".npm-global", "npm's global prefix, where set up per user"),
    shown(".pyenv", "pyenv: Python versions"),
    shown(".rbenv", "rbenv: Ruby versions"),
    shown(".rvm", "RVM: Ruby versions"),
    shown(".goenv", "goenv: Go versions"),
    shown("go", "Go: GOPATH (modules, installed binaries)"),
    shown(".sdkman", "SDKMAN!: JDKs, Gradle, Maven"),
    shown(".asdf", "asdf: installed runtimes"),
    shown(".elan", "Lean: toolchains"),
    shown(".ghcup", "Haskell: GHC and cabal"),
    shown(".opam", "OCaml: switches"),
    shown(".dotnet", ".NET SDKs and tools"),
    shown(".juliaup", "Julia: versions"),
    shown(".nix-profile", "Nix: the user's profile"),
    shown(
        ".m2/repository",
        "Maven: downloaded artifacts (not settings.xml, which holds passwords)",
    ),
    shown(
        ".gradle/caches",
        "Gradle: downloaded dependencies (not gradle.properties)",
    ),
    shown(".gradle/wrapper", "Gradle: wrapper distributions"),
    shown(".gitconfig", "git: the identity commits are made with"),
    shown(".config/git", "git: the identity and ignore rules, the XDG way"),
];

/// [`TOOLCHAINS`] under `home`.
pub fn toolchains(home: &Path) -> Vec<PathBuf> {
    TOOLCHAINS.iter().map(|s| home.join(s.path)).collect()
}

/// The list as the Markdown table docs/credentials.md holds (a test keeps
/// the two the same).
pub fn table() -> String {
    let mut text = String::from("| path | why |\n|---|---|\n");
    for s in TOOLCHAINS {
        text.push_str(&format!("| `~/{}` | {} |\n", s.path, s.why));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_default_path_is_a_credential_store_or_looks_like_one() {
        for s in TOOLCHAINS {
            assert!(!s.path.starts_with('/') && !s.path.contains(".."), "{s:?}");
            let name = s.path.rsplit('/').next().unwrap();
            assert!(!super::super::credentials::looks_secret(name.as_bytes()), "{s:?}");
            assert!(
                !super::super::credentials::KNOWN
                    .iter()
                    .any(|k| k.base == super::super::credentials::Base::Home
                        && (k.path == s.path || s.path.starts_with(&format!("{}/", k.path)))),
                "{s:?} is a known credential store"
            );
        }
    }

    #[test]
    fn the_documented_lists_are_the_tables() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/credentials.md")).unwrap();
        for (list, table) in [
            ("home.rs TOOLCHAINS", table()),
            ("credentials.rs KNOWN", super::super::credentials::table()),
            ("credentials.rs ENV_STORES", super::super::credentials::env_table()),
        ] {
            assert!(
                doc.contains(&table),
                "docs/credentials.md must hold the table of {list}; it is:\n{table}"
            );
        }
    }
}
