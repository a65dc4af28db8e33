//! Starting a command in the sandbox (Unix): what of the home directory it
//! sees, the repositories kept read-only, the placeholders, the pinned
//! binds, and bubblewrap's or Seatbelt's command line around the
//! interpreter's.

use super::run::Launch;
use super::sandbox::{self, CacheMount, Policy, Sandbox};
#[cfg(target_os = "linux")]
use super::seccomp;
use super::{ShellToolset, cache_dir_path, config, credentials, home, home_dir, processes};
use crate::session::Session;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

impl ShellToolset {
    pub(super) fn sandboxed_launch(
        &self,
        argv: Vec<OsString>,
        cwd: &Path,
        session: &Session,
    ) -> std::io::Result<(Launch, bool)> {
        if let Some(why) = &self.refused {
            return Err(std::io::Error::other(why.clone()));
        }
        // Known by its own path: bubblewrap mounts over a home reached
        // through a link where the link points.
        let home = home_dir().map(|h| std::fs::canonicalize(&h).unwrap_or(h));
        let handle = self.project.handle();
        let cache = self.cache_mount();
        let (home_only, hidden) = self.home_view(home.as_deref(), cache.as_ref());
        let repositories = super::ShellSession::of(session)
            .repositories(&handle)
            .map_err(std::io::Error::other)?;
        static SAID: std::sync::Mutex<std::collections::BTreeSet<PathBuf>> =
            std::sync::Mutex::new(std::collections::BTreeSet::new());
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        let bound = crate::protected::mount_bound();
        let rel = |path: &PathBuf| path.strip_prefix(&handle).unwrap_or(path).display().to_string();
        for unprotected in &repositories.unprotected {
            if said.insert(unprotected.clone()) {
                eprintln!(
                    "iota-host: warning: the submodules {} records are past the sandbox's bound ({bound} mounts): a .git can be made in their places",
                    rel(unprotected)
                );
            }
        }
        let new: Vec<String> = repositories
            .writable
            .iter()
            .filter(|path| said.insert((*path).clone()))
            .map(rel)
            .collect();
        if !new.is_empty() {
            eprintln!(
                "iota-host: warning: {} repositories made below the root since the session started are past the sandbox's bound ({bound} read-only mounts) and writable inside it: {}{}",
                new.len(),
                new.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
                if new.len() > 5 { ", …" } else { "" }
            );
        }
        drop(said);
        let below_root = |found: &PathBuf| found.strip_prefix(&handle).ok().map(Path::to_path_buf);
        // The root's own, and a `.git` in every submodule's place: a
        // placeholder where there is none, so that none can be made.
        let protect: Vec<PathBuf> = crate::protected::PROTECTED_AT_ROOT
            .iter()
            .map(PathBuf::from)
            .chain(
                repositories
                    .submodules
                    .iter()
                    .filter_map(below_root)
                    .map(|sub| sub.join(crate::protected::GIT_DIR)),
            )
            .collect();
        let protected: Vec<PathBuf> = super::ShellSession::of(session)
            .protect(&self.project, &protect)?
            .into_iter()
            .map(|rel| self.root.join(rel))
            .collect();
        let mut policy = Policy {
            root: self.root.clone(),
            pinned: None,
            private_tmp: session.private_tmp()?,
            cache,
            home_only,
            extra_writable: self.config.write.clone(),
            visible: vec![session.jobs_dir()?],
            network: self.config.network,
            repositories: repositories
                .own
                .iter()
                .filter_map(below_root)
                .map(|rel| self.root.join(rel))
                .filter(|path| !protected.contains(path))
                .collect(),
            protected,
            hidden,
        };
        let env = Some(self.config.env.sandboxed(std::env::vars_os()));
        Ok(match &self.sandbox {
            Sandbox::Bubblewrap(bwrap) => {
                // bubblewrap is Linux's; its seccomp filter too.
                #[cfg(target_os = "linux")]
                let filters = seccomp::filter_fds(self.config.network)?;
                #[cfg(not(target_os = "linux"))]
                let filters: Vec<std::os::fd::OwnedFd> = Vec::new();
                let fds: Vec<i32> = filters.iter().map(std::os::fd::AsRawFd::as_raw_fd).collect();
                let mut inherit = filters;
                policy.pinned = Some(self.pin(&policy, &mut inherit)?);
                let mut full = vec![bwrap.clone().into_os_string()];
                full.extend(sandbox::bwrap_args(&policy, cwd, &fds, &argv));
                let launch = Launch {
                    argv: full,
                    env,
                    inherit,
                    processes: Some(processes::Bound::new(self.config.max_processes)),
                    ..Launch::default()
                };
                (launch, true)
            }
            Sandbox::Seatbelt => {
                let mut full: Vec<OsString> = vec![
                    "/usr/bin/sandbox-exec".into(),
                    "-p".into(),
                    sandbox::seatbelt_profile(&policy).into(),
                ];
                full.extend(argv);
                let launch = Launch {
                    argv: full,
                    env,
                    ..Launch::default()
                };
                (launch, false)
            }
            Sandbox::Unavailable => (
                Launch {
                    argv,
                    ..Launch::default()
                },
                false,
            ),
        })
    }

