//! The `session` capability: per-session state, namespaced by toolset so one
//! set can never read another's keys.

use super::CallState;
use crate::wit::iota::toolset::session::Host;

impl Host for CallState {
    fn get(&mut self, key: String) -> Option<Vec<u8>> {
        self.session.get(&self.set, &key)
    }

    fn set(&mut self, key: String, value: Vec<u8>) -> wasmtime::Result<()> {
        Ok(self.session.set(&self.set, &key, value)?)
    }
}
