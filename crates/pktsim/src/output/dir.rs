//! All-or-nothing results directories.
//!
//! A run never writes into its `--out` directory directly. It takes a lock
//! beside it ([`OutDirLock`]: a second run into the same directory is
//! refused while the first holds it), writes every file into a staging
//! directory beside it ([`Staging`]), and only when every file is complete
//! swaps the staging directory into place in one rename. A failure at any
//! point before the swap (a full disk, Ctrl-C, a crash) leaves `--out` as it
//! was: the previous complete run, or nothing.
//!
//! Files in `--out` that are not a run's ([`super::RUN_FILES`] and the
//! report's `plots/*.png`) are kept: they are hard-linked (copied where a
//! link cannot be made) into the staging directory before the swap, so the
//! originals stay where they are until the new directory holds them too.
//!
//! Names beside `--out` (`results/run` here):
//!
//! - `results/.run.pktsim-lock`: the lock (an advisory `flock` on Unix, so
//!   a killed run's lock is released with its process);
//! - `results/.run.pktsim-tmp-PID-N/`: a staging directory; what a killed
//!   run leaves behind is removed by the next run that takes the lock.

use crate::error::{Error, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

fn out_dir_err(dir: &Path, msg: impl Into<String>) -> Error {
    Error::OutDir {
        dir: dir.to_path_buf(),
        msg: msg.into(),
    }
}

fn output_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Output(format!("{}: {e}", path.display()))
}

/// `dir` as an absolute path with its parent resolved (symlinks included),
/// so that the lock and the staging directory sit beside the real folder
/// whatever path names it, its name, and the folders made for its parent
/// (deepest first), which did not exist before.
fn resolve(dir: &Path) -> Result<(PathBuf, String, Vec<PathBuf>)> {
    if dir.is_dir() {
        let real = dir
            .canonicalize()
            .map_err(|e| out_dir_err(dir, e.to_string()))?;
        // The current folder (or one holding it) cannot be swapped away
        // under the shell that runs us.
        if let Ok(cwd) = std::env::current_dir().and_then(|c| c.canonicalize()) {
            if cwd.starts_with(&real) {
                return Err(out_dir_err(
                    dir,
                    "is the current folder or holds it; give --out a folder of its own",
                ));
            }
        }
        let name = real.file_name().map(|n| n.to_string_lossy().into_owned());
        let parent = real.parent().map(Path::to_path_buf);
        return match (parent, name) {
            (Some(p), Some(n)) => Ok((p.join(&n), n, Vec::new())),
            _ => Err(out_dir_err(dir, "give --out a folder below the root")),
        };
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| out_dir_err(dir, "give --out a folder name (not `.` or `..`)"))?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let made: Vec<PathBuf> = parent
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(&parent).map_err(|e| out_dir_err(dir, e.to_string()))?;
    let parent = parent
        .canonicalize()
        .map_err(|e| out_dir_err(dir, e.to_string()))?;
    Ok((parent.join(&name), name, made))
}

/// The lock on a results directory: while it is held, no other pktsim run
/// (another process, or another thread of this one) writes into it.
/// Dropping it releases the lock and removes the lock file.
#[derive(Debug)]
pub struct OutDirLock {
    /// The results directory, absolute.
    dir: PathBuf,
    /// Its name (the last component).
    name: String,
    /// The lock file beside it.
    path: PathBuf,
    /// Folders made to hold it (deepest first): removed again, if empty,
    /// when no results were written, so a refused or failed run leaves no
    /// empty `results/` behind.
    made: Vec<PathBuf>,
    /// Open while the lock is held: closing it releases the `flock`.
    _file: File,
}

