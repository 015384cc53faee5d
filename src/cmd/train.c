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
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/groups.h"
#include "cmd/log.h"
#include "cmd/output.h"
#include "cmd/runfolder.h"
#include "cmd/runloop.h"
#include "cmd/train_out.h"
#include "cmd/train_state.h"
#include "core/masking.h"
#include "core/model.h"
#include "core/optim.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "infer/recon.h"
#include "io/checkpoint.h"
#include "io/classifier_ckpt.h"
#include "io/files.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"

// The flags that are not part of the run state; the others are parsed straight into RunState.
typedef struct {
    const char *data, *out, *resume, *init, *val, *preset, *channels, *pos, *augment, *pixel_norm, *interp;
    int img, patch, dim, depth, heads, dec_dim, dec_depth, dec_heads, norm_pix, no_norm_pix, threads, overwrite;
    int groups, accum;
    const char *parallel;
    float blr;
    double epochs;   // a double: 0.8 as a float made 0.8 x 150 / 12 = 10.0000001, 11 steps
    LoaderFlags lf;   // --cache-mb, --store, --prefetch, --loader-threads, --max-pixels (cmd/runfolder.h)
    char init_file[ST_RUN_LATEST_MAX];   // --init RUN's checkpoint.safetensors
} Args;

// Defaults of the run flags (the model's are in core/config.h); the help text is built from the
// same macros, so it cannot drift from the values.
#define DEFAULT_STEPS 1000
#define DEFAULT_BLR 3e-3
#define DEFAULT_WD 0.05
#define INIT_NO_DECODER "has no decoder weights; --init needs a full MAE checkpoint"
#define INIT_CLASSIFIER "a fine-tuned classifier's checkpoint, which " INIT_NO_DECODER
// The way on for a flag that decides the weights given with --resume at another value than the run's.
#define RESUME_WAY "start a new run from these weights with --init CHECKPOINT"
// ... and for a file broken at --batch 1, which a resumed run cannot leave by a larger --batch (docs/data.md).
#define RESUME_BATCH_OF_ONE_WAY "remove the file, or " RESUME_WAY " and a --batch of 2 or more (a resumed run keeps its --batch)"
// ... for the model's shape and its pixel statistics, which --init keeps too (it refused them next); --init's
// own refusals of them end with it (init_config).
#define SCRATCH_WAY "another is a new run from scratch (no --resume or --init)"
#define KEEP_WAY(flag) "leave " flag " out to keep the run's; " SCRATCH_WAY
// The run folder's (--val-frac, --val-max, --log-every, --keep): cmd/runfolder.h, finetune's too.

// ---------------------------------------------------------------------------------------------
// Flags

static const char *SYNOPSIS = "--data DIR [--out RUN] [flags]";

