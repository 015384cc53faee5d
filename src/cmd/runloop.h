// The loop of steps that train and finetune share: the images queued ahead and taken, the step's
// gradient over every rank's groups, the agreed stops (a failure, a file found broken, a loss that is
// not finite, a stop signal), the update, the progress line, the metrics rows and pictures at their
// cadence (docs/interface.md, section 5, "Cadence"), the checkpoints, and the end: the save that a stop
// or the last step makes, and the save of a step whose outputs failed (docs/data.md, "Run folders").
// What differs between the two commands (their model, their outputs, their saves) comes in as hooks.
#ifndef VITMAE_RUNLOOP_H
#define VITMAE_RUNLOOP_H
#include <stddef.h>
#include "cmd/log.h"
#include "cmd/runfolder.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "dist/dist.h"

typedef struct {
    const char *cmd;    // "train" or "finetune": what its messages start with
    void *ctx;          // the command's session, given to every hook

    // The run's counts, the command's train_state: *step advances with each step taken; *elapsed_s,
    // *log_loss_sum and *log_steps are brought up to date before each save, so that a checkpoint carries
    // them (a run stopped between metrics rows resumes with their losses).
    long *step, *log_steps;
    double *elapsed_s, *log_loss_sum;
    long total_steps, warmup, log_every, eval_every, ckpt_every;
    long sample_every;   // 0: the command draws no sample sheets
    int batch;           // the whole batch, every rank's
    const RunEpochs *epochs;   // a metrics row's epoch (the command's train_state's)
    float lr, min_lr;    // the schedule's (core/optim.h, lr_at)
    const char *ckpt_path, *run_dir;

    Loader *ld;          // the background loader; run_loop frees it (its threads stop before the last line)
    int prefetch;        // --prefetch: the steps queued ahead
    long store_min_free_mb;   // --store-min-free: said in the line of a store whose disk reached it
    const Dataset *ds;   // the training set: the wait note's and the end line's counts
    const char *data_dir, *val_dir;   // the run's folders as it records them (val "": none), for the way on
    GradReduce *gr;      // the step's exchange (notes_here in, notes_any out)
    BrokenNotes *notes;  // the files found broken, shared with rank 0 after an exchange that says so
    char *gone_dirs;     // the folders said gone so far, gone_len bytes (run_broken_share)
    size_t gone_len;
    void (*broken_said)(void *ctx, int item);   // run_broken_share's `said`; may be NULL

    // Queues the batches of the steps up to `depth` (prefetch) ahead of `step` not queued yet
    // (*queued: the next one to queue).
    void (*queue)(void *ctx, Loader *ld, long *queued, long step, int depth);
    // The step's inputs on this process: its images from the loader (*waited: the seconds it waited),
    // and what else the step draws from its number. Nonzero when the images failed: DATASET_ERR_BROKEN
    // where no image of a batch decodes (the data's stop: the steps done are saved first), else -1; the
    // command keeps the reason for its failing groups to give.
    int (*inputs)(void *ctx, Loader *ld, long step, double *waited);
    // The step's gradient over every rank's groups (dist/dist.h, dist/workers.h), into *grads, the
    // mean loss into *loss. As grad_reduce_step: 0, or nonzero with *failed_here and err when this rank
    // failed; *stop set when the ranks agreed to stop after the step.
    int (*gradient)(void *ctx, int inputs_failed, long step, float lr, float **grads, float *loss, int *stop,
                    int *failed_here, char *err, size_t errlen);
    // Clipping and the optimizer's update of the weights with grads, the step's (0-based) lr.
    void (*update)(void *ctx, float *grads, long step, float lr);
    // Rank 0's outputs at a step: validation (do_eval), the metrics row, sample sheets (do_samples), the
    // curves. *logged (where given): whether the row reached metrics.csv (also when what followed failed).
    // stop (NULL: none): the validation ends between its batches once *stop is set, and the hook returns
    // RUN_VALIDATION_STOPPED (cmd/runfolder.h) with nothing written and no message.
    int (*outputs)(void *ctx, MetricsRow *row, int do_eval, int do_samples, const volatile sig_atomic_t *stop,
                   int *logged, char *err, size_t errlen);
    // Rank 0's sample sheet of a step alone (NULL where sample_every is 0): a resume draws the one its
    // checkpoint's step lacks where that step's row is there already.
    int (*sheet)(void *ctx, long step, char *err, size_t errlen);
    // The progress line of a validation (row holds its numbers).
    void (*say_validation)(void *ctx, Progress *prog, const MetricsRow *row);
    // Rank 0's saves: the checkpoint, then what follows it (train's config.json; NULL: nothing), and the
    // curves redrawn after a stop's save.
    int (*save_checkpoint)(void *ctx, char *err, size_t errlen);
    int (*save_after)(void *ctx, char *err, size_t errlen);
    int (*curves)(void *ctx, char *err, size_t errlen);
    // Rank 0's last look at metrics.csv as the run ends (after its last save and curves): as
    // metrics_rejoin_run (cmd/log.h) on the command's open file; 0, 1 with a warning in err, -1 with err.
    int (*metrics_look)(void *ctx, char *err, size_t errlen);

    // Set to 1 once the run has begun its first step or written a metrics row (step 0's): a run that
    // fails before then has logged nothing, and the command removes what it made (cmd/runfolder.h,
    // run_unmake_folder). NULL: not told.
    int *started;
    int keeps_classes;   // finetune: a resume keeps the run's classes (dataset_broken_stop_kept)
} RunLoop;

// The steps from *L->step to L->total_steps, or to a stop; collective under mpirun (every rank runs
// it, and every rank leaves at the same step). A resumed run first makes the outputs its checkpoint's step lacks (a
// failed output's save, a kill during a stop's outputs): that step's metrics row with the losses the
// checkpoint carries, its validation and sample sheet, as a run never stopped made them (docs/data.md,
// "Run folders"). Returns the command's exit code: 0, or 1 after the line
// that says why (the rank that knows says it).
int run_loop(const RunLoop *L);

#endif
