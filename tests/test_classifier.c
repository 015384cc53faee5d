// The classifier (core/classifier.c) against PyTorch and against itself.
// 1. Parity with the fixtures of tools/reference_classifier.py (float64 PyTorch stored as F32): logits,
//    smoothed cross-entropy, every gradient, each tensor's lr scale and weight decay after MAE's layer
//    decay, and the weights after 3 AdamW steps with those groups. Tolerances, element-wise
//    |ours - ref| <= atol + rtol |ref|: loss 1e-6 + 1e-5; logits, grads, weights 1e-5 + 1e-4; lr scales
//    1e-7 relative. Weights whose reference gradient is at round-off level (|g| < 1e-6, and the key slice
//    of attn.qkv.bias, whose true gradient is 0) are held after the steps to the AdamW bound
//    |w3 - w0| <= 1.01 sum(lr * scale) (1 + wd |w0|), as in tests/test_parity.c.
// 2. Finite-difference gradient check with drop path active (fixed factors, some branches dropped).
// 3. Drop path: factors all ones equal no drop path bit for bit; factors depend only on (seed, step,
//    image); their mean is 1 and their drop rate is p_l (linspace over blocks); the kernel's output
//    averaged over draws is x + branch.
// 4. Classifier checkpoints: round trip bit for bit (weights, moments, classes), the MAE loader reads the
//    encoder with `norm` weight 1 / bias 0, damaged metadata / missing tensors are refused.
// 5. The position table resized for fine-tuning at another image size (core/posembed.h) against
//    tools/reference_posembed.py's F.interpolate(mode='bicubic', align_corners=False), up and down on odd
//    grids: |ours - ref| <= 1e-7 + 1e-6 |ref|; the CLS row copied bit for bit.
// 6. Mixup and CutMix (data/mix.h) against tools/reference_classifier.py's mixing fixtures: the
//    images mixed as timm mixes a float32 batch (bitwise), then the loss and every gradient of
//    SoftTargetCrossEntropy on the mixed, smoothed targets (tolerances as in 1); and the draws: their
//    lam's mean and variance against Beta(a, a)'s, CutMix's box and its corrected lam, the same draw
//    for the same (seed, step, group), none with the flags off.
// 7. Random erasing (data/erase.h): the box sides from given draws against the fixture of
//    tools/reference_classifier.py (timm's lines in Python's arithmetic and rounding: equal, a tie that
//    rounds half to even included); and the draws: the share of images erased, the boxes inside the
//    image, every pixel outside them kept bit for bit, their fill (normal per pixel: mean 0 and variance
//    1; per channel: one value a channel; zeros), 1 to N boxes with --recount N, the same for the same
//    (seed, step, image), none with --reprob 0.
// 8. clf_label_rank (top-1 and top-5 of finetune's validation): the classes ranked above a label, equal
//    logits ranked by index as argmax takes the first.
// 9. The model EMA's update (core/optim.h ema_update) against tools/reference_classifier.py's torch.lerp
//    fixture in float32: bitwise, both of lerp's formulas (weights below 0.5 and from it up, 1 included),
//    on pieces of odd lengths, with 1 thread and 3.
#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>
#include "check.h"
#include "fixture_check.h"
#include "st_rewrite.h"
#include "io/checkpoint.h"
#include "io/classifier_ckpt.h"
#include "core/classifier.h"
#include "core/encoder.h"
#include "core/posembed.h"
#include "core/optim.h"
#include "kernels/droppath.h"
#include "data/erase.h"
#include "data/mix.h"

static const StFile *fx;
static double worst_ratio;
static char worst_name[128];

static const float *need(const char *name, size_t numel) { return fixture_need(fx, name, numel); }

static void compare(const char *name, const float *got, size_t numel, double atol, double rtol) {
    double r = fixture_compare(fx, name, got, numel, atol, rtol);
    if (r > worst_ratio) { worst_ratio = r; snprintf(worst_name, sizeof worst_name, "%s", name); }
}

static double opt_num(const char *json, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = json ? strstr(json, pat) : NULL;
    CHECK(p != NULL, "optimizer setting %s", key);
    return p ? strtod(p + strlen(pat), NULL) : 0.0;
}

// A fixture opened as the one that compare() and need() read, its worst ratio reset; NULL (said) when not.
static StFile *open_fixture(const char *path) {
    char err[512];
    StFile *f = st_open(path, err, sizeof err);
    CHECK(f != NULL, "open %s: %s", path, err);
    fx = f;
    worst_ratio = 0; worst_name[0] = 0;
    return f;
}

static void run_fixture(const char *path) {
    char err[512];
    StFile *f = open_fixture(path);
    if (!f) return;
    ClassifierConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    const char *cj = st_meta(f, "config"), *ncls = st_meta(f, "classes"), *oj = st_meta(f, "optimizer");
    CHECK(cj && ncls && oj && mae_config_from_json(cj, &cfg.enc, err, sizeof err) == 0, "fixture metadata");
    if (!cj || !ncls || !oj) { st_close(f); return; }
    cfg.num_classes = atoi(ncls);
    int nd; int64_t sh[4];
    const float *lab_f = st_get(f, "labels", &nd, sh);
    CHECK(lab_f && nd == 1, "labels [B]");
    if (!lab_f) { st_close(f); return; }
    int B = (int)sh[0], K = cfg.num_classes;
    Classifier *c = clf_create(&cfg, B, err, sizeof err);
    CHECK(c != NULL, "create: %s", err);
    if (!c) { st_close(f); return; }
    int nt; const MaeTensor *t = clf_tensors(c, &nt);
    float *params = clf_params(c);
    for (int k = 0; k < nt; k++) {
        const float *w = need(t[k].name, t[k].numel);
        if (w) memcpy(params + t[k].offset, w, t[k].numel * sizeof(float));
    }
    CHECK(st_count(f) == 5 * nt + 5, "the fixture has exactly the classifier's tensors (%d vs %d)", st_count(f), 5 * nt + 5);
    int labels[64];
    for (int b = 0; b < B && b < 64; b++) labels[b] = (int)lab_f[b];
    const float *images = need("images", (size_t)B * cfg.enc.img_size * cfg.enc.img_size * cfg.enc.in_chans);
    if (!images) { clf_free(c); st_close(f); return; }
    float smoothing = (float)opt_num(oj, "smoothing");
    clf_zero_grads(c);
    float loss = (float)clf_forward(c, images, labels, B, smoothing, NULL);
    clf_backward(c);
    compare("loss", &loss, 1, 1e-6, 1e-5);
    compare("logits", clf_logits(c), (size_t)B * K, 1e-5, 1e-4);
    char name[128];
    for (int k = 0; k < nt; k++) {
        snprintf(name, sizeof name, "grad.%s", t[k].name);
        compare(name, clf_grads(c) + t[k].offset, t[k].numel, 1e-5, 1e-4);
    }

    // Layer decay: each tensor's lr scale and weight decay.
    double lr = opt_num(oj, "lr"), min_lr = opt_num(oj, "min_lr"), wd = opt_num(oj, "wd");
    long warmup = (long)opt_num(oj, "warmup"), total = (long)opt_num(oj, "total"), steps = (long)opt_num(oj, "steps");
    float *scale = malloc(sizeof(float) * nt);
    clf_lr_scales(t, nt, cfg.enc.depth, (float)opt_num(oj, "layer_decay"), scale);
    for (int k = 0; k < nt; k++) {
        snprintf(name, sizeof name, "lrd.%s", t[k].name);
        const float *g = need(name, 2);
        if (!g || !t[k].trainable) continue;   // frozen tables are in no group
        float got[2] = {scale[k], t[k].decay ? (float)wd : 0.0f};
        compare(name, got, 2, 0.0, 1e-7);
    }

    // Three AdamW steps (betas 0.9, 0.999) over the groups, on the same batch.
    CHECK(steps == 3, "3 optimiser steps in the fixture");
    size_t np = clf_num_params(&cfg);
    float *mom = calloc(np, sizeof(float)), *vel = calloc(np, sizeof(float)), losses[3] = {0};
    // The moving average (finetune --model-ema) beside them: the weights before the first step, updated
    // after each (core/optim.h ema_update).
    float *ema = malloc(np * sizeof(float));
    memcpy(ema, params, np * sizeof(float));
    double ema_d = opt_num(oj, "ema_decay");
    int ema_warm = strstr(oj, "\"ema_warmup\": true") != NULL;
    double lr_sum = 0.0;
    for (long s = 0; s < 3; s++) {
        float lr_s = lr_at(s, total, warmup, (float)lr, (float)min_lr);
        lr_sum += lr_s;
        clf_zero_grads(c);
        losses[s] = (float)clf_forward(c, images, labels, B, smoothing, NULL);
        clf_backward(c);
        adamw_step_groups(t, nt, scale, params, clf_grads(c), mom, vel, lr_s, (float)wd, 0.9f, 0.999f, s + 1);
        ema_update(ema, params, np, ema_decay_at(ema_d, ema_warm, s + 1));
    }
    compare("step3.loss", losses, 3, 1e-6, 1e-5);
    size_t n_bound = fixture_check_step3(fx, "step3.", t, nt, params, scale, lr_sum, wd, compare);
    fixture_check_step3(fx, "ema3.", t, nt, ema, scale, lr_sum, wd, compare);
    printf("%s: B=%d classes=%d loss %.7f; worst |d|/tol %.3f (%s); %zu round-off-gradient weights held to the lr bound\n",
           path, B, K, (double)loss, worst_ratio, worst_name, n_bound);
    free(scale); free(mom); free(vel); free(ema);
    clf_free(c);
    st_close(f);
}

