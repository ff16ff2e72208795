//! The libraries' errors in the command line's words. The libraries name
//! what is wrong by their own names (a [`vision::VisionError::Parameter`]'s
//! parameter, a tracking session's setting); the commands name it by its
//! flag. Every command's error passes through [`in_flag_words`]
//! ([`super::run`]), as does the tracking window's start.

use anyhow::anyhow;

use super::keypoints::backend_error;

/// The flag that sets a library parameter or field named `name`, where a
/// flag does.
pub fn flag_for(name: &str) -> Option<&'static str> {
    Some(match name {
        "background" => "--background",
        "background_frames" => "--background-frames",
        _ => return None,
    })
}

/// `e` in the command line's words: a library's parameter or setting that
/// a flag sets is named by that flag; any other error is returned as it
/// is.
pub fn in_flag_words(e: anyhow::Error) -> anyhow::Error {
    if let Some(track::SessionError::KeypointBackend { backend, source }) =
        e.downcast_ref::<track::SessionError>()
    {
        return backend_error(*backend, source);
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
            backend: keypoints::Backend::Gpu,
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
        let other = in_flag_words(anyhow!("something else")).to_string();
        assert_eq!(other, "something else");
    }
}
