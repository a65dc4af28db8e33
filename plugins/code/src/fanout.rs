//! A walk's pieces searched on the host's workers (`iota:toolset/workers`),
//! their answers taken back in walk order.
//!
//! glob and grep have their walk cut into pieces here ([`crate::walk::pieces`])
//! and each handed to a task of an internal tool (undescribed, so the model never
//! sees it). The caller takes the answers in piece order and stops when it
//! has enough; tasks still running are abandoned when the call returns.
//! Where there are no workers (natively, or refused) the caller computes the
//! same answer itself.
//!
//! Pieces are cut before anything below them is known, so one can hold a
//! quarter of the work (a crate of generated sources among small ones). A
//! task stops after [`PIECE_TIME`] and answers with what it found and the
//! rest of its walk, which the caller cuts again and submits ahead of the
//! pieces after it: no core waits long behind one large piece.

use crate::walk;
use iota_toolset::jail::Jail;
use iota_toolset::{ToolResult, workers};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

/// Pieces the walk is cut into.
const PIECES: usize = 64;

/// Pieces the rest of a piece is cut into: enough for every thread the
/// host may run (`MAX_THREADS`).
const REST_PIECES: usize = 8;

/// Tasks of the first cut submitted and not yet taken. Workers take tasks
/// in the order they were submitted and the answers are taken in that
/// order too, so a search its caps stop early wastes no more than the
/// pieces running at that moment. The host's bound leaves as many again for
/// the pieces of rests, which are submitted at once.
const WINDOW: usize = 32;

/// Tasks outstanding at most: the host's bound (`MAX_OUTSTANDING`).
const MAX_TASKS: usize = 64;

/// How long a task works on one piece before it hands back the rest:
/// long against a task's round trip (tens of microseconds), short against
/// a search.
pub const PIECE_TIME: Duration = Duration::from_millis(5);

/// How much of a piece one answer may cover.
#[derive(Clone, Copy)]
pub struct Budget(Option<Instant>);

impl Budget {
    /// The whole piece: the caller answering itself has no one to share with.
    pub fn whole() -> Budget {
        Budget(None)
    }

    /// [`PIECE_TIME`] from now.
    fn for_task() -> Budget {
        Budget(Some(Instant::now() + PIECE_TIME))
    }

    /// Whether the time is up: the rest of the piece goes back.
    pub fn spent(&self) -> bool {
        self.0.is_some_and(|deadline| Instant::now() >= deadline)
    }
}

/// One piece in walk order: submitted as a task, or still waiting.
enum Slot<P> {
    Task(u64),
    Waiting(P),
}

/// The order answers are taken in, and the tasks outstanding.
struct Queue<'a, P> {
    tool: &'a str,
    slots: VecDeque<Slot<P>>,
    tasks: usize,
    /// False once the host refused a task: the rest is answered here.
    parallel: bool,
}

impl<P: Serialize> Queue<'_, P> {
    /// Submits the waiting pieces among the first `among` slots, in order,
    /// while fewer than `up_to` tasks are outstanding.
    fn submit(&mut self, among: usize, up_to: usize) -> Result<(), String> {
        for slot in self.slots.iter_mut().take(among) {
            if !self.parallel || self.tasks >= up_to {
                break;
            }
            let Slot::Waiting(piece) = slot else { continue };
            let input = serde_json::to_string(piece).map_err(|e| e.to_string())?;
            match workers::submit(self.tool, &input) {
                Ok(task) => {
                    *slot = Slot::Task(task);
                    self.tasks += 1;
                }
                Err(_) => self.parallel = false,
            }
        }
        Ok(())
    }
}

/// A piece's answer, which may leave part of the piece's walk.
pub trait Answer {
    /// The entries its budget left unwalked, taken out of it (none when the
    /// piece was finished).
    fn take_rest(&mut self) -> Vec<walk::Entry>;
}

/// Cuts the walk from `start` into pieces (each made a task's input by
/// `piece_of`), answers every piece in order, by a task of `tool` or by
/// `local`, and hands each answer to `take` until it returns false. What a
/// task's answer left of its piece is cut again and comes next in walk
/// order.
pub fn in_walk_order<P: Serialize, A: DeserializeOwned + Answer>(
    tool: &str,
    jail: &Jail,
    start: &Path,
    piece_of: impl Fn(Vec<walk::Entry>) -> P,
    local: impl Fn(P) -> A,
    mut take: impl FnMut(A) -> bool,
) -> Result<(), String> {
    let mut queue = Queue {
        tool,
        slots: walk::pieces(jail, start, PIECES)
            .into_iter()
            .map(|entries| Slot::Waiting(piece_of(entries)))
            .collect(),
        tasks: 0,
        parallel: true,
    };
    loop {
        queue.submit(usize::MAX, WINDOW)?;
        // A piece of a rest left unsubmitted (the host's bound was reached)
        // is submitted when its turn comes rather than answered here.
        queue.submit(1, MAX_TASKS)?;
        let mut answer = match queue.slots.pop_front() {
            None => return Ok(()),
            Some(Slot::Task(task)) => {
                queue.tasks -= 1;
                serde_json::from_str(&workers::wait(task)?)
                    .map_err(|e| format!("malformed answer from a {tool} task: {e}"))?
            }
            Some(Slot::Waiting(piece)) => local(piece),
        };
        let left = walk::pieces_of_rest(jail, answer.take_rest(), REST_PIECES);
        if !take(answer) {
            return Ok(());
        }
        let shared = left.len();
        for entries in left.into_iter().rev() {
            queue.slots.push_front(Slot::Waiting(piece_of(entries)));
        }
        queue.submit(shared, MAX_TASKS)?;
    }
}

/// A worker's side: decodes the piece, computes the answer within a task's
/// [`Budget`], returns it as the result's text.
pub fn answer<P: DeserializeOwned, A: Serialize>(
    tool: &str,
    input: &str,
    f: impl FnOnce(P, Budget) -> A,
) -> ToolResult {
    let outcome = serde_json::from_str::<P>(input)
        .map_err(|e| format!("malformed {tool} input: {e}"))
        .and_then(|piece| serde_json::to_string(&f(piece, Budget::for_task())).map_err(|e| e.to_string()));
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
