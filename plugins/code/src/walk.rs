//! The walk glob and grep share: lexical order, `.git` skipped, the root
//! `.gitignore` applied to root-relative paths, symlinked directories never
//! entered.
//!
//! Directories are listed through the host's `files.list-dir`, one call per
//! directory: `ignore`'s walker would cost a WASI call per entry (and its
//! parallel walker yields only the root in a guest without threads). The
//! root `.gitignore` is still `ignore`'s matcher.

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use iota_toolset::files::{self, Kind};
use iota_toolset::jail::{Jail, is_plain_name, path_text};
use std::borrow::Cow;
use std::path::Path;

/// One entry of the walk; serialized as `[path, kind]` to travel to a worker.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(from = "(String, char)", into = "(String, char)")]
pub struct Entry {
    /// Absolute path, inside the root, as the text the host is asked with
    /// (names come from the host as text, so nothing is decoded again).
    path: String,
    /// What it is; a symlink is not followed.
    pub kind: Kind,
    /// Where the root-relative form starts in `path`'s bytes, when the walk
    /// knows ([`Jail::relative_start`]); not sent to workers, which learn it
    /// again in [`entries_of`].
    relative_start: Option<usize>,
}

impl From<(String, char)> for Entry {
    fn from((path, kind): (String, char)) -> Entry {
        let kind = match kind {
            'f' => Kind::File,
            'd' => Kind::Directory,
            'l' => Kind::Symlink,
            _ => Kind::Other,
        };
        Entry {
            path,
            kind,
            relative_start: None,
        }
    }
}

impl From<Entry> for (String, char) {
    fn from(entry: Entry) -> (String, char) {
        let kind = match entry.kind {
            Kind::File => 'f',
            Kind::Directory => 'd',
            Kind::Symlink => 'l',
            Kind::Other => 'o',
        };
        (entry.path, kind)
    }
}

impl Entry {
    /// The absolute path.
    pub fn path(&self) -> &Path {
        Path::new(&self.path)
    }

    /// A directory (not a symlink to one).
    pub fn is_dir(&self) -> bool {
        matches!(self.kind, Kind::Directory)
    }

    /// The root-relative form, as [`EntryRef::relative`] gives it.
    pub fn relative(&self, jail: &Jail) -> Cow<'_, str> {
        self.borrowed().relative(jail)
    }

    /// The entry as the walk gives it.
    fn borrowed(&self) -> EntryRef<'_> {
        EntryRef {
            path: &self.path,
            name_start: self.path.rfind('/').map_or(0, |slash| slash + 1),
            kind: self.kind,
            relative_start: self.relative_start,
        }
    }
}

/// The largest root `.gitignore` read, Git's own limit
/// (`PATTERN_MAX_FILE_SIZE`): Git ignores a larger one, and so does the walk.
const MAX_GITIGNORE: u64 = 100 << 20;

