//! Questions for MCP 2026-07-28 peers: multi round-trip requests (SEP-2322).
//!
//! That protocol forbids requests from server to client, so a call that must
//! ask answers `InputRequiredResult` (the question as an elicitation form) and
//! the client retries the call with the answer. Calls are re-run whole on
//! every round: a [`Replay`] gives the call the answers collected so far, in
//! order, and stops it at the first question still open. What the rounds
//! need to remember travels in `requestState`, sealed with rmcp's
//! [`RequestStateCodec`] (HMAC-SHA256, a random key per process) and bound
//! to this session, the tool and a digest of the arguments, valid for
//! [`STATE_TTL`] and once only. Each recorded answer is bound to a digest of
//! the form it answered, diff included: if the file changed between the
//! preview and the retry, the replayed question differs and nothing runs.

use super::elicitation::{APPROVAL_CHOICES, Carrier, Form, accepted};
use rmcp::model::{
    ElicitRequest, ElicitResult, InputRequest, InputRequests, InputRequiredResult, InputResponses, RequestStateCodec,
    RequestStateError, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a question waits for its answer.
pub const STATE_TTL: Duration = Duration::from_secs(10 * 60);

/// The key of the one input request a round carries.
pub const INPUT_KEY: &str = "answer";

/// One answered question: the digest of its form and the client's reply
/// (an `ElicitResult`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answered {
    form: String,
    reply: Value,
}

/// What `requestState` carries between rounds.
#[derive(Debug, Serialize, Deserialize)]
struct RoundState {
    /// The answers given in earlier rounds, in the order they were asked.
    answered: Vec<Answered>,
    /// The digest of the form the client is answering now.
    pending: String,
    /// Spent when a retry opens the state: each state runs once.
    nonce: String,
}

/// The rounds of one MCP session: the sealing key and the spent states.
pub struct Rounds {
    codec: RequestStateCodec,
    session: String,
    /// How long a question waits: [`STATE_TTL`].
    ttl: Duration,
    /// Nonces of opened states, with when they would have expired anyway.
    spent: Mutex<HashMap<String, Instant>>,
}

impl Default for Rounds {
    fn default() -> Self {
        Rounds::new()
    }
}

impl Rounds {
    /// Rounds with a fresh random key and session identity.
    pub fn new() -> Rounds {
        let key = format!("{}{}", crate::secret::token(), crate::secret::token());
        Rounds {
            codec: RequestStateCodec::try_new(key.into_bytes()).expect("256 random bits are a long enough key"),
            session: crate::secret::token(),
            ttl: STATE_TTL,
            spent: Mutex::default(),
        }
    }

    /// What a state is bound to: this session, the tool and its arguments
    /// (their canonical JSON: a client may send the same object with its
    /// keys in another order).
    fn bound_to(&self, tool: &str, args: &str) -> Vec<u8> {
        let canonical = serde_json::from_str::<Value>(args).map_or_else(
            |_| args.to_string(),
            |mut value| {
                value.sort_all_objects();
                value.to_string()
            },
        );
        format!("{}\n{tool}\n{}", self.session, blake3::hash(canonical.as_bytes())).into_bytes()
    }

