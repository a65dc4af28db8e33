//! `iota-host push` and `iota-host pull`: the only code that talks to a
//! registry, and only when the user runs one of them.
//!
//! What is pushed is the CNCF Wasm OCI artifact that `wkg` and `wash` read
//! and write: an image manifest whose config is `application/vnd.wasm.config.v0+json`
//! (the component's imports and exports) and whose one layer is the
//! `application/wasm` component. A Sigstore bundle beside the file
//! (`FILE.sigstore.json`) goes up as an OCI 1.1 referrer of that manifest
//! (artifact type `application/vnd.dev.sigstore.bundle.v0.3+json`, as cosign
//! attaches bundles), listed under the referrers tag (`sha256-HEX`) for
//! registries without the referrers API, so the component's own manifest
//! stays the one-layer artifact other tools expect.
//!
//! Every byte pulled is checked against the digest that names it before it
//! is kept; what the registry sends that does not match is refused. A blob
//! is refused before it is fetched when its manifest declares it larger than
//! the bound (`--max-size`, [`DEFAULT_MAX_BLOB`]), and it streams into an
//! exclusive temporary file in the store, hashed as it arrives and cut off
//! the moment it passes its declared size, so an endless blob costs neither
//! memory nor disk. Nothing pulled runs before it is verified: a component
//! is then checked against its declaration's `sha256:` pin and `signature:`
//! policy, and what `pull` reports of it (what it asks for) is read from its
//! bytes, with no instance of it made.

