// The optimiser and the loss against their closed forms, independent of the PyTorch parity fixture:
// - the weight-decay set of the parameter table: exactly the weight matrices (names ending in
//   ".weight" with 2 or more dimensions), never biases, LayerNorm, cls/mask tokens, position tables;
// - adamw_step on hand-made tensors against torch.optim.AdamW's update computed in double: both bias
//   corrections, betas (0.9, 0.95), eps 1e-8 added to sqrt(v_hat), decay p *= 1 - lr * wd on the
//   decayed set only, frozen tensors untouched (gradients ~1e-6 make eps matter); adamw_step_groups
//   (per-tensor lr scale in the update and the decay, betas as arguments) likewise;
// - lr_at at every step of several runs against warm-up + half-cosine (src/core/optim.h);
// - norm-pix targets against a direct computation (per-patch mean, unbiased variance, eps 1e-6) on
//   patches with zero, tiny and ordinary variance, targets without norm-pix equal to the pixels in
//   the (py * P + px) * C + c layout, and the loss as the mean over removed patches only.
#include <omp.h>
#include "check.h"
#include "core/model.h"
#include "core/optim.h"
#include "kernels/gemm.h"
#include "kernels/sumtree.h"

static MaeConfig tiny_config(int pos_learned) {
    MaeConfig c;
    mae_config_preset(&c, "tiny");
    c.img_size = 8; c.patch_size = 2; c.in_chans = 3;
    c.embed_dim = 8; c.depth = 2; c.num_heads = 2;
    c.dec_embed_dim = 12; c.dec_depth = 1; c.dec_num_heads = 3;
    c.pos_learned = pos_learned;
    return c;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

static void test_decay_set(void) {
    for (int learned = 0; learned <= 1; learned++) {
        MaeConfig c = tiny_config(learned);
        MaeTensor t[128];
        int nt = mae_param_table(&c, t, 128), ndecay = 0;
        for (int k = 0; k < nt; k++) {
            int want = ends_with(t[k].name, ".weight") && t[k].ndim >= 2;
            CHECK(t[k].decay == want, "%s: decay %d, want %d", t[k].name, t[k].decay, want);
            int is_pos = !strcmp(t[k].name, "pos_embed") || !strcmp(t[k].name, "decoder_pos_embed");
            CHECK(t[k].trainable == (is_pos ? learned : 1), "%s: trainable %d (pos learned %d)", t[k].name,
                  t[k].trainable, learned);
            ndecay += t[k].decay;
        }
        // patch_embed, 4 per block (qkv, proj, fc1, fc2) in 3 blocks, decoder_embed, decoder_pred.
        CHECK(ndecay == 1 + 4 * 3 + 2, "%d decayed tensors", ndecay);
    }
}

// One AdamW step in double, as torch.optim.AdamW (decoupled decay first). The betas are the float
// values 0.9f and 0.95f (the parameters are float32, as in PyTorch), so that a moment that cancels to
// nearly 0 is compared like for like.
static void adamw_expected_betas(double *p, double *m, double *v, double g, double lr, double wd, int decay,
                                 long step, double b1, double b2) {
    const double eps = 1e-8;
    if (decay) *p *= 1.0 - lr * wd;
    *m = b1 * *m + (1 - b1) * g;
    *v = b2 * *v + (1 - b2) * g * g;
    double mhat = *m / (1 - pow(b1, (double)step)), vhat = *v / (1 - pow(b2, (double)step));
    *p -= lr * mhat / (sqrt(vhat) + eps);
}

static void adamw_expected(double *p, double *m, double *v, double g, double lr, double wd, int decay, long step) {
    adamw_expected_betas(p, m, v, g, lr, wd, decay, step, 0.9f, 0.95f);
}

static void test_adamw_closed_form(void) {
    MaeConfig c = tiny_config(0);   // frozen position tables: AdamW must skip them
    MaeTensor t[128];
    int nt = mae_param_table(&c, t, 128);
    size_t np = mae_num_params(&c);
    float *p0 = malloc(np * 4), *g = malloc(np * 4), *m0 = malloc(np * 4), *v0 = malloc(np * 4);
    float *p = malloc(np * 4), *m = malloc(np * 4), *v = malloc(np * 4);
    Rng r;
    rng_seed(&r, 11);
    // Every third element is "tiny": gradient and moments ~1e-6, so sqrt(v_hat) is ~100 eps and an
    // eps of 1e-6 (or none) changes its update by far more than the tolerance.
    for (size_t i = 0; i < np; i++) {
        float s = i % 3 == 0 ? 1e-6f : 1.0f;
        p0[i] = rng_normal(&r, 0.0f, i % 3 == 0 ? 1e-3f : 2.0f);
        g[i] = rng_normal(&r, 0.0f, s);
        m0[i] = rng_normal(&r, 0.0f, 0.3f * s);
        float w = rng_normal(&r, 0.0f, s);
        v0[i] = w * w;
    }
    const long steps[] = {1, 2, 7, 1000};
    const float lrs[] = {1e-2f, 3e-3f, 1e-3f, 5e-4f};
    for (int si = 0; si < 4; si++) {
        memcpy(p, p0, np * 4); memcpy(m, m0, np * 4); memcpy(v, v0, np * 4);
        float lr = lrs[si], wd = 0.05f;
        adamw_step(t, nt, p, g, m, v, lr, wd, steps[si]);
        int bad = 0, frozen_bad = 0;
        for (int k = 0; k < nt; k++)
            for (size_t j = 0; j < t[k].numel; j++) {
                size_t i = t[k].offset + j;
                if (!t[k].trainable) {
                    frozen_bad += p[i] != p0[i] || m[i] != m0[i] || v[i] != v0[i];
                    continue;
                }
                double pe = p0[i], me = m0[i], ve = v0[i];
                adamw_expected(&pe, &me, &ve, g[i], lr, wd, t[k].decay, steps[si]);
                double upd = fabs(pe - p0[i]);
                int ok = fabs(m[i] - me) <= 1e-6 * (0.9 * fabs(m0[i]) + 0.1 * fabs(g[i])) + 1e-30
                         && fabs(v[i] - ve) <= 1e-6 * fabs(ve) + 1e-30
                         && fabs(p[i] - pe) <= 2.5e-7 * fabs(p0[i]) + 1e-5 * upd + 1e-12;
                if (!ok && bad++ < 3)
                    fprintf(stderr, "step %ld %s[%zu]: p %.9g want %.9g, m %.9g want %.9g, v %.9g want %.9g\n",
                            steps[si], t[k].name, j, p[i], pe, m[i], me, v[i], ve);
            }
        CHECK(bad == 0, "adamw step %ld: %d elements differ from the closed form", steps[si], bad);
        CHECK(frozen_bad == 0, "adamw step %ld: %d frozen elements changed", steps[si], frozen_bad);
    }
    // adamw_step (one region for all tensors) gives bitwise what adamw_update gives tensor by tensor, at
    // 1, 2 and 3 threads.
    {
        long step = 5;
        float lr = 3e-3f, wd = 0.05f, bc1 = 1.0f - powf(ADAMW_BETA1, (float)step);
        float bc2 = sqrtf(1.0f - powf(ADAMW_BETA2, (float)step));
        float *pw = malloc(np * 4), *mw = malloc(np * 4), *vw = malloc(np * 4);
        memcpy(pw, p0, np * 4); memcpy(mw, m0, np * 4); memcpy(vw, v0, np * 4);
        omp_set_num_threads(1);
        for (int k = 0; k < nt; k++) {
            if (!t[k].trainable) continue;
            size_t o = t[k].offset;
            adamw_update(pw + o, g + o, mw + o, vw + o, (long)t[k].numel, t[k].decay ? 1.0f - lr * wd : 1.0f, lr / bc1, bc2);
        }
        for (int th = 1; th <= 3; th++) {
            memcpy(p, p0, np * 4); memcpy(m, m0, np * 4); memcpy(v, v0, np * 4);
            omp_set_num_threads(th);
            adamw_step(t, nt, p, g, m, v, lr, wd, step);
            CHECK(!memcmp(p, pw, np * 4) && !memcmp(m, mw, np * 4) && !memcmp(v, vw, np * 4),
                  "adamw_step at %d threads: bitwise adamw_update per tensor", th);
        }
        omp_set_num_threads(2);
        free(pw); free(mw); free(vw);
    }
    // The plain reference update on a flat range agrees with the same closed form (no decay).
    long n = 257;
    memcpy(p, p0, n * 4); memcpy(m, m0, n * 4); memcpy(v, v0, n * 4);
    long step = 3;
    float lr = 2e-3f, bc1 = 1.0f - powf(ADAMW_BETA1, (float)step), bc2 = sqrtf(1.0f - powf(ADAMW_BETA2, (float)step));
    adamw_update_ref(p, g, m, v, n, 1.0f, lr / bc1, bc2);
    int bad = 0;
    for (long i = 0; i < n; i++) {
        double pe = p0[i], me = m0[i], ve = v0[i];
        adamw_expected(&pe, &me, &ve, g[i], lr, 0.0, 0, step);
        bad += !(fabs(p[i] - pe) <= 2.5e-7 * fabs(p0[i]) + 1e-5 * fabs(pe - p0[i]) + 1e-12);
    }
    CHECK(bad == 0, "adamw_update_ref: %d of %ld elements differ from the closed form", bad, n);
    // Parameter groups (fine-tuning): tensor k at lr * scale[k], in the update and in the decay, with
    // the betas given (0.9, 0.999).
    float scale[128];
    for (int k = 0; k < nt; k++) scale[k] = powf(0.75f, (float)(k % 5));
    memcpy(p, p0, np * 4); memcpy(m, m0, np * 4); memcpy(v, v0, np * 4);
    adamw_step_groups(t, nt, scale, p, g, m, v, 1e-2f, 0.05f, 0.9f, 0.999f, 4);
    bad = 0;
    for (int k = 0; k < nt; k++)
        for (size_t j = 0; j < t[k].numel && t[k].trainable; j++) {
            size_t i = t[k].offset + j;
            double pe = p0[i], me = m0[i], ve = v0[i];
            adamw_expected_betas(&pe, &me, &ve, g[i], 1e-2 * scale[k], 0.05f, t[k].decay, 4, 0.9f, 0.999f);
            if (!(fabs(p[i] - pe) <= 2.5e-7 * fabs(p0[i]) + 1e-5 * fabs(pe - p0[i]) + 1e-12) && bad++ < 3)
                fprintf(stderr, "groups %s[%zu]: p %.9g want %.9g\n", t[k].name, j, p[i], pe);
        }
    CHECK(bad == 0, "adamw_step_groups: %d elements differ from the closed form", bad);
    free(p0); free(g); free(m0); free(v0); free(p); free(m); free(v);
}

// The parameter table of a small model whose weight matrices, under the forced small blocking, mostly
// get packed copies (t: room for 128 tensors). Returns the parameter count.
static size_t small_table(MaeTensor *t, int *nt) {
    MaeConfig c = tiny_config(1);
    c.embed_dim = 48; c.num_heads = 4; c.dec_embed_dim = 40; c.dec_num_heads = 4;
    *nt = mae_param_table(&c, t, 128);
    return mae_num_params(&c);
}

// The products of a step in a scope of packed weights (kernels/gemm.h): every weight matrix whose copy
// does not fit "L2" used by gemm_nt_weight and gemm_nn_weight (A: M x 4096 inputs, y: the outputs), so
// that it gets both packed copies. Returns how many such weights; *with_copies: how many have both.
static int pack_copies(const MaeTensor *t, int nt, float *p, const float *A, int M, float *y, int *with_copies) {
    int weights = 0;
    long big = 2 * gemm_blocking().slab_floats;   // a copy this large does not fit "L2"
    *with_copies = 0;
    gemm_weights_begin();
    for (int k = 0; k < nt; k++) {
        if (t[k].ndim != 2 || (long)t[k].numel <= big) continue;
        int rows = t[k].shape[0], cols = t[k].shape[1];
        gemm_nt_weight(M, rows, cols, A, cols, p + t[k].offset, cols, y, rows, NULL, 0);
        gemm_nn_weight(M, cols, rows, A, rows, p + t[k].offset, cols, y, cols, 0);
        weights++;
        *with_copies += gemm_weight_copies(p + t[k].offset, (long)t[k].numel).n == 2;
    }
    gemm_weights_end();
    return weights;
}

// adamw_step with weights that have packed copies (kernels/gemm.h, gemm_weight_copies; forced small
// blocking makes most weight matrices here larger than "L2"): the parameters bitwise those of an update
// without copies, at 1 and 3 threads, and the next scope's products served from the copies rewritten
// by the update (the weights changed again afterwards without a rewrite still give the products of the
// updated weights, bitwise gemm_nt / gemm_nn on them).
static void test_adamw_copies(void) {
    MaeTensor t[128];
    int nt;
    size_t np = small_table(t, &nt);
    float *p0 = malloc(np * 4), *g = malloc(np * 4), *m0 = malloc(np * 4), *v0 = malloc(np * 4);
    float *pr = malloc(np * 4), *mr = malloc(np * 4), *vr = malloc(np * 4);
    float *p = malloc(np * 4), *m = malloc(np * 4), *v = malloc(np * 4);
    Rng r;
    rng_seed(&r, 5);
    for (size_t i = 0; i < np; i++) {
        p0[i] = rng_normal(&r, 0.0f, 1.0f); g[i] = rng_normal(&r, 0.0f, 1.0f);
        m0[i] = rng_normal(&r, 0.0f, 0.1f); v0[i] = fabsf(rng_normal(&r, 0.0f, 0.1f));
    }
    if (gemm_force_blocking(40, 1024) != 0) { CHECK(0, "small blocking"); return; }
    memcpy(pr, p0, np * 4); memcpy(mr, m0, np * 4); memcpy(vr, v0, np * 4);
    adamw_step(t, nt, pr, g, mr, vr, 1e-2f, 0.05f, 3);   // no copies yet: the reference
    const int M = 9;
    float *A = malloc(M * 4096 * 4), *y0 = malloc(M * 4096 * 4), *y1 = malloc(M * 4096 * 4);   // widths < 4096
    for (int i = 0; i < M * 4096; i++) A[i] = rng_normal(&r, 0.0f, 1.0f);
    for (int th = 1; th <= 3; th += 2) {
        omp_set_num_threads(th);
        memcpy(p, p0, np * 4); memcpy(m, m0, np * 4); memcpy(v, v0, np * 4);
        int with_copies, weights = pack_copies(t, nt, p, A, M, y0, &with_copies);
        long big = 2 * gemm_blocking().slab_floats;   // the weights with copies, as pack_copies picks them
        CHECK(weights >= 8 && with_copies == weights, "%d of %d weights have both copies", with_copies, weights);
        adamw_step(t, nt, p, g, m, v, 1e-2f, 0.05f, 3);
        CHECK(!memcmp(p, pr, np * 4) && !memcmp(m, mr, np * 4) && !memcmp(v, vr, np * 4),
              "adamw_step with packed copies at %d threads: bitwise the update without", th);
        for (size_t i = 0; i < np; i++) p[i] += 1.0f;   // not rewritten: the next scope reads the copies
        int bad = 0;
        gemm_weights_begin();
        for (int k = 0; k < nt; k++) {
            if (t[k].ndim != 2 || (long)t[k].numel <= big) continue;
            int rows = t[k].shape[0], cols = t[k].shape[1];
            gemm_nt(M, rows, cols, A, cols, pr + t[k].offset, cols, y0, rows, NULL, 0);
            gemm_nt_weight(M, rows, cols, A, cols, p + t[k].offset, cols, y1, rows, NULL, 0);
            bad += memcmp(y0, y1, (size_t)M * rows * 4) != 0;
            gemm_nn(M, cols, rows, A, rows, pr + t[k].offset, cols, y0, cols, 0);
            gemm_nn_weight(M, cols, rows, A, rows, p + t[k].offset, cols, y1, cols, 0);
            bad += memcmp(y0, y1, (size_t)M * cols * 4) != 0;
        }
        gemm_weights_end();
        CHECK(bad == 0, "%d products after adamw_step (%d threads) not served from the rewritten copies", bad, th);
        gemm_weights_release();
    }
    omp_set_num_threads(2);
    gemm_force_blocking(0, 0);
    free(A); free(y0); free(y1);
    free(p0); free(g); free(m0); free(v0); free(pr); free(mr); free(vr); free(p); free(m); free(v);
}

// adamw_step_tree: the gradient as the live result of a tree over n buffers (the workers' top of the
// tree, dist/workers.h: pairwise, scaled by 1 / G), summed range by range inside AdamW's pass. Against
// sumtree_apply over the buffers followed by adamw_step: parameters and moments bitwise, and the live
// buffer holding the summed gradient over every trainable tensor; with and without packed copies (the
// copies' row blocks take their ranges there), at 1 and 3 threads, 1, 2 and 4 buffers. And with the
// weight matrices updated first by adamw_tree_rows, 64 rows a call, the calls shared by 2 threads in
// descending order (as the workers take them beside their backward, dist/workers.h), then the rest by
// adamw_step_tree skipping them: the same bits, and the next scope's products served from the copies
// the row updates rewrote.
static void test_adamw_tree(void) {
    MaeTensor t[128];
    int nt;
    size_t np = small_table(t, &nt);
    float *p0 = malloc(np * 4), *m0 = malloc(np * 4), *v0 = malloc(np * 4), *node0[4], *node[4], *want[4];
    float *pr = malloc(np * 4), *mr = malloc(np * 4), *vr = malloc(np * 4);
    float *p = malloc(np * 4), *m = malloc(np * 4), *v = malloc(np * 4);
    Rng r;
    rng_seed(&r, 11);
    for (size_t i = 0; i < np; i++) {
        p0[i] = rng_normal(&r, 0.0f, 1.0f);
        m0[i] = rng_normal(&r, 0.0f, 0.1f); v0[i] = fabsf(rng_normal(&r, 0.0f, 0.1f));
    }
    for (int w = 0; w < 4; w++) {
        node0[w] = malloc(np * 4); node[w] = malloc(np * 4); want[w] = malloc(np * 4);
        for (size_t i = 0; i < np; i++) node0[w][i] = rng_normal(&r, 0.0f, 1.0f);
    }
    const int M = 9;
    float *A = malloc(M * 4096 * 4), *y = malloc(M * 4096 * 4);
    for (int i = 0; i < M * 4096; i++) A[i] = rng_normal(&r, 0.0f, 1.0f);
    unsigned char *skip = calloc((size_t)nt, 1);
    for (int early = 0; early < 2; early++)
    for (int copies = 0; copies < 2; copies++)
        for (int W = 1; W <= 4; W *= 2)
            for (int th = 1; th <= 3; th += 2) {
                SumTree tr;
                memset(&tr, 0, sizeof tr);
                tr.n = W;
                for (int step = 1; step < W; step *= 2)
                    for (int j = 0; j + step < W; j += 2 * step) {
                        tr.dst[tr.nadd] = (unsigned char)j;
                        tr.src[tr.nadd++] = (unsigned char)(j + step);
                    }
                tr.scale = 1.0f / (float)(2 * W);
                sumtree_finish(&tr);
                for (int w = 0; w < W; w++) memcpy(want[w], node0[w], np * 4);
                sumtree_apply(&tr, want, 0, np);   // the reference: the whole tree first, then AdamW
                memcpy(pr, p0, np * 4); memcpy(mr, m0, np * 4); memcpy(vr, v0, np * 4);
                adamw_step(t, nt, pr, want[0], mr, vr, 1e-2f, 0.05f, 3);
                omp_set_num_threads(th);
                for (int w = 0; w < W; w++) memcpy(node[w], node0[w], np * 4);
                memcpy(p, p0, np * 4); memcpy(m, m0, np * 4); memcpy(v, v0, np * 4);
                if (copies) {   // small blocking: the weight matrices get packed copies, rewritten by the update
                    if (gemm_force_blocking(40, 1024) != 0) { CHECK(0, "small blocking"); return; }
                    int with_copies, weights = pack_copies(t, nt, p, A, M, y, &with_copies);
                    CHECK(weights >= 8 && with_copies == weights, "tree: %d of %d weights have both copies",
                          with_copies, weights);
                }
                int rowed = 0;
                for (int k = 0; k < nt; k++) rowed += skip[k] = early && t[k].ndim == 2;
                if (early) {
                    #pragma omp parallel num_threads(2)
                    {
                        int me = omp_get_thread_num(), call = 0;
                        for (int k = nt - 1; k >= 0; k--) {
                            if (!skip[k]) continue;
                            int rows = t[k].shape[0];
                            for (int r0 = (rows - 1) / 64 * 64; r0 >= 0; r0 -= 64, call++)
                                if (call % 2 == me)
                                    adamw_tree_rows(&t[k], p, &tr, node, m, v, 1e-2f, 0.05f, 3, r0,
                                                    r0 + 64 < rows ? r0 + 64 : rows);
                        }
                    }
                    CHECK(rowed >= 8, "%d weight matrices updated by rows", rowed);
                }
                adamw_step_tree(t, nt, p, &tr, node, m, v, 1e-2f, 0.05f, 3, skip);
                int grad_ok = 1;
                for (int k = 0; k < nt; k++)
                    if (t[k].trainable)
                        grad_ok &= !memcmp(node[0] + t[k].offset, want[0] + t[k].offset, t[k].numel * 4);
                CHECK(!memcmp(p, pr, np * 4) && !memcmp(m, mr, np * 4) && !memcmp(v, vr, np * 4) && grad_ok,
                      "adamw_step_tree%s, %d buffers, %d threads%s: bitwise the tree then adamw_step (%s)",
                      early ? " after adamw_tree_rows" : "", W, th, copies ? ", packed copies" : "",
                      grad_ok ? "the update differs" : "the summed gradient differs");
                if (copies) {
                    for (size_t i = 0; i < np; i++) p[i] += 1.0f;   // not rewritten: the next scope reads the copies
                    int bad = 0;
                    long big = 2 * gemm_blocking().slab_floats;
                    gemm_weights_begin();
                    for (int k = 0; k < nt; k++) {
                        if (t[k].ndim != 2 || (long)t[k].numel <= big) continue;
                        int rows = t[k].shape[0], cols = t[k].shape[1];
                        gemm_nt(M, rows, cols, A, cols, pr + t[k].offset, cols, y, rows, NULL, 0);
                        gemm_nt_weight(M, rows, cols, A, cols, p + t[k].offset, cols, y + (size_t)M * 2048, rows,
                                       NULL, 0);
                        bad += memcmp(y, y + (size_t)M * 2048, (size_t)M * rows * 4) != 0;
                        gemm_nn(M, cols, rows, A, rows, pr + t[k].offset, cols, y, cols, 0);
                        gemm_nn_weight(M, cols, rows, A, rows, p + t[k].offset, cols, y + (size_t)M * 2048, cols, 0);
                        bad += memcmp(y, y + (size_t)M * 2048, (size_t)M * cols * 4) != 0;
                    }
                    gemm_weights_end();
                    CHECK(bad == 0, "tree%s, %d buffers, %d threads: %d products not served from the rewritten copies",
                          early ? " after adamw_tree_rows" : "", W, th, bad);
                    gemm_weights_release();
                    gemm_force_blocking(0, 0);
                }
            }
    omp_set_num_threads(2);
    free(skip);
    for (int w = 0; w < 4; w++) { free(node0[w]); free(node[w]); free(want[w]); }
    free(A); free(y);
    free(p0); free(m0); free(v0); free(pr); free(mr); free(vr); free(p); free(m); free(v);
}

static double lr_expected(long s, long total, long warmup, double base, double min_lr) {
    if (s < warmup) return base * s / warmup;
    if (total <= warmup) return base;
    double progress = fmin(1.0, (double)(s - warmup) / (double)(total - warmup));
    return min_lr + (base - min_lr) * 0.5 * (1 + cos(M_PI * progress));
}

static void test_schedule(void) {
    const struct { long total, warmup; float base, min_lr; } runs[] = {
        {20, 5, 1e-2f, 1e-4f}, {7, 0, 3e-3f, 0.0f}, {5, 5, 1e-3f, 0.0f}, {12, 3, 1e-3f, 1e-3f}, {1000, 50, 1.5e-4f, 1e-6f},
    };
    for (int k = 0; k < 5; k++) {
        int bad = 0;
        for (long s = 0; s <= runs[k].total; s++) {
            double want = lr_expected(s, runs[k].total, runs[k].warmup, runs[k].base, runs[k].min_lr);
            double got = lr_at(s, runs[k].total, runs[k].warmup, runs[k].base, runs[k].min_lr);
            if (!(fabs(got - want) <= 1e-6 * fabs(want)) && bad++ < 3)
                fprintf(stderr, "lr_at(%ld, %ld, %ld): %.9g want %.9g\n", s, runs[k].total, runs[k].warmup, got, want);
        }
        CHECK(bad == 0, "schedule total %ld warm-up %ld: %d steps off", runs[k].total, runs[k].warmup, bad);
    }
    CHECK(lr_at(0, 10, 2, 1e-3f, 0.0f) == 0.0f, "the first warm-up step has lr 0");
}

// Image [S, S, C] with patch 0 constant, patch 1 of tiny variance (~1e-6, the order of eps), the rest
// random; returns the targets computed directly, [L, pd].
static void norm_pix_expected(const MaeConfig *c, const float *img, int norm_pix, double *out) {
    int P = c->patch_size, C = c->in_chans, S = c->img_size, g = S / P, pd = mae_patch_dim(c), L = mae_num_patches(c);
    for (int l = 0; l < L; l++) {
        double *t = out + (size_t)l * pd;
        for (int py = 0; py < P; py++)
            for (int px = 0; px < P; px++)
                for (int ch = 0; ch < C; ch++)
                    t[(py * P + px) * C + ch] = img[(((l / g) * P + py) * S + (l % g) * P + px) * C + ch];
        if (!norm_pix) continue;
        double mean = 0, var = 0;
        for (int i = 0; i < pd; i++) mean += t[i];
        mean /= pd;
        for (int i = 0; i < pd; i++) var += (t[i] - mean) * (t[i] - mean);
        var /= pd - 1;
        for (int i = 0; i < pd; i++) t[i] = (t[i] - mean) / sqrt(var + 1e-6);
    }
}

static void test_targets_and_loss(void) {
    for (int norm_pix = 0; norm_pix <= 1; norm_pix++) {
        MaeConfig c = tiny_config(1);
        c.norm_pix_loss = norm_pix;
        int S = c.img_size, C = c.in_chans, P = c.patch_size, g = S / P, L = mae_num_patches(&c), pd = mae_patch_dim(&c);
        int K = mae_len_keep(&c, 0.75f);
        char err[256];
        Mae *model = mae_create(&c, 1, err, sizeof err);
        if (!model) { CHECK(0, "create: %s", err); return; }
        Rng r;
        rng_seed(&r, 3);
        mae_init_weights(model, &r);
        float *img = malloc(sizeof(float) * S * S * C);
        for (int i = 0; i < S * S * C; i++) img[i] = rng_normal(&r, 0.0f, 1.0f);
        for (int py = 0; py < P; py++)
            for (int px = 0; px < P; px++)
                for (int ch = 0; ch < C; ch++) {
                    img[((py) * S + px) * C + ch] = 0.7f;                                   // patch 0
                    img[((py) * S + P + px) * C + ch] = 0.5f + 1e-3f * ((py * P + px) * C + ch) / pd;   // patch 1
                }
        float noise[64];
        int keep[64];
        for (int l = 0; l < L; l++) noise[l] = rng_uniform(&r);
        mae_masking_from_noise(noise, 1, L, K, keep);
        float loss = mae_forward(model, img, keep, 1, K);
        double *want = malloc(sizeof(double) * L * pd);
        norm_pix_expected(&c, img, norm_pix, want);
        const float *tg = mae_target(model), *pred = mae_pred(model);
        int bad = 0;
        for (int i = 0; i < L * pd; i++)
            if (!(fabs(tg[i] - want[i]) <= 1e-5 * fabs(want[i]) + 1e-6) && bad++ < 3)
                fprintf(stderr, "norm_pix %d target[patch %d][%d] = %.8g want %.8g\n", norm_pix, i / pd, i % pd, tg[i], want[i]);
        CHECK(bad == 0, "norm_pix %d: %d target values differ from the direct computation", norm_pix, bad);
        // The loss: mean over removed patches of the per-patch mean squared error.
        unsigned char removed[64];
        memset(removed, 1, sizeof removed);
        for (int j = 0; j < K; j++) removed[keep[j]] = 0;
        double sum = 0;
        int nrem = 0;
        for (int l = 0; l < L; l++) {
            if (!removed[l]) continue;
            double e = 0;
            for (int i = 0; i < pd; i++) { double d = pred[l * pd + i] - want[l * pd + i]; e += d * d; }
            sum += e / pd;
            nrem++;
        }
        CHECK(nrem == L - K, "removed patches %d", nrem);
        CHECK_CLOSE(loss, sum / nrem, 1e-6, 1e-5, "loss = mean over removed patches of the patch MSE");
        (void)g;
        free(want); free(img);
        mae_free(model);
    }
}

int main(void) {
    omp_set_num_threads(2);
    test_decay_set();
    test_adamw_closed_form();
    // Packed copies are made on the blocked paths only (kernels/gemm.h: the ref path packs nothing), so
    // under VITMAE_GEMM=ref (docs/testing.md) the two tests of the copies run on the portable path.
    int ref = gemm_path() == GEMM_PATH_REF;
    if (ref) CHECK(gemm_force_kernel("portable") == 0, "the portable path for the packed copies");
    test_adamw_copies();
    test_adamw_tree();
    if (ref) gemm_force_kernel("ref");
    test_schedule();
    test_targets_and_loss();
    return check_done();
}
