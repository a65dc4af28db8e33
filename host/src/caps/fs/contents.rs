//! What a session knows of its files' contents: a trigram filter per file a
//! repeated search has read, so that later searches answer `none` for a
//! file that cannot hold any of their needles without opening it.
//!
//! A filter is the set of the file's trigrams (three consecutive bytes, ASCII
//! folded to lower case), hashed into a bit set sized to the file: a needle
//! with a trigram the filter lacks is not in the file. A filter only ever
//! rules a file out; a file it lets through is read and searched as before,
//! so an answer is always the one a fresh read would give.
//!
//! A filter stands for one version of a file: its device, inode, size,
//! modification and change times (`stat`), checked afresh at every use with
//! one `fstatat`. Every change of a file's content or mode sets its change
//! time (`ctime`), which no process can set back (`touch -d` sets the
//! modification time only): writes through a hard link elsewhere
//! included, which no inotify watch would report. Three gaps in that rule
//! are closed before a file is learned ([`Version::to_learn`]):
//! - The kernel's clock for file times is coarse, so a write in the same
//!   tick as the last one could leave `ctime` as it was: a file is learned
//!   only once its `ctime` is [`SETTLED`] in the past when the answer
//!   begins, so any later write has a later `ctime`.
//! - A write through a shared memory mapping sets the times only when it
//!   makes a clean page dirty; a page dirtied before the file was learned
//!   could be written again without it. The file's dirty pages are written
//!   back first (`sync_file_range`), which leaves every page clean and
//!   write-protected, so any later write through a mapping faults and sets
//!   `ctime`. Clean files (nearly all) cost one system call.
//! - Only files on ext2/3/4 and XFS are learned ([`Version::learnable`]):
//!   they set the times on that fault; tmpfs never does, and network and
//!   FUSE filesystems may change under us without a local `ctime`.
//!
//! What remains is documented rather than closed: on ext4 a `write(2)`
//! sets `ctime` when it begins, and a reader does not wait for it, so one
//! overwrite of a file in place (its size unchanged) still copying after
//! [`SETTLED`] — a writer throttled that long by the kernel — could be
//! learned half done; XFS makes readers wait.
//!
//! A file is learned only where the warm tree keeps its directory (a search
//! that repeats one: the session's first search pays nothing), and it is
//! looked up only there too, by name in its directory, which is opened with
//! no symlink followed and nothing above the preopen reached (`openat2`):
//! a directory on the path swapped for a symlink since the warm tree's word
//! fails the open, and the file is read instead.
//!
//! Memory: the filters (2 to 4 bits per distinct trigram of the file,
//! 64 bits at least, 256 KiB at most) and [`ENTRY_COST`] bytes per file,
//! at most [`MAX_BYTES`] per session; past it, everything is forgotten
//! and learned afresh (an editor that saves by renaming leaves a new inode
//! each time, and the old ones' filters would otherwise fill it for good).
//! A file too varied to rule out much is remembered as such, unhashed, and
//! so is one a searcher transcodes (UTF-16): its raw bytes are not its text.
//! Unlike the warm tree, the filters outlive a call that may have written:
//! each is checked against its file's `stat` at every use.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Bytes of filters and their bookkeeping one session keeps at most.
pub const MAX_BYTES: usize = 48 << 20;

/// What a kept filter costs besides its bits: its key, version and the
/// map's own bookkeeping.
pub const ENTRY_COST: usize = 96;

/// How long a file's change time must lie in the past before the file is
/// learned: far more than the kernel's file-time tick (1–10 ms), so a write
/// after the read always sets another `ctime`, and more than a write of a
/// file a search reads takes unless the kernel stalls it.
pub const SETTLED: Duration = Duration::from_secs(5);

/// The most bits a filter has (256 KiB); a file with more distinct
/// trigrams than fit sparsely is not learned.
const MAX_FILTER_LOG2: u32 = 21;

