// AdamW, learning-rate schedule and gradient clipping (see optim.h for the math).
#include <math.h>
#include <omp.h>
#include "core/optim.h"
#include "kernels/gemm.h"
#include "kernels/sumtree.h"
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
// errno, so __builtin_sqrtf after the explicit >= 0 select vectorises to vsqrtps.
static inline __attribute__((always_inline))
void adamw_range(float *restrict p, const float *restrict g, float *restrict m, float *restrict v, long lo, long hi,
                 float decay, float step_size, float bc2_sqrt, float beta1, float beta2) {
    for (long i = lo; i < hi; i++) {
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

// Inlined with the betas as constants for adamw_update and adamw_step (the pretraining path), as
// arguments for adamw_step_groups. The loop is shared among the threads of the enclosing region (no
// wait at its end: every element is its own update), so a step can run all tensors in one region.
static inline void adamw_body(float *restrict p, const float *restrict g, float *restrict m, float *restrict v,
                              long n, float decay, float step_size, float bc2_sqrt, float beta1, float beta2) {
    #pragma omp for schedule(static) nowait   // elements
    for (long i = 0; i < n; i++) adamw_range(p, g, m, v, i, i + 1, decay, step_size, bc2_sqrt, beta1, beta2);
}

// The gradient as the live result of a tree over n buffers (kernels/sumtree.h; NULL: as given): each
// range of elements is summed just before AdamW updates it, while the pass has it in the cache
// (docs/performance.md, "The workers' top of the tree in AdamW's pass"). at: the buffers at the tensor's
// offset; root: the tree's live buffer, which holds the gradient afterwards.
typedef struct { const SumTree *tree; float *at[SUMTREE_MAX]; int root; } GradTree;

static inline const float *grad_of(const GradTree *gt, const float *g, long lo, long hi) {
    if (!gt) return g;
    sumtree_range(gt->tree, gt->at, (size_t)lo, (size_t)hi);
    return gt->at[gt->root];
}

// A weight with packed copies (kernels/gemm.h, gemm_weight_copies): updated GEMM_COPY_ROWS rows at a
// time, each block of rows written into the copies while it is in the cache, so that the next step's
// products need not pack it again from memory (docs/performance.md, "Weights packed by the update").
static inline void adamw_copies_block(float *restrict p, const float *restrict g, float *restrict m,
                                      float *restrict v, const GemmCopies *c, long ld, int blk, float decay,
                                      float step_size, float bc2_sqrt, const GradTree *gt) {
    int r0 = blk * GEMM_COPY_ROWS, r1 = r0 + GEMM_COPY_ROWS < c->rows ? r0 + GEMM_COPY_ROWS : c->rows;
    long lo = (long)r0 * ld, hi = (long)r1 * ld;
    adamw_range(p, grad_of(gt, g, lo, hi), m, v, lo, hi, decay, step_size, bc2_sqrt, ADAMW_BETA1, ADAMW_BETA2);
    gemm_weight_copies_rows(c, r0, r1);
}

static inline void adamw_body_copies(float *restrict p, const float *restrict g, float *restrict m,
                                     float *restrict v, const GemmCopies *c, long ld, float decay, float step_size,
                                     float bc2_sqrt, const GradTree *gt) {
    int blocks = (c->rows + GEMM_COPY_ROWS - 1) / GEMM_COPY_ROWS;
    #pragma omp for schedule(static) nowait   // blocks of rows
    for (int blk = 0; blk < blocks; blk++) adamw_copies_block(p, g, m, v, c, ld, blk, decay, step_size, bc2_sqrt, gt);
}

// adamw_body with the gradient summed by a tree, in chunks of whole cache lines.
static inline void adamw_body_tree(float *restrict p, float *restrict m, float *restrict v, long n, float decay,
                                   float step_size, float bc2_sqrt, const GradTree *gt) {
    const long chunk = 2048;
    long nchunks = (n + chunk - 1) / chunk;
    #pragma omp for schedule(static) nowait   // chunks
    for (long c = 0; c < nchunks; c++) {
        long lo = c * chunk, hi = lo + chunk < n ? lo + chunk : n;
        adamw_range(p, grad_of(gt, NULL, lo, hi), m, v, lo, hi, decay, step_size, bc2_sqrt, ADAMW_BETA1, ADAMW_BETA2);
    }
}

void adamw_update(float *restrict p, const float *restrict g, float *restrict m, float *restrict v, long n,
                  float decay, float step_size, float bc2_sqrt) {
    #pragma omp parallel
    adamw_body(p, g, m, v, n, decay, step_size, bc2_sqrt, ADAMW_BETA1, ADAMW_BETA2);
}

// Step `step`'s bias corrections (optim.h): bc1 = 1 - beta1^step, and sqrt(1 - beta2^step), which
// divides sqrt(v).
typedef struct { float bc1, bc2_sqrt; } AdamwBias;
static AdamwBias adamw_bias(float beta1, float beta2, long step) {
    AdamwBias b = {1.0f - powf(beta1, (float)step), sqrtf(1.0f - powf(beta2, (float)step))};
    return b;
}

void adamw_step_groups(const MaeTensor *t, int nt, const float *lr_scale, float *params, const float *grads,
                       float *m, float *v, float lr, float wd, float beta1, float beta2, long step) {
    AdamwBias bc = adamw_bias(beta1, beta2, step);
    #pragma omp parallel   // one region for every tensor, as adamw_step
    for (int k = 0; k < nt; k++) {
        if (!t[k].trainable) continue;
        float lr_k = lr * lr_scale[k];
        float decay = t[k].decay ? 1.0f - lr_k * wd : 1.0f;
        size_t off = t[k].offset;
        adamw_body(params + off, grads + off, m + off, v + off, (long)t[k].numel, decay, lr_k / bc.bc1,
                   bc.bc2_sqrt, beta1, beta2);
    }
}

// The tree's live buffer that holds the result (the first live one), and a tensor's view of the tree.
static int tree_root(const SumTree *tree) {
    int root = 0;
    while (tree && root < tree->n - 1 && !tree->live[root]) root++;
    return root;
}

static GradTree *tree_at(GradTree *gt, const SumTree *tree, int root, float *const *bufs, size_t off) {
    if (!tree) return NULL;
    gt->tree = tree;
    gt->root = root;
    for (int i = 0; i < tree->n; i++) gt->at[i] = bufs[i] + off;
    return gt;
}

// adamw_step, and with the gradient given by a tree (tree not NULL: bufs; grads unused); tensors with
// skip[k] set (skip may be NULL) are left as they are.
static void adamw_step_any(const MaeTensor *t, int nt, float *params, const float *grads, const SumTree *tree,
                           float *const *bufs, float *m, float *v, float lr, float wd, long step,
                           const unsigned char *skip) {
    AdamwBias bc = adamw_bias(ADAMW_BETA1, ADAMW_BETA2, step);
    float step_size = lr / bc.bc1, bc2_sqrt = bc.bc2_sqrt;
    int root = tree_root(tree);
    #pragma omp parallel   // one region for every tensor (not one per tensor: docs/performance.md)
    for (int k = 0; k < nt; k++) {
        if (!t[k].trainable || (skip && skip[k])) continue;
        float decay = t[k].decay ? 1.0f - lr * wd : 1.0f;
        size_t off = t[k].offset;
        GradTree gt_k, *gt = tree_at(&gt_k, tree, root, bufs, off);
        const float *g = tree ? NULL : grads + off;
        GemmCopies c = gemm_weight_copies(params + off, (long)t[k].numel);
        if (c.n)
            adamw_body_copies(params + off, g, m + off, v + off, &c, (long)t[k].numel / c.rows, decay, step_size,
                              bc2_sqrt, gt);
        else if (gt)
            adamw_body_tree(params + off, m + off, v + off, (long)t[k].numel, decay, step_size, bc2_sqrt, gt);
        else
            adamw_body(params + off, g, m + off, v + off, (long)t[k].numel, decay, step_size, bc2_sqrt,
                       ADAMW_BETA1, ADAMW_BETA2);
    }
    for (int k = 0; k < nt; k++) {   // every row of those weights is written: their copies serve the next step
        if (!t[k].trainable) continue;
        GemmCopies c = gemm_weight_copies(params + t[k].offset, (long)t[k].numel);
        gemm_weight_copies_fresh(&c);
    }
}

void adamw_step(const MaeTensor *t, int nt, float *params, const float *grads, float *m, float *v,
                float lr, float wd, long step) {
    adamw_step_any(t, nt, params, grads, NULL, NULL, m, v, lr, wd, step, NULL);
}

void adamw_step_tree(const MaeTensor *t, int nt, float *params, const SumTree *tree, float *const *bufs, float *m,
                     float *v, float lr, float wd, long step, const unsigned char *skip) {
    adamw_step_any(t, nt, params, NULL, tree, bufs, m, v, lr, wd, step, skip);
}

void adamw_tree_rows(const MaeTensor *tk, float *params, const SumTree *tree, float *const *bufs, float *m, float *v,
                     float lr, float wd, long step, int r0, int r1) {
    if (!tk->trainable) return;
    AdamwBias bc = adamw_bias(ADAMW_BETA1, ADAMW_BETA2, step);
    float step_size = lr / bc.bc1, bc2_sqrt = bc.bc2_sqrt;
    float decay = tk->decay ? 1.0f - lr * wd : 1.0f;
    size_t off = tk->offset;
    long rows = tk->shape[0], ld = (long)tk->numel / rows;
    GradTree gt_k, *gt = tree_at(&gt_k, tree, tree_root(tree), bufs, off);
    GemmCopies c = gemm_weight_copies(params + off, (long)tk->numel);
    if (c.n) {   // the blocks of rows adamw_body_copies takes, whole
        for (int blk = r0 / GEMM_COPY_ROWS; blk * GEMM_COPY_ROWS < r1; blk++)
            adamw_copies_block(params + off, NULL, m + off, v + off, &c, ld, blk, decay, step_size, bc2_sqrt, gt);
    } else {
        long lo = (long)r0 * ld, hi = (long)r1 * ld;
        adamw_range(params + off, grad_of(gt, NULL, lo, hi), m + off, v + off, lo, hi, decay, step_size, bc2_sqrt,
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

double ema_decay_at(double decay, int warmup, long update) {
    long s = update - 1;   // timm's step: the updates before this one
    if (s <= 0) return 0.0;
    if (!warmup) return decay;
    double d = 1.0 - pow(1.0 + (double)s, -(2.0 / 3.0));
    return d < decay ? d : decay;   // and at least timm's min_decay 0, which d always is
}

// Built without FMA (make ARCH=), fmaf is a libm call an element, 10 to 25x slower than the
// instruction: the range is cloned for CPUs that have it, picked at load time (the same bits either way).
#if defined(__x86_64__) && !defined(__FMA__)
#define EMA_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define EMA_FMA_CLONES
#endif

// As torch's CPU lerp computes it: one fused multiply-add from the nearer end, ema + weight (w - ema)
// below 0.5, else w - (1 - weight) (w - ema) (1 - weight exact there), so that decay 0 gives w (a
// weight of -0 maybe as +0, as torch's). Unfused (the build does not contract), about 1 value in 3
// would round differently. The coefficient is -(1 - weight), -0 at weight 1: weight - 1 (+0) gives a
// -0 weight's other zero. tests/test_classifier.c compares with torch.lerp bitwise.
EMA_FMA_CLONES static void ema_lerp(float *ema, const float *w, long n, float wt) {
    if (fabsf(wt) < 0.5f) {
        for (long i = 0; i < n; i++) ema[i] = fmaf(wt, w[i] - ema[i], ema[i]);
    } else {
        float coeff = -(1.0f - wt);
        for (long i = 0; i < n; i++) ema[i] = fmaf(coeff, w[i] - ema[i], w[i]);
    }
}

void ema_update(float *ema, const float *w, size_t n, double decay) {
    float wt = (float)(1.0 - decay);
    long N = (long)n;
    #pragma omp parallel
    {   // a range a thread (each element alone: any split gives the same bits)
        long t = omp_get_thread_num(), nt = omp_get_num_threads(), lo = N * t / nt, hi = N * (t + 1) / nt;
        ema_lerp(ema + lo, w + lo, hi - lo, wt);
    }
}
