// Attention maps: query rows, head fusion, rollout. See attnmap.h for the layouts.
#include "viz/attnmap.h"
#include <math.h>
#include <stddef.h>
#include <string.h>

// Value (query, key) of the selected head or fusion; heads are visited in order.
static float head_value(const float *att, int heads, size_t TT, size_t at, int head) {
    if (head >= 0) return att[(size_t)head * TT + at];
    if (head == ATTN_HEAD_MAX) {
        float m = att[at];
        for (int h = 1; h < heads; h++)
            if (att[(size_t)h * TT + at] > m) m = att[(size_t)h * TT + at];
        return m;
    }
    double s = 0.0;
    for (int h = 0; h < heads; h++) s += att[(size_t)h * TT + at];
    return (float)(s / heads);
}

void attn_fuse_heads(const float *att, int heads, int T, int head, float *mat) {
    size_t TT = (size_t)T * T;
    if (head >= 0) { memcpy(mat, att + (size_t)head * TT, TT * sizeof *mat); return; }
    #pragma omp parallel for schedule(static)
    for (int q = 0; q < T; q++)
        for (int k = 0; k < T; k++) mat[(size_t)q * T + k] = head_value(att, heads, TT, (size_t)q * T + k, head);
}

void attn_query_row(const float *att, int heads, int T, int query, int head, float *row) {
    size_t TT = (size_t)T * T;
    for (int k = 0; k < T; k++) row[k] = head_value(att, heads, TT, (size_t)query * T + k, head);
}

int attn_token_of_patch(const int *keep, int K, int patch) {
    for (int j = 0; j < K; j++)
        if (keep[j] == patch) return 1 + j;
    return -1;
}

void attn_row_to_grid(const float *row, int T, const int *keep, int L, float *grid) {
    for (int l = 0; l < L; l++) grid[l] = NAN;
    for (int j = 0; j + 1 < T; j++) grid[keep[j]] = row[1 + j];
}

void attn_rollout_init(float *R, int T) {
    memset(R, 0, (size_t)T * T * sizeof *R);
    for (int i = 0; i < T; i++) R[(size_t)i * T + i] = 1.0f;
}

void attn_rollout_step(float *R, const float *A, int T, float *work) {
    // work = Â R, row q: Â[q, k] = (0.5 A[q, k] + 0.5 [q == k]) / (0.5 sum_k A[q, k] + 0.5).
    #pragma omp parallel for schedule(static)
    for (int q = 0; q < T; q++) {
        const float *a = A + (size_t)q * T;
        double rowsum = 0.0;
        for (int k = 0; k < T; k++) rowsum += a[k];
        double inv = 1.0 / (0.5 * rowsum + 0.5);
        double acc[T];   // one row of the product, summed over k in order
        for (int c = 0; c < T; c++) acc[c] = 0.0;
        for (int k = 0; k < T; k++) {
            double ahat = (0.5 * a[k] + (k == q ? 0.5 : 0.0)) * inv;
            const float *r = R + (size_t)k * T;
            for (int c = 0; c < T; c++) acc[c] += ahat * r[c];
        }
        for (int c = 0; c < T; c++) work[(size_t)q * T + c] = (float)acc[c];
    }
    memcpy(R, work, (size_t)T * T * sizeof *R);
}

double attn_uniform_level(int rollout, int layer, int T) {
    return rollout ? (1.0 - ldexp(1.0, -(layer + 1))) / T : 1.0 / T;
}

void attn_grid_range(const float *grid, int n, float *vmin, float *vmax) {
    int any = 0;
    float lo = 0.0f, hi = 0.0f;
    for (int i = 0; i < n; i++) {
        if (!isfinite(grid[i])) continue;
        if (!any || grid[i] < lo) lo = grid[i];
        if (!any || grid[i] > hi) hi = grid[i];
        any = 1;
    }
    *vmin = lo; *vmax = hi;
}

void attn_map_scale(int how, const float *grids, const int *group, int n, int t, int L, double *vmin, double *vmax) {
    float lo, hi;
    if (how == ATTN_SCALE_NONE) { *vmin = 0; *vmax = 1; return; }
    if (how == ATTN_SCALE_MAP) {
        attn_grid_range(grids + (size_t)t * L, L, &lo, &hi);
        *vmin = lo; *vmax = hi;
        return;
    }
    double top = 0;
    for (int u = 0; u < n; u++) {
        if (group[u] != group[t]) continue;
        attn_grid_range(grids + (size_t)u * L, L, &lo, &hi);
        if (hi > top) top = hi;
    }
    *vmin = 0; *vmax = top;
}
