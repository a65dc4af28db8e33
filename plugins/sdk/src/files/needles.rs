//! How `read-files-containing` decides whether a file holds one of its
//! needles. The host's implementation and the native fallback share it.
//!
//! Why not a `memmem` pass per needle: with case folded that needs a
//! lower-case copy of every file first (a write of every byte read). So
//! with case folded, one SIMD multi-pattern pass (Teddy, from
//! `aho-corasick`) looks for *probes*: a few bytes of each needle, the
//! rarest few, in every ASCII case variant. A probe's hit is then compared
//! with its whole needles in place. With case as it is, `memmem` already
//! keys on a needle's rarest bytes, and a pass per needle stays: measured on
//! the registry sources (258 MB), two needles took 40 ms by `memmem` passes
//! and 115 ms by Teddy over their first bytes (`fn ` starts a line of every
//! Rust file).

use aho_corasick::packed;

/// Probes are at most this long: Teddy fingerprints at most four bytes, and
/// a longer probe only multiplies the case variants.
const MAX_PROBE_LEN: usize = 4;

/// Probes shorter than this make too many false hits for Teddy to be worth
/// it (on x86_64 it refuses more than 16 one-byte probes). A set with a
/// needle this short takes the pass per needle.
const MIN_PROBE_LEN: usize = 3;

/// At most this many distinct probes: Teddy's limit on x86_64 (aarch64's
/// is 48 for three-byte probes; past a limit Teddy refuses to build, and
/// the pass per needle runs).
const MAX_PROBES: usize = 64;

/// Bytes of needles compared in place per byte of haystack before the pass
/// per needle takes over for it: a haystack that hits a probe at every
/// byte (a run of zeros, against a needle of zeros and more) would
/// otherwise cost its length times the needle's.
const COMPARED_PER_BYTE: usize = 4;

/// Whether a set of needles is in a haystack: with case folded, one Teddy
/// pass over probes; otherwise, or where Teddy is not available or the
/// probes would be too many, a `memmem` pass per needle (over a lower-case
/// copy of the haystack when case is folded).
pub struct NeedleSearch {
    /// An empty needle, which every haystack holds, was asked for.
    everything: bool,
    /// With case folded, when Teddy is available and the probes are few.
    probes: Option<Probes>,
    /// The search without probes, and for a haystack that hits them too
    /// often.
    each_needle: EachNeedle,
}

/// A `memmem` pass per needle (none for no needles).
struct EachNeedle {
    finders: Vec<memchr::memmem::Finder<'static>>,
    /// The haystack in lower case, when folding: kept to reuse its
    /// allocation.
    folded: Option<Vec<u8>>,
}

/// Where a probe lies in needles: each needle's index and the offset of the
/// probe in it.
type Places = Vec<(usize, usize)>;

/// Needles found through their probes, each a few of its bytes in every
/// ASCII case.
struct Probes {
    searcher: packed::Searcher,
    /// By probe (Teddy's pattern id), the needles that hold it.
    needles_of: Vec<Places>,
    /// The needles, in lower case.
    needles: Vec<Vec<u8>>,
}

impl NeedleSearch {
    /// The search for `needles`, ASCII case folded with `fold_case`.
    pub fn new(needles: &[Vec<u8>], fold_case: bool) -> NeedleSearch {
        let needles: Vec<Vec<u8>> = if fold_case {
            needles.iter().map(|n| n.to_ascii_lowercase()).collect()
        } else {
            needles.to_vec()
        };
        NeedleSearch {
            everything: needles.iter().any(Vec::is_empty),
            probes: fold_case.then(|| Probes::new(&needles)).flatten(),
            each_needle: EachNeedle {
                finders: needles
                    .iter()
                    .map(|n| memchr::memmem::Finder::new(n).into_owned())
                    .collect(),
                folded: fold_case.then(Vec::new),
            },
        }
    }

    /// Whether `haystack` holds one of the needles (an empty needle is in
    /// every haystack; no needles, in none), or may once transcoded
    /// ([`super::transcoded_by_searchers`]).
    pub fn any_in(&mut self, haystack: &[u8]) -> bool {
        if self.everything || super::transcoded_by_searchers(haystack) {
            return true;
        }
        match self.probes.as_ref().and_then(|probes| probes.any_in(haystack)) {
            Some(found) => found,
            None => self.each_needle.any_in(haystack),
        }
    }
}

