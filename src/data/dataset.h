// A folder of images as a dataset (docs/interface.md section 2): recursive scan, classes, train/val split,
// evaluation and training views from working images, pixel statistics, an in-memory cache and an
// on-disk store of working images.
//
// Scan: files and folders are visited in sorted byte-wise (strcmp) order; symbolic links are followed,
// each directory is entered once (symlink loops end there), at most 64 levels deep (a deeper folder is "skipped", not searched). A file named
// *.png, *.jpg, *.jpeg or *.webp (any case) is a candidate, anything else is "ignored"; ignored files
// that look like images by their name (SVG, GIF, TIFF, HEIC, ...) are listed with the reason. Every
// candidate is fully decoded (in parallel, OpenMP) so truncated files are found now, unless the scan
// is lazy (DatasetOptions.lazy: headers only, image_probe; a file broken past its header fails when
// first used). A candidate that fails is "skipped" with its reason (an unreadable sub-folder is
// listed as skipped too). A decoded image whose pixels are all the same colour (alpha dropped) is
// marked uniform. The class of an image is its
// first-level sub-folder; classes are the sorted names of the sub-folders holding at least one usable
// image; files directly in the root have class -1.
//
// Views are 8-bit like PIL's pipeline: the geometry runs on the decoded floats in the image's own
// channel count, the result is rounded to the 256 levels of 8 bits (image_quantize8), and then
// converted to the requested channel count (grey -> RGB replicate, RGB -> grey 0.299/0.587/0.114).
//
// Working images (DatasetOptions.work_size > 0, what training uses): every view of an item is made
// from its working image, the photo decoded at a working size and held as 8 bits: JPEGs decode with
// libjpeg-turbo's DCT scaling at the smallest scale whose shorter side is >= work_size; an image whose
// shorter side is still larger is resized (image_resize_bilinear, antialiased) to shorter side
// work_size, longer side int(work_size * long / short), as torchvision's Resize (both:
// image_load_working); then rounded to 8 bits. An image at most work_size on its shorter side keeps its own size
// (8-bit images, e.g. Fashion-MNIST, exactly as decoded). Augmentation therefore sees the whole photo.
// The working image is a pure function of the file's bytes and work_size, so where it comes from
// (decoded now, the in-memory cache, the on-disk store) never changes a view.
// - Cache: working images are kept in memory, first come, until cache_mb is used up.
// - Store (store_dir): working images written to files named by a hash of (absolute path, file
//   size, modification time, work_size, format version) and read back by later runs; a changed file
//   has another key and is decoded again. Each file carries its key and a CRC-32; one that does not
//   match is ignored (and rewritten).
// With work_size 0 (reconstruct, eval, data) views are made from the full-precision decode.
#ifndef VITMAE_DATASET_H
#define VITMAE_DATASET_H
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include "data/image.h"
#include "data/randaug.h"
#include "core/rng.h"

// A view's augmentation: its kind; for the random resized crop the smallest area it takes, a fraction
// of the image (torchvision's RandomResizedCrop scale=(crop_lo, 1)); interp, the filter of the view's
// resize (the crop's interpolation=, or the evaluation view's); crop_pct, the evaluation view's crop
// fraction (image.h ViewSpec; 1 for every training view). AUGMENT_NONE gives vitmae's evaluation view
// (the whole centre square, bilinear: docs/interface.md section 2); the three constants carry MAE's
// pretraining crop_lo, 0.2, and the bilinear filter (docs/data.md "Interpolation", docs/encoder.md
// "The crop's smallest area").
// ra: RandAugment after the crop and flip (data/randaug.h; fine-tuning's --aa, off in every other
// view), with interp its resampling and fill[channels] its outside colour.
typedef enum { AUG_NONE, AUG_FLIP, AUG_CROP } AugmentKind;
typedef struct {
    AugmentKind kind;
    double crop_lo;
    ImageFilter interp;
    double crop_pct;
    RandAugSpec ra;
    uint8_t fill[3];
} Augment;
#define AUGMENT_CROP_LO 0.2
#define AUGMENT_NONE ((Augment){AUG_NONE, AUGMENT_CROP_LO, IMAGE_BILINEAR, 1.0, RANDAUG_OFF, {0, 0, 0}})
#define AUGMENT_FLIP ((Augment){AUG_FLIP, AUGMENT_CROP_LO, IMAGE_BILINEAR, 1.0, RANDAUG_OFF, {0, 0, 0}})
#define AUGMENT_CROP ((Augment){AUG_CROP, AUGMENT_CROP_LO, IMAGE_BILINEAR, 1.0, RANDAUG_OFF, {0, 0, 0}})
// The evaluation view an AUG_NONE augmentation makes (finetune's validation: docs/encoder.md).
#define AUGMENT_VIEW(view) ((Augment){AUG_NONE, AUGMENT_CROP_LO, (view).filter, (view).crop_pct, RANDAUG_OFF, {0, 0, 0}})
// "none" | "flip" | "crop" -> 0 and *out (crop_lo AUGMENT_CROP_LO, bilinear); -1 for anything else.
int augment_parse(const char *name, Augment *out);
// "bilinear" | "bicubic" (the --interp flag, train_state's "interp") -> 0 and *out; -1 otherwise.
int augment_interp_parse(const char *name, ImageFilter *out);
// A fraction (crop_lo, crop_pct) from a float flag or train state as the decimal it was written as: the
// shortest text that reads back as the float, read as a double (0.08f gives 0.08, not 0.0799999982;
// 0.2f gives AUGMENT_CROP_LO exactly, so a run given the default crops as one without the flag; 0.875f
// gives 0.875, 0.9f gives 0.9, so floor(224 / 0.9) is timm's 248).
double augment_fraction(float scale);

