#!/usr/bin/python3
"""PyTorch's speed on the bench config: the same model (tools/reference.py's MaskedAutoencoder) and the
same training step as `vitmae bench` (random N(0,1) images, per-image uniform mask noise + argsort,
forward, backward, AdamW betas (0.9, 0.95), weight decay 0.05 on weight matrices), float32, timed
after warm-up steps, at each thread count given (torch.set_num_threads).

Usage: /usr/bin/python3 tools/bench_torch.py [--preset tiny] [--img 32] [--patch 4] [--channels 3]
       [--batch 64] [--steps 10] [--warmup 2] [--mask-ratio 0.75] [--threads 1,2] [--json]
Prints img/s per thread count (best and mean over steps) and the BLAS kernels that ran; --json: one JSON
object. `bench_torch.py --blas` only prints the OpenBLAS kernels that libblas.so.3 would choose, or
"none" where that library is not OpenBLAS (tools/bench.sh asks before it times anything).

Debian's torch calls the system BLAS (OpenBLAS, which `make bench` installs). OpenBLAS picks its kernels by
the CPU's family and model, and Debian 12's does not know every CPU: where it chooses kernels narrower than
the CPU's vectors (its generic SSE3 "Prescott" on an Intel Xeon model 207), this script runs itself again
with OPENBLAS_CORETYPE=SkylakeX (AVX-512) or Haswell (AVX2 and FMA), so that PyTorch is timed at its best
(docs/performance.md, "PyTorch's OpenBLAS on a CPU it does not know"). An OPENBLAS_CORETYPE of your own is
kept; where it holds PyTorch to narrower kernels than the CPU's, the output says so and names the kernels
OpenBLAS would have chosen (openblas_narrower_than_cpu, openblas_own_choice in --json).
"""
import argparse
import ctypes
import json
import os
import subprocess
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


AVX512_KERNELS = {"SkylakeX", "Cooperlake", "SapphireRapids"}    # OpenBLAS's names (openblas_get_corename)
AVX2_KERNELS = AVX512_KERNELS | {"Haswell", "Zen"}


def wider_kernels(chosen, flags):
    """The OPENBLAS_CORETYPE to run with instead of the kernels OpenBLAS chose (None: keep its choice), given
    the CPU's flags from /proc/cpuinfo: its AVX-512 kernels where the CPU has AVX-512 and OpenBLAS chose
    narrower ones, its AVX2 ones where the CPU has AVX2 and FMA and OpenBLAS chose older ones."""
    if chosen is None:                            # not OpenBLAS
        return None
    if {"avx512f", "avx512vl"} <= flags and chosen not in AVX512_KERNELS:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags and chosen not in AVX2_KERNELS:
        return "Haswell"
    return None


KERNELS = OWN_CHOICE = None   # set by settle_kernels()
NARROWER = False              # the kernels that ran are narrower than the CPU's vectors (OPENBLAS_CORETYPE said so)


def own_choice():
    """The kernels OpenBLAS chooses for this CPU by itself, asked in a child Python without OPENBLAS_CORETYPE
    (None where that fails)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    code = ("import sys; sys.path.insert(0, %r); import bench_torch; print(bench_torch.openblas_kernels())"
            % os.path.dirname(os.path.abspath(__file__)))
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    name = out.stdout.strip()
    return name if out.returncode == 0 and name and name != "None" else None


def settle_kernels():
    """Asks OpenBLAS which kernels it chose (this loads it, and it reads OPENBLAS_CORETYPE then). Where the
    user set no OPENBLAS_CORETYPE and they are narrower than the CPU's, runs this script again with wider
    ones; where the user's OPENBLAS_CORETYPE holds it to narrower ones, keeps them and says so (NARROWER).
    Must run before torch is imported."""
    global KERNELS, OWN_CHOICE, NARROWER
    KERNELS = openblas_kernels()
    better = wider_kernels(KERNELS, cpu_flags())
    if "VITMAE_OPENBLAS_OWN_CHOICE" in os.environ:      # run again by the branch below
        OWN_CHOICE = os.environ["VITMAE_OPENBLAS_OWN_CHOICE"]
    elif "OPENBLAS_CORETYPE" in os.environ:             # the user's (or the environment's) choice, kept
        OWN_CHOICE = own_choice() or KERNELS
    else:
        OWN_CHOICE = KERNELS
        if better:
            os.environ["OPENBLAS_CORETYPE"] = better
            os.environ["VITMAE_OPENBLAS_OWN_CHOICE"] = KERNELS
            os.execv(sys.executable, [sys.executable] + sys.argv)
    NARROWER = better is not None


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
    global torch, MaskedAutoencoder, config
    if sys.argv[1:] == ["--blas"]:     # without torch: which BLAS PyTorch would run on
        print(openblas_kernels() or "none")
        return
    settle_kernels()
    import torch  # after the BLAS's kernels are settled
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from reference import MaskedAutoencoder, config
    torch.set_default_dtype(torch.float32)   # reference.py sets float64 for its fixtures; we time float32
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
                          "openblas_kernels": KERNELS, "openblas_own_choice": OWN_CHOICE,
                          "openblas_narrower_than_cpu": NARROWER, "results": results}))
    else:
        for r in results:
            print("torch %s: %d thread%s: %.1f img/s (best step %.1f)" % (
                torch.__version__, r["threads"], "" if r["threads"] == 1 else "s", r["img_per_s"],
                r["img_per_s_best_step"]))
        if KERNELS:
            print("OpenBLAS kernels: %s%s" % (KERNELS, "" if OWN_CHOICE == KERNELS else
                                              " (its own choice for this CPU: %s)" % OWN_CHOICE))
            if NARROWER:
                print("warning: OPENBLAS_CORETYPE=%s holds PyTorch to narrower kernels than this CPU's vectors; "
                      "unset it to time PyTorch at its best" % os.environ.get("OPENBLAS_CORETYPE"))


if __name__ == "__main__":
    main()
