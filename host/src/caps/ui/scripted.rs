//! Answers from a file (`--answers FILE`): a JSON list consumed in order by
//! every question of the session — approvals, `choose`, `confirm` — so the
//! interactive paths are testable without a terminal.
//!
//! Approval: `"once"`, `"session"` or `"deny"` (`true` = once, `false` or
//! `null` = deny). Confirm: `true`, `false`, `null` (declined) or a label.
//! Choose: `null` (declined) or a list with one entry per question: a label,
//! a list of labels, or `{"selected": [...], "custom": "..."}`.

use super::{Approval, ApprovalRequest, Ui};
use crate::wit::iota::toolset::ui::{Answer, Question};
use anyhow::{Context as _, Result, bail};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Mutex;

/// A [`Ui`] that reads its answers from a list.
#[derive(Debug)]
pub struct ScriptedUi {
    answers: Mutex<VecDeque<Value>>,
}

impl ScriptedUi {
    /// Reads the answers file.
    pub fn from_file(path: &std::path::Path) -> Result<ScriptedUi> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read answers file {}", path.display()))?;
        ScriptedUi::parse(&text).with_context(|| format!("answers file {}", path.display()))
    }

    /// Parses answers text: a JSON list.
    pub fn parse(text: &str) -> Result<ScriptedUi> {
        match serde_json::from_str(text)? {
            Value::Array(items) => Ok(ScriptedUi {
                answers: Mutex::new(items.into()),
            }),
            _ => bail!("must be a JSON list of answers"),
        }
    }

    fn next(&self, what: &str) -> Option<Value> {
        let next = self.answers.lock().unwrap().pop_front();
        if next.is_none() {
            eprintln!("iota-host: no scripted answer left for {what}: declining");
        }
        next
    }
}

impl Ui for ScriptedUi {
    fn interactive(&self) -> bool {
        true
    }

    fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        match self.next(&format!("the approval of {}", request.header)) {
            Some(Value::Bool(true)) => Approval::Once,
            Some(Value::String(s)) => match s.as_str() {
                "once" | "allow once" => Approval::Once,
                "session" | "allow for this session" => Approval::Session,
                _ => Approval::Deny,
            },
            _ => Approval::Deny,
        }
    }

    fn choose(&self, questions: &[Question]) -> Option<Vec<Answer>> {
        let Value::Array(items) = self.next("a choose question")? else {
            return None;
        };
        let answer = |item: &Value| -> Answer {
            let strings = |v: &Value| -> Vec<String> {
                v.as_array()
                    .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
                    .unwrap_or_default()
            };
            match item {
                Value::String(label) => Answer {
                    selected: vec![label.clone()],
                    custom: None,
                },
                Value::Array(_) => Answer {
                    selected: strings(item),
                    custom: None,
                },
                Value::Object(map) => Answer {
                    selected: map.get("selected").map(strings).unwrap_or_default(),
                    custom: map.get("custom").and_then(Value::as_str).map(str::to_string),
                },
                _ => Answer {
                    selected: Vec::new(),
                    custom: None,
                },
            }
        };
        let mut answers: Vec<Answer> = items.iter().map(answer).collect();
        answers.resize(
            questions.len(),
            Answer {
                selected: Vec::new(),
                custom: None,
            },
        );
        Some(answers)
    }

    fn confirm(&self, question: &str, yes_label: &str, no_label: &str) -> Option<bool> {
        match self.next(&format!("the question {question:?}"))? {
            Value::Bool(b) => Some(b),
            Value::String(s) if s == yes_label => Some(true),
            Value::String(s) if s == no_label => Some(false),
            _ => None,
        }
    }
}
