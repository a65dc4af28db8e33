//! Human-readable sizes, as the spec writes them (`1.2 KB`, `38.4 KB`).

/// Bytes in a kilobyte: the spec's `64 KB (65,536 bytes)`.
pub const KB: u64 = 1024;
/// Bytes in a megabyte.
pub const MB: u64 = 1024 * 1024;

/// `512 B`, `1.2 KB`, `3.4 MB`: the unit that keeps the number readable.
pub fn human(bytes: u64) -> String {
    if bytes < KB {
        format!("{bytes} B")
    } else if bytes < MB {
        format!("{:.1} KB", bytes as f64 / KB as f64)
    } else {
        format!("{:.1} MB", bytes as f64 / MB as f64)
    }
}

/// `X KB` with one decimal, whatever the size.
pub fn kb(bytes: u64) -> String {
    format!("{:.1} KB", bytes as f64 / KB as f64)
}

/// `X MB` with one decimal, whatever the size.
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / MB as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_the_spec() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(1229), "1.2 KB");
        assert_eq!(human(38 * 1024 + 410), "38.4 KB");
        assert_eq!(human(25 * MB), "25.0 MB");
        assert_eq!(kb(2048), "2.0 KB");
        assert_eq!(mb(21 * MB), "21.0 MB");
    }
}
