//! Background jobs of one session.
//!
//! Spec: a foreground call that is still running at 20 s continues as a job;
//! `background: true` starts one at once. "Up to 16 jobs at a time"; when a job
//! ends, "[background job b1 finished: exit 0 after 42s] make test" and its
//! capped output arrive as a notice. "The log file is left on disk, uncapped."
//! "Background jobs are killed when iota exits", here: when the session ends.

use super::run::{Ending, Running, duration};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Duration;

/// At most this many jobs run at once.
pub const MAX_JOBS: usize = 16;
/// A label is one line, cut past this many characters.
pub const LABEL_CHARS: usize = 64;

/// One background job.
#[derive(Debug)]
pub struct Job {
    /// `b1`, `b2`, …
    pub id: String,
    /// The call's header label (one line, cut past 64 characters).
    pub label: String,
    /// The full command line.
    pub command: String,
    /// The running command.
    pub run: Arc<Running>,
    /// The notice, once the job has ended.
    pub notice: OnceLock<String>,
}

/// A row of the job list.
#[derive(Debug, Clone)]
pub struct JobInfo {
    /// Job id.
    pub id: String,
    /// Seconds since it started.
    pub elapsed: Duration,
    /// Full command line.
    pub command: String,
    /// Process id.
    pub pid: u32,
    /// Log file.
    pub log: PathBuf,
    /// The last lines of its output.
    pub last_lines: String,
}

/// Notices waiting to be delivered, and how many jobs still owe one.
#[derive(Default)]
struct Queue {
    notices: Vec<String>,
    pending: usize,
}

/// The jobs and notices of one session.
#[derive(Default)]
pub struct Jobs {
    jobs: Mutex<Vec<Arc<Job>>>,
    queue: Mutex<Queue>,
    changed: Condvar,
    self_ref: Mutex<Weak<Jobs>>,
    listener: Mutex<Option<NoticeListener>>,
}

/// Called with each notice as its job finishes (MCP sends it as a log
/// message); the notice is queued for the next result all the same.
pub type NoticeListener = Box<dyn Fn(&str) + Send + Sync>;

impl Jobs {
    /// An empty table.
    pub fn new() -> Arc<Jobs> {
        let jobs = Arc::new(Jobs::default());
        *jobs.self_ref.lock().unwrap() = Arc::downgrade(&jobs);
        jobs
    }

    /// How many jobs are running.
    pub fn running(&self) -> usize {
        self.jobs
            .lock()
            .unwrap()
            .iter()
            .filter(|j| j.run.ending().is_none())
            .count()
    }

    /// Whether another job may start.
    pub fn has_room(&self) -> bool {
        self.running() < MAX_JOBS
    }

    /// The next job id, without registering anything. Ids count per process
    /// so that the log files of several sessions never collide.
    pub fn next_id(&self) -> String {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        format!("b{}", NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Registers a running command as job `id`; its notice is queued when it ends.
    pub fn adopt(&self, id: String, label: String, command: String, run: Arc<Running>) -> Arc<Job> {
        let job = Arc::new(Job {
            id,
            label,
            command,
            run,
            notice: OnceLock::new(),
        });
        self.jobs.lock().unwrap().push(job.clone());
        self.queue.lock().unwrap().pending += 1;
        let table = self.self_ref.lock().unwrap().clone();
        let watched = job.clone();
        std::thread::spawn(move || {
            let ending = watched.run.wait(None).unwrap_or(Ending::Killed);
            let notice = notice(&watched, &ending);
            let _ = watched.notice.set(notice.clone());
            if let Some(table) = table.upgrade() {
                if let Some(listener) = table.listener.lock().unwrap().as_ref() {
                    listener(&notice);
                }
                let mut queue = table.queue.lock().unwrap();
                queue.notices.push(notice);
                queue.pending -= 1;
                table.changed.notify_all();
            }
        });
        job
    }

    /// Also hands every notice to `listener` as its job finishes.
    pub fn listen(&self, listener: NoticeListener) {
        *self.listener.lock().unwrap() = Some(listener);
    }

    /// Takes the notices queued so far.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut self.queue.lock().unwrap().notices)
    }

    /// Waits until every job has ended and queued its notice.
    pub fn wait_all(&self) {
        let queue = self.queue.lock().unwrap();
        let _queue = self.changed.wait_while(queue, |q| q.pending > 0).unwrap();
    }

    /// The running jobs, for a job list.
    pub fn list(&self) -> Vec<JobInfo> {
        self.jobs
            .lock()
            .unwrap()
            .iter()
            .filter(|j| j.run.ending().is_none())
            .map(|j| {
                let output = j.run.output();
                let lines: Vec<&str> = output.lines().collect();
                JobInfo {
                    id: j.id.clone(),
                    elapsed: j.run.started.elapsed(),
                    command: j.command.clone(),
                    pid: j.run.pid,
                    log: j.run.log.clone(),
                    last_lines: lines[lines.len().saturating_sub(10)..].join("\n"),
                }
            })
            .collect()
    }

    /// Kills job `id`; false when there is no such running job.
    pub fn kill(&self, id: &str) -> bool {
        let jobs = self.jobs.lock().unwrap();
        match jobs.iter().find(|j| j.id == id && j.run.ending().is_none()) {
            Some(job) => {
                job.run.stop(Ending::Killed);
                true
            }
            None => false,
        }
    }

    /// The job called `id` (jobs stay listed here once they end).
    pub fn find(&self, id: &str) -> Option<Arc<Job>> {
        self.jobs.lock().unwrap().iter().find(|j| j.id == id).cloned()
    }

    /// Kills every running job (the session is ending).
    pub fn kill_all(&self) {
        for job in self.jobs.lock().unwrap().iter() {
            if job.run.ending().is_none() {
                job.run.stop(Ending::Killed);
                job.run.kill_tree();
            }
        }
    }
}

impl Jobs {
    /// [`Jobs::kill_all`], then waits until each has exited, `limit` at
    /// most in all.
    pub fn kill_all_and_wait(&self, limit: Duration) {
        self.kill_all();
        let deadline = std::time::Instant::now() + limit;
        for job in self.jobs.lock().unwrap().iter() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            job.run.wait(Some(left));
        }
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// `[background job b1 finished: exit 0 after 42s] make test` and the output.
pub fn notice(job: &Job, ending: &Ending) -> String {
    let elapsed = duration(Duration::from_secs(job.run.started.elapsed().as_secs()));
    let status = match ending {
        Ending::Exit(code) => format!("exit {code} after {elapsed}"),
        Ending::TimedOut(_) => format!("timed out after {elapsed}"),
        Ending::Killed | Ending::Cancelled => "killed".to_string(),
    };
    let output = job.run.output();
    let mut text = format!("[background job {} finished: {status}] {}", job.id, job.label);
    if !output.is_empty() {
        text.push('\n');
        text.push_str(output.strip_suffix('\n').unwrap_or(&output));
    }
    text
}

/// One line, cut past 64 characters.
pub fn label(header: &str) -> String {
    let line = header.lines().next().unwrap_or("");
    let cut: String = line.chars().take(LABEL_CHARS).collect();
    if cut.len() < line.len() || header.contains('\n') {
        format!("{cut}…")
    } else {
        cut
    }
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("running", &self.running())
            .finish_non_exhaustive()
    }
}
