// A training session in memory, shared by the three files of `vitmae train`: cmd/train.c (flags,
// setup, the step loop), cmd/train_state.c (what a checkpoint carries) and cmd/train_out.c (what the
// run folder receives).
#ifndef VITMAE_TRAIN_H
#define VITMAE_TRAIN_H
#include <stdint.h>
#include <stdio.h>
#include "cmd/train_out.h"
#include "cmd/train_state.h"
#include "core/model.h"
#include "data/dataset.h"

struct Train {
    RunState rs;
    Dataset ds;
    int *train_idx, ntrain, *val_idx, nval;
    MaeConfig cfg;
    Mae *model;
    float *exp_avg, *exp_avg_sq;   // AdamW moments, laid out like the parameters
    const MaeTensor *tensors;
    int ntensors;
    int L, K, S, C;                // patches, visible patches, image side, channels
    char run_dir[4096], ckpt_path[4200];
    // Buffers sized once before the first step.
    float *pixels, *images, *noise, *recon;
    int *ids_keep, *batch_items;
    EpochOrder order;
    uint8_t *removed;
    float *patch_err;
    FILE *metrics;
    History hist;
};
#endif
