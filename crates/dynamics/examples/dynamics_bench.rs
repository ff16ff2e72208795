//! Speed of the dynamics terms SPARSE needs every frame: `M(q)` by CRBA and
//! `C(q, v)` by RNEA on the 96-DOF CMU human (the paper's size, SPARSE §2.1)
//! and the 59-parameter preset human, one core, plus forward dynamics (ABA,
//! and CRBA + sparse LᵀL) and a point Jacobian; with `--pinocchio`,
//! Pinocchio's `crba` + `nle` and `aba` on the same
//! models in the same run (through its Python bindings, whose per-call
//! overhead is measured on a 1-DOF model and reported beside it).
//!
//! `cargo run --release -p dynamics --example dynamics_bench [-- --pinocchio]`

use std::hint::black_box;
use std::time::Instant;

use anyhow::Context;
use dynamics::{MassSource, Model, ModelOptions};
use nalgebra::{DMatrix, Vector3};
use rand::{RngExt, SeedableRng};

/// Best over `batches` of the mean time per call of `f` (µs): on a shared
/// machine the fastest batch is the one least disturbed by other processes.
fn time_us(batches: usize, per_batch: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..per_batch {
        f();
    }
    let means: Vec<f64> = (0..batches)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..per_batch {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / per_batch as f64
        })
        .collect();
    means.into_iter().fold(f64::INFINITY, f64::min)
}

struct Row {
    name: &'static str,
    nv: usize,
    bodies: usize,
    crba: f64,
    rnea: f64,
    both: f64,
    fd: f64,
    fd_crba: f64,
    jac: f64,
}

fn bench(name: &'static str, model: &Model) -> anyhow::Result<Row> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
    let n = model.nv();
    let q: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let v: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let tau: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let mut data = model.data();
    let mut jac = DMatrix::zeros(3, n);
    let leaf = model.skeleton().len() - 1;
    let point = Vector3::new(0.0, 0.05, 0.0);
    let (batches, per) = (101, 500);
    let crba = time_us(batches, per, || {
        black_box(model.mass_matrix(&mut data, black_box(&q)).unwrap());
    });
    let rnea = time_us(batches, per, || {
        black_box(model.bias_forces(&mut data, black_box(&q), &v).unwrap());
    });
    let both = time_us(batches, per, || {
        model
            .mass_matrix_and_bias(&mut data, black_box(&q), &v)
            .unwrap();
        black_box(data.mass_matrix());
    });
    let fd = time_us(batches, per, || {
        black_box(
            model
                .forward_dynamics(&mut data, black_box(&q), &v, &tau)
                .unwrap(),
        );
    });
    let fd_crba = time_us(batches, per, || {
        black_box(
            model
                .forward_dynamics_crba(&mut data, black_box(&q), &v, &tau)
                .unwrap(),
        );
    });
    let jt = time_us(batches, per, || {
        model
            .point_jacobian(&mut data, black_box(&q), leaf, &point, &mut jac)
            .unwrap();
        black_box(&jac);
    });
    Ok(Row {
        name,
        nv: n,
        bodies: model.bodies().len(),
        crba,
        rnea,
        both,
        fd,
        fd_crba,
        jac: jt,
    })
}

fn main() -> anyhow::Result<()> {
    let with_pinocchio = std::env::args().any(|a| a == "--pinocchio");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let cmu = skeleton::Bvh::load(format!("{root}/assets/motions/cmu_131_01_walk.bvh"))?;
    let cmu = Model::from_skeleton_with(&cmu.skeleton, &ModelOptions::bvh_human(70.0))?;
    let human = Model::from_skeleton(&skeleton::presets::human(), MassSource::Skeleton)?;
    let arm7 = Model::from_urdf(format!("{root}/assets/robots/arm7.urdf"))?;
    let rows = [
        bench("cmu", &cmu)?,
        bench("human", &human)?,
        bench("arm7", &arm7)?,
    ];
    println!("One core, release build, best of 101 batches of 500 calls (µs per call):\n");
    println!(
        "| model | nv | bodies | M (CRBA) | C (RNEA) | M + C | forward dynamics (ABA) | forward dynamics (CRBA + LᵀL) | point Jacobian |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            r.name, r.nv, r.bodies, r.crba, r.rnea, r.both, r.fd, r.fd_crba, r.jac
        );
    }
    if with_pinocchio {
        let dir = std::env::temp_dir().join(format!("dynamics_bench_{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        for (name, model) in [("cmu", &cmu), ("human", &human), ("arm7", &arm7)] {
            std::fs::write(
                dir.join(format!("{name}.json")),
                dynamics::model_to_json(model),
            )?;
        }
        let out = std::process::Command::new("python3")
            .arg(format!("{root}/tools/dynamics_fixtures.py"))
            .arg("--bench")
            .arg(&dir)
            .env("OMP_NUM_THREADS", "1")
            .output()
            .context("running python3 tools/dynamics_fixtures.py --bench (pip install pin)")?;
        let _ = std::fs::remove_dir_all(&dir);
        if !out.status.success() {
            anyhow::bail!(
                "Pinocchio benchmark failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // Lines "name crba_us nle_us aba_us overhead_us".
        let text = String::from_utf8_lossy(&out.stdout);
        println!("\nPinocchio (Python bindings, same machine, same run; µs per call):\n");
        println!(
            "| model | pin crba + nle | binding overhead (2 calls) | pin M + C net | ours M + C | ours / pin | pin aba net | ours ABA | ours / pin |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() != 5 {
                continue;
            }
            let (crba, nle, aba, overhead): (f64, f64, f64, f64) =
                (f[1].parse()?, f[2].parse()?, f[3].parse()?, f[4].parse()?);
            let Some(ours) = rows.iter().find(|r| r.name == f[0]) else {
                continue;
            };
            let pin = crba + nle;
            let net = (pin - 2.0 * overhead).max(1e-3);
            let aba_net = (aba - overhead).max(1e-3);
            println!(
                "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                f[0],
                pin,
                2.0 * overhead,
                net,
                ours.both,
                ours.both / net,
                aba_net,
                ours.fd,
                ours.fd / aba_net
            );
        }
    }
    Ok(())
}
