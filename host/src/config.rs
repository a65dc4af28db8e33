//! The YAML config: agents, their `tools:`, and where Wasm toolsets come from.
//!
//! The rules are the spec's: key presence enables a set; any YAML 1.1 false
//! spelling (false, no, off) disables it; a set name that is neither built-in
//! nor declared under `toolsets:` fails the load; a set value that does not
//! decode is a startup warning (`toolset "NAME": … (ignored)`) and the set is
//! left out. Per-set keys of the Wasm sets are decoded by the component itself
//! (its `describe`), so each set's rules live with the set.
//!
//! Where the config comes from decides how far it is believed
//! (`config/discovery.rs`: a project's own config may restrict, never
//! loosen). This file holds the config's data and its entry points;
//! `config/files.rs` is the file as serde decodes it, turned into that data;
//! `config/signature.rs` the `signature:` policy. The capability table is
//! `capability.rs`.

use anyhow::{Context as _, Result, bail};
use iota_toolset::config::{YAML11_FALSE, YAML11_TRUE};
use serde_yaml::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::builtin_sets::{BUILTIN_SETS, builtin_set};
use crate::capability::Capability;
use files::ConfigFile;

mod discovery;
mod files;
mod signature;

pub use signature::{Identity, SignaturePolicy, Signer};

/// The config used when no file is named or found.
pub const EMBEDDED_DEFAULT: &str = include_str!("default-config.yaml");

/// A loaded config file.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it came from: a path, or `(embedded default)`.
    pub origin: String,
    /// Agents by name, in file order.
    pub agents: Vec<Agent>,
    /// Declared Wasm toolsets by name.
    pub toolsets: BTreeMap<String, ToolsetDecl>,
    /// The lock of registry toolsets' digests: `iota-host.lock` beside the
    /// config file (registry.rs).
    pub lock: PathBuf,
    /// `audit:`: where to append one JSON line per call.
    pub audit: Option<PathBuf>,
    /// `trusted_projects:`: project directories whose own config is believed
    /// in full (only meaningful in the user's own config).
    pub trusted_projects: Vec<PathBuf>,
    /// What loading it left out, for the startup warnings.
    pub warnings: Vec<String>,
}

/// One entry under `agents:`.
#[derive(Debug, Clone)]
pub struct Agent {
    /// Its name.
    pub name: String,
    /// `mode:`, when given (`agent` and `bot` enable skills on their own).
    pub mode: Option<String>,
    /// `tools:` entries in file order: the set name and its raw value.
    pub tools: Vec<(String, Value)>,
}

/// Resource limits of one Wasm toolset's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock budget of one call, enforced by epoch interruption and in
    /// the host's waits; the time a person takes to answer is not counted.
    pub timeout: Duration,
    /// Linear memory a call may grow to, in bytes.
    pub memory: u64,
    /// Size of one call's result (text and diff), in bytes.
    pub output: u64,
}

impl Default for Limits {
    /// 60 s, 1 GiB and 1 MiB: a grep over a large tree fits, a runaway does
    /// not; a result a model could never read whole is refused.
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(60),
            memory: 1 << 30,
            output: 1 << 20,
        }
    }
}

/// An entry under `toolsets:`.
#[derive(Debug, Clone)]
pub struct ToolsetDecl {
    /// Where the component comes from.
    pub source: Source,
    /// Explicit grants; `None` means the defaults (read, session).
    pub grant: Option<Vec<Capability>>,
    /// `sha256:`: the digest the file must have (lowercase hex), checked
    /// before the component is used.
    pub sha256: Option<String>,
    /// `signature:`: who must have signed the file, checked before the
    /// component is used (provenance.rs).
    pub signature: Option<SignaturePolicy>,
    /// Per-call limits.
    pub limits: Limits,
}

/// Where a declared component comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A `.wasm` file, absolute (relative paths are against the config file).
    File(PathBuf),
    /// `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:…`, without the scheme:
    /// loaded from the local store at the digest the lock holds (registry.rs).
    Registry(String),
}

impl Source {
    /// A `path:` value: a registry reference after `oci://`, else a file against `base`.
    fn parse(path: &str, base: &Path) -> Result<Source> {
        match path.strip_prefix("oci://") {
            Some(reference) => {
                let (name, _) = reference.split_once('@').unwrap_or((reference, ""));
                let has_tag_or_digest =
                    reference.contains('@') || name.rsplit('/').next().is_some_and(|last| last.contains(':'));
                if !reference.contains('/') || !has_tag_or_digest {
                    bail!(
                        "{path:?} is not a registry reference: write oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:DIGEST"
                    );
                }
                Ok(Source::Registry(reference.to_string()))
            }
            None => Ok(Source::File(base.join(path))),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(path) => write!(f, "{}", path.display()),
            Source::Registry(reference) => write!(f, "oci://{reference}"),
        }
    }
}

/// What the config says about one set of an agent.
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    /// Present and enabled; the value as JSON (`null` for an empty value).
    Enabled(serde_json::Value),
    /// Present with a YAML 1.1 false spelling.
    Disabled,
}

