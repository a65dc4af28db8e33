//! The YAML config: agents, their `tools:`, and where Wasm toolsets come from.
//!
//! The rules are the spec's: key presence enables a set; any YAML 1.1 false
//! spelling (false, no, off) disables it; a set name that is neither built-in
//! nor declared under `toolsets:` fails the load; a set value that does not
//! decode is a startup warning (`toolset "NAME": … (ignored)`) and the set is
//! left out. Per-set keys of the Wasm sets are decoded by the component itself
//! (its `describe`), so each set's rules live with the set.
//!
//! Where the config comes from decides how far it is believed. `--config`,
//! `$IOTA_CONFIG` and `~/.iota/config.yaml` are the user's own. A config found
//! in the project (`./.iota/config.yaml`) is untrusted input — a model with
//! a write tool, or a cloned repository, may have written it — so it may
//! restrict but never loosen: [`restrict`] drops every key that would widen
//! what runs without asking or outside the sandbox, with one warning naming
//! them, unless the user's own `~/.iota/config.yaml` lists the project under
//! `trusted_projects:`.

use anyhow::{Context as _, Result, bail};
use iota_toolset::config::{YAML11_FALSE, YAML11_TRUE};
use serde::Deserialize;
use serde_yaml::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::builtin_sets::{BUILTIN_SETS, builtin_set};
use crate::capability::Capability;
use signature::SignatureFile;

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
        let user = explicit.map(Path::to_path_buf).or_else(|| {
            std::env::var_os("IOTA_CONFIG")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        });
        if let Some(path) = user {
            return Config::load(&path, Trust::Full);
        }
        let project_config = PathBuf::from(".iota/config.yaml");
        let home_config = home_config();
        let user_config = home_config
            .as_deref()
            .filter(|p| p.is_file())
            .map(|p| Config::load(p, Trust::Full))
            .transpose()?;
        if project && project_config.is_file() {
            return match user_config {
                Some(user) if user.trusts(Path::new(".")) => Config::load(&project_config, Trust::Full),
                // The user's own config stands; an untrusted project's cannot
                // replace it (it could re-enable what the user turned off).
                Some(mut user) => {
                    user.warnings.push(format!(
                        "{} is the project's own config and the project is not trusted: ignored in favour of ~/.iota/config.yaml; to use it, list the project under trusted_projects: there",
                        project_config.display()
                    ));
                    Ok(user)
                }
                None => Config::load(&project_config, Trust::Project),
            };
        }
        match user_config {
            Some(user) => Ok(user),
            None => Config::parse(EMBEDDED_DEFAULT, "(embedded default)", Path::new(".")),
        }
    }

    /// Reads the config file at `path`, believed as far as `trust` says.
    fn load(path: &Path, trust: Trust) -> Result<Config> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read config {}", path.display()))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base
        };
        let origin = path.display().to_string();
        if trust == Trust::Full {
            return Config::parse(&text, &origin, &base);
        }
        let mut doc: Value =
            serde_yaml::from_str(&text).with_context(|| format!("config {origin} is not valid YAML"))?;
        let ignored = restrict(&mut doc);
        let text = serde_yaml::to_string(&doc).unwrap_or_default();
        let mut config = Config::parse(&text, &origin, &base)?;
        if !ignored.is_empty() {
            let project = std::fs::canonicalize(".").unwrap_or_else(|_| PathBuf::from("."));
            config.warnings.push(format!(
                "{origin} is the project's own config, which may restrict but not loosen what runs: ignored {}; to trust this project, list it in ~/.iota/config.yaml under trusted_projects: [{}]",
                ignored.join(", "),
                project.display()
            ));
        }
        Ok(config)
    }

    /// Whether `project` is listed under `trusted_projects:`.
    pub fn trusts(&self, project: &Path) -> bool {
        let Ok(project) = std::fs::canonicalize(project) else {
            return false;
        };
        self.trusted_projects
            .iter()
            .any(|p| std::fs::canonicalize(p).is_ok_and(|p| p == project))
    }

    /// Parses config text; `base` resolves relative toolset paths.
    pub fn parse(text: &str, origin: &str, base: &Path) -> Result<Config> {
        let file: ConfigFile = match serde_yaml::from_str::<Option<ConfigFile>>(text) {
            Ok(file) => file.unwrap_or_default(),
            Err(e) => bail!("config {origin}: {e}"),
        };
        let home = crate::platform::home_dir();
        let mut toolsets = BTreeMap::new();
        for (name, decl) in file.toolsets.unwrap_or_default() {
            let decl = decl
                .into_decl(base)
                .with_context(|| format!("config {origin}: toolsets: {name}"))?;
            toolsets.insert(name, decl);
        }
        let config = Config {
            origin: origin.to_string(),
            agents: file
                .agents
                .unwrap_or_default()
                .into_iter()
                .map(|(name, agent)| agent.unwrap_or_default().into_agent(name))
                .collect(),
            toolsets,
            lock: base.join(crate::registry::LOCK_FILE),
            audit: file.audit.map(|path| base.join(path)),
            trusted_projects: file
                .trusted_projects
                .unwrap_or_default()
                .iter()
                .map(|p| match (p.strip_prefix("~/"), &home) {
                    (Some(rest), Some(home)) => home.join(rest),
                    _ => base.join(p),
                })
                .collect(),
            warnings: Vec::new(),
        };
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

/// The config file as written, before the rules: what serde decodes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    /// Agents in file order (a list of pairs keeps it).
    #[serde(default, deserialize_with = "in_file_order")]
    agents: Option<Vec<(String, Option<AgentFile>)>>,
    toolsets: Option<BTreeMap<String, DeclFile>>,
    audit: Option<String>,
    trusted_projects: Option<Vec<String>>,
}