static int parse_args(int argc, char **argv, Args *a, RunState *r, Flag *flags, int *nflags_out) {
    memset(a, 0, sizeof *a);
    a->preset = MAE_DEFAULT_PRESET; a->channels = "auto"; a->pos = "learned"; a->augment = "crop"; a->pixel_norm = "dataset";
    a->interp = "bilinear";
    a->img = MAE_DEFAULT_IMG; a->patch = MAE_DEFAULT_PATCH; a->blr = (float)DEFAULT_BLR;
    r->mask_ratio = (float)MAE_DEFAULT_MASK_RATIO; r->wd = (float)DEFAULT_WD; r->val_frac = (float)DEFAULT_VAL_FRAC;
    r->total_steps = DEFAULT_STEPS; r->batch = MAE_DEFAULT_BATCH;
    r->warmup = -1; r->log_every = DEFAULT_LOG_EVERY; r->keep = DEFAULT_KEEP; r->val_max = DEFAULT_VAL_MAX;
    loader_flags_init(&a->lf); a->accum = 1; a->parallel = "auto";
    Flag f[] = {
        {"--data", FLAG_PATH, &a->data, 0, 0, NULL, "folder of images (searched recursively) (required, but with --resume)", "DIR", 0},
        {"--out", FLAG_PATH, &a->out, 0, 0, NULL, "run folder (default a new runs/<timestamp>[-N])", "RUN", 0},
        {"--resume", FLAG_PATH, &a->resume, 0, 0, NULL, "continue a run (its folder or a checkpoint file)", "RUN_OR_FILE", 0},
        {"--overwrite", FLAG_BOOL, &a->overwrite, 0, 0, NULL, "--out holds a run: move it aside whole to RUN.old-N, then start", NULL, 0},
        {"--init", FLAG_PATH, &a->init, 0, 0, NULL, "a new run starting from the weights (and model config) of this checkpoint (.safetensors, or a run folder: its checkpoint.safetensors)", "FILE|RUN", 0},
        {"--val", FLAG_PATH, &a->val, 0, 0, NULL, "validate on this folder instead of holding out --val-frac", "DIR", 0},
        {"--preset", FLAG_CHOICE, &a->preset, 0, 0, "tiny|small|base", "model size (default " MAE_DEFAULT_PRESET ")", NULL, 0},
        {"--img", FLAG_INT, &a->img, 1, MAE_IMG_MAX, NULL, "image size (default " MAE_STR(MAE_DEFAULT_IMG) ")", "N", 0},
        {"--patch", FLAG_INT, &a->patch, 1, 8192, NULL, "patch size (default " MAE_STR(MAE_DEFAULT_PATCH) ")", "N", 0},
        {"--channels", FLAG_CHOICE, &a->channels, 0, 0, "auto|1|3", "1 grey, 3 RGB, auto: 1 when every image is grey (default auto)", NULL, 0},
        {"--dim", FLAG_INT, &a->dim, 1, 16384, NULL, "encoder width (preset)", "N", 0},
        {"--depth", FLAG_INT, &a->depth, 1, 256, NULL, "encoder blocks (preset)", "N", 0},
        {"--heads", FLAG_INT, &a->heads, 1, 1024, NULL, "encoder heads (preset)", "N", 0},
        {"--dec-dim", FLAG_INT, &a->dec_dim, 1, 16384, NULL, "decoder width (preset)", "N", 0},
        {"--dec-depth", FLAG_INT, &a->dec_depth, 0, 256, NULL, "decoder blocks (preset)", "N", 0},
        {"--dec-heads", FLAG_INT, &a->dec_heads, 1, 1024, NULL, "decoder heads (preset)", "N", 0},
        {"--mask-ratio", FLAG_FLOAT, &r->mask_ratio, 0.0, MASK_RATIO_FLAG_MAX, NULL, "fraction of patches removed, leaving at least one visible (default " MAE_STR(MAE_DEFAULT_MASK_RATIO) "); with --init, the checkpoint's when left out", "R", 0},
        {"--norm-pix", FLAG_BOOL, &a->norm_pix, 0, 0, NULL, "loss on per-patch normalised pixels; with --init, the checkpoint's when left out", NULL, 0},
        {"--no-norm-pix", FLAG_BOOL, &a->no_norm_pix, 0, 0, NULL, "loss on the pixels as they are (the default); with --init, turns a norm-pix checkpoint's off", NULL, 0},
        {"--pos", FLAG_CHOICE, &a->pos, 0, 0, "learned|fixed", "position embeddings trained or frozen sin-cos (default learned); with --init, the checkpoint's when left out", NULL, 0},
        {"--pixel-norm", FLAG_CHOICE, &a->pixel_norm, 0, 0, "dataset|imagenet|none", "pixel mean/std (default: measured on the data)", NULL, 0},
        {"--augment", FLAG_CHOICE, &a->augment, 0, 0, "crop|flip|none", "training augmentation (default crop)", NULL, 0},
        {"--interp", FLAG_CHOICE, &a->interp, 0, 0, "bilinear|bicubic", "the filter that resizes the random resized crop (default bilinear); MAE's is bicubic", NULL, 0},
        {"--steps", FLAG_LONG, &r->total_steps, 1, 1e12, NULL, "optimizer steps (default " MAE_STR(DEFAULT_STEPS) ")", "N", 0},
        {"--epochs", FLAG_DOUBLE, &a->epochs, 1e-6, 1e6, NULL, "train for E passes over the data instead of --steps", "E", 0},
        {"--batch", FLAG_INT, &r->batch, 1, 4096, NULL, "images per step, over all processes (default " MAE_STR(MAE_DEFAULT_BATCH) ")", "B", 0},
        {"--accum", FLAG_INT, &a->accum, 1, 4096, NULL, "micro-batches per process and step (gradient accumulation; default 1)", "K", 0},
        {"--groups", FLAG_INT, &a->groups, 1, GROUPS_MAX, NULL, "gradient groups per step, a power of two (default: up to 4); results are bitwise equal for any N processes and --accum K with N*K | G", "G", 0},
        {"--lr", FLAG_FLOAT, &r->lr, 0.0, 10.0, NULL, "learning rate (default blr * batch / 256)", "LR", 0},
        {"--blr", FLAG_FLOAT, &a->blr, 0.0, 10.0, NULL, "base learning rate (default " MAE_STR(DEFAULT_BLR) ")", "LR", 0},
        {"--min-lr", FLAG_FLOAT, &r->min_lr, 0.0, 10.0, NULL, "final learning rate of the cosine (default 0)", "LR", 0},
        {"--warmup-steps", FLAG_LONG, &r->warmup, 0, 1e12, NULL, "linear warm-up steps (default 5% of the run, at least 1; none in a 1-step run)", "N", 0},
        {"--wd", FLAG_FLOAT, &r->wd, 0.0, 10.0, NULL, "AdamW weight decay on weight matrices (default " MAE_STR(DEFAULT_WD) ")", "WD", 0},
        {"--clip", FLAG_FLOAT, &r->clip, 0.0, 1e6, NULL, "clip the global gradient norm (0: off, default)", "NORM", 0},
        {"--seed", FLAG_LONG, &r->seed, 0, RNG_SEED_MAX, NULL, "random seed (default 0)", "S", 0},
        {"--threads", FLAG_INT, &a->threads, 1, CLI_THREADS_MAX, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--parallel", FLAG_CHOICE, &a->parallel, 0, 0, "auto|kernels|groups", "how the threads share a step: every kernel, or each its own gradient groups (default auto: groups where they fit; the same results)", NULL, 0},
        {"--val-frac", FLAG_FLOAT, &r->val_frac, 0.0, VAL_FRAC_MAX, NULL, "held-out fraction, by a hash of the path (default " MAE_STR(DEFAULT_VAL_FRAC) ")", "F", 0},
        {"--val-max", FLAG_INT, &r->val_max, 1, VAL_MAX_LIMIT, NULL, "at most this many held-out images per evaluation (default " MAE_STR(DEFAULT_VAL_MAX) ")", "N", 0},
        {"--eval-every", FLAG_LONG, &r->eval_every, 1, 1e12, NULL, "validate every N steps (default: a tenth of the run, rounded up)", "N", 0},
        {"--ckpt-every", FLAG_LONG, &r->ckpt_every, 1, 1e12, NULL, "checkpoint every N steps (default: as --eval-every)", "N", 0},
        {"--keep", FLAG_INT, &r->keep, 0, KEEP_MAX, NULL, "checkpoint-<step> snapshots kept (default " MAE_STR(DEFAULT_KEEP) ")", "N", 0},
        {"--log-every", FLAG_LONG, &r->log_every, 1, 1e12, NULL, "a log line and metrics row every N steps (default " MAE_STR(DEFAULT_LOG_EVERY) ")", "N", 0},
        {"--sample-every", FLAG_LONG, &r->sample_every, 1, 1e12, NULL, "reconstruction samples every N steps (default: as --eval-every)", "N", 0},
    };
    _Static_assert(sizeof f / sizeof f[0] + LOADER_FLAGS <= 64, "cmd_train's table of flags holds 64");
    int nflags = (int)(sizeof f / sizeof f[0]);
    memcpy(flags, f, sizeof f);
    loader_flags_table(&a->lf, flags + nflags);
    nflags += LOADER_FLAGS;
    *nflags_out = nflags;
    int rc = cli_parse("train", SYNOPSIS, flags, nflags, argc, argv, NULL, 0, NULL);
    if (rc != CLI_OK) return rc;
    if (!a->data && !a->resume) return cli_report("train", "--data DIR is required (see vitmae train --help)", CLI_USAGE);
    if (cli_flag(flags, nflags, "--steps")->seen && cli_flag(flags, nflags, "--epochs")->seen)   // one would be ignored
        return cli_report("train --epochs", "give --steps N or --epochs E, not both", CLI_USAGE);
    if (a->val && cli_flag(flags, nflags, "--val-frac")->seen)   // one would be ignored (docs/data.md, "Validation")
        return cli_report("train --val-frac", VAL_PAIR_REFUSAL, CLI_USAGE);
    char why[256];
    if (mask_ratio_check(r->mask_ratio, 0, why, sizeof why)) return cli_report("train --mask-ratio", why, CLI_USAGE);
    if (a->norm_pix && a->no_norm_pix) return cli_report("train --no-norm-pix", "give --norm-pix or --no-norm-pix, not both", CLI_USAGE);
    if (a->init && a->resume) return cli_report("train --init", "a new run from a checkpoint's weights; it cannot be combined with --resume", CLI_USAGE);
    // A run folder stands for its checkpoint.safetensors (docs/interface.md, section 9).
    if (a->init) a->init = st_checkpoint_arg(a->init, a->init_file, sizeof a->init_file);
    if (a->overwrite && a->resume)
        return cli_report("train --overwrite", "moves a run aside to start a new one; a resumed run continues its own folder, so it cannot be combined with --resume", CLI_USAGE);
    return CLI_OK;
}

// A new run's model in the start line: the preset, and the sizes the flags gave over it (`tiny (--dim 16
// --depth 1)`: the run is not the preset's model, docs/interface.md, section 3).
static void model_text(const char *preset, const MaeConfig *c, char *buf, size_t len) {
    MaeConfig p;
    int n = snprintf(buf, len, "%s", preset);
    if (mae_config_preset(&p, preset) != 0) return;
    const struct { const char *flag; int have, preset; } size[] = {
        {"--dim", c->embed_dim, p.embed_dim}, {"--depth", c->depth, p.depth}, {"--heads", c->num_heads, p.num_heads},
        {"--dec-dim", c->dec_embed_dim, p.dec_embed_dim}, {"--dec-depth", c->dec_depth, p.dec_depth},
        {"--dec-heads", c->dec_num_heads, p.dec_num_heads},
    };
    int changed = 0;
    for (size_t i = 0; i < sizeof size / sizeof size[0]; i++) {
        if (size[i].have == size[i].preset || n < 0 || (size_t)n >= len) continue;
        n += snprintf(buf + n, len - (size_t)n, "%s%s %d", changed++ ? " " : " (", size[i].flag, size[i].have);
    }
    if (changed && n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, ")");
}

// ---------------------------------------------------------------------------------------------
// Setup

// A ratio that removes no patch leaves the loss (the mean over removed patches; MAE's is 0 / 0) without
// a term: every step would train nothing and the validation PSNR be infinite. A usage error.
static int removes_none(const MaeConfig *c, char *err, size_t errlen) {
    int L = mae_num_patches(c);
    if (mae_len_keep(c, c->mask_ratio) < L) return 0;
    snprintf(err, errlen, "train --mask-ratio: %g removes no patch of %d (int(L * (1 - R)) = %d): the loss is over "
             "removed patches", (double)c->mask_ratio, L, L);
    return CLI_USAGE;
}

// The model of a new run: preset, then the flags. err holds `<what>: <why>`.
static int build_config(Train *t, const Args *a, Flag *flags, int nflags, char *err, size_t errlen) {
    MaeConfig *c = &t->cfg;
    run_model_from_flags(c, a->preset, a->img, a->patch, a->dim, a->depth, a->heads, a->pos, a->channels,
                         t->ds.all_grey ? 1 : 3);
    run_decoder_from_flags(c, a->dec_dim, cli_flag(flags, nflags, "--dec-depth")->seen, a->dec_depth, a->dec_heads);
    c->mask_ratio = t->rs.mask_ratio;
    c->norm_pix_loss = a->norm_pix;
    if (a->init) return 0;   // the checkpoint's model: init_config checks the flags against it
    char why[256];
    const char *flag;
    if (mae_config_check_flags(c, &flag, why, sizeof why)) {   // `train --patch: ...` for a size out of its range
        snprintf(err, errlen, "train%s%s: %s", flag ? " " : "", flag ? flag : "", why);
        return CLI_USAGE;
    }
    if (mae_num_patches(c) == 1) {   // no --mask-ratio both keeps and removes a patch of one
        snprintf(err, errlen, "train --patch: %d makes one patch of the %dx%d image; pretraining needs at least 2 "
                 "(patches seen and patches to predict): a smaller --patch or a larger --img", c->patch_size, c->img_size, c->img_size);
        return CLI_USAGE;
    }
    if (mask_ratio_check(c->mask_ratio, mae_num_patches(c), why, sizeof why)) {
        snprintf(err, errlen, "train --mask-ratio: %s", why);
        return CLI_USAGE;
    }
    return removes_none(c, err, errlen);
}

// The run state of a new run: the flags, with the defaults that depend on the data. 0, or CLI_USAGE with
// err (--epochs giving more steps than a run counts).
static int new_run_state(Train *t, const Args *a, Flag *flags, int nflags, const char *data, char *err, size_t errlen) {
    RunState *r = &t->rs;
    if (a->epochs > 0 && run_epoch_steps("train", a->epochs, t->ntrain, r->batch, &r->total_steps, err, errlen))
        return CLI_USAGE;
    if (r->total_steps < 1) r->total_steps = 1;
    if (r->warmup < 0) r->warmup = warmup_default(r->total_steps);
    if (run_lr_blr_check("train", flags, nflags, err, errlen)) return CLI_USAGE;
    if (!cli_flag(flags, nflags, "--lr")->seen) r->lr = lr_from_blr(a->blr, r->batch);
    if (run_min_lr_check("train", r->lr, cli_flag(flags, nflags, "--lr")->seen, a->blr, r->batch, &r->min_lr,
                         cli_flag(flags, nflags, "--min-lr")->seen, err, errlen))
        return CLI_USAGE;
    if (cli_flag(flags, nflags, "--interp")->seen && strcmp(a->augment, "crop")) {
        snprintf(err, errlen, "train --interp: %s: the filter of the random resized crop, which --augment %s "
                 "does not take (leave it out, or use --augment crop)", a->interp, a->augment);
        return CLI_USAGE;
    }
    snprintf(r->augment, sizeof r->augment, "%s", a->augment);
    snprintf(r->interp, sizeof r->interp, "%s", a->interp);
    run_new_id(r->run_id, sizeof r->run_id);
    run_abs_path(r->data, sizeof r->data, data);
    if (!r->eval_every) r->eval_every = run_default_every(r->total_steps);
    if (!r->ckpt_every) r->ckpt_every = r->eval_every;
    if (!r->sample_every) r->sample_every = r->eval_every;
    r->grad_groups = a->groups ? a->groups : dist_default_groups(r->batch);
    return 0;
}

// On resume: cadence flags apply; --steps/--epochs set a new total (checked once the data is known);
// a flag that decides the weights must give the run's own value (docs/data.md "Run folders"). err
// holds the whole message.
static int resumed_run_state(Train *t, const Args *a, const RunState *given, const MaeConfig *run_cfg, Flag *flags,
                             int nflags, char *err, size_t errlen) {
    RunState *r = &t->rs;
    // --preset with the shape flags given over it, as a new run builds it (build_config, both through
    // cmd/runfolder.h): the same model as the run's when every size it sets is the run's.
    const MaeConfig *c = run_cfg;
    MaeConfig f;
    run_model_from_flags(&f, a->preset, a->img, a->patch, a->dim, a->depth, a->heads, a->pos, a->channels, c->in_chans);
    run_decoder_from_flags(&f, a->dec_dim, cli_flag(flags, nflags, "--dec-depth")->seen, a->dec_depth, a->dec_heads);
    // --channels auto and --pixel-norm follow the data, read later: compared then (setup_local, setup).
    const char *way = RESUME_WAY;
    const char *pos = c->pos_learned ? "learned" : "fixed";
    // The model's shape: --init keeps it too, so a new shape is a new run from scratch.
    const RunSameFlag shape[] = {
        {"--dec-dim", 0, 0, a->dec_dim, c->dec_embed_dim, NULL, NULL},
        {"--dec-depth", 0, 0, a->dec_depth, c->dec_depth, NULL, NULL},
        {"--dec-heads", 0, 0, a->dec_heads, c->dec_num_heads, NULL, NULL},
    };
    int rc = run_resume_same_encoder("train", a->preset, &f, 1, a->img, a->patch, a->channels, a->dim, a->depth,
                                     a->heads, c, flags, nflags, SCRATCH_WAY, SCRATCH_WAY, err, errlen);
    if (!rc) rc = run_resume_same_flags("train", shape, (int)(sizeof shape / sizeof shape[0]), flags, nflags,
                                        SCRATCH_WAY, err, errlen);
    if (rc) return rc;
    char blr[32], lr[40], given_lr[32], frac[32];
    run_value_text(blr, sizeof blr, a->blr, 1);
    run_value_text(given_lr, sizeof given_lr, given->lr, 1);
    run_value_text(frac, sizeof frac, given->val_frac, 1);
    snprintf(lr, sizeof lr, "--lr ");
    run_value_text(lr + 5, sizeof lr - 5, r->lr, 1);
    const RunSameFlag same[] = {
        {"--mask-ratio", 0, 1, given->mask_ratio, r->mask_ratio, NULL, NULL},
        {"--norm-pix", 1, 0, 0, 0, "", c->norm_pix_loss ? "" : NULL},
        {"--no-norm-pix", 1, 0, 0, 0, "", c->norm_pix_loss ? NULL : ""},
        {"--pos", 1, 0, 0, 0, a->pos, pos},
        {"--augment", 1, 0, 0, 0, a->augment, r->augment},
        {"--interp", 1, 0, 0, 0, a->interp, r->interp},
        {"--batch", 0, 0, given->batch, r->batch, NULL, NULL},
        // --lr and --blr are the run's when either gives its rate, as in a new run (new_run_state): at a
        // batch not a power of two the two forms of one rate store floats one apart (cmd/runfolder.h)
        {"--lr", 1, 0, 0, 0, given_lr, run_lr_is_runs(given->lr, 0, r->batch, r->lr) ? given_lr : lr + 5},
        {"--blr", 1, 0, 0, 0, blr, run_lr_is_runs(a->blr, 1, r->batch, r->lr) ? blr : lr},
        {"--min-lr", 0, 1, given->min_lr, r->min_lr, NULL, NULL},
        {"--warmup-steps", 0, 0, (double)given->warmup, (double)r->warmup, NULL, NULL},
        {"--wd", 0, 1, given->wd, r->wd, NULL, NULL},
        {"--clip", 0, 1, given->clip, r->clip, NULL, NULL},
        {"--seed", 0, 0, (double)given->seed, (double)r->seed, NULL, NULL},
        // a --val run holds nothing out: no --val-frac is its own
        {"--val-frac", r->val[0] != 0, 1, given->val_frac, r->val_frac, frac, NULL},
    };
    if ((rc = run_resume_val_frac("train", r->val, flags, nflags, err, errlen))) return rc;
    rc = run_resume_same_flags("train", same, (int)(sizeof same / sizeof same[0]), flags, nflags, way, err, errlen);
    if (rc) return rc;
    if (cli_flag(flags, nflags, "--log-every")->seen) r->log_every = given->log_every;
    if (cli_flag(flags, nflags, "--eval-every")->seen) r->eval_every = given->eval_every;
    if (cli_flag(flags, nflags, "--ckpt-every")->seen) r->ckpt_every = given->ckpt_every;
    if (cli_flag(flags, nflags, "--sample-every")->seen) r->sample_every = given->sample_every;
    // Not given, they follow a given --eval-every, as in a new run (new_run_state)
    if (cli_flag(flags, nflags, "--eval-every")->seen) {
        if (!cli_flag(flags, nflags, "--ckpt-every")->seen) r->ckpt_every = r->eval_every;
        if (!cli_flag(flags, nflags, "--sample-every")->seen) r->sample_every = r->eval_every;
    }
    if (cli_flag(flags, nflags, "--keep")->seen) r->keep = given->keep;
    if (cli_flag(flags, nflags, "--val-max")->seen) r->val_max = given->val_max;
    return 0;
}

// --steps N / --epochs E on resume: the run's new total (docs/data.md: from the resumed step on, the
// learning rate follows the schedule of an N-step run with the same warm-up).
static int extend_run(Train *t, const Args *a, const RunState *given, Flag *flags, int nflags, char *err, size_t errlen) {
    RunState *r = &t->rs;
    long total = r->total_steps;
    RunEpochs e = r->epochs;   // as the resume will count them (run_epochs_resume, after this)
    run_epochs_resume(&e, r->step, r->batch, t->ntrain);
    int by_epochs = cli_flag(flags, nflags, "--epochs")->seen;
    if (by_epochs) {
        if (run_epoch_total("train", a->epochs, &e, t->ntrain, r->batch, &total, err, errlen)) return CLI_USAGE;
    } else if (cli_flag(flags, nflags, "--steps")->seen) total = given->total_steps;
    else return 0;
    if (total == r->total_steps) return 0;   // the run's own: its command line with --resume added goes on
    if (total <= r->step && by_epochs) {
        char ep[32], at[32];
        run_value_text(ep, sizeof ep, a->epochs, 1);
        snprintf(at, sizeof at, "%.2f", run_epoch_at(&e, r->step, r->batch));   // to two decimals: the column rounded, as a user reads it
        snprintf(err, errlen, "train --resume: the run is at epoch %s (step %ld); --epochs %s is not past it: --epochs "
                 "counts the passes from the run's start, as metrics.csv's epoch column does", at, r->step, ep);
        return CLI_USAGE;
    }
    if (total <= r->step) {
        snprintf(err, errlen, "train --resume: the run is at step %ld; --steps/--epochs must give more steps than that "
                 "(asked for %ld in total)", r->step, total);
        return CLI_USAGE;
    }
    if (total != r->total_steps)
        snprintf(t->goes_on, sizeof t->goes_on, "the run goes on to step %ld (was %ld): the learning rate "
                 "follows the %ld-step schedule from step %ld", total, r->total_steps, total, r->step);
    // A cadence the run took by default follows the new total, as a new run of it would take it: a
    // 10-step trial extended to 100,000 steps evaluated, drew and saved at every one of them. One given
    // now, or given at the start (not its old total's default), stays.
    long old = r->total_steps, *every[3] = {&r->eval_every, &r->ckpt_every, &r->sample_every};
    const char *flag[3] = {"--eval-every", "--ckpt-every", "--sample-every"};
    int eval_given = cli_flag(flags, nflags, "--eval-every")->seen;
    for (int k = 0; k < 3; k++)
        if (!cli_flag(flags, nflags, flag[k])->seen && !(k > 0 && eval_given) && run_every_was_default(*every[k], old))
            *every[k] = run_default_every(total);
    r->total_steps = total;
    return 0;
}

// --init: the model of the checkpoint. Shape flags given must agree with it; the training targets
// (--mask-ratio, --norm-pix / --no-norm-pix, --pos) may change, and left out are the checkpoint's, as
// MAE's checkpoint keeps mask_ratio and norm_pix_loss with its model (docs/data.md, "Run folders"): a
// run trained at 0.6 went on at the default 0.75 unsaid; the pixel statistics are the checkpoint's. A refusal ends with
// resume's way on for the model (SCRATCH_WAY; docs/interface.md, section 5): "(--init keeps its model)"
// alone left the user nowhere to go.
static int init_config(Train *t, const Args *a, const Checkpoint *ck, Flag *flags, int nflags, char *err, size_t errlen) {
    const MaeConfig *f = &t->cfg, *c = &ck->cfg;   // f: preset + flags
    struct { const char *flag; int given, ckpt; } shape[] = {
        {"--img", f->img_size, c->img_size}, {"--patch", f->patch_size, c->patch_size},
        {"--channels", f->in_chans, c->in_chans}, {"--dim", f->embed_dim, c->embed_dim},
        {"--depth", f->depth, c->depth}, {"--heads", f->num_heads, c->num_heads},
        {"--dec-dim", f->dec_embed_dim, c->dec_embed_dim}, {"--dec-depth", f->dec_depth, c->dec_depth},
        {"--dec-heads", f->dec_num_heads, c->dec_num_heads},
    };
    int preset = cli_flag(flags, nflags, "--preset")->seen;
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        int seen = cli_flag(flags, nflags, shape[i].flag)->seen || (preset && i >= 3);
        if (seen && shape[i].given != shape[i].ckpt) {
            if (preset && !cli_flag(flags, nflags, shape[i].flag)->seen)   // the preset's value, named as such
                snprintf(err, errlen, "train --init %s: --preset %s sets %s %d, which disagrees with the checkpoint's "
                         "%d (--init keeps its model); " SCRATCH_WAY, a->init, a->preset, shape[i].flag, shape[i].given,
                         shape[i].ckpt);
            else
                snprintf(err, errlen, "train --init %s: %s %d disagrees with the checkpoint's %d (--init keeps its "
                         "model); " SCRATCH_WAY, a->init, shape[i].flag, shape[i].given, shape[i].ckpt);
            return CLI_USAGE;
        }
    }
    if (cli_flag(flags, nflags, "--pixel-norm")->seen) {
        snprintf(err, errlen, "train --init %s: --pixel-norm cannot change: the weights were trained with the "
                 "checkpoint's pixel statistics; leave --pixel-norm out to keep them; " SCRATCH_WAY, a->init);
        return CLI_USAGE;
    }
    MaeConfig m = *c;
    int ratio_given = cli_flag(flags, nflags, "--mask-ratio")->seen;
    if (ratio_given) m.mask_ratio = t->rs.mask_ratio;
    else t->rs.mask_ratio = m.mask_ratio;
    if (cli_flag(flags, nflags, "--norm-pix")->seen || cli_flag(flags, nflags, "--no-norm-pix")->seen)
        m.norm_pix_loss = f->norm_pix_loss;
    if (cli_flag(flags, nflags, "--pos")->seen) m.pos_learned = f->pos_learned;
    int keep = mae_len_keep(&m, m.mask_ratio), L = mae_num_patches(&m);
    char ratio_s[32];   // as the start line and --json show it (docs/interface.md, section 3)
    config_float_text(m.mask_ratio, ratio_s, sizeof ratio_s);
    if (!ratio_given && (keep < 1 || keep >= L)) {   // a converted checkpoint's (tools/convert_mae.py takes 0)
        snprintf(err, errlen, "train --init %s: the checkpoint's mask_ratio %s %s patch of %d%s; give --mask-ratio R", a->init,
                 ratio_s, keep < 1 ? "leaves no visible" : "removes no", L,
                 keep < 1 ? "" : " (the loss is over removed patches)");
        return CLI_USAGE;
    }
    if (keep < 1) {
        snprintf(err, errlen, "train --mask-ratio: %s leaves no visible patch of %d", ratio_s, L);
        return CLI_USAGE;
    }
    if (removes_none(&m, err, errlen)) return CLI_USAGE;
    t->cfg = m;
    return 0;
}

