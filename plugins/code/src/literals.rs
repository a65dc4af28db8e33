//! A fast necessary condition for grep: the literals every match must start
//! (or end) with, which the host looks for before a file is copied in
//! (`iota:toolset/files.read-files-containing`).
//!
//! Why: most files of a tree cannot match. Rejecting them inside the
//! component costs a copy of every file into linear memory and `memmem`
//! passes without AVX2; the host rejects them natively, with AVX2 `memmem`
//! over the buffer it read anyway. Only the rest are searched in full, so
//! the output is exactly what the regex alone would give.

use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{
    Capture, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Repetition,
};

/// At most this many literals are asked for (after folding case): each is
/// one more pass of the host over every file.
const MAX_LITERALS: usize = 8;

/// Literals shorter than this reject too little to pay for the pass.
const MIN_LEN: usize = 3;

/// The literals one of which occurs in every file with a match.
pub struct RequiredLiterals {
    literals: Vec<Vec<u8>>,
    fold_case: bool,
}

impl RequiredLiterals {
    /// The required literals of `pattern`, when it has a small, finite set
    /// of useful ones (as a prefix or a suffix set); `None` means every file
    /// must be searched.
    pub fn of(pattern: &str) -> Option<RequiredLiterals> {
        let hir = regex_syntax::parse(pattern).ok()?;
        // The pattern as written, and with ASCII case folded away: `(?i)`
        // makes a class of every letter, and the variants of a long word
        // pass the extractor's limits within a few letters (leaving a short
        // prefix or suffix), where the folded pattern is the word itself.
        let folded = ascii_folded(&hir);
        let literals = |hir: &Hir, kind| {
            let seq = Extractor::new().kind(kind).extract(hir);
            Some(
                seq.literals()?
                    .iter()
                    .map(|l| l.as_bytes().to_vec())
                    .collect::<Vec<_>>(),
            )
        };
        [ExtractKind::Prefix, ExtractKind::Suffix]
            .into_iter()
            .flat_map(|kind| {
                let as_written = literals(&hir, kind.clone()).and_then(RequiredLiterals::few);
                let folded = literals(&folded, kind).and_then(RequiredLiterals::few_folded);
                [as_written, folded]
            })
            .flatten()
            .max_by_key(|r| (r.shortest(), !r.fold_case, std::cmp::Reverse(r.literals.len())))
    }

    /// Literals of the ASCII-folded pattern, to be found in the folded file,
    /// when they are few and long enough. Folding makes alternatives alike
    /// (`Foo_bar|foo_bar`) where the extractor removes only adjacent
    /// duplicates: each copy would be one more pass.
    fn few_folded(mut literals: Vec<Vec<u8>>) -> Option<RequiredLiterals> {
        literals.sort_unstable();
        literals.dedup();
        RequiredLiterals {
            literals,
            fold_case: true,
        }
        .within_limits()
    }

    /// `literals` when they are few and long enough; when they are many,
    /// their ASCII-lower-case forms when those are few. `(?i)abcd` gives a
    /// literal per case variant (16), all one word without case. Folding
    /// only weakens the condition: a file with a variant holds its folded
    /// form, so no file that may match is skipped.
    fn few(literals: Vec<Vec<u8>>) -> Option<RequiredLiterals> {
        if literals.len() > MAX_LITERALS {
            return RequiredLiterals::few_folded(literals.iter().map(|l| l.to_ascii_lowercase()).collect());
        }
        RequiredLiterals {
            literals,
            fold_case: false,
        }
        .within_limits()
    }

    /// These literals, if few enough and none too short to be worth a pass.
    fn within_limits(self) -> Option<RequiredLiterals> {
        (self.literals.len() <= MAX_LITERALS && self.shortest() >= MIN_LEN).then_some(self)
    }

    fn shortest(&self) -> usize {
        self.literals.iter().map(Vec::len).min().unwrap_or(0)
    }

    /// The literals, as needles for `read-files-containing`.
    pub fn needles(&self) -> &[Vec<u8>] {
        &self.literals
    }

    /// Whether the needles are to be found without regard to ASCII case.
    pub fn fold_case(&self) -> bool {
        self.fold_case
    }
}

/// `hir` with every ASCII upper-case letter it matches made lower case: a
/// match of `hir`, ASCII-folded, is a match of this one (each character
/// of it folds into the folded set it came from, and folding ASCII case
/// changes no word boundary), so a literal every match of this one holds
/// is in the folded file wherever `hir` matches.
fn ascii_folded(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(literal) => Hir::literal(literal.0.to_ascii_lowercase()),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges = class.iter().flat_map(|r| {
                folded_ranges(u32::from(r.start()), u32::from(r.end())).filter_map(|(start, end)| {
                    Some(ClassUnicodeRange::new(char::from_u32(start)?, char::from_u32(end)?))
                })
            });
            Hir::class(Class::Unicode(ClassUnicode::new(ranges)))
        }
        HirKind::Class(Class::Bytes(class)) => {
            let ranges = class.iter().flat_map(|r| {
                folded_ranges(u32::from(r.start()), u32::from(r.end())).filter_map(|(start, end)| {
                    Some(ClassBytesRange::new(u8::try_from(start).ok()?, u8::try_from(end).ok()?))
                })
            });
            Hir::class(Class::Bytes(ClassBytes::new(ranges)))
        }
        HirKind::Look(look) => Hir::look(*look),
        HirKind::Repetition(repetition) => Hir::repetition(Repetition {
            sub: Box::new(ascii_folded(&repetition.sub)),
            ..repetition.clone()
        }),
        HirKind::Capture(capture) => Hir::capture(Capture {
            sub: Box::new(ascii_folded(&capture.sub)),
            ..capture.clone()
        }),
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(ascii_folded).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(ascii_folded).collect()),
    }
}

