//! Batched forward kinematics of 10,000 poses: the 90-DOF chain and the
//! 39-joint human, on 1 and 2 threads. Throughput is in poses.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use skeleton::{BatchForwardKinematics, PoseBatch, Skeleton, presets};

fn random_batch(s: &Skeleton, n: usize) -> PoseBatch {
    let mut rng = Pcg64::seed_from_u64(7);
    let mut batch = PoseBatch::rest(s, n);
    for i in 0..n {
        let p = batch.pose_mut(i);
        for x in p.iter_mut() {
            *x = rng.random_range(-1.0..1.0);
        }
        s.clamp_to_limits(p);
    }
    batch
}

fn bench(c: &mut Criterion) {
    const N: usize = 10_000;
    let mut group = c.benchmark_group("batched_fk_10k");
    group.throughput(Throughput::Elements(N as u64));
    for (name, s) in [
        ("chain90", presets::chain(30, 3.0)),
        ("human", presets::human()),
    ] {
        let batch = random_batch(&s, N);
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut fk = BatchForwardKinematics::new();
            group.bench_function(format!("{name}/{threads}t"), |b| {
                pool.install(|| b.iter(|| fk.compute(&s, &batch).unwrap()))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
