// `vitmae bench`: training steps of the real model on synthetic data (random images, random masks),
// the same step `vitmae train` runs (per gradient group: forward, backward setting its gradient; then the
// fixed-order reduction of src/dist/dist.h, AdamW), timed per phase. Under `mpirun -np N` every rank
// runs its groups and rank 0 reports; `reduce` is the time spent adding group gradients and
// exchanging them, `sync wait` the time rank 0 waited at the step's first exchange for the other
// ranks to finish their groups (load imbalance: docs/distributed.md).
// Prints img/s, the achieved GFLOP/s from an analytic FLOP count (flop_count below), the measured FP32
// FMA peak of the CPU at the same thread count (before the steps, and again after them) and the
// fraction of it, and peak memory (ru_maxrss) against the analytic bytes (params, grads, AdamW
// moments, the weights' packed copies, activation arena, the batch).
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/groups.h"
#include "cmd/runfolder.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/prof.h"
#include "core/encoder.h"
#include "core/model.h"
#include "core/optim.h"
#include "core/rng.h"
#include "core/masking.h"
#include "dist/dist.h"
#include "dist/workers.h"
#include "io/json.h"

// FLOPs of one training step (forward + backward) for B images, K visible patches of L:
//   a Linear over M tokens, in -> out: forward 2*M*in*out (one multiply-add = 2 flops); backward
//     2x that (dx = dy W and dW = dy^T x), except the patch embedding whose input needs no gradient
//     (backward 1x). Counted as the model computes them (docs/performance.md, "Method"): patch embedding
//     (M = B*L, every patch before the masking, C*P*P -> D), per encoder block qkv (D -> 3D), proj
//     (D -> D), fc1 (D -> 4D), fc2 (4D -> D) on M = B*(1+K); decoder_embed (B*(1+K), D -> Dd); the same
//     four per decoder block on M = B*(1+L); decoder_pred (B*(1+L), Dd -> P*P*C: CLS's row too).
//   attention per image: QK^T and AV, each 2*T*T*D over all heads (T tokens): forward 4*T^2*D,
//     backward 2x (dV, dP, dQ, dK).
//   Not counted: LayerNorm, GELU, softmax, residual adds, the loss and AdamW (element-wise, O(N*C)).
static double flop_count(const MaeConfig *c, int B, int K) {
    double L = mae_num_patches(c), pd = mae_patch_dim(c), D = c->embed_dim, Dd = c->dec_embed_dim;
    double r = c->mlp_ratio, Te = 1.0 + K, Td = 1.0 + L;
    double lin_enc = 2.0 * B * Te * (D * 3 * D + D * D + 2 * D * r * D);
    double lin_dec = 2.0 * B * Td * (Dd * 3 * Dd + Dd * Dd + 2 * Dd * r * Dd);
    double att_enc = 4.0 * B * Te * Te * D, att_dec = 4.0 * B * Td * Td * Dd;
    double patch = 2.0 * B * L * pd * D;
    double dembed = 2.0 * B * Te * D * Dd, dpred = 2.0 * B * Td * Dd * pd;
    double fwd = c->depth * (lin_enc + att_enc) + c->dec_depth * (lin_dec + att_dec) + patch + dembed + dpred;
    return 3.0 * fwd - patch;   // backward 2x everything except the patch embedding's missing dx
}

// Of those, the ones a step leaves out (docs/design.md, "The decoder's last block on the removed patches"
// and "The decoder's mask tokens once"):
//   - the patch embedding of the L - K removed patches (forward and its weight's gradient): the step
//     embeds the kept patches only;
//   - decoder_pred's CLS row (forward and backward), whose prediction the model drops;
//   - the decoder's last block past its qkv (the attention's queries, proj, fc1, fc2) and decoder_pred
//     run on the removed patches' rows only: the 1 + K rows of CLS and visible patches skipped, forward
//     and backward (the attention's 4 (1 + K) (1 + L) Dd an image);
//   - the first decoder block's qkv takes the B' (L - K) mask tokens of a forward of B' images as L rows
//     where L is fewer (forward), and a group's (per images) likewise (its two backward products).
// A step's forwards take `at_once` groups of `per` images (the last one the groups left over).
static double flop_skipped(const MaeConfig *c, int B, int K, int per, int at_once) {
    double L = mae_num_patches(c), pd = mae_patch_dim(c), D = c->embed_dim, Dd = c->dec_embed_dim, r = c->mlp_ratio,
           R = L - K;
    if (R <= 0) return 3.0 * 2.0 * B * Dd * pd;   // no patch removed: the full forward, CLS's decoder_pred row aside
    double own = B * (1.0 + K);   // the CLS and visible rows of the B images
    double block = c->dec_depth > 0 ? 2.0 * own * (Dd * Dd + 2 * Dd * r * Dd) + 4.0 * own * (1.0 + L) * Dd : 0.0;
    double skip = 3.0 * (block + 2.0 * own * Dd * pd) + 2.0 * (2.0 * B * R * pd * D);
    if (c->dec_depth == 0 || per < 1 || at_once < 1) return skip;
    double qkv = 2.0 * Dd * 3 * Dd;   // one row's qkv, forward
    int groups = B / per;
    for (int g = 0; g < groups; g += at_once) {
        double n = (double)per * (groups - g < at_once ? groups - g : at_once);
        if (L < n * R) skip += (n * R - L) * qkv;
    }
    if (L < per * R) skip += groups * 2.0 * (per * R - L) * qkv;
    return skip;
}

