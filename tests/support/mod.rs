//! Shared helpers of the black-box suites: a temporary project, the built
//! `iota-host` binary, and the results it prints with `call --json`.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_iota-host");

/// The components build.rs made (fixtures included).
pub const COMPONENTS: &str = env!("IOTA_COMPONENTS_DIR");

/// One call's result as `call --json` prints it.
#[derive(Debug, Clone)]
pub struct Result {
    pub tool: String,
    pub header: String,
    pub presentation: String,
    pub text: String,
    pub is_error: bool,
    pub diff: Option<String>,
}

/// A temporary project root, plus a private folder beside it for config files
/// and outside targets (so they never show up in the root's listings).
pub struct Project {
    dir: tempfile::TempDir,
    root: PathBuf,
    aux: PathBuf,
    config: Option<PathBuf>,
    answers: Option<PathBuf>,
    home: PathBuf,
    cache: Option<PathBuf>,
}

impl Project {
    pub fn new() -> Project {
        Project::in_dir(tempfile::tempdir().unwrap())
    }

    /// A project in a fresh directory under `base` (on its filesystem).
    pub fn new_in(base: &Path) -> Project {
        Project::in_dir(tempfile::tempdir_in(base).unwrap())
    }

    fn in_dir(dir: tempfile::TempDir) -> Project {
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("root");
        let aux = base.join("aux");
        let home = aux.join("home");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Project {
            dir,
            root,
            aux,
            config: None,
            answers: None,
            home,
            cache: None,
        }
    }

