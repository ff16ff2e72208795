//! The likelihood back end: RTPF Eq. 1–2 on the GPU ([`gpu::GpuLikelihood`],
//! RTPF §VI) when an adapter exists, else on the CPU
//! ([`labels::CpuLikelihood`]); both give the same counts (bit for bit on
//! lavapipe), so the choice changes speed, not results.

use gpu::{GpuLikelihood, HeadlessGpu};
use labels::{Camera, CpuLikelihood, Evaluation, LabelMap, NonOverlap, Observation};
use skeleton::{BatchForwardKinematics, Skeleton};

use crate::error::{Result, TrackError};

/// Which back end to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// The GPU when wgpu finds a hardware adapter; else (no adapter, or
    /// a software one such as lavapipe, which runs the same work on the
    /// CPU about 5× slower than [`labels::CpuLikelihood`], see the README)
    /// the CPU.
    #[default]
    Auto,
    Cpu,
    /// The GPU or an error.
    Gpu,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            other => Err(format!("unknown back end `{other}` (auto, cpu, gpu)")),
        }
    }
}

/// A device an app already owns (e.g. Bevy's), to share with the tracker.
#[derive(Clone, Debug)]
pub struct SharedDevice {
    pub device: gpu::wgpu::Device,
    pub queue: gpu::wgpu::Queue,
}

/// The chosen back end.
#[derive(Debug)]
pub enum Backend {
    Cpu {
        likelihood: Box<CpuLikelihood>,
        /// Why `Auto` did not pick the GPU, if it looked.
        note: Option<String>,
    },
    Gpu {
        likelihood: Box<GpuLikelihood>,
        adapter: String,
        /// On the caller's device ([`SharedDevice`]), not a headless one.
        shared: bool,
    },
}

impl Backend {
    /// Builds the back end `choice` asks for; `shared` (an app's device) is
    /// used instead of requesting a headless one.
    ///
    /// # Errors
    /// [`TrackError::Likelihood`] when `Gpu` was asked for and no adapter
    /// or device is available, or the label map is invalid.
    pub fn new(
        choice: BackendChoice,
        shared: Option<SharedDevice>,
        skeleton: &Skeleton,
        camera: &Camera,
        model: NonOverlap,
        label_map: LabelMap,
    ) -> Result<Self> {
        let err = |backend: &str| {
            let backend = backend.to_string();
            move |source| TrackError::Likelihood { backend, source }
        };
        let cpu = |note: Option<String>| -> Result<Self> {
            let mut l = CpuLikelihood::new(skeleton.clone(), camera.clone(), model);
            l.set_label_map(label_map)
                .map_err(|e| err("cpu")(e.into()))?;
            Ok(Self::Cpu {
                likelihood: Box::new(l),
                note,
            })
        };
        let gpu = |hardware_only: bool| -> std::result::Result<Self, gpu::GpuError> {
            let (device, queue, info) = match &shared {
                Some(s) => (s.device.clone(), s.queue.clone(), s.device.adapter_info()),
                None => {
                    let g = HeadlessGpu::new()?;
                    (g.device, g.queue, g.info)
                }
            };
            let adapter = gpu::describe_adapter(&info);
            if hardware_only && info.device_type == gpu::wgpu::DeviceType::Cpu {
                return Err(gpu::GpuError::NoAdapter(format!(
                    "{adapter} is a software adapter, slower than the CPU likelihood"
                )));
            }
            let mut l = GpuLikelihood::new(device, queue, skeleton.clone(), camera.clone(), model)?;
            l.set_label_map(label_map)?;
            Ok(Self::Gpu {
                likelihood: Box::new(l),
                adapter,
                shared: shared.is_some(),
            })
        };
        match choice {
            BackendChoice::Cpu => cpu(None),
            BackendChoice::Gpu => gpu(false).map_err(err("gpu")),
            BackendChoice::Auto => gpu(true).or_else(|e| cpu(Some(e.to_string()))),
        }
    }