// A tiny classifier with weights away from the init point and random images / labels.
static Classifier *tiny(int B, int pos_learned, int depth, Rng *rng, float **img) {
    ClassifierConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    mae_config_preset(&cfg.enc, "tiny");
    cfg.enc.img_size = 8; cfg.enc.patch_size = 2; cfg.enc.in_chans = 1;
    cfg.enc.embed_dim = 8; cfg.enc.depth = depth; cfg.enc.num_heads = 2; cfg.enc.pos_learned = pos_learned;
    cfg.num_classes = 3;
    char err[256];
    Classifier *c = clf_create(&cfg, B, err, sizeof err);
    CHECK(c != NULL, "create: %s", err);
    if (!c) return NULL;
    clf_init_weights(c, rng);
    size_t np = clf_num_params(&cfg);
    float *p = clf_params(c);
    for (size_t i = 0; i < np; i++) p[i] += rng_normal(rng, 0.0f, 0.1f);
    float *hw = clf_tensor(c, "head.weight");
    for (int i = 0; i < 3 * 8; i++) hw[i] = rng_normal(rng, 0.0f, 0.5f);
    int n = B * 8 * 8;
    *img = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) (*img)[i] = rng_normal(rng, 0.0f, 1.0f);
    return c;
}

// Central differences at h = 2e-2 and h / 2 combined by Richardson extrapolation (the O(h^2) truncation
// error cancels; the classifier's softmax and the CLS-free pooling curve more than the MAE's loss, so
// tests/test_gradcheck.c's plain difference is not enough here), tolerance 3e-5 + 1e-3 max(|fd|, |g|),
// with drop path factors that drop some branches and scale the others by 1 / keep.
static void gradcheck(int pos_learned, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    int B = 3, depth = 3, labels[3] = {0, 2, 1};
    float *img = NULL;
    Classifier *c = tiny(B, pos_learned, depth, &rng, &img);
    if (!c) return;
    float drop[3 * 2 * 3];
    for (int i = 0; i < depth * 2 * B; i++) drop[i] = i % 5 == 1 ? 0.0f : 1.0f / 0.8f;
    clf_zero_grads(c);
    clf_forward(c, img, labels, B, 0.1f, drop);
    clf_backward(c);
    const ClassifierConfig *cfg = clf_config(c);
    size_t np = clf_num_params(cfg);
    float *g = malloc(sizeof(float) * np), *p = clf_params(c);
    memcpy(g, clf_grads(c), sizeof(float) * np);
    int nt; const MaeTensor *t = clf_tensors(c, &nt);
    int checked = 0, bad = 0;
    double worst = 0.0; const char *wname = "";
    const double h = 2e-2;
    for (int k = 0; k < nt; k++) {
        int per = check_sanitized() ? 3 : 6;   // fewer under ASan (tests/run.sh)
        int samples = t[k].numel < (size_t)per ? (int)t[k].numel : per;
        for (int s = 0; s < samples; s++) {
            size_t idx = t[k].offset + rng_below(&rng, (uint32_t)t[k].numel);
            float w0 = p[idx];
            double dh[2];
            for (int j = 0; j < 2; j++) {
                double hj = j ? h / 2 : h;
                p[idx] = (float)(w0 + hj);
                double fp = clf_forward(c, img, labels, B, 0.1f, drop);
                p[idx] = (float)(w0 - hj);
                double fm = clf_forward(c, img, labels, B, 0.1f, drop);
                dh[j] = (fp - fm) / (2 * hj);
            }
            p[idx] = w0;
            double fd = (4 * dh[1] - dh[0]) / 3, an = g[idx];   // Richardson: the h^2 term cancels
            if (!t[k].trainable) { CHECK(an == 0.0, "%s frozen but has gradient %g", t[k].name, an); continue; }
            double tol = 3e-5 + 1e-3 * fmax(fabs(fd), fabs(an));
            if (fabs(fd - an) / tol > worst) { worst = fabs(fd - an) / tol; wname = t[k].name; }
            checked++;
            if (!(fabs(fd - an) <= tol)) {
                bad++;
                fprintf(stderr, "%s[%zu]: analytic %.8g finite-diff %.8g\n", t[k].name, idx - t[k].offset, an, fd);
            }
        }
    }
    CHECK(bad == 0, "gradcheck: %d of %d coordinates off (pos_learned %d)", bad, checked, pos_learned);
    printf("gradcheck pos_learned=%d with drop path: %d coordinates, worst |d|/tol = %.3f (%s)\n", pos_learned,
           checked, worst, wname);
    free(g); free(img);
    clf_free(c);
}

// A forward-only classifier (clf_create_forward, as `vitmae classify` runs) gives bitwise the training
// classifier's loss, logits, probabilities and features, with and without labels; it has no gradient
// buffer and no attention maps to give.
static void forward_only_checks(void) {
    Rng rng;
    rng_seed(&rng, 5);
    int B = 3, labels[3] = {2, 0, 1};
    float *img = NULL;
    Classifier *c = tiny(B, 1, 3, &rng, &img);
    if (!c) return;
    char err[256];
    Classifier *f = clf_create_forward(clf_config(c), B, err, sizeof err);
    CHECK(f != NULL, "create forward-only: %s", err);
    if (f) {
        memcpy(clf_params(f), clf_params(c), clf_num_params(clf_config(c)) * sizeof(float));
        for (int labelled = 0; labelled < 2; labelled++) {
            double lc = clf_forward(c, img, labelled ? labels : NULL, B, 0.1f, NULL);
            double lf = clf_forward(f, img, labelled ? labels : NULL, B, 0.1f, NULL);
            CHECK(!memcmp(&lc, &lf, sizeof lc), "forward-only loss %.17g = %.17g", lf, lc);
            CHECK(!memcmp(clf_logits(c), clf_logits(f), sizeof(float) * B * 3), "forward-only logits bitwise");
            CHECK(!memcmp(clf_probs(c), clf_probs(f), sizeof(float) * B * 3), "forward-only probabilities bitwise");
            CHECK(!memcmp(clf_features(c), clf_features(f), sizeof(float) * B * 8), "forward-only features bitwise");
        }
        CHECK(clf_grads(f) == NULL && clf_attention(f, 2) == NULL && clf_attention(c, 0) != NULL,
              "forward-only: no gradients, no attention maps");
        // Over parameters handed to it (a checkpoint's, in classify): taken as they are; the same bits.
        size_t np = clf_num_params(clf_config(c));
        float *given = malloc(np * sizeof(float));
        memcpy(given, clf_params(c), np * sizeof(float));
        Classifier *w = clf_create_forward_with(clf_config(c), B, given, err, sizeof err);
        CHECK(w && clf_params(w) == given, "clf_create_forward_with takes the parameters as they are: %s", err);
        if (w) {
            double lc = clf_forward(c, img, labels, B, 0.1f, NULL), lw = clf_forward(w, img, labels, B, 0.1f, NULL);
            CHECK(!memcmp(&lc, &lw, sizeof lc) && !memcmp(clf_probs(c), clf_probs(w), sizeof(float) * B * 3),
                  "forward over given parameters bitwise");
            clf_free(w);   // frees `given` too
        } else {
            free(given);
        }
        if (!check_sanitized()) {   // refused: the parameters stay the caller's (as test_model)
            float *mine = calloc(np, sizeof(float));
            CHECK(clf_create_forward_with(clf_config(c), 1 << 30, mine, err, sizeof err) == NULL, "a billion images: refused");
            mine[np - 1] = 1.0f;
            free(mine);
        }
        ClassifierConfig d = *clf_config(c);
        d.enc.depth++;
        size_t more = clf_bytes_needed_forward(&d, B) - clf_bytes_needed_forward(clf_config(c), B);
        size_t rows = (size_t)B * (1 + mae_num_patches(&d.enc)), params = clf_num_params(&d) - clf_num_params(clf_config(c));
        CHECK(more == (params + ((rows * 8 + 15) & ~(size_t)15)) * sizeof(float),
              "a block more: %zu bytes more, its parameters and one residual stream", more);
    }
    free(img);
    clf_free(c);
    clf_free(f);
}

static void drop_path_checks(void) {
    Rng rng;
    rng_seed(&rng, 9);
    int B = 2, depth = 4, labels[2] = {1, 0};
    float *img = NULL;
    Classifier *c = tiny(B, 1, depth, &rng, &img);
    if (!c) return;
    const ClassifierConfig *cfg = clf_config(c);
    // All-ones factors are the same computation as no drop path, bit for bit.
    float ones[4 * 2 * 2];
    for (int i = 0; i < depth * 2 * B; i++) ones[i] = 1.0f;
    double l0 = clf_forward(c, img, labels, B, 0.1f, NULL);
    float logits0[6];
    memcpy(logits0, clf_logits(c), sizeof logits0);
    double l1 = clf_forward(c, img, labels, B, 0.1f, ones);
    CHECK(l0 == l1 && !memcmp(logits0, clf_logits(c), sizeof logits0), "factors of 1 change nothing");
    // Factors that drop some branches and scale the others, in passes of one image (core/encoder.h,
    // block_forward: each pass takes its own images' factors) and in one pass: the same bits.
    float some[4 * 2 * 2];
    for (int i = 0; i < depth * 2 * B; i++) some[i] = i % 3 == 1 ? 0.0f : 1.0f / 0.7f;
    double lw = clf_forward(c, img, labels, B, 0.1f, some);
    memcpy(logits0, clf_logits(c), sizeof logits0);
    stack_forward_force_images(1);
    double lp = clf_forward(c, img, labels, B, 0.1f, some);
    stack_forward_force_images(0);
    CHECK(lw == lp && !memcmp(logits0, clf_logits(c), sizeof logits0),
          "drop path in passes of one image: loss %.9g vs %.9g, logits bitwise", lp, lw);
    // Determinism: the same (seed, step) gives the same factors; another step other ones.
    float a[4 * 2 * 2], b[4 * 2 * 2], d[4 * 2 * 2];
    clf_drop_path_factors(cfg, 0.5f, 7, 3, B, a);
    clf_drop_path_factors(cfg, 0.5f, 7, 3, B, b);
    clf_drop_path_factors(cfg, 0.5f, 7, 4, B, d);
    CHECK(!memcmp(a, b, sizeof a), "same (seed, step): same factors");
    CHECK(memcmp(a, d, sizeof a) != 0, "another step: other factors");
    for (int bb = 0; bb < B; bb++)   // block 0 has p = 0: never dropped
        CHECK(a[bb] == 1.0f && a[B + bb] == 1.0f, "block 0 keeps every branch");
    // Statistics over many steps: drop rate p_l = rate * l / (depth - 1), mean factor 1.
    const int steps = check_sanitized() ? 1000 : 4000;
    double dropped[4] = {0}, sum[4] = {0};
    for (int s = 0; s < steps; s++) {
        clf_drop_path_factors(cfg, 0.3f, 11, (uint64_t)s, B, a);
        for (int l = 0; l < depth; l++)
            for (int i = 0; i < 2 * B; i++) { dropped[l] += a[l * 2 * B + i] == 0.0f; sum[l] += a[l * 2 * B + i]; }
    }
    for (int l = 0; l < depth; l++) {
        double n = (double)steps * 2 * B, p = 0.3 * l / (depth - 1);
        double se = sqrt(p * (1 - p) / n) + 1e-12;
        CHECK(fabs(dropped[l] / n - p) <= 4 * se, "block %d drop rate %.4f vs %.4f", l, dropped[l] / n, p);
        double se_mean = p > 0 ? sqrt(p / (1 - p) / n) : 1e-12;
        CHECK(fabs(sum[l] / n - 1.0) <= 4 * se_mean + 1e-6, "block %d mean factor %.4f vs 1", l, sum[l] / n);
    }
    // The kernel's expectation: averaging x + s * branch over draws gives x + branch.
    float x[6] = {1, -2, 3, 0.5f, 4, -1}, br[6] = {0.25f, 1, -3, 2, -0.5f, 7}, out[6], u[2], sc[2];
    double acc[6] = {0};
    Rng r;
    rng_seed(&r, 5);
    for (int s = 0; s < steps; s++) {
        u[0] = rng_uniform(&r); u[1] = rng_uniform(&r);
        droppath_factors(sc, u, 2, 0.25f);
        droppath_residual_forward(out, br, x, sc, 2, 1, 3);
        for (int i = 0; i < 6; i++) acc[i] += out[i];
    }
    for (int i = 0; i < 6; i++) {
        double se = fabs(br[i]) * sqrt(0.25 / 0.75 / steps);
        CHECK(fabs(acc[i] / steps - (x[i] + br[i])) <= 4 * se + 1e-6, "E[out %d] %.4f vs %.4f", i, acc[i] / steps, x[i] + br[i]);
    }
    free(img);
    clf_free(c);
}

