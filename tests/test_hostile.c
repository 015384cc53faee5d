// Hostile inputs found by fuzzing and review (see tests/fuzz/regressions/ for the raw files, replayed
// by test_fuzz_*): each case here pins the fixed behaviour with an exact expectation.
#include <stdint.h>
#include "check.h"
#include "checkpoint.h"
#include "image.h"
#include "rng.h"

// image_eval_view resizes only the cropped window: bitwise the values of resize-all-then-crop.
static void test_eval_view_window(void) {
    Rng rng;
    rng_seed(&rng, 11);
    int bad = 0, cases = 0;
    for (int it = 0; it < 300; it++) {
        int w = 1 + (int)rng_below(&rng, 40), h = 1 + (int)rng_below(&rng, 40);
        int size = 1 + (int)rng_below(&rng, 24), c = rng_below(&rng, 2) ? 3 : 1;
        Image im = {w, h, c, malloc(sizeof(float) * (size_t)w * h * c)};
        for (int i = 0; i < w * h * c; i++) im.px[i] = (float)rng_below(&rng, 256) / 255.0f;
        int nw = w <= h ? size : (int)((long)size * w / h), nh = w <= h ? (int)((long)size * h / w) : size;
        float *full = malloc(sizeof(float) * (size_t)nw * nh * c), *want = malloc(sizeof(float) * size * size * c);
        float *got = malloc(sizeof(float) * size * size * c);
        if (w == size && h == size) memcpy(full, im.px, sizeof(float) * (size_t)w * h * c);
        else image_resize_bilinear(im.px, w, h, c, full, nw, nh);
        Image r = {nw, nh, c, full};
        image_crop(&r, (int)nearbyint((nw - size) / 2.0), (int)nearbyint((nh - size) / 2.0), size, size, want);
        image_eval_view(&im, size, c, got);
        if (memcmp(want, got, sizeof(float) * size * size * c)) {
            bad++;
            fprintf(stderr, "eval view %dx%dx%d -> %d differs from resize+crop\n", w, h, c, size);
        }
        cases++;
        free(full); free(want); free(got); free(im.px);
    }
    CHECK(bad == 0, "%d of %d eval views differ from resize-then-crop", bad, cases);
}

// A 1 x 3,000,000 image (and its transpose) at 224: the whole-image resize would need 224 x 672M
// floats (600 GB; the old code fell back to a black output when malloc failed). The crop is exact.
static void test_eval_view_extreme_aspect(void) {
    const int len = 3000000, size = 224;
    for (int t = 0; t < 2; t++) {
        Image im = {t ? len : 1, t ? 1 : len, 1, malloc(sizeof(float) * len)};
        for (int i = 0; i < len; i++) im.px[i] = 128.0f / 255.0f;
        float *out = malloc(sizeof(float) * size * size * 3);
        image_eval_view(&im, size, 3, out);
        int flat = 0;
        for (int i = 0; i < size * size * 3; i++) flat += fabsf(out[i] - 128.0f / 255.0f) < 1e-6f;
        CHECK(flat == size * size * 3, "%s grey image: %d of %d output values are its grey level",
              t ? "wide" : "tall", flat, size * size * 3);
        free(out);
        free(im.px);
    }
}

int main(void) {
    test_eval_view_window();
    test_eval_view_extreme_aspect();
    return check_done();
}
