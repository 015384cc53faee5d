// The run state of `vitmae train`: train_state JSON, resuming, the random streams and the
// checkpoint files of a run folder. See cmd/train_state.h.
#include "cmd/train_state.h"
#include <cJSON.h>
#include <dirent.h>
#include <stddef.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd/groups.h"
#include "core/masking.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "io/classifier_ckpt.h"
#include "io/json.h"

// ---------------------------------------------------------------------------------------------
// train_state JSON

// The fields of train_state in file order, read and written through one table (cmd/runfolder.h,
// StateField) with the ranges of their flags (cmd/train.c), so that a checkpoint edited by hand is
// refused with one line instead of dividing by a zero cadence (docs/interface.md).
static const StateField FIELDS[] = {
    {"step", STATE_LONG, offsetof(RunState, step), 0, 1e12},
    {"total_steps", STATE_LONG, offsetof(RunState, total_steps), 1, 1e12},
    {"warmup_steps", STATE_LONG, offsetof(RunState, warmup), 0, 1e12},
    {"seed", STATE_LONG, offsetof(RunState, seed), 0, 9.2e18},   // older versions took seeds up to 9e18
    {"batch", STATE_INT, offsetof(RunState, batch), 1, 4096},
    {"lr", STATE_FLOAT, offsetof(RunState, lr), 0, STATE_LR_MAX},
    {"min_lr", STATE_FLOAT, offsetof(RunState, min_lr), 0, 10},
    {"weight_decay", STATE_FLOAT, offsetof(RunState, wd), 0, 10},
    {"clip", STATE_FLOAT, offsetof(RunState, clip), 0, 1e6},
    {"mask_ratio", STATE_FLOAT, offsetof(RunState, mask_ratio), 0, 0.99999994},
    {"val_frac", STATE_FLOAT, offsetof(RunState, val_frac), 0, VAL_FRAC_MAX},
    {"val_max", STATE_INT, offsetof(RunState, val_max), 1, VAL_MAX_LIMIT},
    {"augment", STATE_TEXT, offsetof(RunState, augment), 0, 0},
    {"interp", STATE_TEXT, offsetof(RunState, interp), 0, 0},
    {"data", STATE_TEXT, offsetof(RunState, data), 0, 0},
    {"eval_every", STATE_LONG, offsetof(RunState, eval_every), 1, 1e12},
    {"ckpt_every", STATE_LONG, offsetof(RunState, ckpt_every), 1, 1e12},
    {"log_every", STATE_LONG, offsetof(RunState, log_every), 1, 1e12},
    {"sample_every", STATE_LONG, offsetof(RunState, sample_every), 1, 1e12},
    {"keep", STATE_INT, offsetof(RunState, keep), 0, KEEP_MAX},
    {"elapsed_s", STATE_DOUBLE, offsetof(RunState, elapsed_s), 0, 1e15},
};
#define NFIELDS ((int)(sizeof FIELDS / sizeof FIELDS[0]))

char *run_state_to_json(const RunState *r) {
    cJSON *o = cJSON_CreateObject();
    run_state_fields_to_json(o, FIELDS, NFIELDS, r);
    if (r->val[0]) cJSON_AddStringToObject(o, "val", r->val);   // --val DIR, when given
    if (r->images[0]) cJSON_AddStringToObject(o, "images", r->images);
    run_split_pin_to_json(o, &r->split_pin);
    run_state_shared_to_json(o, r->run_id, r->log_loss_sum, r->log_steps, r->max_pixels);
    run_epochs_to_json(o, &r->epochs, r->step, r->batch);
    // Gradient groups G (fixed for the run) and the process count N and --accum K of the session
    // that wrote it (a record: any N, K with N K | G continue it bitwise, docs/distributed.md).
    cJSON_AddNumberToObject(o, "grad_groups", r->grad_groups);
    cJSON_AddNumberToObject(o, "processes", r->processes);
    cJSON_AddNumberToObject(o, "accum", r->accum);
    // The data position and every random stream follow from (seed, step): see cmd/train_state.h.
    cJSON_AddNumberToObject(o, "samples_seen", (double)r->step * r->batch);
    cJSON_AddStringToObject(o, "rng", "derived from (seed, step, image index)");
    char *s = json_print_utf8(o, 0);
    cJSON_Delete(o);
    return s;
}