impl EachNeedle {
    fn any_in(&mut self, haystack: &[u8]) -> bool {
        let haystack = match &mut self.folded {
            Some(folded) => {
                folded.clear();
                folded.extend(haystack.iter().map(u8::to_ascii_lowercase));
                folded.as_slice()
            }
            None => haystack,
        };
        self.finders.iter().any(|f| f.find(haystack).is_some())
    }
}

impl Probes {
    /// The probes of `needles` (in lower case), at the longest probe length
    /// that keeps them within [`MAX_PROBES`]; `None` when none does, or
    /// Teddy is not available here.
    fn new(needles: &[Vec<u8>]) -> Option<Probes> {
        let shortest = needles.iter().map(Vec::len).min()?;
        (MIN_PROBE_LEN..=MAX_PROBE_LEN.min(shortest)).rev().find_map(|len| {
            let mut probes: Vec<(Vec<u8>, Places)> = Vec::new();
            for (index, needle) in needles.iter().enumerate() {
                let at = rarest_window(needle, len);
                for probe in case_variants(&needle[at..at + len]) {
                    match probes.iter().position(|(known, _)| *known == probe) {
                        Some(known) => probes[known].1.push((index, at)),
                        // Too many at this length: try a shorter one.
                        None if probes.len() == MAX_PROBES => return None,
                        None => probes.push((probe, vec![(index, at)])),
                    }
                }
            }
            let mut builder = packed::Config::new().builder();
            builder.extend(probes.iter().map(|(probe, _)| probe));
            let searcher = builder.build()?;
            Some(Probes {
                searcher,
                needles_of: probes.into_iter().map(|(_, of)| of).collect(),
                needles: needles.to_vec(),
            })
        })
    }

    /// Whether a probe's hit in `haystack` lies where it does in one of its
    /// needles, case folded; `None` once the comparisons pass
    /// [`COMPARED_PER_BYTE`].
    fn any_in(&self, haystack: &[u8]) -> Option<bool> {
        let mut budget = haystack.len().saturating_mul(COMPARED_PER_BYTE);
        let mut from = 0;
        while let Some(hit) = self
            .searcher
            .find_in(haystack, aho_corasick::Span::from(from..haystack.len()))
        {
            for &(index, at) in &self.needles_of[hit.pattern().as_usize()] {
                let needle = &self.needles[index];
                budget = budget.checked_sub(needle.len())?;
                let here = hit
                    .start()
                    .checked_sub(at)
                    .and_then(|start| haystack.get(start..start + needle.len()));
                if here.is_some_and(|here| here.eq_ignore_ascii_case(needle)) {
                    return Some(true);
                }
            }
            // Probes are all one length and distinct, so no other probe
            // starts at this hit: the next hit is further on.
            from = hit.start() + 1;
        }
        Some(false)
    }
}

/// Where in `needle` the `len` bytes least likely in text begin (the first
/// such place on a tie), by [`RANK`]: Teddy's false hits, each a
/// comparison, are as common as its probes' bytes.
fn rarest_window(needle: &[u8], len: usize) -> usize {
    let rank =
        |b: &u8| u32::from(RANK[usize::from(b.to_ascii_lowercase())].max(RANK[usize::from(b.to_ascii_uppercase())]));
    (0..=needle.len() - len)
        .min_by_key(|&at| needle[at..at + len].iter().map(rank).sum::<u32>())
        .unwrap_or(0)
}

