//! The 33 BlazePose landmarks, their names, and one detection's keypoints.
//!
//! Names are lower snake case with the *subject's* side, as MediaPipe and COCO
//! write them: `left_elbow` is the person's left elbow, which appears on the
//! right of the image when they face the camera.

use crate::roi::Roi;

/// Number of body landmarks BlazePose reports (its model also predicts two
/// auxiliary ROI points and four unused rows, 39 in all).
pub const NUM_LANDMARKS: usize = 33;

/// BlazePose's landmark names, in the model's output order.
pub const LANDMARK_NAMES: [&str; NUM_LANDMARKS] = [
    "nose",
    "left_eye_inner",
    "left_eye",
    "left_eye_outer",
    "right_eye_inner",
    "right_eye",
    "right_eye_outer",
    "left_ear",
    "right_ear",
    "mouth_left",
    "mouth_right",
    "left_shoulder",
    "right_shoulder",
    "left_elbow",
    "right_elbow",
    "left_wrist",
    "right_wrist",
    "left_pinky",
    "right_pinky",
    "left_index",
    "right_index",
    "left_thumb",
    "right_thumb",
    "left_hip",
    "right_hip",
    "left_knee",
    "right_knee",
    "left_ankle",
    "right_ankle",
    "left_heel",
    "right_heel",
    "left_foot_index",
    "right_foot_index",
];

/// The COCO-style subset a tracker and the CSV output use: the nose and the
/// twelve limb joints.
pub const TRACKED_KEYPOINTS: [&str; 13] = [
    "nose",
    "left_shoulder",
    "right_shoulder",
    "left_elbow",
    "right_elbow",
    "left_wrist",
    "right_wrist",
    "left_hip",
    "right_hip",
    "left_knee",
    "right_knee",
    "left_ankle",
    "right_ankle",
];

/// Index of a landmark name in [`LANDMARK_NAMES`].
pub fn landmark_index(name: &str) -> Option<usize> {
    LANDMARK_NAMES.iter().position(|n| *n == name)
}

/// One landmark in input-frame pixels.
///
/// Pixel `k` spans `[k, k + 1)`, so the centre of the top-left pixel is
/// `(0.5, 0.5)`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Keypoint {
    /// Column, pixels.
    pub u: f32,
    /// Row, pixels.
    pub v: f32,
    /// Depth relative to the hips' midpoint, in the same pixel scale (smaller
    /// is nearer the camera). Coarse; BlazePose's own 3D is not trusted here.
    pub z: f32,
    /// Confidence that the landmark is visible (not occluded), in `[0, 1]`:
    /// MediaPipe's `visibility`, the sigmoid of the model's logit.
    pub score: f32,
    /// Confidence that the landmark is inside the frame, in `[0, 1]`:
    /// MediaPipe's `presence`.
    pub presence: f32,
}

/// One detection: the 33 landmarks, the person's presence, and the ROI the
/// model saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Keypoints {
    /// In [`LANDMARK_NAMES`] order.
    pub points: [Keypoint; NUM_LANDMARKS],
    /// Probability that the crop holds a person (the model's pose flag);
    /// MediaPipe drops a track below 0.5.
    pub presence: f32,
    /// The crop the model ran on.
    pub roi: Roi,
    /// BlazePose's two auxiliary points (input pixels): the hips' midpoint
    /// and a point that fixes the body's size and rotation. They give the
    /// next frame's ROI ([`Keypoints::tracking_roi`]).
    pub alignment: [[f32; 2]; 2],
}

impl Keypoints {
    /// The landmark called `name` (see [`LANDMARK_NAMES`]).
    pub fn get(&self, name: &str) -> Option<&Keypoint> {
        landmark_index(name).map(|i| &self.points[i])
    }

    /// The [`TRACKED_KEYPOINTS`] with their names, in that order.
    pub fn tracked(&self) -> impl Iterator<Item = (&'static str, &Keypoint)> + '_ {
        TRACKED_KEYPOINTS.iter().map(move |name| {
            let i = landmark_index(name).expect("TRACKED_KEYPOINTS are landmark names");
            (*name, &self.points[i])
        })
    }

    /// MediaPipe's tracking ROI for the next frame: centred on the hips'
    /// midpoint, side 2 × 1.25 × the distance to the second alignment point,
    /// rotated so the body stands upright in the crop when `rotate`
    /// (MediaPipe's `pose_landmarks_to_roi`); upright (`rotation = 0`)
    /// otherwise.
    pub fn tracking_roi(&self, rotate: bool) -> Roi {
        Roi::from_alignment(
            self.alignment[0],
            self.alignment[1],
            Roi::MEDIAPIPE_SCALE,
            rotate,
        )
    }

    /// Axis-aligned box around the landmarks whose presence is at least
    /// `min_presence` (for a caller that wants a box rather than a ROI).
    pub fn bounding_box(&self, min_presence: f32) -> Option<crate::PersonBox> {
        crate::PersonBox::from_points(
            self.points
                .iter()
                .filter(|p| p.presence >= min_presence)
                .map(|p| [p.u, p.v]),
        )
        .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_tracked_ones_exist() {
        for (i, a) in LANDMARK_NAMES.iter().enumerate() {
            assert_eq!(landmark_index(a), Some(i));
        }
        for name in TRACKED_KEYPOINTS {
            assert!(landmark_index(name).is_some(), "{name}");
        }
        assert_eq!(landmark_index("left_elbow"), Some(13));
        assert_eq!(landmark_index("right_ankle"), Some(28));
        assert_eq!(landmark_index("elbow"), None);
    }
}
