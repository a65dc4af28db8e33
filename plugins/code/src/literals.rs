//! A fast necessary condition for grep: the literals every match must start
//! (or end) with, which the host looks for before a file is copied in
//! (`iota:toolset/files.read-files-containing`).
//!
//! Why: most files of a tree cannot match. Rejecting them inside the
//! component costs a copy of every file into linear memory and a search
//! without SSSE3/AVX2 (so, for `foo|bar`, one `memmem` pass per literal, the
//! regex crate's Teddy being x86-only); the host rejects them natively in one
//! Teddy pass over the buffer it read anyway. Only the rest are searched in
//! full, so the output is exactly what the regex alone would give.

use regex_syntax::hir::literal::{ExtractKind, Extractor};

/// At most this many literals are asked for; beyond that few files are
/// rejected (the set is case variants or short classes).
const MAX_LITERALS: usize = 8;

/// Literals shorter than this reject too little to pay for the pass.
const MIN_LEN: usize = 3;

/// The literals one of which occurs in every file with a match.
pub struct RequiredLiterals {
    literals: Vec<Vec<u8>>,
}

impl RequiredLiterals {
    /// The required literals of `pattern`, when it has a small, finite set
    /// of useful ones (as a prefix or a suffix set); `None` means every file
    /// must be searched.
    pub fn of(pattern: &str) -> Option<RequiredLiterals> {
        let hir = regex_syntax::parse(pattern).ok()?;
        let best = [ExtractKind::Prefix, ExtractKind::Suffix]
            .into_iter()
            .filter_map(|kind| {
                let seq = Extractor::new().kind(kind).extract(&hir);
                let literals: Vec<Vec<u8>> = seq.literals()?.iter().map(|l| l.as_bytes().to_vec()).collect();
                let shortest = literals.iter().map(Vec::len).min()?;
                (literals.len() <= MAX_LITERALS && shortest >= MIN_LEN).then_some((shortest, literals))
            })
            .max_by_key(|(shortest, literals)| (*shortest, std::cmp::Reverse(literals.len())))?;
        Some(RequiredLiterals { literals: best.1 })
    }

    /// The literals, as needles for `read-files-containing`.
    pub fn needles(&self) -> &[Vec<u8>] {
        &self.literals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literals(pattern: &str) -> Option<Vec<String>> {
        RequiredLiterals::of(pattern).map(|r| {
            r.literals
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect()
        })
    }

    #[test]
    fn alternations_and_classes_give_their_literals() {
        assert_eq!(literals("foo|barbaz"), Some(vec!["foo".into(), "barbaz".into()]));
        assert_eq!(
            literals("zq[x]jv_|fn iota"),
            Some(vec!["zqxjv_".into(), "fn iota".into()])
        );
        assert_eq!(literals(r"\w+_marker"), Some(vec!["_marker".into()]));
    }

    #[test]
    fn patterns_without_a_useful_set_search_everything() {
        assert_eq!(literals(r"\w+"), None);
        assert_eq!(literals("a|b"), None, "too short to pay");
        assert_eq!(literals("x.*y"), None);
        assert_eq!(literals("(?i)abcdefgh"), None, "2^8 case variants");
        assert_eq!(literals("("), None, "invalid patterns are refused elsewhere");
    }

    /// Whether `haystack` holds one of the literals, as the host decides it.
    fn may_match(r: &RequiredLiterals, haystack: &[u8]) -> bool {
        r.needles().iter().any(|n| memchr::memmem::find(haystack, n).is_some())
    }

    #[test]
    fn a_file_without_any_literal_cannot_match() {
        let r = RequiredLiterals::of("foo|barbaz").unwrap();
        assert!(may_match(&r, b"xx barbaz"));
        assert!(may_match(&r, b"food"));
        assert!(!may_match(&r, b"fo o bar baz"));
        // Sound against the regex itself, over a few haystacks.
        for pattern in ["foo|barbaz", r"\w+_marker", "ab(c|d)ef", "(?i)abc"] {
            let re = regex::bytes::Regex::new(pattern).unwrap();
            let Some(r) = RequiredLiterals::of(pattern) else {
                continue;
            };
            for hay in [
                &b"abcef abdef"[..],
                b"x_marker",
                b"ABC",
                b"aBc",
                b"nothing here",
                b"foo",
            ] {
                assert!(!re.is_match(hay) || may_match(&r, hay), "{pattern} on {hay:?}");
            }
        }
    }
}
