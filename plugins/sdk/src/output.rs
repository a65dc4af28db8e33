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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_respects_characters() {
        assert_eq!(clip("héllo", 2), "h…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(floor_boundary("é", 1), 0);
    }
}