/// One agent as written. Its other keys (`model`, …) are iota's, not the
/// host's: ignored, not refused.
#[derive(Debug, Default, Deserialize)]
struct AgentFile {
    mode: Option<String>,
    /// Set names and their raw values, in file order; each set decodes its own.
    #[serde(default, deserialize_with = "in_file_order")]
    tools: Option<Vec<(String, Value)>>,
}

impl AgentFile {
    fn into_agent(self, name: String) -> Agent {
        Agent {
            name,
            mode: self.mode,
            tools: self.tools.unwrap_or_default(),
        }
    }
}

/// A toolset declaration: a path, or a mapping.
#[derive(Debug)]
enum DeclFile {
    Path(String),
    Full(Box<DeclBody>),
}

impl<'de> Deserialize<'de> for DeclFile {
    // By hand rather than `untagged`, which would replace the mapping's own
    // errors (`unknown capability "gpu"`) with a generic one.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<DeclFile, D::Error> {
        struct Decl;
        impl<'de> serde::de::Visitor<'de> for Decl {
            type Value = DeclFile;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a path or a mapping (path, sha256, signature, grant, limits)")
            }
            fn visit_str<E: serde::de::Error>(self, path: &str) -> Result<DeclFile, E> {
                Ok(DeclFile::Path(path.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<DeclFile, A::Error> {
                DeclBody::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|body| DeclFile::Full(Box::new(body)))
            }
        }
        deserializer.deserialize_any(Decl)
    }
}

/// `toolsets: NAME: {path, sha256, signature, grant, limits}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeclBody {
    path: Option<String>,
    grant: Option<Vec<Capability>>,
    sha256: Option<String>,
    signature: Option<SignatureFile>,
    limits: Option<LimitsFile>,
}

/// `limits: {timeout, memory, output}` in seconds, MiB and KiB.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    timeout: Option<f64>,
    memory: Option<u64>,
    output: Option<u64>,
}

impl DeclFile {
    fn into_decl(self, base: &Path) -> Result<ToolsetDecl> {
        let body = match self {
            DeclFile::Path(path) => {
                return Ok(ToolsetDecl {
                    source: Source::parse(&path, base)?,
                    grant: None,
                    sha256: None,
                    signature: None,
                    limits: Limits::default(),
                });
            }
            DeclFile::Full(body) => *body,
        };
        let path = body.path.context("path is required")?;
        let limits = match body.limits {
            Some(limits) => limits.checked().context("limits")?,
            None => Limits::default(),
        };
        let sha256 = body.sha256.map(|pin| pin_digest(&pin)).transpose()?;
        let signature = body
            .signature
            .map(|file| file.checked(base))
            .transpose()
            .context("signature")?;
        Ok(ToolsetDecl {
            source: Source::parse(&path, base)?,
            grant: body.grant,
            sha256,
            signature,
            limits,
        })
    }
}

/// A `sha256:` pin as 64 lowercase hex digits (`sha256:` in front and
/// capitals accepted, as `inspect` and registries print digests).
fn pin_digest(pin: &str) -> Result<String> {
    let hex = pin.strip_prefix("sha256:").unwrap_or(pin).to_ascii_lowercase();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("sha256 must be 64 hexadecimal digits (as `iota-host inspect` prints), got {pin:?}");
    }
    Ok(hex)
}

impl LimitsFile {
    /// The limits, each positive, the rest defaults.
    fn checked(self) -> Result<Limits> {
        let mut limits = Limits::default();
        if let Some(secs) = self.timeout {
            if !(secs > 0.0 && secs.is_finite()) {
                bail!("timeout must be a positive number of seconds");
            }
            limits.timeout = Duration::from_secs_f64(secs);
        }
        if let Some(mib) = self.memory {
            if mib == 0 {
                bail!("memory must be a positive number of MiB");
            }
            limits.memory = mib << 20;
        }
        if let Some(kib) = self.output {
            if kib == 0 {
                bail!("output must be a positive number of KiB");
            }
            limits.output = kib << 10;
        }
        Ok(limits)
    }
}

