// `vitmae finetune`: train an image classifier from a pretrained MAE encoder (or from scratch, the
// baseline) on class folders (docs/encoder.md).
//
// The story of a run: parse flags -> scan the class folders (train, and --val or a held-out split)
// -> the model (encoder from --ckpt, or a fresh one from train's model flags; a new fc_norm + head)
// -> check memory and the run folder -> steps (batch with crop + flip, drop path, smoothed
// cross-entropy, backward, clip, AdamW with layer-wise lr decay) with logs, validation (loss, top-1),
// curves and checkpoints -> final checkpoint.
//
// Reproducibility as `vitmae train`: the data order of epoch e as train's (cmd/train_state.h), the augmentation
// of the k-th image of step s from (seed, s, k), its drop-path draws from (seed ^ DROP, s, k). The
// training state is (step, parameters, AdamW moments): resume continues bit for bit and any thread
// count gives the same run.
//
// Many processes (mpirun, docs/distributed.md), as train: a step's batch is G gradient groups
// (--groups, fixed when the run starts), each group's gradient computed alone and the G summed in a
// fixed pairwise tree (dist/dist.h), so any process count N dividing G gives bitwise the same run.
// Each rank loads and computes its own groups; every rank then holds the same gradient and applies
// the same AdamW; rank 0 alone validates, writes the run folder and prints.
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "cmd/groups.h"     // parallel_check (--parallel, as train)
#include "cmd/log.h"
#include "cmd/output.h"
#include "cmd/runfolder.h"
#include "cmd/runloop.h"
#include "cmd/train_state.h"   // run_epoch_order (the data order, as train)
#include "core/classifier.h"
#include "core/optim.h"
#include "core/posembed.h"
#include "core/rng.h"
#include "dist/dist.h"
#include "dist/workers.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/erase.h"
#include "data/mix.h"
#include "data/randaug.h"
#include "infer/recon.h"
#include "io/checkpoint.h"
#include "io/classifier_ckpt.h"
#include "io/files.h"
#include "io/json.h"
#include "kernels/cpu.h"
#include "viz/viz.h"

#define SALT_DROP 0x66742d64726f7031ull
#define FT_BETA1 0.9f     // torch.optim.AdamW's defaults, as MAE's main_finetune
#define FT_BETA2 0.999f
#define CROP_SCALE_MIN 0.01   // --crop-scale's range is [CROP_SCALE_MIN, 1]
#define MODEL_EMA_DECAY 0.9998   // timm's --model-ema-decay

typedef struct {
    const char *ckpt, *data, *val, *out, *resume, *preset, *channels, *pos, *augment, *pixel_norm, *parallel, *remode;
    const char *interp;
    const char *aa;   // --aa as given; aa_spec parsed, aa_text its canonical spec
    RandAugSpec aa_spec;
    char aa_text[RANDAUG_TEXT_MAX];
    int from_scratch, overwrite, img, patch, dim, depth, heads;
    int model_ema, model_ema_warmup;   // --model-ema (or --model-ema-decay given), --model-ema-warmup
    double model_ema_decay;            // kept as read: timm's weight is 1 - decay in double
    float lr, blr, min_lr, wd, layer_decay, drop_path, smoothing, clip, val_frac, crop_scale, crop_pct;
    double epochs;   // a double: 0.8 as a float made 0.8 x 150 / 12 = 10.0000001, 11 steps
    MixFlags mix;     // --mixup, --cutmix, --mixup-prob, --mixup-switch-prob
    EraseFlags erase;   // --reprob, --remode (its mode from remode), --recount
    long steps, warmup, seed, eval_every, ckpt_every, log_every;
    int batch, groups, threads, keep, val_max;
    LoaderFlags lf;   // --cache-mb, --store, --prefetch, --loader-threads, --max-pixels (cmd/runfolder.h)
    char ckpt_file[ST_RUN_LATEST_MAX];   // --ckpt RUN's checkpoint.safetensors
} Args;

// What a checkpoint carries to continue the run exactly (train_state JSON).
typedef struct {
    long step, total_steps, warmup, seed, eval_every, ckpt_every, log_every;
    int batch, groups, keep, val_max;   // groups: 1 in runs from before gradient groups
    float lr, min_lr, wd, layer_decay, drop_path, smoothing, clip, val_frac;
    float crop_scale;   // the crop's smallest area; absent in runs from before --crop-scale: 0.2
    MixFlags mix;   // absent in runs from before Mixup and CutMix: off (mixup_prob 1, switch 0.5)
    EraseFlags erase;   // absent in runs from before random erasing: off (pixel, count 1)
    char augment[16], remode[8], data[4096], val[4096], init[4096];
    char interp[16];   // the views' filter; absent in runs from before --interp: "bilinear"
    float crop_pct;    // the validation views' crop fraction; absent in runs from before --crop-pct: 1
    char aa[RANDAUG_TEXT_MAX];   // RandAugment's canonical spec (data/randaug.h); absent before --aa: "none"
    int model_ema, ema_warmup;   // the model's moving average kept (--model-ema); absent before it: off
    double ema_decay;            // its decay; absent before --model-ema: timm's 0.9998
    double elapsed_s;
    char run_id[24];   // as train's (cmd/runfolder.h, run_new_id)
    double log_loss_sum;   // as train's: the losses since the last metrics row, carried by a checkpoint
    long log_steps;
    char images[RUN_DATA_SIG_MAX];   // as train's: the images trained on (run_data_signature); "" in older runs
    DatasetSplitPin split_pin;       // as train's: the held-out split's fallback images (run_split_pin_to_json)
    long max_pixels;   // as train's: --max-pixels, kept by a resume that does not give it; 0: the default
    RunEpochs epochs;  // as train's: a metrics row's epoch, counted over each stretch's images
} FtState;

// The way on for a flag given with --resume at another value than the run's. A run from scratch has no
// --ckpt to start again from; a model flag (the sizes, --channels, --pixel-norm) of a run from a --ckpt is
// the checkpoint's, which a new --ckpt run refuses to change too ("start a new run with --ckpt" led to
// "--channels 3 disagrees with the checkpoint's 1"). Another flag's way names the checkpoint the run
// started from (rs.init; docs/interface.md, finetune): "--ckpt" alone led a user to pass the fine-tuning
// run itself, which --ckpt refuses. One gone is named as gone. way: room for the line made.
static const char *resume_way(const FtState *r, int model, char *way, size_t waylen) {
    if (!strcmp(r->init, "scratch")) return "start a new run with --from-scratch for another";
    if (model) return "the model is the --ckpt checkpoint's: another needs a checkpoint of that model, or --from-scratch";
    return run_new_run_way(r->init, way, waylen);
}

typedef struct FineTune FineTune;

// What one thread computes a gradient group with: the model it runs on (worker 0: the model; the other
// workers: a model of their own that shares its parameters) and its drop-path factors.
typedef struct {
    FineTune *t;
    Classifier *model;
    float *drop;   // [depth][2][per] one group's factors
} FtRunner;

struct FineTune {
    Args a;
    FtState rs;
    // The folders as the user named them (--data, --val; on resume without them, the run's recorded
    // absolute paths): scanned under these names and named so in every message, as train names them;
    // rs holds them absolute, so that a run resumes from any directory.
    const char *data_dir, *val_dir;   // val_dir NULL without a --val folder
    // --ckpt as the user named it (where --overwrite moved it; on resume the run's record), for the start
    // line; rs.init holds it absolute as it holds --data, so that info and a resume from any directory
    // name the file.
    char init_shown[4096];
    Dataset ds, vds;            // training folder; --val folder (vds.n == 0 without --val)
    StoreNote cache_note;       // --cache-mb lowered to fit beside the run (run_fit_cache): said with the store's
    OutputMade store_made;      // the folders rank 0 made for --store: removed by a run that does not start (run_unmake_store)
    OutputMade made;            // the folders rank 0 made for the run folder: removed by a run that does not start
    int new_files;              // rank 0 writes a new run's metrics.csv (not a resume's): removed with them
    int *train_idx, ntrain, *val_idx, nval;
    int *val_label;             // [nval] class of val_idx[i] in the training classes
    int *eval_idx, *eval_label, neval;   // the images each evaluation scores: up to val_max of val_idx, spread
    char **classes;             // the model's class names (borrowed from ds or the checkpoint)
    ClfCheckpoint resumed;      // owns the class names when resuming
    ClassifierConfig cfg;
    Checkpoint pre;             // --ckpt's encoder weights: read once by build_model, copied into the model
    int pos_grid_from;          // --ckpt's patches a side when --img resized its pos_embed; 0: not resized
    Classifier *model;
    Classifier *ema_model;      // --model-ema: a forward-only classifier over the moving average's weights
    float *exp_avg, *exp_avg_sq, *lr_scale, *drop_all;   // drop_all: the batch's drop-path factors
    GradReduce gr;              // the step's gradient groups (this rank's: gr.first, gr.count)
    int workers;                // threads as workers (dist/workers.h), 0: the threads share every kernel
    GradWorkers gw;
    FtRunner runner[WORKERS_MAX];   // [0]: the model's; [w]: worker w's
    int per, share;             // images per group; this process's images per step
    char load_err[4096 + 1024];        // why this process's images of the step did not load
    const MaeTensor *tensors;
    int ntensors, S, C;
    char run_dir[4096], ckpt_path[4200];
    int own_folder;             // resuming into the run's own folder
    int named;                  // no --out: run_dir is runs/finetune-<stamp>[-k], free when the run started
    int move_aside;             // --overwrite of a folder that holds a run: moved to RUN.old-N before the new run
    float *images;
    int *batch_items, *labels;
    int *labels2;               // [B] each image's partner's label in its group (Mixup, CutMix)
    double *mix_lam;            // [groups] each group's lam this step (1: not mixed)
    int *used;                  // [B] the item whose image each of this process's is (loader_pop)
    EpochOrder order;
    FILE *metrics;
    History hist;
    char images_changed[1024];   // a resume on other images: the warning said once the run starts
    char resuming[4096 + 512];   // "resuming ...": said once the run starts
    int ended;                   // resumed at its last step: nothing to train, nothing written
    char untrained[1024];        // classes whose every image is held out: the warning said once the run starts
    char batch_of_one_way[4600]; // a resume's way on from a file broken at --batch 1 (ds.batch_of_one_way)
    char gone_dirs[16384];       // the folders of images reported gone (cmd/output.h, output_gone_folder)
    BrokenNotes notes;           // training files found broken, said once for the job (cmd/runfolder.h)
    int val_used;                // the validation images the last evaluation scored (broken ones left out)
    double val_top5;             // the last evaluation's top-5 (said with more than 5 classes), NAN: none
    double ema_loss, ema_top1, ema_top5;   // the same of the moving average (--model-ema), NAN: none
    int val_none_said;           // run_report_no_validation's once
    signed char *class_seen;     // [classes] 1: a training image of it decodes; -1: none does (warned)
};

// ---------------------------------------------------------------------------------------------
// train_state JSON

// The fields of train_state, read and written through one table (cmd/runfolder.h, StateField) with the
// ranges of their flags (parse_args below), so that a checkpoint edited by hand is refused with one line.
static const StateField FT_FIELDS[] = {
    {"step", STATE_LONG, offsetof(FtState, step), 0, 1e12},
    {"total_steps", STATE_LONG, offsetof(FtState, total_steps), 1, 1e12},
    {"warmup_steps", STATE_LONG, offsetof(FtState, warmup), 0, 1e12},
    {"seed", STATE_LONG, offsetof(FtState, seed), 0, 9.2e18},   // older versions took seeds up to 9e18
    {"batch", STATE_INT, offsetof(FtState, batch), 1, 4096},
    {"lr", STATE_FLOAT, offsetof(FtState, lr), 0, STATE_LR_MAX},
    {"min_lr", STATE_FLOAT, offsetof(FtState, min_lr), 0, 10},
    {"weight_decay", STATE_FLOAT, offsetof(FtState, wd), 0, 10},
    {"layer_decay", STATE_FLOAT, offsetof(FtState, layer_decay), 0, 1},
    {"drop_path", STATE_FLOAT, offsetof(FtState, drop_path), 0, 0.99},
    {"smoothing", STATE_FLOAT, offsetof(FtState, smoothing), 0, 0.99},
    {"clip", STATE_FLOAT, offsetof(FtState, clip), 0, 1e6},
    {"mixup", STATE_FLOAT, offsetof(FtState, mix.mixup), 0, MIX_ALPHA_MAX},
    {"cutmix", STATE_FLOAT, offsetof(FtState, mix.cutmix), 0, MIX_ALPHA_MAX},
    {"mixup_prob", STATE_FLOAT, offsetof(FtState, mix.prob), 0, 1},
    {"mixup_switch", STATE_FLOAT, offsetof(FtState, mix.switch_prob), 0, 1},
    {"reprob", STATE_FLOAT, offsetof(FtState, erase.prob), 0, 1},
    {"crop_scale", STATE_FLOAT, offsetof(FtState, crop_scale), CROP_SCALE_MIN, 1},
    {"crop_pct", STATE_FLOAT, offsetof(FtState, crop_pct), VIEW_CROP_PCT_MIN, 1},
    {"recount", STATE_INT, offsetof(FtState, erase.count), 1, ERASE_COUNT_MAX},
    {"val_frac", STATE_FLOAT, offsetof(FtState, val_frac), 0, VAL_FRAC_MAX},
    {"val_max", STATE_INT, offsetof(FtState, val_max), 1, VAL_MAX_LIMIT},
    {"eval_every", STATE_LONG, offsetof(FtState, eval_every), 1, 1e12},
    {"ckpt_every", STATE_LONG, offsetof(FtState, ckpt_every), 1, 1e12},
    {"log_every", STATE_LONG, offsetof(FtState, log_every), 1, 1e12},
    {"keep", STATE_INT, offsetof(FtState, keep), 0, KEEP_MAX},
    {"elapsed_s", STATE_DOUBLE, offsetof(FtState, elapsed_s), 0, 1e15},
    {"groups", STATE_INT, offsetof(FtState, groups), 1, GROUPS_MAX},   // absent before gradient groups: 1
    {"model_ema", STATE_INT, offsetof(FtState, model_ema), 0, 1},
    {"model_ema_decay", STATE_DOUBLE, offsetof(FtState, ema_decay), 0, 1},
    {"model_ema_warmup", STATE_INT, offsetof(FtState, ema_warmup), 0, 1},
    {"augment", STATE_TEXT, offsetof(FtState, augment), 0, 0},
    {"remode", STATE_TEXT, offsetof(FtState, remode), 0, 0},
    {"interp", STATE_TEXT, offsetof(FtState, interp), 0, 0},
    {"aa", STATE_TEXT, offsetof(FtState, aa), 0, 0},
    {"data", STATE_TEXT, offsetof(FtState, data), 0, 0},
    {"val", STATE_TEXT, offsetof(FtState, val), 0, 0},
    {"init", STATE_TEXT, offsetof(FtState, init), 0, 0},
};
#define FT_NFIELDS ((int)(sizeof FT_FIELDS / sizeof FT_FIELDS[0]))

static char *ft_state_to_json(const FtState *r) {
    cJSON *o = cJSON_CreateObject();
    run_state_fields_to_json(o, FT_FIELDS, FT_NFIELDS, r);
    if (r->images[0]) cJSON_AddStringToObject(o, "images", r->images);
    run_split_pin_to_json(o, &r->split_pin);
    run_state_shared_to_json(o, r->run_id, r->log_loss_sum, r->log_steps, r->max_pixels);
    run_epochs_to_json(o, &r->epochs, r->step, r->batch);
    cJSON_AddNumberToObject(o, "samples_seen", (double)r->step * r->batch);
    // The job that wrote it, as train records it (docs/distributed.md): not read back, since a run
    // resumes on any count that divides its groups.
    cJSON_AddNumberToObject(o, "processes", dist_size());
    cJSON_AddStringToObject(o, "rng", "derived from (seed, step, image or gradient group index)");
    char *s = json_print_utf8(o, 0);
    cJSON_Delete(o);
    return s;
}