// The memory rule for a step of `groups` gradient groups (mae_memory_check): the model holds one group
// (batch / groups images); pixels, images and the prefetched batches hold this process's share; the
// reduction holds log2(G / N) gradients and, with N > 1, the received slices of one (dist/dist.h).
static size_t bytes_per_image(const Train *t, int groups, int prefetch) {
    size_t per = (size_t)(t->rs.batch / groups);
    size_t tree = grad_reduce_floats(groups, t->rs.processes, mae_num_params(&t->cfg)) * sizeof(float);
    return (size_t)t->S * t->S * t->C * (2 + prefetch) * sizeof(float) * t->share / per + (tree + per - 1) / per;
}
static int memory_check(const Train *t, int groups, int prefetch, char *err, size_t errlen) {
    return mae_memory_check(&t->cfg, (int)(t->rs.batch / groups), bytes_per_image(t, groups, prefetch), err, errlen);
}

// The memory rule at `groups` for groups_that_fit (cmd/groups.h), with the run's --prefetch.
typedef struct { const Train *t; int prefetch; } TrainFit;
static int train_fits(const void *ctx, int groups) {
    const TrainFit *f = ctx;
    char why[512];
    return !memory_check(f->t, groups, f->prefetch, why, sizeof why);
}

// A model that did not fit (mae_create's err), said in terms of --batch (cmd/groups.h): exit 1.
static int model_oom(const Train *t, const char *err, int images, int workers) {
    char msg[1024];
    groups_oom_message(msg, sizeof msg, err, (int)t->rs.batch, images, workers);
    return cli_report("train", msg, 1);
}

