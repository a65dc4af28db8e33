//! Which interpreter runs the shell set's calls, and the dialect everything
//! the model reads about it is written in.
//!
//! Spec (shell, Interpreter): "bash -c on macOS and Linux, always. On
//! Windows iota embeds no interpreter and takes the first one the machine
//! has — Git Bash, then PowerShell (pwsh.exe, then powershell.exe), then
//! cmd.exe"; `IOTA_SHELL` names one on every platform, `IOTA_GIT_BASH_PATH`
//! says where Git Bash is on Windows. "The tool description follows the
//! winner": its first sentence names it, the advice, the command's example,
//! the header's cwd, the receipts' tail and how a job detaches are each in
//! its dialect.
//!
//! [`discover`] is a pure function over a described machine ([`Machine`]),
//! so Windows' order is tested on every platform; [`Machine::here`]
//! describes the running one.

use std::path::{Path, PathBuf};

/// The three families of interpreter the spec knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// bash, zsh, sh, Git Bash: `-c`.
    Posix,
    /// pwsh, powershell: `-NoLogo -NoProfile -NonInteractive -Command`.
    PowerShell,
    /// cmd: `/C`.
    Cmd,
}

impl Dialect {
    /// The family of the interpreter `program` (a path or a name), by its
    /// file name without extension.
    pub fn of(program: &str) -> Dialect {
        // Either separator: a Windows path named on any platform.
        let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
        let stem = name.split('.').next().unwrap_or(name).to_ascii_lowercase();
        match stem.as_str() {
            "pwsh" | "powershell" => Dialect::PowerShell,
            "cmd" => Dialect::Cmd,
            _ => Dialect::Posix,
        }
    }

    /// The arguments before the command line.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            Dialect::Posix => &["-c"],
            Dialect::PowerShell => &["-NoLogo", "-NoProfile", "-NonInteractive", "-Command"],
            Dialect::Cmd => &["/C"],
        }
    }

    /// `line` run in `cwd`, as the header shows it: the interpreter's own
    /// idiom (`cd <path> && <cmd>`; `cd <path>; <cmd>` under PowerShell;
    /// `cd /d <path> && <cmd>` under cmd). `cwd` is quoted as the
    /// interpreter would need it when it is not plain.
    pub fn in_directory(self, cwd: &str, line: &str) -> String {
        // A backslash is a path separator to PowerShell and cmd, an escape to
        // a POSIX shell (there it is quoted).
        let plain_chars = match self {
            Dialect::Posix => "_./-+@%:,",
            Dialect::PowerShell | Dialect::Cmd => "_./-+@%:,\\",
        };
        let plain = !cwd.is_empty()
            && cwd
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || plain_chars.contains(c));
        let quoted = if plain {
            cwd.to_string()
        } else {
            match self {
                Dialect::Posix => format!("'{}'", cwd.replace('\'', "'\\''")),
                Dialect::PowerShell => format!("'{}'", cwd.replace('\'', "''")),
                Dialect::Cmd => format!("\"{cwd}\""),
            }
        };
        match self {
            Dialect::Posix => format!("cd {quoted} && {line}"),
            Dialect::PowerShell => format!("cd {quoted}; {line}"),
            Dialect::Cmd => format!("cd /d {quoted} && {line}"),
        }
    }

    /// How to look at the last lines of a job's log now.
    pub fn tail(self, log: &Path) -> String {
        let log = log.display();
        match self {
            Dialect::Posix => format!("tail -n 50 {log}"),
            Dialect::PowerShell => format!("Get-Content -Tail 50 {log}"),
            Dialect::Cmd => format!("type {log}"),
        }
    }

    /// How to follow a job's log as it grows.
    pub fn follow(self, log: &Path) -> String {
        let log = log.display();
        match self {
            Dialect::Posix => format!("tail -f {log}"),
            Dialect::PowerShell => format!("Get-Content -Wait -Tail 50 {log}"),
            Dialect::Cmd => format!("type {log}"),
        }
    }

    /// How a job that must outlive the session detaches itself.
    pub fn detach(self) -> &'static str {
        match self {
            Dialect::Posix => "nohup or setsid",
            Dialect::PowerShell => "Start-Process",
            Dialect::Cmd => "start /b",
        }
    }

    /// How to narrow a long output, and what else differs from POSIX habits.
    pub fn advice(self) -> &'static str {
        match self {
            Dialect::Posix => "pipe through head, tail or grep to narrow it.",
            Dialect::PowerShell => {
                "pipe through Select-Object -First/-Last or Select-String to narrow it. This is PowerShell: \
chain commands with ; (Windows PowerShell has no &&), pipelines carry objects, and output is discarded with > $null."
            }
            Dialect::Cmd => {
                "pipe through findstr or more to narrow it. This is cmd: chain with && or &, variables are %NAME%, \
and output is discarded with > nul."
            }
        }
    }

    /// The `command` parameter's example.
    pub fn example(self) -> &'static str {
        match self {
            Dialect::Posix => "go test ./... 2>&1 | tail -20",
            Dialect::PowerShell => "cargo test 2>&1 | Select-Object -Last 20",
            Dialect::Cmd => "cargo test 2>&1 | findstr /C:error",
        }
    }
}

