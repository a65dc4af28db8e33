//! The iota exception: the one command line that leaves a sandboxed set.
//!
//! Spec: "the first word, read with POSIX quoting ('…', "…", \), must resolve —
//! an absolute or relative path as written, a bare name on PATH — to the same
//! canonical file as the running binary; … the rest of the line must be one
//! simple command: a pipe (|), a chain (&&, ||, ;, &), a newline, a command
//! substitution ($(…), a backtick) anywhere outside single quotes keeps the
//! whole line in the sandbox. Redirections (>, <, 2>&1, &>) are allowed."
//!
//! "Conservative by construction" is taken literally: [`parse`] is a
//! whitelist. It accepts a line only when it can prove what bash would do
//! with it — plain words, `'…'`, `"…"` with nothing bash expands inside,
//! backslash-escaped printable characters, and redirections of the
//! standard streams to and from files named by such words — and everything
//! else (`$` in any form,
//! globs, braces, `~`, `<(`, `((`, comments, control characters, a first word
//! bash would not look up on PATH) keeps the line in the sandbox. An accepted
//! line is then not handed to bash at all: the host runs its own binary
//! (`/proc/self/exe`, so a file swapped in at the same path after the check
//! cannot be what runs) with the parsed words as arguments and performs the
//! redirections itself, in bash's order (`redirect.rs`): every file beneath
//! the project root, reached with no link followed, never a repository's
//! own files, or the line stays in the sandbox. `tests/iota_exception.rs`
//! checks the parser against bash on thousands of generated lines, and the
//! files a line's redirections leave against the files bash leaves.
//!
//! One departure from the spec's letter, deliberate (ARCHITECTURE.md): a
//! first word that is a bash builtin or keyword (`eval`, `exec`, `command`,
//! …) keeps the line in the sandbox even when a file of that name on PATH is
//! the binary.

use std::path::{Path, PathBuf};

/// How a redirection opens its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// `<`: for reading.
    Read,
    /// `>`: created or truncated.
    Truncate,
    /// `>>`: created or appended to.
    Append,
}

/// One redirection of an accepted line, in the order the line gives them
/// (bash performs them left to right, each on what the ones before left).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirection {
    /// `N<FILE`, `N>FILE`, `N>>FILE`, and `&>FILE` / `&>>FILE`.
    File {
        /// The descriptors it sets: 0, 1 or 2, or 1 and 2 (`&>`).
        fds: Vec<u8>,
        /// The file as written (relative to the call's directory), or `/dev/null`.
        target: String,
        /// How it is opened.
        open: Open,
    },
    /// `N>&M` among stdout and stderr.
    Dup {
        /// The descriptor set (`N`).
        fd: u8,
        /// The one it becomes a copy of, as that is now (`M`).
        to: u8,
    },
}

/// The one target outside the project a redirection may name.
#[cfg_attr(windows, allow(dead_code))]
pub const DEV_NULL: &str = "/dev/null";

/// An accepted line: exactly what runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The words with quoting removed; the first names the program.
    pub words: Vec<String>,
    /// The redirections, in order; the host performs them (`redirect.rs`).
    pub redirections: Vec<Redirection>,
}

