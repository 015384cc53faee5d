// Mask images -> removed patches (see mask.h for the rule).
#include "data/mask.h"
#include <stdio.h>

int mask_from_image(const Image *im, int img_size, int patch, uint8_t *removed, char *err, size_t errlen) {
    if (patch < 1 || img_size < patch || img_size % patch) {
        snprintf(err, errlen, "image size %d is not a multiple of the patch size %d", img_size, patch);
        return -1;
    }
    if (im->w < 1 || im->h < 1 || (im->c != 1 && im->c != 3)) {
        snprintf(err, errlen, "mask image has no pixels");
        return -1;
    }
    int g = img_size / patch;
    for (int gy = 0; gy < g; gy++)
        for (int gx = 0; gx < g; gx++) {
            double sum = 0;   // luminance x 1000 (colour) or luminance (grey)
            for (int py = 0; py < patch; py++) {
                long sy = (long)(gy * patch + py) * im->h / img_size;
                for (int px = 0; px < patch; px++) {
                    long sx = (long)(gx * patch + px) * im->w / img_size;
                    const float *p = im->px + ((size_t)sy * im->w + (size_t)sx) * im->c;
                    sum += im->c == 3 ? 299.0 * p[0] + 587.0 * p[1] + 114.0 * p[2] : (double)p[0];
                }
            }
            double half = 0.5 * patch * patch * (im->c == 3 ? 1000.0 : 1.0);
            removed[gy * g + gx] = sum >= half;
        }
    return 0;
}

int mask_from_png(const char *path, int img_size, int patch, uint8_t *removed, char *err, size_t errlen) {
    Image im;
    if (image_load(path, 0, &im, err, errlen)) return -1;
    int rc = mask_from_image(&im, img_size, patch, removed, err, errlen);
    image_free(&im);
    return rc;
}

int mask_from_mem(const uint8_t *buf, size_t len, int img_size, int patch, uint8_t *removed,
                  char *err, size_t errlen) {
    Image im;
    if (image_load_mem(buf, len, 0, &im, err, errlen)) return -1;
    int rc = mask_from_image(&im, img_size, patch, removed, err, errlen);
    image_free(&im);
    return rc;
}
