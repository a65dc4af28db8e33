//! Third-party toolsets a user can trust: a `sha256:` pin refuses any other
//! bytes, and `inspect --policy` prints the least-privilege declaration that
//! loads the component with exactly what it asks for.

use crate::support;

use support::{COMPONENTS, Project};

/// `inspect --policy FILE`'s declaration, checked to be YAML.
fn policy(p: &Project, wasm: &str) -> String {
    let out = p.run(&["inspect", wasm, "--policy"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    serde_yaml::from_str::<serde_yaml::Value>(&text).expect("the policy is YAML");
    text
}

/// The printed declaration plus an agent that enables `set`.
fn config_with(policy: &str, set: &str) -> String {
    format!("{policy}agents:\n  a:\n    tools:\n      {set}:\n")
}

#[test]
fn inspect_policy_declares_what_loads_and_nothing_more() {
    for (file, set, tool, grants) in [
        ("todo.wasm", "todo", "todos", &[][..]),
        ("hostile.wasm", "hostile", "spin", &["process", "parallel"][..]),
    ] {
        policy_loads_exactly(&format!("{COMPONENTS}/{file}"), set, tool, grants);
    }
    // The Python example: tests/limits.rs builds it and checks the same.
}

/// `inspect --policy` of the component at `wasm` declares set `set` with its
/// absolute path, its digest and exactly `grants`; that declaration loads
/// it (listing `tool`) with no warning, and without any one grant it is
/// refused.
pub fn policy_loads_exactly(wasm: &str, set: &str, tool: &str, grants: &[&str]) {
    let printed = policy(&Project::new(), wasm);
    let doc: serde_yaml::Value = serde_yaml::from_str(&printed).unwrap();
    let decl = &doc["toolsets"][set];
    let canonical = std::fs::canonicalize(wasm).unwrap();
    assert_eq!(decl["path"].as_str(), canonical.to_str(), "{printed}");
    let digest = support::inspect(&Project::new(), wasm)["sha256"].clone();
    assert_eq!(decl["sha256"].as_str(), digest.as_str(), "{printed}");
    let granted: Vec<&str> = decl["grant"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|g| g.as_str())
        .collect();
    assert_eq!(granted, grants, "{printed}");

    // Exactly that loads: the tools are listed, with no warning.
    let p = Project::new().config(&config_with(&printed, set));
    let out = p.run(&["tools"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(&format!("{tool} ({set})")), "{stdout}");
    assert!(stderr.is_empty(), "{stderr}");
    let inspected = support::inspect(&p, wasm);
    assert_eq!(inspected["config"]["missing"], serde_json::json!([]), "{inspected}");

    // And nothing less: without any one of its grants it is refused.
    for dropped in grants {
        let narrowed = printed.replace(&format!("    - {dropped}\n"), "");
        assert_ne!(narrowed, printed, "the grant {dropped} was not found in {printed}");
        let out = Project::new().config(&config_with(&narrowed, set)).run(&["tools"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "without {dropped}: {stderr}");
        assert!(stderr.contains("which its config does not grant"), "{stderr}");
    }
}

#[test]
fn inspect_policy_refuses_what_is_not_a_toolset() {
    let p = Project::new();
    let not_wasm = p.write("notes.wasm", "not a component");
    let out = p.run(&["inspect", not_wasm.to_str().unwrap(), "--policy"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_pinned_component_with_other_bytes_is_refused_naming_both_digests() {
    let dir = tempfile::tempdir().unwrap();
    let installed = dir.path().join("todo.wasm");
    std::fs::copy(format!("{COMPONENTS}/todo.wasm"), &installed).unwrap();
    let printed = policy(&Project::new(), installed.to_str().unwrap());
    let p = Project::new().config(&config_with(&printed, "todo"));
    assert!(p.run(&["tools"]).status.success());
    let pinned = support::inspect(&p, installed.to_str().unwrap())["sha256"]
        .as_str()
        .unwrap()
        .to_string();

    // Swapped for another valid component (one that asks for no more than
    // the declaration grants would still be refused: the pin is the check).
    std::fs::copy(format!("{COMPONENTS}/skills.wasm"), &installed).unwrap();
    let actual = support::inspect(&p, installed.to_str().unwrap())["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let out = p.run(&["call", "list_dir", "{}"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "iota-host: toolset \"todo\": refused: {} has sha256 {actual}, but the config pins sha256 {pinned}; the file is not the one that was pinned (inspect it again, and update sha256: only if you trust it)",
            installed.display()
        )
    );
    assert!(out.stdout.is_empty(), "nothing ran");

    // One byte changed is as foreign as a whole other file.
    let mut bytes = std::fs::read(format!("{COMPONENTS}/todo.wasm")).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&installed, &bytes).unwrap();
    let out = p.run(&["tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("but the config pins sha256 {pinned}")));
}

#[test]
fn a_pin_that_is_not_a_sha256_digest_is_a_config_error() {
    for bad in ["abc", "sha256:zz", "md5:0123"] {
        let p = Project::new().config(&format!(
            "toolsets:\n  todo:\n    path: {COMPONENTS}/todo.wasm\n    sha256: \"{bad}\"\nagents:\n  a:\n    tools:\n      todo:\n"
        ));
        let out = p.run(&["tools"]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "sha256 must be 64 hexadecimal digits (as `iota-host inspect` prints), got {bad:?}"
            )),
            "{stderr}"
        );
    }
    // The digest as registries print it (`sha256:` and capitals) is accepted.
    let digest = support::inspect(&Project::new(), &format!("{COMPONENTS}/todo.wasm"))["sha256"]
        .as_str()
        .unwrap()
        .to_uppercase();
    let p = Project::new().config(&format!(
        "toolsets:\n  todo:\n    path: {COMPONENTS}/todo.wasm\n    sha256: \"sha256:{digest}\"\nagents:\n  a:\n    tools:\n      todo:\n"
    ));
    let out = p.run(&["tools"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Signs like `cosign sign-blob --key … --bundle`, with keys the test makes
/// and a transparency log of its own: the log's key goes into a trusted root
/// the config names, so nothing here depends on the public Sigstore services.
pub mod signing {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as B64;
    use sha2::{Digest as _, Sha256};
    use sigstore_crypto::KeyPair;

    /// A signer or a transparency log: a generated ECDSA P-256 key.
    pub struct Key(KeyPair);

    impl Key {
        pub fn new() -> Key {
            Key(KeyPair::generate_ecdsa_p256().unwrap())
        }

        pub fn public_pem(&self) -> String {
            self.0.public_key_der().unwrap().to_pem()
        }

        fn spki(&self) -> Vec<u8> {
            self.0.public_key_der().unwrap().as_bytes().to_vec()
        }

        fn sign(&self, data: &[u8]) -> Vec<u8> {
            self.0.sign(data).unwrap().as_bytes().to_vec()
        }
    }

    /// A Sigstore trusted root whose only transparency log is `log`.
    pub fn trusted_root(log: &Key) -> String {
        let key_id = B64.encode(Sha256::digest(log.spki()));
        format!(
            r#"{{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1","tlogs":[{{"baseUrl":"https://log.invalid","hashAlgorithm":"SHA2_256","publicKey":{{"rawBytes":"{}","keyDetails":"PKIX_ECDSA_P256_SHA_256","validFor":{{"start":"2020-01-01T00:00:00Z"}}}},"logId":{{"keyId":"{key_id}"}}}}],"certificateAuthorities":[],"ctlogs":[],"timestampAuthorities":[]}}"#,
            B64.encode(log.spki())
        )
    }

    /// The bundle of `signer`'s signature over `artifact`, with the
    /// hashedrekord entry `log` promises to have logged (its signed entry
    /// timestamp).
    pub fn bundle(artifact: &[u8], signer: &Key, log: &Key) -> String {
        let digest = Sha256::digest(artifact);
        let signature = B64.encode(signer.sign(artifact));
        let body = format!(
            r#"{{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{{"data":{{"hash":{{"algorithm":"sha256","value":"{}"}}}},"signature":{{"content":"{signature}","publicKey":{{"content":"{}"}}}}}}}}"#,
            hex(&digest),
            B64.encode(signer.public_pem())
        );
        let body = B64.encode(body);
        let log_id = Sha256::digest(log.spki());
        let integrated = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            - 60;
        // The signed entry timestamp covers this payload, in canonical JSON.
        let payload = format!(
            r#"{{"body":"{body}","integratedTime":{integrated},"logID":"{}","logIndex":7}}"#,
            hex(&log_id)
        );
        let promise = B64.encode(log.sign(payload.as_bytes()));
        format!(
            r#"{{"mediaType":"application/vnd.dev.sigstore.bundle+json;version=0.1","verificationMaterial":{{"publicKey":{{"hint":""}},"tlogEntries":[{{"logIndex":"7","logId":{{"keyId":"{}"}},"kindVersion":{{"kind":"hashedrekord","version":"0.0.1"}},"integratedTime":"{integrated}","inclusionPromise":{{"signedEntryTimestamp":"{promise}"}},"canonicalizedBody":"{body}"}}]}},"messageSignature":{{"messageDigest":{{"algorithm":"SHA2_256","digest":"{}"}},"signature":"{signature}"}}}}"#,
            B64.encode(log_id),
            B64.encode(digest)
        )
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[test]
fn a_component_signed_with_the_required_key_loads_and_each_failed_check_is_named() {
    use signing::Key;
    let dir = tempfile::tempdir().unwrap();
    let installed = dir.path().join("todo.wasm");
    let bundle = dir.path().join("todo.wasm.sigstore.json");
    let wasm = std::fs::read(format!("{COMPONENTS}/todo.wasm")).unwrap();
    std::fs::write(&installed, &wasm).unwrap();
    let (signer, log) = (Key::new(), Key::new());
    std::fs::write(dir.path().join("cosign.pub"), signer.public_pem()).unwrap();
    std::fs::write(dir.path().join("root.json"), signing::trusted_root(&log)).unwrap();
    let p = Project::new().config(&format!(
        "toolsets:\n  todo:\n    path: {}\n    signature:\n      key: {}/cosign.pub\n      trusted_root: {}/root.json\nagents:\n  a:\n    tools:\n      todo:\n",
        installed.display(),
        dir.path().display(),
        dir.path().display()
    ));
    let refusal = |p: &Project| {
        let out = p.run(&["tools"]);
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
        assert!(out.stdout.is_empty(), "nothing was listed");
        String::from_utf8_lossy(&out.stderr).trim_end().to_string()
    };

    // Unsigned: no bundle beside the file.
    assert_eq!(
        refusal(&p),
        format!(
            "iota-host: toolset \"todo\": refused (unsigned): the config requires a signature of {}, but there is no Sigstore bundle at {}",
            installed.display(),
            bundle.display()
        )
    );

    // Signed by the key, logged by the trusted log: it loads.
    std::fs::write(&bundle, signing::bundle(&wasm, &signer, &log)).unwrap();
    let out = p.run(&["tools"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("todos (todo)"));

    // Tampered: one byte of the component changed after it was signed.
    let mut changed = wasm.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    std::fs::write(&installed, &changed).unwrap();
    let text = refusal(&p);
    assert!(
        text.starts_with("iota-host: toolset \"todo\": refused (tampered): "),
        "{text}"
    );
    assert!(text.contains("the file changed after it was signed"), "{text}");
    std::fs::write(&installed, &wasm).unwrap();

    // A bad signature: made by another key, though logged by the trusted log.
    std::fs::write(&bundle, signing::bundle(&wasm, &Key::new(), &log)).unwrap();
    let text = refusal(&p);
    assert!(
        text.starts_with("iota-host: toolset \"todo\": refused (bad signature): "),
        "{text}"
    );

    // Right key, but the log that vouches for it is not in the trusted root.
    std::fs::write(&bundle, signing::bundle(&wasm, &signer, &Key::new())).unwrap();
    let text = refusal(&p);
    assert!(
        text.starts_with("iota-host: toolset \"todo\": refused (transparency log): "),
        "{text}"
    );

    // Not a bundle at all.
    std::fs::write(&bundle, "{\"signed\": true}").unwrap();
    let text = refusal(&p);
    assert!(
        text.starts_with("iota-host: toolset \"todo\": refused (bad bundle): "),
        "{text}"
    );

    // And back to a good bundle, to show the refusals above were the checks.
    std::fs::write(&bundle, signing::bundle(&wasm, &signer, &log)).unwrap();
    assert!(p.run(&["tools"]).status.success());
}

#[test]
fn a_signature_policy_names_exactly_one_signer() {
    for (signature, error) in [
        ("{}", "name the signer: key:"),
        (
            "{key: k.pub, issuer: https://accounts.google.com}",
            "key: names the signer alone",
        ),
        (
            "{identity: me@example.com}",
            "identity: and identity_pattern: need issuer:",
        ),
        (
            "{issuer: https://accounts.google.com}",
            "issuer: needs identity: or identity_pattern:",
        ),
        (
            "{issuer: i, identity: a, identity_pattern: b}",
            "identity: and identity_pattern: exclude each other",
        ),
        (
            "{issuer: i, identity_pattern: \"(\"}",
            "identity_pattern \"(\" is not a regular expression",
        ),
        ("{key: k.pub, cosign: true}", "unknown field `cosign`"),
    ] {
        let p = Project::new().config(&format!(
            "toolsets:\n  todo:\n    path: {COMPONENTS}/todo.wasm\n    signature: {signature}\nagents:\n  a:\n    tools:\n      todo:\n"
        ));
        let out = p.run(&["tools"]);
        assert_eq!(out.status.code(), Some(2), "{signature}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(error), "{signature}: {stderr}");
    }
}
