//! One session: what lasts across the calls of one `call` invocation or one
//! MCP connection — toolset state (the read ledger) and "allow for this
//! session" approvals.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Per-session state, shared by every call of the session.
#[derive(Debug, Default)]
pub struct Session {
    state: Mutex<HashMap<(String, String), Vec<u8>>>,
    approved: Mutex<HashSet<(String, String)>>,
}

impl Session {
    /// A new, empty session.
    pub fn new() -> Session {
        Session::default()
    }

    /// The value `set` stored under `key`. Each toolset sees only its own keys.
    pub fn get(&self, set: &str, key: &str) -> Option<Vec<u8>> {
        self.state
            .lock()
            .unwrap()
            .get(&(set.to_string(), key.to_string()))
            .cloned()
    }

    /// Stores `value` under `key` for `set`.
    pub fn set(&self, set: &str, key: &str, value: Vec<u8>) {
        self.state
            .lock()
            .unwrap()
            .insert((set.to_string(), key.to_string()), value);
    }

    /// Whether the user allowed `tool` of `set` for the rest of the session.
    pub fn is_approved(&self, set: &str, tool: &str) -> bool {
        self.approved
            .lock()
            .unwrap()
            .contains(&(set.to_string(), tool.to_string()))
    }

    /// Records "allow for this session" for `tool` of `set`.
    pub fn approve(&self, set: &str, tool: &str) {
        self.approved
            .lock()
            .unwrap()
            .insert((set.to_string(), tool.to_string()));
    }
}
