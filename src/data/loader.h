// Training batches made ahead of the step that needs them: background threads (POSIX threads, each
// running its OpenMP regions on one thread) fill a ring of `depth` batches while the model computes.
//
// A batch is a pure function of (dataset, items, seed, step) (see dataset_load_range), so what a step
// sees does not depend on the depth, the number of threads, the cache or the timing: the loader only
// changes when the work is done. Memory: depth x images per batch x size^2 x channels floats, plus
// what the dataset's cache holds.
//
// Use: push the first `depth` steps, then for each step pop it (blocks until it is ready) and push
// the step `depth` ahead.
#ifndef VITMAE_LOADER_H
#define VITMAE_LOADER_H
#include <stddef.h>
#include <stdint.h>
#include "data/dataset.h"

typedef struct {
    int size, channels;
    Augment aug;
    uint64_t seed;
    int max_images;   // the most images one step loads (k1 - k0)
    int depth;        // batches queued ahead (>= 1)
    int threads;      // background threads (>= 1)
    const int *pool;  // the training items (may be NULL), kept by the caller: what a batch whose every
    int npool;        // folder went away draws from (dataset_batch_image)
} LoaderOptions;

typedef struct Loader Loader;

// NULL on failure (err: why).
Loader *loader_create(const Dataset *ds, const LoaderOptions *o, char *err, size_t errlen);
// Queues images k0 .. k1 - 1 of the batch items[0 .. n) of `step` (items are copied). -1 when
// `depth` batches are already queued or k1 - k0 > max_images.
int  loader_push(Loader *l, uint64_t step, const int *items, int n, int k0, int k1);
// Waits for the oldest queued batch, which must be `step`, and copies it into out
// [k1 - k0][size][size][channels], and into items [k1 - k0] (may be NULL) the item whose image each
// is (a broken one's replacement, dataset_batch_image: recorded as the image was made, since a later
// batch may find broken an item this one decoded). *waited_s (may be NULL): seconds spent waiting.
// 0 ok; nonzero with err: the first failing image in batch order, its status as dataset_load_range's
// (DATASET_ERR_BROKEN when none of the batch's images decodes), -1 when the step was not queued.
int  loader_pop(Loader *l, uint64_t step, float *out, int *items, double *waited_s, char *err, size_t errlen);
// Queued batches not popped yet.
int  loader_pending(const Loader *l);
void loader_free(Loader *l);
#endif
