//! Parts of one call on several cores: the host's `iota:toolset/workers`
//! inside a component. Natively (benchmarks, unit tests) there are none:
//! every submit is refused and the caller does the work itself.
//!
//! A task is an `invoke` of this component's own `tool` with `input` as its
//! arguments text, on another instance with the caller's view of the files
//! (a worker's instance may run several tasks of the same call in turn).
//! The tool need not be one the set describes: an internal entry point the
//! model cannot call.

/// Queues a task; its number, or why it cannot run (then do the work here).
pub fn submit(tool: &str, input: &str) -> Result<u64, String> {
    #[cfg(target_arch = "wasm32")]
    return crate::bindings::iota::toolset::workers::submit(tool, input);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = (tool, input);
        Err("no workers outside a component".to_string())
    }
}

/// Waits for a task and takes its result text (its error text when the task
/// failed, trapped or ran out of time).
pub fn wait(task: u64) -> Result<String, String> {
    #[cfg(target_arch = "wasm32")]
    return crate::bindings::iota::toolset::workers::wait(task);
    #[cfg(not(target_arch = "wasm32"))]
    Err(format!("no task {task} outside a component"))
}
