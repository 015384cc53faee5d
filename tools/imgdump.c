// imgdump FILE OUT.npy [--reduced MIN_SHORT]: the decoded image as vitmae sees it (image_load, or
// image_load_reduced), float32 [h, w, c] in [0, 1]. imgdump FILE --probe: the header probe's size
// (image_probe), printed as WIDTHxHEIGHTxCHANNELS. imgdump FILE OUT.npy --view SIZE CHANNELS
// [CROP_PCT bilinear|bicubic]: the evaluation view the models see (image_load_view; by default the whole
// centre square, bilinear), float32 [SIZE, SIZE, CHANNELS] in [0, 1]. For tests that compare decoders
// and views with PIL.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "data/image.h"
#include "io/npy.h"

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[2], "--probe")) {
        int w, h, c;
        char err[256];
        if (image_probe(argv[1], 0, &w, &h, &c, err, sizeof err)) { fprintf(stderr, "imgdump: %s: %s\n", argv[1], err); return 1; }
        printf("%dx%dx%d\n", w, h, c);
        return 0;
    }
    if ((argc == 6 || argc == 8) && !strcmp(argv[3], "--view")) {
        int size = atoi(argv[4]), channels = atoi(argv[5]);
        ViewSpec view = VIEW_WHOLE;
        if (argc == 8) {
            view.crop_pct = strtod(argv[6], NULL);
            view.filter = !strcmp(argv[7], "bicubic") ? IMAGE_BICUBIC : IMAGE_BILINEAR;
        }
        if (size < 1 || size > 4096 || (channels != 1 && channels != 3) || !(view.crop_pct >= VIEW_CROP_PCT_MIN && view.crop_pct <= 1) ||
            (argc == 8 && strcmp(argv[7], "bicubic") && strcmp(argv[7], "bilinear"))) {
            fprintf(stderr, "imgdump: bad --view SIZE CHANNELS [CROP_PCT bilinear|bicubic]\n");
            return 2;
        }
        float *px = malloc(sizeof(float) * size * size * channels);
        char err[256];
        if (!px || image_load_view(argv[1], 0, size, view, channels, px, err, sizeof err)) {
            fprintf(stderr, "imgdump: %s: %s\n", argv[1], px ? err : "out of memory");
            free(px);
            return 1;
        }
        int64_t shape[3] = {size, size, channels};
        int rc = npy_write(argv[2], px, "<f4", 3, shape, err, sizeof err);
        free(px);
        if (rc) { fprintf(stderr, "imgdump: %s: %s\n", argv[2], err); return 1; }
        return 0;
    }
    if (argc != 3 && !(argc == 5 && !strcmp(argv[3], "--reduced"))) {
        fprintf(stderr, "usage: imgdump FILE OUT.npy [--reduced MIN_SHORT | --view SIZE CHANNELS [CROP_PCT bilinear|bicubic]] | imgdump FILE --probe\n");
        return 2;
    }
    Image im;
    char err[256];
    int rc = argc == 5 ? image_load_reduced(argv[1], 0, atoi(argv[4]), &im, err, sizeof err)
                       : image_load(argv[1], 0, &im, err, sizeof err);
    if (rc) { fprintf(stderr, "imgdump: %s: %s\n", argv[1], err); return 1; }
    int64_t shape[3] = {im.h, im.w, im.c};
    rc = npy_write(argv[2], im.px, "<f4", 3, shape, err, sizeof err);
    image_free(&im);
    if (rc) { fprintf(stderr, "imgdump: %s: %s\n", argv[2], err); return 1; }
    return 0;
}
