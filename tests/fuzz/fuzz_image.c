// libFuzzer target: image decoding (the PNG, JPEG and WebP paths of image_load_mem) and the
// evaluation-view geometry on whatever decodes; then the same bytes as a file through the two readers
// the training data pipeline uses (docs/data.md): image_probe (the header alone, as the scan reads it)
// and image_load_reduced (a JPEG at a reduced DCT scale, as the working images decode). The first byte
// picks the view size and channel count (and the reduced decode's shorter side); the rest is the file.
// And image_load_working, the working image a run trains on: for a PNG or WebP, whose rows it resizes
// as they come (docs/data.md, "Big photos on huge pages"), it must be the full decode's image_fit to the
// bit; for a JPEG (decoded at a DCT scale) the same channels and values in range.
// The pixel limit is lowered so that a fuzzed header cannot ask for gigabytes.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "data/image.h"

#define FUZZ_MAX_PIXELS (1L << 20)

static int in_unit_range(const float *px, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(px[i] >= -1e-5f && px[i] <= 1.0f + 1e-5f)) return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int view = 1 + (data[0] & 15);           // 1..16
    int channels = (data[0] & 16) ? 3 : 1;
    Image im;
    char err[256];
    int full = image_load_mem(data + 1, size - 1, FUZZ_MAX_PIXELS, &im, err, sizeof err) == 0;
    if (full) {
        float *out = malloc(sizeof(float) * (size_t)view * view * channels);
        if (out) {
            image_eval_view(&im, view, VIEW_WHOLE, channels, out);
            // Values stay finite and in [0, 1]: any garbage would show here.
            if (!in_unit_range(out, (size_t)view * view * channels)) abort();
            // timm's crop fraction (the bilinear triangle keeps values in range; bicubic rings)
            image_eval_view(&im, view, (ViewSpec){0.875, IMAGE_BILINEAR}, channels, out);
            if (!in_unit_range(out, (size_t)view * view * channels)) abort();
            free(out);
        }
    }
    // The same bytes as a file (an empty one is refused before any decoder sees it).
    int fd = memfd_create("fuzz", 0);
    if (fd >= 0 && size > 1 && write(fd, data + 1, size - 1) == (ssize_t)(size - 1)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        // The probe gives what a decode gives (data/image.h): wherever the pixels decode, the same
        // size after orientation and the same channels.
        int w = 0, h = 0, c = 0;
        int probed = image_probe(path, FUZZ_MAX_PIXELS, &w, &h, &c, err, sizeof err) == 0;
        if (full && (!probed || w != im.w || h != im.h || c != im.c)) abort();
        if (probed && (w < 1 || h < 1 || (c != 1 && c != 3))) abort();
        Image red;
        if (image_load_reduced(path, FUZZ_MAX_PIXELS, view, &red, err, sizeof err) == 0) {
            if (!in_unit_range(red.px, (size_t)red.w * red.h * red.c)) abort();
            // Never larger than the full decode, the same channels, and a shorter side of at least
            // the one asked for (or the whole image's).
            if (full) {
                int rs = red.w < red.h ? red.w : red.h, fs = im.w < im.h ? im.w : im.h;
                if (red.c != im.c || (long)red.w * red.h > (long)im.w * im.h || rs < (view < fs ? view : fs)) abort();
            }
            image_free(&red);
        }
        Image wk;
        if (image_load_working(path, FUZZ_MAX_PIXELS, view, &wk, err, sizeof err) == 0) {
            if (!in_unit_range(wk.px, (size_t)wk.w * wk.h * wk.c)) abort();
            int lossless = size > 4 && (data[1] == 0x89 || !memcmp(data + 1, "RIFF", 4));   // PNG or WebP
            if (full && wk.c != im.c) abort();
            if (full && lossless) {
                size_t n = (size_t)im.w * im.h * im.c;
                Image fit = {im.w, im.h, im.c, malloc(sizeof(float) * (n ? n : 1))};
                if (fit.px) {
                    memcpy(fit.px, im.px, sizeof(float) * n);
                    if (image_fit(&fit, view) == 0 &&
                        (fit.w != wk.w || fit.h != wk.h || memcmp(fit.px, wk.px, sizeof(float) * (size_t)wk.w * wk.h * wk.c)))
                        abort();
                    image_free(&fit);
                }
            }
            image_free(&wk);
        }
    }
    if (fd >= 0) close(fd);
    if (full) image_free(&im);
    return 0;
}
