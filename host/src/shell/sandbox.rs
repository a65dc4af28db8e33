//! The OS sandbox for shell commands: bubblewrap on Linux, Seatbelt on macOS.
//!
//! Spec: "Writes are confined to this set of directories, in this order,
//! duplicates dropped: the project root; the run's temp directory; /tmp; the
//! cache directory (created if missing); then every write: path, made absolute.
//! … Network is blocked unless network: true." On top of that, hardening the
//! way codex-rs and Claude Code do: a new session (no TIOCSTI into the
//! terminal), a new PID namespace with its own /proc (no host environ), all
//! capabilities dropped even when the host runs as root, the root's `.git`
//! and `.iota` read-only (no hook planting, no renaming them away, no
//! creating them where there were none), a private /tmp per session, no host
//! unix sockets under /run, `/proc/sys` and the other kernel knobs read-only
//! (uid 0 inside maps to the host's root, and sysctl permissions rest on the
//! uid alone), a seccomp filter (`seccomp.rs`), and a bound on processes
//! (`processes.rs`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Which sandbox this machine has; decided once, at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandbox {
    /// bubblewrap, at this path.
    Bubblewrap(PathBuf),
    /// macOS Seatbelt through `/usr/bin/sandbox-exec`.
    Seatbelt,
    /// None available.
    Unavailable,
}

impl Sandbox {
    /// Finds the machine's sandbox: `bwrap` on PATH that can actually create a
    /// namespace here (some containers forbid it), or `sandbox-exec` on macOS.
    /// PATH entries inside `writable` (what sandboxed commands may write)
    /// are passed over: a `bwrap` planted there would be the sandbox.
    pub fn detect(writable: &[PathBuf]) -> Sandbox {
        if cfg!(target_os = "macos") && Path::new("/usr/bin/sandbox-exec").exists() {
            return Sandbox::Seatbelt;
        }
        let Some(bwrap) = find_trusted("bwrap", writable) else {
            return Sandbox::Unavailable;
        };
        if ProbeMemo::remembered(&bwrap, PROBE_MEMO, || probe(&bwrap)) {
            Sandbox::Bubblewrap(bwrap)
        } else {
            Sandbox::Unavailable
        }
    }

    /// A `bwrap` this machine has that failed its probe, when that is why
    /// there is no sandbox: said at every start, for a sandbox the user
    /// installed and does not get is not a thing to find out from a file
    /// written where it should not have been.
    pub fn failed_bwrap(writable: &[PathBuf]) -> Option<PathBuf> {
        if cfg!(target_os = "macos") {
            return None;
        }
        find_trusted("bwrap", writable)
    }

    /// Whether commands can be sandboxed.
    pub fn is_available(&self) -> bool {
        !matches!(self, Sandbox::Unavailable)
    }
}