typedef struct {
    char *path;     // root + "/" + rel, as passed to image_load
    char *rel;      // path relative to the root ("Coat/00012.png"); the split hashes this
    int cls;        // index into class_names, -1 for files directly in the root
    int w, h, c;    // decoded size and channels (1 grey, 3 RGB)
    int uniform;    // every pixel the same colour (known only when the scan decoded it): 1, or 2 when
                    // the file's alpha channel was dropped
    long long bytes;   // the file's size at the scan (stat; -1 when it could not be read)
} DataItem;

// items: of a scan's skipped candidate, the usable images before it in scan order (its place among
// ds->items, which the commands that take files say their lines in: cmd/output.h); 0 elsewhere.
typedef struct { char *path; char *reason; int items; } DataSkip;

typedef struct {
    long max_pixels;   // <= 0: VITMAE_DEFAULT_MAX_PIXELS
    int work_size;     // shorter side of the working images (0: views from the full decode, no cache)
    long cache_mb;     // in-memory budget for working images in MiB (0: no cache)
    int lazy;          // 1: read headers only at the scan (no uniform check); see dataset_load_batch
    const char *store_dir;   // on-disk store of working images (NULL: none); created when missing
} DatasetOptions;

typedef struct DataShared DataShared;   // the cache, the store and late failures (dataset.c)

typedef struct {
    char *root;
    const char *root_role;    // what messages call the root: NULL "data folder", or the caller's ("validation folder")
    const char *batch_of_one_way;   // the way on when a batch of one image is broken: NULL "remove the file, or
                                    // train with a --batch of 2 or more", or the caller's (a resumed run keeps its --batch)
    const char *batch_of_one_sole_way;   // NULL, or the way on when that image is the only one of its class
                                         // (a resumed finetune keeps its classes: "remove the file"
                                         // would take the class away, and the resume be refused)
    DataItem *items;          // usable images, in scan order
    int n;
    char **class_names;       // sorted
    int *class_counts;        // images per class
    int nclasses;
    int nroot;                // usable images directly in the root (no class)
    DataSkip *skipped;        // candidates that failed, in scan order
    int nskipped;
    int nignored;             // files that are not candidates, and folders met again (each is entered once)
    int nignored_dirs;        // of nignored: the folders met again
    char **met_again;         // of those, the first-level ones by name (a link to a class's folder, into one, or to
    int nmet_again;           // the root: its images counted under their class), in sorted order
    DataSkip *ignored;        // the ignored files that look like images, with the reason
    int nignored_files;
    int nuniform;             // usable images that are one flat colour
    int min_w, min_h, max_w, max_h;   // over usable images (0 when n == 0)
    int all_grey;             // every usable image decoded as 1 channel (for --channels auto)
    long max_pixels;
    int work_size, lazy;
    long scan_dir_compares;   // folders compared to find whether one was entered before (a count of work, for tests)
    DataShared *shared;       // mutable state behind const Dataset pointers; thread-safe
} Dataset;