use anyhow::{Context as _, Result, bail};
use oci_client::client::{ClientConfig, ClientProtocol, Config as OciConfig, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{Config, Source};
use crate::engine::Engine;
use crate::registry::{Lock, Locked, Store, Stored};

/// An OCI image manifest.
const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index (the referrers tag's list).
const INDEX_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// The Wasm OCI artifact's config.
const WASM_CONFIG_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The Wasm OCI artifact's one layer.
const WASM_LAYER_TYPE: &str = "application/wasm";
/// A Sigstore bundle, as a referrer's artifact type and layer.
const BUNDLE_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// The empty config of an artifact manifest (`{}`).
const EMPTY_TYPE: &str = "application/vnd.oci.empty.v1+json";

/// The largest blob `pull` fetches unless told otherwise (`--max-size`):
/// 256 MiB, a hundred times the built-in `code` component.
pub const DEFAULT_MAX_BLOB: u64 = 256 << 20;

/// `REGISTRY/REPOSITORY:TAG` (an `oci://` in front is accepted).
fn parse(reference: &str) -> Result<Reference> {
    let bare = reference.strip_prefix("oci://").unwrap_or(reference);
    bare.parse::<Reference>().with_context(|| {
        format!("{reference:?} is not a registry reference (REGISTRY/REPOSITORY:TAG or @sha256:DIGEST)")
    })
}

/// A client for `reference`'s registry: HTTPS, except plain HTTP for a
/// registry on this machine (as docker allows for localhost).
fn client_for(reference: &Reference) -> Client {
    let host = reference.resolve_registry();
    let host = host.rsplit_once(':').map_or(host, |(host, _port)| host);
    let local = matches!(host, "localhost" | "127.0.0.1" | "[::1]");
    Client::new(ClientConfig {
        protocol: if local {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        },
        ..Default::default()
    })
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", crate::engine::sha256_hex(bytes))
}

/// Pushes the component `file` to `reference`, with its Sigstore bundle if
/// one is beside it; returns what was pushed, in words.
pub fn push(engine: &Engine, file: &Path, reference: &str) -> Result<String> {
    let target = parse(reference)?;
    let wasm = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    // Only a toolset goes up, and its config says what it imports and exports.
    let report = crate::inspect::inspect(engine, file, None)?;
    let title = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let layer = ImageLayer::new(
        wasm.clone(),
        WASM_LAYER_TYPE.to_string(),
        Some(BTreeMap::from([("org.opencontainers.image.title".to_string(), title)])),
    );
    let config = serde_json::json!({
        "created": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "author": null,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [sha256_digest(&wasm)],
        "component": {
            "exports": report["exports"],
            "imports": report["imports"],
            "target": null,
        },
    });
    let config = OciConfig::new(serde_json::to_vec(&config)?, WASM_CONFIG_TYPE.to_string(), None);
    let mut manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
    manifest.media_type = Some(MANIFEST_TYPE.to_string());
    let bundle_file = {
        let mut name = file.as_os_str().to_owned();
        name.push(".sigstore.json");
        PathBuf::from(name)
    };
    let bundle = match std::fs::read(&bundle_file) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", bundle_file.display())),
    };
    let client = client_for(&target);
    let auth = RegistryAuth::Anonymous;
    runtime()?.block_on(async {
        client
            .push(&target, &[layer], config, &auth, Some(manifest))
            .await
            .with_context(|| format!("pushing to {reference}"))?;
        let (body, digest) = client
            .pull_manifest_raw(&target, &auth, &[MANIFEST_TYPE])
            .await
            .with_context(|| format!("reading back the manifest of {reference}"))?;
        let mut said = format!(
            "pushed {} to oci://{}\n  manifest  {digest}\n  component {}\n",
            file.display(),
            target.whole(),
            sha256_digest(&wasm)
        );
        if let Some(bundle) = bundle {
            let subject = OciDescriptor {
                media_type: MANIFEST_TYPE.to_string(),
                digest: digest.clone(),
                size: body.len() as i64,
                ..Default::default()
            };
            let signature = attach_bundle(&client, &target, subject, &bundle).await?;
            said.push_str(&format!("  signature {signature} (from {})\n", bundle_file.display()));
        } else {
            said.push_str(&format!("  unsigned (no {})\n", bundle_file.display()));
        }
        Ok(said)
    })
}

/// Pushes `bundle` as a referrer of `subject` and lists it under the
/// referrers tag; returns the bundle's digest.
async fn attach_bundle(client: &Client, target: &Reference, subject: OciDescriptor, bundle: &[u8]) -> Result<String> {
    let auth = RegistryAuth::Anonymous;
    let at = |digest: &str| {
        Reference::with_digest(
            target.resolve_registry().to_string(),
            target.repository().to_string(),
            digest.to_string(),
        )
    };
    let empty = b"{}";
    let bundle_digest = sha256_digest(bundle);
    client.push_blob(target, empty.to_vec(), &sha256_digest(empty)).await?;
    client.push_blob(target, bundle.to_vec(), &bundle_digest).await?;
    let subject_digest = subject.digest.clone();
    let referrer = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "artifactType": BUNDLE_TYPE,
        "config": {"mediaType": EMPTY_TYPE, "digest": sha256_digest(empty), "size": empty.len()},
        "layers": [{"mediaType": BUNDLE_TYPE, "digest": bundle_digest, "size": bundle.len()}],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest, "size": subject.size},
    });
    let referrer = serde_json::to_vec(&referrer)?;
    let referrer_digest = sha256_digest(&referrer);
    client
        .push_manifest_raw(&at(&referrer_digest), referrer.clone(), MANIFEST_TYPE.parse()?)
        .await
        .context("pushing the signature")?;
    // The referrers tag: the subject's index of referrers, for registries
    // without the referrers API (the OCI 1.1 fallback), kept with any
    // referrers already listed.
    let tag = Reference::with_tag(
        target.resolve_registry().to_string(),
        target.repository().to_string(),
        subject_digest.replace(':', "-"),
    );
    let mut listed: Vec<serde_json::Value> = match client.pull_manifest_raw(&tag, &auth, &[INDEX_TYPE]).await {
        Ok((body, _)) => serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|index| index["manifests"].as_array().cloned())
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    listed.retain(|entry| entry["digest"] != referrer_digest.as_str());
    listed.push(serde_json::json!({
        "mediaType": MANIFEST_TYPE,
        "artifactType": BUNDLE_TYPE,
        "digest": referrer_digest,
        "size": referrer.len(),
    }));
    let index = serde_json::json!({"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": listed});
    client
        .push_manifest_raw(&tag, serde_json::to_vec(&index)?, INDEX_TYPE.parse()?)
        .await
        .context("listing the signature under the referrers tag")?;
    Ok(bundle_digest)
}