// Classifier checkpoints: a round trip keeps every value, the class names and the moments; the MAE
// loader reads the encoder (norm 1 / 0, no decoder, no train state); damaged files are refused.
// The file's last byte, xor 0x10, in place.
static void flip_last_byte(const char *path) {
    FILE *fp = fopen(path, "r+b");
    CHECK(fp && fseek(fp, -1, SEEK_END) == 0, "open %s", path);
    if (!fp) return;
    int ch = fgetc(fp);
    fseek(fp, -1, SEEK_END);
    fputc(ch ^ 0x10, fp);
    fclose(fp);
}

// A tiny classifier of 3 classes to save (seeded by seed), with random AdamW moments *m, *v and, where ema
// is given, a random moving average *ema (the caller frees them); NULL when it cannot be made.
static Classifier *to_save(uint64_t seed, float **m, float **v, float **ema) {
    Rng rng;
    rng_seed(&rng, seed);
    float *img = NULL;
    Classifier *c = tiny(2, 1, 2, &rng, &img);
    if (!c) return NULL;
    free(img);
    size_t np = clf_num_params(clf_config(c));
    *m = malloc(np * sizeof(float));
    *v = malloc(np * sizeof(float));
    if (ema) *ema = malloc(np * sizeof(float));
    for (size_t i = 0; i < np; i++) {
        (*m)[i] = rng_normal(&rng, 0, 1);
        (*v)[i] = rng_uniform(&rng);
        if (ema) (*ema)[i] = rng_normal(&rng, 0, 1);
    }
    return c;
}

// The weights' moving average in a classifier file (finetune --model-ema; io/classifier_ckpt.h): saved as
// ema.<name>, read back bitwise by the full load, checked but not kept by the weights-only one, taken as
// the weights by classify's --ema load; all or none of them, finite, as the moments.
// The encoder of the average, as embed, probe and attention --ema read it (io/checkpoint.h
// ckpt_load_encoder_ema): every encoder tensor and fc_norm the average's, bitwise, where the plain read
// gives the weights; a file without the average, one of its tensors missing, a NaN in it or in fc_norm's
// weights (read past), refused with the line the commands say.
static void encoder_ema_checks(Classifier *c, const float *ema, const char *path, const char *bad) {
    char err[512], want[1200];
    Checkpoint enc, w;
    int nt;
    const MaeTensor *ct = clf_tensors(c, &nt);
    CHECK(ckpt_load_encoder_ema(path, &enc, err, sizeof err) == 0, "the encoder's --ema load: %s", err);
    CHECK(ckpt_load_encoder(path, &w, err, sizeof err) == 0, "the encoder's load: %s", err);
    if (enc.params && w.params) {
        size_t numel;
        int n = mae_encoder_model_table(&enc.cfg, NULL, 0, &numel), same = 0, other = 0, norm = 0;
        MaeTensor *tab = malloc((size_t)n * sizeof *tab);
        mae_encoder_model_table(&enc.cfg, tab, n, &numel);
        for (int i = 0; tab && i < n; i++) {
            if (!strncmp(tab[i].name, "norm.", 5)) {   // a classifier has none: 1 and 0, as the plain read
                norm += !memcmp(enc.params + tab[i].offset, w.params + tab[i].offset, tab[i].numel * sizeof(float));
                continue;
            }
            for (int k = 0; k < nt; k++)
                if (!strcmp(ct[k].name, tab[i].name)) {
                    same += ct[k].numel == tab[i].numel &&
                            !memcmp(enc.params + tab[i].offset, ema + ct[k].offset, tab[i].numel * sizeof(float));
                    other += !memcmp(w.params + tab[i].offset, clf_params(c) + ct[k].offset, tab[i].numel * sizeof(float));
                }
        }
        CHECK(tab && same == n - 2 && other == n - 2 && norm == 2, "--ema: %d of %d tensors the average's (%d the weights' "
              "without it; norm %d of 2)", same, n - 2, other, norm);
        const float *fe = NULL, *fw = NULL;
        for (int k = 0; k < nt; k++)
            if (!strcmp(ct[k].name, "fc_norm.weight")) fe = ema + ct[k].offset, fw = clf_params(c) + ct[k].offset;
        size_t D = (size_t)enc.cfg.embed_dim;
        CHECK(fe && enc.classifier && enc.fc_norm && w.fc_norm && !memcmp(enc.fc_norm, fe, 2 * D * sizeof(float)) &&
              !memcmp(w.fc_norm, fw, 2 * D * sizeof(float)), "--ema: fc_norm the average's (and the weights' without it)");
        free(tab);
    }
    ckpt_free(&enc); ckpt_free(&w);
    struct { const char *drop, *nan, *why; } cases[] = {
        {"ema.pos_embed", NULL, "missing tensor 'ema.pos_embed' (the file holds other EMA weights: all of them, or none)"},
        {"ema.fc_norm.bias", NULL, "missing tensor 'ema.fc_norm.bias' (the file holds other EMA weights: all of them, or none)"},
        {NULL, "ema.blocks.1.attn.proj.bias", "tensor 'ema.blocks.1.attn.proj.bias' holds NaN or infinite values"},
        {NULL, "ema.fc_norm.weight", "tensor 'ema.fc_norm.weight' holds NaN or infinite values"},
        {NULL, "fc_norm.bias", "tensor 'fc_norm.bias' holds NaN or infinite values"},
        {NULL, "head.weight", "tensor 'head.weight' holds NaN or infinite values"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        st_rewrite(path, bad, cases[k].drop, cases[k].nan, NAN);
        snprintf(want, sizeof want, "%s: %s", bad, cases[k].why);
        CHECK(ckpt_load_encoder_ema(bad, &enc, err, sizeof err) != 0 && !strcmp(err, want), "the encoder's --ema, %s: '%s'",
              cases[k].why, err);
    }
    // A weight missing beside its average: no advice to strip 'ema.' (a wrapper's prefix is on every
    // name; stripping this one would clash with the weights there).
    st_rewrite(path, bad, "cls_token", NULL, 0.0f);
    snprintf(want, sizeof want, "%s: missing tensor 'cls_token'", bad);
    CHECK(ckpt_load_encoder(bad, &enc, err, sizeof err) != 0 && !strcmp(err, want), "a weight missing beside its "
          "average: '%s'", err);
    st_rewrite(path, bad, "ema.blocks.0.attn.proj.weight", NULL, 0.0f);   // without it, one missing is no matter
    CHECK(ckpt_load_encoder(bad, &enc, err, sizeof err) == 0, "an average missing a tensor, the encoder's plain load: %s", err);
    ckpt_free(&enc);
    char mae[600];
    const char *root = getenv("VITMAE_ROOT");
    snprintf(mae, sizeof mae, "%s/tests/fixtures/attn_model.safetensors", root && *root ? root : ".");
    snprintf(want, sizeof want, "%s: holds no EMA weights (not a fine-tuned classifier: --ema reads the moving average a "
             "finetune --model-ema run keeps)", mae);
    CHECK(ckpt_load_encoder_ema(mae, &enc, err, sizeof err) != 0 && !strcmp(err, want), "--ema of a MAE checkpoint: '%s'", err);
}

static void ema_checkpoint_checks(void) {
    float *m, *v, *ema;
    Classifier *c = to_save(23, &m, &v, &ema);
    if (!c) return;
    const ClassifierConfig *cfg = clf_config(c);
    size_t np = clf_num_params(cfg);
    char *classes[3] = {"cat", "dog", "emu"};
    char path[600], bad[600], err[512];
    const char *tmp = check_tmpdir();
    snprintf(path, sizeof path, "%s/clf_ema.safetensors", tmp);
    snprintf(bad, sizeof bad, "%s/clf_ema_bad.safetensors", tmp);
    CHECK(clf_ckpt_save(path, cfg, classes, clf_params(c), "{\"step\":3}", m, v, ema, err, sizeof err) == 0, "save: %s", err);
    ClfCheckpoint ck;
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) == 0, "load: %s", err);
    CHECK(ck.has_ema && ck.ema && !memcmp(ck.ema, ema, np * sizeof(float)) && !memcmp(ck.params, clf_params(c), np * sizeof(float)),
          "load: the weights and their average, bitwise");
    clf_ckpt_free(&ck);
    CHECK(clf_ckpt_load_weights(path, &ck, err, sizeof err) == 0 && ck.has_ema && !ck.ema &&
          !memcmp(ck.params, clf_params(c), np * sizeof(float)), "weights only: the weights, the average not kept: %s", err);
    clf_ckpt_free(&ck);
    CHECK(clf_ckpt_load_ema_weights(path, &ck, err, sizeof err) == 0 && ck.params && !ck.ema &&
          !memcmp(ck.params, ema, np * sizeof(float)), "--ema load: the average as the weights: %s", err);
    clf_ckpt_free(&ck);
    Checkpoint enc;
    CHECK(ckpt_load(path, &enc, err, sizeof err) == 0, "the MAE loader reads past the average: %s", err);
    ckpt_free(&enc);
    // Without an average: --ema's load says so; the others as before.
    CHECK(clf_ckpt_save(bad, cfg, classes, clf_params(c), "{\"step\":3}", m, v, NULL, err, sizeof err) == 0, "save: %s", err);
    char want[1200];
    snprintf(want, sizeof want, "%s: holds no EMA weights (fine-tuned without --model-ema)", bad);
    CHECK(clf_ckpt_load_ema_weights(bad, &ck, err, sizeof err) != 0 && !strcmp(err, want), "no average, --ema: '%s'", err);
    CHECK(ckpt_load_encoder_ema(bad, &enc, err, sizeof err) != 0 && !strcmp(err, want), "no average, the encoder's --ema: '%s'", err);
    CHECK(clf_ckpt_load(bad, &ck, err, sizeof err) == 0 && !ck.has_ema && !ck.ema, "no average: has_ema 0");
    clf_ckpt_free(&ck);
    // A diverged average is not written.
    float keep = ema[0];
    ema[0] = NAN;
    snprintf(want, sizeof want, "%s: not written: tensor 'ema.cls_token' holds NaN or infinite values (the model diverged)", bad);
    CHECK(clf_ckpt_save(bad, cfg, classes, clf_params(c), "{\"step\":3}", m, v, ema, err, sizeof err) != 0 && !strcmp(err, want),
          "a NaN average: '%s'", err);
    ema[0] = keep;
    // One of them missing: refused by every reader; one NaN: refused by every reader, as a moment's NaN.
    st_rewrite(path, bad, "ema.head.bias", NULL, 0.0f);
    snprintf(want, sizeof want, "%s: missing tensor 'ema.head.bias' (the file holds other EMA weights: all of them, or none)", bad);
    CHECK(clf_ckpt_load(bad, &ck, err, sizeof err) != 0 && !strcmp(err, want), "one missing, load: '%s'", err);
    CHECK(clf_ckpt_load_weights(bad, &ck, err, sizeof err) != 0 && !strcmp(err, want), "one missing, weights only: '%s'", err);
    st_rewrite(path, bad, NULL, "ema.blocks.1.mlp.fc1.weight", NAN);
    snprintf(want, sizeof want, "%s: tensor 'ema.blocks.1.mlp.fc1.weight' holds NaN or infinite values", bad);
    CHECK(clf_ckpt_load(bad, &ck, err, sizeof err) != 0 && !strcmp(err, want), "a NaN, load: '%s'", err);
    CHECK(clf_ckpt_load_weights(bad, &ck, err, sizeof err) != 0 && !strcmp(err, want), "a NaN, weights only: '%s'", err);
    CHECK(clf_ckpt_load_ema_weights(bad, &ck, err, sizeof err) != 0 && !strcmp(err, want), "a NaN, --ema: '%s'", err);
    CHECK(ckpt_load(bad, &enc, err, sizeof err) != 0 && strstr(err, "'ema.blocks.1.mlp.fc1.weight' holds NaN"),
          "a NaN, the MAE loader: '%s'", err);
    // The --ema load reads the weights past, but checks them as if it kept them.
    st_rewrite(path, bad, NULL, "blocks.0.norm1.weight", INFINITY);
    snprintf(want, sizeof want, "%s: tensor 'blocks.0.norm1.weight' holds NaN or infinite values", bad);
    CHECK(clf_ckpt_load_ema_weights(bad, &ck, err, sizeof err) != 0 && !strcmp(err, want), "a weight's infinity, --ema: '%s'", err);
    CHECK(ckpt_load_encoder_ema(bad, &enc, err, sizeof err) != 0 && !strcmp(err, want), "a weight's infinity, the encoder's --ema: '%s'", err);
    encoder_ema_checks(c, ema, path, bad);
    remove(path);
    remove(bad);
    free(m); free(v); free(ema);
    clf_free(c);
}

