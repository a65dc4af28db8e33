//! The `workers` capability: parts of one call run on several cores, each on
//! a fresh instance of the same component.
//!
//! A call that may have workers gets a [`Workers`] queue in its store. Tasks
//! run on up to one thread per core, started when tasks are queued and gone
//! once the queue has stayed empty for [`LINGER`] or the call ended; each
//! runs the component's own `invoke` through a [`Worker`] the toolset
//! builds with the caller's filesystem view, session and deadline, and
//! nobody to ask (one instance per thread, kept from task
//! to task of the same call). Dropping the queue (the call ended)
//! abandons what has not started and stops what is running at its next
//! epoch tick.

use super::CallState;
use crate::wit::iota::toolset::workers::Host;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// What one worker thread runs its tasks with: `(tool, input)` to the result
/// text or the error text. It may keep an instance between tasks.
pub type Worker = Box<dyn FnMut(&str, &str) -> Result<String, String> + Send>;

/// Makes a worker thread's [`Worker`]; the flag is set when the call stops
/// waiting, and a running task must return soon after.
pub type NewWorker = Arc<dyn Fn(&Arc<AtomicBool>) -> Worker + Send + Sync>;

/// Tasks one call may have submitted and not yet waited for.
pub const MAX_OUTSTANDING: usize = 64;

/// Bytes of task inputs and uncollected results one call may hold: each is
/// one crossing's worth at most, but a call may submit the same large input
/// again and again, and a worker may answer with its own memory's worth.
pub const MAX_HELD: usize = 64 << 20;

/// Worker threads one call may use at most.
const MAX_THREADS: usize = 8;

/// How long a worker thread with nothing to do waits for the call's next
/// task before it ends: a caller that answers a piece and submits the rest
/// of it finds the thread and its instance still there, rather than paying
/// for new ones (an instance and its compiled search each time).
const LINGER: std::time::Duration = std::time::Duration::from_millis(100);

/// One call's tasks.
pub struct Workers {
    shared: Arc<Shared>,
}

/// Threads a call's tasks may use: one per core, at most [`MAX_THREADS`].
/// Asked once per process (it reads the cgroup files) and only when a call
/// first submits a task.
fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, MAX_THREADS)
    })
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    new_worker: NewWorker,
    abandoned: Arc<AtomicBool>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<(u64, String, String)>,
    done: HashMap<u64, Result<String, String>>,
    /// Submitted and not yet waited for.
    outstanding: HashSet<u64>,
    /// Bytes of the inputs of tasks not yet finished and of the results
    /// not yet collected, against [`MAX_HELD`].
    held: usize,
    next: u64,
    threads: usize,
}

