//! choose — packs 1–4 questions into a tabbed surface; the answers come back
//! as the tool result and the round continues.
//!
//! Spec: questions, an array of 1–4 question objects (empty or missing:
//! `choose: questions must be a non-empty array`; more than four: `choose: at
//! most 4 questions per call`; an item that is not an object: `choose:
//! questions[i] must be an object`); header, at most 16 characters, longer cut
//! to 15 plus …; question (blank header or question: `choose: questions[i]
//! needs header and question`); options {label, description?}, options without
//! a label dropped, at least one needed (`choose: questions[i] needs at least
//! one option with a label`); multiple (false); allow_custom (true). The result
//! is one row per question, `<header>: <answer>`: the selected labels joined by
//! `, `, a free-text answer appended as `<text> (custom answer)`, or `(nothing
//! selected)`. Declining gives `The user declined to answer.`

use schemars::JsonSchema;
use serde_json::Value;

/// The tool's name.
pub const NAME: &str = "choose";
// The schema only: the arguments are validated by `parse`, with the spec's own refusal texts
// (the doc comment below is the tool's description).
/// Put a decision to the user on an interactive selector instead of asking in prose; their answers
/// come back as this tool's result and your turn continues. Pack 1-4 related questions into one call.
/// Each question has a short header (a tab label, at most 16 characters), the complete one-line
/// question, and at least two options (a single yes/no question is confirm). Set multiple: true
/// whenever the wording invites more than one pick ("select all that apply"). The user can also type
/// their own answer unless allow_custom is false.
#[derive(JsonSchema)]
pub struct Args {
    /// The questions, 1-4 of them.
    #[schemars(length(min = 1, max = 4))]
    pub questions: Vec<QuestionArgs>,
}

/// One question as the model writes it.
#[derive(JsonSchema)]
pub struct QuestionArgs {
    /// Tab label, at most 16 characters.
    pub header: String,
    /// The complete question, one line.
    pub question: String,
    /// The choices offered.
    pub options: Vec<OptionArgs>,
    /// Allow several picks. Default false.
    pub multiple: Option<bool>,
    /// Offer an Other... free-text answer. Default true.
    pub allow_custom: Option<bool>,
}

/// One choice as the model writes it.
#[derive(JsonSchema)]
pub struct OptionArgs {
    /// What the user picks.
    pub label: String,
    /// A line under the label.
    pub description: Option<String>,
}

/// Header labels longer than this are cut.
pub const HEADER_CHARS: usize = 16;

/// One validated question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// Tab label, cut to 16 characters.
    pub header: String,
    /// The question.
    pub question: String,
    /// (label, description) of each option with a label.
    pub options: Vec<(String, Option<String>)>,
    /// Several picks allowed.
    pub multiple: bool,
    /// "Other…" offered.
    pub allow_custom: bool,
}

/// One answer: the labels picked and the free text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// Labels picked.
    pub selected: Vec<String>,
    /// Free text, when given.
    pub custom: Option<String>,
}

/// Validates the arguments, with the spec's texts.
pub fn parse(args: &Value) -> Result<Vec<Question>, String> {
    let items = match args.get("questions") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        _ => return Err("choose: questions must be a non-empty array".into()),
    };
    if items.len() > 4 {
        return Err("choose: at most 4 questions per call".into());
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let Value::Object(item) = item else {
                return Err(format!("choose: questions[{i}] must be an object"));
            };
            let text = |key: &str| {
                item.get(key)
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .unwrap_or("")
                    .to_string()
            };
            let (header, question) = (text("header"), text("question"));
            if header.is_empty() || question.is_empty() {
                return Err(format!("choose: questions[{i}] needs header and question"));
            }
            let options: Vec<(String, Option<String>)> = item
                .get("options")
                .and_then(Value::as_array)
                .map(|options| {
                    options
                        .iter()
                        .filter_map(|o| {
                            let label = o.get("label")?.as_str()?.trim();
                            let description = o.get("description").and_then(Value::as_str).map(str::to_string);
                            (!label.is_empty()).then(|| (label.to_string(), description))
                        })
                        .collect()
                })
                .unwrap_or_default();
            if options.is_empty() {
                return Err(format!("choose: questions[{i}] needs at least one option with a label"));
            }
            Ok(Question {
                header: cut_header(&header),
                question,
                options,
                multiple: item.get("multiple").and_then(Value::as_bool).unwrap_or(false),
                allow_custom: item.get("allow_custom").and_then(Value::as_bool).unwrap_or(true),
            })
        })
        .collect()
}

/// At most 16 characters; longer is cut to 15 plus `…`.
pub fn cut_header(header: &str) -> String {
    if header.chars().count() <= HEADER_CHARS {
        header.to_string()
    } else {
        format!("{}…", header.chars().take(HEADER_CHARS - 1).collect::<String>())
    }
}

/// One row per question: `<header>: <answer>`.
pub fn render(questions: &[Question], answers: &[Answer]) -> String {
    questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let answer = answers.get(i).cloned().unwrap_or_default();
            let mut parts = answer.selected.clone();
            if let Some(custom) = answer.custom.filter(|c| !c.trim().is_empty()) {
                parts.push(format!("{custom} (custom answer)"));
            }
            let text = if parts.is_empty() {
                "(nothing selected)".to_string()
            } else {
                parts.join(", ")
            };
            format!("{}: {text}", q.header)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(header: &str) -> Value {
        json!({"header": header, "question": "Which?", "options": [{"label": "A"}, {"label": "B"}]})
    }

    #[test]
    fn refusals_word_for_word() {
        assert_eq!(
            parse(&json!({})).unwrap_err(),
            "choose: questions must be a non-empty array"
        );
        assert_eq!(
            parse(&json!({"questions": []})).unwrap_err(),
            "choose: questions must be a non-empty array"
        );
        assert_eq!(
            parse(&json!({"questions": [q("a"), q("b"), q("c"), q("d"), q("e")]})).unwrap_err(),
            "choose: at most 4 questions per call"
        );
        assert_eq!(
            parse(&json!({"questions": [q("a"), 5]})).unwrap_err(),
            "choose: questions[1] must be an object"
        );
        assert_eq!(
            parse(&json!({"questions": [{"header": " ", "question": "x", "options": [{"label": "A"}]}]})).unwrap_err(),
            "choose: questions[0] needs header and question"
        );
        assert_eq!(parse(&json!({"questions": [{"header": "h", "question": "x", "options": [{"label": " "}, {"description": "d"}]}]})).unwrap_err(), "choose: questions[0] needs at least one option with a label");
    }

    #[test]
    fn headers_are_cut_to_15_plus_ellipsis() {
        assert_eq!(cut_header("exactly16chars!!"), "exactly16chars!!");
        assert_eq!(cut_header("seventeen chars!!"), "seventeen chars…");
    }

    #[test]
    fn rows_per_question() {
        let questions = parse(&json!({"questions": [q("Lang"), q("Extras"), q("None")]})).unwrap();
        let answers = vec![
            Answer {
                selected: vec!["A".into()],
                custom: None,
            },
            Answer {
                selected: vec!["A".into(), "B".into()],
                custom: Some("C too".into()),
            },
            Answer::default(),
        ];
        assert_eq!(
            render(&questions, &answers),
            "Lang: A\nExtras: A, B, C too (custom answer)\nNone: (nothing selected)"
        );
    }
}
