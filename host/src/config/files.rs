//! The config file as written: the structs serde decodes it into
//! (`deny_unknown_fields` everywhere but an agent's body, whose other keys
//! are iota's), and their conversion into the config's own types, each
//! value checked and each relative path resolved against the file.

use super::signature::SignatureFile;
use super::{Agent, Config, Limits, Source, ToolsetDecl};
use crate::capability::Capability;
use anyhow::{Context as _, Result, bail};
use serde::Deserialize;
use serde_yaml::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The config file as written, before the rules: what serde decodes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ConfigFile {
    /// Agents in file order (a list of pairs keeps it).
    #[serde(default, deserialize_with = "in_file_order")]
    agents: Option<Vec<(String, Option<AgentFile>)>>,
    toolsets: Option<BTreeMap<String, DeclFile>>,
    audit: Option<String>,
    trusted_projects: Option<Vec<String>>,
}

impl ConfigFile {
    /// Decodes config text (empty text is an empty config).
    pub(super) fn decode(text: &str, origin: &str) -> Result<ConfigFile> {
        match serde_yaml::from_str::<Option<ConfigFile>>(text) {
            Ok(file) => Ok(file.unwrap_or_default()),
            Err(e) => bail!("config {origin}: {e}"),
        }
    }

    /// The config this file says, its relative paths against `base`; the
    /// set names its agents enable are not checked yet.
    pub(super) fn into_config(self, origin: &str, base: &Path) -> Result<Config> {
        let home = crate::platform::home_dir();
        let mut toolsets = BTreeMap::new();
        for (name, decl) in self.toolsets.unwrap_or_default() {
            let decl = decl
                .into_decl(base)
                .with_context(|| format!("config {origin}: toolsets: {name}"))?;
            toolsets.insert(name, decl);
        }
        Ok(Config {
            origin: origin.to_string(),
            agents: self
                .agents
                .unwrap_or_default()
                .into_iter()
                .map(|(name, agent)| agent.unwrap_or_default().into_agent(name))
                .collect(),
            toolsets,
            lock: base.join(crate::registry::LOCK_FILE),
            audit: self.audit.map(|path| base.join(path)),
            trusted_projects: self
                .trusted_projects
                .unwrap_or_default()
                .iter()
                .map(|p| match (p.strip_prefix("~/"), &home) {
                    (Some(rest), Some(home)) => home.join(rest),
                    _ => base.join(p),
                })
                .collect(),
            warnings: Vec::new(),
        })
    }
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
