//! The session's files: `session.mp4` (H.264 through `ffmpeg`),
//! `truth.csv`, `truth.bvh`, `camera.toml` and `meta.json`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use vision::{CameraFile, Result, Sleeves, VisionError};

use crate::options::FootageOptions;
use crate::session::SessionRenderer;
use crate::truth::{PhaseSpan, TRUTH_JOINTS, truth_csv_header};

impl SessionRenderer {
    /// The metadata (JSON): subject, phases, camera, seed, joint mapping.
    pub fn meta_json(&self) -> String {
        let o = self.options();
        let b = &o.setup.build;
        let mut s = String::from("{\n");
        let _ = writeln!(s, "  \"generator\": \"posecloud footage\",");
        if let Some(c) = &o.command {
            let _ = writeln!(s, "  \"command\": {},", json_str(c));
        }
        let _ = writeln!(s, "  \"preset\": \"{}\",", o.preset.name());
        let _ = writeln!(s, "  \"seed\": {},", o.seed);
        let _ = writeln!(s, "  \"width\": {},\n  \"height\": {},", o.width, o.height);
        let _ = writeln!(s, "  \"fps\": {},\n  \"frames\": {},", o.fps, self.len());
        let _ = writeln!(s, "  \"leave\": {},", o.leave);
        if let Some(m) = &o.moves_clip {
            let name = m
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let _ = writeln!(
                s,
                "  \"moves\": {{\"clip\": {}, \"start_s\": {}, \"yaw_deg\": {}, \"max_s\": {}}},",
                json_str(&name),
                o.moves_start,
                o.moves_yaw_deg,
                o.timing.moves
            );
        }
        let _ = writeln!(s, "  \"subject_height\": {:.3},", b.height);
        let _ = writeln!(
            s,
            "  \"build\": {{\"torso\": {}, \"neck\": {}, \"head\": {}, \"arms\": {}, \"hands\": {}, \"legs\": {}, \"shoulders\": {}, \"hips\": {}, \"girth\": {}, \"belly\": {}}},",
            b.torso, b.neck, b.head, b.arms, b.hands, b.legs, b.shoulders, b.hips, b.girth, b.belly
        );
        let c = &o.setup.clothing;
        let _ = writeln!(
            s,
            "  \"clothing\": {{\"sleeves\": \"{}\", \"hair\": \"{:?}\", \"shirt\": {:?}, \"stripes\": {}, \"trousers\": {:?}, \"skin\": {:?}}},",
            match c.sleeves {
                Sleeves::Short => "short",
                Sleeves::Long => "long",
            },
            c.hair_style,
            c.shirt,
            c.stripes.map_or("null".to_string(), |v| format!("{v:?}")),
            c.trousers,
            c.skin
        );
        let cam = &o.setup.camera;
        let _ = writeln!(
            s,
            "  \"camera\": {{\"hfov_deg\": {}, \"height\": {}, \"tilt_deg\": {}, \"x\": {}, \"file\": \"{}\"}},",
            cam.hfov_deg,
            cam.height,
            cam.tilt_deg,
            cam.x,
            o.file("camera", "toml")
        );
        let st = &o.setup.staging;
        let _ = writeln!(
            s,
            "  \"spot\": {{\"x\": {}, \"z\": {}, \"distance\": {}, \"enter_from\": \"{}\"}},",
            st.x,
            -st.distance,
            st.distance,
            if st.enter_from_left { "left" } else { "right" }
        );
        s.push_str("  \"phases\": [\n");
        let n = self.phases().len();
        for (k, p) in self.phases().iter().enumerate() {
            let _ = writeln!(
                s,
                "    {{\"name\": \"{}\", \"start\": {}, \"end\": {}, \"start_s\": {:.3}, \"end_s\": {:.3}}}{}",
                p.phase.name(),
                p.start,
                p.end,
                p.start as f64 / o.fps,
                p.end as f64 / o.fps,
                if k + 1 < n { "," } else { "" }
            );
        }
        s.push_str("  ],\n  \"phase_end_is_exclusive\": true,\n  \"joints\": {");
        for (k, (col, joint)) in TRUTH_JOINTS.iter().enumerate() {
            let _ = write!(
                s,
                "{}\"{col}\": \"{joint}\"",
                if k == 0 { "" } else { ", " }
            );
        }
        s.push_str(
            "},\n  \"world\": \"BVH frame, metres, y up, floor y = 0, camera looks along -z\"\n}\n",
        );
        s
    }
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What [`write_session`] wrote.
#[derive(Clone, Debug)]
pub struct WriteReport {
    pub video: PathBuf,
    pub truth_csv: PathBuf,
    pub truth_bvh: PathBuf,
    pub camera: PathBuf,
    pub meta: PathBuf,
    pub frames: usize,
    pub phases: Vec<PhaseSpan>,
    /// Mean seconds to render a frame (without encoding).
    pub render_seconds_per_frame: f64,
}

/// Renders the session and writes `session.mp4` (H.264 through `ffmpeg`:
/// raw RGB on its stdin, `libx264 -crf 23 -pix_fmt yuv420p`),
/// `truth.csv`, `truth.bvh`, `camera.toml` and `meta.json` into `out_dir`
/// (names get `_<tag>` when [`FootageOptions::tag`] is set).
///
/// # Errors
/// As [`SessionRenderer::new`]; [`VisionError::Io`] for files;
/// [`VisionError::Program`] when `ffmpeg` cannot start or fails.
pub fn write_session(options: &FootageOptions, out_dir: impl AsRef<Path>) -> Result<WriteReport> {
    let out_dir = out_dir.as_ref();
    std::fs::create_dir_all(out_dir).map_err(|e| VisionError::io(out_dir, e))?;
    let session = SessionRenderer::new(options)?;
    let path = |stem: &str, ext: &str| out_dir.join(options.file(stem, ext));
    let video = path("session", "mp4");
    let program = options.ffmpeg.display().to_string();
    let mut child = Command::new(&options.ffmpeg)
        .args([
            "-y",
            "-hide_banner",
            "-loglevel",
            "error",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
        ])
        .args(["-s", &format!("{}x{}", options.width, options.height)])
        .args(["-r", &format!("{}", options.fps), "-i", "-"])
        .args(["-c:v", "libx264", "-crf", "23", "-pix_fmt", "yuv420p"])
        .args(["-movflags", "+faststart"])
        .arg(&video)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| VisionError::Program {
            program: program.clone(),
            message: format!("cannot start: {e}"),
        })?;
    let mut csv = truth_csv_header();
    csv.push('\n');
    let mut stdin = child.stdin.take().ok_or_else(|| VisionError::Program {
        program: program.clone(),
        message: "no stdin".into(),
    })?;
    let mut render_time = 0.0;
    let mut write_error = None;
    for i in 0..session.len() {
        let t0 = std::time::Instant::now();
        let f = session.render(i)?;
        render_time += t0.elapsed().as_secs_f64();
        csv.push_str(&f.truth.csv_line());
        csv.push('\n');
        if let Err(e) = stdin.write_all(&f.frame.rgb) {
            write_error = Some(e);
            break;
        }
    }
    drop(stdin);
    let output = child.wait_with_output().map_err(|e| VisionError::Program {
        program: program.clone(),
        message: e.to_string(),
    })?;
    if !output.status.success() || write_error.is_some() {
        return Err(VisionError::Program {
            program,
            message: format!(
                "encoding {} failed ({}): {}",
                video.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    let truth_csv = path("truth", "csv");
    std::fs::write(&truth_csv, csv).map_err(|e| VisionError::io(&truth_csv, e))?;
    let truth_bvh = path("truth", "bvh");
    session.bvh()?.save(&truth_bvh)?;
    let camera = path("camera", "toml");
    CameraFile::from_camera(session.camera()).save(&camera)?;
    let meta = path("meta", "json");
    std::fs::write(&meta, session.meta_json()).map_err(|e| VisionError::io(&meta, e))?;
    Ok(WriteReport {
        video,
        truth_csv,
        truth_bvh,
        camera,
        meta,
        frames: session.len(),
        phases: session.phases().to_vec(),
        render_seconds_per_frame: render_time / session.len().max(1) as f64,
    })
}
