//! The component's exports: questions go through the host's `ui` import.

use crate::{DECLINED, choose, confirm};
use iota_toolset::bindings::iota::toolset::ui;
use iota_toolset::{Context, Guest, ToolResult, ToolSpec};

struct Ask;

impl Guest for Ask {
    fn describe(_: Context) -> Result<Vec<ToolSpec>, String> {
        Ok(crate::describe(ui::interactive()))
    }

    fn prompt(_: Context) -> Option<String> {
        None
    }

    fn preview(_: Context, _: String, _: String) -> Option<String> {
        None
    }

    fn invoke(_: Context, tool: String, args: String) -> ToolResult {
        let args: serde_json::Value = serde_json::from_str(&args).unwrap_or(serde_json::Value::Null);
        match tool.as_str() {
            choose::NAME => {
                let questions = match choose::parse(&args) {
                    Ok(q) => q,
                    Err(e) => return ToolResult::error(choose::NAME, e),
                };
                let header = format!(
                    "{} {}",
                    choose::NAME,
                    questions
                        .iter()
                        .map(|q| q.header.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let asked: Vec<ui::Question> = questions
                    .iter()
                    .map(|q| ui::Question {
                        header: q.header.clone(),
                        question: q.question.clone(),
                        choices: q
                            .options
                            .iter()
                            .map(|(label, description)| ui::Choice {
                                label: label.clone(),
                                description: description.clone(),
                            })
                            .collect(),
                        multiple: q.multiple,
                        allow_custom: q.allow_custom,
                    })
                    .collect();
                match ui::choose(&asked) {
                    None => ToolResult::ok(header, DECLINED),
                    Some(answers) => {
                        let answers: Vec<choose::Answer> = answers
                            .into_iter()
                            .map(|a| choose::Answer {
                                selected: a.selected,
                                custom: a.custom,
                            })
                            .collect();
                        ToolResult::ok(header, choose::render(&questions, &answers))
                    }
                }
            }
            confirm::NAME => {
                let c = match confirm::parse(&args) {
                    Ok(c) => c,
                    Err(e) => return ToolResult::error(confirm::NAME, e),
                };
                let header = format!("{} {}", confirm::NAME, c.question);
                match ui::confirm(&c.question, &c.yes, &c.no) {
                    None => ToolResult::ok(header, DECLINED),
                    Some(yes) => ToolResult::ok(header, confirm::render(&c, yes)),
                }
            }
            other => ToolResult::error(other, format!("unknown tool: {other}")),
        }
    }
}

iota_toolset::export!(Ask);