/// A filter fuller than this rules out too little to be worth its memory.
const MAX_FILL_PERCENT: u64 = 50;

/// One version of a file, as `stat` tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    dev: u64,
    ino: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Version {
    /// The version `meta` (of an opened regular file) describes.
    #[cfg(target_os = "linux")]
    pub fn of(meta: &std::fs::Metadata) -> Version {
        use std::os::unix::fs::MetadataExt;
        Version {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Only Linux's versions are learned from ([`Version::learnable`]):
    /// elsewhere every file is read.
    #[cfg(not(target_os = "linux"))]
    pub fn at(_dir: &std::fs::File, _name: &Path) -> Option<Version> {
        None
    }

    /// The version of the regular file `name` in `dir`, not followed;
    /// `None` for anything else or an error.
    #[cfg(target_os = "linux")]
    pub fn at(dir: &std::fs::File, name: &Path) -> Option<Version> {
        use nix::sys::stat::{FileStat, SFlag, fstatat};
        let flags = nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW | nix::fcntl::AtFlags::AT_NO_AUTOMOUNT;
        let st: FileStat = fstatat(dir, name, flags).ok()?;
        if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
            return None;
        }
        Some(Version {
            dev: st.st_dev,
            ino: st.st_ino,
            size: u64::try_from(st.st_size).ok()?,
            modified: (st.st_mtime, st.st_mtime_nsec),
            changed: (st.st_ctime, st.st_ctime_nsec),
        })
    }

    /// Whether what a search reads of `file` may be learned: only on
    /// filesystems where every change of content sets the change time,
    /// writes through a shared memory mapping included (ext2/3/4 and XFS
    /// update the times when a mapped page is first written; tmpfs never
    /// does). Elsewhere files are read every time.
    #[cfg(target_os = "linux")]
    pub fn learnable(file: &std::fs::File) -> bool {
        use nix::sys::statfs::{EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC, fstatfs};
        fstatfs(file).is_ok_and(|fs| [EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC].contains(&fs.filesystem_type()))
    }

    /// Nothing is learned where no filesystem is [`Version::learnable`].
    #[cfg(not(target_os = "linux"))]
    pub fn to_learn(_file: &std::fs::File, _meta: &std::fs::Metadata, _opened: SystemTime) -> Option<Version> {
        None
    }

    /// The version of the opened regular file `file` (`meta` its `stat`
    /// taken after the open) if what is read from it next may be learned:
    /// it is on a filesystem that reports every change ([`learnable`]), was
    /// last changed [`SETTLED`] before `opened` (when the answer began), and
    /// still has that version once its dirty pages are written back (see
    /// the module's documentation). One `fstatfs`, one `sync_file_range`
    /// and one `fstat`; `None` otherwise.
    ///
    /// [`learnable`]: Version::learnable
    #[cfg(target_os = "linux")]
    pub fn to_learn(file: &std::fs::File, meta: &std::fs::Metadata, opened: SystemTime) -> Option<Version> {
        use std::os::fd::AsRawFd;
        let version = Version::of(meta);
        if !version.settled(opened) || !Version::learnable(file) {
            return None;
        }
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: the descriptor is `file`'s, open for the call; offset and
        // length 0 mean the whole file. No memory is passed.
        if unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, flags) } != 0 {
            return None;
        }
        let after = file.metadata().ok()?;
        (Version::of(&after) == version).then_some(version)
    }

    /// The file's size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether this version's content can no longer change without its
    /// change time changing: it was last changed [`SETTLED`] before `now`.
    fn settled(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let (secs, nanos) = self.changed;
        let (Ok(secs), Ok(nanos)) = (u64::try_from(secs), u32::try_from(nanos)) else {
            return false;
        };
        Duration::new(secs, 0)
            .checked_add(Duration::from_nanos(u64::from(nanos)))
            .and_then(|changed| changed.checked_add(SETTLED))
            .is_some_and(|settled| settled < now)
    }
}