    /// What of the home directory sandboxed commands see (`home.rs`): the
    /// paths shown when not all of it is, and what they may not see at all,
    /// the host's state and the credentials found where they look
    /// (`credentials.rs`) but for a path the user named exactly under
    /// `read:`. A `home: visible` search that stopped at its bound shows
    /// the toolchains' view instead: what it did not reach is unknown.
    fn home_view(&self, home: Option<&Path>, cache: Option<&CacheMount>) -> (Option<sandbox::HomeOnly>, Vec<PathBuf>) {
        let mut hidden: Vec<PathBuf> = crate::host_state::default_dir().into_iter().collect();
        // Wherever a tool's variable says its store is.
        let keep: Vec<&Path> = [Some(self.canonical_root.as_path()), home]
            .into_iter()
            .flatten()
            .collect();
        hidden.extend(credentials::env_stores(|var| std::env::var_os(var), &keep));
        // A home under /tmp is out of sight already: the private /tmp
        // stands in the real one's place.
        let Some(home) = home.filter(|h| !h.starts_with("/tmp")) else {
            return (None, hidden_where_seen(hidden, &[]));
        };
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let skip: Vec<PathBuf> = std::iter::once(self.canonical_root.clone())
            .chain(self.config.write.iter().map(|w| canonical(w)))
            .collect();
        let real_cache = cache
            .filter(|c| !matches!(c, CacheMount::Private { .. }))
            .map(|c| c.path().to_path_buf());
        // The toolchains' trees and the cache are searched as install
        // trees (not into what a runtime runs); what `read:` adds, whole.
        let toolchains = home::toolchains(home);
        let scope = |whole: bool, shown: &[PathBuf]| credentials::Scope {
            home: home.to_path_buf(),
            whole,
            shown: shown.iter().filter(|p| !toolchains.contains(p)).cloned().collect(),
            install_trees: shown
                .iter()
                .filter(|p| toolchains.contains(p))
                .cloned()
                .chain(real_cache.clone())
                .collect(),
            skip: skip.clone(),
        };
        let mut discovered = self.credentials.lock().unwrap_or_else(|e| e.into_inner());
        // The config's paths are under $HOME as written; `home` is its own.
        let written = home_dir();
        let rebased = |p: &PathBuf| match written.as_deref().and_then(|w| p.strip_prefix(w).ok()) {
            Some(rel) => home.join(rel),
            None => p.clone(),
        };
        let mut shown = match &self.config.home {
            config::HomeView::Only(shown) => Some(shown.iter().map(rebased).collect::<Vec<_>>()),
            config::HomeView::Visible => None,
        };
        let found = discovered
            .refresh(&scope(shown.is_none(), shown.as_deref().unwrap_or_default()))
            .to_vec();
        let cut_short = discovered.cut_short;
        if cut_short && shown.is_none() {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "iota-host: warning: the search of {} for credentials stopped at its bound ({} entries, {} ms); sandboxed commands see only the toolchains' directories of it (tools.shell.home: toolchains) until a search completes",
                    home.display(),
                    credentials::MAX_ENTRIES,
                    credentials::TIME_BUDGET.as_millis()
                )
            });
            let found = discovered.refresh(&scope(false, &toolchains)).to_vec();
            hidden.extend(found);
            shown = Some(toolchains);
        } else {
            if cut_short {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    eprintln!(
                        "iota-host: warning: the search of what sandboxed commands see of {} for credentials stopped at its bound ({} entries, {} ms); what it did not reach is shown unsearched: narrow read:",
                        home.display(),
                        credentials::MAX_ENTRIES,
                        credentials::TIME_BUDGET.as_millis()
                    )
                });
            }
            // A path `read:` names exactly is shown as the user asked
            // (not a toolchain's: one holding a login is hidden).
            let named: Vec<&PathBuf> = shown
                .as_deref()
                .unwrap_or_default()
                .iter()
                .filter(|p| !toolchains.contains(p))
                .collect();
            hidden.extend(found.into_iter().filter(|p| !named.contains(&p)));
        }
        let hidden = hidden_where_seen(hidden, shown.as_deref().unwrap_or_default());
        let only = shown.map(|shown| sandbox::HomeOnly {
            roots: std::iter::once(home.to_path_buf())
                .chain(xdg_outside(home, &keep))
                .collect(),
            shown,
        });
        (only, hidden)
    }

    /// The descriptors bubblewrap binds for `policy` (added to `inherit`):
    /// the pinned root; each read-only path in it, and each directory on
    /// the way to one ([`Policy::pinned_ancestors`]), opened through the root
    /// without following a link (one that is gone, or reached through a
    /// link now, is left out: nothing of the root is there to keep).
    fn pin(&self, policy: &Policy, inherit: &mut Vec<std::os::fd::OwnedFd>) -> std::io::Result<sandbox::Pinned> {
        use rustix::fs::OFlags;
        use std::os::fd::AsRawFd;
        let root = self.project.duplicate()?;
        let pinned_root = root.as_raw_fd();
        inherit.push(root);
        // `Ok(None)` for nothing there; a link is an error (`Other`): a
        // mount cannot keep it from being replaced.
        let mut opened = |path: &Path, flags: OFlags| -> std::io::Result<Option<i32>> {
            let Ok(rel) = path.strip_prefix(&self.root) else {
                return Ok(None);
            };
            let fd = match self.project.open_beneath(rel, flags) {
                Ok(fd) => fd,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            let is_link = rustix::fs::fstat(&fd)
                .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink);
            if is_link {
                return Err(std::io::Error::other(
                    "it is a symbolic link, which a command could replace with a repository of its own; make it a file holding `gitdir: <where it points>` (what git init --separate-git-dir writes), which the sandbox keeps read-only",
                ));
            }
            let raw = fd.as_raw_fd();
            inherit.push(fd);
            Ok(Some(raw))
        };
        // A directory on the way that may not be searched (its mode taken
        // away, by a command as well) hides what is below it from the host
        // too: not bound in place; what is below is kept read-only through
        // it whole.
        let in_place = policy
            .pinned_ancestors()
            .into_iter()
            .filter_map(|dir| Some((opened(&dir, crate::platform::O_PATH | OFlags::DIRECTORY).ok()??, dir)))
            .collect();
        let mut read_only: Vec<(i32, PathBuf)> = Vec::new();
        for path in policy.protected.iter().chain(&policy.repositories) {
            // What cannot be opened is kept read-only by the nearest
            // directory above it that can, never left out: a mode a
            // command set must not open a repository to it.
            let mut target = path.clone();
            loop {
                // Each bound once: a descriptor inherited and not bound
                // would reach the command.
                if read_only.iter().any(|(_, bound)| *bound == target) {
                    break;
                }
                match opened(&target, crate::platform::O_PATH) {
                    Ok(Some(fd)) => {
                        read_only.push((fd, target));
                        break;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let denied = [rustix::io::Errno::ACCESS, rustix::io::Errno::PERM]
                            .iter()
                            .any(|errno| e.raw_os_error() == Some(errno.raw_os_error()));
                        match target.parent() {
                            Some(parent) if denied && parent != self.root && parent.starts_with(&self.root) => {
                                target = parent.to_path_buf();
                            }
                            _ => {
                                return Err(std::io::Error::other(format!(
                                    "cannot open {} to keep it read-only ({e}); the sandbox does not start",
                                    path.display()
                                )));
                            }
                        }
                    }
                }
            }
        }
        Ok(sandbox::Pinned {
            root: pinned_root,
            in_place,
            read_only,
        })
    }

    /// How sandboxed commands write the cache directory (created if
    /// missing): as it is when the user named it under `write:`; else an
    /// overlay whose writes land in the project's own directory in the
    /// host's state, or where no overlay can be mounted that directory
    /// itself; read-only where neither can be (Seatbelt, no host state).
    fn cache_mount(&self) -> Option<CacheMount> {
        let cache = cache_dir_path()?;
        std::fs::create_dir_all(&cache).ok()?;
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if self.config.write.iter().any(|w| canonical(w) == canonical(&cache)) {
            return Some(CacheMount::Real(cache));
        }
        let own = match (&self.sandbox, self.project_cache_dir()) {
            (Sandbox::Bubblewrap(_), Some(own)) => own,
            _ => return Some(CacheMount::ReadOnly(cache)),
        };
        let made = |dir: &Path| {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .is_ok()
        };
        if self.cache_overlay {
            let (upper, work) = (own.join("upper"), own.join("work"));
            if made(&upper) && made(&work) {
                return Some(CacheMount::Overlay { cache, upper, work });
            }
        } else {
            let dir = own.join("private");
            if made(&dir) {
                return Some(CacheMount::Private { cache, dir });
            }
        }
        Some(CacheMount::ReadOnly(cache))
    }

    /// The project's own directory for what its sandboxed commands write to
    /// the cache: in the host's state (hidden from them), named for the root.
    fn project_cache_dir(&self) -> Option<PathBuf> {
        let key = crate::engine::sha256_hex(self.canonical_root.as_os_str().as_encoded_bytes());
        Some(crate::host_state::default_dir()?.join("sandbox-cache").join(&key[..32]))
    }
}

