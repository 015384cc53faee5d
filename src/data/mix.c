// Mixup and CutMix (see data/mix.h): the draws of timm's Mixup._params_per_batch and rand_bbox in
// their order, on the run's random numbers (core/rng.h) instead of numpy's.
#include "data/mix.h"
#include <math.h>
#include <string.h>
#include "core/rng.h"

#define SALT_MIX 0x6d69787570637574ull   // "mixupcut": the stream of the mixing draws

int mix_enabled(const MixFlags *f) { return (f->mixup > 0.0f || f->cutmix > 0.0f) && f->prob > 0.0f; }

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

void mix_draw(MixDraw *d, const MixFlags *f, uint64_t seed, uint64_t step, uint64_t group, int H, int W) {
    memset(d, 0, sizeof *d);
    d->lam = 1.0;
    if (!mix_enabled(f)) return;
    Rng r;
    rng_derive(&r, seed ^ SALT_MIX, step, group);
    if (rng_uniform_double(&r) >= f->prob) return;
    double alpha;
    if (f->mixup > 0.0f && f->cutmix > 0.0f) {
        d->cutmix = rng_uniform_double(&r) < f->switch_prob;
        alpha = d->cutmix ? f->cutmix : f->mixup;
    } else {
        d->cutmix = f->cutmix > 0.0f;
        alpha = d->cutmix ? f->cutmix : f->mixup;
    }
    d->lam = rng_beta_sym(&r, alpha);
    if (!d->cutmix) return;
    // rand_bbox: a box of sides int(side * sqrt(1 - lam)) around a uniform centre, clipped to the image;
    // the lam the targets get is the share of the image the box leaves (correct_lam).
    double ratio = sqrt(1.0 - d->lam);
    int ch = (int)(H * ratio), cw = (int)(W * ratio);
    int cy = (int)rng_below(&r, (uint32_t)H), cx = (int)rng_below(&r, (uint32_t)W);
    d->y0 = clampi(cy - ch / 2, 0, H); d->y1 = clampi(cy + ch / 2, 0, H);
    d->x0 = clampi(cx - cw / 2, 0, W); d->x1 = clampi(cx + cw / 2, 0, W);
    d->lam = 1.0 - (double)(d->y1 - d->y0) * (d->x1 - d->x0) / ((double)H * W);
}

void mix_apply(float *images, int n, int H, int W, int C, const MixDraw *d) {
    if (d->lam == 1.0) return;   // no mixing (a CutMix box of no area included), as timm returns early
    size_t img = (size_t)H * W * C;
    if (d->cutmix) {
        size_t run = (size_t)(d->x1 - d->x0) * C;
        for (int i = 0; i < n / 2; i++) {   // the pairs swap their boxes; a middle image keeps its own
            float *a = images + i * img, *b = images + (size_t)(n - 1 - i) * img;
            for (int y = d->y0; y < d->y1; y++)
                for (size_t k = 0, o = ((size_t)y * W + d->x0) * C; k < run; k++) {
                    float t = a[o + k];
                    a[o + k] = b[o + k];
                    b[o + k] = t;
                }
        }
        return;
    }
    float l = (float)d->lam, m = (float)(1.0 - d->lam);
    for (int i = 0; i < (n + 1) / 2; i++) {   // a middle image (n odd) is mixed with itself, as torch does
        float *a = images + i * img, *b = images + (size_t)(n - 1 - i) * img;
        for (size_t k = 0; k < img; k++) {
            float x = a[k], y = b[k];
            a[k] = x * l + y * m;
            b[k] = y * l + x * m;
        }
    }
}

double mix_group(float *images, const int *labels, int *partner, int n, int H, int W, int C, const MixFlags *f,
                 uint64_t seed, uint64_t step, uint64_t group) {
    MixDraw d;
    mix_draw(&d, f, seed, step, group, H, W);
    mix_apply(images, n, H, W, C, &d);
    for (int i = 0; i < n; i++) partner[i] = labels[n - 1 - i];
    return d.lam;
}