    /// Opens a retry of `tool` with `args`: the answers so far, the newest
    /// from `responses`. A first call (no state, no responses) has none.
    /// A forged, altered, foreign, expired or reused state is refused.
    pub fn resume(
        &self,
        tool: &str,
        args: &str,
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Result<Vec<Answered>, String> {
        let Some(state) = state else {
            return match responses {
                Some(_) => Err("inputResponses came without the requestState they answer".into()),
                None => Ok(Vec::new()),
            };
        };
        let opened: RoundState = self
            .codec
            .open_json_with(state, &self.bound_to(tool, args))
            .map_err(|e| match e {
                RequestStateError::Expired => format!(
                    "requestState expired: a question waits {} minutes for its answer; call {tool} again",
                    STATE_TTL.as_secs() / 60
                ),
                _ => format!(
                    "requestState is not valid for this call: it was altered, forged, or issued for other arguments, another tool or another session; nothing ran ({e})"
                ),
            })?;
        {
            let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            spent.retain(|_, expiry| *expiry > now);
            if spent.insert(opened.nonce, now + self.ttl).is_some() {
                return Err("requestState was already used: each retry runs once; nothing ran".into());
            }
        }
        let reply = responses
            .and_then(|r| r.get(INPUT_KEY))
            .ok_or_else(|| format!("the retry lacks inputResponses[\"{INPUT_KEY}\"]; nothing ran"))?;
        serde_json::from_value::<ElicitResult>(reply.clone())
            .map_err(|e| format!("inputResponses[\"{INPUT_KEY}\"] is not an elicitation result: {e}; nothing ran"))?;
        let mut answered = opened.answered;
        answered.push(Answered {
            form: opened.pending,
            reply: reply.clone(),
        });
        Ok(answered)
    }

    /// The result that asks `form` of the client, carrying the answers so
    /// far in a sealed state for the retry.
    pub fn ask(
        &self,
        tool: &str,
        args: &str,
        answered: Vec<Answered>,
        form: &Form,
    ) -> Result<InputRequiredResult, String> {
        let state = RoundState {
            answered,
            pending: form.digest(),
            nonce: crate::secret::token(),
        };
        let bound_to = self.bound_to(tool, args);
        let options = SealOptions::new().associated_data(&bound_to).ttl(self.ttl);
        let sealed = self.codec.seal_json_with(&state, &options).map_err(|e| e.to_string())?;
        let params = form.params().ok_or("the question cannot be put as a form")?;
        let requests = InputRequests::from([(
            INPUT_KEY.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        )]);
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
    }
}

/// A carrier that answers from the rounds so far and leaves the first new
/// question for the client.
#[derive(Debug, Default)]
pub struct Replay {
    answered: Vec<Answered>,
    progress: Mutex<ReplayProgress>,
}

#[derive(Debug, Default)]
struct ReplayProgress {
    /// Which recorded answers this run has used.
    used: Vec<bool>,
    /// The first form no earlier round answered.
    open: Option<Form>,
    /// A replayed answer met a form other than the one it answered.
    changed: bool,
}

/// Where a replayed call stopped.
#[derive(Debug)]
pub enum Stop {
    /// It asked a question no round answered yet.
    Open(Form, Vec<Answered>),
    /// What it asked differs from what was answered: the file, the diff or
    /// the question changed since.
    Changed,
}

impl Replay {
    /// Replays `answered`.
    pub fn new(answered: Vec<Answered>) -> Replay {
        Replay {
            answered,
            progress: Mutex::default(),
        }
    }

    /// Whether, and where, the call stopped.
    pub fn stop(&self) -> Option<Stop> {
        let progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        if progress.changed {
            return Some(Stop::Changed);
        }
        progress
            .open
            .clone()
            .map(|form| Stop::Open(form, self.answered.clone()))
    }
}

/// The accepted content of a recorded answer.
fn reply_of(answer: &Answered) -> Option<Map<String, Value>> {
    serde_json::from_value::<ElicitResult>(answer.reply.clone())
        .ok()
        .as_ref()
        .and_then(accepted)
}

/// Whether a recorded answer is an approval "allow for this session".
fn allows_session(answer: &Answered) -> bool {
    reply_of(answer).and_then(|c| c.get("decision").cloned()) == Some(Value::String(APPROVAL_CHOICES[1].to_string()))
}

impl Carrier for Replay {
    fn interactive(&self) -> bool {
        true
    }

    /// Answers `form` with the first unused answer given to the same form.
    /// A form no answer fits is new — unless answers are left unused that
    /// this run should have asked for: then what it asks has changed since
    /// (a different diff, another destination), and nothing more runs. An
    /// "allow for this session" answer may go unused: the gate does not ask
    /// again once the session allows the tool.
    fn ask(&self, form: &Form) -> Option<Map<String, Value>> {
        let mut progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        if progress.open.is_some() || progress.changed {
            return None;
        }
        progress.used.resize(self.answered.len(), false);
        let digest = form.digest();
        let fits = (0..self.answered.len()).find(|&i| !progress.used[i] && self.answered[i].form == digest);
        if let Some(i) = fits {
            progress.used[i] = true;
            return reply_of(&self.answered[i]);
        }
        let left_unexplained =
            (0..self.answered.len()).any(|i| !progress.used[i] && !allows_session(&self.answered[i]));
        if left_unexplained {
            progress.changed = true;
        } else {
            progress.open = Some(form.clone());
        }
        None
    }

