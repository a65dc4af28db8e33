//! Running one command line: spawn, stream the combined output into the cap
//! and a log file, enforce the timeout, and kill the whole process tree.
//!
//! A process tree is killed by its process group and, because a command can
//! `setsid` its way out of the group, by a marker in the environment every
//! descendant inherits: the sweep kills each process that carries it. Inside
//! the sandbox the PID namespace makes this total: when bwrap dies, so does
//! everything it started.
//!
//! On Windows the tree is a job object: the command is put in a job that
//! kills everything in it when its last handle closes (the host's, however
//! the host ends), and killing the tree terminates the job. What a process
//! of the command starts joins the job by itself.

use super::output::CappedOutput;
use super::redirect::Sink;
#[cfg(unix)]
use nix::sys::signal::{Signal, kill};
#[cfg(unix)]
use nix::unistd::Pid;
use std::ffi::OsString;
use std::io::{Read, Write};
#[cfg(unix)]
use std::os::fd::{AsRawFd, OwnedFd};
#[cfg(unix)]
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The environment variable that marks a command's processes.
pub const MARKER_VAR: &str = "IOTA_SHELL_RUN";

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code (a signal `n` reads as `128 + n`, as in bash).
    Exit(i32),
    /// Its timeout expired and it was killed.
    TimedOut(Duration),
    /// Someone cancelled it.
    Cancelled,
    /// It was killed because its session ended or the user asked.
    Killed,
}

#[derive(Debug, Default)]
struct State {
    output: CappedOutput,
    ending: Option<Ending>,
}

/// A started command.
#[derive(Debug)]
pub struct Running {
    /// Its process id (bwrap's, when sandboxed).
    pub pid: u32,
    /// When it started.
    pub started: Instant,
    /// Its log file: every byte of its output, uncapped.
    pub log: PathBuf,
    #[cfg_attr(windows, allow(dead_code))]
    marker: String,
    /// Whether a PID namespace holds every process it starts (sandboxed):
    /// killing its leader then kills them all, and no sweep is needed.
    #[cfg_attr(windows, allow(dead_code))]
    contained: bool,
    /// The job every process of the command is in (Windows).
    #[cfg(windows)]
    job: Option<crate::platform::windows::Job>,
    state: Mutex<State>,
    done: Condvar,
    stop: Mutex<Option<Ending>>,
}

/// Set by [`cancel_everything`]: every running command stops as cancelled.
static CANCELLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Cancels every command this process runs, now and later (ESC or Ctrl+C at
/// the terminal). Async-signal-safe: it only stores a flag.
#[cfg(feature = "cli")]
pub fn cancel_everything() {
    CANCELLED.store(true, Ordering::SeqCst);
}

#[cfg(all(feature = "cli", unix))]
extern "C" fn on_interrupt(_: nix::libc::c_int) {
    cancel_everything();
}

/// Makes Ctrl+C cancel the running commands (their results say
/// `[command cancelled]`) instead of killing the host and orphaning them.
#[cfg(all(feature = "cli", unix))]
pub fn cancel_on_interrupt() {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, sigaction};
    let action = SigAction::new(SigHandler::Handler(on_interrupt), SaFlags::SA_RESTART, SigSet::empty());
    // SAFETY: the handler only stores to an atomic.
    let _ = unsafe { sigaction(Signal::SIGINT, &action) };
}

/// Makes Ctrl+C cancel the running commands (their results say
/// `[command cancelled]`) instead of killing the host and orphaning them.
#[cfg(all(feature = "cli", windows))]
pub fn cancel_on_interrupt() {
    std::thread::spawn(|| {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        runtime.block_on(async {
            let Ok(mut ctrl_c) = tokio::signal::windows::ctrl_c() else {
                return;
            };
            while ctrl_c.recv().await.is_some() {
                cancel_everything();
            }
        });
    });
}