/// Fetches the manifest `digest` of `target`'s repository, its component
/// and its signature into `store`, each checked against its digest and
/// bounded by `max_blob` bytes.
async fn fetch(client: &Client, target: &Reference, digest: &str, store: &Store, max_blob: u64) -> Result<Locked> {
    let auth = RegistryAuth::Anonymous;
    let at = |digest: &str| {
        Reference::with_digest(
            target.resolve_registry().to_string(),
            target.repository().to_string(),
            digest.to_string(),
        )
    };
    let pinned = at(digest);
    let (body, _) = client
        .pull_manifest_raw(&pinned, &auth, &[MANIFEST_TYPE])
        .await
        .with_context(|| format!("fetching the manifest {digest}"))?;
    if sha256_digest(&body) != digest {
        bail!(
            "refused (tampered): the registry sent a manifest with digest {}, not {digest}",
            sha256_digest(&body)
        );
    }
    let manifest: OciImageManifest = serde_json::from_slice(&body).context("the manifest does not parse")?;
    let layer = match manifest.layers.as_slice() {
        [layer] if manifest.config.media_type == WASM_CONFIG_TYPE && layer.media_type == WASM_LAYER_TYPE => layer,
        _ => bail!(
            "oci://{} is not a Wasm component artifact (a {WASM_CONFIG_TYPE} config and one {WASM_LAYER_TYPE} layer)",
            target.whole()
        ),
    };
    if store.get(&layer.digest, Stored::Component)?.is_none() {
        receive(
            client,
            &pinned,
            layer,
            store,
            Stored::Component,
            max_blob,
            "the component layer",
        )
        .await?;
    }
    let referrers = client
        .pull_referrers(&pinned, Some(BUNDLE_TYPE))
        .await
        .context("listing the signatures")?;
    let signature = match referrers.manifests.last() {
        None => None,
        Some(entry) => {
            let (body, _) = client
                .pull_manifest_raw(&at(&entry.digest), &auth, &[MANIFEST_TYPE])
                .await
                .context("fetching the signature's manifest")?;
            if sha256_digest(&body) != entry.digest {
                bail!("refused (tampered): the signature's manifest is not {}", entry.digest);
            }
            let referrer: OciImageManifest = serde_json::from_slice(&body).context("the signature's manifest")?;
            let Some(layer) = referrer.layers.iter().find(|l| l.media_type == BUNDLE_TYPE) else {
                bail!("the signature {} holds no Sigstore bundle", entry.digest);
            };
            receive(client, &pinned, layer, store, Stored::Bundle, max_blob, "the signature").await?;
            Some(layer.digest.clone())
        }
    };
    Ok(Locked {
        manifest: digest.to_string(),
        component: layer.digest.clone(),
        signature,
    })
}

/// Fetches the blob `layer` into `store` as `kind`: refused unread when its
/// manifest declares it larger than `max_blob`; streamed into an exclusive
/// temporary file in the store, hashed as it arrives, cut off past its
/// declared size, and moved into place only when its digest is the one the
/// manifest names. `what` names it in a refusal.
async fn receive(
    client: &Client,
    at: &Reference,
    layer: &OciDescriptor,
    store: &Store,
    kind: Stored,
    max_blob: u64,
    what: &str,
) -> Result<()> {
    let declared = u64::try_from(layer.size).unwrap_or(u64::MAX);
    if declared > max_blob {
        bail!(
            "refused: {what} {} is {declared} bytes by its manifest, more than the {max_blob} bytes pull fetches (--max-size)",
            layer.digest
        );
    }
    let mut arriving = Arriving::into(store, &layer.digest, declared)?;
    let pulled = client.pull_blob(at, layer, &mut arriving).await;
    let tampered = |why: String| {
        anyhow::anyhow!(
            "refused (tampered): {what} {} did not arrive intact: {why}",
            layer.digest
        )
    };
    match pulled {
        Ok(()) => arriving.keep(kind).map_err(|e| tampered(format!("{e:#}"))),
        Err(e) => Err(tampered(e.to_string())),
    }
}

