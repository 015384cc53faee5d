// Model and optimiser behaviour that PyTorch parity does not cover: bitwise thread independence,
// masking semantics, initialisation statistics, schedule and clipping, and that training learns.
#include <omp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "core/encoder.h"
#include "core/model.h"
#include "core/optim.h"
#include "kernels/gemm.h"

static MaeConfig small_config(void) {
    MaeConfig c;
    mae_config_preset(&c, "tiny");
    c.img_size = 16; c.patch_size = 4; c.in_chans = 3;
    c.embed_dim = 24; c.depth = 2; c.num_heads = 3;
    c.dec_embed_dim = 16; c.dec_depth = 1; c.dec_num_heads = 2;
    c.norm_pix_loss = 1;
    return c;
}

static void fill_batch(Rng *r, const MaeConfig *c, int B, float *img, int *keep, int K) {
    int L = mae_num_patches(c), n = B * c->img_size * c->img_size * c->in_chans;
    for (int i = 0; i < n; i++) img[i] = rng_normal(r, 0.0f, 1.0f);
    float *noise = malloc(sizeof(float) * B * L);
    for (int i = 0; i < B * L; i++) noise[i] = rng_uniform(r);
    mae_masking_from_noise(noise, B, L, K, keep);
    free(noise);
}

// One training step with `threads` threads; returns loss, copies grads and updated params out.
static float one_step(int threads, float *grads_out, float *params_out) {
    omp_set_num_threads(threads);
    MaeConfig c = small_config();
    int B = 5, L = mae_num_patches(&c), K = mae_len_keep(&c, 0.75f);
    char err[256];
    Mae *m = mae_create(&c, B, err, sizeof err);
    Rng r;
    rng_seed(&r, 7);
    mae_init_weights(m, &r);
    float *img = malloc(sizeof(float) * B * 16 * 16 * 3);
    int *keep = malloc(sizeof(int) * B * L);
    fill_batch(&r, &c, B, img, keep, K);
    size_t np = mae_num_params(&c);
    float *mo = calloc(np, sizeof(float)), *v = calloc(np, sizeof(float));
    int nt; const MaeTensor *t = mae_tensors(m, &nt);
    mae_zero_grads(m);
    float loss = mae_train_forward(m, img, keep, B, K);
    mae_backward(m);
    memcpy(grads_out, mae_grads(m), np * sizeof(float));
    grad_clip(t, nt, mae_grads(m), 0.5f);
    adamw_step(t, nt, mae_params(m), mae_grads(m), mo, v, 1e-3f, 0.05f, 1);
    memcpy(params_out, mae_params(m), np * sizeof(float));
    free(mo); free(v); free(img); free(keep);
    mae_free(m);
    return loss;
}

static void test_threads_bitwise(void) {
    MaeConfig c = small_config();
    size_t np = mae_num_params(&c);
    float *g1 = malloc(np * 4), *p1 = malloc(np * 4), *g2 = malloc(np * 4), *p2 = malloc(np * 4);
    float l1 = one_step(1, g1, p1);
    for (int th = 2; th <= 3; th++) {
        float l2 = one_step(th, g2, p2);
        CHECK(memcmp(&l1, &l2, sizeof l1) == 0, "loss with 1 and %d threads: %.9g vs %.9g", th, l1, l2);
        CHECK(memcmp(g1, g2, np * 4) == 0, "gradients bitwise equal with 1 and %d threads", th);
        CHECK(memcmp(p1, p2, np * 4) == 0, "weights after AdamW bitwise equal with 1 and %d threads", th);
    }
    omp_set_num_threads(omp_get_num_procs());
    free(g1); free(p1); free(g2); free(p2);
}

// The forward in passes of a few images (core/encoder.h, block_forward): the rule, and the same bits
// as one pass over all images for the loss, every prediction and every gradient (the backward reads the
// activations the passes wrote), with passes that divide the batch and passes that do not, on 1 and 2
// threads.
static void test_forward_passes(void) {
    long l2 = 1L << 20;
    CHECK(stack_forward_images(32, 65, 128, 512, l2, 1) == 3, "tiny decoder, 1 MiB L2: 3 images a pass (%d)",
          stack_forward_images(32, 65, 128, 512, l2, 1));
    CHECK(stack_forward_images(32, 65, 128, 512, 2 * l2, 1) == 7, "tiny decoder, 2 MiB L2: 7 images a pass");
    CHECK(stack_forward_images(32, 17, 192, 768, l2, 1) == 32,
          "tiny encoder: 9 images are 153 rows, fewer than C = 192: one pass");
    CHECK(stack_forward_images(4, 197, 512, 2048, l2, 1) == 4, "ViT-B decoder: one image fills more than half of L2");
    CHECK(stack_forward_images(2, 65, 128, 512, l2, 1) == 2, "2 images, fewer than a pass holds: one pass");
    CHECK(stack_forward_images(32, 65, 128, 512, l2, 2) == 32, "a team of 2 threads: one pass");
    CHECK(stack_forward_images(32, 65, 128, 512, 0, 1) == 32, "L2 unknown: one pass");
    stack_forward_force_images(5);
    CHECK(stack_forward_images(32, 65, 128, 512, l2, 2) == 5, "forced: 5 images a pass on any team");
    CHECK(stack_forward_images(4, 65, 128, 512, l2, 2) == 4, "forced past B: B");
    stack_forward_force_images(0);
    CHECK(stack_forward_images(32, 65, 128, 512, l2, 2) == 32, "force 0: the rule again");

    MaeConfig c = small_config();
    size_t np = mae_num_params(&c);
    int B = 5;
    float *g0 = malloc(np * 4), *p0 = malloc(np * 4), *g = malloc(np * 4), *p = malloc(np * 4);
    float l0 = one_step(1, g0, p0);
    int images[3] = {1, 2, 3};
    for (int th = 1; th <= 2; th++)
        for (int i = 0; i < 3; i++) {
            stack_forward_force_images(images[i]);
            float l = one_step(th, g, p);
            stack_forward_force_images(0);
            CHECK(!memcmp(&l, &l0, sizeof l), "passes of %d of %d images, %d thread(s): loss %.9g vs %.9g",
                  images[i], B, th, l, l0);
            CHECK(!memcmp(g, g0, np * 4), "passes of %d of %d images, %d thread(s): gradients bitwise",
                  images[i], B, th);
            CHECK(!memcmp(p, p0, np * 4), "passes of %d of %d images, %d thread(s): weights after AdamW bitwise",
                  images[i], B, th);
        }
    omp_set_num_threads(omp_get_num_procs());
    free(g0); free(p0); free(g); free(p);
}

