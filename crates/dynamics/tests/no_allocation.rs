//! The hot loop does not allocate: after `Model::data`, evaluating M, C,
//! inverse and forward dynamics, Jacobians and integration performs no heap
//! allocation (a counting global allocator, in its own test binary).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use dynamics::{Model, ModelOptions};
use nalgebra::{DMatrix, DVector, UnitQuaternion, Vector3};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn evaluating_the_dynamics_does_not_allocate() {
    let path = format!(
        "{}/../../assets/motions/cmu_131_01_walk.bvh",
        env!("CARGO_MANIFEST_DIR")
    );
    let cmu = skeleton::Bvh::load(path).unwrap();
    let model = Model::from_skeleton_with(&cmu.skeleton, &ModelOptions::bvh_human(70.0)).unwrap();
    let n = model.nv();
    let mut data = model.data();
    let q: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    let v: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos()).collect();
    let mut q_next = vec![0.0; n];
    let mut jac = DMatrix::zeros(3, n);
    let mut b = DVector::from_element(n, 1.0);
    let target = UnitQuaternion::from_scaled_axis(Vector3::new(0.1, 0.2, 0.3));
    let leaf = model.skeleton().len() - 1;
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..3 {
        model.mass_matrix_and_bias(&mut data, &q, &v).unwrap();
        model.inverse_dynamics(&mut data, &q, &v, &v).unwrap();
        model.gravity_forces(&mut data, &q).unwrap();
        model.forward_dynamics(&mut data, &q, &v, &v).unwrap();
        model.forward_dynamics_crba(&mut data, &q, &v, &v).unwrap();
        model.solve_mass(&data, &mut b).unwrap();
        model
            .point_jacobian(&mut data, &q, leaf, &Vector3::x(), &mut jac)
            .unwrap();
        model
            .orientation_jacobian(&mut data, &q, leaf, &mut jac)
            .unwrap();
        model
            .orientation_log_jacobian_at(&data, leaf, &target, &mut jac)
            .unwrap();
        model.integrate(&q, &v, 0.01, &mut q_next).unwrap();
    }
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    assert_eq!(
        after - before,
        0,
        "{} allocations in the hot loop",
        after - before
    );
}
