"""PyTorch parity over random model configurations (`make parity-sweep`; not part of `make test`).

    /usr/bin/python3 tools/parity_sweep.py [--count N] [--seed S] [--keep DIR] [--only I] [--no-train]

For each of N configurations drawn from seed S (docs/testing.md, "PyTorch parity"): writes a parity
fixture with tools/reference.py (float64 PyTorch; the same contents as tests/fixtures/parity_*), then
runs build/tests/test_parity on it, which compares forward, loss, every gradient (also from gradient
groups at once when a power of two > 1 divides the batch) and the weights after three AdamW steps with
its tolerances, with the blocks' forward whole and in passes of one image. Each fixture is run at 1, 2
and 3 threads on the default kernels (AVX-512 where the CPU has it), at 1 thread on every other vector
path this CPU has (VITMAE_GEMM=avx2, portable), and at 2 threads with the GEMM's k-blocks 17 deep
(VITMAE_GEMM_KC=17: every product over k > 17 split into blocks with a tail) and passes of 3 images.
Then `vitmae train` runs each configuration that train accepts (MLP ratio 4, mask ratio > 0) for 3
steps at 1 thread, at 2 and 3 threads sharing the kernels and at 2 (and 4) as workers where the gradient
groups allow: the checkpoints must be bitwise the same.

The draws: embedding widths 4 to 132 (and the tiny / small presets' widths), head dims 1 to 64, one
head to many, decoders narrower and wider than the encoder, 1-3 encoder and 0-3 decoder blocks, MLP
ratio 1-4, 1 to 256 patches of 1-8 px, grey and RGB, batches 1-8, masks keeping one patch, all but one,
every patch (mask ratio 0) or a random count, learned and fixed positions, norm-pix on and off, normal
pixels or 8-bit images with flat patches normalised as the loader does.

Prints one line per configuration and the worst |d| / tolerance, |d| and |d| / |ref| seen (over
|ref| >= 1e-2); exits 1 when any check failed (the fixtures of the failures are kept: --keep, else a
folder named), but for misses within F32_FACTOR (2.5) times the |d| / tolerance of PyTorch's own float32
answer on each missed tensor (torch_f32_ratios): those are listed as ill-conditioned, not failures.
"""
import argparse
import os
import random
import re
import shutil
import json
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A miss of vitmae's is float32's own when PyTorch computing in float32 comes within this factor of it
# (torch_f32_ratios): the same quantity is then too ill-conditioned for float32 to meet the tolerance
# reliably, and another order of the same float32 sums lands on either side of it.
F32_FACTOR = 2.5
WIDTHS = [4, 8, 12, 16, 20, 24, 28, 36, 40, 44, 52, 64, 68, 72, 100, 128, 132]


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def draw(rng, i):
    """Configuration i: (cfg, batch, images_kind, fixture seed)."""
    kind = rng.random()
    if kind < 0.1:   # a preset's widths and heads (depth cut to keep it quick)
        d, h, dd, dh = rng.choice([(192, 3, 128, 4), (384, 6, 256, 8)])
        depth, ddepth, ratio = 1, rng.randint(0, 1), 4
    else:
        d = rng.choice(WIDTHS)
        h = rng.choice(divisors(d)) if rng.random() < 0.8 else rng.choice([1, d])
        dd = rng.choice(WIDTHS)
        dh = rng.choice(divisors(dd))
        depth, ddepth, ratio = rng.randint(1, 3), rng.randint(0, 3), rng.choice([4, 4, 4, 1, 2, 3])
    patch = rng.choice([1, 2, 3, 4, 4, 5, 8])
    grid = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 11, 16] if patch <= 4 else [1, 2, 3, 4, 5, 6])
    if patch == 1 and grid < 4:
        grid = 4
    L = grid * grid
    how = rng.random()
    if L == 1 or how < 0.15:
        keep = L                                     # mask ratio 0: no removed patch, loss 0
    elif how < 0.4:
        keep = 1
    elif how < 0.6:
        keep = L - 1
    else:
        keep = rng.randint(1, L - 1)
    # int(L * (1 - r)) = keep for r half a patch below the boundary, written with 6 decimals.
    mask_ratio = 0.0 if keep == L else round((L - keep - 0.5) / L, 6)
    chans = rng.choice([1, 3])
    cfg = reference.config(img_size=grid * patch, patch_size=patch, in_chans=chans, embed_dim=d, depth=depth,
                           num_heads=h, decoder_embed_dim=dd, decoder_depth=ddepth, decoder_num_heads=dh,
                           mlp_ratio=ratio, norm_pix_loss=rng.random() < 0.5, mask_ratio=mask_ratio,
                           pos_embed=rng.choice(["learned", "fixed"]))
    images = "randn"
    if rng.random() < 0.5:
        images = "pixels"
        if rng.random() < 0.5:
            cfg["pixel_mean"], cfg["pixel_std"] = [0.485, 0.456, 0.406][:chans], [0.229, 0.224, 0.225][:chans]
        else:
            cfg["pixel_mean"], cfg["pixel_std"] = [0.0] * chans, [1.0] * chans
    return cfg, rng.choice([1, 1, 2, 3, 4, 5, 7, 8]), images, 1000 + i