// CPU seconds of the whole process (all threads), which keep still while the OS runs other jobs.
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    double data, patch_embed, encoder, decoder, loss, backward, reduce, sync_wait, optimizer, total;
} Phases;

static void phases_add(Phases *p, double data, const MaeTimings *mt, double reduce, double wait, double opt,
                       double total) {
    p->data += data; p->patch_embed += mt->patch_embed; p->encoder += mt->encoder; p->decoder += mt->decoder;
    p->loss += mt->loss; p->backward += mt->backward_decoder + mt->backward_encoder;
    p->reduce += reduce; p->sync_wait += wait; p->optimizer += opt; p->total += total;
}

// One gradient group of a bench step: B / G synthetic images (global indices), masks, forward, backward.
typedef struct {
    Mae *m;
    int per, S, C, L, K;
    long seed, step;
    float *images, *noise;
    int *ids_keep, *mask_scratch;
    MaeTimings mt;
    double data;
} BenchStep;

// x [n] ~ N(0, 1) from r: Marsaglia's polar method in float, both outputs of each accepted pair, the
// pair's two uniforms from one 64-bit draw (one logf and one sqrtf a pair, no sine or cosine: the
// double-precision Box-Muller it replaced took 2.4% of a step of the small preset at 224).
static void normal_fill(Rng *r, float *x, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint64_t b = rng_next(r);
        float u = (float)(b >> 40) * (2.0f / 16777216.0f) - 1.0f;
        float v = (float)((b >> 16) & 0xFFFFFF) * (2.0f / 16777216.0f) - 1.0f;
        float s = u * u + v * v;
        if (s >= 1.0f || s == 0.0f) continue;
        float f = sqrtf(-2.0f * logf(s) / s);
        x[i++] = u * f;
        if (i < n) x[i++] = v * f;
    }
}

// Data of the n images from global index k0 into b->images, their masks into b->ids_keep: N(0, 1)
// "pixels" and per-image uniform mask noise (as train draws them), each image from its own stream
// (seed, step, global image index): the same data for any thread or process count. Its seconds go to
// b->data.
static void bench_data(BenchStep *b, int k0, int n) {
    double t0 = omp_get_wtime();
    size_t per_image = (size_t)b->S * b->S * b->C;
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < n; k++) {
        Rng ri;
        rng_derive(&ri, (uint64_t)b->seed, (uint64_t)b->step, (uint64_t)(k0 + k));
        normal_fill(&ri, b->images + (size_t)k * per_image, per_image);
        for (int i = 0; i < b->L; i++) b->noise[(size_t)k * b->L + i] = rng_uniform(&ri);
    }
    mae_masking_from_noise_scratch(b->noise, n, b->L, b->K, b->ids_keep, b->mask_scratch);
    b->data += omp_get_wtime() - t0;
}

// The memory rule of a step of `groups` gradient groups, counted as train counts one (cmd/train.c,
// bytes_per_image): the model of one group's images, with the images and masking noise, and the
// reduction's tree, log2(G / N) gradients (dist/dist.h). 0 when it fits; else -1 and err.
typedef struct { const MaeConfig *cfg; int batch, nranks, S, C, L; } BenchMemory;
static int bench_memory_check(const BenchMemory *b, int groups, char *err, size_t errlen) {
    int per = b->batch / groups;
    size_t tree = grad_reduce_floats(groups, b->nranks, mae_num_params(b->cfg)) * sizeof(float);
    return mae_memory_check(b->cfg, per, sizeof(float) * ((size_t)b->S * b->S * b->C + (size_t)b->L) + (tree + per - 1) / per,
                            err, errlen);
}
// The rule at `groups` for groups_that_fit (cmd/groups.h).
static int bench_groups_fit(const void *ctx, int groups) {
    char why[512];
    return !bench_memory_check(ctx, groups, why, sizeof why);
}

// Groups [first, first + count) at once (dist/dist.h GroupsFn): one forward of their images.
static int bench_groups(void *ctx, int first, int count, float *const *grads, const SumTree *tree, float *losses,
                        char *err, size_t errlen) {
    (void)err; (void)errlen;
    BenchStep *b = ctx;
    bench_data(b, first * b->per, count * b->per);
    mae_set_timings(b->m, &b->mt);
    mae_train_forward(b->m, b->images, b->ids_keep, count * b->per, b->K);
    mae_group_losses(b->m, count, losses);
    mae_backward_set_groups(b->m, grads, count, tree);
    mae_set_timings(b->m, NULL);
    return 0;
}

static int bench_group(void *ctx, int group, float *grads, float *loss, char *err, size_t errlen) {
    (void)err; (void)errlen;
    BenchStep *b = ctx;
    bench_data(b, group * b->per, b->per);
    mae_set_timings(b->m, &b->mt);
    float *own = mae_use_grads(b->m, grads);
    *loss = mae_train_forward(b->m, b->images, b->ids_keep, b->per, b->K);
    mae_backward_set(b->m);
    mae_use_grads(b->m, own);
    mae_set_timings(b->m, NULL);
    return 0;
}