/// Marks every descriptor from 3 up close-on-exec, in a child between fork
/// and exec (async-signal-safe: system calls only). `close_range` (Linux
/// 5.11) does it in one call; before it, each descriptor below the
/// soft limit on open files is marked one by one.
#[cfg(unix)]
fn close_others_on_exec() {
    // SAFETY: plain system calls on the calling process's own descriptors.
    unsafe {
        #[cfg(target_os = "linux")]
        if nix::libc::syscall(
            nix::libc::SYS_close_range,
            3u32,
            u32::MAX,
            nix::libc::CLOSE_RANGE_CLOEXEC,
        ) == 0
        {
            return;
        }
        let mut limit = nix::libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let top = if nix::libc::getrlimit(nix::libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 20) as i32
        } else {
            1 << 16
        };
        for fd in 3..top {
            nix::libc::fcntl(fd, nix::libc::F_SETFD, nix::libc::FD_CLOEXEC);
        }
    }
}

/// What to start, and how: the program line, its environment, and what the
/// child must hold before it executes (the seccomp filter's descriptors, a
/// cgroup, a process limit).
#[derive(Debug, Default)]
pub struct Launch {
    /// The program and its arguments (`argv[0]` is the program to execute).
    pub argv: Vec<OsString>,
    /// What the program sees as its `argv[0]`, when not the program path
    /// (an iota line's, Unix only).
    #[cfg_attr(windows, allow(dead_code))]
    pub arg0: Option<OsString>,
    /// The whole environment; `None` inherits the host's.
    pub env: Option<Vec<(OsString, OsString)>>,
    /// Where its stdin comes from and its stdout and stderr go (the output
    /// by default, stdin from /dev/null); an iota line's redirections.
    pub streams: super::redirect::Streams,
    /// Descriptors the program inherits (bwrap's `--add-seccomp-fd`); closed
    /// in the host once it has started.
    #[cfg(unix)]
    pub inherit: Vec<OwnedFd>,
    /// The directory it starts in, held: entered through `/proc/self/fd`
    /// in the child, so a path swapped since the decision is not followed.
    /// `None`: the `cwd` given to [`Running::start`], by path.
    #[cfg(unix)]
    pub cwd: Option<OwnedFd>,
    /// How many processes it may have: a cgroup it joins before it executes
    /// (so everything it starts is counted from the first fork), kept until
    /// it ends, or an rlimit.
    #[cfg(unix)]
    pub processes: Option<super::processes::Bound>,
}

/// How much of its output a command may leave in its log on the host:
/// `own` bytes, and no more than its session has left (`session`, shared by
/// the session's commands). Past either the output is still read (the
/// command is not held up, and the last of it still reaches its result),
/// but not written: one line says so, and the log grows no more.
#[derive(Debug, Clone)]
pub struct LogCap {
    /// Bytes this command's log may hold.
    pub own: u64,
    /// Bytes the session's logs may still take, together.
    pub session: Arc<std::sync::atomic::AtomicU64>,
}

impl LogCap {
    /// How much of `n` more bytes, after `kept`, may be written: taken from
    /// the session's allowance.
    fn take(&self, kept: u64, n: u64) -> u64 {
        let wanted = n.min(self.own.saturating_sub(kept));
        let mut granted = 0;
        let _ = self.session.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
            granted = wanted.min(left);
            Some(left - granted)
        });
        granted
    }

    /// The line a log ends with when its output stopped being kept.
    fn marker(&self, kept: u64) -> String {
        format!(
            "\n[iota-host: output past {} not kept in this log: a command keeps at most {} MiB (tools.shell.max_log), a session {} MiB; the command goes on]\n",
            iota_toolset::size::human(kept),
            self.own >> 20,
            (self.own.saturating_mul(SESSION_LOGS)) >> 20
        )
    }
}

/// A session's logs together may take this many times one command's.
pub const SESSION_LOGS: u64 = 4;

