//! One forward kinematics per weigh stage, read by every term: the §6.3
//! human's IK constraints, the region likelihood (RTPF Eq. 2) and a prior,
//! combined in one [`smc::Prepared`] likelihood (issue "Likelihoods see the
//! FK'd batch"). The combination must equal the sum of the terms evaluated
//! on their own, and the preparation must run exactly once per call.

use std::sync::atomic::{AtomicUsize, Ordering};

use ik::ConstraintLikelihood;
use ik::scenarios::HumanProblem;
use labels::{
    CpuLikelihood, NonOverlap, Observation,
    synth::{LabelNoise, render_observation},
};
use skeleton::nalgebra::{Point3, Vector3};
use skeleton::{BatchForwardKinematics, Posing, presets};
use smc::{BoxError, Likelihood, PerParticle, Prepare, Prepared};
use track::synthetic::level_camera;

/// [`Posing`] that counts its calls.
struct CountedPosing<'a>(Posing<'a>, AtomicUsize);

impl Prepare<Observation> for CountedPosing<'_> {
    type Batch = BatchForwardKinematics;
    fn prepare(
        &self,
        obs: &Observation,
        states: &[f64],
        dim: usize,
        batch: &mut BatchForwardKinematics,
    ) -> Result<(), BoxError> {
        self.1.fetch_add(1, Ordering::Relaxed);
        self.0.prepare(obs, states, dim, batch)
    }
}

#[test]
fn constraints_region_and_prior_share_one_forward_kinematics() {
    let skel = presets::human();
    let camera = level_camera([0.0, 1.0, 4.0], [0.0, 1.0, 0.0], 40.0, 80, 60).unwrap();
    let obs =
        render_observation(&skel, &camera, &skel.rest_pose(), &LabelNoise::default(), 1).unwrap();
    let problem = HumanProblem::new(&skel).unwrap();
    let rest = skel.forward_kinematics(&skel.rest_pose()).unwrap();
    let hands = problem
        .hands
        .map(|j| Point3::from(rest[j].translation.vector) + Vector3::new(0.05, 0.1, 0.0));
    let constraints = problem.constraints(&skel, &hands, 0.01, 0.01).unwrap();
    let region = CpuLikelihood::new(skel.clone(), camera.clone(), NonOverlap::default());
    let prior = |_: &Observation, x: &[f64]| -0.5 * x[3..].iter().map(|a| a * a).sum::<f64>();
    let n = 200;
    let dof = skel.dof();
    let states = labels::synth::perturbed_poses(&skel, &skel.rest_pose(), n, 7);

    let terms = (
        ConstraintLikelihood {
            skeleton: &skel,
            constraints: &constraints,
            temperature: 4.0,
        },
        &region,
        PerParticle(prior),
    );
    let mut lik = Prepared::new(
        CountedPosing(Posing(&skel), AtomicUsize::new(0)),
        BatchForwardKinematics::new(),
        terms,
    );
    let mut out = vec![0.0; n];
    lik.log_likelihood(&obs, &states, dof, &mut out).unwrap();
    assert_eq!(lik.terms().0.skeleton.len(), skel.len());

    // Each term alone, with forward kinematics of its own.
    let mut region_alone = CpuLikelihood::new(skel.clone(), camera, NonOverlap::default());
    let region_ll = region_alone
        .evaluate(&obs, &states)
        .unwrap()
        .log_likelihood
        .clone();
    let mut differs = 0;
    for i in 0..n {
        let x = &states[i * dof..(i + 1) * dof];
        let world = skel.forward_kinematics(x).unwrap();
        let expected =
            0.0 + -constraints.cost(&skel, &world, x) / 4.0 + region_ll[i] + prior(&obs, x);
        assert_eq!(out[i], expected, "particle {i}");
        differs += usize::from(region_ll[i] != region_ll[0]);
    }
    assert!(differs > n / 2, "the region term varies over the batch");
    assert_eq!(
        lik.batch().len(),
        n,
        "the batch holds the cloud's transforms"
    );
    assert_eq!(
        lik.preparation().1.load(Ordering::Relaxed),
        1,
        "one forward kinematics"
    );
    lik.log_likelihood(&obs, &states, dof, &mut out).unwrap();
    assert_eq!(
        lik.preparation().1.load(Ordering::Relaxed),
        2,
        "one per call"
    );
}
