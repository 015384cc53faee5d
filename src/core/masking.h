// MAE's masking policy, in one place for every command: how many patches a mask ratio keeps, which
// ratios are allowed, and the random masks (MAE's random_masking: argsort of uniform noise).
//
// The mask-ratio rule: R in [0, 1) and at least one visible patch, K = int(L * (1 - R)) >= 1. The
// --mask-ratio flags of every command accept [0, MASK_RATIO_FLAG_MAX] and then call
// mask_ratio_check, so every command refuses the same ratios with the same message.
#ifndef VITMAE_MASKING_H
#define VITMAE_MASKING_H
#include <stddef.h>
#include <stdint.h>
#include "core/rng.h"

#define MASK_RATIO_FLAG_MAX 1.0

// Visible patches of L at ratio R, as MAE: int(L * (1 - R)) in double, with R the decimal the user
// wrote: the float ratio is read back as the shortest decimal that gives the same float (0.2f is 0.2,
// not 0.200000003, whose 25 * (1 - R) = 19.99... would keep 19 of 25 where MAE keeps 20).
int mask_len_keep(int L, float ratio);
static inline int mask_ratio_in_range(float ratio) { return ratio >= 0.0f && ratio < 1.0f; }
// 0 when ratio follows the rule for L patches (L < 1: the range only, before L is known); else -1
// and err says why ("R leaves no visible patch ...").
int mask_ratio_check(float ratio, int L, char *err, size_t errlen);

// Per-image masking as MAE: argsort(noise[b]) ascending (stable), first len_keep visible.
// noise [B, L]; ids_keep out [B, len_keep]; scratch: 2 * L ints of the caller's (any L), so that
// a training step allocates nothing (docs/design.md, "Memory: one parameter buffer, a gradient twin,
// one activation arena").
void mae_masking_from_noise_scratch(const float *noise, int B, int L, int len_keep, int *ids_keep, int *scratch);
// The same sorting in a stack buffer when L <= MAE_MASK_STACK_L, else in one it allocates: 0, or -1
// (ids_keep untouched) when that allocation fails.
#define MAE_MASK_STACK_L 1024
int mae_masking_from_noise(const float *noise, int B, int L, int len_keep, int *ids_keep);

// One random mask: noise [L] = L draws of rng_uniform from r, ids_keep [K] its argsort (first K);
// scratch: 2 * L ints.
void mask_from_rng(Rng *r, int L, int K, float *noise, int *ids_keep, int *scratch);
// The seeded masks of train, eval and reconstruct: image k's noise comes from the stream
// rng_derive(seed, a, keys[k]), so a mask depends on (seed, a, key) only, never on the batch it is
// in or the thread count. noise [n, L] scratch; ids_keep out [n, K]; scratch: 2 * L ints.
void masks_seeded(uint64_t seed, uint64_t a, const uint64_t *keys, int n, int L, int K, float *noise,
                  int *ids_keep, int *scratch);
#endif
