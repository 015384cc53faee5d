// The adds of a gradient-group tree over buffers: see kernels/sumtree.h.
#include "kernels/sumtree.h"
#include "kernels/stream.h"
#include "kernels/team.h"

void sumtree_finish(SumTree *t) {
    for (int g = 0; g < t->n; g++) t->live[g] = 1;
    for (int i = 0; i < t->nadd; i++) t->live[t->src[i]] = 0;
}

void sumtree_range(const SumTree *t, float *const *buf, size_t a, size_t b) {
    for (int i = 0; i < t->nadd; i++) {
        float *d = buf[t->dst[i]];
        const float *s = buf[t->src[i]];
        for (size_t j = a; j < b; j++) d[j] += s[j];
    }
    if (t->scale != 1.0f)
        for (int g = 0; g < t->n; g++)
            if (t->live[g])
                for (size_t j = a; j < b; j++) buf[g][j] *= t->scale;
}

static void apply_body(const SumTree *t, float *const *buf, size_t off, size_t len) {
    float *at[SUMTREE_MAX];
    for (int g = 0; g < t->n; g++) at[g] = buf[g] + off;
    const long chunk = 4096;
    long nchunks = (long)((len + chunk - 1) / chunk);
    #pragma omp for schedule(static) nowait
    for (long c = 0; c < nchunks; c++) {
        size_t a = (size_t)c * chunk, b = a + chunk < len ? a + chunk : len;
        sumtree_range(t, at, a, b);
    }
}

void sumtree_apply(const SumTree *t, float *const *buf, size_t off, size_t len) {
    if (t->nadd == 0 && t->scale == 1.0f) return;
    TEAM_RUN(apply_body(t, buf, off, len));
}

void sumtree_rows(const SumTree *t, float *const *src, long ld_src, float *const *dst, long ld_dst, int rows, int cols,
                  int stream) {
    for (int r = 0; r < rows; r++) {
        float *row[SUMTREE_MAX];
        for (int g = 0; g < t->n; g++) row[g] = src[g] + (long)r * ld_src;
        sumtree_range(t, row, 0, (size_t)cols);
        for (int g = 0; g < t->n; g++) {
            if (!t->live[g]) continue;
            float *d = dst[g] + (long)r * ld_dst;
            if (stream) stream_floats(d, row[g], cols);
            else for (int j = 0; j < cols; j++) d[j] = row[g][j];
        }
    }
}
