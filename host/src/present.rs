//! How a call is shown to a person: `[tool rest]` headers with dim brackets,
//! the tool's name in bold cyan and the rest in cyan; colour off with
//! `NO_COLOR` or when the stream is not a terminal.

use crossterm::style::Stylize;

/// Whether to colour output on a stream that `is_terminal`.
pub fn colour(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// `[read_file src/main.rs]`, styled when `colour`.
pub fn header(header: &str, colour: bool) -> String {
    let (tool, rest) = header.split_once(' ').map_or((header, ""), |(t, r)| (t, r));
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
    fn plain_headers() {
        assert_eq!(header("read_file src/main.rs", false), "[read_file src/main.rs]");
        assert_eq!(header("glob", false), "[glob]");
    }
}
