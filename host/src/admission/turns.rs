//! A session's calls start in the order they arrived: consecutive calls that
//! may run in parallel start side by side, every other call alone (the
//! spec's round rule, kept across a session's concurrent requests).
//!
//! Each call takes a numbered [`Ticket`] as it arrives (an MCP request as it
//! is read, before it waits for a thread) and learns whether it may run in
//! parallel only when it waits with it; the head of the line starts when it
//! is compatible with what runs, and the line never reorders, so two writes
//! to one file land in the order they were sent.

use super::Waiter;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// One session's line of calls.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Tickets handed out.
    issued: u64,
    /// The first ticket that has not started (nor been withdrawn).
    head: u64,
    /// Tickets waiting, with what they are.
    waiting: BTreeMap<u64, (bool, Arc<Waiter>)>,
    /// Tickets given up before their turn.
    withdrawn: BTreeSet<u64>,
    /// Parallel calls running.
    shared: usize,
    /// A call running alone.
    alone: bool,
}

impl State {
    /// Puts ticket `number` in line as `parallel` or not, and starts the
    /// head of the line while it may start.
    fn enter(&mut self, number: u64, parallel: bool, waiter: &Arc<Waiter>) {
        self.waiting.insert(number, (parallel, waiter.clone()));
        self.advance();
    }

    /// Starts the head of the line while it may start.
    fn advance(&mut self) {
        loop {
            if self.withdrawn.remove(&self.head) {
                self.head += 1;
                continue;
            }
            let Some((parallel, _)) = self.waiting.get(&self.head) else {
                return;
            };
            let may = if *parallel {
                !self.alone
            } else {
                !self.alone && self.shared == 0
            };
            if !may {
                return;
            }
            let (parallel, waiter) = self.waiting.remove(&self.head).expect("just seen");
            if parallel {
                self.shared += 1;
            } else {
                self.alone = true;
            }
            self.head += 1;
            waiter.grant();
        }
    }

    fn finish(&mut self, parallel: bool) {
        if parallel {
            self.shared -= 1;
        } else {
            self.alone = false;
        }
        self.advance();
    }
}

impl Turns {
    /// An empty line.
    pub(crate) fn new() -> Arc<Turns> {
        Arc::new(Turns::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place at the end of the line.
    pub(crate) fn ticket(self: &Arc<Self>) -> Ticket {
        let mut state = self.lock();
        let number = state.issued;
        state.issued += 1;
        Ticket {
            turns: self.clone(),
            number,
            spent: false,
        }
    }
}

/// A place in a session's line, given up when dropped unused.
#[derive(Debug)]
pub(crate) struct Ticket {
    turns: Arc<Turns>,
    number: u64,
    spent: bool,
}

impl Ticket {
    /// Waits on this thread for the ticket's turn, beside other parallel
    /// calls when `parallel`, alone otherwise.
    pub(crate) fn wait(mut self, parallel: bool) -> Turn {
        self.spent = true;
        let waiter = Waiter::thread();
        self.turns.lock().enter(self.number, parallel, &waiter);
        waiter.sleep(&|| false);
        Turn {
            turns: self.turns.clone(),
            parallel,
        }
    }

    /// The same, waited for by an async task; dropping the future before
    /// it is ready gives the place up.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn turn(mut self, parallel: bool) -> WaitForTurn {
        self.spent = true;
        WaitForTurn {
            turns: self.turns.clone(),
            number: self.number,
            parallel,
            waiter: None,
            done: false,
        }
    }
}

/// An async task's wait for its turn ([`Ticket::turn`]).
#[derive(Debug)]
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) struct WaitForTurn {
    turns: Arc<Turns>,
    number: u64,
    parallel: bool,
    waiter: Option<Arc<Waiter>>,
    done: bool,
}

impl std::future::Future for WaitForTurn {
    type Output = Turn;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Turn> {
        let waiter = match &self.waiter {
            Some(waiter) => waiter.clone(),
            None => {
                let waiter = Waiter::task();
                // The waker goes in first: `enter` may hand the turn over at once.
                waiter.granted_or_wake(cx.waker());
                self.turns.lock().enter(self.number, self.parallel, &waiter);
                self.waiter = Some(waiter.clone());
                waiter
            }
        };
        if waiter.granted_or_wake(cx.waker()) {
            self.done = true;
            return std::task::Poll::Ready(Turn {
                turns: self.turns.clone(),
                parallel: self.parallel,
            });
        }
        std::task::Poll::Pending
    }
}

