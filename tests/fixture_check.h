// Comparing with a reference fixture (safetensors written by tools/reference*.py): model tensors for
// tests/test_parity.c and tests/test_classifier.c, images for tests/test_image.c and tests/test_randaug.c.
// Include after check.h.
#ifndef VITMAE_FIXTURE_CHECK_H
#define VITMAE_FIXTURE_CHECK_H
#include "check.h"
#include "core/model.h"
#include "io/checkpoint.h"

// tests/fixtures/NAME.safetensors (under $VITMAE_ROOT) opened, and its "cases" count (at least
// min_cases, checked) into *cases. NULL (a failed check said why) when it does not open.
static inline StFile *fixture_cases(const char *name, int min_cases, int *cases) {
    const char *root = getenv("VITMAE_ROOT");
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s.safetensors", root && *root ? root : ".", name);
    StFile *f = st_open(path, err, sizeof err);
    CHECK(f != NULL, "open %s: %s", path, err);
    const char *n = f ? st_meta(f, "cases") : NULL;
    *cases = n ? atoi(n) : 0;
    if (f) CHECK(*cases >= min_cases, "%s: %d cases", name, *cases);
    return f;
}

// The fixture image NAME, [h, w, c] into shape; NULL (a failed check) when it is missing or not 3-D.
static inline const float *fixture_image(const StFile *fx, const char *name, int64_t shape[4]) {
    int nd;
    const float *p = st_get(fx, name, &nd, shape);
    CHECK(p && nd == 3, "fixture: %s [h, w, c]", name);
    return p && nd == 3 ? p : NULL;
}

// The largest |got - want| of n values.
static inline double fixture_gap(const float *got, const float *want, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    return worst;
}

// The fixture tensor NAME, which must hold numel values; NULL (a failed check) otherwise.
static inline const float *fixture_need(const StFile *fx, const char *name, size_t numel) {
    int nd; int64_t sh[4];
    const float *p = st_get(fx, name, &nd, sh);
    if (!p) { CHECK(0, "fixture has no tensor %s", name); return NULL; }
    size_t n = 1;
    for (int i = 0; i < nd; i++) n *= (size_t)sh[i];
    if (n != numel) { CHECK(0, "%s: %zu values, expected %zu", name, n, numel); return NULL; }
    return p;
}

// One check: |got - ref| <= atol + rtol |ref| element-wise against the fixture tensor NAME. Returns the
// largest |d| / tolerance (INFINITY for a NaN; 0 when the tensor is missing).
static inline double fixture_compare(const StFile *fx, const char *name, const float *got, size_t numel,
                                     double atol, double rtol) {
    const float *want = fixture_need(fx, name, numel);
    if (!want) return 0.0;
    size_t bad = 0, first = 0;
    double w = 0.0;
    for (size_t i = 0; i < numel; i++) {
        double d = fabs((double)got[i] - want[i]), tol = atol + rtol * fabs(want[i]);
        if (!(d <= tol)) { if (!bad) first = i; bad++; }
        if (d / tol > w || d != d) w = d != d ? INFINITY : d / tol;
    }
    CHECK(bad == 0, "%s: %zu of %zu values off, first [%zu] got %.9g want %.9g", name, bad, numel, first,
          got[first], want[first]);
    return w;
}

// The weights after 3 AdamW steps (fixture "step3.<name>"). AdamW divides by sqrt(v), so a weight whose
// reference gradient is at round-off level (0 < |g| < 1e-6, and the key slice of attn.qkv.bias, whose
// true gradient is 0) takes a step of up to lr either way in both programs: those are held to
// |w3 - w0| <= 1.01 sum(lr) scale (1 + wd |w0|) (scale[k], or 1 when scale is NULL; frozen tensors to
// the same bound), every other weight to atol 1e-5 + rtol 1e-4 through compare. Returns how many
// weights were held to the bound. prefix "step3." the weights; "ema3." their moving average after the
// steps (finetune --model-ema), a mean of weights each within the bound, so held to it alike.
static inline size_t fixture_check_step3(const StFile *fx, const char *prefix, const MaeTensor *t, int nt,
                                         const float *params, const float *scale, double lr_sum, double wd,
                                         void (*compare)(const char *, const float *, size_t, double, double)) {
    char name[128];
    size_t n_bound = 0;
    for (int k = 0; k < nt; k++) {
        snprintf(name, sizeof name, "%s%s", prefix, t[k].name);
        const float *want = fixture_need(fx, name, t[k].numel), *w0 = fixture_need(fx, t[k].name, t[k].numel);
        snprintf(name, sizeof name, "grad.%s", t[k].name);
        const float *g0 = fixture_need(fx, name, t[k].numel);
        if (!want || !w0 || !g0) continue;
        const float *got = params + t[k].offset;
        float *tight = malloc(sizeof(float) * t[k].numel);
        size_t bad = 0, len = strlen(t[k].name), sl = strlen("attn.qkv.bias");
        int is_qkv_bias = len > sl && !strcmp(t[k].name + len - sl, "attn.qkv.bias");
        for (size_t i = 0; i < t[k].numel; i++) {
            tight[i] = got[i];
            int key_bias = is_qkv_bias && i >= t[k].numel / 3 && i < 2 * t[k].numel / 3;
            if (!t[k].trainable || (!key_bias && (g0[i] == 0.0f || fabsf(g0[i]) >= 1e-6f))) continue;
            n_bound++;
            tight[i] = want[i];   // excluded from the tight comparison below
            double bound = scale ? 1.01 * lr_sum * scale[k] * (1.0 + wd * fabs(w0[i]))
                                 : 1.01 * lr_sum * (1.0 + wd * fabs(w0[i]));
            bad += !(fabs((double)got[i] - w0[i]) <= bound);
        }
        CHECK(bad == 0, "%s%s: %zu round-off-gradient values moved more than the lr bound", prefix, t[k].name, bad);
        snprintf(name, sizeof name, "%s%s", prefix, t[k].name);
        compare(name, tight, t[k].numel, 1e-5, 1e-4);
        free(tight);
    }
    return n_bound;
}
#endif
