//! `tools.shell` in the config file.
//!
//! Spec: sandbox (auto | off, default auto; an empty value reads as auto;
//! anything else refuses the set: sandbox must be "auto" or "off", got "on"),
//! network (boolean, false), auto_run (boolean, false), write (extra
//! sandbox-writable directories: a leading ~ alone or ~/ is the home
//! directory, a relative path is made absolute against the process working
//! directory, empties are dropped). A value that is not a mapping: config must
//! be a mapping (sandbox, network, auto_run, write): `<decode error>`.
//!
//! Keys beyond the spec (ARCHITECTURE.md): `env` (`pass`: names of
//! secret-looking variables to let into the sandbox; `set`: fixed values),
//! `max_processes` (tasks one sandboxed command may have at once, default
//! 2048), `home` (`toolchains`, the default: the home directory shows
//! sandboxed commands only the toolchains' directories and what `read:`
//! names; `hidden`: only what `read:` names; `visible`: all of it but the
//! credentials found there — `home.rs`), `read` (home paths shown besides)
//! and `max_log` (MiB of one command's log kept on the host, default 64).

use iota_toolset::config::yaml11_bool;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Whether calls are sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Sandbox every call where the OS has a sandbox.
    #[default]
    Auto,
    /// Never sandbox.
    Off,
}

/// The decoded shell configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellConfig {
    /// `sandbox:`.
    pub sandbox: SandboxMode,
    /// `network:`.
    pub network: bool,
    /// `auto_run:`.
    pub auto_run: bool,
    /// `write:`, made absolute, empties dropped.
    pub write: Vec<PathBuf>,
    /// `env:`: what of the host's environment crosses into the sandbox.
    pub env: super::environment::EnvPolicy,
    /// `max_processes:`: tasks one sandboxed command may have at once.
    pub max_processes: u64,
    /// `home:` and `read:`: what of the home directory sandboxed commands see.
    pub home: HomeView,
    /// `max_log:`: bytes of one command's log kept on the host.
    pub max_log: u64,
}

/// What of the home directory sandboxed commands see (`home.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeView {
    /// All of it but the credentials found there (`credentials.rs`):
    /// `home: visible`, a deny-list the user chose.
    Visible,
    /// Only these paths of it (made absolute), read-only, credentials
    /// found in them hidden but for a path named exactly: the toolchains'
    /// and `read:`'s by default, `read:`'s alone with `home: hidden`.
    Only(Vec<PathBuf>),
}

/// The default `tools.shell.max_processes`.
pub const DEFAULT_MAX_PROCESSES: u64 = 2048;

/// Bytes of one command's log kept on the host unless `max_log:` says
/// otherwise: 64 MiB.
pub const DEFAULT_MAX_LOG: u64 = 64 << 20;

