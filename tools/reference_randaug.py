"""Reference RandAugment operations for tests/test_randaug.c: each of the fifteen operations of timm's
RandAugment (timm/data/auto_augment.py, the ops MAE's main_finetune.py draws with rand-m9-mstd0.5-inc1)
computed by PIL itself on 8-bit images, at chosen arguments, with both resampling filters and fill
colours (docs/encoder.md, "RandAugment"; docs/testing.md, "PyTorch parity").

Writes tests/fixtures/randaug_pil.safetensors: for each case k a source "k.src" [h, w, c] (8-bit levels
as float32) and PIL's result "k.out"; the metadata names the case's operation ("k.op", timm's name),
its argument ("k.arg", Python's repr of the double), filter ("k.filter") and fill colour ("k.fill").
Needs python3-pil and python3-numpy (Debian). Run with /usr/bin/python3 (`make fixtures`).
"""
import os
import sys

import numpy as np
import PIL
from PIL import Image, ImageEnhance, ImageOps

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

FILTERS = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}


def apply(img, op, arg, flt, fill):
    """timm's operation `op` with its level argument, as its auto_augment.py calls PIL."""
    geo = dict(resample=FILTERS[flt], fillcolor=fill)
    w, h = img.size
    if op == "AutoContrast":
        return ImageOps.autocontrast(img)
    if op == "Equalize":
        return ImageOps.equalize(img)
    if op == "Invert":
        return ImageOps.invert(img)
    if op == "Rotate":
        return img.rotate(arg, **geo)
    if op == "Posterize":
        return img if arg >= 8 else ImageOps.posterize(img, int(arg))
    if op == "Solarize":
        return ImageOps.solarize(img, arg)
    if op == "SolarizeAdd":
        lut = [min(255, i + int(arg)) if i < 128 else i for i in range(256)]
        return img.point(lut * len(img.getbands()))
    if op in ("Color", "Contrast", "Brightness", "Sharpness"):
        return getattr(ImageEnhance, op)(img).enhance(arg)
    affine = {"ShearX": (1, arg, 0, 0, 1, 0), "ShearY": (1, 0, 0, arg, 1, 0),
              "TranslateXRel": (1, 0, arg * w, 0, 1, 0), "TranslateYRel": (1, 0, 0, 0, 1, arg * h)}[op]
    return img.transform(img.size, Image.AFFINE, affine, **geo)


def source(rng, w, h, c, kind):
    if kind == "noise":
        a = rng.integers(0, 256, (h, w, c))
    elif kind == "low":   # a narrow range: AutoContrast and Equalize have work to do
        a = rng.integers(60, 171, (h, w, c))
    elif kind == "flat":   # one level: AutoContrast and Equalize leave it
        a = np.full((h, w, c), 97)
    elif kind == "two":   # two levels
        a = np.where(rng.random((h, w, c)) < 0.3, 20, 200)
    else:   # a gradient with noise: rotations and shears move structure
        y, x = np.mgrid[0:h, 0:w]
        base = (x * 255.0 / max(w - 1, 1) * 0.6 + y * 255.0 / max(h - 1, 1) * 0.4)[:, :, None]
        a = np.clip(base + rng.normal(0, 18, (h, w, c)) + np.arange(c) * 25, 0, 255).astype(int)
    return a.astype(np.uint8)


# (op, args): the arguments timm's levels give at magnitudes 0, 5, 9 and 10, both signs, and the
# extremes (Posterize 0 bits, Solarize 0 and 256, a factor of 0 and 1, a rotation of 0).
OPS = [
    ("AutoContrast", [0.0]), ("Equalize", [0.0]), ("Invert", [0.0]),
    ("Rotate", [27.0, -27.0, 30.0, -13.5, 0.0, 4.4]),
    ("Posterize", [0, 1, 2, 4]),
    ("Solarize", [26, 128, 0, 256]),
    ("SolarizeAdd", [99, 110, 0]),
    ("Color", [1.81, 0.19, 0.1, 1.9, 0.0, 1.0]),
    ("Contrast", [1.81, 0.19, 0.1, 1.9, 0.0]),
    ("Brightness", [1.81, 0.19, 1.9, 0.0, 1.0]),
    ("Sharpness", [1.81, 0.19, 1.9, 0.0, 0.55]),
    ("ShearX", [0.27, -0.27, 0.3, -0.0123]),
    ("ShearY", [0.27, -0.27, 0.3, 0.15]),
    ("TranslateXRel", [0.405, -0.405, 0.45, -0.1234]),
    ("TranslateYRel", [0.405, -0.405, 0.45, 0.2077]),
]
# (w, h, c, kind): odd sizes, grey and RGB, an image below 3 x 3 (Sharpness copies it), one pixel.
IMAGES = [(13, 9, 3, "grad"), (8, 11, 1, "grad"), (17, 6, 3, "low"), (2, 5, 3, "noise"), (1, 1, 1, "noise"),
          (12, 10, 3, "noise"), (7, 7, 1, "low"), (5, 4, 3, "flat"), (9, 6, 3, "two")]