/// The code points `start..=end` with `A`–`Z` moved to `a`–`z`: the part
/// before `A`, the upper-case part shifted, the part after `Z`.
fn folded_ranges(start: u32, end: u32) -> impl Iterator<Item = (u32, u32)> {
    let (upper_a, upper_z, shift) = (u32::from(b'A'), u32::from(b'Z'), u32::from(b'a' - b'A'));
    let before = (start < upper_a).then(|| (start, end.min(upper_a - 1)));
    let upper = (start <= upper_z && end >= upper_a).then(|| (start.max(upper_a) + shift, end.min(upper_z) + shift));
    let after = (end > upper_z).then(|| (start.max(upper_z + 1), end));
    [before, upper, after].into_iter().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The needles of `pattern` and whether they fold case.
    fn needles(pattern: &str) -> Option<(Vec<String>, bool)> {
        RequiredLiterals::of(pattern).map(|r| {
            let needles = r
                .literals
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect();
            (needles, r.fold_case)
        })
    }

    fn exact(needles: &[&str]) -> Option<(Vec<String>, bool)> {
        Some((needles.iter().map(|n| n.to_string()).collect(), false))
    }

    fn folded(needles: &[&str]) -> Option<(Vec<String>, bool)> {
        Some((needles.iter().map(|n| n.to_string()).collect(), true))
    }

    #[test]
    fn alternations_and_classes_give_their_literals() {
        assert_eq!(needles("foo|barbaz"), exact(&["foo", "barbaz"]));
        assert_eq!(needles("zq[x]jv_|fn iota"), exact(&["zqxjv_", "fn iota"]));
        assert_eq!(needles(r"\w+_marker"), exact(&["_marker"]));
        assert_eq!(needles("(?i)ab"), None, "too short to pay");
    }

    #[test]
    fn case_variants_fold_into_one_needle() {
        assert_eq!(needles("(?i-u)task"), folded(&["task"]));
        assert_eq!(
            needles("(?i)todo_never_x"),
            folded(&["todo_never_x"]),
            "the folded pattern is the whole word"
        );
        assert_eq!(
            needles("(?i)iota_bench_marker_never"),
            folded(&["iota_bench_marker_never", "iota_bench_mar\u{212a}er_never"])
        );
        let alike = ["foo_bar", "xyz_qq", "foo_bar"].map(|l| l.as_bytes().to_vec());
        assert_eq!(
            RequiredLiterals::few_folded(alike.to_vec()).unwrap().literals,
            [b"foo_bar".to_vec(), b"xyz_qq".to_vec()],
            "alike once folded, asked once"
        );
        assert_eq!(
            needles("[A-Z]x_Long_Word"),
            exact(&["x_Long_Word"]),
            "as written wins a tie"
        );
        // Unicode case folding adds the Kelvin sign and the long s.
        assert_eq!(
            needles("(?i)task|TASK"),
            folded(&["task", "tas\u{212a}", "ta\u{17f}k", "ta\u{17f}\u{212a}"])
        );
    }

    #[test]
    fn patterns_without_a_useful_set_search_everything() {
        assert_eq!(needles(r"\w+"), None);
        assert_eq!(needles("a|b"), None, "too short to pay");
        assert_eq!(needles("x.*y"), None);
        assert_eq!(needles("("), None, "invalid patterns are refused elsewhere");
    }

    /// Whether `haystack` holds one of the needles, as the host decides it.
    fn may_match(r: &RequiredLiterals, haystack: &[u8]) -> bool {
        let haystack = if r.fold_case {
            haystack.to_ascii_lowercase()
        } else {
            haystack.to_vec()
        };
        r.needles().iter().any(|n| memchr::memmem::find(&haystack, n).is_some())
    }

    #[test]
    fn a_file_without_any_literal_cannot_match() {
        let r = RequiredLiterals::of("foo|barbaz").unwrap();
        assert!(may_match(&r, b"xx barbaz"));
        assert!(may_match(&r, b"food"));
        assert!(!may_match(&r, b"fo o bar baz"));
        // Sound against the regex itself, over a few haystacks.
        for pattern in [
            "foo|barbaz",
            r"\w+_marker",
            "ab(c|d)ef",
            "(?i)abc",
            "(?i)abcdefgh",
            "(?i)task",
            "(?i)iota_bench_marker_never",
            r"(?i)\bmar[k-m]er\b",
            "[A-Z]x_Long_Word",
            "(?i)iota_bench_(?-i)MARKER",
        ] {
            let re = regex::bytes::Regex::new(pattern).unwrap();
            let r = RequiredLiterals::of(pattern).unwrap();
            for hay in [
                &b"abcef abdef"[..],
                b"x_marker",
                b"ABC",
                b"aBc",
                b"nothing here",
                b"foo",
                b"xxABCdEfGhxx",
                b"TAS\xe2\x84\xaa",
                b"ta\xc5\xbfk",
                b"tASk",
                b"IOTA_BENCH_MAR\xe2\x84\xaaER_NEVER",
                b"iota_Bench_Marker_Never",
                b"a MARLER b",
                b"Qx_long_WORD",
                b"Iota_bench_MARKER",
            ] {
                assert!(!re.is_match(hay) || may_match(&r, hay), "{pattern} on {hay:?}");
            }
        }
    }
}