    fn suspended(&self) -> bool {
        let progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        progress.open.is_some() || progress.changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(message: &str) -> Form {
        crate::mcp::elicitation::approval_form(&crate::ApprovalRequest {
            tool: "write_file",
            header: message,
            diff: None,
        })
    }

    fn reply(decision: &str) -> InputResponses {
        InputResponses::from([(
            INPUT_KEY.into(),
            json!({"action": "accept", "content": {"decision": decision}}),
        )])
    }

    fn state_of(result: &InputRequiredResult) -> String {
        result.request_state.clone().unwrap()
    }

    #[test]
    fn a_state_opens_once_for_its_own_call() {
        let rounds = Rounds::new();
        let asked = rounds
            .ask("write_file", "{\"path\":\"a\"}", Vec::new(), &form("a"))
            .unwrap();
        let state = state_of(&asked);
        for (tool, args) in [("edit_file", "{\"path\":\"a\"}"), ("write_file", "{\"path\":\"b\"}")] {
            let refused = rounds
                .resume(tool, args, Some(&state), Some(&reply("allow once")))
                .unwrap_err();
            assert!(
                refused.starts_with("requestState is not valid for this call"),
                "{refused}"
            );
        }
        let answered = rounds
            .resume(
                "write_file",
                "{\"path\":\"a\"}",
                Some(&state),
                Some(&reply("allow once")),
            )
            .unwrap();
        assert_eq!(answered.len(), 1);
        let again = rounds
            .resume(
                "write_file",
                "{\"path\":\"a\"}",
                Some(&state),
                Some(&reply("allow once")),
            )
            .unwrap_err();
        assert!(again.starts_with("requestState was already used"), "{again}");
    }

    #[test]
    fn an_expired_state_is_refused() {
        let rounds = Rounds {
            ttl: Duration::from_millis(1),
            ..Rounds::new()
        };
        let state = state_of(&rounds.ask("t", "{}", Vec::new(), &form("a")).unwrap());
        std::thread::sleep(Duration::from_millis(20));
        let refused = rounds
            .resume("t", "{}", Some(&state), Some(&reply("allow once")))
            .unwrap_err();
        assert!(refused.starts_with("requestState expired"), "{refused}");
    }

    #[test]
    fn another_session_and_an_altered_state_are_refused() {
        let (ours, theirs) = (Rounds::new(), Rounds::new());
        let state = state_of(&ours.ask("t", "{}", Vec::new(), &form("a")).unwrap());
        assert!(theirs.resume("t", "{}", Some(&state), Some(&reply("deny"))).is_err());
        let mut altered = state.clone().into_bytes();
        let at = altered.len() / 2;
        altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert!(ours.resume("t", "{}", Some(&altered), Some(&reply("deny"))).is_err());
        assert!(ours.resume("t", "{}", None, Some(&reply("deny"))).is_err());
        assert!(ours.resume("t", "{}", Some(&state), None).is_err());
    }

    #[test]
    fn arguments_bind_whatever_their_key_order() {
        let rounds = Rounds::new();
        let state = state_of(
            &rounds
                .ask("t", r#"{"a":1,"b":{"d":2,"c":3}}"#, Vec::new(), &form("a"))
                .unwrap(),
        );
        assert!(
            rounds
                .resume("t", r#"{"b":{"c":3,"d":2},"a":1}"#, Some(&state), Some(&reply("deny")))
                .is_ok()
        );
    }

    #[test]
    fn an_allow_for_this_session_answer_may_go_unasked_but_no_other() {
        let answer = |f: &str, decision: &str| Answered {
            form: form(f).digest(),
            reply: json!({"action": "accept", "content": {"decision": decision}}),
        };
        // The gate's question was answered "for this session" in an earlier
        // round and is not asked again; the component's question still fits.
        let replay = Replay::new(vec![
            answer("gate", "allow for this session"),
            answer("component", "allow once"),
        ]);
        assert!(replay.ask(&form("component")).is_some());
        assert!(replay.ask(&form("next")).is_none());
        assert!(matches!(replay.stop(), Some(Stop::Open(f, _)) if f == form("next")));
        // An "allow once" left unasked means the question changed.
        let replay = Replay::new(vec![answer("gate", "allow once")]);
        assert!(replay.ask(&form("gate, now to .git/config")).is_none());
        assert!(matches!(replay.stop(), Some(Stop::Changed)));
    }

    #[test]
    fn a_replay_answers_in_order_and_stops_at_the_first_new_or_changed_form() {
        let answered = vec![Answered {
            form: form("a").digest(),
            reply: json!({"action": "accept", "content": {"decision": "allow once"}}),
        }];
        let replay = Replay::new(answered.clone());
        assert!(replay.ask(&form("a")).is_some());
        assert!(!replay.suspended());
        assert!(replay.ask(&form("b")).is_none());
        assert!(matches!(replay.stop(), Some(Stop::Open(f, _)) if f == form("b")));
        let changed = Replay::new(answered);
        assert!(changed.ask(&form("a, after the file changed")).is_none());
        assert!(changed.suspended());
        assert!(matches!(changed.stop(), Some(Stop::Changed)));
    }
}
