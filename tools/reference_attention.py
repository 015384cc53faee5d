"""PyTorch reference for `vitmae attention`: writes the attention fixture of tests/cli_attention.sh.

Run with Debian's PyTorch:  /usr/bin/python3 tools/reference_attention.py [OUT_DIR]   (default tests/fixtures)

Uses tools/reference.py's MaskedAutoencoder (MAE's module names). Writes
  attn_model.safetensors     an encoder-only vitmae checkpoint (format vitmae, config; no decoder
                             tensors), ImageNet pixel mean/std, 3 layers x 4 heads, grid 4 x 4
  attn_input.png             a 16 x 16 RGB 8-bit PNG (exactly img_size: the evaluation view is the
                             image itself, pixel for pixel)
  attn_expected.safetensors  "attention" [depth, heads, 1+L, 1+L]: the softmax attention of every
                             encoder layer for that image, no masking, computed in float64 from the
                             float32 weights and the normalised pixels

As a module: expected_attention(model, image_u8 [H, W, C] list/tensor, mean, std) -> [depth, heads, T, T],
png_rgb8(path, w, h, rows) writes an 8-bit RGB PNG without PIL.
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

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


def png_rgb8(path, w, h, pixels):
    """pixels: bytes of h rows of w RGB triplets. Filter 0 on every row."""
    raw = b"".join(b"\x00" + pixels[y * w * 3:(y + 1) * w * 3] for y in range(h))

    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def expected_attention(model, image_u8, mean, std):
    """image_u8: uint8-valued tensor [H, W, C]. Runs the encoder on every patch (no masking) and
    returns the stacked softmax attention [depth, heads, 1+L, 1+L] (float64)."""
    x = image_u8.double() / 255.0
    x = (x - torch.tensor(mean, dtype=torch.float64)) / torch.tensor(std, dtype=torch.float64)
    L = model.grid ** 2
    ids_keep = torch.arange(L)[None]
    with torch.no_grad():
        model(x[None], ids_keep)
    return torch.stack([blk.attn.last_att[0] for blk in model.blocks])


def fixture_config():
    return reference.config(img_size=16, patch_size=4, in_chans=3, embed_dim=32, depth=3, num_heads=4,
                            decoder_embed_dim=16, decoder_depth=1, decoder_num_heads=2,
                            norm_pix_loss=False, mask_ratio=0.75, pixel_mean=IMAGENET_MEAN,
                            pixel_std=IMAGENET_STD)


def fixture_model(cfg, seed, qkv_noise=0.3):
    """MAE init plus noise; the attention weights get more, so the maps are far from uniform."""
    torch.manual_seed(seed)
    model = reference.MaskedAutoencoder(cfg)
    model.init_weights()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_((qkv_noise if ".attn.qkv." in name else 0.05) * torch.randn_like(p))
            p.copy_(reference.f32(p))
    return model


def fixture_image(size, seed):
    """A bright square on a noisy dark background, as uint8 [size, size, 3]."""
    g = torch.Generator().manual_seed(seed)
    img = torch.randint(0, 80, (size, size, 3), generator=g)
    img[4:11, 6:13, :] = torch.randint(170, 256, (7, 7, 3), generator=g)
    return img


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    os.makedirs(out, exist_ok=True)
    cfg = fixture_config()
    model = fixture_model(cfg, seed=7)
    S = cfg["img_size"]
    img = fixture_image(S, seed=8)
    png_rgb8(os.path.join(out, "attn_input.png"), S, S, bytes(img.reshape(-1).tolist()))

    tensors = {n: (list(p.shape), p.detach()) for n, p in model.named_parameters()
               if not (n.startswith("decoder") or n == "mask_token")}
    safetensors_io.write(os.path.join(out, "attn_model.safetensors"), tensors,
                         {"format": "vitmae", "config": json.dumps(cfg)})
    att = expected_attention(model, img, cfg["pixel_mean"], cfg["pixel_std"])
    safetensors_io.write(os.path.join(out, "attn_expected.safetensors"),
                         {"attention": (list(att.shape), att)}, {"format": "vitmae-attention-reference"})
    cls = att[:, :, 0, 1:]
    print("attn fixture: attention %s, CLS row max %.4f min %.4f (uniform would be %.4f)" % (
        list(att.shape), cls.max().item(), cls.min().item(), 1.0 / att.shape[-1]))


if __name__ == "__main__":
    main()