static void test_masking(void) {
    // argsort ascending, stable on ties, first len_keep in that order, per image.
    const float noise[2 * 5] = {0.5f, 0.1f, 0.9f, 0.1f, 0.3f,
                                0.0f, 0.8f, 0.2f, 0.7f, 0.6f};
    int keep[2 * 3];
    mae_masking_from_noise(noise, 2, 5, 3, keep);
    const int want[6] = {1, 3, 4, 0, 2, 4};
    CHECK(!memcmp(keep, want, sizeof want), "ids_keep %d %d %d / %d %d %d", keep[0], keep[1], keep[2],
          keep[3], keep[4], keep[5]);
    // Larger random case against a selection by counting: rank(i) = #{j: n_j < n_i or (= and j < i)}.
    Rng r; rng_seed(&r, 3);
    enum { L = 64, K = 16 };
    float nz[L]; int ids[K], ok = 1;
    for (int i = 0; i < L; i++) nz[i] = (float)rng_below(&r, 20);   // many ties
    mae_masking_from_noise(nz, 1, L, K, ids);
    for (int i = 0; i < L; i++) {
        int rank = 0;
        for (int j = 0; j < L; j++) rank += nz[j] < nz[i] || (nz[j] == nz[i] && j < i);
        if (rank < K) ok &= ids[rank] == i;
    }
    CHECK(ok, "masking equals a stable argsort");
    CHECK(mae_len_keep(&(MaeConfig){.img_size = 224, .patch_size = 16}, 0.75f) == 49, "len_keep 196*0.25");
}

static void test_init(void) {
    MaeConfig c;
    mae_config_preset(&c, "tiny");
    c.img_size = 32; c.patch_size = 4;
    char err[256];
    Mae *m = mae_create(&c, 1, err, sizeof err);
    CHECK(m != NULL, "create: %s", err);
    Rng r; rng_seed(&r, 11);
    mae_init_weights(m, &r);
    int nt; const MaeTensor *t = mae_tensors(m, &nt);
    float *p = mae_params(m);
    for (int k = 0; k < nt; k++) {
        const float *w = p + t[k].offset;
        size_t n = t[k].numel;
        double s = 0, s2 = 0, mx = 0;
        for (size_t i = 0; i < n; i++) { s += w[i]; s2 += (double)w[i] * w[i]; mx = fmax(mx, fabs(w[i])); }
        double mean = s / n, sd = sqrt(s2 / n - mean * mean);
        const char *nm = t[k].name;
        size_t len = strlen(nm);
        if (!strcmp(nm, "cls_token") || !strcmp(nm, "mask_token")) {
            CHECK(fabs(sd - 0.02) < 0.02 * 0.25 && fabs(mean) < 0.006, "%s std %.4f mean %.4f", nm, sd, mean);
        } else if (strstr(nm, "pos_embed")) {
            float *tab = malloc(sizeof(float) * n);
            mae_sincos_pos_embed(tab, c.img_size / c.patch_size, t[k].shape[2]);
            CHECK(!memcmp(tab, w, n * 4), "%s is the sin-cos table", nm);
            free(tab);
        } else if (t[k].ndim >= 2) {
            double fan_out = t[k].shape[0], fan_in = (double)n / fan_out, bound = sqrt(6.0 / (fan_in + fan_out));
            CHECK(mx <= bound && mx > 0.98 * bound, "%s max %.5f bound %.5f", nm, mx, bound);
            CHECK(fabs(sd - bound / sqrt(3.0)) < 0.05 * bound / sqrt(3.0), "%s std %.5f want %.5f", nm, sd, bound / sqrt(3.0));
        } else if (len > 7 && !strcmp(nm + len - 7, ".weight")) {
            CHECK(mean == 1.0 && sd == 0.0, "%s LayerNorm weight 1", nm);
        } else {
            CHECK(mean == 0.0 && sd == 0.0, "%s bias 0", nm);
        }
    }
    // Sin-cos table facts: CLS row zero; patch (y, x) = (0, 1): first quarter sin(x * 1) at k = 0,
    // second quarter cos(x), third sin(y) = 0, fourth cos(y) = 1; omega_k = 10000^(-k/(D/4)).
    const float *pos = mae_tensor(m, "pos_embed");
    int D = c.embed_dim, q = D / 4;
    CHECK(pos[0] == 0.0f && pos[D - 1] == 0.0f, "CLS row zero");
    const float *row = pos + (size_t)(1 + 1) * D;   // patch (0, 1)
    CHECK_CLOSE(row[0], sin(1.0), 1e-7, 0, "sin(x)");
    CHECK_CLOSE(row[q], cos(1.0), 1e-7, 0, "cos(x)");
    CHECK_CLOSE(row[2 * q], 0.0, 1e-7, 0, "sin(y)");
    CHECK_CLOSE(row[3 * q + 1], 1.0, 1e-7, 0, "cos(y)");
    row = pos + (size_t)(1 + 8 * 2 + 3) * D;      // patch (y=2, x=3) in the 8x8 grid
    CHECK_CLOSE(row[1], sin(3.0 * pow(10000.0, -1.0 / q)), 1e-7, 0, "sin(x omega_1)");
    CHECK_CLOSE(row[2 * q + 1], sin(2.0 * pow(10000.0, -1.0 / q)), 1e-7, 0, "sin(y omega_1)");
    size_t need = mae_bytes_needed(&c, 1), np = mae_num_params(&c);
    CHECK(need > 4 * np * sizeof(float), "bytes needed %zu", need);
    // The weights' packed copies a training step keeps (kernels/gemm.h) count: two floats a parameter
    // beside its own, its gradient's and AdamW's two moments' (a parameter-heavy step peaked at 1.5x the
    // estimate without them: cli_memory.sh, bench's memory_ratio).
    CHECK(mae_train_shared_bytes(&c) == 6 * np * sizeof(float) && need >= mae_train_shared_bytes(&c) &&
          need - mae_bytes_needed_forward(&c, 1) > 5 * np * sizeof(float),
          "shared bytes %zu for %zu parameters", mae_train_shared_bytes(&c), np);
    CHECK(mae_bytes_needed(&c, 64) > need, "bytes grow with the batch");
    mae_free(m);
}

