//! The Windows build under Wine (issue 42): the spec's Windows behaviour on
//! Windows semantics, here. `iota-host.exe` is cross-built once per run
//! (`target/windows`, Debian's mingw-w64 as the linker) and run by Wine
//! (Debian's `wine64`) in a prefix under `target/windows`. Each test builds
//! a project on the Linux side, runs the binary on it as a Windows program
//! (the project is `Z:\…`), and judges by what the binary printed and what
//! is on the disk afterwards.
//!
//! What Wine cannot show — a real PowerShell (Wine's is a stub that prints
//! nothing), Git for Windows, NTFS refusing to rename a directory another
//! process holds — is listed in ARCHITECTURE.md ("Windows").

use crate::support::{self, require};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The Windows target the binary is built for.
const TARGET: &str = "x86_64-pc-windows-gnu";

/// The cross-built binary and the Wine that runs it.
struct Wine {
    /// Wine's loader for 64-bit programs.
    wine: PathBuf,
    /// `iota-host.exe`.
    exe: PathBuf,
    /// The Wine prefix (its `C:`).
    prefix: PathBuf,
    /// The compiled-component cache the binary keeps (Linux side).
    cache: PathBuf,
}

/// The binary under Wine, built and set up once; `None` (a skip, or a
/// failure under `IOTA_REQUIRE_ALL=1`) where this machine lacks Wine,
/// mingw-w64 or the Windows target.
fn wine() -> Option<&'static Wine> {
    static WINE: OnceLock<Result<Wine, String>> = OnceLock::new();
    match WINE.get_or_init(prepare) {
        Ok(wine) => Some(wine),
        Err(what) => {
            require(what, false);
            None
        }
    }
}

fn prepare() -> Result<Wine, String> {
    let wine = ["/usr/lib/wine/wine64", "/usr/bin/wine64"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or("Wine (Debian's wine64)")?;
    let on_path = |name: &str| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|d| d.join(name).is_file())
    };
    if !on_path("x86_64-w64-mingw32-gcc") {
        return Err("mingw-w64 (Debian's gcc-mingw-w64-x86-64)".into());
    }
    if !support::target_installed(TARGET) {
        return Err(format!("the {TARGET} target (rustup target add {TARGET})"));
    }
    let built = support::cargo_for_target("build", TARGET, "windows", &["--bin", "iota-host"], &[]);
    assert!(
        built.status.success(),
        "cross-building iota-host for {TARGET} failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let workspace = support::workspace();
    let target_dir = workspace.join("target").join("windows");
    let exe = target_dir.join(TARGET).join("debug").join("iota-host.exe");
    let shim = exe.with_file_name("bcryptprimitives.dll");
    if !shim.exists() {
        let sources = workspace.join("tests/data/wine");
        let made = Command::new("x86_64-w64-mingw32-gcc")
            .args(["-shared", "-O2", "-o"])
            .arg(&shim)
            .arg(sources.join("bcryptprimitives.c"))
            .arg(sources.join("bcryptprimitives.def"))
            .arg("-ladvapi32")
            .output()
            .expect("mingw-w64's gcc runs");
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    }
    let wine = Wine {
        wine,
        exe,
        prefix: target_dir.join("wineprefix"),
        cache: target_dir.join("iota-cache"),
    };
    // The prefix is made by the first program Wine runs (some seconds).
    let booted = wine
        .command()
        .args(["cmd", "/c", "echo", "ready"])
        .output()
        .expect("wine runs");
    assert!(
        String::from_utf8_lossy(&booted.stdout).contains("ready"),
        "Wine does not run programs here: {}",
        String::from_utf8_lossy(&booted.stderr)
    );
    Ok(wine)
}

/// `path` as the Windows program sees it: Wine's `Z:` is `/`.
fn win(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

impl Wine {
    /// Wine with this suite's prefix, and none of the machine's iota or XDG
    /// variables.
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.wine);
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("IOTA_") || name.starts_with("XDG_") || name.starts_with("WINE") {
                cmd.env_remove(&*name);
            }
        }
        cmd.env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            .env("IOTA_CACHE_DIR", win(&self.cache))
            .env("NO_COLOR", "1");
        cmd
    }

    /// `iota-host.exe --root ROOT` (and `--config` when given) under Wine,
    /// in the project's directory.
    fn host(&self, project: &WinProject) -> Command {
        let mut cmd = self.command();
        cmd.current_dir(&project.root)
            .arg(&self.exe)
            .arg("--root")
            .arg(win(&project.root));
        if let Some(config) = &project.config {
            cmd.arg("--config").arg(win(config));
        }
        cmd
    }
}

/// A project on the Linux side with a folder beside it for config files and
/// fake interpreters.
struct WinProject {
    _dir: tempfile::TempDir,
    root: PathBuf,
    aux: PathBuf,
    config: Option<PathBuf>,
}

