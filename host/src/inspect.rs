//! `iota-host inspect FILE.wasm`: what a component is and what it asks for,
//! so a cautious user can audit a toolset before enabling it.

use crate::capability::Capability;
use crate::caps::{self, Import};
use crate::config::{Config, Source};
use crate::engine::{Engine, sha256_hex};
use crate::toolset::Toolset;
use crate::wasm_toolset::{LoadError, LoadOptions, WasmToolset};
use anyhow::{Context as _, Result};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::Path;

/// Everything `inspect` reports, as JSON.
pub fn inspect(engine: &Engine, path: &Path, config: Option<&Config>) -> Result<serde_json::Value> {
    let wasm = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let component = engine.component(&path.display().to_string(), &wasm)?;
    let imports = caps::imports(engine.wasmtime(), &component);
    let exports: Vec<String> = component
        .component_type()
        .exports(engine.wasmtime())
        .map(|(n, _)| n.to_string())
        .collect();
    let requested = caps::requested(&imports);
    let forbidden: Vec<&String> = imports
        .iter()
        .filter_map(|i| if let Import::Forbidden(n) = i { Some(n) } else { None })
        .collect();
    let package = exports
        .iter()
        .find(|e| e.starts_with("iota:toolset/toolset@"))
        .map(|e| {
            let version = e.rsplit('@').next().unwrap_or("?");
            format!("iota:toolset@{version}")
        });

    // Describe it with everything it asks for linked but nothing real behind
    // it: no preopens, nobody to ask, an empty session.
    let tools = if forbidden.is_empty() && package.is_some() {
        // The describe call has no filesystem; the root only names one.
        let temp = std::env::temp_dir();
        let root = std::sync::Arc::new(
            crate::project::ProjectRoot::open(&std::fs::canonicalize(&temp).unwrap_or(temp))
                .map_err(|e| anyhow::anyhow!("cannot open the temporary directory: {e}"))?,
        );
        // A UI that could answer (so a set like ask lists its tools) but declines everything.
        let ui: std::sync::Arc<dyn crate::caps::ui::Ui> =
            std::sync::Arc::new(crate::caps::ui::ScriptedUi::parse("[]")?);
        let options = LoadOptions {
            name: "inspect".into(),
            wasm: wasm.clone().into(),
            granted: requested.clone(),
            limits: Default::default(),
            root,
            config: serde_json::Value::Null,
            read_dirs: Vec::new(),
            process: None,
        };
        match WasmToolset::load(engine, options, &ui) {
            Ok(set) => Some(
                set.tools()
                    .iter()
                    .map(|t| {
                        json!({
                            "name": t.name, "description": t.description,
                            "parameters": t.schema,
                            "approval": t.approval.word(), "parallel": t.parallel,
                            "presentation": t.presentation.word(), "read_only": t.read_only,
                        })
                    })
                    .collect::<Vec<_>>(),
            ),
            Err(LoadError::Config(e) | LoadError::Fatal(e)) => {
                eprintln!("iota-host: {} could not describe its tools: {e}", path.display());
                None
            }
        }
    } else {
        None
    };

    let grant = config.and_then(|config| grant_status(config, path, &requested));
    Ok(json!({
        "file": path.display().to_string(),
        "sha256": sha256_hex(&wasm),
        "size": wasm.len(),
        "package": package,
        "capabilities": requested.iter().map(|c| json!({"name": c.word(), "meaning": c.meaning()})).collect::<Vec<_>>(),
        "forbidden_imports": forbidden,
        "disabled_imports": imports.iter().filter_map(|i| if let Import::Disabled(n) = i { Some(n.clone()) } else { None }).collect::<Vec<_>>(),
        "imports": imports.iter().map(Import::name).collect::<Vec<_>>(),
        "exports": exports,
        "tools": tools,
        "config": grant,
    }))
}

/// Whether the config declares this file and grants what it asks for.
fn grant_status(config: &Config, path: &Path, requested: &BTreeSet<Capability>) -> Option<serde_json::Value> {
    let canonical = std::fs::canonicalize(path).ok()?;
    let (name, decl) = config.toolsets.iter().find(|(_, d)| match &d.source {
        Source::File(path) => std::fs::canonicalize(path).ok().as_ref() == Some(&canonical),
        Source::Registry(_) => false,
    })?;
    let mut granted = crate::agent::default_grants();
    granted.extend(decl.grant.iter().flatten().copied());
    let missing: Vec<&str> = requested.difference(&granted).map(|c| c.word()).collect();
    Some(json!({"toolset": name, "granted": granted.iter().map(|c| c.word()).collect::<Vec<_>>(), "missing": missing}))
}

