// `vitmae train`: pretrain the masked autoencoder on a folder of images.
//
// The story of a run: parse flags -> scan the folder (decoded once, cached) -> split train/val ->
// choose the model (preset + flags, channels, pixel statistics) -> check memory and the output
// folder -> build or resume the model -> steps (batch, masks, forward, backward, clip, AdamW) with
// logs, validation, samples, curves and checkpoints -> final checkpoint.
//
// This file holds the story; what a checkpoint carries to continue the run (and how the random
// streams follow from it) is in cmd/train_state.c, what the run folder receives is in
// cmd/train_out.c.
//
// Reproducibility: every random draw is derived from (seed, position) (cmd/train_state.h), so the
// whole training state is (step, parameters, AdamW moments): a resumed run continues bit for bit,
// and any thread count gives the same run (every kernel owns its outputs).
//
// Many processes (mpirun, docs/distributed.md): a step's batch is computed as G gradient groups,
// summed in a fixed tree (dist/dist.h), so any process count N and --accum K with N K | G give the
// same run. Every rank runs the same loop; rank 0 alone writes the run folder and prints. Ranks agree
// at fixed points (the end of each setup phase, each step's exchange, after rank 0's outputs), so a
// failure anywhere ends every rank at the same point and none waits for ever.
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/log.h"
#include "cmd/train.h"
#include "core/model.h"
#include "core/optim.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "infer/recon.h"
#include "io/checkpoint.h"
#include "kernels/cpu.h"

// The flags that are not part of the run state; the others are parsed straight into RunState.
typedef struct {
    const char *data, *out, *resume, *preset, *channels, *pos, *augment, *pixel_norm;
    int img, patch, dim, depth, heads, dec_dim, dec_depth, dec_heads, norm_pix, threads, groups, accum;
    float blr, epochs;
    long cache_mb, max_pixels;
} Args;

static volatile sig_atomic_t stop_requested = 0;
static int output_is_mpirun = 0;
// Under mpirun, rank 0's stdout is a pseudo-terminal that mpirun reads; after SIGINT/SIGTERM mpirun
// stops reading (it waits before it signals the ranks, docs/distributed.md), so a progress line could
// block rank 0 until mpirun kills it. Once a stop is asked, output never blocks: lines that do not
// fit are dropped, the checkpoint is still written. (A terminal of our own is left alone: its
// O_NONBLOCK flag would be the shell's too.)
static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
    if (output_is_mpirun) {
        int fl = fcntl(STDOUT_FILENO, F_GETFL);
        if (fl != -1) fcntl(STDOUT_FILENO, F_SETFL, fl | O_NONBLOCK);
    }
}

// The one way this command reports a failure: `vitmae: <what>: <why>` (or `vitmae: <why>` when the
// message already names what failed; ranks > 0 add `rank R: `). Returns the exit code. While setup
// runs under mpirun the message waits for agree(), so that a failure every rank meets is printed once.
static int deferring = 0;
static char pending[8400];
static int report(const char *what, const char *why, int code) {
    char line[8400];
    if (what) snprintf(line, sizeof line, "%s: %s", what, why);
    else snprintf(line, sizeof line, "%s", why);
    if (deferring) { if (!pending[0]) snprintf(pending, sizeof pending, "%s", line); return code; }
    if (dist_rank() > 0) fprintf(stderr, "vitmae: rank %d: %s\n", dist_rank(), line);
    else fprintf(stderr, "vitmae: %s\n", line);
    return code;
}

// The end of a setup phase: every rank learns whether any failed (the exit code is the largest).
// Rank 0 prints its own failure; another rank prints its failure only when rank 0 did not fail.
static int agree(int rc) {
    int rc0 = rc, any = rc;
    if (dist_active()) {
        dist_bcast(&rc0, sizeof rc0, 0);
        any = dist_max_int(rc);
    }
    deferring = 0;
    if (rc && pending[0] && (dist_rank() == 0 || rc0 == 0)) report(NULL, pending, rc);
    pending[0] = 0;
    deferring = dist_active();
    return any;
}

// Test hook, kept out of the step loop: VITMAE_FAULT_NAN_STEP=N turns the loss of step N (1-based)
// into a NaN, so tests/cli_train.sh can check the NaN stop without a diverging run.
static float test_hook_nan_loss(long step1, float loss) {
    static int read = 0;
    static long nan_step = -1;
    if (!read) {
        const char *v = getenv("VITMAE_FAULT_NAN_STEP");
        nan_step = v ? strtol(v, NULL, 10) : -1;
        read = 1;
    }
    return step1 == nan_step ? NAN : loss;
}