impl Drop for WaitForTurn {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut state = self.turns.lock();
        match &self.waiter {
            // Handed over as it was dropped: it ends at once.
            Some(waiter) if waiter.is_granted() => state.finish(self.parallel),
            _ => {
                state.waiting.remove(&self.number);
                state.withdrawn.insert(self.number);
                state.advance();
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.spent {
            let mut state = self.turns.lock();
            state.withdrawn.insert(self.number);
            state.advance();
        }
    }
}

/// A call's turn, over when dropped.
#[derive(Debug)]
pub(crate) struct Turn {
    turns: Arc<Turns>,
    parallel: bool,
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.turns.lock().finish(self.parallel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Starts a thread that waits with `ticket` and logs `name` on start and
    /// `/name` on its end, holding its turn until `release` is set.
    fn run(
        ticket: Ticket,
        parallel: bool,
        name: &'static str,
        log: &Arc<Mutex<Vec<String>>>,
        release: &Arc<AtomicBool>,
    ) -> std::thread::JoinHandle<()> {
        let (log, release) = (log.clone(), release.clone());
        std::thread::spawn(move || {
            let turn = ticket.wait(parallel);
            log.lock().unwrap().push(name.to_string());
            while !release.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            log.lock().unwrap().push(format!("/{name}"));
            drop(turn);
        })
    }

    #[test]
    fn calls_start_in_arrival_order_whatever_thread_comes_first() {
        let turns = Turns::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let release = Arc::new(AtomicBool::new(true));
        let tickets: Vec<Ticket> = (0..6).map(|_| turns.ticket()).collect();
        let kinds = [
            (false, "w0"),
            (true, "r1"),
            (false, "w2"),
            (false, "w3"),
            (true, "r4"),
            (false, "w5"),
        ];
        // The threads reach the line in reverse.
        let mut threads = Vec::new();
        for (ticket, (parallel, name)) in tickets.into_iter().zip(kinds).rev() {
            threads.push(run(ticket, parallel, name, &log, &release));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        for t in threads {
            t.join().unwrap();
        }
        let log = log.lock().unwrap();
        let starts: Vec<&str> = log.iter().filter(|e| !e.starts_with('/')).map(String::as_str).collect();
        assert_eq!(starts, ["w0", "r1", "w2", "w3", "r4", "w5"]);
        // A call alone starts only after everything before it ended.
        for (i, entry) in log.iter().enumerate() {
            if entry.starts_with('w') {
                let ended_before = log[..i].iter().filter(|e| e.starts_with('/')).count();
                let started_before = log[..i].iter().filter(|e| !e.starts_with('/')).count();
                assert_eq!(ended_before, started_before, "{entry} started beside another: {log:?}");
            }
        }
    }

    #[test]
    fn parallel_calls_run_side_by_side_and_a_withdrawn_ticket_holds_nobody() {
        let turns = Turns::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let release = Arc::new(AtomicBool::new(false));
        let (a, b) = (turns.ticket(), turns.ticket());
        let gone = turns.ticket();
        let c = turns.ticket();
        let threads = [run(a, true, "a", &log, &release), run(b, true, "b", &log, &release)];
        drop(gone);
        let writer = run(c, false, "c", &log, &release);
        while log.lock().unwrap().len() < 2 {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(
            log.lock().unwrap().len(),
            2,
            "c waits for a and b: {:?}",
            log.lock().unwrap()
        );
        release.store(true, Ordering::SeqCst);
        for t in threads {
            t.join().unwrap();
        }
        writer.join().unwrap();
        assert_eq!(log.lock().unwrap().last().unwrap(), "/c");
    }

    #[test]
    fn an_async_wait_is_woken_in_turn_and_dropping_it_gives_the_place_up() {
        use std::future::Future;
        use std::sync::atomic::AtomicUsize;
        use std::task::{Context, Poll, Wake};

        struct Count(AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let woken = Arc::new(Count(AtomicUsize::new(0)));
        let waker = std::task::Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);

        let turns = Turns::new();
        let writer = turns.ticket().wait(false);
        let mut reader = Box::pin(turns.ticket().turn(true));
        let mut dropped = Box::pin(turns.ticket().turn(false));
        let last = turns.ticket();
        assert!(reader.as_mut().poll(&mut cx).is_pending());
        assert!(dropped.as_mut().poll(&mut cx).is_pending());
        drop(writer);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1, "the reader's task is woken");
        let Poll::Ready(read) = reader.as_mut().poll(&mut cx) else {
            panic!("the reader's turn came");
        };
        // The writer behind the reader leaves the line while it waits: the
        // next call does not wait for it.
        drop(dropped);
        drop(read);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _turn = last.wait(false);
            tx.send(()).unwrap();
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the ticket after a dropped wait gets its turn");
    }
}