static void test_schedule_and_clip(void) {
    CHECK(lr_at(0, 100, 10, 1e-3f, 0.0f) == 0.0f, "lr 0 at step 0 of warm-up");
    CHECK_CLOSE(lr_at(5, 100, 10, 1e-3f, 0.0f), 5e-4, 1e-10, 0, "half way through warm-up");
    CHECK_CLOSE(lr_at(10, 100, 10, 1e-3f, 1e-5f), 1e-3, 1e-10, 0, "peak after warm-up");
    CHECK_CLOSE(lr_at(55, 100, 10, 1e-3f, 0.0f), 5e-4, 1e-9, 0, "half-cosine midpoint");
    CHECK_CLOSE(lr_at(100, 100, 10, 1e-3f, 1e-5f), 1e-5, 1e-10, 0, "min_lr at the end");
    MaeConfig c = small_config();
    MaeTensor t[128];
    int nt = mae_param_table(&c, t, 128);
    size_t np = mae_num_params(&c);
    float *g = malloc(np * 4);
    Rng r; rng_seed(&r, 5);
    for (size_t i = 0; i < np; i++) g[i] = rng_normal(&r, 0.0f, 1.0f);
    double s = 0;
    for (size_t i = 0; i < np; i++) s += (double)g[i] * g[i];
    CHECK_CLOSE(grad_global_norm(t, nt, g), sqrt(s), 0, 1e-6, "global norm");
    float before = grad_clip(t, nt, g, 1.0f);
    CHECK_CLOSE(before, sqrt(s), 0, 1e-6, "clip returns the norm before");
    CHECK_CLOSE(grad_global_norm(t, nt, g), 1.0, 0, 1e-5, "clipped to max_norm");
    // Frozen tensors: untouched by AdamW.
    c.pos_learned = 0;
    nt = mae_param_table(&c, t, 128);
    float *p = calloc(np, 4), *mo = calloc(np, 4), *v = calloc(np, 4);
    adamw_step(t, nt, p, g, mo, v, 1e-2f, 0.05f, 1);
    int frozen_same = 1, moved = 0;
    for (int k = 0; k < nt; k++)
        for (size_t i = 0; i < t[k].numel; i++) {
            if (!t[k].trainable) frozen_same &= p[t[k].offset + i] == 0.0f;
            else moved += p[t[k].offset + i] != 0.0f;
        }
    CHECK(frozen_same, "frozen position tables untouched");
    CHECK(moved > 0, "trainable weights moved");
    free(g); free(p); free(mo); free(v);
}

static void test_learns(void) {
    MaeConfig c = small_config();
    c.norm_pix_loss = 0;
    int B = 4, L = mae_num_patches(&c), K = mae_len_keep(&c, 0.75f);
    char err[256];
    Mae *m = mae_create(&c, B, err, sizeof err);
    Rng r; rng_seed(&r, 21);
    mae_init_weights(m, &r);
    float *img = malloc(sizeof(float) * B * 16 * 16 * 3);
    int *keep = malloc(sizeof(int) * B * L);
    fill_batch(&r, &c, B, img, keep, K);
    // Smooth images (a few gradients per channel) so there is structure to learn.
    for (int b = 0; b < B; b++)
        for (int y = 0; y < 16; y++)
            for (int x = 0; x < 16; x++)
                for (int ch = 0; ch < 3; ch++)
                    img[((b * 16 + y) * 16 + x) * 3 + ch] = sinf(0.3f * (b + 1) * x + 0.2f * ch * y);
    size_t np = mae_num_params(&c);
    float *mo = calloc(np, 4), *v = calloc(np, 4), first = 0, last = 0;
    int nt; const MaeTensor *t = mae_tensors(m, &nt);
    for (int s = 0; s < 30; s++) {
        mae_zero_grads(m);
        float loss = mae_train_forward(m, img, keep, B, K);
        mae_backward(m);
        adamw_step(t, nt, mae_params(m), mae_grads(m), mo, v, lr_at(s, 30, 3, 5e-3f, 0.0f), 0.05f, s + 1);
        if (s == 0) first = loss;
        last = loss;
    }
    printf("loss over 30 steps: %.4f -> %.4f\n", first, last);
    CHECK(last < 0.6f * first, "loss falls by 40%% in 30 steps: %.4f -> %.4f", first, last);
    // Nothing masked: loss 0, no gradient.
    mae_zero_grads(m);
    int *all = malloc(sizeof(int) * B * L);
    for (int i = 0; i < B * L; i++) all[i] = i % L;
    CHECK(mae_forward(m, img, all, B, L) == 0.0f, "no removed patch, loss 0");
    mae_backward(m);
    int zero = 1;
    for (size_t i = 0; i < np; i++) zero &= mae_grads(m)[i] == 0.0f;
    CHECK(zero, "no removed patch, no gradient");
    // Encoder on every patch: attention rows are distributions.
    mae_forward_encoder(m, img, all, B, L);
    const float *att = mae_attention(m, c.depth - 1);
    double worst = 0;
    for (int row = 0; row < B * c.num_heads * (1 + L); row++) {
        double s = 0;
        for (int j = 0; j <= L; j++) s += att[(size_t)row * (1 + L) + j];
        worst = fmax(worst, fabs(s - 1.0));
    }
    CHECK(worst < 1e-5, "attention rows sum to 1 (worst %.3g)", worst);
    CHECK(mae_attention(m, c.depth) == NULL, "no such layer");
    free(all); free(mo); free(v); free(img); free(keep);
    mae_free(m);
}

// mae_backward_set over a buffer of NaNs: bitwise what mae_zero_grads + mae_backward leave (every
// element written, none read), with learned and with fixed position tables; a zero gradient when no
// patch is removed. At 1 and 3 threads.
static void test_backward_set(void) {
    for (int variant = 0; variant < 4; variant++) {
        int pos_learned = variant & 1, threads = variant & 2 ? 3 : 1;
        omp_set_num_threads(threads);
        MaeConfig c = small_config();
        c.pos_learned = pos_learned;
        int B = 3, L = mae_num_patches(&c), K = mae_len_keep(&c, 0.75f);
        char err[256];
        Mae *m = mae_create(&c, B, err, sizeof err);
        Rng r;
        rng_seed(&r, 31 + variant);
        mae_init_weights(m, &r);
        float *img = malloc(sizeof(float) * B * 16 * 16 * 3);
        int *keep = malloc(sizeof(int) * B * L), *all = malloc(sizeof(int) * B * L);
        fill_batch(&r, &c, B, img, keep, K);
        for (int i = 0; i < B * L; i++) all[i] = i % L;
        size_t np = mae_num_params(&c);
        float *set = malloc(np * 4), *added = malloc(np * 4);
        for (size_t i = 0; i < np; i++) set[i] = NAN;
        mae_train_forward(m, img, keep, B, K);
        float *own = mae_use_grads(m, added);
        mae_zero_grads(m);
        mae_backward(m);
        mae_use_grads(m, set);
        mae_backward_set(m);
        CHECK(!memcmp(set, added, np * 4), "backward_set = zero + backward, bitwise (pos_learned %d, %d threads)",
              pos_learned, threads);
        for (size_t i = 0; i < np; i++) set[i] = NAN;
        mae_forward(m, img, all, B, L);
        mae_backward_set(m);
        int zero = 1;
        for (size_t i = 0; i < np; i++) zero &= set[i] == 0.0f;
        CHECK(zero, "backward_set with no removed patch: a zero gradient (pos_learned %d)", pos_learned);
        mae_use_grads(m, own);
        free(img); free(keep); free(all); free(set); free(added);
        mae_free(m);
    }
}