impl WinProject {
    fn new() -> WinProject {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let (root, aux) = (base.join("root"), base.join("aux"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&aux).unwrap();
        WinProject {
            _dir: dir,
            root,
            aux,
            config: None,
        }
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn config(mut self, yaml: &str) -> WinProject {
        let path = self.aux.join("config.yaml");
        std::fs::write(&path, yaml).unwrap();
        self.config = Some(path);
        self
    }

    /// Scripted answers, as `--answers` arguments.
    fn answers(&self, json: &str) -> Vec<String> {
        let path = self.aux.join("answers.json");
        std::fs::write(&path, json).unwrap();
        vec!["--answers".into(), win(&path)]
    }
}

/// The results and notices of `call --json` output.
fn results(out: &Output) -> (Vec<Value>, Vec<String>) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut results = Vec::new();
    let mut notices = Vec::new();
    for line in stdout.lines() {
        let value: Value = serde_json::from_str(line).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {line}\nstderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        match value.get("notice") {
            Some(notice) => notices.push(notice.as_str().unwrap().to_string()),
            None => results.push(value),
        }
    }
    (results, notices)
}

/// `call --json` of `calls` in one session, with `extra` arguments first.
fn call(
    wine: &Wine,
    project: &WinProject,
    extra: &[String],
    env: &[(&str, &str)],
    calls: &[(&str, Value)],
) -> (Vec<Value>, Vec<String>) {
    let mut cmd = wine.host(project);
    cmd.args(extra).args(["call", "--json"]);
    for (tool, args) in calls {
        cmd.arg(tool).arg(args.to_string());
    }
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let (results, notices) = results(&out);
    assert_eq!(
        results.len(),
        calls.len(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (results, notices)
}

fn text(result: &Value) -> &str {
    result["text"].as_str().unwrap()
}

#[test]
fn the_code_set_reads_searches_and_lists_a_windows_project() {
    let Some(wine) = wine() else { return };
    let p = WinProject::new();
    p.write("src/main.rs", "fn main() {\n    println!(\"needle\");\n}\n");
    p.write("README.md", "# readme\nno match here\n");
    p.write("docs/guide.md", "a needle in the docs\n");
    let (r, _) = call(
        wine,
        &p,
        &["--non-interactive".into()],
        &[],
        &[
            ("read_file", json!({"path": "src/main.rs"})),
            ("grep", json!({"pattern": "needle"})),
            ("glob", json!({"pattern": "**/*.md"})),
            ("list_dir", json!({})),
            ("read_file", json!({"path": "../outside.txt"})),
        ],
    );
    assert_eq!(
        text(&r[0]),
        "     1\tfn main() {\n     2\t    println!(\"needle\");\n     3\t}"
    );
    let grep = text(&r[1]);
    assert!(
        grep.contains("src/main.rs:2:") && grep.contains("docs/guide.md:1: a needle in the docs"),
        "{grep}"
    );
    assert!(!grep.contains("README"), "{grep}");
    let glob: Vec<&str> = text(&r[2]).lines().collect();
    assert_eq!(glob.len(), 2, "{glob:?}");
    assert!(
        glob.contains(&"README.md") && glob.contains(&"docs/guide.md"),
        "{glob:?}"
    );
    assert_eq!(text(&r[3]), "README.md (23 B)\ndocs/\nsrc/");
    assert!(r[4]["is_error"].as_bool().unwrap(), "{}", r[4]);
    assert!(text(&r[4]).contains("outside the project root"), "{}", r[4]);
}

#[test]
fn a_write_asks_and_lands_through_the_held_directories() {
    let Some(wine) = wine() else { return };
    let p = WinProject::new();
    // Asked and refused with nobody to ask: nothing is written.
    let (r, _) = call(
        wine,
        &p,
        &["--non-interactive".into()],
        &[],
        &[("write_file", json!({"path": "new/dir/a.txt", "content": "one\n"}))],
    );
    assert_eq!(
        text(&r[0]),
        "write_file was not executed: it requires interactive approval, which is unavailable in this non-interactive run. Set the toolset's auto-approve option (tools.code.auto_write / tools.shell.auto_run) to permit it here."
    );
    assert!(!p.root.join("new").exists());
    // Approved: created with its directories, then replaced after a read.
    let answers = p.answers(r#"["once", "once", "once"]"#);
    let (r, _) = call(
        wine,
        &p,
        &answers,
        &[],
        &[
            ("write_file", json!({"path": "new/dir/a.txt", "content": "one\n"})),
            ("read_file", json!({"path": "new/dir/a.txt"})),
            ("write_file", json!({"path": "new/dir/a.txt", "content": "two\n"})),
            (
                "edit_file",
                json!({"path": "new/dir/a.txt", "old_string": "two", "new_string": "three"}),
            ),
        ],
    );
    for result in &r {
        assert!(!result["is_error"].as_bool().unwrap(), "{result}");
    }
    assert_eq!(
        std::fs::read_to_string(p.root.join("new/dir/a.txt")).unwrap(),
        "three\n"
    );
    // Nothing else in the directory: no temporary left behind.
    let left: Vec<String> = std::fs::read_dir(p.root.join("new/dir"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["a.txt"]);
}

#[test]
fn the_skills_and_ask_sets_answer_on_windows() {
    let Some(wine) = wine() else { return };
    let p = WinProject::new();
    p.write(
        ".iota/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Ship the app.\n---\n\n# Deploy\nRun make ship.\n",
    );
    p.write(".iota/skills/deploy/references/api.md", "line 1\nline 2\n");
    let answers = p.answers("[true]");
    let (r, _) = call(
        wine,
        &p,
        &answers,
        &[],
        &[
            ("load_skill", json!({"skill": "deploy"})),
            ("load_skill", json!({"skill": "deploy", "file": "references/api.md"})),
            ("load_skill", json!({"skill": "deploy", "file": "../../../outside.txt"})),
            ("confirm", json!({"question": "Deploy?"})),
        ],
    );
    // The directory as Windows writes it: backslashes only.
    let dir = win(&p.root.join(".iota/skills/deploy"));
    assert_eq!(
        text(&r[0]),
        format!("skill: deploy, directory: {dir}\n\n# Deploy\nRun make ship.")
    );
    assert_eq!(text(&r[1]), "line 1\nline 2");
    assert!(r[2]["is_error"].as_bool().unwrap(), "{}", r[2]);
    assert_eq!(text(&r[3]), "The user chose: Yes");
}

/// The first sentence of the shell tool's description, which names the
/// interpreter, as `tools` prints it; or the load's refusal.
fn interpreter_named(wine: &Wine, p: &WinProject, env: &[(&str, String)], path: Option<&str>) -> String {
    let mut cmd = match path {
        // PATH exactly `path`: set by a cmd.exe that then starts the host.
        Some(path) => {
            let mut cmd = wine.command();
            cmd.current_dir(&p.root).args(["cmd", "/c"]).arg(format!(
                "set PATH={path}&& {} --root {} --non-interactive tools",
                win(&wine.exe),
                win(&p.root)
            ));
            cmd
        }
        None => {
            let mut cmd = wine.host(p);
            cmd.args(["--non-interactive", "tools"]);
            cmd
        }
    };
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Runs one command line with"))
    {
        Some(line) => line.trim().split(" and returns").next().unwrap().to_string(),
        None => String::from_utf8_lossy(&out.stderr).trim().to_string(),
    }
}

#[test]
fn the_interpreter_is_the_first_the_machine_has_in_the_specs_order() {
    let Some(wine) = wine() else { return };
    let p = WinProject::new();
    let fake = |rel: &str| {
        let path = p.aux.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "").unwrap();
        path
    };
    // Git for Windows' layout: git.exe on PATH in cmd\, Git Bash in bin\.
    fake("Git/cmd/git.exe");
    let git_bash = fake("Git/bin/bash.exe");
    let pwsh = fake("PowerShell/pwsh.exe");
    let system = r"C:\windows\system32;C:\windows;C:\windows\system32\WindowsPowerShell\v1.0";
    let with = |dirs: &[&str]| {
        let mut path: Vec<String> = dirs.iter().map(|d| win(&p.aux.join(d))).collect();
        path.push(system.to_string());
        path.join(";")
    };
    let git_first = with(&["Git/cmd", "PowerShell"]);
    assert_eq!(
        interpreter_named(wine, &p, &[], Some(&git_first)),
        format!(
            r#"Runs one command line with bash.exe ({} -c "<command>")"#,
            win(&git_bash)
        )
    );
    assert_eq!(
        interpreter_named(wine, &p, &[], Some(&with(&["PowerShell"]))),
        format!(
            r#"Runs one command line with pwsh.exe ({} -NoLogo -NoProfile -NonInteractive -Command "<command>")"#,
            win(&pwsh)
        )
    );
    let powershell = interpreter_named(wine, &p, &[], Some(system));
    assert!(
        powershell.starts_with("Runs one command line with powershell.exe (")
            && powershell
                .to_ascii_lowercase()
                .contains(r"\windowspowershell\v1.0\powershell.exe -nologo"),
        "{powershell}"
    );
    let cmd = interpreter_named(wine, &p, &[], Some(r"C:\windows\system32"));
    assert!(cmd.starts_with("Runs one command line with cmd.exe ("), "{cmd}");
    assert!(cmd.to_ascii_lowercase().contains(r"\system32\cmd.exe /c"), "{cmd}");
    // The variables: IOTA_GIT_BASH_PATH names Git Bash, IOTA_SHELL overrides all.
    let elsewhere = fake("elsewhere/bash.exe");
    assert_eq!(
        interpreter_named(wine, &p, &[("IOTA_GIT_BASH_PATH", win(&elsewhere))], Some(system)),
        format!(
            r#"Runs one command line with bash.exe ({} -c "<command>")"#,
            win(&elsewhere)
        )
    );
    let named = interpreter_named(wine, &p, &[("IOTA_SHELL", "cmd.exe".into())], Some(&git_first));
    assert!(named.starts_with("Runs one command line with cmd.exe"), "{named}");
    // None at all: the set is refused with the spec's text.
    let none = interpreter_named(wine, &p, &[], Some(&win(&p.aux.join("empty"))));
    assert!(
        none.contains("no shell interpreter found: tried Git Bash (install Git for Windows or set IOTA_GIT_BASH_PATH), pwsh.exe, powershell.exe and cmd.exe — set IOTA_SHELL to name one"),
        "{none}"
    );
}

#[test]
fn shell_calls_ask_then_run_through_cmd_with_no_sandbox() {
    let Some(wine) = wine() else { return };
    let p = WinProject::new();
    std::fs::create_dir_all(p.root.join("sub")).unwrap();
    let cmd_exe = [("IOTA_SHELL", "cmd.exe")];
    // Every call asks: refused where nobody can be asked (`-m`).
    let (r, _) = call(
        wine,
        &p,
        &["--non-interactive".into()],
        &cmd_exe,
        &[("shell", json!({"command": "echo hello"}))],
    );
    assert_eq!(
        text(&r[0]),
        "shell was not executed: it requires interactive approval, which is unavailable in this non-interactive run. Set the toolset's auto-approve option (tools.code.auto_write / tools.shell.auto_run) to permit it here."
    );
    let answers = p.answers(r#"["once"]"#);
    let (r, _) = call(
        wine,
        &p,
        &answers,
        &cmd_exe,
        &[("shell", json!({"command": "echo hello from cmd"}))],
    );
    assert_eq!(text(&r[0]).trim_end(), "hello from cmd");
    // auto_run waives the question; the description says there is no sandbox.
    let p = p.config("agents:\n  default:\n    tools:\n      shell: {auto_run: true}\n");
    let started = Instant::now();
    let (r, notices) = call(
        wine,
        &p,
        &["--non-interactive".into()],
        &cmd_exe,
        &[
            ("shell", json!({"command": "cd"})),
            ("shell", json!({"command": "cd", "cwd": "sub"})),
            ("shell", json!({"command": "exit /b 3"})),
            ("shell", json!({"command": "echo job-output", "background": true})),
            ("shell", json!({"command": "ping -n 30 127.0.0.1 >nul", "timeout": 2})),
        ],
    );
    assert_eq!(text(&r[0]).trim_end(), win(&p.root));
    assert_eq!(text(&r[1]).trim_end(), win(&p.root.join("sub")));
    assert_eq!(text(&r[2]), "[exit code 3]");
    // Every call has a job id (a foreground one may yield to the background).
    let job = text(&r[3])
        .strip_prefix("Started background job ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("{}", r[3]));
    assert!(
        text(&r[3]).contains("run `type "),
        "the tail in cmd's dialect: {}",
        r[3]
    );
    assert_eq!(text(&r[4]), "[command timed out after 2s]");
    // The job object killed the ping: the call did not wait its 30 s.
    assert!(started.elapsed() < Duration::from_secs(25), "{:?}", started.elapsed());
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with(&format!("[background job {job} finished: exit 0 after"))
            && notices[0].contains("job-output"),
        "{notices:?}"
    );
}

#[test]
fn serve_answers_an_mcp_client_on_windows() {
    let Some(wine) = wine() else { return };
    let p = WinProject::new();
    p.write("a.txt", "alpha\n");
    let mut child = wine
        .host(&p)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| writeln!(&mut stdin, "{message}").unwrap();
    let mut answer = |id: u64| -> Value {
        loop {
            let line = lines.next().expect("an answer").unwrap();
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["id"] == json!(id) {
                return value;
            }
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "wine-test", "version": "1"}}}));
    assert_eq!(answer(1)["result"]["serverInfo"]["name"], "iota-host");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = answer(2);
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in [
        "shell",
        "read_file",
        "grep",
        "glob",
        "list_dir",
        "write_file",
        "edit_file",
    ] {
        assert!(names.contains(&tool), "{names:?}");
    }
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "a.txt"}}}),
    );
    assert_eq!(answer(3)["result"]["content"][0]["text"], "     1\talpha");
    // Killed, not waited for: a served session ends with its client.
    let _ = child.kill();
    let _ = child.wait();
}