// Turns the on-disk store on in dir, a writable folder (after the scan; the command makes the folder, as
// it makes every folder: cmd/output.h). 0 ok, -1 with err. Views do not change: only where working
// images come from. The temporary files a killed process of this host left in dir are removed then
// (io/files.h's file_sweep_dead): the folder is listed once per call.
int  dataset_set_store(Dataset *ds, const char *dir, char *err, size_t errlen);
// Turns the store off and removes the working images in its folder (its "<16 hex>.work" files, whoever
// wrote them; other names stay): for a store folder the command made for a run that then did not start
// (cmd/runfolder.h's run_unmake_store; docs/data.md, "Cache, store and prefetch").
void dataset_store_remove(Dataset *ds);
// The free space the store leaves on its disk: a working image is not written when the disk would keep
// less than min_free bytes (io/files.h's file_free_bytes; 0: written until the disk is full, a failed
// write skipped as any other). Those left out are decoded again when wanted (counted in
// DataStats.store_left); views do not change.
void dataset_set_store_min_free(Dataset *ds, double min_free);
// The store's folder as dataset_set_store resolved it (absolute), or NULL without a store.
const char *dataset_store_dir(const Dataset *ds);
// Bytes the working images of items idx[0 .. n) take (idx NULL: items 0 .. n - 1), from their header
// sizes (to decide whether they fit the cache or need the store).
size_t dataset_working_bytes(const Dataset *ds, const int *idx, int n);
// Of those bytes, the ones of the images not in the store yet (idx NULL: items 0 .. n - 1): an image
// counts as stored when its store file is there, a regular file of its size (a stat per image, no read;
// a file that then fails its check is decoded and rewritten as any). Without a store, all of them.
// For --store auto's share of room on the store's disk (cmd/runfolder.h's run_use_store).
size_t dataset_unstored_bytes(const Dataset *ds, const int *idx, int n);
// The largest usable image's 8-bit samples, w x h x c bytes from its header: what a decode of it may
// hold whole (a PNG's or WebP's samples, docs/data.md), for the memory a loader thread needs.
size_t dataset_largest_samples(const Dataset *ds);
// The in-memory cache's budget in bytes (DatasetOptions.cache_mb at the scan; 0 without working
// images). Set it before a working image is made: one already kept stays (cmd/runfolder.h's
// run_fit_cache lowers it to the memory a run leaves).
void dataset_set_cache_budget(Dataset *ds, size_t bytes);
size_t dataset_cache_budget(const Dataset *ds);

// Counters of the working-image sources since the scan (for logs and bench).
// store_left: working images not written to the store for its disk's free space (dataset_set_store_min_free).
typedef struct {
    long decoded, cache_hits, store_hits, store_writes, store_left, broken;
    size_t cache_bytes, cache_budget;
} DataStats;
void dataset_stats(const Dataset *ds, DataStats *st);

// Returned instead of -1 when err is about one file and names it ("PATH: why"): a command prints it as
// it is, `vitmae: PATH: why` (docs/interface.md, section 1), not after a <what> of its own.
#define DATASET_ERR_FILE (-2)
// Returned by a lazy dataset's batch load when no image of the batch decodes (each file broken past its
// header), err naming one as DATASET_ERR_FILE's does: the data's stop of a run, which saves the steps done
// first (cmd/runloop.c; docs/data.md, "Training reads lazily").
#define DATASET_ERR_BROKEN (-3)
// The <what> a command prints before err for the status rc: none when err names its file.
static inline const char *dataset_err_what(int rc, const char *what) {
    return rc == DATASET_ERR_FILE || rc == DATASET_ERR_BROKEN ? NULL : what;
}
// Scans root. 0 ok (also when no image is usable: check ds->n), -1 when root cannot be read as a
// folder (err: the reason, without the path), DATASET_ERR_FILE when a file could not be read for want
// of memory or open files (image_why_is_resource; docs/data.md). opt may be NULL (defaults, no cache).
int  dataset_scan(const char *root, const DatasetOptions *opt, Dataset *ds, char *err, size_t errlen);
void dataset_free(Dataset *ds);
// The scan's record of folders entered, fed (dev, ino[0 .. n)) as if each were a folder reached: the
// compares it made (Dataset.scan_dir_compares), -1 out of memory. For tests of how inode numbers as
// filesystems give them spread over its table.
long dataset_visit_compares(unsigned long long dev, const unsigned long long *ino, int n);

