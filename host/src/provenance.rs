//! Is this the component the config trusts? A third-party toolset's bytes are
//! checked against its declaration's `sha256:` pin and `signature:` policy
//! before anything compiles them, and on the very bytes that get compiled (a
//! file swapped between a check and a read would otherwise slip through).
//!
//! Signatures are Sigstore bundles (what `cosign sign-blob --bundle` writes),
//! verified in process with sigstore-rust's verifier: against a public key
//! (a cosign key pair), or keyless, against the OIDC issuer and certificate
//! identity of the Fulcio certificate (exact, or a pattern). The transparency
//! log evidence is always required; the trusted root is Sigstore's public-good
//! instance, embedded, or a file the config names (a private deployment).
//! Every refusal names the check that failed: `unsigned`, `bad bundle`,
//! `tampered`, `bad signature`, `identity mismatch`, `transparency log`,
//! `certificate`, `timestamp`.

use anyhow::{Result, bail};
use sigstore_trust_root::{SIGSTORE_PRODUCTION_TRUSTED_ROOT, TrustedRoot};
use sigstore_types::{Bundle, DerPublicKey};
use sigstore_verify::{Error as VerifyError, PublicKeyVerificationPolicy, VerificationPolicy, Verifier};
use std::path::Path;

use crate::config::{Identity, SignaturePolicy, Signer, ToolsetDecl};

/// Refuses `wasm` (read from `file`) unless it has the pinned digest and the
/// required signature; `fetched_bundle` is the bundle pulled with a registry
/// component, used where the policy names none. The error is the whole
/// refusal, naming the set.
pub fn check(name: &str, decl: &ToolsetDecl, file: &Path, fetched_bundle: Option<&Path>, wasm: &[u8]) -> Result<()> {
    let path = match &decl.source {
        crate::config::Source::File(path) => path.display().to_string(),
        registry => format!("{registry} (stored as {})", file.display()),
    };
    if let Some(pinned) = &decl.sha256 {
        let actual = crate::engine::sha256_hex(wasm);
        if &actual != pinned {
            bail!(
                "toolset {name:?}: refused: {path} has sha256 {actual}, but the config pins sha256 {pinned}; the file is not the one that was pinned (inspect it again, and update sha256: only if you trust it)"
            );
        }
    }
    if let Some(policy) = &decl.signature {
        let mut policy = policy.clone();
        if policy.bundle.is_none() {
            policy.bundle = fetched_bundle.map(Path::to_path_buf);
        }
        if let Err(Refusal { check, why }) = verify(&policy, file, wasm) {
            bail!("toolset {name:?}: refused ({check}): {why}");
        }
    }
    Ok(())
}

/// A failed signature check: which one, and why in words.
#[derive(Debug)]
pub struct Refusal {
    /// The check's name (`unsigned`, `tampered`, …).
    pub check: &'static str,
    /// What was found.
    pub why: String,
}

fn refusal(check: &'static str, why: String) -> Refusal {
    Refusal { check, why }
}