// The pairwise tree over [l, r) as adds (node [l, r) into l); apart: the root's add left out.
static void pair_plan(SumTree *t, int l, int r, int apart) {
    if (r - l == 1) return;
    int m = l + (r - l) / 2;
    pair_plan(t, l, m, 0);
    pair_plan(t, m, r, 0);
    if (apart) return;
    t->dst[t->nadd] = (unsigned char)l;
    t->src[t->nadd++] = (unsigned char)m;
}

// Gradient groups at once: one mae_forward over n groups' images, then mae_group_losses and
// mae_backward_set_groups give each group bitwise the loss and gradient of a forward and backward of its
// images alone (3 images per group, 2 and 4 groups, fixed and learned position tables, 1 and 3 threads).
// A zero gradient per group when no patch is removed.
static void test_groups_at_once(void) {
    // Groups of 3 images (12 mask tokens each of 16 positions): the first decoder block's backward takes
    // the mask tokens' rows once (core/encoder.h, Stack.dup_src); groups of 1 image: its forward over
    // the groups at once does, but the backward does not, nor the forward of one group alone.
    for (int variant = 0; variant < 16; variant++) {
        int pos_learned = variant & 1, threads = variant & 2 ? 3 : 1, n = variant & 4 ? 4 : 2;
        int Bg = variant & 8 ? 1 : 3, B = n * Bg;
        omp_set_num_threads(threads);
        MaeConfig c = small_config();
        c.pos_learned = pos_learned;
        int L = mae_num_patches(&c), K = mae_len_keep(&c, 0.75f);
        char err[256];
        Mae *m = mae_create(&c, B, err, sizeof err);
        Rng r;
        rng_seed(&r, 57 + variant);
        mae_init_weights(m, &r);
        size_t per = (size_t)c.img_size * c.img_size * c.in_chans, np = mae_num_params(&c);
        float *img = malloc(sizeof(float) * B * per);
        int *keep = malloc(sizeof(int) * B * L), *all = malloc(sizeof(int) * B * L);
        fill_batch(&r, &c, B, img, keep, K);
        for (int i = 0; i < B * L; i++) all[i] = i % L;
        float *alone = malloc(np * 4 * n), *at_once = malloc(np * 4 * n), *bufs[4], loss_alone[4], loss_once[4];
        float *own = mae_use_grads(m, NULL);
        for (int g = 0; g < n; g++) {
            bufs[g] = at_once + (size_t)g * np;
            mae_use_grads(m, alone + (size_t)g * np);
            loss_alone[g] = mae_train_forward(m, img + (size_t)g * Bg * per, keep + (size_t)g * Bg * K, Bg, K);
            mae_backward_set(m);
        }
        mae_use_grads(m, own);
        for (size_t i = 0; i < np * n; i++) at_once[i] = NAN;
        mae_train_forward(m, img, keep, B, K);
        mae_group_losses(m, n, loss_once);
        mae_backward_set_groups(m, bufs, n, NULL);
        for (int g = 0; g < n; g++) {
            CHECK(!memcmp(&loss_alone[g], &loss_once[g], sizeof(float)), "group %d of %d: loss %.9g alone, %.9g at once",
                  g, n, loss_alone[g], loss_once[g]);
            size_t diff = 0;
            for (size_t i = 0; i < np; i++) diff += memcmp(&alone[g * np + i], &bufs[g][i], 4) != 0;
            CHECK(diff == 0, "group %d of %d at once: gradient bitwise that of its images alone (%zu of %zu differ; "
                  "pos_learned %d, %d threads)", g, n, diff, np, pos_learned, threads);
        }
        // Summed in a tree inside the backward: the live buffers bitwise the per-group gradients summed
        // by sumtree_apply. Plans: the whole pairwise tree scaled by 1 / n; the root's add left apart.
        for (int plan = 0; plan < 2; plan++) {
            SumTree t;
            memset(&t, 0, sizeof t);
            t.n = n;
            pair_plan(&t, 0, n, plan == 1);
            t.scale = plan == 0 ? 1.0f / (float)n : 1.0f;
            sumtree_finish(&t);
            float *want = malloc(np * 4 * n), *wbuf[4];
            memcpy(want, alone, np * 4 * n);
            for (int g = 0; g < n; g++) wbuf[g] = want + (size_t)g * np;
            sumtree_apply(&t, wbuf, 0, np);
            for (size_t i = 0; i < np * n; i++) at_once[i] = NAN;
            mae_train_forward(m, img, keep, B, K);
            mae_backward_set_groups(m, bufs, n, &t);
            for (int g = 0; g < n; g++) {
                if (!t.live[g]) continue;
                size_t diff = 0;
                for (size_t i = 0; i < np; i++) diff += memcmp(&wbuf[g][i], &bufs[g][i], 4) != 0;
                CHECK(diff == 0, "%d groups summed in the tree (plan %d), buffer %d: bitwise the per-group gradients "
                      "summed (%zu of %zu differ; %d threads)", n, plan, g, diff, np, threads);
            }
            free(want);
        }
        for (size_t i = 0; i < np * n; i++) at_once[i] = NAN;
        mae_forward(m, img, all, B, L);
        mae_backward_set_groups(m, bufs, n, NULL);
        int zero = 1;
        for (size_t i = 0; i < np * n; i++) zero &= at_once[i] == 0.0f;
        CHECK(zero, "groups at once with no removed patch: every group's gradient zero (%d groups)", n);
        free(img); free(keep); free(all); free(alone); free(at_once);
        mae_free(m);
    }
}