static void checkpoint_checks(void) {
    float *m, *v;
    Classifier *c = to_save(21, &m, &v, NULL);
    if (!c) return;
    const ClassifierConfig *cfg = clf_config(c);
    size_t np = clf_num_params(cfg);
    char *classes[3] = {"cat", "dog", "emu"};
    char path[600], err[512];
    const char *tmp = check_tmpdir();
    snprintf(path, sizeof path, "%s/clf.safetensors", tmp);
    CHECK(clf_ckpt_save(path, cfg, classes, clf_params(c), "{\"step\":3}", m, v, NULL, err, sizeof err) == 0, "save: %s", err);
    ClfCheckpoint ck;
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) == 0, "load: %s", err);
    CHECK(ck.cfg.num_classes == 3 && !strcmp(ck.classes[2], "emu"), "class names kept");
    CHECK(ck.params && !memcmp(ck.params, clf_params(c), np * sizeof(float)), "parameters bitwise");
    CHECK(ck.exp_avg && !memcmp(ck.exp_avg, m, np * sizeof(float)) && !memcmp(ck.exp_avg_sq, v, np * sizeof(float)), "moments bitwise");
    CHECK(ck.train_state && !strcmp(ck.train_state, "{\"step\":3}"), "train state kept");
    clf_ckpt_free(&ck);
    CHECK(clf_ckpt_load_weights(path, &ck, err, sizeof err) == 0, "weights-only load: %s", err);
    CHECK(ck.params && !memcmp(ck.params, clf_params(c), np * sizeof(float)) && !ck.exp_avg && !ck.exp_avg_sq &&
          ck.train_state && ck.cfg.num_classes == 3, "weights only: parameters bitwise, train state, no moments");
    clf_ckpt_free(&ck);
    Checkpoint enc;
    CHECK(ckpt_load(path, &enc, err, sizeof err) == 0, "the MAE loader reads a classifier: %s", err);
    if (enc.params) {
        Mae *mae = mae_create(&enc.cfg, 1, err, sizeof err);
        memcpy(mae_params(mae), enc.params, mae_num_params(&enc.cfg) * sizeof(float));
        const float *nw = mae_tensor(mae, "norm.weight"), *q = mae_tensor(mae, "blocks.1.attn.qkv.weight");
        CHECK(enc.classifier && !enc.has_decoder && !enc.train_state, "classifier, no decoder, no train state");
        CHECK(enc.fc_norm && !memcmp(enc.fc_norm, clf_tensor(c, "fc_norm.weight"), 8 * sizeof(float)) &&
              !memcmp(enc.fc_norm + 8, clf_tensor(c, "fc_norm.bias"), 8 * sizeof(float)),
              "the MAE loader gives the classifier's fc_norm, weight then bias");
        CHECK(nw[0] == 1.0f && nw[7] == 1.0f && mae_tensor(mae, "norm.bias")[3] == 0.0f, "norm is weight 1, bias 0");
        CHECK(!memcmp(q, clf_tensor(c, "blocks.1.attn.qkv.weight"), 3 * 8 * 8 * sizeof(float)), "blocks copied");
        mae_free(mae);
    }
    ckpt_free(&enc);
    // A classifier whose fc_norm holds an infinity (written tensor by tensor, no crc32) is refused by
    // the MAE loader as by the classifier's: `embed --pool mean` and `probe` on it gave infinite
    // features with exit 0 (fc_norm is not in the MAE table that the finite check walked).
    {
        int nt = clf_param_table(cfg, NULL, 0);
        MaeTensor *tab = malloc((size_t)nt * sizeof *tab);
        StTensor *st = calloc((size_t)nt, sizeof *st);
        float *bad = malloc(np * sizeof(float));
        memcpy(bad, clf_params(c), np * sizeof(float));
        clf_param_table(cfg, tab, nt);
        for (int i = 0; i < nt; i++) {
            st[i].name = tab[i].name;
            st[i].ndim = tab[i].ndim;
            for (int k = 0; k < tab[i].ndim; k++) st[i].shape[k] = tab[i].shape[k];
            st[i].data = bad + tab[i].offset;
            if (!strcmp(tab[i].name, "fc_norm.bias")) bad[tab[i].offset + 1] = INFINITY;
        }
        char *cj = mae_config_to_json(&cfg->enc);
        const char *keys[3] = {"format", "config", "classifier"};
        const char *vals[3] = {"vitmae", cj, "{\"num_classes\":3,\"classes\":[\"cat\",\"dog\",\"emu\"]}"};
        CHECK(st_write(path, st, nt, keys, vals, 3, err, sizeof err) == 0, "write: %s", err);
        CHECK(ckpt_load_weights(path, &enc, err, sizeof err) != 0 &&
              strstr(err, "tensor 'fc_norm.bias' holds NaN or infinite values"),
              "the MAE loader refuses an infinite fc_norm.bias: %s", err);
        ckpt_free(&enc);
        CHECK(clf_ckpt_load_weights(path, &ck, err, sizeof err) != 0 &&
              strstr(err, "tensor 'fc_norm.bias' holds NaN or infinite values"),
              "the classifier loader refuses it too: %s", err);
        free(cj); free(bad); free(st); free(tab);
    }
    // An AdamW moment or the head holding NaN (a file whose crc32 matches) is refused by every reader
    // with one line: the weights-only reader (classify) took a NaN moment, its names and shapes checked
    // but not its values, and the MAE loader that the encoder's users read a classifier with (embed,
    // probe, attention) took both, the head and the moments being no part of its table.
    {
        int nt = clf_param_table(cfg, NULL, 0);
        MaeTensor *tab = malloc((size_t)nt * sizeof *tab);
        StTensor *st = calloc(3 * (size_t)nt, sizeof *st);
        char (*names)[96] = malloc(2 * (size_t)nt * sizeof *names);
        float *pbad = malloc(np * sizeof(float)), *vbad = malloc(np * sizeof(float));
        clf_param_table(cfg, tab, nt);
        for (int i = 0; i < nt; i++)
            for (int a = 0; a < 3; a++) {
                StTensor *t = &st[a * nt + i];
                t->name = tab[i].name;
                if (a) {
                    char *nm = names[(a - 1) * nt + i];
                    snprintf(nm, 96, "optimizer.%s.%.60s", a == 1 ? "exp_avg" : "exp_avg_sq", tab[i].name);
                    t->name = nm;
                }
                t->ndim = tab[i].ndim;
                for (int k = 0; k < tab[i].ndim; k++) t->shape[k] = tab[i].shape[k];
                t->data = (a == 0 ? pbad : a == 1 ? m : vbad) + tab[i].offset;
            }
        char *cj = mae_config_to_json(&cfg->enc), want[700];
        const char *keys[4] = {"format", "config", "classifier", "train_state"};
        const char *vals[4] = {"vitmae", cj, "{\"num_classes\":3,\"classes\":[\"cat\",\"dog\",\"emu\"]}", "{\"step\":3}"};
        for (int round = 0; round < 2; round++) {
            memcpy(pbad, clf_params(c), np * sizeof(float));
            memcpy(vbad, v, np * sizeof(float));
            const char *what = round ? "head.weight" : "optimizer.exp_avg_sq.head.bias";
            for (int i = 0; i < nt; i++) {
                if (round == 0 && !strcmp(tab[i].name, "head.bias")) vbad[tab[i].offset] = NAN;
                if (round == 1 && !strcmp(tab[i].name, "head.weight")) pbad[tab[i].offset + tab[i].numel - 1] = -INFINITY;
            }
            CHECK(st_write(path, st, 3 * nt, keys, vals, 4, err, sizeof err) == 0, "write: %s", err);
            snprintf(want, sizeof want, "%s: tensor '%s' holds NaN or infinite values", path, what);
            err[0] = 0;
            CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && !strcmp(err, want), "%s, all read: '%s'", what, err);
            err[0] = 0;
            CHECK(clf_ckpt_load_weights(path, &ck, err, sizeof err) != 0 && !strcmp(err, want), "%s, weights only: '%s'", what, err);
            err[0] = 0;
            CHECK(ckpt_load_encoder(path, &enc, err, sizeof err) != 0 && !strcmp(err, want), "%s, the MAE loader: '%s'", what, err);
        }
        free(cj); free(pbad); free(vbad); free(names); free(st); free(tab);
    }
    // A classifier that also holds a final `norm` (which its encoder lacks: fc_norm takes its place) is
    // refused saying so, by both MAE loaders alike; it said "the file has only part of the decoder", as
    // the loader counts the classifier's `norm` among what it does not hold.
    {
        int nt = clf_param_table(cfg, NULL, 0);
        MaeTensor *tab = malloc((size_t)nt * sizeof *tab);
        StTensor *st = calloc((size_t)nt + 2, sizeof *st);
        float *ones = malloc(2 * (size_t)cfg->enc.embed_dim * sizeof(float));
        for (int k = 0; k < 2 * cfg->enc.embed_dim; k++) ones[k] = 1.0f;
        clf_param_table(cfg, tab, nt);
        for (int i = 0; i < nt; i++) {
            st[i].name = tab[i].name;
            st[i].ndim = tab[i].ndim;
            for (int k = 0; k < tab[i].ndim; k++) st[i].shape[k] = tab[i].shape[k];
            st[i].data = clf_params(c) + tab[i].offset;
        }
        for (int k = 0; k < 2; k++) {
            st[nt + k].name = k ? "norm.bias" : "norm.weight";
            st[nt + k].ndim = 1;
            st[nt + k].shape[0] = cfg->enc.embed_dim;
            st[nt + k].data = ones + k * cfg->enc.embed_dim;
        }
        char *cj = mae_config_to_json(&cfg->enc);
        const char *keys[3] = {"format", "config", "classifier"};
        const char *vals[3] = {"vitmae", cj, "{\"num_classes\":3,\"classes\":[\"cat\",\"dog\",\"emu\"]}"};
        CHECK(st_write(path, st, nt + 2, keys, vals, 3, err, sizeof err) == 0, "write: %s", err);
        const char *want = "tensor 'norm.weight' in a fine-tuned classifier, whose encoder has no final 'norm'";
        CHECK(ckpt_load_weights(path, &enc, err, sizeof err) != 0 && strstr(err, want),
              "a classifier with a final norm, the MAE loader: '%s', not '...: %s ...'", err, want);
        ckpt_free(&enc);
        CHECK(ckpt_load_encoder(path, &enc, err, sizeof err) != 0 && strstr(err, want),
              "a classifier with a final norm, the encoder loader: '%s', not '...: %s ...'", err, want);
        ckpt_free(&enc);
        // A tensor of another shape: both shapes said, as the pretraining reader says them (it said
        // only "does not have the shape the config needs", which left the user to find which).
        int pe = -1;
        for (int i = 0; i < nt; i++) if (!strcmp(tab[i].name, "pos_embed")) pe = i;
        CHECK(pe >= 0, "the table has pos_embed");
        if (pe >= 0) {
            int L = (int)tab[pe].shape[1], D = (int)tab[pe].shape[2];
            st[pe].shape[1] = L - 1;
            CHECK(st_write(path, st, nt, keys, vals, 3, err, sizeof err) == 0, "write: %s", err);
            char want_shape[160];
            snprintf(want_shape, sizeof want_shape, ": tensor 'pos_embed' has shape [1, %d, %d], the config needs [1, %d, %d]", L - 1, D, L, D);
            err[0] = 0;
            CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, want_shape), "pos_embed of %d tokens: '%s'", L - 1, err);
            err[0] = 0;
            CHECK(clf_ckpt_load_weights(path, &ck, err, sizeof err) != 0 && strstr(err, want_shape), "weights only, pos_embed of %d tokens: '%s'", L - 1, err);
        }
        free(cj); free(ones); free(st); free(tab);
    }
    // Damage in a moment's bytes (the file's last tensor), which a weights-only read does not keep,
    // is still found by the crc32, by every reader.
    {
        flip_last_byte(path);
        CHECK(clf_ckpt_load_weights(path, &ck, err, sizeof err) != 0 && strstr(err, "crc32 mismatch (file damaged)"),
              "weights only, a moment's byte flipped: %s", err);
        CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, "crc32 mismatch (file damaged)"),
              "a moment's byte flipped: %s", err);
        StFile *f = st_open_header(path, err, sizeof err);
        CHECK(f != NULL, "header of a damaged file: %s", err);
        Checkpoint mae_ck;
        if (f) CHECK(ckpt_from_st(f, 0, &mae_ck, err, sizeof err) != 0 && strstr(err, "crc32 mismatch (file damaged)"),
                     "the MAE reader names the damage: %s", err);
        st_close(f);
    }
    // A pretraining checkpoint is not a classifier; damaged classifier metadata or tensors are refused.
    StTensor one = {"head.bias", 1, {3, 0, 0, 0}, m};
    const char *keys[3] = {"format", "config", "classifier"};
    char *cj = mae_config_to_json(&cfg->enc);
    const char *bad_meta[3] = {"vitmae", cj, "{\"num_classes\":3,\"classes\":[\"a\",\"b\"]}"};
    CHECK(st_write(path, &one, 1, keys, bad_meta, 3, err, sizeof err) == 0, "write: %s", err);
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, "class names"), "names count: %s", err);
    {   // a block past the encoder's depth: the config does not describe the file (io/checkpoint.h)
        char past[64], want[96];
        snprintf(past, sizeof past, "blocks.%d.norm1.weight", cfg->enc.depth);
        snprintf(want, sizeof want, "holds tensor '%s', of a block past the config's depth %d", past, cfg->enc.depth);
        StTensor extra = {past, 1, {3, 0, 0, 0}, m};
        const char *good[3] = {"vitmae", cj, "{\"num_classes\":3,\"classes\":[\"a\",\"b\",\"c\"]}"};
        CHECK(st_write(path, &extra, 1, keys, good, 3, err, sizeof err) == 0, "write: %s", err);
        CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, want), "a block past the depth: %s", err);
    }
    const char *no_head[3] = {"vitmae", cj, "{\"num_classes\":3,\"classes\":[\"a\",\"b\",\"c\"]}"};
    CHECK(st_write(path, &one, 1, keys, no_head, 3, err, sizeof err) == 0, "write: %s", err);
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, "missing tensor"), "missing tensors: %s", err);
    CHECK(clf_ckpt_load_weights(path, &ck, err, sizeof err) != 0 && strstr(err, "missing tensor"),
          "weights only, missing tensors: %s", err);
    StTensor not_head = {"fc_norm.bias", 1, {3, 0, 0, 0}, m};
    CHECK(st_write(path, &not_head, 1, keys, no_head, 2, err, sizeof err) == 0, "write: %s", err);
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, "fine-tune it first"), "no head: %s", err);
    // A head tensor without the metadata: the metadata said missing, not "no head".
    CHECK(st_write(path, &one, 1, keys, no_head, 2, err, sizeof err) == 0, "write: %s", err);
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 &&
          strstr(err, ": not a classifier checkpoint (it holds head tensors, but its metadata 'classifier', the classes they score, is missing)"),
          "a head, no metadata 'classifier': %s", err);
    flip_last_byte(path);   // damaged data are the reason given, before anything else wrong with the file
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, "crc32 mismatch (file damaged)"), "no head, damaged: %s", err);
    CHECK(clf_ckpt_load_weights(path, &ck, err, sizeof err) != 0 && strstr(err, "crc32 mismatch (file damaged)"),
          "weights only, no head, damaged: %s", err);
    // A class named twice, and a head that says it pools otherwise than vitmae computes it, were read
    // without a word (classify then named two classes alike; the pool was taken as avg).
    const char *twice[3] = {"vitmae", cj, "{\"num_classes\":3,\"classes\":[\"b\",\"a\",\"b\"],\"global_pool\":\"avg\"}"};
    CHECK(st_write(path, &one, 1, keys, twice, 3, err, sizeof err) == 0, "write: %s", err);
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, "class 'b' is named twice"), "a class twice: %s", err);
    const char *token[3] = {"vitmae", cj, "{\"num_classes\":3,\"classes\":[\"a\",\"b\",\"c\"],\"global_pool\":\"token\"}"};
    CHECK(st_write(path, &one, 1, keys, token, 3, err, sizeof err) == 0, "write: %s", err);
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, "global_pool token is not supported"),
          "global_pool token: %s", err);
    // num_classes is compared as written: 3.7 with three names was read as 3 (cJSON's valueint).
    const char *fraction[3] = {"vitmae", cj, "{\"num_classes\":3.7,\"classes\":[\"a\",\"b\",\"c\"]}"};
    CHECK(st_write(path, &one, 1, keys, fraction, 3, err, sizeof err) == 0, "write: %s", err);
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, "needs num_classes and as many class names"),
          "num_classes 3.7: %s", err);
    // Nested past the JSON reader's 1000 levels: said so, not "needs num_classes" (1000 levels parse).
    for (int levels = 1000; levels <= 1001; levels++) {
        char deep[2 * 1001 + 64];
        check_json_nested(deep, sizeof deep, "{\"num_classes\":3,\"classes\":", levels);
        const char *deep_meta[3] = {"vitmae", cj, deep};
        const char *want = levels == 1000 ? "needs num_classes and as many class names"
                                          : "metadata 'classifier': JSON nested deeper than 1000 levels (the limit of the JSON reader)";
        CHECK(st_write(path, &one, 1, keys, deep_meta, 3, err, sizeof err) == 0, "write: %s", err);
        err[0] = 0;
        CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, want), "classifier of %d levels: '%s'", levels, err);
    }
    // An empty class name was read and printed as nothing by classify.
    const char *empty_name[3] = {"vitmae", cj, "{\"num_classes\":3,\"classes\":[\"a\",\"\",\"c\"]}"};
    CHECK(st_write(path, &one, 1, keys, empty_name, 3, err, sizeof err) == 0, "write: %s", err);
    err[0] = 0;
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, ": class 1 has an empty name"), "an empty class name: '%s'", err);
    const char *one_class[3] = {"vitmae", cj, "{\"num_classes\":1,\"classes\":[\"a\"]}"};
    CHECK(st_write(path, &one, 1, keys, one_class, 3, err, sizeof err) == 0, "write: %s", err);
    CHECK(clf_ckpt_load(path, &ck, err, sizeof err) != 0 && strstr(err, "num_classes"), "one class: %s", err);
    unlink(path);
    free(cj); free(m); free(v);
    clf_free(c);
}

