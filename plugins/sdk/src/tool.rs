//! Declaring a tool from its arguments struct.
//!
//! A tool's arguments are a serde struct deriving `schemars::JsonSchema`; its
//! doc comment is the tool's description and its fields' doc comments are the
//! parameters' descriptions, so what the model reads sits next to the code
//! that decodes it:
//!
//! ```
//! use iota_toolset::{ToolSpec, args};
//!
//! /// Count the words of a file under the project root.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct WordCount {
//!     /// The file, relative to the project root.
//!     path: String,
//!     /// Count lines instead. Default false.
//!     #[serde(default)]
//!     lines: bool,
//! }
//!
//! let spec = ToolSpec::reader::<WordCount>("word_count");
//! assert_eq!(spec.description, "Count the words of a file under the project root.");
//! assert_eq!(
//!     spec.parameters,
//!     r#"{"type":"object","properties":{"path":{"type":"string","description":"The file, relative to the project root."},"lines":{"type":"boolean","description":"Count lines instead. Default false.","default":false}},"required":["path"],"additionalProperties":false}"#
//! );
//! let call: WordCount = args::decode(r#"{"path": "README.md"}"#).unwrap();
//! assert!(!call.lines);
//! ```
//!
//! The schema is shaped for what model APIs accept: an object at the root,
//! no `$schema`, `title` or `$ref`, optional arguments as their plain type
//! (not `["string", "null"]`), no numeric `format`s, unknown arguments
//! declared closed.

use crate::{Approval, Presentation, ToolResult, ToolSpec};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

impl ToolSpec {
    /// A tool that only reads: no approval, may run alongside others, shown
    /// grouped with its neighbours.
    pub fn reader<A: JsonSchema>(name: &str) -> ToolSpec {
        let (description, parameters) = describe::<A>();
        ToolSpec {
            name: name.to_string(),
            description,
            parameters,
            approval: Approval::Never,
            parallel: true,
            presentation: Presentation::Group,
            read_only: true,
        }
    }

    /// A tool with effects: runs alone, shown expanded, approval as given.
    pub fn writer<A: JsonSchema>(name: &str, approval: Approval) -> ToolSpec {
        let (description, parameters) = describe::<A>();
        ToolSpec {
            name: name.to_string(),
            description,
            parameters,
            approval,
            parallel: false,
            presentation: Presentation::Expanded,
            read_only: false,
        }
    }
}

/// Decodes a call's arguments text into `A` and runs `body` with them; arguments
/// that do not decode are the call's error result, headed by the tool's name.
pub fn call<A: DeserializeOwned>(tool: &str, args: &str, body: impl FnOnce(A) -> ToolResult) -> ToolResult {
    match crate::args::decode(args) {
        Ok(args) => body(args),
        Err(text) => ToolResult::error(tool, text),
    }
}

/// The tool description (the struct's doc comment) and the JSON Schema text
/// of `A`'s fields.
pub fn describe<A: JsonSchema>() -> (String, String) {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let schema: Schema = generator.into_root_schema_for::<A>();
    let mut root = schema.to_value();
    let description = match root.as_object_mut().and_then(|o| o.remove("description")) {
        Some(Value::String(text)) => unwrap_doc(&text),
        _ => String::new(),
    };
    shape(&mut root);
    if let Value::Object(root) = &mut root {
        root.remove("title");
        root.insert("additionalProperties".into(), Value::Bool(false));
    }
    (description, root.to_string())
}

/// Rustdoc lines joined back into paragraphs: one line break is a space,
/// a blank line a paragraph break.
fn unwrap_doc(doc: &str) -> String {
    doc.split("\n\n")
        .map(|paragraph| paragraph.lines().map(str::trim).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Rewrites a generated schema into the plain form model APIs accept.
fn shape(value: &mut Value) {
    match value {
        Value::Object(object) => {
            shape_object(object);
            object.values_mut().for_each(shape);
        }
        Value::Array(items) => items.iter_mut().for_each(shape),
        _ => {}
    }
}

fn shape_object(object: &mut Map<String, Value>) {
    object.remove("$schema");
    object.remove("title");
    // `["string", "null"]` → `"string"`: optional is said by `required`.
    if let Some(Value::Array(types)) = object.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
        if kept.len() == 1 {
            object.insert("type".into(), kept[0].clone());
        }
    }
    // `int64`, `double`…: formats some model APIs reject, saying nothing a model needs.
    if matches!(object.get("type").and_then(Value::as_str), Some("integer" | "number")) {
        object.remove("format");
    }
    if let Some(Value::String(text)) = object.get("description") {
        let text = unwrap_doc(text);
        object.insert("description".into(), Value::String(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Put a question to the user,
    /// in one line.
    ///
    /// Second paragraph.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Ask {
        /// The questions,
        /// 1-4 of them.
        #[schemars(length(min = 1, max = 4))]
        questions: Vec<Question>,
        /// How many. Default 1.
        count: Option<u32>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Question {
        /// Tab label.
        header: String,
        options: Option<Vec<String>>,
    }

    #[test]
    fn doc_comments_become_descriptions_and_the_schema_is_plain() {
        let (description, parameters) = describe::<Ask>();
        assert_eq!(
            description,
            "Put a question to the user, in one line.\n\nSecond paragraph."
        );
        let schema: Value = serde_json::from_str(&parameters).unwrap();
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "questions": {
                        "type": "array",
                        "description": "The questions, 1-4 of them.",
                        "minItems": 1,
                        "maxItems": 4,
                        "items": {
                            "type": "object",
                            "properties": {
                                "header": {"type": "string", "description": "Tab label."},
                                "options": {"type": "array", "items": {"type": "string"}}
                            },
                            "required": ["header"]
                        }
                    },
                    "count": {"type": "integer", "description": "How many. Default 1.", "minimum": 0}
                },
                "required": ["questions"],
                "additionalProperties": false
            })
        );
    }
}
