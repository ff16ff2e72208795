//! A session's outputs, written as they are tracked and never half-way:
//! the CSV of joint positions grows row by row (flushed after each) under a
//! temporary name beside the target and takes the target's name when the
//! recording ends ([`Recorder::finish`], also on drop); the BVH of the
//! whole motion is written to a temporary file and renamed. An error or
//! Ctrl-C in the middle of a run therefore leaves either the previous file
//! or the complete new one, never a truncated mix.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use skeleton::{Bvh, PoseBatch};

use crate::session::{Result, flag_path, input};

/// Writes `bytes` to `path` atomically: a temporary file in the same folder,
/// synced, then renamed over `path`.
///
/// # Errors
/// The I/O error (the temporary file is removed).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    skeleton::bvh::write_atomically(path, bytes)
}

/// `dir/.name.partial`: where a file is written before it is renamed.
pub fn temporary_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.partial"))
}

struct CsvOut {
    target: PathBuf,
    partial: PathBuf,
    writer: std::io::BufWriter<std::fs::File>,
}

/// Records tracked poses as CSV rows (`frame`, then `<joint>_x,_y,_z` for
/// every joint that is not an end site, world positions in the body's
/// units) and as a BVH clip of the body's hierarchy (module docs).
pub struct Recorder {
    csv: Option<CsvOut>,
    bvh: Option<PathBuf>,
    body: Bvh,
    joints: Vec<usize>,
    poses: PoseBatch,
    frames: Vec<usize>,
    finished: bool,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("csv", &self.csv.as_ref().map(|c| &c.target))
            .field("bvh", &self.bvh)
            .field("rows", &self.frames.len())
            .finish()
    }
}

impl Recorder {
    /// A recording of poses of `body` (its skeleton and channels) at
    /// `frame_time` seconds per frame into `csv` and/or `bvh`. The CSV's
    /// header is written now (to the temporary name).
    ///
    /// # Errors
    /// An unwritable CSV location, naming `--out-csv`; a non-positive
    /// frame time.
    pub fn create(
        csv: Option<&Path>,
        bvh: Option<&Path>,
        body: &Bvh,
        frame_time: f64,
    ) -> Result<Self> {
        if !(frame_time.is_finite() && frame_time > 0.0) {
            return Err(input("frame time", format!("{frame_time} must be > 0")));
        }
        let joints: Vec<usize> = (0..body.skeleton.len())
            .filter(|&j| !body.is_end_site(j))
            .collect();
        let csv = match csv {
            None => None,
            Some(path) => {
                let what = flag_path("--out-csv", path);
                let partial = temporary_name(path);
                let file = std::fs::File::create(&partial).map_err(|e| input(&what, e))?;
                let mut writer = std::io::BufWriter::new(file);
                let mut header = String::from("frame");
                for &j in &joints {
                    let n = &body.skeleton.joint(j).name;
                    header += &format!(",{n}_x,{n}_y,{n}_z");
                }
                writeln!(writer, "{header}")
                    .and_then(|()| writer.flush())
                    .map_err(|e| input(&what, e))?;
                Some(CsvOut {
                    target: path.to_path_buf(),
                    partial,
                    writer,
                })
            }
        };
        let poses =
            PoseBatch::from_vec(body.skeleton.dof(), Vec::new()).map_err(|e| input("body", e))?;
        Ok(Self {
            csv,
            bvh: bvh.map(Path::to_path_buf),
            body: Bvh {
                frame_time,
                frames: poses.clone(),
                ..body.clone()
            },
            joints,
            poses,
            frames: Vec::new(),
            finished: false,
        })
    }

    /// Appends source frame `frame`'s pose (a full pose of the body); the
    /// CSV row is flushed at once.
    ///
    /// # Errors
    /// A pose of the wrong length or whose forward kinematics fails, or a
    /// write error, naming the output.
    pub fn record(&mut self, frame: usize, pose: &[f64]) -> Result<()> {
        let world = self
            .body
            .skeleton
            .forward_kinematics(pose)
            .map_err(|e| input(format!("frame {frame}"), format!("the estimate: {e}")))?;
        if let Some(csv) = &mut self.csv {
            let mut row = frame.to_string();
            for &j in &self.joints {
                let t = world[j].translation.vector;
                row += &format!(",{:.6},{:.6},{:.6}", t.x, t.y, t.z);
            }
            writeln!(csv.writer, "{row}")
                .and_then(|()| csv.writer.flush())
                .map_err(|e| input(flag_path("--out-csv", &csv.target), e))?;
        }
        self.poses
            .push(pose)
            .map_err(|e| input(format!("frame {frame}"), e))?;
        self.frames.push(frame);
        Ok(())
    }