FILLS = {1: [(117,), (0,)], 3: [(124, 116, 104), (128, 128, 128)]}
# Cases beyond timm's range or on images large enough for them: Equalize with a step of several levels
# (over 510 pixels a channel: its half-step start shows), quarter and half turns (PIL's matrix rounded to
# 15 decimals puts every sample on a pixel centre; a square image's quarter turn and every half turn are
# PIL's transposes), a 60-degree turn; levels past magnitude 10 (mmax): Posterize of -2 bits (none kept)
# and of 9 (all), of -36 (magnitude 100: a shift past an int's bits in C), a turn of 150 degrees.
EXTRA = [("Equalize", 0.0, (40, 30, 3, "low")), ("Equalize", 0.0, (33, 20, 1, "grad")),
         ("AutoContrast", 0.0, (40, 30, 3, "low")),
         ("Rotate", 90.0, (9, 6, 3, "grad")), ("Rotate", -90.0, (6, 9, 1, "grad")), ("Rotate", 270.0, (7, 5, 3, "grad")),
         ("Rotate", 90.0, (8, 8, 3, "grad")), ("Rotate", 180.0, (9, 6, 3, "grad")), ("Rotate", -180.0, (5, 7, 1, "noise")),
         ("Rotate", 60.0, (12, 10, 3, "grad")), ("Rotate", 450.0, (9, 6, 3, "grad")),
         ("Posterize", -2, (9, 6, 3, "grad")), ("Posterize", -36, (5, 4, 1, "grad")), ("Posterize", 9, (6, 5, 1, "noise")), ("Rotate", -150.0, (9, 6, 3, "grad"))]


def case(tensors, meta, k, rng, op, arg, w, h, c, kind, flt, fill):
    """Case k: a source made of kind, op applied by PIL; returns k + 1."""
    src = source(rng, w, h, c, kind)
    img = Image.fromarray(src[:, :, 0] if c == 1 else src, mode="L" if c == 1 else "RGB")
    res = np.asarray(apply(img, op, arg, flt, fill[0] if c == 1 else fill)).reshape(h, w, c)
    tensors["%d.src" % k] = ([h, w, c], src.astype(np.float32))
    tensors["%d.out" % k] = ([h, w, c], res.astype(np.float32))
    meta["%d.op" % k], meta["%d.arg" % k] = op, repr(float(arg))
    meta["%d.filter" % k], meta["%d.fill" % k] = flt, ",".join(str(v) for v in fill)
    return k + 1


def main(out):
    rng = np.random.default_rng(41)
    tensors, meta, k = {}, {"format": "vitmae-randaug", "pil": PIL.__version__}, 0
    for op, args in OPS:
        for a_i, arg in enumerate(args):
            for i_i, (w, h, c, kind) in enumerate(IMAGES):
                # every image at each operation's first argument; the others on a rotating pair of images
                if a_i and i_i not in (a_i % len(IMAGES), (a_i + 4) % len(IMAGES)):
                    continue
                k = case(tensors, meta, k, rng, op, arg, w, h, c, kind, ("bilinear", "bicubic")[(k + a_i) % 2],
                         FILLS[c][k % 2])
    for e, (op, arg, (w, h, c, kind)) in enumerate(EXTRA):
        k = case(tensors, meta, k, rng, op, arg, w, h, c, kind, ("bilinear", "bicubic")[e % 2], FILLS[c][e % 2])
    meta["cases"] = str(k)
    path = os.path.join(out, "randaug_pil.safetensors")
    safetensors_io.write(path, tensors, meta)
    print("%s: %d cases" % (path, k))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures")
