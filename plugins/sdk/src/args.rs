//! Decoding a call's JSON arguments into the tool's serde struct, with the
//! spec's error texts.
//!
//! Models send what they send: `"3"` for 3, `4.0` for 4, `"true"` for true,
//! `""` or `null` for "not given". [`decode`] accepts all of that and refuses
//! the rest with texts a model can act on:
//!
//! - a required text argument that is absent, empty or not a string:
//!   `missing required argument: NAME` (the spec's wording for `write_file`'s
//!   content; a field of type [`MaybeEmpty`] may be empty);
//! - any other absent required argument: `missing required argument: NAME`;
//! - a value of the wrong kind: `argument NAME must be an integer, got a string`;
//! - arguments that are not an object: `arguments must be a JSON object`.
//!
//! Unknown arguments are ignored, so a model adding one does not fail a call
//! the tool can serve.

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Decodes the arguments text the host passes to `invoke` into `T`.
///
/// An empty text or `null` is an empty object.
pub fn decode<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let map = if text.trim().is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(Value::Null) => Map::new(),
            Ok(_) => return Err("arguments must be a JSON object".to_string()),
            Err(e) => return Err(format!("arguments are not valid JSON: {e}")),
        }
    };
    T::deserialize(Lenient::new(Value::Object(map), String::new())).map_err(|e| e.text())
}

/// The spec's text for an absent required argument.
pub fn missing(name: &str) -> String {
    format!("missing required argument: {name}")
}

/// A 1-based line number or count, when given: `NAME must be a positive
/// integer, got N` otherwise.
pub fn positive(value: Option<i64>, name: &str) -> Result<Option<usize>, String> {
    match value {
        None => Ok(None),
        Some(n) if n >= 1 => Ok(Some(n as usize)),
        Some(n) => Err(format!("{name} must be a positive integer, got {n}")),
    }
}

/// Text that may be empty, for the few arguments where empty is meaningful
/// (`write_file`'s content, `edit_file`'s strings). Plain `String` fields
/// refuse an empty value as missing.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct MaybeEmpty(pub String);

impl std::ops::Deref for MaybeEmpty {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl schemars::JsonSchema for MaybeEmpty {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MaybeEmpty".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

/// A decoding failure: either already worded, or a type mismatch still to be
/// located at the argument that caused it.
#[derive(Debug)]
pub enum DecodeError {
    /// The model-facing text.
    Worded(String),
    /// serde's own complaint, before the argument's name is known.
    Unlocated(String),
}

impl DecodeError {
    fn text(self) -> String {
        match self {
            DecodeError::Worded(text) => text,
            DecodeError::Unlocated(text) => format!("invalid arguments: {text}"),
        }
    }

    fn at(self, field: &str) -> DecodeError {
        match self {
            DecodeError::Unlocated(text) if !field.is_empty() => {
                DecodeError::Worded(format!("argument {field} is invalid: {text}"))
            }
            other => other,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Worded(text) | DecodeError::Unlocated(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for DecodeError {}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DecodeError::Unlocated(msg.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        DecodeError::Worded(missing(field))
    }
}

/// A JSON value being decoded, with the argument path it sits at (`path`,
/// `questions[0].header`) for messages.
struct Lenient {
    value: Value,
    field: String,
    allow_empty: bool,
    /// Inside an `Option`: a wrong kind is named as such rather than missing.
    optional: bool,
}

impl Lenient {
    fn new(value: Value, field: String) -> Lenient {
        Lenient {
            value,
            field,
            allow_empty: false,
            optional: false,
        }
    }

    fn wrong(&self, expected: &str) -> DecodeError {
        let got = match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        };
        if self.field.is_empty() {
            return DecodeError::Worded(format!("arguments must be {expected}, got {got}"));
        }
        DecodeError::Worded(format!("argument {} must be {expected}, got {got}", self.field))
    }

    /// An integer from a number or a numeric string; integral floats count.
    fn integer(&self) -> Option<Number> {
        match &self.value {
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.clone()),
            Value::Number(n) => n
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| Number::from(f as i64)),
            Value::String(s) => s.trim().parse::<i64>().ok().map(Number::from),
            _ => None,
        }
    }

    fn child(&self, key: &str) -> String {
        if self.field.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.field)
        }
    }
}

