// The state of a training run: what outlives the process (the train_state JSON a checkpoint
// carries, resuming from a checkpoint, the checkpoint files of a run folder, docs/interface.md
// section 4), the data order that follows from it, and the session in memory (Train).
//
// Every random draw is derived from (seed, position), so the whole training state is (step,
// parameters, AdamW moments): the data order of epoch e comes from (seed ^ SALT_PERM, e), the mask of
// the k-th image of step s from (seed ^ SALT_MASK, s, k), validation masks from (seed ^ SALT_VAL, i)
// (masks_seeded, core/masking.h).
#ifndef VITMAE_TRAIN_STATE_H
#define VITMAE_TRAIN_STATE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/model.h"
#include "data/dataset.h"
#include "dist/dist.h"
#include "dist/workers.h"
#include "io/checkpoint.h"
#include "cmd/log.h"         // History
#include "cmd/runfolder.h"   // run_resume_path, run_remove_stale_temp_files
#include "cmd/output.h"      // OutputMade

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
    char interp[16];    // the crop's filter, "bilinear" | "bicubic"; absent in older runs: "bilinear"
    char data[4096];    // absolute path of the training folder
    char val[4096];     // absolute path of the --val folder, "" for a held-out split
    double elapsed_s;   // training time of earlier sessions
    char run_id[24];    // made when the run starts, kept by every resume (run_new_id); "" in older runs
    double log_loss_sum;   // the losses of the steps since the last metrics row (none in older runs)
    long log_steps;        // and how many: the next row after a resume averages them too
    char images[RUN_DATA_SIG_MAX];   // the images trained on (run_data_signature); "" in older runs
    DatasetSplitPin split_pin;   // the held-out split's fallback images, kept by every resume (run_split_pin_to_json)
    long max_pixels;       // --max-pixels, which decides the usable images: kept by a resume that
                           // does not give it; 0 in older runs (the default)
    RunEpochs epochs;      // a metrics row's epoch: the passes counted over each stretch's images
} RunState;

char *run_state_to_json(const RunState *r);   // malloc'd; NULL when out of memory
int   run_state_from_json(const char *json, RunState *r, char *err, size_t errlen);

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

// The masks of the validation images first .. first + n - 1 (counted in the order an evaluation
// scores them): image i's own, from (seed ^ SALT_VAL, 0, i), whichever chunk it is scored in, so that
// every evaluation scores each image under the same mask and no two images share one by construction
// (docs/interface.md, section 5, "Cadence"). noise [n, L] scratch; ids_keep out [n, K]; scratch 2 * L
// ints (masks_seeded's).
void run_val_masks(long seed, long first, int n, int L, int K, float *noise, int *ids_keep, int *scratch);

// Writes RUN/checkpoint.safetensors; with keep > 0 as the snapshot RUN/checkpoint-<step>.safetensors
// linked in atomically, keeping the newest keep snapshots.
int  run_save_checkpoint(const char *run_dir, const char *ckpt_path, const RunState *rs,
                         const MaeConfig *cfg, const float *params, const float *exp_avg,
                         const float *exp_avg_sq, char *err, size_t errlen);

// ---------------------------------------------------------------------------------------------
// A training session in memory, shared by cmd/train.c (flags, setup, the steps) and cmd/train_out.c
// (what the run folder receives).


#define TRAIN_SAMPLE_IMAGES 8

// One model's run of a step's gradient groups (the GroupFn / GroupsFn context of cmd/train.c): the
// run's model on the team, or worker w's (dist/workers.h) on its thread.
typedef struct TrainRunner {
    struct Train *t;
    Mae *model;
} TrainRunner;

typedef struct Train {
    RunState rs;
    RunState rs_resumed;           // on resume: the state as its checkpoint holds it, before the session's
                                   // flags (--steps, cadences, --max-pixels, a moved --data): config.json's
                                   // until the session writes a checkpoint of its own
    Dataset ds, val_ds;            // val_ds: the --val folder (unused for a held-out split)
    const Dataset *vds;            // what val_idx indexes: &ds or &val_ds
    int *train_idx, ntrain, *val_idx, nval;
    int *eval_idx, neval;          // the held-out images each evaluation scores: up to val_max of val_idx, spread
    int val_none_said;             // run_report_no_validation's once
    int sample_idx[TRAIN_SAMPLE_IMAGES], nsample;   // images of the sample panels, in *sds
    const Dataset *sds;
    MaeConfig cfg;
    Mae *model;
    float *exp_avg, *exp_avg_sq;   // AdamW moments, laid out like the parameters
    const MaeTensor *tensors;
    int ntensors;
    int L, K, S, C;                // patches, visible patches, image side, channels
    int per;                       // images per gradient group (rs.batch / rs.grad_groups): the
                                   // model's batch, also for validation and samples
    int share;                     // images of this process per step (gr.count * per)
    int at_once;                   // gradient groups per forward and backward (cmd/groups.h); the
                                   // model holds at_once * per images
    GradReduce gr;                 // this process's groups and the step's reduction (dist/dist.h); with
                                   // workers under mpirun only the processes' exchange
    int workers;                   // threads as workers (--parallel groups, dist/workers.h); 0: the team
    GradWorkers gw;                // their groups and reduction
    char load_err[4096 + 1024];           // why the step's images could not be loaded (its groups report it)
    TrainRunner runner[WORKERS_MAX];   // [0]: the run's model; [w]: worker w's, sharing its parameters
    char run_dir[4096], ckpt_path[4200];
    OutputMade made;               // the folders rank 0 made for run_dir (cmd/train_out.h)
    int new_files;                 // rank 0 writes a new run's config.json and metrics.csv (not a resume's):
                                   // removed by a run that fails before its first step (run_unmake_folder)
    OutputMade store_made;         // the folders rank 0 made for --store (cmd/runfolder.h, run_unmake_store)
    // Buffers sized once before the first step.
    float *pixels, *images, *noise, *recon;
    int *ids_keep, *batch_items;
    int *mask_scratch;             // the masks' sort: 2 * L ints (masks_seeded)
    EpochOrder order;
    uint8_t *removed;
    float *patch_err;
    FILE *metrics;
    History hist;
    char images_changed[1024];   // a resume on other images: the warning said once the run starts
    int trains_other_images;     // ... and its training images are others: the weights go on otherwise
    StoreNote cache_note;        // --cache-mb lowered to fit beside the run (run_fit_cache): said with the store's
    char resuming[4096 + 512];   // "resuming ...": said once the run starts
    int ended;                   // resumed at its last step: nothing to train, nothing written
    char goes_on[256];           // "the run goes on to step ...": a new length, said after it
    char sheets_removed[192];    // "removed N sample sheets past step S ...": a resume's, said after those
    char init_moved[8400];       // --init's checkpoint once --overwrite moved it aside with the old run
    char gone_dirs[16384];       // the folders of images reported gone (cmd/output.h, output_gone_folder)
    BrokenNotes notes;           // training files found broken, said once for the job (cmd/runfolder.h)
} Train;
#endif
