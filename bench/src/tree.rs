//! The corpora: a generated tree and facts about a tree.

use std::path::{Path, PathBuf};

/// A deterministic tree of `files` source-like files, 100 per directory,
/// made once and reused (a `.complete` marker says it is whole).
pub fn generate(root: &Path, files: usize) -> PathBuf {
    let marker = root.join(".complete");
    if !marker.exists() {
        let _ = std::fs::remove_dir_all(root);
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let words = [
            "let", "fn", "struct", "impl", "match", "value", "error", "config", "tool", "path", "self", "return",
        ];
        for i in 0..files {
            let dir = root.join(format!("d{:04}", i / 100));
            std::fs::create_dir_all(&dir).unwrap();
            let lines = 10 + (next() % 60) as usize;
            let mut text = String::new();
            for _ in 0..lines {
                let n = 3 + (next() % 10) as usize;
                let line: Vec<&str> = (0..n).map(|_| words[(next() % words.len() as u64) as usize]).collect();
                text.push_str(&line.join(" "));
                text.push('\n');
            }
            let ext = if i % 10 == 0 { "toml" } else { "rs" };
            std::fs::write(dir.join(format!("f{i:05}.{ext}")), text).unwrap();
        }
        std::fs::write(&marker, "").unwrap();
    }
    std::fs::canonicalize(root).unwrap()
}

/// Every directory under `root` with the regular files directly in it.
fn walk(root: &Path, mut visit: impl FnMut(&Path, &[std::fs::Metadata])) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => files.extend(entry.metadata().ok()),
                _ => {}
            }
        }
        visit(&dir, &files);
    }
}

/// Regular files under `root`.
pub fn count_files(root: &Path) -> usize {
    let mut n = 0;
    walk(root, |_, files| n += files.len());
    n
}

/// Bytes in the regular files under `root`.
pub fn total_size(root: &Path) -> u64 {
    let mut n = 0;
    walk(root, |_, files| n += files.iter().map(|m| m.len()).sum::<u64>());
    n
}

/// The directory with the most files under it that holds at most half of
/// `root`'s (found by going down, from `root`, into the child with the
/// most), and how many: a part of the tree, not the whole under another name.
pub fn largest_part(root: &Path) -> (PathBuf, usize) {
    let half = count_files(root) / 2;
    let mut at = root.to_path_buf();
    loop {
        let largest = std::fs::read_dir(&at)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| (e.path(), count_files(&e.path())))
            .max_by_key(|(_, files)| *files);
        match largest {
            Some((dir, files)) if files > half => at = dir,
            Some(part) => return part,
            None => return (at, 0),
        }
    }
}

/// The directory with the most entries, and how many.
pub fn widest_dir(root: &Path) -> (PathBuf, usize) {
    let mut widest = (root.to_path_buf(), 0);
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries: Vec<_> = std::fs::read_dir(&dir).into_iter().flatten().flatten().collect();
        if entries.len() > widest.1 {
            widest = (dir.clone(), entries.len());
        }
        stack.extend(
            entries
                .iter()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    widest
}