// FNV-1a 64-bit hash of the relative path's bytes (offset basis 0xcbf29ce484222325, prime
// 0x100000001b3). An item is in the validation split when hash % 10000 < round(val_frac * 10000);
// when that leaves validation empty although val_frac > 0 and n >= 2, the item with the smallest
// hash % 10000 (first in scan order) goes to validation; when it leaves training empty, the item
// with the largest (first in scan order) trains. Index lists are in scan order, malloc'ed.
// dataset_split_pinned keeps a run's split as it was (docs/interface.md section 2, "Validation split"):
// pin holds the relative paths of the images the fallbacks chose when the run started ("" none); an
// image named there that is still among the items is held out (held_out) or trains (trains) whatever
// the rule says, and the fallbacks choose again only when their image is gone, never the other pin's
// image. On return pin holds this split's fallback images (the pinned ones, kept, or those chosen
// now; "" where the rule alone decided), for the run to record.
typedef struct { char held_out[4096], trains[4096]; } DatasetSplitPin;
uint64_t dataset_path_hash(const char *rel);
// The rule above for one item: 1 when key = dataset_path_hash(rel) % 10000 is held out at val_frac
// (key < round(val_frac * 10000)), else 0.
int dataset_held_out(uint64_t key, double val_frac);
int  dataset_split(const Dataset *ds, double val_frac, int **train, int *ntrain, int **val, int *nval);
int  dataset_split_pinned(const Dataset *ds, double val_frac, DatasetSplitPin *pin, int **train, int *ntrain, int **val,
                          int *nval);

// Item i's working image as floats (work_size > 0), or its full decode (work_size 0). 0 ok; -1 with
// err = "PATH: reason".
int  dataset_working_image(const Dataset *ds, int i, Image *out, char *err, size_t errlen);
// Item i as its evaluation view, out [size][size][channels]. 0 ok; -1 (err = "PATH: reason") when a
// file that decoded during the scan no longer does.
int  dataset_eval_view(const Dataset *ds, int i, int size, int channels, float *out, char *err, size_t errlen);
// Item i as a training view: none = evaluation view; flip = evaluation view, flipped when
// rng_uniform(rng) < 0.5; crop = image_random_resized_crop from the original, then the flip draw.
int  dataset_train_view(const Dataset *ds, int i, int size, int channels, Augment aug, Rng *rng,
                        float *out, char *err, size_t errlen);
// Images k0 .. k1 - 1 of a step's batch items[0 .. n) in parallel (OpenMP) into
// out [k1 - k0][size][size][channels]; image k draws from rng_derive(seed, step, k), so any split of
// a batch (threads, processes) gives the same pixels. AUGMENT_NONE gives evaluation views.
// Lazy datasets: an item whose file fails to decode (found broken after the header scan) is replaced
// by the next item of the same batch that decodes (items[k + 1], items[k + 2], ... wrapping), with
// image k's random stream, so the batch still depends only on (seed, step) and the split is kept;
// the failure is recorded once for dataset_take_broken. Other datasets: an item that fails is an error (err names the first failing
// item in batch order). 0 ok; DATASET_ERR_BROKEN when none of the batch's images decodes, DATASET_ERR_FILE
// when err names its file or the data folder ("PATH: why"; so does dataset_batch_image), -1 otherwise (out of
// memory, a range outside the batch).
int  dataset_load_range(const Dataset *ds, const int *items, int n, int k0, int k1, int size, int channels,
                        Augment aug, uint64_t seed, uint64_t step, float *out, char *err, size_t errlen);
// Image k of the batch alone, as dataset_load_range makes it (no OpenMP inside but the geometry's).
// *item (may be NULL): the item whose image it is, items[k] or the one that took its place, e.g. for
// its class label. Known only here, when the image is made: asked later, which items are known
// broken may have changed (a file that broke since, found by another load). pool[0 .. npool) (may
// be NULL: none): the training items. A batch whose every file is missing because its folder went
// away during the run (a class folder deleted: "its images are left out from now on", docs/data.md)
// takes image k from the pool instead: the first item that decodes from a place rng_derive(seed,
// step, k | 2^62) chooses, in the pool's order, with image k's random stream; still a function of
// the files, the seed and the step.
int  dataset_batch_image(const Dataset *ds, const int *items, int n, int k, const int *pool, int npool, int size,
                         int channels, Augment aug, uint64_t seed, uint64_t step, float *out, int *item, char *err,
                         size_t errlen);
