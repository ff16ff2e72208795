//! The wgpu back end against the CPU reference: counts, F and
//! log-likelihoods on hand-built scenes and random human poses, RTPF Eq. 1
//! around the observed pose, chunking, batches beyond the old atlas limit,
//! overlapped submit/collect, the readback timeout, errors. Both raster
//! paths ([`RasterPath`]): the compute raster (the default, every test) and
//! the render pass (the scenes of [`assert_same_as_cpu`], chunking).
//!
//! Agreement with the CPU is one test with two thresholds ([`agreement`]):
//! identical on a software adapter (lavapipe in CI, deterministic), and on
//! any other adapter at most [`HARDWARE_PIXEL_FRACTION`] of the label
//! pixels differ and F is within [`HARDWARE_F_EPSILON`] — a hardware
//! rasteriser may flip a pixel whose centre grazes a silhouette.
//!
//! Every test here but the check of those thresholds needs a GPU adapter,
//! so each is `#[ignore]`d: a plain
//! `cargo test` reports them as ignored rather than passing them silently.
//! Run them with `cargo test -p gpu -- --include-ignored`; a missing adapter
//! is then a failure (always: there is no early return). CI runs them on
//! Mesa's lavapipe with `POSECLOUD_REQUIRE_GPU=1`.

use std::time::Duration;

use gpu::{GpuError, GpuLikelihood, GpuSettings, HeadlessGpu, RasterPath};
use labels::{
    CLASSES, Camera, CpuLikelihood, Evaluation, LabelError, NonOverlap, Observation,
    synth::{self, LabelNoise, perturbed_poses, render_label_image, render_observation},
};
use skeleton::nalgebra::{Point3, Vector3};
use skeleton::{BodyPart, JointKind, Skeleton, SkeletonBuilder, presets};
use smc::Likelihood;

const W: usize = 160;
const H: usize = 120;

/// The shared headless device ([`headless::for_tests`]). Panics (failing
/// the test) when there is no adapter: these tests only run when asked for
/// with `--include-ignored`.
fn gpu() -> HeadlessGpu {
    let (device, queue, info) = headless::for_tests("--include-ignored");
    HeadlessGpu {
        device,
        queue,
        info,
    }
}

/// A device of its own (for the test that destroys it).
fn fresh_gpu() -> HeadlessGpu {
    headless::adapter_or_fail(HeadlessGpu::new(), "--include-ignored")
}

/// Whether the adapter is a software rasteriser: wgpu reports a CPU device
/// (Mesa's lavapipe, whose adapter name is "llvmpipe (LLVM …)", the adapter
/// CI uses), or the name or driver says lavapipe/llvmpipe. There the WGSL
/// raster reproduces the CPU's f32 arithmetic bit for bit.
fn is_software(info: &gpu::wgpu::AdapterInfo) -> bool {
    let named = |s: &str| {
        let s = s.to_ascii_lowercase();
        s.contains("llvmpipe") || s.contains("lavapipe")
    };
    info.device_type == gpu::wgpu::DeviceType::Cpu
        || named(&info.name)
        || named(&info.driver)
        || named(&info.driver_info)
}

/// Hardware adapters: at most this fraction of the rendered label pixels
/// (`N × W × H`) may differ from the CPU's. WGSL lets division and sqrt be
/// a few ULP off and lets the driver fuse `a·b + c` into an FMA, so a pixel
/// whose centre grazes a silhouette may flip; nothing else may differ.
const HARDWARE_PIXEL_FRACTION: f64 = 1e-3;

/// Hardware adapters: `|F_gpu − F_cpu|` per particle (RTPF Eq. 1, `F ∈
/// [0, 1]`), a tenth of the likelihood's default spread `σ_F = 0.1`, so a
/// flipped pixel changes a particle's weight `exp(−F²/2σ_F²)` by little.
/// Where a particle's counts agree, F and the log-likelihood must be the
/// same bits on any adapter (both are computed from the counts).
const HARDWARE_F_EPSILON: f64 = 1e-2;

/// The one agreement test of the GPU back end with the CPU reference, with
/// two thresholds: on a software adapter ([`is_software`]) counts, F,
/// log-likelihoods and label tiles are identical; on any other adapter at
/// most [`HARDWARE_PIXEL_FRACTION`] of the label pixels differ, F is within
/// [`HARDWARE_F_EPSILON`], and particles whose counts agree have identical
/// F and log-likelihood. Returns the number of differing pixels.
fn agreement(
    software: bool,
    expected: &Evaluation,
    got: &Evaluation,
    cpu_tiles: &[u8],
    gpu_tiles: &[u8],
) -> Result<usize, String> {
    let n = expected.non_overlap.len();
    if got.counts.len() != expected.counts.len()
        || got.non_overlap.len() != n
        || got.log_likelihood.len() != n
        || gpu_tiles.len() != cpu_tiles.len()
    {
        return Err("the GPU evaluated another number of particles or pixels".into());
    }
    let differing = cpu_tiles
        .iter()
        .zip(gpu_tiles)
        .filter(|(a, b)| a != b)
        .count();
    if software {
        if got != expected {
            let first = (0..got.counts.len()).find(|&k| got.counts[k] != expected.counts[k]);
            return Err(format!(
                "software adapter: the evaluation differs from the CPU's (first count at {first:?}; \
                 F {:?} vs {:?})",
                &got.non_overlap[..n.min(4)],
                &expected.non_overlap[..n.min(4)]
            ));
        }
        if differing > 0 {
            return Err(format!("software adapter: {differing} label pixels differ"));
        }
        return Ok(0);
    }
    let rendered = cpu_tiles.len().max(1);
    if differing as f64 > HARDWARE_PIXEL_FRACTION * rendered as f64 {
        return Err(format!(
            "{differing} of {rendered} label pixels differ (tolerance {HARDWARE_PIXEL_FRACTION})"
        ));
    }
    let per = expected.counts.len() / n.max(1);
    for i in 0..n {
        let (e, o) = (expected.non_overlap[i], got.non_overlap[i]);
        let r = i * per..(i + 1) * per;
        if expected.counts[r.clone()] == got.counts[r] {
            if o.to_bits() != e.to_bits()
                || got.log_likelihood[i].to_bits() != expected.log_likelihood[i].to_bits()
            {
                return Err(format!("particle {i}: same counts, F {o} vs {e}"));
            }
        } else if (o - e).abs().is_nan() || (o - e).abs() > HARDWARE_F_EPSILON {
            return Err(format!(
                "particle {i}: F {o} vs the CPU's {e} (tolerance {HARDWARE_F_EPSILON})"
            ));
        }
    }
    Ok(differing)
}

