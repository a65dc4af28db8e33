//! confirm — a single yes/no.
//!
//! Spec: question (the complete yes/no question, one line; blank: `confirm:
//! question is required`), yes_label (Yes), no_label (No). The result is `The
//! user chose: <label>`, or `The user declined to answer.` on Esc.

use schemars::JsonSchema;
use serde_json::Value;

/// The tool's name.
pub const NAME: &str = "confirm";
// The schema only: the arguments are validated by `parse`, with the spec's own refusal text
// (the doc comment below is the tool's description).
/// Ask the user a single yes/no question on an interactive selector; the answer comes back as this
/// tool's result and your turn continues. Use choose for anything with more than two options.
#[derive(JsonSchema)]
pub struct Args {
    /// The complete yes/no question, one line.
    pub question: String,
    /// Label of the affirmative choice. Default Yes.
    pub yes_label: Option<String>,
    /// Label of the negative choice. Default No.
    pub no_label: Option<String>,
}

/// A validated question with its labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm {
    /// The question.
    pub question: String,
    /// Affirmative label.
    pub yes: String,
    /// Negative label.
    pub no: String,
}

/// Validates the arguments, with the spec's text.
pub fn parse(args: &Value) -> Result<Confirm, String> {
    let text = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let question = text("question").ok_or("confirm: question is required")?.to_string();
    Ok(Confirm {
        question,
        yes: text("yes_label").unwrap_or("Yes").to_string(),
        no: text("no_label").unwrap_or("No").to_string(),
    })
}

/// `The user chose: <label>`.
pub fn render(confirm: &Confirm, yes: bool) -> String {
    format!("The user chose: {}", if yes { &confirm.yes } else { &confirm.no })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_default_and_blank_questions_are_refused() {
        let c = parse(&json!({"question": "Deploy?"})).unwrap();
        assert_eq!(render(&c, true), "The user chose: Yes");
        assert_eq!(render(&c, false), "The user chose: No");
        let c = parse(&json!({"question": "Deploy?", "yes_label": "Ship it", "no_label": "Wait"})).unwrap();
        assert_eq!(render(&c, true), "The user chose: Ship it");
        assert_eq!(
            parse(&json!({"question": "  "})).unwrap_err(),
            "confirm: question is required"
        );
    }
}