/// Whether `bwrap` can create the namespaces the sandbox needs here (asked
/// afresh; `Sandbox::detect` remembers the answer).
pub fn probe(bwrap: &Path) -> bool {
    std::process::Command::new(bwrap)
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "true",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether `bwrap` can mount an overlay (bubblewrap 0.9's `--overlay`, and a
/// kernel that allows one in a user namespace), asked afresh: a write into
/// the overlay lands in its upper directory and not in the lower one.
pub fn probe_overlay(bwrap: &Path) -> bool {
    // A fresh, unguessable directory of the host's own, removed after.
    let dir = std::env::temp_dir().join(format!("iota-overlay-probe-{}", crate::secret::token()));
    if crate::platform::private_dir_builder().create(&dir).is_err() {
        return false;
    }
    let works = probe_overlay_in(bwrap, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    works
}

/// [`probe_overlay`] in the directory `dir`.
fn probe_overlay_in(bwrap: &Path, dir: &Path) -> bool {
    let [lower, upper, work] = ["lower", "upper", "work"].map(|d| dir.join(d));
    if [&lower, &upper, &work].iter().any(|d| std::fs::create_dir(d).is_err()) {
        return false;
    }
    let ran = std::process::Command::new(bwrap)
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ])
        .arg("--overlay-src")
        .arg(&lower)
        .arg("--overlay")
        .args([&upper, &work, &lower])
        .args(["touch"])
        .arg(lower.join("written"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ran && upper.join("written").exists() && !lower.join("written").exists()
}

/// Whether sandboxed commands get the cache as an overlay here (decided once
/// per binary and boot, like the sandbox itself).
pub fn overlay_available(sandbox: &Sandbox) -> bool {
    match sandbox {
        Sandbox::Bubblewrap(bwrap) => ProbeMemo::remembered(bwrap, OVERLAY_MEMO, || probe_overlay(bwrap)),
        _ => false,
    }
}

/// A probe's answer remembered in the host's state directory, so a
/// start-up does not spawn bwrap each time (it is most of an `iota-host
/// call`'s time). The key is the binary (path, size, mtime) and the boot: an
/// upgrade, a reboot (sysctls reset) or another user probes again. The memo
/// is sealed like all host state (`host_state.rs`): one the host did not
/// write is no memo, and the probe runs afresh.
struct ProbeMemo {
    state: crate::host_state::StateDir,
    key: String,
    file: &'static str,
}

/// The sandbox probe's memo in the state directory.
const PROBE_MEMO: &str = "sandbox-probe";
/// The overlay probe's memo.
const OVERLAY_MEMO: &str = "sandbox-overlay-probe";

impl ProbeMemo {
    /// The remembered answer of the probe `file` for `bwrap`, else `probe`'s,
    /// remembered.
    fn remembered(bwrap: &Path, file: &'static str, probe: impl FnOnce() -> bool) -> bool {
        let memo = ProbeMemo::for_binary(bwrap, file);
        if let Some(works) = memo.as_ref().and_then(ProbeMemo::recall) {
            return works;
        }
        let works = probe();
        if let Some(memo) = &memo {
            memo.store(works);
        }
        works
    }

    fn for_binary(bwrap: &Path, file: &'static str) -> Option<ProbeMemo> {
        let meta = std::fs::metadata(bwrap).ok()?;
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
        let key = format!(
            "{}|{}|{}|{}",
            bwrap.display(),
            meta.len(),
            modified.as_nanos(),
            boot.trim()
        );
        let state = crate::host_state::StateDir::open_default().ok()?;
        Some(ProbeMemo { state, key, file })
    }

    fn recall(&self) -> Option<bool> {
        let text = String::from_utf8(self.state.read(self.file)?).ok()?;
        let mut lines = text.lines();
        if lines.next()? != self.key {
            return None;
        }
        match lines.next()? {
            "works" => Some(true),
            "fails" => Some(false),
            _ => None,
        }
    }

    /// A memo that cannot be written is simply not kept.
    fn store(&self, works: bool) {
        let text = format!("{}\n{}\n", self.key, if works { "works" } else { "fails" });
        let _ = self.state.write(self.file, text.as_bytes());
    }
}

/// Why a sandboxed set cannot run with this root and config, if it cannot:
/// a root of `/` or of the home directory makes everything the user owns
/// writable (every dotfile, every other project, the disk itself under `/`),
/// and no writable directory may hold the host's own state (a command could
/// move it aside and put its own in its place).
pub fn refusal(config: &super::config::ShellConfig, root: &Path, home: Option<&Path>) -> Option<String> {
    if config.sandbox == super::config::SandboxMode::Off {
        return None;
    }
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let root = canonical(root);
    let home = home.map(canonical);
    if root == Path::new("/") || home.as_deref() == Some(root.as_path()) {
        return Some(format!(
            "the project root {} would make {} writable to sandboxed commands; run from the project's directory or pass --root <project directory>",
            root.display(),
            if root == Path::new("/") {
                "the whole filesystem"
            } else {
                "the whole home directory"
            }
        ));
    }
    let state = crate::host_state::default_dir().map(|d| canonical(&d))?;
    writable_dirs(config, &root)
        .iter()
        .map(|dir| canonical(dir))
        .find(|dir| state.starts_with(dir))
        .map(|dir| {
            format!(
                "{} is writable to sandboxed commands and holds the host's state directory {}; move the state ($IOTA_CACHE_DIR or $XDG_STATE_HOME) or narrow the root or write: paths",
                dir.display(),
                state.display()
            )
        })
}

/// What sandboxed commands under `config` at `root` may write (the root,
/// the cache directory, `write:` paths, and for an iota exception's process
/// its parent's root, which the parent's sandboxed commands wrote): nothing
/// the host runs or trusts is looked up or kept there.
pub fn writable_dirs(config: &super::config::ShellConfig, root: &Path) -> Vec<PathBuf> {
    let parent_root = std::env::var_os(super::MODEL_ROOT_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    std::iter::once(root.to_path_buf())
        .chain(parent_root)
        .chain(super::cache_dir_path())
        .chain(config.write.iter().cloned())
        .collect()
}

/// What one sandboxed command may do.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The project root (writable; its `.git` read-only), where it is mounted.
    pub root: PathBuf,
    /// What bubblewrap binds by descriptor instead of by path, when the
    /// root is pinned: so a directory swapped in for the root's path (or a
    /// path in it) since the host started is not what it binds.
    pub pinned: Option<Pinned>,
    /// The session's private directory, mounted as `/tmp` (the run's temp dir).
    pub private_tmp: PathBuf,
    /// The cache directory (`$XDG_CACHE_HOME` or `~/.cache`), and how
    /// commands write it.
    pub cache: Option<CacheMount>,
    /// When commands see only part of the home directory (`home.rs`).
    pub home_only: Option<HomeOnly>,
    /// Extra writable directories from `write:`.
    pub extra_writable: Vec<PathBuf>,
    /// Directories visible read-only at the same path even under the private
    /// /tmp (the background-job logs the model is told to `tail`).
    pub visible: Vec<PathBuf>,
    /// Whether the network is allowed.
    pub network: bool,
    /// Paths under the root that stay read-only (`.git`, `.iota`); each
    /// exists when the command starts (a placeholder where there was none).
    pub protected: Vec<PathBuf>,
    /// Every repository's own directory (or `.git` file) below the root,
    /// kept read-only too: bound if still there when the command starts.
    pub repositories: Vec<PathBuf>,
    /// What no command may see at all: the host's own state (compiled code
    /// it runs, the key that seals it) and the user's credential stores
    /// (`credentials.rs`). A directory is hidden under an empty read-only
    /// mount, a file under `/dev/null`.
    pub hidden: Vec<PathBuf>,
}

/// What of the user's own directories commands see when not all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeOnly {
    /// The directories shown only in part: the home directory, and the XDG
    /// config, data and state directories where they are outside it.
    pub roots: Vec<PathBuf>,
    /// What of them is shown (read-only).
    pub shown: Vec<PathBuf>,
}

/// Descriptors bubblewrap inherits and binds (`--bind-fd`, `--ro-bind-fd`),
/// closing each once bound: the pinned root, the directories on the way to
/// what stays read-only, and that, each opened through the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// The root's descriptor.
    pub root: i32,
    /// Each directory on the way to a read-only path ([`Policy::pinned_ancestors`]):
    /// its descriptor, and where it is bound onto itself, writable.
    pub in_place: Vec<(i32, PathBuf)>,
    /// Each read-only path under the root: its descriptor, and where it is
    /// mounted.
    pub read_only: Vec<(i32, PathBuf)>,
}

/// How sandboxed commands write the cache directory. Tools outside the
/// sandbox run what some caches hold (corepack's package managers, npx's and
/// pre-commit's environments, `go-build`, compiler caches), so what a command
/// writes there must never reach the user's real cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheMount {
    /// An overlay: reads see the real cache, writes land in `upper` (kept
    /// per project in the host's state, so builds stay warm), the real cache
    /// unchanged.
    Overlay {
        /// The cache directory.
        cache: PathBuf,
        /// Where writes land.
        upper: PathBuf,
        /// The overlay's work directory, beside `upper`.
        work: PathBuf,
    },
    /// No overlay here: a directory of the project's own, in the host's
    /// state, stands at the cache's path (it starts empty).
    Private {
        /// The cache directory.
        cache: PathBuf,
        /// What commands see and write there.
        dir: PathBuf,
    },
    /// The user named the cache under `write:`: the real one, writable.
    Real(PathBuf),
    /// Seatbelt can do neither: the cache stays read-only.
    ReadOnly(PathBuf),
}

