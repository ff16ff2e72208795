//! What leaves a scene window: a screenshot (PNG), the current pose, or
//! the whole run from Record to Stop, as BVH with the estimate's joint
//! positions as CSV ([`track::Recorder`]). Every file is written whole
//! under a temporary name and renamed (an interrupted export never leaves
//! part of a file); they go to `exports/posecloud-<scene>-<UTC time>.*`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use bevy::prelude::*;
use bevy_egui::egui;
use skeleton::Skeleton;
use skeleton::{Bvh, default_channels};
use track::Recorder;

use super::scene_common::SceneClock;

/// The folder exports go to (relative to the working folder).
pub const EXPORT_DIR: &str = "exports";

/// A scene's current estimate as a pose of its skeleton.
#[derive(Clone, Copy, Debug)]
pub struct PoseNow<'a> {
    pub skeleton: &'a Skeleton,
    pub pose: &'a [f64],
    /// Increases with every new estimate (a recording takes each once).
    pub frame: usize,
    /// Seconds per recorded frame in the BVH.
    pub frame_time: f64,
}

/// The exports of a window: the recording under way and the last message.
#[derive(Resource, Default)]
pub struct Exports {
    recording: Option<Recording>,
    /// What the last export wrote, or why it failed.
    pub message: Option<String>,
}

struct Recording {
    recorder: Recorder,
    bvh: PathBuf,
    last_frame: Option<usize>,
}

/// `exports/posecloud-<scene>-<UTC time>` (no extension).
pub fn export_stem(scene: &str) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let stamp = crate::scenes::track::model::recording_stem(now);
    let stamp = stamp.trim_start_matches("posecloud-");
    // A scene label may name a file ("arm6.urdf", a BVH path).
    let scene: String = scene
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    unique_stem(&Path::new(EXPORT_DIR).join(format!("posecloud-{scene}-{stamp}")))
}

/// `stem`, else `stem-2`, `stem-3`, …: the first that no earlier call of
/// this process returned and that no `.csv`, `.bvh` or `.png` file has
/// (the stamps are to the second: two exports in one second must not
/// overwrite each other; a screenshot is written a frame later, so the
/// names handed out are remembered too).
pub fn unique_stem(stem: &Path) -> PathBuf {
    static GIVEN: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = stem
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let taken = |c: &Path| {
        given.iter().any(|g| g == c)
            || ["csv", "bvh", "png"]
                .iter()
                .any(|e| c.with_extension(e).exists())
    };
    let mut candidate = stem.to_path_buf();
    let mut k = 1;
    while taken(&candidate) {
        k += 1;
        candidate = stem.with_file_name(format!("{name}-{k}"));
    }
    given.push(candidate.clone());
    candidate
}

/// The skeleton as a BVH body (its default channels), for a recorder.
fn body_of(skeleton: &Skeleton, frame_time: f64) -> Result<Bvh> {
    Ok(Bvh {
        skeleton: skeleton.clone(),
        frame_time,
        frames: skeleton::PoseBatch::from_vec(skeleton.dof(), Vec::new())?,
        channels: default_channels(skeleton).context("this skeleton cannot be written as BVH")?,
    })
}

/// Creates the folder `path` goes into.
fn create_parent(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}

/// A recorder of `body` at `frame_time` into `stem`.{bvh,csv} (its folder
/// created), and the BVH's path.
fn open_recorder(stem: &Path, body: &Bvh, frame_time: f64) -> Result<(Recorder, PathBuf)> {
    create_parent(stem)?;
    let (bvh, csv) = (stem.with_extension("bvh"), stem.with_extension("csv"));
    let recorder = Recorder::create(Some(&csv), Some(&bvh), body, frame_time)?;
    Ok((recorder, bvh))
}

/// Writes `pose` of `body` (its skeleton and channels) as a one-frame BVH
/// and a one-row CSV beside it at `stem`.{bvh,csv}; returns the BVH's path.
///
/// # Errors
/// A bad pose, an unwritable folder.
pub fn save_pose_of(stem: &Path, body: &Bvh, frame_time: f64, pose: &[f64]) -> Result<PathBuf> {
    let (mut rec, bvh) = open_recorder(stem, body, frame_time)?;
    rec.record(0, pose)?;
    rec.finish()?;
    Ok(bvh)
}

/// [`save_pose_of`] for a skeleton not read from a BVH file (its default
/// channels).
///
/// # Errors
/// A skeleton BVH cannot describe, a bad pose, an unwritable folder.
pub fn save_pose(stem: &Path, p: PoseNow) -> Result<PathBuf> {
    save_pose_of(
        stem,
        &body_of(p.skeleton, p.frame_time)?,
        p.frame_time,
        p.pose,
    )
}