/// The root `.gitignore` as a matcher (empty when there is none, or when it
/// is no regular file).
///
/// Read with the host's `read-files`, which opens without blocking and
/// reads regular files only: through `std::fs` (WASI), a FIFO put there by
/// a command held every later walk until its call's deadline. It is also
/// one crossing where WASI took several, and every worker task reads it.
pub fn root_gitignore(jail: &Jail) -> Gitignore {
    let path = jail.root().join(".gitignore");
    let mut builder = GitignoreBuilder::new(jail.root());
    // A missing or unreadable .gitignore simply ignores nothing.
    if let Some(files::Content::Data(text)) = files::read_files(&[path_text(&path).into_owned()], MAX_GITIGNORE)
        .into_iter()
        .next()
    {
        add_lines(&mut builder, &path, &text);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// Adds the lines of `text`, the file at `path`, as
/// `GitignoreBuilder::add` adds those of a file it reads: a line ends at
/// `\n`, which takes a `\r` before it along, one that is not UTF-8 is skipped, a UTF-8 BOM
/// starting the first is dropped, and a bad glob loses its line only.
fn add_lines(builder: &mut GitignoreBuilder, path: &Path, text: &[u8]) {
    for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        let line = match line.strip_suffix(b"\n") {
            Some(line) => line.strip_suffix(b"\r").unwrap_or(line),
            None => line,
        };
        let Ok(line) = std::str::from_utf8(line) else {
            continue;
        };
        let line = if i == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        let _ = builder.add_line(Some(path.to_path_buf()), line);
    }
}

/// Every entry a piece covers, in walk order: each entry, and below each
/// directory its descendants. What is left when it is dropped early is
/// [`Walk::into_rest`].
pub fn entries_of(jail: &Jail, mut piece: Vec<Entry>) -> Walk {
    known_relative_starts(jail, &mut piece);
    let mut walk = Walk::new(jail);
    walk.stack.push(Level::Given(piece.into_iter()));
    walk
}

/// Where each entry's root-relative form starts, as the jail tells it:
/// entries that came from elsewhere (a worker's answer, a task's input)
/// carry none.
fn known_relative_starts(jail: &Jail, entries: &mut [Entry]) {
    for entry in entries {
        entry.relative_start = jail.relative_start(entry.path());
    }
}

/// Directories the walk from `start` is opened up to before it is cut into
/// pieces, so that no piece is one huge directory when others are small.
const OPEN_DIRS: usize = 64;

/// The walk from `start` cut into at most `count` pieces for workers: runs of
/// consecutive entries which, walked in order with [`entries_of`], give
/// every file the walk gives, in the same order. Directories near the top
/// are opened (listed here, left out themselves) until there are enough to
/// share.
pub fn pieces(jail: &Jail, start: &Path, count: usize) -> Vec<Vec<Entry>> {
    let walk = Walk::new(jail);
    let items = walk.children_of_start(start);
    cut(&walk, items, count)
}

/// The rest of a piece ([`Walk::into_rest`]) cut again into at most
/// `count` pieces, as [`pieces`] cuts a walk: a worker that ran out of time
/// hands its rest back to be shared.
pub fn pieces_of_rest(jail: &Jail, mut rest: Vec<Entry>, count: usize) -> Vec<Vec<Entry>> {
    // Nearly every answer has none: then nothing reads the `.gitignore`.
    if rest.is_empty() {
        return Vec::new();
    }
    known_relative_starts(jail, &mut rest);
    cut(&Walk::new(jail), rest, count)
}

/// `items`, in walk order, cut into at most `count` runs, after opening
/// directories among them (up to two levels) until there are [`OPEN_DIRS`].
fn cut(walk: &Walk, mut items: Vec<Entry>, count: usize) -> Vec<Vec<Entry>> {
    for _ in 0..2 {
        if items.iter().filter(|e| e.is_dir()).count() >= OPEN_DIRS {
            break;
        }
        items = items
            .into_iter()
            .flat_map(|e| if e.is_dir() { walk.children_of(&e) } else { vec![e] })
            .collect();
    }
    let per_piece = items.len().div_ceil(count.max(1)).max(1);
    let mut pieces = Vec::new();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        pieces.push(items.by_ref().take(per_piece).collect());
    }
    pieces
}

/// A walk of a piece: the directories being walked, innermost last, each
/// with what is left of it.
pub struct Walk {
    shown: Shown,
    stack: Vec<Level>,
    /// The path of the entry last given by [`Walk::next_entry`]: built here,
    /// so an entry the caller passes over costs no allocation.
    current: String,
}

/// What is left of one level of a walk.
enum Level {
    /// Entries handed over as they are (a piece, or a directory's children
    /// listed to cut pieces).
    Given(std::vec::IntoIter<Entry>),
    /// A directory entered by the walk, its children as the host listed them.
    Listed(Listed),
}

/// A directory being walked: the host's listing and how far through it the
/// walk is. Its children are filtered (`.git`, the `.gitignore`) as they
/// are given.
struct Listed {
    /// The directory's path and the separator its children's paths take.
    prefix: String,
    children: Children,
}