// A forward-only model (mae_create_forward) gives bitwise what the training model gives: the loss,
// predictions and targets of a masked forward, and the latent and every block's output of the encoder
// over every patch, at 1 and 3 threads. It has no gradient buffer and no attention maps to give, and
// its arena does not grow by a block's activations with depth: one more block adds its parameters
// and one residual stream [B * (1 + L), C] per stack, no more. Run a block at a time
// (mae_encoder_block), it gives every encoder layer's attention maps bitwise as the training model does.
// mae_train_forward (core/model.h): the decoder's last block past its attention, decoder_norm and
// decoder_pred on the removed patches' rows only. Its loss and each group's are bitwise mae_forward's,
// its predictions bitwise the removed rows of mae_forward's, in order, with 0, 1 and 2 decoder blocks,
// on 1 and 3 threads, in one pass and in passes of 2 of the 3 images; with no patch removed it is
// mae_forward. (Its gradient: tests/test_gradcheck.c and tests/test_parity.c.)
static void test_train_forward(void) {
    // The first decoder block takes the mask tokens' rows once only where that is fewer rows: the rule.
    Stack st;
    stack_setup(&st, 2, 128, 4, 512, 1e-6f);
    int src = -1;
    st.dup_src = &src; st.dup_n = 64; st.dup_own = 17;   // tiny32: 64 positions, 1 + 16 own rows of 65
    CHECK(stack_dup_forward(&st, 32, 65) && stack_dup_backward(&st, 32, 65, 2),
          "tiny32: 32 images, 2 groups of 16: 64 shared rows for 1536 mask tokens");
    CHECK(!stack_dup_backward(&st, 32, 65, 32) && stack_dup_forward(&st, 32, 65),
          "groups of one image: 64 shared rows for 48 mask tokens, not in the backward");
    CHECK(!stack_dup_forward(&st, 1, 65) && !stack_dup_backward(&st, 1, 65, 1), "one image: neither");
    st.dup_n = 196; st.dup_own = 50;   // ViT-B/16 at 224
    CHECK(!stack_dup_backward(&st, 4, 197, 4) && stack_dup_backward(&st, 4, 197, 2),
          "ViT-B/16: groups of 1 image no (196 > 147), of 2 yes (196 < 294)");
    st.dup_n = 64; st.dup_own = 49;   // tiny32 at mask ratio 0.25 with an MLP of width C (mlp_ratio 1)
    st.hidden = 128;
    CHECK(!stack_dup_forward(&st, 32, 65), "own rows' qkv (49 x 384 floats) wider than a pass's fc1 rows (65 x 128)");
    st.hidden = 512;
    CHECK(stack_dup_forward(&st, 32, 65) && stack_dup_backward(&st, 32, 65, 2), "the same with mlp_ratio 4: yes");
    st.hidden = 300;   // 49 x 384 <= 65 x 300 forward; backward rows 2 x (16 x 49 + 64) x 384 > 32 x 65 x 300
    CHECK(stack_dup_forward(&st, 32, 65) && !stack_dup_backward(&st, 32, 65, 2),
          "an MLP of 300: the forward's scratch holds the rows, the backward's does not");
    st.dup_src = NULL;
    CHECK(!stack_dup_forward(&st, 32, 65), "no shared rows: no");
    for (int run = 0; run < 4; run++)
        for (int dec_depth = 0; dec_depth <= 2; dec_depth++) {
            int threads = run == 1 || run == 3 ? 3 : 1;
            stack_forward_force_images(run >= 2 ? 2 : 0);
            omp_set_num_threads(threads);
            MaeConfig c = small_config();
            c.dec_depth = dec_depth;
            int B = 3, L = mae_num_patches(&c), K = mae_len_keep(&c, 0.75f), pd = mae_patch_dim(&c);
            char err[256];
            Mae *m = mae_create(&c, B, err, sizeof err);
            CHECK(m != NULL, "create: %s", err);
            if (!m) return;
            Rng r;
            rng_seed(&r, 43 + dec_depth);
            mae_init_weights(m, &r);
            float *img = malloc(sizeof(float) * B * 16 * 16 * 3), *pred = malloc(sizeof(float) * B * L * pd);
            float *target = malloc(sizeof(float) * B * L * pd);
            int *keep = malloc(sizeof(int) * B * L), *all = malloc(sizeof(int) * B * L);
            fill_batch(&r, &c, B, img, keep, K);
            for (int i = 0; i < B * L; i++) all[i] = i % L;
            float lf = mae_forward(m, img, keep, B, K), gf[3], gt[3];
            mae_group_losses(m, B, gf);
            memcpy(pred, mae_pred(m), sizeof(float) * B * L * pd);
            memcpy(target, mae_target(m), sizeof(float) * B * L * pd);
            float lt = mae_train_forward(m, img, keep, B, K);
            mae_group_losses(m, B, gt);
            CHECK(!memcmp(&lt, &lf, sizeof lf) && !memcmp(gt, gf, sizeof gf),
                  "training forward's loss %.9g and each image's bitwise mae_forward's %.9g (%d decoder blocks, "
                  "%d threads, run %d)", lt, lf, dec_depth, threads, run);
            CHECK(!memcmp(mae_target(m), target, sizeof(float) * B * L * pd), "training forward's targets: every patch");
            int bad = 0, k = 0;
            for (int b = 0; b < B; b++)
                for (int l = 0; l < L; l++) {
                    int kept = 0;
                    for (int j = 0; j < K; j++) kept |= keep[b * K + j] == l;
                    if (!kept && memcmp(mae_pred(m) + (size_t)k++ * pd, pred + ((size_t)b * L + l) * pd,
                                        sizeof(float) * pd))
                        bad++;
                }
            CHECK(k == B * (L - K) && bad == 0, "training forward's predictions: %d of the %d removed rows differ "
                  "(%d decoder blocks, %d threads, run %d)", bad, k, dec_depth, threads, run);
            lf = mae_forward(m, img, all, B, L);
            memcpy(pred, mae_pred(m), sizeof(float) * B * L * pd);
            lt = mae_train_forward(m, img, all, B, L);
            CHECK(lt == 0.0f && lf == 0.0f && !memcmp(mae_pred(m), pred, sizeof(float) * B * L * pd),
                  "no patch removed: mae_train_forward is mae_forward");
            free(img); free(pred); free(target); free(keep); free(all);
            mae_free(m);
        }
    stack_forward_force_images(0);
    omp_set_num_threads(omp_get_num_procs());
}

