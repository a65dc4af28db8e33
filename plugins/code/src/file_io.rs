//! File access shared by the tools: bounded reads, binary detection, atomic
//! writes, line numbering, diffs, and the mapping of I/O errors to the texts
//! the model reads.

use iota_toolset::files::HeadError;
use iota_toolset::jail::Jail;
use std::fs::Metadata;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Files are read up to 20 MB.
pub const MAX_READ: u64 = 20 * 1024 * 1024;
/// A NUL byte in this many leading bytes makes a file binary.
pub const BINARY_PROBE: usize = 8000;

/// Whether `bytes` look binary: a NUL in the first 8,000 bytes.
pub fn is_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(BINARY_PROBE)]).is_some()
}

/// A file argument resolved inside the jail, with its `stat` result.
pub struct Target {
    /// The path as the model wrote it.
    pub written: String,
    /// Absolute, lexically clean path inside the root.
    pub abs: PathBuf,
}

impl Target {
    /// Resolves `written` inside the jail.
    pub fn resolve(jail: &Jail, written: &str) -> Result<Target, String> {
        Ok(Target {
            written: written.to_string(),
            abs: jail.resolve(written)?,
        })
    }

    /// `file does not exist: <absolute path>` and its siblings for `err`.
    pub fn error_text(&self, jail: &Jail, err: &io::Error) -> String {
        let why = if Jail::is_escape(err) {
            HeadError::Outside
        } else if err.kind() == io::ErrorKind::NotFound {
            HeadError::NotFound
        } else {
            HeadError::Other(plain(err))
        };
        self.refusal(jail, why)
    }

    /// The text the model reads when this file cannot be read: one place for
    /// the texts, whether a WASI stat or the host's `read-head` said why.
    pub fn refusal(&self, jail: &Jail, why: HeadError) -> String {
        match why {
            HeadError::NotFound => format!("file does not exist: {}", self.abs.display()),
            HeadError::Directory => format!("{} is a directory, not a file", self.abs.display()),
            HeadError::NotRegular => format!("{} is not a regular file", self.written),
            HeadError::Outside => jail.outside(&self.written),
            HeadError::Other(why) => format!("cannot read {}: {why}", self.written),
        }
    }

    /// Metadata of an existing regular file (links followed inside the root),
    /// or the text the model reads when it is missing, a directory, escapes or
    /// is not a regular file.
    pub fn regular_file(&self, jail: &Jail) -> Result<Metadata, String> {
        let meta = std::fs::metadata(&self.abs).map_err(|e| self.error_text(jail, &e))?;
        if meta.is_dir() {
            return Err(self.refusal(jail, HeadError::Directory));
        }
        if !meta.is_file() {
            return Err(self.refusal(jail, HeadError::NotRegular));
        }
        Ok(meta)
    }
}

pub use iota_toolset::output::plain;

/// Writes `bytes` to `path` atomically: a temporary file in the same directory,
/// then a rename over the target. The rename replaces the directory entry, so a
/// symlink at `path` is replaced, never written through.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut attempt = 0u32;
    let (tmp, mut file) = loop {
        let tmp = dir.join(format!(".{name}.iota-{}-{attempt}.tmp", unique()));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(file) => break (tmp, file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    let written = file.write_all(bytes).and_then(|()| file.flush());
    drop(file);
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// A value that differs between calls, for temporary file names.
fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// One row of numbered output: the line number right-aligned in six columns,
/// a tab, and the line.
pub fn numbered(number: usize, line: &str, out: &mut String) {
    // By hand: `format!` per row was a fifth of a small read_file's time in Wasm.
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = number;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let width = digits.len() - at;
    out.extend(std::iter::repeat_n(' ', 6usize.saturating_sub(width)));
    out.push_str(std::str::from_utf8(&digits[at..]).expect("ASCII digits"));
    out.push('\t');
    out.push_str(line);
}

/// The lines of `text`, without their terminators (`\n` or `\r\n`). A final
/// newline does not start another line.
pub fn lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect()
}

/// A unified diff of `old` to `new` for `path`, three lines of context.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_drop_terminators() {
        assert_eq!(lines("a\r\nb\n"), vec!["a", "b"]);
        assert_eq!(lines("a\n\n"), vec!["a", ""]);
        assert_eq!(lines("x"), vec!["x"]);
        assert!(lines("").is_empty());
    }

    #[test]
    fn numbering_is_six_columns_and_a_tab() {
        let row = |n, line| {
            let mut out = String::new();
            numbered(n, line, &mut out);
            out
        };
        assert_eq!(row(7, "fn main() {}"), "     7\tfn main() {}");
        assert_eq!(row(0, ""), "     0\t");
        assert_eq!(row(123_456, "x"), "123456\tx");
        assert_eq!(row(12_345_678, "x"), "12345678\tx");
    }

    #[test]
    fn binary_means_nul_early() {
        assert!(is_binary(b"ab\0c"));
        let mut late = vec![b'a'; BINARY_PROBE];
        late.push(0);
        assert!(!is_binary(&late));
    }
}