// ---------------------------------------------------------------------------------------------
// Flags

static const char *SYNOPSIS = "--data DIR [--out RUN] [flags]";

static int parse_args(int argc, char **argv, Args *a, RunState *r, Flag *flags, int *nflags_out) {
    memset(a, 0, sizeof *a);
    a->preset = "tiny"; a->channels = "auto"; a->pos = "learned"; a->augment = "crop"; a->pixel_norm = "dataset";
    a->img = 32; a->patch = 4; a->blr = 3e-3f; a->cache_mb = 2048; a->accum = 1;
    r->mask_ratio = 0.75f; r->wd = 0.05f; r->val_frac = 0.05f; r->total_steps = 1000; r->batch = 64;
    r->warmup = -1; r->log_every = 10; r->keep = 2; r->val_max = 1000;
    Flag f[] = {
        {"--data", FLAG_STR, &a->data, 0, 0, NULL, "folder of images (searched recursively)", "DIR", 0},
        {"--out", FLAG_STR, &a->out, 0, 0, NULL, "run folder (default runs/<timestamp>)", "RUN", 0},
        {"--resume", FLAG_STR, &a->resume, 0, 0, NULL, "continue a run (its folder or a checkpoint file)", "RUN_OR_FILE", 0},
        {"--preset", FLAG_CHOICE, &a->preset, 0, 0, "tiny|small|base", "model size (default tiny)", NULL, 0},
        {"--img", FLAG_INT, &a->img, 1, 8192, NULL, "image size (default 32)", "N", 0},
        {"--patch", FLAG_INT, &a->patch, 1, 8192, NULL, "patch size (default 4)", "N", 0},
        {"--channels", FLAG_CHOICE, &a->channels, 0, 0, "auto|1|3", "1 grey, 3 RGB, auto: 1 when every image is grey", NULL, 0},
        {"--dim", FLAG_INT, &a->dim, 1, 16384, NULL, "encoder width (preset)", "N", 0},
        {"--depth", FLAG_INT, &a->depth, 1, 256, NULL, "encoder blocks (preset)", "N", 0},
        {"--heads", FLAG_INT, &a->heads, 1, 1024, NULL, "encoder heads (preset)", "N", 0},
        {"--dec-dim", FLAG_INT, &a->dec_dim, 1, 16384, NULL, "decoder width (preset)", "N", 0},
        {"--dec-depth", FLAG_INT, &a->dec_depth, 0, 256, NULL, "decoder blocks (preset)", "N", 0},
        {"--dec-heads", FLAG_INT, &a->dec_heads, 1, 1024, NULL, "decoder heads (preset)", "N", 0},
        {"--mask-ratio", FLAG_FLOAT, &r->mask_ratio, 0.0, 0.99, NULL, "fraction of patches removed (default 0.75)", "R", 0},
        {"--norm-pix", FLAG_BOOL, &a->norm_pix, 0, 0, NULL, "loss on per-patch normalised pixels", NULL, 0},
        {"--pos", FLAG_CHOICE, &a->pos, 0, 0, "learned|fixed", "position embeddings trained or frozen sin-cos (default learned)", NULL, 0},
        {"--pixel-norm", FLAG_CHOICE, &a->pixel_norm, 0, 0, "dataset|imagenet|none", "pixel mean/std (default: measured on the data)", NULL, 0},
        {"--augment", FLAG_CHOICE, &a->augment, 0, 0, "crop|flip|none", "training augmentation (default crop)", NULL, 0},
        {"--steps", FLAG_LONG, &r->total_steps, 1, 1e12, NULL, "optimizer steps (default 1000)", "N", 0},
        {"--epochs", FLAG_FLOAT, &a->epochs, 1e-6, 1e6, NULL, "train for E passes over the data instead of --steps", "E", 0},
        {"--batch", FLAG_INT, &r->batch, 1, 4096, NULL, "images per step, over all processes (default 64)", "B", 0},
        {"--accum", FLAG_INT, &a->accum, 1, 4096, NULL, "micro-batches per process and step (gradient accumulation; default 1)", "K", 0},
        {"--groups", FLAG_INT, &a->groups, 1, 4096, NULL, "gradient groups per step, a power of two (default: up to 4); results are bitwise equal for any N processes and --accum K with N*K | G", "G", 0},
        {"--lr", FLAG_FLOAT, &r->lr, 0.0, 10.0, NULL, "learning rate (default blr * batch / 256)", "LR", 0},
        {"--blr", FLAG_FLOAT, &a->blr, 0.0, 10.0, NULL, "base learning rate (default 3e-3)", "LR", 0},
        {"--min-lr", FLAG_FLOAT, &r->min_lr, 0.0, 10.0, NULL, "final learning rate of the cosine (default 0)", "LR", 0},
        {"--warmup-steps", FLAG_LONG, &r->warmup, 0, 1e12, NULL, "linear warm-up steps (default 5% of the run)", "N", 0},
        {"--wd", FLAG_FLOAT, &r->wd, 0.0, 10.0, NULL, "AdamW weight decay on weight matrices (default 0.05)", "WD", 0},
        {"--clip", FLAG_FLOAT, &r->clip, 0.0, 1e6, NULL, "clip the global gradient norm (0: off, default)", "NORM", 0},
        {"--seed", FLAG_LONG, &r->seed, 0, 9e18, NULL, "random seed (default 0)", "S", 0},
        {"--threads", FLAG_INT, &a->threads, 1, 1024, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--val-frac", FLAG_FLOAT, &r->val_frac, 0.0, 0.9, NULL, "held-out fraction, by a hash of the path (default 0.05)", "F", 0},
        {"--val-max", FLAG_INT, &r->val_max, 1, 1000000, NULL, "at most this many held-out images per evaluation (default 1000)", "N", 0},
        {"--eval-every", FLAG_LONG, &r->eval_every, 1, 1e12, NULL, "validate every N steps (default: 10 times a run)", "N", 0},
        {"--ckpt-every", FLAG_LONG, &r->ckpt_every, 1, 1e12, NULL, "checkpoint every N steps (default: as --eval-every)", "N", 0},
        {"--keep", FLAG_INT, &r->keep, 0, 100000, NULL, "checkpoint-<step> snapshots kept (default 2)", "N", 0},
        {"--log-every", FLAG_LONG, &r->log_every, 1, 1e12, NULL, "a log line and metrics row every N steps (default 10)", "N", 0},
        {"--sample-every", FLAG_LONG, &r->sample_every, 1, 1e12, NULL, "reconstruction samples every N steps (default: as --eval-every)", "N", 0},
        {"--cache-mb", FLAG_LONG, &a->cache_mb, 0, 1e7, NULL, "keep decoded images in memory up to this size (default 2048)", "MB", 0},
        {"--max-pixels", FLAG_LONG, &a->max_pixels, 1, 1e12, NULL, "skip images larger than this (default 64 megapixels)", "N", 0},
    };
    int nflags = (int)(sizeof f / sizeof f[0]);
    memcpy(flags, f, sizeof f);
    *nflags_out = nflags;
    int rc = cli_parse("train", SYNOPSIS, flags, nflags, argc, argv, NULL, 0, NULL);
    if (rc != CLI_OK) return rc;
    if (!a->data && !a->resume) return report("train", "--data DIR is required (see vitmae train --help)", CLI_USAGE);
    return CLI_OK;
}

// ---------------------------------------------------------------------------------------------
// Setup

// The model of a new run: preset, then the flags. err holds `<what>: <why>`.
static int build_config(Train *t, const Args *a, Flag *flags, int nflags, char *err, size_t errlen) {
    MaeConfig *c = &t->cfg;
    mae_config_preset(c, a->preset);
    c->img_size = a->img; c->patch_size = a->patch;
    if (a->dim) c->embed_dim = a->dim;
    if (a->depth) c->depth = a->depth;
    if (a->heads) c->num_heads = a->heads;
    if (a->dec_dim) c->dec_embed_dim = a->dec_dim;
    if (cli_flag(flags, nflags, "--dec-depth")->seen) c->dec_depth = a->dec_depth;
    if (a->dec_heads) c->dec_num_heads = a->dec_heads;
    c->mask_ratio = t->rs.mask_ratio;
    c->norm_pix_loss = a->norm_pix;
    c->pos_learned = strcmp(a->pos, "learned") == 0;
    c->in_chans = !strcmp(a->channels, "1") ? 1 : !strcmp(a->channels, "3") ? 3 : (t->ds.all_grey ? 1 : 3);
    char why[256];
    if (mae_config_check(c, why, sizeof why)) { snprintf(err, errlen, "train: %s", why); return CLI_USAGE; }
    if (mae_len_keep(c, c->mask_ratio) < 1) {
        snprintf(err, errlen, "train --mask-ratio: %g leaves no visible patch of %d", c->mask_ratio, mae_num_patches(c));
        return CLI_USAGE;
    }
    return 0;
}

// The run state of a new run: the flags, with the defaults that depend on the data.
static void new_run_state(Train *t, const Args *a, Flag *flags, int nflags, const char *data) {
    RunState *r = &t->rs;
    if (a->epochs > 0) r->total_steps = (long)ceil((double)a->epochs * t->ntrain / r->batch);
    if (r->total_steps < 1) r->total_steps = 1;
    if (r->warmup < 0) r->warmup = (long)(0.05 * r->total_steps);
    if (!cli_flag(flags, nflags, "--lr")->seen) r->lr = a->blr * r->batch / 256.0f;
    snprintf(r->augment, sizeof r->augment, "%s", a->augment);
    snprintf(r->data, sizeof r->data, "%s", data);
    if (!r->eval_every) r->eval_every = r->total_steps >= 10 ? r->total_steps / 10 : 1;
    if (!r->ckpt_every) r->ckpt_every = r->eval_every;
    if (!r->sample_every) r->sample_every = r->eval_every;
    r->grad_groups = a->groups ? a->groups : dist_default_groups(r->batch);
}

// Cadence flags given on resume apply; what decides the weights comes from the checkpoint.
static void resumed_run_state(Train *t, const RunState *given, Flag *flags, int nflags) {
    RunState *r = &t->rs;
    if (cli_flag(flags, nflags, "--log-every")->seen) r->log_every = given->log_every;
    if (cli_flag(flags, nflags, "--eval-every")->seen) r->eval_every = given->eval_every;
    if (cli_flag(flags, nflags, "--ckpt-every")->seen) r->ckpt_every = given->ckpt_every;
    if (cli_flag(flags, nflags, "--sample-every")->seen) r->sample_every = given->sample_every;
    if (cli_flag(flags, nflags, "--keep")->seen) r->keep = given->keep;
}

// The pixel mean/std of a new run (--pixel-norm).
static int set_pixel_norm(Train *t, const char *mode, char *err, size_t errlen) {
    MaeConfig *c = &t->cfg;
    if (!strcmp(mode, "imagenet")) {
        static const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
        if (c->in_chans == 3) { memcpy(c->pixel_mean, mean, sizeof mean); memcpy(c->pixel_std, std, sizeof std); }
        else {   // the grey equivalent of ImageNet's statistics (L = 0.299 R + 0.587 G + 0.114 B)
            c->pixel_mean[0] = 0.299f * mean[0] + 0.587f * mean[1] + 0.114f * mean[2];
            c->pixel_std[0] = 0.299f * std[0] + 0.587f * std[1] + 0.114f * std[2];
        }
        return 0;
    }
    if (!strcmp(mode, "none")) {
        for (int i = 0; i < 3; i++) { c->pixel_mean[i] = 0.0f; c->pixel_std[i] = 1.0f; }
        return 0;
    }
    return dataset_pixel_stats(&t->ds, t->train_idx, t->ntrain, 10000, c->img_size, c->in_chans,
                               c->pixel_mean, c->pixel_std, err, errlen) ? -1 : 0;
}

// Allocates every buffer the steps use, once.
static int alloc_buffers(Train *t) {
    // One gradient group at a time, or the sample images, whichever is more.
    size_t B = (size_t)(t->per > SAMPLE_IMAGES ? t->per : SAMPLE_IMAGES), img = (size_t)t->S * t->S * t->C;
    t->keys = malloc((size_t)t->rs.batch * sizeof *t->keys);
    for (int k = 0; t->keys && k < t->rs.batch; k++) t->keys[k] = (uint64_t)k;
    t->pixels = malloc(B * img * sizeof(float));
    t->images = malloc(B * img * sizeof(float));
    t->recon = malloc(img * sizeof(float));
    t->noise = malloc(B * t->L * sizeof(float));
    t->ids_keep = malloc(B * t->L * sizeof(int));
    t->batch_items = malloc(B * sizeof(int));
    t->order.perm[0] = malloc(((size_t)t->ntrain + 1) * sizeof(int));
    t->order.perm[1] = malloc(((size_t)t->ntrain + 1) * sizeof(int));
    t->removed = malloc((size_t)t->L);
    t->patch_err = malloc((size_t)t->L * sizeof(float));
    t->order.epoch[0] = t->order.epoch[1] = -1;
    return t->keys && t->pixels && t->images && t->recon && t->noise && t->ids_keep && t->batch_items &&
           t->order.perm[0] && t->order.perm[1] && t->removed && t->patch_err ? 0 : -1;
}

static void train_free(Train *t) {
    free(t->pixels); free(t->images); free(t->recon); free(t->noise); free(t->ids_keep);
    free(t->batch_items); free(t->order.perm[0]); free(t->order.perm[1]); free(t->removed); free(t->patch_err);
    free(t->exp_avg); free(t->exp_avg_sq); free(t->keys);
    grad_reduce_free(&t->gr);
    free(t->train_idx); free(t->val_idx);
    if (t->model) mae_free(t->model);
    if (t->metrics) fclose(t->metrics);
    history_free(&t->hist);
    dataset_free(&t->ds);
}

// Setup, phase 1 (on each rank alone): scan and split the data, the model config and run state of a
// new run, the gradient groups against this job's process count and --accum, memory.
static int setup_local(Train *t, const Args *a, Flag *flags, int nflags, const char *data, int resuming,
                       char *err, size_t errlen) {
    // The data: scanned and decoded once (cached in memory when it fits).
    DatasetOptions opt = {a->max_pixels, resuming ? t->cfg.img_size : a->img, a->cache_mb};
    if (dataset_scan(data, &opt, &t->ds, err, errlen)) return report(data, err, 1);
    for (int i = 0; i < t->ds.nskipped && i < 20 && dist_rank() == 0; i++)
        fprintf(stderr, "vitmae: skipped %s: %s\n", t->ds.skipped[i].path, t->ds.skipped[i].reason);
    if (t->ds.nskipped > 20 && dist_rank() == 0)
        fprintf(stderr, "vitmae: ... and %d more skipped (vitmae data lists them)\n", t->ds.nskipped - 20);
    if (t->ds.n == 0) {
        snprintf(err, errlen, "no decodable image (%d skipped, %d ignored)", t->ds.nskipped, t->ds.nignored);
        return report(data, err, 1);
    }
    if (dataset_split(&t->ds, t->rs.val_frac, &t->train_idx, &t->ntrain, &t->val_idx, &t->nval) || t->ntrain == 0) {
        snprintf(err, errlen, "no training image left after holding out %g for validation", t->rs.val_frac);
        return report(data, err, 1);
    }
    if (!resuming) {
        int rc = build_config(t, a, flags, nflags, err, errlen);
        if (rc) return report(NULL, err, rc);
        new_run_state(t, a, flags, nflags, data);
    } else if (a->groups && a->groups != t->rs.grad_groups) {
        snprintf(err, errlen, "%d: this run sums each step as %d gradient groups, fixed when it started so that it "
                 "continues bitwise (leave --groups out)", a->groups, t->rs.grad_groups);
        return report("train --groups", err, CLI_USAGE);
    }
    t->rs.processes = dist_size();
    t->rs.accum = a->accum;
    if (dist_check_groups(t->rs.batch, t->rs.grad_groups, t->rs.processes, t->rs.accum, err, errlen))
        return report("train", err, CLI_USAGE);
    t->per = t->rs.batch / t->rs.grad_groups;
    t->S = t->cfg.img_size; t->C = t->cfg.in_chans; t->L = mae_num_patches(&t->cfg);
    t->K = mae_len_keep(&t->cfg, t->rs.mask_ratio);

    // Memory: refuse before allocating what cannot fit (the model holds one group of images; the
    // reduction log2(G / N) gradients and, with N > 1, a slice of one).
    int cap = t->per > SAMPLE_IMAGES ? t->per : SAMPLE_IMAGES, depth = 0;
    while ((1 << depth) < t->rs.grad_groups / t->rs.processes) depth++;
    size_t np = mae_num_params(&t->cfg);
    size_t need = mae_bytes_needed(&t->cfg, t->per) + (size_t)cap * t->S * t->S * t->C * 2 * sizeof(float) +
                  (size_t)depth * np * sizeof(float) + (t->rs.processes > 1 ? np * sizeof(float) : 0);
    long have = cpu_physical_memory_bytes();
    if (have > 0 && (double)need > 0.9 * (double)have) {
        snprintf(err, errlen, "the model needs %zu bytes (%.2f GiB) for groups of %d images at %dx%d; this machine has "
                 "%.2f GiB (more --groups use less)", need, need / 1073741824.0, t->per, t->S, t->S, have / 1073741824.0);
        return report("train", err, 2);
    }
    return 0;
}

// Setup, phase 3 (each rank): the model (initialised from the seed, or the checkpoint ck), the AdamW
// moments, the step buffers and the reduction.
static int setup_model(Train *t, Checkpoint *ck, char *err, size_t errlen) {
    t->model = mae_create(&t->cfg, t->per, err, errlen);
    if (!t->model) return report("train", err, 1);
    size_t np = mae_num_params(&t->cfg);
    if (ck) {
        memcpy(mae_params(t->model), ck->params, np * sizeof(float));
        t->exp_avg = ck->exp_avg; t->exp_avg_sq = ck->exp_avg_sq;
        ck->exp_avg = ck->exp_avg_sq = NULL;
    } else {
        Rng init;
        rng_seed(&init, (uint64_t)t->rs.seed);
        mae_init_weights(t->model, &init);
        t->exp_avg = calloc(np, sizeof(float));
        t->exp_avg_sq = calloc(np, sizeof(float));
        if (!t->exp_avg || !t->exp_avg_sq) return report("train", "out of memory for the AdamW moments", 1);
    }
    t->tensors = mae_tensors(t->model, &t->ntensors);
    if (alloc_buffers(t)) return report("train", "out of memory for the batch buffers", 1);
    if (grad_reduce_init(&t->gr, t->rs.grad_groups, np, err, errlen)) return report("train", err, 1);
    return 0;
}

// Flags -> a model, data and a run folder ready for the first step (or the resumed one).
// Prints its own failure and returns the exit code. Under mpirun it runs in phases that end with
// agree(): every rank leaves at the same phase, and a collective is never half attended.
static int setup(Train *t, const Args *a, Flag *flags, int nflags) {
    char err[8192];
    const char *data = a->data;
    int resuming = a->resume != NULL, rank = dist_rank(), rc = 0;
    Checkpoint ck;
    memset(&ck, 0, sizeof ck);
    deferring = dist_active();

    // 1. This rank alone: the checkpoint to resume, the data, the model config, the groups.
    char path[4096], dir[4096];
    if (resuming) {
        run_resume_path(a->resume, path, sizeof path, dir, sizeof dir);
        RunState given = t->rs;   // the flags; the checkpoint's state replaces them
        if (run_resume_load(path, &ck, &t->rs, err, sizeof err)) return agree(report(NULL, err, 1));
        resumed_run_state(t, &given, flags, nflags);
        t->cfg = ck.cfg;
        snprintf(t->run_dir, sizeof t->run_dir, "%s", a->out ? a->out : dir);
        if (!data) data = t->rs.data;
    } else if (a->out) {
        snprintf(t->run_dir, sizeof t->run_dir, "%s", a->out);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[64];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(t->run_dir, sizeof t->run_dir, "runs/%s", stamp);
    }
    rc = setup_local(t, a, flags, nflags, data, resuming, err, sizeof err);
    if ((rc = agree(rc))) { ckpt_free(&ck); return rc; }

    // 2. Every rank must see the same files (scan order): a rank on another filesystem stops here.
    deferring = 0;
    int same = dist_check_same_list((const char *const *)&t->ds.items[0].rel, sizeof(DataItem), t->ds.n,
                                    "file list", err, sizeof err);
    if (same == -2 || (same == -1 && rank == 0)) report("data", err, 1);
    if (same) { ckpt_free(&ck); return 1; }
    deferring = dist_active();

    // 3. Rank 0 prepares the run folder and measures the pixel statistics; every rank builds the model.
    if (rank == 0) {
        if (train_out_prepare(t->run_dir, err, sizeof err)) rc = report("train --out", err, 1);
        else run_remove_stale_temp_files(t->run_dir);
        if (!rc && !resuming && set_pixel_norm(t, a->pixel_norm, err, sizeof err)) rc = report("train", err, 1);
    }
    if ((rc = agree(rc))) { ckpt_free(&ck); return rc; }
    dist_bcast(t->cfg.pixel_mean, sizeof t->cfg.pixel_mean, 0);
    dist_bcast(t->cfg.pixel_std, sizeof t->cfg.pixel_std, 0);
    snprintf(t->ckpt_path, sizeof t->ckpt_path, "%s/checkpoint.safetensors", t->run_dir);
    rc = setup_model(t, resuming ? &ck : NULL, err, sizeof err);
    ckpt_free(&ck);
    if ((rc = agree(rc))) return rc;

    // 4. Rank 0 writes config.json and opens metrics.csv.
    if (rank == 0) {
        if (train_out_config(t, err, sizeof err)) rc = report("train", err, 1);
        else if (train_out_open_metrics(t, resuming, err, sizeof err)) rc = report("train", err, 1);
    }
    if ((rc = agree(rc))) return rc;
    deferring = 0;

    if (resuming) printf("resuming %s at step %ld of %ld\n", path, t->rs.step, t->rs.total_steps);
    printf("vitmae train: %d train / %d val images from %s; model %s %dx%dx%d patch %d, %zu parameters\n",
           t->ntrain, t->nval, data, a->preset, t->S, t->S, t->C, t->cfg.patch_size, mae_num_params(&t->cfg));
    printf("  %ld steps of batch %d, lr %.3g (warm-up %ld), mask %.2f, augment %s, pixel mean/std %.4f/%.4f, %d threads\n",
           t->rs.total_steps, t->rs.batch, t->rs.lr, t->rs.warmup, t->rs.mask_ratio,
           t->rs.augment, t->cfg.pixel_mean[0], t->cfg.pixel_std[0], omp_get_max_threads());
    if (dist_size() > 1 || t->rs.grad_groups > 1 || t->rs.accum > 1)
        printf("  %d gradient groups of %d images, %d process%s x %d micro-batch%s\n", t->rs.grad_groups, t->per,
               dist_size(), dist_size() == 1 ? "" : "es", t->rs.accum, t->rs.accum == 1 ? "" : "es");
    printf("  run folder %s\n", t->run_dir);
    fflush(stdout);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// The steps

// Gradient group g of step t->cur_step (dist/dist.h GroupFn): its images (data order from the run
// state; image k of the batch augmented and masked from (seed, step, k), as in one pass over the
// whole batch), forward and backward with the gradient landing in grads.
static int train_group(void *ctx, int g, float *grads, float *loss, char *err, size_t errlen) {
    Train *t = ctx;
    int B = t->rs.batch, first = g * t->per;
    long step = t->cur_step;
    for (int k = 0; k < t->per; k++) {
        long pos = step * B + first + k;
        const int *perm = run_epoch_order(&t->order, t->rs.seed, pos / t->ntrain, t->ntrain);
        t->batch_items[k] = t->train_idx[perm[pos % t->ntrain]];
    }
    if (dataset_load_batch_from(&t->ds, t->batch_items, t->per, first, t->S, t->C, t->aug, (uint64_t)t->rs.seed,
                                (uint64_t)step, t->images, err, errlen)) return -1;
    pixels_normalise(&t->cfg, t->images, (long)t->per * t->S * t->S);
    run_masks(t->rs.seed, SALT_MASK, (uint64_t)step, t->per, t->keys + first, t->L, t->K, t->noise, t->ids_keep);
    float *own = mae_use_grads(t->model, grads);
    mae_zero_grads(t->model);
    *loss = mae_forward(t->model, t->images, t->ids_keep, t->per, t->K);
    mae_backward(t->model);
    mae_use_grads(t->model, own);
    return 0;
}

int cmd_train(int argc, char **argv) {
    Train *t = calloc(1, sizeof *t);
    if (!t) return report("train", "out of memory", 1);
    Args a;
    Flag flags[64];
    int nflags = 0;
    cli_quiet_ranks(1);   // every rank parses the same flags: rank 0 reports a bad one
    deferring = dist_active();
    int rc = parse_args(argc, argv, &a, &t->rs, flags, &nflags);
    cli_quiet_ranks(0);
    if (rc == CLI_USAGE) agree(rc);
    deferring = 0;
    if (rc != CLI_OK) { free(t); return rc == CLI_HELP ? 0 : 2; }
    if (a.threads) omp_set_num_threads(a.threads);
    rc = setup(t, &a, flags, nflags);
    if (rc) { train_free(t); free(t); return rc; }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);   // mpirun forwards SIGUSR1 to every rank (docs/distributed.md)
    output_is_mpirun = dist_active();

    char err[8192];
    RunState *r = &t->rs;
    int rank0 = dist_rank() == 0, stop = 0;
    t->aug = AUGMENT_CROP;
    augment_parse(r->augment, &t->aug);
    Progress prog;
    progress_init(&prog, stdout, r->step, r->total_steps, r->log_every);
    double session_start = now_seconds(), interval_busy = 0;
    double interval_loss = 0;
    int interval_n = 0;
    int B = r->batch;
    if (r->step == 0) {   // the untrained model's validation loss: where the curves start
        MetricsRow row = {0, 0.0, lr_at(0, r->total_steps, r->warmup, r->lr, r->min_lr), NAN, NAN, NAN, NAN, 0.0};
        if (rank0 && train_out_step(t, &row, 1, 0, err, sizeof err)) rc = report("train", err, 1);
        else if (rank0 && isfinite(row.val_loss))
            progress_message(&prog, stdout, "step 0: val loss %.4f, val PSNR %.2f dB (masked patches)",
                             row.val_loss, row.val_psnr);
        rc = dist_max_int(rc);
    }
    while (rc == 0 && r->step < r->total_steps && !stop) {
        double t0 = now_seconds();
        long step = r->step;
        float lr = lr_at(step, r->total_steps, r->warmup, r->lr, r->min_lr), loss = 0.0f;
        // The step's gradient over every rank's groups; the ranks also agree here on stopping after it.
        int failed_here = 0;
        t->cur_step = step;
        if (grad_reduce_step(&t->gr, mae_grads(t->model), train_group, t, &loss, &stop_requested, &stop, &failed_here,
                             err, sizeof err)) {
            progress_end(&prog, stdout);
            rc = failed_here ? report(NULL, err, 1) : 1;   // the failing rank names the cause
            break;
        }
        loss = test_hook_nan_loss(step + 1, loss);
        if (!isfinite(loss)) {   // the same loss on every rank: all stop here, rank 0 says so
            progress_end(&prog, stdout);
            snprintf(err, sizeof err, "loss is %s at step %ld (lr %.3g); stopped; the last good checkpoint is %s",
                     isnan(loss) ? "NaN" : "infinite", step + 1, lr, t->ckpt_path);
            rc = rank0 ? report("train", err, 1) : 1;
            break;
        }
        if (r->clip > 0) grad_clip(t->tensors, t->ntensors, mae_grads(t->model), r->clip);
        adamw_step(t->tensors, t->ntensors, mae_params(t->model), mae_grads(t->model), t->exp_avg,
                   t->exp_avg_sq, lr, r->wd, step + 1);
        r->step++;
        double t1 = now_seconds();
        interval_busy += t1 - t0;
        interval_loss += loss;
        interval_n++;
        progress_update(&prog, stdout, r->step, loss, lr, interval_busy > 0 ? interval_n * B / interval_busy : 0);

        int last = r->step == r->total_steps;
        int do_log = r->step % r->log_every == 0 || last;
        int do_eval = r->step % r->eval_every == 0 || last;
        int do_samples = r->step % r->sample_every == 0 || last;
        if (do_log || do_eval || do_samples) {
            MetricsRow row = {r->step, (double)r->step * B / t->ntrain, lr, interval_loss / interval_n, NAN, NAN,
                              interval_busy > 0 ? interval_n * B / interval_busy : NAN,
                              r->elapsed_s + (t1 - session_start)};
            if (rank0 && train_out_step(t, &row, do_eval, do_samples, err, sizeof err)) rc = report("train", err, 1);
            if ((rc = dist_max_int(rc))) { progress_end(&prog, stdout); break; }
            if (do_eval && isfinite(row.val_loss))
                progress_message(&prog, stdout, "step %ld: val loss %.4f, val PSNR %.2f dB (masked patches)",
                                 r->step, row.val_loss, row.val_psnr);
            interval_loss = 0; interval_n = 0; interval_busy = 0;
        }
        if (r->step % r->ckpt_every == 0 && !last && !stop) {
            r->elapsed_s += now_seconds() - session_start;
            session_start = now_seconds();
            if (rank0 && run_save_checkpoint(t->run_dir, t->ckpt_path, r, &t->cfg, mae_params(t->model), t->exp_avg,
                                             t->exp_avg_sq, err, sizeof err)) rc = report(NULL, err, 1);
            if ((rc = dist_max_int(rc))) { progress_end(&prog, stdout); break; }
        }
    }
    progress_end(&prog, stdout);
    if (rc == 0) {
        r->elapsed_s += now_seconds() - session_start;
        if (rank0 && run_save_checkpoint(t->run_dir, t->ckpt_path, r, &t->cfg, mae_params(t->model), t->exp_avg,
                                         t->exp_avg_sq, err, sizeof err))
            rc = report(NULL, err, 1);
        else if (stop && r->step < r->total_steps)
            printf("interrupted at step %ld of %ld; saved %s (continue with --resume %s)\n", r->step,
                   r->total_steps, t->ckpt_path, t->run_dir);
        else
            printf("done: %ld steps in %.1f s; checkpoint %s\n", r->step, r->elapsed_s, t->ckpt_path);
        rc = dist_max_int(rc);
    }
    train_free(t);
    free(t);
    return rc;
}
