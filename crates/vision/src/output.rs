//! Output files that are never half-written, and the checks every long
//! command makes on its output paths before the first frame.
//!
//! - [`check_output_file`] and [`check_distinct`]: a path names a file (not
//!   a folder), its folder exists or is created, it can be written, and no
//!   two outputs of a run name the same file — refused before any work,
//!   naming the flag, rather than after ten minutes of tracking.
//! - [`RowFile`]: a file that grows row by row (CSV rows, BVH motion
//!   lines) under a hidden temporary name beside the target (flushed after
//!   each row) and takes the target's name at [`RowFile::commit`]. Its
//!   rows can be written *as a whole file* at any moment by
//!   [`salvage_all`], which a second Ctrl-C calls from the signal thread
//!   while the main thread is blocked (a frame read, a detector or GPU
//!   wait): the target then holds every complete row recorded, and
//!   otherwise stays as it was.
//! - [`write_atomically`]: a whole file written to a temporary name and
//!   renamed; an interrupted write (a PNG) leaves the previous file or the
//!   whole new one.
//!
//! Live row files are kept in one process-wide list so that [`salvage_all`]
//! finds them; a commit or salvage holds that list's lock, so the two never
//! interleave on one file.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Result, VisionError};

/// `dir/.name.partial`: where a file is written before it is renamed.
pub fn temporary_name(path: &Path) -> PathBuf {
    skeleton::hidden_beside(path, "partial")
}

/// Checks that `path`, given with `flag`, can be an output file: not
/// empty, not a folder, a file name; its folder exists (it is created if
/// missing) and a file can be created in it.
///
/// # Errors
/// [`VisionError::Parameter`] naming `flag` and the path.
pub fn check_output_file(flag: &'static str, path: &Path) -> Result<()> {
    let bad = |m: String| VisionError::parameter(flag, path.display(), m);
    if path.as_os_str().is_empty() {
        return Err(bad("an empty path: give a file name".into()));
    }
    if path.is_dir() {
        return Err(bad("is a folder: give a file path".into()));
    }
    let ends_in_name = path
        .components()
        .next_back()
        .is_some_and(|c| matches!(c, std::path::Component::Normal(_)));
    if !ends_in_name || path.to_string_lossy().ends_with('/') {
        return Err(bad("does not end in a file name".into()));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        if parent.exists() {
            return Err(bad(format!("{} is not a folder", parent.display())));
        }
        std::fs::create_dir_all(parent).map_err(|e| {
            bad(format!(
                "cannot create the folder {}: {e}",
                parent.display()
            ))
        })?;
    }
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().readonly()
    {
        return Err(bad("the file is read-only".into()));
    }
    // The temporary file the output is written to first.
    let probe = temporary_name(path);
    let existed = probe.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&probe)
        .map_err(|e| bad(format!("cannot write in {}: {e}", parent.display())))?;
    if !existed {
        let _ = std::fs::remove_file(&probe);
    }
    Ok(())
}

/// The file `path` names, for comparing outputs: its folder made absolute
/// (symbolic links resolved where it exists) joined with its name.
fn identity(path: &Path) -> PathBuf {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(parent).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(parent))
            .unwrap_or_else(|_| parent.to_path_buf())
    });
    match path.file_name() {
        Some(n) => dir.join(n),
        None => dir,
    }
}