/// [`agreement`] of `gpu` with `cpu` on one batch, as an assertion.
fn assert_agrees(
    g: &HeadlessGpu,
    cpu: &mut CpuLikelihood,
    gpu: &mut GpuLikelihood,
    obs: &Observation,
    states: &[f64],
    scene: &str,
) -> Evaluation {
    let expected = cpu.evaluate(obs, states).unwrap().clone();
    let got = gpu.evaluate(obs, states).unwrap().clone();
    let cpu_tiles = cpu.render_tiles(states).unwrap().to_vec();
    let gpu_tiles = gpu.render_tiles(states).unwrap();
    match agreement(
        is_software(&g.info),
        &expected,
        &got,
        &cpu_tiles,
        &gpu_tiles,
    ) {
        Ok(differing) => {
            if differing > 0 {
                eprintln!(
                    "{scene}: {differing} label pixels differ on {} (within tolerance)",
                    g.describe()
                );
            }
            got
        }
        Err(e) => panic!("{scene} on {}: {e}", g.describe()),
    }
}

fn gpu_likelihood(
    g: &HeadlessGpu,
    skel: &Skeleton,
    camera: &Camera,
    settings: GpuSettings,
) -> GpuLikelihood {
    try_gpu_likelihood(g, skel, camera, settings).unwrap()
}

fn try_gpu_likelihood(
    g: &HeadlessGpu,
    skel: &Skeleton,
    camera: &Camera,
    settings: GpuSettings,
) -> Result<GpuLikelihood, GpuError> {
    GpuLikelihood::with_settings(
        g.device.clone(),
        g.queue.clone(),
        skel.clone(),
        camera.clone(),
        NonOverlap::default(),
        settings,
    )
}

/// Both raster paths, the default first.
const PATHS: [RasterPath; 2] = [RasterPath::Compute, RasterPath::RenderPass];

/// Default settings on `raster`.
fn on(raster: RasterPath) -> GpuSettings {
    GpuSettings {
        raster,
        ..GpuSettings::default()
    }
}

/// GPU (default settings, on either raster path) and CPU on the same
/// batch: [`agreement`].
fn assert_same_as_cpu(
    g: &HeadlessGpu,
    skel: &Skeleton,
    camera: &Camera,
    obs: &Observation,
    states: &[f64],
    scene: &str,
) {
    let mut cpu = CpuLikelihood::new(skel.clone(), camera.clone(), NonOverlap::default());
    for raster in PATHS {
        let mut gpu = gpu_likelihood(g, skel, camera, on(raster));
        assert_agrees(
            g,
            &mut cpu,
            &mut gpu,
            obs,
            states,
            &format!("{scene} ({raster:?})"),
        );
    }
}

