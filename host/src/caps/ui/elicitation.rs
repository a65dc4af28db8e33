//! Questions over MCP: approvals, `choose` and `confirm` become elicitation
//! requests to the client (form mode, flat schemas of enums and strings).
//! Where the client does not support elicitation, nobody can be asked.

use super::{Approval, ApprovalRequest, Ui};
use crate::caps::bindings::iota::toolset::ui::{Answer, Question};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};

/// The approval choices, as the spec names them.
pub const APPROVAL_CHOICES: [&str; 3] = ["allow once", "allow for this session", "deny"];

/// A [`Ui`] that asks an MCP client.
pub struct ElicitationUi {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
}

impl ElicitationUi {
    /// Asks through `peer`; `runtime` drives the requests from blocking threads.
    pub fn new(peer: Peer<RoleServer>, runtime: tokio::runtime::Handle) -> ElicitationUi {
        ElicitationUi { peer, runtime }
    }

    /// Whether a client supports elicitation.
    pub fn supported(peer: &Peer<RoleServer>) -> bool {
        peer.peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some())
    }

    /// Sends one form; the accepted content, or `None` when declined,
    /// cancelled or unanswerable.
    fn ask(&self, message: &str, properties: Value, required: Vec<String>) -> Option<serde_json::Map<String, Value>> {
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": properties, "required": required},
        }))
        .ok()?;
        let result: ElicitResult = self.runtime.block_on(self.peer.create_elicitation(params)).ok()?;
        match (result.action, result.content) {
            (ElicitationAction::Accept, Some(Value::Object(content))) => Some(content),
            _ => None,
        }
    }
}

impl Ui for ElicitationUi {
    fn interactive(&self) -> bool {
        ElicitationUi::supported(&self.peer)
    }

    fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        let mut message = format!("Allow {}?", request.header);
        if let Some(diff) = request.diff {
            message.push_str("\n\n");
            message.push_str(diff);
        }
        let properties = json!({"decision": {"type": "string", "title": "Decision", "enum": APPROVAL_CHOICES}});
        match self
            .ask(&message, properties, vec!["decision".into()])
            .and_then(|c| c.get("decision").cloned())
        {
            Some(Value::String(d)) if d == APPROVAL_CHOICES[0] => Approval::Once,
            Some(Value::String(d)) if d == APPROVAL_CHOICES[1] => Approval::Session,
            _ => Approval::Deny,
        }
    }

    fn choose(&self, questions: &[Question]) -> Option<Vec<Answer>> {
        let mut properties = serde_json::Map::new();
        let mut required = Vec::new();
        for (i, q) in questions.iter().enumerate() {
            let labels: Vec<&str> = q.choices.iter().map(|c| c.label.as_str()).collect();
            let pick = if q.multiple {
                json!({"type": "array", "title": q.header, "description": q.question, "items": {"type": "string", "enum": labels}})
            } else {
                json!({"type": "string", "title": q.header, "description": q.question, "enum": labels})
            };
            properties.insert(format!("q{i}"), pick);
            if q.allow_custom {
                properties.insert(
                    format!("q{i}_other"),
                    json!({"type": "string", "title": format!("{}: Other…", q.header), "description": "Your own answer, if none of the choices fits"}),
                );
            }
            if !q.multiple && !q.allow_custom {
                required.push(format!("q{i}"));
            }
        }
        let content = self.ask("Please answer:", Value::Object(properties), required)?;
        Some(
            questions
                .iter()
                .enumerate()
                .map(|(i, _)| {
                    let selected = match content.get(&format!("q{i}")) {
                        Some(Value::String(s)) => vec![s.clone()],
                        Some(Value::Array(items)) => {
                            items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
                        }
                        _ => Vec::new(),
                    };
                    let custom = content
                        .get(&format!("q{i}_other"))
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty());
                    Answer {
                        selected,
                        custom: custom.map(str::to_string),
                    }
                })
                .collect(),
        )
    }

    fn confirm(&self, question: &str, yes_label: &str, no_label: &str) -> Option<bool> {
        let properties = json!({"answer": {"type": "string", "title": question, "enum": [yes_label, no_label]}});
        let content = self.ask(question, properties, vec!["answer".into()])?;
        Some(content.get("answer").and_then(Value::as_str) == Some(yes_label))
    }
}
