//! Which config is read, and how far it is believed. `--config`,
//! `$IOTA_CONFIG` and `~/.iota/config.yaml` are the user's own. A config found
//! in the project (`./.iota/config.yaml`) is untrusted input — a model with
//! a write tool, or a cloned repository, may have written it — so it may
//! restrict but never loosen: [`restrict`] drops every key that would widen
//! what runs without asking or outside the sandbox, with one warning naming
//! them, unless the user's own `~/.iota/config.yaml` lists the project under
//! `trusted_projects:`.

use super::{Config, EMBEDDED_DEFAULT};
use crate::builtin_sets::builtin_set;
use anyhow::{Context as _, Result};
use iota_toolset::config::YAML11_FALSE;
use serde_yaml::Value;
use std::path::{Path, PathBuf};

/// The config [`Config::discover_from`] reads: `explicit` when given, else
/// `$IOTA_CONFIG`, else `./.iota/config.yaml` if `project` (restricted
/// unless trusted), else `~/.iota/config.yaml`, else the embedded default.
pub(super) fn discover(explicit: Option<&Path>, project: bool) -> Result<Config> {
    let user = explicit.map(Path::to_path_buf).or_else(|| {
        std::env::var_os("IOTA_CONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    if let Some(path) = user {
        return load(&path, Trust::Full);
    }
    let project_config = PathBuf::from(".iota/config.yaml");
    let home_config = home_config();
    let user_config = home_config
        .as_deref()
        .filter(|p| p.is_file())
        .map(|p| load(p, Trust::Full))
        .transpose()?;
    if project && project_config.is_file() {
        return match user_config {
            Some(user) if user.trusts(Path::new(".")) => load(&project_config, Trust::Full),
            // The user's own config stands; an untrusted project's cannot
            // replace it (it could re-enable what the user turned off).
            Some(mut user) => {
                user.warnings.push(format!(
                    "{} is the project's own config and the project is not trusted: ignored in favour of ~/.iota/config.yaml; to use it, list the project under trusted_projects: there",
                    project_config.display()
                ));
                Ok(user)
            }
            None => load(&project_config, Trust::Project),
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
    let mut doc: Value = serde_yaml::from_str(&text).with_context(|| format!("config {origin} is not valid YAML"))?;
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

impl Config {
    /// Whether `project` is listed under `trusted_projects:`.
    pub fn trusts(&self, project: &Path) -> bool {
        let Ok(project) = std::fs::canonicalize(project) else {
            return false;
        };
        self.trusted_projects
            .iter()
            .any(|p| std::fs::canonicalize(p).is_ok_and(|p| p == project))
    }
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