/// Writes named points (metres) as a CSV (`point,x,y,z`, one row each) at
/// `stem`.csv; returns its path. For estimates that are points, not a
/// skeleton pose (the walker's legs).
///
/// # Errors
/// An unwritable folder.
pub fn save_points(stem: &Path, points: &[(String, [f32; 3])]) -> Result<PathBuf> {
    create_parent(stem)?;
    let path = stem.with_extension("csv");
    let mut text = String::from("point,x,y,z\n");
    for (name, [x, y, z]) in points {
        text += &format!("{name},{x:.6},{y:.6},{z:.6}\n");
    }
    skeleton::write_atomically(&path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Writes a captured window as PNG to `path` (its folder created), whole
/// or not at all.
///
/// # Errors
/// An image that is not 8-bit colour, an unwritable folder.
pub fn save_screenshot(image: &Image, path: &Path) -> Result<()> {
    create_parent(path)?;
    let rgb = image
        .clone()
        .try_into_dynamic()
        .map_err(|e| anyhow::anyhow!("screenshot {}: {e}", path.display()))?
        .to_rgb8();
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, rgb.width(), rgb.height());
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(rgb.as_raw())?;
    }
    skeleton::write_atomically(path, &bytes).with_context(|| format!("writing {}", path.display()))
}

impl Exports {
    /// Whether Record is on.
    pub fn recording(&self) -> bool {
        self.recording.is_some()
    }

    /// Starts recording `p`'s skeleton to `stem`.{bvh,csv}.
    ///
    /// # Errors
    /// As [`save_pose`].
    pub fn start(&mut self, stem: &Path, p: PoseNow) -> Result<()> {
        let body = body_of(p.skeleton, p.frame_time)?;
        let (recorder, bvh) = open_recorder(stem, &body, p.frame_time)?;
        self.recording = Some(Recording {
            recorder,
            bvh,
            last_frame: None,
        });
        self.record(p)
    }

    /// Appends `p` if it is a new frame (while recording).
    ///
    /// # Errors
    /// A pose that does not fit the recorded skeleton, a write error.
    pub fn record(&mut self, p: PoseNow) -> Result<()> {
        let Some(r) = self.recording.as_mut() else {
            return Ok(());
        };
        if r.last_frame == Some(p.frame) {
            return Ok(());
        }
        r.last_frame = Some(p.frame);
        let row = r.recorder.rows();
        r.recorder.record(row, p.pose)?;
        Ok(())
    }

    /// Ends the recording: the files take their names. Returns what was
    /// written.
    ///
    /// # Errors
    /// A write or rename error.
    pub fn stop(&mut self) -> Result<Option<String>> {
        let Some(mut r) = self.recording.take() else {
            return Ok(None);
        };
        r.recorder.finish()?;
        Ok(Some(format!(
            "recorded {} frames to {} and .csv",
            r.recorder.rows(),
            r.bvh.display()
        )))
    }

    fn report(&mut self, what: &str, result: Result<Option<String>>) {
        let message = match result {
            Ok(Some(m)) => m,
            Ok(None) => return,
            Err(e) => {
                let m = format!("{what}: {e:#}");
                eprintln!("posecloud: {m}");
                m
            }
        };
        self.message = Some(message);
    }

    /// The Export section: screenshot, the current pose, Record/Stop; and,
    /// while recording, this frame's pose. `pose` is `None` where the scene
    /// has no skeleton pose (its screenshot still works).
    pub fn section(
        &mut self,
        ui: &mut egui::Ui,
        clock: &mut SceneClock,
        scene: &str,
        pose: Option<PoseNow>,
    ) {
        self.section_with(ui, clock, scene, pose, |_| {});
    }