    /// The canonical project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A folder outside the root.
    pub fn outside(&self) -> &Path {
        &self.aux
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes a file under the root, creating parents.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root.join(rel)).unwrap()
    }

    /// Uses this YAML as the config file.
    pub fn config(mut self, yaml: &str) -> Project {
        let path = self.aux.join("config.yaml");
        std::fs::write(&path, yaml).unwrap();
        self.config = Some(path);
        self
    }

    /// The code set with auto_write, the usual config for writer tests.
    pub fn auto_write(self) -> Project {
        self.config("agents:\n  default:\n    tools:\n      code:\n        auto_write: true\n")
    }

    /// The shell set alone, running without asking (sandboxed where the
    /// sandbox works), the usual config for sandbox tests.
    pub fn auto_run(self) -> Project {
        self.config("agents:\n  a:\n    tools:\n      shell: {auto_run: true}\n")
    }

    /// Scripted answers (`--answers`).
    pub fn answers(mut self, json: &str) -> Project {
        let path = self.aux.join("answers.json");
        std::fs::write(&path, json).unwrap();
        self.answers = Some(path);
        self
    }

    /// The binary's home directory is always the project's private one
    /// (`aux/home`); kept so tests say where they rely on it.
    pub fn with_home(self) -> Project {
        self
    }

    /// Uses a private cache directory (`aux/cache`) instead of the shared one.
    pub fn with_private_cache(mut self) -> Project {
        self.cache = Some(self.aux.join("cache"));
        self
    }

    /// The cache directory the binary uses.
    pub fn cache(&self) -> PathBuf {
        self.cache.clone().unwrap_or_else(cache_dir)
    }

    /// The home directory given to the binary (private to the project).
    pub fn home(&self) -> Option<&Path> {
        Some(&self.home)
    }

    /// Makes `cmd` (the binary, or a client that starts it) see this
    /// project's world, not the machine's: its private home, the build's
    /// compiled-component cache (or the project's own), and none of the
    /// machine's iota or XDG variables. Nothing a test runs reads or writes
    /// the user's real home, config or state.
    pub fn isolate<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("IOTA_") || name.starts_with("XDG_") {
                cmd.env_remove(&*name);
            }
        }
        cmd.env("HOME", &self.home)
            .env("IOTA_CACHE_DIR", self.cache())
            .env("NO_COLOR", "1")
    }

    /// The binary with this project's root, config and answers, in its own
    /// world ([`Project::isolate`]).
    pub fn command(&self) -> Command {
        let mut cmd = self.command_asking_the_client();
        match &self.answers {
            Some(answers) => cmd.arg("--answers").arg(answers),
            None => cmd.arg("--non-interactive"),
        };
        cmd
    }

    /// `iota-host` for this project as an MCP client starts it: questions
    /// go to the client (no `--answers`, no `--non-interactive`).
    pub fn command_asking_the_client(&self) -> Command {
        self.command_at(&self.root)
    }

    /// `iota-host` on this project's config with another root, asking the
    /// client.
    pub fn command_at(&self, root: &Path) -> Command {
        let mut cmd = Command::new(BIN);
        self.isolate(&mut cmd);
        cmd.current_dir(root).arg("--root").arg(root);
        if let Some(config) = &self.config {
            cmd.arg("--config").arg(config);
        }
        cmd
    }

    /// Runs `iota-host ARGS`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// Calls tools in one session and returns their results.
    pub fn calls(&self, calls: &[(&str, Value)]) -> Vec<Result> {
        let mut args = vec!["call".to_string(), "--json".to_string()];
        for (tool, value) in calls {
            args.push(tool.to_string());
            args.push(value.to_string());
        }
        let out = self.command().args(&args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "exit {:?}\nstderr: {stderr}",
            out.status
        );
        let results: Vec<Result> = stdout
            .lines()
            .filter(|l| !l.contains("\"notice\""))
            .map(parse_result)
            .collect();
        assert_eq!(results.len(), calls.len(), "stdout: {stdout}\nstderr: {stderr}");
        let any_error = results.iter().any(|r| r.is_error);
        assert_eq!(
            out.status.code(),
            Some(if any_error { 1 } else { 0 }),
            "exit code follows is_error"
        );
        results
    }

    /// One call.
    pub fn call(&self, tool: &str, args: Value) -> Result {
        self.calls(&[(tool, args)]).remove(0)
    }

    /// One call that must not hang: it fails the test if it has not
    /// finished within [`EVENTUALLY`] (a read that blocks, say), and kills
    /// the hung process so a failed run leaves nothing behind.
    #[track_caller]
    pub fn call_finishes(&self, tool: &str, args: Value) -> Result {
        let mut child = self
            .command()
            .args(["call", "--json", tool, &args.to_string()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Drained while it runs: a full pipe must not pass for a hang.
        let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                pipe.read_to_end(&mut bytes).unwrap();
                bytes
            })
        };
        let stdout = drain(Box::new(child.stdout.take().unwrap()));
        let stderr = drain(Box::new(child.stderr.take().unwrap()));
        let deadline = std::time::Instant::now() + EVENTUALLY;
        while child.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                child.kill().unwrap();
                let _ = child.wait();
                panic!("hung: the {tool} call");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = Output {
            status: child.wait().unwrap(),
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        parse_result(
            stdout
                .lines()
                .next()
                .unwrap_or_else(|| panic!("no result: {}", String::from_utf8_lossy(&out.stderr))),
        )
    }
}

fn parse_result(line: &str) -> Result {
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    Result {
        tool: v["tool"].as_str().unwrap().to_string(),
        header: v["header"].as_str().unwrap().to_string(),
        presentation: v["presentation"].as_str().unwrap().to_string(),
        text: v["text"].as_str().unwrap().to_string(),
        is_error: v["is_error"].as_bool().unwrap(),
        diff: v.get("diff").and_then(|d| d.as_str()).map(str::to_string),
    }
}

/// One compiled-component cache for every test, under the target dir.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("iota-cache")
}

/// Asserts that loading failed (exit 2) because the hostile fixture imports
/// `process` and its config does not grant it.
#[track_caller]
pub fn assert_refused_for_process(out: &Output) {
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("toolset \"hostile\" imports iota:toolset/process@0.1.3 (run commands in the shell sandbox), which its config does not grant"),
        "{err}"
    );
    assert!(err.contains("grant: [process]"), "{err}");
}

/// Asserts a successful result with exactly `text`.
#[track_caller]
pub fn assert_ok(result: &Result, text: &str) {
    assert!(!result.is_error, "expected success, got error: {}", result.text);
    assert_eq!(result.text, text);
}

