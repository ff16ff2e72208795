#!/usr/bin/env python3
"""Fetch, convert and reference-run MediaPipe's BlazePose landmark model.

Produces everything under `assets/models/` that `crates/keypoints` needs:

1. `npm pack @mediapipe/pose@VERSION` (Apache-2.0) and check the sha256 of its
   `pose_landmark_<variant>.tflite` files;
2. convert each chosen variant with `tf2onnx` (`--tflite … --opset 13`) and
   store its weights as float16 initializers followed by a `Cast` to float32.
   The TFLite file already holds float16 weights (behind DEQUANTIZE ops, which
   tf2onnx folds into float32 constants), so this halves the file without
   changing a single value; the script checks that every weight round-trips;
3. the test image: scikit-image's `astronaut.png` (Eileen Collins, NASA,
   public domain; shipped inside the scikit-image wheel), fetched with
   `pip download scikit-image==0.26.0 --no-deps`, 2×2 box-averaged to
   256×256;
4. reference outputs of the reference runtime (`ai-edge-litert`, the TFLite
   interpreter) on that image, written to `blazepose_reference.json`:
   - `crop`: the image itself as the 256×256 input tensor (RGB / 255) — raw
     landmark rows (x, y, z, visibility logit, presence logit, crop pixels)
     and the pose flag;
   - `pipeline`: the detector's whole path for a person box — the ROI
     (square, side = 1.25 × the box's long side, centred on the box), the
     bilinear crop (zero border), the model, MediaPipe's heatmap refinement
     (7×7 window, min confidence 0.5), sigmoid scores and the projection back
     to input pixels. The crop and post-processing below are the ones
     `crates/keypoints/src/roi.rs` and `src/lib.rs` implement.

Usage (from the repository root; needs `npm` and a Python venv with
`tf2onnx==1.17.0 tensorflow-cpu==2.21.0 ai-edge-litert==2.3.0 onnx==1.23.2
numpy pillow`):

    python tools/convert_keypoint_model.py            # full (the one used)
    python tools/convert_keypoint_model.py --variants full lite --out /tmp/m

`--skip-convert` only rewrites the image and the reference JSON.
`--time N` also prints the reference runtime's median time per crop over N
runs at 1 and 2 threads (the figures in `docs/keypoints.md`).
"""

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile

import numpy as np
from PIL import Image

NPM_PACKAGE = "@mediapipe/pose"
NPM_VERSION = "0.5.1675469404"
TFLITE_SHA256 = {
    "lite": "f17bfbecadb61c3be1baa8b8d851cc6619c870a87167b32848ad20db306b9d61",
    "full": "e9a5c5cb17f736fafd4c2ec1da3b3d331d6edbe8a0d32395855aeb2cdfd64b9f",
    "heavy": "59e42d71bcd44cbdbabc419f0ff76686595fd265419566bd4009ef703ea8e1fe",
}
SKIMAGE_VERSION = "0.26.0"
ASTRONAUT_SHA256 = "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5"

INPUT_SIZE = 256
HEATMAP_KERNEL = 7
HEATMAP_MIN_CONFIDENCE = 0.5
ROI_SCALE = 1.25
# The person box of the pipeline reference, in pixels of the 256×256 test
# image: (x_min, y_min, x_max, y_max). The astronaut fills most of the frame
# and is cut off at the bottom, so the ROI also exercises the zero border.
PIPELINE_BOX = (8.0, 4.0, 184.0, 256.0)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def npm_pack(work):
    subprocess.run(["npm", "pack", f"{NPM_PACKAGE}@{NPM_VERSION}"], cwd=work, check=True,
                   stdout=subprocess.DEVNULL)
    tgz = os.path.join(work, f"mediapipe-pose-{NPM_VERSION}.tgz")
    with tarfile.open(tgz) as t:
        t.extractall(work, filter="data")
    return os.path.join(work, "package")


