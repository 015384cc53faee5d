// The number of gradient groups a step runs at once: see cmd/groups.h.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmd/groups.h"
#include "core/model.h"
#include "dist/dist.h"
#include "dist/workers.h"
#include "kernels/cpu.h"

// Whether w groups at once fit in half of the memory (or memory is unknown).
static int fits(const MaeConfig *cfg, int per, int w, size_t other_bytes) {
    long have = cpu_memory_bytes();
    if (have <= 0) return 1;
    return groups_step_bytes(cfg, per, w, 0, 0, other_bytes) <= 0.5 * (double)have;
}

// Whether taking 2 w groups at once pays by the rows of a forward (cmd/groups.h).
static int rows_pay(const MaeConfig *cfg, int per, int tokens, int w, int threads) {
    long rows = (long)per * w * tokens;
    return rows < cfg->embed_dim || (threads >= 2 && 2 * rows <= GROUPS_AT_ONCE_ROWS);
}

int groups_at_once(const MaeConfig *cfg, int per, int tokens, int count, size_t other_bytes, int threads) {
    // VITMAE_GROUPS_AT_ONCE=M, a whole number from 1, read in full as every number of vitmae's: "2x" or
    // "1e3" is no count (it was taken as 2, or as 1), and anything else leaves the rule (docs/interface.md).
    long cap = cpu_env_count(getenv("VITMAE_GROUPS_AT_ONCE"), 1, 1L << 30);
    if (cap < 0) cap = 0;
    int w = 1;
    while (2 * w <= count && 2 * w <= SUMTREE_MAX && fits(cfg, per, 2 * w, other_bytes) &&
           (cap > 0 ? 2 * w <= cap : rows_pay(cfg, per, tokens, w, threads)))
        w *= 2;
    return w;
}

int parallel_memory(const MaeConfig *cfg, int per, int width, int workers, int groups, size_t other_bytes,
                    double fraction, char *err, size_t errlen) {
    double model = (double)mae_bytes_needed(cfg, per * width);
    return parallel_memory_more(model + (double)other_bytes, model, (double)mae_train_shared_bytes(cfg),
                                mae_num_params(cfg), width, workers, groups, fraction, NULL, err, errlen);
}

// Worker 0's model is the run's, in base; the others hold activations only (not the `shared` bytes:
// parameters, gradients, moments, packed copies). In double: the largest models' estimates go up to 2^63
// bytes (core/model.c).
static double workers_need(double base, double model, double shared, size_t np, int width, int workers, int groups) {
    return base + ((workers - 1) * (model - shared) + (double)grad_workers_floats(groups, np, workers, width) * sizeof(float));
}

double groups_step_bytes(const MaeConfig *cfg, int per, int width, int workers, int groups, size_t other_bytes) {
    double model = (double)mae_bytes_needed(cfg, per * width);
    if (workers >= 2)
        return workers_need(model + (double)other_bytes, model, (double)mae_train_shared_bytes(cfg), mae_num_params(cfg),
                            width, workers, groups);
    return model + (double)grad_reduce_at_once_floats(width, mae_num_params(cfg)) * sizeof(float) + (double)other_bytes;
}

int parallel_memory_more(double base, double model, double shared, size_t np, int width, int workers, int groups,
                         double fraction, double *need_out, char *err, size_t errlen) {
    long have = cpu_memory_bytes();
    double need = workers_need(base, model, shared, np, width, workers, groups);
    if (need_out) *need_out = need;
    if (have <= 0 || need <= fraction * (double)have) return 0;
    snprintf(err, errlen, "%d threads as workers need %.0f bytes (%.2f GiB); %s %.2f GiB (--parallel "
             "kernels needs less)", workers, need, need / 1073741824.0, cpu_memory_holder(), have / 1073741824.0);
    return -1;
}

int parallel_check(const char *mode, int groups, int accum, int threads, int *workers, char *err, size_t errlen) {
    *workers = 0;
    if (!strcmp(mode, "kernels")) return 0;
    int procs = dist_size(), mine = groups / procs;
    int fits = grad_workers_fit(mine, threads) && mine / threads % accum == 0;
    if (fits) *workers = threads;
    if (fits || !strcmp(mode, "auto")) return 0;
    if (!grad_workers_fit(mine, threads))
        snprintf(err, errlen, "groups needs 2 or more threads, a power of two dividing the %d gradient group%s%s (%d thread%s)",
                 mine, mine == 1 ? "" : "s", procs > 1 ? " of each process" : "", threads, threads == 1 ? "" : "s");
    else {
        int each = mine / threads;
        char use[48];
        snprintf(err, errlen, "groups gives each of the %d threads %d gradient group%s per step, which --accum %d "
                 "micro-batches cannot share evenly; use %s, fewer --threads or --parallel kernels", threads, each,
                 each == 1 ? "" : "s", accum, dist_accum_choice(use, sizeof use, each));
    }
    return -1;
}

void groups_oom_message(char *out, size_t n, const char *err, int batch, int images, int workers) {
    if (workers > 1)
        snprintf(out, n, "%s: --batch %d runs as %d threads of %d image%s at a time, each with activations of its own",
                 err, batch, workers, images, images == 1 ? "" : "s");
    else if (images != batch)
        snprintf(out, n, "%s: --batch %d runs %d image%s at a time", err, batch, images, images == 1 ? "" : "s");
    else
        snprintf(out, n, "%s", err);
}

int groups_that_fit(int batch, int groups, int procs, int accum, int max, int (*fits)(const void *ctx, int groups),
                    const void *ctx) {
    char why[512];
    for (long g = 2L * groups; g <= batch && g <= max; g *= 2)
        if (!dist_check_groups(batch, (int)g, procs, accum, why, sizeof why) && fits(ctx, (int)g)) return (int)g;
    return 0;
}

void groups_fit_hint(char *out, size_t n, int batch, int fits) {
    size_t used = strlen(out);
    if (fits > 0 && used < n)
        snprintf(out + used, n - used, "; --groups %d (%d image%s at a time) fits", fits, batch / fits,
                 batch / fits == 1 ? "" : "s");
}
