//! Errors of the tracker and of a tracking session: every one names the
//! setting, joint, file or frame at fault — by the library's own names
//! ([`Field`]); the command line and the window translate those into their
//! flags and controls.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TrackError {
    /// A setting outside its valid range.
    #[error("invalid setting `{field}` = {value}: {reason}")]
    InvalidSetting {
        field: &'static str,
        value: String,
        reason: &'static str,
    },
    /// A pose of the wrong length or with a non-finite value.
    #[error("{what}: {message}")]
    BadPose { what: String, message: String },
    /// A joint the tracker needs is missing from the body.
    #[error("body has no joint named `{name}` ({why})")]
    MissingJoint { name: String, why: &'static str },
    /// The likelihood back end failed.
    #[error("likelihood ({backend}): {source}")]
    Likelihood {
        backend: String,
        #[source]
        source: gpu::GpuError,
    },
    /// A skeleton operation (BVH loading, FK) failed.
    #[error(transparent)]
    Skeleton(#[from] skeleton::SkeletonError),
    /// The particle weights collapsed or were invalid.
    #[error("particle weights at frame {frame}: {source}")]
    Weights {
        frame: u64,
        #[source]
        source: smc::SmcError,
    },
    /// The pose prior could not be learned.
    #[error("pose prior: {0}")]
    Prior(String),
    /// The learned arm prior's samples are unusable; the message names the
    /// table (and its line) where there is one.
    #[error("{0}")]
    ArmPrior(String),
    /// Reading or writing a file failed.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

pub type Result<T, E = TrackError> = std::result::Result<T, E>;

/// What a session's input error is about: a field of its specification
/// ([`crate::SessionSpec`]), settings ([`crate::FilterSettings`]) or
/// outputs ([`crate::run::TrackRun`]). The library names it by
/// [`Field::name`]; the command line names it by its flag, the window by
/// its control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// The frame source ([`crate::SessionSpec::frames`]).
    Frames,
    /// The camera file ([`crate::CameraSpec::File`]).
    Camera,
    /// The default camera's field of view ([`crate::CameraSpec::FieldOfView`]).
    Fov,
    /// The body's BVH file ([`crate::Subject::body`]).
    Body,
    /// [`crate::Subject::height`].
    SubjectHeight,
    /// The known initial pose's file ([`crate::KnownPose::file`]).
    Init,
    /// The known initial pose's frame ([`crate::KnownPose::frame`]).
    InitFrame,
    /// [`crate::SessionSpec::label_size`].
    LabelSize,
    /// The empty scene's image ([`vision::EmptyScene::Image`]).
    Background,
    /// The empty scene's frame count ([`vision::EmptyScene::FirstFrames`]).
    BackgroundFrames,
    /// [`crate::SessionSpec::track`].
    Track,
    /// [`crate::FilterSettings::observation`].
    Observation,
    /// [`crate::FilterSettings::particles`].
    Particles,
    /// [`crate::FilterSettings::sigma_f`].
    SigmaF,
    /// [`crate::FilterSettings::keypoint_sigma`].
    KeypointSigma,
    /// [`crate::FilterSettings::keypoint_depth_sigma`].
    KeypointDepthSigma,
    /// [`crate::FilterSettings::sigma_translation`].
    SigmaTranslation,
    /// [`crate::FilterSettings::sigma_limb`].
    SigmaLimb,
    /// [`crate::FilterSettings::sigma_trunk`].
    SigmaTrunk,
    /// [`crate::FilterSettings::anatomy_weight`].
    AnatomyWeight,
    /// [`crate::FilterSettings::arm_prior_weight`].
    ArmPriorWeight,
    /// The arm prior's table ([`crate::SessionSpec::arm_prior_table`]).
    ArmPriorTable,
    /// The recording's CSV ([`crate::run::TrackRun::out_csv`]).
    OutCsv,
    /// The recording's BVH ([`crate::run::TrackRun::out_bvh`]).
    OutBvh,
}

impl Field {
    /// Every field.
    pub const ALL: [Field; 24] = [
        Field::Frames,
        Field::Camera,
        Field::Fov,
        Field::Body,
        Field::SubjectHeight,
        Field::Init,
        Field::InitFrame,
        Field::LabelSize,
        Field::Background,
        Field::BackgroundFrames,
        Field::Track,
        Field::Observation,
        Field::Particles,
        Field::SigmaF,
        Field::KeypointSigma,
        Field::KeypointDepthSigma,
        Field::SigmaTranslation,
        Field::SigmaLimb,
        Field::SigmaTrunk,
        Field::AnatomyWeight,
        Field::ArmPriorWeight,
        Field::ArmPriorTable,
        Field::OutCsv,
        Field::OutBvh,
    ];

    /// The library's name of the field (its Rust field's name where it has
    /// one).
    pub fn name(self) -> &'static str {
        match self {
            Field::Frames => "frames",
            Field::Camera => "camera",
            Field::Fov => "fov",
            Field::Body => "body",
            Field::SubjectHeight => "subject_height",
            Field::Init => "init",
            Field::InitFrame => "init_frame",
            Field::LabelSize => "label_size",
            Field::Background => "background",
            Field::BackgroundFrames => "background_frames",
            Field::Track => "track",
            Field::Observation => "observation",
            Field::Particles => "particles",
            Field::SigmaF => "sigma_f",
            Field::KeypointSigma => "keypoint_sigma",
            Field::KeypointDepthSigma => "keypoint_depth_sigma",
            Field::SigmaTranslation => "sigma_translation",
            Field::SigmaLimb => "sigma_limb",
            Field::SigmaTrunk => "sigma_trunk",
            Field::AnatomyWeight => "anatomy_weight",
            Field::ArmPriorWeight => "arm_prior_weight",
            Field::ArmPriorTable => "arm_prior_table",
            Field::OutCsv => "out_csv",
            Field::OutBvh => "out_bvh",
        }
    }
}

