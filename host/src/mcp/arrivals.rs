//! A tool call's place in its session's line is taken as its request is
//! read (`input.rs`), not when rmcp's task for it first runs: tokio runs
//! freshly spawned tasks in no promised order, and two writes to one file
//! sent one after the other must land in that order.
//!
//! The place waits here for its handler ([`Arrivals::claim`], by request
//! id). A request rmcp answers itself (a protocol version it refuses, for
//! one) never reaches a handler: its place is given up when that answer
//! goes out, and a cancelled one's when the cancellation comes in (rmcp
//! answers nothing then). No clock decides anything: a handler late by any
//! time still finds its place.
//!
//! Ids are the client's: while a request is in flight its id names it
//! alone, so a second request with the same id is refused here, answered
//! with its id (rmcp would keep one of the two and drop the other's reply).

use super::input::Requests;
use crate::api::{Busy, HostSession, Queued};
use rmcp::model::RequestId;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// The requests in flight, and the places taken and not yet claimed.
pub struct Arrivals {
    session: Arc<HostSession>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Ids passed on to rmcp and not yet settled.
    in_flight: HashSet<RequestId>,
    /// Each call's place (or the host's refusal), until its handler claims it.
    places: HashMap<RequestId, Result<Queued, Busy>>,
}

impl Arrivals {
    /// Nothing in flight in `session`.
    pub fn new(session: Arc<HostSession>) -> Arc<Arrivals> {
        Arc::new(Arrivals {
            session,
            state: Mutex::default(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The place taken for request `id` as it was read, or one taken now
    /// (a request whose place went with its cancellation).
    pub fn claim(&self, id: &RequestId) -> Result<Queued, Busy> {
        let taken = self.state().places.remove(id);
        taken.unwrap_or_else(|| self.session.queue(1))
    }
}

impl Requests for Arrivals {
    fn arrived(&self, id: &RequestId, call: bool) -> Result<(), String> {
        let mut state = self.state();
        if !state.in_flight.insert(id.clone()) {
            return Err(format!("id {id} is already used by a request in flight"));
        }
        if call {
            state.places.insert(id.clone(), self.session.queue(1));
        }
        Ok(())
    }

    fn settled(&self, id: &RequestId) {
        let mut state = self.state();
        state.in_flight.remove(id);
        // Unclaimed: no handler will come; the line moves on without it.
        let unclaimed = state.places.remove(id);
        drop(state);
        drop(unclaimed);
    }
}