// The err of DATASET_ERR_BROKEN for a run whose checkpoint `ckpt` holds the steps done, `step` (saved as
// the run stopped, or before; resume: the run folder as a shell word): a batch of several says so,
// "... (all N are broken); CKPT holds step N (remove them and continue with --resume RUN)"; a batch of one
// whose way on (batch_of_one_way) begins "remove the file, or " says "remove the file and continue with
// --resume RUN (its checkpoint holds step N), or " and the way's new run ("start a new run with a --batch
// of 2 or more" for the default's "train with ..."). keeps_classes (finetune): where the file is its
// class's only image the resume would refuse its removal, and the way is the new run alone, as
// batch_of_one_sole_way says it. Other messages are left as they are.
void dataset_broken_stop_kept(const Dataset *ds, int keeps_classes, const char *ckpt, const char *resume, long step,
                              char *err, size_t errlen);
// dataset_load_range over the whole batch (k0 = 0, k1 = n).
int  dataset_load_batch(const Dataset *ds, const int *items, int n, int size, int channels, Augment aug,
                        uint64_t seed, uint64_t step, float *out, char *err, size_t errlen);
// 1 when item i of a lazy dataset has been found broken past its header (by a load or the pixel
// statistics); 0 otherwise, and always 0 for other datasets.
int  dataset_is_broken(const Dataset *ds, int i);
// Validation in chunks that leave broken images out: the positions p of list[start .. n) whose items
// are not known broken, up to max of them, into pos (ascending); *end is one past the last position
// looked at. Returns how many. A chunk whose load then finds one of its items broken is formed again
// (dataset_any_broken), so that the chunks are the same whatever was known before.
int  dataset_next_chunk(const Dataset *ds, const int *list, int n, int start, int max, int *pos, int *end);
// 1 when any of items[0 .. n) is known broken (dataset_is_broken).
int  dataset_any_broken(const Dataset *ds, const int *items, int n);
// Items found broken since the last call (each reported once), in scan order: up to max entries
// {path, reason} copied (malloc'ed strings, the caller frees them), and their item indices in items
// (when not NULL). Returns how many.
int  dataset_take_broken(const Dataset *ds, DataSkip *out, int *items, int max);
// 0 while ds's root folder is there; else -1 with err "ROOT: the data folder is gone (moved or deleted
// during the run)" (root_role in place of "data folder" when set), or "... cannot be reached: WHY".
int  dataset_root_gone(const Dataset *ds, char *err, size_t errlen);

// Per-channel mean and standard deviation (population) of the evaluation views of up to `limit`
// items (limit <= 0: 10,000) of idx, picked evenly: idx[k * n / m] for k < m = min(n, limit), m
// lowered further by the pixel budget above.
// Sums per image in double, added in image order: the same for any thread count. Lazy datasets: an
// image that fails to decode is left out (and recorded for dataset_take_broken). A channel whose
// std is below 1e-6 (a constant channel) gets std 1.
// The images measured: idx picked evenly, at most limit of them and at most as many as fit
// pixel_budget (<= 0: DATASET_STATS_PIXELS) decoded pixels at the mean of their header sizes, but
// at least DATASET_STATS_MIN: a folder of large photos measures a few dozen of them.
// 0 ok; DATASET_ERR_FILE when an image could not be read for want of memory or open files (in a
// dataset that is not lazy, for any reason), err naming it; -1 otherwise (no image decodes).
// Said after a file's reason when the process, not the file, failed (data/image.h,
// image_why_is_resource 1; the reason for an image's pixels, 2, says what they needed): the scan and a
// training batch then fail instead of skipping the file.
#define DATASET_RESOURCE_NOTE "(a limit of this process, such as ulimit -v or ulimit -n, not a broken image)"
#define DATASET_STATS_PIXELS 2.0e8
#define DATASET_STATS_MIN 16
int  dataset_pixel_stats(const Dataset *ds, const int *idx, int n, int limit, double pixel_budget, int size,
                         int channels, float *mean, float *std, char *err, size_t errlen);
#endif