impl CacheMount {
    /// The cache directory's path.
    pub fn path(&self) -> &Path {
        match self {
            CacheMount::Overlay { cache, .. } | CacheMount::Private { cache, .. } => cache,
            CacheMount::Real(cache) | CacheMount::ReadOnly(cache) => cache,
        }
    }

    /// Whether commands may write at its path.
    pub fn writable(&self) -> bool {
        !matches!(self, CacheMount::ReadOnly(_))
    }
}

/// Kernel interfaces under a fresh /proc that write to global state with no
/// check but the uid: bound read-only from the host's, as container runtimes do.
const PROC_READ_ONLY: &[&str] = &["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"];

impl Policy {
    /// Whether `path` can be seen inside the sandbox at all: not when a
    /// hidden home or a private cache already keeps it out (a mount over it
    /// would need a mount point made where nothing may be made).
    pub fn shows(&self, path: &Path) -> bool {
        if let Some(CacheMount::Private { cache, .. }) = &self.cache
            && path.starts_with(cache)
        {
            return false;
        }
        let Some(only) = &self.home_only else {
            return true;
        };
        let cache = self.cache.as_ref().map(|c| c.path().to_path_buf());
        !only.roots.iter().any(|root| path.starts_with(root))
            || only
                .shown
                .iter()
                .chain(std::iter::once(&self.root))
                .chain(&self.extra_writable)
                .chain(cache.iter())
                .any(|visible| path.starts_with(visible))
    }

