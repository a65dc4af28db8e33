//! Toolsets from OCI registries: the local store of pulled components and
//! the lock that says which digest each reference resolved to.
//!
//! `path: oci://REGISTRY/REPOSITORY:TAG` never makes a load touch the network:
//! `iota-host pull` (`registry_client.rs`) resolves the reference once, checks
//! and stores what it fetched, and records the digests in the lock
//! (`iota-host.lock` beside the config). A load reads the lock, then the
//! store, and checks the bytes against the locked digest before the pin and
//! the signature are checked (provenance.rs). A tag that moves on the
//! registry changes nothing until `iota-host pull --update` shows the change
//! and records it.
//!
//! The store is content-addressed (`sha256-HEX.wasm`, and the Sigstore
//! bundle fetched with it as `sha256-HEX.sigstore.json`) inside the host's
//! state directory, which sandboxed commands can neither see nor write
//! (host_state.rs); its files are checked against their names on every read
//! anyway.

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The lock's file name, beside the config file.
pub const LOCK_FILE: &str = "iota-host.lock";

/// What one reference resolved to when it was pulled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    /// The manifest's digest (`sha256:…`): what the tag pointed to.
    pub manifest: String,
    /// The component layer's digest: the component's own sha256.
    pub component: String,
    /// The digest of the Sigstore bundle fetched with it, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// The lock file: references (without `oci://`) to what they resolved to.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
    /// The entries, by reference.
    pub entries: BTreeMap<String, Locked>,
}

impl Lock {
    /// Reads the lock at `path`; a missing file is an empty lock.
    pub fn read(path: &Path) -> Result<Lock> {
        let entries = match std::fs::read_to_string(path) {
            Ok(text) => serde_yaml::from_str::<Option<BTreeMap<String, Locked>>>(&text)
                .with_context(|| format!("the lock {} does not parse", path.display()))?
                .unwrap_or_default(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read the lock {}", path.display())),
        };
        Ok(Lock {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The content-addressed store of pulled components and bundles.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// What a stored file is, by its extension.
#[derive(Debug, Clone, Copy)]
pub enum Stored {
    /// A component (`.wasm`).
    Component,
    /// A Sigstore bundle (`.sigstore.json`).
    Bundle,
}

impl Store {
    /// The store in the host state directory `state`.
    pub fn in_state_dir(state: &Path) -> Store {
        Store {
            dir: state.join("components"),
        }
    }

    /// The store the engine's state directory holds, if it has one.
    pub fn of(engine: &crate::engine::Engine) -> Result<Store> {
        match engine.state() {
            Some(state) => Ok(Store::in_state_dir(state.dir())),
            None => bail!(
                "there is no host state directory to keep pulled components in (set $IOTA_CACHE_DIR or $XDG_STATE_HOME)"
            ),
        }
    }

    /// The store's directory.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file for `digest` (`sha256:HEX`).
    pub fn file(&self, digest: &str, kind: Stored) -> PathBuf {
        let ext = match kind {
            Stored::Component => "wasm",
            Stored::Bundle => "sigstore.json",
        };
        self.dir.join(format!("{}.{ext}", digest.replace(':', "-")))
    }

    /// The bytes stored as `digest`, checked against it; `None` if absent.
    pub fn get(&self, digest: &str, kind: Stored) -> Result<Option<Vec<u8>>> {
        let file = self.file(digest, kind);
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
        };
        let actual = format!("sha256:{}", crate::engine::sha256_hex(&bytes));
        if actual != digest {
            bail!(
                "refused (tampered): the stored {} has digest {actual}, not {digest}; pull it again",
                file.display()
            );
        }
        Ok(Some(bytes))
    }
}

/// A registry toolset found in the store: its bytes, its file, and the
/// bundle fetched with it.
#[derive(Debug)]
pub struct Located {
    /// The component's bytes, checked against the locked digest.
    pub wasm: Vec<u8>,
    /// Its file in the store.
    pub file: PathBuf,
    /// The Sigstore bundle pulled with it, if any.
    pub bundle: Option<PathBuf>,
}

/// Finds `reference` through the lock at `lock` in `store`, offline.
pub fn locate(reference: &str, lock: &Path, store: &Store) -> Result<Located> {
    let lock = Lock::read(lock)?;
    let Some(locked) = lock.entries.get(reference) else {
        bail!(
            "oci://{reference} has not been pulled: run `iota-host pull` (it fetches every oci:// toolset of the config into the local store and records their digests in {})",
            lock.path().display()
        );
    };
    let Some(wasm) = store.get(&locked.component, Stored::Component)? else {
        bail!(
            "oci://{reference} is locked at {} but not in the local store: run `iota-host pull` to fetch it again",
            locked.component
        );
    };
    let bundle = match &locked.signature {
        Some(digest) => {
            store.get(digest, Stored::Bundle)?.with_context(|| {
                format!("the signature {digest} of oci://{reference} is not in the local store: run `iota-host pull`")
            })?;
            Some(store.file(digest, Stored::Bundle))
        }
        None => None,
    };
    Ok(Located {
        file: store.file(&locked.component, Stored::Component),
        wasm,
        bundle,
    })
}

#[cfg(feature = "cli")]
impl Lock {
    /// Writes the lock whole (a new file renamed over the old one).
    pub fn write(&self) -> Result<()> {
        let mut text = String::from(
            "# Written by `iota-host pull`: the digest each oci:// toolset resolved to. Loads use these,\n# from the local store, offline; `iota-host pull --update` re-resolves tags and shows what changed.\n",
        );
        text.push_str(&serde_yaml::to_string(&self.entries)?);
        let tmp = self.path.with_extension(format!("lock.{}.tmp", std::process::id()));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .with_context(|| format!("cannot write the lock {}", self.path.display()))
    }
}
