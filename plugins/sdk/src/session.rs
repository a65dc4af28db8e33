//! Per-session state. Components are stateless between calls; what must last
//! (the read ledger) lives in the host behind the `session` interface.

use std::cell::RefCell;
use std::collections::HashMap;

/// Key-value state that lasts for one session.
pub trait SessionStore {
    /// The value under `key`, if any.
    fn get(&self, key: &str) -> Option<Vec<u8>>;
    /// Stores `value` under `key`.
    fn set(&self, key: &str, value: &[u8]);
}

/// An in-memory session, for native builds of a toolset (tests, benchmarks).
#[derive(Debug, Default)]
pub struct MemorySession {
    values: RefCell<HashMap<String, Vec<u8>>>,
}

impl SessionStore for MemorySession {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.values.borrow().get(key).cloned()
    }

    fn set(&self, key: &str, value: &[u8]) {
        self.values.borrow_mut().insert(key.to_string(), value.to_vec());
    }
}

/// The host's session, through the `iota:toolset/session` import. Using it is
/// what makes a component import (and so request) the session capability.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostSession;

impl SessionStore for HostSession {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        crate::bindings::iota::toolset::session::get(key)
    }

    fn set(&self, key: &str, value: &[u8]) {
        crate::bindings::iota::toolset::session::set(key, value)
    }
}