static int ft_state_from_json(const char *json, FtState *r, char *err, size_t errlen) {
    cJSON *o = run_state_parse(json, err, errlen);
    if (!o) return -1;
    memset(r, 0, sizeof *r);
    if (!cJSON_GetObjectItemCaseSensitive(o, "groups")) cJSON_AddNumberToObject(o, "groups", 1);   // older runs
    // older runs: no mixing, no erasing, MAE's pretraining crop, the whole centre square validated, no average
    const char *off_keys[] = {"mixup", "cutmix", "mixup_prob", "mixup_switch", "reprob", "recount", "crop_scale",
                              "crop_pct", "model_ema", "model_ema_decay", "model_ema_warmup"};
    const double off[] = {0.0, 0.0, MIX_DEFAULT_PROB, MIX_DEFAULT_SWITCH, 0.0, 1.0, AUGMENT_CROP_LO, 1.0, 0.0,
                          MODEL_EMA_DECAY, 0.0};
    _Static_assert(sizeof off_keys / sizeof off_keys[0] == sizeof off / sizeof off[0], "a default for each key");
    for (int i = 0; i < (int)(sizeof off / sizeof off[0]); i++)
        if (!cJSON_GetObjectItemCaseSensitive(o, off_keys[i])) cJSON_AddNumberToObject(o, off_keys[i], off[i]);
    if (!cJSON_GetObjectItemCaseSensitive(o, "remode")) cJSON_AddStringToObject(o, "remode", "pixel");
    if (!cJSON_GetObjectItemCaseSensitive(o, "interp")) cJSON_AddStringToObject(o, "interp", "bilinear");
    if (!cJSON_GetObjectItemCaseSensitive(o, "aa")) cJSON_AddStringToObject(o, "aa", "none");
    if (run_state_fields_from_json(o, FT_FIELDS, FT_NFIELDS, r, err, errlen)) { cJSON_Delete(o); return -1; }
    const char *skeys[] = {"augment", "remode", "interp", "aa", "data", "val", "init"};
    char *dst[] = {r->augment, r->remode, r->interp, r->aa, r->data, r->val, r->init};
    size_t dn[] = {sizeof r->augment, sizeof r->remode, sizeof r->interp, sizeof r->aa, sizeof r->data, sizeof r->val,
                   sizeof r->init};
    for (int i = 0; i < 7; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, skeys[i]);
        if (!cJSON_IsString(x)) { snprintf(err, errlen, "train_state: '%s' missing", skeys[i]); cJSON_Delete(o); return -1; }
        snprintf(dst[i], dn[i], "%s", x->valuestring);
    }
    if (run_state_shared_from_json(o, r->step, r->run_id, sizeof r->run_id, &r->log_loss_sum, &r->log_steps,
                                   &r->max_pixels, err, errlen) || run_epochs_from_json(o, r->step, &r->epochs, err, errlen) ||
        run_state_images_from_json(o, r->images, sizeof r->images, err, errlen) ||
        run_split_pin_from_json(o, &r->split_pin, err, errlen) ||
        run_state_groups_check("groups", r->batch, r->groups, err, errlen)) {
        cJSON_Delete(o);
        return -1;
    }
    cJSON_Delete(o);
    Augment aug;
    if (augment_parse(r->augment, &aug)) {
        snprintf(err, errlen, "train_state: 'augment' missing or out of range");
        return -1;
    }
    if (erase_mode_parse(r->remode, &r->erase.mode)) {
        snprintf(err, errlen, "train_state: 'remode' missing or out of range");
        return -1;
    }
    ImageFilter filter;
    if (augment_interp_parse(r->interp, &filter)) {
        snprintf(err, errlen, "train_state: 'interp' missing or out of range");
        return -1;
    }
    RandAugSpec ra;
    char why[256], canon[RANDAUG_TEXT_MAX];
    if (randaug_parse(r->aa, &ra, why, sizeof why)) {
        snprintf(err, errlen, "train_state: 'aa' out of range: %s", why);
        return -1;
    }
    randaug_text(&ra, canon, sizeof canon);   // the run's spec as a new run writes it, so that --aa compares
    snprintf(r->aa, sizeof r->aa, "%s", canon);
    if (r->step > r->total_steps) {   // the table checked each alone
        snprintf(err, errlen, "train_state: 'step' out of range: %ld is past 'total_steps' %ld", r->step, r->total_steps);
        return -1;
    }
    return 0;
}

int finetune_state_check(const char *json, char *err, size_t errlen) {
    FtState r;
    return ft_state_from_json(json, &r, err, errlen);   // the groups too (run_state_groups_check)
}

// ---------------------------------------------------------------------------------------------
// Data order, validation

static const Dataset *val_set(const FineTune *t) { return t->vds.n ? &t->vds : &t->ds; }

