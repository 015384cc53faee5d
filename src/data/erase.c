// Random erasing (see data/erase.h): the draws of timm's RandomErasing._erase in their order, on the
// run's random numbers (core/rng.h) instead of Python's and torch's.
#include "data/erase.h"
#include <math.h>
#include <string.h>
#include "core/rng.h"

#define SALT_ERASE 0x72616e6465726173ull   // "randeras": the stream of the erasing draws

static const char *const MODE_NAMES[] = {"pixel", "rand", "const"};

int erase_enabled(const EraseFlags *f) { return f->prob > 0.0f; }

int erase_mode_parse(const char *name, int *mode) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, MODE_NAMES[i])) { *mode = i; return 0; }
    return -1;
}

const char *erase_mode_name(int mode) { return mode >= 0 && mode < 3 ? MODE_NAMES[mode] : "?"; }

int erase_sides(double u_area, double u_aspect, int H, int W, int count, int *h, int *w) {
    const double min_area = 0.02, max_area = 1.0 / 3.0;
    const double log_lo = log(0.3), log_hi = log(1.0 / 0.3);
    // random.uniform(a, b) is a + (b - a) u; the target area is uniform(...) * area / count, left to right
    double target = (min_area + (max_area - min_area) * u_area) * (double)((long)H * W) / count;
    double aspect = exp(log_lo + (log_hi - log_lo) * u_aspect);
    *h = (int)nearbyint(sqrt(target * aspect));   // the default rounding: half to even, as Python's round
    *w = (int)nearbyint(sqrt(target / aspect));
    return *w < W && *h < H;
}

int erase_image(float *img, int H, int W, int C, const EraseFlags *f, uint64_t seed, uint64_t step, uint64_t index,
                EraseBox *boxes) {
    if (!erase_enabled(f)) return 0;
    Rng r;
    rng_derive(&r, seed ^ SALT_ERASE, step, index);
    if (rng_uniform_double(&r) >= f->prob) return 0;
    int count = f->count > 1 ? 1 + (int)rng_below(&r, (uint32_t)f->count) : 1;   // randint(1, N)
    int done = 0;
    for (int k = 0; k < count; k++)
        for (int attempt = 0; attempt < ERASE_ATTEMPTS; attempt++) {
            double ua = rng_uniform_double(&r), ub = rng_uniform_double(&r);
            int h, w;
            if (!erase_sides(ua, ub, H, W, count, &h, &w)) continue;
            int y = (int)rng_below(&r, (uint32_t)(H - h + 1)), x = (int)rng_below(&r, (uint32_t)(W - w + 1));
            float colour[ERASE_CHANNELS_MAX] = {0.0f};   // "rand": one normal value a channel; "const": 0
            if (f->mode == ERASE_RAND)
                for (int c = 0; c < C; c++) colour[c] = rng_normal(&r, 0.0f, 1.0f);
            for (int i = y; i < y + h; i++) {
                float *row = img + ((size_t)i * W + x) * C;
                for (int j = 0; j < w * C; j++)
                    row[j] = f->mode == ERASE_PIXEL ? rng_normal(&r, 0.0f, 1.0f) : colour[j % C];
            }
            if (boxes) boxes[done] = (EraseBox){y, x, h, w};
            done++;
            break;
        }
    return done;
}