def compact_to_f16(onnx_path):
    """Store float32 weights that are exact float16 values as float16 + Cast."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(onnx_path)
    graph = model.graph
    casts = []
    kept = []
    for init in graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype != np.float32 or arr.size < 16:
            kept.append(init)
            continue
        half = arr.astype(np.float16)
        if not np.array_equal(half.astype(np.float32), arr):
            raise SystemExit(f"{onnx_path}: weight {init.name} is not exactly float16")
        kept.append(numpy_helper.from_array(half, init.name + "_f16"))
        casts.append(helper.make_node("Cast", [init.name + "_f16"], [init.name],
                                      to=onnx.TensorProto.FLOAT, name=init.name + "_cast"))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(casts + nodes)
    onnx.checker.check_model(model)
    onnx.save(model, onnx_path)
    return len(casts)


def convert(package, variant, out_dir):
    tflite = os.path.join(package, f"pose_landmark_{variant}.tflite")
    digest = sha256(tflite)
    if digest != TFLITE_SHA256[variant]:
        raise SystemExit(f"{tflite}: sha256 {digest} != {TFLITE_SHA256[variant]}")
    out = os.path.join(out_dir, f"pose_landmark_{variant}.onnx")
    subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--tflite", tflite,
                    "--opset", "13", "--output", out], check=True)
    n = compact_to_f16(out)
    print(f"{out}: {n} weights stored as float16, {os.path.getsize(out)} bytes, "
          f"sha256 {sha256(out)}")
    return tflite


def test_image(work, out_dir):
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary=:all:", f"scikit-image=={SKIMAGE_VERSION}", "-d", work],
                   check=True)
    wheel = next(f for f in os.listdir(work) if f.startswith("scikit_image") and f.endswith(".whl"))
    with zipfile.ZipFile(os.path.join(work, wheel)) as z:
        data = z.read("skimage/data/astronaut.png")
    if hashlib.sha256(data).hexdigest() != ASTRONAUT_SHA256:
        raise SystemExit("astronaut.png: unexpected sha256")
    big = np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(np.float64)
    small = big.reshape(256, 2, 256, 2, 3).mean(axis=(1, 3))
    small = np.floor(small + 0.5).clip(0, 255).astype(np.uint8)
    path = os.path.join(out_dir, "blazepose_test_astronaut.png")
    Image.fromarray(small).save(path, optimize=True)
    return small


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def roi_from_box(box, scale=ROI_SCALE):
    x0, y0, x1, y1 = box
    side = max(x1 - x0, y1 - y0) * scale
    return dict(cx=(x0 + x1) / 2, cy=(y0 + y1) / 2, side=side, rotation=0.0)


def crop(rgb, roi):
    """Bilinear crop of a (possibly rotated) square ROI, zero outside the image.

    Continuous pixel coordinates: pixel k spans [k, k+1), its centre is k+0.5.
    Crop pixel (i, j) samples the image at centre + R(θ)·((i+0.5)/256 - 0.5,
    (j+0.5)/256 - 0.5)·side, computed in float32 like the Rust code.
    """
    h, w, _ = rgb.shape
    n = INPUT_SIZE
    t = ((np.arange(n, dtype=np.float32) + np.float32(0.5)) / np.float32(n) - np.float32(0.5)) \
        * np.float32(roi["side"])
    c, s = np.float32(np.cos(roi["rotation"])), np.float32(np.sin(roi["rotation"]))
    tx, ty = np.meshgrid(t, t)  # tx varies along columns
    x = np.float32(roi["cx"]) + c * tx - s * ty - np.float32(0.5)
    y = np.float32(roi["cy"]) + s * tx + c * ty - np.float32(0.5)
    x0 = np.floor(x)
    y0 = np.floor(y)
    fx = (x - x0).astype(np.float32)
    fy = (y - y0).astype(np.float32)
    x0 = x0.astype(np.int64)
    y0 = y0.astype(np.int64)
    img = rgb.astype(np.float32)
    out = np.zeros((n, n, 3), np.float32)
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            xi = x0 + dx
            yi = y0 + dy
            inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
            v = np.zeros((n, n, 3), np.float32)
            v[inside] = img[yi[inside], xi[inside]]
            out += (wx * wy)[..., None] * v
    return out / np.float32(255.0)


def refine_from_heatmap(lm, heatmap):
    """MediaPipe's RefineLandmarksFromHeatmapCalculator (x, y normalised)."""
    hh, hw, _ = heatmap.shape
    off = (HEATMAP_KERNEL - 1) // 2
    out = lm.copy()
    for k in range(lm.shape[0]):
        cc = int(np.trunc(lm[k, 0] * hw))
        cr = int(np.trunc(lm[k, 1] * hh))
        if cc < 0 or cc >= hw or cr < 0 or cr >= hh:
            continue
        r0, r1 = max(0, cr - off), min(hh, cr + off + 1)
        c0, c1 = max(0, cc - off), min(hw, cc + off + 1)
        conf = sigmoid(heatmap[r0:r1, c0:c1, k].astype(np.float64))
        rows, cols = np.mgrid[r0:r1, c0:c1]
        total = conf.sum()
        if conf.max() >= HEATMAP_MIN_CONFIDENCE and total > 0:
            out[k, 0] = (conf * cols).sum() / hw / total
            out[k, 1] = (conf * rows).sum() / hh / total
    return out


