//! A walk's pieces searched on the host's workers (`iota:toolset/workers`),
//! their answers taken back in walk order.
//!
//! glob and grep cut their walk into pieces ([`crate::walk::pieces`]) and
//! hand each to a task of an internal tool (undescribed, so the model never
//! sees it). The caller takes the answers in piece order and stops when it
//! has enough; tasks still running are abandoned when the call returns.
//! Where there are no workers (natively, or refused) the caller computes the
//! same answer itself.

use iota_toolset::{ToolResult, workers};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::VecDeque;

/// Tasks submitted and not yet taken: all of them, up to the host's bound.
/// Workers take tasks in the order they were submitted and the answers are
/// taken in that order too, so a search its caps stop early wastes no more
/// than the pieces running at that moment; a smaller window would leave a
/// core idle behind one large piece.
const IN_FLIGHT: usize = 64;

/// Answers every piece in order, by a task of `tool` or by `local`, and
/// hands each answer to `take` until it returns false.
pub fn in_walk_order<P: Serialize, A: DeserializeOwned>(
    tool: &str,
    pieces: Vec<P>,
    local: impl Fn(P) -> A,
    mut take: impl FnMut(A) -> bool,
) -> Result<(), String> {
    let collect = |task: u64| -> Result<A, String> {
        serde_json::from_str(&workers::wait(task)?).map_err(|e| format!("malformed answer from a {tool} task: {e}"))
    };
    let mut tasks = VecDeque::new();
    let mut parallel = true;
    for piece in pieces {
        if parallel {
            let input = serde_json::to_string(&piece).map_err(|e| e.to_string())?;
            match workers::submit(tool, &input) {
                Ok(task) => {
                    tasks.push_back(task);
                    if tasks.len() > IN_FLIGHT {
                        let oldest = tasks.pop_front().expect("more than IN_FLIGHT tasks");
                        if !take(collect(oldest)?) {
                            return Ok(());
                        }
                    }
                    continue;
                }
                Err(_) => parallel = false,
            }
        }
        // Submitted pieces come first, then this one, here.
        while let Some(task) = tasks.pop_front() {
            if !take(collect(task)?) {
                return Ok(());
            }
        }
        if !take(local(piece)) {
            return Ok(());
        }
    }
    while let Some(task) = tasks.pop_front() {
        if !take(collect(task)?) {
            return Ok(());
        }
    }
    Ok(())
}

/// A worker's side: decodes the piece, computes the answer, returns it as
/// the result's text.
pub fn answer<P: DeserializeOwned, A: Serialize>(tool: &str, input: &str, f: impl FnOnce(P) -> A) -> ToolResult {
    let outcome = serde_json::from_str::<P>(input)
        .map_err(|e| format!("malformed {tool} input: {e}"))
        .and_then(|piece| serde_json::to_string(&f(piece)).map_err(|e| e.to_string()));
    ToolResult::from_outcome(tool, outcome)
}

/// What a piece compiles from its arguments (a regex, a glob), kept for the
/// next piece: a worker instance runs the pieces of one call in turn, all
/// with the same arguments. Lives in a `thread_local!` (one per instance).
pub struct LastCompiled<K, V>(std::cell::RefCell<Option<(K, std::rc::Rc<V>)>>);

impl<K: PartialEq, V> Default for LastCompiled<K, V> {
    fn default() -> Self {
        LastCompiled::new()
    }
}

impl<K: PartialEq, V> LastCompiled<K, V> {
    /// Nothing compiled yet.
    pub const fn new() -> LastCompiled<K, V> {
        LastCompiled(std::cell::RefCell::new(None))
    }

    /// The value for `key`: the last one when its key is the same, else
    /// `compile(&key)` kept for next time (`None` when that fails).
    pub fn get(&self, key: K, compile: impl FnOnce(&K) -> Option<V>) -> Option<std::rc::Rc<V>> {
        let mut last = self.0.borrow_mut();
        if let Some((k, value)) = &*last
            && *k == key
        {
            return Some(value.clone());
        }
        let value = std::rc::Rc::new(compile(&key)?);
        *last = Some((key, value.clone()));
        Some(value)
    }
}
