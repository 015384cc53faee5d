"""Reference resizes for tests/test_image.c: PIL's Image.resize in mode F (32-bit float samples), the
filters torchvision's RandomResizedCrop runs on PIL images (InterpolationMode.BILINEAR and BICUBIC).

Writes tests/fixtures/resize_pil.safetensors: for each case k a source "k.src" [sh, sw, c] of random
values in [0, 1] and its resizes "k.bilinear" and "k.bicubic" [dh, dw, c], each channel resized alone as
a mode-F image (docs/data.md, "Interpolation"; docs/testing.md, "PyTorch parity"). Needs python3-pil and
python3-numpy (Debian). Run with /usr/bin/python3 (`make fixtures`).

`reference_resize.py --gap DIR` instead measures how far PIL's 8-bit resize (torchvision's crop on a PIL
image, rounded after each pass) lies from vitmae's view (the resize in floating point, rounded to 8 bits
once, which mode F gives to 2e-6): random crops of each PNG, JPEG or WebP in DIR (a quarter of its size),
resized to 32, 64 or 224 with each filter; prints the share of values off and the largest gap in levels.

With python3-torchvision it also writes tests/fixtures/view_timm.safetensors: timm's evaluation transform
(transforms_factory's eval path: Resize(floor(img_size / crop_pct), interpolation), CenterCrop(img_size)),
run by torchvision 0.14 on mode-F images, for sources "v{k}.src" [sh, sw, c] at view size "v{k}.size" and
crop fraction "v{k}.crop_pct" (1-element tensors): "v{k}.bilinear" and "v{k}.bicubic" [size, size, c]
(docs/interface.md, section 2, "Evaluation views").
"""
import math
import os
import sys

import numpy as np
import glob

import PIL
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

# (sw, sh, c) -> (dw, dh): shrinking by whole and odd factors, enlarging, one axis each way, either side
# kept, single rows and columns, a large shrink (the support grows to many taps).
CASES = [
    ((7, 5, 1), (3, 2)),
    ((16, 16, 3), (8, 8)),
    ((13, 11, 3), (29, 23)),
    ((9, 14, 1), (17, 5)),
    ((40, 6, 3), (40, 11)),
    ((1, 9, 1), (4, 3)),
    ((5, 1, 3), (2, 7)),
    ((61, 37, 3), (8, 7)),
    ((224, 3, 1), (32, 32)),
    ((11, 7, 3), (4, 7)),
]


# (sw, sh, c, size, crop_pct): timm's 0.875 and 0.9 shrinking and enlarging, wide and tall, a source
# already at the resized size (only cropped), one already at the view size (enlarged, then cropped),
# a crop fraction of 1 (vitmae's default view), a strong crop.
VIEW_CASES = [
    (40, 30, 3, 16, 0.875),
    (30, 47, 1, 24, 0.875),
    (17, 17, 3, 16, 0.9),
    (25, 25, 3, 25, 0.875),
    (64, 20, 3, 14, 0.5),
    (9, 13, 1, 8, 1.0),
    (100, 7, 3, 6, 0.95),
    (33, 50, 3, 32, 0.875),
    (90, 60, 3, 40, 0.875),
]


def timm_eval_view(src, size, crop_pct, mode):
    """timm's eval transform on each channel as a mode-F PIL image, by torchvision itself."""
    from torchvision import transforms
    scale_size = math.floor(size / crop_pct)
    tf = transforms.Compose([transforms.Resize(scale_size, interpolation=mode), transforms.CenterCrop(size)])
    planes = [np.asarray(tf(Image.fromarray(src[:, :, k], mode="F")), dtype=np.float32) for k in range(src.shape[2])]
    return np.stack(planes, axis=2)


def write_views(out):
    try:
        from torchvision.transforms import InterpolationMode
    except ImportError:
        print("view_timm.safetensors not written: needs python3-torchvision (apt-get install python3-torchvision)")
        return
    import torchvision
    rng = np.random.default_rng(23)
    tensors = {}
    for k, (sw, sh, c, size, crop_pct) in enumerate(VIEW_CASES):
        src = rng.random((sh, sw, c), dtype=np.float32)
        tensors["v%d.src" % k] = ([sh, sw, c], src)
        tensors["v%d.size" % k] = ([1], np.float32([size]))
        tensors["v%d.crop_pct" % k] = ([1], np.float32([crop_pct]))
        for name, mode in (("bilinear", InterpolationMode.BILINEAR), ("bicubic", InterpolationMode.BICUBIC)):
            view = timm_eval_view(src, size, crop_pct, mode)
            assert view.shape == (size, size, c), view.shape
            tensors["v%d.%s" % (k, name)] = ([size, size, c], view)
    path = os.path.join(out, "view_timm.safetensors")
    safetensors_io.write(path, tensors, {"format": "vitmae-view", "cases": str(len(VIEW_CASES)),
                                         "pil": PIL.__version__, "torchvision": torchvision.__version__})
    print("%s: %d cases" % (path, len(VIEW_CASES)))


def resize(src, dw, dh, flt):
    planes = [np.asarray(Image.fromarray(src[:, :, k], mode="F").resize((dw, dh), flt), dtype=np.float32)
              for k in range(src.shape[2])]
    return np.stack(planes, axis=2)


def gap(folder):
    files = sorted(f for f in glob.glob(os.path.join(folder, "*")) if f.lower().endswith((".png", ".jpg", ".jpeg", ".webp")))
    for flt, name in ((Image.BILINEAR, "bilinear"), (Image.BICUBIC, "bicubic")):
        rng = np.random.default_rng(0)   # the same crops for both filters
        total = off = worst = crops = 0
        for f in files:
            a = np.asarray(Image.open(f).convert("RGB").reduce(4))
            H, W = a.shape[:2]
            for _ in range(6):
                h, w = int(rng.integers(min(20, H), min(H, 500) + 1)), int(rng.integers(min(20, W), min(W, 500) + 1))
                y, x = int(rng.integers(0, H - h + 1)), int(rng.integers(0, W - w + 1))
                box, S = a[y:y + h, x:x + w], int(rng.choice([32, 64, 224]))
                pil8 = np.asarray(Image.fromarray(box).resize((S, S), flt)).astype(int)
                ours = np.floor(np.clip(resize(box.astype(np.float32) / 255.0, S, S, flt) * 255.0, 0, 255) + 0.5)
                d = np.abs(ours.astype(int) - pil8)
                total, off, worst, crops = total + d.size, off + int((d > 0).sum()), max(worst, int(d.max())), crops + 1
        print("%s: %.1f%% of %d values off PIL's 8-bit resize, at most %d levels (%d crops of %d images)" %
              (name, 100.0 * off / max(total, 1), total, worst, crops, len(files)))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--gap":
        return gap(sys.argv[2])
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(17)
    tensors = {}
    for k, ((sw, sh, c), (dw, dh)) in enumerate(CASES):
        src = rng.random((sh, sw, c), dtype=np.float32)
        tensors["%d.src" % k] = ([sh, sw, c], src)
        for name, flt in (("bilinear", Image.BILINEAR), ("bicubic", Image.BICUBIC)):
            tensors["%d.%s" % (k, name)] = ([dh, dw, c], resize(src, dw, dh, flt))
    path = os.path.join(out, "resize_pil.safetensors")
    safetensors_io.write(path, tensors, {"format": "vitmae-resize", "cases": str(len(CASES)),
                                         "pil": PIL.__version__})
    print("%s: %d cases" % (path, len(CASES)))
    write_views(out)


if __name__ == "__main__":
    main()