/// Verifies `wasm`, read from `component`, against `policy`.
pub fn verify(policy: &SignaturePolicy, component: &Path, wasm: &[u8]) -> Result<(), Refusal> {
    let bundle_path = policy.bundle_for(component);
    let shown = bundle_path.display();
    let json = match std::fs::read_to_string(&bundle_path) {
        Ok(json) => json,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(refusal(
                "unsigned",
                format!(
                    "the config requires a signature of {}, but there is no Sigstore bundle at {shown}",
                    component.display()
                ),
            ));
        }
        Err(e) => {
            return Err(refusal(
                "unsigned",
                format!("cannot read the Sigstore bundle {shown}: {e}"),
            ));
        }
    };
    let bundle = Bundle::from_json(&json)
        .map_err(|e| refusal("bad bundle", format!("{shown} is not a Sigstore bundle: {e}")))?;
    let root = trusted_root(policy.trusted_root.as_deref())?;
    let verifier = Verifier::new(&root).map_err(|e| refusal("trusted root", e.to_string()))?;
    let about = format!("the bundle {shown} for {}", component.display());
    match &policy.signer {
        Signer::Key(key_path) => {
            let pem = std::fs::read_to_string(key_path).map_err(|e| {
                refusal(
                    "bad key",
                    format!("cannot read the public key {}: {e}", key_path.display()),
                )
            })?;
            let key = DerPublicKey::from_pem(&pem).map_err(|e| {
                refusal(
                    "bad key",
                    format!("{} is not a PEM public key: {e}", key_path.display()),
                )
            })?;
            verifier
                .verify(wasm, &bundle, &PublicKeyVerificationPolicy::new(key))
                .map_err(|e| named(e, &about, &format!("the key {}", key_path.display())))?;
        }
        Signer::Keyless { issuer, identity } => {
            let wanted = match identity {
                Identity::Exact(exact) => VerificationPolicy::new(exact.as_str(), issuer.as_str()),
                Identity::Pattern(_) => VerificationPolicy::any_identity().require_issuer(issuer.as_str()),
            };
            let signer = format!("{identity} (issuer {issuer})");
            let verified = verifier
                .verify(wasm, &bundle, &wanted)
                .map_err(|e| named(e, &about, &signer))?;
            if let Identity::Pattern(pattern) = identity {
                let actual = verified.identity().map(|id| id.as_str()).unwrap_or("");
                if !pattern.is_match(actual) {
                    return Err(refusal(
                        "identity mismatch",
                        format!("{about} was signed by {actual:?}, but the config requires {signer}"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The trusted root the verifier starts from.
fn trusted_root(file: Option<&Path>) -> Result<TrustedRoot, Refusal> {
    match file {
        None => TrustedRoot::from_json(SIGSTORE_PRODUCTION_TRUSTED_ROOT)
            .map_err(|e| refusal("trusted root", format!("the embedded public-good trusted root: {e}"))),
        Some(file) => {
            let json = std::fs::read_to_string(file)
                .map_err(|e| refusal("trusted root", format!("cannot read {}: {e}", file.display())))?;
            TrustedRoot::from_json(&json).map_err(|e| {
                refusal(
                    "trusted root",
                    format!("{} is not a Sigstore trusted root: {e}", file.display()),
                )
            })
        }
    }
}

/// Names the check a verifier error failed, in the words a user can act on.
fn named(error: VerifyError, about: &str, signer: &str) -> Refusal {
    match error {
        VerifyError::ArtifactMismatch(why) => refusal(
            "tampered",
            format!("{about} was made for other contents: the file changed after it was signed ({why})"),
        ),
        VerifyError::SignatureInvalid(why) => refusal(
            "bad signature",
            format!("{about} does not carry a valid signature by {signer} over these contents ({why})"),
        ),
        error @ (VerifyError::IdentityMismatch { .. } | VerifyError::IssuerMismatch { .. }) => refusal(
            "identity mismatch",
            format!("{about} was not signed by {signer}: {error}"),
        ),
        VerifyError::TransparencyLog(why) => refusal(
            "transparency log",
            format!("{about} has no valid transparency log evidence in the trusted root ({why})"),
        ),
        VerifyError::Certificate(why) => refusal("certificate", format!("{about}: {why}")),
        VerifyError::Timestamp(why) => refusal("timestamp", format!("{about}: {why}")),
        error => refusal("bad bundle", format!("{about}: {error}")),
    }
}

#[cfg(test)]
mod tests {
    //! Real public bundles from sigstore-rust's test data (tests/data/sigstore,
    //! made by cosign against Sigstore's public-good instance), and their
    //! tampered copies, against the embedded trusted root.
    use super::*;
    use regex::Regex;
    use std::path::PathBuf;

    fn data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/sigstore")
            .join(name)
    }

    /// `cosign-v3-blob.txt`, signed keyless through GitHub's OAuth.
    fn keyless(identity: Identity, issuer: &str) -> SignaturePolicy {
        SignaturePolicy {
            signer: Signer::Keyless {
                issuer: issuer.into(),
                identity,
            },
            bundle: Some(data("cosign-v3-blob.sigstore.json")),
            trusted_root: None,
        }
    }

    const GITHUB: &str = "https://github.com/login/oauth";
    const SIGNER: &str = "w.vollprecht@gmail.com";

    fn check_of(result: Result<(), Refusal>) -> &'static str {
        match result {
            Ok(()) => "ok",
            Err(refusal) => refusal.check,
        }
    }

    #[test]
    fn a_keyless_bundle_verifies_for_its_identity_and_issuer_and_for_nothing_else() {
        let blob = data("cosign-v3-blob.txt");
        let bytes = std::fs::read(&blob).unwrap();
        let exact =
            |id: &str, issuer: &str| check_of(verify(&keyless(Identity::Exact(id.into()), issuer), &blob, &bytes));
        let pattern = |p: &str| {
            let anchored = Regex::new(&format!("^(?:{p})$")).unwrap();
            check_of(verify(&keyless(Identity::Pattern(anchored), GITHUB), &blob, &bytes))
        };
        assert_eq!(exact(SIGNER, GITHUB), "ok");
        assert_eq!(pattern(r".*@gmail\.com"), "ok");
        assert_eq!(exact("someone.else@gmail.com", GITHUB), "identity mismatch");
        assert_eq!(exact(SIGNER, "https://accounts.google.com"), "identity mismatch");
        assert_eq!(pattern(r".*@example\.com"), "identity mismatch");
        // Anchored: a pattern matching part of the identity is not enough.
        assert_eq!(pattern("vollprecht"), "identity mismatch");

        let mut tampered = bytes.clone();
        tampered[0] ^= 1;
        assert_eq!(
            check_of(verify(
                &keyless(Identity::Exact(SIGNER.into()), GITHUB),
                &blob,
                &tampered
            )),
            "tampered"
        );
    }

    #[test]
    fn a_keyless_bundle_whose_signature_was_changed_is_refused_by_its_countersignature() {
        let dir = tempfile::tempdir().unwrap();
        let mut bundle: serde_json::Value =
            serde_json::from_slice(&std::fs::read(data("cosign-v3-blob.sigstore.json")).unwrap()).unwrap();
        let signature = bundle["messageSignature"]["signature"].as_str().unwrap().to_string();
        // Another valid base64 string of the same length: one character moved along.
        let mut chars: Vec<char> = signature.chars().collect();
        chars[10] = if chars[10] == 'A' { 'B' } else { 'A' };
        bundle["messageSignature"]["signature"] = chars.into_iter().collect::<String>().into();
        let copy = dir.path().join("changed.sigstore.json");
        std::fs::write(&copy, bundle.to_string()).unwrap();
        let mut policy = keyless(Identity::Exact(SIGNER.into()), GITHUB);
        policy.bundle = Some(copy);
        let blob = data("cosign-v3-blob.txt");
        let refused = verify(&policy, &blob, &std::fs::read(&blob).unwrap()).unwrap_err();
        // The timestamp authority countersigned the signature itself, so a
        // changed signature fails there first.
        assert_eq!(refused.check, "timestamp", "{}", refused.why);
        assert!(
            refused.why.contains("TSA timestamp verification failed"),
            "{}",
            refused.why
        );
    }

    #[test]
    fn a_public_managed_key_bundle_verifies_with_its_key_only() {
        let artifact = data("managed-key-artifact.txt");
        let bytes = std::fs::read(&artifact).unwrap();
        let policy = SignaturePolicy {
            signer: Signer::Key(data("managed-key.pub")),
            bundle: None,
            trusted_root: None,
        };
        assert_eq!(check_of(verify(&policy, &artifact, &bytes)), "ok");
        let mut tampered = bytes.clone();
        tampered[3] ^= 1;
        assert_eq!(check_of(verify(&policy, &artifact, &tampered)), "tampered");

        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.pub");
        std::fs::write(
            &other,
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2G2Y+2tabdTV5BcGiBIx0a9fAFwrkBbmLSGtks4L3qX6yYY0zufBnhC8Ur/iy55GhWP/9A/bY2LhC30M9+RYtw==\n-----END PUBLIC KEY-----\n",
        )
        .unwrap();
        let wrong_key = SignaturePolicy {
            signer: Signer::Key(other),
            ..policy
        };
        assert_eq!(check_of(verify(&wrong_key, &artifact, &bytes)), "bad signature");
    }
}
