//! The drawing budget of the particle cloud, shared by every scene: the
//! cloud draws its heaviest particles up to a cap. By default the cap
//! adapts to the measured frame time — it shrinks while frames are slower
//! than [`SLOW_FRAME_S`] and grows while they are faster than
//! [`FAST_FRAME_S`] — so that a large cloud never makes the window
//! unresponsive (on a software renderer every drawn segment costs CPU
//! time); the panel's slider fixes it instead (`--cloud-limit N` at
//! start-up).

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_egui::egui;

use super::scene_common::SceneClock;

/// The cap a window starts with.
pub const DEFAULT_CAP: usize = 300;
/// The adaptive cap never goes below this (the cloud stays readable).
pub const MIN_AUTO_CAP: usize = 100;
/// The most particles a cap may ask for.
pub const MAX_CAP: usize = 20_000;
/// Median frame times (s) above which the adaptive cap shrinks, and below
/// which it grows.
pub const SLOW_FRAME_S: f64 = 0.050;
pub const FAST_FRAME_S: f64 = 0.030;
/// Frames between two adaptations (the median of these frames decides).
pub const ADAPT_EVERY: usize = 15;

/// The cloud's drawing budget.
#[derive(Resource, Clone, Debug, PartialEq)]
pub struct CloudBudget {
    /// Draw the cloud at all.
    pub show: bool,
    /// Adapt the cap to the frame time (else `cap` is the user's).
    pub auto: bool,
    /// Draw at most this many particles, the heaviest.
    pub cap: usize,
    /// Frames measured since the last adaptation.
    seen: usize,
}

impl Default for CloudBudget {
    fn default() -> Self {
        Self {
            show: true,
            auto: true,
            cap: DEFAULT_CAP,
            seen: 0,
        }
    }
}

impl CloudBudget {
    /// `--cloud-limit N`: a fixed cap (0 hides the cloud).
    pub fn fixed(limit: usize) -> Self {
        Self {
            show: limit > 0,
            auto: false,
            cap: limit.clamp(1, MAX_CAP),
            seen: 0,
        }
    }

    /// How many particles to draw of `particles`.
    pub fn drawn(&self, particles: usize) -> usize {
        if self.show {
            self.cap.min(particles)
        } else {
            0
        }
    }

    /// One adaptation step from the median of recent frame times, for a
    /// cloud of `particles` (the cap never grows past what exists).
    pub fn adapt(&mut self, median_frame_s: f64, particles: usize) {
        if !self.auto || !median_frame_s.is_finite() {
            return;
        }
        if median_frame_s > SLOW_FRAME_S {
            self.cap = ((self.cap as f64 * 0.8) as usize).max(MIN_AUTO_CAP);
        } else if median_frame_s < FAST_FRAME_S && self.cap < particles.min(MAX_CAP) {
            self.cap = ((self.cap as f64 * 1.25).ceil() as usize).min(particles.min(MAX_CAP));
        }
    }

    /// The panel's controls: draw or not, adaptive or a slider.
    pub fn controls(&mut self, ui: &mut egui::Ui, particles: usize) {
        ui.checkbox(&mut self.show, "draw the particle cloud");
        if !self.show {
            return;
        }
        ui.horizontal(|ui| {
            ui.checkbox(&mut self.auto, "adapt to the frame rate");
            if self.auto {
                ui.label(format!("({} of {particles})", self.drawn(particles)));
            }
        });
        if !self.auto {
            ui.add(
                egui::Slider::new(&mut self.cap, 1..=MAX_CAP)
                    .logarithmic(true)
                    .text("draw heaviest"),
            );
        }
    }
}

/// How many particles the scene's cloud holds (set by the scene each
/// frame; the adaptive cap grows at most to it).
#[derive(Resource, Default, Debug)]
pub struct CloudSize(pub usize);

/// What a scene's draw system needs to draw its particle cloud within the
/// budget: the budget, the cloud's size reported back to it, and the
/// particle order reused from frame to frame.
#[derive(SystemParam)]
pub struct CloudPainter<'w, 's> {
    budget: Res<'w, CloudBudget>,
    size: ResMut<'w, CloudSize>,
    order: Local<'s, Vec<usize>>,
}

impl CloudPainter<'_, '_> {
    /// Reports a cloud of `particles` to the budget ([`CloudSize`]); how
    /// many of them to draw.
    pub fn report(&mut self, particles: usize) -> usize {
        self.size.0 = particles;
        self.budget.drawn(particles)
    }

    /// Reports the cloud of `weights` and draws its heaviest particles
    /// within the budget ([`super::draw_particle_cloud`]: `draw(i, colour)`
    /// draws particle `i`'s segments).
    pub fn draw(&mut self, weights: &[f64], draw: impl FnMut(usize, Color)) {
        let cap = self.report(weights.len());
        super::draw_particle_cloud(weights, cap, &mut self.order, draw);
    }
}

/// Every [`ADAPT_EVERY`] frames, adapts the cap to the median frame time
/// of those frames.
pub fn adapt_cloud_budget(
    mut budget: ResMut<CloudBudget>,
    clock: Res<SceneClock>,
    size: Res<CloudSize>,
) {
    budget.seen += 1;
    if budget.seen < ADAPT_EVERY {
        return;
    }
    let Some(median) = clock.times.recent_median(ADAPT_EVERY) else {
        return;
    };
    budget.seen = 0;
    budget.adapt(median, size.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_frames_shrink_the_cap_to_its_floor_and_fast_ones_grow_it_to_the_cloud() {
        let mut b = CloudBudget::default();
        for _ in 0..50 {
            b.adapt(0.120, 10_000);
        }
        assert_eq!(b.cap, MIN_AUTO_CAP);
        assert_eq!(b.drawn(10_000), MIN_AUTO_CAP);
        for _ in 0..100 {
            b.adapt(0.010, 10_000);
        }
        assert_eq!(b.cap, 10_000);
        // Between the two thresholds the cap stays.
        b.adapt(0.040, 10_000);
        assert_eq!(b.cap, 10_000);
        // Never more than the cloud holds.
        let mut small = CloudBudget::fixed(50);
        small.auto = true;
        for _ in 0..20 {
            small.adapt(0.010, 200);
        }
        assert_eq!(small.cap, 200);
        assert_eq!(CloudBudget::default().drawn(120), 120);
    }

    #[test]
    fn a_fixed_cap_does_not_adapt_and_zero_hides_the_cloud() {
        let mut b = CloudBudget::fixed(5_000);
        b.adapt(0.5, 10_000);
        assert_eq!(b.cap, 5_000);
        assert!(!CloudBudget::fixed(0).show);
        assert_eq!(CloudBudget::fixed(0).drawn(10), 0);
        let mut nan = CloudBudget::default();
        nan.adapt(f64::NAN, 1000);
        assert_eq!(nan.cap, DEFAULT_CAP);
    }
}