impl Workers {
    /// A queue whose tasks run on up to one thread per core, each with a
    /// worker from `new_worker`.
    pub fn new(new_worker: NewWorker) -> Workers {
        Workers {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
                new_worker,
                abandoned: Arc::new(AtomicBool::new(false)),
            }),
        }
    }

    /// Queues a task; its number, or why not.
    pub fn submit(&self, tool: String, input: String) -> Result<u64, String> {
        let mut state = self.shared.lock();
        if state.outstanding.len() >= MAX_OUTSTANDING {
            return Err(format!(
                "too many tasks outstanding (at most {MAX_OUTSTANDING}): wait for some first"
            ));
        }
        // The tool's name is the component's too, and held as long.
        let task_len = tool.len() + input.len();
        if state.held.saturating_add(task_len) > MAX_HELD {
            return Err(format!(
                "too much task data held (inputs and results, at most {} MiB): wait for some first",
                MAX_HELD >> 20
            ));
        }
        state.held += task_len;
        let id = state.next;
        state.next += 1;
        state.outstanding.insert(id);
        state.queue.push_back((id, tool, input));
        if state.threads < threads() {
            let shared = self.shared.clone();
            let spawned = std::thread::Builder::new()
                .name("iota-worker".into())
                .spawn(move || shared.work());
            // Without a new thread the running ones still drain the queue; with
            // none at all the task is answered with the error.
            if spawned.is_ok() {
                state.threads += 1;
            } else if state.threads == 0 {
                state.queue.pop_back();
                state.held -= task_len;
                let result = Err("no worker thread could be started".to_string());
                state.held += held_by(&result);
                state.done.insert(id, result);
            }
        }
        drop(state);
        self.shared.changed.notify_all();
        Ok(id)
    }

    /// Waits for task `id` and takes its result, looking every `every` at
    /// whether the waiting call must stop; `None` when it must (cancelled,
    /// or out of time: a task stops at the same deadline, and this is the
    /// bound if one is stuck where nothing stops it).
    pub fn wait(
        &self,
        id: u64,
        every: std::time::Duration,
        must_stop: impl Fn() -> bool,
    ) -> Option<Result<String, String>> {
        let mut state = self.shared.lock();
        if !state.outstanding.contains(&id) {
            return Some(Err(format!("no task {id} is waiting to be collected")));
        }
        loop {
            if let Some(result) = state.done.remove(&id) {
                state.outstanding.remove(&id);
                state.held -= held_by(&result);
                return Some(result);
            }
            if must_stop() {
                return None;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, every)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.shared.abandoned.store(true, Ordering::Relaxed);
        self.shared.lock().queue.clear();
        // Idle threads stop now rather than at the end of their linger.
        self.shared.changed.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next queued task, waited for up to [`LINGER`]; `None` (and the
    /// thread no longer counted) once there is none or the call is over.
    fn next_task(&self) -> Option<(u64, String, String)> {
        let mut state = self.lock();
        let idle_since = std::time::Instant::now();
        loop {
            if let Some(task) = state.queue.pop_front() {
                return Some(task);
            }
            let idle = idle_since.elapsed();
            if self.abandoned.load(Ordering::Relaxed) || idle >= LINGER {
                state.threads -= 1;
                return None;
            }
            state = self
                .changed
                .wait_timeout(state, LINGER - idle)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// A worker thread: runs queued tasks until there are none for a while.
    fn work(&self) {
        let mut worker = (self.new_worker)(&self.abandoned);
        while let Some((id, tool, input)) = self.next_task() {
            let result = if self.abandoned.load(Ordering::Relaxed) {
                Err("abandoned".to_string())
            } else {
                // A panic in the host's own code must still answer the task,
                // or its caller would wait for ever; the worker is replaced.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker(&tool, &input))).unwrap_or_else(|_| {
                    worker = (self.new_worker)(&self.abandoned);
                    Err("the task's worker failed".to_string())
                })
            };
            let mut state = self.lock();
            state.held -= tool.len() + input.len();
            let result = if state.held.saturating_add(held_by(&result)) > MAX_HELD {
                Err(format!(
                    "the task's result was dropped: its call would hold more than {} MiB of task data; wait for tasks sooner",
                    MAX_HELD >> 20
                ))
            } else {
                result
            };
            state.held += held_by(&result);
            state.done.insert(id, result);
            drop(state);
            self.changed.notify_all();
        }
    }
}

/// Bytes a finished task's answer holds.
fn held_by(result: &Result<String, String>) -> usize {
    match result {
        Ok(text) | Err(text) => text.len(),
    }
}

impl Host for CallState {
    fn submit(&mut self, tool: String, input: String) -> Result<u64, String> {
        let submitted = match &self.workers {
            Ok(workers) => workers.submit(tool, input),
            Err(why) => Err(why.to_string()),
        };
        if submitted.is_ok() {
            self.session.count_task();
        }
        submitted
    }

    fn wait(&mut self, task: u64) -> wasmtime::Result<Result<String, String>> {
        match &self.workers {
            // Cancelled or out of time: the call stops, as at its next tick.
            Ok(workers) => {
                let stopper = &self.stop;
                match workers.wait(task, super::Stopper::EVERY, || stopper.reason().is_some()) {
                    Some(result) => Ok(result),
                    None => Err(stopper.reason().unwrap_or_else(|| wasmtime::Trap::Interrupt.into())),
                }
            }
            Err(why) => Ok(Err(why.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits for task `id` with a deadline no test reaches.
    fn wait(workers: &Workers, id: u64) -> Result<String, String> {
        let every = std::time::Duration::from_millis(10);
        workers.wait(id, every, || false).expect("never told to stop")
    }

    fn echo() -> NewWorker {
        Arc::new(|_: &Arc<AtomicBool>| {
            Box::new(|tool: &str, input: &str| {
                if tool == "fail" {
                    Err(input.to_string())
                } else if tool == "panic" {
                    panic!("a bug in the host's worker");
                } else {
                    Ok(format!("{tool}:{input}"))
                }
            })
        })
    }

    #[test]
    fn results_come_back_by_number_whatever_order_they_finish_in() {
        let workers = Workers::new(echo());
        let ids: Vec<u64> = (0..20)
            .map(|i| workers.submit("t".into(), i.to_string()).unwrap())
            .collect();
        let failed = workers.submit("fail".into(), "why".into()).unwrap();
        for (i, id) in ids.iter().enumerate().rev() {
            assert_eq!(wait(&workers, *id), Ok(format!("t:{i}")));
        }
        assert_eq!(wait(&workers, failed), Err("why".into()));
        assert_eq!(
            wait(&workers, failed),
            Err(format!("no task {failed} is waiting to be collected"))
        );
        assert!(wait(&workers, 999).is_err());
    }

    #[test]
    fn outstanding_tasks_are_bounded() {
        let workers = Workers::new(echo());
        for i in 0..MAX_OUTSTANDING {
            workers.submit("t".into(), i.to_string()).unwrap();
        }
        let refused = workers.submit("t".into(), "one more".into()).unwrap_err();
        assert!(refused.starts_with("too many tasks outstanding"), "{refused}");
        wait(&workers, 0).unwrap();
        assert!(workers.submit("t".into(), "now".into()).is_ok());
    }

    #[test]
    fn a_worker_that_panics_answers_its_task_and_is_replaced() {
        let workers = Workers::new(echo());
        let ids: Vec<u64> = ["panic", "t", "panic", "t"]
            .iter()
            .map(|tool| workers.submit(tool.to_string(), "x".into()).unwrap())
            .collect();
        let answers: Vec<Result<String, String>> = ids.into_iter().map(|id| wait(&workers, id)).collect();
        let failed = Err("the task's worker failed".to_string());
        assert_eq!(answers, [failed.clone(), Ok("t:x".into()), failed, Ok("t:x".into())]);
    }

    #[test]
    fn waiting_ends_at_the_deadline() {
        let slow: NewWorker = Arc::new(|_: &Arc<AtomicBool>| {
            Box::new(|_: &str, _: &str| {
                std::thread::sleep(std::time::Duration::from_secs(2));
                Ok(String::new())
            }) as Worker
        });
        let workers = Workers::new(slow);
        let id = workers.submit("t".into(), String::new()).unwrap();
        let soon = std::time::Instant::now() + std::time::Duration::from_millis(50);
        let every = std::time::Duration::from_millis(10);
        assert_eq!(workers.wait(id, every, || std::time::Instant::now() >= soon), None);
    }

    #[test]
    fn task_data_held_is_bounded() {
        let quarter = "x".repeat(MAX_HELD / 4);
        // Inputs: a fifth quarter is refused until a task is collected.
        let workers = Workers::new(echo());
        let ids: Vec<u64> = (0..3)
            .map(|_| workers.submit("fail".into(), quarter.clone()).unwrap())
            .collect();
        // The tool's name counts too.
        let refused = workers.submit(quarter.clone(), "x".into()).unwrap_err();
        assert!(refused.starts_with("too much task data held"), "{refused}");
        assert_eq!(wait(&workers, ids[0]).unwrap_err().len(), quarter.len());
        workers.submit("fail".into(), quarter.clone()).unwrap();
        // Results: an answer that would take the call past the bound is dropped.
        let doubling: NewWorker =
            Arc::new(|_: &Arc<AtomicBool>| Box::new(|_: &str, input: &str| Ok(input.repeat(2))) as Worker);
        let workers = Workers::new(doubling);
        let held = workers.submit("t".into(), quarter.clone()).unwrap();
        let small = workers.submit("t".into(), "x".into()).unwrap();
        assert_eq!(wait(&workers, small).unwrap(), "xx");
        // With its one-byte tool name, a half just fits beside the held answer.
        let mut half = quarter.repeat(2);
        half.pop();
        let over = workers.submit("t".into(), half.clone()).unwrap();
        let dropped = wait(&workers, over).unwrap_err();
        assert!(dropped.starts_with("the task's result was dropped"), "{dropped}");
        assert_eq!(wait(&workers, held).unwrap().len(), 2 * quarter.len());
        let fits = workers.submit("t".into(), half).unwrap();
        assert_eq!(
            wait(&workers, fits).unwrap().len(),
            4 * quarter.len() - 2,
            "once the rest is collected"
        );
        assert_eq!(workers.shared.lock().held, 0, "everything collected is released");
    }

    #[test]
    fn dropping_the_queue_stops_running_tasks() {
        let stopped = Arc::new(AtomicBool::new(false));
        let seen = stopped.clone();
        let new_worker: NewWorker = Arc::new(move |abandoned: &Arc<AtomicBool>| {
            let (abandoned, seen) = (abandoned.clone(), seen.clone());
            Box::new(move |_: &str, _: &str| {
                while !abandoned.load(Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                seen.store(true, Ordering::Relaxed);
                Err("abandoned".into())
            })
        });
        let workers = Workers::new(new_worker);
        workers.submit("spin".into(), String::new()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(workers);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !stopped.load(Ordering::Relaxed) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(stopped.load(Ordering::Relaxed), "the running task saw the abandonment");
    }
}
