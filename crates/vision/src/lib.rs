//! Everything between a camera and the body-part label image the tracker
//! compares its particles with (RTPF §IV-D):
//!
//! - `camera_file`: the TOML camera file → [`labels::Camera`];
//! - `classes`: [`SegClass`] (the label-image ids) and [`ClassMap`], the
//!   one table from [`skeleton::BodyPart`] to segmentation class that the
//!   tracker also uses;
//! - `frame` and `sources`: [`Frame`], the [`FrameSource`] interface and
//!   its image-sequence, `ffmpeg` video, Y4M and V4L2 webcam sources;
//! - `synth`: synthetic frames of a BVH clip with ground truth;
//! - `segment`: RTPF §IV-D background subtraction and body-part classes.
pub mod batch;
mod camera_file;
mod classes;
mod error;
pub mod eval;
mod foreground;
mod frame;
pub mod output;
mod segment;
mod sources;
mod synth;

pub use camera_file::project;
pub use camera_file::{CameraFile, load_camera, resize_camera};
pub use classes::{ClassMap, SEG_CLASSES, SegClass, Sleeves};
pub use error::{Result, VisionError};
pub use foreground::{Blob, Components, EmptyScene, learn_empty_scene};
pub use frame::MAX_FRAME_SIDE;
pub use frame::{Frame, FrameSource, load_rgb};
pub use segment::iou;
pub use segment::{
    BackgroundAccumulator, ColourClass, Gaussian3, LearnReport, SegmentParams, Segmentation,
    Segmenter, Stroke,
};
pub use sources::{DEFAULT_SEQUENCE_FPS, STDERR_LINES, VideoInfo, check_fps, probe, probe_with};
pub use sources::{ImageSequence, VideoFile, Y4mFile, open_source};
pub use sources::{VideoOptions, Webcam, WebcamFormat, WebcamInfo, WebcamOptions, list_webcams};
pub use synth::{
    Appearance, Background, BodyShape, Lighting, RenderOptions, RenderedFrame, SyntheticRenderer,
    SyntheticSource, dress_skeleton, write_render,
};
pub use synth::{RenderSummary, class_preview};