/// One session's filters, by file.
pub struct KnownContents {
    inner: Mutex<Known>,
    /// Files ruled out without a read so far.
    skipped: AtomicU64,
    /// [`MAX_BYTES`], but for tests.
    max_bytes: usize,
}

impl Default for KnownContents {
    fn default() -> KnownContents {
        KnownContents::within(MAX_BYTES)
    }
}

impl std::fmt::Debug for KnownContents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known = self.inner.lock().unwrap();
        write!(f, "KnownContents({} files, {} bytes)", known.files.len(), known.bytes)
    }
}

#[derive(Default)]
struct Known {
    /// By device and inode; the version tells whether the filter is still
    /// the file's. `None`: that version is too varied to rule out much.
    files: HashMap<(u64, u64), (Version, Option<Filter>)>,
    /// Bytes the filters and their entries take, against the bound.
    bytes: usize,
}

impl KnownContents {
    /// Filters within `max_bytes`.
    fn within(max_bytes: usize) -> KnownContents {
        KnownContents {
            inner: Mutex::default(),
            skipped: AtomicU64::new(0),
            max_bytes,
        }
    }

    /// Whether the file at `version` is known to hold none of `needles`.
    pub fn rules_out(&self, version: &Version, needles: &NeedleTrigrams) -> bool {
        let known = self.inner.lock().unwrap();
        let ruled_out = known
            .files
            .get(&(version.dev, version.ino))
            .is_some_and(|(known, filter)| {
                known == version && filter.as_ref().is_some_and(|filter| needles.ruled_out_by(filter))
            });
        if ruled_out {
            self.skipped.fetch_add(1, Ordering::Relaxed);
        }
        ruled_out
    }

    /// Learns `data`, the whole content of the file at `version` read after
    /// it was opened at `opened`, if the version is settled; a filter
    /// already known for this version is kept. Past [`MAX_BYTES`] the
    /// session forgets every filter and starts again.
    pub fn learn(&self, version: &Version, opened: SystemTime, data: &[u8]) {
        if data.len() as u64 != version.size || !version.settled(opened) {
            return;
        }
        let key = (version.dev, version.ino);
        if self
            .inner
            .lock()
            .unwrap()
            .files
            .get(&key)
            .is_some_and(|(known, _)| known == version)
        {
            return;
        }
        // Computed outside the lock: the other worker learns meanwhile. A
        // file searched transcoded is never ruled out by its raw bytes.
        let filter = if iota_toolset::files::transcoded_by_searchers(data) {
            None
        } else {
            Filter::of(data)
        };
        let cost = ENTRY_COST + filter.as_ref().map_or(0, Filter::bytes);
        let mut known = self.inner.lock().unwrap();
        if let Some((_, old)) = known.files.remove(&key) {
            known.bytes -= ENTRY_COST + old.as_ref().map_or(0, Filter::bytes);
        }
        if known.bytes + cost > self.max_bytes {
            *known = Known::default();
        }
        known.bytes += cost;
        known.files.insert(key, (*version, filter));
    }

    /// Files known, and files ruled out without a read so far.
    pub fn stats(&self) -> (usize, u64) {
        (
            self.inner.lock().unwrap().files.len(),
            self.skipped.load(Ordering::Relaxed),
        )
    }
}

/// A file's trigrams, hashed into `2^log2` bits.
struct Filter {
    bits: Box<[u64]>,
}

/// ASCII folded to lower case, without a branch.
fn fold(b: u8) -> u8 {
    b | (u8::from(b.wrapping_sub(b'A') < 26) << 5)
}

/// [`fold`] of eight bytes at once (SWAR): a byte is upper case when adding
/// `0x80 - 'A'` to its low seven bits sets its top bit and adding
/// `0x80 - 'Z' - 1` does not, and its own top bit is clear.
fn fold8(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let low7 = word & (ONES * 0x7F);
    let from_a = low7 + ONES * u64::from(0x80 - b'A');
    let past_z = low7 + ONES * u64::from(0x80 - b'Z' - 1);
    let upper = from_a & !past_z & !word & (ONES * 0x80);
    word | (upper >> 2)
}

