//! The component instances alive at once: slots handed out in turn by
//! session, a tool call's separate from its worker tasks'.

use super::Waiter;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// Instances tool calls (and describe, prompt, a write's preview) may have
/// alive at once. More than the cores, because a call may wait in the host
/// (a command it runs, a question to the person) while holding its own.
pub const CALL_SLOTS: usize = 24;

/// Instances worker tasks may have alive at once, across calls.
pub const TASK_SLOTS: usize = 24;

/// Which slots an instance takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotKind {
    /// A tool call, a description, a prompt, a preview.
    Call,
    /// One of a call's worker tasks.
    Task,
}

impl SlotKind {
    fn index(self) -> usize {
        match self {
            SlotKind::Call => 0,
            SlotKind::Task => 1,
        }
    }
}

/// The slots of one engine.
#[derive(Debug)]
pub(crate) struct Slots {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    free: [usize; 2],
    waiting: [Fair; 2],
}

/// Waiters by session, served round robin: the session after the one
/// served last, its oldest waiter first.
#[derive(Debug, Default)]
struct Fair {
    by_session: BTreeMap<u64, VecDeque<Arc<Waiter>>>,
    last_served: u64,
}

impl Fair {
    fn push(&mut self, session: u64, waiter: Arc<Waiter>) {
        self.by_session.entry(session).or_default().push_back(waiter);
    }

    fn pop(&mut self) -> Option<Arc<Waiter>> {
        let session = self
            .by_session
            .range(self.last_served + 1..)
            .next()
            .or_else(|| self.by_session.iter().next())
            .map(|(session, _)| *session)?;
        let queue = self.by_session.get_mut(&session)?;
        let waiter = queue.pop_front();
        if queue.is_empty() {
            self.by_session.remove(&session);
        }
        self.last_served = session;
        waiter
    }

    fn remove(&mut self, session: u64, waiter: &Arc<Waiter>) {
        if let Some(queue) = self.by_session.get_mut(&session) {
            queue.retain(|w| !Arc::ptr_eq(w, waiter));
            if queue.is_empty() {
                self.by_session.remove(&session);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.by_session.is_empty()
    }
}

impl Slots {
    /// Every slot free.
    pub(crate) fn new() -> Arc<Slots> {
        Arc::new(Slots {
            state: Mutex::new(State {
                free: [CALL_SLOTS, TASK_SLOTS],
                waiting: [Fair::default(), Fair::default()],
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot of `kind` for `session`, waited for in turn; `None` once
    /// `give_up` says the wait is over.
    pub(crate) fn acquire(self: &Arc<Self>, kind: SlotKind, session: u64, give_up: &dyn Fn() -> bool) -> Option<Slot> {
        let k = kind.index();
        let waiter = {
            let mut state = self.lock();
            if state.free[k] > 0 && state.waiting[k].is_empty() {
                state.free[k] -= 1;
                return Some(self.slot(kind));
            }
            let waiter = Waiter::thread();
            state.waiting[k].push(session, waiter.clone());
            waiter
        };
        if waiter.sleep(give_up) {
            return Some(self.slot(kind));
        }
        let mut state = self.lock();
        if waiter.is_granted() {
            // Handed over as it gave up: the slot goes back (to the next waiter).
            drop(state);
            drop(self.slot(kind));
            return None;
        }
        state.waiting[k].remove(session, &waiter);
        None
    }

    fn slot(self: &Arc<Self>, kind: SlotKind) -> Slot {
        Slot {
            slots: self.clone(),
            kind,
        }
    }

    /// How many slots of `kind` are free now.
    #[cfg(test)]
    fn free(&self, kind: SlotKind) -> usize {
        self.lock().free[kind.index()]
    }
}

/// One slot, given back when dropped: to the next waiter in turn, if any.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Arc<Slots>,
    kind: SlotKind,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let k = self.kind.index();
        let mut state = self.slots.lock();
        match state.waiting[k].pop() {
            Some(next) => next.grant(),
            None => state.free[k] += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn sessions_are_served_in_turn_and_every_slot_comes_back() {
        let slots = Slots::new();
        let held: Vec<Slot> = (0..CALL_SLOTS)
            .map(|_| slots.acquire(SlotKind::Call, 1, &|| false).unwrap())
            .collect();
        assert_eq!(slots.free(SlotKind::Call), 0);
        assert_eq!(slots.free(SlotKind::Task), TASK_SLOTS, "tasks have their own slots");
        // Session 1 queues three waiters, then session 2 one: session 2's is
        // served second, not fourth.
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for (i, session) in [(0, 1), (1, 1), (2, 1), (3, 2)] {
            let (shared, order) = (slots.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                let slot = shared.acquire(SlotKind::Call, session, &|| false).unwrap();
                order.lock().unwrap().push(i);
                drop(slot);
            }));
            while slots.lock().waiting[0]
                .by_session
                .values()
                .map(VecDeque::len)
                .sum::<usize>()
                <= i
            {
                std::thread::yield_now();
            }
        }
        let mut held = held;
        // One slot at a time, so the order is the queue's.
        let one = held.pop().unwrap();
        drop(one);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 3, 1, 2]);
        drop(held);
        assert_eq!(slots.free(SlotKind::Call), CALL_SLOTS);
    }

    #[test]
    fn a_waiter_that_gives_up_leaves_the_queue_and_takes_nothing() {
        let slots = Slots::new();
        let held: Vec<Slot> = (0..TASK_SLOTS)
            .map(|_| slots.acquire(SlotKind::Task, 1, &|| false).unwrap())
            .collect();
        let looks = AtomicUsize::new(0);
        let got = slots.acquire(SlotKind::Task, 2, &|| looks.fetch_add(1, Ordering::SeqCst) >= 2);
        assert!(got.is_none());
        assert!(slots.lock().waiting[1].is_empty());
        drop(held);
        assert_eq!(slots.free(SlotKind::Task), TASK_SLOTS);
    }
}
