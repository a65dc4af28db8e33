//! Unpredictable values: names of the files and directories the host creates
//! where a sandboxed command could guess them, and markers it must not forge.

/// 128 random bits from the OS, as 32 hex digits.
pub fn token() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source is unavailable");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_long_and_differ() {
        let (a, b) = (super::token(), super::token());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
