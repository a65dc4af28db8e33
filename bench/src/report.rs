//! The report: Markdown printed as it is measured and kept for BENCHMARKS.md.

use crate::timing::human;
use std::time::Duration;

/// Markdown lines, echoed to stdout as they are added.
#[derive(Default)]
pub struct Report {
    text: String,
}

impl Report {
    /// Adds one line (or several).
    pub fn line(&mut self, line: impl AsRef<str>) {
        println!("{}", line.as_ref());
        self.text.push_str(line.as_ref());
        self.text.push('\n');
    }

    /// Starts a table of ours against a peer.
    pub fn table(&mut self, title: &str) {
        self.line(format!("\n## {title}\n"));
        self.line("| operation | ours | peer | peer time | ratio |");
        self.line("|---|---|---|---|---|");
    }

    /// One row: ours, a peer and ours / peer (lower is better).
    pub fn row(&mut self, what: &str, ours: Duration, peer: &str, theirs: Option<Duration>) {
        let line = match theirs {
            Some(t) => format!(
                "| {what} | {} | {peer} | {} | {:.2}x |",
                human(ours),
                human(t),
                ours.as_secs_f64() / t.as_secs_f64()
            ),
            None => format!("| {what} | {} | {peer} | not installed | n/a |", human(ours)),
        };
        self.line(line);
    }

    /// Everything so far.
    pub fn text(&self) -> &str {
        &self.text
    }
}
