"""PyTorch reference of vitmae's model and optimiser; writes the parity fixtures of tests/test_parity.c.

Run with Debian's PyTorch:  /usr/bin/python3 tools/reference.py [OUT_DIR]   (default tests/fixtures)

The model is facebookresearch/mae's MaskedAutoencoderViT written from its published description
(docs/interface.md section 3), with MAE's module names so that state_dict keys equal vitmae's tensor names.
Everything is computed in float64 from float32-rounded weights and inputs, then stored as F32, so the
fixtures hold the exact answer to within float32 rounding; the C side is compared against it with
the tolerances stated in tests/test_parity.c.

Each fixture file (safetensors) holds:
  <name>            the weights (MAE init plus small noise, so LayerNorm weights are not all 1)
  images            [B, H, W, C] normalised pixels
  noise, ids_keep   [B, L] masking noise, [B, K] the visible patches (argsort ascending, first K)
  loss [1], pred [B, L, P*P*C], target [B, L, P*P*C]
  grad.<name>       d loss / d parameter (zeros for frozen position tables)
  step3.<name>      the weights after 3 AdamW steps on the same batch (schedule in the metadata)
  step3.loss        [3] the loss seen at each of those steps
Metadata: format, config (vitmae's config JSON), and the optimiser settings.
"""
import json
import math
import os
import sys

import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

torch.set_default_dtype(torch.float64)


# ---------------------------------------------------------------------------------------------
# Model

def sincos_pos_table(dim, grid):
    """[1 + grid*grid, dim]: row 0 (CLS) zero; patch (y, x): [sin(x w), cos(x w), sin(y w), cos(y w)],
    w_k = 1 / 10000^(k / (dim/4)), k < dim/4 (MAE embeds the x coordinate in the first half)."""
    q = dim // 4
    omega = 1.0 / (10000.0 ** (torch.arange(q, dtype=torch.float64) / q))
    ys, xs = torch.meshgrid(torch.arange(grid, dtype=torch.float64),
                            torch.arange(grid, dtype=torch.float64), indexing="ij")
    x = xs.reshape(-1, 1) * omega
    y = ys.reshape(-1, 1) * omega
    table = torch.cat([torch.sin(x), torch.cos(x), torch.sin(y), torch.cos(y)], dim=1)
    return torch.cat([torch.zeros(1, dim), table], dim=0)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, D = x.shape
        hd = D // self.heads
        qkv = self.qkv(x).reshape(B, T, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]                  # [B, heads, T, hd]
        att = torch.softmax((q @ k.transpose(-2, -1)) * hd ** -0.5, dim=-1)
        self.last_att = att
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.proj(y)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio, eps):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = Mlp(dim, dim * mlp_ratio)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self, chans, dim, patch):
        super().__init__()
        self.proj = nn.Conv2d(chans, dim, patch, stride=patch)

    def forward(self, x):                                   # [B, C, H, W] -> [B, L, D]
        return self.proj(x).flatten(2).transpose(1, 2)


class MaskedAutoencoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        D, Dd, P, C = cfg["embed_dim"], cfg["decoder_embed_dim"], cfg["patch_size"], cfg["in_chans"]
        eps, r = cfg["layer_norm_eps"], int(cfg["mlp_ratio"])
        self.grid = cfg["img_size"] // P
        L = self.grid ** 2
        self.patch_embed = PatchEmbed(C, D, P)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + L, D))
        self.blocks = nn.ModuleList([Block(D, cfg["num_heads"], r, eps) for _ in range(cfg["depth"])])
        self.norm = nn.LayerNorm(D, eps=eps)
        self.decoder_embed = nn.Linear(D, Dd)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, Dd))
        self.decoder_pos_embed = nn.Parameter(torch.zeros(1, 1 + L, Dd))
        self.decoder_blocks = nn.ModuleList(
            [Block(Dd, cfg["decoder_num_heads"], r, eps) for _ in range(cfg["decoder_depth"])])
        self.decoder_norm = nn.LayerNorm(Dd, eps=eps)
        self.decoder_pred = nn.Linear(Dd, P * P * C)
        if cfg["pos_embed"] == "fixed":
            self.pos_embed.requires_grad_(False)
            self.decoder_pos_embed.requires_grad_(False)

    def init_weights(self):
        with torch.no_grad():
            self.pos_embed.copy_(sincos_pos_table(self.pos_embed.shape[2], self.grid)[None])
            self.decoder_pos_embed.copy_(sincos_pos_table(self.decoder_pos_embed.shape[2], self.grid)[None])
            w = self.patch_embed.proj.weight
            nn.init.xavier_uniform_(w.view(w.shape[0], -1))
            nn.init.normal_(self.cls_token, std=0.02)
            nn.init.normal_(self.mask_token, std=0.02)
            for mod in self.modules():
                if isinstance(mod, nn.Linear):
                    nn.init.xavier_uniform_(mod.weight)
                    nn.init.zeros_(mod.bias)
                elif isinstance(mod, nn.LayerNorm):
                    nn.init.ones_(mod.weight)
                    nn.init.zeros_(mod.bias)
            nn.init.zeros_(self.patch_embed.proj.bias)

    def patch_vectors(self, images):
        """[B, H, W, C] -> [B, L, P*P*C], index (py * P + px) * C + c, patches row-major."""
        B, H, W, C = images.shape
        P, g = self.cfg["patch_size"], self.grid
        x = images.reshape(B, g, P, g, P, C).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(B, g * g, P * P * C)

    def forward(self, images, ids_keep):
        """images [B, H, W, C]; ids_keep [B, K] (long). Returns (loss, pred [B, L, pd], target)."""
        B, K = ids_keep.shape
        L = self.grid ** 2
        D = self.cls_token.shape[2]
        x = self.patch_embed(images.permute(0, 3, 1, 2)) + self.pos_embed[:, 1:, :]
        x = torch.gather(x, 1, ids_keep[:, :, None].expand(B, K, D))
        cls = (self.cls_token + self.pos_embed[:, :1, :]).expand(B, 1, D)
        x = torch.cat([cls, x], dim=1)
        for blk in self.blocks:
            x = blk(x)
        latent = self.norm(x)

        y = self.decoder_embed(latent)
        Dd = y.shape[2]
        # Every patch starts as the mask token; the visible ones get their encoder token back.
        patches = self.mask_token.expand(B, L, Dd).clone()
        patches = patches.scatter(1, ids_keep[:, :, None].expand(B, K, Dd), y[:, 1:, :])
        x = torch.cat([y[:, :1, :], patches], dim=1) + self.decoder_pos_embed
        for blk in self.decoder_blocks:
            x = blk(x)
        pred = self.decoder_pred(self.decoder_norm(x))[:, 1:, :]

        target = self.patch_vectors(images)
        if self.cfg["norm_pix_loss"]:
            mean = target.mean(dim=-1, keepdim=True)
            # Unbiased; a patch of one value (patch 1, grey) has variance 0 here, as in vitmae (torch: NaN).
            var = target.var(dim=-1, keepdim=True) if target.shape[2] > 1 else torch.zeros_like(mean)
            target = (target - mean) / (var + 1e-6) ** 0.5
        removed = torch.ones(B, L)
        removed.scatter_(1, ids_keep, 0.0)
        per_patch = ((pred - target) ** 2).mean(dim=-1)
        if removed.sum() > 0:
            loss = (per_patch * removed).sum() / removed.sum()
        else:                                               # mask ratio 0: loss 0, as in vitmae (MAE: NaN)
            loss = (per_patch * removed).sum()
        return loss, pred, target


# ---------------------------------------------------------------------------------------------
# Optimiser schedule (MAE's util/lr_sched.py, per step)

def lr_at(step, total, warmup, base, min_lr):
    if step < warmup:
        return base * step / warmup
    if total <= warmup:
        return base
    return min_lr + (base - min_lr) * 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / (total - warmup)))


def f32(t):
    """Round to float32 and back: the fixtures hold float32, so the reference starts from exactly that."""
    return t.detach().float().double()


def pixel_images(batch, S, C):
    """Image-like inputs in [0, 1]: 8-bit levels in flat squares (patches of zero variance), flat squares
    with one pixel a level off (tiny variance), and noise, as photos and Fashion-MNIST have them."""
    img = torch.randint(0, 256, (batch, S, S, C)).double()
    for b in range(batch):
        for _ in range(3):
            y, x = torch.randint(0, S, (2,)).tolist()
            h, w = torch.randint(1, S + 1, (2,)).tolist()
            img[b, y:y + h, x:x + w, :] = float(torch.randint(0, 256, (1,)).item())
            img[b, y, x, 0] = min(img[b, y, x, 0].item() + 1.0, 255.0)
    return img / 255.0