/// Asserts an error result with exactly `text`.
#[track_caller]
pub fn assert_err(result: &Result, text: &str) {
    assert!(result.is_error, "expected an error, got success: {}", result.text);
    assert_eq!(result.text, text);
}

/// Sets a file's modification time to `secs` after the epoch.
pub fn set_mtime(path: &Path, secs: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
        .unwrap();
}

/// The host as a library (what iota embeds, through its `Host` facade),
/// holding one session open across calls so a test can change files
/// between them.
pub struct LibraryHost {
    session: iota_host::HostSession,
}

impl LibraryHost {
    pub fn new(project: &Project) -> LibraryHost {
        LibraryHost::at(project, project.root())
    }

    /// A session on `project`'s config with another root.
    pub fn at(project: &Project, root: &Path) -> LibraryHost {
        let builder = iota_host::Host::builder().root(root).state_dir(Some(cache_dir()));
        let builder = match &project.config {
            Some(path) => builder.config_file(path),
            None => builder.config_yaml(iota_host::internals::EMBEDDED_DEFAULT),
        };
        let host = builder.build().unwrap();
        // Where bubblewrap cannot mount overlays the host says at start that
        // sandboxed commands get a cache of the project's own; nothing else.
        assert!(
            host.warnings()
                .iter()
                .all(|w| w.contains("a cache directory of this project's own")),
            "{:?}",
            host.warnings()
        );
        LibraryHost {
            session: host.session(),
        }
    }

    /// Worker tasks the session's calls have submitted so far.
    pub fn worker_tasks(&self) -> u64 {
        iota_host::internals::worker_tasks(&self.session)
    }

    /// What the session's warm tree holds and has served.
    pub fn warm_tree(&self) -> iota_host::internals::WarmStats {
        iota_host::internals::warm_tree(&self.session)
    }

    pub fn call(&self, tool: &str, args: Value) -> Result {
        let result = self.session.call(tool, args);
        Result {
            tool: result.tool,
            header: result.header,
            presentation: result.presentation.word().to_string(),
            text: result.text,
            is_error: result.is_error,
            diff: result.diff,
        }
    }
}

/// Runs `iota-host call --json` and returns the results and the notices.
pub fn call_with_notices(project: &Project, calls: &[(&str, Value)]) -> (Vec<Result>, Vec<String>) {
    let mut args = vec!["call".to_string(), "--json".to_string()];
    for (tool, value) in calls {
        args.push(tool.to_string());
        args.push(value.to_string());
    }
    let out = project.command().args(&args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut results = Vec::new();
    let mut notices = Vec::new();
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        match v.get("notice") {
            Some(n) => notices.push(n.as_str().unwrap().to_string()),
            None => results.push(parse_result(line)),
        }
    }
    (results, notices)
}

/// Whether a test can run its subject (`what`, e.g. a tool it needs): true
/// when `available`. Otherwise the test is skipped, said on the terminal past
/// the harness's capture; and where `IOTA_REQUIRE_ALL=1` (CI, after its
/// probes) a skip is a failure.
#[track_caller]
pub fn require(what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    if std::env::var_os("IOTA_REQUIRE_ALL").is_some_and(|v| v == "1") {
        panic!("IOTA_REQUIRE_ALL=1 and this test cannot run: {what} is unavailable");
    }
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {what} is unavailable");
    false
}

/// Whether bubblewrap can sandbox here, probed afresh (not the host's memo);
/// see [`require`] for what happens when it cannot.
#[track_caller]
pub fn sandbox_works() -> bool {
    let works = iota_host::internals::find_on_path("bwrap").is_some_and(|bwrap| iota_host::internals::probe(&bwrap));
    require("a working bubblewrap (bwrap that can create namespaces)", works)
}