/// Errors of a session; each names the field (or the frame) and the file
/// or value at fault.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Bad input: `field` (when a field is at fault) and `what`, its value
    /// or file, or without a field the frame or thing at fault.
    #[error("{}: {message}", subject(*.field, .what))]
    Input {
        field: Option<Field>,
        what: String,
        message: String,
    },
    /// Two outputs name the same file.
    #[error("{} and {} name the same file {path}: give each output its own path", .first.name(), .second.name())]
    SameOutput {
        first: Field,
        second: Field,
        path: String,
    },
    /// The tracker failed.
    #[error("tracking: {0}")]
    Track(#[from] TrackError),
    /// The keypoint network cannot run where
    /// [`crate::FilterSettings::keypoint_backend`] asks (`Gpu` without an
    /// adapter, or on a device that cannot run it).
    #[error("setting `keypoint_backend` = {}: {source}", .backend.name())]
    KeypointBackend {
        backend: keypoints::DetectorBackend,
        #[source]
        source: keypoints::Error,
    },
}

/// `field what`, `field` alone, or `what` alone.
fn subject(field: Option<Field>, what: &str) -> String {
    match (field, what.is_empty()) {
        (Some(f), true) => f.name().to_string(),
        (Some(f), false) => format!("{} {what}", f.name()),
        (None, _) => what.to_string(),
    }
}

/// What an input error names: a field and its value, or a thing.
#[derive(Clone, Debug)]
pub(crate) struct Named {
    field: Option<Field>,
    what: String,
}

/// `field` with its value or file `what` (e.g. `path.display()`).
pub(crate) fn named(field: Field, what: impl std::fmt::Display) -> Named {
    Named {
        field: Some(field),
        what: what.to_string(),
    }
}

impl From<&str> for Named {
    fn from(what: &str) -> Self {
        Named {
            field: None,
            what: what.to_string(),
        }
    }
}

impl From<String> for Named {
    fn from(what: String) -> Self {
        Named { field: None, what }
    }
}

impl From<&String> for Named {
    fn from(what: &String) -> Self {
        Named {
            field: None,
            what: what.clone(),
        }
    }
}

impl From<&Named> for Named {
    fn from(n: &Named) -> Self {
        n.clone()
    }
}

/// [`SessionError::Input`] about `what` (a [`named`] field or a thing).
pub(crate) fn input(what: impl Into<Named>, message: impl ToString) -> SessionError {
    let Named { field, what } = what.into();
    SessionError::Input {
        field,
        what,
        message: message.to_string(),
    }
}

/// A vision error's message without the leading `parameter value: ` of a
/// [`vision::VisionError::Parameter`]: the caller names the input itself.
pub(crate) fn vision_message(e: &vision::VisionError) -> String {
    match e {
        vision::VisionError::Parameter { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_errors_name_the_field_and_its_value() {
        let e = input(named(Field::Particles, 0), "need at least one particle");
        assert_eq!(e.to_string(), "particles 0: need at least one particle");
        assert!(matches!(
            e,
            SessionError::Input {
                field: Some(Field::Particles),
                ..
            }
        ));
        let e = input(named(Field::Camera, ""), "bad");
        assert_eq!(e.to_string(), "camera: bad");
        let e = input("frame 3", "unreadable");
        assert_eq!(e.to_string(), "frame 3: unreadable");
        let names: std::collections::HashSet<_> = Field::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), Field::ALL.len(), "names are distinct");
    }
}