/// How common each byte is in text, higher for more common: the `memchr`
/// crate's heuristic ranks (`arch/all/packedpair/default_rank.rs`, MIT or
/// Unlicense), which its `memmem` keys on but does not export.
const RANK: [u8; 256] = [
    55, 52, 51, 50, 49, 48, 47, 46, 45, 103, 242, 66, 67, 229, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 56, 32,
    31, 30, 29, 28, 255, 148, 164, 149, 136, 160, 155, 173, 221, 222, 134, 122, 232, 202, 215, 224, 208, 220, 204, 187,
    183, 179, 177, 168, 178, 200, 226, 195, 154, 184, 174, 126, 120, 191, 157, 194, 170, 189, 162, 161, 150, 193, 142,
    137, 171, 176, 185, 167, 186, 112, 175, 192, 188, 156, 140, 143, 123, 133, 128, 147, 138, 146, 114, 223, 151, 249,
    216, 238, 236, 253, 227, 218, 230, 247, 135, 180, 241, 233, 246, 244, 231, 139, 245, 243, 251, 235, 201, 196, 240,
    214, 152, 182, 205, 181, 127, 27, 212, 211, 210, 213, 228, 197, 169, 159, 131, 172, 105, 80, 98, 96, 97, 81, 207,
    145, 116, 115, 144, 130, 153, 121, 107, 132, 109, 110, 124, 111, 82, 108, 118, 141, 113, 129, 119, 125, 165, 117,
    92, 106, 83, 72, 99, 93, 65, 79, 166, 237, 163, 199, 190, 225, 209, 203, 198, 217, 219, 206, 234, 248, 158, 239,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
];

