// What `vitmae train` writes into its run folder besides checkpoints (docs/interface.md): config.json,
// metrics.csv rows (with validation loss and PSNR), samples/step-<step>.png and curves.png.
#ifndef VITMAE_TRAIN_OUT_H
#define VITMAE_TRAIN_OUT_H
#include <signal.h>
#include <stddef.h>
#include "cmd/log.h"
#include "cmd/output.h"
#include "cmd/train_state.h"

// Creates RUN and checks that it takes files, before any training (RUN/samples comes with the first
// sample sheet). made gets the folders made for RUN (with those above it, and those an earlier call
// with the same made made above RUN: begin with {.n = 0}; cmd/output.h, output_mkdir_made); on
// failure they are removed again. train_out_unmake removes them, each only while empty (a run that
// fails later, before its first step, with its files: cmd/runfolder.h, run_unmake_folder).
int train_out_prepare(const char *run_dir, OutputMade *made, char *err, size_t errlen);
void train_out_unmake(OutputMade *made);
// RUN/config.json: the model config, the run state rs (the latest checkpoint's) and the split sizes.
int train_out_config(Train *t, const RunState *rs, char *err, size_t errlen);
// Opens RUN/metrics.csv (a resumed run drops the rows after its step and reloads the rest into the
// history).
int train_out_open_metrics(Train *t, int resuming, char *err, size_t errlen);
// Picks the images of the sample panels: validation images (training images without validation)
// spread over the split, skipping those whose evaluation view is one flat colour.
int train_out_pick_samples(Train *t, char *err, size_t errlen);
// The outputs of one logged step: validation (do_eval: fills row's val_loss and val_psnr), the
// metrics row, samples (do_samples) and curves (do_eval). *logged (where given) tells whether the row
// reached metrics.csv, also when a picture after it failed. stop (NULL: none): a validation ends between
// its batches once it is set, RUN_VALIDATION_STOPPED (cmd/runfolder.h) with nothing written.
int train_out_step(Train *t, MetricsRow *row, int do_eval, int do_samples, const volatile sig_atomic_t *stop,
                   int *logged, char *err, size_t errlen);
// RUN/curves.png redrawn from the rows of metrics.csv so far: a run stopped by a signal draws it after
// its checkpoint is saved, so that the picture shows the rows it saved past the last evaluation. 0, or -1
// with err (a warning: the checkpoint is saved already).
int train_out_curves(Train *t, char *err, size_t errlen);
// RUN/samples/step-<step>.png alone (a resume's, for the sheet its checkpoint's step lacks: cmd/runloop.h).
int train_out_sheet(Train *t, long step, char *err, size_t errlen);
// Reports once each file of ds (the training or the validation dataset) found broken since the last
// call, one stderr line each, worded by the split the image is in, whichever pass found it:
// "vitmae: [rank R: ]skipped PATH: REASON (found while training; an image of its batch that decodes
// takes its place)" or "(found while validating; left out of the validation)" (docs/data.md); stopping
// (the step's batch failed: none took its place) says "(found while training)" alone, and a run of
// --batch 1 says that no image can take its place (runfolder.h, BROKEN_*). Files of a folder
// that went away during the run (a class folder deleted, renamed) are one line for the folder:
// "vitmae: skipped DIR: the folder is gone (moved or deleted during the run); its images are left
// out from now on" (it was a line per image: thousands for a large class).
void train_out_report_broken(Train *t, const Dataset *ds, int stopping);
#endif
