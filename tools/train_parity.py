"""`vitmae train` end to end against PyTorch (`make train-parity`; not part of `make test`).

    /usr/bin/python3 tools/train_parity.py [--only NAME ...] [--keep DIR] [--vitmae PATH]

tests/test_parity.c holds the model, loss, gradients and AdamW to tools/reference.py; this holds the
command that drives them. For each case it writes a folder of 8-bit PNGs (noise with a flat corner:
patches of zero variance), makes starting weights with a 1-step `vitmae train --pixel-norm none`, runs
`vitmae train --init` on them for a few steps with `--augment none --val-frac 0 --log-every 1`, and
repeats those steps in float64 PyTorch (tools/reference.py's model and AdamW) from the same weights:
the data order of each epoch, the mask of image k of step s (docs/design.md, "Random numbers by
position": xoshiro256** seeded by splitmix64, rng_derive, the salts of src/cmd/train_state.h), the
learning rate of each step (warm-up, then half-cosine) and the global-norm clip, as docs/interface.md
section 3 states them. The losses of metrics.csv and the final weights are compared with the parity
tolerances of docs/testing.md ("PyTorch parity"): losses 1e-6 + 1e-5 |ref|, weights 1e-5 + 1e-4 |ref|,
the key slice of every attn.qkv.bias (true gradient 0) held to the lr bound only. The cases are the
settings the fixtures do not drive through the command: batch 1, odd image / patch sizes, patch 1
with norm-pix, one removed patch and one visible patch, norm-pix over flat patches, no warm-up with a
large decay, clipping, gradient groups on 2 threads, an epoch boundary inside a batch.
Exit 1 on any miss or failed run.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
import safetensors_io  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
torch.set_default_dtype(torch.float64)
U64 = (1 << 64) - 1
SALT_PERM, SALT_MASK = 0x7065726D75746531, 0x6D61736B6D61736B   # src/cmd/train_state.h

# name: (img, patch, channels, batch, images, mask ratio, norm-pix, other settings)
CASES = {
    "plain": (16, 4, 3, 4, 6, 0.75, False, {}),
    "batch1": (16, 4, 3, 1, 3, 0.75, False, {}),
    "batch1_normpix_grey": (16, 4, 1, 1, 2, 0.75, True, {}),
    "img15_patch5": (15, 5, 3, 2, 3, 0.6, True, {}),
    "img14_patch7_grey": (14, 7, 1, 3, 5, 0.5, False, {}),
    "patch1_grey_normpix": (5, 1, 1, 2, 4, 0.75, True, {}),
    "one_removed": (16, 4, 3, 2, 4, 0.0001, True, {}),
    "one_visible": (16, 4, 3, 2, 4, 0.9375, True, {}),
    "one_visible_of_36": (12, 2, 1, 4, 4, 0.97, False, {}),
    "normpix_flat_patches": (8, 2, 3, 4, 8, 0.75, True, {}),
    "warmup0_wd2": (16, 4, 3, 4, 4, 0.75, True, {"warmup": 0, "wd": 2.0, "lr": 3e-3}),
    "clip": (16, 4, 3, 4, 4, 0.75, False, {"clip": 0.05}),
    "groups_2_threads": (16, 4, 3, 8, 8, 0.75, True, {"threads": 2}),
    "epoch_inside_batch": (8, 4, 1, 3, 4, 0.5, False, {"steps": 4}),
}


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & U64
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64
    return x, z ^ (z >> 31)


class Rng:
    """xoshiro256** with its state filled by splitmix64, as src/core/rng.c."""

    def __init__(self, seed):
        self.s, x = [], seed
        for _ in range(4):
            x, z = splitmix64(x)
            self.s.append(z)

    def next(self):
        s = self.s
        rotl = lambda v, k: ((v << k) | (v >> (64 - k))) & U64  # noqa: E731
        out = (rotl((s[1] * 5) & U64, 7) * 9) & U64
        t = (s[1] << 17) & U64
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return out

    def uniform(self):   # 24 bits: a float32 exactly
        return (self.next() >> 40) / 16777216.0

    def below(self, n):  # unbiased multiply-shift with rejection
        m = (self.next() >> 32) * n
        if (m & 0xFFFFFFFF) < n:
            threshold = ((-n) & 0xFFFFFFFF) % n
            while (m & 0xFFFFFFFF) < threshold:
                m = (self.next() >> 32) * n
        return m >> 32


def derive(seed, a, b):
    _, k = splitmix64((seed ^ 0x6A09E667F3BCC909) & U64)
    k ^= (a * 0xD1B54A32D192ED03) & U64
    _, k = splitmix64(k)
    return Rng(k ^ ((b * 0x8CB92BA72F3D8DD7) & U64))


def epoch_order(seed, epoch, n):
    r, p = derive(seed ^ SALT_PERM, epoch, 0), list(range(n))
    for i in range(n - 1, 0, -1):
        j = r.below(i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def f32(x):
    return float(np.float32(x))


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def run_case(vitmae, work, index, name, case):
    img, patch, C, B, N, mask, norm_pix, o = case
    steps, lr, warmup, wd = o.get("steps", 3), o.get("lr", 1e-3), o.get("warmup", 1), o.get("wd", 0.05)
    clip, threads, seed = o.get("clip", 0.0), o.get("threads", 1), 7
    folder = os.path.join(work, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "data"))
    rs = np.random.RandomState(1000 + index)
    for i in range(N):
        a = rs.randint(0, 256, (img, img, C)).astype(np.uint8)
        y, x = rs.randint(0, img, 2)
        a[y:, x:, :] = rs.randint(0, 256)
        Image.fromarray(a[:, :, 0] if C == 1 else a).save(os.path.join(folder, "data", "%03d.png" % i))
    common = ["--data", os.path.join(folder, "data"), "--img", str(img), "--patch", str(patch), "--channels", str(C),
              "--augment", "none", "--val-frac", "0", "--mask-ratio", repr(mask), "--batch", str(B)]
    common += ["--norm-pix"] if norm_pix else []
    init = os.path.join(folder, "init", "checkpoint.safetensors")
    rc, err = sh([vitmae, "train"] + common + ["--dim", "32", "--depth", "2", "--heads", "2", "--dec-dim", "16",
                                               "--dec-depth", "1", "--dec-heads", "2", "--pixel-norm", "none",
                                               "--steps", "1", "--lr", "0.05", "--seed", "3", "--threads", "1",
                                               "--out", os.path.join(folder, "init")])
    if rc:
        return "%s: the starting run failed: %s" % (name, err)
    rc, err = sh([vitmae, "train"] + common + ["--init", init, "--steps", str(steps), "--lr", repr(lr),
                                               "--warmup-steps", str(warmup), "--wd", repr(wd), "--clip", repr(clip),
                                               "--seed", str(seed), "--threads", str(threads), "--log-every", "1",
                                               "--out", os.path.join(folder, "run")])
    if rc:
        return "%s: the run failed: %s" % (name, err)

    start, meta = safetensors_io.read(init)
    cfg = json.loads(meta["config"])
    cfg["norm_pix_loss"], cfg["mask_ratio"] = norm_pix, mask
    model = reference.MaskedAutoencoder(cfg)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(torch.tensor(np.array(start[n][1], dtype=np.float32)).double().reshape(p.shape))
    w0 = {n: p.detach().clone().reshape(-1).numpy() for n, p in model.named_parameters()}
    optim = reference.adamw(model, {"lr": lr, "wd": wd})
    images = [np.asarray(Image.open(os.path.join(folder, "data", "%03d.png" % i)), dtype=np.float32).reshape(img, img, C)
              / np.float32(255) for i in range(N)]
    mean = np.array(cfg["pixel_mean"], np.float32)
    std = np.array(cfg["pixel_std"], np.float32)
    L = (img // patch) ** 2
    K = int(L * (1.0 - f32(mask)))
    lrs = [f32(reference.lr_at(s, steps, warmup, f32(lr), 0.0)) for s in range(steps)]
    losses = []
    for s in range(steps):
        batch = [images[epoch_order(seed, (s * B + k) // N, N)[(s * B + k) % N]] for k in range(B)]
        x = torch.tensor(((np.stack(batch) - mean) / std).astype(np.float32)).double()
        keep = []
        for k in range(B):
            r = derive(seed ^ SALT_MASK, s, k)
            noise = [r.uniform() for _ in range(L)]
            keep.append(sorted(range(L), key=lambda l: (noise[l], l))[:K])   # stable ascending argsort
        for g in optim.param_groups:
            g["lr"] = lrs[s]
        optim.zero_grad()
        loss, _, _ = model(x, torch.tensor(keep, dtype=torch.long))
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], clip)
        optim.step()
        losses.append(loss.item())

    rows = [r.split(",") for r in open(os.path.join(folder, "run", "metrics.csv")).read().split("\n")[1:] if r]
    got_losses = [float(r[3]) for r in rows if r[3]]
    misses = []
    if len(got_losses) != steps:
        misses.append("metrics.csv holds %d losses for %d steps" % (len(got_losses), steps))
    worst_loss = 0.0
    for s, (a, b) in enumerate(zip(got_losses, losses)):
        ratio = abs(a - b) / (1e-6 + 1e-5 * abs(b))
        worst_loss = max(worst_loss, ratio)
        if not ratio <= 1:
            misses.append("loss of step %d: %.9g, PyTorch %.9g" % (s + 1, a, b))
    end, _ = safetensors_io.read(os.path.join(folder, "run", "checkpoint.safetensors"))
    worst = (0.0, "")
    bound = 1.01 * sum(lrs)
    for n, p in model.named_parameters():
        got = np.array(end[n][1], np.float64)
        ref = p.detach().reshape(-1).numpy()
        ratio = np.abs(got - ref) / (1e-5 + 1e-4 * np.abs(ref))
        key = np.zeros(len(ref), bool)
        if n.endswith("attn.qkv.bias"):
            key[len(ref) // 3:2 * len(ref) // 3] = True
        held = key & (np.abs(got - w0[n]) <= bound * (1 + wd * np.abs(w0[n])))
        bad = ~(ratio <= 1) & ~held
        if bad.any():
            i = int(np.argmax(np.where(bad, ratio, -1)))
            misses.append("%s: %d of %d values off, [%d] %.9g, PyTorch %.9g" % (n, bad.sum(), len(ref), i, got[i], ref[i]))
        r = np.where(key, 0, ratio).max()   # the tight checks; the key slice is held to the bound above
        if r > worst[0]:
            worst = (r, n)
    print("%-22s batch %d, %2d px, patch %d, %d ch, %2d of %3d patches visible%s: losses |d|/tol %.3f, weights "
          "|d|/tol %.3f (%s)%s" % (name, B, img, patch, C, K, L, ", norm-pix" if norm_pix else "", worst_loss,
                                   worst[0], worst[1], "" if not misses else ": MISS"))
    for m in misses:
        print("    " + m)
    return "%s: %d misses" % (name, len(misses)) if misses else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", action="append", choices=sorted(CASES), help="run this case alone (repeatable)")
    ap.add_argument("--keep", help="work in this folder and keep it")
    ap.add_argument("--vitmae", default=os.path.join(ROOT, "vitmae"))
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="train-parity.")
    os.makedirs(work, exist_ok=True)
    failed = []
    try:
        for i, (name, case) in enumerate(CASES.items()):
            if a.only and name not in a.only:
                continue
            why = run_case(a.vitmae, work, i, name, case)
            if why:
                failed.append(why)
    finally:
        if not a.keep and not failed:
            shutil.rmtree(work, ignore_errors=True)
    if failed:
        print("train-parity: %d failed (%s; files in %s)" % (len(failed), "; ".join(failed), work))
        return 1
    print("train-parity: every case within the parity tolerances")
    return 0


if __name__ == "__main__":
    sys.exit(main())