macro_rules! integers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
            match self.integer() {
                Some(n) => match n.as_u64() {
                    Some(u) => visitor.visit_u64(u),
                    None => visitor.visit_i64(n.as_i64().unwrap_or_default()),
                }
                .map_err(|e: DecodeError| e.at(&self.field)),
                None => Err(self.wrong("an integer")),
            }
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Lenient {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let (field, parent) = (self.field.clone(), self.child(""));
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (_, Some(i)) => visitor.visit_i64(i),
                _ => visitor.visit_f64(n.as_f64().unwrap_or_default()),
            },
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => visitor.visit_seq(Items {
                items: items.into_iter().enumerate(),
                field: field.clone(),
            }),
            Value::Object(map) => visitor.visit_map(Fields {
                fields: map.into_iter(),
                pending: None,
                parent,
                field: field.clone(),
            }),
        }
        .map_err(|e: DecodeError| e.at(&field))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::String(s) if s == "true" => visitor.visit_bool(true),
            Value::String(s) if s == "false" => visitor.visit_bool(false),
            _ => Err(self.wrong("a boolean")),
        }
    }

    integers!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128);

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Number(n) => visitor.visit_f64(n.as_f64().unwrap_or_default()),
            Value::String(s) => match s.trim().parse::<f64>() {
                Ok(f) => visitor.visit_f64(f),
                Err(_) => Err(self.wrong("a number")),
            },
            _ => Err(self.wrong("a number")),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::String(s) if s.is_empty() && !self.allow_empty => Err(DecodeError::Worded(missing(&self.field))),
            Value::String(s) => visitor.visit_string(s).map_err(|e: DecodeError| e.at(&self.field)),
            _ if !self.optional => Err(DecodeError::Worded(missing(&self.field))),
            _ => Err(self.wrong("a string")),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_string(visitor)
    }

    /// Absent, `null` and `""` all mean "not given".
    fn deserialize_option<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Null => visitor.visit_none(),
            Value::String(s) if s.is_empty() => visitor.visit_none(),
            _ => {
                self.optional = true;
                visitor.visit_some(self)
            }
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.allow_empty = name == "MaybeEmpty";
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::Array(_) => self.deserialize_any(visitor),
            _ => Err(self.wrong("an array")),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::Object(_) => self.deserialize_any(visitor),
            _ => Err(self.wrong("an object")),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self.value {
            Value::String(s) => {
                let unit: de::value::StringDeserializer<DecodeError> = s.clone().into_deserializer();
                visitor.visit_enum(unit).map_err(|_| {
                    DecodeError::Worded(format!(
                        "argument {} must be one of {}, got {s:?}",
                        self.field,
                        variants.join(", ")
                    ))
                })
            }
            _ => Err(self.wrong("a string")),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }
}

/// The elements of an array argument.
struct Items {
    items: std::iter::Enumerate<std::vec::IntoIter<Value>>,
    field: String,
}

impl<'de> SeqAccess<'de> for Items {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, DecodeError> {
        match self.items.next() {
            Some((i, value)) => seed
                .deserialize(Lenient::new(value, format!("{}[{i}]", self.field)))
                .map(Some),
            None => Ok(None),
        }
    }
}

/// The members of an object argument.
struct Fields {
    fields: serde_json::map::IntoIter,
    pending: Option<(String, Value)>,
    /// Prefix of the members' paths (`questions[0].`).
    parent: String,
    field: String,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, DecodeError> {
        // A `null` member is the same as an absent one.
        for (key, value) in self.fields.by_ref() {
            if value.is_null() {
                continue;
            }
            let name: de::value::StrDeserializer<DecodeError> = key.as_str().into_deserializer();
            let decoded = seed.deserialize(name).map_err(|e: DecodeError| e.at(&self.field))?;
            self.pending = Some((key, value));
            return Ok(Some(decoded));
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DecodeError> {
        let (key, value) = self.pending.take().expect("next_value_seed after next_key_seed");
        let field = format!("{}{key}", self.parent);
        seed.deserialize(Lenient::new(value, field.clone()))
            .map_err(|e: DecodeError| e.at(&field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Example {
        path: String,
        content: MaybeEmpty,
        n: Option<i64>,
        flag: Option<bool>,
        #[serde(default)]
        list: Vec<Item>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        label: String,
        size: Option<u32>,
    }

    fn err(text: &str) -> String {
        decode::<Example>(text).unwrap_err()
    }

    #[test]
    fn required_arguments_absent_null_or_empty_are_missing() {
        assert_eq!(err(r#"{"content": ""}"#), "missing required argument: path");
        assert_eq!(
            err(r#"{"path": null, "content": ""}"#),
            "missing required argument: path"
        );
        assert_eq!(err(r#"{"path": "", "content": ""}"#), "missing required argument: path");
        assert_eq!(err(r#"{"path": "a"}"#), "missing required argument: content");
        let ok = decode::<Example>(r#"{"path": "a", "content": ""}"#).unwrap();
        assert_eq!(&*ok.content, "");
    }

    #[test]
    fn wrong_kinds_name_the_argument() {
        assert_eq!(err(r#"{"path": 3, "content": ""}"#), "missing required argument: path");
        assert_eq!(
            err(r#"{"path": "a", "content": 3}"#),
            "missing required argument: content"
        );
        assert_eq!(
            err(r#"{"path": "a", "content": "", "n": "x"}"#),
            "argument n must be an integer, got a string"
        );
        assert_eq!(
            err(r#"{"path": "a", "content": "", "n": 1.5}"#),
            "argument n must be an integer, got a number"
        );
        assert_eq!(
            err(r#"{"path": "a", "content": "", "flag": 1}"#),
            "argument flag must be a boolean, got a number"
        );
        assert_eq!(
            err(r#"{"path": "a", "content": "", "list": [{"label": "x", "size": "big"}]}"#),
            "argument list[0].size must be an integer, got a string"
        );
        assert_eq!(
            err(r#"{"path": "a", "content": "", "list": [{"label": "x", "size": -1}]}"#),
            "argument list[0].size is invalid: invalid value: integer `-1`, expected u32"
        );
    }

    #[test]
    fn what_models_send_is_accepted() {
        let ok = decode::<Example>(r#"{"path": "a", "content": "c", "n": "5", "flag": "true", "extra": 1}"#).unwrap();
        assert_eq!((ok.n, ok.flag), (Some(5), Some(true)));
        let ok = decode::<Example>(r#"{"path": "a", "content": "c", "n": 4.0, "flag": ""}"#).unwrap();
        assert_eq!((ok.n, ok.flag), (Some(4), None));
    }

    #[test]
    fn non_objects_are_refused() {
        assert_eq!(decode::<Example>("[1]").unwrap_err(), "arguments must be a JSON object");
        assert!(
            decode::<Example>("{")
                .unwrap_err()
                .starts_with("arguments are not valid JSON")
        );
        assert_eq!(decode::<Example>("").unwrap_err(), "missing required argument: path");
    }
}