// A training image of class c found broken past its header: does any of the class's training images
// decode? The scan reads headers only, so a class whose every file is broken (which a full decode at
// the scan dropped) is only found now: it stays in the head, never trained, its batch places taken by
// other classes' images; said once. Decodes until one image of the class does (most often the next),
// once a class, so any rank that meets a broken file of the class says it, whatever it met before.
static void check_class(FineTune *t, int c) {
    if (c < 0 || c >= t->ds.nclasses || !t->class_seen || t->class_seen[c]) return;
    int n = 0;
    for (int k = 0; k < t->ntrain; k++) {
        int i = t->train_idx[k];
        if (t->ds.items[i].cls != c) continue;
        n++;
        char err[CLI_ERR_MAX];
        Image im;
        if (dataset_is_broken(&t->ds, i) || dataset_working_image(&t->ds, i, &im, err, sizeof err)) continue;
        image_free(&im);
        t->class_seen[c] = 1;
        return;
    }
    t->class_seen[c] = -1;
    // A class folder gone during the run was said as that, its images left out from now on (docs/
    // data.md): its files are missing, not "broken past the header".
    char dir[8300];
    struct stat st;
    if (t->ds.root && snprintf(dir, sizeof dir, "%s/%s", t->ds.root, t->ds.class_names[c]) < (int)sizeof dir &&
        stat(dir, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
        return;
    cli_message("warning: class '%s' of %s has no training image that decodes (its %d %s broken past the header): "
                "it is never trained, and its images' places in the batches go to other classes' images", t->ds.class_names[c],
                t->data_dir, n, n == 1 ? "is" : "are");
}

// 1 when item of ds is a held-out image: ds is the --val folder, or the training folder's own
// held-out part (--val-frac) holds it.
static int held_out(const FineTune *t, const Dataset *ds, int item) {
    int held = ds != &t->ds;
    for (int k = 0; !held && ds == val_set(t) && k < t->nval; k++) held = t->val_idx[k] == item;
    return held;
}

// A training set's file said broken (run_broken_share's callback): its class checked. Not at --batch 1,
// where no image takes a broken one's place: the step that draws it stops the run, and the stop's line
// says the class (docs/data.md), where "its images' places go to other classes' images" was untrue.
static void broken_said(void *ctx, int item) {
    FineTune *t = ctx;
    if (!held_out(t, &t->ds, item) && t->rs.batch > 1) check_class(t, t->ds.items[item].cls);
}

// The files found broken past their headers since the last report (lazy scans: docs/data.md), as
// train reports them (cmd/train_out.h): a training image was replaced by another of its batch, a
// validation image left out. Under mpirun a training file is said once for the job, by rank 0
// (cmd/runfolder.h).
static void report_broken(FineTune *t, const Dataset *ds, int stopping) {
    DataSkip broken[8];
    int items[8], nb;
    while ((nb = dataset_take_broken(ds, broken, items, 8)) > 0)
        for (int i = 0; i < nb; i++) {
            int held = ds != &t->ds ? BROKEN_VAL_FOLDER
                                    : run_broken_held(held_out(t, ds, items[i]), stopping, t->rs.batch);
            if (ds != &t->ds)
                run_report_broken_file(broken[i].path, broken[i].reason, held, -1, t->gone_dirs, sizeof t->gone_dirs);
            else if (run_broken_note(&t->notes, t->ds.n, items[i], broken[i].path, broken[i].reason, held, t->gone_dirs,
                                     sizeof t->gone_dirs))
                broken_said(t, items[i]);
            free(broken[i].path);
            free(broken[i].reason);
        }
}

// Loss (plain cross-entropy, as MAE's evaluate), top-1 and top-5 (t->val_top5) over up to val_max
// validation images; with --model-ema the moving average's too, on the same images (t->ema_*), as timm
// validates both.
// With more than val_max, image i * nval / val_max for each i < val_max: the folders are scanned class
// by class, so the first val_max were the first classes only (Fashion-MNIST's test folder at the
// default 1000: Ankle_boot alone, top-1 of one class of ten).
// stop (NULL: none): once set, the validation ends before its next batch, RUN_VALIDATION_STOPPED.
static int evaluate(FineTune *t, double *val_loss, double *val_top1, const volatile sig_atomic_t *stop, char *err,
                    size_t errlen) {
    // The validation view: --crop-pct and --interp (docs/encoder.md, "Validation views").
    Augment view = AUGMENT_VIEW(cli_view(t->rs.crop_pct, t->rs.interp));
    int nval = t->nval < t->rs.val_max ? t->nval : t->rs.val_max;
    *val_loss = NAN; *val_top1 = NAN;
    t->val_top5 = t->ema_loss = t->ema_top1 = t->ema_top5 = NAN;
    if (nval == 0) return 0;
    if (t->neval != nval) {   // once a run: val_max and the validation images are fixed from its start
        free(t->eval_idx); free(t->eval_label);
        t->eval_idx = malloc((size_t)nval * sizeof *t->eval_idx);
        t->eval_label = malloc((size_t)nval * sizeof *t->eval_label);
        t->neval = 0;
        if (!t->eval_idx || !t->eval_label) { snprintf(err, errlen, "out of memory"); return -1; }
        for (int i = 0; i < nval; i++) {
            long k = (long)i * t->nval / nval;
            t->eval_idx[i] = t->val_idx[k];
            t->eval_label[i] = t->val_label[k];
        }
        t->neval = nval;
    }
    Classifier *models[2] = {t->model, t->ema_model};
    double loss_sum[2] = {0, 0};
    long correct[2] = {0, 0}, correct5[2] = {0, 0};
    int K = t->cfg.num_classes, pos[4096], used = 0, rc = 0;
    file_test_gate("VITMAE_FAULT_HOLD_BEFORE_VALIDATION");   // tests: a class folder gone before its reads
    // In chunks of one gradient group (the model holds that many images), leaving out the images found
    // broken past their headers, as train's validation (cmd/train_out.c).
    for (int b0 = 0, end; b0 < nval && !rc; ) {
        if (stop && *stop) { report_broken(t, val_set(t), 0); return RUN_VALIDATION_STOPPED; }
        int n = dataset_next_chunk(val_set(t), t->eval_idx, nval, b0, t->per, pos, &end);
        if (n == 0) { b0 = end; continue; }
        for (int k = 0; k < n; k++) { t->batch_items[k] = t->eval_idx[pos[k]]; t->labels[k] = t->eval_label[pos[k]]; }
        rc = dataset_load_batch(val_set(t), t->batch_items, n, t->S, t->C, view, 0, 0, t->images, err, errlen);
        if (dataset_any_broken(val_set(t), t->batch_items, n)) { rc = 0; continue; }   // the chunk again, without it
        if (rc) break;
        b0 = end;
        used += n;
        pixels_normalise(&t->cfg.enc, t->images, (long)n * t->S * t->S);
        for (int m = 0; m < 2 && models[m]; m++) {
            loss_sum[m] += clf_forward(models[m], t->images, t->labels, n, 0.0f, NULL) * n;
            const float *logits = clf_logits(models[m]);
            for (int k = 0; k < n; k++) {
                int rank = clf_label_rank(logits + (size_t)k * K, K, t->labels[k]);
                correct[m] += rank == 0;
                correct5[m] += rank < 5;
            }
        }
        if (stop) file_test_gate("VITMAE_FAULT_HOLD_IN_VALIDATION");   // tests: a stop during the validation
    }
    if ((rc || used < nval) && run_val_folder_gone(val_set(t), err, errlen)) return -1;
    report_broken(t, val_set(t), 0);
    if (rc) return -1;
    t->val_used = used;
    if (used == 0) run_report_no_validation(&t->val_none_said, nval, "val_loss and val_top1");
    if (used > 0) {
        *val_loss = loss_sum[0] / used;
        *val_top1 = (double)correct[0] / used;
        t->val_top5 = (double)correct5[0] / used;
    }
    if (used > 0 && t->ema_model) {
        t->ema_loss = loss_sum[1] / used;
        t->ema_top1 = (double)correct[1] / used;
        t->ema_top5 = (double)correct5[1] / used;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// RUN/curves.png

// Loss (train, val) above val top-1 above the learning rate; with --model-ema the average's validation
// beside the weights' in the first two, in a colour of its own.
static int write_curves(FineTune *t, char *err, size_t errlen) {
    History *h = &t->hist;
    int ema = t->ema_model != NULL;
    PlotSeries loss[3] = {
        {"train loss (smoothed CE)", h->step, h->loss, h->n, 0, {0, 0, 0}},
        {"val loss (CE)", h->val_step, h->val_loss, h->nval, 0, {0, 0, 0}},
        {"val loss, EMA", h->val_step, h->val_more[0], h->nval, 0, {0, 0, 0}},
    };
    PlotOptions lo = {"classification loss", "step", "loss", 1, 1};
    PlotSeries top1[2] = {{"val top-1", h->val_step, h->val_extra, h->nval, 0, {0, 0, 0}},
                          {"val top-1, EMA", h->val_step, h->val_more[1], h->nval, 0, {0, 0, 0}}};
    viz_palette(1, top1[0].rgb);
    viz_palette(4, top1[1].rgb);   // reddish purple: apart from the weights' vermillion
    viz_palette(4, loss[2].rgb);
    top1[0].has_rgb = top1[1].has_rgb = loss[2].has_rgb = 1;
    PlotOptions to = {"validation top-1 accuracy", "step", "fraction", 0, 1};
    PlotSeries lr = {"learning rate (head)", h->step, h->lr, h->n, 0, {0, 0, 0}};
    viz_palette(2, lr.rgb);
    lr.has_rgb = 1;
    PlotOptions lro = {"learning rate", "step", "lr", 0, 1};
    const PlotPanel panels[] = {{400, loss, 2 + ema, &lo}, {260, top1, 1 + ema, &to}, {180, &lr, 1, &lro}};
    char path[4300];
    snprintf(path, sizeof path, "%s/curves.png", t->run_dir);
    return viz_plot_png(path, 960, panels, 3, err, errlen);
}

// ---------------------------------------------------------------------------------------------
// Checkpoints: RUN/checkpoint-<step>.safetensors (kept snapshots) and RUN/checkpoint.safetensors.

static int save_checkpoint(FineTune *t, char *err, size_t errlen) {
    char *state = ft_state_to_json(&t->rs);
    if (!state) { snprintf(err, errlen, "%s: out of memory", t->ckpt_path); return -1; }
    const float *p = clf_params(t->model), *ema = t->ema_model ? clf_params(t->ema_model) : NULL;
    int rc;
    if (t->rs.keep > 0) {
        char snap[4300];
        snprintf(snap, sizeof snap, "%s/checkpoint-%ld.safetensors", t->run_dir, t->rs.step);
        run_mark_saving(snap, t->ckpt_path);   // a second Ctrl-C says what is in place (cmd/runfolder.h)
        rc = clf_ckpt_save(snap, &t->cfg, t->classes, p, state, t->exp_avg, t->exp_avg_sq, ema, err, errlen);
        int pl = rc == 0 ? publish_latest(snap, t->ckpt_path, t->run_dir, err, errlen) : 0;
        if (pl < 0) rc = clf_ckpt_save(t->ckpt_path, &t->cfg, t->classes, p, state, t->exp_avg, t->exp_avg_sq, ema, err, errlen);
        else if (pl > 0) rc = -1;
        if (pl < 0 && rc == 0) run_mark_published();   // checkpoint.safetensors in place (cmd/runfolder.h)
        if (rc == 0) prune_snapshots(t->run_dir, t->rs.keep, t->rs.step);
    } else {
        run_mark_saving(NULL, t->ckpt_path);
        rc = clf_ckpt_save(t->ckpt_path, &t->cfg, t->classes, p, state, t->exp_avg, t->exp_avg_sq, ema, err, errlen);
        if (rc == 0) run_mark_published();
    }
    free(state);
    if (rc) run_diverged_note(err, errlen, t->tensors, t->ntensors, p, t->exp_avg, t->exp_avg_sq, t->rs.step, t->ckpt_path);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// Flags

// A run that fails once its folder and --store folder are made, before its first step and with no
// metrics row written, leaves neither: the store's first, which may lie inside the run folder (`--out R
// --store R/st` kept R; docs/data.md, "Cache, store and prefetch"), then the run folder with the
// metrics.csv a new run wrote there (cmd/runfolder.h; a resumed run's folder keeps its files).
static void unmake_folders(FineTune *t) {
    static const char *const files[] = {"metrics.csv", NULL};   // another program's config.json stays
    run_unmake_store(&t->ds, &t->store_made);
    run_unmake_folder(t->run_dir, t->new_files ? files : NULL, &t->made);
}

static const char *SYNOPSIS = "--ckpt PRETRAINED | --from-scratch --data DIR [--val DIR] [--out RUN] [flags]";

static int parse_args(int argc, char **argv, Args *a, Flag *flags, int *nflags_out) {
    memset(a, 0, sizeof *a);
    a->preset = MAE_DEFAULT_PRESET; a->channels = "auto"; a->pos = "learned"; a->augment = "crop"; a->pixel_norm = "dataset"; a->remode = "pixel";
    a->interp = "bilinear";
    a->aa = "none";
    a->img = MAE_DEFAULT_IMG; a->patch = MAE_DEFAULT_PATCH; a->blr = 1e-3f; a->min_lr = 1e-6f; a->wd = 0.05f; a->layer_decay = 0.75f;
    a->drop_path = 0.1f; a->smoothing = 0.1f; a->val_frac = (float)DEFAULT_VAL_FRAC; a->steps = 1000; a->batch = 64; a->warmup = -1;
    a->log_every = DEFAULT_LOG_EVERY; a->keep = DEFAULT_KEEP; a->val_max = DEFAULT_VAL_MAX; a->parallel = "auto";
    a->mix.prob = (float)MIX_DEFAULT_PROB; a->mix.switch_prob = (float)MIX_DEFAULT_SWITCH; a->erase.count = 1;
    a->crop_scale = (float)AUGMENT_CROP_LO;
    a->crop_pct = 1.0f;
    a->model_ema_decay = MODEL_EMA_DECAY;
    loader_flags_init(&a->lf);
    Flag f[] = {
        {"--ckpt", FLAG_PATH, &a->ckpt, 0, 0, NULL, "pretrained MAE checkpoint (.safetensors, or a run folder: its checkpoint.safetensors): its encoder starts the classifier", "FILE|RUN", 0},
        {"--from-scratch", FLAG_BOOL, &a->from_scratch, 0, 0, NULL, "random init with the model flags below (the baseline)", NULL, 0},
        {"--data", FLAG_PATH, &a->data, 0, 0, NULL, "training images in class folders DIR/<class>/... (required, but with --resume)", "DIR", 0},
        {"--val", FLAG_PATH, &a->val, 0, 0, NULL, "validation images in class folders (default: --val-frac of --data)", "DIR", 0},
        {"--out", FLAG_PATH, &a->out, 0, 0, NULL, "run folder, not holding a run (default a new runs/finetune-<timestamp>[-N])", "RUN", 0},
        {"--resume", FLAG_PATH, &a->resume, 0, 0, NULL, "continue a fine-tuning run (its folder or a checkpoint file)", "RUN_OR_FILE", 0},
        {"--overwrite", FLAG_BOOL, &a->overwrite, 0, 0, NULL, "--out holds a run: move it aside whole to RUN.old-N, then start", NULL, 0},
        {"--preset", FLAG_CHOICE, &a->preset, 0, 0, "tiny|small|base", "--from-scratch model size (default " MAE_DEFAULT_PRESET ")", NULL, 0},
        {"--img", FLAG_INT, &a->img, 1, MAE_IMG_MAX, NULL, "image size: --from-scratch's (default " MAE_STR(MAE_DEFAULT_IMG) "), or with --ckpt another than its own (pos_embed resized)", "N", 0},
        {"--patch", FLAG_INT, &a->patch, 1, 8192, NULL, "--from-scratch patch size (default " MAE_STR(MAE_DEFAULT_PATCH) ")", "N", 0},
        {"--channels", FLAG_CHOICE, &a->channels, 0, 0, "auto|1|3", "--from-scratch channels (default auto: 1 when every image is grey)", NULL, 0},
        {"--dim", FLAG_INT, &a->dim, 1, 16384, NULL, "--from-scratch encoder width (preset)", "N", 0},
        {"--depth", FLAG_INT, &a->depth, 1, 256, NULL, "--from-scratch encoder blocks (preset)", "N", 0},
        {"--heads", FLAG_INT, &a->heads, 1, 1024, NULL, "--from-scratch encoder heads (preset)", "N", 0},
        {"--pos", FLAG_CHOICE, &a->pos, 0, 0, "learned|fixed", "position embeddings trained (learned) or frozen (fixed); default learned", NULL, 0},
        {"--pixel-norm", FLAG_CHOICE, &a->pixel_norm, 0, 0, "dataset|imagenet|none", "--from-scratch pixel mean/std (default: measured)", NULL, 0},
        {"--augment", FLAG_CHOICE, &a->augment, 0, 0, "crop|flip|none", "training augmentation (default crop: random resized crop + flip)", NULL, 0},
        {"--crop-scale", FLAG_FLOAT, &a->crop_scale, CROP_SCALE_MIN, 1.0, NULL, "the random resized crop's smallest area, a fraction of the image (default 0.2, MAE's pretraining crop; timm's fine-tuning crop 0.08)", "LO", 0},
        {"--interp", FLAG_CHOICE, &a->interp, 0, 0, "bilinear|bicubic", "the filter of the views' resize: the random resized crop's and the validation views' (default bilinear); MAE's and timm's is bicubic", NULL, 0},
        {"--aa", FLAG_STR, &a->aa, 0, 0, NULL, "RandAugment of the training views, timm's spec (default none; MAE's rand-m9-mstd0.5-inc1: 2 of 15 operations an image, each with probability 0.5, at magnitude 9 of 10 with std 0.5)", "SPEC", 0},
        {"--crop-pct", FLAG_FLOAT, &a->crop_pct, VIEW_CROP_PCT_MIN, 1.0, NULL, "validation views: the shorter side resized to floor(img / F), the centre img x img kept (default 1, the whole centre square; MAE's and timm's 0.875)", "F", 0},
        {"--steps", FLAG_LONG, &a->steps, 1, 1e12, NULL, "optimizer steps (default 1000)", "N", 0},
        {"--epochs", FLAG_DOUBLE, &a->epochs, 1e-6, 1e6, NULL, "train for E passes over the data instead of --steps", "E", 0},
        {"--batch", FLAG_INT, &a->batch, 1, 4096, NULL, "images per step, over all processes (default 64)", "B", 0},
        {"--groups", FLAG_INT, &a->groups, 1, GROUPS_MAX, NULL, "gradient groups per step, a power of two (default: up to 4); results are bitwise equal for any N processes with N | G", "G", 0},
        {"--lr", FLAG_FLOAT, &a->lr, 0.0, 10.0, NULL, "learning rate of the head (default blr * batch / 256)", "LR", 0},
        {"--blr", FLAG_FLOAT, &a->blr, 0.0, 10.0, NULL, "base learning rate (default 1e-3)", "LR", 0},
        {"--min-lr", FLAG_FLOAT, &a->min_lr, 0.0, 10.0, NULL, "final learning rate of the cosine (default 1e-6, or the learning rate where that is smaller)", "LR", 0},
        {"--warmup-steps", FLAG_LONG, &a->warmup, 0, 1e12, NULL, "linear warm-up steps (default 5% of the run, at least 1; none in a 1-step run)", "N", 0},
        {"--wd", FLAG_FLOAT, &a->wd, 0.0, 10.0, NULL, "AdamW weight decay (default 0.05)", "WD", 0},
        {"--layer-decay", FLAG_FLOAT, &a->layer_decay, 0.0, 1.0, NULL, "layer-wise lr decay (default 0.75; 1 = off)", "D", 0},
        {"--drop-path", FLAG_FLOAT, &a->drop_path, 0.0, 0.99, NULL, "stochastic depth rate of the last block (default 0.1)", "P", 0},
        {"--smoothing", FLAG_FLOAT, &a->smoothing, 0.0, 0.99, NULL, "label smoothing (default 0.1)", "S", 0},
        {"--clip", FLAG_FLOAT, &a->clip, 0.0, 1e6, NULL, "clip the global gradient norm (0: off, default)", "NORM", 0},
        {"--mixup", FLAG_FLOAT, &a->mix.mixup, 0.0, MIX_ALPHA_MAX, NULL, "Mixup's Beta(A, A) (0: off, default; MAE's recipe 0.8)", "A", 0},
        {"--cutmix", FLAG_FLOAT, &a->mix.cutmix, 0.0, MIX_ALPHA_MAX, NULL, "CutMix's Beta(A, A) (0: off, default; MAE's recipe 1.0)", "A", 0},
        {"--mixup-prob", FLAG_FLOAT, &a->mix.prob, 0.0, 1.0, NULL, "chance that a gradient group is mixed (default 1)", "P", 0},
        {"--mixup-switch-prob", FLAG_FLOAT, &a->mix.switch_prob, 0.0, 1.0, NULL, "chance of CutMix over Mixup when both are on (default 0.5)", "P", 0},
        {"--reprob", FLAG_FLOAT, &a->erase.prob, 0.0, 1.0, NULL, "random erasing: chance that an image is erased (0: off, default; MAE's recipe 0.25)", "P", 0},
        {"--remode", FLAG_CHOICE, &a->remode, 0, 0, ERASE_MODES, "random erasing's fill: normal noise per pixel (default), per channel, or zeros", NULL, 0},
        {"--recount", FLAG_INT, &a->erase.count, 1, ERASE_COUNT_MAX, NULL, "random erasing: up to N boxes an image (default 1)", "N", 0},
        {"--model-ema", FLAG_BOOL, &a->model_ema, 0, 0, NULL, "keep an exponential moving average of the weights, validated beside them and saved as ema.* (timm's --model-ema)", NULL, 0},
        {"--model-ema-decay", FLAG_DOUBLE, &a->model_ema_decay, 0.0, 1.0, NULL, "the average's decay (default 0.9998, timm's; gives --model-ema)", "D", 0},
        {"--model-ema-warmup", FLAG_BOOL, &a->model_ema_warmup, 0, 0, NULL, "the decay rises as min(D, 1 - n^(-2/3)) at update n (timm's warm-up; gives --model-ema)", NULL, 0},
        {"--seed", FLAG_LONG, &a->seed, 0, RNG_SEED_MAX, NULL, "random seed (default 0)", "S", 0},
        {"--threads", FLAG_INT, &a->threads, 1, CLI_THREADS_MAX, NULL, "OpenMP threads (default: all cores)", "T", 0},
        {"--parallel", FLAG_CHOICE, &a->parallel, 0, 0, "auto|kernels|groups", "how the threads share a step: every kernel, or each its own gradient groups (default auto: groups where they fit; the same results)", NULL, 0},
        {"--val-frac", FLAG_FLOAT, &a->val_frac, 0.0, VAL_FRAC_MAX, NULL, "held-out fraction of --data when --val is absent (default " MAE_STR(DEFAULT_VAL_FRAC) ")", "F", 0},
        {"--val-max", FLAG_INT, &a->val_max, 1, VAL_MAX_LIMIT, NULL, "at most this many validation images per evaluation (default " MAE_STR(DEFAULT_VAL_MAX) ")", "N", 0},
        {"--eval-every", FLAG_LONG, &a->eval_every, 1, 1e12, NULL, "validate every N steps (default: a tenth of the run, rounded up)", "N", 0},
        {"--ckpt-every", FLAG_LONG, &a->ckpt_every, 1, 1e12, NULL, "checkpoint every N steps (default: as --eval-every)", "N", 0},
        {"--keep", FLAG_INT, &a->keep, 0, KEEP_MAX, NULL, "checkpoint-<step> snapshots kept (default " MAE_STR(DEFAULT_KEEP) ")", "N", 0},
        {"--log-every", FLAG_LONG, &a->log_every, 1, 1e12, NULL, "a log line and metrics row every N steps (default " MAE_STR(DEFAULT_LOG_EVERY) ")", "N", 0},
    };
    _Static_assert(sizeof f / sizeof f[0] + LOADER_FLAGS <= 64, "cmd_finetune's table of flags holds 64");
    int nflags = (int)(sizeof f / sizeof f[0]);
    memcpy(flags, f, sizeof f);
    loader_flags_table(&a->lf, flags + nflags);
    nflags += LOADER_FLAGS;
    *nflags_out = nflags;
    int rc = cli_parse("finetune", SYNOPSIS, flags, nflags, argc, argv, NULL, 0, NULL);
    if (rc != CLI_OK) return rc;
    erase_mode_parse(a->remode, &a->erase.mode);   // one of ERASE_MODES: cli_parse checked the choice
    char why[256];
    if (randaug_parse(a->aa, &a->aa_spec, why, sizeof why)) {
        cli_error("finetune --aa", "%s", why);
        return CLI_USAGE;
    }
    randaug_text(&a->aa_spec, a->aa_text, sizeof a->aa_text);
    // The decay or the warm-up alone asks for the average (timm's needs --model-ema beside them).
    a->model_ema |= cli_flag(flags, nflags, "--model-ema-decay")->seen || a->model_ema_warmup;
    int inits = (a->ckpt != NULL) + a->from_scratch + (a->resume != NULL);
    if (inits != 1) {
        cli_error("finetune", "give exactly one of --ckpt PRETRAINED, --from-scratch or --resume RUN (see vitmae finetune --help)");
        return CLI_USAGE;
    }
    if (!a->data && !a->resume) { cli_error("finetune", "--data DIR is required (see vitmae finetune --help)"); return CLI_USAGE; }
    // A run folder stands for its checkpoint.safetensors (docs/interface.md, section 9): the file is
    // what the run reads, names and records as its init (a resume shows that file, not the folder).
    if (a->ckpt) a->ckpt = st_checkpoint_arg(a->ckpt, a->ckpt_file, sizeof a->ckpt_file);
    if (cli_flag(flags, nflags, "--steps")->seen && cli_flag(flags, nflags, "--epochs")->seen) {   // one would be ignored
        cli_error("finetune --epochs", "give --steps N or --epochs E, not both");
        return CLI_USAGE;
    }
    if (a->val && cli_flag(flags, nflags, "--val-frac")->seen)   // one would be ignored (docs/data.md, "Validation")
        return cli_report("finetune --val-frac", VAL_PAIR_REFUSAL, CLI_USAGE);
    if (a->overwrite && a->resume) {
        cli_error("finetune --overwrite", "moves a run aside to start a new one; a resumed run continues its own folder, so it cannot be combined with --resume");
        return CLI_USAGE;
    }
    return CLI_OK;
}

// ---------------------------------------------------------------------------------------------
// Setup

// What the scan of dir skipped or left out, each with its reason (rank 0). Printed once the flags and
// the run folder have passed every check, or with the failure it explains (no image, one class): a
// refused run stays one line, not the last of a list of skipped files.
static void report_skipped(const char *dir, const Dataset *ds, int unclassified) {
    run_report_skipped(ds);
    if (unclassified && ds->nroot && dist_rank() == 0)
        cli_message("warning: %s: " ROOT_IMAGES_UNUSED, dir, ds->nroot, ds->nroot == 1 ? "" : "s",
                    ds->nroot == 1 ? "has" : "have", ds->nroot == 1 ? "is" : "are");
    if (unclassified && dist_rank() == 0) {
        CliHeld held = {0};
        cli_hold_hidden_classes(&held, dir, ds->class_names, ds->nclasses);
        cli_held_say(&held);
        cli_held_free(&held);
    }
}

// Both folders' reports (the --val folder's when it was scanned).
static void report_data(const FineTune *t) {
    report_skipped(t->data_dir, &t->ds, 1);
    if (t->val_dir) report_skipped(t->val_dir, &t->vds, 1);
}

// --resume of a training folder whose classes are not the checkpoint's: the line names the first
// class the folder lacks, and says so where its folder is there without a usable image (a class
// folder emptied since the run started is no class) or is a link to another class's folder
// (cmd/cli.h's notes), else the first class it has that the checkpoint lacks. The skipped files come
// before it only where the folder holds no usable image, which they may explain (report_skipped: a
// refused run stays one line otherwise).
static void say_classes_differ(const FineTune *t) {
    const Dataset *ds = &t->ds;
    int K = t->cfg.num_classes;
    for (int k = 0; k < K; k++) {
        int found = 0;
        for (int c = 0; c < ds->nclasses && !found; c++) found = !strcmp(ds->class_names[c], t->classes[k]);
        if (found) continue;
        char note[4200];
        if (cli_class_folder_note(ds->root, t->classes[k], ds, note, sizeof note)) report_data(t);
        cli_error(t->data_dir, "its classes differ from the checkpoint's %d classes: it has no class '%s'%s", K,
                  t->classes[k], note);
        return;
    }
    for (int c = 0; c < ds->nclasses; c++) {
        int found = 0;
        for (int k = 0; k < K && !found; k++) found = !strcmp(ds->class_names[c], t->classes[k]);
        if (found) continue;
        cli_error(t->data_dir, "its classes differ from the checkpoint's %d classes: its class '%s' is not one of them", K,
                  ds->class_names[c]);
        return;
    }
    cli_error(t->data_dir, "its classes differ from the checkpoint's %d classes", K);   // the same names, another order
}

static int scan(const char *dir, const FineTune *t, int img, Dataset *ds) {
    char err[CLI_ERR_MAX];
    // Headers only (docs/data.md, "Training reads lazily"): a photo decodes once, when a batch or an
    // evaluation first needs it, not also here.
    DatasetOptions opt = {.max_pixels = t->rs.max_pixels, .work_size = 2 * img, .cache_mb = t->a.lf.cache_mb,
                          .lazy = 1};
    int src = dataset_scan(dir, &opt, ds, err, sizeof err);
    if (src) { cli_error(dataset_err_what(src, dir), "%s", err); return 1; }
    // Another run's folder given as the images' (--data RUN where --ckpt RUN was meant): refused before
    // its curves.png trains as a class's image (docs/data.md, "Files").
    int val = ds == &t->vds;
    const char *flag = !(val ? t->a.val : t->a.data) ? "--resume" : val ? "--val" : "--data";   // the flag that named it
    if ((src = run_data_refuse_run_folder("finetune", flag, ds, val, err, sizeof err))) {
        cli_error(NULL, "%s", err);
        return src;
    }
    if (ds->n == 0) {
        report_skipped(dir, ds, 0);
        cli_error(dir, "no usable image (%d skipped, %d ignored)", ds->nskipped, ds->nignored);
        return 1;
    }
    if (ds->nclasses == 0) {   // the flag's mistake (exit 2): named as probe names its --train and --test
        report_skipped(dir, ds, 0);
        char what[32];
        snprintf(what, sizeof what, "finetune %s", flag);
        cli_error(what, "%s has no class folders: fine-tuning needs DIR/<class>/<image> (one sub-folder per class)", dir);
        return 2;
    }
    int bad = utf8_first_invalid(ds->class_names, ds->nclasses);
    if (bad >= 0) { cli_error(dir, UTF8_CLASS_REFUSAL, ds->class_names[bad]); return 2; }
    return 0;
}

// The training / validation index lists and the validation labels (in the model's classes).
static int split(FineTune *t) {
    const Dataset *ds = &t->ds;
    int *tr = NULL, ntr = 0, *va = NULL, nva = 0;
    // As train's: the run's fallback images held where it has them (docs/interface.md section 2, "Validation split").
    if (t->vds.n ? dataset_split(ds, 0.0, &tr, &ntr, &va, &nva)
                 : dataset_split_pinned(ds, t->rs.val_frac, &t->rs.split_pin, &tr, &ntr, &va, &nva)) {
        cli_error("finetune", "out of memory");
        return 1;
    }
    t->train_idx = tr; t->ntrain = 0;
    for (int i = 0; i < ntr; i++) if (ds->items[tr[i]].cls >= 0) t->train_idx[t->ntrain++] = tr[i];
    if (t->ntrain == 0) { report_data(t); cli_error(t->data_dir, "no training image left after holding out %g for validation", t->rs.val_frac); free(va); return 1; }
    // A class whose every image went to validation (one image a class: the split's rule) trains nothing.
    int *count = calloc((size_t)ds->nclasses, sizeof *count), none = 0;
    if (!count) { cli_error("finetune", "out of memory"); free(va); return 1; }
    for (int i = 0; i < t->ntrain; i++) count[ds->items[t->train_idx[i]].cls]++;
    size_t n = 0;
    t->untrained[0] = 0;
    for (int c = 0; c < ds->nclasses; c++) {
        if (count[c]) continue;
        none++;
        if (n < sizeof t->untrained)
            n += (size_t)snprintf(t->untrained + n, sizeof t->untrained - n, "%s'%s'", none > 1 ? ", " : "",
                                  ds->class_names[c]);
    }
    free(count);
    if (none) {   // the names were cut short at the buffer's end: the count says how many
        char names[sizeof t->untrained];
        snprintf(names, sizeof names, "%s", t->untrained);
        snprintf(t->untrained, sizeof t->untrained, "warning: %d class%s of %s ha%s no training image (%.700s): "
                 "--val-frac %g held out every image of %s; pass --val DIR or a smaller --val-frac (0: none held out)", none,
                 none == 1 ? "" : "es", t->data_dir, none == 1 ? "s" : "ve", names, t->rs.val_frac,
                 none == 1 ? "it" : "them");
    }
    const Dataset *vs = val_set(t);
    if (t->vds.n) {   // every image of the --val folder, its class mapped by name
        free(va);
        va = malloc((size_t)vs->n * sizeof *va);
        if (!va) { cli_error("finetune", "out of memory"); return 1; }
        nva = 0;
        for (int i = 0; i < vs->n; i++) va[nva++] = i;
    }
    t->val_idx = va; t->nval = 0;
    t->val_label = malloc(((size_t)nva + 1) * sizeof *t->val_label);
    if (!t->val_label) { cli_error("finetune", "out of memory"); return 1; }
    for (int i = 0; i < nva; i++) {
        int c = vs->items[va[i]].cls;
        if (c < 0) continue;
        int mapped = -1;
        for (int k = 0; k < t->cfg.num_classes && mapped < 0; k++)
            if (!strcmp(vs->class_names[c], t->classes[k])) mapped = k;
        if (mapped < 0) {
            char note[4200];
            if (cli_class_folder_note(t->ds.root, vs->class_names[c], &t->ds, note, sizeof note))
                report_data(t);   // the skipped files where they explain it, as say_classes_differ
            cli_error("finetune --val", "class '%s' of %s is not among the %d training classes%s", vs->class_names[c],
                      vs->root, t->cfg.num_classes, note);
            return 2;
        }
        t->val_idx[t->nval] = va[i];
        t->val_label[t->nval++] = mapped;
    }
    return 0;
}

// --ckpt: the model is the checkpoint's. The model flags (--from-scratch's) given with it must agree
// with it, as train --init's do, but for --img: another image size at the same patch size resizes the
// position table as MAE's main_finetune does (docs/encoder.md, "vitmae finetune"). --pixel-norm cannot
// change. Refused (exit 2), never ignored.
static int ckpt_model_flags(const Args *a, const MaeConfig *c, Flag *flags, int nflags) {
    MaeConfig p;   // the flags' model: the preset's sizes where --dim/--depth/--heads are not given
    run_model_from_flags(&p, a->preset, a->img, a->patch, a->dim, a->depth, a->heads, a->pos, a->channels,
                         c->in_chans);   // --channels auto: any
    struct { const char *flag; int given, ckpt, from_preset; } shape[] = {
        {"--patch", p.patch_size, c->patch_size, 0},
        {"--channels", p.in_chans, c->in_chans, 0}, {"--dim", p.embed_dim, c->embed_dim, !a->dim},
        {"--depth", p.depth, c->depth, !a->depth},
        {"--heads", p.num_heads, c->num_heads, !a->heads},
    };
    int preset = cli_flag(flags, nflags, "--preset")->seen;
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        int seen = cli_flag(flags, nflags, shape[i].flag)->seen;
        if (!(seen || (preset && shape[i].from_preset)) || shape[i].given == shape[i].ckpt) continue;
        if (!seen)
            cli_error("finetune --preset", "%s sets %s %d, which disagrees with the checkpoint's %d (--ckpt keeps its "
                      "model; the model flags are --from-scratch's)", a->preset, shape[i].flag, shape[i].given,
                      shape[i].ckpt);
        else {
            char what[64];
            snprintf(what, sizeof what, "finetune %s", shape[i].flag);
            cli_error(what, "%d disagrees with the checkpoint's %d (--ckpt keeps its model; the model flags "
                      "are --from-scratch's)", shape[i].given, shape[i].ckpt);
        }
        return 2;
    }
    if (cli_flag(flags, nflags, "--img")->seen && a->img % c->patch_size) {
        cli_error("finetune --img", "%d is not a multiple of the checkpoint's patch size %d (at another image size "
                  "the position table is resized to --img / %d patches a side)", a->img, c->patch_size, c->patch_size);
        return 2;
    }
    if (cli_flag(flags, nflags, "--pixel-norm")->seen) {
        cli_error("finetune --pixel-norm", "cannot be given with --ckpt: the encoder was trained with the checkpoint's "
                  "pixel statistics, which fine-tuning keeps");
        return 2;
    }
    return 0;
}

// The encoder of a pretraining checkpoint, or a fresh one from train's model flags.
static int build_model(FineTune *t, Flag *flags, int nflags) {
    Args *a = &t->a;
    char err[CLI_ERR_MAX];
    MaeConfig *e = &t->cfg.enc;
    if (a->ckpt) {
        // Damaged data are the reason given before the file's kind, as every command that reads a
        // checkpoint gives it (exit 1; docs/interface.md, "Exit status").
        int kind = ckpt_peek_kind(a->ckpt, CKPT_FULL | CKPT_ENCODER_ONLY, err, sizeof err);
        if (kind < 0) { cli_error(NULL, "%s", err); return 1; }
        if (kind == CKPT_CLASSIFIER) {
            // One without a train state (a converted classifier, one saved for inference) cannot be
            // continued: --resume of it is refused, which "continue ... with --resume RUN" sent the user to.
            // A finished run's trains no more (a fine-tuning run keeps its --steps: its --resume has nothing to
            // train): the way on is a new run from the checkpoint it started from, as train --resume of it and
            // finetune --out of its folder say (docs/data.md, "Run folders").
            char way[CLI_ERR_MAX];
            long last = run_finished_way(a->ckpt, way, sizeof way);
            if (last > 0)
                cli_error(a->ckpt, "is the fine-tuned classifier of a finished run (it reached its last step, %ld, and a "
                          "fine-tuning run keeps its --steps); --ckpt takes a pretraining checkpoint: %s", last, way);
            else if (ckpt_peek_has_state(a->ckpt))
                cli_error(a->ckpt, "is a fine-tuned classifier; --ckpt takes a pretraining checkpoint (continue a fine-tuning run with --resume RUN)");
            else
                cli_error(a->ckpt, "is a fine-tuned classifier without a training state (for inference only: no run to "
                          "continue); --ckpt takes a pretraining checkpoint");
            return 2;
        }
        // The encoder's weights alone, the decoder's read past and checked as every reader checks them
        // (io/checkpoint.h): the same refusals, word for word, without holding the decoder. Kept for
        // setup_local, which copies them into the model: the file is read once.
        ckpt_free(&t->pre);
        if (ckpt_load_encoder(a->ckpt, &t->pre, err, sizeof err)) { cli_error(NULL, "%s", err); return 1; }
        *e = t->pre.cfg;
        int rc = ckpt_model_flags(a, e, flags, nflags);
        if (rc) return rc;
        // Another --img: the encoder's weights fit any image size at this patch size but its position
        // table, resized when the weights are copied (setup_local).
        if (cli_flag(flags, nflags, "--img")->seen && a->img != e->img_size) {
            t->pos_grid_from = e->img_size / e->patch_size;
            e->img_size = a->img;
            const char *flag;
            if (mae_config_check_flags(e, &flag, err, sizeof err)) return cli_model_flags_refused("finetune", flag, err);
        }
        // The position table starts as the checkpoint's and trains, as in MAE's main_finetune (its
        // models_vit learns pos_embed whatever pretraining did); --pos fixed keeps it frozen
        // (docs/encoder.md, "vitmae finetune").
        e->pos_learned = cli_flag(flags, nflags, "--pos")->seen ? strcmp(a->pos, "learned") == 0 : 1;
        snprintf(t->init_shown, sizeof t->init_shown, "%s", a->ckpt);
        run_abs_path(t->rs.init, sizeof t->rs.init, a->ckpt);
    } else {
        run_model_from_flags(e, a->preset, a->img, a->patch, a->dim, a->depth, a->heads, a->pos, a->channels,
                             t->ds.all_grey ? 1 : 3);
        snprintf(t->rs.init, sizeof t->rs.init, "scratch");
        snprintf(t->init_shown, sizeof t->init_shown, "scratch");
        (void)flags; (void)nflags;
        const char *flag;
        if (mae_config_check_flags(e, &flag, err, sizeof err)) return cli_model_flags_refused("finetune", flag, err);
    }
    t->cfg.num_classes = 2;   // checked for real once the classes are known
    if (clf_config_check(&t->cfg, err, sizeof err)) { cli_error("finetune", "%s", err); return 2; }
    return 0;
}

// The memory rule for a step of `groups` gradient groups: the model (one group's images), this process's
// images of a step and the --prefetch batches the loader holds ahead of it, the gradient tree's buffers
// (and with N > 1 the received slices of one). Summed in double: a model's estimate goes up to 2^63
// bytes (core/model.c), and the workers' copies of the largest models wrapped a size_t sum (4 workers
// said 0.1 x 10^18 bytes, 2 said 9 x 10^18).
static double memory_need(const FineTune *t, int groups) {
    // --model-ema: the average's weights and the forward-only classifier that validates them
    double ema = t->rs.model_ema ? (double)clf_bytes_needed_forward(&t->cfg, t->rs.batch / groups) : 0.0;
    return ema + (double)clf_bytes_needed(&t->cfg, t->rs.batch / groups) +
           (double)(1 + t->a.lf.prefetch) * t->share * t->S * t->S * t->C * sizeof(float) +
           (double)grad_reduce_floats(groups, dist_size(), clf_num_params(&t->cfg)) * sizeof(float);
}
// Whether `need` bytes pass the rule of every command (90% of the memory there is, or memory unknown).
static int memory_fits(double need, long have) { return have <= 0 || need <= 0.9 * (double)have; }
// The rule at `groups` for groups_that_fit (cmd/groups.h), the team's threads sharing every kernel.
static int groups_fit(const void *ctx, int groups) {
    return memory_fits(memory_need(ctx, groups), cpu_memory_bytes());
}

// A flag that shapes a method, given to a new run with the method off, changes nothing: refused as
// --crop-scale without the crop is (exit 2, one line). A timm user's --mixup-prob 0.5 without --mixup
// or --cutmix, or --remode const without --reprob, ran as if not given, and was kept in the run's
// state as if it counted. 1 when refused (said).
static int idle_flag_refused(const Args *a, Flag *flags, int nflags) {
    static const struct { const char *flag, *what, *way; } IDLE[] = {
        {"--mixup-prob", "the chance a gradient group is mixed, which mixes nothing while --mixup and --cutmix are 0",
         "give one of them: MAE's recipe --mixup 0.8 --cutmix 1.0"},
        {"--mixup-switch-prob", "the chance of CutMix over Mixup, which takes both --mixup and --cutmix on", "give both"},
        {"--recount", "the most boxes random erasing puts in an image, which erases nothing with --reprob 0",
         "give --reprob: MAE's recipe 0.25"},
        {"--remode", "random erasing's fill, which erases nothing with --reprob 0", "give --reprob: MAE's recipe 0.25"},
    };
    int mixing = a->mix.mixup > 0 || a->mix.cutmix > 0, both = a->mix.mixup > 0 && a->mix.cutmix > 0;
    int idle[4] = {!mixing, !both, a->erase.prob <= 0, a->erase.prob <= 0};
    for (int i = 0; i < 4; i++) {
        const Flag *f = cli_flag(flags, nflags, IDLE[i].flag);
        if (!f->seen || !idle[i]) continue;
        char v[32];
        if (f->type == FLAG_CHOICE) snprintf(v, sizeof v, "%s", *(const char **)f->dst);
        else run_value_text(v, sizeof v, f->type == FLAG_INT ? *(int *)f->dst : *(float *)f->dst, f->type == FLAG_FLOAT);
        char name[64];
        snprintf(name, sizeof name, "finetune %s", IDLE[i].flag);
        cli_error(name, "%s: %s (leave it out, or %s)", v, IDLE[i].what, IDLE[i].way);
        return 1;
    }
    return 0;
}

// Setup, phase 1 (each rank alone): the checkpoint to resume or start from, the data, the model and its
// weights, the gradient groups against this job's process count, memory, buffers. Reports its failure
// (deferred under mpirun) and returns the exit code.
static int setup_local(FineTune *t, Flag *flags, int nflags) {
    Args *a = &t->a;
    FtState *r = &t->rs;
    char err[CLI_ERR_MAX];
    int resuming = a->resume != NULL;
    if (resuming) {
        char path[4096], dir[4096];
        run_resume_path(a->resume, path, sizeof path, dir, sizeof dir);
        // The folder the run goes on in, held before its checkpoint is read (cmd/runfolder.h).
        if (dist_rank() == 0 && run_folder_lock(a->out ? a->out : dir, err, sizeof err)) {
            cli_error("finetune", "%s", err);
            return 1;
        }
        int missing = run_resume_missing("finetune", a->resume, err, sizeof err);
        if (missing) { cli_error(NULL, "%s", err); return missing; }
        int kind = ckpt_peek_kind(path, CKPT_CLASSIFIER, err, sizeof err);   // damaged before the wrong kind, as above
        if (kind < 0) { cli_error(NULL, "%s", err); return 1; }
        char word[FILE_SHELL_WORD_MAX];
        if (kind != CKPT_CLASSIFIER) { cli_error(path, "cannot resume: a pretraining checkpoint (start fine-tuning from it with --ckpt %s)", file_shell_word(a->resume, word, sizeof word)); return 1; }
        if (clf_ckpt_load(path, &t->resumed, err, sizeof err)) { cli_error(NULL, "%s", err); return 1; }
        if (!t->resumed.train_state) { cli_error(path, "cannot resume: no training state in this checkpoint (it loads for inference only)"); return 1; }
        if (!t->resumed.has_moments) { cli_error(path, RESUME_NO_MOMENTS); return 1; }
        if (ft_state_from_json(t->resumed.train_state, r, err, sizeof err)) { cli_error(path, "cannot resume: %s", err); return 1; }
        if (r->model_ema && !t->resumed.has_ema) {
            cli_error(path, "cannot resume: its run keeps the weights' moving average (model_ema), and the file holds "
                      "none (ema.*): it was stripped");
            return 1;
        }
        snprintf(t->init_shown, sizeof t->init_shown, "%s", r->init);
        t->cfg = t->resumed.cfg;
        t->classes = t->resumed.classes;
        snprintf(t->run_dir, sizeof t->run_dir, "%s", a->out ? a->out : dir);
        struct stat so, sd;
        int same_dir = stat(t->run_dir, &so) == 0 && stat(dir, &sd) == 0 && so.st_dev == sd.st_dev && so.st_ino == sd.st_ino;
        t->own_folder = !a->out || same_dir;
        if (a->out && !same_dir && run_folder_has_run_of("finetune", a->out)) {
            return cli_report(NULL, err, run_folder_refusal("finetune", a->out, run_folder_holds_which(path, a->out), err,
                                                            sizeof err));
        }
        int foreign = !a->out || same_dir ? run_folder_foreign_checkpoint(path, dir) : 0;
        if (foreign) {
            char why[4400];
            cli_error("finetune --resume", "%s: not a checkpoint of the run in %s (%s); continue it in a folder of its "
                      "own with --out DIR", path, dir, run_foreign_why(foreign, dir, why, sizeof why));
            return 2;
        }
        int rc = !a->out || same_dir ? metrics_gap_refusal("finetune", a->resume, path, dir, r->step < r->total_steps, err,
                                                                 sizeof err) : 0;
        if (!rc && (!a->out || same_dir)) rc = run_resume_user_outputs("finetune", a->resume, dir, err, sizeof err);
        if (rc) { cli_error(NULL, "%s", err); return rc; }
        rc = run_resume_check_folders("finetune", path, r->data, r->val, r->val_frac, a->data, a->val, err, sizeof err);
        if (!rc) rc = run_folder_overlaps("finetune", a->out ? "--out" : "--resume", t->run_dir, a->data ? a->data : r->data,
                                          a->val ? a->val : r->val[0] ? r->val : NULL, err, sizeof err);
        if (!rc) rc = run_store_meets_run("finetune", a->lf.store, t->run_dir, err, sizeof err);
        if (rc) { cli_error(NULL, "%s", err); return rc; }
        if (a->data) run_abs_path(r->data, sizeof r->data, a->data);   // a moved folder: where it is now
        if (a->val) run_abs_path(r->val, sizeof r->val, a->val);
        snprintf(t->resuming, sizeof t->resuming, "resuming %s at step %ld of %ld", path, r->step, r->total_steps);
    } else {
        run_abs_path(r->data, sizeof r->data, a->data);   // absolute: --resume from any directory
        if (a->val) run_abs_path(r->val, sizeof r->val, a->val);
        else r->val[0] = 0;
        r->val_frac = a->val_frac;
        if (a->out) snprintf(t->run_dir, sizeof t->run_dir, "%s", a->out);
        else run_folder_default("finetune-", t->run_dir, sizeof t->run_dir);
        t->named = !a->out;   // nothing to guard: a run that takes the name meanwhile is met in setup_run_folder
        int overlap = run_folder_overlaps("finetune", a->out ? "--out" : NULL, t->run_dir, a->data, a->val, err, sizeof err);
        if (!overlap) overlap = run_store_meets_run("finetune", a->lf.store, t->run_dir, err, sizeof err);
        if (overlap) { cli_error(NULL, "%s", err); return overlap; }
        if (!t->named && dist_rank() == 0 && run_folder_lock(t->run_dir, err, sizeof err)) {
            cli_error("finetune", "%s", err);
            return 1;
        }
        if (!t->named && run_folder_has_run_of("finetune", t->run_dir)) {
            int has = a->overwrite ? 1 : run_folder_has_checkpoint(t->run_dir);
            if (has < 0) {   // a snapshot may be there: said, not guessed
                cli_error(NULL, "finetune --out %s: cannot list the folder: %s", t->run_dir, strerror(errno));
                return 1;
            }
            if (!has)   // --resume would find nothing
                return cli_report(NULL, err, run_folder_refusal("finetune", t->run_dir, RUN_HOLDS_NO_CHECKPOINT, err, sizeof err));
            if (!a->overwrite)
                return cli_report(NULL, err, run_folder_refusal("finetune", t->run_dir, RUN_HOLDS_RUN, err, sizeof err));
            t->move_aside = 1;   // once every rank has read --ckpt, which may lie in the old run (setup_run_folder)
        }
    }

    // --max-pixels decides which images are usable: the run's own unless given again (docs/data.md).
    if (!resuming || cli_flag(flags, nflags, "--max-pixels")->seen) r->max_pixels = a->lf.max_pixels;
    // The model's shape first (the image size decides the cache), then the data.
    if (!resuming && a->ckpt) { int rc = build_model(t, flags, nflags); if (rc) return rc; }
    int img = resuming || a->ckpt ? t->cfg.enc.img_size : a->img;
    t->data_dir = a->data ? a->data : r->data;
    t->val_dir = !r->val[0] ? NULL : a->val ? a->val : r->val;
    int rc = scan(t->data_dir, t, img, &t->ds);
    if (rc) return rc;
    // A file broken at --batch 1: a resumed run keeps its --batch, so the way on is a new run (docs/data.md).
    // The checkpoint named, as resume_way names it: "--ckpt" alone sent users to pass the run itself.
    if (resuming) {
        char ckpt[FILE_SHELL_WORD_MAX + 8];
        int gone;
        const char *flag = run_new_run_flag(r->init, ckpt, sizeof ckpt, &gone);
        // The new run alone where the file is its class's last image (ds.batch_of_one_sole_way).
        const char *remove = "remove the file, or ";
        snprintf(t->batch_of_one_way, sizeof t->batch_of_one_way, "%sstart a new run with %s and a --batch of 2 or more "
                 "(a resumed run keeps its --batch%s%s%s)", remove, flag, gone ? "; this run started from " : "",
                 gone ? r->init : "", gone ? ", which is gone" : "");
        t->ds.batch_of_one_way = t->batch_of_one_way;
        t->ds.batch_of_one_sole_way = t->batch_of_one_way + strlen(remove);
    }
    if (t->val_dir && (rc = scan(t->val_dir, t, img, &t->vds))) return rc;
    t->vds.root_role = RUN_VAL_ROLE;
    if (!resuming) {
        if (a->from_scratch && (rc = build_model(t, flags, nflags))) return rc;
        if (t->ds.nclasses < 2) {
            char note[4200];
            cli_unused_class_folder_note(t->data_dir, &t->ds, note, sizeof note);
            report_data(t);
            cli_error("finetune --data", "%s has one class only ('%s'): a classifier needs at least 2 class folders%s",
                      t->data_dir, t->ds.class_names[0], note);
            return 2;
        }
        t->cfg.num_classes = t->ds.nclasses;
        t->classes = t->ds.class_names;
    } else {
        int same = t->ds.nclasses == t->cfg.num_classes;
        for (int k = 0; same && k < t->cfg.num_classes; k++) same = !strcmp(t->ds.class_names[k], t->classes[k]);
        // A usage error, as a --val class the training folder lacks and probe's --test: the folders named
        // do not go together (docs/interface.md, section 1, exit status).
        if (!same) { say_classes_differ(t); return 2; }
    }
    if ((rc = split(t))) return rc;
    t->S = t->cfg.enc.img_size; t->C = t->cfg.enc.in_chans;
    // The images this session trains on, against those of the checkpoint (said once the run starts).
    char images[RUN_DATA_SIG_MAX];
    run_data_signature(&t->ds, t->vds.n ? &t->vds : NULL, t->vds.n ? NULL : t->train_idx, t->ntrain, t->val_idx, t->nval,
                       images, sizeof images);
    if (!resuming || !run_data_changed("finetune", t->data_dir, t->val_dir, r->images, images,
                                       t->images_changed, sizeof t->images_changed))
        t->images_changed[0] = 0;
    snprintf(r->images, sizeof r->images, "%s", images);
    // A resume on another count of training images starts the epoch column's new stretch (cmd/runfolder.h).
    run_epochs_resume(&r->epochs, r->step, r->batch, t->ntrain);

    if (!resuming) {
        r->batch = a->batch;
        r->seed = a->seed;
        r->total_steps = a->steps;
        char why[512];
        if (a->epochs > 0 && run_epoch_steps("finetune", a->epochs, t->ntrain, a->batch, &r->total_steps, why, sizeof why))
            return cli_report(NULL, why, CLI_USAGE);
        if (r->total_steps < 1) r->total_steps = 1;
        r->warmup = a->warmup >= 0 ? a->warmup : warmup_default(r->total_steps);
        if (run_lr_blr_check("finetune", flags, nflags, why, sizeof why)) return cli_report(NULL, why, CLI_USAGE);
        r->lr = cli_flag(flags, nflags, "--lr")->seen ? a->lr : lr_from_blr(a->blr, a->batch);
        r->min_lr = a->min_lr; r->wd = a->wd; r->layer_decay = a->layer_decay; r->drop_path = a->drop_path;
        if (run_min_lr_check("finetune", r->lr, cli_flag(flags, nflags, "--lr")->seen, a->blr, a->batch, &r->min_lr,
                             cli_flag(flags, nflags, "--min-lr")->seen, why, sizeof why))
            return cli_report(NULL, why, CLI_USAGE);
        r->smoothing = a->smoothing; r->clip = a->clip; r->val_max = a->val_max; r->mix = a->mix;
        r->erase = a->erase;
        r->crop_scale = a->crop_scale;
        if (cli_flag(flags, nflags, "--crop-scale")->seen && strcmp(a->augment, "crop")) {
            char lo[32];
            run_value_text(lo, sizeof lo, a->crop_scale, 1);
            cli_error("finetune --crop-scale", "%s: the smallest area of the random resized crop, which --augment %s "
                      "does not take (leave it out, or use --augment crop)", lo, a->augment);
            return 2;
        }
        if (idle_flag_refused(a, flags, nflags)) return CLI_USAGE;
        r->crop_pct = a->crop_pct;   // validation only: a resume may give another
        snprintf(r->interp, sizeof r->interp, "%s", a->interp);
        snprintf(r->aa, sizeof r->aa, "%s", a->aa_text);
        r->model_ema = a->model_ema;
        r->ema_decay = a->model_ema_decay;
        r->ema_warmup = a->model_ema_warmup;
        snprintf(r->augment, sizeof r->augment, "%s", a->augment);
        snprintf(r->remode, sizeof r->remode, "%s", a->remode);
        run_new_id(r->run_id, sizeof r->run_id);
        r->eval_every = a->eval_every ? a->eval_every : run_default_every(r->total_steps);
        r->ckpt_every = a->ckpt_every ? a->ckpt_every : r->eval_every;
        r->log_every = a->log_every;
        r->keep = a->keep;
        r->groups = a->groups ? a->groups : dist_default_groups(r->batch);
    } else {
        // A flag that decides the weights or the schedule must give the run's own value (docs/encoder.md):
        // refused otherwise, never ignored. --preset is the run's when every size it sets (under the
        // shape flags given) is; --channels auto as the images scanned make it (any with --ckpt, whose
        // model it was); --pixel-norm is measured and compared where a new run measures (setup_run_folder).
        const MaeConfig *c = &t->cfg.enc;
        MaeConfig p;
        run_model_from_flags(&p, a->preset, a->img, a->patch, a->dim, a->depth, a->heads, a->pos, a->channels,
                             c->in_chans);
        char way_ckpt[sizeof r->init + 96];
        const char *way = resume_way(r, 0, way_ckpt, sizeof way_ckpt), *pos = c->pos_learned ? "learned" : "fixed";
        // --blr and --epochs give the run's --lr and --steps when they work out to them, as in a new run
        char blr[32], lr[40], given_lr[32], epochs[32], steps[40], frac[32];
        run_value_text(blr, sizeof blr, a->blr, 1);
        run_value_text(given_lr, sizeof given_lr, a->lr, 1);
        snprintf(lr, sizeof lr, "--lr ");
        run_value_text(lr + 5, sizeof lr - 5, r->lr, 1);
        run_value_text(epochs, sizeof epochs, a->epochs, 1);
        snprintf(steps, sizeof steps, "--steps %ld", r->total_steps);
        run_value_text(frac, sizeof frac, a->val_frac, 1);
        long epoch_steps = -1;
        char why[512];
        if (a->epochs > 0 && run_epoch_total("finetune", a->epochs, &r->epochs, t->ntrain, r->batch, &epoch_steps, why,
                                             sizeof why))
            epoch_steps = -1;
        // The run's own --epochs over images whose count changed works out to other steps: "--epochs 20
        // cannot change (this run's is --steps 188)" of the user's unchanged --epochs, with the advice of a
        // new run, where leaving it out goes on.
        if (a->epochs > 0 && epoch_steps < 0) {   // more steps than a run counts
            cli_error(NULL, "%s", why);
            return 2;
        }
        if (a->epochs > 0 && a->epochs < r->epochs.from && r->epochs.from_step > 0) {
            // run_epoch_total gives the step of the count's change for an --epochs passed before it: not
            // where the --epochs ended (docs/interface.md, finetune --resume). One reached at that very
            // step ends there, as the line below says.
            cli_error("finetune --resume", "--epochs %s was passed before step %ld (epoch %.2f there, where the "
                      "training images' count changed; %d now), not at the run's last step, %ld: a fine-tuning run "
                      "keeps its steps; leave --epochs out to go on to step %ld, or %s", epochs, r->epochs.from_step,
                      r->epochs.from, t->ntrain, r->total_steps, r->total_steps, way);
            return 2;
        }
        if (a->epochs > 0 && epoch_steps != r->total_steps && r->epochs.from_step > 0) {
            cli_error("finetune --resume", "--epochs %s would end at step %ld on the %d training images now (their "
                      "count changed since the run started), not at the run's last, %ld: a fine-tuning run keeps its "
                      "steps; leave --epochs out to go on to step %ld, or %s", epochs, epoch_steps, t->ntrain,
                      r->total_steps, r->total_steps, way);
            return 2;
        }
        const RunSameFlag same[] = {
            {"--pos", 1, 0, 0, 0, a->pos, pos},
            {"--augment", 1, 0, 0, 0, a->augment, r->augment},
            {"--crop-scale", 0, 1, a->crop_scale, r->crop_scale, NULL, NULL},
            {"--interp", 1, 0, 0, 0, a->interp, r->interp},
            {"--aa", 1, 0, 0, 0, a->aa_text, r->aa},
            // of a run with the average (one without it refuses them below)
            {"--model-ema-warmup", 1, 0, 0, 0, "", r->ema_warmup ? "" : "none"},
            {"--model-ema-decay", 0, 0, a->model_ema_decay, r->ema_decay, NULL, NULL},
            {"--steps", 0, 0, (double)a->steps, (double)r->total_steps, NULL, NULL},
            {"--epochs", 1, 0, 0, 0, epochs, epoch_steps == r->total_steps ? epochs : steps},
            {"--batch", 0, 0, a->batch, r->batch, NULL, NULL},
            // either form of the run's rate (cmd/runfolder.h: one float apart at a batch not a power of two)
            {"--lr", 1, 0, 0, 0, given_lr, run_lr_is_runs(a->lr, 0, r->batch, r->lr) ? given_lr : lr + 5},
            {"--blr", 1, 0, 0, 0, blr, run_lr_is_runs(a->blr, 1, r->batch, r->lr) ? blr : lr},
            {"--min-lr", 0, 1, a->min_lr, r->min_lr, NULL, NULL},
            {"--warmup-steps", 0, 0, (double)a->warmup, (double)r->warmup, NULL, NULL},
            {"--wd", 0, 1, a->wd, r->wd, NULL, NULL},
            {"--layer-decay", 0, 1, a->layer_decay, r->layer_decay, NULL, NULL},
            {"--drop-path", 0, 1, a->drop_path, r->drop_path, NULL, NULL},
            {"--smoothing", 0, 1, a->smoothing, r->smoothing, NULL, NULL},
            {"--clip", 0, 1, a->clip, r->clip, NULL, NULL},
            {"--mixup", 0, 1, a->mix.mixup, r->mix.mixup, NULL, NULL},
            {"--cutmix", 0, 1, a->mix.cutmix, r->mix.cutmix, NULL, NULL},
            {"--mixup-prob", 0, 1, a->mix.prob, r->mix.prob, NULL, NULL},
            {"--mixup-switch-prob", 0, 1, a->mix.switch_prob, r->mix.switch_prob, NULL, NULL},
            {"--reprob", 0, 1, a->erase.prob, r->erase.prob, NULL, NULL},
            {"--remode", 1, 0, 0, 0, a->remode, r->remode},
            {"--recount", 0, 0, a->erase.count, r->erase.count, NULL, NULL},
            {"--seed", 0, 0, (double)a->seed, (double)r->seed, NULL, NULL},
            // a --val run holds nothing out: no --val-frac is its own
            {"--val-frac", r->val[0] != 0, 1, a->val_frac, r->val_frac, frac, NULL},
        };
        if (a->model_ema && !r->model_ema) {   // any of the three flags given
            const char *given = cli_flag(flags, nflags, "--model-ema")->seen ? "--model-ema"
                                : a->model_ema_warmup ? "--model-ema-warmup" : "--model-ema-decay";
            cli_error("finetune --resume", "%s: this run keeps no moving average of its weights, and one begun now would "
                      "not be the run's; %s", given, way);
            return 2;
        }
        int scratch = !strcmp(r->init, "scratch");
        if (run_resume_same_encoder("finetune", a->preset, &p, 0, a->img, a->patch, a->channels, a->dim, a->depth,
                                    a->heads, c, flags, nflags, resume_way(r, 1, NULL, 0), way, err, sizeof err) ||
            (scratch && run_resume_same_auto_channels("finetune", a->channels, t->ds.all_grey ? 1 : 3, c, flags, nflags,
                                                      resume_way(r, 1, NULL, 0), err, sizeof err)) ||
            run_resume_val_frac("finetune", r->val, flags, nflags, err, sizeof err) ||
            run_resume_same_flags("finetune", same, (int)(sizeof same / sizeof same[0]), flags, nflags, way, err,
                                  sizeof err)) {
            cli_error(NULL, "%s", err);
            return 2;
        }
        if (cli_flag(flags, nflags, "--val-max")->seen) r->val_max = a->val_max;
        if (cli_flag(flags, nflags, "--crop-pct")->seen) r->crop_pct = a->crop_pct;   // measures, trains nothing
        if (a->groups && a->groups != r->groups) {
            cli_error("finetune --groups", "%d: this run sums each step as %d gradient group%s, fixed when it started "
                      "so that it continues bitwise (leave --groups out)", a->groups, r->groups, r->groups == 1 ? "" : "s");
            return 2;
        }
        if (cli_flag(flags, nflags, "--log-every")->seen) r->log_every = a->log_every;
        if (cli_flag(flags, nflags, "--eval-every")->seen) r->eval_every = a->eval_every;
        if (cli_flag(flags, nflags, "--ckpt-every")->seen) r->ckpt_every = a->ckpt_every;
        else if (cli_flag(flags, nflags, "--eval-every")->seen) r->ckpt_every = r->eval_every;   // as in a new run
        if (cli_flag(flags, nflags, "--keep")->seen) r->keep = a->keep;
        if (t->own_folder && (rc = run_other_ahead_refusal("finetune", a->resume, t->run_dir, r->step, r->total_steps,
                                                           r->keep, err, sizeof err))) {
            cli_error(NULL, "%s", err);
            return rc;
        }
    }

    // The gradient groups: fixed for the run; this job's N processes must divide them.
    int bad = dist_check_groups_given(r->batch, r->groups, a->groups != 0, dist_size(), 1, err, sizeof err);
    if (bad != 0 && bad != DIST_BAD_GROUPS && resuming) run_resume_groups_refusal(err, sizeof err, bad, dist_size(), 1, r->groups);
    // (The file's own G, an edit, was refused with its train_state: run_state_groups_check.)
    if (bad) {
        cli_error(bad == DIST_BAD_GROUPS ? "finetune --groups" : "finetune", "%s", err);
        return 2;
    }
    t->per = r->batch / r->groups;
    t->share = r->batch / dist_size();
    // Threads as workers (dist/workers.h): each a thread of its own with its own activations.
    if (parallel_check(a->parallel, r->groups, 1, omp_get_max_threads(), &t->workers, err, sizeof err)) {
        cli_error("finetune --parallel", "%s", err);
        return 2;
    }

    // Memory (memory_need): refused before anything is allocated, with the way out when a new run has
    // one: the fewest gradient groups above its own that would fit (as train).
    double need = memory_need(t, r->groups);
    long have = cpu_memory_bytes();
    if (t->workers) {   // the other workers' activations and the workers' gradient buffers (cmd/groups.h)
        int is_auto = !strcmp(a->parallel, "auto");
        double all;
        if (!parallel_memory_more(need, (double)clf_bytes_needed(&t->cfg, t->per),
                                  4.0 * (double)clf_num_params(&t->cfg) * sizeof(float), clf_num_params(&t->cfg), 1,
                                  t->workers, r->groups / dist_size(), is_auto ? 0.5 : 0.9, &all, err, sizeof err))
            need = all;
        else if (is_auto) t->workers = 0;   // the threads share every kernel then, which needs less
        else return cli_report("finetune --parallel groups", err, 2);
    }
    if (!memory_fits(need, have)) {
        char msg[1024];
        snprintf(msg, sizeof msg, "the model needs %.0f bytes (%.2f GiB) for batch %d at %dx%d; %s %.2f GiB", need,
                 need / 1073741824.0, r->batch, t->S, t->S, cpu_memory_holder(), have / 1073741824.0);
        groups_fit_hint(msg, sizeof msg, r->batch,
                        resuming ? 0 : groups_that_fit(r->batch, r->groups, dist_size(), 1, GROUPS_MAX, groups_fit, t));
        return cli_report("finetune", msg, 2);
    }
    // The in-memory caches take what the run leaves (cmd/runfolder.h), before any image is decoded.
    run_fit_cache(&t->ds, t->vds.n ? &t->vds : NULL, a->lf.cache_mb, need, a->lf.loader_threads, &t->cache_note);

    t->model = clf_create(&t->cfg, t->per, err, sizeof err);
    char msg[1024];   // a model that did not fit, in terms of --batch (cmd/groups.h)
    if (!t->model) { groups_oom_message(msg, sizeof msg, err, r->batch, t->per, t->workers); cli_error("finetune", "%s", msg); return 1; }
    size_t np = clf_num_params(&t->cfg);
    if (resuming) {
        memcpy(clf_params(t->model), t->resumed.params, np * sizeof(float));
        t->exp_avg = t->resumed.exp_avg; t->exp_avg_sq = t->resumed.exp_avg_sq;
        t->resumed.exp_avg = t->resumed.exp_avg_sq = NULL;
    } else {
        Rng init;
        rng_seed(&init, (uint64_t)r->seed);
        clf_init_weights(t->model, &init);
        if (a->ckpt) {   // the pretrained encoder replaces the random one
            // Of its weights only the encoder's prefix is held (ckpt_load_encoder in build_model,
            // io/checkpoint.h): the decoder's parameters, which a classifier never uses, are never
            // allocated (docs/encoder.md).
            Checkpoint *pre = &t->pre;
            size_t enc_numel;
            int nt = mae_encoder_model_table(&pre->cfg, NULL, 0, &enc_numel);
            MaeTensor *tab = malloc((size_t)nt * sizeof *tab);
            if (!tab) { cli_error("finetune", "out of memory"); return 1; }
            mae_encoder_model_table(&pre->cfg, tab, nt, &enc_numel);
            clf_copy_encoder(t->model, tab, nt, pre->params);
            // At another image size pos_embed is not copied (its rows differ): resized as MAE's
            // interpolate_pos_embed resizes it (core/posembed.h).
            for (int k = 0; t->pos_grid_from && k < nt; k++)
                if (!strcmp(tab[k].name, "pos_embed"))
                    posembed_resize(clf_tensor(t->model, "pos_embed"), pre->params + tab[k].offset, t->pos_grid_from,
                                    t->cfg.enc.img_size / t->cfg.enc.patch_size, t->cfg.enc.embed_dim);
            free(tab);
            ckpt_free(pre);
        }
        t->exp_avg = cpu_calloc_big(np, sizeof(float));
        t->exp_avg_sq = cpu_calloc_big(np, sizeof(float));
        if (!t->exp_avg || !t->exp_avg_sq) { cli_error("finetune", "out of memory for the AdamW moments"); return 1; }
    }
    if (r->model_ema) {   // the average: the checkpoint's, or the weights a new run starts from
        float *avg = resuming ? t->resumed.ema : cpu_calloc_big(np, sizeof(float));
        if (!avg) { cli_error("finetune", "out of memory for the weights' moving average"); return 1; }
        if (resuming) t->resumed.ema = NULL;
        else memcpy(avg, clf_params(t->model), np * sizeof(float));
        t->ema_model = clf_create_forward_with(&t->cfg, t->per, avg, err, sizeof err);
        if (!t->ema_model) { free(avg); cli_error("finetune", "%s", err); return 1; }
    }
    t->tensors = clf_tensors(t->model, &t->ntensors);
    size_t B = (size_t)r->batch, most = (size_t)(t->share > t->per ? t->share : t->per);
    t->lr_scale = malloc((size_t)t->ntensors * sizeof(float));
    t->drop_all = malloc((size_t)t->cfg.enc.depth * 2 * B * sizeof(float));
    t->runner[0] = (FtRunner){t, t->model, malloc((size_t)t->cfg.enc.depth * 2 * t->per * sizeof(float))};
    for (int w = 1; w < t->workers; w++) {   // the workers' models: their own activations
        t->runner[w] = (FtRunner){t, clf_create_sharing(t->model, t->per, err, sizeof err),
                                  malloc((size_t)t->cfg.enc.depth * 2 * t->per * sizeof(float))};
        if (!t->runner[w].model) { groups_oom_message(msg, sizeof msg, err, r->batch, t->per, t->workers); cli_error("finetune", "%s", msg); return 1; }
        if (!t->runner[w].drop) { cli_error("finetune", "out of memory for the batch buffers"); return 1; }
    }
    t->images = malloc(most * t->S * t->S * t->C * sizeof(float));
    t->batch_items = malloc(B * sizeof(int));
    t->used = malloc(B * sizeof(int));
    t->class_seen = calloc((size_t)t->ds.nclasses + 1, 1);
    t->labels = malloc(B * sizeof(int));
    t->labels2 = malloc(B * sizeof(int));
    t->mix_lam = malloc((size_t)t->rs.groups * sizeof(double));
    t->order.perm[0] = malloc(((size_t)t->ntrain + 1) * sizeof(int));
    t->order.perm[1] = malloc(((size_t)t->ntrain + 1) * sizeof(int));
    t->order.epoch[0] = t->order.epoch[1] = -1;
    if (!t->lr_scale || !t->drop_all || !t->runner[0].drop || !t->images || !t->batch_items || !t->used || !t->class_seen || !t->labels || !t->labels2 ||
        !t->mix_lam || !t->order.perm[0] || !t->order.perm[1]) {
        cli_error("finetune", "out of memory for the batch buffers");
        return 1;
    }
    clf_lr_scales(t->tensors, t->ntensors, t->cfg.enc.depth, r->layer_decay, t->lr_scale);
    return 0;
}

// Setup, phase 3 (rank 0 alone): the run folder, the store of working images, the pixel statistics of a
// model from scratch, metrics.csv. What the scans skipped is said once the run folder is made and
// locked, or before the failure it explains: a refused run prints its one line only.
static int setup_run_folder(FineTune *t, Flag *flags, int nflags) {
    Args *a = &t->a;
    FtState *r = &t->rs;
    char err[CLI_ERR_MAX];
    if (t->move_aside) {   // after --ckpt is read: `--ckpt RUN/checkpoint.safetensors --out RUN --overwrite`
        // --ckpt moved with it: the start line and the run's record name where it is now.
        if (run_folder_overwrite("finetune", t->run_dir, sizeof t->run_dir, a->ckpt, t->init_shown, sizeof t->init_shown,
                                 err, sizeof err)) {
            cli_error(NULL, "%s", err);
            return 1;
        }
        if (a->ckpt) run_abs_path(r->init, sizeof r->init, t->init_shown);
    }
    OutputMade *made = &t->made;   // the folders made for the run (cmd/output.h): removed again while empty
    made->n = 0;
    for (;;) {
        int bad = run_folder_names_fit(t->run_dir, err, sizeof err) || output_mkdir_made(t->run_dir, made, err, sizeof err);
        if (!bad && output_check_writable(t->run_dir, err, sizeof err)) {
            output_mkdir_undo(made);   // a failed run leaves no empty folder of its own (docs/interface.md, section 1)
            bad = 1;
        }
        if (bad) {
            if (t->named) cli_error("finetune", "cannot make the default run folder %s: %s (pass --out DIR)", t->run_dir, err);
            else cli_error(a->out ? "finetune --out" : "finetune --resume", "%s", err);   // --resume RUN without --out goes on in RUN
            return 1;
        }
        // The folder made (or found) is locked, then checked again: a run started into it meanwhile by
        // another process is either still running (its lock) or has left its files; a default name
        // then goes on to the next of its series (cmd/runfolder.h).
        file_test_gate("VITMAE_FAULT_HOLD_BEFORE_LOCK");   // tests: another run comes and goes here
        int taken = run_folder_lock(t->run_dir, err, sizeof err);
        if (!taken && (t->own_folder || !run_folder_has_run_of("finetune", t->run_dir))) break;
        // The next name keeps in made what was made above this one (runs/: cmd/output.h); this folder is
        // another run's now, and a run that stops here removes nothing of it.
        output_mkdir_disown(made);
        if (t->named && run_folder_default_next(t->run_dir, sizeof t->run_dir) == 0) continue;
        if (taken) { cli_error("finetune", "%s", err); return 1; }
        return cli_report(NULL, err, run_folder_refusal("finetune", t->run_dir, RUN_HOLDS_MEANWHILE, err, sizeof err));
    }
    // The store and the statistics, which decode into it, after the run folder: an --out that cannot be
    // made stops the run before any folder or working image of the store (docs/interface.md, section 1).
    // A failure from here removes both folders when they are the run's own (cmd_finetune the store).
    StoreNote store_note = {.text = ""};   // said once the run folder is made
    // Every image of --data, the held-out ones too: they share its cache (train's use_store).
    if (run_use_store(&t->ds, NULL, t->ds.n, a->lf.store, a->lf.cache_mb, a->lf.store_min_free_mb, &t->store_made,
                      &store_note, err, sizeof err)) {
        cli_error("finetune --store", "%s", err);
        unmake_folders(t);
        return 1;
    }
    // A resume given --pixel-norm measures as a run from scratch did when it started, to compare.
    int stats_rc = a->resume ? run_resume_same_pixel_norm("finetune", a->pixel_norm, &t->cfg.enc, &t->ds, t->train_idx,
                                                          t->ntrain, flags, nflags, resume_way(r, 1, NULL, 0), err, sizeof err)
                   : a->from_scratch ? pixel_norm_set(&t->cfg.enc, a->pixel_norm, &t->ds, t->train_idx, t->ntrain, err, sizeof err)
                   : 0;
    if (stats_rc == CLI_USAGE) { cli_error(NULL, "%s", err); unmake_folders(t); return CLI_USAGE; }
    if (stats_rc) {
        report_data(t);
        run_report_broken(&t->ds);   // the files that failed, before the failure they explain
        cli_error(dataset_err_what(stats_rc, "finetune"), "%s", err);
        unmake_folders(t);
        return 1;
    }
    run_store_note(&t->cache_note);   // the run folder is its own now: the run goes ahead
    run_store_note(&store_note);
    report_data(t);
    run_remove_stale_temp_files(t->run_dir);
    char metrics[4200];
    snprintf(metrics, sizeof metrics, "%s/metrics.csv", t->run_dir);
    t->new_files = !a->resume;
    t->metrics = metrics_open_header(metrics, a->resume ? r->step : 0,
                                     r->model_ema ? FINETUNE_METRICS_EMA_HEADER : FINETUNE_METRICS_HEADER, err, sizeof err);
    if (!t->metrics) { cli_error("finetune", "%s", err); unmake_folders(t); return 1; }
    if (a->resume) history_load(&t->hist, metrics);
    return 0;
}

// The run's training views (data/dataset.h): its --augment, crop, filter and RandAugment, whose fill is
// timm's img_mean, the model's mean pixel (docs/encoder.md, "RandAugment"). The start line says what
// the loader is given.
static Augment training_views(const FineTune *t) {
    const FtState *r = &t->rs;
    Augment aug = AUGMENT_CROP;
    char why[256];
    augment_parse(r->augment, &aug);
    aug.crop_lo = augment_fraction(r->crop_scale);
    augment_interp_parse(r->interp, &aug.interp);
    randaug_parse(r->aa, &aug.ra, why, sizeof why);   // checked when the run started or its state was read
    randaug_fill(t->cfg.enc.pixel_mean, t->C, aug.fill);
    return aug;
}

// Flags -> a model, data and a run folder ready for the first step (or the resumed one). Prints its own
// failure and returns the exit code. Under mpirun it runs in phases that end with cli_agree: every rank
// leaves at the same phase, and a collective is never half attended.
static int setup(FineTune *t, Flag *flags, int nflags) {
    FtState *r = &t->rs;
    char err[CLI_ERR_MAX];
    int rank = dist_rank(), rc;
    run_test_hook_stop("1");
    cli_defer(1);
    if ((rc = cli_agree(setup_local(t, flags, nflags)))) return rc;
    // 2. Every rank must see the same training files (scan order): a rank on another filesystem stops here.
    cli_defer(0);
    if (run_check_same_files(&t->ds)) return 1;
    // ... and start from the same weights (--resume, --ckpt: each rank read its own copy).
    const float *start[4] = {clf_params(t->model), t->exp_avg, t->exp_avg_sq, t->ema_model ? clf_params(t->ema_model) : NULL};
    if (run_check_same_start(r->step, start, t->ema_model ? 4 : 3, clf_num_params(&t->cfg))) return 1;
    // A run resumed at its last step trains nothing: said (its --steps cannot change; docs/encoder.md),
    // and no folder made, moved, locked or written, no image decoded, as train (docs/data.md, "Run
    // folders"). The same decision on every rank: they resumed the same state.
    if (t->resuming[0] && r->step >= r->total_steps) {
        // Its --pixel-norm none or imagenet compared all the same (no image needed; `dataset` would decode
        // them): it was taken, exit 0, where --smoothing was refused (docs/interface.md, section 5).
        if (strcmp(t->a.pixel_norm, "dataset") &&
            run_resume_same_pixel_norm("finetune", t->a.pixel_norm, &t->cfg.enc, &t->ds, t->train_idx, t->ntrain, flags,
                                       nflags, resume_way(r, 1, NULL, 0), err, sizeof err)) {
            cli_error(NULL, "%s", err);
            return CLI_USAGE;
        }
        cli_out("%s", t->resuming);
        cli_out("the run has reached its last step, %ld: nothing to train", r->total_steps);
        t->ended = 1;
        return 0;
    }
    cli_defer(1);
    if ((rc = cli_agree(rank == 0 ? setup_run_folder(t, flags, nflags) : 0))) return rc;
    dist_bcast(t->run_dir, sizeof t->run_dir, 0);   // the name rank 0 took (the others print none)
    run_share_store(&t->ds, "finetune", t->a.lf.store, t->a.lf.store_min_free_mb);
    snprintf(t->ckpt_path, sizeof t->ckpt_path, "%s/checkpoint.safetensors", t->run_dir);
    dist_bcast(t->cfg.enc.pixel_mean, sizeof t->cfg.enc.pixel_mean, 0);
    dist_bcast(t->cfg.enc.pixel_std, sizeof t->cfg.enc.pixel_std, 0);
    // 4. The reduction's buffers: collective under mpirun (one machine: a shared-memory window).
    // Under mpirun, workers' processes combine their nodes as the team's do (dist/workers.h).
    size_t np = clf_num_params(&t->cfg);
    int ranks = dist_size() > 1;
    if (t->workers ? (ranks && grad_reduce_init_top(&t->gr, r->groups, np, err, sizeof err)) ||
                         grad_workers_init(&t->gw, ranks ? &t->gr : NULL, r->groups, np, t->workers, 1, err, sizeof err)
                   : grad_reduce_init(&t->gr, r->groups, np, err, sizeof err))
        rc = cli_report("finetune", err, 1);
    if ((rc = cli_agree(rc))) return rc;
    cli_defer(0);

    run_warn_other_gemm();   // said once the run is sure to start, as the line below
    if (t->resuming[0]) cli_out("%s", t->resuming);   // said once the run is sure to start, so that a refusal stays one line
    if (t->images_changed[0] && rank == 0) cli_message("%s", t->images_changed);
    if (t->untrained[0] && rank == 0) cli_message("%s", t->untrained);
    if (!t->vds.n && rank == 0)   // a held-out split of a few images: as train warns (docs/data.md, "Validation")
        // Of the images with a class: those directly in --data are not used (their warning says so).
        // After the warning of a class left without training images (the split's "a smaller --val-frac"),
        // a larger one is not offered: the two lines gave opposite advice.
        run_warn_few_val(t->nval, t->rs.val_frac, t->ds.n - t->ds.nroot, "the validation loss and top-1", !t->untrained[0],
                         t->resuming[0] != 0);
    if (rank == 0) run_warn_long_warmup(t->rs.warmup, t->rs.total_steps, t->rs.lr, t->resuming[0] != 0);
    if (rank == 0) run_warn_batch_repeats(t->rs.batch, t->ntrain);
    if (rank == 0 && t->val_dir) output_warn_overlap("--data", t->data_dir, "--val", t->val_dir, "train");
    if (rank == 0) run_warn_small(&t->ds, t->data_dir, t->S);
    // (--val the --data folder itself: its images warned of once, the same line twice before)
    if (rank == 0 && t->val_dir && !(output_path_within(t->val_dir, t->data_dir) && output_path_within(t->data_dir, t->val_dir)))
        run_warn_small(&t->vds, t->val_dir, t->S);
    cli_out("vitmae finetune: %d train / %d val images, %d classes, from %s; encoder %dx%dx%d patch %d dim %d depth %d, %zu parameters",
           t->ntrain, t->nval, t->cfg.num_classes, t->init_shown, t->S, t->S, t->C, t->cfg.enc.patch_size,
           t->cfg.enc.embed_dim, t->cfg.enc.depth, np);
    char threads_s[192];
    run_threads_text(threads_s, sizeof threads_s, omp_get_max_threads());
    char aug[96];
    run_augment_text(aug, sizeof aug, r->augment, r->crop_scale, r->interp);
    printf("  %ld step%s of batch %d, lr %.3e (warm-up %ld), layer decay %.2f, drop path %.2f, smoothing %.2f, augment %s, %s\n",
           r->total_steps, r->total_steps == 1 ? "" : "s", r->batch, r->lr, r->warmup, r->layer_decay, r->drop_path,
           r->smoothing, aug, threads_s);
    char view[128];
    cli_view_text(view, sizeof view, "  validation views: ", cli_view(r->crop_pct, r->interp), t->S);
    if (*view && t->nval) printf("%s\n", view);   // docs/encoder.md, "Validation views"
    Augment views = training_views(t);
    const RandAugSpec *ra = &views.ra;
    if (ra->layers) {   // docs/encoder.md, "RandAugment"
        const uint8_t *fill = views.fill;
        char p[32], fills[32], mstd[48] = "";
        if (ra->mstd > RANDAUG_MSTD_UNIFORM) snprintf(mstd, sizeof mstd, " (uniform from 0)");
        else if (ra->mstd > 0) snprintf(mstd, sizeof mstd, " (std %.15g)", ra->mstd);
        run_value_text(p, sizeof p, ra->prob, 0);
        if (t->C == 3) snprintf(fills, sizeof fills, "(%d, %d, %d)", fill[0], fill[1], fill[2]);
        else snprintf(fills, sizeof fills, "%d", fill[0]);
        printf("  RandAugment %s: %d of %d operations an image, each with probability %s, magnitude %.15g of %.15g%s, "
               "%s, fill %s\n", r->aa, ra->layers, RA_NOPS, p, ra->magnitude, ra->mmax, mstd, r->interp, fills);
    }
    if (r->model_ema) {   // docs/encoder.md, "Model EMA"
        char d[40];
        run_value_text(d, sizeof d, r->ema_decay, 0);
        printf("  model EMA: decay %s%s, validated beside the weights, saved as ema.*\n", d,
               r->ema_warmup ? " reached by timm's warm-up, min(decay, 1 - n^(-2/3)) at update n" : "");
    }
    if (mix_enabled(&r->mix)) {   // docs/encoder.md, "Mixup and CutMix"
        char mu[32], cu[32], pr[32], sw[32], both[64] = "";
        run_value_text(mu, sizeof mu, r->mix.mixup, 1);
        run_value_text(cu, sizeof cu, r->mix.cutmix, 1);
        run_value_text(pr, sizeof pr, r->mix.prob, 1);
        run_value_text(sw, sizeof sw, r->mix.switch_prob, 1);
        if (r->mix.mixup > 0.0f && r->mix.cutmix > 0.0f) snprintf(both, sizeof both, ", CutMix on a share %s of them", sw);
        printf("  mixup %s, cutmix %s: each gradient group's images mixed with probability %s%s\n", mu, cu, pr, both);
    }
    if (erase_enabled(&r->erase)) {   // docs/encoder.md, "Random erasing"
        static const char *const fill[] = {"normal noise per pixel", "normal noise per channel", "zeros"};
        char pr[32], boxes[48] = "1 box";
        run_value_text(pr, sizeof pr, r->erase.prob, 1);
        if (r->erase.count > 1) snprintf(boxes, sizeof boxes, "1 to %d boxes", r->erase.count);
        printf("  random erasing: each image with probability %s, %s of %s\n", pr, boxes, fill[r->erase.mode]);
    }
    if (t->pos_grid_from) {
        int n = t->S / t->cfg.enc.patch_size;
        printf("  pos_embed resized from %dx%d to %dx%d patches, as MAE's interpolate_pos_embed (bicubic)\n",
               t->pos_grid_from, t->pos_grid_from, n, n);
    }
    if (dist_size() > 1 || r->groups > 1)
        printf("  %d gradient groups of %d image%s, %d process%s\n", r->groups, t->per, t->per == 1 ? "" : "s",
               dist_size(), dist_size() == 1 ? "" : "es");
    if (t->workers)
        printf("  threads as workers: each of the %d threads takes %d of the gradient groups\n", t->workers,
               r->groups / dist_size() / t->workers);
    // Last, as train's: a newline in --out written out, staying in its line.
    cli_out("  run folder %s", t->run_dir);
    fflush(stdout);
    return 0;
}

static void finetune_free(FineTune *t) {
    free(t->images); free(t->batch_items); free(t->used); free(t->class_seen); free(t->labels); free(t->labels2); free(t->mix_lam); free(t->order.perm[0]); free(t->order.perm[1]);
    free(t->exp_avg); free(t->exp_avg_sq); free(t->lr_scale); free(t->drop_all);
    clf_free(t->ema_model);
    ckpt_free(&t->pre);
    grad_workers_free(&t->gw);
    grad_reduce_free(&t->gr);
    for (int w = 0; w < WORKERS_MAX; w++) {
        free(t->runner[w].drop);
        if (w > 0) clf_free(t->runner[w].model);   // before the model whose parameters they share
    }
    free(t->train_idx); free(t->val_idx); free(t->val_label); free(t->eval_idx); free(t->eval_label);
    if (t->model) clf_free(t->model);
    if (t->metrics) fclose(t->metrics);
    history_free(&t->hist);
    clf_ckpt_free(&t->resumed);
    dataset_free(&t->ds);
    dataset_free(&t->vds);
    run_broken_free(&t->notes);
}

// The log's line for an evaluation: top-1 a fraction of 1, as metrics.csv's val_top1, probe's lines and
// classify's last line give it (docs/encoder.md, "Top-1"); top-5 beside it, as MAE's evaluate logs
// Acc@5, where there are more than 5 classes (with 5 or fewer it is 1 whatever the model).
static void say_validation(void *ctx, Progress *prog, const MetricsRow *row) {
    const FineTune *t = ctx;
    char top5[32] = "";
    if (t->cfg.num_classes > 5) snprintf(top5, sizeof top5, ", top-5 %.4f", t->val_top5);
    char ema[96] = "";
    if (t->ema_model && t->cfg.num_classes > 5)
        snprintf(ema, sizeof ema, "; EMA: val loss %.4f, val top-1 %.4f, top-5 %.4f", t->ema_loss, t->ema_top1, t->ema_top5);
    else if (t->ema_model)
        snprintf(ema, sizeof ema, "; EMA: val loss %.4f, val top-1 %.4f", t->ema_loss, t->ema_top1);
    progress_message(prog, stdout, "step %ld: val loss %.4f, val top-1 %.4f%s%s (%d image%s)", row->step, row->val_loss,
                     row->val_psnr, top5, ema, t->val_used, t->val_used == 1 ? "" : "s");
}

// Validation and curves at a step (do_eval); appends the row to metrics.csv (val_top1 in the sixth
// column). *logged (where given) tells whether the row reached metrics.csv, also when the curves
// after it failed. stop (NULL: none): a validation ends between its batches once it is set,
// RUN_VALIDATION_STOPPED (cmd/runfolder.h) with nothing written.
static int periodic_outputs(FineTune *t, MetricsRow *row, int do_eval, const volatile sig_atomic_t *stop, int *logged,
                            char *err, size_t errlen) {
    if (logged) *logged = 0;
    int rc = do_eval ? evaluate(t, &row->val_loss, &row->val_psnr, stop, err, errlen) : 0;
    if (rc) return rc;
    if (t->ema_model) {   // ema_val_loss, ema_val_top1: empty in the rows without a validation
        row->nextra = 2;
        row->extra[0] = do_eval ? t->ema_loss : NAN;
        row->extra[1] = do_eval ? t->ema_top1 : NAN;
    }
    int again = metrics_rejoin_run(&t->metrics, t->run_dir, err, errlen);   // deleted meanwhile: written again
    if (again < 0) return -1;
    if (again) cli_message("warning: %s", err);
    if (metrics_write_run(t->metrics, row, t->run_dir, err, errlen)) return -1;
    if (logged) *logged = 1;
    history_add(&t->hist, (double)row->step, row->loss, row->lr, row->val_loss, row->val_psnr, row->nextra ? row->extra : NULL);
    if (do_eval && write_curves(t, err, errlen)) return -1;
    return 0;
}

// The images of step `step` and their labels into t->batch_items / t->labels: positions step * B ..
// of the epochs' orders (as train).
static void step_items(FineTune *t, long step) {
    int B = t->rs.batch;
    for (int k = 0; k < B; k++) {
        long pos = step * B + k;
        const int *perm = run_epoch_order(&t->order, t->rs.seed, pos / t->ntrain, t->ntrain);
        t->batch_items[k] = t->train_idx[perm[pos % t->ntrain]];
        t->labels[k] = t->ds.items[t->batch_items[k]].cls;
    }
}

// Queues the steps up to step + depth - 1 (at most the last one) on the loader: this process's share,
// the images of its gradient groups.
static void queue_ahead(void *ctx, Loader *ld, long *queued, long step, int depth) {
    FineTune *t = ctx;
    int k0 = t->gr.first * t->per;
    for (; *queued < t->rs.total_steps && *queued < step + depth; (*queued)++) {
        step_items(t, *queued);
        loader_push(ld, (uint64_t)*queued, t->batch_items, t->rs.batch, k0, k0 + t->share);
    }
}

// Gradient group g of the step (dist/dist.h GroupFn, ctx an FtRunner): forward and backward of its
// images (t->images holds this process's groups from gr.first), with their labels and drop-path
// factors, on the runner's model, the gradient landing in grads.
static int finetune_group(void *ctx, int g, float *grads, float *loss, char *err, size_t errlen) {
    (void)err; (void)errlen;
    FtRunner *run = ctx;
    FineTune *t = run->t;
    int per = t->per, B = t->rs.batch, first = g * per;
    size_t at = (size_t)(g - t->gr.first) * per * t->S * t->S * t->C;
    for (int u = 0; u < 2 * t->cfg.enc.depth; u++)   // [depth][2][B] -> this group's [depth][2][per]
        memcpy(run->drop + (size_t)u * per, t->drop_all + (size_t)u * B + first, (size_t)per * sizeof(float));
    float *own = clf_use_grads(run->model, grads);
    clf_zero_grads(run->model);
    double lam = t->mix_lam[g];
    *loss = (float)clf_forward_mixed(run->model, t->images + at, t->labels + first, lam != 1.0 ? t->labels2 + first : NULL,
                                     lam, per, t->rs.smoothing, run->drop);
    clf_backward(run->model);
    clf_use_grads(run->model, own);
    return 0;
}

// A step whose images could not be loaded: every group reports the failure and why.
static int finetune_group_failed(void *ctx, int g, float *grads, float *loss, char *err, size_t errlen) {
    (void)g; (void)grads; (void)loss;
    snprintf(err, errlen, "%s", ((FtRunner *)ctx)->t->load_err);
    return -1;
}

// The step's inputs (cmd/runloop.h): this process's images from the loader, normalised, their labels,
// and the step's drop-path factors. A failure's reason goes to t->load_err, for the groups to give.
static int finetune_inputs(void *ctx, Loader *ld, long step, double *waited) {
    FineTune *t = ctx;
    FtState *r = &t->rs;
    step_items(t, step);
    int failed = loader_pop(ld, (uint64_t)step, t->images, t->used, waited, t->load_err, sizeof t->load_err);
    report_broken(t, &t->ds, failed != 0);   // before a failure too: a batch broken through and through names every file
    if (!failed) pixels_normalise(&t->cfg.enc, t->images, (long)t->share * t->S * t->S);
    // An image found broken was replaced by another of its batch: the label is that image's, as the
    // loader recorded it when it made the image (asked now, a file found broken since by a batch
    // made ahead would give the image of one item the label of another).
    for (int j = 0; !failed && j < t->share; j++) t->labels[t->gr.first * t->per + j] = t->ds.items[t->used[j]].cls;
    // Random erasing (docs/encoder.md, "Random erasing"): each image by its own draw, from its place in the
    // batch, before the mixing as timm erases in the dataset's transform.
    for (int j = 0; !failed && j < t->share; j++)
        erase_image(t->images + (size_t)j * t->S * t->S * t->C, t->S, t->S, t->C, &r->erase, (uint64_t)r->seed,
                    (uint64_t)step, (uint64_t)(t->gr.first * t->per + j), NULL);
    // Mixup and CutMix (docs/encoder.md, "Mixup and CutMix"): each of this process's groups by its own
    // draw, image i with image per - 1 - i of the group, on the normalised pixels as timm mixes them.
    for (int g = t->gr.first; !failed && g < t->gr.first + t->share / t->per; g++)   // gr.count is 0 for workers alone
        t->mix_lam[g] = mix_group(t->images + (size_t)(g - t->gr.first) * t->per * t->S * t->S * t->C,
                                  t->labels + g * t->per, t->labels2 + g * t->per, t->per, t->S, t->S, t->C, &r->mix,
                                  (uint64_t)r->seed, (uint64_t)step, (uint64_t)g);
    clf_drop_path_factors(&t->cfg, r->drop_path, (uint64_t)r->seed ^ SALT_DROP, (uint64_t)step, r->batch,
                          t->drop_all);
    return failed;
}

// The step's gradient over every rank's groups: the workers' (each its own model) or one group at a time.
static int finetune_gradient(void *ctx, int inputs_failed, long step, float lr, float **grads_out, float *loss,
                             int *stop, int *failed_here, char *err, size_t errlen) {
    (void)step; (void)lr;
    FineTune *t = ctx;
    void *runners[WORKERS_MAX];   // the workers' contexts
    for (int w = 0; w < WORKERS_MAX; w++) runners[w] = &t->runner[w];
    float *grads = *grads_out = grad_reduce_grads(&t->gr, clf_grads(t->model));
    GroupFn fn = inputs_failed ? finetune_group_failed : finetune_group;
    return t->workers ? grad_workers_step(&t->gw, grads, fn, NULL, runners, loss, &run_stop_requested, stop,
                                          failed_here, err, errlen)
                      : grad_reduce_step(&t->gr, grads, fn, &t->runner[0], loss, &run_stop_requested, stop,
                                         failed_here, err, errlen);
}

// Clipping, then AdamW with the layer-wise rates (t->lr_scale).
static void finetune_update(void *ctx, float *grads, long step, float lr) {
    FineTune *t = ctx;
    FtState *r = &t->rs;
    if (r->clip > 0) grad_clip(t->tensors, t->ntensors, grads, r->clip);
    adamw_step_groups(t->tensors, t->ntensors, t->lr_scale, clf_params(t->model), grads, t->exp_avg, t->exp_avg_sq,
                      lr, r->wd, FT_BETA1, FT_BETA2, step + 1);
    // The moving average after the update, as timm's update_ema(step=num_updates) (docs/encoder.md, "Model EMA")
    if (t->ema_model)
        ema_update(clf_params(t->ema_model), clf_params(t->model), clf_num_params(&t->cfg),
                   ema_decay_at(r->ema_decay, r->ema_warmup, step + 1));
}

static int finetune_outputs(void *ctx, MetricsRow *row, int do_eval, int do_samples, const volatile sig_atomic_t *stop,
                            int *logged, char *err, size_t errlen) {
    (void)do_samples;   // finetune draws no sample sheets
    return periodic_outputs(ctx, row, do_eval, stop, logged, err, errlen);
}

static int finetune_save_checkpoint(void *ctx, char *err, size_t errlen) { return save_checkpoint(ctx, err, errlen); }
static int finetune_curves(void *ctx, char *err, size_t errlen) { return write_curves(ctx, err, errlen); }
static int finetune_metrics_look(void *ctx, char *err, size_t errlen) {
    FineTune *t = ctx;
    return metrics_rejoin_run(&t->metrics, t->run_dir, err, errlen);
}

int cmd_finetune(int argc, char **argv) {
    FineTune *t = calloc(1, sizeof *t);
    if (!t) { cli_error("finetune", "out of memory"); return 1; }
    Flag flags[64];
    int nflags = 0;
    cli_quiet_ranks(1);   // every rank parses the same flags: rank 0 reports a bad one
    cli_defer(1);
    int rc = parse_args(argc, argv, &t->a, flags, &nflags);
    cli_quiet_ranks(0);
    if (rc == CLI_USAGE) cli_agree(rc);
    cli_defer(0);
    if (rc != CLI_OK) { free(t); return rc == CLI_HELP ? 0 : 2; }
    char terr[512];
    int trc = cpu_start_threads(t->a.threads, terr, sizeof terr) ? 1 : 0;
    if (trc) cli_error("finetune", "%s", terr);
    if ((trc = cli_agree(trc))) { free(t); return trc; }   // every rank leaves (docs/distributed.md)
    run_catch_stop_signals();
    rc = setup(t, flags, nflags);
    if (rc) { unmake_folders(t); finetune_free(t); free(t); return rc; }
    if (t->ended) { finetune_free(t); free(t); return 0; }   // nothing to train (setup said so)

    char err[CLI_ERR_MAX];
    FtState *r = &t->rs;
    Augment aug = training_views(t);
    // Batches are made ahead in the background (data/loader.h); each is a function of (items, seed,
    // step) alone, so the depth and the loader threads change when the work is done, not the result.
    LoaderOptions lo = {t->S, t->C, aug, (uint64_t)r->seed, t->share, t->a.lf.prefetch, t->a.lf.loader_threads,
                        t->train_idx, t->ntrain};   // the pool of a batch whose folders went away (data/loader.h)
    Loader *ld = loader_create(&t->ds, &lo, err, sizeof err);
    if ((rc = cli_agree(ld ? 0 : cli_report("finetune", err, 1)))) {
        loader_free(ld);
        unmake_folders(t);   // not started: as a failed setup
        finetune_free(t);
        free(t);
        return rc;
    }

    int started = 0;
    RunLoop L = {.cmd = "finetune", .ctx = t, .step = &r->step, .log_steps = &r->log_steps,
                 .elapsed_s = &r->elapsed_s, .log_loss_sum = &r->log_loss_sum, .total_steps = r->total_steps,
                 .warmup = r->warmup, .log_every = r->log_every, .eval_every = r->eval_every,
                 .ckpt_every = r->ckpt_every, .sample_every = 0, .batch = r->batch, .epochs = &r->epochs, .lr = r->lr,
                 .min_lr = r->min_lr, .ckpt_path = t->ckpt_path, .run_dir = t->run_dir, .ld = ld,
                 .prefetch = t->a.lf.prefetch, .store_min_free_mb = t->a.lf.store_min_free_mb, .ds = &t->ds,
                 .data_dir = r->data, .val_dir = r->val, .gr = &t->gr, .notes = &t->notes,
                 .gone_dirs = t->gone_dirs, .gone_len = sizeof t->gone_dirs,
                 .broken_said = broken_said,
                 .queue = queue_ahead, .inputs = finetune_inputs, .gradient = finetune_gradient,
                 .update = finetune_update, .outputs = finetune_outputs, .say_validation = say_validation,
                 .save_checkpoint = finetune_save_checkpoint, .curves = finetune_curves,
                 .metrics_look = finetune_metrics_look, .started = &started,
                 .keeps_classes = 1};
    rc = run_loop(&L);
    if (rc && !started) unmake_folders(t);   // the step-0 validation failed: as a failed setup
    finetune_free(t);
    free(t);
    return rc;
}