static void test_forward_only(void) {
    // threads 1 and 3; then 1 thread with every block's forward in passes of 2 of the 3 images
    // (core/encoder.h: a forward-only model's blocks share one set of activations, which each pass
    // writes in part; test_forward_passes checks the training model's passes against one pass).
    for (int run = 0; run < 3; run++) {
        int threads = run == 1 ? 3 : 1;
        stack_forward_force_images(run == 2 ? 2 : 0);
        omp_set_num_threads(threads);
        MaeConfig c = small_config();
        c.depth = 3; c.dec_depth = 2;
        int B = 3, L = mae_num_patches(&c), K = mae_len_keep(&c, 0.75f), D = c.embed_dim, pd = mae_patch_dim(&c);
        char err[256];
        Mae *full = mae_create(&c, B, err, sizeof err), *fwd = mae_create_forward(&c, B, err, sizeof err);
        CHECK(full && fwd, "create: %s", err);
        if (!full || !fwd) { mae_free(full); mae_free(fwd); return; }
        Rng r;
        rng_seed(&r, 41);
        mae_init_weights(full, &r);
        size_t np = mae_num_params(&c);
        memcpy(mae_params(fwd), mae_params(full), np * sizeof(float));
        float *img = malloc(sizeof(float) * B * 16 * 16 * 3);
        int *keep = malloc(sizeof(int) * B * L), *all = malloc(sizeof(int) * B * L);
        fill_batch(&r, &c, B, img, keep, K);
        for (int i = 0; i < B * L; i++) all[i] = i % L;
        float lf = mae_forward(full, img, keep, B, K), lo = mae_forward(fwd, img, keep, B, K);
        CHECK(!memcmp(&lf, &lo, sizeof lf), "forward-only loss %.9g = %.9g (%d threads)", lo, lf, threads);
        CHECK(!memcmp(mae_pred(full), mae_pred(fwd), sizeof(float) * B * L * pd), "forward-only predictions bitwise");
        CHECK(!memcmp(mae_target(full), mae_target(fwd), sizeof(float) * B * L * pd), "forward-only targets bitwise");
        CHECK(!memcmp(mae_latent(full), mae_latent(fwd), sizeof(float) * B * (1 + K) * D),
              "forward-only latent bitwise (masked)");
        mae_forward_encoder(full, img, all, B, L);
        mae_forward_encoder(fwd, img, all, B, L);
        for (int l = 0; l < c.depth; l++)
            CHECK(!memcmp(mae_block_output(full, l), mae_block_output(fwd, l), sizeof(float) * B * (1 + L) * D),
                  "forward-only block %d output bitwise (%d threads)", l, threads);
        CHECK(!memcmp(mae_latent(full), mae_latent(fwd), sizeof(float) * B * (1 + L) * D),
              "forward-only latent bitwise (every patch)");
        CHECK(mae_grads(fwd) == NULL && mae_attention(fwd, c.depth - 1) == NULL && mae_attention(full, 0) != NULL,
              "forward-only: no gradients, no attention maps");
        // Over parameters handed to it (a checkpoint's): taken as they are, not copied; the same bits.
        float *given = malloc(np * sizeof(float));
        memcpy(given, mae_params(full), np * sizeof(float));
        Mae *with = mae_create_forward_with(&c, B, given, err, sizeof err);
        CHECK(with && mae_params(with) == given, "mae_create_forward_with takes the parameters as they are: %s", err);
        if (with) {
            float lw = mae_forward(with, img, keep, B, K);
            CHECK(!memcmp(&lw, &lf, sizeof lf) && !memcmp(mae_pred(full), mae_pred(with), sizeof(float) * B * L * pd),
                  "forward over given parameters bitwise (%d threads)", threads);
            mae_free(with);   // frees `given` too
        } else {
            free(given);
        }
        // A block at a time on the forward-only model (`vitmae attention`: each layer's maps read as its
        // block makes them, in the one set the blocks share): the training model's maps and block
        // outputs, bitwise, masked and not.
        for (int pass = 0; pass < 2; pass++) {
            int k = pass ? L : K, T = 1 + k;
            mae_forward_encoder(full, img, pass ? all : keep, B, k);
            mae_encoder_start(fwd, img, pass ? all : keep, B, k);
            for (int l = 0; l < c.depth; l++) {
                const float *maps = mae_encoder_block(fwd, l);
                CHECK(maps && !memcmp(mae_attention(full, l), maps, sizeof(float) * B * c.num_heads * T * T),
                      "a block at a time: layer %d's maps bitwise, %d of %d patches (%d threads)", l, k, L, threads);
                CHECK(!memcmp(mae_block_output(full, l), mae_block_output(fwd, l), sizeof(float) * B * T * D),
                      "a block at a time: block %d's output bitwise (%d threads)", l, threads);
            }
        }
        CHECK(mae_encoder_block(fwd, c.depth) == NULL && mae_encoder_block(fwd, -1) == NULL, "a block at a time: no such layer");
        free(img); free(keep); free(all);
        mae_free(full); mae_free(fwd);
    }
    stack_forward_force_images(0);
    // A model that cannot be made leaves the parameters handed to it with the caller (were they freed,
    // glibc would stop the free below as a double free). Not under the sanitizers, whose allocator
    // stops at the refused terabytes of activations themselves.
    if (!check_sanitized()) {
        MaeConfig c = small_config();
        size_t np = mae_num_params(&c);
        float *given = calloc(np, sizeof(float));
        char err[256];
        Mae *none = mae_create_forward_with(&c, 1 << 30, given, err, sizeof err);
        CHECK(none == NULL, "a billion images of activations: refused");
        mae_free(none);
        given[np - 1] = 1.0f;   // still the caller's: written and freed here
        CHECK(given[np - 1] == 1.0f, "parameters kept");
        free(given);
    }
    MaeConfig a = small_config(), b = a;
    b.depth++; b.dec_depth++;
    int B = 5;
    size_t rows = (size_t)B * (1 + mae_num_patches(&a));
    size_t res = ((rows * a.embed_dim + 15) & ~(size_t)15) + ((rows * a.dec_embed_dim + 15) & ~(size_t)15);
    size_t params = (mae_num_params(&b) - mae_num_params(&a)) * sizeof(float);
    size_t grown = mae_bytes_needed_forward(&b, B) - mae_bytes_needed_forward(&a, B);
    CHECK(grown == params + res * sizeof(float), "a block more: %zu bytes more, its parameters %zu and a residual "
          "stream per stack %zu", grown, params, res * sizeof(float));
    CHECK(mae_bytes_needed(&b, B) - mae_bytes_needed(&a, B) > 4 * params + 4 * res * sizeof(float),
          "the training model grows by a block's activations");
    MaeConfig v;
    mae_config_preset(&v, "base");
    v.img_size = 224; v.patch_size = 16;
    size_t tr = mae_bytes_needed(&v, 64), fo = mae_bytes_needed_forward(&v, 64);
    printf("ViT-B/16 at 224, batch 64: %.2f GiB to train, %.2f GiB forward only\n", tr / 1073741824.0,
           fo / 1073741824.0);
    CHECK(fo * 4 < tr, "ViT-B/16 at batch 64: forward only %zu bytes, under a quarter of training's %zu", fo, tr);
}

