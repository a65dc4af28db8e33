//! The audit log: one JSON line per call — when, which agent, set and tool,
//! the arguments (secrets redacted, then values cut at 200 characters), the
//! approval decision, the duration, whether it failed and how much it
//! returned. Enabled by `--audit FILE` or the user's config's `audit:` key.
//!
//! Secrets are found two ways: by key (an argument named like `api_key` or
//! `Authorization`) and by value, because a model passes them inside command
//! lines and file contents (`curl -H 'Authorization: Bearer …'`, a `.env`
//! written with `write_file`). The file is the user's alone (0600, never
//! through a link) and never inside the project root, where tools and
//! sandboxed commands could rewrite it.

use regex::Regex;
use serde_json::{Map, Value};
use std::io::Write;
use std::path::Path;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Argument values are cut past this many characters.
pub const VALUE_CHARS: usize = 200;
/// A key containing any of these (case-insensitive) has its value redacted.
pub const SECRET_WORDS: [&str; 10] = [
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "authorization",
    "cookie",
    "credential",
    "private",
    "auth",
];

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Secrets by the shape of their value. Each regex's first group, when it
/// has one, is kept (the name in `password=…`, the `Bearer ` in a header);
/// the rest of the match is replaced.
static SECRET_VALUES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // PEM private keys, to their end line (or the end of the value).
        r"(-----BEGIN [A-Z ]*PRIVATE KEY-----)[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
        // `Authorization: Bearer …`, `token …`.
        r"(?i)(\b(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=-]{8,}",
        // name=value and name: value pairs whose name looks secret (command
        // lines, .env files, JSON and YAML), quoted or not.
        r#"(?i)(\b[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth|credential|cookie)[A-Za-z0-9_.-]*["']?\s*[=:]\s*)(?:(?:bearer|basic)\s+[^\s'"]+|"[^"]*"|'[^']*'|[^\s&;,'"]+)"#,
        // --password VALUE and friends.
        r"(?i)(--?(?:password|passwd|token|secret|api-key|apikey)[= ])\S+",
        // user:password@ in URLs.
        r"(://[^/\s:@]+:)[^/\s@]+@",
        // GitHub, GitLab, Slack tokens.
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|glpat-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,})",
        // OpenAI and Anthropic keys (sk-…, sk-proj-…, sk-ant-…).
        r"\bsk-[A-Za-z0-9_-]{20,}",
        // AWS access key ids.
        r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
        // JSON Web Tokens.
        r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ]
    .iter()
    .map(|pattern| Regex::new(pattern).expect("a valid secret pattern"))
    .collect()
});

/// `text` with every secret-shaped value replaced by [`REDACTED`].
pub fn redact(text: &str) -> String {
    let mut text = text.to_string();
    for pattern in SECRET_VALUES.iter() {
        if pattern.is_match(&text) {
            text = pattern
                .replace_all(&text, |caps: &regex::Captures<'_>| {
                    format!("{}{REDACTED}", caps.get(1).map_or("", |m| m.as_str()))
                })
                .into_owned();
        }
    }
    text
}

/// An append-only JSON-lines file.
#[derive(Debug)]
pub struct AuditLog {
    file: Mutex<std::fs::File>,
    agent: String,
}

impl AuditLog {
    /// Opens (creating, appending) the log at `path` for `agent`'s calls:
    /// private to the user, never through a link, never under `root`.
    pub fn open(path: &Path, agent: &str, root: &Path) -> std::io::Result<AuditLog> {
        let absolute = std::path::absolute(path)?;
        let parent = absolute
            .parent()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()));
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        if parent.is_some_and(|p| p.starts_with(&root)) {
            return Err(std::io::Error::other(format!(
                "it is inside the project root {}, where tools and sandboxed commands could rewrite it; put it outside the project (e.g. ~/.local/state/iota-host/audit.jsonl)",
                root.display()
            )));
        }
        let file =
            crate::platform::open_private_no_follow(std::fs::OpenOptions::new().create(true).append(true), path)?;
        // An existing log others could read becomes private too.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if file.metadata()?.permissions().mode() & 0o077 != 0 {
                file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            }
        }
        Ok(AuditLog {
            file: Mutex::new(file),
            agent: agent.to_string(),
        })
    }

    /// Appends the line for one call.
    pub fn record(&self, call: &Record<'_>) {
        let arguments = call.arguments.cloned().map_or(Value::Null, sanitize);
        let line = serde_json::json!({
            "time": rfc3339(SystemTime::now()),
            "agent": self.agent,
            "set": call.set,
            "tool": call.tool,
            "arguments": arguments,
            "approval": call.approval,
            "duration_ms": call.duration.as_secs_f64() * 1000.0,
            "is_error": call.is_error,
            "output_bytes": call.output_bytes,
        });
        let mut file = self.file.lock().unwrap();
        // An audit line that cannot be written must not fail the call itself.
        let _ = writeln!(file, "{line}");
    }
}

