//! File access shared by the tools: bounded reads, binary detection, line
//! numbering, diffs, and the texts the model reads when a file cannot be
//! read. (Writes go through the host: `iota_toolset::writes`.)

use iota_toolset::files::HeadError;
use iota_toolset::jail::Jail;
use std::path::PathBuf;

/// Files are read up to 20 MB.
pub const MAX_READ: u64 = 20 * 1024 * 1024;
/// A NUL byte in this many leading bytes makes a file binary.
pub const BINARY_PROBE: usize = 8000;

/// Whether `bytes` look binary: a NUL in the first 8,000 bytes.
pub fn is_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(BINARY_PROBE)]).is_some()
}

/// A file argument resolved inside the jail.
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
}

pub use iota_toolset::output::plain;

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

/// Bytes of a diff shown at most: past this it is cut at a line, with a
/// note. The write itself is whole whatever its diff shows.
pub const DIFF_CAP: usize = 64 * 1024;

/// Time a diff may take to be minimal: past it the diff is coarser, never
/// wrong (replacing a 5 MB file took 10-27 s of Myers' algorithm before).
const DIFF_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(300);

/// The unified diff (3 lines of context) from `old` to `new` of the file
/// `path` (root-relative), at most [`DIFF_CAP`] bytes: a longer one is cut
/// after a whole line and ends with `[diff cut at 64 KB]`.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    /// Takes text until the cap, then refuses more (which ends the
    /// formatting: nothing past the cap is ever made).
    struct Capped(String);
    impl std::fmt::Write for Capped {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            if self.0.len() + s.len() > DIFF_CAP {
                return Err(std::fmt::Error);
            }
            self.0.push_str(s);
            Ok(())
        }
    }
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let mut capped = Capped(String::new());
    let whole = std::fmt::Write::write_fmt(
        &mut capped,
        format_args!(
            "{}",
            diff.unified_diff()
                .context_radius(3)
                .header(&format!("a/{path}"), &format!("b/{path}"))
        ),
    )
    .is_ok();
    let mut text = capped.0;
    if !whole {
        text.truncate(text.rfind('\n').map_or(0, |end| end + 1));
        text.push_str("[diff cut at 64 KB]\n");
    }
    text
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
