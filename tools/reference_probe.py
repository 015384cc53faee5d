"""PyTorch reference for `vitmae embed` and `vitmae probe`: writes tests/fixtures/probe_expected.safetensors,
read by tests/test_probe.c.

Run with Debian's PyTorch:  /usr/bin/python3 tools/reference_probe.py [OUT_DIR]   (default tests/fixtures)

Three parts, all computed in float64 from float32 inputs:
  features   the encoder features of tests/fixtures/attn_input.png under tests/fixtures/attn_model.safetensors
             (tools/reference_attention.py writes both): every patch visible, tokens of block l through
             the final `norm`, then the CLS token or the mean of the patch tokens.
             "features" [depth, 2, D]: [layer][0 = cls, 1 = mean][:]
  kNN        DINO's eval_knn.knn_classifier on small random features (4 clustered classes): rows
             L2-normalised, cosine similarity, the k most similar training rows (ties: lower index first,
             a stable sort) vote with weight exp(sim / T), the class of largest total wins (ties: lower
             class). "knn.train" [n, d], "knn.train_labels" [n], "knn.test" [m, d], "knn.test_labels" [m],
             "knn.pred.<k>_<T>" [m] for the (k, T) pairs in KNN_CASES. The script checks that no
             decision is a near tie (float32 in C could flip it).
  linear     MAE's linear probe as src/infer/probe.h states it: per-feature mean and population variance
             of the training rows, x' = (x - mean) / sqrt(var + 1e-6); Linear from zero; softmax
             cross-entropy (mean); torch.optim.SGD(momentum 0.9), lr cosine to 0 per step; each epoch's
             order a Fisher-Yates permutation from vitmae's rng (xoshiro256** seeded through rng_derive,
             ported below). "linear.mean", "linear.inv_std" [d], "linear.weight" [C, d], "linear.bias" [C],
             "linear.pred" [m], "linear.loss" [1] (mean loss of the last epoch); options in the metadata.
"""
import json
import math
import os
import struct
import sys
import zlib

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

torch.set_default_dtype(torch.float64)
M64 = (1 << 64) - 1

KNN_CASES = [(5, 0.07), (12, 0.5), (200, 0.07)]   # the last: k beyond the training set (cut to n)
LINEAR = {"epochs": 6, "batch": 16, "lr": 0.1, "momentum": 0.9, "weight_decay": 0.0, "seed": 3}


# ---------------------------------------------------------------------------------------------
# vitmae's rng (src/core/rng.c), for the linear probe's row order

def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


class Rng:
    def __init__(self, seed):
        self.s = []
        x = seed
        for _ in range(4):
            x, v = splitmix64(x)
            self.s.append(v)

    @staticmethod
    def derive(seed, a, b):
        x, k = splitmix64(seed ^ 0x6A09E667F3BCC909)
        k ^= (a * 0xD1B54A32D192ED03) & M64
        _, k2 = splitmix64(k)
        k2 ^= (b * 0x8CB92BA72F3D8DD7) & M64
        return Rng(k2)

    def next(self):
        s = self.s
        rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & M64  # noqa: E731
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, n):
        m = (self.next() >> 32) * n
        low = m & 0xFFFFFFFF
        if low < n:
            threshold = ((1 << 32) - n) % n
            while low < threshold:
                m = (self.next() >> 32) * n
                low = m & 0xFFFFFFFF
        return m >> 32


def epoch_order(n, seed, epoch):
    r = Rng.derive(seed, 0x5A1E, epoch)
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = r.below(i + 1)
        order[i], order[j] = order[j], order[i]
    return order


# ---------------------------------------------------------------------------------------------
# Probes

