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
#include "dist/dist.h"

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
    int per;                       // images per gradient group (rs.batch / rs.grad_groups): the
                                   // model's batch, also for validation and samples
    GradReduce gr;                 // this process's groups and the step's reduction (dist/dist.h)
    long cur_step;                 // the step whose groups train_group computes
    Augment aug;
    uint64_t *keys;                // [batch] 0, 1, ...: image k of a step draws from (.., step, k)
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
