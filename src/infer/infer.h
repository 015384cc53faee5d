// Inference with fixed masks, shared by `vitmae reconstruct` and `vitmae eval`: the same image, seed
// and mask ratio give the same mask in both commands, so their numbers agree.
//
// Masks: an image's mask depends only on (seed, its stem), not on its position in a list: the noise
// is L draws of rng_uniform from rng_derive(seed, dataset_path_hash(stem), 0), then MAE's argsort
// (mae_masking_from_noise). The stem is the file name without folders and without its last extension.
#ifndef VITMAE_INFER_H
#define VITMAE_INFER_H
#include <stddef.h>
#include <stdint.h>
#include "core/model.h"

// The stem of a path: "data/Coat/a.png" -> "a"; a name starting with '.' keeps it (".png" -> ".png").
// malloc'd, NULL when out of memory.
char *infer_stem(const char *path);
// The mask of one image: ids_keep [K] (MAE's order) and removed [L] (1 = removed). 0 ok, -1 out of memory.
int infer_random_mask(uint64_t seed, const char *stem, int L, int K, int *ids_keep, uint8_t *removed);

// One batch through the model. images [B][S][S][C] in pixel units [0, 1]; norm_scratch is the same
// size (gets the normalised images); ids_keep [B][K]; removed [B][L]. Fills, per image:
//   recon [B][S][S][C]  the prediction of every patch in pixel units (recon_pixels, not clipped)
//   patch_err [B][L]    per-patch MSE of the clipped reconstruction against the image (pixel units)
//   mse [B]             mean patch_err over removed patches; over all patches when K == L
//   loss [B]            model units: mean over removed patches of the per-patch MSE between prediction
//                       and target (over all patches when K == L), in double
// Returns what mae_forward returned (the batch's masked loss).
// Refuses, before allocating, a batch of B images of per floats each whose forward-only model
// (core/model.h mae_create_forward) and buffers, with held bytes for each of min(B, held_at_once) images
// (`vitmae reconstruct`'s panels, drawn and written a few at a time), need more than 90% of physical
// memory: fills err with the bytes and returns 2 when a smaller --batch would fit, 1 when even batch 1
// would not; 0 when it fits. The command prints err.
int infer_memory_check(const MaeConfig *cfg, int B, size_t per, size_t held, int held_at_once, char *err,
                       size_t errlen);
// The same answer for an encoder-only model (core/model.h mae_create_encoder) and extra bytes for each
// image (`vitmae embed`, `probe`: infer/features.h).
int infer_encoder_memory_check(const MaeConfig *cfg, int B, size_t extra_per_image, char *err, size_t errlen);
// The same answer for any model: need bytes at batch B, need_one at batch 1, of S x S images (`vitmae
// classify` passes its classifier's).
int infer_memory_refusal(size_t need, size_t need_one, int B, int S, char *err, size_t errlen);

// The reason given for an image whose outputs are NaN or infinite although every weight is finite
// (checked when read): weights so large that the forward overflows float. Every command that runs
// the model refuses such outputs with this reason, exit 1, rather than print or write them
// (docs/interface.md section 1, exit status).
#define INFER_NONFINITE_WHY "the model's output is NaN or infinite for this image (the checkpoint's weights are finite but overflow float: the checkpoint cannot be used)"

float infer_batch(Mae *m, const float *images, float *norm_scratch, const int *ids_keep,
                  const uint8_t *removed, int B, int K, float *recon, float *patch_err, double *mse,
                  double *loss);
#endif