/// `bytes` in every ASCII case: 2^k variants for k letters.
fn case_variants(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut variants = vec![Vec::with_capacity(bytes.len())];
    for &byte in bytes {
        if byte.is_ascii_alphabetic() {
            let upper: Vec<Vec<u8>> = variants
                .iter()
                .map(|v| [v.as_slice(), &[byte.to_ascii_uppercase()]].concat())
                .collect();
            variants.iter_mut().for_each(|v| v.push(byte.to_ascii_lowercase()));
            variants.extend(upper);
        } else {
            variants.iter_mut().for_each(|v| v.push(byte));
        }
    }
    variants
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A needle of 300 zero bytes and a space.
    const ZEROS_AND_A_SPACE: &[u8] = &{
        let mut needle = [0; 301];
        needle[300] = b' ';
        needle
    };

    /// The answer of the plainest search: a `memmem` of each needle over
    /// the haystack, lower-cased when folding.
    fn plainly(needles: &[Vec<u8>], fold_case: bool, haystack: &[u8]) -> bool {
        let fold = |b: &[u8]| if fold_case { b.to_ascii_lowercase() } else { b.to_vec() };
        super::super::transcoded_by_searchers(haystack)
            || needles
                .iter()
                .any(|n| memchr::memmem::find(&fold(haystack), &fold(n)).is_some())
    }

    /// Every way of searching answers as the plainest search would, over
    /// needle sets that take each path (one, many, shared probes, too many
    /// probes, short needles, an empty one) and haystacks with hits at the
    /// start, the end, across Teddy's block boundaries and near misses.
    #[test]
    fn every_search_answers_as_a_plain_memmem_would() {
        let needle_sets: Vec<Vec<&[u8]>> = vec![
            vec![],
            vec![b""],
            vec![b"abc"],
            vec![b"iota_bench_marker_never"],
            vec![b"iota_bench_marker_never", "iota_bench_mar\u{212A}er_never".as_bytes()],
            vec![b"Foo_Bar", b"fooBAZ", b"qux"],
            vec![b"ab", b"abcdef"],
            vec![b"zzzz", b"zzzy", b"1234"],
            // Five needles of four letters: 80 variants, past MAX_PROBES at
            // length four, within it at three.
            vec![b"abcd", b"efgh", b"ijkl", b"mnop", b"qrst"],
            // Too many probes at every length: the pass per needle.
            vec![
                b"abcd", b"efgh", b"ijkl", b"mnop", b"qrst", b"uvwx", b"yzab", b"cdef", b"ghij",
            ],
            // One probe for both (control bytes are the rarest): its hit
            // must be compared with each.
            vec![b"\x01\x02\x03\x04aaaa", b"\x01\x02\x03\x04eeee"],
            // Hits that overlap: the first fails, the next byte's holds.
            vec![b"\x02\x02\x02\x02\x01"],
            // A probe that hits at every byte of a run of zeros: past the
            // comparison budget, the pass per needle answers.
            vec![ZEROS_AND_A_SPACE],
        ];
        let mut haystacks: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"a".to_vec(),
            b"ab".to_vec(),
            b"xyz".to_vec(),
            "\u{FEFF}none".encode_utf16().flat_map(u16::to_le_bytes).collect(),
        ];
        let pieces: [&[u8]; 19] = [
            b"abc",
            b"ABC",
            b"IOTA_BENCH_MARKER_NEVER",
            "iota_bench_mar\u{212A}er_NEVER".as_bytes(),
            b"iota_bench_marker_neve",
            b"foo_bar",
            b"FOOBAz",
            b"QUX",
            b"zzzY",
            b"1234",
            b"mNoP",
            b"GHIJ",
            b"abcdeF",
            b"iota",
            b"\x01\x02\x03\x04EEEE",
            b"\x01\x02\x03\x04zzzz\x01\x02\x03\x04eEee",
            b"\x02\x02\x02\x02\x02\x01",
            &[0; 600],
            ZEROS_AND_A_SPACE,
        ];
        for piece in pieces {
            for pad in [0, 1, 15, 16, 31, 32, 33, 63, 64, 100] {
                let filler: Vec<u8> = (0..pad).map(|i| b"xq_ 9\n"[i % 6]).collect();
                haystacks.push([piece, &filler].concat());
                haystacks.push([&filler, piece].concat());
                haystacks.push([&filler, piece, &filler].concat());
                // The piece cut short at the very end: a probe's hit with
                // too few bytes after it.
                haystacks.push([&filler, &piece[..piece.len() - 1]].concat());
            }
        }
        for needles in &needle_sets {
            let needles: Vec<Vec<u8>> = needles.iter().map(|n| n.to_vec()).collect();
            for fold_case in [false, true] {
                let mut search = NeedleSearch::new(&needles, fold_case);
                for haystack in &haystacks {
                    assert_eq!(
                        search.any_in(haystack),
                        plainly(&needles, fold_case, haystack),
                        "needles {needles:?}, fold {fold_case}, haystack {:?}",
                        String::from_utf8_lossy(haystack)
                    );
                }
            }
        }
    }

    /// The paths the sets above are meant to take are the ones they take.
    /// Teddy needs SSSE3 on x86_64 (every x86_64 machine this runs on has
    /// it) or aarch64; elsewhere this test does not apply.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn probes_are_used_where_teddy_is_available() {
        let owned = |ns: &[&[u8]]| ns.iter().map(|n| n.to_vec()).collect::<Vec<_>>();
        let word = owned(&[b"iota_bench_marker_never", "iota_bench_mar\u{212A}er_never".as_bytes()]);
        assert!(NeedleSearch::new(&word, true).probes.is_some());
        assert!(NeedleSearch::new(&word, false).probes.is_none());
        let five = owned(&[b"abcd", b"efgh", b"ijkl", b"mnop", b"qrst"]);
        assert!(NeedleSearch::new(&five, true).probes.is_some());
        let nine = owned(&[
            b"abcd", b"efgh", b"ijkl", b"mnop", b"qrst", b"uvwx", b"yzab", b"cdef", b"ghij",
        ]);
        assert!(NeedleSearch::new(&nine, true).probes.is_none());
        assert!(NeedleSearch::new(&owned(&[b"ab", b"abcdef"]), true).probes.is_none());

        let shared = NeedleSearch::new(&owned(&[b"\x01\x02\x03\x04aaaa", b"\x01\x02\x03\x04eeee"]), true);
        assert_eq!(shared.probes.expect("probes").needles_of, [vec![(0, 0), (1, 0)]]);

        let zeros = NeedleSearch::new(&owned(&[ZEROS_AND_A_SPACE]), true);
        let probes = zeros.probes.expect("probes");
        assert_eq!(probes.any_in(&[0; 10_000]), None, "past the budget");
        assert_eq!(probes.any_in(&[ZEROS_AND_A_SPACE, b"and more"].concat()), Some(true));
    }

    #[test]
    fn case_variants_are_every_ascii_case() {
        let mut variants = case_variants(b"a_b");
        variants.sort();
        assert_eq!(variants, [b"A_B", b"A_b", b"a_B", b"a_b"]);
        assert_eq!(case_variants(b"_1"), [b"_1"]);
    }
}