int run_state_from_json(const char *json, RunState *r, char *err, size_t errlen) {
    cJSON *o = run_state_parse(json, err, errlen);
    if (!o) return -1;
    memset(r, 0, sizeof *r);
    if (run_state_fields_from_json(o, FIELDS, NFIELDS, r, err, errlen)) { cJSON_Delete(o); return -1; }
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "interp");   // absent in older runs: bilinear
    ImageFilter filter;
    if (in && (!cJSON_IsString(in) || augment_interp_parse(in->valuestring, &filter))) {
        snprintf(err, errlen, "train_state: 'interp' out of range");
        cJSON_Delete(o);
        return -1;
    }
    snprintf(r->interp, sizeof r->interp, "%s", in ? in->valuestring : "bilinear");
    const cJSON *aug = cJSON_GetObjectItemCaseSensitive(o, "augment");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    Augment parsed;
    if (!cJSON_IsString(aug) || augment_parse(aug->valuestring, &parsed) != 0 || !cJSON_IsString(data)) {
        snprintf(err, errlen, "train_state: '%s' missing or out of range",
                 cJSON_IsString(aug) && augment_parse(aug->valuestring, &parsed) == 0 ? "data" : "augment");
        cJSON_Delete(o);
        return -1;
    }
    snprintf(r->augment, sizeof r->augment, "%s", aug->valuestring);
    snprintf(r->data, sizeof r->data, "%s", data->valuestring);
    const cJSON *val = cJSON_GetObjectItemCaseSensitive(o, "val");   // absent: a held-out split
    if (val && !cJSON_IsString(val)) {   // not read as absent: the run would validate on a held-out split
        snprintf(err, errlen, "train_state: 'val' missing or out of range");
        cJSON_Delete(o);
        return -1;
    }
    if (val) snprintf(r->val, sizeof r->val, "%s", val->valuestring);
    if (run_state_images_from_json(o, r->images, sizeof r->images, err, errlen) ||
        run_split_pin_from_json(o, &r->split_pin, err, errlen) ||
        run_state_shared_from_json(o, r->step, r->run_id, sizeof r->run_id, &r->log_loss_sum, &r->log_steps,
                                   &r->max_pixels, err, errlen) || run_epochs_from_json(o, r->step, &r->epochs, err, errlen)) {
        cJSON_Delete(o);
        return -1;
    }
    // Checkpoints written before gradient groups computed the batch in one pass: G = 1.
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "grad_groups");
    const cJSON *np = cJSON_GetObjectItemCaseSensitive(o, "processes"), *nk = cJSON_GetObjectItemCaseSensitive(o, "accum");
    if (g && (!cJSON_IsNumber(g) || !(g->valuedouble >= 1 && g->valuedouble <= GROUPS_MAX) || g->valuedouble != floor(g->valuedouble))) {
        cJSON_Delete(o);
        snprintf(err, errlen, "train_state: 'grad_groups' out of range");
        return -1;
    }
    r->grad_groups = g ? (int)g->valuedouble : 1;
    if (run_state_groups_check("grad_groups", r->batch, r->grad_groups, err, errlen)) { cJSON_Delete(o); return -1; }
    // N and K are a record only: a value no run writes (not a count from 1 to 4096) reads as 1, and
    // never reaches an int conversion out of range.
    r->processes = cJSON_IsNumber(np) && np->valuedouble >= 1 && np->valuedouble <= 4096 ? (int)np->valuedouble : 1;
    r->accum = cJSON_IsNumber(nk) && nk->valuedouble >= 1 && nk->valuedouble <= 4096 ? (int)nk->valuedouble : 1;
    cJSON_Delete(o);
    if (r->step > r->total_steps) {   // the table checked each alone
        snprintf(err, errlen, "train_state: 'step' out of range: %ld is past 'total_steps' %ld", r->step, r->total_steps);
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Resuming

int run_resume_load(const char *path, Checkpoint *ck, RunState *rs, char *err, size_t errlen) {
    memset(ck, 0, sizeof *ck);
    // A classifier is refused for its kind before its tensors are read (a NaN in them comes after).
    int kind = ckpt_peek_kind(path, CKPT_FULL | CKPT_ENCODER_ONLY, err, errlen);
    if (kind < 0) return -1;
    int clf = kind == CKPT_CLASSIFIER;
    if (!clf && ckpt_load(path, ck, err, errlen)) return -1;
    if (clf || !ck->train_state || !ck->exp_avg || !ck->exp_avg_sq || !ck->has_decoder) {
        int stripped = ck->train_state && !ck->has_moments && ck->has_decoder;
        // A train state in an encoder-only file: said "no training state", which it holds; the decoder is
        // what is missing (with the moments, where they went too).
        int encoder_only = ck->train_state && !ck->has_decoder, moments = ck->has_moments;
        ckpt_free(ck);
        char way[CLI_ERR_MAX];
        long last = clf ? run_finished_way(path, way, sizeof way) : 0;
        if (encoder_only)
            snprintf(err, errlen, "%s: cannot resume: %s", path, moments ? RESUME_NO_DECODER : RESUME_NO_DECODER_MOMENTS);
        else if (stripped) snprintf(err, errlen, "%s: " RESUME_NO_MOMENTS, path);
        // A finished fine-tuning run: "continue it with vitmae finetune --resume" led to "nothing to train",
        // and its --steps cannot grow (a fine-tuning run keeps them): a new run is the way on, as
        // finetune --out of its folder says (docs/data.md, "Run folders").
        else if (last > 0)
            snprintf(err, errlen, "%s: cannot resume: a fine-tuned classifier's checkpoint, of a finished run (it reached "
                     "its last step, %ld, and a fine-tuning run keeps its --steps); with vitmae finetune, %s, in another "
                     "--out folder", path, last, way);
        else if (clf && ckpt_peek_has_state(path))
            snprintf(err, errlen, "%s: cannot resume: a fine-tuned classifier's checkpoint (continue it with vitmae "
                     "finetune --resume)", path);
        else if (clf)   // none to continue: finetune --resume refuses it too (it was advised)
            snprintf(err, errlen, "%s: cannot resume: a fine-tuned classifier's checkpoint without a training state "
                     "(for inference only)", path);
        else snprintf(err, errlen, "%s: cannot resume: no training state in this checkpoint (it loads for inference "
                      "only)", path);
        return -1;
    }
    char why[1024];
    if (run_state_from_json(ck->train_state, rs, why, sizeof why)) {
        ckpt_free(ck);
        snprintf(err, errlen, "%s: cannot resume: %s", path, why);
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Random streams

void run_val_masks(long seed, long first, int n, int L, int K, float *noise, int *ids_keep, int *scratch) {
    for (int k = 0; k < n; k++) {
        uint64_t key = (uint64_t)(first + k);
        masks_seeded((uint64_t)seed ^ SALT_VAL, 0, &key, 1, L, K, noise + (size_t)k * L, ids_keep + (size_t)k * K,
                     scratch);
    }
}

const int *run_epoch_order(EpochOrder *o, long seed, long epoch, int n) {
    for (int i = 0; i < 2; i++) if (o->epoch[i] == epoch) return o->perm[i];
    int slot = o->epoch[0] < o->epoch[1] ? 0 : 1;
    int *p = o->perm[slot];
    Rng r;
    rng_derive(&r, (uint64_t)seed ^ SALT_PERM, (uint64_t)epoch, 0);
    for (int i = 0; i < n; i++) p[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(&r, (uint32_t)i + 1);
        int tmp = p[i]; p[i] = p[j]; p[j] = tmp;
    }
    o->epoch[slot] = epoch;
    return p;
}

// ---------------------------------------------------------------------------------------------
// Checkpoints: RUN/checkpoint-<step>.safetensors (the kept snapshots) and RUN/checkpoint.safetensors
// (the latest, a hard link to the newest snapshot swapped in atomically, or a file of its own).

int run_save_checkpoint(const char *run_dir, const char *ckpt_path, const RunState *rs,
                        const MaeConfig *cfg, const float *params, const float *exp_avg,
                        const float *exp_avg_sq, char *err, size_t errlen) {
    char *state = run_state_to_json(rs);
    if (!state) { snprintf(err, errlen, "%s: out of memory", ckpt_path); return -1; }
    int rc;
    if (rs->keep > 0) {
        char snap[4300];
        snprintf(snap, sizeof snap, "%s/checkpoint-%ld.safetensors", run_dir, rs->step);
        run_mark_saving(snap, ckpt_path);   // a second Ctrl-C says what is in place (cmd/runfolder.h)
        rc = ckpt_save(snap, cfg, params, state, exp_avg, exp_avg_sq, err, errlen);
        if (rc == 0) {
            int pl = publish_latest(snap, ckpt_path, run_dir, err, errlen);
            if (pl < 0) rc = ckpt_save(ckpt_path, cfg, params, state, exp_avg, exp_avg_sq, err, errlen);
            else if (pl > 0) rc = -1;
            if (pl < 0 && rc == 0) run_mark_published();   // checkpoint.safetensors in place (cmd/runfolder.h)
            prune_snapshots(run_dir, rs->keep, rs->step);
        }
    } else {
        run_mark_saving(NULL, ckpt_path);
        rc = ckpt_save(ckpt_path, cfg, params, state, exp_avg, exp_avg_sq, err, errlen);
        if (rc == 0) run_mark_published();
    }
    free(state);
    return rc;
}
