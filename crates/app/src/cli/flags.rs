//! The libraries' errors in the command line's words. The libraries name
//! what is wrong by their own names (a [`vision::VisionError::Parameter`]'s
//! parameter, a tracking session's setting); the commands name it by its
//! flag. Every command's error passes through [`in_flag_words`]
//! ([`super::run`]), as does the tracking window's start.

use anyhow::anyhow;

use super::keypoints::backend_error;

/// The flag that sets a library parameter or field named `name`, where a
/// flag does: the tracking session's fields ([`track::Field::name`]) and
/// the vision library's parameters that a flag sets.
pub fn flag_for(name: &str) -> Option<&'static str> {
    Some(match name {
        "frames" => "--frames",
        "camera" => "--camera",
        "fov" => "--fov",
        "body" => "--bvh",
        "subject_height" => "--subject-height",
        "init" => "--init",
        "init_frame" => "--frame",
        "label_size" => "--label-width/--label-height",
        "background" => "--background",
        "background_frames" => "--background-frames",
        "track" => "--track",
        "observation" => "--observation",
        "particles" => "--particles",
        "sigma_f" => "--sigma-f",
        "keypoint_sigma" => "--keypoint-sigma",
        "keypoint_depth_sigma" => "--keypoint-depth-sigma",
        "sigma_translation" => "--sigma-translation",
        "sigma_limb" => "--sigma-limb",
        "sigma_trunk" => "--sigma-trunk",
        "anatomy_weight" => "--anatomy-weight",
        "arm_prior_weight" => "--arm-prior-weight",
        "arm_prior_table" => "--arm-prior-table",
        "out_csv" => "--out-csv",
        "out_bvh" => "--out-bvh",
        _ => return None,
    })
}

/// `e` in the command line's words: a library's parameter or setting that
/// a flag sets is named by that flag; any other error is returned as it
/// is.
pub fn in_flag_words(e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<track::SessionError>() {
        Some(track::SessionError::KeypointBackend { backend, source }) => {
            return backend_error(*backend, source);
        }
        Some(track::SessionError::Input {
            field: Some(field),
            what,
            message,
        }) => {
            let flag = flag_for(field.name()).unwrap_or(field.name());
            return if what.is_empty() {
                anyhow!("{flag}: {message}")
            } else {
                anyhow!("{flag} {what}: {message}")
            };
        }
        Some(track::SessionError::SameOutput {
            first,
            second,
            path,
        }) => {
            let flag = |f: &track::Field| flag_for(f.name()).unwrap_or(f.name());
            return anyhow!(
                "{} and {} name the same file {path}: give each output its own path",
                flag(first),
                flag(second)
            );
        }
        _ => {}
    }
    if let Some(vision::VisionError::Parameter {
        parameter,
        value,
        message,
    }) = e.downcast_ref::<vision::VisionError>()
        && let Some(flag) = flag_for(parameter)
    {
        return anyhow!("{flag} {value}: {message}");
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The library names the setting; the command line names the flag.
    #[test]
    fn library_names_become_flags() {
        let session = anyhow::Error::from(track::SessionError::KeypointBackend {
            backend: keypoints::DetectorBackend::Gpu,
            source: keypoints::Error::NoGpu("no adapter: none found".into()),
        });
        assert!(
            session.to_string().contains("keypoint_backend"),
            "{session}"
        );
        let e = in_flag_words(session).to_string();
        assert!(e.starts_with("--keypoint-backend gpu: "), "{e}");
        let vision = anyhow::Error::from(vision::VisionError::parameter(
            "background_frames",
            0,
            "must be ≥ 1",
        ))
        .context("while learning the background");
        let e = in_flag_words(vision).to_string();
        assert_eq!(e, "--background-frames 0: must be ≥ 1");
        let unknown = anyhow::Error::from(vision::VisionError::parameter("tile", 3, "odd"));
        assert_eq!(in_flag_words(unknown).to_string(), "invalid tile = 3: odd");
        let input = anyhow::Error::from(track::SessionError::Input {
            field: Some(track::Field::SigmaF),
            what: "-1".into(),
            message: "must be finite and > 0".into(),
        });
        assert_eq!(
            in_flag_words(input).to_string(),
            "--sigma-f -1: must be finite and > 0"
        );
        let other = in_flag_words(anyhow!("something else")).to_string();
        assert_eq!(other, "something else");
    }

    /// Every field of a tracking session has a flag, and `posecloud track`
    /// has that flag (`--label-width/--label-height`: both).
    #[test]
    fn every_session_field_has_a_track_flag() {
        use clap::Args as _;
        let command = super::super::track::TrackArgs::augment_args(clap::Command::new("track"));
        let longs: Vec<String> = command
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        for field in track::Field::ALL {
            let flags = flag_for(field.name()).unwrap_or_else(|| panic!("{field:?} has no flag"));
            for flag in flags.split('/') {
                assert!(
                    longs.iter().any(|l| l == flag),
                    "{field:?}: {flag} not in {longs:?}"
                );
            }
        }
    }
}
