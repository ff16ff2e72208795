//! The plan: every frame's pose and phase — empty room, walk in and turn,
//! stand, the moves (keyframed or motion capture), and with
//! [`FootageOptions::leave`] the walk out, the empty room and the return.

use nalgebra::Vector3;
use skeleton::Bvh;
use vision::{Result, VisionError};

use crate::mocap::MocapMoves;
use crate::moves::{jitter_keys, move_keys, move_spec};
use crate::options::{Build, FootageOptions};
use crate::subject::Subject;
use crate::truth::{Phase, PhaseSpan};
use crate::walk::{Walk, blend_pose, find_cycle};

/// Every frame's pose and phase.
pub(crate) struct Plan {
    pub(crate) poses: Vec<Vec<f64>>,
    pub(crate) phases: Vec<PhaseSpan>,
}

/// Seconds from the stand into a motion-capture clip's first pose.
pub(crate) const MOCAP_BLEND: f64 = 0.6;

/// Metres the walk-in ends short of the spot (the stop covers them).
const APPROACH: f64 = 0.3;

pub(crate) fn plan(
    options: &FootageOptions,
    subject: &Subject,
    clip: &Bvh,
    mocap: Option<&MocapMoves>,
) -> Result<Plan> {
    let fps = options.fps;
    let t = &options.timing;
    let st = &options.setup.staging;
    let cam = &options.setup.camera;
    let frames_of = |s: f64| (s * fps).round() as usize;
    let spot = Vector3::new(st.x, 0.0, -st.distance);
    let stand = subject.stand_spec(spot, 0.0);
    let rest = subject.skeleton.rest_pose();
    let stand_pose = subject.pose_from_spec(&stand, &rest);
    let clip_ids = Subject::proportioned(&clip.skeleton, &Build::default(), 1.0)?.ids;
    let cycle = find_cycle(clip, &clip_ids)?;
    // Where the subject is out of view at the spot's depth (half a metre
    // beyond the image's edge, wider for a tilted camera).
    let half_view = st.distance * (0.5 * cam.hfov_deg.to_radians()).tan() + 0.9;
    let edge = |plus_x: bool| {
        if plus_x {
            cam.x + half_view
        } else {
            cam.x - half_view
        }
    };
    let mut poses: Vec<Vec<f64>> = Vec::new();
    let mut phases = Vec::new();
    let mut push = |phase: Phase, list: Vec<Vec<f64>>, poses: &mut Vec<Vec<f64>>| {
        let start = poses.len();
        poses.extend(list);
        phases.push(PhaseSpan {
            phase,
            start,
            end: poses.len(),
        });
    };

    // Walk in from one side, stop and turn to the camera.
    let walk_in = |from_left: bool| -> Result<Vec<Vec<f64>>> {
        let dir = if from_left { 1.0 } else { -1.0 };
        let distance = ((st.x - edge(!from_left)) * dir - APPROACH).max(0.5);
        let end = spot - Vector3::x() * dir * APPROACH;
        let probe = Walk::new(
            clip,
            &cycle,
            &clip_ids,
            subject,
            &stand_pose,
            from_left,
            (0.0, end),
        )?;
        let duration = distance / probe.speed();
        let walk = Walk {
            anchor_time: duration,
            ..probe
        };
        let n = frames_of(duration).max(2);
        let mut list: Vec<Vec<f64>> = (0..n)
            .map(|i| walk.pose(duration * i as f64 / (n - 1) as f64))
            .collect();
        let last = list[n - 1].clone();
        let turn = frames_of(t.turn).max(1);
        for i in 0..turn {
            let u = smoothstep((i + 1) as f64 / turn as f64);
            list.push(blend_pose(&subject.skeleton, &last, &stand_pose, u));
        }
        Ok(list)
    };
    let entering = walk_in(st.enter_from_left)?;
    push(
        Phase::Empty,
        vec![entering[0].clone(); frames_of(t.empty)],
        &mut poses,
    );
    push(Phase::WalkIn, entering, &mut poses);
    push(
        Phase::Stand,
        vec![stand_pose.clone(); frames_of(t.stand)],
        &mut poses,
    );
    let mut moves = Vec::new();
    let mut prev = stand_pose.clone();
    if let Some(m) = mocap {
        // From the stand into the clip's first pose, then the clip.
        let first = subject.pose_from_spec(&m.spec(subject, &stand, 0.0), &prev);
        let blend = frames_of(MOCAP_BLEND).max(1);
        for i in 0..blend {
            let u = smoothstep((i + 1) as f64 / blend as f64);
            moves.push(blend_pose(&subject.skeleton, &stand_pose, &first, u));
        }
        prev = first;
        let n = frames_of(t.moves.min(m.duration()));
        for i in 0..n {
            prev = subject.pose_from_spec(&m.spec(subject, &stand, i as f64 / fps), &prev);
            moves.push(prev.clone());
        }
    } else {
        let mut keys = move_keys();
        jitter_keys(&mut keys, options.seed);
        let n_moves = frames_of(t.moves);
        moves.reserve(n_moves);
        for i in 0..n_moves {
            let spec = move_spec(subject, &stand, &keys, t.moves, (i + 1) as f64 / fps);
            prev = subject.pose_from_spec(&spec, &prev);
            moves.push(prev.clone());
        }
    }
    push(Phase::Move, moves, &mut poses);
    if options.leave {
        // Out towards the side opposite the entry, back from there.
        let out_plus_x = st.enter_from_left;
        let dir = if out_plus_x { 1.0 } else { -1.0 };
        let start = spot + Vector3::x() * dir * 0.1;
        let walk = Walk::new(
            clip,
            &cycle,
            &clip_ids,
            subject,
            &stand_pose,
            out_plus_x,
            (0.0, start),
        )?;
        let first = walk.pose(0.0);
        let from = poses.last().cloned().unwrap_or_else(|| stand_pose.clone());
        let mut list = Vec::new();
        let turn = frames_of(t.turn).max(1);
        for i in 0..turn {
            let u = smoothstep((i + 1) as f64 / turn as f64);
            list.push(blend_pose(&subject.skeleton, &from, &first, u));
        }
        let distance = (edge(out_plus_x) - start.x) * dir;
        let duration = distance / walk.speed();
        let n = frames_of(duration).max(2);
        list.extend((1..n).map(|i| walk.pose(duration * i as f64 / (n - 1) as f64)));
        let gone = list.last().cloned().unwrap_or_default();
        push(Phase::WalkOut, list, &mut poses);
        push(Phase::Away, vec![gone; frames_of(t.away)], &mut poses);
        push(Phase::WalkBack, walk_in(!out_plus_x)?, &mut poses);
        push(
            Phase::StandAgain,
            vec![stand_pose; frames_of(t.stand)],
            &mut poses,
        );
    }
    if let Some(n) = options.frames {
        poses.truncate(n);
        phases.retain(|p| p.start < n);
        for p in &mut phases {
            p.end = p.end.min(n);
        }
    }
    phases.retain(|p| p.end > p.start);
    if poses.is_empty() {
        return Err(VisionError::parameter(
            "frames",
            options.frames.unwrap_or(0),
            "the session has no frames",
        ));
    }
    Ok(Plan { poses, phases })
}

fn smoothstep(x: f64) -> f64 {
    let x = x.clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}
