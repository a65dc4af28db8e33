//! The shell tool's output cap, bounded while the command streams.
//!
//! Spec: "32 KB and 512 lines, both bounded while the command streams. Past
//! 512 lines the first 128 and the last 384 are kept around [... N lines
//! omitted — pipe through head/tail/grep to narrow the output ...]; past 32 KB
//! the first 8 KB and the last 22 KB around [... N bytes omitted ...]."
//!
//! Memory stays bounded for any amount of output: the first and last 32 KB of
//! the stream, and the offsets of the newlines that matter.

use std::collections::VecDeque;

/// Bytes kept before the byte cap applies.
pub const MAX_BYTES: usize = 32 * 1024;
/// Lines kept before the line cap applies.
pub const MAX_LINES: u64 = 512;
/// Lines kept from the start past the line cap.
pub const HEAD_LINES: u64 = 128;
/// Lines kept from the end past the line cap.
pub const TAIL_LINES: u64 = 384;
/// Bytes kept from the start past the byte cap.
pub const HEAD_BYTES: usize = 8 * 1024;
/// Bytes kept from the end past the byte cap.
pub const TAIL_BYTES: usize = 22 * 1024;

const KEEP: usize = MAX_BYTES + 1;

/// A command's combined output, capped as it arrives.
#[derive(Debug, Default)]
pub struct CappedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    newlines: u64,
    /// Offset just past the 128th newline.
    head_lines_end: Option<u64>,
    /// Offsets just past the most recent newlines (at most TAIL_LINES + 1).
    recent_newlines: VecDeque<u64>,
}

impl CappedOutput {
    /// Appends a chunk of output.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.head.len() < KEEP {
            let take = (KEEP - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        self.tail.extend(chunk.iter().copied());
        while self.tail.len() > KEEP {
            let excess = self.tail.len() - KEEP;
            self.tail.drain(..excess);
        }
        for (i, &b) in chunk.iter().enumerate() {
            if b == b'\n' {
                self.newlines += 1;
                let end = self.total + i as u64 + 1;
                if self.newlines == HEAD_LINES {
                    self.head_lines_end = Some(end);
                }
                self.recent_newlines.push_back(end);
                if self.recent_newlines.len() as u64 > TAIL_LINES + 1 {
                    self.recent_newlines.pop_front();
                }
            }
        }
        self.total += chunk.len() as u64;
    }

    /// Lines written so far (a final line without a newline counts).
    pub fn lines(&self) -> u64 {
        let partial = self.total > 0 && self.tail.back() != Some(&b'\n');
        self.newlines + u64::from(partial)
    }

    /// Bytes `[from, self.total)` of the stream, if the tail still holds them.
    fn tail_from(&self, from: u64) -> Vec<u8> {
        let want = (self.total - from) as usize;
        let have = want.min(self.tail.len());
        self.tail.iter().skip(self.tail.len() - have).copied().collect()
    }

    /// The capped text, as the model reads it.
    pub fn render(&self) -> String {
        let lines = self.lines();
        let text: Vec<u8> = if lines > MAX_LINES {
            let head_end = self.head_lines_end.unwrap_or(0) as usize;
            let head = &self.head[..head_end.min(self.head.len())];
            // The start of the last 384 lines: just past the newline before them.
            let ends_with_newline = self.tail.back() == Some(&b'\n');
            let back = if ends_with_newline { TAIL_LINES + 1 } else { TAIL_LINES } as usize;
            let start = self.recent_newlines[self.recent_newlines.len() - back];
            let mut text = head.to_vec();
            text.extend_from_slice(
                format!(
                    "[... {} lines omitted — pipe through head/tail/grep to narrow the output ...]\n",
                    lines - HEAD_LINES - TAIL_LINES
                )
                .as_bytes(),
            );
            text.extend(self.tail_from(start));
            text
        } else if self.total as usize <= MAX_BYTES {
            self.head.clone()
        } else {
            // Under the line cap but over the byte cap: only the ends matter.
            return byte_capped(
                &self.head,
                &self.tail_from(self.total - TAIL_BYTES as u64 - 4),
                self.total,
            );
        };
        if text.len() > MAX_BYTES {
            return byte_capped(&text, &text[text.len() - TAIL_BYTES - 4..], text.len() as u64);
        }
        String::from_utf8_lossy(&text).into_owned()
    }
}

/// First 8 KB of `start`, the omission line, last 22 KB of `end` (which ends
/// the stream of `total` bytes); cut points moved to UTF-8 boundaries.
fn byte_capped(start: &[u8], end: &[u8], total: u64) -> String {
    let mut head_cut = HEAD_BYTES.min(start.len());
    while head_cut > 0 && head_cut < start.len() && is_continuation(start[head_cut]) {
        head_cut -= 1;
    }
    let mut tail_cut = end.len().saturating_sub(TAIL_BYTES);
    while tail_cut < end.len() && is_continuation(end[tail_cut]) {
        tail_cut += 1;
    }
    let kept_tail = &end[tail_cut..];
    let omitted = total - head_cut as u64 - kept_tail.len() as u64;
    let mut out = String::from_utf8_lossy(&start[..head_cut]).into_owned();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("[... {omitted} bytes omitted ...]\n"));
    out.push_str(&String::from_utf8_lossy(kept_tail));
    out
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capped(data: &[u8], chunk: usize) -> String {
        let mut out = CappedOutput::default();
        for part in data.chunks(chunk.max(1)) {
            out.push(part);
        }
        out.render()
    }

    #[test]
    fn small_output_is_untouched() {
        assert_eq!(capped(b"a\nb\n", 1), "a\nb\n");
        assert_eq!(capped(b"no newline", 3), "no newline");
    }

    #[test]
    fn past_512_lines_keeps_128_and_384() {
        let text: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
        let out = capped(text.as_bytes(), 4096);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 128 + 1 + 384);
        assert_eq!(lines[127], "128");
        assert_eq!(
            lines[128],
            "[... 199488 lines omitted — pipe through head/tail/grep to narrow the output ...]"
        );
        assert_eq!(lines[129], "199617");
        assert_eq!(lines[512], "200000");
    }

    #[test]
    fn past_32_kb_keeps_8_and_22_kb_without_splitting_characters() {
        let data = "é".repeat(5 * 1024 * 1024);
        let out = capped(data.as_bytes(), 65536);
        let (head, rest) = out.split_once('\n').unwrap();
        let (marker, tail) = rest.split_once('\n').unwrap();
        assert!(head.len() <= HEAD_BYTES && head.len() >= HEAD_BYTES - 1);
        assert!(tail.len() <= TAIL_BYTES && tail.len() >= TAIL_BYTES - 1);
        assert!(head.chars().all(|c| c == 'é') && tail.chars().all(|c| c == 'é'));
        let omitted = data.len() - head.len() - tail.len();
        assert_eq!(marker, format!("[... {omitted} bytes omitted ...]"));
    }

    #[test]
    fn both_caps_apply_to_long_lines() {
        let text: String = (0..1000).map(|i| format!("{i:04}{}\n", "x".repeat(200))).collect();
        let out = capped(text.as_bytes(), 1000);
        assert!(out.len() < MAX_BYTES + 200);
        assert!(out.starts_with("0000x"));
        assert!(out.contains(" bytes omitted ...]\n"));
        assert!(out.ends_with(&format!("0999{}\n", "x".repeat(200))));
    }
}
