//! Helpers for decoding a toolset's configuration value.

use serde::{Deserialize, Deserializer};

/// YAML 1.1 spellings of false: the spec's "false, no, off" in every case
/// YAML 1.1 allows.
pub const YAML11_FALSE: &[&str] = &[
    "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
];
/// YAML 1.1 spellings of true.
pub const YAML11_TRUE: &[&str] = &["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"];

/// Decodes a boolean written in YAML 1.1 (`yes`, `off`, …) or as a real one.
///
/// Config files are YAML and users write `auto_write: yes`; the YAML 1.2
/// parser reads that as a string, so boolean keys accept both.
pub fn yaml11_bool<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Loose {
        Bool(bool),
        Text(String),
        Null(()),
    }
    match Loose::deserialize(deserializer)? {
        Loose::Bool(b) => Ok(b),
        Loose::Null(()) => Ok(false),
        Loose::Text(s) if YAML11_TRUE.contains(&s.as_str()) => Ok(true),
        Loose::Text(s) if YAML11_FALSE.contains(&s.as_str()) => Ok(false),
        Loose::Text(s) => Err(serde::de::Error::custom(format!(
            "invalid value: string {s:?}, expected a boolean"
        ))),
    }
}

/// Decodes a toolset's JSON configuration into `T`. `null` (the key present
/// with no value) is `T::default()`; anything but a mapping, or a mapping that
/// does not decode, is `config must be a mapping (<keys>): <decode error>`.
pub fn decode<T>(config: &str, keys: &str) -> Result<T, String>
where
    T: Default + for<'de> Deserialize<'de>,
{
    let value: serde_json::Value =
        serde_json::from_str(config).map_err(|e| format!("config must be a mapping ({keys}): {e}"))?;
    match value {
        serde_json::Value::Null => Ok(T::default()),
        serde_json::Value::Object(_) => {
            serde_json::from_value(value).map_err(|e| format!("config must be a mapping ({keys}): {e}"))
        }
        other => Err(format!(
            "config must be a mapping ({keys}): invalid type: {}, expected a mapping",
            describe_json(&other)
        )),
    }
}

fn describe_json(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Bool(b) => format!("boolean `{b}`"),
        serde_json::Value::Number(n) => format!("number `{n}`"),
        serde_json::Value::String(s) => format!("string {s:?}"),
        serde_json::Value::Array(_) => "sequence".into(),
        serde_json::Value::Object(_) => "map".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Sample {
        #[serde(deserialize_with = "yaml11_bool")]
        flag: bool,
    }

    #[test]
    fn decodes_yaml11_booleans_and_refuses_the_rest() {
        assert_eq!(decode::<Sample>("null", "flag").unwrap(), Sample { flag: false });
        assert_eq!(
            decode::<Sample>(r#"{"flag": "yes"}"#, "flag").unwrap(),
            Sample { flag: true }
        );
        assert_eq!(
            decode::<Sample>(r#"{"flag": true}"#, "flag").unwrap(),
            Sample { flag: true }
        );
        assert_eq!(
            decode::<Sample>("5", "flag").unwrap_err(),
            "config must be a mapping (flag): invalid type: number `5`, expected a mapping"
        );
        assert!(
            decode::<Sample>(r#"{"flag": "maybe"}"#, "flag")
                .unwrap_err()
                .starts_with("config must be a mapping (flag): ")
        );
        assert!(
            decode::<Sample>(r#"{"other": 1}"#, "flag")
                .unwrap_err()
                .contains("unknown field")
        );
    }
}
