//! A tool call's place in its session's line is taken as its request is
//! read (`input.rs`), not when rmcp's task for it first runs: tokio runs
//! freshly spawned tasks in no promised order, and two writes to one file
//! sent one after the other must land in that order.
//!
//! The place waits here for its handler ([`Arrivals::claim`], by request
//! id). A request rmcp answers itself (a protocol version it refuses, for
//! one) never claims its place; it is given up after [`CLAIM_WITHIN`], so
//! the line moves on.

use crate::admission::Busy;
use crate::api::{HostSession, Queued};
use rmcp::model::RequestId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How long a place waits for its request's handler.
pub const CLAIM_WITHIN: Duration = Duration::from_secs(2);

/// A place taken as a request was read: the arrival's number (so the
/// expiry removes only its own), and the place or the host's refusal.
type Place = (u64, Result<Queued, Busy>);

/// The places taken and not yet claimed, by request id.
pub struct Arrivals {
    session: Arc<HostSession>,
    places: Mutex<HashMap<RequestId, Place>>,
    next: Mutex<u64>,
}

impl Arrivals {
    /// No places taken yet in `session`.
    pub fn new(session: Arc<HostSession>) -> Arc<Arrivals> {
        Arc::new(Arrivals {
            session,
            places: Mutex::default(),
            next: Mutex::new(0),
        })
    }

    fn places(&self) -> MutexGuard<'_, HashMap<RequestId, Place>> {
        self.places.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a place (or the host's refusal) for the call request `id`, just
    /// read; it is given up unless claimed within [`CLAIM_WITHIN`]. Runs on
    /// the tokio runtime.
    pub fn arrive(self: &Arc<Self>, id: RequestId) {
        let number = {
            let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
            *next += 1;
            *next
        };
        // A client reusing an id while the first is still unclaimed: the
        // older place is given up, and its handler queues anew.
        self.places().insert(id.clone(), (number, self.session.queue(1)));
        let arrivals = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(CLAIM_WITHIN).await;
            let mut places = arrivals.places();
            if places.get(&id).is_some_and(|(n, _)| *n == number) {
                places.remove(&id);
            }
        });
    }

    /// The place taken for request `id` as it was read, or one taken now.
    pub fn claim(&self, id: &RequestId) -> Result<Queued, Busy> {
        let taken = self.places().remove(id);
        taken.map_or_else(|| self.session.queue(1), |(_, place)| place)
    }
}
