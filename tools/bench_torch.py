#!/usr/bin/python3
"""PyTorch's speed on the bench config: the same model (tools/reference.py's MaskedAutoencoder) and the
same training step as `vitmae bench` (random N(0,1) images, per-image uniform mask noise + argsort,
forward, backward, AdamW betas (0.9, 0.95), weight decay 0.05 on weight matrices), float32, timed
after warm-up steps, at each thread count given (torch.set_num_threads).

Usage: /usr/bin/python3 tools/bench_torch.py [--preset tiny] [--img 32] [--patch 4] [--channels 3]
       [--batch 64] [--steps 10] [--warmup 2] [--mask-ratio 0.75] [--threads 1,2] [--json]
Prints img/s per thread count (best and mean over steps) and the BLAS kernels that ran; --json: one JSON
object.

Debian's torch calls the system BLAS (OpenBLAS, which `make bench` installs). OpenBLAS picks its kernels by
the CPU's family and model, and Debian 12's does not know every CPU: where it falls back to its generic SSE3
kernels ("Prescott") on a CPU with AVX-512 (or AVX2 and FMA), this script runs itself again with
OPENBLAS_CORETYPE=SkylakeX (Haswell), so that PyTorch is timed at its best (docs/performance.md, "PyTorch's
OpenBLAS on a CPU it does not know"). An OPENBLAS_CORETYPE of your own is kept.
"""
import argparse
import ctypes
import json
import os
import sys
import time


def openblas_kernels():
    """The name of the kernels OpenBLAS chose (openblas_get_corename), or None when the BLAS is not OpenBLAS."""
    try:
        name = ctypes.CDLL("libblas.so.3").openblas_get_corename
    except (OSError, AttributeError):
        return None
    name.restype = ctypes.c_char_p
    return name().decode()


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


KERNELS = openblas_kernels()                     # loads OpenBLAS, which reads OPENBLAS_CORETYPE now
OWN_CHOICE = os.environ.get("VITMAE_OPENBLAS_OWN_CHOICE", KERNELS)   # before a run again
if KERNELS == "Prescott" and "OPENBLAS_CORETYPE" not in os.environ:
    flags = cpu_flags()
    better = "SkylakeX" if "avx512f" in flags else "Haswell" if {"avx2", "fma"} <= flags else None
    if better:
        os.environ["OPENBLAS_CORETYPE"] = better
        os.environ["VITMAE_OPENBLAS_OWN_CHOICE"] = KERNELS
        os.execv(sys.executable, [sys.executable] + sys.argv)

import torch  # noqa: E402  (after the BLAS's kernels are settled)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import MaskedAutoencoder, config  # noqa: E402

torch.set_default_dtype(torch.float32)   # reference.py sets float64 for its fixtures; we time float32

PRESETS = {  # docs/interface.md section 3
    "tiny": dict(embed_dim=192, depth=6, num_heads=3, decoder_embed_dim=128, decoder_depth=2, decoder_num_heads=4),
    "small": dict(embed_dim=384, depth=12, num_heads=6, decoder_embed_dim=256, decoder_depth=4, decoder_num_heads=8),
    "base": dict(embed_dim=768, depth=12, num_heads=12, decoder_embed_dim=512, decoder_depth=8, decoder_num_heads=16),
}


def run(args, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cfg = config(img_size=args.img, patch_size=args.patch, in_chans=args.channels, norm_pix_loss=False,
                 mask_ratio=args.mask_ratio, **PRESETS[args.preset])
    model = MaskedAutoencoder(cfg)
    model.init_weights()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "pos_embed" not in n and "token" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "pos_embed" not in n and "token" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.95), eps=1e-8)
    B, L = args.batch, (args.img // args.patch) ** 2
    K = int(L * (1.0 - args.mask_ratio))
    times = []
    for s in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        images = torch.randn(B, args.img, args.img, args.channels)
        ids_keep = torch.argsort(torch.rand(B, L), dim=1)[:, :K]
        opt.zero_grad(set_to_none=False)
        loss, _, _ = model(images, ids_keep)
        loss.backward()
        opt.step()
        if s >= args.warmup:
            times.append(time.perf_counter() - t0)
    return {"threads": threads, "img_per_s": B * len(times) / sum(times), "img_per_s_best_step": B / min(times),
            "loss": float(loss)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    ap.add_argument("--img", type=int, default=32)
    ap.add_argument("--patch", type=int, default=4)
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--mask-ratio", type=float, default=0.75)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = [run(args, int(t)) for t in args.threads.split(",")]
    if args.json:
        print(json.dumps({"torch": torch.__version__, "preset": args.preset, "img": args.img, "patch": args.patch,
                          "channels": args.channels, "batch": args.batch, "steps": args.steps,
                          "openblas_kernels": KERNELS, "openblas_own_choice": OWN_CHOICE, "results": results}))
    else:
        for r in results:
            print("torch %s: %d thread%s: %.1f img/s (best step %.1f)" % (
                torch.__version__, r["threads"], "" if r["threads"] == 1 else "s", r["img_per_s"],
                r["img_per_s_best_step"]))
        if KERNELS:
            print("OpenBLAS kernels: %s%s" % (KERNELS, "" if OWN_CHOICE == KERNELS else
                                              " (its own choice for this CPU: %s)" % OWN_CHOICE))


if __name__ == "__main__":
    main()