/// What the interpreter choice depends on.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    /// Whether it runs Windows.
    pub windows: bool,
    /// `IOTA_SHELL`, when set and not empty.
    pub iota_shell: Option<String>,
    /// `IOTA_GIT_BASH_PATH`, when set and not empty.
    pub git_bash_path: Option<PathBuf>,
    /// The programs found on PATH, by name (`git.exe` to where it is).
    pub on_path: std::collections::BTreeMap<String, PathBuf>,
    /// Files that exist (where Git Bash may be).
    pub files: std::collections::BTreeSet<PathBuf>,
}

impl Machine {
    /// The running machine: its environment, and for each name [`discover`]
    /// may ask about, where PATH has it.
    pub fn here() -> Machine {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let windows = cfg!(windows);
        let mut machine = Machine {
            windows,
            iota_shell: var("IOTA_SHELL"),
            git_bash_path: var("IOTA_GIT_BASH_PATH").map(PathBuf::from),
            ..Machine::default()
        };
        if windows && machine.iota_shell.is_none() {
            for name in ["git.exe", "pwsh.exe", "powershell.exe", "cmd.exe"] {
                if let Some(found) = super::sandbox::find_on_path(name) {
                    machine.on_path.insert(name.to_string(), found);
                }
            }
            let candidates = machine
                .git_bash_path
                .iter()
                .cloned()
                .chain(machine.on_path.get("git.exe").and_then(|git| git_bash_beside(git)));
            machine.files.extend(candidates.filter(|path| path.is_file()));
        }
        machine
    }
}

/// Where Git for Windows keeps bash.exe, given its git.exe: `…\Git\cmd\git.exe`
/// (the one its installer puts on PATH) or `…\Git\bin\git.exe` or
/// `…\Git\mingw64\bin\git.exe`, all beside `…\Git\bin\bash.exe`.
fn git_bash_beside(git: &Path) -> Option<PathBuf> {
    let dir = git.parent()?;
    let base = match dir.file_name()?.to_str()?.to_ascii_lowercase().as_str() {
        "cmd" => dir.parent()?,
        "bin" if dir.parent()?.file_name()?.eq_ignore_ascii_case("mingw64") => dir.parent()?.parent()?,
        "bin" => dir.parent()?,
        _ => return None,
    };
    Some(base.join("bin").join("bash.exe"))
}

/// Why a Windows machine has no interpreter: the set is refused with this.
pub const NONE_FOUND: &str = "no shell interpreter found: tried Git Bash (install Git for Windows or set IOTA_GIT_BASH_PATH), pwsh.exe, powershell.exe and cmd.exe — set IOTA_SHELL to name one";