    /// One line for the user: which back end, on which adapter.
    pub fn describe(&self) -> String {
        match self {
            Self::Cpu { note, .. } => {
                let mut s = format!(
                    "CPU likelihood ({} rayon threads)",
                    rayon::current_num_threads()
                );
                if let Some(n) = note {
                    s += &format!("; not the GPU: {n}");
                }
                s
            }
            Self::Gpu {
                adapter, shared, ..
            } => {
                let whose = if *shared { ", the app's device" } else { "" };
                format!("GPU likelihood on {adapter}{whose}")
            }
        }
    }

    pub fn is_gpu(&self) -> bool {
        matches!(self, Self::Gpu { .. })
    }

    /// Whether the GPU back end runs on the caller's device.
    pub fn is_shared(&self) -> bool {
        matches!(self, Self::Gpu { shared: true, .. })
    }

    /// RTPF Eq. 1–2 for a batch of full poses.
    ///
    /// # Errors
    /// The back end's error, naming it.
    pub fn evaluate(&mut self, obs: &Observation, poses: &[f64]) -> Result<&Evaluation> {
        let name = if self.is_gpu() { "gpu" } else { "cpu" };
        let r = match self {
            Self::Cpu { likelihood, .. } => likelihood.evaluate(obs, poses).map_err(Into::into),
            Self::Gpu { likelihood, .. } => likelihood.evaluate(obs, poses),
        };
        r.map_err(|source| TrackError::Likelihood {
            backend: name.into(),
            source,
        })
    }

    /// As [`Self::evaluate`], reading the poses' joint transforms from
    /// `fk` (computed once for the batch, e.g. by [`skeleton::Posing`],
    /// and shared with other likelihood terms).
    ///
    /// # Errors
    /// The back end's error, naming it.
    pub fn evaluate_posed(
        &mut self,
        obs: &Observation,
        poses: &[f64],
        fk: &BatchForwardKinematics,
    ) -> Result<&Evaluation> {
        let name = if self.is_gpu() { "gpu" } else { "cpu" };
        let r = match self {
            Self::Cpu { likelihood, .. } => likelihood
                .evaluate_posed(obs, poses, fk)
                .map_err(Into::into),
            Self::Gpu { likelihood, .. } => likelihood.evaluate_posed(obs, poses, fk),
        };
        r.map_err(|source| TrackError::Likelihood {
            backend: name.into(),
            source,
        })
    }

    /// Sets `σ_F` for later batches.
    pub fn set_model(&mut self, model: NonOverlap) {
        match self {
            Self::Cpu { likelihood, .. } => likelihood.set_model(model),
            Self::Gpu { likelihood, .. } => likelihood.set_model(model),
        }
    }

    /// Sets the label map for later batches.
    ///
    /// # Errors
    /// An entry outside `0..=C`.
    pub fn set_label_map(&mut self, map: LabelMap) -> Result<()> {
        let r = match self {
            Self::Cpu { likelihood, .. } => likelihood.set_label_map(map).map_err(Into::into),
            Self::Gpu { likelihood, .. } => likelihood.set_label_map(map),
        };
        r.map_err(|source| TrackError::Likelihood {
            backend: "label map".into(),
            source,
        })
    }
}

/// RTPF Eq. 2 by whichever back end runs, as a term of a body likelihood
/// over forward kinematics prepared once ([`skeleton::Posing`]).
impl smc::Term<Observation, BatchForwardKinematics> for Backend {
    fn add_log_likelihood(
        &self,
        obs: &Observation,
        fk: &BatchForwardKinematics,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> std::result::Result<(), smc::BoxError> {
        match self {
            Self::Cpu { likelihood, .. } => {
                likelihood.add_log_likelihood(obs, fk, states, dim, out)
            }
            Self::Gpu { likelihood, .. } => {
                likelihood.add_log_likelihood(obs, fk, states, dim, out)
            }
        }
    }
}
