//! Output caps: byte budgets that never split a UTF-8 character.

/// The code and skills toolsets' per-call output cap: 64 KB (65,536 bytes).
pub const OUTPUT_CAP: usize = 65_536;

/// The largest index `<= max` that is a char boundary of `s`.
pub fn floor_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// An I/O error's message without the `(os error N)` suffix, which means
/// nothing to a model and differs between a component, the host and a native
/// build.
pub fn plain(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// `line` cut to at most `max` bytes of its own text, with `…` appended when cut.
pub fn clip(line: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if line.len() <= max {
        std::borrow::Cow::Borrowed(line)
    } else {
        std::borrow::Cow::Owned(format!("{}…", &line[..floor_boundary(line, max)]))
    }
}

/// Joins `rows` with newlines, followed by `footer` on its own line, keeping
/// the whole within [`OUTPUT_CAP`]: rows that would pass it are left out.
pub fn join_capped<'a>(rows: impl IntoIterator<Item = &'a str>, footer: Option<&str>) -> String {
    let budget = OUTPUT_CAP - footer.map_or(0, |f| f.len() + 1);
    let mut out = String::new();
    for row in rows {
        if out.len() + row.len() + 1 > budget {
            break;
        }
        out.push_str(row);
        out.push('\n');
    }
    match footer {
        Some(footer) => out.push_str(footer),
        None => {
            out.pop();
        }
    }
    out
}

/// A window of numbered lines fitted under a byte budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The rendered rows, each ending in a newline.
    pub text: String,
    /// The last line number shown (`offset - 1` when none fit).
    pub last: usize,
    /// Whether rows were left out (or the one shown was cut) for the budget.
    pub truncated: bool,
}

/// Renders lines `offset..=end` (1-based) of `lines` with `row` (which
/// appends one row for a line number and line), stopping before `budget`
/// bytes; a first row longer than the budget is cut with `…` rather than
/// leaving the window empty.
pub fn window<S: AsRef<str>>(
    lines: &[S],
    offset: usize,
    end: usize,
    budget: usize,
    row: impl Fn(usize, &str, &mut String),
) -> Window {
    let mut out = Window {
        text: String::new(),
        last: offset.saturating_sub(1),
        truncated: false,
    };
    // One buffer for every row: an allocation per row costs more than the row in Wasm.
    let mut rendered = String::new();
    for number in offset..=end.min(lines.len()) {
        rendered.clear();
        row(number, lines[number - 1].as_ref(), &mut rendered);
        if out.text.len() + rendered.len() + 1 > budget {
            if number == offset {
                out.text.push_str(&clip(&rendered, budget.saturating_sub(4)));
                out.text.push('\n');
                out.last = number;
            }
            out.truncated = true;
            break;
        }
        out.text.push_str(&rendered);
        out.text.push('\n');
        out.last = number;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_fit_the_budget_and_never_come_back_empty() {
        let lines = ["aaaa", "bbbb", "cccc"];
        let w = window(&lines, 1, 3, 11, |_, l, out| out.push_str(l));
        assert_eq!((w.text.as_str(), w.last, w.truncated), ("aaaa\nbbbb\n", 2, true));
        let w = window(&lines, 2, 2, 100, |n, l, out| out.push_str(&format!("{n}:{l}")));
        assert_eq!((w.text.as_str(), w.last, w.truncated), ("2:bbbb\n", 2, false));
        let w = window(&["x".repeat(50)], 1, 1, 10, |_, l, out| out.push_str(l));
        assert!(w.truncated && w.last == 1 && w.text.ends_with("…\n"));
    }

    #[test]
    fn clipping_respects_characters() {
        assert_eq!(clip("héllo", 2), "h…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(floor_boundary("é", 1), 0);
    }
}