// --profile: each kind of kernel's time per step, its share of the step and, for the products, its
// GFLOP/s and fraction of the peak; "other" is the rest of the step (data, the serial glue between
// kernels, the reduction, AdamW); then the time the threads waited at the team's barrier for each other,
// summed over threads, its share of their time and its part in each kind of kernel. JSON: `"profile":
// {"gemm_nt": {...}, ..., "other": {...}, "barrier_wait": {"ms", "share_of_cpu", "in": {...}}}, `.
static void print_profile(const ProfTotals *pt, int steps, double total, double peak, int threads, int json) {
    double rest = total;
    if (json) printf("\"profile\": {");
    else printf("  kernels (ms per step, share of the step, calls per step; products: GFLOP/s, %% of peak):\n");
    for (int k = 0; k < PROF_COUNT; k++) {
        double sec = pt->seconds[k], gf = sec > 0 ? pt->flops[k] / sec * 1e-9 : 0.0;
        rest -= sec;
        if (json) {
            printf("\"%s\": {\"ms\": %.4f, \"share\": %.4f, \"calls\": %.1f, \"gflops\": %.2f}, ", prof_key(k),
                   1e3 * sec / steps, sec / total, (double)pt->calls[k] / steps, gf);
            continue;
        }
        printf("    %-22s %8.2f  %5.1f%%  %6.1f", prof_name(k), 1e3 * sec / steps, 100.0 * sec / total,
               (double)pt->calls[k] / steps);
        if (pt->flops[k] > 0 && peak > 0) printf("  %7.1f GFLOP/s  %5.1f%%", gf, 100.0 * gf / peak);
        else if (pt->flops[k] > 0) printf("  %7.1f GFLOP/s      -", gf);   // no peak measured (below)
        printf("\n");
    }
    double wait = pt->barrier_wait / steps, cpu = total / steps * threads;
    double between = wait;   // the waits outside every kind of kernel
    for (int k = 0; k < PROF_COUNT; k++) between -= pt->barrier_wait_in[k] / steps;
    if (json) {
        printf("\"other\": {\"ms\": %.4f, \"share\": %.4f}, ", 1e3 * rest / steps, rest / total);
        printf("\"barrier_wait\": {\"ms\": %.4f, \"share_of_cpu\": %.4f, \"in\": {", 1e3 * wait,
               cpu > 0 ? wait / cpu : 0.0);
        for (int k = 0; k < PROF_COUNT; k++)
            printf("\"%s\": %.4f, ", prof_key(k), 1e3 * pt->barrier_wait_in[k] / steps);
        printf("\"between\": %.4f}}}, ", 1e3 * between);
        return;
    }
    printf("    %-22s %8.2f  %5.1f%%  (data, glue between kernels, reduce, optimizer)\n", "other",
           1e3 * rest / steps, 100.0 * rest / total);
    if (threads <= 1) return;
    printf("  barrier waits  %.2f ms per step, summed over the %d threads: %.1f%% of their time; in ms:\n   ",
           1e3 * wait, threads, cpu > 0 ? 100.0 * wait / cpu : 0.0);
    for (int k = 0; k < PROF_COUNT; k++) printf(" %s %.2f,", prof_key(k), 1e3 * pt->barrier_wait_in[k] / steps);
    printf(" between kernels %.2f\n", 1e3 * between);
}

// A change of the measured peak from before the steps to after them beyond which the text says the
// cores' speed moved (two measurements back to back differed by up to 2.3% on a busy virtual machine:
// docs/performance.md, "A fourteenth session").
#define PEAK_DRIFT 0.05

// The timed steps' spread: their middle half (first to third quartile) wider than this fraction of
// their median. Every step does the same work, so after the warm-up a wide spread is the host's doing:
// a busy machine slowed some steps (memory or caches shared with other jobs) while the FMA peak,
// measured in a few milliseconds of register-only work, did not move (docs/performance.md, "A twentieth
// session"). Without warm-up steps the first step also packs the weights and touches fresh memory.
#define STEP_SPREAD 0.10

// AdamW's learning rate and weight decay in the timed steps (the update's cost does not depend on them).
#define BENCH_LR 1e-4f
#define BENCH_WD 0.05f

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The p-quantile (0 <= p <= 1) of n >= 1 sorted values, interpolated linearly between the two nearest
// ranks (numpy's default): position p (n - 1).
static double quantile_sorted(const double *v, int n, double p) {
    double at = p * (n - 1);
    int i = (int)at;
    if (i >= n - 1) return v[n - 1];
    return v[i] + (at - i) * (v[i + 1] - v[i]);
}