/// The trigram of `bytes` (already folded), its first byte lowest.
fn trigram(bytes: [u8; 3]) -> u32 {
    u32::from(bytes[0]) | u32::from(bytes[1]) << 8 | u32::from(bytes[2]) << 16
}

/// A trigram's hash; a filter of `2^n` bits uses its low `n` bits.
fn hash(trigram: u32) -> u32 {
    (u64::from(trigram).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as u32
}

/// Sets the bit of every trigram of `data` (folded) in `scratch`, whose
/// length in bits is `mask + 1`.
fn set_trigrams(data: &[u8], scratch: &mut [u64], mask: u32) {
    let mut set = |trigram: u32| {
        let bit = hash(trigram) & mask;
        scratch[(bit >> 6) as usize] |= 1 << (bit & 63);
    };
    // Six trigrams per eight bytes loaded and folded at once: twice as
    // fast as a byte at a time, which waits on each byte's fold.
    let mut at = 0;
    while let Some(eight) = data.get(at..at + 8) {
        let word = fold8(u64::from_le_bytes(eight.try_into().expect("eight bytes")));
        for shift in 0..6 {
            set((word >> (8 * shift)) as u32 & 0xFF_FFFF);
        }
        at += 6;
    }
    for three in data[at.min(data.len())..].windows(3) {
        set(trigram([fold(three[0]), fold(three[1]), fold(three[2])]));
    }
}

impl Filter {
    /// The filter of `data`; `None` when it would be too full to rule out
    /// much.
    fn of(data: &[u8]) -> Option<Filter> {
        // A scratch set sparse enough to count distinct trigrams by (at
        // most one per byte), folded to its final size once counted.
        let scratch_log2 = (data.len().max(8) * 8)
            .next_power_of_two()
            .trailing_zeros()
            .clamp(6, MAX_FILTER_LOG2);
        let mut scratch = vec![0u64; 1 << (scratch_log2 - 6)];
        set_trigrams(data, &mut scratch, (1u32 << scratch_log2) - 1);
        let distinct: u64 = scratch.iter().map(|w| u64::from(w.count_ones())).sum();
        // 2 to 4 bits per distinct trigram: a filter 22 % to 39 % full (at
        // 1.5 bits a filter could come out past the fill bound by chance).
        let wanted = (2 * distinct).max(64);
        let log2 = wanted.next_power_of_two().trailing_zeros().clamp(6, scratch_log2);
        let words = 1usize << (log2 - 6);
        let mut bits = vec![0u64; words].into_boxed_slice();
        for (i, word) in scratch.iter().enumerate() {
            bits[i & (words - 1)] |= word;
        }
        let set: u64 = bits.iter().map(|w| u64::from(w.count_ones())).sum();
        (set * 100 <= (words as u64 * 64) * MAX_FILL_PERCENT).then_some(Filter { bits })
    }

    /// Whether the trigram of hash `hash` may be in the file.
    fn may_hold(&self, hash: u32) -> bool {
        let bit = hash as usize & (self.bits.len() * 64 - 1);
        self.bits[bit >> 6] & (1 << (bit & 63)) != 0
    }

    fn bytes(&self) -> usize {
        self.bits.len() * 8
    }
}

/// A search's needles as trigram hashes: what a filter is asked.
pub struct NeedleTrigrams {
    /// Per needle, its trigrams' hashes (ASCII folded: a filter holds the
    /// folded file, in which a needle found as is is found folded too).
    needles: Vec<Vec<u32>>,
}

impl NeedleTrigrams {
    /// The trigrams of `needles`.
    pub fn new(needles: &[Vec<u8>]) -> NeedleTrigrams {
        let needles = needles
            .iter()
            .map(|needle| {
                let mut hashes: Vec<u32> = needle
                    .windows(3)
                    .map(|w| hash(trigram([fold(w[0]), fold(w[1]), fold(w[2])])))
                    .collect();
                hashes.sort_unstable();
                hashes.dedup();
                hashes
            })
            .collect();
        NeedleTrigrams { needles }
    }

    /// Whether a file with `filter` holds none of the needles: each has a
    /// trigram the file lacks. A needle shorter than three bytes has no
    /// trigram and is never ruled out; no needles are in no file.
    fn ruled_out_by(&self, filter: &Filter) -> bool {
        self.needles
            .iter()
            .all(|hashes| hashes.iter().any(|&h| !filter.may_hold(h)))
    }

    /// Whether any needle can be ruled out at all.
    pub fn any_use(&self) -> bool {
        self.needles.iter().all(|hashes| !hashes.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules_out(text: &str, needles: &[&str]) -> bool {
        let filter = Filter::of(text.as_bytes()).expect("a sparse filter");
        let needles: Vec<Vec<u8>> = needles.iter().map(|n| n.as_bytes().to_vec()).collect();
        NeedleTrigrams::new(&needles).ruled_out_by(&filter)
    }

    #[test]
    fn a_filter_never_rules_out_a_needle_the_file_holds() {
        let text = "fn main() {\n    println!(\"Hello, World\");\n}\n";
        for start in 0..text.len() {
            for end in start + 1..=text.len() {
                let needle = &text[start..end];
                assert!(!rules_out(text, &[needle]), "{needle:?}");
                assert!(!rules_out(text, &[&needle.to_ascii_uppercase()]), "folded: {needle:?}");
                assert!(!rules_out(text, &["zzzzzz", needle]), "one of two: {needle:?}");
            }
        }
    }

    #[test]
    fn a_filter_rules_out_what_the_file_lacks() {
        let text = "fn main() {\n    println!(\"Hello, World\");\n}\n";
        assert!(rules_out(text, &["iota_bench_marker_never"]));
        assert!(rules_out(text, &["zqxjv", "unsafe impl"]));
        assert!(
            !rules_out(text, &["zqxjv", "zq"]),
            "a needle of two bytes is never ruled out"
        );
        assert!(!rules_out(text, &[""]), "an empty needle is in every file");
        assert!(rules_out(text, &[]), "no needles are in no file");
        assert!(!rules_out("", &["ab"]));
        assert!(rules_out("ab", &["abc"]));
    }

    #[test]
    fn eight_bytes_fold_as_each_would() {
        for word in [
            0u64,
            u64::MAX,
            0x4142_5A5B_6061_7A7B,
            0xC1DA_C0DB_405A_4041,
            0x8041_415A_9A40_5B7F,
        ] {
            let folded = fold8(word).to_le_bytes();
            let each = word.to_le_bytes().map(fold);
            assert_eq!(folded, each, "{word:#x}");
        }
        for byte in 0..=255u8 {
            assert_eq!(fold8(u64::from(byte) << 24).to_le_bytes()[3], fold(byte), "{byte}");
            assert_eq!(fold(byte), if byte.is_ascii_uppercase() { byte + 32 } else { byte });
        }
    }

    #[test]
    fn every_trigram_is_set_whatever_the_length() {
        let text = b"The Quick brown fox, JUMPS over the lazy dog: 0123456789";
        for len in 0..text.len() {
            let data = &text[..len];
            let mut scratch = vec![0u64; 1 << 10];
            set_trigrams(data, &mut scratch, (1 << 16) - 1);
            let mut expected = vec![0u64; 1 << 10];
            for w in data.windows(3) {
                let bit = hash(trigram([fold(w[0]), fold(w[1]), fold(w[2])])) & ((1 << 16) - 1);
                expected[(bit >> 6) as usize] |= 1 << (bit & 63);
            }
            assert_eq!(scratch, expected, "{len} bytes");
        }
    }

    /// `len` pseudo-random bytes (xorshift64): nearly every trigram distinct.
    fn noise(len: usize) -> Vec<u8> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn a_filter_is_sized_to_the_file() {
        let small = Filter::of(b"let x = 1;").unwrap();
        assert_eq!(small.bytes(), 8, "64 bits at least");
        let text: String = (0..20_000).map(|i| format!("word{i} ")).collect();
        let words = Filter::of(text.as_bytes()).unwrap();
        // Every one of the 17,576 trigrams of 26 letters: 2 to 4 bits each.
        let letters: Vec<u8> = noise(1 << 20).iter().map(|b| b'a' + b % 26).collect();
        let large = Filter::of(&letters).unwrap();
        assert!(large.bytes() > words.bytes(), "{} {}", large.bytes(), words.bytes());
        assert!(
            (2 * 17_576 / 8..=4 * 17_576 / 8).contains(&large.bytes()),
            "{}",
            large.bytes()
        );
        for i in (0..20_000).step_by(997) {
            assert!(!rules_out(&text, &[&format!("word{i} ")]));
        }
        assert!(Filter::of(&noise(8 << 20)).is_none(), "too full to be kept");
    }

    #[test]
    fn only_a_settled_version_is_learned_and_only_that_version_is_ruled_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.rs");
        std::fs::write(&path, "fn main() {}\n").unwrap();
        let version = Version::of(&std::fs::metadata(&path).unwrap());
        let known = KnownContents::default();
        let needles = NeedleTrigrams::new(&[b"unsafe".to_vec()]);
        known.learn(&version, SystemTime::now(), b"fn main() {}\n");
        assert!(!known.rules_out(&version, &needles), "changed just now: not learned");
        let later = SystemTime::now() + SETTLED + Duration::from_millis(10);
        known.learn(&version, later, b"fn main() {}\n");
        assert!(known.rules_out(&version, &needles));
        let mut other = version;
        other.changed.1 += 1;
        assert!(!known.rules_out(&other, &needles), "another version");
        let root = std::fs::File::open(dir.path()).unwrap();
        assert_eq!(Version::at(&root, Path::new("a.rs")), Some(version));
        std::os::unix::fs::symlink("a.rs", dir.path().join("link")).unwrap();
        assert_eq!(Version::at(&root, Path::new("link")), None, "a symlink is not followed");
        assert_eq!(Version::at(&root, Path::new(".")), None, "a directory");
        assert_eq!(known.stats(), (1, 1));
    }

    #[test]
    fn a_full_session_forgets_and_learns_afresh() {
        let text = b"fn main() { let x = 1; }\n";
        let cost = ENTRY_COST + Filter::of(text).unwrap().bytes();
        let known = KnownContents::within(3 * cost);
        let needles = NeedleTrigrams::new(&[b"unsafe".to_vec()]);
        let versions: Vec<Version> = (1..=4)
            .map(|ino| Version {
                dev: 1,
                ino,
                size: text.len() as u64,
                modified: (1, 0),
                changed: (1, 0),
            })
            .collect();
        let later = SystemTime::now();
        for version in &versions[..3] {
            known.learn(version, later, text);
        }
        assert!(versions[..3].iter().all(|v| known.rules_out(v, &needles)));
        known.learn(&versions[0], later, text);
        assert_eq!(known.stats().0, 3, "a version known already costs nothing");
        known.learn(&versions[3], later, text);
        assert_eq!(known.stats().0, 1, "past the bound, all is forgotten");
        assert!(known.rules_out(&versions[3], &needles), "and the new file learned");
        assert!(!known.rules_out(&versions[0], &needles));
        let noise = noise(2 << 20);
        let mut noisy = versions[0];
        noisy.size = noise.len() as u64;
        known.learn(&noisy, later, &noise);
        assert_eq!(known.stats().0, 2, "a file too varied is known as such");
        assert!(!known.rules_out(&noisy, &NeedleTrigrams::new(&[b"\xff\xfe\xfd\xfc".to_vec()])));
    }
}