/// What is left of a directory's listing.
struct Children {
    listing: files::Listing,
    /// The next child's index, and where its name starts in the names.
    next: usize,
    at: usize,
    /// Where a plain child's relative form starts, if it has one.
    relative_start: Option<usize>,
    /// Whether some name holds a separator: then each is checked.
    separators: bool,
}

impl Children {
    /// The next child's name and kind, and where its relative form starts.
    fn next_child(&mut self) -> Option<(&str, Kind, Option<usize>)> {
        let (name, kind) = self.listing.entry_at(self.next, self.at)?;
        self.next += 1;
        self.at += name.len();
        // No separator in any name: then a name is plain unless it is empty,
        // `.` or `..`.
        let plain = if self.separators {
            is_plain_name(name.as_bytes())
        } else {
            !name.is_empty() && name != "." && name != ".."
        };
        Some((name, kind, self.relative_start.filter(|_| plain)))
    }
}

/// An entry of a walk as [`Walk::next_entry`] gives it, borrowed from the
/// walk until the next one.
pub struct EntryRef<'a> {
    path: &'a str,
    /// Where the name starts in `path`.
    name_start: usize,
    /// What it is; a symlink is not followed.
    pub kind: Kind,
    relative_start: Option<usize>,
}

impl<'a> EntryRef<'a> {
    /// The absolute path as text, which the host's `files` calls take.
    pub fn path_text(&self) -> &str {
        self.path
    }

    /// The directory the entry is in, as text (its path without the name).
    pub fn dir_text(&self) -> &str {
        let dir = &self.path[..self.name_start];
        match dir.strip_suffix('/') {
            Some(without) if !without.is_empty() => without,
            _ => dir,
        }
    }

    /// The entry's name in its directory, as the host listed it.
    pub fn name(&self) -> &str {
        &self.path[self.name_start..]
    }

    /// Whether the name is plain (see [`is_plain_name`]) and the root-relative
    /// form is the path's own tail, so that the form ends with the name.
    pub fn is_plain(&self) -> bool {
        self.relative_start.is_some()
    }

    /// A regular file (not a symlink to one).
    pub fn is_file(&self) -> bool {
        matches!(self.kind, Kind::File)
    }

    /// A directory (not a symlink to one).
    pub fn is_dir(&self) -> bool {
        matches!(self.kind, Kind::Directory)
    }

    /// A symlink, whatever it points at.
    pub fn is_symlink(&self) -> bool {
        matches!(self.kind, Kind::Symlink)
    }

    /// The root-relative form, as [`Jail::relative`] gives it; borrowed from
    /// the path where the walk knows where it starts, so matching every
    /// entry of a walk compares no prefixes, decodes nothing and allocates
    /// nothing.
    pub fn relative(&self, jail: &Jail) -> Cow<'a, str> {
        match self.relative_start.and_then(|start| self.path.get(start..)) {
            Some(relative) => Cow::Borrowed(relative),
            None => Cow::Owned(jail.relative(Path::new(self.path))),
        }
    }

    /// The entry, owned.
    pub fn to_entry(&self) -> Entry {
        Entry {
            path: self.path.to_string(),
            kind: self.kind,
            relative_start: self.relative_start,
        }
    }
}

impl Walk {
    /// What the walk has not given yet, as a piece: walked with
    /// [`entries_of`] it gives those entries, in the same order. A
    /// directory already given is not in it, what is left of it is.
    pub fn into_rest(mut self) -> Vec<Entry> {
        let mut rest = Vec::new();
        while let Some(level) = self.stack.pop() {
            match level {
                Level::Given(entries) => rest.extend(entries),
                Level::Listed(listed) => self.shown.children(listed, &mut rest),
            }
        }
        rest
    }

    fn new(jail: &Jail) -> Walk {
        Walk {
            shown: Shown {
                gitignore: root_gitignore(jail),
                jail: jail.clone(),
            },
            stack: Vec::new(),
            current: String::new(),
        }
    }

