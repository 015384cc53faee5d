// How many gradient groups one forward and backward of a training (or bench) step take at once
// (docs/distributed.md, "Groups at once"). Shared by cmd/train.c and cmd/bench.c.
#ifndef VITMAE_GROUPS_H
#define VITMAE_GROUPS_H
#include <stddef.h>
#include "core/config.h"

// The largest power of two w <= count (and <= SUMTREE_MAX) (the groups of one micro-batch of this process, G / N / K) whose
// model (mae_bytes_needed for per * w images), the gradient buffers w groups at once add
// (grad_reduce_at_once_floats) and other_bytes together need at most half of this machine's memory;
// 1 when even 2 do not fit, count when memory is unknown. VITMAE_GROUPS_AT_ONCE=M in the environment
// caps w at M (1: one group at a time, as before groups at once existed). Results do not depend on w.
int groups_at_once(const MaeConfig *cfg, int per, int count, size_t other_bytes);
#endif
