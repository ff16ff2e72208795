//! Frame sources and segmentation (RTPF §IV-D). Work in progress (issue 11).
