//! Resampling of 10⁶ particles, every scheme (throughput in particles/s).
//!
//! `CARGO_TARGET_DIR=/work/target-smc cargo bench -p smc --bench resampling`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use smc::rand::RngExt;
use smc::{Resampling, StreamDomain, Weights, stream_rng};

const N: usize = 1_000_000;

/// Normalised weights of 10⁶ particles with log-weights ~ U(−5, 0): a
/// spread like a moderately informative likelihood (ESS ≈ 0.4 N).
fn weights() -> Weights {
    let mut rng = stream_rng(1, 0, StreamDomain::User(0), 0);
    let log_w: Vec<f64> = (0..N).map(|_| -5.0 * rng.random::<f64>()).collect();
    Weights::from_log_weights(&log_w).expect("finite log-weights")
}

fn bench_resampling(c: &mut Criterion) {
    let w = weights();
    let mut group = c.benchmark_group("resample_1e6");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(30);
    for scheme in Resampling::ALL {
        let mut out = Vec::with_capacity(N);
        let mut rng = stream_rng(2, 0, StreamDomain::Resample, 0);
        group.bench_function(scheme.name(), |b| {
            b.iter(|| {
                scheme
                    .resample(black_box(w.normalised()), N, &mut rng, &mut out)
                    .expect("valid weights");
                black_box(&out);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_resampling);
criterion_main!(benches);