impl Config {
    /// Reads the config: `explicit` when given, else `$IOTA_CONFIG`, else
    /// `./.iota/config.yaml` (restricted unless trusted), else
    /// `~/.iota/config.yaml`, else the embedded default.
    pub fn discover(explicit: Option<&Path>) -> Result<Config> {
        Config::discover_from(explicit, true)
    }

    /// [`Config::discover`], with `./.iota/config.yaml` left out unless
    /// `project` (a process a model's command line started reads no config
    /// from the project it may have written).
    pub fn discover_from(explicit: Option<&Path>, project: bool) -> Result<Config> {
        discovery::discover(explicit, project)
    }

    /// Parses config text; `base` resolves relative toolset paths.
    pub fn parse(text: &str, origin: &str, base: &Path) -> Result<Config> {
        let config = ConfigFile::decode(text, origin)?.into_config(origin, base)?;
        for agent in &config.agents {
            for (set, _) in &agent.tools {
                config.check_set_name(&agent.name, set)?;
            }
        }
        Ok(config)
    }

    fn check_set_name(&self, agent: &str, set: &str) -> Result<()> {
        if builtin_set(set).is_some() || self.toolsets.contains_key(set) {
            return Ok(());
        }
        if set == "agent" {
            bail!(
                "config {}: agent {agent:?}: toolset \"agent\" was renamed to \"skills\": write skills: under tools:",
                self.origin
            );
        }
        let names: Vec<&str> = BUILTIN_SETS.iter().map(|set| set.name).collect();
        let (last, rest) = names.split_last().expect("there are built-in sets");
        bail!(
            "config {}: agent {agent:?}: unknown toolset {set:?}: the built-in sets are {} and {last}; declare others under toolsets:",
            self.origin,
            rest.join(", ")
        )
    }

    /// The agent named `name`, or the one to use when none is named: the only
    /// agent, else the one called `default`.
    pub fn agent(&self, name: Option<&str>) -> Result<&Agent> {
        let names = || {
            self.agents
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some(name) = name {
            return self
                .agents
                .iter()
                .find(|a| a.name == name)
                .with_context(|| format!("config {}: no agent {name:?} (agents: {})", self.origin, names()));
        }
        match self.agents.as_slice() {
            [] => bail!("config {}: no agents are defined", self.origin),
            [only] => Ok(only),
            many => many.iter().find(|a| a.name == "default").with_context(|| {
                format!(
                    "config {}: several agents ({}): choose one with --agent",
                    self.origin,
                    names()
                )
            }),
        }
    }
}

impl Agent {
    /// The value of each set named under `tools:`, in file order.
    pub fn sets(&self) -> Vec<(String, SetValue)> {
        self.tools
            .iter()
            .map(|(name, value)| (name.clone(), set_value(value)))
            .collect()
    }