    /// Rows recorded so far.
    pub fn rows(&self) -> usize {
        self.frames.len()
    }

    /// The source frames recorded, in order.
    pub fn frames(&self) -> &[usize] {
        &self.frames
    }

    /// The recorded poses.
    pub fn poses(&self) -> &PoseBatch {
        &self.poses
    }

    /// Drops the recording without touching the targets: the temporary
    /// CSV is removed (a run that never tracked a frame leaves the previous
    /// outputs as they were).
    pub fn abandon(mut self) {
        self.finished = true;
        if let Some(csv) = self.csv.take() {
            drop(csv.writer);
            let _ = std::fs::remove_file(&csv.partial);
        }
    }

    /// Ends the recording: the CSV takes its name, the BVH is written
    /// (atomically). Later calls do nothing.
    ///
    /// # Errors
    /// A write or rename error naming the output.
    pub fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if let Some(csv) = &mut self.csv {
            let what = flag_path("--out-csv", &csv.target);
            csv.writer
                .flush()
                .and_then(|()| csv.writer.get_ref().sync_all())
                .and_then(|()| std::fs::rename(&csv.partial, &csv.target))
                .map_err(|e| input(what, e))?;
        }
        if let Some(path) = &self.bvh {
            let what = flag_path("--out-bvh", path);
            let clip = Bvh {
                frames: self.poses.clone(),
                ..self.body.clone()
            };
            let text = clip.to_bvh_string().map_err(|e| input(&what, e))?;
            write_atomically(path, text.as_bytes()).map_err(|e| input(what, e))?;
        }
        Ok(())
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if !self.finished
            && let Err(e) = self.finish()
        {
            eprintln!("recording: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("track_record_{}_{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn rows_are_flushed_as_recorded_and_files_appear_whole_at_the_end() {
        let dir = scratch("rows");
        let body = crate::defaults::default_body(1.7).unwrap();
        let (csv, bvh) = (dir.join("est.csv"), dir.join("est.bvh"));
        std::fs::write(&csv, "the previous run\n").unwrap();
        let mut rec = Recorder::create(Some(&csv), Some(&bvh), &body, 1.0 / 30.0).unwrap();
        let pose = body.frames.pose(0).to_vec();
        rec.record(7, &pose).unwrap();
        rec.record(9, &pose).unwrap();
        // While recording: the previous file is intact, the rows are on
        // disk under the temporary name, no BVH yet.
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "the previous run\n");
        let partial = std::fs::read_to_string(temporary_name(&csv)).unwrap();
        assert_eq!(partial.lines().count(), 3);
        assert!(partial.lines().nth(2).unwrap().starts_with("9,"));
        assert!(!bvh.exists());
        drop(rec);
        let text = std::fs::read_to_string(&csv).unwrap();
        assert!(text.starts_with("frame,Hips_x,Hips_y,Hips_z"));
        assert_eq!(text.lines().count(), 3);
        assert!(!temporary_name(&csv).exists());
        let back = Bvh::load(&bvh).unwrap();
        assert_eq!(back.frames.len(), 2);
        assert!((back.frame_time - 1.0 / 30.0).abs() < 1e-6);
        // A bad pose is an error naming the frame, not a panic.
        let mut rec = Recorder::create(Some(&csv), None, &body, 0.1).unwrap();
        let m = rec.record(3, &pose[1..]).unwrap_err().to_string();
        assert!(m.contains("frame 3"), "{m}");
        // An unwritable location names the flag.
        let m = Recorder::create(Some(&dir.join("no/such/dir/e.csv")), None, &body, 0.1)
            .unwrap_err()
            .to_string();
        assert!(m.contains("--out-csv"), "{m}");
    }
}