def knn_predict(train, train_labels, test, k, T, nclasses):
    """DINO's knn_classifier, with explicit tie rules; also returns the smallest relative gaps."""
    tr = F.normalize(train, dim=1, p=2)
    te = F.normalize(test, dim=1, p=2)
    sim = te @ tr.t()
    k = min(k, train.shape[0])
    vals, idx = torch.sort(sim, dim=1, descending=True, stable=True)
    top_sim, top_idx = vals[:, :k], idx[:, :k]
    gap = math.inf
    if k < train.shape[0]:
        gap = (vals[:, k - 1] - vals[:, k]).min().item()
    one_hot = F.one_hot(train_labels[top_idx], nclasses).double()           # [m, k, C]
    votes = (one_hot * (top_sim / T).exp()[:, :, None]).sum(dim=1)           # [m, C]
    sv, _ = torch.sort(votes, dim=1, descending=True)
    vote_gap = ((sv[:, 0] - sv[:, 1]) / sv[:, 0]).min().item()
    pred = torch.argmax(votes, dim=1)   # first maximum: the lower class on a tie
    return pred, gap, vote_gap


def linear_probe(train, labels, test, nclasses, opt):
    n, d = train.shape
    mean = train.mean(dim=0)
    var = ((train - mean) ** 2).mean(dim=0)
    inv_std = 1.0 / torch.sqrt(var + 1e-6)
    xn = (train - mean) * inv_std
    lin = torch.nn.Linear(d, nclasses)
    torch.nn.init.zeros_(lin.weight)
    torch.nn.init.zeros_(lin.bias)
    sgd = torch.optim.SGD(lin.parameters(), lr=opt["lr"], momentum=opt["momentum"],
                          weight_decay=opt["weight_decay"])
    B = min(opt["batch"], n)
    per_epoch = (n + B - 1) // B
    steps = opt["epochs"] * per_epoch
    t = 0
    last = 0.0
    for e in range(opt["epochs"]):
        order = torch.tensor(epoch_order(n, opt["seed"], e))
        total = 0.0
        for i0 in range(0, n, B):
            rows = order[i0:i0 + B]
            lr = opt["lr"] * 0.5 * (1.0 + math.cos(math.pi * t / steps))
            for g in sgd.param_groups:
                g["lr"] = lr
            sgd.zero_grad()
            loss = F.cross_entropy(lin(xn[rows]), labels[rows])
            loss.backward()
            sgd.step()
            total += loss.item() * len(rows)
            t += 1
        last = total / n
    with torch.no_grad():
        logits = lin((test - mean) * inv_std)
    return mean, inv_std, lin.weight.detach(), lin.bias.detach(), logits.argmax(dim=1), last, logits


# ---------------------------------------------------------------------------------------------
# Features of the attention fixture's model