    /// The directories between the root and each read-only path in it
    /// (`vendor` and `vendor/lib` for `vendor/lib/.git`), sorted, each bound
    /// onto itself: a mount point cannot be renamed or removed (`EBUSY`),
    /// where a read-only `.git` in a directory that can be is carried away
    /// with it, and a new directory with a writable `.git` put in its place
    /// (a submodule's, run by the user's next `git status` at the root).
    pub fn pinned_ancestors(&self) -> Vec<PathBuf> {
        let mut dirs = std::collections::BTreeSet::new();
        for path in self.protected.iter().chain(&self.repositories) {
            let Ok(rel) = path.strip_prefix(&self.root) else {
                continue;
            };
            for ancestor in rel.ancestors().skip(1) {
                if !ancestor.as_os_str().is_empty() {
                    dirs.insert(self.root.join(ancestor));
                }
            }
        }
        dirs.into_iter().collect()
    }

    /// The writable directories in the spec's order, duplicates dropped.
    pub fn writable(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        let candidates = [
            Some(self.root.clone()),
            Some(self.private_tmp.clone()),
            Some(PathBuf::from("/tmp")),
            self.cache
                .as_ref()
                .filter(|c| c.writable())
                .map(|c| c.path().to_path_buf()),
        ];
        for dir in candidates
            .into_iter()
            .flatten()
            .chain(self.extra_writable.iter().cloned())
        {
            if !out.contains(&dir) {
                out.push(dir);
            }
        }
        out
    }
}