// The bytes of n floats as the arena lays them out (core/encoder.h, carve: 64-byte pieces).
static size_t piece(size_t n) { return ((n + 15) & ~(size_t)15) * sizeof(float); }

// What a forward-only model holds for the decoder and the loss alone, counted here from the layout
// docs/design.md states ("Forward-only models"), not from the model's own count: the decoder's input
// rows (decoder_embed of the encoder tokens), its residual streams, one block's activations (its
// attention maps among them), the patch rows, decoder_norm and its statistics, the predictions and
// targets, the attention scratch beyond the encoder's width, and the mask rows (ids_keep, removed,
// dec_rows [L]; dec_src, dec_own [1 + L]).
static size_t decoder_bytes(const MaeConfig *c, int B) {
    size_t L = (size_t)mae_num_patches(c), T = L + 1, N = (size_t)B * T, Dd = (size_t)c->dec_embed_dim;
    size_t D = (size_t)c->embed_dim, H = Dd * c->mlp_ratio, pd = (size_t)mae_patch_dim(c), BL = (size_t)B * L;
    size_t bytes = piece(N * Dd) + (size_t)(c->dec_depth + 1) * piece(N * Dd);
    if (c->dec_depth > 0)
        bytes += 4 * piece(N * Dd) + 4 * piece(N) + piece(3 * N * Dd) + piece((size_t)B * c->dec_num_heads * T * T)
                 + 2 * piece(N * H);
    bytes += 2 * piece(BL * Dd) + 2 * piece(BL) + 2 * piece(BL * pd);
    bytes += piece(N * (Dd > D ? Dd : D)) - piece(N * D);
    return bytes + BL * (2 * sizeof(int) + 1) + 2 * (size_t)B * T * sizeof(int);
}

// The decoder's parameters in bytes, counted here from MAE's decoder shapes, not from the table:
// decoder_embed [Dd, D] and bias, mask_token [Dd], decoder_pos_embed [1 + L, Dd], each block's two
// norms, qkv, proj, fc1 and fc2 with biases, decoder_norm, decoder_pred [pd, Dd] and bias.
static size_t decoder_param_bytes(const MaeConfig *c) {
    size_t D = (size_t)c->embed_dim, Dd = (size_t)c->dec_embed_dim, H = Dd * c->mlp_ratio;
    size_t T = (size_t)mae_num_patches(c) + 1, pd = (size_t)mae_patch_dim(c);
    size_t block = 4 * Dd + (3 * Dd * Dd + 3 * Dd) + (Dd * Dd + Dd) + (H * Dd + H) + (Dd * H + Dd);
    return (Dd * D + Dd + Dd + T * Dd + (size_t)c->dec_depth * block + 2 * Dd + pd * Dd + pd) * sizeof(float);
}

