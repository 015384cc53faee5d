"""PyTorch reference of vitmae's classifier (fine-tuning); writes the fixtures of tests/test_classifier.c.

Run with Debian's PyTorch:  /usr/bin/python3 tools/reference_classifier.py [OUT_DIR]   (default tests/fixtures)

The model is timm's VisionTransformer with global average pooling as facebookresearch/mae's
models_vit builds it (docs/encoder.md): the encoder blocks of tools/reference.py on every patch (no
masking), the mean of the patch tokens (CLS left out), fc_norm (LayerNorm, eps 1e-6), a linear head;
no final `norm`. Loss: cross-entropy with label smoothing (torch's label_smoothing). Optimiser: AdamW
(betas 0.9, 0.999) over MAE's layer-decay parameter groups (util/lr_decay.py param_groups_lrd: layer id
0 for cls_token / pos_embed / patch_embed, i + 1 for blocks.i, depth + 1 for the rest; lr scale
decay^(depth + 1 - id); no weight decay for 1-D tensors, pos_embed and cls_token), lr per step from
MAE's schedule times each group's scale. Drop path is 0 here (its draws are vitmae's own; the C test
checks its expectation and determinism instead).

Computed in float64 from float32-rounded weights and inputs; stored as F32. Each fixture holds:
  <name>           weights (timm names)            images [B, H, W, C]    labels [B] (as floats)
  logits [B, K]    loss [1]                         grad.<name>
  lrd.<name>       [2]: lr scale and weight decay of the tensor's group
  step3.<name>     weights after 3 AdamW steps on the same batch;  step3.loss [3]
  ema3.<name>      the weights' moving average after those steps (finetune --model-ema): timm's ModelEmaV3,
                   made from the model before the first step and updated after each with the decay of
                   ema_decay below (opt "ema_decay", "ema_warmup"), as torch's lerp
Metadata: format, config (vitmae's config JSON), classes, smoothing, and the optimiser settings.

The mixing fixtures (classifier_mixup, classifier_cutmix; make_mix_fixture) hold the weights, images and
labels, one draw (metadata "mix": lam, cutmix and its box), the images mixed as timm's Mixup mixes a
batch (float32 tensors: x * lam + x.flip(0) * (1 - lam), or the box pasted from x.flip(0)), and the
logits, the loss and the gradients of timm's SoftTargetCrossEntropy on mixup_target's smoothed targets.

The lerp fixture (ema_lerp; make_lerp_fixture) holds float32 tensors ema and w and, for each decay d of
LERP_DECAYS, lerp.<k> = ema.lerp_(w, 1 - d) as torch computes it in float32 (the model EMA's update,
finetune --model-ema), on pieces of odd lengths: core/optim.h ema_update must give the same bits.

The random erasing fixture (erase_sides; make_erase_fixture) holds uniform draws u [N, 2] (F32: the area's
and the aspect's), image sizes sizes [M, 3] (H, W, count) and the sides timm's RandomErasing._erase
computes from them, sides [M, N, 3] (h, w, 1 when the box fits): its own lines, in Python's double
arithmetic and rounding (round half to even), the draws given instead of drawn.
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
from reference import Block, PatchEmbed, sincos_pos_table, lr_at, f32, config  # noqa: E402

torch.set_default_dtype(torch.float64)


class VisionTransformer(nn.Module):
    """timm's VisionTransformer(global_pool='avg') as MAE's models_vit: parameters in timm's order."""

    def __init__(self, cfg, num_classes):
        super().__init__()
        D, P, C = cfg["embed_dim"], cfg["patch_size"], cfg["in_chans"]
        eps, r = cfg["layer_norm_eps"], int(cfg["mlp_ratio"])
        self.grid = cfg["img_size"] // P
        L = self.grid ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + L, D))
        self.patch_embed = PatchEmbed(C, D, P)
        self.blocks = nn.ModuleList([Block(D, cfg["num_heads"], r, eps) for _ in range(cfg["depth"])])
        self.fc_norm = nn.LayerNorm(D, eps=eps)
        self.head = nn.Linear(D, num_classes)
        if cfg["pos_embed"] == "fixed":
            self.pos_embed.requires_grad_(False)

    def forward(self, images):
        B = images.shape[0]
        D = self.cls_token.shape[2]
        x = self.patch_embed(images.permute(0, 3, 1, 2)) + self.pos_embed[:, 1:, :]
        cls = (self.cls_token + self.pos_embed[:, :1, :]).expand(B, 1, D)
        x = torch.cat([cls, x], dim=1)
        for blk in self.blocks:
            x = blk(x)
        x = self.fc_norm(x[:, 1:, :].mean(dim=1))
        return self.head(x)