/// Where each of `hidden` must be hidden inside the sandbox: at the path it
/// really is (links resolved: `/` is readable, so a store hidden only at a
/// link's path, a toolchain directory that is a link elsewhere, would still
/// be read at its own), and, for each directory of `shown` (bound in a
/// hidden home from where it really is), where it appears below that
/// directory. No destination goes through a link, which bubblewrap would
/// follow out of the new root.
fn hidden_where_seen(hidden: Vec<PathBuf>, shown: &[PathBuf]) -> Vec<PathBuf> {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let shown: Vec<(PathBuf, PathBuf)> = shown.iter().map(|s| (s.clone(), real(s))).collect();
    let mut all = Vec::with_capacity(hidden.len());
    for path in hidden {
        let real_path = real(&path);
        for (seen, really) in &shown {
            // (Not `join("")`, which ends a file's path in `/`.)
            match real_path.strip_prefix(really) {
                Ok(rel) if rel.as_os_str().is_empty() => all.push(seen.clone()),
                Ok(rel) => all.push(seen.join(rel)),
                Err(_) => {}
            }
        }
        all.push(real_path);
    }
    all.sort();
    all.dedup();
    all
}

/// The user's XDG config, data and state directories where they are outside
/// `home` (and outside /tmp, which the private /tmp hides): shown only in
/// part like the home directory, for they hold the same stores. Only
/// directories the user owns, holding none of `keep`, none inside another.
fn xdg_outside(home: &Path, keep: &[&Path]) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let uid = rustix::process::geteuid().as_raw();
    let mut roots: Vec<PathBuf> = ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| {
            !p.starts_with(home)
                && !p.starts_with("/tmp")
                && !keep.iter().any(|k| k.starts_with(p))
                && std::fs::metadata(p).is_ok_and(|m| m.is_dir() && m.uid() == uid)
        })
        .collect();
    roots.sort();
    roots.dedup();
    let mut outermost: Vec<PathBuf> = Vec::new();
    for root in roots {
        if !outermost.iter().any(|o| root.starts_with(o)) {
            outermost.push(root);
        }
    }
    outermost
}