def paths_available():
    """The vector paths this CPU has beyond the default (VITMAE_GEMM names), from /proc/cpuinfo."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return []
    out = []
    if " avx512f" in flags and " avx512vl" in flags and " avx512dq" in flags:
        out.append("avx2")   # the default is avx512 there
    if " avx2" in flags and " fma" in flags:
        out.append("portable")
    return out


def checkpoint_data(path):
    """The tensor bytes of a checkpoint (the header's run metadata, such as elapsed time, left out)."""
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return b[8 + n:]


def train_modes(vitmae, cfg, batch, folder):
    """`vitmae train` of this configuration (3 steps on 2 batches of 8-bit images) at 1 thread, and with
    2 and 3 threads sharing kernels, 2 (and 4) as workers where the gradient groups allow: the checkpoints
    must hold the same bits (docs/interface.md, "Threads"). Returns a list of the modes that differ or
    fail, empty when they all agree."""
    S, C = cfg["img_size"], cfg["in_chans"]
    data = os.path.join(folder, "data", "a")
    os.makedirs(data, exist_ok=True)
    rng = random.Random(S * 7 + C)
    for k in range(2 * batch):
        im = Image.new("L" if C == 1 else "RGB", (S, S))
        px = [rng.randrange(256) for _ in range(S * S * C)]
        im.putdata(px if C == 1 else list(zip(px[0::3], px[1::3], px[2::3])))
        im.save(os.path.join(data, "%d.png" % k))
    flags = ["--img", str(S), "--patch", str(cfg["patch_size"]), "--channels", str(C),
             "--dim", str(cfg["embed_dim"]), "--depth", str(cfg["depth"]), "--heads", str(cfg["num_heads"]),
             "--dec-dim", str(cfg["decoder_embed_dim"]), "--dec-depth", str(cfg["decoder_depth"]),
             "--dec-heads", str(cfg["decoder_num_heads"]), "--mask-ratio", repr(cfg["mask_ratio"]),
             "--pos", cfg["pos_embed"], "--batch", str(batch), "--steps", "3", "--seed", "1", "--augment", "none",
             "--val-frac", "0"] + (["--norm-pix"] if cfg["norm_pix_loss"] else [])
    modes = [(1, "kernels"), (2, "kernels"), (3, "kernels")]
    modes += [(t, "groups") for t in (2, 4) if batch % t == 0]
    want, bad = None, []
    for t, mode in modes:
        out = os.path.join(folder, "run-%d-%s" % (t, mode))
        p = subprocess.run([vitmae, "train", "--data", os.path.dirname(data), "--out", out, "--threads", str(t),
                            "--parallel", mode] + flags, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            bad.append("%d %s: exit %d: %s" % (t, mode, p.returncode, p.stderr.strip()[-300:]))
            continue
        got = checkpoint_data(os.path.join(out, "checkpoint.safetensors"))
        if want is None:
            want = got
        elif got != want:
            bad.append("%d threads --parallel %s: other weights than 1 thread's" % (t, mode))
    return bad


def torch_f32_ratios(path, names):
    """PyTorch's own float32 answer for the fixture at path (the same model, weights, batch and AdamW
    steps as tools/reference.py, in float32): for each tensor name of names, its largest |d| / tolerance
    against the fixture's float64 answer, with test_parity's tolerance for that tensor (F32_FACTOR)."""
    tensors, meta = reference.safetensors_io.read(path)
    cfg, opt = json.loads(meta["config"]), json.loads(meta["optimizer"])

    def get(name, dtype):
        shape, data = tensors[name]
        return torch.tensor(list(data), dtype=torch.float64).reshape(shape).to(dtype)

    torch.set_default_dtype(torch.float32)
    try:
        model = reference.MaskedAutoencoder(cfg)
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(get(n, torch.float32))
        images, ids_keep = get("images", torch.float32), get("ids_keep", torch.float64).long()
        got = {}
        loss, pred, target = model(images, ids_keep)
        loss.backward()
        got["loss"], got["pred"], got["target"] = loss.detach().reshape(1), pred.detach(), target.detach()
        for n, p in model.named_parameters():
            got["grad." + n] = p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
        optim = reference.adamw(model, opt)
        losses = []
        for step in range(opt["steps"]):
            for group in optim.param_groups:
                group["lr"] = reference.lr_at(step, opt["total"], opt["warmup"], opt["lr"], opt["min_lr"])
            optim.zero_grad()
            l, _, _ = model(images, ids_keep)
            l.backward()
            optim.step()
            losses.append(l.item())
        got["step3.loss"] = torch.tensor(losses)
        for n, p in model.named_parameters():
            got["step3." + n] = p.detach()
    finally:
        torch.set_default_dtype(torch.float64)
    out = {}
    for name in names:
        if name not in got:
            continue
        atol, rtol = (1e-6, 1e-5) if name in ("loss", "step3.loss") else (1e-5, 1e-4)
        want = get(name, torch.float64).reshape(-1)
        d = (got[name].double().reshape(-1) - want).abs()
        out[name] = (d / (atol + rtol * want.abs())).max().item()
    return out


def run(binary, fixture, env_extra):
    env = dict(os.environ, VITMAE_ROOT=ROOT, **env_extra)
    p = subprocess.run([binary, fixture], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ratio = absd = rel = 0.0
    for m in re.finditer(r"worst \|d\|/tol: \S+ ([0-9.einf]+), \S+ ([0-9.einf]+) .*max \|d\| (\S+), "
                         r"max \|d\|/\|ref\| (\S+)", p.stdout):
        ratio = max(ratio, float(m.group(1)), float(m.group(2)))
        absd, rel = max(absd, float(m.group(3))), max(rel, float(m.group(4)))
    return p.returncode, ratio, absd, rel, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="write the fixtures here and keep them")
    ap.add_argument("--only", type=int, action="append", help="run configuration I alone (repeatable)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "tests", "test_parity"))
    ap.add_argument("--vitmae", default=os.path.join(ROOT, "vitmae"),
                    help="also train each configuration (MLP ratio 4, mask ratio > 0: what train takes) with this binary in every thread mode")
    ap.add_argument("--no-train", action="store_true", help="skip the training runs")
    a = ap.parse_args()
    if not os.access(a.bin, os.X_OK):
        sys.exit("parity_sweep: %s: not built (make build/tests/test_parity)" % a.bin)
    out = a.keep or tempfile.mkdtemp(prefix="vitmae-parity-sweep-")
    os.makedirs(out, exist_ok=True)
    opt = {"lr": 1e-3, "min_lr": 1e-5, "wd": 0.05, "warmup": 2, "total": 8, "steps": 3, "clip": 0.0}
    rng = random.Random(a.seed)
    variants = [("%d thread%s" % (t, "s"[:t > 1]), {"OMP_NUM_THREADS": str(t)}) for t in (1, 2, 3)]
    variants += [(p, {"OMP_NUM_THREADS": "1", "VITMAE_GEMM": p}) for p in paths_available()]
    variants.append(("kc 17", {"OMP_NUM_THREADS": "2", "VITMAE_GEMM_KC": "17",   # k-blocks with tails,
                               "VITMAE_FORWARD_IMAGES": "3"}))                    # passes of 3 images
    worst = [0.0, 0.0, 0.0]
    failed, ill_conditioned = [], []
    ran = 0
    for i in range(a.count):
        cfg, batch, images, seed = draw(rng, i)
        if a.only and i not in a.only:
            continue
        ran += 1
        path = os.path.join(out, "sweep_%03d.safetensors" % i)
        reference.make_fixture(path, cfg, batch, seed, opt, images_kind=images, quiet=True)
        L = (cfg["img_size"] // cfg["patch_size"]) ** 2
        desc = ("img %d patch %d C %d D %d/%dh x%d dec %d/%dh x%d mlp %d L %d mask %g B %d %s %s%s" % (
            cfg["img_size"], cfg["patch_size"], cfg["in_chans"], cfg["embed_dim"], cfg["num_heads"], cfg["depth"],
            cfg["decoder_embed_dim"], cfg["decoder_num_heads"], cfg["decoder_depth"], cfg["mlp_ratio"], L,
            cfg["mask_ratio"], batch, cfg["pos_embed"], images, " norm-pix" if cfg["norm_pix_loss"] else ""))
        line = []
        bad = ill = False
        for name, env in variants:
            rc, ratio, absd, rel, text = run(a.bin, path, env)
            line.append("%s %.3f" % (name, ratio))
            if rc == 0:
                worst = [max(worst[0], ratio), max(worst[1], absd), max(worst[2], rel)]
                continue
            # Only misses of a tensor's values ("NAME: n of m values off") can be float32's own; any other
            # failed check is vitmae's.
            misses = set(re.findall(r"failed: (\S+): \d+ of \d+ values off", text))
            others = len(re.findall(r"CHECK\(.*\) failed", text)) - len(re.findall(r"values off", text))
            f32 = torch_f32_ratios(path, misses) if misses and others == 0 else {}
            # Ill-conditioned: on every missed tensor vitmae's worst |d| / tolerance is within F32_FACTOR times
            # float32 PyTorch's own (float32 round-off in another order), else it is vitmae's miss.
            if misses and others == 0 and all(ratio <= F32_FACTOR * f32.get(n, 0.0) for n in misses):
                ill = True
                line[-1] += " (misses %s; PyTorch in float32: %s)" % (
                    ", ".join(sorted(misses)), ", ".join("%s %.3f" % (n, f32[n]) for n in sorted(misses)))
                ill_conditioned.append((i, name))
                continue
            bad = True
            failed.append((i, name, path))
            sys.stdout.write(text)
        if not a.no_train and cfg["mlp_ratio"] == 4 and cfg["mask_ratio"] > 0:
            folder = tempfile.mkdtemp(prefix="train-", dir=out)
            diff = train_modes(a.vitmae, cfg, batch, folder)
            shutil.rmtree(folder, ignore_errors=True)
            line.append("train modes %s" % ("differ" if diff else "same"))
            if diff:
                bad = True
                failed.append((i, "train", path))
                print("\n".join(diff))
        print("%3d %s %s: %s" % (i, "FAIL" if bad else "ill " if ill else "ok  ", desc, ", ".join(line)),
              flush=True)
        if not bad and not a.keep:
            os.remove(path)
    print("%d configurations, %d runs each (the ill-conditioned runs left out): worst |d|/tol %.3f, max |d| %.3g, max |d|/|ref| (|ref| >= 1e-2) %.3g" % (
        ran, len(variants), worst[0], worst[1], worst[2]))
    if ill_conditioned:
        print("ill-conditioned (vitmae's |d|/tol within %g times PyTorch's own in float32; not counted as "
              "failures): %s" % (F32_FACTOR, "; ".join("#%d %s" % c for c in ill_conditioned)))
    if failed:
        print("FAILED: %s (fixtures in %s)" % ("; ".join("#%d %s" % (i, n) for i, n, _ in failed), out))
        return 1
    if not a.keep:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
