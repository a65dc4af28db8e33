//! The environment of a sandboxed command: the host's, minus what looks like
//! a secret.
//!
//! The sandbox keeps a command's writes in, but anything in its environment
//! goes wherever the command sends it (a file in the project, another tool's
//! output, the network when `network: true`). So API keys, tokens and agent
//! sockets stay out unless `tools.shell.env.pass` names them; `env.set`
//! gives fixed values. Codex CLI drops the same name patterns by default.
//! Unsandboxed runs (approved, or the iota exception, whose child agent needs
//! its API key) keep the whole environment: they run as the user anyway.

use std::ffi::OsString;

/// `tools.shell.env`: what crosses into the sandbox beside the safe variables.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EnvPolicy {
    /// Variables passed through even though their names look secret.
    pub pass: Vec<String>,
    /// Variables set to these values (after the rest).
    pub set: Vec<(String, String)>,
}

/// Substrings of names that look secret (compared in upper case).
const SECRET_PARTS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASS",
    "CREDENTIAL",
    "PRIVATE",
    "COOKIE",
    "AUTH",
    "SESSION",
    "JWT",
    "DSN",
    "WEBHOOK",
    "_PAT",
    "_PW",
];

/// Prefixes of names that belong to a cloud provider's credentials.
const SECRET_PREFIXES: &[&str] = &["AWS_", "AZURE_", "GOOGLE_", "GCP_", "OPENAI_", "ANTHROPIC_"];

/// Whole names that give access without looking like it.
const SECRET_NAMES: &[&str] = &[
    "GPG_AGENT_INFO",
    "SSH_AGENT_PID",
    "MYSQL_PWD",
    "PGPASS",
    "KUBECONFIG",
    "DOCKER_HOST",
];

/// Whether a variable of this name stays out of the sandbox by default.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    // GIT_AUTHOR_NAME is no secret, whatever "AUTH" says; AUTHORIZATION is.
    let unauthored = upper.replace("AUTHORIZATION", "AUTH").replace("AUTHOR", "");
    SECRET_PARTS.iter().any(|part| unauthored.contains(part))
        || SECRET_PREFIXES.iter().any(|prefix| upper.starts_with(prefix))
        || SECRET_NAMES.contains(&upper.as_str())
        || upper.starts_with("IOTA_")
}

/// Whether a value carries credentials whatever its name: a URL with user
/// information in it (`postgres://app:pw@db`, `https://ghp_…@github.com`), or
/// a secret-named query parameter (`?password=…`).
pub fn holds_secret(value: &std::ffi::OsStr) -> bool {
    let value = value.to_string_lossy();
    let userinfo = value.split("://").skip(1).any(|rest| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        authority.contains('@')
    });
    let lower = value.to_ascii_lowercase();
    let query = ["password=", "passwd=", "pwd=", "token=", "secret=", "key="]
        .iter()
        .any(|p| lower.contains(&format!("?{p}")) || lower.contains(&format!("&{p}")));
    userinfo || query
}

impl EnvPolicy {
    /// The environment a sandboxed command gets from `host` (the host
    /// process's variables), with `TMPDIR` pointing at the sandbox's /tmp.
    pub fn sandboxed(&self, host: impl Iterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = host
            .filter(|(name, value)| {
                let name = name.to_string_lossy();
                !(looks_secret(&name) || holds_secret(value)) || self.pass.iter().any(|p| *p == name)
            })
            .filter(|(name, _)| name != "TMPDIR")
            .collect();
        env.push(("TMPDIR".into(), "/tmp".into()));
        for (name, value) in &self.set {
            env.retain(|(n, _)| n != name.as_str());
            env.push((name.into(), value.into()));
        }
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_names_stay_out_unless_passed() {
        for secret in [
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_PROFILE",
            "GITHUB_TOKEN",
            "SSH_AUTH_SOCK",
            "GPG_AGENT_INFO",
            "PGPASSWORD",
            "DB_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "npm_config__authToken",
            "IOTA_SHELL_RUN",
            "HTTP_AUTHORIZATION",
            "DB_PASS",
            "GH_PAT",
            "CI_JOB_JWT",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
        ] {
            assert!(looks_secret(secret), "{secret}");
        }
        for plain in [
            "PATH",
            "HOME",
            "LANG",
            "TERM",
            "USER",
            "PWD",
            "CARGO_HOME",
            "EDITOR",
            "GIT_AUTHOR_NAME",
        ] {
            assert!(!looks_secret(plain), "{plain}");
        }
        assert!(holds_secret("postgres://app:hunter2@db:5432/app".as_ref()));
        assert!(holds_secret("http://user:pw@proxy:3128".as_ref()));
        assert!(!holds_secret("https://example.com/a@b".as_ref()));
        assert!(holds_secret("https://ghp_abc123@github.com/x".as_ref()));
        assert!(holds_secret("postgres://db/app?password=pw123".as_ref()));
        assert!(looks_secret("DB_PW"));
        assert!(!holds_secret("/usr/bin:/bin".as_ref()));
        let policy = EnvPolicy {
            pass: vec!["GITHUB_TOKEN".into()],
            set: vec![("FOO".into(), "bar".into()), ("PATH".into(), "/bin".into())],
        };
        let host = [
            ("PATH", "/usr/bin"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("OPENAI_API_KEY", "sk-x"),
            ("TMPDIR", "/var/tmp"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = policy.sandboxed(host.into_iter());
        let find = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.to_str().unwrap());
        assert_eq!(find("GITHUB_TOKEN"), Some("ghp_x"));
        assert_eq!(find("OPENAI_API_KEY"), None);
        assert_eq!(find("TMPDIR"), Some("/tmp"));
        assert_eq!(find("FOO"), Some("bar"));
        assert_eq!(find("PATH"), Some("/bin"));
    }
}