/// The capabilities a stored component asks for, as config words: read from
/// its imports, with nothing compiled and no instance made.
fn asks(store: &Store, component: &str) -> String {
    let file = store.file(component, Stored::Component);
    let imports = std::fs::read(&file)
        .map_err(|e| e.to_string())
        .and_then(|wasm| crate::caps::parsed_imports(&wasm));
    match imports {
        Ok(imports) => {
            let words: Vec<&str> = crate::caps::requested(&imports).iter().map(|c| c.word()).collect();
            let refused: Vec<&str> = imports
                .iter()
                .filter_map(|i| match i {
                    crate::caps::Import::Forbidden(name) => Some(name.as_str()),
                    _ => None,
                })
                .collect();
            if refused.is_empty() {
                format!("[{}]", words.join(", "))
            } else {
                format!("[{}] and {} (never provided)", words.join(", "), refused.join(", "))
            }
        }
        Err(e) => format!("(not a component: {e})"),
    }
}

/// Checks the pulled component `fetched` against every declaration of
/// `config` that names `key` (its `sha256:` pin and `signature:` policy),
/// before anything else is done with it.
fn verify(config: &Config, key: &str, store: &Store, fetched: &Locked) -> Result<()> {
    for (name, decl) in &config.toolsets {
        if !matches!(&decl.source, Source::Registry(reference) if reference == key) {
            continue;
        }
        let file = store.file(&fetched.component, Stored::Component);
        let wasm = store
            .get(&fetched.component, Stored::Component)?
            .with_context(|| format!("{} is missing from the store", file.display()))?;
        let bundle = fetched.signature.as_ref().map(|d| store.file(d, Stored::Bundle));
        crate::provenance::check(name, decl, &file, bundle.as_deref(), &wasm)?;
    }
    Ok(())
}

/// `iota-host pull [--update] [REF...]`: fetches each reference (default:
/// every `oci://` toolset of the config) into the store and records it in
/// the lock at `lock`. A locked reference stays at its digest; a tag that
/// moved is reported, and followed only with `update`, after saying what
/// changed. Returns what it did, in words, and the warnings.
pub fn pull(
    engine: &Engine,
    config: &Config,
    references: &[String],
    update: bool,
    max_blob: u64,
) -> Result<(String, Vec<String>)> {
    let store = Store::of(engine)?;
    let mut lock = Lock::read(&config.lock)?;
    let (mut said, mut warnings) = (String::new(), Vec::new());
    let runtime = runtime()?;
    for reference in references {
        let key = reference.strip_prefix("oci://").unwrap_or(reference).to_string();
        let target = parse(&key)?;
        let client = client_for(&target);
        let auth = RegistryAuth::Anonymous;
        let current = match target.digest() {
            Some(digest) => digest.to_string(),
            None => runtime
                .block_on(client.fetch_manifest_digest(&target, &auth))
                .with_context(|| format!("resolving oci://{key}"))?,
        };
        let locked = lock.entries.get(&key).cloned();
        let wanted = match &locked {
            Some(locked) if locked.manifest != current && !update => {
                warnings.push(format!(
                    "oci://{key}: the tag moved: the registry now has {current}, the lock holds {}; kept the locked one (`iota-host pull --update` shows what changed and follows it)",
                    locked.manifest
                ));
                locked.manifest.clone()
            }
            _ => current.clone(),
        };
        let fetched = runtime
            .block_on(fetch(&client, &target, &wanted, &store, max_blob))
            .with_context(|| format!("oci://{key}"))?;
        verify(config, &key, &store, &fetched)?;
        let signed = match &fetched.signature {
            Some(digest) => format!("signature {digest}"),
            None => "unsigned".to_string(),
        };
        match &locked {
            Some(old) if old.manifest != fetched.manifest => said.push_str(&format!(
                "updated oci://{key}\n  manifest  {} -> {}\n  component {} -> {}\n  asks for  {} (was {})\n  {signed}\n",
                old.manifest,
                fetched.manifest,
                old.component,
                fetched.component,
                asks(&store, &fetched.component),
                asks(&store, &old.component),
            )),
            Some(_) => said.push_str(&format!("oci://{key} is at {} (locked)\n", fetched.manifest)),
            None => said.push_str(&format!(
                "pulled oci://{key}\n  manifest  {}\n  component {}\n  asks for  {}\n  {signed}\n",
                fetched.manifest,
                fetched.component,
                asks(&store, &fetched.component)
            )),
        }
        lock.entries.insert(key, fetched);
    }
    lock.write()?;
    Ok((said, warnings))
}