def layer_id(name, num_layers):
    if name in ("cls_token", "pos_embed") or name.startswith("patch_embed"):
        return 0
    if name.startswith("blocks"):
        return int(name.split(".")[1]) + 1
    return num_layers


def param_groups_lrd(model, weight_decay, layer_decay):
    """One group per parameter (simplest to read back): its lr scale and weight decay."""
    num_layers = len(model.blocks) + 1
    groups, info = [], {}
    for n, p in model.named_parameters():
        if not p.requires_grad:
            continue
        wd = 0.0 if (p.ndim == 1 or n in ("pos_embed", "cls_token")) else weight_decay
        scale = layer_decay ** (num_layers - layer_id(n, num_layers))
        groups.append({"params": [p], "weight_decay": wd, "lr_scale": scale})
        info[n] = (scale, wd)
    return groups, info


def ema_decay(decay, warmup, update):
    """timm's ModelEmaV3.get_decay(step=update), update_after_step 0, warmup_gamma 1, warmup_power 2/3, min_decay 0:
    the decay of the update after optimiser step `update` (1-based)."""
    s = max(0, update - 1)
    if s <= 0:
        return 0.0
    if warmup:
        return max(min(1 - (1 + s / 1.0) ** -(2 / 3), decay), 0.0)
    return decay


def make_fixture(path, cfg, num_classes, batch, seed, opt):
    torch.manual_seed(seed)
    model = VisionTransformer(cfg, num_classes)
    with torch.no_grad():
        model.pos_embed.copy_(sincos_pos_table(model.pos_embed.shape[2], model.grid)[None])
        for name, p in model.named_parameters():
            if name == "pos_embed" and not p.requires_grad:
                p.copy_(f32(p))
                continue
            if name.endswith("weight") and p.ndim >= 2:
                nn.init.xavier_uniform_(p.view(p.shape[0], -1))
            elif name.endswith("weight") and p.ndim == 1:
                p.fill_(1.0)
            elif name != "pos_embed":
                p.zero_()
            p.add_(0.05 * torch.randn_like(p))
            p.copy_(f32(p))
    S, C = cfg["img_size"], cfg["in_chans"]
    images = f32(torch.randn(batch, S, S, C))
    labels = torch.randint(0, num_classes, (batch,))
    names = [n for n, _ in model.named_parameters()]
    weights = {n: p.detach().clone() for n, p in model.named_parameters()}

    logits = model(images)
    loss = F.cross_entropy(logits, labels, label_smoothing=opt["smoothing"])
    model.zero_grad()
    loss.backward()
    grads = {n: (p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p))
             for n, p in model.named_parameters()}

    groups, info = param_groups_lrd(model, opt["wd"], opt["layer_decay"])
    optim = torch.optim.AdamW(groups, lr=opt["lr"], betas=(0.9, 0.999), eps=1e-8)
    ema = {n: p.detach().clone() for n, p in model.named_parameters()}   # deepcopy(model) at setup
    step_losses = []
    for s in range(opt["steps"]):
        lr = lr_at(s, opt["total"], opt["warmup"], opt["lr"], opt["min_lr"])
        for g in optim.param_groups:
            g["lr"] = lr * g["lr_scale"]
        optim.zero_grad()
        l = F.cross_entropy(model(images), labels, label_smoothing=opt["smoothing"])
        l.backward()
        optim.step()
        step_losses.append(l.item())
        d = ema_decay(opt["ema_decay"], opt["ema_warmup"], s + 1)   # update_ema(step=num_updates)
        with torch.no_grad():
            for n, p in model.named_parameters():
                ema[n].lerp_(p, 1.0 - d)

    t = {}
    for n in names:
        t[n] = (list(weights[n].shape), weights[n])
    t["images"] = (list(images.shape), images)
    t["labels"] = ([batch], labels.double())
    t["logits"] = (list(logits.shape), logits.detach())
    t["loss"] = ([1], loss.detach().reshape(1))
    for n in names:
        t["grad." + n] = (list(grads[n].shape), grads[n])
        scale, wd = info.get(n, (0.0, 0.0))
        t["lrd." + n] = ([2], torch.tensor([scale, wd]))
    for n, p in model.named_parameters():
        t["step3." + n] = (list(p.shape), p.detach())
    t["step3.loss"] = ([len(step_losses)], torch.tensor(step_losses))
    for n in names:
        t["ema3." + n] = (list(ema[n].shape), ema[n])
    meta = {"format": "vitmae-parity", "config": json.dumps(cfg), "classes": str(num_classes),
            "optimizer": json.dumps(opt)}
    safetensors_io.write(path, t, meta)
    print("%s: loss %.6f, %d tensors, step losses %s" % (
        path, loss.item(), len(names), ", ".join("%.6f" % v for v in step_losses)))