/// Checks that no two of `outputs` (flag, path) name the same file (a
/// folder given twice in other spellings included).
///
/// # Errors
/// [`VisionError::Parameter`] naming both flags.
pub fn check_distinct(outputs: &[(&'static str, &Path)]) -> Result<()> {
    for (i, (fa, a)) in outputs.iter().enumerate() {
        for (fb, b) in &outputs[i + 1..] {
            if identity(a) == identity(b) {
                return Err(VisionError::parameter(
                    fa,
                    a.display(),
                    format!(
                        "{fb} {} names the same file: give each output its own path",
                        b.display()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically: a temporary file in the same folder,
/// synced, then renamed over `path` (the temporary file is removed on an
/// error, and by [`salvage_all`] if the process ends during the write).
///
/// # Errors
/// The I/O error.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temporary_name(path);
    let id = register(Live {
        id: 0,
        target: path.to_path_buf(),
        partial: tmp.clone(),
        layout: Layout::Whole,
    });
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        let _guard = live();
        std::fs::rename(&tmp, path)
    })();
    unregister(id);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// What a live temporary file becomes when it is salvaged.
#[derive(Clone)]
enum Layout {
    /// Being written whole by [`write_atomically`]: removed.
    Whole,
    /// Its first `head_lines` lines are a header, the rest rows: written
    /// up to its last complete line, when it holds a row.
    Rows { head_lines: usize },
    /// Rows only; the file is `prelude(rows)` then the rows.
    Counted(Arc<dyn Fn(usize) -> String + Send + Sync>),
}

#[derive(Clone)]
struct Live {
    id: u64,
    target: PathBuf,
    partial: PathBuf,
    layout: Layout,
}

static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn live() -> MutexGuard<'static, Vec<Live>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn register(mut l: Live) -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    l.id = id;
    live().push(l);
    id
}

fn unregister(id: u64) {
    live().retain(|l| l.id != id);
}

/// `bytes` cut after their last newline, and the number of lines.
fn complete_lines(bytes: &[u8]) -> (&[u8], usize) {
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let lines = bytes[..end].iter().filter(|&&b| b == b'\n').count();
    (&bytes[..end], lines)
}

/// Writes one live file's complete rows under its target's name (or leaves
/// the target as it was when it holds no row), then removes the temporary
/// file.
fn salvage(l: &Live) -> std::io::Result<Option<usize>> {
    let result = match &l.layout {
        Layout::Whole => Ok(None),
        Layout::Rows { head_lines } => {
            let bytes = std::fs::read(&l.partial)?;
            let (body, lines) = complete_lines(&bytes);
            let rows = lines.saturating_sub(*head_lines);
            if rows == 0 {
                Ok(None)
            } else {
                write_directly(&l.target, &[body]).map(|()| Some(rows))
            }
        }
        Layout::Counted(prelude) => {
            let bytes = std::fs::read(&l.partial)?;
            let (body, rows) = complete_lines(&bytes);
            if rows == 0 {
                Ok(None)
            } else {
                write_directly(&l.target, &[prelude(rows).as_bytes(), body]).map(|()| Some(rows))
            }
        }
    };
    let _ = std::fs::remove_file(&l.partial);
    result
}

/// `parts` into a second temporary name, synced, renamed over `path`.
fn write_directly(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    let tmp = skeleton::hidden_beside(path, "salvage");
    skeleton::write_through(&tmp, path, parts)
}

/// Writes every live [`RowFile`]'s complete rows under its target's name
/// (a file with no row leaves the target as it was) and removes every
/// temporary file; for the last moments of a process (a second Ctrl-C).
/// Returns one line per output: what was written, or why not.
pub fn salvage_all() -> Vec<String> {
    salvage_where(|_| true)
}

/// [`salvage_all`], then `then` with its lines, still holding the list of
/// live files: a thread that would start a new temporary file waits, so
/// `then` can end the process (a second Ctrl-C) without leaving one.
pub fn salvage_all_then<T>(then: impl FnOnce(&[String]) -> T) -> T {
    let mut list = live();
    let picked: Vec<Live> = list.drain(..).collect();
    let said = salvage_each(picked);
    then(&said)
}

/// [`salvage_all`] of the live files whose target `pick` accepts (tests
/// of one file among others that run at the same time).
pub fn salvage_where(pick: impl Fn(&Path) -> bool) -> Vec<String> {
    let mut list = live();
    let (picked, kept): (Vec<Live>, Vec<Live>) = list.drain(..).partition(|l| pick(&l.target));
    *list = kept;
    salvage_each(picked)
}

fn salvage_each(picked: Vec<Live>) -> Vec<String> {
    let mut said = Vec::new();
    for l in picked {
        match salvage(&l) {
            Ok(Some(rows)) => said.push(format!("wrote {rows} row(s) to {}", l.target.display())),
            Ok(None) => {}
            Err(e) => said.push(format!("{}: {e}", l.target.display())),
        }
    }
    said
}

/// A file written row by row under [`temporary_name`] and renamed to its
/// target at [`Self::commit`] (module docs). Dropped without a commit, the
/// temporary file is removed and the target left as it was.
pub struct RowFile {
    id: u64,
    target: PathBuf,
    partial: PathBuf,
    writer: Option<std::io::BufWriter<std::fs::File>>,
    layout: Layout,
    rows: usize,
}

impl std::fmt::Debug for RowFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowFile")
            .field("target", &self.target)
            .field("rows", &self.rows)
            .finish()
    }
}

impl RowFile {
    /// A file whose first lines are `header` (ending in a newline, written
    /// and flushed now), then rows.
    ///
    /// # Errors
    /// The I/O error creating or writing the temporary file.
    pub fn create(path: &Path, header: &str) -> std::io::Result<Self> {
        let head_lines = header.matches('\n').count();
        let mut f = Self::open(path, Layout::Rows { head_lines })?;
        if let Some(w) = f.writer.as_mut() {
            w.write_all(header.as_bytes())?;
            w.flush()?;
        }
        Ok(f)
    }

    /// A file of rows after a prelude that depends on how many rows there
    /// are (a BVH's `Frames: N`): `prelude(rows)` is written before the
    /// rows at the commit.
    ///
    /// # Errors
    /// The I/O error creating the temporary file.
    pub fn counted(
        path: &Path,
        prelude: impl Fn(usize) -> String + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        Self::open(path, Layout::Counted(Arc::new(prelude)))
    }

    fn open(path: &Path, layout: Layout) -> std::io::Result<Self> {
        let partial = temporary_name(path);
        let file = std::fs::File::create(&partial)?;
        let id = register(Live {
            id: 0,
            target: path.to_path_buf(),
            partial: partial.clone(),
            layout: layout.clone(),
        });
        Ok(Self {
            id,
            target: path.to_path_buf(),
            partial,
            writer: Some(std::io::BufWriter::new(file)),
            layout,
            rows: 0,
        })
    }

    /// The target's path.
    pub fn path(&self) -> &Path {
        &self.target
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Appends one row (`line` without its newline) and flushes it.
    ///
    /// # Errors
    /// The I/O error; a committed file.
    pub fn push(&mut self, line: &str) -> std::io::Result<()> {
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the file was already finished"))?;
        let mut row = String::with_capacity(line.len() + 1);
        row.push_str(line);
        row.push('\n');
        w.write_all(row.as_bytes())?;
        w.flush()?;
        self.rows += 1;
        Ok(())
    }

    /// Gives the rows the target's name (replacing a previous file).
    /// Later calls do nothing.
    ///
    /// # Errors
    /// The I/O error (the temporary file is removed, the target left as
    /// it was).
    pub fn commit(&mut self) -> std::io::Result<()> {
        let Some(mut w) = self.writer.take() else {
            return Ok(());
        };
        let mut list = live();
        list.retain(|l| l.id != self.id);
        let result = (|| {
            w.flush()?;
            w.get_ref().sync_all()?;
            drop(w);
            match &self.layout {
                Layout::Counted(prelude) => {
                    let rows = std::fs::read(&self.partial)?;
                    write_directly(&self.target, &[prelude(self.rows).as_bytes(), &rows])?;
                    std::fs::remove_file(&self.partial)
                }
                _ => std::fs::rename(&self.partial, &self.target),
            }
        })();
        drop(list);
        if result.is_err() {
            let _ = std::fs::remove_file(&self.partial);
        }
        result
    }

    /// Removes the temporary file; the target stays as it was.
    pub fn abandon(&mut self) {
        if self.writer.take().is_some() {
            unregister(self.id);
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

impl Drop for RowFile {
    fn drop(&mut self) {
        self.abandon();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("vision_output_{}_{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn output_paths_are_checked_before_any_work() {
        let dir = scratch("check");
        let m = check_output_file("--out-csv", &dir)
            .unwrap_err()
            .to_string();
        assert!(m.contains("--out-csv") && m.contains("folder"), "{m}");
        let deep = dir.join("new/sub/est.csv");
        check_output_file("--out-csv", &deep).unwrap();
        assert!(dir.join("new/sub").is_dir(), "the folder is created");
        assert!(!temporary_name(&deep).exists(), "nothing left behind");
        std::fs::write(dir.join("file"), "x").unwrap();
        let m = check_output_file("--out-bvh", &dir.join("file/e.bvh"))
            .unwrap_err()
            .to_string();
        assert!(m.contains("--out-bvh") && m.contains("not a folder"), "{m}");
        assert!(check_output_file("--out-csv", Path::new("")).is_err());
        assert!(check_output_file("--out-csv", &dir.join("..")).is_err());
        let a = dir.join("x.csv");
        let b = dir.join("new/../x.csv");
        check_distinct(&[("--out-csv", &a), ("--out-bvh", &dir.join("x.bvh"))]).unwrap();
        let m = check_distinct(&[("--out-csv", &a), ("--out-bvh", &b)])
            .unwrap_err()
            .to_string();
        assert!(m.contains("--out-csv") && m.contains("--out-bvh"), "{m}");
    }

    #[test]
    fn rows_take_the_name_at_the_commit_or_salvage() {
        let dir = scratch("rows");
        let csv = dir.join("a.csv");
        std::fs::write(&csv, "previous\n").unwrap();
        let mut f = RowFile::create(&csv, "h1,h2\n").unwrap();
        f.push("1,2").unwrap();
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "previous\n");
        f.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "h1,h2\n1,2\n");
        assert!(!temporary_name(&csv).exists());
        // Dropped unfinished: the previous file stays.
        let mut f = RowFile::create(&csv, "h\n").unwrap();
        f.push("9").unwrap();
        drop(f);
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "h1,h2\n1,2\n");
        // Salvaged: the complete rows (a half-written row left out) under
        // the real name; a counted file gets its prelude.
        let bvh = dir.join("b.bvh");
        let mut c = RowFile::counted(&bvh, |n| format!("Frames: {n}\n")).unwrap();
        c.push("0.0 1.0").unwrap();
        c.push("2.0 3.0").unwrap();
        let mut r = RowFile::create(&csv, "h\n").unwrap();
        r.push("5").unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(temporary_name(&csv))
            .unwrap()
            .write_all(b"6,half")
            .unwrap();
        let empty = RowFile::create(&dir.join("none.csv"), "h\n").unwrap();
        let said = salvage_where(|p| p.starts_with(&dir));
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "h\n5\n");
        assert_eq!(
            std::fs::read_to_string(&bvh).unwrap(),
            "Frames: 2\n0.0 1.0\n2.0 3.0\n"
        );
        assert!(!dir.join("none.csv").exists());
        assert!(!temporary_name(&csv).exists());
        drop((c, r, empty));
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "h\n5\n");
    }
}
