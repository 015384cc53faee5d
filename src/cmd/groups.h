// How many gradient groups one forward and backward of a training (or bench) step take at once
// (docs/distributed.md, "Groups at once"). Shared by cmd/train.c and cmd/bench.c.
#ifndef VITMAE_GROUPS_H
#define VITMAE_GROUPS_H
#include <stddef.h>
#include "core/config.h"

// w, a power of two <= count (the groups of one micro-batch of this process, G / N / K): doubled from 1
// while the encoder's rows per forward (per * w images of `tokens` tokens) stay below the model's width
// (embed_dim) and 2 w groups' model (mae_bytes_needed for their images), the gradient buffers they add
// (grad_reduce_at_once_floats) and other_bytes need at most half of this machine's memory. Below the
// width, every product streams a weight larger than its rows for each group, and taking groups together
// pays (ViT-B/16 at 224, batch 8: 100 rows a group); above it, more rows at once only push a layer's
// activations out of the cache (tiny32: 272 rows a group, 3-7% slower at once; docs/performance.md,
// "Gradient groups at once"). VITMAE_GROUPS_AT_ONCE=M in the environment sets w to the largest power of
// two <= M and count instead (memory still checked). At most SUMTREE_MAX. Results do not depend on w.
int groups_at_once(const MaeConfig *cfg, int per, int tokens, int count, size_t other_bytes);
#endif