// The parameter table and count allocate nothing: they built the MAE's whole table in a buffer from
// malloc to pick the encoder's tensors out of it, and when that malloc failed clf_param_table returned
// -1 with the caller's table unwritten and clf_num_params returned 0, which the checkpoint reader took
// for the model's size (it read every tensor into a buffer of 0 floats: `vitmae info` of a classifier
// checkpoint crashed). Checked under an address-space limit that leaves no room for a new mapping
// (none under the sanitizers, whose shadow memory cannot live under one).
static void table_without_memory_checks(void) {
    if (check_sanitized()) { printf("note: the address-space limit check is skipped under the sanitizers\n"); return; }
    ClassifierConfig c;
    memset(&c, 0, sizeof c);
    mae_config_preset(&c.enc, "base");
    c.enc.depth = 256; c.enc.dec_depth = 256; c.num_classes = 10;   // the MAE's table: 6,000 entries, 0.7 MB
    int n = clf_param_table(&c, NULL, 0);
    size_t np = clf_num_params(&c);
    MaeTensor *want = calloc((size_t)n, sizeof *want), *got = calloc((size_t)n, sizeof *got);
    if (!want || !got) { CHECK(0, "out of memory"); free(want); free(got); return; }
    clf_param_table(&c, want, n);
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld", &pages) != 1) pages = 0;
    if (f) fclose(f);
    struct rlimit old, tight;
    getrlimit(RLIMIT_AS, &old);
    tight = old;
    tight.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (64 << 10);
    int set = pages > 0 && (old.rlim_cur == RLIM_INFINITY || tight.rlim_cur < old.rlim_cur) && setrlimit(RLIMIT_AS, &tight) == 0;
    // The limit must refuse a mapping, or the check says nothing. The pointer is kept in a volatile so
    // that the compiler cannot drop the malloc/free pair as unused and take the allocation as made
    // (clang does: there the probe always "succeeded" and the check failed).
    void *volatile room = set ? malloc(1 << 20) : NULL;
    int limited = set && !room;
    free(room);
    int gn = limited ? clf_param_table(&c, got, n) : n;
    size_t gnp = limited ? clf_num_params(&c) : np;
    if (set) setrlimit(RLIMIT_AS, &old);
    CHECK(limited, "the address-space limit refuses a 1 MB allocation (statm %ld pages)", pages);
    CHECK(gn == n && gnp == np, "without memory to spare: %d tensors, %zu floats (want %d, %zu)", gn, gnp, n, np);
    int same = gn == n;
    for (int i = 0; same && i < n; i++)
        same = !strcmp(got[i].name, want[i].name) && got[i].offset == want[i].offset && got[i].numel == want[i].numel;
    CHECK(same, "without memory to spare: the same table");
    free(want);
    free(got);
}