/// The human-readable report.
pub fn render(report: &serde_json::Value) -> String {
    let mut out = String::new();
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    out.push_str(&format!("file:     {}\n", s(&report["file"])));
    out.push_str(&format!("sha256:   {}\n", s(&report["sha256"])));
    out.push_str(&format!("size:     {} bytes\n", report["size"]));
    out.push_str(&format!(
        "package:  {}\n",
        report["package"]
            .as_str()
            .unwrap_or("(does not export iota:toolset/toolset)")
    ));
    out.push_str("capabilities:\n");
    let caps = report["capabilities"].as_array().cloned().unwrap_or_default();
    if caps.is_empty() {
        out.push_str("  (none: it computes on its arguments only)\n");
    }
    for cap in caps {
        out.push_str(&format!("  {:<8} {}\n", s(&cap["name"]), s(&cap["meaning"])));
    }
    for name in report["forbidden_imports"].as_array().cloned().unwrap_or_default() {
        out.push_str(&format!(
            "  REFUSED  {} (iota-host never provides it; the toolset cannot load)\n",
            s(&name)
        ));
    }
    let disabled = report["disabled_imports"].as_array().cloned().unwrap_or_default();
    if !disabled.is_empty() {
        out.push_str(&format!(
            "  network  imports wasi:sockets ({} interfaces): linked, but every socket operation fails\n",
            disabled.len()
        ));
    }
    out.push_str("imports:\n");
    for name in report["imports"].as_array().cloned().unwrap_or_default() {
        out.push_str(&format!("  {}\n", s(&name)));
    }
    out.push_str("exports:\n");
    for name in report["exports"].as_array().cloned().unwrap_or_default() {
        out.push_str(&format!("  {}\n", s(&name)));
    }
    if let Some(tools) = report["tools"].as_array() {
        out.push_str("tools:\n");
        for t in tools {
            out.push_str(&format!(
                "  {} (approval {}, {}, {}{})\n    {}\n    parameters: {}\n",
                s(&t["name"]),
                s(&t["approval"]),
                if t["parallel"] == true { "parallel" } else { "serial" },
                s(&t["presentation"]),
                if t["read_only"] == true { ", read-only" } else { "" },
                s(&t["description"]),
                t["parameters"]
            ));
        }
    }
    match report["config"].as_object() {
        Some(c) => {
            let missing = c["missing"].as_array().cloned().unwrap_or_default();
            if missing.is_empty() {
                out.push_str(&format!(
                    "config:   declared as toolset {}; every capability it asks for is granted\n",
                    c["toolset"]
                ));
            } else {
                let words: Vec<String> = missing.iter().map(s).collect();
                out.push_str(&format!(
                    "config:   declared as toolset {}; NOT granted: {} (it will be refused at load)\n",
                    c["toolset"],
                    words.join(", ")
                ));
            }
        }
        None => out.push_str("config:   not declared under toolsets: in the current config\n"),
    }
    out
}

/// `inspect --policy`: the least-privilege declaration of the component,
/// ready to paste into a config — its absolute path, its sha256 pin, and
/// `grant:` exactly what its imports ask for beyond every toolset's defaults
/// (read, session). Refused for a file that is not a toolset or that imports
/// what iota-host never provides: no declaration could load it.
pub fn policy(report: &serde_json::Value) -> Result<String> {
    let file = report["file"].as_str().unwrap_or_default();
    if let Some(forbidden) = report["forbidden_imports"].as_array().filter(|f| !f.is_empty()) {
        let names: Vec<&str> = forbidden.iter().filter_map(|n| n.as_str()).collect();
        anyhow::bail!(
            "{file} imports what iota-host never provides ({}): no declaration can load it",
            names.join(", ")
        );
    }
    if report["package"].is_null() {
        anyhow::bail!("{file} does not export iota:toolset/toolset: it is not a toolset");
    }
    let path = std::fs::canonicalize(file).with_context(|| format!("cannot resolve {file}"))?;
    let name: String = path
        .file_stem()
        .map(|stem| stem.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let defaults = crate::agent::default_grants();
    let asked: Vec<&str> = report["capabilities"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let grant: Vec<&str> = asked
        .iter()
        .copied()
        .filter(|word| Capability::parse(word).is_some_and(|c| !defaults.contains(&c)))
        .collect();
    let declaration = json!({ "toolsets": { name: {
        "path": path.display().to_string(),
        "sha256": report["sha256"],
        "grant": grant,
    }}});
    let yaml = serde_yaml::to_string(&declaration).context("cannot write the declaration")?;
    let write = if asked.contains(&Capability::FsRead.word()) {
        "\n# write has no import of its own (it is the read preopen's permission): add it only if\n# its tools should change files."
    } else {
        ""
    };
    let asked = if asked.is_empty() {
        "nothing".to_string()
    } else {
        asked.join(", ")
    };
    Ok(format!(
        "# Least privilege for {file}\n# Its imports ask for {asked}; read and session are every toolset's defaults, so\n# grant: lists only the rest. sha256 pins these very bytes.{write}\n{yaml}"
    ))
}
