//! Timing and memory measurement: medians of wall time, and the peak RSS of a
//! command from GNU time.

use std::process::Command;
use std::time::{Duration, Instant};

/// The median wall time of `runs` runs of `f` after one warm-up run.
pub fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// The median wall times of `runs` runs each of `ours` and `peer`, taken
/// in turn (one of each per round, after a warm-up of each), so that a drift
/// of the machine — its page cache reclaimed, a busy neighbour — falls on
/// both sides of a ratio rather than on one.
pub fn paired(runs: usize, mut ours: impl FnMut(), mut peer: impl FnMut()) -> (Duration, Duration) {
    ours();
    peer();
    let timed = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        start.elapsed()
    };
    let (mut a, mut b): (Vec<Duration>, Vec<Duration>) =
        (0..runs).map(|_| (timed(&mut ours), timed(&mut peer))).unzip();
    a.sort();
    b.sort();
    (a[a.len() / 2], b[b.len() / 2])
}

/// `12.3 ms`, or `45.6 µs` below a millisecond.
pub fn human(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

/// One run of `cmd` (stdout and stderr discarded): its wall time. Exit codes
/// 0 and 1 (no matches) count as success.
pub fn run_timed(cmd: &mut Command) -> Duration {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let start = Instant::now();
    let status = cmd.status().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let elapsed = start.elapsed();
    assert!(matches!(status.code(), Some(0 | 1)), "{cmd:?} failed: {status}");
    elapsed
}

/// The peak resident set of one run of `cmd`, in MiB, measured by GNU time
/// (`/usr/bin/time -f %M`): a child's own `ru_maxrss` would include the
/// memory of this large process it was spawned from. `None` without it.
pub fn peak_rss(cmd: &Command) -> Option<f64> {
    let out = tempfile::NamedTempFile::new().ok()?;
    let mut timed = Command::new("/usr/bin/time");
    timed
        .args(["-f", "%M", "-o"])
        .arg(out.path())
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => timed.env(key, value),
            None => timed.env_remove(key),
        };
    }
    timed
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    timed.status().ok()?;
    let kib: f64 = std::fs::read_to_string(out.path())
        .ok()?
        .trim()
        .lines()
        .last()?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// The median wall time of `runs` runs of `cmd` after a warm-up, and the
/// peak RSS of one more run.
pub fn median_command(runs: usize, mut cmd: impl FnMut() -> Command) -> (Duration, Option<f64>) {
    run_timed(&mut cmd());
    let mut times: Vec<Duration> = (0..runs).map(|_| run_timed(&mut cmd())).collect();
    times.sort();
    (times[times.len() / 2], peak_rss(&cmd()))
}

/// `48 MiB`, or `n/a` without GNU time.
pub fn mib(rss: Option<f64>) -> String {
    rss.map_or("n/a".to_string(), |m| format!("{m:.0} MiB"))
}