/// What the log says of one call.
#[derive(Debug)]
pub struct Record<'a> {
    /// The set that offers the tool (none for an unknown tool).
    pub set: Option<&'a str>,
    /// The tool called.
    pub tool: &'a str,
    /// The arguments, when they are JSON (redacted here).
    pub arguments: Option<&'a Value>,
    /// How the approval gate decided, in words (`allowed once`).
    pub approval: &'a str,
    /// How long the call took, gate and question included.
    pub duration: Duration,
    /// Whether it failed (or was refused).
    pub is_error: bool,
    /// The length of what the model read.
    pub output_bytes: usize,
}

/// Redacts secret-looking keys and values, then cuts long strings, at any
/// depth.
pub fn sanitize(value: Value) -> Value {
    match value {
        Value::String(s) => {
            let s = redact(&s);
            if s.chars().count() > VALUE_CHARS {
                Value::String(format!("{}…", s.chars().take(VALUE_CHARS).collect::<String>()))
            } else {
                Value::String(s)
            }
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sanitize).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let lower = k.to_lowercase();
                    let v = if SECRET_WORDS.iter().any(|w| lower.contains(w)) {
                        Value::String(REDACTED.into())
                    } else {
                        sanitize(v)
                    };
                    (k, v)
                })
                .collect::<Map<String, Value>>(),
        ),
        other => other,
    }
}

/// `2026-11-29T21:45:14.123Z`.
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_long_values_cut() {
        let v = sanitize(
            serde_json::json!({"path": "a", "api_key": "s3cr3t", "nested": {"Password": "x", "n": 1}, "content": "y".repeat(300)}),
        );
        assert_eq!(v["api_key"], "[redacted]");
        assert_eq!(v["nested"]["Password"], "[redacted]");
        assert_eq!(v["nested"]["n"], 1);
        assert_eq!(v["content"].as_str().unwrap().chars().count(), 201);
        assert_eq!(v["path"], "a");
    }

    #[test]
    fn secret_values_are_redacted_wherever_they_stand() {
        let cases = [
            (
                "git push https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x",
                "ghp_",
            ),
            (
                "GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "github_pat_11",
            ),
            (
                "curl -H 'PRIVATE-TOKEN: glpat-abcdefghij0123456789'",
                "glpat-abcdefghij",
            ),
            ("SLACK=xoxb-1234567890-abcdefghij", "xoxb-1234567890"),
            (
                "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx",
                "sk-proj-abcdef",
            ),
            ("key sk-ant-api03-abcdefghijklmnopqrstuvwx", "sk-ant-api03-abc"),
            (
                "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE",
                "AKIAIOSFODNN7EXAMPLE",
            ),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "wJalrXUtnFEMI",
            ),
            ("curl -H 'Authorization: Bearer abc.def-ghi_jkl'", "abc.def-ghi_jkl"),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "eyJhbGci",
            ),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
                "MIIEpAIBAAKCAQEA",
            ),
            ("DB_PASSWORD=hunter2\nDEBUG=1", "hunter2"),
            ("mysql --password=hunter2 -u root", "hunter2"),
            ("psql postgres://admin:hunter2@db/app", "hunter2"),
            (r#"{"passwd": "hunter2"}"#, "hunter2"),
            ("credentials: hunter2", "hunter2"),
        ];
        for (text, secret) in cases {
            let redacted = redact(text);
            assert!(!redacted.contains(secret), "{text:?} -> {redacted:?}");
            assert!(redacted.contains(REDACTED), "{text:?} -> {redacted:?}");
        }
        assert!(redact("DEBUG=1").contains("DEBUG=1"));
        assert_eq!(redact("ls -la src"), "ls -la src");
        assert_eq!(
            redact("mysql --password=hunter2 -u root"),
            "mysql --password=[redacted] -u root"
        );
        // By key, too, at any depth.
        let v = sanitize(
            serde_json::json!({"headers": {"Authorization": "x", "Cookie": "y"}, "credentials": "z", "private": "w"}),
        );
        assert_eq!(v["headers"]["Authorization"], REDACTED);
        assert_eq!(v["headers"]["Cookie"], REDACTED);
        assert_eq!(v["credentials"], REDACTED);
        assert_eq!(v["private"], REDACTED);
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_millis(1_795_988_714_123)),
            "2026-11-29T21:45:14.123Z"
        );
    }
}