def run_tflite(interp, tensor):
    inp = interp.get_input_details()[0]["index"]
    interp.set_tensor(inp, tensor[None].astype(np.float32))
    interp.invoke()
    outs = {o["name"]: o["index"] for o in interp.get_output_details()}
    landmarks = interp.get_tensor(outs["Identity"]).reshape(39, 5).astype(np.float64)
    flag = float(interp.get_tensor(outs["Identity_1"]).ravel()[0])
    heatmap = interp.get_tensor(outs["Identity_3"])[0].astype(np.float64)
    return landmarks, flag, heatmap


def keypoints_from_outputs(landmarks, flag, heatmap, roi):
    """Landmarks 0..35 in input pixels: (u, v, z, visibility, presence)."""
    norm = landmarks[:35, :2] / INPUT_SIZE
    norm = refine_from_heatmap(np.concatenate([norm, np.zeros((4, 2))]), heatmap)[:35]
    c, s = np.cos(roi["rotation"]), np.sin(roi["rotation"])
    dx = (norm[:, 0] - 0.5) * roi["side"]
    dy = (norm[:, 1] - 0.5) * roi["side"]
    u = roi["cx"] + c * dx - s * dy
    v = roi["cy"] + s * dx + c * dy
    z = landmarks[:35, 2] / INPUT_SIZE * roi["side"]
    return dict(
        u=u.tolist(), v=v.tolist(), z=z.tolist(),
        visibility=sigmoid(landmarks[:35, 3]).tolist(),
        presence=sigmoid(landmarks[:35, 4]).tolist(),
        pose_presence=flag,
    )


def reference(tflite, image):
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=tflite)
    interp.allocate_tensors()
    lm, flag, _ = run_tflite(interp, image.astype(np.float32) / np.float32(255.0))
    result = dict(crop=dict(landmarks=lm[:33].tolist(), pose_flag=flag))
    roi = roi_from_box(PIPELINE_BOX)
    lm, flag, hm = run_tflite(interp, crop(image, roi))
    result["pipeline"] = dict(box=list(PIPELINE_BOX), roi=roi,
                              keypoints=keypoints_from_outputs(lm, flag, hm, roi))
    return result


def time_reference(tflite, image, runs):
    import time
    from ai_edge_litert.interpreter import Interpreter

    tensor = crop(image, roi_from_box(PIPELINE_BOX))[None]
    for threads in (1, 2):
        interp = Interpreter(model_path=tflite, num_threads=threads)
        interp.allocate_tensors()
        index = interp.get_input_details()[0]["index"]
        times = []
        for _ in range(runs + 1):
            t = time.perf_counter()
            interp.set_tensor(index, tensor)
            interp.invoke()
            times.append((time.perf_counter() - t) * 1e3)
        times = sorted(times[1:])
        print(f"{os.path.basename(tflite)}  ai-edge-litert threads={threads}: "
              f"median {times[len(times) // 2]:.1f} ms, min {times[0]:.1f} ms ({runs} runs)")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", nargs="+", default=["full"], choices=["lite", "full", "heavy"])
    ap.add_argument("--out", default=os.path.join(here, "..", "assets", "models"))
    ap.add_argument("--skip-convert", action="store_true")
    ap.add_argument("--time", type=int, default=0, metavar="N")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import ai_edge_litert
    import tf2onnx

    with tempfile.TemporaryDirectory() as work:
        package = npm_pack(work)
        image = test_image(work, args.out)
        refs = {}
        for variant in args.variants:
            tflite = os.path.join(package, f"pose_landmark_{variant}.tflite")
            if not args.skip_convert:
                tflite = convert(package, variant, args.out)
            refs[variant] = reference(tflite, image)
            if args.time:
                time_reference(tflite, image, args.time)
        doc = dict(
            about="Reference outputs of ai-edge-litert for blazepose_test_astronaut.png; "
                  "written by tools/convert_keypoint_model.py",
            npm_package=f"{NPM_PACKAGE}@{NPM_VERSION}",
            tflite_sha256={v: TFLITE_SHA256[v] for v in args.variants},
            tools=dict(tf2onnx=tf2onnx.__version__,
                       ai_edge_litert=getattr(ai_edge_litert, "__version__", "?"),
                       numpy=np.__version__),
            image="blazepose_test_astronaut.png",
            input_normalisation="RGB / 255, NHWC 1x256x256x3",
            heatmap_refinement=dict(kernel=HEATMAP_KERNEL, min_confidence=HEATMAP_MIN_CONFIDENCE),
            variants=refs,
        )
        path = os.path.join(args.out, "blazepose_reference.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
