"""Writes tests/fixtures/torch_small.safetensors: a checkpoint made by PyTorch code.

The modules below reproduce the attribute names of facebookresearch/mae's MaskedAutoencoderViT
(timm Block / Attention / Mlp / PatchEmbed), so the tensor names and shapes come out of
torch's own state_dict() — in PyTorch's order, not ours. Values are random (seeded) except
cls_token, which holds i / 8 so tests can check values read back. Metadata: format and config
only (no crc32, no train_state), as a converted PyTorch checkpoint would have. Also writes
torch_small_encoder.safetensors: the same without the decoder (as MAE's fine-tuning checkpoints).

Run: /usr/bin/python3 tools/torch_checkpoint.py [OUT_DIR]   (Debian python3-torch)
"""
import json
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

CONFIG = {
    "img_size": 16, "patch_size": 4, "in_chans": 3,
    "embed_dim": 16, "depth": 1, "num_heads": 2,
    "decoder_embed_dim": 8, "decoder_depth": 1, "decoder_num_heads": 2,
    "mlp_ratio": 4.0, "norm_pix_loss": True, "mask_ratio": 0.75, "pos_embed": "learned",
    "pixel_mean": [0.485, 0.456, 0.406], "pixel_std": [0.229, 0.224, 0.225],
    "layer_norm_eps": 1e-6,
}


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)


class Block(nn.Module):
    def __init__(self, dim, mlp_ratio):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))


class PatchEmbed(nn.Module):
    def __init__(self, chans, dim, patch):
        super().__init__()
        self.proj = nn.Conv2d(chans, dim, kernel_size=patch, stride=patch)


class MaskedAutoencoderViT(nn.Module):
    def __init__(self, c):
        super().__init__()
        D, Dd, P = c["embed_dim"], c["decoder_embed_dim"], c["patch_size"]
        L = (c["img_size"] // P) ** 2
        self.patch_embed = PatchEmbed(c["in_chans"], D, P)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D))
        self.pos_embed = nn.Parameter(torch.zeros(1, L + 1, D), requires_grad=False)
        self.blocks = nn.ModuleList([Block(D, c["mlp_ratio"]) for _ in range(c["depth"])])
        self.norm = nn.LayerNorm(D, eps=1e-6)
        self.decoder_embed = nn.Linear(D, Dd)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, Dd))
        self.decoder_pos_embed = nn.Parameter(torch.zeros(1, L + 1, Dd), requires_grad=False)
        self.decoder_blocks = nn.ModuleList([Block(Dd, c["mlp_ratio"]) for _ in range(c["decoder_depth"])])
        self.decoder_norm = nn.LayerNorm(Dd, eps=1e-6)
        self.decoder_pred = nn.Linear(Dd, P * P * c["in_chans"])


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    torch.manual_seed(0)
    model = MaskedAutoencoderViT(CONFIG)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
        model.pos_embed.normal_(0.0, 0.02)
        model.decoder_pos_embed.normal_(0.0, 0.02)
        model.cls_token.copy_(torch.arange(CONFIG["embed_dim"], dtype=torch.float32).reshape(1, 1, -1) / 8)
    sd = model.state_dict()
    meta = {"format": "vitmae", "config": json.dumps(CONFIG)}
    tensors = {k: (list(v.shape), v) for k, v in sd.items()}
    safetensors_io.write(os.path.join(out_dir, "torch_small.safetensors"), tensors, meta, crc32=False)
    enc = {k: v for k, v in tensors.items() if not (k.startswith("decoder") or k == "mask_token")}
    safetensors_io.write(os.path.join(out_dir, "torch_small_encoder.safetensors"), enc, meta, crc32=False)
    n = sum(v.numel() for v in sd.values())
    n_enc = sum(v[1].numel() for v in enc.values())
    print("wrote %d tensors, %d parameters (encoder %d, decoder %d)" % (len(sd), n, n_enc, n - n_enc))


if __name__ == "__main__":
    main()