/// Bash's reserved words and builtins: a first word among these is never
/// looked up on PATH, so a file of that name there proves nothing.
const NOT_ON_PATH: &[&str] = &[
    "!",
    "[[",
    "]]",
    "{",
    "}",
    "case",
    "coproc",
    "do",
    "done",
    "elif",
    "else",
    "esac",
    "fi",
    "for",
    "function",
    "if",
    "in",
    "select",
    "then",
    "time",
    "until",
    "while",
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// The iota call `line` makes, if it runs the binary at `running` as one
/// simple command. `running` is the canonical path of this process's binary
/// (`None` when the OS cannot say, which lets nothing out).
pub fn iota_call(line: &str, running: Option<&Path>, cwd: &Path, path_var: Option<&str>) -> Option<SimpleCommand> {
    let running = running?;
    let command = parse(line)?;
    let first = command.words.first()?;
    if first.is_empty() || first.contains('=') || NOT_ON_PATH.contains(&first.as_str()) {
        return None;
    }
    (resolve(first, cwd, path_var)? == running).then_some(command)
}

/// `line` as one simple command, when the whitelist grammar proves it is one.
pub fn parse(line: &str) -> Option<SimpleCommand> {
    let mut lexer = Lexer {
        chars: line.chars().collect(),
        at: 0,
    };
    let mut words = Vec::new();
    let mut redirections = Vec::new();
    loop {
        lexer.skip_blanks();
        if lexer.peek().is_none() {
            break;
        }
        if let Some(redirection) = lexer.redirection()? {
            redirections.push(redirection);
            continue;
        }
        words.push(lexer.word()?);
    }
    if words.is_empty() {
        return None;
    }
    Some(SimpleCommand { words, redirections })
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
}

/// Unquoted characters that stand for themselves in bash, wherever they are.
fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-./:,@%+=^".contains(c)
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    /// The character here, consumed.
    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    /// One word up to a blank or the end; `None` for anything not plain.
    fn word(&mut self) -> Option<String> {
        let mut word = String::new();
        let mut any = false;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => break,
                '\'' => {
                    self.at += 1;
                    loop {
                        let c = self.next()?;
                        match c {
                            '\'' => break,
                            c if c.is_control() => return None,
                            c => word.push(c),
                        }
                    }
                }
                '"' => {
                    self.at += 1;
                    loop {
                        let c = self.next()?;
                        match c {
                            '"' => break,
                            '\\' => match self.peek()? {
                                escaped @ ('"' | '\\' | '$' | '`') => {
                                    self.at += 1;
                                    word.push(escaped);
                                }
                                _ => return None,
                            },
                            '$' | '`' | '!' => return None,
                            c if c.is_control() => return None,
                            c => word.push(c),
                        }
                    }
                }
                '\\' => {
                    let escaped = self.peek_at(1)?;
                    if !(escaped == ' ' || escaped.is_ascii_graphic()) {
                        return None;
                    }
                    self.at += 2;
                    word.push(escaped);
                }
                c if is_plain(c) => {
                    self.at += 1;
                    word.push(c);
                }
                _ => return None,
            }
            any = true;
        }
        any.then_some(word)
    }

    /// A redirection starting here (`Some(None)` when this is a word), or
    /// `None` for one the grammar does not accept: here-documents and
    /// -strings, `<>`, `>|`, closing (`>&-`), process substitution,
    /// descriptors past 2, and a dup to anything but stdout or stderr.
    fn redirection(&mut self) -> Option<Option<Redirection>> {
        let fd = match (self.peek(), self.peek_at(1)) {
            (Some(d @ '0'..='9'), Some('<' | '>')) => {
                self.at += 1;
                Some(d.to_digit(10)? as u8)
            }
            (Some('&'), Some('>')) => {
                self.at += 2;
                let append = self.peek() == Some('>');
                self.at += usize::from(append);
                let open = if append { Open::Append } else { Open::Truncate };
                return self.target(vec![1, 2], open);
            }
            (Some('<' | '>'), _) => None,
            _ => return Some(None),
        };
        let op = self.next()?;
        if op == '<' {
            if let Some('<' | '>' | '&' | '(') = self.peek() {
                return None;
            }
            if fd.unwrap_or(0) != 0 {
                return None;
            }
            return self.target(vec![0], Open::Read);
        }
        let from = fd.unwrap_or(1);
        if !(1..=2).contains(&from) {
            return None;
        }
        match self.peek() {
            Some('&') => {
                self.at += 1;
                let to = self.next()?;
                if !matches!(self.peek(), None | Some(' ' | '\t')) || !matches!(to, '1' | '2') {
                    return None;
                }
                Some(Some(Redirection::Dup {
                    fd: from,
                    to: to.to_digit(10)? as u8,
                }))
            }
            Some('>') => {
                self.at += 1;
                self.target(vec![from], Open::Append)
            }
            Some('|' | '(') => None,
            _ => self.target(vec![from], Open::Truncate),
        }
    }

    /// The redirection's target: one word the grammar reads (no expansion
    /// bash would make), not empty.
    fn target(&mut self, fds: Vec<u8>, open: Open) -> Option<Option<Redirection>> {
        self.skip_blanks();
        let target = self.word()?;
        if target.is_empty() {
            return None;
        }
        Some(Some(Redirection::File { fds, target, open }))
    }
}