// The run folder must not be in another process's use (exit 1) nor hold another run: refused (exit 2),
// or with --overwrite moved aside whole. *own: resuming into the run's own folder.
static int guard_run_folder(Train *t, const Args *a, const char *resumed_dir, int *own, char *err, size_t errlen) {
    char why[4400], path[4096], dir[4096];
    int rc;
    if (resumed_dir[0]) run_resume_path(a->resume, path, sizeof path, dir, sizeof dir);   // the file resumed
    if (run_folder_lock(t->run_dir, why, sizeof why)) {   // another process's run: left alone
        snprintf(err, errlen, "train: %s", why);
        return 1;
    }
    if (resumed_dir[0]) {   // resuming into the run's own folder is what --resume is for
        char *x = realpath(resumed_dir, NULL), *y = realpath(t->run_dir, NULL);
        int same = x && y && !strcmp(x, y);
        free(x);
        free(y);
        int foreign = same ? run_folder_foreign_checkpoint(path, t->run_dir) : 0;
        if (foreign) {
            // --resume RUN: the file named, not RUN ("t/a: not a checkpoint of the run in t/a")
            snprintf(err, errlen, "train --resume %s: %s%snot a checkpoint of the run in %s (%s); continue it in a folder "
                     "of its own with --out DIR", a->resume, strcmp(path, a->resume) ? path : "",
                     strcmp(path, a->resume) ? " is " : "", t->run_dir, run_foreign_why(foreign, t->run_dir, why, sizeof why));
            return CLI_USAGE;
        }
        // Going back to an earlier snapshot in the run's own folder, where a later checkpoint is of
        // another schedule than the one the run now goes on with (other --steps/--epochs given, or none
        // where the run was extended since): those later checkpoints would not be written again, so they
        // would stay among its files (--keep pruning by step, and a --resume of them taking the new run's
        // metrics rows as their own). Refused; the same schedule writes them again, bit for bit, over the
        // same training images: over others (known once --data is scanned, before anything in the folder
        // is changed) the run goes elsewhere, and every later checkpoint is of the trajectory it leaves.
        RunLater lt;
        long later = same ? run_folder_later_schedule(t->run_dir, t->rs.step,
                                                      t->trains_other_images ? -1 : t->rs.total_steps, &lt) : -1;
        if (later == -2) {   // a later snapshot may be there: said, not guessed (docs/interface.md section 9)
            snprintf(err, errlen, "train --resume %s: cannot list the folder %s: %s", a->resume, t->run_dir, strerror(errno));
            return 1;
        }
        if (later >= 0) {
            // Each file named or counted: moved away as the line said, checkpoint.safetensors (named by
            // its step only) was still there and the resume refused again.
            char which[4800];
            if (lt.count == 1)
                snprintf(which, sizeof which, "%s/%s, step %ld of %ld", t->run_dir, lt.name, later, lt.total);
            else
                snprintf(which, sizeof which, "%d files, the first %s/%s, step %ld of %ld%s", lt.count, t->run_dir,
                         lt.name, later, lt.total, lt.latest && strcmp(lt.name, "checkpoint.safetensors")
                                                       ? ", checkpoint.safetensors among them" : "");
            // All of one schedule (the run extended once since), theirs given is a way on in this folder:
            // the resume goes on over them on their schedule, no stale file left (docs/interface.md, section 9);
            // not on other images, which no schedule makes them again.
            char theirs[96] = "", whose[4800 + 64];
            if (t->trains_other_images) {
                snprintf(whose, sizeof whose, "made with other images than this resume's (%s)", which);
            } else {
                snprintf(whose, sizeof whose, "on another schedule (%s; this resume's is of %ld steps)", which,
                         t->rs.total_steps);
                if (!lt.mixed)
                    snprintf(theirs, sizeof theirs, ", or give their --steps %ld to write them over on it", lt.total);
            }
            snprintf(err, errlen, "train --resume %s: %s holds later checkpoints of this run %s; going on from step %ld "
                     "would leave them among its files; continue in a folder of its own with --out DIR%s (or move "
                     "them away)", a->resume, t->run_dir, whose, t->rs.step, theirs);
            return CLI_USAGE;
        }
        if (same && (rc = metrics_gap_refusal("train", a->resume, path, t->run_dir,
                                                       t->rs.step < t->rs.total_steps, err, errlen)))
            return rc;
        if (same && (rc = run_resume_user_outputs("train", a->resume, t->run_dir, err, errlen))) return rc;
        if (same && (rc = run_other_ahead_refusal("train", a->resume, t->run_dir, t->rs.step, t->rs.total_steps,
                                                  t->rs.keep, err, errlen)))
            return rc;
        if (same) { *own = 1; return 0; }
    }
    // A samples/ folder of sheets counts too: a new run writes its sheets samples/step-N.png over those
    // there (an empty one, or one of a user's notes, holds none to write over).
    int has_sheets = run_folder_has_sheets(t->run_dir);
    if (!run_folder_has_run(t->run_dir) && !has_sheets) return 0;
    if (resumed_dir[0]) return run_folder_refusal("train", t->run_dir, run_folder_holds_which(path, t->run_dir), err, errlen);
    int has = a->overwrite ? 1 : run_folder_has_checkpoint(t->run_dir);
    if (has < 0) {   // a snapshot may be there: said, not guessed
        snprintf(err, errlen, "train --out %s: cannot list the folder: %s", t->run_dir, strerror(errno));
        return 1;
    }
    if (!has)   // --resume would find nothing
        return run_folder_refusal("train", t->run_dir, RUN_HOLDS_NO_CHECKPOINT, err, errlen);
    // A run from --init weights cannot go on as --resume (the two are refused together): the other ways.
    if (!a->overwrite && a->init) {
        char aside[4096];
        run_folder_aside_base(t->run_dir, aside, sizeof aside);
        snprintf(err, errlen, "train --out %s: the folder already holds a run; a new run from --init weights goes to "
                 "another --out folder, or pass --overwrite to move the old run aside (to %s.old-N)", t->run_dir,
                 aside);
        return CLI_USAGE;
    }
    if (!a->overwrite) return run_folder_refusal("train", t->run_dir, RUN_HOLDS_RUN, err, errlen);
    // --init moved with the old run: init_moved says where it is now.
    return run_folder_overwrite("train", t->run_dir, sizeof t->run_dir, a->init, t->init_moved, sizeof t->init_moved,
                                err, errlen) ? 1 : 0;
}

// --store: the on-disk store of working images of the --data folder's images (cmd/runfolder.h): the
// training split's and those --val-frac holds out, which share its cache (first come: step 0's
// validation fills it first). auto weighed the training split alone, and a folder whose training
// images fit but not with the held-out ones went without a store, decoding again each epoch.
static int use_store(Train *t, const Args *a, StoreNote *note, char *err, size_t errlen) {
    return run_use_store(&t->ds, NULL, t->ds.n, a->lf.store, a->lf.cache_mb, a->lf.store_min_free_mb, &t->store_made, note,
                         err, errlen);
}

// Allocates every buffer the steps use, once.
static int alloc_buffers(Train *t) {
    // This process's share of a step, one gradient group, or the sample images, whichever is more.
    int most = t->share > t->per ? t->share : t->per;
    if (most < TRAIN_SAMPLE_IMAGES) most = TRAIN_SAMPLE_IMAGES;
    size_t B = (size_t)most, img = (size_t)t->S * t->S * t->C;
    t->pixels = malloc(B * img * sizeof(float));
    t->images = malloc(B * img * sizeof(float));
    t->recon = malloc(img * sizeof(float));
    t->noise = malloc(B * t->L * sizeof(float));
    t->ids_keep = malloc(B * t->L * sizeof(int));
    t->mask_scratch = malloc(2 * (size_t)t->L * sizeof(int));
    t->batch_items = malloc((B > (size_t)t->rs.batch ? B : (size_t)t->rs.batch) * sizeof(int));
    t->order.perm[0] = malloc(((size_t)t->ntrain + 1) * sizeof(int));
    t->order.perm[1] = malloc(((size_t)t->ntrain + 1) * sizeof(int));
    t->removed = malloc((size_t)t->L);
    t->patch_err = malloc((size_t)t->L * sizeof(float));
    t->order.epoch[0] = t->order.epoch[1] = -1;
    return t->pixels && t->images && t->recon && t->noise && t->ids_keep && t->mask_scratch && t->batch_items &&
           t->order.perm[0] && t->order.perm[1] && t->removed && t->patch_err ? 0 : -1;
}

static void train_free(Train *t) {
    free(t->pixels); free(t->images); free(t->recon); free(t->noise); free(t->ids_keep); free(t->mask_scratch);
    free(t->batch_items); free(t->order.perm[0]); free(t->order.perm[1]); free(t->removed); free(t->patch_err);
    free(t->exp_avg); free(t->exp_avg_sq);
    grad_reduce_free(&t->gr);
    grad_workers_free(&t->gw);
    for (int w = 1; w < WORKERS_MAX; w++) mae_free(t->runner[w].model);
    free(t->train_idx); free(t->val_idx); free(t->eval_idx);
    if (t->model) mae_free(t->model);
    gemm_weights_release();
    if (t->metrics) fclose(t->metrics);
    history_free(&t->hist);
    dataset_free(&t->ds);
    dataset_free(&t->val_ds);
    run_broken_free(&t->notes);
}

