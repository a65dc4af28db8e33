//! How calls wait when many arrive at once: every call is answered, in the
//! order it came, without spinning, and a host past its bound says so at once.
//!
//! Three waits, outermost first:
//! - **In flight** ([`Admission::enter`]): the calls a host has accepted and
//!   not yet answered, across its sessions, are at most [`MAX_IN_FLIGHT`]; one
//!   more is answered at once with [`Busy`] rather than queued without end.
//! - **Turns** (`turns.rs`): a session's calls start in the order they
//!   arrived, consecutive parallel ones side by side, every other one alone
//!   (the spec's round rule across a session's concurrent calls), so two
//!   writes to one path land in the order they were sent.
//! - **Slots** (`slots.rs`): the component instances alive at once, taken in
//!   turn by session (round robin), so one busy session cannot starve
//!   another. A tool call's instance and its worker tasks' instances come
//!   from separate slots: a task never waits for anything but a task slot,
//!   so calls waiting on their tasks cannot hold every slot their tasks need.
//!
//! A call's time limit starts when it has its instance: the time it waited
//! counts against nothing. Waiters sleep until they are handed their place
//! (`std::thread::park`, or a waker for an async task), and a waiting
//! thread looks every [`LOOK_EVERY`] at whether it should stop waiting.
//!
//! An MCP request waits for its turn on the reactor, holding no thread: a
//! turn is handed out in arrival order, and a thread pool full of later
//! requests must never be what an earlier one waits for.

pub(crate) mod slots;
mod turns;

pub(crate) use slots::{Slot, SlotKind, Slots};
pub(crate) use turns::{Ticket, Turn, Turns};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Calls a host holds at once, waiting or running, across its sessions.
/// Enough for the thousand calls a busy agent swarm may send on one
/// connection; each waiting call holds its arguments and, once its
/// transport handed it over, a thread.
pub const MAX_IN_FLIGHT: usize = 2048;

/// How often a waiting thread looks at whether it should stop waiting (its
/// call cancelled, abandoned or out of time).
pub(crate) const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// The host-wide bounds: calls in flight, and the instance slots.
#[derive(Debug)]
pub(crate) struct Admission {
    in_flight: AtomicUsize,
    slots: Arc<Slots>,
}

impl Admission {
    /// Nothing in flight, every slot free.
    pub(crate) fn new() -> Arc<Admission> {
        Arc::new(Admission {
            in_flight: AtomicUsize::new(0),
            slots: Slots::new(),
        })
    }

    /// The instance slots.
    pub(crate) fn slots(&self) -> &Arc<Slots> {
        &self.slots
    }

    /// Accepts `calls` more calls, or says the host is busy.
    pub(crate) fn enter(self: &Arc<Self>, calls: usize) -> Result<InFlight, Busy> {
        let before = self.in_flight.fetch_add(calls, Ordering::SeqCst);
        if before + calls > MAX_IN_FLIGHT {
            self.in_flight.fetch_sub(calls, Ordering::SeqCst);
            return Err(Busy);
        }
        Ok(InFlight {
            admission: self.clone(),
            calls,
        })
    }
}

/// Calls counted in flight until this is dropped (they were answered).
#[derive(Debug)]
pub(crate) struct InFlight {
    admission: Arc<Admission>,
    calls: usize,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.admission.in_flight.fetch_sub(self.calls, Ordering::SeqCst);
    }
}

/// A call refused because the host already holds [`MAX_IN_FLIGHT`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Busy;

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "iota-host is busy: {MAX_IN_FLIGHT} calls are already waiting or running; this one was not run. Try it again once some have been answered."
        )
    }
}

/// One waiter, woken when it is handed its place: a thread, or an async
/// task (an MCP request waiting for its turn on the reactor, which holds no
/// thread while it waits).
#[derive(Debug)]
struct Waiter {
    granted: AtomicBool,
    wake: Wake,
}

#[derive(Debug)]
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
enum Wake {
    Thread(std::thread::Thread),
    Task(std::sync::Mutex<Option<std::task::Waker>>),
}

impl Waiter {
    /// The current thread, waiting.
    fn thread() -> Arc<Waiter> {
        Arc::new(Waiter {
            granted: AtomicBool::new(false),
            wake: Wake::Thread(std::thread::current()),
        })
    }

    /// An async task, waiting; its waker is set at each poll.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    fn task() -> Arc<Waiter> {
        Arc::new(Waiter {
            granted: AtomicBool::new(false),
            wake: Wake::Task(std::sync::Mutex::default()),
        })
    }

    /// Hands the waiter its place and wakes it.
    fn grant(&self) {
        self.granted.store(true, Ordering::SeqCst);
        match &self.wake {
            Wake::Thread(thread) => thread.unpark(),
            Wake::Task(waker) => {
                if let Some(waker) = waker.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    waker.wake();
                }
            }
        }
    }

    /// Whether the place was handed over; otherwise `waker` is woken when it is.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    fn granted_or_wake(&self, waker: &std::task::Waker) -> bool {
        if let Wake::Task(slot) = &self.wake {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(waker.clone());
        }
        // Looked at after the waker is in place, so a grant in between wakes it.
        self.is_granted()
    }

    /// Sleeps (a thread waiter) until granted (true) or until `give_up`
    /// says to stop (false), looking at it every [`LOOK_EVERY`]. A false
    /// return may race a grant: the caller settles that under its lock.
    fn sleep(&self, give_up: &dyn Fn() -> bool) -> bool {
        loop {
            if self.is_granted() {
                return true;
            }
            if give_up() {
                return false;
            }
            std::thread::park_timeout(LOOK_EVERY);
        }
    }

    fn is_granted(&self) -> bool {
        self.granted.load(Ordering::SeqCst)
    }
}
