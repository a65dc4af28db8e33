//! Questions over MCP: approvals, `choose` and `confirm` become elicitation
//! forms (form mode, flat schemas of enums and strings). One [`FormUi`]
//! turns questions into forms and answers back; a [`Carrier`] takes each
//! form to the client. Two carriers exist, one per protocol era: an
//! `elicitation/create` request to the client ([`PeerCarrier`], up to
//! 2025-11-25), and the multi round-trip replay of 2026-07-28
//! (`crate::mcp::rounds`). Where the client cannot answer forms, nobody
//! can be asked.

use crate::{Answer, Approval, ApprovalRequest, Question, Ui};
use rmcp::model::{ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ServerRequest};
use rmcp::service::{PeerRequestOptions, RequestContext, RoleServer};
use serde_json::{Map, Value, json};

/// The approval choices, as the spec names them.
pub const APPROVAL_CHOICES: [&str; 3] = ["allow once", "allow for this session", "deny"];

/// One question to the client, as an elicitation form.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// What the user reads (an approval's header and diff, say).
    pub message: String,
    /// The form's JSON Schema: an object of flat properties.
    pub schema: Value,
}

impl Form {
    fn new(message: String, properties: Value, required: Vec<String>) -> Form {
        Form {
            message,
            schema: json!({"type": "object", "properties": properties, "required": required}),
        }
    }

    /// The `elicitation/create` parameters that carry this form.
    pub fn params(&self) -> Option<ElicitRequestParams> {
        serde_json::from_value(json!({"mode": "form", "message": self.message, "requestedSchema": self.schema})).ok()
    }

    /// A digest of the whole form (message and schema): what an answer
    /// given to it is bound to.
    pub fn digest(&self) -> String {
        let text = serde_json::to_string(&(&self.message, &self.schema)).unwrap_or_default();
        blake3::hash(text.as_bytes()).to_hex().to_string()
    }
}

/// The accepted content of a client's answer to a form, or `None` when it
/// declined or cancelled.
pub fn accepted(result: &ElicitResult) -> Option<Map<String, Value>> {
    match (&result.action, &result.content) {
        (ElicitationAction::Accept, Some(Value::Object(content))) => Some(content.clone()),
        _ => None,
    }
}

/// How forms reach the client and answers come back.
pub trait Carrier: Send + Sync {
    /// Whether the client can answer forms at all.
    fn interactive(&self) -> bool;
    /// Asks one form; the accepted content, or `None` when declined,
    /// cancelled or unanswerable.
    fn ask(&self, form: &Form) -> Option<Map<String, Value>>;
    /// See [`Ui::suspended`].
    fn suspended(&self) -> bool {
        false
    }
}

/// A [`Ui`] whose questions are forms taken to an MCP client by `C`.
pub struct FormUi<C> {
    carrier: C,
}

impl<C: Carrier> FormUi<C> {
    /// Asks through `carrier`.
    pub fn new(carrier: C) -> FormUi<C> {
        FormUi { carrier }
    }

    /// The carrier.
    pub fn carrier(&self) -> &C {
        &self.carrier
    }
}

/// The form of an approval question.
pub fn approval_form(request: &ApprovalRequest<'_>) -> Form {
    let mut message = format!("Allow {}?", request.header);
    if let Some(diff) = request.diff {
        message.push_str("\n\n");
        message.push_str(diff);
    }
    let properties = json!({"decision": {"type": "string", "title": "Decision", "enum": APPROVAL_CHOICES}});
    Form::new(message, properties, vec!["decision".into()])
}

/// The form of a `choose` call: `q{i}` per question, `q{i}_other` for its
/// free-text answer where one is offered.
fn choose_form(questions: &[Question]) -> Form {
    let mut properties = Map::new();
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
    Form::new("Please answer:".into(), Value::Object(properties), required)
}

impl<C: Carrier> Ui for FormUi<C> {
    fn interactive(&self) -> bool {
        self.carrier.interactive()
    }

    fn suspended(&self) -> bool {
        self.carrier.suspended()
    }

    fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        match self
            .carrier
            .ask(&approval_form(request))
            .and_then(|c| c.get("decision").cloned())
        {
            Some(Value::String(d)) if d == APPROVAL_CHOICES[0] => Approval::Once,
            Some(Value::String(d)) if d == APPROVAL_CHOICES[1] => Approval::Session,
            _ => Approval::Deny,
        }
    }

    fn choose(&self, questions: &[Question]) -> Option<Vec<Answer>> {
        let content = self.carrier.ask(&choose_form(questions))?;
        Some(
            (0..questions.len())
                .map(|i| {
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
        let content = self
            .carrier
            .ask(&Form::new(question.into(), properties, vec!["answer".into()]))?;
        Some(content.get("answer").and_then(Value::as_str) == Some(yes_label))
    }
}

/// Forms as `elicitation/create` requests, sent while the call waits (the
/// protocol versions before 2026-07-28).
pub struct PeerCarrier {
    /// The call's request: its peer takes the forms, and its cancellation
    /// withdraws a form still open.
    call: RequestContext<RoleServer>,
    runtime: tokio::runtime::Handle,
}

impl PeerCarrier {
    /// Asks the client of the call `call`; `runtime` drives the requests
    /// from blocking threads.
    pub fn new(call: RequestContext<RoleServer>, runtime: tokio::runtime::Handle) -> PeerCarrier {
        PeerCarrier { call, runtime }
    }
}

impl Carrier for PeerCarrier {
    fn interactive(&self) -> bool {
        true
    }

    /// A person may take their time, so a form waits for its answer as long
    /// as the call lasts; when the client cancels the call, the form is
    /// withdrawn (the client is told) and counts as unanswered, so an
    /// approval it held is denied and the call can end.
    fn ask(&self, form: &Form) -> Option<Map<String, Value>> {
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(form.params()?));
        self.runtime.block_on(async {
            if self.call.ct.is_cancelled() {
                return None;
            }
            let mut open = self
                .call
                .peer
                .send_cancellable_request(request, PeerRequestOptions::no_options())
                .await
                .ok()?;
            let answer = tokio::select! {
                answer = &mut open.rx => Some(answer),
                () = self.call.ct.cancelled() => None,
            };
            match answer {
                Some(Ok(Ok(ClientResult::ElicitResult(result)))) => accepted(&result),
                Some(_) => None,
                None => {
                    let _ = open.cancel(Some("the tool call was cancelled".into())).await;
                    None
                }
            }
        })
    }
}
