// The state of a training run that outlives the process: the train_state JSON a checkpoint carries,
// the random streams that follow from it, resuming from a checkpoint, and the checkpoint files of a
// run folder (docs/interface.md section 4).
//
// Every random draw is derived from (seed, position), so the whole training state is (step,
// parameters, AdamW moments): the data order of epoch e comes from (seed ^ SALT_PERM, e), the mask of
// the k-th image of step s from (seed ^ SALT_MASK, s, k), validation masks from (seed ^ SALT_VAL, i).
#ifndef VITMAE_TRAIN_STATE_H
#define VITMAE_TRAIN_STATE_H
#include <stddef.h>
#include <stdint.h>
#include "core/model.h"
#include "io/checkpoint.h"

#define SALT_PERM 0x7065726d75746531ull
#define SALT_MASK 0x6d61736b6d61736bull
#define SALT_VAL  0x76616c696461746full

// What a checkpoint must carry to continue the run exactly (stored as train_state JSON). A new run
// fills it from the flags (cmd/train.c), a resumed run from its checkpoint.
typedef struct {
    long step, total_steps, warmup, seed, eval_every, ckpt_every, log_every, sample_every;
    int batch, keep, val_max;
    int grad_groups;    // G: the batch is summed as G groups in a fixed tree (dist/dist.h)
    int processes, accum;   // N and K of the session that wrote it (a record: any that divide G resume)
    float lr, min_lr, wd, clip, mask_ratio, val_frac;
    char augment[16];
    char data[4096];
    double elapsed_s;   // training time of earlier sessions
} RunState;

char *run_state_to_json(const RunState *r);   // malloc'd; NULL when out of memory
int   run_state_from_json(const char *json, RunState *r, char *err, size_t errlen);

// --resume RUN_OR_FILE: a folder means its checkpoint.safetensors; dir is the run folder.
void run_resume_path(const char *arg, char *path, size_t n, char *dir, size_t dn);
// Loads the checkpoint at path and its train_state for resuming; refuses a checkpoint without
// training state. On failure err holds the whole message (naming the file).
int  run_resume_load(const char *path, Checkpoint *ck, RunState *rs, char *err, size_t errlen);

// The data order: epoch e visits the n training items in the permutation drawn from
// (seed ^ SALT_PERM, e). Two epochs are kept, since a batch may straddle an epoch boundary.
typedef struct {
    int *perm[2];    // [n] each, allocated by the caller
    long epoch[2];   // -1: empty
} EpochOrder;
const int *run_epoch_order(EpochOrder *o, long seed, long epoch, int n);

// Masks of n images: image k gets uniform noise [L] from (seed ^ salt, a, keys[k]), turned into
// MAE's ids_keep (argsort ascending, first K). noise is [n, L] scratch.
void run_masks(long seed, uint64_t salt, uint64_t a, int n, const uint64_t *keys, int L, int K,
               float *noise, int *ids_keep);

// Removes temporary files of checkpoint writes that a kill interrupted (see cmd/train_state.c).
void run_remove_stale_temp_files(const char *dir);
// Writes RUN/checkpoint.safetensors; with keep > 0 as the snapshot RUN/checkpoint-<step>.safetensors
// linked in atomically, keeping the newest keep snapshots.
int  run_save_checkpoint(const char *run_dir, const char *ckpt_path, const RunState *rs,
                         const MaeConfig *cfg, const float *params, const float *exp_avg,
                         const float *exp_avg_sq, char *err, size_t errlen);
#endif