/// The interpreter `machine` runs calls with, as a program (a path or a
/// name on PATH): `IOTA_SHELL` when set; otherwise bash off Windows, and on
/// Windows the first of Git Bash (`IOTA_GIT_BASH_PATH`, else beside the
/// `git.exe` on PATH), pwsh.exe, powershell.exe, cmd.exe that it has.
pub fn discover(machine: &Machine) -> Result<String, &'static str> {
    if let Some(named) = &machine.iota_shell {
        return Ok(named.clone());
    }
    if !machine.windows {
        return Ok("bash".to_string());
    }
    let git_bash = match &machine.git_bash_path {
        Some(path) => Some(path.clone()),
        None => machine.on_path.get("git.exe").and_then(|git| git_bash_beside(git)),
    };
    if let Some(bash) = git_bash.filter(|path| machine.files.contains(path)) {
        return Ok(bash.to_string_lossy().into_owned());
    }
    ["pwsh.exe", "powershell.exe", "cmd.exe"]
        .iter()
        .find_map(|name| machine.on_path.get(*name))
        .map(|found| found.to_string_lossy().into_owned())
        .ok_or(NONE_FOUND)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(on_path: &[(&str, &str)], files: &[&str]) -> Machine {
        Machine {
            windows: true,
            on_path: on_path.iter().map(|(n, p)| (n.to_string(), PathBuf::from(p))).collect(),
            files: files.iter().map(PathBuf::from).collect(),
            ..Machine::default()
        }
    }

    #[test]
    fn windows_takes_the_first_interpreter_it_has_in_the_specs_order() {
        let git = ("git.exe", "C:/Program Files/Git/cmd/git.exe");
        let bash = "C:/Program Files/Git/bin/bash.exe";
        let pwsh = ("pwsh.exe", "C:/Program Files/PowerShell/7/pwsh.exe");
        let ps = (
            "powershell.exe",
            "C:/Windows/System32/WindowsPowerShell/v1.0/powershell.exe",
        );
        let cmd = ("cmd.exe", "C:/Windows/System32/cmd.exe");
        assert_eq!(discover(&windows(&[git, pwsh, ps, cmd], &[bash])).unwrap(), bash);
        // git.exe without its bash.exe beside it: the next one.
        assert_eq!(discover(&windows(&[git, pwsh, ps, cmd], &[])).unwrap(), pwsh.1);
        assert_eq!(discover(&windows(&[ps, cmd], &[])).unwrap(), ps.1);
        assert_eq!(discover(&windows(&[cmd], &[])).unwrap(), cmd.1);
        assert_eq!(discover(&windows(&[], &[])), Err(NONE_FOUND));
        // The other layouts of Git for Windows.
        for (git, bash) in [
            ("D:/Git/bin/git.exe", "D:/Git/bin/bash.exe"),
            ("D:/Git/mingw64/bin/git.exe", "D:/Git/bin/bash.exe"),
        ] {
            assert_eq!(discover(&windows(&[("git.exe", git), cmd], &[bash])).unwrap(), bash);
        }
        // IOTA_GIT_BASH_PATH wins over where git.exe is, when it is there.
        let mut m = windows(&[git, cmd], &[bash, "E:/tools/bash.exe"]);
        m.git_bash_path = Some("E:/tools/bash.exe".into());
        assert_eq!(discover(&m).unwrap(), "E:/tools/bash.exe");
        m.files.remove(Path::new("E:/tools/bash.exe"));
        assert_eq!(discover(&m).unwrap(), cmd.1, "named but missing: not Git Bash at all");
        // IOTA_SHELL wins over everything, even unrunnable (the call fails then).
        let mut m = windows(&[git, cmd], &[bash]);
        m.iota_shell = Some("nu".into());
        assert_eq!(discover(&m).unwrap(), "nu");
    }

    #[test]
    fn elsewhere_it_is_bash_unless_iota_shell_says() {
        let mut m = Machine::default();
        assert_eq!(discover(&m).unwrap(), "bash");
        m.iota_shell = Some("zsh".into());
        assert_eq!(discover(&m).unwrap(), "zsh");
    }

    #[test]
    fn each_dialect_speaks_its_own_idioms() {
        assert_eq!(Dialect::of("bash"), Dialect::Posix);
        assert_eq!(Dialect::of("/usr/bin/zsh"), Dialect::Posix);
        assert_eq!(Dialect::of(r"C:\Program Files\Git\bin\bash.exe"), Dialect::Posix);
        assert_eq!(Dialect::of("pwsh"), Dialect::PowerShell);
        assert_eq!(
            Dialect::of(r"C:\Windows\System32\WindowsPowerShell\v1.0\PowerShell.exe"),
            Dialect::PowerShell
        );
        assert_eq!(Dialect::of("CMD.EXE"), Dialect::Cmd);
        assert_eq!(Dialect::Posix.in_directory("src", "make"), "cd src && make");
        assert_eq!(Dialect::PowerShell.in_directory("src", "make"), "cd src; make");
        assert_eq!(Dialect::Cmd.in_directory("src", "make"), "cd /d src && make");
        assert_eq!(Dialect::Posix.in_directory("a && b", "ls"), "cd 'a && b' && ls");
        assert_eq!(Dialect::Posix.in_directory(r"a\b", "ls"), r"cd 'a\b' && ls");
        assert_eq!(Dialect::Cmd.in_directory(r"a\b", "dir"), r"cd /d a\b && dir");
        assert_eq!(Dialect::PowerShell.in_directory("it's", "ls"), "cd 'it''s'; ls");
        assert_eq!(Dialect::Cmd.in_directory("my dir", "dir"), "cd /d \"my dir\" && dir");
        let log = Path::new("/tmp/iota-jobs/1/b1.log");
        assert_eq!(Dialect::Posix.tail(log), "tail -n 50 /tmp/iota-jobs/1/b1.log");
        assert_eq!(
            Dialect::PowerShell.tail(log),
            "Get-Content -Tail 50 /tmp/iota-jobs/1/b1.log"
        );
        assert_eq!(Dialect::Cmd.tail(log), "type /tmp/iota-jobs/1/b1.log");
        assert_eq!(Dialect::PowerShell.detach(), "Start-Process");
        assert_eq!(Dialect::Cmd.detach(), "start /b");
        assert_eq!(
            Dialect::PowerShell.example(),
            "cargo test 2>&1 | Select-Object -Last 20"
        );
    }
}