int cmd_bench(int argc, char **argv) {
    const char *preset = MAE_DEFAULT_PRESET;
    int img = MAE_DEFAULT_IMG, patch = MAE_DEFAULT_PATCH, channels = 3, batch = MAE_DEFAULT_BATCH;
    const char *channels_choice = "3";
    int steps = 10, warmup = 2, threads = 0, json = 0, profile = 0;
    float mask_ratio = (float)MAE_DEFAULT_MASK_RATIO;
    int groups = 0, accum = 1;
    long seed = 0;
    const char *parallel = "auto";
    Flag f[] = {
        {"--preset", FLAG_CHOICE, &preset, 0, 0, "tiny|small|base", "model size (default " MAE_DEFAULT_PRESET ")", NULL, 0},
        {"--img", FLAG_INT, &img, 1, MAE_IMG_MAX, NULL, "image size (default " MAE_STR(MAE_DEFAULT_IMG) ")", "N", 0},
        {"--patch", FLAG_INT, &patch, 1, 8192, NULL, "patch size (default " MAE_STR(MAE_DEFAULT_PATCH) ")", "N", 0},
        {"--channels", FLAG_CHOICE, &channels_choice, 0, 0, "1|3", "1 grey or 3 RGB (default 3)", NULL, 0},
        {"--batch", FLAG_INT, &batch, 1, 4096, NULL, "images per step (default " MAE_STR(MAE_DEFAULT_BATCH) ")", "B", 0},
        {"--groups", FLAG_INT, &groups, 1, GROUPS_MAX, NULL, "gradient groups per step (default: up to 4, see train)", "G", 0},
        {"--accum", FLAG_INT, &accum, 1, 4096, NULL, "micro-batches per process (default 1; checked as train does)", "K", 0},
        {"--steps", FLAG_INT, &steps, 1, 1000000, NULL, "timed steps (default 10)", "N", 0},
        {"--warmup", FLAG_INT, &warmup, 0, 1000000, NULL, "untimed steps first (default 2)", "N", 0},
        {"--threads", FLAG_INT, &threads, 1, CLI_THREADS_MAX, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--mask-ratio", FLAG_FLOAT, &mask_ratio, 0.0, MASK_RATIO_FLAG_MAX, NULL, "fraction of patches removed, leaving at least one visible (default " MAE_STR(MAE_DEFAULT_MASK_RATIO) ")", "R", 0},
        {"--seed", FLAG_LONG, &seed, 0, RNG_SEED_MAX, NULL, "random seed of the synthetic data (default 0)", "S", 0},
        {"--json", FLAG_BOOL, &json, 0, 0, NULL, "one JSON object instead of text", NULL, 0},
        {"--profile", FLAG_BOOL, &profile, 0, 0, NULL, "time per kind of kernel (ms per step, share of the step)", NULL, 0},
        {"--parallel", FLAG_CHOICE, &parallel, 0, 0, "auto|kernels|groups", "how the threads share a step (default auto, as train)", NULL, 0},
    };
    cli_quiet_ranks(1);   // every rank meets a bad flag alike: rank 0 says it once
    int rc = cli_parse("bench", "[flags]", f, (int)(sizeof f / sizeof f[0]), argc, argv, NULL, 0, NULL);
    if (rc == CLI_HELP) return 0;
    if (rc != CLI_OK) return 2;
    channels = atoi(channels_choice);   // "1" or "3", checked while parsing
    char err[CLI_ERR_MAX];
    if (mask_ratio_check(mask_ratio, 0, err, sizeof err)) { cli_error("bench --mask-ratio", "%s", err); return 2; }
    int given = groups != 0;
    if (!groups) groups = dist_default_groups(batch);
    char gerr[512];
    int bad = dist_check_groups_given(batch, groups, given, dist_size(), accum, gerr, sizeof gerr);
    if (bad) {
        cli_error(bad == DIST_BAD_ACCUM ? "bench --accum" : bad == DIST_BAD_GROUPS ? "bench --groups" : "bench", "%s", gerr);
        return 2;
    }
    int per = batch / groups, nranks = dist_size();
    cli_defer(1);   // a rank's own threads: it says so, every rank stops (cli_agree)
    if (cpu_start_threads(threads, gerr, sizeof gerr)) rc = cli_report("bench", gerr, 1);
    if ((rc = cli_agree(rc))) { cli_defer(0); return rc; }
    cli_defer(0);
    threads = omp_get_max_threads();
    // Threads as workers (dist/workers.h): W, or 0 for the team.
    int W = 0;
    if (parallel_check(parallel, groups, accum, threads, &W, gerr, sizeof gerr)) {
        cli_error("bench --parallel", "%s", gerr);
        return 2;
    }

    MaeConfig cfg;
    mae_config_preset(&cfg, preset);
    cfg.img_size = img; cfg.patch_size = patch; cfg.in_chans = channels; cfg.mask_ratio = mask_ratio;
    const char *flag;
    if (mae_config_check_flags(&cfg, &flag, err, sizeof err)) return cli_model_flags_refused("bench", flag, err);
    int L = mae_num_patches(&cfg), K = mae_len_keep(&cfg, mask_ratio), S = img, C = channels;
    if (L == 1) {   // no --mask-ratio both keeps and removes the patch of one: train refuses the model as such
        cli_error("bench --patch", "%d makes one patch of the %dx%d image; a step needs at least 2 (patches seen "
                  "and patches to predict): a smaller --patch or a larger --img", patch, img, img);
        return 2;
    }
    if (mask_ratio_check(mask_ratio, L, err, sizeof err)) { cli_error("bench --mask-ratio", "%s", err); return 2; }
    if (K == L) {   // train refuses it: its steps would time a loss of 0 / 0 (reported as 0)
        cli_error("bench --mask-ratio", "%g removes no patch of %d (int(L * (1 - R)) = %d): the loss is over "
                  "removed patches, as train refuses it", (double)mask_ratio, L, L);
        return 2;
    }
    // Memory: refuse before allocating what cannot fit. From here each rank meets its own memory: under
    // mpirun the ranks agree (cli_agree) before each collective, so that a rank short of memory stops
    // every rank, none left waiting in the reduction's set-up or a step (docs/distributed.md, "Faults").
    // Counted as train counts a step (bench_memory_check).
    size_t np = mae_num_params(&cfg);
    BenchMemory bm = {&cfg, batch, nranks, S, C, L};
    cli_defer(1);
    if (bench_memory_check(&bm, groups, err, sizeof err)) {
        char msg[1024];   // said in terms of --batch (cmd/groups.h), with the way out where there is one
        groups_oom_message(msg, sizeof msg, err, batch, per, 0);
        groups_fit_hint(msg, sizeof msg, batch,
                        groups_that_fit(batch, groups, nranks, accum, GROUPS_MAX, bench_groups_fit, &bm));
        cli_error("bench", "%s", msg);
        rc = 2;
    }
    cli_quiet_ranks(0);
    if ((rc = cli_agree(rc))) { cli_defer(0); return rc; }
    // The groups of a micro-batch at once where memory allows (cmd/groups.h), as train does; workers by
    // the rule for their number of threads.
    int mine = groups / nranks;   // this process's groups
    int at_once = W ? groups_at_once(&cfg, per, 1 + K, mine / W / accum,
                                     grad_workers_floats(mine, np, W, 1) * sizeof(float), W)
                    : groups_at_once(&cfg, per, 1 + K, mine / accum, 0, threads);
    if (W && parallel_memory(&cfg, per, at_once, W, mine, 0, strcmp(parallel, "auto") ? 0.9 : 0.5, gerr, sizeof gerr)) {
        if (strcmp(parallel, "auto")) {
            cli_error("bench --parallel groups", "%s", gerr);
            rc = 2;
        }
        W = 0;   // the team then, which needs less
        at_once = groups_at_once(&cfg, per, 1 + K, mine / accum, 0, threads);
    }
    if ((rc = cli_agree(rc))) { cli_defer(0); return rc; }
    int nw = W ? W : 1;   // models and batch buffers: one per worker
    BenchStep bs[WORKERS_MAX];
    void *ctx[WORKERS_MAX];
    memset(bs, 0, sizeof bs);
    size_t npix = (size_t)per * at_once * S * S * C;
    Mae *m = mae_create(&cfg, per * at_once, err, sizeof err);
    char msg[1024];   // a model that did not fit, in terms of --batch (cmd/groups.h)
    if (!m) { groups_oom_message(msg, sizeof msg, err, batch, per * at_once, W); cli_error("bench", "%s", msg); rc = 1; }
    if ((rc = cli_agree(rc))) { mae_free(m); cli_defer(0); return rc; }
    int ok = 1;
    for (int w = 0; w < nw && ok; w++) {
        BenchStep *b = &bs[w];
        b->m = w ? mae_create_sharing(m, per * at_once, err, sizeof err) : m;
        b->per = per; b->S = S; b->C = C; b->L = L; b->K = K; b->seed = seed;
        b->images = malloc(npix * sizeof(float));
        b->noise = malloc((size_t)per * at_once * L * sizeof(float));
        b->ids_keep = malloc((size_t)per * at_once * (K > 0 ? K : 1) * sizeof(int));
        b->mask_scratch = malloc(2 * (size_t)L * sizeof(int));
        ok = b->m && b->images && b->noise && b->ids_keep && b->mask_scratch;
        ctx[w] = b;
    }
    float *exp_avg = cpu_calloc_big(np, sizeof(float)), *exp_avg_sq = cpu_calloc_big(np, sizeof(float));
    // Each timed step's wall time, in order, then room for a sorted copy (the quartiles).
    double *step_s = malloc(2 * (size_t)steps * sizeof(double));
    GradReduce gr;
    GradWorkers gw;
    memset(&gr, 0, sizeof gr);
    memset(&gw, 0, sizeof gw);
    // The reduction's buffers are collective: every rank enters their set-up, or none does.
    if (!ok || !exp_avg || !exp_avg_sq || !step_s) rc = cli_report("bench", "out of memory", 1);
    if (!(rc = cli_agree(rc))) {
        int gr_ok;
        if (W) {   // under mpirun the processes' exchange (dist/workers.h), before the workers' buffers
            gr_ok = (nranks == 1 || grad_reduce_init_top(&gr, groups, np, err, sizeof err) == 0) &&
                    grad_workers_init(&gw, nranks > 1 ? &gr : NULL, groups, np, W, at_once, err, sizeof err) == 0;
            gw.defer_top = nranks == 1;   // the top of the workers' tree in AdamW's pass, as train does without --clip
            Mae *models[WORKERS_MAX];
            for (int w = 0; w < W; w++) models[w] = bs[w].m;
            if (gr_ok && grad_workers_early_init(&gw, models, err, sizeof err)) gr_ok = 0;
        } else {
            gr_ok = grad_reduce_init(&gr, groups, np, err, sizeof err) == 0;
            if (gr_ok && at_once > 1 && grad_reduce_at_once(&gr, at_once, err, sizeof err)) gr_ok = 0;
        }
        if (!gr_ok) rc = cli_report("bench", err, 1);
        rc = cli_agree(rc);   // before the steps' exchanges
    }
    cli_defer(0);
    if (!rc) run_warn_other_gemm();   // the bench sure to start: a refusal stays one line
    if (rc) {
        for (int w = 0; w < nw; w++) {
            if (w) mae_free(bs[w].m);
            free(bs[w].images); free(bs[w].noise); free(bs[w].ids_keep); free(bs[w].mask_scratch);
        }
        mae_free(m); free(exp_avg); free(exp_avg_sq); free(step_s);
        grad_reduce_free(&gr);
        grad_workers_free(&gw);
        return rc;
    }
    Rng rng;
    rng_seed(&rng, (uint64_t)seed);
    mae_init_weights(m, &rng);
    int nt;
    const MaeTensor *tensors = mae_tensors(m, &nt);

    // Every rank measures its own cores' peak; the job's peak is the sum (ranks of equal machines).
    double peak = cpu_fma_peak_gflops(threads) * nranks;
    int cpus = cpu_threads_cpus(threads);   // this process's threads (docs/interface.md, "vitmae bench")
    Phases ph = {0};
    double last_loss = 0.0, cpu_total = 0.0;
    for (int s = 0; s < warmup + steps; s++) {
        for (int w = 0; w < nw; w++) {
            memset(&bs[w].mt, 0, sizeof bs[w].mt);
            bs[w].data = 0;
            bs[w].step = s;
        }
        gr.reduce_s = gr.wait_s = 0;
        gw.reduce_s = gw.wait_s = gw.early_s = 0;
        if (s == warmup && profile) prof_enable(1);   // the timed steps only
        double c0 = cpu_seconds();
        double t0 = omp_get_wtime();
        float loss = 0.0f;
        int stop = 0, failed_here = 0;
        float *grads = grad_reduce_grads(&gr, mae_grads(m));
        if (W) grad_workers_plan_adamw(&gw, exp_avg, exp_avg_sq, BENCH_LR, BENCH_WD, s + 1);
        gemm_weights_begin();   // as train: each weight packed once per step (kernels/gemm.h)
        if (W)
            grad_workers_step(&gw, grads, bench_group, bench_groups, ctx, &loss, NULL, &stop, &failed_here, err,
                              sizeof err);
        else if (at_once > 1)
            grad_reduce_step_at_once(&gr, grads, bench_groups, &bs[0], &loss, NULL, &stop, &failed_here, err,
                                     sizeof err);
        else
            grad_reduce_step(&gr, grads, bench_group, &bs[0], &loss, NULL, &stop, &failed_here, err, sizeof err);
        gemm_weights_end();
        last_loss = loss;
        double t3 = omp_get_wtime();
        grad_workers_adamw(&gw, tensors, nt, mae_params(m), grads, exp_avg, exp_avg_sq, BENCH_LR, BENCH_WD, s + 1);
        double t4 = omp_get_wtime();
        if (s < warmup) continue;
        cpu_total += cpu_seconds() - c0;
        // Workers: worker 0's phases (the others ran theirs side by side), its wait for them at the meeting,
        // its updates beside the step.
        phases_add(&ph, bs[0].data, &bs[0].mt, W ? gw.reduce_s : gr.reduce_s, W ? gw.wait_s : gr.wait_s,
                   t4 - t3 + gw.early_s, t4 - t0);
        step_s[s - warmup] = t4 - t0;
    }
    ProfTotals pt;
    prof_read(&pt);
    prof_enable(0);
    // The peak again, now that the steps are done: on a shared or virtual machine the cores' speed can
    // move during a run, and then the fraction of the peak measured before says less. The ranks measure
    // together, as before the steps.
    if (nranks > 1) dist_barrier();
    double peak_after = cpu_fma_peak_gflops(threads) * nranks;
    double drift = peak > 0 ? peak_after / peak - 1.0 : 0.0;
    // The figures are rank 0's; every rank ran the same steps.
    // Shared memory: the gradient lives in the window (the model's own buffer is never touched);
    // messages: a buffer for the received slices.
    const char *exchange = nranks == 1 ? "none" : gr.shared ? "shared memory" : "messages";
    size_t received = nranks > 1 && !gr.shared ? np / nranks * sizeof(float) : 0;
    size_t tree_bytes = W ? (grad_workers_floats(mine, np, W, at_once) - (gw.borrowed ? np : 0)) * sizeof(float) + received
                          : (size_t)gr.depth * np * sizeof(float) + received
                                + grad_reduce_at_once_floats(at_once, np) * sizeof(float);
    grad_reduce_free(&gr);
    grad_workers_free(&gw);
    double flops = flop_count(&cfg, batch, K), flops_done = flops - flop_skipped(&cfg, batch, K, per, at_once);
    // The steps' quartiles, from a sorted copy (step_s keeps their order for --json).
    double *sorted = step_s + steps;
    memcpy(sorted, step_s, (size_t)steps * sizeof(double));
    qsort(sorted, (size_t)steps, sizeof(double), cmp_double);
    double q1 = quantile_sorted(sorted, steps, 0.25), med = quantile_sorted(sorted, steps, 0.5);
    double q3 = quantile_sorted(sorted, steps, 0.75), spread = med > 0 ? (q3 - q1) / med : 0.0;
    double img_s = batch * (double)steps / ph.total, img_s_best = batch / sorted[0];
    double gflops = flops * steps / ph.total * 1e-9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss = (double)ru.ru_maxrss * 1024.0;
    // Each worker's model beyond the first: its activations and masks (mae_bytes_needed less the
    // parameters, gradients, moments and packed copies it shares with the first).
    double worker_model = (double)mae_bytes_needed(&cfg, per * at_once) - (double)mae_train_shared_bytes(&cfg);
    double analytic = (double)mae_bytes_needed(&cfg, per * at_once) + (double)tree_bytes + (nw - 1) * worker_model
                      + nw * ((double)(npix + (size_t)per * at_once * L) * sizeof(float)
                              + (double)per * at_once * K * sizeof(int));
    // "other" is the step's time that no phase holds (docs/interface.md, "vitmae bench"), so that the
    // phases add up to the step.
    double phased = ph.data + ph.patch_embed + ph.encoder + ph.decoder + ph.loss + ph.backward + ph.reduce
                    + ph.sync_wait + ph.optimizer;
    const char *names[] = {"data", "patch_embed", "encoder", "decoder", "loss", "backward", "reduce", "sync_wait",
                           "optimizer", "other"};
    double vals[] = {ph.data, ph.patch_embed, ph.encoder, ph.decoder, ph.loss, ph.backward, ph.reduce, ph.sync_wait,
                     ph.optimizer, ph.total - phased};
    const int nphases = (int)(sizeof vals / sizeof vals[0]);
    CpuCaches caches = cpu_caches();
    GemmBlocking blk = gemm_blocking();
    // The flag as typed, in the JSON and the text alike, as train prints it (config_float_json's decimal;
    // "%g" cut 0.1234567 to 0.123457).
    char mask_s[48];
    config_float_text(mask_ratio, mask_s, sizeof mask_s);
    if (json) {
        // The loss as every JSON number that is not whole: the shortest digits that read back as it
        // (docs/interface.md, section 1, "Seeds"; "%.6f" wrote 1.383501 of 1.3835010528564453).
        char loss_s[40], fraction[40] = "null";   // null: no peak measured (the text says why)
        json_double_text(last_loss, loss_s, sizeof loss_s);
        if (peak > 0) snprintf(fraction, sizeof fraction, "%.4f", gflops / peak);
        printf("{\"preset\": \"%s\", \"img\": %d, \"patch\": %d, \"channels\": %d, \"batch\": %d, "
               "\"mask_ratio\": %s, \"len_keep\": %d, \"threads\": %d, \"parallel\": \"%s\", \"workers\": %d, \"processes\": %d, \"groups\": %d, \"at_once\": %d, \"accum\": %d, "
               "\"exchange\": \"%s\", \"steps\": %d, \"warmup\": %d, "
               "\"gemm\": \"%s\", \"params\": %zu, \"loss\": %s, \"img_per_s\": %.2f, \"img_per_s_best_step\": %.2f, "
               "\"step_s\": %.6f, \"step_s_q1\": %.6f, \"step_s_median\": %.6f, \"step_s_q3\": %.6f, \"cpu_s_per_step\": %.6f, \"flop_per_step\": %.0f, \"gflop_per_step\": %.4f, \"flop_done_per_step\": %.0f, \"gflops\": %.2f, \"peak_gflops\": %.2f, "
               "\"peak_fraction\": %s, \"peak_gflops_after\": %.2f, \"cpus_of_threads\": %d, \"cache_bytes\": {\"l1d\": %ld, \"l2\": %ld, \"l3\": %ld}, "
               "\"blocking\": {\"kc\": %d, \"slab_floats\": %ld, \"mc_panels\": %d}, \"phases_s\": {",
               preset, img, patch, channels, batch, mask_s, K, threads, W ? "groups" : "kernels", W, nranks, groups, at_once, accum, exchange, steps, warmup,
               gemm_kernel_name(), np, loss_s, img_s, img_s_best, ph.total / steps, q1, med, q3, cpu_total / steps, flops, flops * 1e-9, flops_done, gflops, peak,
               fraction, peak_after, cpus, caches.l1d, caches.l2, caches.l3, blk.kc, blk.slab_floats, blk.mc_panels);
        for (int i = 0; i < nphases; i++) printf("%s\"%s\": %.6f", i ? ", " : "", names[i], vals[i] / steps);
        printf("}, \"step_times_s\": [");
        for (int i = 0; i < steps; i++) printf("%s%.6f", i ? ", " : "", step_s[i]);
        printf("], ");
        if (profile) print_profile(&pt, steps, ph.total, W ? peak / threads : peak, W ? 1 : threads, 1);
        printf("\"peak_rss_bytes\": %.0f, \"analytic_bytes\": %.0f, \"memory_ratio\": %.3f}\n", rss, analytic,
               rss / analytic);
    } else {
        printf("bench: preset %s, %dx%dx%d, patch %d, batch %d, mask %s (%d of %d patches visible), %d thread%s, "
               "gemm %s\n", preset, img, img, channels, patch, batch, mask_s, K, L, threads,
               threads == 1 ? "" : "s", gemm_kernel_name());
        printf("  %d process%s, %d gradient group%s of %d image%s, %d per process (%d at once)%s%s\n", nranks,
               nranks == 1 ? "" : "es", groups, groups == 1 ? "" : "s", per, per == 1 ? "" : "s", groups / nranks, at_once,
               nranks > 1 ? ", combined through " : "", nranks > 1 ? exchange : "");
        if (W)
            printf("  threads as workers: each of the %d threads takes %d of the gradient groups (%d at once), "
                   "one-thread kernels\n", W, mine / W, at_once);
        printf("  caches L1d %ld KB, L2 %ld KB, L3 %ld KB -> blocking kc %d, B slab %ld KB, A block %d panels\n",
               caches.l1d >> 10, caches.l2 >> 10, caches.l3 >> 10, blk.kc, blk.slab_floats * 4 >> 10, blk.mc_panels);
        // Each block's forward in passes (core/encoder.h): a stack takes per * at_once images on a team
        // of one thread (a worker) or of `threads`.
        int bw = per * at_once, team = W ? 1 : threads;
        printf("  block forward in passes of %d (encoder) and %d (decoder) of the %d images at once\n",
               stack_forward_images(bw, 1 + K, cfg.embed_dim, cfg.embed_dim * cfg.mlp_ratio, caches.l2, team),
               stack_forward_images(bw, 1 + L, cfg.dec_embed_dim, cfg.dec_embed_dim * cfg.mlp_ratio, caches.l2,
                                    team), bw);
        printf("  %d timed step%s after %d warm-up, %zu params, loss %.4f\n", steps, steps == 1 ? "" : "s", warmup, np,
               last_loss);
        printf("  img/s          %.1f  (best step %.1f)\n", img_s, img_s_best);
        printf("  step           %.1f ms mean; median %.1f, middle half %.1f-%.1f ms%s\n", 1e3 * ph.total / steps,
               1e3 * med, 1e3 * q1, 1e3 * q3,
               spread > STEP_SPREAD ? ": the steps' speed varied during the run (they all do the same work: a busy "
                                      "host, or too few --warmup steps), so compare runs side by side" : "");
        // At 1 thread, CPU time leaves out the time the OS gave to other jobs: img/s on a quiet core
        // (spinning OpenMP threads count as busy, so at 2+ threads it is only an upper bound of work).
        printf("  CPU time       %.1f ms per step (all threads)%s", 1e3 * cpu_total / steps, threads == 1 ? "" : "\n");
        if (threads == 1 && peak > 0)
            printf(" -> %.1f img/s, %.1f%% of peak per CPU second\n", (double)batch / nranks * steps / cpu_total,
                   100.0 * flops * steps / cpu_total * 1e-9 / peak);
        else if (threads == 1)
            printf(" -> %.1f img/s per CPU second\n", (double)batch / nranks * steps / cpu_total);
        printf("  GFLOP/s        %.1f  (%.2f GFLOP per step, analytic: the model's; the step computes %.2f of them)\n",
               gflops, flops * 1e-9, flops_done * 1e-9);
        if (peak > 0)
            printf("  FMA peak       %.1f GFLOP/s measured at %d thread%s x %d process%s -> %.1f%% of peak\n", peak,
                   threads, threads == 1 ? "" : "s", nranks, nranks == 1 ? "" : "es", 100.0 * gflops / peak);
        else   // every run's OpenMP team came out smaller than asked (OMP_THREAD_LIMIT): no fraction to give
            printf("  FMA peak       not measured: OpenMP ran fewer than the %d thread%s asked (OMP_THREAD_LIMIT?)\n",
                   threads, threads == 1 ? "" : "s");
        if (peak > 0 && peak_after > 0)
            printf("  peak after     %.1f GFLOP/s measured again after the steps (%+.1f%%)%s\n", peak_after, 100.0 * drift,
                   fabs(drift) > PEAK_DRIFT ? ": the cores' speed moved during the run, so compare runs side by side" : "");
        if (cpus > 0)
            printf("  affinity       the %d thread%s may run on %d CPU%s%s\n", threads, threads == 1 ? "" : "s", cpus,
                   cpus == 1 ? "" : "s",
                   cpus < threads ? ": fewer CPUs than threads, so threads share CPUs (more threads than CPUs, or a "
                                    "binding such as OMP_PROC_BIND or mpirun's; the peak counts each thread's own "
                                    "CPU time)" : "");
        printf("  phases (ms per step):\n");
        for (int i = 0; i < nphases; i++)
            printf("    %-12s %8.2f  %5.1f%%\n", names[i], 1e3 * vals[i] / steps, 100.0 * vals[i] / ph.total);
        if (profile && W) printf("  worker 0's kernels (its groups, on its own thread; %% of one thread's peak):\n");
        if (profile) print_profile(&pt, steps, ph.total, W ? peak / threads : peak, W ? 1 : threads, 0);
        printf("  peak memory    %.1f MB (ru_maxrss) vs %.1f MB analytic -> %.2fx\n", rss / 1048576.0,
               analytic / 1048576.0, rss / analytic);
    }
    for (int w = 0; w < nw; w++) {
        if (w) mae_free(bs[w].m);
        free(bs[w].images); free(bs[w].noise); free(bs[w].ids_keep); free(bs[w].mask_scratch);
    }
    mae_free(m);
    gemm_weights_release();
    free(exp_avg); free(exp_avg_sq); free(step_s);
    return 0;
}
