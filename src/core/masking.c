// MAE's masking policy (see core/masking.h).
#include "core/masking.h"
#include <stdio.h>
#include <stdlib.h>

// The fewest significant digits that read back as the float ratio, as the flag was typed ("%g" wrote
// 0.99999994 as 1).
static double ratio_text(float ratio, char *buf, size_t n) {
    for (int digits = 1; digits <= 9; digits++) {   // 9 significant digits always give the float back
        snprintf(buf, n, "%.*g", digits, (double)ratio);
        double d = strtod(buf, NULL);
        if ((float)d == ratio) return d;
    }
    return ratio;
}

int mask_len_keep(int L, float ratio) {
    char buf[32];
    double r = ratio_text(ratio, buf, sizeof buf);
    return (int)(L * (1.0 - r));
}

int mask_ratio_check(float ratio, int L, char *err, size_t errlen) {
    char text[32];
    ratio_text(ratio, text, sizeof text);
    if (!mask_ratio_in_range(ratio)) {
        snprintf(err, errlen, "%s leaves no visible patch (must be < 1)", text);
        return -1;
    }
    if (L >= 1 && mask_len_keep(L, ratio) < 1) {
        snprintf(err, errlen, "%s leaves no visible patch of %d (int(L * (1 - R)) = 0)", text, L);
        return -1;
    }
    return 0;
}

// Stable bottom-up merge sort of idx[0..n) by noise (ascending; equal noise keeps index order), so
// the result is a stable argsort. Passes alternate between idx and tmp; returns the sorted one.
static const int *sort_by_noise(int *idx, int *tmp, int n, const float *noise) {
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = noise[idx[j]] < noise[idx[i]] ? idx[j++] : idx[i++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        int *t = idx; idx = tmp; tmp = t;
    }
    return idx;
}

void mae_masking_from_noise_scratch(const float *noise, int B, int L, int len_keep, int *ids_keep, int *scratch) {
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < L; i++) scratch[i] = i;
        const int *sorted = sort_by_noise(scratch, scratch + L, L, noise + (size_t)b * L);
        for (int j = 0; j < len_keep; j++) ids_keep[(size_t)b * len_keep + j] = sorted[j];
    }
}

int mae_masking_from_noise(const float *noise, int B, int L, int len_keep, int *ids_keep) {
    int stack[2 * MAE_MASK_STACK_L];
    if (L <= MAE_MASK_STACK_L) { mae_masking_from_noise_scratch(noise, B, L, len_keep, ids_keep, stack); return 0; }
    int *scratch = malloc(2 * (size_t)L * sizeof *scratch);
    if (!scratch) return -1;
    mae_masking_from_noise_scratch(noise, B, L, len_keep, ids_keep, scratch);
    free(scratch);
    return 0;
}

void mask_from_rng(Rng *r, int L, int K, float *noise, int *ids_keep, int *scratch) {
    for (int l = 0; l < L; l++) noise[l] = rng_uniform(r);
    mae_masking_from_noise_scratch(noise, 1, L, K, ids_keep, scratch);
}

void masks_seeded(uint64_t seed, uint64_t a, const uint64_t *keys, int n, int L, int K, float *noise,
                  int *ids_keep, int *scratch) {
    for (int k = 0; k < n; k++) {
        Rng r;
        rng_derive(&r, seed, a, keys[k]);
        for (int l = 0; l < L; l++) noise[(size_t)k * L + l] = rng_uniform(&r);
    }
    mae_masking_from_noise_scratch(noise, n, L, K, ids_keep, scratch);
}