// Setup, phase 1 (each rank alone): the checkpoint to resume or --init, the data, the model config,
// the gradient groups against this job's process count and --accum, memory. Reports its failure
// (deferred under mpirun) and returns the exit code.
static int setup_local(Train *t, const Args *a, Flag *flags, int nflags, Checkpoint *init, char *resumed_dir,
                       const char **data_out) {
    char err[CLI_ERR_MAX];
    const char *data = a->data;
    int resuming = a->resume != NULL;
    const RunState given = t->rs;   // the flags; on resume the checkpoint's state replaces them
    if (resuming) {
        char path[4096];
        run_resume_path(a->resume, path, sizeof path, resumed_dir, 4096);
        // The folder the run goes on in, held before its checkpoint is read: a run still training there
        // is refused as such (cmd/runfolder.h), not for a checkpoint it has yet to write.
        if (dist_rank() == 0 && run_folder_lock(a->out ? a->out : resumed_dir, err, sizeof err))
            return cli_report("train", err, 1);
        Checkpoint ck;
        int missing = run_resume_missing("train", a->resume, err, sizeof err);
        if (missing) return cli_report(NULL, err, missing);
        if (run_resume_load(path, &ck, &t->rs, err, sizeof err)) return cli_report(NULL, err, 1);
        t->rs_resumed = t->rs;
        int rc = resumed_run_state(t, a, &given, &ck.cfg, flags, nflags, err, sizeof err);
        if (rc) { ckpt_free(&ck); return cli_report(NULL, err, rc); }
        t->cfg = ck.cfg;
        snprintf(t->run_dir, sizeof t->run_dir, "%s", a->out ? a->out : resumed_dir);
        if ((rc = run_resume_check_folders("train", a->resume, t->rs.data, t->rs.val, t->rs.val_frac, data, a->val,
                                           err, sizeof err))) {
            ckpt_free(&ck);
            return cli_report(NULL, err, rc);
        }
        if (!data) data = t->rs.data;
        if ((rc = run_folder_overlaps("train", a->out ? "--out" : "--resume", t->run_dir, data,
                                      a->val ? a->val : t->rs.val[0] ? t->rs.val : NULL, err, sizeof err)) ||
            (rc = run_store_meets_run("train", a->lf.store, t->run_dir, err, sizeof err))) {
            ckpt_free(&ck);
            return cli_report(NULL, err, rc);
        }
        // The model holds one gradient group's images (a G the checkpoint cannot have had was refused
        // with its train_state: run_state_groups_check).
        t->per = t->rs.batch / t->rs.grad_groups;
        t->model = mae_create(&t->cfg, t->per, err, sizeof err);
        if (!t->model) { ckpt_free(&ck); return model_oom(t, err, t->per, 0); }
        size_t np = mae_num_params(&t->cfg);
        memcpy(mae_params(t->model), ck.params, np * sizeof(float));
        t->exp_avg = ck.exp_avg; t->exp_avg_sq = ck.exp_avg_sq;
        ck.exp_avg = ck.exp_avg_sq = NULL;
        ckpt_free(&ck);
        snprintf(t->resuming, sizeof t->resuming, "resuming %s at step %ld of %ld", path, t->rs.step, t->rs.total_steps);
    } else if (a->out) {
        snprintf(t->run_dir, sizeof t->run_dir, "%s", a->out);
    } else {
        run_folder_default("", t->run_dir, sizeof t->run_dir);
    }
    // The run folder and the image folders must not hold one another (cmd/runfolder.h).
    const char *val = a->val ? a->val : resuming && t->rs.val[0] ? t->rs.val : NULL;
    if (!resuming) {
        int rc = run_folder_overlaps("train", a->out ? "--out" : NULL, t->run_dir, data, val, err, sizeof err);
        if (!rc) rc = run_store_meets_run("train", a->lf.store, t->run_dir, err, sizeof err);   // a store at a run's file
        if (rc) return cli_report(NULL, err, rc);
    }
    // --init: the model (sizes and pixel statistics) comes from the checkpoint.
    if (a->init) {
        int kind = ckpt_peek_kind(a->init, CKPT_FULL, err, sizeof err);   // the kind before a NaN in the tensors
        // A classifier is named as one, as eval and reconstruct name it: "no decoder weights" alone read
        // as a damaged pretraining file.
        if (kind == CKPT_CLASSIFIER) return cli_report(a->init, INIT_CLASSIFIER, 1);
        if (kind != CKPT_FULL) return kind < 0 ? cli_report(NULL, err, 1) : cli_report(a->init, INIT_NO_DECODER, 1);
        if (ckpt_load_weights(a->init, init, err, sizeof err)) return cli_report(NULL, err, 1);
        if (!init->has_decoder) {
            int clf = init->classifier;
            ckpt_free(init);
            return cli_report(a->init, clf ? INIT_CLASSIFIER : INIT_NO_DECODER, 1);
        }
    }
    int img = resuming ? t->cfg.img_size : a->init ? init->cfg.img_size : a->img;

    // --max-pixels decides which images are usable: the run's own unless given again (docs/data.md).
    if (!resuming || cli_flag(flags, nflags, "--max-pixels")->seen) t->rs.max_pixels = a->lf.max_pixels;
    // The data: headers read now, pixels decoded when first needed (docs/data.md).
    DatasetOptions opt = {.max_pixels = t->rs.max_pixels, .work_size = 2 * img, .cache_mb = a->lf.cache_mb, .lazy = 1};
    int src = dataset_scan(data, &opt, &t->ds, err, sizeof err);
    if (src) { ckpt_free(init); return cli_report(dataset_err_what(src, data), err, 1); }
    // Another run's folder given as the images' (--data RUN where --init RUN was meant): refused before
    // its sample sheets train (docs/data.md, "Files").
    if ((src = run_data_refuse_run_folder("train", a->data ? "--data" : "--resume", &t->ds, 0, err, sizeof err))) {
        ckpt_free(init);
        return cli_report(NULL, err, src);
    }
    if (resuming) t->ds.batch_of_one_way = RESUME_BATCH_OF_ONE_WAY;
    if (t->ds.n == 0) {
        run_report_skipped(&t->ds);
        ckpt_free(init);
        snprintf(err, sizeof err, "no usable image (%d skipped, %d ignored)", t->ds.nskipped, t->ds.nignored);
        return cli_report(data, err, 1);
    }
    if (val) {
        opt.cache_mb = a->lf.cache_mb / 8;   // validation images are few and read at every evaluation
        if ((src = dataset_scan(val, &opt, &t->val_ds, err, sizeof err))) {
            ckpt_free(init);
            return cli_report(dataset_err_what(src, val), err, 1);
        }
        if ((src = run_data_refuse_run_folder("train", a->val ? "--val" : "--resume", &t->val_ds, 1, err, sizeof err))) {
            ckpt_free(init);
            return cli_report(NULL, err, src);
        }
        t->val_ds.root_role = RUN_VAL_ROLE;
        if (t->val_ds.n == 0) {
            run_report_skipped(&t->val_ds);   // the files that explain the failure, as --data's above
            ckpt_free(init);
            snprintf(err, sizeof err, "no usable image for --val (%d skipped, %d ignored)", t->val_ds.nskipped,
                     t->val_ds.nignored);
            return cli_report(val, err, 1);
        }
        t->vds = &t->val_ds;
        int *none = NULL, nnone = 0;   // every image of --data trains
        if (dataset_split(&t->ds, 0.0, &t->train_idx, &t->ntrain, &none, &nnone)) { ckpt_free(init); return cli_report("train", "out of memory", 1); }
        free(none);
        t->val_idx = malloc(sizeof(int) * (size_t)t->val_ds.n);
        if (!t->val_idx) { ckpt_free(init); return cli_report("train", "out of memory", 1); }
        for (int i = 0; i < t->val_ds.n; i++) t->val_idx[i] = i;
        t->nval = t->val_ds.n;
    } else {
        t->vds = &t->ds;
        // The run's fallback images where it has them, so that files added or removed leave the split as it was
        // (docs/interface.md section 2, "Validation split"); the images this split pins are the run's from now on.
        if (dataset_split_pinned(&t->ds, t->rs.val_frac, &t->rs.split_pin, &t->train_idx, &t->ntrain, &t->val_idx,
                                 &t->nval) || t->ntrain == 0) {
            run_report_skipped(&t->ds);
            ckpt_free(init);
            snprintf(err, sizeof err, "no training image left after holding out %g for validation", t->rs.val_frac);
            return cli_report(data, err, 1);
        }
    }
    if (resuming) {
        int rc = extend_run(t, a, &given, flags, nflags, err, sizeof err);
        if (!rc) rc = run_resume_same_auto_channels("train", a->channels, t->ds.all_grey ? 1 : 3, &t->cfg, flags, nflags,
                                                    KEEP_WAY("--channels"), err, sizeof err);
        if (rc) return cli_report(NULL, err, rc);
        if (a->data) run_abs_path(t->rs.data, sizeof t->rs.data, a->data);   // a moved folder: where it is now
    }
    if (val) run_abs_path(t->rs.val, sizeof t->rs.val, val);

    if (!resuming) {
        int rc = build_config(t, a, flags, nflags, err, sizeof err);
        if (rc == 0 && a->init) rc = init_config(t, a, init, flags, nflags, err, sizeof err);
        if (rc == 0) rc = new_run_state(t, a, flags, nflags, data, err, sizeof err);
        if (rc) { ckpt_free(init); return cli_report(NULL, err, rc); }
    }
    // The images this session trains on, against those of the checkpoint (said once the run starts).
    char images[RUN_DATA_SIG_MAX];
    run_data_signature(&t->ds, t->vds == &t->val_ds ? &t->val_ds : NULL, t->vds == &t->val_ds ? NULL : t->train_idx,
                       t->ntrain, t->val_idx, t->nval, images, sizeof images);
    int changed = resuming ? run_data_changed("train", data, t->vds == &t->val_ds ? val : NULL, t->rs.images, images,
                                              t->images_changed, sizeof t->images_changed) : 0;
    if (!changed) t->images_changed[0] = 0;
    t->trains_other_images = changed == 2;
    snprintf(t->rs.images, sizeof t->rs.images, "%s", images);
    // A resume on another count of training images starts the epoch column's new stretch (cmd/runfolder.h).
    run_epochs_resume(&t->rs.epochs, t->rs.step, t->rs.batch, t->ntrain);
    t->S = t->cfg.img_size; t->C = t->cfg.in_chans; t->L = mae_num_patches(&t->cfg);
    t->K = mae_len_keep(&t->cfg, t->rs.mask_ratio);
    if (t->K < 1) {   // a resumed train_state edited by hand (a new run's ratio was checked above)
        ckpt_free(init);
        return cli_report(NULL, "train --resume: the run's mask ratio leaves no visible patch", 1);
    }
    if (t->K >= t->L) {   // ... or removes none: every step's loss 0 / 0 (it trained on a loss of 0, exit 0)
        ckpt_free(init);
        return cli_report(NULL, "train --resume: the run's mask ratio removes no patch (the loss is over removed patches)", 1);
    }

    // The gradient groups: fixed for the run; this job's N processes and --accum K must divide them.
    if (resuming && a->groups && a->groups != t->rs.grad_groups) {
        snprintf(err, sizeof err, "%d: this run sums each step as %d gradient group%s, fixed when it started so that "
                 "it continues bitwise (leave --groups out)", a->groups, t->rs.grad_groups, t->rs.grad_groups == 1 ? "" : "s");
        ckpt_free(init);
        return cli_report("train --groups", err, CLI_USAGE);
    }
    t->rs.processes = dist_size();
    t->rs.accum = a->accum;
    int bad = dist_check_groups_given(t->rs.batch, t->rs.grad_groups, a->groups != 0, t->rs.processes, t->rs.accum, err,
                                      sizeof err);
    if (bad) {   // G itself fails only when --groups gave it (a default or a resumed run's G divides the batch)
        if (bad != DIST_BAD_GROUPS && resuming)
            run_resume_groups_refusal(err, sizeof err, bad, dist_size(), t->rs.accum, t->rs.grad_groups);
        ckpt_free(init);
        return cli_report(bad == DIST_BAD_ACCUM ? "train --accum" : bad == DIST_BAD_GROUPS ? "train --groups" : "train",
                          err, CLI_USAGE);
    }
    t->per = t->rs.batch / t->rs.grad_groups;
    t->share = t->rs.batch / t->rs.processes;

    // Memory: refuse before allocating what cannot fit, said in terms of --batch, and with the way out
    // when a new run has one: the fewest gradient groups above its own that would fit.
    if (memory_check(t, t->rs.grad_groups, a->lf.prefetch, err, sizeof err)) {
        char msg[1024 + 96];
        groups_oom_message(msg, 1024, err, (int)t->rs.batch, t->per, 0);
        TrainFit fit = {t, a->lf.prefetch};
        groups_fit_hint(msg, sizeof msg, t->rs.batch,
                        resuming ? 0 : groups_that_fit(t->rs.batch, t->rs.grad_groups, t->rs.processes,
                                                       t->rs.accum, GROUPS_MAX, train_fits, &fit));
        ckpt_free(init);
        return cli_report("train", msg, 2);
    }
    size_t per_image = bytes_per_image(t, t->rs.grad_groups, a->lf.prefetch);
    // The groups of a micro-batch at once where memory allows (cmd/groups.h): the same bits.
    t->at_once = groups_at_once(&t->cfg, t->per, 1 + t->K, t->rs.grad_groups / t->rs.processes / t->rs.accum,
                                per_image * (size_t)t->per, omp_get_max_threads());
    // Threads as workers (dist/workers.h): each a thread of its own, taking its groups as one thread would.
    if (parallel_check(a->parallel, t->rs.grad_groups, t->rs.accum, omp_get_max_threads(), &t->workers, err,
                       sizeof err)) {
        ckpt_free(init);
        return cli_report("train --parallel", err, 2);
    }
    if (t->workers) {
        size_t np = mae_num_params(&t->cfg);
        int mine = t->rs.grad_groups / t->rs.processes;   // this process's groups
        int at_once = groups_at_once(&t->cfg, t->per, 1 + t->K, mine / t->workers / t->rs.accum,
                                     per_image * (size_t)t->per +
                                         grad_workers_floats(mine, np, t->workers, 1) * sizeof(float),
                                     t->workers);   // a worker takes its groups as the threads' rule says (cmd/groups.h)
        int is_auto = !strcmp(a->parallel, "auto");
        if (parallel_memory(&t->cfg, t->per, at_once, t->workers, mine, per_image * (size_t)t->per,
                            is_auto ? 0.5 : 0.9, err, sizeof err) == 0) {
            t->at_once = at_once;
        } else if (is_auto) {
            t->workers = 0;   // the team then, which needs less
        } else {
            ckpt_free(init);
            return cli_report("train --parallel groups", err, 2);
        }
    }
    // The in-memory cache takes what the step leaves (cmd/runfolder.h), before any image is decoded.
    run_fit_cache(&t->ds, t->vds == &t->val_ds ? &t->val_ds : NULL, a->lf.cache_mb,
                  groups_step_bytes(&t->cfg, t->per, t->at_once, t->workers, t->rs.grad_groups / t->rs.processes,
                                    per_image * (size_t)t->per),
                  a->lf.loader_threads, &t->cache_note);
    *data_out = data;
    return 0;
}


