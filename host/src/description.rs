//! What a toolset says of its tools, checked against the host's bounds and
//! parsed once, when the set is loaded.
//!
//! A component's `describe` answer is untrusted and cheap for it to make
//! large: thirty tool specs whose `parameters` all point at one 1 MiB string
//! in its memory cost it 1 MiB, and the host a copy of each (wasmtime lifts
//! every string), then a `serde_json::Value` of each, twenty times the text's
//! size, again at every `tools/list`. So the description is bounded as a
//! whole before anything is parsed ([`MAX_TOOLS`], [`MAX_DESCRIPTION_BYTES`],
//! [`MAX_SCHEMA_DEPTH`]), a set past a bound is refused at load naming it,
//! and each schema is parsed here, once, and shared from then on: listing the
//! tools copies pointers.

use crate::wit::ToolSpec;
use std::sync::Arc;

/// A JSON object: what a tool's arguments schema is.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Tools one set may describe.
pub const MAX_TOOLS: usize = 256;

/// Bytes of names, descriptions and schemas one set's tools may take
/// together (the `code` set's six take 9 KiB).
pub const MAX_DESCRIPTION_BYTES: usize = 1 << 20;

/// How deep a tool's schema may nest (objects and arrays).
pub const MAX_SCHEMA_DEPTH: usize = 32;

/// One tool as the host keeps it: its spec, and its schema parsed.
#[derive(Debug, Clone)]
pub struct Tool {
    /// What the toolset said.
    pub spec: ToolSpec,
    /// `spec.parameters`, parsed once.
    pub schema: Arc<JsonObject>,
}

impl std::ops::Deref for Tool {
    type Target = ToolSpec;

    fn deref(&self) -> &ToolSpec {
        &self.spec
    }
}

/// Tool names the model can call: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `specs` of the set `set` checked and parsed, or why the set is refused.
pub fn check(set: &str, specs: Vec<ToolSpec>) -> Result<Vec<Tool>, String> {
    if specs.len() > MAX_TOOLS {
        return Err(format!(
            "toolset {set:?} describes {} tools, more than the {MAX_TOOLS} a set may have",
            specs.len()
        ));
    }
    let bytes: usize = specs
        .iter()
        .map(|s| s.name.len() + s.description.len() + s.parameters.len())
        .sum();
    if bytes > MAX_DESCRIPTION_BYTES {
        return Err(format!(
            "toolset {set:?} describes its tools in {} KiB, more than the {} KiB a set's description may take",
            bytes.div_ceil(1024),
            MAX_DESCRIPTION_BYTES >> 10
        ));
    }
    specs
        .into_iter()
        .map(|spec| {
            if !valid_tool_name(&spec.name) {
                return Err(format!(
                    "toolset {set:?} declares a tool named {:?}: names must match ^[a-zA-Z0-9_-]{{1,64}}$",
                    spec.name
                ));
            }
            let schema = parse_schema(&spec.parameters)
                .map_err(|why| format!("toolset {set:?}: the parameters of tool {:?} {why}", spec.name))?;
            Ok(Tool {
                spec,
                schema: Arc::new(schema),
            })
        })
        .collect()
}

/// A schema's text parsed: a JSON object nesting at most
/// [`MAX_SCHEMA_DEPTH`] deep. The depth is checked on the text before
/// parsing, so a deep one costs no parse.
fn parse_schema(text: &str) -> Result<JsonObject, String> {
    let depth = nesting(text);
    if depth > MAX_SCHEMA_DEPTH {
        return Err(format!("nest {depth} deep, more than {MAX_SCHEMA_DEPTH}"));
    }
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(schema)) => Ok(schema),
        Ok(_) => Err("are not a JSON object".to_string()),
        Err(e) => Err(format!("are not JSON: {e}")),
    }
}

/// How deep brackets and braces nest in JSON text, strings skipped.
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wit::{ApprovalRule, Presentation};

    fn spec(name: &str, parameters: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "d".into(),
            parameters: parameters.into(),
            approval: ApprovalRule::Never,
            parallel: true,
            presentation: Presentation::Group,
            read_only: true,
        }
    }

    #[test]
    fn a_description_is_parsed_once_and_bounded_as_a_whole() {
        let tools = check("s", vec![spec("a", r#"{"type":"object"}"#)]).unwrap();
        assert_eq!(tools[0].schema["type"], "object");
        assert_eq!(tools[0].name, "a");
        let many: Vec<ToolSpec> = (0..=MAX_TOOLS).map(|i| spec(&format!("t{i}"), "{}")).collect();
        assert!(check("s", many).unwrap_err().contains("257 tools, more than the 256"));
        let big = format!("{{\"description\":\"{}\"}}", "x".repeat(40 << 10));
        let aliased: Vec<ToolSpec> = (0..30).map(|i| spec(&format!("t{i}"), &big)).collect();
        assert!(
            check("s", aliased)
                .unwrap_err()
                .contains("more than the 1024 KiB a set's description may take")
        );
    }

    #[test]
    fn a_schema_must_be_a_shallow_json_object() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let err = check("s", vec![spec("a", &deep)]).unwrap_err();
        assert_eq!(
            err,
            "toolset \"s\": the parameters of tool \"a\" nest 200 deep, more than 32"
        );
        assert!(
            check("s", vec![spec("a", "[1]")])
                .unwrap_err()
                .ends_with("are not a JSON object")
        );
        assert!(check("s", vec![spec("a", "{")]).unwrap_err().contains("are not JSON"));
        let quoted = r#"{"d":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"{{{"}"#;
        assert!(
            check("s", vec![spec("a", quoted)]).is_ok(),
            "brackets in strings do not count"
        );
        assert!(
            check("s", vec![spec("no spaces", "{}")])
                .unwrap_err()
                .contains("names must match")
        );
    }
}