// The memory estimate of the largest classifier a checkpoint holds (65,536 patches, width 16384, 256
// blocks of 16384 heads) at --batch 4096: the attention maps of one block alone, 4096 x 16384 x T x T
// floats, passed 2^64 and the size_t sum wrapped to a small number. Never below the maps (core/model.c).
static void bytes_needed_huge_checks(void) {
    ClassifierConfig c;
    memset(&c, 0, sizeof c);
    mae_config_preset(&c.enc, "base");
    c.enc.img_size = 8192; c.enc.patch_size = 32; c.enc.embed_dim = 16384; c.enc.depth = 256; c.enc.num_heads = 16384;
    c.num_classes = 1000;
    double T = mae_num_patches(&c.enc) + 1.0;
    for (int B = 1; B <= 4096; B *= 8) {
        double maps = (double)B * 16384 * T * T * sizeof(float);   // one block's
        double t = (double)clf_bytes_needed(&c, B), f = (double)clf_bytes_needed_forward(&c, B);
        CHECK(t >= fmin(256 * maps, 0x1p63) && f >= fmin(maps, 0x1p63), "batch %d: %g, %g bytes estimated, below the "
              "attention maps' %g, %g", B, t, f, fmin(256 * maps, 0x1p63), fmin(maps, 0x1p63));
    }
}

// Section 5: each case of the fixture (in.<g>_<n>_<dim> -> out.<g>_<n>_<dim>).
static void posembed_resize_checks(const char *path) {
    char err[512];
    StFile *f = st_open(path, err, sizeof err);
    CHECK(f != NULL, "open %s: %s", path, err);
    if (!f) return;
    static const int cases[][3] = {{3, 5, 12}, {4, 7, 12}, {5, 2, 12}, {2, 3, 7}, {1, 3, 5}, {7, 4, 3}};
    double worst = 0.0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int g = cases[i][0], n = cases[i][1], dim = cases[i][2];
        char in_name[64], out_name[64];
        snprintf(in_name, sizeof in_name, "in.%d_%d_%d", g, n, dim);
        snprintf(out_name, sizeof out_name, "out.%d_%d_%d", g, n, dim);
        const float *in = fixture_need(f, in_name, (size_t)(1 + g * g) * dim);
        size_t numel = (size_t)(1 + n * n) * dim;
        float *got = malloc(numel * sizeof(float));
        if (!in || !got) { free(got); continue; }
        posembed_resize(got, in, g, n, dim);
        worst = fmax(worst, fixture_compare(f, out_name, got, numel, 1e-7, 1e-6));
        CHECK(!memcmp(got, in, (size_t)dim * sizeof(float)), "%s: the CLS row is not copied", out_name);
        free(got);
    }
    printf("%s: %zu resizes, worst |d|/tol %.3f\n", path, sizeof cases / sizeof cases[0], worst);
    st_close(f);
}

