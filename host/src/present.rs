//! How a call is shown to a person: `[tool rest]` headers with dim brackets,
//! the tool's name in bold cyan and the rest in cyan; colour off with
//! `NO_COLOR` or when the stream is not a terminal.
//!
//! Everything shown on a terminal that a model, a tool or a file chose —
//! command lines, headers, diffs, questions, notices, results — goes
//! through [`inert`] first: an escape sequence in a command line could
//! otherwise redraw the approval question so that the user allows one
//! command while reading another.

use crossterm::style::Stylize;
use std::borrow::Cow;

/// `text` with every character that could steer a terminal made visible:
/// C0 controls in caret notation (ESC as `^[`, CR as `^M`), DEL as `^?`, C1
/// controls and the bidirectional overrides that reorder what is displayed
/// as `\u{…}`. Newlines and tabs stay.
pub fn inert(text: &str) -> Cow<'_, str> {
    let steers = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
    };
    if !text.chars().any(steers) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !steers(c) => out.push(c),
            '\u{7f}' => out.push_str("^?"),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Whether to colour output on a stream that `is_terminal`.
pub fn colour(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// `[read_file src/main.rs]`, styled when `colour`, made [`inert`].
pub fn header(header: &str, colour: bool) -> String {
    let header = inert(header);
    let (tool, rest) = header.split_once(' ').unwrap_or((&header, ""));
    if !colour {
        return if rest.is_empty() {
            format!("[{tool}]")
        } else {
            format!("[{tool} {rest}]")
        };
    }
    let rest = if rest.is_empty() {
        String::new()
    } else {
        format!(" {}", rest.cyan())
    };
    format!("{}{}{rest}{}", "[".dim(), tool.cyan().bold(), "]".dim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(inert("ls -la"), "ls -la");
        assert_eq!(inert("a\nb\tc"), "a\nb\tc");
        assert_eq!(inert("ls\u{1b}[2J\u{1b}[Hrm -rf /\r"), "ls^[[2J^[[Hrm -rf /^M");
        assert_eq!(inert("\u{7f}\u{9b}31m\u{202e}txt.exe"), "^?\\u{9b}31m\\u{202e}txt.exe");
        assert_eq!(header("shell echo \u{1b}]0;x\u{7}", false), "[shell echo ^[]0;x^G]");
    }

    #[test]
    fn plain_headers() {
        assert_eq!(header("read_file src/main.rs", false), "[read_file src/main.rs]");
        assert_eq!(header("glob", false), "[glob]");
    }
}