/// A mapping decoded as its (key, value) pairs in file order (a map type
/// would sort them, and the order of agents and sets is the user's).
fn in_file_order<'de, D, V>(deserializer: D) -> Result<Option<Vec<(String, V)>>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Pairs<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Pairs<V> {
        type Value = Option<Vec<(String, V)>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a mapping of names")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::new();
            while let Some(pair) = map.next_entry()? {
                pairs.push(pair);
            }
            Ok(Some(pairs))
        }
    }
    deserializer.deserialize_any(Pairs(std::marker::PhantomData))
}

/// How far a config file is believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trust {
    /// The user's own, or a project the user trusts.
    Full,
    /// A project's own: restrictions only.
    Project,
}

/// `value` with every YAML tag removed, at any depth.
fn untag(value: &mut Value) {
    while let Value::Tagged(tagged) = value {
        *value = std::mem::take(&mut tagged.value);
    }
    match value {
        Value::Mapping(map) => map.values_mut().for_each(untag),
        Value::Sequence(items) => items.iter_mut().for_each(untag),
        _ => {}
    }
}

/// `~/.iota/config.yaml`.
fn home_config() -> Option<PathBuf> {
    crate::platform::home_dir().map(|h| h.join(".iota").join("config.yaml"))
}

/// Removes from a project's config every key that would loosen what runs
/// without asking or outside the sandbox; returns their dotted names. What
/// stays can only restrict: disabling sets, `read_only`, `sandbox: auto`,
/// a lower `max_processes`, fewer agents.
pub fn restrict(doc: &mut Value) -> Vec<String> {
    // A tag (`!x {sandbox: off}`) would hide a mapping from the checks below
    // and be dropped later anyway: gone first, everywhere.
    untag(doc);
    let mut ignored = Vec::new();
    let Value::Mapping(top) = doc else {
        return ignored;
    };
    // Where components come from and what they are granted, where calls are
    // logged, which projects are trusted: the user's to say.
    for key in ["toolsets", "audit", "trusted_projects"] {
        if top.remove(key).is_some() {
            ignored.push(key.to_string());
        }
    }
    let is_off = |v: &Value| match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => YAML11_FALSE.contains(&s.as_str()),
        _ => false,
    };
    let Some(Value::Mapping(agents)) = top.get_mut("agents") else {
        return ignored;
    };
    for (agent, value) in agents.iter_mut() {
        let agent = agent.as_str().unwrap_or("?").to_string();
        let Some(Value::Mapping(tools)) = value.get_mut("tools") else {
            continue;
        };
        // Sets it would declare under toolsets: are not loaded at all.
        let undeclared: Vec<Value> = tools
            .keys()
            .filter(|k| k.as_str().is_none_or(|k| builtin_set(k).is_none()))
            .cloned()
            .collect();
        for key in undeclared {
            tools.remove(&key);
            ignored.push(format!("agents.{agent}.tools.{}", key.as_str().unwrap_or("?")));
        }
        let mut drop = |set: &str, key: &str, loosens: &dyn Fn(&Value) -> bool| {
            if let Some(Value::Mapping(values)) = tools.get_mut(set)
                && values.get(key).is_some_and(loosens)
            {
                values.remove(key);
                ignored.push(format!("agents.{agent}.tools.{set}.{key}"));
            }
        };
        drop("shell", "sandbox", &|v| v.as_str() == Some("off"));
        drop("shell", "auto_run", &|v| !is_off(v));
        drop("shell", "network", &|v| !is_off(v));
        drop("shell", "write", &|v| {
            !matches!(v, Value::Null) && v.as_sequence().is_none_or(|s| !s.is_empty())
        });
        drop("shell", "env", &|_| true);
        // A project may hide the home directory, never show more of it.
        drop("shell", "home", &|v| v.as_str() != Some("hidden"));
        drop("shell", "read", &|v| {
            !matches!(v, Value::Null) && v.as_sequence().is_none_or(|s| !s.is_empty())
        });
        drop("shell", "max_log", &|v| {
            v.as_u64()
                .is_none_or(|mib| mib > crate::shell::config::DEFAULT_MAX_LOG >> 20)
        });
        drop("shell", "max_processes", &|v| {
            v.as_u64()
                .is_none_or(|n| n > crate::shell::config::DEFAULT_MAX_PROCESSES)
        });
        drop("code", "auto_write", &|v| !is_off(v));
    }
    ignored
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