def make_mix_fixture(path, cfg, num_classes, batch, seed, smoothing, draw):
    torch.manual_seed(seed)
    model = VisionTransformer(cfg, num_classes)
    with torch.no_grad():
        model.pos_embed.copy_(sincos_pos_table(model.pos_embed.shape[2], model.grid)[None])
        for name, p in model.named_parameters():
            p.add_(0.05 * torch.randn_like(p))
            p.copy_(f32(p))
    S, C = cfg["img_size"], cfg["in_chans"]
    images = f32(torch.randn(batch, S, S, C))
    labels = torch.randint(0, num_classes, (batch,))
    lam = draw["lam"]
    x = images.float()   # timm mixes the batch's float32 tensor in place, [B, C, H, W] there; rows y, columns x
    if draw["cutmix"]:
        y0, y1, x0, x1 = draw["box"]
        x[:, y0:y1, x0:x1, :] = x.flip(0)[:, y0:y1, x0:x1, :]
        lam = 1.0 - (y1 - y0) * (x1 - x0) / float(S * S)
    else:
        x_flipped = x.flip(0).mul_(1.0 - lam)
        x.mul_(lam).add_(x_flipped)
    mixed = x.double()
    off = smoothing / num_classes
    on = 1.0 - smoothing + off
    y1 = torch.full((batch, num_classes), off).scatter_(1, labels.view(-1, 1), on)
    y2 = torch.full((batch, num_classes), off).scatter_(1, labels.flip(0).view(-1, 1), on)
    target = y1 * lam + y2 * (1.0 - lam)
    logits = model(mixed)
    loss = torch.sum(-target * F.log_softmax(logits, dim=-1), dim=-1).mean()
    model.zero_grad()
    loss.backward()
    t = {}
    for n, p in model.named_parameters():
        t[n] = (list(p.shape), p.detach())
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        t["grad." + n] = (list(p.shape), g.detach())
    t["images"] = (list(images.shape), images)
    t["labels"] = ([batch], labels.double())
    t["mixed"] = (list(mixed.shape), mixed)
    t["logits"] = (list(logits.shape), logits.detach())
    t["loss"] = ([1], loss.detach().reshape(1))
    meta = {"format": "vitmae-parity", "config": json.dumps(cfg), "classes": str(num_classes),
            "smoothing": repr(smoothing), "mix": json.dumps(dict(draw, lam=lam))}
    safetensors_io.write(path, t, meta)
    print("%s: lam %.6f, loss %.6f" % (path, lam, loss.item()))


