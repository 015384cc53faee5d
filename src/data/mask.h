// User masks for `vitmae reconstruct --mask MASK.png`: an image of any size (any format image.h
// decodes, recognised by content) that marks the patches to remove.
//
// The image is nearest-resized to img_size x img_size (source pixel floor(d * src / img_size) on
// each axis); a patch is removed when the mean luminance over its P x P area is >= 0.5, where a
// pixel's luminance is 0.299 R + 0.587 G + 0.114 B for colour and the value itself for grey (alpha
// is ignored). The sum is taken in double as (299 R + 587 G + 114 B) / 1000, so a white pixel counts
// exactly 1 and a patch half black, half white is exactly 0.5: removed.
#ifndef VITMAE_MASK_H
#define VITMAE_MASK_H
#include <stddef.h>
#include <stdint.h>
#include "data/image.h"

// removed [L = (img_size / patch)^2], row-major, 1 = removed. 0 ok, -1 with err (the reason only,
// without the path). img_size must be a positive multiple of patch.
int mask_from_png(const char *path, int img_size, int patch, uint8_t *removed, char *err, size_t errlen);
// The same from an encoded image in memory (for fuzzing).
int mask_from_mem(const uint8_t *buf, size_t len, int img_size, int patch, uint8_t *removed,
                  char *err, size_t errlen);
// The same from a decoded image.
int mask_from_image(const Image *im, int img_size, int patch, uint8_t *removed, char *err, size_t errlen);
#endif