    /// Whether `mode:` (`agent`, `bot`) enables the sets whose rule is
    /// [`crate::builtin_sets::Enabling::ByMode`] (skills) on its own.
    pub fn mode_enables_more_sets(&self) -> bool {
        matches!(self.mode.as_deref(), Some("agent" | "bot"))
    }
}

/// Reads one set's value: a YAML 1.1 false spelling disables it, a true
/// spelling or an empty value means the defaults, anything else is passed on.
pub fn set_value(value: &Value) -> SetValue {
    match value {
        Value::Bool(false) => SetValue::Disabled,
        Value::String(s) if YAML11_FALSE.contains(&s.as_str()) => SetValue::Disabled,
        Value::Bool(true) => SetValue::Enabled(serde_json::Value::Null),
        Value::String(s) if YAML11_TRUE.contains(&s.as_str()) => SetValue::Enabled(serde_json::Value::Null),
        other => SetValue::Enabled(yaml_to_json(other)),
    }
}

/// Converts a YAML value to JSON for a component's `config` (tags dropped,
/// non-string keys written as YAML).
pub fn yaml_to_json(value: &Value) -> serde_json::Value {
    match value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into()
            } else if let Some(u) = n.as_u64() {
                u.into()
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or(serde_json::Value::Null, Into::into)
            }
        }
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Sequence(items) => items.iter().map(yaml_to_json).collect(),
        Value::Mapping(map) => map
            .iter()
            .map(|(k, v)| {
                let key = match k {
                    Value::String(s) => s.clone(),
                    other => serde_yaml::to_string(other).unwrap_or_default().trim_end().to_string(),
                };
                (key, yaml_to_json(v))
            })
            .collect(),
        Value::Tagged(tagged) => yaml_to_json(&tagged.value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_grant_names_every_capability() {
        let err = Config::parse(
            "toolsets:\n  t:\n    path: t.wasm\n    grant: [gpu]\nagents:\n  a:\n    tools:\n      t:\n",
            "t",
            Path::new("/"),
        )
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("unknown capability \"gpu\" (read, write, session, ui, process, parallel)"),
            "{err:#}"
        );
    }

    fn parse(text: &str) -> Result<Config> {
        Config::parse(text, "test.yaml", Path::new("/cfg"))
    }

    #[test]
    fn false_spellings_disable_and_empty_values_enable() {
        let config =
            parse("agents:\n  a:\n    tools:\n      code:\n      ask: no\n      shell: off\n      skills: False\n")
                .unwrap();
        let sets = config.agent(None).unwrap().sets();
        assert_eq!(sets[0], ("code".into(), SetValue::Enabled(serde_json::Value::Null)));
        assert!(sets[1..].iter().all(|(_, v)| *v == SetValue::Disabled));
    }

    #[test]
    fn unknown_sets_fail_the_load() {
        let err = parse("agents:\n  a:\n    tools:\n      bogus:\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown toolset \"bogus\""), "{err}");
        let err = parse("agents:\n  a:\n    tools:\n      agent:\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("renamed to \"skills\""), "{err}");
        assert!(parse("toolsets:\n  jq: ./jq.wasm\nagents:\n  a:\n    tools:\n      jq:\n").is_ok());
    }

    #[test]
    fn toolset_declarations_resolve_against_the_config_file() {
        let config = parse(
            "toolsets:\n  jq: { path: jq.wasm, grant: [process], limits: { timeout: 2, memory: 64, output: 512 } }\n",
        )
        .unwrap();
        let jq = &config.toolsets["jq"];
        assert_eq!(jq.source, Source::File(PathBuf::from("/cfg/jq.wasm")));
        for (path, source) in [
            ("oci://ghcr.io/acme/jq:1.0", Some("ghcr.io/acme/jq:1.0")),
            ("oci://127.0.0.1:5000/jq@sha256:ab", Some("127.0.0.1:5000/jq@sha256:ab")),
            ("oci://ghcr.io/acme/jq", None),
            ("oci://jq:1.0", None),
        ] {
            let parsed = parse(&format!("toolsets:\n  jq: {path}\n"));
            match source {
                Some(reference) => assert_eq!(
                    parsed.unwrap().toolsets["jq"].source,
                    Source::Registry(reference.into())
                ),
                None => assert!(
                    format!("{:#}", parsed.unwrap_err()).contains("is not a registry reference"),
                    "{path}"
                ),
            }
        }
        assert_eq!(jq.grant, Some(vec![Capability::Process]));
        assert_eq!(
            jq.limits,
            Limits {
                timeout: Duration::from_secs(2),
                memory: 64 << 20,
                output: 512 << 10,
            }
        );
        assert!(parse("toolsets:\n  jq: { path: a.wasm, grant: [sockets] }\n").is_err());
    }

    #[test]
    fn keys_the_host_owns_are_checked_and_an_agents_other_keys_are_iotas() {
        let err = |text: &str| format!("{:#}", parse(text).unwrap_err());
        let e = err("agnets:\n  a: {}\n");
        assert!(e.contains("unknown field `agnets`") && e.contains("`agents`"), "{e}");
        let e = err("toolsets:\n  jq: { path: jq.wasm, grants: [ui] }\n");
        assert!(e.contains("unknown field `grants`"), "{e}");
        let e = err("toolsets:\n  jq: { path: jq.wasm, limits: { timeout: 0 } }\n");
        assert!(e.contains("timeout must be a positive number of seconds"), "{e}");
        let e = err("toolsets:\n  jq: { path: jq.wasm, limits: { memory: 0 } }\n");
        assert!(e.contains("memory must be a positive number of MiB"), "{e}");
        let e = err("toolsets:\n  jq: { grant: [ui] }\n");
        assert!(e.contains("toolsets: jq: path is required"), "{e}");
        let e = err("toolsets:\n  jq: [a, b]\n");
        assert!(
            e.contains("a path or a mapping (path, sha256, signature, grant, limits)"),
            "{e}"
        );
        // model, instructions, …: iota's keys, not refused; order kept.
        let config = parse(
            "agents:\n  z:\n    model: m\n    mode: bot\n    tools:\n      shell:\n      code: {x: 1}\n  a: {}\n",
        )
        .unwrap();
        let names: Vec<&str> = config.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["z", "a"]);
        let z = &config.agents[0];
        assert_eq!(z.mode.as_deref(), Some("bot"));
        let sets: Vec<&str> = z.tools.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(sets, ["shell", "code"]);
        assert!(parse("").unwrap().agents.is_empty());
        assert!(parse("agents:\n").unwrap().agents.is_empty());
    }

    #[test]
    fn agent_choice() {
        let config = parse("agents:\n  a: {}\n  default: {}\n").unwrap();
        assert_eq!(config.agent(None).unwrap().name, "default");
        assert!(config.agent(Some("zzz")).is_err());
        let config = parse("agents:\n  a: {}\n  b: {}\n").unwrap();
        assert!(config.agent(None).unwrap_err().to_string().contains("--agent"));
    }
}