static void mix_fixture(const char *path) {
    char err[512];
    StFile *f = open_fixture(path);
    if (!f) return;
    ClassifierConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    const char *cj = st_meta(f, "config"), *ncls = st_meta(f, "classes"), *mj = st_meta(f, "mix"),
               *sm = st_meta(f, "smoothing");
    CHECK(cj && ncls && mj && sm && mae_config_from_json(cj, &cfg.enc, err, sizeof err) == 0, "mix fixture metadata");
    if (!cj || !ncls || !mj || !sm) { st_close(f); return; }
    cfg.num_classes = atoi(ncls);
    int nd; int64_t sh[4];
    const float *lab_f = st_get(f, "labels", &nd, sh);
    CHECK(lab_f && nd == 1 && sh[0] <= 16, "labels [B]");
    if (!lab_f || nd != 1 || sh[0] > 16) { st_close(f); return; }
    int B = (int)sh[0], S = cfg.enc.img_size, C = cfg.enc.in_chans, labels[16], labels2[16];
    for (int b = 0; b < B; b++) labels[b] = (int)lab_f[b];
    Classifier *c = clf_create(&cfg, B, err, sizeof err);
    CHECK(c != NULL, "create: %s", err);
    const float *images = need("images", (size_t)B * S * S * C), *mixed = need("mixed", (size_t)B * S * S * C);
    if (!c || !images || !mixed) { clf_free(c); st_close(f); return; }
    int nt; const MaeTensor *t = clf_tensors(c, &nt);
    for (int k = 0; k < nt; k++) {
        const float *w = need(t[k].name, t[k].numel);
        if (w) memcpy(clf_params(c) + t[k].offset, w, t[k].numel * sizeof(float));
    }
    MixDraw d;
    memset(&d, 0, sizeof d);
    d.cutmix = (int)opt_num(mj, "cutmix");
    if (d.cutmix) {   // the box as the fixture gives it: "box": [y0, y1, x0, x1]
        const char *b = strstr(mj, "\"box\": [");
        CHECK(b && sscanf(b, "\"box\": [%d, %d, %d, %d]", &d.y0, &d.y1, &d.x0, &d.x1) == 4, "the box of %s", path);
    }
    d.lam = opt_num(mj, "lam");
    size_t n = (size_t)B * S * S * C;
    float *x = malloc(n * sizeof(float));
    memcpy(x, images, n * sizeof(float));
    mix_apply(x, B, S, S, C, &d);
    // finetune's call (mix_group) on the same images: its draw's mixing, and the partners' labels that
    // the fixture's targets take (labels.flip(0)).
    MixFlags mf = {d.cutmix ? 0.0f : 0.8f, d.cutmix ? 1.0f : 0.0f, 1.0f, 0.5f};
    MixDraw want;
    mix_draw(&want, &mf, 9, 2, 1, S, S);
    float *y = malloc(n * sizeof(float)), *z = malloc(n * sizeof(float));
    memcpy(y, images, n * sizeof(float));
    memcpy(z, images, n * sizeof(float));
    double lam_g = mix_group(y, labels, labels2, B, S, S, C, &mf, 9, 2, 1);
    mix_apply(z, B, S, S, C, &want);
    int partners_ok = 1;
    for (int b = 0; b < B; b++) partners_ok &= labels2[b] == (int)lab_f[B - 1 - b];
    CHECK(lam_g == want.lam && want.lam != 1.0 && memcmp(y, z, n * sizeof(float)) == 0 && partners_ok,
          "%s: mix_group is its draw's mixing (lam %g, want %g) with the flipped labels (%d)", path, lam_g, want.lam,
          partners_ok);
    free(y); free(z);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) off += memcmp(&x[i], &mixed[i], sizeof(float)) != 0;
    CHECK(off == 0, "%s: the mixed images are torch's bit for bit (%zu of %zu differ)", path, off, n);
    clf_zero_grads(c);
    float loss = (float)clf_forward_mixed(c, x, labels, labels2, d.lam, B, (float)atof(sm), NULL);
    clf_backward(c);
    compare("loss", &loss, 1, 1e-6, 1e-5);
    compare("logits", clf_logits(c), (size_t)B * cfg.num_classes, 1e-5, 1e-4);
    char name[128];
    for (int k = 0; k < nt; k++) {
        snprintf(name, sizeof name, "grad.%s", t[k].name);
        compare(name, clf_grads(c) + t[k].offset, t[k].numel, 1e-5, 1e-4);
    }
    printf("%s: B=%d lam %.6f%s loss %.7f; worst |d|/tol %.3f (%s)\n", path, B, d.lam, d.cutmix ? " (CutMix)" : "",
           (double)loss, worst_ratio, worst_name);
    free(x);
    clf_free(c);
    st_close(f);
}

// The draws: lam ~ Beta(a, a) (mean 1/2, variance 1 / (4 (2a + 1))) over many groups, for small and large
// alphas; CutMix's box inside the image with lam 1 - its share, on the share --mixup-switch-prob of the
// draws; --mixup-prob's share of the groups mixed; the same (seed, step, group) the same draw, another
// group another; off, or --mixup-prob 0, never mixes.
static void mix_draw_checks(void) {
    const double alphas[] = {0.1, 0.8, 1.0, 4.0};
    for (int i = 0; i < 4; i++) {
        MixFlags f = {(float)alphas[i], 0.0f, 1.0f, 0.5f};
        double s1 = 0, s2 = 0;
        int n = 40000, bad = 0;
        for (int g = 0; g < n; g++) {
            MixDraw d;
            mix_draw(&d, &f, 11, (uint64_t)g / 4, (uint64_t)g % 4, 32, 32);
            bad += !(d.lam >= 0.0 && d.lam <= 1.0) || d.cutmix;
            s1 += d.lam; s2 += d.lam * d.lam;
        }
        double mean = s1 / n, var = s2 / n - mean * mean, want = 1.0 / (4.0 * (2.0 * alphas[i] + 1.0));
        CHECK(bad == 0, "Beta(%g): %d draws out of [0, 1] or CutMix", alphas[i], bad);
        CHECK(fabs(mean - 0.5) < 0.01, "Beta(%g): mean %.4f, want 0.5", alphas[i], mean);
        CHECK(fabs(var - want) < 0.05 * want, "Beta(%g): variance %.5f, want %.5f", alphas[i], var, want);
    }
    MixFlags both = {0.8f, 1.0f, 1.0f, 0.2f};
    int cut = 0, n = 4000, bad = 0;
    for (int g = 0; g < n; g++) {
        MixDraw d, e;
        mix_draw(&d, &both, 5, 3, (uint64_t)g, 24, 20);
        mix_draw(&e, &both, 5, 3, (uint64_t)g, 24, 20);
        bad += memcmp(&d, &e, sizeof d) != 0;
        if (!d.cutmix) continue;
        cut++;
        bad += d.y0 < 0 || d.y0 > d.y1 || d.y1 > 24 || d.x0 < 0 || d.x0 > d.x1 || d.x1 > 20 ||
               d.lam != 1.0 - (double)(d.y1 - d.y0) * (d.x1 - d.x0) / (24.0 * 20.0);
    }
    CHECK(bad == 0, "CutMix: %d draws with a box outside the image, a lam not its share, or not repeatable", bad);
    CHECK(cut > 0.17 * n && cut < 0.23 * n, "--mixup-switch-prob 0.2: %d of %d draws CutMix", cut, n);
    MixFlags some = {0.8f, 0.0f, 0.3f, 0.5f};
    int mixed_some = 0;
    for (int g = 0; g < n; g++) {
        MixDraw d;
        mix_draw(&d, &some, 5, 4, (uint64_t)g, 8, 8);
        mixed_some += d.lam != 1.0;
    }
    CHECK(mixed_some > 0.27 * n && mixed_some < 0.33 * n, "--mixup-prob 0.3: %d of %d groups mixed", mixed_some, n);
    MixDraw a, b;
    mix_draw(&a, &both, 5, 3, 0, 24, 20);
    mix_draw(&b, &both, 5, 3, 1, 24, 20);
    CHECK(a.lam != b.lam, "groups 0 and 1 draw alike (%g)", a.lam);
    MixFlags off = {0.0f, 0.0f, 1.0f, 0.5f}, never = {0.8f, 1.0f, 0.0f, 0.5f};
    int mixed = 0;
    for (int g = 0; g < 100; g++) {
        mix_draw(&a, &off, 1, 0, (uint64_t)g, 8, 8);
        mix_draw(&b, &never, 1, 0, (uint64_t)g, 8, 8);
        mixed += a.lam != 1.0 || b.lam != 1.0;
    }
    CHECK(mixed == 0 && !mix_enabled(&off) && !mix_enabled(&never), "mixing off: %d of 100 groups mixed", mixed);
}

static void erase_fixture(const char *path) {
    StFile *f = open_fixture(path);
    if (!f) return;
    int nd, ndz, nds; int64_t sh[4], shz[4], shs[4];
    const float *u = st_get(f, "u", &nd, sh), *sizes = st_get(f, "sizes", &ndz, shz), *sides = st_get(f, "sides", &nds, shs);
    int ok = u && sizes && sides && nd == 2 && sh[1] == 2 && ndz == 2 && shz[1] == 3 && nds == 3 && shs[0] == shz[0] &&
             shs[1] == sh[0] && shs[2] == 3;
    CHECK(ok, "erase fixture: u [N, 2], sizes [M, 3], sides [M, N, 3]");
    if (!ok) { st_close(f); return; }
    int n = (int)sh[0], bad = 0, fits = 0;
    for (int m = 0; m < (int)shz[0]; m++) {
        int H = (int)sizes[m * 3], W = (int)sizes[m * 3 + 1], count = (int)sizes[m * 3 + 2];
        for (int i = 0; i < n; i++) {
            int h, w, fit = erase_sides(u[i * 2], u[i * 2 + 1], H, W, count, &h, &w);
            const float *want = sides + ((size_t)m * n + i) * 3;
            fits += fit;
            if (h == (int)want[0] && w == (int)want[1] && fit == (int)want[2]) continue;
            if (bad++ < 5)
                fprintf(stderr, "  %dx%d count %d, draws (%.9g, %.9g): sides %d x %d fits %d, timm's %g x %g fits %g\n", H, W,
                        count, u[i * 2], u[i * 2 + 1], h, w, fit, want[0], want[1], want[2]);
        }
    }
    CHECK(bad == 0 && fits > 0, "random erasing's sides: %d of %lld draws other than timm's (%d fit)", bad,
          (long long)(shz[0] * n), fits);
    st_close(f);
}

// Up to max numbers of the JSON list in a metadata value ("[1, 7, 8]"), into out; how many.
static int meta_list(const char *json, double *out, int max) {
    int n = 0;
    const char *p = json ? strchr(json, '[') : NULL;
    while (p && *p != ']' && n < max) {
        char *end;
        double v = strtod(p + 1, &end);
        if (end == p + 1) break;
        out[n++] = v;
        p = end;
    }
    return n;
}