impl OutDirLock {
    /// Take the lock on `dir` (made absolute; its parent is created), or
    /// refuse with a one-line error when another run holds it. Staging
    /// directories that a killed run left beside `dir` are removed.
    pub fn acquire(dir: &Path) -> Result<OutDirLock> {
        let (abs, name, made) = resolve(dir)?;
        let parent = abs.parent().unwrap_or(Path::new("/")).to_path_buf();
        let path = parent.join(format!(".{name}.pktsim-lock"));
        // A holder that is done unlinks the file before it unlocks it, so
        // a lock taken on an unlinked file is stale: open the path again.
        for _ in 0..16 {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| out_dir_err(dir, format!("cannot make the lock file: {e}")))?;
            if !try_lock(&file).map_err(|e| out_dir_err(dir, format!("lock: {e}")))? {
                return Err(out_dir_err(
                    dir,
                    format!(
                        "another pktsim run is writing into it (lock {}); wait for it to end or give another --out",
                        path.display()
                    ),
                ));
            }
            if same_file(&file, &path) {
                let lock = OutDirLock {
                    dir: abs,
                    name,
                    path,
                    made,
                    _file: file,
                };
                lock.remove_stale_staging();
                return Ok(lock);
            }
        }
        Err(out_dir_err(
            dir,
            "the lock file keeps changing; is another run starting and ending in a loop?",
        ))
    }

    /// The results directory, absolute.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn staging_prefix(&self) -> String {
        format!(".{}.pktsim-tmp-", self.name)
    }

    /// What killed runs left: only their own files (or links to files that
    /// stay in `--out`), so removing them loses nothing. Holding the lock,
    /// no live run is writing one.
    fn remove_stale_staging(&self) {
        let Some(parent) = self.dir.parent() else {
            return;
        };
        let prefix = self.staging_prefix();
        if let Ok(entries) = std::fs::read_dir(parent) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }

    /// A new, empty staging directory beside the results directory.
    pub fn staging(&self) -> Result<Staging<'_>> {
        static N: AtomicU64 = AtomicU64::new(0);
        let parent = self.dir.parent().unwrap_or(Path::new("/"));
        let tmp = parent.join(format!(
            "{}{}-{}",
            self.staging_prefix(),
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&tmp).map_err(|e| output_err(&tmp, e))?;
        Ok(Staging {
            lock: self,
            tmp,
            committed: false,
        })
    }
}

impl Drop for OutDirLock {
    fn drop(&mut self) {
        // Unlink first, then unlock (the file closes after this body): a
        // run waiting on this file then sees that it is stale.
        let _ = std::fs::remove_file(&self.path);
        if !self.dir.exists() {
            for d in &self.made {
                // Fails, as it should, on a folder something else now uses.
                let _ = std::fs::remove_dir(d);
            }
        }
    }
}

#[cfg(unix)]
fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a file descriptor that `file` owns and keeps open.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(e)
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

// Elsewhere (pktsim is built and tested on Linux) the lock file is made but
// not locked: the all-or-nothing write still holds, the refusal does not.
#[cfg(not(unix))]
fn try_lock(_file: &File) -> std::io::Result<bool> {
    Ok(true)
}

#[cfg(not(unix))]
fn same_file(_file: &File, _path: &Path) -> bool {
    true
}

/// A staging directory: files go in with [`Staging::write`]; nothing is
/// visible in the results directory until [`Staging::commit`]. Dropped
/// without a commit (an error, a panic), it removes itself.
#[derive(Debug)]
pub struct Staging<'a> {
    lock: &'a OutDirLock,
    tmp: PathBuf,
    committed: bool,
}

