//! Toolsets from a real OCI registry: the CNCF distribution registry
//! (Debian's `docker-registry`), started on 127.0.0.1 by the test. Push, pull
//! by tag and by digest, loads offline from the store, a moved tag reported
//! and not followed, `pull --update` saying what changed, a tampered blob
//! refused, and a signature that travels with the component.

use crate::supply_chain::signing::{self, Key};
use crate::support::{self, COMPONENTS, Project};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A registry on 127.0.0.1 keeping its blobs in a temporary directory.
struct Registry {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Registry {
    /// Starts one, or says why it cannot (see [`support::require`]).
    fn start() -> Option<Registry> {
        let binary = iota_host::internals::find_on_path("docker-registry");
        if !support::require("docker-registry (the CNCF distribution registry)", binary.is_some()) {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut registry = Registry {
            dir: tempfile::tempdir().unwrap(),
            port,
            child: None,
        };
        registry.up();
        Some(registry)
    }

    fn up(&mut self) {
        let config = self.dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{}\n",
                self.dir.path().join("data").display(),
                self.port
            ),
        )
        .unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        support::eventually("the registry answers /v2/", || self.answers());
    }

    fn answers(&self) -> bool {
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.write_all(b"GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
        let mut reply = String::new();
        let _ = stream.read_to_string(&mut reply);
        reply.starts_with("HTTP/1.0 200") || reply.starts_with("HTTP/1.1 200")
    }

    /// Stops it: what was pulled must load without it.
    fn down(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `127.0.0.1:PORT`, the registry part of a reference.
    fn reference_base(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Where the registry keeps the blob `digest`.
    fn blob(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// GET `path` on the registry, as JSON.
    fn get(&self, path: &str) -> serde_json::Value {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        let body = reply.split_once("\r\n\r\n").map(|(_, body)| body).unwrap_or("");
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.down();
    }
}

fn out(output: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs and expects success; returns stdout and stderr.
fn ok(p: &Project, args: &[&str]) -> (String, String) {
    let output = p.run(args);
    let (stdout, stderr) = out(&output);
    assert!(output.status.success(), "{args:?}: {stderr}");
    (stdout, stderr)
}

/// Runs and expects the usage failure (2); returns stderr.
fn refused(p: &Project, args: &[&str]) -> String {
    let output = p.run(args);
    let (stdout, stderr) = out(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stdout}{stderr}");
    stderr
}

fn lock(p: &Project) -> serde_yaml::Value {
    serde_yaml::from_str(&std::fs::read_to_string(p.outside().join("iota-host.lock")).unwrap()).unwrap()
}

/// A line of `pull`/`push` output: the digest after `label`.
fn digest_after(text: &str, label: &str) -> String {
    text.lines()
        .find_map(|line| line.trim().strip_prefix(label))
        .map(|rest| rest.trim().split(' ').next().unwrap().to_string())
        .unwrap_or_else(|| panic!("no {label} in {text}"))
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}

/// A signed copy of `component` in `dir`: the file, its bundle beside it.
fn signed(dir: &Path, component: &str, signer: &Key, log: &Key) -> PathBuf {
    let wasm = std::fs::read(format!("{COMPONENTS}/{component}")).unwrap();
    let file = dir.join(component);
    std::fs::write(&file, &wasm).unwrap();
    std::fs::write(
        dir.join(format!("{component}.sigstore.json")),
        signing::bundle(&wasm, signer, log),
    )
    .unwrap();
    file
}

#[test]
fn a_toolset_pushed_to_a_registry_is_pulled_checked_locked_and_loaded_offline() {
    let Some(mut registry) = Registry::start() else {
        return;
    };
    let keys = tempfile::tempdir().unwrap();
    let (signer, log) = (Key::new(), Key::new());
    std::fs::write(keys.path().join("cosign.pub"), signer.public_pem()).unwrap();
    std::fs::write(keys.path().join("root.json"), signing::trusted_root(&log)).unwrap();
    let todo = signed(keys.path(), "todo.wasm", &signer, &log);
    let tag = format!("{}/acme/todo:1.0", registry.reference_base());
    let config = |path: &str| {
        format!(
            "toolsets:\n  todo:\n    path: {path}\n    signature:\n      key: {keys}/cosign.pub\n      trusted_root: {keys}/root.json\nagents:\n  a:\n    tools:\n      todo:\n",
            keys = keys.path().display()
        )
    };
    let p = Project::new()
        .with_private_cache()
        .config(&config(&format!("oci://{tag}")));

    // Push: the Wasm OCI artifact wkg and wash read, and its signature as a referrer.
    let (pushed, _) = ok(&p, &["push", todo.to_str().unwrap(), &tag]);
    let manifest_digest = digest_after(&pushed, "manifest");
    let wasm = std::fs::read(&todo).unwrap();
    assert_eq!(digest_after(&pushed, "component"), sha256(&wasm), "{pushed}");
    let manifest = registry.get(&format!("/v2/acme/todo/manifests/{manifest_digest}"));
    assert_eq!(
        manifest["mediaType"], "application/vnd.oci.image.manifest.v1+json",
        "{manifest}"
    );
    assert_eq!(
        manifest["config"]["mediaType"], "application/vnd.wasm.config.v0+json",
        "{manifest}"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "one layer, the component: {manifest}");
    assert_eq!(layers[0]["mediaType"], "application/wasm");
    assert_eq!(layers[0]["digest"], sha256(&wasm).as_str());
    let referrers = registry.get(&format!(
        "/v2/acme/todo/manifests/{}",
        manifest_digest.replace(':', "-")
    ));
    assert_eq!(
        referrers["manifests"][0]["artifactType"], "application/vnd.dev.sigstore.bundle.v0.3+json",
        "{referrers}"
    );

    // Not pulled yet: refused, saying what to run.
    let text = refused(&p, &["tools"]);
    assert!(
        text.contains(&format!("oci://{tag} has not been pulled: run `iota-host pull`")),
        "{text}"
    );

    // Pull by tag: stored, locked, and it loads with its signature checked.
    let (pulled, _) = ok(&p, &["pull"]);
    assert!(pulled.contains(&format!("pulled oci://{tag}")), "{pulled}");
    let locked = lock(&p);
    assert_eq!(locked[tag.as_str()]["manifest"], manifest_digest.as_str());
    assert_eq!(locked[tag.as_str()]["component"], sha256(&wasm).as_str());
    assert!(locked[tag.as_str()]["signature"].is_string(), "{locked:?}");

    // Offline: the registry is gone, and the load needs nothing from it.
    registry.down();
    let (tools, _) = ok(&p, &["tools"]);
    assert!(tools.contains("todos (todo)"), "{tools}");
    // The store is checked on every load, not only when it was filled.
    let stored = p
        .cache()
        .join("components")
        .join(format!("{}.wasm", sha256(&wasm).replace(':', "-")));
    let mut changed = wasm.clone();
    changed[10] ^= 1;
    std::fs::write(&stored, &changed).unwrap();
    let text = refused(&p, &["tools"]);
    assert!(
        text.contains(&format!("refused (tampered): the stored {}", stored.display())),
        "{text}"
    );
    std::fs::write(&stored, &wasm).unwrap();
    registry.up();

    // Pull by digest.
    let by_digest = format!("{}/acme/todo@{manifest_digest}", registry.reference_base());
    let q = Project::new()
        .with_private_cache()
        .config(&config(&format!("oci://{by_digest}")));
    ok(&q, &["pull"]);
    assert!(ok(&q, &["tools"]).0.contains("todos (todo)"));

    // The tag moves to another component: reported, not followed.
    let other = signed(keys.path(), "hostile.wasm", &signer, &log);
    let (repushed, _) = ok(&p, &["push", other.to_str().unwrap(), &tag]);
    let moved_to = digest_after(&repushed, "manifest");
    assert_ne!(moved_to, manifest_digest);
    let (_, warned) = ok(&p, &["pull"]);
    assert!(
        warned.contains(&format!(
            "oci://{tag}: the tag moved: the registry now has {moved_to}, the lock holds {manifest_digest}; kept the locked one"
        )),
        "{warned}"
    );
    assert_eq!(lock(&p)[tag.as_str()]["manifest"], manifest_digest.as_str());
    assert!(ok(&p, &["tools"]).0.contains("todos (todo)"));

    // `pull --update` follows it, saying what changed and what the new one asks for.
    let (updated, _) = ok(&p, &["pull", "--update"]);
    assert!(
        updated.contains(&format!("manifest  {manifest_digest} -> {moved_to}")),
        "{updated}"
    );
    assert!(
        updated.contains("asks for  [read, session, process, parallel] (was [read])"),
        "{updated}"
    );
    assert_eq!(lock(&p)[tag.as_str()]["manifest"], moved_to.as_str());
    // Which this declaration does not grant: the new version is refused at load.
    let text = refused(&p, &["tools"]);
    assert!(text.contains("which its config does not grant"), "{text}");

    // A tampered blob: the registry serves other bytes under the layer's digest.
    let skills = signed(keys.path(), "skills.wasm", &signer, &log);
    let skills_tag = format!("{}/acme/skills:1.0", registry.reference_base());
    ok(&p, &["push", skills.to_str().unwrap(), &skills_tag]);
    let blob = registry.blob(&sha256(&std::fs::read(&skills).unwrap()));
    let mut bytes = std::fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&blob, &bytes).unwrap();
    let before = std::fs::read_to_string(p.outside().join("iota-host.lock")).unwrap();
    let text = refused(&p, &["pull", &skills_tag]);
    assert!(text.contains("refused (tampered)"), "{text}");
    assert_eq!(
        std::fs::read_to_string(p.outside().join("iota-host.lock")).unwrap(),
        before,
        "the lock is unchanged"
    );
    assert!(
        !p.cache()
            .join("components")
            .join(format!("{}.wasm", sha256(&bytes).replace(':', "-")))
            .exists(),
        "nothing tampered is stored"
    );
}

/// What a [`FakeRegistry`] sends for a blob.
#[derive(Clone)]
enum Blob {
    /// These bytes.
    Bytes(Vec<u8>),
    /// Zeros, for as long as the client reads.
    Endless,
}

/// A registry that serves what a test tells it to, whatever that is: one
/// manifest under every reference, the blobs it is given, no signatures. It
/// records the paths asked for.
struct FakeRegistry {
    port: u16,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl FakeRegistry {
    fn start(manifest: Vec<u8>, blobs: Vec<(String, Blob)>) -> FakeRegistry {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorded = asked.clone();
        let manifest = std::sync::Arc::new(manifest);
        let blobs = std::sync::Arc::new(blobs);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (manifest, blobs, recorded) = (manifest.clone(), blobs.clone(), recorded.clone());
                std::thread::spawn(move || serve_one(stream, &manifest, &blobs, &recorded));
            }
        });
        FakeRegistry { port, asked }
    }

    fn asked_for_blobs(&self) -> usize {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.contains("/blobs/"))
            .count()
    }
}

/// Answers one request on `stream`, then closes it.
fn serve_one(
    mut stream: std::net::TcpStream,
    manifest: &[u8],
    blobs: &[(String, Blob)],
    asked: &std::sync::Mutex<Vec<String>>,
) {
    let mut request = Vec::new();
    let mut byte = [0u8];
    while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
        request.push(byte[0]);
    }
    let request = String::from_utf8_lossy(&request).into_owned();
    let mut words = request.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or("").to_string());
    asked.lock().unwrap().push(path.clone());
    let reply = |stream: &mut std::net::TcpStream, kind: &str, extra: &str, body: &[u8]| {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes());
        if method != "HEAD" {
            let _ = stream.write_all(body);
        }
    };
    let digest = format!("sha256:{}", support::sha256_hex(manifest));
    if path == "/v2/" {
        reply(&mut stream, "application/json", "", b"{}");
    } else if path.contains("/manifests/") {
        let extra = format!("Docker-Content-Digest: {digest}\r\n");
        reply(
            &mut stream,
            "application/vnd.oci.image.manifest.v1+json",
            &extra,
            manifest,
        );
    } else if path.contains("/referrers/") {
        let empty = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
        reply(&mut stream, "application/vnd.oci.image.index.v1+json", "", empty);
    } else if let Some((_, blob)) = blobs.iter().find(|(d, _)| path.ends_with(d.as_str())) {
        match blob {
            Blob::Bytes(bytes) => reply(&mut stream, "application/octet-stream", "", bytes),
            Blob::Endless => {
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                );
                let zeros = vec![0u8; 1 << 16];
                while stream.write_all(&zeros).is_ok() {}
            }
        }
    } else {
        let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    }
}