    /// The entries of the directory `dir` the walk starts from, as
    /// [`Walk::children`] gives them.
    fn children_of_start(&self, dir: &Path) -> Vec<Entry> {
        let text = path_text(dir);
        // Where the root-relative form starts in a child's path: asked once,
        // of a made-up child, by bytes of the path, so only where its text
        // is those bytes.
        let relative_start = match text {
            Cow::Borrowed(_) => self.shown.jail.relative_start(&dir.join("x")),
            Cow::Owned(_) => None,
        };
        self.children(&text, relative_start)
    }

    /// The entries of the directory entry `dir` the walk shows: a plain
    /// directory's plain children start their relative form where it does
    /// (the root's length and a `/`), and no child of any other is plain.
    fn children_of(&self, dir: &Entry) -> Vec<Entry> {
        self.children(&dir.path, dir.relative_start)
    }

    /// The entries of `dir` the walk shows, sorted by name (as the host
    /// lists them); an unreadable directory has none. `relative_start` is
    /// where a plain child's relative form starts, if it has one.
    fn children(&self, dir: &str, relative_start: Option<usize>) -> Vec<Entry> {
        let Some(listed) = listed(dir, relative_start) else {
            return Vec::new();
        };
        let mut children = Vec::with_capacity(listed.children.listing.len());
        self.shown.children(listed, &mut children);
        children
    }

    /// The next entry, each entry and below each directory its descendants:
    /// what [`Iterator::next`] gives, borrowed, so that passing over an
    /// entry allocates nothing.
    pub fn next_entry(&mut self) -> Option<EntryRef<'_>> {
        let (kind, relative_start, name_start) = loop {
            match self.stack.last_mut()? {
                Level::Given(entries) => match entries.next() {
                    Some(entry) => {
                        let name_start = entry.borrowed().name_start;
                        self.current = entry.path;
                        break (entry.kind, entry.relative_start, name_start);
                    }
                    None => {
                        self.stack.pop();
                    }
                },
                Level::Listed(listed) => match listed.children.next_child() {
                    Some((name, kind, relative_start)) => {
                        if self
                            .shown
                            .child(&mut self.current, &listed.prefix, name, kind, relative_start)
                        {
                            break (kind, relative_start, listed.prefix.len());
                        }
                    }
                    None => {
                        self.stack.pop();
                    }
                },
            }
        };
        if matches!(kind, Kind::Directory) {
            // An unreadable directory has no children.
            if let Some(listed) = listed(&self.current, relative_start) {
                self.stack.push(Level::Listed(listed));
            }
        }
        Some(EntryRef {
            path: &self.current,
            name_start,
            kind,
            relative_start,
        })
    }
}

/// What of a directory's children the walk shows: not `.git`, nor what the
/// root `.gitignore` ignores.
struct Shown {
    gitignore: Gitignore,
    jail: Jail,
}

impl Shown {
    /// Whether the walk shows the child `name` of the directory whose
    /// children's paths start with `prefix`; its path is left in `path`
    /// when it does.
    fn child(&self, path: &mut String, prefix: &str, name: &str, kind: Kind, relative_start: Option<usize>) -> bool {
        if name == ".git" {
            return false;
        }
        path.clear();
        path.reserve(prefix.len() + name.len());
        path.push_str(prefix);
        path.push_str(name);
        !self.ignored(path, matches!(kind, Kind::Directory), relative_start)
    }

    /// The children of `listed` the walk has not given yet and shows, owned,
    /// onto `out`.
    fn children(&self, mut listed: Listed, out: &mut Vec<Entry>) {
        while let Some((name, kind, relative_start)) = listed.children.next_child() {
            let mut path = String::new();
            if self.child(&mut path, &listed.prefix, name, kind, relative_start) {
                out.push(Entry {
                    path,
                    kind,
                    relative_start,
                });
            }
        }
    }

