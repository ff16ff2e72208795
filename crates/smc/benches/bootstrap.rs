//! One full bootstrap-filter step (resample, propagate, weigh) on the 1-D
//! linear-Gaussian model with 10⁶ particles, on 1 thread and on all.
//!
//! `CARGO_TARGET_DIR=/work/target-smc cargo bench -p smc --bench bootstrap`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use smc::lgssm::Lgssm;
use smc::{Filter, FilterConfig, ParticleSet, ResamplePolicy, Resampling};

const N: usize = 1_000_000;

fn bench_step(c: &mut Criterion) {
    // x₀ ~ N(0, 1), x_t = 0.9 x_{t−1} + N(0, 0.5), y = x + N(0, 0.3): the
    // model is both the bootstrap proposal and the likelihood.
    let model = Lgssm::scalar(0.9, 0.5, 1.0, 0.3, 0.0, 1.0).expect("valid model");
    let mut group = c.benchmark_group("bootstrap_step_1e6");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(20);
    let all = rayon::current_num_threads();
    for threads in [1, all] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("thread pool");
        let config = FilterConfig {
            seed: 3,
            scheme: Resampling::Systematic,
            policy: ResamplePolicy::Always,
            ..FilterConfig::default()
        };
        let mut filter = Filter::new(config).expect("valid config");
        let mut particles = ParticleSet::new(N, 1).expect("N > 0");
        pool.install(|| filter.step(&mut particles, &model, &model, &0.0))
            .expect("first step");
        // Observations that keep the cloud where the model puts it.
        let mut y = 0.0;
        group.bench_function(format!("systematic_always_{threads}_threads"), |b| {
            b.iter(|| {
                y = -y + 0.25;
                let report = pool
                    .install(|| filter.step(&mut particles, &model, &model, &y))
                    .expect("step");
                black_box(report);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_step);
criterion_main!(benches);
