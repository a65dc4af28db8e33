//! The audit log: one JSON line per call — when, which agent, set and tool,
//! the arguments (values cut at 200 characters; keys that look like secrets
//! redacted), the approval decision, the duration, whether it failed and how
//! much it returned. Enabled by `--audit FILE` or the config's `audit:` key.

use crate::approval::Decision;
use crate::round::Outcome;
use serde_json::{Map, Value};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Argument values are cut past this many characters.
pub const VALUE_CHARS: usize = 200;
/// A key containing any of these (case-insensitive) has its value redacted.
pub const SECRET_WORDS: [&str; 4] = ["key", "token", "secret", "password"];

/// An append-only JSON-lines file.
#[derive(Debug)]
pub struct AuditLog {
    file: Mutex<std::fs::File>,
    agent: String,
}

impl AuditLog {
    /// Opens (creating, appending) the log at `path` for `agent`'s calls.
    pub fn open(path: &Path, agent: &str) -> std::io::Result<AuditLog> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AuditLog {
            file: Mutex::new(file),
            agent: agent.to_string(),
        })
    }

    /// Appends the line for one call.
    pub fn record(&self, outcome: &Outcome, args: &str, duration: Duration) {
        let arguments = serde_json::from_str::<Value>(args).map(sanitize).unwrap_or(Value::Null);
        let approval = match &outcome.decision {
            Decision::NotNeeded => "not needed",
            Decision::SessionAllowed => "allowed for this session",
            Decision::Allowed { for_session: false } => "allowed once",
            Decision::Allowed { for_session: true } => "allowed for this session (asked)",
            Decision::Refused(_) => "refused",
        };
        let line = serde_json::json!({
            "time": rfc3339(SystemTime::now()),
            "agent": self.agent,
            "set": outcome.set,
            "tool": outcome.tool,
            "arguments": arguments,
            "approval": approval,
            "duration_ms": duration.as_secs_f64() * 1000.0,
            "is_error": outcome.result.is_error,
            "output_bytes": outcome.result.text.len(),
        });
        let mut file = self.file.lock().unwrap();
        // An audit line that cannot be written must not fail the call itself.
        let _ = writeln!(file, "{line}");
    }
}

/// Cuts long strings and redacts secret-looking keys, at any depth.
pub fn sanitize(value: Value) -> Value {
    match value {
        Value::String(s) if s.chars().count() > VALUE_CHARS => {
            Value::String(format!("{}…", s.chars().take(VALUE_CHARS).collect::<String>()))
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sanitize).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let lower = k.to_lowercase();
                    let v = if SECRET_WORDS.iter().any(|w| lower.contains(w)) {
                        Value::String("[redacted]".into())
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
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_millis(1_795_988_714_123)),
            "2026-11-29T21:45:14.123Z"
        );
    }
}
