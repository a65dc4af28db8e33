//! Background jobs as tasks, for clients that declare the tasks extension
//! (`io.modelcontextprotocol/tasks`, SEP-2663).
//!
//! A shell call that becomes a background job — `background: true`, or a
//! foreground command still running at 20 s — answers such a client with a
//! task whose id is the job's. `tasks/get` reports it working until the job
//! ends, then completed with the job's notice as the tool result;
//! `tasks/cancel` kills the job's process tree. The receipt (the task's
//! status message) and the notice in the next result stay as for every
//! client: the task is a second way to the same job, not a replacement.

use crate::api::{Job, Jobs};
use rmcp::model::{CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, Task, TaskPayload, TaskStatus};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// How many tasks a session remembers; past it the oldest finished go.
pub const MAX_TASKS: usize = 1024;

/// How often a client should poll, in milliseconds.
const POLL_INTERVAL_MS: u64 = 1000;

struct Entry {
    job: Arc<Job>,
    created: String,
    cancelled: bool,
}

/// The tasks of one MCP session.
#[derive(Default)]
pub struct Tasks {
    entries: Mutex<VecDeque<Entry>>,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Tasks {
    /// Makes `job` a task; `receipt` is what the call answered.
    pub fn create(&self, job: Arc<Job>, receipt: &str) -> CreateTaskResult {
        let created = now();
        let task = Task::new(job.id.clone(), TaskStatus::Working, created.clone(), created.clone())
            .with_status_message(receipt)
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_TASKS
            && let Some(done) = entries.iter().position(|e| e.job.notice.get().is_some() || e.cancelled)
        {
            entries.remove(done);
        }
        entries.push_back(Entry {
            job,
            created,
            cancelled: false,
        });
        CreateTaskResult::new(task)
    }

    /// The task's state now; `None` for an unknown id.
    pub fn get(&self, id: &str) -> Option<DetailedTask> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = entries.iter().find(|e| e.job.id == id)?;
        let payload = match entry.job.notice.get() {
            _ if entry.cancelled => TaskPayload::Cancelled,
            None => TaskPayload::Working,
            Some(notice) => {
                let result = CallToolResult::success(vec![ContentBlock::text(notice.clone())]);
                let Ok(serde_json::Value::Object(result)) = serde_json::to_value(result) else {
                    return None;
                };
                TaskPayload::Completed { result }
            }
        };
        let task =
            Task::new(id, TaskStatus::Working, entry.created.clone(), now()).with_poll_interval_ms(POLL_INTERVAL_MS);
        Some(DetailedTask::new(task, payload))
    }

    /// Kills the task's job; `None` for an unknown id, `Some(false)` when
    /// it had already ended.
    pub fn cancel(&self, id: &str, jobs: &Jobs) -> Option<bool> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = entries.iter_mut().find(|e| e.job.id == id)?;
        if entry.job.notice.get().is_some() || entry.cancelled {
            return Some(false);
        }
        entry.cancelled = true;
        jobs.kill(id);
        entry.job.run.kill_tree();
        Some(true)
    }
}