impl Staging<'_> {
    /// The staging directory.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Write `name` (a file name, no folders) with `bytes`, flushed to disk
    /// so that the commit never publishes a file the disk has not taken.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        use std::io::Write;
        let path = self.tmp.join(name);
        fail_point(name).map_err(|e| output_err(&path, e))?;
        let mut f = File::create(&path).map_err(|e| output_err(&path, e))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .map_err(|e| output_err(&path, e))
    }

    /// Move the staged run into place in one step. Files of the old
    /// directory that are not a run's ([`super::RUN_FILES`], the report's
    /// `plots/*.png`) are carried over first.
    pub fn commit(mut self) -> Result<()> {
        let dir = self.lock.dir.clone();
        if dir.is_dir() {
            carry_over(&dir, &self.tmp)?;
            swap_into_place(&self.tmp, &dir)?;
            // `self.tmp` now holds the old run: dropped below.
        } else {
            std::fs::rename(&self.tmp, &dir).map_err(|e| output_err(&dir, e))?;
            self.committed = true;
        }
        Ok(())
    }
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Whether `rel` (a path inside a results directory) is a run's or its
/// report's, and so must not survive into the next run.
fn is_run_file(rel: &Path) -> bool {
    let s = rel.to_string_lossy();
    super::RUN_FILES.contains(&&*s)
        || (rel.parent() == Some(Path::new("plots"))
            && rel
                .extension()
                .is_some_and(|x| x == "png" || x == "svg" || x == "pdf"))
}

/// Hard-link (or copy) every file of `old` that is not a run's into `new`,
/// keeping folders: the originals stay put, so a failure here loses
/// nothing.
fn carry_over(old: &Path, new: &Path) -> Result<()> {
    fn walk(root: &Path, rel: &Path, new: &Path) -> Result<()> {
        let here = root.join(rel);
        let entries = std::fs::read_dir(&here).map_err(|e| output_err(&here, e))?;
        for e in entries {
            let e = e.map_err(|e| output_err(&here, e))?;
            let rel = rel.join(e.file_name());
            let ty = e.file_type().map_err(|err| output_err(&e.path(), err))?;
            if ty.is_dir() {
                walk(root, &rel, new)?;
            } else if !is_run_file(&rel) {
                let to = new.join(&rel);
                if let Some(p) = to.parent() {
                    std::fs::create_dir_all(p).map_err(|err| output_err(p, err))?;
                }
                if std::fs::hard_link(e.path(), &to).is_err() {
                    std::fs::copy(e.path(), &to).map_err(|err| output_err(&to, err))?;
                }
            }
        }
        Ok(())
    }
    walk(old, Path::new(""), new)
}

/// Exchange `tmp` and `dir` atomically where the system can (Linux
/// `renameat2(RENAME_EXCHANGE)`); elsewhere move `dir` aside and `tmp` in,
/// two renames between which `dir` is briefly absent (never half written).
/// Afterwards `tmp` holds the old directory.
fn swap_into_place(tmp: &Path, dir: &Path) -> Result<()> {
    if exchange(tmp, dir) {
        return Ok(());
    }
    let aside = tmp.with_extension("old");
    std::fs::rename(dir, &aside).map_err(|e| output_err(dir, e))?;
    if let Err(e) = std::fs::rename(tmp, dir) {
        // Put the old run back: the results directory stays as it was.
        let _ = std::fs::rename(&aside, dir);
        return Err(output_err(dir, e));
    }
    std::fs::rename(&aside, tmp).map_err(|e| output_err(tmp, e))
}

#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> bool {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let (Ok(ca), Ok(cb)) = (
        CString::new(a.as_os_str().as_bytes()),
        CString::new(b.as_os_str().as_bytes()),
    ) else {
        return false;
    };
    // SAFETY: two valid NUL-terminated paths; the call only renames.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    r == 0
}

#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path) -> bool {
    false
}

#[cfg(test)]
thread_local! {
    /// Tests: the file name whose write fails as on a full disk.
    pub(crate) static FAIL_WRITE: std::cell::RefCell<Option<String>> =
        const { std::cell::RefCell::new(None) };
}

/// A test's injected write failure (ENOSPC) for file `name`; nothing
/// outside tests.
fn fail_point(name: &str) -> std::io::Result<()> {
    #[cfg(test)]
    {
        if FAIL_WRITE.with(|f| f.borrow().as_deref() == Some(name)) {
            return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
        }
    }
    let _ = name;
    Ok(())
}
