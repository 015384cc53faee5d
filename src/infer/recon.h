// From decoder predictions to pixels: un-patchify, undo norm-pix and pixel normalisation, and
// score the removed patches. Used by train (val PSNR, samples), reconstruct and eval.
//
// Layouts: pred [L, P*P*C] (model units, patch vector index (py*P+px)*C+c), images [H, W, C],
// removed [L] (1 = patch removed, 0 = visible), patches row-major (row = y).
#ifndef VITMAE_RECON_H
#define VITMAE_RECON_H
#include <stdint.h>
#include "core/model.h"

// removed[l] = 1 for every patch not in ids_keep[0..len_keep).
void recon_removed_from_keep(const int *ids_keep, int len_keep, int L, uint8_t *removed);
// Inverse of a removed mask: visible patch indices in ascending order; returns their count.
int recon_keep_from_removed(const uint8_t *removed, int L, int *ids_keep);

// Pixel-unit reconstruction of one image from its predictions (not clipped):
//   plain loss: x = pred * pixel_std[c] + pixel_mean[c];
//   norm-pix:   the target of a patch was (x - mu) / sqrt(var + 1e-6) over its own values, which are
//     unknown for a removed patch at inference. A visible patch uses its own mu/var (known); a removed
//     patch uses the mean of the visible patches' mu and the mean of their (var + 1e-6), never its own.
// image_norm is the normalised input [H, W, C] (only its visible patches are read under norm-pix).
void recon_pixels(const MaeConfig *cfg, const float *pred, const float *image_norm,
                  const uint8_t *removed, float *out);

// Mean over removed patches of the per-patch mean squared error between recon (clipped to [0, 1])
// and orig, both in pixel units [H, W, C]. per_patch_err [L] (optional) gets every patch's MSE.
// Returns 0 when no patch is removed.
double recon_masked_mse(const MaeConfig *cfg, const float *recon, const float *orig,
                        const uint8_t *removed, float *per_patch_err);
double psnr_from_mse(double mse);   // 10 log10(1 / mse), pixel peak 1; +inf for mse 0, NaN for NaN
// pixels_normalise / pixels_denormalise (the config's pixel statistics): core/config.h.
#endif
