// AdamW, learning-rate schedule and gradient clipping (see optim.h for the math).
#include <math.h>
#include "core/optim.h"
#include <stddef.h>

void adamw_update_ref(float *p, const float *g, float *m, float *v, long n, float decay, float step_size,
                      float bc2_sqrt) {
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        p[i] *= decay;
        m[i] = ADAMW_BETA1 * m[i] + (1.0f - ADAMW_BETA1) * g[i];
        v[i] = ADAMW_BETA2 * v[i] + (1.0f - ADAMW_BETA2) * g[i] * g[i];
        float denom = sqrtf(v[i]) / bc2_sqrt + ADAMW_EPS;
        p[i] -= step_size * m[i] / denom;
    }
}

// The same arithmetic, each value read and written once; sqrtf of a non-negative value never sets
// errno, so __builtin_sqrtf after the explicit >= 0 select vectorises to vsqrtps. Inlined with the
// betas as constants for adamw_update and adamw_step (the pretraining path), as arguments for
// adamw_step_groups. The loop is shared among the threads of the enclosing region (no wait at its
// end: every element is its own update), so a step can run all tensors in one region.
static inline void adamw_body(float *restrict p, const float *restrict g, float *restrict m, float *restrict v,
                              long n, float decay, float step_size, float bc2_sqrt, float beta1, float beta2) {
    #pragma omp for schedule(static) nowait
    for (long i = 0; i < n; i++) {
        float gi = g[i];
        float pi = p[i] * decay;
        float mi = beta1 * m[i] + (1.0f - beta1) * gi;
        float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        float denom = __builtin_sqrtf(vi) / bc2_sqrt + ADAMW_EPS;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi - step_size * mi / denom;
    }
}

void adamw_update(float *restrict p, const float *restrict g, float *restrict m, float *restrict v, long n,
                  float decay, float step_size, float bc2_sqrt) {
    #pragma omp parallel
    adamw_body(p, g, m, v, n, decay, step_size, bc2_sqrt, ADAMW_BETA1, ADAMW_BETA2);
}

void adamw_step_groups(const MaeTensor *t, int nt, const float *lr_scale, float *params, const float *grads,
                       float *m, float *v, float lr, float wd, float beta1, float beta2, long step) {
    float bc1 = 1.0f - powf(beta1, (float)step);
    float bc2_sqrt = sqrtf(1.0f - powf(beta2, (float)step));
    #pragma omp parallel   // one region for every tensor, as adamw_step
    for (int k = 0; k < nt; k++) {
        if (!t[k].trainable) continue;
        float lr_k = lr * lr_scale[k];
        float decay = t[k].decay ? 1.0f - lr_k * wd : 1.0f;
        size_t off = t[k].offset;
        adamw_body(params + off, grads + off, m + off, v + off, (long)t[k].numel, decay, lr_k / bc1, bc2_sqrt,
                   beta1, beta2);
    }
}

void adamw_step(const MaeTensor *t, int nt, float *params, const float *grads, float *m, float *v,
                float lr, float wd, long step) {
    float bc1 = 1.0f - powf(ADAMW_BETA1, (float)step);
    float bc2_sqrt = sqrtf(1.0f - powf(ADAMW_BETA2, (float)step));
    float step_size = lr / bc1;
    #pragma omp parallel   // one region for every tensor (not one per tensor: docs/performance.md)
    for (int k = 0; k < nt; k++) {
        if (!t[k].trainable) continue;
        float decay = t[k].decay ? 1.0f - lr * wd : 1.0f;
        size_t off = t[k].offset;
        adamw_body(params + off, grads + off, m + off, v + off, (long)t[k].numel, decay, step_size, bc2_sqrt,
                   ADAMW_BETA1, ADAMW_BETA2);
    }
}

float lr_at(long step, long total, long warmup, float base, float min_lr) {
    if (step < warmup) return (float)((double)base * step / warmup);
    if (total <= warmup) return base;
    double progress = (double)(step - warmup) / (double)(total - warmup);
    if (progress > 1.0) progress = 1.0;
    return (float)(min_lr + (base - min_lr) * 0.5 * (1.0 + cos(M_PI * progress)));
}

enum { NORM_CHUNK = 1 << 14 };

float grad_global_norm(const MaeTensor *t, int nt, const float *grads) {
    double total = 0.0;
    for (int k = 0; k < nt; k++) {
        if (!t[k].trainable) continue;
        const float *g = grads + t[k].offset;
        long n = (long)t[k].numel, nchunks = (n + NORM_CHUNK - 1) / NORM_CHUNK;
        // Chunks of fixed size are summed in parallel, then added in chunk order.
        double partial[64];
        for (long c0 = 0; c0 < nchunks; c0 += 64) {
            long cn = nchunks - c0 < 64 ? nchunks - c0 : 64;
            #pragma omp parallel for schedule(static)
            for (long c = 0; c < cn; c++) {
                long lo = (c0 + c) * NORM_CHUNK, hi = lo + NORM_CHUNK < n ? lo + NORM_CHUNK : n;
                double s = 0.0;
                for (long i = lo; i < hi; i++) s += (double)g[i] * g[i];
                partial[c] = s;
            }
            for (long c = 0; c < cn; c++) total += partial[c];
        }
    }
    return (float)sqrt(total);
}

float grad_clip(const MaeTensor *t, int nt, float *grads, float max_norm) {
    float norm = grad_global_norm(t, nt, grads);
    if (!(max_norm > 0.0f) || !(norm > max_norm)) return norm;
    float coef = (float)((double)max_norm / ((double)norm + 1e-6));
    for (int k = 0; k < nt; k++) {
        if (!t[k].trainable) continue;
        float *g = grads + t[k].offset;
        long n = (long)t[k].numel;
        #pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) g[i] *= coef;
    }
    return norm;
}