def erase_sides(u_area, u_aspect, img_h, img_w, count, min_area=0.02, max_area=1 / 3, min_aspect=0.3):
    # timm's RandomErasing._erase with random.uniform(a, b) = a + (b - a) * u for its two draws
    log_aspect_ratio = (math.log(min_aspect), math.log(1 / min_aspect))
    area = img_h * img_w
    target_area = (min_area + (max_area - min_area) * u_area) * area / count
    aspect_ratio = math.exp(log_aspect_ratio[0] + (log_aspect_ratio[1] - log_aspect_ratio[0]) * u_aspect)
    h = int(round(math.sqrt(target_area * aspect_ratio)))
    w = int(round(math.sqrt(target_area / aspect_ratio)))
    return h, w, int(w < img_w and h < img_h)


def make_erase_fixture(path, n=256):
    torch.manual_seed(8)
    u = torch.rand(n, 2, dtype=torch.float32)
    # a tie: on 8 x 12 pixels, area draw 0.609375 and aspect draw 0.5 (aspect 1) give a target of 20.25
    # pixels exactly, sides sqrt 4.5 each: Python's round gives 4, rounding half away from 0 would give 5
    u[0, 0], u[0, 1] = 0.609375, 0.5
    sizes = [(8, 12, 1), (28, 28, 1), (32, 32, 1), (224, 224, 1), (17, 23, 2), (5, 3, 3), (224, 160, 4)]
    sides = [[erase_sides(float(a), float(b), H, W, c) for a, b in u.tolist()] for H, W, c in sizes]
    assert sides[0][0] == (4, 4, 1), sides[0][0]
    t = {"u": ([n, 2], u.double()), "sizes": ([len(sizes), 3], torch.tensor(sizes, dtype=torch.float64)),
         "sides": ([len(sizes), n, 3], torch.tensor(sides, dtype=torch.float64))}
    safetensors_io.write(path, t, {"format": "vitmae-erase"})
    fits = sum(s[2] for row in sides for s in row)
    print("%s: %d draws on %d sizes, %d boxes fit" % (path, n, len(sizes), fits))


# The lengths of the lerp fixture's pieces: the vector loops' tails (below, at and past 8 and 16 lanes).
LERP_SIZES = [1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 257, 1001]
# Decays of the model EMA whose weights 1 - d take lerp's both formulas: 0.4 (the first: below 0.5),
# 0.1, 0.0002 (timm's default decay 0.9998), 0.5 and 0.63 (the second, from 0.5 up; 0.63 timm's
# warm-up at update 2), 0.9, and 1: the copy of the first update.
LERP_DECAYS = [0.6, 0.9, 0.9998, 0.5, 1 - 2 ** (-2 / 3), 0.1, 0.0]


def make_lerp_fixture(path, seed=9):
    """The model EMA's update as torch computes it, in float32 (its CPU lerp, fused): ema [N] and w [N],
    pieces of LERP_SIZES one after the other, of magnitudes 1e-3 to 1e2 (w near ema in some, equal in a
    few, zeros and signed zeros), and lerp.<k> [N]: each piece's ema.lerp_(w, 1.0 - LERP_DECAYS[k]), a
    call a piece so that torch's own tails are taken. Metadata: sizes, decays."""
    g = torch.Generator().manual_seed(seed)
    n = sum(LERP_SIZES)
    scale = 10.0 ** (torch.rand(n, generator=g, dtype=torch.float64) * 5 - 3)
    ema = (torch.randn(n, generator=g, dtype=torch.float64) * scale).float()
    w = (torch.randn(n, generator=g, dtype=torch.float64) * scale).float()
    near = torch.rand(n, generator=g) < 0.25   # a weight a small step from its average
    w[near] = (ema[near].double() * (1 + 1e-3 * torch.randn(int(near.sum()), generator=g, dtype=torch.float64))).float()
    w[5::97] = ema[5::97]
    ema[3::101], w[4::103] = 0.0, -0.0
    t = {"ema": ([n], ema), "w": ([n], w)}
    for k, d in enumerate(LERP_DECAYS):
        out, off = ema.clone(), 0
        for m in LERP_SIZES:
            out[off:off + m].lerp_(w[off:off + m], 1.0 - d)
            off += m
        unfused = sum(1 for a, b in zip(out.tolist(), lerp_unfused(ema, w, 1.0 - d).tolist()) if a != b)
        print("%s: decay %.6g, weight %.6g: %d of %d values differ from the unfused formulas" %
              (path, d, 1.0 - d, unfused, n))
        t["lerp.%d" % k] = ([n], out)
    safetensors_io.write(path, t, {"format": "vitmae-lerp", "sizes": LERP_SIZES, "decays": LERP_DECAYS})


