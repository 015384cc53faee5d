// Frozen encoder features of images: checkpoint -> one vector per image, shared by `vitmae embed` and
// `vitmae probe` (docs/encoder.md, "Features and probes").
//
// The encoder runs on every patch (no masking) of the evaluation view (image_load_view, spec's view), normalised
// with the checkpoint's pixel mean and std. The tokens of the chosen layer go through the encoder's
// final LayerNorm `norm` (for an earlier layer too, as DINO's get_intermediate_layers), then:
//   pool cls   the CLS token (token 0)                         -> [D]
//   pool mean  the mean of the L patch tokens (CLS excluded)   -> [D]
// Layer `last` (depth - 1) is exactly the encoder output MAE's forward_encoder returns. With spec's blocks
// K > 1, the features of the K blocks ending at the layer, each as above, side by side: [K * D] (DINO's
// linear evaluation concatenates the CLS tokens of its n_last_blocks so, each through the final norm).
//
// Pixel features (no checkpoint): the evaluation view itself in pixel units [0, 1], flattened in
// [S][S][C] order -> [S * S * C].
//
// Every image is computed on its own (no value depends on the rest of the batch or on the thread
// count), so features are bitwise the same for any --threads and any batch size.
#ifndef VITMAE_FEATURES_H
#define VITMAE_FEATURES_H
#include <stddef.h>
#include "core/model.h"
#include "data/image.h"

typedef enum { FEATURES_POOL_CLS, FEATURES_POOL_MEAN } FeaturesPool;
#define FEATURES_POOL_NAMES "cls|mean"
// Which norm the features pass, as embed's and probe's --help say it (docs/encoder.md, "Other commands
// on a fine-tuned checkpoint").
#define FEATURES_NORM_HELP "through the final norm (a fine-tuned classifier has none: cls as it is, mean through fc_norm)"
// --blocks K of embed and probe: its bound and its help.
#define FEATURES_BLOCKS_MAX 4096
#define FEATURES_BLOCKS_HELP "the features of K blocks ending at --layer, side by side: K x D values (default 1; DINO's linear evaluation: 4, its n_last_blocks)"
// "cls" | "mean" -> 0 and *out; -1 otherwise.
int features_pool_parse(const char *s, FeaturesPool *out);
// "last" or a block index 0..depth-1 -> *layer (0-based); -1 with a reason naming the range otherwise.
int features_layer_parse(const char *s, int depth, int *layer, char *err, size_t errlen);

typedef struct {
    FeaturesPool pool;
    int layer;          // 0..depth-1
    ViewSpec view;      // the evaluation view of each image (data/image.h; VIEW_WHOLE: vitmae's default)
    int blocks;         // K: the features of blocks layer-K+1..layer side by side, [K * D] (DINO's
                        // n_last_blocks); 0 or 1: the layer's alone. layer - K + 1 >= 0 (features_blocks_check)
} FeaturesSpec;
// spec's block count (1 for 0); 0 when blocks K ending at spec->layer exist, else -1 with a reason
// naming the most there are.
int features_blocks(const FeaturesSpec *spec);
int features_blocks_check(const FeaturesSpec *spec, char *err, size_t errlen);
// The blocks in words for a command's line: "block 11 of 0..11", or "blocks 8..11 of 0..11 side by side".
void features_blocks_text(const FeaturesSpec *spec, int depth, char *buf, size_t n);

// A model ready to compute features: the checkpoint's encoder and the scratch for batches of up to
// max_batch images.
typedef struct FeatureModel FeatureModel;

// Loads a checkpoint for features (a file without decoder tensors is fine; a classifier's header checked
// as classify checks it, io/classifier_ckpt.h clf_ckpt_load_encoder); ema: a fine-tuned classifier's
// moving average of its weights instead of the weights (io/checkpoint.h ckpt_load_encoder_ema: a file
// without it is refused, status 1). NULL with a one-line
// reason on failure, `PATH: why` when the file cannot be used (its memory check and out of memory have
// no subject: the command names itself); *status gets 1 (runtime: unreadable, bad file, out of
// memory) or 2 (max_batch too large for memory: a smaller batch would fit).
FeatureModel *features_open(const char *ckpt_path, int ema, int max_batch, int *status, char *err, size_t errlen);
void features_close(FeatureModel *fm);
const MaeConfig *features_config(const FeatureModel *fm);
int features_dim(const FeatureModel *fm, const FeaturesSpec *spec);   // D x features_blocks(spec)
// What spec's feature of fm is, in words for a report: "cls token" or "mean tokens" (after the encoder's
// `norm`, or, for a fine-tuned classifier, which has none, the block's own CLS token) and, for a
// classifier's mean pooling, "fc_norm(mean tokens)": the head's input (docs/encoder.md, "Other
// commands on a fine-tuned checkpoint").
const char *features_what(const FeatureModel *fm, const FeaturesSpec *spec);

// B <= max_batch images [B][S][S][C] in pixel units [0, 1] -> out [B][K * D] (K = features_blocks(spec):
// block layer-K+1's D values first). images is left unchanged.
void features_batch(FeatureModel *fm, const float *images, int B, const FeaturesSpec *spec, float *out);

// Called after each batch from the calling thread: done of total images.
typedef void (*FeaturesProgress)(void *ctx, long done, long total);

// Features of n image files, in order, batch by batch (the images of a batch are decoded in
// parallel): fm != NULL: features_batch rows [n][D]; fm == NULL: pixel features [n][size*size*channels]
// (size, channels used only then). batch: images per forward pass (<= max_batch of fm).
// Returns 0; 1 with "PATH: reason" for the first file (in order) that does not decode or whose
// features are not finite (err names the file: a command says it as `vitmae: PATH: reason`, as it
// says every input's failure; docs/interface.md section 1), its index in *failed_at, where embed
// says it among its other lines (docs/interface.md, section 2, "Bad files"); -1 with a reason (out
// of memory) else. *failed_at is -1 but on 1 (failed_at may be NULL).
// max_pixels: an image with more pixels is refused unread (0: the default, data/image.h).
int features_of_files(FeatureModel *fm, const FeaturesSpec *spec, int size, int channels, long max_pixels,
                      const char *const *paths, long n, int batch, float *out,
                      FeaturesProgress progress, void *ctx, long *failed_at, char *err, size_t errlen);
#endif