/// The canonical file a command word names: a path as written (relative to
/// `cwd`), or a bare name looked up on PATH — on Windows with `;` between
/// its entries, either slash in a path, and a bare name tried with each of
/// `PATHEXT`'s extensions (`.COM;.EXE;.BAT;.CMD` when unset), as `cmd.exe`
/// finds a program.
pub fn resolve(word: &str, cwd: &Path, path_var: Option<&str>) -> Option<PathBuf> {
    let separators: &[char] = if cfg!(windows) { &['/', '\\'] } else { &['/'] };
    if word.contains(separators) {
        return crate::platform::canonicalize(&cwd.join(word)).ok();
    }
    let list_separator = if cfg!(windows) { ';' } else { ':' };
    path_var?
        .split(list_separator)
        .map(|dir| {
            if dir.is_empty() {
                cwd.to_path_buf()
            } else {
                cwd.join(dir)
            }
        })
        .flat_map(|dir| program_names(word).into_iter().map(move |name| dir.join(name)))
        .find(|candidate| is_executable(candidate))
        .and_then(|found| crate::platform::canonicalize(&found).ok())
}

/// The file names a bare command word may be: itself on Unix; on Windows
/// itself when it has an extension, then it with each of `PATHEXT`'s.
pub(crate) fn program_names(word: &str) -> Vec<String> {
    if cfg!(unix) {
        return vec![word.to_string()];
    }
    let extensions = std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".to_string());
    let has_extension = Path::new(word).extension().is_some();
    has_extension
        .then(|| word.to_string())
        .into_iter()
        .chain(
            extensions
                .split(';')
                .filter(|e| !e.is_empty())
                .map(|e| format!("{word}{}", e.to_ascii_lowercase())),
        )
        .collect()
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Windows has no executable bit: a file found with a `PATHEXT` name runs.
#[cfg(windows)]
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Option<Vec<String>> {
        parse(line).map(|c| c.words)
    }

    #[test]
    fn words_with_quoting_removed() {
        assert_eq!(words("iota mcp add x").unwrap(), ["iota", "mcp", "add", "x"]);
        assert_eq!(words("  '/opt/my iota' run").unwrap(), ["/opt/my iota", "run"]);
        assert_eq!(words(r#""io"ta run"#).unwrap(), ["iota", "run"]);
        assert_eq!(words(r"i\ota run\ x").unwrap(), ["iota", "run x"]);
        assert_eq!(
            words(r#"iota run a -m 'x | y; z && $(w)' "say \"hi\"""#).unwrap(),
            ["iota", "run", "a", "-m", "x | y; z && $(w)", "say \"hi\""]
        );
        assert_eq!(words("iota ''").unwrap(), ["iota", ""]);
        assert_eq!(words("'unterminated"), None);
        assert_eq!(words("   "), None);
    }

    #[test]
    fn redirections_in_their_order_with_their_targets() {
        use Open::{Append, Read, Truncate};
        let file = |fds: &[u8], target: &str, open| Redirection::File {
            fds: fds.to_vec(),
            target: target.to_string(),
            open,
        };
        let dup = |fd, to| Redirection::Dup { fd, to };
        let cases = [
            ("iota x 2>&1", vec![dup(2, 1)]),
            ("iota x >&2", vec![dup(1, 2)]),
            ("iota x > /dev/null", vec![file(&[1], "/dev/null", Truncate)]),
            ("iota x &>/dev/null", vec![file(&[1, 2], "/dev/null", Truncate)]),
            ("iota x > out.txt", vec![file(&[1], "out.txt", Truncate)]),
            ("iota x &> 'my log'", vec![file(&[1, 2], "my log", Truncate)]),
            ("iota x &>>log", vec![file(&[1, 2], "log", Append)]),
            (
                "iota x 2>&1 >> log.txt < in.txt",
                vec![dup(2, 1), file(&[1], "log.txt", Append), file(&[0], "in.txt", Read)],
            ),
            (
                "iota x 2>e 1>o",
                vec![file(&[2], "e", Truncate), file(&[1], "o", Truncate)],
            ),
            ("iota x >>../up", vec![file(&[1], "../up", Append)]),
        ];
        for (line, want) in cases {
            let command = parse(line).unwrap_or_else(|| panic!("{line} accepted"));
            assert_eq!(command.words, ["iota", "x"], "{line}");
            assert_eq!(command.redirections, want, "{line}");
        }
        for refused in [
            "iota x >''",
            "iota x > $HOME/f",
            "iota x >> ~/.bashrc",
            "iota x > *.txt",
            "iota x 0>f",
            "iota x 1<f",
            "iota x >&-",
            "iota x >&f",
            "iota x <&0",
            "iota x >",
        ] {
            assert_eq!(parse(refused), None, "{refused}");
        }
    }

    #[test]
    fn anything_bash_would_expand_or_chain_stays_in() {
        for no in [
            "iota mcp list | head",
            "iota a && b",
            "iota a || b",
            "iota a; b",
            "iota a &",
            "iota a\nb",
            "iota a\rb",
            "iota $(x)",
            "iota `x`",
            "iota \"$(x)\"",
            "iota a \\\nb",
            "iota $'\\'' ; touch P ; # '",
            "iota $\"x\"",
            "iota --version <(touch P)",
            "iota --version >(touch P)",
            "iota $[ ${PWD##*/} ]",
            "iota $HOME",
            "iota ((1))",
            "iota [[ x ]]",
            "iota {a,b}",
            "iota ~/x",
            "iota *",
            "iota a?",
            "iota # comment",
            "iota x 3>&1",
            "iota x >| f",
            "iota x <<EOF",
            "iota x <<< word",
            "iota x <> f",
            "iota \"a\\nb\"",
            "iota \"!x\"",
            "iota 'tab\there'",
            "iota caf\u{e9}",
        ] {
            assert_eq!(parse(no), None, "{no:?}");
        }
    }

    #[test]
    fn resolution_by_path_and_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("iota");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        for builtin in ["eval", "exec", "command"] {
            let link = dir.path().join(builtin);
            std::os::unix::fs::symlink(&bin, &link).unwrap();
        }
        let canonical = std::fs::canonicalize(&bin).unwrap();
        let path_var = dir.path().to_str().unwrap().to_string();
        let call = |line: &str, cwd: &Path, path: Option<&str>| iota_call(line, Some(&canonical), cwd, path);
        assert!(call("iota mcp list", Path::new("/"), Some(&path_var)).is_some());
        assert!(call(&format!("{} run x -m 'y'", bin.display()), Path::new("/"), None).is_some());
        assert!(call("./iota x", dir.path(), None).is_some());
        assert!(call("iota mcp list | head", Path::new("/"), Some(&path_var)).is_none());
        assert!(call("bash -c iota", Path::new("/"), Some("/usr/bin")).is_none());
        assert!(call("X=1 iota x", Path::new("/"), Some(&path_var)).is_none());
        for builtin in ["eval 'touch P'", "exec x", "command x"] {
            assert!(call(builtin, Path::new("/"), Some(&path_var)).is_none(), "{builtin}");
        }
        assert!(iota_call("iota x", None, Path::new("/"), Some(&path_var)).is_none());
    }
}