/// Overlapping capsules at different depths, two identical capsules of
/// different labels (an exact depth tie: the first wins), a capsule behind
/// the camera (default camera at z = 3.5 looking down −z), one straddling
/// the camera plane and a tiny one a few pixels wide.
fn overlaps_ties_behind_tiny() -> Skeleton {
    let mut b = SkeletonBuilder::new();
    b.joint("root", None, [0.0, 1.0, 0.0], JointKind::free())
        .with_capsule(
            [-0.6, -0.2, 0.0],
            [0.6, 0.3, 0.0],
            0.25,
            BodyPart::Torso,
            1.0,
        );
    b.joint("near", Some("root"), [0.1, 0.0, 0.4], JointKind::Fixed)
        .with_capsule(
            [0.0, -0.5, 0.0],
            [0.0, 0.5, 0.1],
            0.12,
            BodyPart::UpperArm,
            1.0,
        );
    b.joint("twin_a", Some("root"), [-0.3, 0.3, 0.2], JointKind::Fixed)
        .with_capsule([-0.2, 0.0, 0.0], [0.2, 0.1, 0.0], 0.1, BodyPart::Hand, 1.0);
    b.joint("twin_b", Some("root"), [-0.3, 0.3, 0.2], JointKind::Fixed)
        .with_capsule([-0.2, 0.0, 0.0], [0.2, 0.1, 0.0], 0.1, BodyPart::Foot, 1.0);
    b.joint("behind", Some("root"), [0.0, 0.0, 5.0], JointKind::Fixed)
        .with_capsule([-1.0, 0.0, 0.0], [1.0, 0.0, 0.0], 0.5, BodyPart::Head, 1.0);
    b.joint("straddle", Some("root"), [0.5, -0.3, 2.0], JointKind::Fixed)
        .with_capsule([0.0, 0.0, 0.0], [0.0, 0.0, 3.0], 0.2, BodyPart::Shank, 1.0);
    b.joint("tiny", Some("root"), [-0.9, -0.6, 0.5], JointKind::Fixed)
        .with_capsule(
            [0.0, 0.0, 0.0],
            [0.02, 0.0, 0.0],
            0.02,
            BodyPart::Finger,
            1.0,
        );
    b.build().unwrap()
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn hand_built_scenes_agree_with_the_cpu() {
    let g = gpu();
    let camera = Camera::default();
    // The wall filling the view against a half-torso, half-head image.
    let skel = synth::wall(false);
    let labels = (0..W * H)
        .map(|i| if i % W < W / 2 { 3 } else { 1 })
        .collect();
    let obs = Observation::new(W as u32, H as u32, labels).unwrap();
    assert_same_as_cpu(&g, &skel, &camera, &obs, &skel.rest_pose(), "wall");

    // The head in front of the wall, against its own rendering (F = 0) and
    // shifted poses.
    let skel = synth::wall(true);
    let rest = skel.rest_pose();
    let obs = Observation::new(
        W as u32,
        H as u32,
        render_label_image(&skel, &camera, &rest).unwrap(),
    )
    .unwrap();
    let mut states = rest.clone();
    for k in 1..6 {
        let mut p = rest.clone();
        p[0] = 0.013 * k as f64;
        p[1] = -0.007 * k as f64;
        states.extend(p);
    }
    assert_same_as_cpu(&g, &skel, &camera, &obs, &states, "wall with head");

    // Overlaps, exact ties, behind the camera, straddling, tiny.
    let skel = overlaps_ties_behind_tiny();
    let rest = skel.rest_pose();
    let clean = render_label_image(&skel, &camera, &rest).unwrap();
    let count = |l: BodyPart| clean.iter().filter(|&&x| x == l.label()).count();
    assert!(count(BodyPart::Hand) > 20, "the first twin is drawn");
    assert_eq!(count(BodyPart::Foot), 0, "the second twin loses every tie");
    assert!(count(BodyPart::UpperArm) > 20 && count(BodyPart::Torso) > 100);
    assert!((1..=8).contains(&count(BodyPart::Finger)), "tiny capsule");
    assert!(count(BodyPart::Shank) > 0, "straddling capsule");
    let obs = render_observation(&skel, &camera, &rest, &LabelNoise::flips(0.05), 9).unwrap();
    let mut states = Vec::new();
    for k in 0..8 {
        let mut p = rest.clone();
        p[0] = 0.02 * k as f64;
        p[3] = 0.05 * k as f64; // roll about x: the twins stay twins
        p[5] = -0.03 * k as f64;
        states.extend(p);
    }
    assert_same_as_cpu(&g, &skel, &camera, &obs, &states, "overlaps and ties");
}

/// The reference pose of the sweeps (as tests/likelihood.rs): the left arm
/// raised sideways by `abduction`, the right elbow at 0.6 rad.
fn arm_pose(skel: &Skeleton, abduction: f64) -> Vec<f64> {
    let pose = synth::arm_pose(skel, abduction, 0.6).unwrap();
    assert!(skel.within_limits(&pose));
    pose
}

/// The `human` preset before the default camera, observed in the
/// reference pose [`arm_pose`]`(abduction)`.
struct Human {
    skel: Skeleton,
    camera: Camera,
    reference: Vec<f64>,
}

impl Human {
    fn new(abduction: f64) -> Self {
        let skel = presets::human();
        let reference = arm_pose(&skel, abduction);
        Self {
            skel,
            camera: Camera::default(),
            reference,
        }
    }

    /// The reference pose rendered, with `noise`.
    fn observe(&self, noise: &LabelNoise, seed: u64) -> Observation {
        render_observation(&self.skel, &self.camera, &self.reference, noise, seed).unwrap()
    }

    /// `n` poses scattered around the reference.
    fn perturbed(&self, n: usize, seed: u64) -> Vec<f64> {
        perturbed_poses(&self.skel, &self.reference, n, seed)
    }

    fn gpu(&self, g: &HeadlessGpu, settings: GpuSettings) -> GpuLikelihood {
        gpu_likelihood(g, &self.skel, &self.camera, settings)
    }

    fn cpu(&self) -> CpuLikelihood {
        CpuLikelihood::new(
            self.skel.clone(),
            self.camera.clone(),
            NonOverlap::default(),
        )
    }

    /// [`assert_agrees`] of `gpu` with a CPU reference of this scene.
    fn agrees(
        &self,
        g: &HeadlessGpu,
        gpu: &mut GpuLikelihood,
        obs: &Observation,
        states: &[f64],
        scene: &str,
    ) -> Evaluation {
        assert_agrees(g, &mut self.cpu(), gpu, obs, states, scene)
    }
}

/// At most `tiles` particles per pass.
fn passes_of(tiles: usize) -> GpuSettings {
    GpuSettings {
        max_tiles_per_pass: Some(tiles),
        ..GpuSettings::default()
    }
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn random_human_poses_match_the_cpu() {
    let g = gpu();
    let human = Human::new(0.5);
    let obs = human.observe(&LabelNoise::flips(0.05), 3);
    let states = human.perturbed(200, 11);
    let Human { skel, camera, .. } = &human;
    assert_same_as_cpu(&g, skel, camera, &obs, &states, "200 random human poses");
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn reproduction_gives_zero_and_f_grows_over_a_shoulder_sweep() {
    let g = gpu();
    let human = Human::new(0.4);
    let mut gpu = human.gpu(&g, GpuSettings::default());

    let clean = human.observe(&LabelNoise::default(), 0);
    let ev = gpu.evaluate(&clean, &human.reference).unwrap();
    for c in 1..=CLASSES {
        let a = clean.areas()[c - 1];
        assert_eq!(ev.class_counts(0, c), (a, a), "class {c}");
    }
    assert_eq!(ev.non_overlap[0], 0.0);
    assert_eq!(ev.log_likelihood[0], 0.0);

    let obs = human.observe(&LabelNoise::flips(0.05), 42);
    let states: Vec<f64> = (0..=10)
        .flat_map(|k| arm_pose(&human.skel, 0.4 + 0.03 * k as f64))
        .collect();
    let ev = gpu.evaluate(&obs, &states).unwrap();
    synth::check_sweep(ev).unwrap();
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn batches_larger_than_the_atlas_run_in_several_passes() {
    let g = gpu();
    let human = Human::new(0.3);
    let obs = human.observe(&LabelNoise::flips(0.02), 5);
    let n = 53;
    let states = human.perturbed(n, 17);
    let mut chunked = human.gpu(&g, passes_of(16));
    assert_eq!(chunked.max_tiles_per_pass(), 16);
    let mut single = human.gpu(&g, GpuSettings::default());
    assert!(single.max_tiles_per_pass() >= n);
    // 53 = 16 + 16 + 16 + 5: four passes over one atlas.
    let whole = chunked.evaluate(&obs, &states).unwrap().clone();
    assert_eq!(whole, single.evaluate(&obs, &states).unwrap().clone());
    // The same particles in smaller batches, one of them a single pass.
    let d = human.skel.dof();
    let mut pieces = Evaluation::default();
    for range in [0..7, 7..40, 40..53] {
        let ev = chunked
            .evaluate(&obs, &states[range.start * d..range.end * d])
            .unwrap();
        pieces.counts.extend_from_slice(&ev.counts);
        pieces.non_overlap.extend_from_slice(&ev.non_overlap);
        pieces.log_likelihood.extend_from_slice(&ev.log_likelihood);
    }
    assert_eq!(pieces, whole);
    // Against the CPU: identical on a software adapter, within the stated
    // tolerance elsewhere.
    let got = human.agrees(&g, &mut chunked, &obs, &states, "53 poses, passes of 16");
    assert_eq!(got, whole);
    // The render-pass path in passes of 16 tiles of one atlas.
    let mut atlas = human.gpu(
        &g,
        GpuSettings {
            raster: RasterPath::RenderPass,
            ..passes_of(16)
        },
    );
    assert_eq!(atlas.max_tiles_per_pass(), 16);
    let got = human.agrees(&g, &mut atlas, &obs, &states, "53 poses, 16-tile atlas");
    assert_eq!(got, whole);
}

/// The compute raster has no atlas: a batch beyond the 3,468 tiles of the
/// render-pass path's largest atlas (8192² at 160 × 120) runs in one pass
/// with the CPU's counts (as large as CI's lavapipe affords in about two
/// seconds; passes of several hundred particles are checked below, the
/// chunking itself in the 53-pose tests).
#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn batches_beyond_the_old_atlas_limit_match_the_cpu() {
    let g = gpu();
    let human = Human::new(0.35);
    let obs = human.observe(&LabelNoise::flips(0.02), 6);
    let n = 3_600;
    let states = human.perturbed(n, 47);
    let expected = human.cpu().evaluate(&obs, &states).unwrap().clone();
    let mut one_pass = human.gpu(&g, GpuSettings::default());
    assert!(one_pass.max_tiles_per_pass() >= n);
    let got = one_pass.evaluate(&obs, &states).unwrap().clone();
    if is_software(&g.info) {
        assert!(got == expected, "{n} poses in one pass differ from the CPU");
    } else {
        let same = (0..n)
            .filter(|&i| got.non_overlap[i] == expected.non_overlap[i])
            .count();
        assert!(same * 100 >= n * 99, "{same} of {n} particles agree");
    }
    // Some particles see the body, some lose it: the counts are not trivial.
    let covered = (0..n)
        .filter(|&i| (1..=CLASSES).any(|c| got.class_counts(i, c).0 > 0))
        .count();
    assert!(covered > n / 2, "{covered} of {n} particles cover a pixel");
}

/// A readback that waits longer than [`GpuSettings::readback_timeout`] is
/// [`GpuError::Timeout`] naming the stage, not a wait for ever; the back end
/// works again afterwards. With a zero timeout a batch of 400 poses
/// (~0.2 s on lavapipe) collected at once after its submission is not
/// ready; a fast GPU may be, so the test asks for one timeout in three
/// tries.
#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn a_readback_past_its_timeout_is_an_error_naming_the_stage() {
    let g = gpu();
    let human = Human::new(0.3);
    let obs = human.observe(&LabelNoise::default(), 2);
    let states = human.perturbed(400, 53);
    let mut gpu = human.gpu(
        &g,
        GpuSettings {
            readback_timeout: Duration::ZERO,
            ..GpuSettings::default()
        },
    );
    let (mut timeouts, mut tries) = (0, 0);
    while timeouts == 0 && tries < 3 {
        tries += 1;
        let ticket = gpu.submit(&obs, &states).unwrap();
        match gpu.collect(ticket) {
            Err(e) => {
                assert_eq!(
                    e,
                    GpuError::Timeout {
                        stage: "readback",
                        after: Duration::ZERO
                    }
                );
                assert_eq!(e.to_string(), "GPU readback: no result in 0 s");
                timeouts += 1;
            }
            // Only a device faster than this thread could be done already.
            Ok(ev) => assert_eq!(ev.non_overlap.len(), 400),
        }
        // A timed-out batch frees its slot.
        assert_eq!(gpu.in_flight(), 0);
    }
    assert!(timeouts > 0, "a zero timeout never ran out");
    gpu.set_readback_timeout(Duration::from_secs(10));
    let expected = human.cpu().evaluate(&obs, &states).unwrap().clone();
    let got = gpu.evaluate(&obs, &states).unwrap();
    if is_software(&g.info) {
        assert!(got == &expected, "after the timeouts the counts differ");
    }
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn prepared_forward_kinematics_give_the_same_counts_in_every_pass() {
    use skeleton::{BatchForwardKinematics, Posing};
    use smc::{PerParticle, Prepared};
    let g = gpu();
    let human = Human::new(0.4);
    let skel = &human.skel;
    let obs = human.observe(&LabelNoise::default(), 9);
    let n = 53;
    let states = human.perturbed(n, 23);
    // Four passes of 16 tiles: pass k reads poses 16k.. of the shared batch.
    let mut gpu = human.gpu(&g, passes_of(16));
    let expected = gpu.evaluate(&obs, &states).unwrap().clone();
    let mut fk = BatchForwardKinematics::new();
    fk.compute_states(skel, &states).unwrap();
    assert_eq!(gpu.evaluate_posed(&obs, &states, &fk).unwrap(), &expected);
    let prior = PerParticle(|_: &Observation, x: &[f64]| -x[4].abs());
    let lik = Prepared::new(Posing(skel), fk, (&gpu, prior));
    let mut out = vec![0.0; n];
    lik.log_likelihood(&obs, &states, skel.dof(), &mut out)
        .unwrap();
    for (i, o) in out.iter().enumerate() {
        let x = &states[i * skel.dof()..];
        assert_eq!(*o, 0.0 + expected.log_likelihood[i] + -x[4].abs());
    }
    let got = human.agrees(&g, &mut gpu, &obs, &states, "53 prepared poses");
    assert_eq!(got, expected);
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn overlapped_submit_and_collect_match_the_synchronous_path() {
    let g = gpu();
    let human = Human::new(0.45);
    let Human {
        skel,
        camera,
        reference,
    } = &human;
    let noise = LabelNoise::flips(0.03);
    // Four frames, each with its own observation and batch size.
    let frames: Vec<(Observation, Vec<f64>)> = (0..4)
        .map(|k| {
            let mut pose = reference.clone();
            pose[0] = 0.02 * k as f64;
            let obs = render_observation(skel, camera, &pose, &noise, 20 + k).unwrap();
            (
                obs,
                perturbed_poses(skel, &pose, 24 + 8 * k as usize, 30 + k),
            )
        })
        .collect();
    let mut gpu = human.gpu(&g, GpuSettings::default());
    let sync: Vec<Evaluation> = frames
        .iter()
        .map(|(obs, states)| gpu.evaluate(obs, states).unwrap().clone())
        .collect();

    // Frame k+1 is submitted before frame k is collected.
    let mut overlapped = Vec::new();
    let mut pending = gpu.submit(&frames[0].0, &frames[0].1).unwrap();
    for (obs, states) in &frames[1..] {
        let next = gpu.submit(obs, states).unwrap();
        assert_eq!(gpu.in_flight(), 2);
        // Both staging buffers are busy: a third batch must wait.
        assert_eq!(
            gpu.submit(obs, states).unwrap_err(),
            GpuError::TooManyInFlight { in_flight: 2 }
        );
        let mut ev = Evaluation::default();
        gpu.collect_into(pending, &mut ev).unwrap();
        overlapped.push(ev);
        pending = next;
    }
    assert_eq!(pending.particles(), frames[3].1.len() / skel.dof());
    overlapped.push(gpu.collect(pending).unwrap().clone());
    assert_eq!(gpu.in_flight(), 0);
    assert_eq!(overlapped, sync);

    // A dropped ticket keeps its slot until the batches are discarded.
    drop(gpu.submit(&frames[0].0, &frames[0].1).unwrap());
    let kept = gpu.submit(&frames[1].0, &frames[1].1).unwrap();
    assert!(matches!(
        gpu.submit(&frames[1].0, &frames[1].1),
        Err(GpuError::TooManyInFlight { .. })
    ));
    gpu.discard_in_flight();
    assert_eq!(gpu.in_flight(), 0);
    assert!(matches!(
        gpu.collect(kept),
        Err(GpuError::UnknownTicket { .. })
    ));
    assert_eq!(gpu.evaluate(&frames[1].0, &frames[1].1).unwrap(), &sync[1]);
    // A ticket is only good at the back end that issued it.
    let mut other = human.gpu(&g, GpuSettings::default());
    let foreign = other.submit(&frames[0].0, &frames[0].1).unwrap();
    assert!(matches!(
        gpu.collect(foreign),
        Err(GpuError::UnknownTicket { .. })
    ));

    // The smc trait gives the same log-likelihoods.
    let (obs, states) = &frames[2];
    let mut out = vec![0.0; states.len() / skel.dof()];
    gpu.log_likelihood(obs, states, skel.dof(), &mut out)
        .unwrap();
    assert_eq!(out, sync[2].log_likelihood);
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn bad_input_is_a_clear_error() {
    let g = gpu();
    let skel = presets::human();
    let camera = Camera::default();
    let d = skel.dof();
    let mut gpu = gpu_likelihood(&g, &skel, &camera, GpuSettings::default());
    let obs = Observation::new(W as u32, H as u32, vec![0; W * H]).unwrap();

    assert_eq!(
        gpu.evaluate(&obs, &[]).unwrap_err(),
        GpuError::Label(LabelError::EmptyBatch)
    );
    let small = Observation::new(80, 60, vec![0; 80 * 60]).unwrap();
    assert!(matches!(
        gpu.evaluate(&small, &skel.rest_pose()).unwrap_err(),
        GpuError::Label(LabelError::ImageSizeMismatch {
            expected_width: 160,
            found_width: 80,
            ..
        })
    ));
    // A label outside 0..=C never reaches the GPU: observations validate.
    let mut labels = vec![0u8; W * H];
    labels[W * 7 + 9] = CLASSES as u8 + 1;
    assert!(matches!(
        Observation::new(W as u32, H as u32, labels).unwrap_err(),
        LabelError::LabelOutOfRange { x: 9, y: 7, .. }
    ));
    assert!(matches!(
        gpu.evaluate(&obs, &vec![0.0; d + 1]).unwrap_err(),
        GpuError::Label(LabelError::StateShape { .. })
    ));
    let mut bad = vec![0.0; 2 * d];
    bad[d + 4] = f64::INFINITY;
    assert!(matches!(
        gpu.evaluate(&obs, &bad).unwrap_err(),
        GpuError::Label(LabelError::NonFinitePose {
            particle: 1,
            parameter: 4,
            ..
        })
    ));
    let mut out = vec![0.0; 3];
    assert!(
        gpu.log_likelihood(&obs, &skel.rest_pose(), d, &mut out)
            .is_err()
    );
    assert!(
        gpu.log_likelihood(&obs, &skel.rest_pose(), d + 1, &mut out)
            .is_err()
    );
    // Settings and skeletons the back end cannot use.
    let zero = GpuSettings {
        in_flight: 0,
        ..GpuSettings::default()
    };
    let e = try_gpu_likelihood(&g, &skel, &camera, zero).unwrap_err();
    assert!(matches!(
        e,
        GpuError::Label(LabelError::InvalidSetting {
            field: "in_flight",
            ..
        })
    ));
    let mut b = SkeletonBuilder::new();
    b.joint("root", None, [0.0; 3], JointKind::free());
    let bare = b.build().unwrap();
    let e = GpuLikelihood::new(
        g.device.clone(),
        g.queue.clone(),
        bare,
        camera.clone(),
        NonOverlap::default(),
    )
    .unwrap_err();
    assert!(matches!(
        e,
        GpuError::Label(LabelError::InvalidSetting {
            field: "skeleton",
            ..
        })
    ));
    // The back end still works after all that.
    assert_eq!(
        gpu.evaluate(&obs, &skel.rest_pose()).unwrap().counts.len(),
        2 * CLASSES
    );
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn a_lost_device_is_an_error_not_a_panic() {
    let g = fresh_gpu();
    let skel = presets::human();
    let camera = Camera::default();
    let obs =
        render_observation(&skel, &camera, &skel.rest_pose(), &LabelNoise::default(), 0).unwrap();
    let mut gpu = gpu_likelihood(&g, &skel, &camera, GpuSettings::default());
    assert!(gpu.evaluate(&obs, &skel.rest_pose()).is_ok());
    g.device.destroy();
    let e = gpu.evaluate(&obs, &skel.rest_pose()).unwrap_err();
    eprintln!("after destroy: {e}");
    assert!(matches!(e, GpuError::DeviceLost { .. }), "{e:?}");
    // Building a back end on the destroyed device is an error too.
    let built = GpuLikelihood::new(
        g.device.clone(),
        g.queue.clone(),
        skel.clone(),
        camera.clone(),
        NonOverlap::default(),
    );
    match built {
        Err(e) => eprintln!("building on the destroyed device: {e}"),
        Ok(mut late) => {
            let e = late.evaluate(&obs, &skel.rest_pose()).unwrap_err();
            eprintln!("evaluating on the destroyed device: {e}");
        }
    }
    // The caller falls back to the CPU.
    let mut cpu = CpuLikelihood::new(skel.clone(), camera, NonOverlap::default());
    assert_eq!(
        cpu.evaluate(&obs, &skel.rest_pose()).unwrap().non_overlap[0],
        0.0
    );
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn the_camera_pose_does_not_matter_to_agreement() {
    // A camera off to the side and tilted: rotation rows with every entry
    // non-zero exercise the full f32 camera transform in WGSL.
    let g = gpu();
    let skel = presets::human();
    let camera = Camera::looking_at(
        Point3::new(2.1, 1.9, 2.6),
        Point3::new(-0.1, 0.8, 0.1),
        Vector3::new(0.1, 1.0, 0.0),
        50f64.to_radians(),
        W as u32,
        H as u32,
    )
    .unwrap();
    let reference = arm_pose(&skel, 0.2);
    let obs = render_observation(&skel, &camera, &reference, &LabelNoise::flips(0.05), 8).unwrap();
    let states = perturbed_poses(&skel, &reference, 24, 99);
    assert_same_as_cpu(&g, &skel, &camera, &obs, &states, "tilted camera");
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn label_maps_give_the_same_counts_as_the_cpu() {
    let g = gpu();
    let human = Human::new(0.35);
    // Segmentation-like classes: head/neck 1, arms 2, torso/pelvis 3,
    // legs 4, fingers and feet unsegmented (0).
    let map = synth::whole_body_classes();
    let rendered = render_label_image(&human.skel, &human.camera, &human.reference).unwrap();
    let mut segmented: Vec<u8> = rendered
        .iter()
        .map(|&l| if l == 0 { 0 } else { map[usize::from(l) - 1] })
        .collect();
    LabelNoise::flips(0.03)
        .apply(&mut segmented, W as u32, H as u32, 4)
        .unwrap();
    let obs = Observation::new(W as u32, H as u32, segmented).unwrap();
    let states = human.perturbed(40, 23);
    let mut cpu = human.cpu();
    let mut gpu = human.gpu(&g, GpuSettings::default());
    let identity = gpu.evaluate(&obs, &states).unwrap().clone();
    let mut atlas = human.gpu(&g, on(RasterPath::RenderPass));
    atlas.set_label_map(map).unwrap();
    let mapped = atlas.evaluate(&obs, &states).unwrap().clone();
    cpu.set_label_map(map).unwrap();
    gpu.set_label_map(map).unwrap();
    let got = assert_agrees(&g, &mut cpu, &mut gpu, &obs, &states, "label map");
    assert_ne!(got, identity, "the map reached the shader");
    if is_software(&g.info) {
        assert!(mapped == got, "the render-pass path maps labels alike");
    }
    // Back to the identity: the uniforms follow.
    gpu.set_label_map(labels::IDENTITY_LABEL_MAP).unwrap();
    assert_eq!(gpu.evaluate(&obs, &states).unwrap(), &identity);
    let mut bad = map;
    bad[0] = 200;
    assert!(matches!(
        gpu.set_label_map(bad),
        Err(GpuError::Label(LabelError::LabelMap { label: 1, .. }))
    ));
}

/// The setup pass derives each capsule's rectangle (and each particle's
/// union) on the GPU from the uploaded end points: on a software adapter
/// ([`is_software`]) they equal
/// `raster::capsule_rect` on the CPU exactly, elsewhere within a pixel;
/// and the union holds every pixel the GPU labels. Hand-built scenes with
/// capsules behind the camera, across its plane and tiny, and 200 random
/// human poses in passes of 16 and in one pass.
#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn setup_pass_rectangles_equal_the_cpus() {
    use gpu::GpuRect;
    use labels::{capsule_instances, capsule_rect};
    let g = gpu();
    let camera = Camera::default();
    let rc = camera.raster();
    let human = presets::human();
    let hand_built = overlaps_ties_behind_tiny();
    let mut tricky = Vec::new();
    for k in 0..12 {
        let mut p = hand_built.rest_pose();
        p[0] = 0.1 * k as f64 - 0.6;
        p[2] = 0.25 * k as f64; // toward and past the camera at z = 3.5
        p[4] = 0.2 * k as f64;
        tricky.extend(p);
    }
    let cases = [
        (&hand_built, tricky, GpuSettings::default()),
        (
            &human,
            perturbed_poses(&human, &arm_pose(&human, 0.5), 200, 29),
            passes_of(16),
        ),
        (
            &human,
            perturbed_poses(&human, &arm_pose(&human, 0.2), 200, 31),
            GpuSettings::default(),
        ),
    ];
    for (skel, states, settings) in cases {
        let mut gpu = gpu_likelihood(&g, skel, &camera, settings);
        let (per_capsule, per_tile) = gpu.capsule_rects(&states).unwrap();
        let tiles = gpu.render_tiles(&states).unwrap();
        let (d, n) = (skel.dof(), states.len() / skel.dof());
        let k = per_capsule.len() / n;
        let mut behind = 0;
        for i in 0..n {
            let world = skel
                .forward_kinematics(&states[i * d..(i + 1) * d])
                .unwrap();
            let cpu: Vec<GpuRect> = capsule_instances(skel, &world)
                .map(|c| GpuRect::from(capsule_rect(&rc, &c)))
                .collect();
            behind += cpu.iter().filter(|r| **r == GpuRect::default()).count();
            let got = &per_capsule[i * k..(i + 1) * k];
            if is_software(&g.info) {
                assert_eq!(got, &cpu[..], "pose {i} of {}", skel.len());
            } else {
                for (a, b) in got.iter().zip(&cpu) {
                    let close = |x: u32, y: u32| x.abs_diff(y) <= 1;
                    assert!(
                        close(a.x0, b.x0)
                            && close(a.y0, b.y0)
                            && close(a.x1, b.x1)
                            && close(a.y1, b.y1),
                        "pose {i}: {a:?} vs {b:?}"
                    );
                }
            }
            // The union bounds every labelled pixel of the GPU's tile.
            let r = per_tile[i];
            let tile = &tiles[i * W * H..(i + 1) * W * H];
            for (p, &l) in tile.iter().enumerate() {
                let (x, y) = ((p % W) as u32, (p / W) as u32);
                let inside = x >= r.x0 && x < r.x1 && y >= r.y0 && y < r.y1;
                assert!(l == 0 || inside, "pose {i}: pixel ({x}, {y}) outside {r:?}");
            }
        }
        if std::ptr::eq(skel, &hand_built) {
            // Behind the camera and off the image: empty rectangles.
            assert!(behind >= 12, "{behind} empty rectangles");
        }
    }
}

/// A device shared with another thread that polls it (Bevy's render thread
/// does, when the app lends its device to the tracker): that thread may run
/// a batch's map callback after this thread's wait has returned. Every
/// batch must still be read back, with the same counts.
#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn a_device_polled_by_another_thread_still_reads_back_every_batch() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let g = fresh_gpu();
    let human = Human::new(0.3);
    let obs = human.observe(&LabelNoise::default(), 4);
    let states = human.perturbed(2, 41);
    let mut gpu = human.gpu(&g, GpuSettings::default());
    let expected = gpu.evaluate(&obs, &states).unwrap().clone();
    let stop = Arc::new(AtomicBool::new(false));
    // More pollers than cores, so that one is often preempted between
    // taking a finished batch's callback and running it.
    let pollers: Vec<_> = (0..4)
        .map(|_| {
            let (device, stop) = (g.device.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = device.poll(gpu::wgpu::PollType::Poll);
                }
            })
        })
        .collect();
    let mut failures = Vec::new();
    for k in 0..1000 {
        match gpu.evaluate(&obs, &states) {
            Ok(ev) => assert_eq!(ev, &expected, "batch {k}"),
            Err(e) => failures.push(format!("batch {k}: {e}")),
        }
    }
    stop.store(true, Ordering::Relaxed);
    for p in pollers {
        p.join().unwrap();
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The thresholds themselves, without a GPU: a single flipped pixel fails
/// on a software adapter and passes on hardware; many flipped pixels, or F
/// off by more than ε, fail everywhere; equal counts with different F
/// fail everywhere.
#[test]
fn the_agreement_check_has_two_thresholds() {
    let n = 2;
    let expected = Evaluation {
        counts: vec![100; n * CLASSES * 2],
        non_overlap: vec![0.3, 0.5],
        log_likelihood: vec![-4.5, -12.5],
    };
    let tiles = vec![1u8; n * W * H];
    assert_eq!(agreement(true, &expected, &expected, &tiles, &tiles), Ok(0));
    assert_eq!(
        agreement(false, &expected, &expected, &tiles, &tiles),
        Ok(0)
    );
    // One grazing pixel flipped: particle 1's head count and F move a little.
    let mut flipped = tiles.clone();
    flipped[W * H + 7] = 2;
    let mut got = expected.clone();
    got.counts[CLASSES * 2] = 99;
    got.non_overlap[1] = 0.503;
    got.log_likelihood[1] = -12.65;
    assert!(agreement(true, &expected, &got, &tiles, &flipped).is_err());
    assert_eq!(agreement(false, &expected, &got, &tiles, &flipped), Ok(1));
    // The counts really differ: software fails even with identical tiles.
    assert!(agreement(true, &expected, &got, &tiles, &tiles).is_err());
    // F beyond ε fails on hardware too.
    let mut far = got.clone();
    far.non_overlap[1] = 0.5 + 2.0 * HARDWARE_F_EPSILON;
    assert!(agreement(false, &expected, &far, &tiles, &flipped).is_err());
    // Too many flipped pixels.
    let mut many = tiles.clone();
    let k = (HARDWARE_PIXEL_FRACTION * many.len() as f64) as usize + 1;
    many[..k].fill(0);
    assert!(agreement(false, &expected, &got, &tiles, &many).is_err());
    // Same counts, different F: a bug in the F computation, not the raster.
    let mut same_counts = expected.clone();
    same_counts.non_overlap[0] = 0.3 + 1e-12;
    assert!(agreement(false, &expected, &same_counts, &tiles, &tiles).is_err());
    // The adapter kinds.
    let mut info = gpu::wgpu::AdapterInfo {
        name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
        vendor: 0x10005,
        device: 0,
        device_type: gpu::wgpu::DeviceType::Cpu,
        device_pci_bus_id: String::new(),
        driver: "llvmpipe".into(),
        driver_info: "Mesa 22.3.6 (LLVM 15.0.6)".into(),
        backend: gpu::wgpu::Backend::Vulkan,
        subgroup_min_size: 4,
        subgroup_max_size: 64,
        transient_saves_memory: false,
    };
    assert!(is_software(&info));
    info.device_type = gpu::wgpu::DeviceType::Other;
    assert!(is_software(&info), "named by its driver");
    info.name = "NVIDIA H100 80GB HBM3".into();
    info.driver = "NVIDIA".into();
    info.driver_info = "550.54".into();
    info.device_type = gpu::wgpu::DeviceType::DiscreteGpu;
    assert!(!is_software(&info));
}
