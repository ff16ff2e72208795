//! The background-thread wrapper: submissions never wait for the network,
//! the latest result carries its frame index.

use keypoints::{AsyncDetector, Detector, PersonBox};
use std::time::{Duration, Instant};

#[test]
fn latest_result_carries_its_frame_index() {
    let async_detector = AsyncDetector::spawn(Detector::new().unwrap()).unwrap();
    assert!(async_detector.latest().is_none());
    let (w, h) = (64u32, 48u32);
    let rgb = vec![90u8; (w * h * 3) as usize];
    let person = PersonBox::new(20.0, 4.0, 44.0, 44.0);
    assert!(async_detector.submit(0, &rgb, w, h, person).is_ok());
    // Bad input is refused at once, without reaching the worker.
    assert!(async_detector.submit(1, &rgb[3..], w, h, person).is_err());
    // A burst of frames: each submit returns at once; waiting frames are
    // replaced by newer ones.
    let start = Instant::now();
    for frame in 1..=5 {
        async_detector.submit(frame, &rgb, w, h, person).unwrap();
    }
    assert!(
        start.elapsed() < Duration::from_millis(50),
        "submit blocked for {:?}",
        start.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(d) = async_detector.latest()
            && d.frame == 5
        {
            // A flat grey frame holds no person; the call still succeeds.
            let kp = d.result.unwrap();
            assert!(kp.points.iter().all(|p| p.u.is_finite() && p.v.is_finite()));
            break;
        }
        assert!(Instant::now() < deadline, "no result for frame 5");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!async_detector.busy());
}
