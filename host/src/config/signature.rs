//! `signature:` in a toolset declaration: the policy's data (who must have
//! signed a component, where its bundle and trusted root are) and its
//! decoding from the file, with exactly one kind of signer. `provenance.rs`
//! verifies components against it.

use anyhow::{Context as _, Result, bail};
use regex::Regex;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// `signature:` in a toolset declaration: who must have signed the file.
#[derive(Debug, Clone)]
pub struct SignaturePolicy {
    /// The signer: a key, or a keyless identity.
    pub signer: Signer,
    /// The Sigstore bundle; `None` means `<path>.sigstore.json`.
    pub bundle: Option<PathBuf>,
    /// A trusted root file; `None` means Sigstore's public-good instance.
    pub trusted_root: Option<PathBuf>,
}

/// Who must have signed a component.
#[derive(Debug, Clone)]
pub enum Signer {
    /// A cosign-compatible public key (PEM `PUBLIC KEY` file).
    Key(PathBuf),
    /// A Fulcio certificate for this identity, issued on this OIDC issuer's word.
    Keyless {
        /// The OIDC issuer, exactly (`https://token.actions.githubusercontent.com`).
        issuer: String,
        /// The certificate's identity (its email or URI).
        identity: Identity,
    },
}

/// How a keyless signer's certificate identity is matched.
#[derive(Debug, Clone)]
pub enum Identity {
    /// Equal to this string.
    Exact(String),
    /// The whole identity matches this pattern (`identity_pattern:`, anchored).
    Pattern(Regex),
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Exact(identity) => write!(f, "{identity}"),
            Identity::Pattern(pattern) => write!(f, "an identity matching {}", pattern.as_str()),
        }
    }
}

impl SignaturePolicy {
    /// The bundle that holds the signature of `component`.
    pub fn bundle_for(&self, component: &Path) -> PathBuf {
        self.bundle.clone().unwrap_or_else(|| {
            let mut name = component.as_os_str().to_owned();
            name.push(".sigstore.json");
            PathBuf::from(name)
        })
    }
}

/// `signature: {key | issuer + identity | issuer + identity_pattern, bundle, trusted_root}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SignatureFile {
    key: Option<String>,
    issuer: Option<String>,
    identity: Option<String>,
    identity_pattern: Option<String>,
    bundle: Option<String>,
    trusted_root: Option<String>,
}

impl SignatureFile {
    /// The policy, with its files against `base`: exactly one kind of signer.
    pub(super) fn checked(self, base: &Path) -> Result<SignaturePolicy> {
        let signer = match (self.key, self.issuer, self.identity, self.identity_pattern) {
            (Some(key), None, None, None) => Signer::Key(base.join(key)),
            (None, Some(issuer), Some(identity), None) => Signer::Keyless {
                issuer,
                identity: Identity::Exact(identity),
            },
            (None, Some(issuer), None, Some(pattern)) => Signer::Keyless {
                issuer,
                identity: Identity::Pattern(
                    regex::Regex::new(&format!("^(?:{pattern})$"))
                        .with_context(|| format!("identity_pattern {pattern:?} is not a regular expression"))?,
                ),
            },
            (Some(_), ..) => {
                bail!("key: names the signer alone; it cannot be combined with issuer, identity or identity_pattern")
            }
            (None, None, None, None) => bail!(
                "name the signer: key: (a cosign public key file), or issuer: with identity: or identity_pattern: (keyless)"
            ),
            (None, None, ..) => {
                bail!("identity: and identity_pattern: need issuer: (the OIDC issuer that vouched for it)")
            }
            (None, Some(_), None, None) => {
                bail!("issuer: needs identity: or identity_pattern: (whose signature is required)")
            }
            (None, Some(_), Some(_), Some(_)) => bail!("identity: and identity_pattern: exclude each other"),
        };
        Ok(SignaturePolicy {
            signer,
            bundle: self.bundle.map(|bundle| base.join(bundle)),
            trusted_root: self.trusted_root.map(|root| base.join(root)),
        })
    }
}