def adamw(model, opt):
    """MAE's AdamW (betas 0.9, 0.95; eps 1e-8), weight decay on weight matrices (>= 2 dims) only."""
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.ndim >= 2
             and n not in ("cls_token", "mask_token", "pos_embed", "decoder_pos_embed")]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and not any(p is q for q in decay)]
    return torch.optim.AdamW([{"params": decay, "weight_decay": opt["wd"]},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=opt["lr"], betas=(0.9, 0.95), eps=1e-8)


def make_fixture(path, cfg, batch, seed, opt, images_kind="randn", quiet=False):
    """images_kind: "randn" (standard normal pixels) or "pixels" (pixel_images normalised by the
    config's pixel_mean / pixel_std, as the data loader does)."""
    torch.manual_seed(seed)
    model = MaskedAutoencoder(cfg)
    model.init_weights()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.requires_grad:
                p.add_(0.02 * torch.randn_like(p))
            p.copy_(f32(p))
    S, C, P = cfg["img_size"], cfg["in_chans"], cfg["patch_size"]
    L = (S // P) ** 2
    K = int(L * (1.0 - cfg["mask_ratio"]))
    if images_kind == "pixels":
        mean = torch.tensor(cfg["pixel_mean"], dtype=torch.float32).double()
        std = torch.tensor(cfg["pixel_std"], dtype=torch.float32).double()
        images = f32(((f32(pixel_images(batch, S, C)) - mean) / std).float())
    else:
        images = f32(torch.randn(batch, S, S, C))
    noise = f32(torch.rand(batch, L))
    ids_keep = torch.argsort(noise, dim=1)[:, :K]

    names = [n for n, _ in model.named_parameters()]
    weights = {n: p.detach().clone() for n, p in model.named_parameters()}

    loss, pred, target = model(images, ids_keep)
    model.zero_grad()
    loss.backward()
    grads = {n: (p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p))
             for n, p in model.named_parameters()}

    # Three AdamW steps on the same batch.
    optim = adamw(model, opt)
    step_losses = []
    for s in range(opt["steps"]):
        lr = lr_at(s, opt["total"], opt["warmup"], opt["lr"], opt["min_lr"])
        for group in optim.param_groups:
            group["lr"] = lr
        optim.zero_grad()
        l, _, _ = model(images, ids_keep)
        l.backward()
        optim.step()
        step_losses.append(l.item())

    tensors = {}
    for n in names:
        tensors[n] = (list(weights[n].shape), weights[n])
    tensors["images"] = (list(images.shape), images)
    tensors["noise"] = (list(noise.shape), noise)
    tensors["ids_keep"] = (list(ids_keep.shape), ids_keep.double())
    tensors["loss"] = ([1], loss.detach().reshape(1))
    tensors["pred"] = (list(pred.shape), pred.detach())
    tensors["target"] = (list(target.shape), target.detach())
    for n in names:
        tensors["grad." + n] = (list(grads[n].shape), grads[n])
    for n, p in model.named_parameters():
        tensors["step3." + n] = (list(p.shape), p.detach())
    tensors["step3.loss"] = ([len(step_losses)], torch.tensor(step_losses))
    meta = {"format": "vitmae-parity", "config": json.dumps(cfg),
            "optimizer": json.dumps(opt)}
    safetensors_io.write(path, tensors, meta)
    if quiet:
        return
    print("%s: loss %.6f, %d parameter tensors, step losses %s" % (
        path, loss.item(), len(names), ", ".join("%.6f" % v for v in step_losses)))


def config(**kw):
    cfg = {"img_size": 16, "patch_size": 4, "in_chans": 3, "embed_dim": 32, "depth": 2, "num_heads": 2,
           "decoder_embed_dim": 16, "decoder_depth": 1, "decoder_num_heads": 2, "mlp_ratio": 4,
           "norm_pix_loss": True, "mask_ratio": 0.75, "pos_embed": "learned",
           "pixel_mean": [0.0] * 3, "pixel_std": [1.0] * 3, "layer_norm_eps": 1e-6}
    cfg.update(kw)
    cfg["pixel_mean"] = cfg["pixel_mean"][:cfg["in_chans"]]
    cfg["pixel_std"] = cfg["pixel_std"][:cfg["in_chans"]]
    return cfg


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    os.makedirs(out, exist_ok=True)
    opt = {"lr": 1e-3, "min_lr": 1e-5, "wd": 0.05, "warmup": 2, "total": 8, "steps": 3, "clip": 0.0}
    # (a) RGB, learned position tables, norm-pix loss.
    make_fixture(os.path.join(out, "parity_rgb.safetensors"), config(), batch=3, seed=1, opt=opt)
    # (b) greyscale, fixed position tables, odd sizes: grid 4 of 3x3 patches, head_dim 10 and 6.
    make_fixture(os.path.join(out, "parity_grey.safetensors"),
                 config(img_size=12, patch_size=3, in_chans=1, embed_dim=20, depth=2, num_heads=2,
                        decoder_embed_dim=12, decoder_depth=2, decoder_num_heads=2, norm_pix_loss=False,
                        mask_ratio=0.6, pos_embed="fixed"),
                 batch=2, seed=2, opt=opt)
    # (c) shapes the two above never take (tools/parity_sweep.py draws many more): head dim 1 (12 heads of
    # 12), one visible patch of 16, no decoder block and a decoder wider than the encoder, 2 px RGB patches,
    # 8-bit images in [0, 1] (--pixel-norm none) with flat patches (norm-pix of zero and tiny variance), 4 images
    # (4 gradient groups at once).
    make_fixture(os.path.join(out, "parity_odd.safetensors"),
                 config(img_size=8, patch_size=2, in_chans=3, embed_dim=12, depth=1, num_heads=12,
                        decoder_embed_dim=20, decoder_depth=0, decoder_num_heads=1, norm_pix_loss=True,
                        mask_ratio=0.90625, pos_embed="learned"),
                 batch=4, seed=3, opt=opt, images_kind="pixels")


if __name__ == "__main__":
    main()
