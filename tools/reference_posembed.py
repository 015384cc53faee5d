"""PyTorch reference of the position table resize for fine-tuning at another image size; writes
tests/fixtures/posembed_resize.safetensors, read by tests/test_classifier.c.

Run with Debian's PyTorch:  /usr/bin/python3 tools/reference_posembed.py [OUT_DIR]   (default tests/fixtures)

The resize is facebookresearch/mae's util/pos_embed.py interpolate_pos_embed as src/core/posembed.h
states it: the CLS row kept, the g x g patch rows laid out as [1, dim, g, g] and resized to [n, n] with
F.interpolate(mode='bicubic', align_corners=False), flattened back. Tables of random values rounded to
float32, resized in float64, stored as F32. For each case (g, n, dim) in CASES:
  in.<g>_<n>_<dim>    [1 + g*g, dim]      out.<g>_<n>_<dim>   [1 + n*n, dim]
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

# Up and down, odd and even grids, a width that is no multiple of 4 or 8, one grid of 1 (every tap
# clamped) and the 2 -> 3 of tests/cli_finetune.sh's 16 -> 24 pixel run at patch 8.
CASES = [(3, 5, 12), (4, 7, 12), (5, 2, 12), (2, 3, 7), (1, 3, 5), (7, 4, 3)]


def resize(table, g, n):
    dim = table.shape[1]
    cls, grid = table[:1], table[1:]
    grid = grid.reshape(1, g, g, dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(n, n), mode="bicubic", align_corners=False)
    grid = grid.permute(0, 2, 3, 1).reshape(n * n, dim)
    return torch.cat([cls, grid], dim=0)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
    gen = torch.Generator().manual_seed(69)
    tensors = {}
    for g, n, dim in CASES:
        table = torch.randn(1 + g * g, dim, generator=gen, dtype=torch.float64).float().double()
        got = resize(table, g, n)
        key = "%d_%d_%d" % (g, n, dim)
        tensors["in." + key] = (list(table.shape), table)
        tensors["out." + key] = (list(got.shape), got)
    safetensors_io.write(os.path.join(out, "posembed_resize.safetensors"), tensors,
                         {"format": "vitmae-posembed-fixture", "cases": [list(c) for c in CASES]})


if __name__ == "__main__":
    main()
