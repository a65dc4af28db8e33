//! The iota exception: the one command line that leaves a sandboxed set.
//!
//! Spec: "the first word, read with POSIX quoting ('…', "…", \), must resolve —
//! an absolute or relative path as written, a bare name on PATH — to the same
//! canonical file as the running binary; … the rest of the line must be one
//! simple command: a pipe (|), a chain (&&, ||, ;, &), a newline, a command
//! substitution ($(…), a backtick) anywhere outside single quotes keeps the
//! whole line in the sandbox. Redirections (>, <, 2>&1, &>) are allowed."

use std::path::{Path, PathBuf};

/// Whether `line` runs the binary at `running` as one simple command.
/// `running` is the canonical path of this process's binary (`None` when the
/// OS cannot say, which lets nothing out).
pub fn is_iota_call(line: &str, running: Option<&Path>, cwd: &Path, path_var: Option<&str>) -> bool {
    let Some(running) = running else { return false };
    if !is_simple(line) {
        return false;
    }
    let Some(first) = first_word(line) else { return false };
    resolve(&first, cwd, path_var).is_some_and(|p| p == running)
}

/// The first word with POSIX quoting removed; `None` if it is empty or
/// unterminated.
pub fn first_word(line: &str) -> Option<String> {
    let mut word = String::new();
    let mut chars = line.trim_start_matches([' ', '\t']).chars().peekable();
    let mut started = false;
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | ';' | '|' | '&' | '<' | '>' | '(' | ')' => break,
            '\'' => {
                started = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => word.push(other),
                    }
                }
            }
            '"' => {
                started = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            escaped @ ('"' | '\\' | '$' | '`') => word.push(escaped),
                            '\n' => {}
                            other => {
                                word.push('\\');
                                word.push(other);
                            }
                        },
                        other => word.push(other),
                    }
                }
            }
            '\\' => {
                started = true;
                match chars.next()? {
                    '\n' => {}
                    other => word.push(other),
                }
            }
            other => {
                started = true;
                word.push(other);
            }
        }
    }
    (started && !word.is_empty()).then_some(word)
}

/// Whether the line is one simple command: no pipe, chain, newline or command
/// substitution outside single quotes; redirections (`>`, `<`, `2>&1`, `&>`)
/// are fine.
pub fn is_simple(line: &str) -> bool {
    let bytes = line.as_bytes();
    let mut i = 0;
    let (mut single, mut double) = (false, false);
    while i < bytes.len() {
        let c = bytes[i];
        if single {
            single = c != b'\'';
            i += 1;
            continue;
        }
        match c {
            b'\\' => {
                // An escaped newline is a line continuation, still a newline to us.
                if bytes.get(i + 1) == Some(&b'\n') {
                    return false;
                }
                i += 2;
                continue;
            }
            b'\'' if !double => single = true,
            b'"' => double = !double,
            b'`' => return false,
            b'$' if bytes.get(i + 1) == Some(&b'(') => return false,
            b'\n' | b'\r' => return false,
            b'|' | b';' if !double => return false,
            b'&' if !double => {
                let prev = i.checked_sub(1).map(|p| bytes[p]);
                let next = bytes.get(i + 1).copied();
                // `>&`, `<&` (fd duplication) and `&>` (redirect both) are redirections.
                let redirection = matches!(prev, Some(b'>' | b'<')) || next == Some(b'>');
                if !redirection {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    !single && !double
}

/// The canonical file a command word names: a path as written (relative to
/// `cwd`), or a bare name looked up on PATH.
pub fn resolve(word: &str, cwd: &Path, path_var: Option<&str>) -> Option<PathBuf> {
    if word.contains('/') {
        return std::fs::canonicalize(cwd.join(word)).ok();
    }
    path_var?
        .split(':')
        .filter(|dir| !dir.is_empty())
        .map(|dir| cwd.join(dir).join(word))
        .find(|candidate| is_executable(candidate))
        .and_then(|found| std::fs::canonicalize(found).ok())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_words_with_quoting() {
        assert_eq!(first_word("iota mcp add x").as_deref(), Some("iota"));
        assert_eq!(first_word("  '/opt/my iota' run").as_deref(), Some("/opt/my iota"));
        assert_eq!(first_word(r#""io"ta run"#).as_deref(), Some("iota"));
        assert_eq!(first_word(r"i\ota run").as_deref(), Some("iota"));
        assert_eq!(first_word("'unterminated"), None);
        assert_eq!(first_word("   "), None);
    }

    #[test]
    fn simple_commands_allow_redirections_only() {
        for ok in [
            "iota mcp list",
            "iota run a -m 'x | y; z && $(w)'",
            "iota x > out.txt 2>&1",
            "iota x &> log",
            "iota x >&2",
            "iota \"a|b\"",
        ] {
            assert!(is_simple(ok), "{ok}");
        }
        for no in [
            "iota mcp list | head",
            "iota a && b",
            "iota a || b",
            "iota a; b",
            "iota a &",
            "iota a\nb",
            "iota $(x)",
            "iota `x`",
            "iota \"$(x)\"",
            "iota a \\\nb",
        ] {
            assert!(!is_simple(no), "{no}");
        }
    }

    #[test]
    fn resolution_by_path_and_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("iota");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let canonical = std::fs::canonicalize(&bin).unwrap();
        let path_var = dir.path().to_str().unwrap().to_string();
        assert!(is_iota_call(
            "iota mcp list",
            Some(&canonical),
            Path::new("/"),
            Some(&path_var)
        ));
        assert!(is_iota_call(
            &format!("{} run x -m 'y'", bin.display()),
            Some(&canonical),
            Path::new("/"),
            None
        ));
        assert!(is_iota_call("./iota x", Some(&canonical), dir.path(), None));
        assert!(!is_iota_call(
            "iota mcp list | head",
            Some(&canonical),
            Path::new("/"),
            Some(&path_var)
        ));
        assert!(!is_iota_call("iota x", None, Path::new("/"), Some(&path_var)));
        assert!(!is_iota_call(
            "bash -c iota",
            Some(&canonical),
            Path::new("/"),
            Some("/usr/bin")
        ));
    }
}