def png_rgb8_read(path):
    """The 8-bit RGB PNGs tools/reference_attention.py writes (filter 0 on every row) -> [H, W, 3]."""
    with open(path, "rb") as f:
        buf = f.read()
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(buf):
        (n,) = struct.unpack(">I", buf[pos:pos + 4])
        kind, data = buf[pos + 4:pos + 8], buf[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and ctype == 2, "only 8-bit RGB"
        elif kind == b"IDAT":
            idat += data
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = 1 + 3 * w
    rows = []
    for y in range(h):
        assert raw[y * stride] == 0, "only filter 0"
        rows.append(list(raw[y * stride + 1:(y + 1) * stride]))
    return torch.tensor(rows, dtype=torch.float64).reshape(h, w, 3)


def encoder_features(ckpt, image_u8):
    """[depth, 2, D]: per block, CLS and patch-mean of the tokens through the final norm."""
    tensors, meta = safetensors_io.read(ckpt)
    cfg = json.loads(meta["config"])
    W = {k: torch.tensor(list(a), dtype=torch.float64).reshape(s) for k, (s, a) in tensors.items()}
    eps, P, heads = cfg["layer_norm_eps"], cfg["patch_size"], cfg["num_heads"]
    x = image_u8 / 255.0
    x = (x - torch.tensor(cfg["pixel_mean"])) / torch.tensor(cfg["pixel_std"])
    x = F.conv2d(x.permute(2, 0, 1)[None], W["patch_embed.proj.weight"], W["patch_embed.proj.bias"], stride=P)
    x = x.flatten(2).transpose(1, 2) + W["pos_embed"][:, 1:]
    x = torch.cat([W["cls_token"] + W["pos_embed"][:, :1], x], dim=1)          # [1, T, D]
    D = x.shape[2]
    hd = D // heads
    ln = lambda v, p: F.layer_norm(v, (D,), W[p + ".weight"], W[p + ".bias"], eps)  # noqa: E731
    out = []
    for i in range(cfg["depth"]):
        b = "blocks.%d." % i
        h = ln(x, b + "norm1")
        qkv = F.linear(h, W[b + "attn.qkv.weight"], W[b + "attn.qkv.bias"])
        qkv = qkv.reshape(1, -1, 3, heads, hd).permute(2, 0, 3, 1, 4)
        att = torch.softmax((qkv[0] @ qkv[1].transpose(-2, -1)) * hd ** -0.5, dim=-1)
        y = (att @ qkv[2]).transpose(1, 2).reshape(1, -1, D)
        x = x + F.linear(y, W[b + "attn.proj.weight"], W[b + "attn.proj.bias"])
        h = F.linear(F.gelu(F.linear(ln(x, b + "norm2"), W[b + "mlp.fc1.weight"], W[b + "mlp.fc1.bias"])),
                     W[b + "mlp.fc2.weight"], W[b + "mlp.fc2.bias"])
        x = x + h
        tok = ln(x, "norm")[0]
        out.append(torch.stack([tok[0], tok[1:].mean(dim=0)]))
    return torch.stack(out)


def f32(t):
    return t.float().double()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    fixtures = os.path.join(here, "..", "tests", "fixtures")
    out = sys.argv[1] if len(sys.argv) > 1 else fixtures
    os.makedirs(out, exist_ok=True)
    tensors = {}

    feats = encoder_features(os.path.join(fixtures, "attn_model.safetensors"),
                             png_rgb8_read(os.path.join(fixtures, "attn_input.png")))
    tensors["features"] = (list(feats.shape), feats)

    # Clustered features: 4 classes, 9 dimensions, offset so the mean is far from zero (the
    # normalisation matters), one dimension with a small scale (inv_std matters).
    torch.manual_seed(11)
    C, d, n, m = 4, 9, 70, 30
    centres = 1.2 * torch.randn(C, d)
    scale = torch.ones(d)
    scale[3] = 0.05
    def draw(count):
        y = torch.randint(0, C, (count,))
        x = (centres[y] + torch.randn(count, d)) * scale + 2.0
        return f32(x), y
    train, ytrain = draw(n)
    test, ytest = draw(m)
    tensors["knn.train"] = ([n, d], train)
    tensors["knn.train_labels"] = ([n], ytrain.double())
    tensors["knn.test"] = ([m, d], test)
    tensors["knn.test_labels"] = ([m], ytest.double())
    for k, T in KNN_CASES:
        pred, gap, vote_gap = knn_predict(train, ytrain, test, k, T, C)
        assert gap > 1e-6 and vote_gap > 1e-5, "near tie (k %d): gap %g, vote gap %g" % (k, gap, vote_gap)
        tensors["knn.pred.%d_%g" % (k, T)] = ([m], pred.double())
        print("knn k %d T %g: top1 %.4f (smallest similarity gap %.3g, vote gap %.3g)" % (
            k, T, (pred == ytest).double().mean().item(), gap, vote_gap))

    mean, inv_std, w, b, pred, loss, logits = linear_probe(train, ytrain, test, C, LINEAR)
    srt, _ = torch.sort(logits, dim=1, descending=True)
    assert (srt[:, 0] - srt[:, 1]).min().item() > 1e-4, "near tie in the linear probe's predictions"
    tensors["linear.mean"] = ([d], mean)
    tensors["linear.inv_std"] = ([d], inv_std)
    tensors["linear.weight"] = (list(w.shape), w)
    tensors["linear.bias"] = (list(b.shape), b)
    tensors["linear.pred"] = ([m], pred.double())
    tensors["linear.loss"] = ([1], torch.tensor([loss]))
    print("linear: top1 %.4f, last-epoch loss %.6f, |W| max %.4f" % (
        (pred == ytest).double().mean().item(), loss, w.abs().max().item()))
    safetensors_io.write(os.path.join(out, "probe_expected.safetensors"), tensors,
                         {"format": "vitmae-probe-reference", "linear": json.dumps(LINEAR),
                          "knn_cases": json.dumps(KNN_CASES), "classes": str(C)})


if __name__ == "__main__":
    main()
