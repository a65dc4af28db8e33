//! Decoding a call's JSON arguments with the spec's error texts.

use serde_json::{Map, Value};

/// The arguments object of one call.
#[derive(Debug, Default)]
pub struct Args {
    map: Map<String, Value>,
}

impl Args {
    /// Parses the arguments text the host passes to `invoke`.
    ///
    /// An empty text or `null` is an empty object; anything but an object is
    /// refused.
    pub fn parse(text: &str) -> Result<Args, String> {
        if text.trim().is_empty() {
            return Ok(Args::default());
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(Args { map }),
            Ok(Value::Null) => Ok(Args::default()),
            Ok(_) => Err("arguments must be a JSON object".to_string()),
            Err(e) => Err(format!("arguments are not valid JSON: {e}")),
        }
    }

    /// The raw value of `name`, when present and not null.
    pub fn raw(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// A required, non-empty string: `missing required argument: NAME`
    /// when it is absent, empty or not a string.
    pub fn required_str(&self, name: &str) -> Result<&str, String> {
        match self.get(name) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s),
            _ => Err(missing(name)),
        }
    }

    /// A required string that may be empty (e.g. `write_file`'s content).
    pub fn required_str_allow_empty(&self, name: &str) -> Result<&str, String> {
        match self.get(name) {
            Some(Value::String(s)) => Ok(s),
            _ => Err(missing(name)),
        }
    }

    /// An optional string; an empty string counts as absent.
    pub fn optional_str(&self, name: &str) -> Result<Option<&str>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(wrong_type(name, "a string", other)),
        }
    }

    /// An optional integer. Integral floats (`3.0`) and numeric strings
    /// (`"3"`) are accepted, since models send both.
    pub fn optional_int(&self, name: &str) -> Result<Option<i64>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Ok(Some(i)),
                (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
                _ => Err(wrong_type(name, "an integer", &Value::Number(n.clone()))),
            },
            Some(Value::String(s)) => match s.trim().parse::<i64>() {
                Ok(i) => Ok(Some(i)),
                Err(_) => Err(wrong_type(name, "an integer", &Value::String(s.clone()))),
            },
            Some(other) => Err(wrong_type(name, "an integer", other)),
        }
    }

    /// An optional boolean; `"true"` and `"false"` strings are accepted.
    pub fn optional_bool(&self, name: &str) -> Result<Option<bool>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(other) => Err(wrong_type(name, "a boolean", other)),
        }
    }
}

/// The spec's text for an absent required argument.
pub fn missing(name: &str) -> String {
    format!("missing required argument: {name}")
}

fn wrong_type(name: &str, expected: &str, got: &Value) -> String {
    let kind = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("argument {name} must be {expected}, got {kind}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_string_refusals_name_the_argument() {
        let args = Args::parse(r#"{"path": "", "n": 3}"#).unwrap();
        assert_eq!(
            args.required_str("path").unwrap_err(),
            "missing required argument: path"
        );
        assert_eq!(args.required_str("n").unwrap_err(), "missing required argument: n");
        assert_eq!(
            args.required_str("nope").unwrap_err(),
            "missing required argument: nope"
        );
    }

    #[test]
    fn integers_accept_what_models_send() {
        let args = Args::parse(r#"{"a": 3, "b": 4.0, "c": "5", "d": "x", "e": 1.5}"#).unwrap();
        assert_eq!(args.optional_int("a").unwrap(), Some(3));
        assert_eq!(args.optional_int("b").unwrap(), Some(4));
        assert_eq!(args.optional_int("c").unwrap(), Some(5));
        assert_eq!(
            args.optional_int("d").unwrap_err(),
            "argument d must be an integer, got a string"
        );
        assert!(args.optional_int("e").is_err());
        assert_eq!(args.optional_int("missing").unwrap(), None);
    }

    #[test]
    fn non_objects_are_refused() {
        assert!(Args::parse("[1]").is_err());
        assert!(Args::parse("{").is_err());
        assert!(Args::parse("").is_ok());
    }
}
