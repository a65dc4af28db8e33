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

/// What [`join_capped`] showed of its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    /// Rows shown.
    pub rows: usize,
    /// Whether [`OUTPUT_CAP`] left rows out.
    pub cut_by_cap: bool,
}

/// Bytes kept for a footer when [`OUTPUT_CAP`] cuts the rows: a footer is
/// a note of one line, shorter than this.
pub const FOOTER_ROOM: usize = 256;

/// Joins `rows` with newlines within [`OUTPUT_CAP`], followed by the line
/// `footer` makes of what was shown (`None`: no line), so that a note
/// counts the rows it follows and can say when the cap, not the caller's
/// own bound, cut them. A footer longer than [`FOOTER_ROOM`] is clipped.
pub fn join_capped<'a>(rows: impl IntoIterator<Item = &'a str>, footer: impl Fn(Shown) -> Option<String>) -> String {
    let note = |shown: Shown| footer(shown).map(|f| clip(&f, FOOTER_ROOM - 4).into_owned());
    let mut out = String::new();
    let mut count = 0;
    // The rows, and where they end, that leave room for a note.
    let mut room_mark = (0, 0);
    let mut cut_by_cap = false;
    for row in rows {
        if out.len() + row.len() + 1 > OUTPUT_CAP {
            cut_by_cap = true;
            break;
        }
        out.push_str(row);
        out.push('\n');
        count += 1;
        if out.len() <= OUTPUT_CAP - FOOTER_ROOM {
            room_mark = (count, out.len());
        }
    }
    if !cut_by_cap {
        match note(Shown {
            rows: count,
            cut_by_cap: false,
        }) {
            None => {
                out.pop();
                return out;
            }
            Some(line) if out.len() + line.len() <= OUTPUT_CAP => {
                out.push_str(&line);
                return out;
            }
            // The note does not fit after every row: fewer rows.
            Some(_) => {}
        }
    }
    out.truncate(room_mark.1);
    match note(Shown {
        rows: room_mark.0,
        cut_by_cap: true,
    }) {
        Some(line) => out.push_str(&line),
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

    /// The note counts what is shown and knows when the cap cut it; the
    /// whole stays within the cap, and rows all shown with no note need none.
    #[test]
    fn a_joined_list_says_what_it_shows_and_what_cut_it() {
        let note = |shown: Shown| Some(format!("[{} shown, cut by cap: {}]", shown.rows, shown.cut_by_cap));
        assert_eq!(join_capped(["a", "b"], note), "a\nb\n[2 shown, cut by cap: false]");
        assert_eq!(join_capped(["a", "b"], |_| None), "a\nb");
        let row = "x".repeat(99);
        let rows: Vec<&str> = std::iter::repeat_n(row.as_str(), 1000).collect();
        let out = join_capped(rows.iter().copied(), note);
        assert!(out.len() <= OUTPUT_CAP);
        let shown = out.lines().filter(|l| *l == row).count();
        assert!(out.ends_with(&format!("[{shown} shown, cut by cap: true]")), "{shown}");
        assert!(shown >= (OUTPUT_CAP - FOOTER_ROOM) / 100 - 1);
        // Every row fits, but not with the note after them: fewer rows.
        let fits = OUTPUT_CAP / 100;
        let long_note = |shown: Shown| {
            Some(format!(
                "{}[{} shown, cut by cap: {}]",
                "-".repeat(60),
                shown.rows,
                shown.cut_by_cap
            ))
        };
        let out = join_capped(rows.iter().take(fits).copied(), long_note);
        assert!(out.len() <= OUTPUT_CAP);
        assert!(out.ends_with("cut by cap: true]"), "{}", &out[out.len() - 40..]);
        assert_eq!(
            join_capped(rows.iter().take(fits).copied(), |_| None).lines().count(),
            fits
        );
    }

    #[test]
    fn clipping_respects_characters() {
        assert_eq!(clip("héllo", 2), "h…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(floor_boundary("é", 1), 0);
    }
}