    /// [`Self::section`] with the scene's own export buttons (`extra`) in
    /// the same row.
    pub fn section_with(
        &mut self,
        ui: &mut egui::Ui,
        clock: &mut SceneClock,
        scene: &str,
        pose: Option<PoseNow>,
        extra: impl FnOnce(&mut egui::Ui),
    ) {
        if let Some(p) = pose {
            let recorded = self.record(p).map(|()| None);
            self.report("record", recorded);
        }
        egui::CollapsingHeader::new("Export")
            .default_open(false)
            .show(ui, |ui| {
                ui.horizontal_wrapped(|ui| {
                    if ui.button("📷 screenshot").clicked() {
                        let path = export_stem(scene).with_extension("png");
                        self.message = Some(format!("screenshot to {}", path.display()));
                        clock.request_screenshot(path);
                    }
                    if let Some(p) = pose {
                        if ui.button("save pose (BVH, CSV)").clicked() {
                            let saved = save_pose(&export_stem(scene), p)
                                .map(|b| Some(format!("pose saved to {}", b.display())));
                            self.report("save pose", saved);
                        }
                        let label = if self.recording() {
                            "■ stop"
                        } else {
                            "● record"
                        };
                        if ui.button(label).clicked() {
                            let done = if self.recording() {
                                self.stop()
                            } else {
                                let stem = export_stem(&format!("{scene}-run"));
                                self.start(&stem, p)
                                    .map(|()| Some(format!("recording to {}", stem.display())))
                            };
                            self.report("record", done);
                        }
                    }
                    extra(ui);
                });
                ui.small(format!("into {EXPORT_DIR}/"));
                if let Some(m) = &self.message {
                    ui.small(m.as_str());
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm() -> Skeleton {
        skeleton::presets::human()
    }

    /// Every joint of `sk` at `pose` is where the joint of that name is in
    /// `back`'s frame `frame` (the file may order joints otherwise).
    fn assert_same_pose(sk: &Skeleton, pose: &[f64], back: &Bvh, frame: usize) {
        let want = sk.forward_kinematics(pose).unwrap();
        let got = back.forward_kinematics(frame).unwrap();
        for (j, a) in want.iter().enumerate() {
            let name = &sk.joint(j).name;
            let Some(k) = (0..back.skeleton.len()).find(|&k| &back.skeleton.joint(k).name == name)
            else {
                // A leaf is written as an unnamed End Site.
                assert!(sk.children(j).is_empty(), "{name} missing");
                continue;
            };
            let d = (a.translation.vector - got[k].translation.vector).norm();
            assert!(d < 1e-5, "{name}: {d} m off");
        }
    }

    /// Issue 32 item 6: two exports in the same second get two names.
    #[test]
    fn exports_in_one_second_do_not_overwrite_each_other() {
        let dir = crate::testing::scratch_dir("export-unique");
        let stem = dir.join("posecloud-arm-20260101-000000");
        let a = unique_stem(&stem);
        std::fs::write(a.with_extension("csv"), "a").unwrap();
        let b = unique_stem(&stem);
        let c = unique_stem(&stem);
        assert_eq!(a, stem);
        assert!(a != b && b != c && a != c, "{a:?} {b:?} {c:?}");
        assert!(b.to_string_lossy().ends_with("-2"), "{b:?}");
    }

    #[test]
    fn a_saved_pose_reads_back_as_the_same_pose() {
        let dir = crate::testing::scratch_path("export");
        let sk = arm();
        let mut pose = sk.rest_pose();
        for (k, q) in pose.iter_mut().enumerate() {
            *q += 0.1 * (k as f64 + 1.0).sin();
        }
        // A pose the playground can show (its estimate keeps the limits).
        sk.clamp_to_limits(&mut pose);
        let p = PoseNow {
            skeleton: &sk,
            pose: &pose,
            frame: 0,
            frame_time: 1.0 / 30.0,
        };
        let bvh = save_pose(&dir.join("pose"), p).unwrap();
        let back = Bvh::load(&bvh).unwrap();
        assert_eq!(back.frames.len(), 1);
        assert_same_pose(&sk, &pose, &back, 0);
        assert!(dir.join("pose.csv").is_file());
        // Nothing is left under a temporary name.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn points_are_written_one_row_each() {
        let dir = crate::testing::scratch_path("points");
        let path = save_points(
            &dir.join("legs"),
            &[
                ("hip".into(), [0.0, 0.9, 0.1]),
                ("knee".into(), [0.1, 0.5, -0.25]),
            ],
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "point,x,y,z\nhip,0.000000,0.900000,0.100000\nknee,0.100000,0.500000,-0.250000\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_screenshot_is_written_whole_as_png() {
        use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
        let dir = crate::testing::scratch_path("shot");
        let image = Image::new_fill(
            Extent3d {
                width: 4,
                height: 3,
                depth_or_array_layers: 1,
            },
            TextureDimension::D2,
            &[200, 100, 50, 255],
            TextureFormat::Rgba8UnormSrgb,
            default(),
        );
        let path = dir.join("sub").join("shot.png");
        save_screenshot(&image, &path).unwrap();
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (4, 3));
        assert_eq!(&buf[..3], &[200, 100, 50]);
        assert!(!dir.join("sub").join(".shot.png.partial").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_recording_takes_each_frame_once_and_reads_back() {
        let dir = crate::testing::scratch_path("record");
        let sk = arm();
        let mut exports = Exports::default();
        let poses: Vec<Vec<f64>> = (0..4)
            .map(|f| {
                let mut q = sk.rest_pose();
                let last = q.len() - 1;
                q[last] += 0.2 * f as f64;
                q
            })
            .collect();
        let now = |f: usize| PoseNow {
            skeleton: &sk,
            pose: &poses[f],
            frame: f,
            frame_time: 0.05,
        };
        exports.start(&dir.join("run"), now(0)).unwrap();
        for f in [0, 1, 1, 2, 3, 3] {
            exports.record(now(f)).unwrap();
        }
        let message = exports.stop().unwrap().unwrap();
        assert!(message.contains("4 frames"), "{message}");
        let back = Bvh::load(dir.join("run.bvh")).unwrap();
        assert_eq!(back.frames.len(), 4);
        for (f, pose) in poses.iter().enumerate() {
            assert_same_pose(&sk, pose, &back, f);
        }
        assert!(!exports.recording());
        assert_eq!(exports.stop().unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