/// A blob streaming into the store ([`Arriving::into`]): removed unless
/// [`Arriving::keep`] moves it into place.
struct Arriving {
    store: Store,
    digest: String,
    file: std::fs::File,
    tmp: PathBuf,
    hasher: sha2::Sha256,
    written: u64,
    declared: u64,
}

impl Arriving {
    /// Where the blob `digest`, declared `declared` bytes long, arrives in
    /// `store`: an exclusive temporary file there (the store created
    /// private if missing).
    fn into(store: &Store, digest: &str, declared: u64) -> Result<Arriving> {
        let dir = store.dir();
        crate::platform::private_dir_builder()
            .recursive(true)
            .create(dir)
            .with_context(|| format!("cannot create the store {}", dir.display()))?;
        let tmp = dir.join(format!(".arriving-{}.tmp", crate::secret::token()));
        let file =
            crate::host_state::create_exclusive(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
        Ok(Arriving {
            store: store.clone(),
            digest: digest.to_string(),
            file,
            tmp,
            hasher: sha2::Sha256::default(),
            written: 0,
            declared,
        })
    }

    /// Moves the blob into place as `kind` when all of it arrived and its
    /// digest is the one it was fetched as.
    fn keep(mut self, kind: Stored) -> Result<()> {
        use sha2::Digest as _;
        if self.written != self.declared {
            bail!(
                "{} bytes arrived, its manifest declares {}",
                self.written,
                self.declared
            );
        }
        let actual = format!("sha256:{:x}", std::mem::take(&mut self.hasher).finalize());
        if actual != self.digest {
            bail!("the registry sent bytes with digest {actual}");
        }
        self.file.sync_all().context("cannot sync the pulled blob")?;
        let file = self.store.file(&self.digest, kind);
        std::fs::rename(&self.tmp, &file).with_context(|| format!("cannot write {}", file.display()))
    }
}

impl Drop for Arriving {
    fn drop(&mut self) {
        // Kept blobs were renamed away; this removes only what was refused.
        let _ = std::fs::remove_file(&self.tmp);
    }
}

impl tokio::io::AsyncWrite for Arriving {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        bytes: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        use sha2::Digest as _;
        use std::io::Write as _;
        let total = self.written.saturating_add(bytes.len() as u64);
        if total > self.declared {
            return std::task::Poll::Ready(Err(std::io::Error::other(format!(
                "more than the {} bytes its manifest declares",
                self.declared
            ))));
        }
        let this = &mut *self;
        this.file.write_all(bytes)?;
        this.hasher.update(bytes);
        this.written = total;
        std::task::Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// The registry references the config's declarations name, by set name.
pub fn references(config: &Config) -> Vec<(String, String)> {
    config
        .toolsets
        .iter()
        .filter_map(|(name, decl)| match &decl.source {
            Source::Registry(reference) => Some((name.clone(), reference.clone())),
            Source::File(_) => None,
        })
        .collect()
}
