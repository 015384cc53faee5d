"""PyTorch reference for `vitmae reconstruct --raw`; writes the fixtures of tests/test_recon_parity.c.

Run with Debian's PyTorch:  /usr/bin/python3 tools/reference_recon.py [FIXTURE_DIR]  (default tests/fixtures)

It reuses the weights of the model parity fixtures (parity_rgb / parity_grey .safetensors, written by
tools/reference.py; only their parameter tensors are read) and tools/reference.py's model, and for each
writes:
  recon_<name>.png            the input image, img_size x img_size, 8-bit (so the evaluation view is the
                              image itself, pixel for pixel)
  recon_<name>_mask.png       the mask, twice the image size (nearest resize back to img_size), white
                              where a patch is removed, dark elsewhere
  recon_<name>.safetensors    "recon" [H, W, C]: the expected recon.npy; "removed" [H/P, W/P] (1 =
                              removed); metadata "config" = the checkpoint config to use with the
                              parity weights (pixel mean/std changed from 0/1 so de-normalisation counts)
The reconstruction, in float64 from the float32 inputs:
  x = pixels / 255, xn = (x - mean[c]) / std[c], pred = model(xn, visible patches ascending);
  norm-pix: a visible patch uses its own mean and unbiased var of xn; a removed patch uses the mean of
  the visible patches' means and the mean of their (var + 1e-6): p = pred * sqrt(var) + mean;
  then pixels = p * std[c] + mean[c], un-patchified (patch vector index (py * P + px) * C + c).
"""
import json
import os
import struct
import sys
import zlib

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402
import safetensors_io  # noqa: E402

torch.set_default_dtype(torch.float64)


def write_png(path, w, h, c, data):
    """8-bit grey (c = 1) or RGB (c = 3) PNG of bytes data [h][w][c], no filtering."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    rows = b"".join(b"\x00" + bytes(data[y * w * c:(y + 1) * w * c]) for y in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0 if c == 1 else 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 9))
                + chunk(b"IEND", b""))


def load_model(parity_path, cfg):
    tensors, _ = safetensors_io.read(parity_path)
    model = reference.MaskedAutoencoder(cfg)
    state = {}
    for name, _ in model.named_parameters():
        shape, data = tensors[name]
        state[name] = torch.tensor(list(data), dtype=torch.float64).reshape(shape)
    model.load_state_dict(state)
    return model


def reconstruct(model, cfg, pixels_u8, removed):
    S, P, C = cfg["img_size"], cfg["patch_size"], cfg["in_chans"]
    g = S // P
    mean = torch.tensor(cfg["pixel_mean"]).float().double()
    std = torch.tensor(cfg["pixel_std"]).float().double()
    x = (pixels_u8.double() / 255.0).float().double().reshape(1, S, S, C)
    xn = ((x - mean) / std).float().double()               # the C side normalises in float32
    ids_keep = torch.nonzero(removed.reshape(-1) == 0).reshape(1, -1)
    with torch.no_grad():
        _, pred, _ = model(xn, ids_keep)
    pred = pred[0]                                           # [L, P*P*C]
    if cfg["norm_pix_loss"]:
        patches = model.patch_vectors(xn)[0]                 # [L, P*P*C]
        mu = patches.mean(dim=-1)
        var = patches.var(dim=-1) + 1e-6                     # unbiased, as the loss
        vis = removed.reshape(-1) == 0
        mu = torch.where(vis, mu, mu[vis].mean())
        var = torch.where(vis, var, var[vis].mean())
        pred = pred * var.sqrt()[:, None] + mu[:, None]
    img = pred.reshape(g, g, P, P, C).permute(0, 2, 1, 3, 4).reshape(S, S, C)
    return img * std + mean


def make(fixtures, name, parity_file, pixel_mean, pixel_std, n_removed, seed):
    _, meta = safetensors_io.read(os.path.join(fixtures, parity_file))
    cfg = json.loads(meta["config"])
    cfg["pixel_mean"], cfg["pixel_std"] = pixel_mean, pixel_std
    model = load_model(os.path.join(fixtures, parity_file), cfg)
    S, P, C = cfg["img_size"], cfg["patch_size"], cfg["in_chans"]
    g = S // P
    gen = torch.Generator().manual_seed(seed)
    pixels = torch.randint(0, 256, (S, S, C), generator=gen)
    removed = torch.zeros(g * g, dtype=torch.long)
    removed[torch.randperm(g * g, generator=gen)[:n_removed]] = 1
    removed = removed.reshape(g, g)

    write_png(os.path.join(fixtures, "recon_%s.png" % name), S, S, C, pixels.reshape(-1).tolist())
    # Mask at twice the size: removed patches white, visible ones dark (blue for RGB: luminance 0.114).
    M = 2 * S
    mask = []
    for y in range(M):
        for x in range(M):
            r = int(removed[(y // 2) // P, (x // 2) // P])
            mask += ([255] * C) if r else ([0, 0, 255] if C == 3 else [60])
    write_png(os.path.join(fixtures, "recon_%s_mask.png" % name), M, M, C, mask)

    recon = reconstruct(model, cfg, pixels, removed)
    tensors = {"recon": (list(recon.shape), recon), "removed": ([g, g], removed.double())}
    safetensors_io.write(os.path.join(fixtures, "recon_%s.safetensors" % name), tensors,
                         {"format": "vitmae-recon-parity", "config": json.dumps(cfg), "weights": parity_file})
    print("recon_%s: %dx%dx%d, %d of %d patches removed, recon range [%.4f, %.4f]" % (
        name, S, S, C, n_removed, g * g, recon.min().item(), recon.max().item()))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    # RGB: norm-pix checkpoint (visible statistics for removed patches); grey: plain pixel loss.
    make(out, "rgb", "parity_rgb.safetensors", [0.45, 0.5, 0.55], [0.2, 0.25, 0.3], n_removed=11, seed=7)
    make(out, "grey", "parity_grey.safetensors", [0.4], [0.3], n_removed=9, seed=8)


if __name__ == "__main__":
    main()
