// A folder of images as a dataset (docs/interface.md section 2): recursive scan, classes, train/val split,
// evaluation and training views, pixel statistics, and an optional in-memory 8-bit cache.
//
// Scan: files and folders are visited in sorted byte-wise (strcmp) order; symbolic links are followed,
// each directory is entered once (symlink loops end there), at most 64 levels deep. A file named
// *.png, *.jpg or *.jpeg (any case) is a candidate, anything else is "ignored". Every candidate is fully
// decoded (in parallel, OpenMP) so truncated files are found now; a candidate that fails is "skipped"
// with its reason (an unreadable sub-folder is listed as skipped too). The class of an image is its
// first-level sub-folder; classes are the sorted names of the sub-folders holding at least one usable
// image; files directly in the root have class -1.
//
// Views are 8-bit like PIL's pipeline: the geometry runs on the decoded floats in the image's own
// channel count, the result is rounded to the 256 levels of 8 bits (image_quantize8), and then
// converted to the requested channel count (grey -> RGB replicate, RGB -> grey 0.299/0.587/0.114).
//
// Cache (DatasetOptions.cache_mb > 0 and img_size > 0): while scanning, each image is kept as 8 bits,
// either at its original size (when it is exactly 8-bit and at most 4 x img_size^2 pixels, e.g.
// Fashion-MNIST) or as its img_size evaluation view. If the whole dataset fits under cache_mb, an
// epoch never decodes again; otherwise nothing is cached and items are decoded on each use. Views
// from the cache equal the decoded path bit for bit, except one case: `crop` augmentation of an image
// cached as its evaluation view crops from that view (the centre square at img_size resolution).
#ifndef VITMAE_DATASET_H
#define VITMAE_DATASET_H
#include <stddef.h>
#include <stdint.h>
#include "data/image.h"
#include "core/rng.h"

typedef enum { AUGMENT_NONE, AUGMENT_FLIP, AUGMENT_CROP } Augment;
// "none" | "flip" | "crop" -> 0 and *out; -1 for anything else.
int augment_parse(const char *name, Augment *out);

typedef struct {
    char *path;     // root + "/" + rel, as passed to image_load
    char *rel;      // path relative to the root ("Coat/00012.png"); the split hashes this
    int cls;        // index into class_names, -1 for files directly in the root
    int w, h, c;    // decoded size and channels (1 grey, 3 RGB)
} DataItem;

typedef struct { char *path; char *reason; } DataSkip;

typedef struct {
    long max_pixels;   // <= 0: VITMAE_DEFAULT_MAX_PIXELS
    int img_size;      // the model's image size; needed for the cache (0: no cache)
    long cache_mb;     // cache budget in MiB (0: no cache)
} DatasetOptions;

typedef struct {
    uint8_t *px;       // [h][w][c]
    int w, h, c;
    int original;      // 1: the image at its own size; 0: its img_size evaluation view
} DataCacheEntry;

typedef struct {
    char *root;
    DataItem *items;          // usable images, in scan order
    int n;
    char **class_names;       // sorted
    int *class_counts;        // images per class
    int nclasses;
    int nroot;                // usable images directly in the root (no class)
    DataSkip *skipped;        // candidates that failed, in scan order
    int nskipped;
    int nignored;             // files that are not candidates
    int min_w, min_h, max_w, max_h;   // over usable images (0 when n == 0)
    int all_grey;             // every usable image decoded as 1 channel (for --channels auto)
    long max_pixels;
    DataCacheEntry *cache;    // [n] or NULL
    int cache_size;           // img_size the cache was built for
    size_t cache_bytes;
} Dataset;

// Scans root. 0 ok (also when no image is usable: check ds->n), -1 when root cannot be read as a
// folder (err: the reason, without the path). opt may be NULL (defaults, no cache).
int  dataset_scan(const char *root, const DatasetOptions *opt, Dataset *ds, char *err, size_t errlen);
void dataset_free(Dataset *ds);

// FNV-1a 64-bit hash of the relative path's bytes (offset basis 0xcbf29ce484222325, prime
// 0x100000001b3). An item is in the validation split when hash % 10000 < round(val_frac * 10000);
// when that leaves validation empty although val_frac > 0 and n >= 2, the item with the smallest
// hash % 10000 (first in scan order) goes to validation. Index lists are in scan order, malloc'ed.
uint64_t dataset_path_hash(const char *rel);
// The rule above for one item: 1 when key = dataset_path_hash(rel) % 10000 is held out at val_frac
// (key < round(val_frac * 10000)), else 0.
int dataset_held_out(uint64_t key, double val_frac);
int  dataset_split(const Dataset *ds, double val_frac, int **train, int *ntrain, int **val, int *nval);

// Item i as its evaluation view, out [size][size][channels]. 0 ok; -1 (err = "PATH: reason") when a
// file that decoded during the scan no longer does.
int  dataset_eval_view(const Dataset *ds, int i, int size, int channels, float *out, char *err, size_t errlen);
// Item i as a training view: none = evaluation view; flip = evaluation view, flipped when
// rng_uniform(rng) < 0.5; crop = image_random_resized_crop from the original, then the flip draw.
int  dataset_train_view(const Dataset *ds, int i, int size, int channels, Augment aug, Rng *rng,
                        float *out, char *err, size_t errlen);
// n items in parallel into out [n][size][size][channels]; item k of the batch draws from
// rng_derive(seed, step, k), so the batch is the same for any thread count. AUGMENT_NONE gives
// evaluation views. On error, err describes the first failing item in batch order.
int  dataset_load_batch(const Dataset *ds, const int *items, int n, int size, int channels, Augment aug,
                        uint64_t seed, uint64_t step, float *out, char *err, size_t errlen);
// The images first .. first + n - 1 of a batch (one process's share under mpirun): item k draws from
// rng_derive(seed, step, first + k), so each image is the same as in the whole batch.
int  dataset_load_batch_from(const Dataset *ds, const int *items, int n, int first, int size, int channels,
                             Augment aug, uint64_t seed, uint64_t step, float *out, char *err, size_t errlen);

// Per-channel mean and standard deviation (population) of the evaluation views of up to `limit`
// items (limit <= 0: 10,000) of idx, picked evenly: idx[k * n / m] for k < m = min(n, limit).
// Sums per image in double, added in image order: the same for any thread count. A channel whose
// std is below 1e-6 (a constant channel) gets std 1.
int  dataset_pixel_stats(const Dataset *ds, const int *idx, int n, int limit, int size, int channels,
                         float *mean, float *std, char *err, size_t errlen);
#endif