// The model EMA's update (core/optim.h ema_update; finetune --model-ema) against torch's lerp in float32
// (tools/reference_classifier.py make_lerp_fixture): for each decay, both of lerp's formulas, every
// value's bits equal torch's, on pieces of odd lengths (ema_update called a piece at a time, so that its
// vector loop's tails are taken) with 1 thread and 3, and on the whole array at once.
static void ema_lerp_fixture(const char *path) {
    StFile *f = open_fixture(path);
    if (!f) return;
    double sizes[32], decays[16];
    int ns = meta_list(st_meta(f, "sizes"), sizes, 32), nd = meta_list(st_meta(f, "decays"), decays, 16), nsm = 0, big = 0;
    size_t n = 0;
    for (int i = 0; i < ns; i++) n += (size_t)sizes[i];
    const float *ema = need("ema", n), *w = need("w", n);
    CHECK(ns >= 8 && nd >= 6, "lerp fixture: sizes %d, decays %d", ns, nd);
    if (!ema || !w || ns < 8 || nd < 6) { st_close(f); return; }
    float *got = malloc(n * sizeof(float));
    int threads = omp_get_max_threads();
    size_t bad_all = 0;
    for (int k = 0; k < nd; k++) {
        char name[32];
        snprintf(name, sizeof name, "lerp.%d", k);
        const float *want = need(name, n);
        if (!want) continue;
        float wt = (float)(1.0 - decays[k]);
        nsm += fabsf(wt) < 0.5f;
        big += !(fabsf(wt) < 0.5f);
        for (int way = 0; way < 3; way++) {   // pieces on 1 thread, pieces on 3, the whole array on 3
            omp_set_num_threads(way ? 3 : 1);
            memcpy(got, ema, n * sizeof(float));
            if (way == 2) ema_update(got, w, n, decays[k]);
            for (size_t off = 0, i = 0; way < 2 && (int)i < ns; off += (size_t)sizes[i++])
                ema_update(got + off, w + off, (size_t)sizes[i], decays[k]);
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < n; i++)
                if (memcmp(&got[i], &want[i], sizeof(float)) && !bad++) first = i;
            bad_all += bad;
            CHECK(bad == 0, "ema_update, decay %.17g (lerp weight %.9g), %s: %zu of %zu values other than torch.lerp's bits "
                  "(first at %zu: %a, torch %a)", decays[k], (double)wt,
                  way == 2 ? "the whole array, 3 threads" : way ? "odd pieces, 3 threads" : "odd pieces, 1 thread", bad, n,
                  first, (double)got[first], (double)want[first]);
        }
    }
    CHECK(nsm >= 2 && big >= 2, "lerp fixture: %d weights below 0.5 and %d from it up (2 of each at least)", nsm, big);
    printf("%s: ema_update on %zu values in %d pieces, %d decays, 1 thread and 3: %zu values other than torch.lerp's bits\n",
           path, n, ns, nd, bad_all);
    omp_set_num_threads(threads);
    free(got);
    st_close(f);
}

// Image k of a test batch: pixel i is i * 0.001 + k (each image and pixel its own value).
static void erase_test_image(float *img, size_t n, int k) {
    for (size_t i = 0; i < n; i++) img[i] = (float)i * 0.001f + (float)k;
}

static void erase_draw_checks(void) {
    enum { H = 20, W = 24, C = 3, N = 4000 };
    static float img[H * W * C];
    EraseFlags pix = {0.25f, ERASE_PIXEL, 1};
    int erased = 0, bad = 0, bad_out = 0;
    double s1 = 0, s2 = 0, nfill = 0;
    for (int k = 0; k < N; k++) {
        EraseBox b[ERASE_COUNT_MAX], b2[ERASE_COUNT_MAX];
        erase_test_image(img, sizeof img / sizeof img[0], k);
        int nb = erase_image(img, H, W, C, &pix, 13, (uint64_t)k / 8, (uint64_t)k % 8, b);
        erased += nb > 0;
        bad += nb < 0 || nb > 1 || erase_image(NULL, H, W, C, &(EraseFlags){0.0f, ERASE_PIXEL, 1}, 13, 0, 0, NULL) != 0;
        if (nb != 1) continue;
        bad += b[0].y < 0 || b[0].x < 0 || b[0].h >= H || b[0].w >= W || b[0].y + b[0].h > H || b[0].x + b[0].w > W;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                for (int c = 0; c < C; c++) {
                    size_t i = ((size_t)y * W + x) * C + c;
                    int in = y >= b[0].y && y < b[0].y + b[0].h && x >= b[0].x && x < b[0].x + b[0].w;
                    if (!in) { bad_out += img[i] != (float)i * 0.001f + (float)k; continue; }
                    s1 += img[i]; s2 += (double)img[i] * img[i]; nfill++;
                }
        // the same (seed, step, image) draws the same box and the same noise
        static float again[H * W * C];
        erase_test_image(again, sizeof again / sizeof again[0], k);
        bad += erase_image(again, H, W, C, &pix, 13, (uint64_t)k / 8, (uint64_t)k % 8, b2) != 1 ||
               memcmp(b, b2, sizeof b[0]) != 0 || memcmp(img, again, sizeof img) != 0;
    }
    CHECK(erased > 0.23 * N && erased < 0.27 * N, "--reprob 0.25: %d of %d images erased", erased, N);
    CHECK(bad == 0, "random erasing: %d images with more than 1 box, a box outside the image, or not repeatable", bad);
    CHECK(bad_out == 0, "random erasing: %d pixels outside the boxes changed", bad_out);
    double mean = s1 / nfill, var = s2 / nfill - mean * mean;
    CHECK(nfill > 1e5 && fabs(mean) < 0.01 && fabs(var - 1.0) < 0.02, "--remode pixel: %.0f values of mean %.4f, variance %.4f",
          nfill, mean, var);
    // --remode rand: one value a channel over the box; const: zeros; --recount 3: 1 to 3 boxes, each count
    // about a third of the images (a box of 1/3 of the image at most, over the count, finds room in ten tries)
    int per_box[4] = {0}, bad_fill = 0;
    for (int k = 0; k < 600; k++) {
        int mode = k % 2 ? ERASE_RAND : ERASE_CONST;
        EraseFlags fl = {1.0f, mode, 3};
        EraseBox b[ERASE_COUNT_MAX];
        erase_test_image(img, sizeof img / sizeof img[0], k);
        int nb = erase_image(img, H, W, C, &fl, 17, 0, (uint64_t)k, b);
        if (nb < 1 || nb > 3) { bad_fill++; continue; }
        per_box[nb]++;
        const EraseBox *l = &b[nb - 1];   // the last box drawn: nothing painted over it
        for (int y = l->y; y < l->y + l->h; y++)
            for (int x = l->x; x < l->x + l->w; x++)
                for (int c = 0; c < C; c++) {
                    float v = img[((size_t)y * W + x) * C + c], first = img[((size_t)l->y * W + l->x) * C + c];
                    bad_fill += mode == ERASE_CONST ? v != 0.0f : v != first;
                }
        if (mode == ERASE_RAND && l->h > 0 && l->w > 0) {
            const float *p = img + ((size_t)l->y * W + l->x) * C;
            bad_fill += p[0] == p[1] && p[1] == p[2];   // three channels drawn alike
        }
    }
    CHECK(bad_fill == 0, "--remode rand / const: %d boxes not filled with one value a channel / zeros", bad_fill);
    CHECK(per_box[1] > 150 && per_box[2] > 150 && per_box[3] > 150, "--recount 3: %d, %d, %d images with 1, 2, 3 boxes",
          per_box[1], per_box[2], per_box[3]);
    EraseBox a, b;
    erase_test_image(img, sizeof img / sizeof img[0], 0);
    EraseFlags all = {1.0f, ERASE_PIXEL, 1};
    int na = erase_image(img, H, W, C, &all, 5, 3, 0, &a), nb = erase_image(img, H, W, C, &all, 5, 3, 1, &b);
    CHECK(na == 1 && nb == 1 && memcmp(&a, &b, sizeof a) != 0, "images 0 and 1 draw the same box");
    CHECK(!erase_enabled(&(EraseFlags){0.0f, ERASE_PIXEL, 1}) && erase_enabled(&all), "erase_enabled");
}

static void label_rank_checks(void) {
    const float l[6] = {0.5f, 2.0f, 2.0f, -1.0f, 0.5f, 3.0f};
    const int want[6] = {3, 1, 2, 5, 4, 0};
    int bad = 0;
    for (int k = 0; k < 6; k++) bad += clf_label_rank(l, 6, k) != want[k];
    const float one[1] = {7.0f};
    CHECK(bad == 0 && clf_label_rank(one, 1, 0) == 0, "clf_label_rank: %d of 6 labels ranked other than 3 1 2 5 4 0", bad);
}

int main(int argc, char **argv) {
    table_without_memory_checks();
    bytes_needed_huge_checks();
    const char *root = getenv("VITMAE_ROOT");
    char path[1024];
    if (argc > 1) {
        for (int i = 1; i < argc; i++) run_fixture(argv[i]);
        return check_done();
    }
    const char *names[] = {"classifier_rgb.safetensors", "classifier_grey.safetensors", "classifier_edge.safetensors"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/tests/fixtures/%s", root && *root ? root : ".", names[i]);
        run_fixture(path);
    }
    const char *mixes[] = {"classifier_mixup.safetensors", "classifier_cutmix.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/tests/fixtures/%s", root && *root ? root : ".", mixes[i]);
        mix_fixture(path);
    }
    mix_draw_checks();
    snprintf(path, sizeof path, "%s/tests/fixtures/erase_sides.safetensors", root && *root ? root : ".");
    erase_fixture(path);
    erase_draw_checks();
    label_rank_checks();
    snprintf(path, sizeof path, "%s/tests/fixtures/ema_lerp.safetensors", root && *root ? root : ".");
    ema_lerp_fixture(path);
    snprintf(path, sizeof path, "%s/tests/fixtures/posembed_resize.safetensors", root && *root ? root : ".");
    posembed_resize_checks(path);
    // The tiny models below run thousands of short parallel regions; one thread keeps the test fast on
    // a busy machine (results do not depend on the thread count; tests/cli_finetune.sh checks that).
    omp_set_num_threads(1);
    gradcheck(1, 1);
    gradcheck(0, 2);
    drop_path_checks();
    forward_only_checks();
    checkpoint_checks();
    ema_checkpoint_checks();
    return check_done();
}