def lerp_unfused(a, b, weight):
    """lerp's two formulas rounded at each operation in float32 (vitmae's before it fused them)."""
    wt = torch.tensor(weight, dtype=torch.float32)
    if abs(float(wt)) < 0.5:
        return a + wt * (b - a)
    return b - (b - a) * (1 - wt)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    os.makedirs(out, exist_ok=True)
    opt = {"lr": 1e-3, "min_lr": 1e-5, "wd": 0.05, "warmup": 2, "total": 8, "steps": 3,
           "layer_decay": 0.75, "smoothing": 0.1, "ema_decay": 0.9, "ema_warmup": True}
    # (a) RGB, learned position table, 3 blocks (layer ids 0..4), 4 classes.
    make_fixture(os.path.join(out, "classifier_rgb.safetensors"),
                 config(img_size=16, patch_size=4, in_chans=3, embed_dim=16, depth=3, num_heads=2),
                 num_classes=4, batch=3, seed=3, opt=opt)
    # (b) greyscale, fixed position table, odd sizes: grid 4 of 3x3 patches, head_dim 6, 5 classes.
    make_fixture(os.path.join(out, "classifier_grey.safetensors"),
                 config(img_size=12, patch_size=3, in_chans=1, embed_dim=12, depth=2, num_heads=2,
                        pos_embed="fixed"),
                 num_classes=5, batch=4, seed=4, opt=dict(opt, ema_decay=0.6, ema_warmup=False))
    # (c) the edges: one patch (img = patch), head_dim 1, batch 1, 2 classes, label smoothing 0.99,
    # layer decay 0 (every layer but the head frozen: lr scale 0 ** k) and no weight decay.
    edge = dict(opt, smoothing=0.99, layer_decay=0.0, wd=0.0, ema_decay=0.9998, ema_warmup=False)
    make_fixture(os.path.join(out, "classifier_edge.safetensors"),
                 config(img_size=4, patch_size=4, in_chans=1, embed_dim=4, depth=1, num_heads=4),
                 num_classes=2, batch=1, seed=5, opt=edge)
    # (d) Mixup and CutMix: an odd batch (its middle image mixed with itself), then a box cut at an edge.
    small = config(img_size=12, patch_size=4, in_chans=3, embed_dim=12, depth=2, num_heads=2)
    make_mix_fixture(os.path.join(out, "classifier_mixup.safetensors"), small, num_classes=5, batch=5, seed=6,
                     smoothing=0.1, draw={"lam": 0.3141592653589793, "cutmix": 0, "box": [0, 0, 0, 0]})
    make_mix_fixture(os.path.join(out, "classifier_cutmix.safetensors"), small, num_classes=5, batch=4, seed=7,
                     smoothing=0.1, draw={"lam": 0.5, "cutmix": 1, "box": [0, 5, 3, 12]})
    # (e) random erasing's box sides from given draws
    make_erase_fixture(os.path.join(out, "erase_sides.safetensors"))
    # (f) the model EMA's update: torch's lerp in float32 on pieces of odd lengths
    make_lerp_fixture(os.path.join(out, "ema_lerp.safetensors"))


if __name__ == "__main__":
    main()