impl Running {
    /// Starts `launch` in `cwd` with output to `log`, kept there up to
    /// `log_cap`; the timeout, if any, is enforced by a watcher thread. An
    /// uncontained command carries an unpredictable marker in its
    /// environment for the sweep.
    pub fn start(
        mut launch: Launch,
        cwd: &Path,
        log: PathBuf,
        log_cap: LogCap,
        timeout: Option<Duration>,
        contained: bool,
    ) -> std::io::Result<Arc<Running>> {
        let marker = crate::secret::token();
        let (reader, writer) = std::io::pipe()?;
        let mut log_file = crate::host_state::create_exclusive(&log)?;
        let argv = &launch.argv;
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]).current_dir(cwd);
        let streams = std::mem::take(&mut launch.streams);
        command.stdin(streams.stdin.map_or_else(Stdio::null, Stdio::from));
        if let Some(env) = &launch.env {
            command.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
        }
        if !contained {
            command.env(MARKER_VAR, &marker);
        }
        let sink = |sink: Sink| -> std::io::Result<Stdio> {
            Ok(match sink {
                Sink::Output => writer.try_clone()?.into(),
                Sink::File(file) => file.into(),
            })
        };
        command.stdout(sink(streams.stdout)?);
        command.stderr(sink(streams.stderr)?);
        drop(writer);
        let spawned = spawn(command, &mut launch)?;
        drop(launch);
        let running = Arc::new(Running {
            pid: spawned.child.id(),
            started: Instant::now(),
            log,
            marker,
            contained,
            #[cfg(windows)]
            job: spawned.job,
            state: Mutex::new(State::default()),
            done: Condvar::new(),
            stop: Mutex::new(None),
        });
        let (child, processes) = (spawned.child, spawned.processes);
        let (eof_tx, eof_rx) = std::sync::mpsc::channel::<()>();
        let reading = running.clone();
        std::thread::spawn(move || {
            let mut reader = reader;
            let mut chunk = vec![0u8; 64 * 1024];
            let (mut kept, mut capped) = (0u64, false);
            loop {
                match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if !capped {
                            let granted = log_cap.take(kept, n as u64);
                            let _ = log_file.write_all(&chunk[..granted as usize]);
                            kept += granted;
                            if granted < n as u64 {
                                capped = true;
                                let _ = log_file.write_all(log_cap.marker(kept).as_bytes());
                            }
                        }
                        reading.state.lock().unwrap().output.push(&chunk[..n]);
                    }
                }
            }
            let _ = eof_tx.send(());
        });
        let waiting = running.clone();
        std::thread::spawn(move || waiting.watch(child, timeout, eof_rx, processes));
        Ok(running)
    }

    fn watch(
        self: &Arc<Self>,
        mut child: Child,
        timeout: Option<Duration>,
        eof: std::sync::mpsc::Receiver<()>,
        #[cfg_attr(windows, allow(unused_variables))] processes: Processes,
    ) {
        // The wait below blocks, so a normal exit is seen at once; deadlines,
        // stops and cancellation are polled by a companion thread that kills
        // the tree, which ends the wait.
        let exited = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (guard, guard_exited) = (self.clone(), exited.clone());
        std::thread::spawn(move || {
            let deadline = timeout.map(|t| guard.started + t);
            while !guard_exited.load(Ordering::SeqCst) {
                if CANCELLED.load(Ordering::SeqCst) {
                    guard.stop(Ending::Cancelled);
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    guard.stop(Ending::TimedOut(timeout.unwrap_or_default()));
                }
                if guard.stop.lock().unwrap().is_some() {
                    guard.kill_tree();
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let status = child.wait();
        exited.store(true, Ordering::SeqCst);
        let ending = match (self.stop.lock().unwrap().clone(), status) {
            (Some(stopped), _) => stopped,
            (None, Ok(status)) => Ending::Exit(exit_code(status)),
            (None, Err(_)) => Ending::Killed,
        };
        // The command's own stragglers (a `sleep &` it left) die with it.
        self.kill_tree();
        // Output still in the pipe arrives within moments; a daemon that
        // escaped the sweep may hold the pipe open for ever, so do not wait
        // for it longer than that.
        let _ = eof.recv_timeout(Duration::from_millis(250));
        // Before the ending is known: a process that exits right after it
        // (`iota-host call`) must not leave the command's cgroup behind.
        #[cfg(unix)]
        drop(processes);
        let mut state = self.state.lock().unwrap();
        state.ending = Some(ending);
        self.done.notify_all();
    }

    /// Kills the command and every process it started: its job; without
    /// one (it could not be made), `taskkill /T` of its tree by parent ids.
    #[cfg(windows)]
    pub fn kill_tree(&self) {
        match &self.job {
            Some(job) => job.terminate(),
            None => {
                let _ = Command::new("taskkill")
                    .args(["/F", "/T", "/PID", &self.pid.to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }

    /// Kills the command and every process it started.
    #[cfg(unix)]
    pub fn kill_tree(&self) {
        let _ = kill(Pid::from_raw(-(self.pid as i32)), Signal::SIGKILL);
        if self.contained {
            return;
        }
        // Processes that left the group (setsid) still carry the marker.
        for _ in 0..3 {
            let stragglers = marked_processes(&self.marker);
            if stragglers.is_empty() {
                break;
            }
            for pid in stragglers {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Asks the watcher to stop the command, recording why.
    pub fn stop(&self, why: Ending) {
        let mut stop = self.stop.lock().unwrap();
        if stop.is_none() {
            *stop = Some(why);
        }
    }

    /// Waits until it ends or `limit` passes; the ending, if it ended.
    pub fn wait(&self, limit: Option<Duration>) -> Option<Ending> {
        let state = self.state.lock().unwrap();
        let state = match limit {
            Some(limit) => {
                self.done
                    .wait_timeout_while(state, limit, |s| s.ending.is_none())
                    .unwrap()
                    .0
            }
            None => self.done.wait_while(state, |s| s.ending.is_none()).unwrap(),
        };
        state.ending.clone()
    }

    /// The ending, if it has ended.
    pub fn ending(&self) -> Option<Ending> {
        self.state.lock().unwrap().ending.clone()
    }

    /// The capped output so far.
    pub fn output(&self) -> String {
        self.state.lock().unwrap().output.render()
    }
}

/// PIDs of live processes whose environment carries `MARKER_VAR=marker`.
#[cfg(unix)]
fn marked_processes(marker: &str) -> Vec<i32> {
    let needle = format!("{MARKER_VAR}={marker}");
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == needle.as_bytes()))
        })
        .collect()
}

/// A spawned command and what holds its processes.
struct Spawned {
    child: Child,
    /// What bounds its processes, kept until it ends.
    processes: Processes,
    /// Its job (Windows).
    #[cfg(windows)]
    job: Option<crate::platform::windows::Job>,
}

/// What bounds a command's processes while it runs.
#[cfg(unix)]
type Processes = Option<super::processes::Bound>;
/// Windows bounds nothing but through the job.
#[cfg(windows)]
type Processes = ();

/// Spawns `command` in its own process group, dying with the host, every
/// descriptor but its stdio and `launch.inherit` closed at exec, in its
/// cgroup and under its process limit (`launch.processes`).
#[cfg(unix)]
fn spawn(mut command: Command, launch: &mut Launch) -> std::io::Result<Spawned> {
    command.process_group(0);
    // The child's own copy of the descriptor, at its chdir (before exec).
    if let Some(through) = launch
        .cwd
        .as_ref()
        .and_then(|dir| crate::project::fd_path(dir.as_raw_fd()))
    {
        command.current_dir(through);
    }
    if let Some(arg0) = &launch.arg0 {
        command.arg0(arg0);
    }
    // And entered by the descriptor itself just before exec, where no
    // `/proc` gives it a path (macOS): what the command starts in is the
    // directory held, never its path resolved again.
    let held_cwd = launch.cwd.as_ref().map(|dir| dir.as_raw_fd());
    let inherit: Vec<i32> = launch.inherit.iter().map(|fd| fd.as_raw_fd()).collect();
    let mut processes = launch.processes.take();
    let cgroup_procs = processes.as_mut().and_then(|p| p.take_procs());
    let cgroup = cgroup_procs.as_ref().map(|fd| fd.as_raw_fd());
    let max_processes = processes.as_ref().and_then(|p| p.rlimit());
    let host = std::process::id() as i32;
    // SAFETY: between fork and exec the closure only makes system calls
    // (prctl, getppid, close_range, fcntl, write, fchdir, setrlimit) on values
    // prepared before the fork.
    unsafe {
        command.pre_exec(move || {
            // The command dies with the host, however the host dies (a
            // `kill -9` too): an iota child left running would go on
            // writing, holding its scratch directory for ever. (Spawned
            // from the lasting spawner thread: the signal follows the
            // forking thread, not the process.) A host already gone
            // before the signal was armed is checked for after. (The signal
            // is Linux's: elsewhere the process group and the marker sweep
            // are all there is.)
            #[cfg(target_os = "linux")]
            if nix::libc::prctl(nix::libc::PR_SET_PDEATHSIG, nix::libc::SIGKILL) == -1 {
                return Err(std::io::Error::other("the host exited"));
            }
            if nix::libc::getppid() != host {
                return Err(std::io::Error::other("the host exited"));
            }
            // Nothing the host holds reaches the command but its stdio
            // and what it is meant to inherit: every other descriptor
            // (another session's files, wasmtime's, whatever the host
            // inherited itself) closes at exec.
            close_others_on_exec();
            for &fd in &inherit {
                if nix::libc::fcntl(fd, nix::libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(fd) = cgroup
                && nix::libc::write(fd, b"0".as_ptr().cast(), 1) != 1
            {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(dir) = held_cwd
                && nix::libc::fchdir(dir) == -1
            {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(max) = max_processes {
                let limit = nix::libc::rlimit {
                    rlim_cur: max,
                    rlim_max: max,
                };
                if nix::libc::setrlimit(nix::libc::RLIMIT_NPROC, &limit) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let (command, child) = spawn_from_lasting_thread(command);
    let child = child?;
    drop(command);
    launch.inherit.clear();
    drop(cgroup_procs);
    Ok(Spawned { child, processes })
}

/// Spawns `command` with no console window of its own, in a new process
/// group, and puts it in a job that kills every process in it when the
/// host's handle closes. A job that cannot be made (an old Windows that
/// forbids nesting) leaves the command to `taskkill /T`.
#[cfg(windows)]
fn spawn(mut command: Command, _launch: &mut Launch) -> std::io::Result<Spawned> {
    use std::os::windows::process::CommandExt;
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    const CREATE_NO_WINDOW: u32 = 0x0800_0000;
    command.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW);
    let child = command.spawn()?;
    let job = crate::platform::windows::Job::new()
        .ok()
        .filter(|job| job.assign(&child).is_ok());
    Ok(Spawned {
        child,
        processes: (),
        job,
    })
}

/// The code a command ended with: a Unix signal `n` reads as `128 + n`,
/// as in bash.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    #[cfg(unix)]
    return status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    #[cfg(windows)]
    status.code().unwrap_or(1)
}

/// Go-style durations, as the spec writes them: `42s`, `1m12s`, `10m0s`, `1h0m0s`.
pub fn duration(d: Duration) -> String {
    let total = d.as_secs_f64();
    if total < 1.0 && total > 0.0 {
        return format!("{}ms", d.as_millis());
    }
    if d.subsec_millis() != 0 && total < 60.0 {
        return format!("{}s", (total * 1000.0).round() / 1000.0);
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// Spawns `command` from the process's spawner thread; hands the command
/// back (its descriptors are closed by dropping it) with the child.
///
/// (Unix.) bwrap's `--die-with-parent` (`PR_SET_PDEATHSIG`) fires when the *thread*
/// that forked it exits, not the process: a background job started from a
/// round's worker thread, or from tokio's blocking pool (whose idle threads
/// exit after ten seconds), would be killed with that thread. The spawner
/// thread lives as long as the process, so a command dies with the host,
/// never with a passing thread.
#[cfg(unix)]
fn spawn_from_lasting_thread(mut command: Command) -> (Command, std::io::Result<std::process::Child>) {
    type Spawn = Box<dyn FnOnce() + Send>;
    static SPAWNER: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<Spawn>>> = std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Spawn>();
        let started = std::thread::Builder::new()
            .name("iota-spawner".into())
            .spawn(move || rx.into_iter().for_each(|spawn| spawn()));
        if started.is_err() {
            eprintln!("iota-host: warning: no spawner thread; commands start from the calling thread");
        }
        Mutex::new(tx)
    });
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let sent = spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(Box::new(move || {
            let child = command.spawn();
            let _ = done_tx.send((command, child));
        }));
    match sent {
        Ok(()) => done_rx.recv().expect("the spawner thread answers every spawn"),
        Err(std::sync::mpsc::SendError(spawn)) => {
            // The spawner thread could not start: spawn here, as before.
            spawn();
            done_rx.recv().expect("the spawn ran on this thread")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_go() {
        assert_eq!(duration(Duration::from_secs(600)), "10m0s");
        assert_eq!(duration(Duration::from_secs(42)), "42s");
        assert_eq!(duration(Duration::from_secs(72)), "1m12s");
        assert_eq!(duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(duration(Duration::from_millis(250)), "250ms");
    }
}