/// The names `tools --json` lists, in order.
pub fn tool_names(p: &Project) -> Vec<String> {
    let out = p.run(&["tools", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// A fresh directory outside the project that a sandboxed command can see
/// but not write: not under /tmp (the sandbox replaces it with the session's
/// own) and not under the cache directory (writable). /var/tmp first.
pub fn visible_outside_dir() -> tempfile::TempDir {
    let candidates = [PathBuf::from("/var/tmp"), PathBuf::from(env!("CARGO_TARGET_TMPDIR"))];
    let base = candidates
        .iter()
        .find(|dir| dir.is_dir() && !dir.starts_with("/tmp") && !dir.starts_with(std::env::temp_dir()))
        .expect("a writable directory outside /tmp for sandbox tests");
    tempfile::tempdir_in(base).unwrap()
}

/// Splits the elapsed time out of a job notice: the notice with `after <N>s`
/// written as `after Ns`, and N. The wall time depends on the machine's load;
/// the format does not.
pub fn notice_elapsed(notice: &str) -> (String, u64) {
    let start = notice.find(" after ").expect("a notice says how long it ran") + " after ".len();
    let end = start + notice[start..].find("s]").expect("seconds then ]");
    let secs: u64 = notice[start..end]
        .parse()
        .unwrap_or_else(|_| panic!("whole seconds in {notice}"));
    (format!("{}Ns{}", &notice[..start], &notice[end + 1..]), secs)
}

/// Live processes whose command line contains `needle`, as `pid: cmdline`.
pub fn processes_matching(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            // Processes that run `needle` (`sleep 603.<tag>`), not those that
            // merely mention it (iota-host's own arguments, the shell line).
            if cmdline.starts_with(needle) {
                found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// `iota-host inspect FILE --json` for this project's config, parsed.
pub fn inspect(project: &Project, wasm: &str) -> Value {
    let out = project.run(&["inspect", wasm, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The capability names an `inspect --json` report lists.
pub fn capability_names(report: &Value) -> Vec<String> {
    report["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

/// The venv .ci/run makes; the test is skipped, saying so, without it.
pub fn python() -> Option<PathBuf> {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-venv/bin/python");
    let ok = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    require(
        "the MCP Python SDK (python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp)",
        ok,
    )
    .then_some(python)
}

/// Runs a Python SDK client script against `p` (with `extra` arguments after
/// the binary, config and root) and returns its JSON lines
/// by step name (`step(name)` panics, showing everything, when one is missing).
pub fn run_client(
    python: &std::path::Path,
    script: &str,
    p: &Project,
    extra: &[&str],
) -> impl Fn(&str) -> serde_json::Value + use<> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests").join(script);
    let mut client = std::process::Command::new(python);
    // The drivers hand the server their whole environment: this one.
    p.isolate(&mut client)
        .arg(script)
        .arg(BIN)
        .arg(p.outside().join("config.yaml"))
        .arg(p.root())
        .args(extra);
    let out = client.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "client failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let steps: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    move |name: &str| {
        let matching: Vec<&serde_json::Value> = steps.iter().filter(|s| s["step"] == name).collect();
        match matching.as_slice() {
            [one] => (*one).clone(),
            [] => panic!("no step {name}: {stdout}"),
            many => serde_json::Value::Array(many.iter().map(|v| (*v).clone()).collect()),
        }
    }
}

/// How long a poll waits for what must happen before calling it a failure:
/// generous, because a slow machine is not a failure; only a hang is.
pub const EVENTUALLY: std::time::Duration = std::time::Duration::from_secs(120);

/// Polls `condition` until it holds; fails, naming `what`, if it does not
/// within [`EVENTUALLY`]. Tests wait for a state this way, never by sleeping
/// a fixed time and hoping.
#[track_caller]
pub fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + EVENTUALLY;
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs `work` and returns its result; fails, naming `what`, if it has not
/// finished within [`EVENTUALLY`] (it hung).
#[track_caller]
pub fn finishes<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(EVENTUALLY).unwrap_or_else(|_| panic!("hung: {what}"))
}

/// A tag unique to this run of the suite, for marking processes a test
/// starts (`sleep 603.<tag>`): two runs on one machine must not see each
/// other's.
pub fn run_tag() -> u32 {
    std::process::id()
}

/// `stderr` without the once-a-project startup notice that sandboxed
/// commands get a cache of the project's own (where bubblewrap cannot mount
/// overlays), for tests of what else is said there.
pub fn without_cache_notice(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| !l.contains("a cache directory of this project's own"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// What a measured run of the binary gave.
pub struct Measured {
    pub stdout: String,
    pub stderr: String,
    /// The exit code (-1 when killed by a signal).
    pub code: i32,
    /// Its peak resident memory, in MiB: this process's own, reaped with
    /// `wait4` on its pid (not any other test's).
    pub peak_mib: i64,
}

/// Runs `cmd` to its end and measures its peak memory. Through GNU time,
/// which forks it from a small process of its own: a process this test
/// binary spawned would count this binary's memory as its own (spawning
/// shares it until the exec, and the peak outlives the exec).
pub fn run_measured(cmd: &mut Command) -> Measured {
    let time = Path::new("/usr/bin/time");
    assert!(
        require(
            "GNU time (/usr/bin/time, Debian's time), to measure a process's own peak memory",
            time.exists()
        ),
        "no way to measure"
    );
    let report = tempfile::NamedTempFile::new().unwrap();
    let mut measured = Command::new(time);
    measured
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(report.path())
        .arg(cmd.get_program());
    measured.args(cmd.get_args());
    for (name, value) in cmd.get_envs() {
        match value {
            Some(value) => measured.env(name, value),
            None => measured.env_remove(name),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        measured.current_dir(dir);
    }
    let out = measured.output().unwrap();
    let peak_kib: i64 = std::fs::read_to_string(report.path())
        .unwrap()
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .expect("GNU time's report");
    Measured {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
        peak_mib: peak_kib / 1024,
    }
}

/// The SHA-256 of `bytes` in hex, as registries and pins spell it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// A tmpfs mounted at a directory, unmounted when dropped (even when an
/// assertion fails, so the project can go).
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs with `options` (`size=64k`, or none) at `at`; `None`
    /// (the test skipped, see [`require`]) where this process may not mount.
    #[track_caller]
    pub fn mount(at: &Path, options: Option<&str>) -> Option<Tmpfs> {
        let mut mount = Command::new("mount");
        mount.args(["-t", "tmpfs"]);
        if let Some(options) = options {
            mount.args(["-o", options]);
        }
        let mounted = mount.arg("iota-test-tmpfs").arg(at).status();
        require("mounting a tmpfs (root)", mounted.is_ok_and(|s| s.success())).then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Everything below `dir`: each path (a directory's ending in `/`, with no
/// content), its content, its mode; sorted. Links are not followed.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            let name = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                pending.push(path);
                out.push((name + "/", Vec::new(), meta.permissions().mode()));
            } else if meta.is_symlink() {
                // A link's content is where it points, never what it reaches.
                let target = std::fs::read_link(&path).unwrap_or_default();
                let content = [b"-> ".as_slice(), target.as_os_str().as_encoded_bytes()].concat();
                out.push((name, content, meta.permissions().mode()));
            } else {
                out.push((
                    name,
                    std::fs::read(&path).unwrap_or_default(),
                    meta.permissions().mode(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Whether the standard library for `target` is installed (`rustup target
/// add`), asked of the pinned toolchain.
pub fn target_installed(target: &str) -> bool {
    Command::new("rustc")
        .current_dir(workspace())
        .args(["--print", "target-libdir", "--target", target])
        .output()
        .ok()
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .is_some_and(|dir| std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()))
}

/// `cargo SUBCOMMAND --target TARGET -p iota-host` in its own target
/// directory (`target/DIR`), as `.ci/run` runs it first (the very command, so
/// a suite finds it done): the output, whatever the outcome.
pub fn cargo_for_target(subcommand: &str, target: &str, dir: &str, extra: &[&str], env: &[(&str, PathBuf)]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace())
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .args([subcommand, "--target", target, "-p", "iota-host"])
        .args(extra)
        .arg("--target-dir")
        .arg(workspace().join("target").join(dir));
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.output().expect("cargo runs")
}