/// A Wasm OCI artifact's manifest naming a component layer of `digest`,
/// declared `size` bytes long.
fn component_manifest(digest: &str, size: u64) -> Vec<u8> {
    let config = b"{}";
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": format!("sha256:{}", support::sha256_hex(config)), "size": 2},
        "layers": [{"mediaType": "application/wasm", "digest": digest, "size": size}],
    }))
    .unwrap()
}

/// What `pull` does with what a registry sends, before anything of it runs:
/// a blob its manifest declares past the bound is never fetched; one that
/// runs on past its declared size is cut off with bounded memory and
/// nothing left in the store; a component that is not the one the config
/// pins is refused and not locked; and what `pull` reports of the one it
/// keeps (what it asks for) is read from its bytes: nothing is compiled,
/// no instance of it is made.
#[test]
fn a_pull_bounds_and_verifies_what_the_registry_sends_before_anything_runs() {
    let wasm = std::fs::read(format!("{COMPONENTS}/hostile.wasm")).unwrap();
    let digest = format!("sha256:{}", support::sha256_hex(&wasm));
    let store_leftovers = |p: &Project| -> Vec<String> {
        let store = p.cache().join("components");
        std::fs::read_dir(&store)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.ends_with(".wasm") && !n.ends_with(".sigstore.json"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let compiled = |p: &Project| -> usize {
        std::fs::read_dir(p.cache())
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                    .count()
            })
            .unwrap_or(0)
    };

    // Declared past the bound: refused before the blob is asked for.
    let huge = "sha256:".to_string() + &"0".repeat(64);
    let registry = FakeRegistry::start(component_manifest(&huge, 1 << 30), vec![(huge.clone(), Blob::Endless)]);
    let p = Project::new().with_private_cache();
    let reference = format!("127.0.0.1:{}/t:1", registry.port);
    let text = refused(&p, &["pull", &reference]);
    assert!(
        text.contains(&format!("refused: the component layer {huge} is 1073741824 bytes by its manifest, more than the 268435456 bytes pull fetches (--max-size)")),
        "{text}"
    );
    assert_eq!(registry.asked_for_blobs(), 0);

    // Declared 1 MiB, sent without end: cut off, bounded, nothing left.
    let registry = FakeRegistry::start(component_manifest(&huge, 1 << 20), vec![(huge.clone(), Blob::Endless)]);
    let reference = format!("127.0.0.1:{}/t:1", registry.port);
    let run = support::run_measured(p.command().args(["pull", &reference]));
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("did not arrive intact"), "{}", run.stderr);
    assert!(run.peak_mib < 100, "pull held {} MiB of an endless blob", run.peak_mib);
    assert_eq!(registry.asked_for_blobs(), 1);
    assert_eq!(store_leftovers(&p), Vec::<String>::new());

    // The real component, but not the one the config pins: refused, not locked.
    let registry = FakeRegistry::start(
        component_manifest(&digest, wasm.len() as u64),
        vec![(digest.clone(), Blob::Bytes(wasm.clone()))],
    );
    let reference = format!("127.0.0.1:{}/t:1", registry.port);
    let p = p.config(&format!(
        "toolsets:\n  t:\n    path: oci://{reference}\n    sha256: {}\n    grant: [process, parallel]\nagents:\n  a:\n    tools:\n      t:\n",
        "1".repeat(64)
    ));
    let text = refused(&p, &["pull"]);
    assert!(text.contains("but the config pins sha256 1111"), "{text}");
    assert!(
        !p.outside().join("iota-host.lock").exists()
            || !std::fs::read_to_string(p.outside().join("iota-host.lock"))
                .unwrap()
                .contains(&digest)
    );
    assert_eq!(compiled(&p), 0, "nothing was compiled");

    // Pinned right: pulled, locked, and reported from its bytes alone.
    let p = p.config(&format!(
        "toolsets:\n  t:\n    path: oci://{reference}\n    sha256: {}\n    grant: [process, parallel]\nagents:\n  a:\n    tools:\n      t:\n",
        &digest["sha256:".len()..]
    ));
    let (pulled, _) = ok(&p, &["pull"]);
    assert!(
        pulled.contains("asks for  [read, session, process, parallel]"),
        "{pulled}"
    );
    assert_eq!(compiled(&p), 0, "nothing was compiled or run to report it");
    assert_eq!(store_leftovers(&p), Vec::<String>::new());
}