    fn ignored(&self, path: &str, is_dir: bool, relative_start: Option<usize>) -> bool {
        !self.gitignore.is_empty()
            && (relative_start.is_some() || Path::new(path).starts_with(self.jail.root()))
            && self
                .gitignore
                .matched_path_or_any_parents(Path::new(path), is_dir)
                .is_ignore()
    }
}

/// The directory `dir` as the host lists it, ready to walk; `None` when it
/// cannot be read.
fn listed(dir: &str, relative_start: Option<usize>) -> Option<Listed> {
    let listing = files::list_dir(dir).ok()?;
    // One pass over all the names, not one per name.
    let separators = listing.names().bytes().any(|b| b == b'/' || b == b'\\');
    // `Path::push` adds no `/` after a trailing one (the filesystem's root).
    let separator = if dir.ends_with('/') { "" } else { "/" };
    Some(Listed {
        prefix: format!("{dir}{separator}"),
        children: Children {
            listing,
            next: 0,
            at: 0,
            relative_start,
            separators,
        },
    })
}

impl Iterator for Walk {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        self.next_entry().map(|entry| entry.to_entry())
    }
}

/// Resolves the optional `path` argument of a walking tool to a directory
/// inside the root: `not a directory: <as written>` otherwise.
pub fn start_dir(jail: &Jail, path: Option<&str>) -> Result<std::path::PathBuf, String> {
    let Some(written) = path else {
        return Ok(jail.root().to_path_buf());
    };
    let abs = jail.resolve(written)?;
    match std::fs::metadata(&abs) {
        Ok(meta) if meta.is_dir() => Ok(abs),
        Err(e) if Jail::is_escape(&e) => Err(jail.outside(written)),
        _ => Err(format!("not a directory: {written}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn every_entry_knows_its_relative_form_as_the_jail_gives_it() {
        let root = std::env::temp_dir().join(format!("iota-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // `pieces` opens two levels of directories; the third is walked.
        let deep: &[u8] = b"d/e/walked";
        std::fs::create_dir_all(root.join(std::ffi::OsStr::from_bytes(deep))).unwrap();
        let names: [&[u8]; 5] = [b"a.rs", b"b\\c.rs", b"w.rs", b"x\xff.rs", b"..y"];
        for name in names {
            std::fs::write(root.join(std::ffi::OsStr::from_bytes(name)), "x").unwrap();
            std::fs::write(
                root.join(std::ffi::OsStr::from_bytes(&[deep, b"/", name].concat())),
                "x",
            )
            .unwrap();
        }
        // Below a directory that is not plain, no child is.
        std::fs::create_dir_all(root.join("d/e/walked/f\\g")).unwrap();
        std::fs::write(root.join("d/e/walked/f\\g/h.rs"), "x").unwrap();
        let jail = Jail::new(&root);
        let mut walked = Vec::new();
        for piece in pieces(&jail, &root, 3) {
            for entry in entries_of(&jail, piece) {
                assert_eq!(entry.relative(&jail), jail.relative(entry.path()));
                walked.push((entry.relative(&jail).into_owned(), entry.relative_start.is_some()));
            }
        }
        std::fs::remove_dir_all(&root).unwrap();
        let known = |rel: &str| walked.iter().find(|(r, _)| r == rel).map(|(_, known)| *known);
        for top in ["", "d/e/walked/"] {
            assert_eq!(known(&format!("{top}a.rs")), Some(true));
            assert_eq!(known(&format!("{top}x\u{fffd}.rs")), Some(true));
            assert_eq!(known(&format!("{top}..y")), Some(true));
            // A backslash is turned into `/` by the jail's components path.
            assert_eq!(known(&format!("{top}b/c.rs")), Some(false));
        }
        assert_eq!(known("d/e/walked/f/g"), Some(false));
        assert_eq!(known("d/e/walked/f/g/h.rs"), Some(false));
        // Every file, and the two directories walked, not opened.
        assert_eq!(walked.len(), 13, "{walked:?}");
    }

    #[test]
    fn a_rest_cut_again_gives_what_the_walk_would_have_given() {
        let root = std::env::temp_dir().join(format!("iota-walk-rest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (dir, files) in [
            ("a", 3),
            ("a/b", 2),
            ("a/b/c", 4),
            ("a/d", 1),
            ("e", 0),
            ("f/g/h", 5),
            ("i", 2),
        ] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
            for n in 0..files {
                std::fs::write(root.join(format!("{dir}/x{n}.rs")), "x").unwrap();
            }
        }
        std::fs::write(root.join("top.rs"), "x").unwrap();
        std::os::unix::fs::symlink("a", root.join("link")).unwrap();
        let jail = Jail::new(&root);
        // What grep and glob look at: everything but directories.
        let shown = |walk: Walk| -> Vec<String> {
            walk.filter(|e| !e.is_dir())
                .map(|e| e.relative(&jail).into_owned())
                .collect()
        };
        let whole: Vec<String> = pieces(&jail, &root, 1)
            .into_iter()
            .flat_map(|p| shown(entries_of(&jail, p)))
            .collect();
        assert_eq!(whole.len(), 19, "{whole:?}");
        let piece = walk_all(&jail, &root);
        let entries = entries_of(&jail, piece.clone()).count();
        for taken in 0..=entries {
            let mut walk = entries_of(&jail, piece.clone());
            let seen: Vec<String> = walk
                .by_ref()
                .take(taken)
                .filter(|e| !e.is_dir())
                .map(|e| e.relative(&jail).into_owned())
                .collect();
            // As a worker's answer carries it: without where relative forms start.
            let rest: Vec<Entry> = serde_json::from_str(&serde_json::to_string(&walk.into_rest()).unwrap()).unwrap();
            for count in [1, 3, 8] {
                let mut again = seen.clone();
                for cut in pieces_of_rest(&jail, rest.clone(), count) {
                    again.extend(shown(entries_of(&jail, cut)));
                }
                assert_eq!(again, whole, "stopped after {taken} entries, rest in {count}");
            }
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_root_gitignore_reads_as_ignore_reads_it() {
        let root = std::env::temp_dir().join(format!("iota-walk-ignore-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let jail = Jail::new(&root);
        let paths = [
            "a.log", "b.tmp", "c.rs", "keep.log", "bad", "target", "src/x.o", "sp ", "cr", "dos", "[", "last",
        ];
        let texts: [&[u8]; 7] = [
            b"\xef\xbb\xbf*.log\r\n!keep.log\r\n\n# comment\n\xff\xfebad\nb.tmp\n",
            b"target/\n*.o\nsp\\ \ncr\r\ndos\r\r\n[\nlast\r",
            b"\xef\xbb\xbf\xef\xbb\xbfc.rs\n",
            b"c.rs\n\xef\xbb\xbfa.log",
            b"\n\n\r\n",
            b"",
            b"*\n!*.rs\n",
        ];
        let matched = |ignore: &Gitignore| -> Vec<(&str, bool, bool)> {
            paths
                .iter()
                .flat_map(|p| {
                    [false, true].map(|dir| {
                        (
                            *p,
                            dir,
                            ignore.matched_path_or_any_parents(root.join(p), dir).is_ignore(),
                        )
                    })
                })
                .collect()
        };
        for text in texts {
            std::fs::write(root.join(".gitignore"), text).unwrap();
            let mut builder = GitignoreBuilder::new(&root);
            let _ = builder.add(root.join(".gitignore"));
            let expected = matched(&builder.build().unwrap());
            assert_eq!(
                matched(&root_gitignore(&jail)),
                expected,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
        std::fs::remove_file(root.join(".gitignore")).unwrap();
        assert!(root_gitignore(&jail).is_empty(), "none: nothing ignored");
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// The walk from `root` as one piece of its top entries, nothing opened.
    fn walk_all(jail: &Jail, root: &Path) -> Vec<Entry> {
        Walk::new(jail).children_of_start(root)
    }
}