impl Default for ShellConfig {
    fn default() -> Self {
        ShellConfig {
            sandbox: SandboxMode::Auto,
            network: false,
            auto_run: false,
            write: Vec::new(),
            env: Default::default(),
            max_processes: DEFAULT_MAX_PROCESSES,
            home: HomeView::Only(
                super::home_dir()
                    .as_deref()
                    .map(super::home::toolchains)
                    .unwrap_or_default(),
            ),
            max_log: DEFAULT_MAX_LOG,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Raw {
    sandbox: Option<serde_json::Value>,
    #[serde(deserialize_with = "yaml11_bool")]
    network: bool,
    #[serde(deserialize_with = "yaml11_bool")]
    auto_run: bool,
    write: Option<Vec<Option<String>>>,
    env: Option<RawEnv>,
    max_processes: Option<u64>,
    home: Option<String>,
    read: Option<Vec<Option<String>>>,
    max_log: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct RawEnv {
    pass: Vec<String>,
    set: std::collections::BTreeMap<String, String>,
}

impl ShellConfig {
    /// Decodes the set's value (as JSON); `home` and `cwd` expand `write:`.
    pub fn decode(value: &serde_json::Value, home: Option<&Path>, cwd: &Path) -> Result<ShellConfig, String> {
        let raw: Raw = iota_toolset::config::decode(&value.to_string(), "sandbox, network, auto_run, write")?;
        let sandbox = match &raw.sandbox {
            None | Some(serde_json::Value::Null) => SandboxMode::Auto,
            Some(serde_json::Value::String(s)) if s.is_empty() || s == "auto" => SandboxMode::Auto,
            Some(serde_json::Value::String(s)) if s == "off" => SandboxMode::Off,
            Some(serde_json::Value::String(s)) => {
                return Err(format!("sandbox must be \"auto\" or \"off\", got \"{s}\""));
            }
            Some(other) => return Err(format!("sandbox must be \"auto\" or \"off\", got \"{other}\"")),
        };
        let paths = |list: Option<Vec<Option<String>>>| -> Vec<PathBuf> {
            list.unwrap_or_default()
                .into_iter()
                .flatten()
                .filter(|p| !p.is_empty())
                .map(|p| expand(&p, home, cwd))
                .collect()
        };
        let write = paths(raw.write);
        let read = paths(raw.read);
        let home_view = match raw.home.as_deref() {
            None | Some("" | "toolchains") => {
                let mut shown = home.map(super::home::toolchains).unwrap_or_default();
                shown.extend(read.into_iter().filter(|p| !shown.contains(p)).collect::<Vec<_>>());
                HomeView::Only(shown)
            }
            Some("hidden") => HomeView::Only(read),
            Some("visible") if read.is_empty() => HomeView::Visible,
            Some("visible") => {
                return Err("read: names what a hidden home shows; home: visible shows all of it".to_string());
            }
            Some(other) => {
                return Err(format!(
                    "home must be \"toolchains\", \"hidden\" or \"visible\", got \"{other}\""
                ));
            }
        };
        if raw.max_log == Some(0) {
            return Err("max_log must be at least 1 (MiB)".to_string());
        }
        let env = raw.env.unwrap_or_default();
        if raw.max_processes == Some(0) {
            return Err("max_processes must be at least 1".to_string());
        }
        Ok(ShellConfig {
            sandbox,
            network: raw.network,
            auto_run: raw.auto_run,
            write,
            env: super::environment::EnvPolicy {
                pass: env.pass,
                set: env.set.into_iter().collect(),
            },
            max_processes: raw.max_processes.unwrap_or(DEFAULT_MAX_PROCESSES),
            home: home_view,
            max_log: raw.max_log.map_or(DEFAULT_MAX_LOG, |mib| mib.saturating_mul(1 << 20)),
        })
    }
}

fn expand(path: &str, home: Option<&Path>, cwd: &Path) -> PathBuf {
    let path = match (path, home) {
        ("~", Some(home)) => home.to_path_buf(),
        (p, Some(home)) if p.starts_with("~/") => home.join(&p[2..]),
        (p, _) => PathBuf::from(p),
    };
    if path.is_absolute() { path } else { cwd.join(path) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(v: serde_json::Value) -> Result<ShellConfig, String> {
        ShellConfig::decode(&v, Some(Path::new("/home/u")), Path::new("/work"))
    }

    #[test]
    fn sandbox_values() {
        assert_eq!(decode(json!(null)).unwrap().sandbox, SandboxMode::Auto);
        assert_eq!(decode(json!({"sandbox": ""})).unwrap().sandbox, SandboxMode::Auto);
        assert_eq!(decode(json!({"sandbox": "off"})).unwrap().sandbox, SandboxMode::Off);
        assert_eq!(
            decode(json!({"sandbox": "on"})).unwrap_err(),
            "sandbox must be \"auto\" or \"off\", got \"on\""
        );
    }

    #[test]
    fn write_paths_expand() {
        let c = decode(json!({"write": ["~", "~/.cache", "rel", "", "/abs"]})).unwrap();
        let want: Vec<PathBuf> = ["/home/u", "/home/u/.cache", "/work/rel", "/abs"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(c.write, want);
    }

    #[test]
    fn the_home_directory_shows_the_toolchains_what_read_names_or_all_of_it() {
        let toolchains = crate::shell::home::toolchains(Path::new("/home/u"));
        assert_eq!(decode(json!({})).unwrap().home, HomeView::Only(toolchains.clone()));
        assert_eq!(
            decode(json!({"home": "toolchains"})).unwrap().home,
            HomeView::Only(toolchains.clone())
        );
        let mut more = toolchains.clone();
        more.push(PathBuf::from("/home/u/tools"));
        assert_eq!(
            decode(json!({"read": ["~/tools", "~/.cargo", ""]})).unwrap().home,
            HomeView::Only(more),
            "read: adds to the toolchains"
        );
        assert_eq!(decode(json!({"home": "visible"})).unwrap().home, HomeView::Visible);
        assert_eq!(decode(json!({"home": "hidden"})).unwrap().home, HomeView::Only(vec![]));
        assert_eq!(
            decode(json!({"home": "hidden", "read": ["~/.gitconfig", ""]}))
                .unwrap()
                .home,
            HomeView::Only(vec![PathBuf::from("/home/u/.gitconfig")]),
        );
        assert_eq!(
            decode(json!({"home": "visible", "read": ["~/x"]})).unwrap_err(),
            "read: names what a hidden home shows; home: visible shows all of it"
        );
        assert_eq!(
            decode(json!({"home": "gone"})).unwrap_err(),
            "home must be \"toolchains\", \"hidden\" or \"visible\", got \"gone\""
        );
        assert_eq!(decode(json!({"max_log": 2})).unwrap().max_log, 2 << 20);
        assert!(decode(json!({"max_log": 0})).is_err());
    }

    #[test]
    fn non_mappings_are_refused() {
        let err = decode(json!(5)).unwrap_err();
        assert_eq!(
            err,
            "config must be a mapping (sandbox, network, auto_run, write): invalid type: number `5`, expected a mapping"
        );
        assert!(
            decode(json!({"network": "maybe"}))
                .unwrap_err()
                .starts_with("config must be a mapping (sandbox, network, auto_run, write): ")
        );
    }
}