// An encoder-only model (mae_create_encoder, `vitmae attention`, `embed` and `probe`'s) gives bitwise
// what the training model gives: the latent and every block's output of mae_forward_encoder, and each
// layer's maps and block output run a block at a time (mae_encoder_block), masked and over every
// patch, at 1 and 3 threads, from the encoder's parameters alone (the prefix of the layout before the
// decoder's: handed exactly that many floats, so a read past them is one past the allocation). It holds
// nothing of the decoder: its bytes are the forward-only model's less decoder_bytes and the decoder's
// parameters exactly (a decoder carved or held anyway would be counted, or not be there to count),
// and running the decoder on it stops with an internal error instead of writing where nothing is.
static void test_encoder_only(void) {
    for (int run = 0; run < 3; run++) {
        int threads = run == 1 ? 3 : 1;
        stack_forward_force_images(run == 2 ? 2 : 0);
        omp_set_num_threads(threads);
        MaeConfig c = small_config();
        c.depth = 3; c.dec_depth = 2; c.dec_embed_dim = 32; c.dec_num_heads = 4;   // a decoder wider than the encoder
        int B = 3, L = mae_num_patches(&c), K = mae_len_keep(&c, 0.75f), D = c.embed_dim;
        char err[256];
        Mae *full = mae_create(&c, B, err, sizeof err);
        CHECK(full != NULL, "create: %s", err);
        if (!full) return;
        Rng r;
        rng_seed(&r, 47);
        mae_init_weights(full, &r);
        size_t np = mae_num_params(&c), dec_np = decoder_param_bytes(&c) / sizeof(float), enc_np = np - dec_np;
        float *given = malloc(enc_np * sizeof(float));
        memcpy(given, mae_params(full), enc_np * sizeof(float));
        Mae *enc = mae_create_encoder_with(&c, B, given, err, sizeof err);
        CHECK(enc && mae_params(enc) == given, "mae_create_encoder_with takes the parameters as they are: %s", err);
        if (!enc) { free(given); mae_free(full); return; }
        float *img = malloc(sizeof(float) * B * 16 * 16 * 3);
        int *keep = malloc(sizeof(int) * B * L), *all = malloc(sizeof(int) * B * L);
        fill_batch(&r, &c, B, img, keep, K);
        for (int i = 0; i < B * L; i++) all[i] = i % L;
        for (int pass = 0; pass < 2; pass++) {
            int k = pass ? L : K, T = 1 + k;
            const int *ids = pass ? all : keep;
            mae_forward_encoder(full, img, ids, B, k);
            mae_forward_encoder(enc, img, ids, B, k);
            CHECK(!memcmp(mae_latent(full), mae_latent(enc), sizeof(float) * B * T * D),
                  "encoder-only latent bitwise, %d of %d patches (%d threads, run %d)", k, L, threads, run);
            for (int l = 0; l < c.depth; l++)
                CHECK(!memcmp(mae_block_output(full, l), mae_block_output(enc, l), sizeof(float) * B * T * D),
                      "encoder-only block %d output bitwise (%d threads)", l, threads);
            mae_encoder_start(enc, img, ids, B, k);
            for (int l = 0; l < c.depth; l++) {
                const float *maps = mae_encoder_block(enc, l);
                CHECK(maps && !memcmp(mae_attention(full, l), maps, sizeof(float) * B * c.num_heads * T * T),
                      "encoder-only, a block at a time: layer %d's maps bitwise, %d of %d patches (%d threads)", l,
                      k, L, threads);
                CHECK(!memcmp(mae_block_output(full, l), mae_block_output(enc, l), sizeof(float) * B * T * D),
                      "encoder-only, a block at a time: block %d's output bitwise (%d threads)", l, threads);
            }
        }
        CHECK(mae_pred(enc) == NULL && mae_target(enc) == NULL && mae_grads(enc) == NULL &&
              mae_attention(enc, 0) == NULL, "encoder-only: no predictions, targets, gradients or attention maps");
        int nt = 0, nfull = 0;
        const MaeTensor *tt = mae_tensors(enc, &nt);
        mae_tensors(full, &nfull);
        CHECK(nt == nfull - 8 - 12 * c.dec_depth && !strcmp(tt[nt - 1].name, "norm.bias") &&
              tt[nt - 1].offset + tt[nt - 1].numel == enc_np && mae_tensor(enc, "norm.weight") &&
              !mae_tensor(enc, "decoder_embed.weight") && !mae_tensor(enc, "mask_token"),
              "encoder-only: its %d tensors end at norm.bias, float %zu, none of the decoder's", nt, enc_np);
        size_t fwd = mae_bytes_needed_forward(&c, B), dec = decoder_bytes(&c, B) + decoder_param_bytes(&c);
        size_t eo = mae_bytes_needed_encoder(&c, B);
        CHECK(eo == fwd - dec, "encoder-only bytes %zu: the forward-only model's %zu less the decoder's activations "
              "and parameters %zu (%zu)", eo, fwd, dec, fwd - dec);
        free(img); free(keep); free(all);
        mae_free(full); mae_free(enc);
    }
    stack_forward_force_images(0);
    omp_set_num_threads(omp_get_num_procs());
    MaeConfig v;
    mae_config_preset(&v, "base");
    v.img_size = 224; v.patch_size = 16;
    for (int B = 1; B <= 64; B *= 64) {
        size_t fo = mae_bytes_needed_forward(&v, B), eo = mae_bytes_needed_encoder(&v, B);
        printf("ViT-B/16 at 224, batch %d: %.3f GiB forward only, %.3f GiB the encoder alone\n", B, fo / 1073741824.0,
               eo / 1073741824.0);
        CHECK(eo == fo - decoder_bytes(&v, B) - decoder_param_bytes(&v), "ViT-B/16 at 224, batch %d: the decoder's "
              "bytes exactly (its parameters %zu)", B, decoder_param_bytes(&v));
    }
    v.img_size = 1024;
    size_t fo = mae_bytes_needed_forward(&v, 1), eo = mae_bytes_needed_encoder(&v, 1);
    printf("ViT-B/16 at 1024, batch 1: %.3f GiB forward only, %.3f GiB the encoder alone\n", fo / 1073741824.0,
           eo / 1073741824.0);
    CHECK(eo == fo - decoder_bytes(&v, 1) - decoder_param_bytes(&v), "ViT-B/16 at 1024: the decoder's bytes exactly");
    // The decoder run on it: an internal error (SIGABRT), in a child.
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) _exit(3);
        alarm(20);   // a parallel region in a child forked after the parent's may hang: not a pass either
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);   // the abort leaves no core file
        MaeConfig c = small_config();
        char err[256];
        Mae *enc = mae_create_encoder(&c, 1, err, sizeof err);
        if (!enc) _exit(4);
        float img[16 * 16 * 3] = {0};
        int keep[16];
        for (int i = 0; i < 16; i++) keep[i] = i;
        mae_forward(enc, img, keep, 1, 4);
        _exit(0);   // ran a decoder it does not have
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "mae_forward on an encoder-only model aborts (status %d)",
          status);
}

// The largest model the flags make (--img 8192 --patch 32: 65,536 patches; --dim and --dec-dim 16384,
// --depth and --dec-depth 256, --heads and --dec-heads 1024) at --batch 4096 keeps 37 x 10^18 bytes of
// attention maps in training: the size_t sum wrapped past 2^64 and said 0.2 x 10^18, and a wrapped sum
// can be any small number, one that passes the memory check. The estimate is never below the maps.
static void test_bytes_needed_huge(void) {
    MaeConfig c;
    mae_config_preset(&c, "base");
    c.img_size = 8192; c.patch_size = 32; c.embed_dim = c.dec_embed_dim = 16384; c.depth = c.dec_depth = 256;
    c.num_heads = c.dec_num_heads = 1024;
    double T = mae_num_patches(&c) + 1.0;
    for (int B = 1; B <= 4096; B *= 8) {
        double maps = (double)B * 1024 * T * T * sizeof(float);   // one layer's
        double train = fmin(maps * 2 * 256, 0x1p63), fwd = fmin(maps, 0x1p63);
        size_t t = mae_bytes_needed(&c, B), f = mae_bytes_needed_forward(&c, B);
        CHECK((double)t >= train && (double)f >= fwd, "batch %d: %g, %g bytes estimated, below the attention "
              "maps' %g, %g", B, (double)t, (double)f, train, fwd);
    }
    // Past GEMM_WEIGHT_COPIES_MAX_BYTES weights are packed per call: the copies count at that cap.
    double np = (double)mae_num_params(&c);
    CHECK((double)mae_train_shared_bytes(&c) == 16.0 * np + (double)GEMM_WEIGHT_COPIES_MAX_BYTES,
          "shared bytes of %g parameters: %zu", np, mae_train_shared_bytes(&c));
    char err[512];
    CHECK(mae_memory_check(&c, 4096, 0, err, sizeof err) != 0, "batch 4096 of the largest model passes the memory check");
}

int main(void) {
    test_bytes_needed_huge();
    test_threads_bitwise();
    test_forward_passes();
    test_train_forward();
    test_backward_set();
    test_groups_at_once();
    test_forward_only();
    test_encoder_only();
    test_masking();
    test_init();
    test_schedule_and_clip();
    test_learns();
    char err[256];
    MaeConfig c = small_config();
    CHECK(mae_create(&c, 0, err, sizeof err) == NULL && strstr(err, "batch"), "batch 0 refused");
    c.img_size = 15;
    CHECK(mae_create(&c, 1, err, sizeof err) == NULL, "bad config refused: %s", err);
    return check_done();
}