/// The bubblewrap command line that runs `argv` under `policy` in `cwd`;
/// `seccomp_fds` are the inherited descriptors holding the filter's programs.
pub fn bwrap_args(policy: &Policy, cwd: &Path, seccomp_fds: &[i32], argv: &[OsString]) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut flags = |items: &[&str]| args.extend(items.iter().map(OsString::from));
    flags(&["--new-session", "--die-with-parent"]);
    flags(&[
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]);
    if !policy.network {
        flags(&["--unshare-net"]);
    }
    flags(&[
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]);
    for knob in PROC_READ_ONLY {
        flags(&["--ro-bind-try", knob, knob]);
    }
    // Host daemons' sockets (dbus, docker, …) live under /run; a socket on a
    // read-only mount still accepts connections, so /run is emptied even with
    // the network on, keeping only the resolver's files DNS needs.
    flags(&["--tmpfs", "/run"]);
    if policy.network {
        flags(&["--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]);
    }
    // A hidden home first: what is bound below comes back on top of it (the
    // empty home is made read-only once every mount point is in it).
    if let Some(only) = &policy.home_only {
        for root in &only.roots {
            args.extend(["--tmpfs".into(), root.into()]);
        }
        for path in &only.shown {
            args.extend(["--ro-bind-try".into(), path.into(), path.into()]);
        }
    }
    let mut mount = |kind: &str, source: &Path, destination: &Path| {
        args.extend([kind.into(), source.into(), destination.into()]);
    };
    // The private /tmp first: later binds may live below /tmp and land on top of it.
    mount("--bind", &policy.private_tmp, Path::new("/tmp"));
    match &policy.pinned {
        Some(pinned) => mount("--bind-fd", Path::new(&pinned.root.to_string()), &policy.root),
        None => mount("--bind", &policy.root, &policy.root),
    }
    for dir in &policy.extra_writable {
        if dir.as_path() != Path::new("/tmp") && *dir != policy.private_tmp && *dir != policy.root && dir.is_dir() {
            mount("--bind", dir, dir);
        }
    }
    for dir in policy.visible.iter().filter(|d| d.is_dir()) {
        mount("--ro-bind", dir, dir);
    }
    // Parents before what is in them: a bind covers what was mounted below
    // its path before it.
    let fd = |n: &i32| OsString::from(n.to_string());
    let mut in_root: Vec<(PathBuf, &str, OsString)> = match &policy.pinned {
        Some(pinned) => {
            let in_place = pinned.in_place.iter().map(|(n, p)| (p.clone(), "--bind-fd", fd(n)));
            let read_only = pinned.read_only.iter().map(|(n, p)| (p.clone(), "--ro-bind-fd", fd(n)));
            in_place.chain(read_only).collect()
        }
        None => {
            let by_path = |kind: &'static str| move |p: &PathBuf| (p.clone(), kind, p.clone().into_os_string());
            let in_place = policy
                .pinned_ancestors()
                .iter()
                .map(by_path("--bind-try"))
                .collect::<Vec<_>>();
            let protected = policy.protected.iter().map(by_path("--ro-bind"));
            let repositories = policy.repositories.iter().map(by_path("--ro-bind-try"));
            in_place.into_iter().chain(protected).chain(repositories).collect()
        }
    };
    in_root.sort_by(|a, b| a.0.cmp(&b.0));
    for (destination, kind, source) in in_root {
        args.extend([kind.into(), source, destination.into_os_string()]);
    }
    match &policy.cache {
        Some(CacheMount::Overlay { cache, upper, work }) => {
            args.extend(["--overlay-src".into(), cache.into()]);
            args.extend(["--overlay".into(), upper.into(), work.into(), cache.into()]);
        }
        Some(CacheMount::Private { cache, dir }) => {
            args.extend(["--bind".into(), dir.into(), cache.into()]);
        }
        Some(CacheMount::Real(cache)) if cache.is_dir() && !policy.extra_writable.contains(cache) => {
            args.extend(["--bind".into(), cache.into(), cache.into()]);
        }
        Some(CacheMount::ReadOnly(cache)) if policy.home_only.is_some() => {
            args.extend(["--ro-bind-try".into(), cache.into(), cache.into()]);
        }
        _ => {}
    }
    if let Some(only) = &policy.home_only {
        for root in &only.roots {
            args.extend(["--remount-ro".into(), root.into()]);
        }
    }
    // Last, so that no writable bind above can uncover them.
    // What is under another hidden directory is out of sight already (and
    // there is no making a mount point in an empty read-only one).
    let under_another = |p: &PathBuf| policy.hidden.iter().any(|h| h != p && p.starts_with(h));
    for path in policy.hidden.iter().filter(|p| policy.shows(p) && !under_another(p)) {
        if path.is_dir() {
            args.extend(["--tmpfs".into(), path.into(), "--remount-ro".into(), path.into()]);
        } else if path.is_file() {
            args.extend(["--ro-bind".into(), "/dev/null".into(), path.into()]);
        }
    }
    for fd in seccomp_fds {
        args.extend(["--add-seccomp-fd".into(), fd.to_string().into()]);
    }
    args.extend(["--chdir".into(), cwd.into(), "--".into()]);
    args.extend(argv.iter().cloned());
    args
}

/// The Seatbelt profile for `/usr/bin/sandbox-exec -p PROFILE`: everything
/// readable, writes only under the writable directories, network per policy.
#[cfg_attr(windows, allow(dead_code))]
pub fn seatbelt_profile(policy: &Policy) -> String {
    let mut profile = String::from(
        "(version 1)\n(deny default)\n(allow process-exec)\n(allow process-fork)\n(allow signal (target same-sandbox))\n(allow sysctl-read)\n(allow mach-lookup)\n(allow ipc-posix-shm)\n(allow file-read*)\n(allow file-write-data (literal \"/dev/null\") (literal \"/dev/tty\") (regex #\"^/dev/fd/\"))\n",
    );
    profile.push_str("(allow file-write*\n");
    for dir in policy.writable() {
        profile.push_str(&format!("    (subpath {})\n", seatbelt_string(&dir)));
    }
    profile.push_str(")\n");
    // Later rules win: the home directory unreadable, then what is shown of it.
    if let Some(only) = &policy.home_only {
        for root in &only.roots {
            profile.push_str(&format!("(deny file-read* (subpath {}))\n", seatbelt_string(root)));
        }
        let cache = policy.cache.as_ref().map(|c| c.path().to_path_buf());
        let visible = only
            .shown
            .iter()
            .chain(std::iter::once(&policy.root))
            .chain(&policy.extra_writable)
            .chain(cache.iter());
        for path in visible {
            profile.push_str(&format!("(allow file-read* (subpath {}))\n", seatbelt_string(path)));
        }
    }
    for path in policy.protected.iter().chain(&policy.repositories) {
        profile.push_str(&format!("(deny file-write* (subpath {}))\n", seatbelt_string(path)));
    }
    // The directories on the way to them: not renamed or removed (what is
    // in them stays writable).
    for dir in policy.pinned_ancestors() {
        profile.push_str(&format!("(deny file-write* (literal {}))\n", seatbelt_string(&dir)));
    }
    for dir in &policy.hidden {
        profile.push_str(&format!(
            "(deny file-read* file-write* (subpath {}))\n",
            seatbelt_string(dir)
        ));
    }
    if policy.network {
        profile.push_str("(allow network*)\n");
    }
    profile
}

#[cfg_attr(windows, allow(dead_code))]
fn seatbelt_string(path: &Path) -> String {
    format!(
        "\"{}\"",
        path.to_string_lossy().replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// An executable named `name` (with each of `PATHEXT`'s extensions) in an
/// absolute PATH entry: Windows has no sandbox whose commands could have
/// planted one.
#[cfg(windows)]
pub fn find_trusted(name: &str, _writable: &[PathBuf]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .flat_map(|dir| super::iota::program_names(name).into_iter().map(move |n| dir.join(n)))
        .find(|candidate| candidate.is_file())
}

/// An executable named `name` on PATH that no sandboxed command can have
/// put there: only absolute PATH entries outside `writable` (and outside
/// /tmp, /var/tmp and /dev/shm), and only a file that neither group nor
/// others may write, owned by root or the user.
#[cfg(unix)]
pub fn find_trusted(name: &str, writable: &[PathBuf]) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let untrusted: Vec<PathBuf> = writable
        .iter()
        .map(|d| canonical(d))
        .chain(["/tmp", "/var/tmp", "/dev/shm"].map(|d| canonical(Path::new(d))))
        .collect();
    let me = nix::unistd::geteuid().as_raw();
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| canonical(&dir))
        .filter(|dir| !untrusted.iter().any(|u| dir.starts_with(u)))
        .map(|dir| dir.join(name))
        .find(|candidate| {
            let Ok(meta) = std::fs::metadata(candidate) else {
                return false;
            };
            let real = canonical(candidate);
            meta.is_file()
                && meta.mode() & 0o111 != 0
                && meta.mode() & 0o022 == 0
                && (meta.uid() == 0 || meta.uid() == me)
                && !untrusted.iter().any(|u| real.starts_with(u))
        })
}

/// An executable named `name` on PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_memo_answers_only_for_its_own_key_and_only_when_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let state = crate::host_state::StateDir::open(&dir.path().join("state")).unwrap();
        let memo = ProbeMemo {
            state: state.clone(),
            key: "/usr/bin/bwrap|1|2|boot-a".into(),
            file: PROBE_MEMO,
        };
        assert_eq!(memo.recall(), None);
        memo.store(true);
        assert_eq!(memo.recall(), Some(true));
        memo.store(false);
        assert_eq!(memo.recall(), Some(false));
        let upgraded = ProbeMemo {
            state: state.clone(),
            key: "/usr/bin/bwrap|1|3|boot-a".into(),
            file: PROBE_MEMO,
        };
        assert_eq!(upgraded.recall(), None, "another binary or boot probes again");
        // A memo written by anyone but the host (a flipped verdict) is none.
        std::fs::write(state.dir().join(PROBE_MEMO), "/usr/bin/bwrap|1|2|boot-a\nfails\n").unwrap();
        assert_eq!(memo.recall(), None);
    }

    fn policy() -> Policy {
        Policy {
            root: "/home/u/project".into(),
            pinned: None,
            private_tmp: "/tmp/iota-1/tmp".into(),
            cache: Some(CacheMount::Real("/home/u/.cache".into())),
            home_only: None,
            extra_writable: vec!["/home/u/project".into(), "/data".into()],
            visible: vec![],
            network: false,
            protected: vec!["/home/u/project/.git".into()],
            repositories: vec!["/home/u/project/vendor/sub/.git".into()],
            hidden: vec![],
        }
    }

    #[test]
    fn writable_dirs_in_the_specs_order_without_duplicates() {
        let want: Vec<PathBuf> = ["/home/u/project", "/tmp/iota-1/tmp", "/tmp", "/home/u/.cache", "/data"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(policy().writable(), want);
    }

    #[test]
    fn seatbelt_profile_confines_writes_and_network() {
        let text = seatbelt_profile(&policy());
        assert!(text.starts_with("(version 1)\n(deny default)\n"));
        assert!(text.contains("    (subpath \"/home/u/project\")\n    (subpath \"/tmp/iota-1/tmp\")\n    (subpath \"/tmp\")\n    (subpath \"/home/u/.cache\")\n    (subpath \"/data\")\n"));
        assert!(text.contains("(deny file-write* (subpath \"/home/u/project/.git\"))"));
        assert!(text.contains("(deny file-write* (literal \"/home/u/project/vendor\"))"));
        assert!(text.contains("(deny file-write* (literal \"/home/u/project/vendor/sub\"))"));
        assert!(!text.contains("network"));
        let mut open = policy();
        open.network = true;
        assert!(seatbelt_profile(&open).contains("(allow network*)"));
    }

    #[test]
    fn bwrap_drops_capabilities_and_network() {
        let args: Vec<String> = bwrap_args(
            &policy(),
            Path::new("/home/u/project"),
            &[7],
            &["bash".into(), "-c".into(), "true".into()],
        )
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
        let joined = args.join(" ");
        assert!(joined.starts_with("--new-session --die-with-parent --unshare-user --unshare-pid"));
        assert!(joined.contains("--unshare-net"));
        assert!(joined.contains("--cap-drop ALL"));
        assert!(joined.contains("--bind /tmp/iota-1/tmp /tmp"));
        assert!(joined.contains("--ro-bind-try /proc/sys /proc/sys"));
        assert!(joined.contains("--ro-bind /home/u/project/.git /home/u/project/.git"));
        assert!(joined.contains(
            "--bind-try /home/u/project/vendor /home/u/project/vendor --bind-try /home/u/project/vendor/sub /home/u/project/vendor/sub --ro-bind-try /home/u/project/vendor/sub/.git /home/u/project/vendor/sub/.git"
        ), "the way to a repository pinned, parents first: {joined}");
        assert!(joined.contains("--add-seccomp-fd 7"));
        assert!(joined.ends_with("--chdir /home/u/project -- bash -c true"));
        let mut pinned = policy();
        pinned.pinned = Some(Pinned {
            root: 9,
            in_place: vec![(11, "/home/u/project/vendor".into())],
            read_only: vec![
                (10, "/home/u/project/.git".into()),
                (12, "/home/u/project/vendor/x/.git".into()),
            ],
        });
        let joined = bwrap_args(&pinned, Path::new("/home/u/project"), &[], &[])
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(joined.contains("--bind-fd 9 /home/u/project --"), "{joined}");
        assert!(joined.contains("--ro-bind-fd 10 /home/u/project/.git --bind-fd 11 /home/u/project/vendor --ro-bind-fd 12 /home/u/project/vendor/x/.git"), "{joined}");
        assert!(!joined.contains("--ro-bind /home/u/project/.git"), "{joined}");
    }
}