// Flags -> a model, data and a run folder ready for the first step (or the resumed one).
// Prints its own failure and returns the exit code. Under mpirun it runs in phases that end with
// cli_agree(): every rank leaves at the same phase, and a collective is never half attended.
static int setup(Train *t, const Args *a, Flag *flags, int nflags) {
    char err[CLI_ERR_MAX], resumed_dir[4096] = "";
    int resuming = a->resume != NULL, rank = dist_rank(), rc = 0;
    const char *data = NULL;
    Checkpoint init;
    memset(&init, 0, sizeof init);
    run_test_hook_stop("1");
    cli_defer(1);
    if ((rc = cli_agree(setup_local(t, a, flags, nflags, &init, resumed_dir, &data)))) { ckpt_free(&init); return rc; }

    // 2. Every rank must see the same files (scan order): a rank on another filesystem stops here.
    cli_defer(0);
    if (run_check_same_files(&t->ds)) { ckpt_free(&init); return 1; }
    // ... and start from the same weights (a fresh run's come from the seed, the same everywhere).
    size_t nparams = mae_num_params(&t->cfg);
    const float *start[3] = {resuming ? mae_params(t->model) : init.params, t->exp_avg, t->exp_avg_sq};
    if ((resuming || a->init) && run_check_same_start(t->rs.step, start, 3, nparams)) { ckpt_free(&init); return 1; }
    // A run resumed at its last step trains nothing: said, with the way on (`--resume` alone reads as
    // "train more"), once the run folder is checked (as any resume's: another process's run, another
    // run's folder), and then no folder made, locked or written, no image decoded (docs/data.md, "Run
    // folders"). The same on every rank: they resumed the same state.
    int ended = t->resuming[0] && !t->goes_on[0] && t->rs.step >= t->rs.total_steps;
    cli_defer(1);

    // 3. Rank 0: the run folder checked (never written into when it holds another run, docs/data.md
    //    "Run folders") and made, then the store of working images and the pixel statistics, which
    //    decode into it: an --out that cannot be made stops the run before any folder or working image
    //    of the store (docs/interface.md, section 1). A run that cannot start leaves neither folder
    //    behind (cmd_train). The files the scan skipped are said once the run folder is made and
    //    locked, or before the failure they explain: a refused run prints its one line only
    //    (docs/interface.md, section 5, "Checked first").
    int own = 0;   // resuming into the run's own folder (rank 0's)
    if (rank == 0) {
        StoreNote store_note = {.text = ""};   // said once the run folder is made
        // No --out: a name that was free when the run started (run_folder_default), so nothing to guard;
        // another run that takes it meanwhile sends this one to the next name of the series, below.
        int named = !resuming && !a->out;
        rc = named ? 0 : guard_run_folder(t, a, resumed_dir, &own, err, sizeof err);
        if (rc) cli_report(NULL, err, rc);
        while (!rc && !ended) {
            if (train_out_prepare(t->run_dir, &t->made, err, sizeof err)) {   // the default folder is no flag's (a read-only working directory)
                if (named) cli_error("train", "cannot make the default run folder %s: %s (pass --out DIR)", t->run_dir, err);
                // The flag the user gave names it: --resume RUN without --out goes on in RUN.
                rc = named ? 1 : cli_report(a->out ? "train --out" : "train --resume", err, 1);
                break;
            }
            // The folder made (or found) is locked, then checked again: a run started into it meanwhile by
            // another process is either still running (its lock) or has left its files; a default name
            // then goes on to the next of its series (cmd/runfolder.h).
            file_test_gate("VITMAE_FAULT_HOLD_BEFORE_LOCK");   // tests: another run comes and goes here
            int taken = run_folder_lock(t->run_dir, err, sizeof err);
            if (!taken && (own || !run_folder_has_run(t->run_dir))) break;
            // Another run's folder now: this one never removes any of it, but the folders made above it
            // (runs/) are still this run's.
            output_mkdir_disown(&t->made);
            if (named && run_folder_default_next(t->run_dir, sizeof t->run_dir) == 0) continue;
            if (taken) rc = cli_report("train", err, 1);
            else {
                rc = run_folder_refusal("train", t->run_dir, RUN_HOLDS_MEANWHILE, err, sizeof err);
                cli_report(NULL, err, rc);
            }
        }
        if (!rc && !ended && use_store(t, a, &store_note, err, sizeof err)) rc = cli_report("train --store", err, 1);
        // A resume given --pixel-norm measures as the run did when it started, to compare. A run at its last
        // step decodes nothing: its `dataset` is not measured, but `none` and `imagenet` need no image and
        // are compared (they were taken, exit 0, where --mask-ratio was refused; docs/interface.md, section 5).
        int stats_rc = rc || (ended && !strcmp(a->pixel_norm, "dataset")) || a->init ? 0
                       : !resuming ? pixel_norm_set(&t->cfg, a->pixel_norm, &t->ds, t->train_idx, t->ntrain, err, sizeof err)
                       : run_resume_same_pixel_norm("train", a->pixel_norm, &t->cfg, &t->ds, t->train_idx, t->ntrain, flags,
                                                    nflags, KEEP_WAY("--pixel-norm"), err, sizeof err);
        if (stats_rc == CLI_USAGE) rc = cli_report(NULL, err, CLI_USAGE);
        else if (stats_rc) {
            run_report_skipped(&t->ds);
            run_report_broken(&t->ds);   // the files that failed, before the failure they explain
            rc = cli_report(dataset_err_what(stats_rc, "train"), err, 1);
        }
        if (!rc && !ended) {
            run_store_note(&t->cache_note);
            run_store_note(&store_note);
            run_report_skipped(&t->ds);
            // The --val folder's too: its files were left out of the validation without a word (finetune
            // said both folders'; docs/interface.md, section 2, "Bad files").
            if (t->vds == &t->val_ds) run_report_skipped(&t->val_ds);
            run_remove_stale_temp_files(t->run_dir);
        }
    }
    if ((rc = cli_agree(rc))) { ckpt_free(&init); return rc; }
    if (ended) {
        cli_defer(0);
        cli_out("%s", t->resuming);
        cli_out("the run has reached its last step, %ld: nothing to train (--steps N, more than %ld, extends it)",
                t->rs.total_steps, t->rs.step);
        t->ended = 1;
        ckpt_free(&init);
        return 0;
    }
    dist_bcast(t->run_dir, sizeof t->run_dir, 0);   // the name rank 0 took (the others print none)
    run_share_store(&t->ds, "train", a->lf.store, a->lf.store_min_free_mb);
    dist_bcast(t->cfg.pixel_mean, sizeof t->cfg.pixel_mean, 0);
    dist_bcast(t->cfg.pixel_std, sizeof t->cfg.pixel_std, 0);
    snprintf(t->ckpt_path, sizeof t->ckpt_path, "%s/checkpoint.safetensors", t->run_dir);

    // 4. Every rank: the model (at_once gradient groups' images at a time), moments, buffers, reduction.
    if (resuming && t->at_once > 1) {   // the resumed model was made for one group: make it for at_once
        Mae *m = mae_create(&t->cfg, t->per * t->at_once, err, sizeof err);
        if (!m) rc = model_oom(t, err, t->per * t->at_once, t->workers);
        else memcpy(mae_params(m), mae_params(t->model), mae_num_params(&t->cfg) * sizeof(float));
        mae_free(t->model);
        t->model = m;
    }
    if (!resuming) {
        t->model = mae_create(&t->cfg, t->per * t->at_once, err, sizeof err);
        if (!t->model) rc = model_oom(t, err, t->per * t->at_once, t->workers);
        size_t np = mae_num_params(&t->cfg);
        if (!rc && a->init) {
            memcpy(mae_params(t->model), init.params, np * sizeof(float));
        } else if (!rc) {
            Rng r;
            rng_seed(&r, (uint64_t)t->rs.seed);
            mae_init_weights(t->model, &r);
        }
        if (!rc) {
            t->exp_avg = cpu_calloc_big(np, sizeof(float));
            t->exp_avg_sq = cpu_calloc_big(np, sizeof(float));
            if (!t->exp_avg || !t->exp_avg_sq) rc = cli_report("train", "out of memory for the AdamW moments", 1);
        }
    }
    ckpt_free(&init);
    if (!rc) {
        t->tensors = mae_tensors(t->model, &t->ntensors);
        t->runner[0] = (TrainRunner){t, t->model};
        for (int w = 1; w < t->workers && !rc; w++) {   // the workers' models: their own activations
            t->runner[w] = (TrainRunner){t, mae_create_sharing(t->model, t->per * t->at_once, err, sizeof err)};
            if (!t->runner[w].model) rc = model_oom(t, err, t->per * t->at_once, t->workers);
        }
        if (rc) {
        } else if (alloc_buffers(t)) rc = cli_report("train", "out of memory for the batch buffers", 1);
        else if (rank == 0 && train_out_pick_samples(t, err, sizeof err)) rc = cli_report(NULL, err, 1);
    }
    if ((rc = cli_agree(rc))) return rc;
    // The reduction's buffers: collective under mpirun (one machine: a shared-memory window).
    // Under mpirun, workers' processes combine their nodes as the team's do (dist/workers.h).
    size_t np = mae_num_params(&t->cfg);
    int ranks = dist_size() > 1;
    if (t->workers ? (ranks && grad_reduce_init_top(&t->gr, t->rs.grad_groups, np, err, sizeof err)) ||
                         grad_workers_init(&t->gw, ranks ? &t->gr : NULL, t->rs.grad_groups, np, t->workers,
                                           t->at_once, err, sizeof err)
                   : grad_reduce_init(&t->gr, t->rs.grad_groups, np, err, sizeof err) ||
                         (t->at_once > 1 && grad_reduce_at_once(&t->gr, t->at_once, err, sizeof err)))
        rc = cli_report("train", err, 1);
    if ((rc = cli_agree(rc))) return rc;
    // One process's workers leave the top of their tree to AdamW's pass unless clipping needs the whole
    // gradient first, and then update each block's weights beside the backward once every worker is done
    // with them.
    t->gw.defer_top = t->workers && t->rs.clip == 0 && !ranks;
    if (t->gw.defer_top) {
        Mae *models[WORKERS_MAX];
        for (int w = 0; w < t->workers; w++) models[w] = t->runner[w].model;
        if (grad_workers_early_init(&t->gw, models, err, sizeof err)) rc = cli_report("train", err, 1);
    }
    if ((rc = cli_agree(rc))) return rc;

    // 5. Rank 0 writes config.json and opens metrics.csv. A resumed run's config.json holds the state of the
    // checkpoint it resumed from until the session writes one: killed before that, the run is that
    // checkpoint (a plain --resume goes on with its --steps, not this session's). A resume in its own
    // folder drops the metrics.csv rows past its step and, with them, the sample sheets of those steps
    // (an abandoned stretch's, which the steps trained again replace or, on a shorter schedule, never
    // do: docs/data.md, "Run folders"); a new --out folder holds none.
    if (rank == 0) {
        t->new_files = !resuming;
        // A failure because the run folder went away meanwhile is said as that (cmd/runfolder.h).
        if (train_out_config(t, resuming ? &t->rs_resumed : &t->rs, err, sizeof err) ||
            train_out_open_metrics(t, resuming, err, sizeof err) ||
            (own && run_remove_sheets_past(t->run_dir, t->rs.step, t->sheets_removed, sizeof t->sheets_removed, err,
                                           sizeof err) < 0)) {
            run_folder_gone(t->run_dir, NULL, resuming, err, sizeof err);
            rc = cli_report("train", err, 1);
        }
    }
    if ((rc = cli_agree(rc))) return rc;
    cli_defer(0);

    // Said once the run is sure to start, so that a refusal stays one line.
    run_warn_other_gemm();
    if (t->resuming[0]) cli_out("%s", t->resuming);   // the path written out as every line's (cli_out)
    if (t->goes_on[0]) cli_out("%s", t->goes_on);
    if (t->sheets_removed[0]) cli_out("%s", t->sheets_removed);
    if (t->images_changed[0] && rank == 0) cli_message("%s", t->images_changed);
    // The folders as the user gave them (t->rs records them absolute; docs/interface.md, section 1, "Paths").
    if (rank == 0 && t->rs.val[0]) output_warn_overlap("--data", data, "--val", a->val ? a->val : t->rs.val, "train");
    if (t->vds == &t->ds && rank == 0)
        run_warn_few_val(t->nval, t->rs.val_frac, t->ds.n, "the validation loss", 1, t->resuming[0] != 0);
    if (rank == 0) run_warn_long_warmup(t->rs.warmup, t->rs.total_steps, t->rs.lr, t->resuming[0] != 0);
    if (rank == 0) run_warn_batch_repeats(t->rs.batch, t->ntrain);
    if (rank == 0) run_warn_small(&t->ds, data, t->S);
    // (--val the --data folder itself: its images warned of once, the same line twice before)
    const char *val_shown = a->val ? a->val : t->rs.val;
    if (rank == 0 && t->vds == &t->val_ds && !(output_path_within(val_shown, data) && output_path_within(data, val_shown)))
        run_warn_small(&t->val_ds, val_shown, t->S);
    int threads = omp_get_max_threads();
    // With a --val folder, each count with its folder (the held-out split's both come from --data).
    char counts[8400];
    if (t->vds == &t->val_ds)
        snprintf(counts, sizeof counts, "%d train images from %s, %d val from %s", t->ntrain, data, t->nval,
                 a->val ? a->val : t->rs.val);
    else
        snprintf(counts, sizeof counts, "%d train / %d val images from %s", t->ntrain, t->nval, data);
    char model[160];
    model_text(a->preset, &t->cfg, model, sizeof model);
    cli_out("vitmae train: %s; model %s %dx%dx%d patch %d, %zu parameters", counts, t->init_moved[0] ? t->init_moved : a->init ? a->init : resuming ? "(resumed)" : model, t->S, t->S, t->C,
           t->cfg.patch_size, mae_num_params(&t->cfg));
    // Every channel's statistics (the first alone was shown for RGB), the mask ratio as typed ("%.2f"
    // showed --mask-ratio 0.875 as 0.88).
    char stats[2][96], mask_s[48];
    for (int k = 0; k < 2; k++) {
        const float *v = k ? t->cfg.pixel_std : t->cfg.pixel_mean;
        if (t->C == 1) snprintf(stats[k], sizeof stats[k], "%.4f", v[0]);
        else snprintf(stats[k], sizeof stats[k], "(%.4f, %.4f, %.4f)", v[0], v[1], v[2]);
    }
    config_float_text(t->rs.mask_ratio, mask_s, sizeof mask_s);
    char threads_s[192];
    run_threads_text(threads_s, sizeof threads_s, threads);
    char aug[96];
    run_augment_text(aug, sizeof aug, t->rs.augment, (float)AUGMENT_CROP_LO, t->rs.interp);
    printf("  %ld step%s of batch %d, lr %.3e (warm-up %ld), mask %s, augment %s, pixel mean/std %s/%s, %s\n",
           t->rs.total_steps, t->rs.total_steps == 1 ? "" : "s", t->rs.batch, t->rs.lr, t->rs.warmup, mask_s,
           aug, stats[0], stats[1], threads_s);
    if (dist_size() > 1 || t->rs.grad_groups > 1 || t->rs.accum > 1)
        printf("  %d gradient groups of %d image%s (%d at once), %d process%s x %d micro-batch%s\n", t->rs.grad_groups,
               t->per, t->per == 1 ? "" : "s", t->at_once, dist_size(), dist_size() == 1 ? "" : "es", t->rs.accum,
               t->rs.accum == 1 ? "" : "es");
    if (t->workers)
        printf("  threads as workers: each of the %d threads takes %d of the gradient groups (%d at once)\n",
               t->workers, t->rs.grad_groups / t->rs.processes / t->workers, t->at_once);
    cli_out("  run folder %s", t->run_dir);
    fflush(stdout);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// The steps

// The items of step `step` (data order from the run state) into items [batch].
static void step_items(Train *t, long step, int *items) {
    int B = t->rs.batch;
    for (int k = 0; k < B; k++) {
        long pos = step * B + k;
        const int *perm = run_epoch_order(&t->order, t->rs.seed, pos / t->ntrain, t->ntrain);
        items[k] = t->train_idx[perm[pos % t->ntrain]];
    }
}

// The run's checkpoint at its step (with --keep, its snapshot too): 0, or -1 with err, a weight or
// moment gone NaN or infinite said as such (run_diverged_note). Rank 0's.
static int save_checkpoint(Train *t, char *err, size_t errlen) {
    RunState *r = &t->rs;
    if (!run_save_checkpoint(t->run_dir, t->ckpt_path, r, &t->cfg, mae_params(t->model), t->exp_avg, t->exp_avg_sq,
                             err, errlen))
        return 0;
    run_diverged_note(err, errlen, t->tensors, t->ntensors, mae_params(t->model), t->exp_avg, t->exp_avg_sq, r->step,
                      t->ckpt_path);
    return -1;
}

// Queues the batches of the steps up to `depth` ahead of `step` that are not queued yet (cmd/runloop.h).
static void queue_ahead(void *ctx, Loader *ld, long *queued, long step, int depth) {
    Train *t = ctx;
    for (; *queued < t->rs.total_steps && *queued < step + depth; (*queued)++) {
        step_items(t, *queued, t->batch_items);
        // This process's share: the images of its gradient groups.
        int k0 = t->gr.first * t->per;
        loader_push(ld, (uint64_t)*queued, t->batch_items, t->rs.batch, k0, k0 + t->share);
    }
}

// This process's images of step `step` from the loader, normalised, with their masks (image k of the
// batch keeps key k); reports files found broken. A failure's reason goes to t->load_err, for the
// step's groups to give (cmd/runloop.h's inputs).
static int load_train_batch(void *ctx, Loader *ld, long step, double *waited) {
    Train *t = ctx;
    int B = t->share, k0 = t->gr.first * t->per;
    int rc = loader_pop(ld, (uint64_t)step, t->images, NULL, waited, t->load_err, sizeof t->load_err);
    // Reported before a failure too: a batch that is broken through and through names every file.
    train_out_report_broken(t, &t->ds, rc != 0);
    if (rc) return rc;   // DATASET_ERR_BROKEN: the data's stop (cmd/runloop.h)
    pixels_normalise(&t->cfg, t->images, (long)B * t->S * t->S);
    uint64_t keys[4096];   // this process's images: k0 .. k0 + B - 1 of the batch (at most 4096)
    for (int k = 0; k < B; k++) keys[k] = (uint64_t)(k0 + k);
    masks_seeded((uint64_t)t->rs.seed ^ SALT_MASK, (uint64_t)step, keys, B, t->L, t->K, t->noise, t->ids_keep, t->mask_scratch);
    return 0;
}

// A step whose images could not be loaded: every group reports the failure and why (t->load_err).
static int train_group_failed(void *ctx, int g, float *grads, float *loss, char *err, size_t errlen) {
    (void)g; (void)grads; (void)loss;
    snprintf(err, errlen, "%s", ((TrainRunner *)ctx)->t->load_err);
    return -1;
}

// Gradient group g of the step in t->images (dist/dist.h GroupFn, ctx a TrainRunner): forward and
// backward of its images with the gradient landing in grads. t->images holds this process's groups
// from t->gr.first (0 in one process).
static int train_group(void *ctx, int g, float *grads, float *loss, char *err, size_t errlen) {
    (void)err; (void)errlen;
    TrainRunner *run = ctx;
    Train *t = run->t;
    size_t first = (size_t)(g - t->gr.first) * t->per;
    float *own = mae_use_grads(run->model, grads);
    *loss = mae_train_forward(run->model, t->images + first * t->S * t->S * t->C, t->ids_keep + first * t->K, t->per, t->K);
    mae_backward_set(run->model);   // sets every element of grads: no zeroing first
    mae_use_grads(run->model, own);
    return 0;
}

// The same for groups [first, first + count) at once (dist/dist.h GroupsFn): one forward of their
// images, then each group's loss and gradient (bitwise those of train_group), summed in the tree.
static int train_groups(void *ctx, int first, int count, float *const *grads, const SumTree *tree, float *losses,
                        char *err, size_t errlen) {
    (void)err; (void)errlen;
    TrainRunner *run = ctx;
    Train *t = run->t;
    size_t at = (size_t)(first - t->gr.first) * t->per;
    mae_train_forward(run->model, t->images + at * t->S * t->S * t->C, t->ids_keep + at * t->K, count * t->per, t->K);
    mae_group_losses(run->model, count, losses);
    mae_backward_set_groups(run->model, grads, count, tree);
    return 0;
}

static int train_groups_failed(void *ctx, int first, int count, float *const *grads, const SumTree *tree,
                               float *losses, char *err, size_t errlen) {
    (void)first; (void)count; (void)grads; (void)tree; (void)losses;
    snprintf(err, errlen, "%s", ((TrainRunner *)ctx)->t->load_err);
    return -1;
}

// The step's gradient (cmd/runloop.h's gradient): the workers' (each its own model, AdamW of the
// blocks they finish beside their backward), the team's groups at once, or one group at a time.
static int train_gradient(void *ctx, int inputs_failed, long step, float lr, float **grads_out, float *loss,
                          int *stop, int *failed_here, char *err, size_t errlen) {
    Train *t = ctx;
    RunState *r = &t->rs;
    void *runners[WORKERS_MAX];   // the workers' contexts
    for (int w = 0; w < WORKERS_MAX; w++) runners[w] = &t->runner[w];
    float *grads = *grads_out = grad_reduce_grads(&t->gr, mae_grads(t->model));
    if (t->workers)   // AdamW's arguments, for the blocks the workers update beside their backward
        grad_workers_plan_adamw(&t->gw, t->exp_avg, t->exp_avg_sq, lr, r->wd, step + 1);
    gemm_weights_begin();   // the weights stay as they are until AdamW: packed once (kernels/gemm.h)
    int rc = t->workers
        ? grad_workers_step(&t->gw, grads, inputs_failed ? train_group_failed : train_group,
                            inputs_failed ? train_groups_failed : train_groups, runners, loss, &run_stop_requested,
                            stop, failed_here, err, errlen)
        : t->at_once > 1
        ? grad_reduce_step_at_once(&t->gr, grads, inputs_failed ? train_groups_failed : train_groups, &t->runner[0],
                                   loss, &run_stop_requested, stop, failed_here, err, errlen)
        : grad_reduce_step(&t->gr, grads, inputs_failed ? train_group_failed : train_group, &t->runner[0], loss,
                           &run_stop_requested, stop, failed_here, err, errlen);
    gemm_weights_end();
    return rc;
}

// Clipping, then AdamW (the blocks the workers updated already are left as they are).
static void train_update(void *ctx, float *grads, long step, float lr) {
    Train *t = ctx;
    RunState *r = &t->rs;
    if (r->clip > 0) grad_clip(t->tensors, t->ntensors, grads, r->clip);
    grad_workers_adamw(&t->gw, t->tensors, t->ntensors, mae_params(t->model), grads, t->exp_avg, t->exp_avg_sq,
                       lr, r->wd, step + 1);
}

static int train_outputs(void *ctx, MetricsRow *row, int do_eval, int do_samples, const volatile sig_atomic_t *stop,
                         int *logged, char *err, size_t errlen) {
    return train_out_step(ctx, row, do_eval, do_samples, stop, logged, err, errlen);
}

static int train_sheet(void *ctx, long step, char *err, size_t errlen) { return train_out_sheet(ctx, step, err, errlen); }

static void train_say_validation(void *ctx, Progress *prog, const MetricsRow *row) {
    (void)ctx;
    progress_message(prog, stdout, "step %ld: val loss %.4f, val PSNR %.2f dB (masked patches)", row->step,
                     row->val_loss, row->val_psnr);
}

static int train_save_checkpoint(void *ctx, char *err, size_t errlen) { return save_checkpoint(ctx, err, errlen); }

// config.json, which follows the checkpoint (its train state is the latest checkpoint's).
static int train_save_config(void *ctx, char *err, size_t errlen) {
    Train *t = ctx;
    return train_out_config(t, &t->rs, err, errlen);
}

static int train_curves(void *ctx, char *err, size_t errlen) { return train_out_curves(ctx, err, errlen); }

static int train_metrics_look(void *ctx, char *err, size_t errlen) {
    Train *t = ctx;
    return metrics_rejoin_run(&t->metrics, t->run_dir, err, errlen);
}

// A run that fails before it starts (before its first step, no metrics row written) leaves no folder of
// its own: its --store folder with the working images in it, then its run folder with the config.json and
// metrics.csv a new run wrote there (cmd/runfolder.h); a resumed run's folder keeps its files.
static void unmake_not_started(Train *t) {
    static const char *const files[] = {"config.json", "metrics.csv", NULL};
    run_unmake_store(&t->ds, &t->store_made);   // first: a --store inside the run folder kept it from going
    run_unmake_folder(t->run_dir, t->new_files ? files : NULL, &t->made);
}

int cmd_train(int argc, char **argv) {
    Train *t = calloc(1, sizeof *t);
    if (!t) return cli_report("train", "out of memory", 1);
    Args a;
    Flag flags[64];
    int nflags = 0;
    cli_quiet_ranks(1);   // every rank parses the same flags: rank 0 reports a bad one
    cli_defer(1);
    int rc = parse_args(argc, argv, &a, &t->rs, flags, &nflags);
    cli_quiet_ranks(0);
    if (rc == CLI_USAGE) cli_agree(rc);
    cli_defer(0);
    if (rc != CLI_OK) { free(t); return rc == CLI_HELP ? 0 : 2; }
    char terr[512];
    int trc = cpu_start_threads(a.threads, terr, sizeof terr) ? 1 : 0;
    if (trc) cli_error("train", "%s", terr);
    if ((trc = cli_agree(trc))) { free(t); return trc; }   // every rank leaves (docs/distributed.md)
    run_catch_stop_signals();
    rc = setup(t, &a, flags, nflags);
    if (rc) { unmake_not_started(t); train_free(t); free(t); return rc; }
    if (t->ended) { train_free(t); free(t); return 0; }   // nothing to train (setup said so)
    Augment aug = AUGMENT_CROP;
    augment_parse(t->rs.augment, &aug);
    augment_interp_parse(t->rs.interp, &aug.interp);
    char err[CLI_ERR_MAX];
    LoaderOptions lo = {t->S, t->C, aug, (uint64_t)t->rs.seed, t->share, a.lf.prefetch, a.lf.loader_threads,
                        t->train_idx, t->ntrain};   // the pool of a batch whose folders went away (data/loader.h)
    Loader *ld = loader_create(&t->ds, &lo, err, sizeof err);
    if ((rc = cli_agree(ld ? 0 : cli_report("train", err, 1)))) { loader_free(ld); unmake_not_started(t); train_free(t); free(t); return rc; }
    cli_defer(0);

    RunState *r = &t->rs;
    int started = 0;
    RunLoop L = {.cmd = "train", .ctx = t, .step = &r->step, .log_steps = &r->log_steps, .elapsed_s = &r->elapsed_s,
                 .log_loss_sum = &r->log_loss_sum, .total_steps = r->total_steps, .warmup = r->warmup,
                 .log_every = r->log_every, .eval_every = r->eval_every, .ckpt_every = r->ckpt_every,
                 .sample_every = r->sample_every, .batch = r->batch, .epochs = &r->epochs, .lr = r->lr,
                 .min_lr = r->min_lr, .ckpt_path = t->ckpt_path, .run_dir = t->run_dir, .ld = ld,
                 .prefetch = a.lf.prefetch, .store_min_free_mb = a.lf.store_min_free_mb, .ds = &t->ds, .gr = &t->gr,
                 .data_dir = r->data, .val_dir = r->val, .notes = &t->notes, .gone_dirs = t->gone_dirs,
                 .gone_len = sizeof t->gone_dirs, .queue = queue_ahead, .inputs = load_train_batch,
                 .gradient = train_gradient, .update = train_update, .outputs = train_outputs, .sheet = train_sheet,
                 .say_validation = train_say_validation, .save_checkpoint = train_save_checkpoint,
                 .save_after = train_save_config, .curves = train_curves,
                 .metrics_look = train_metrics_look, .started = &started};
    rc = run_loop(&L);
    if (rc && !started) unmake_not_started(t);   // the step-0 validation failed: as a failed setup
    train_free(t);
    free(t);
    return rc;
}
