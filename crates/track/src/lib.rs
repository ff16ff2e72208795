//! Monocular tracking (RTPF). Work in progress (issue 15).
