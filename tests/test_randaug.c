// RandAugment (data/randaug.h): every operation against PIL's own result, to the bit
// (tests/fixtures/randaug_pil.safetensors, written by tools/reference_randaug.py); timm's levels at the
// magnitudes MAE uses; the spec's parsing; and the draws of randaug_image.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "fixture_check.h"
#include "data/randaug.h"
#include "io/safetensors.h"

static int op_index(const char *name, int *increasing) {
    for (int inc = 0; inc < 2; inc++)
        for (int op = 0; op < RA_NOPS; op++)
            if (!strcmp(name, randaug_op_name(op, inc))) { *increasing = inc; return op; }
    return -1;
}

// Each case's operation on its source equals PIL's image byte for byte.
static void test_ops_pil(void) {
    int cases, bad = 0, seen[RA_NOPS] = {0};
    StFile *f = fixture_cases("randaug_pil", 230, &cases);
    if (!f) return;
    for (int k = 0; k < cases; k++) {
        char name[48];
        int inc = 0;
        int64_t s[4], s2[4];
        snprintf(name, sizeof name, "%d.src", k);
        const float *src = fixture_image(f, name, s);
        snprintf(name, sizeof name, "%d.out", k);
        const float *want = fixture_image(f, name, s2);
        char key[4][32];
        const char *meta[4];
        const char *keys[] = {"op", "arg", "filter", "fill"};
        for (int j = 0; j < 4; j++) {
            snprintf(key[j], sizeof key[j], "%d.%s", k, keys[j]);
            meta[j] = st_meta(f, key[j]);
        }
        int ok = src && want && s[0] == s2[0] && s[1] == s2[1] && s[2] == s2[2] && meta[0] &&
                 meta[1] && meta[2] && meta[3];
        CHECK(ok, "randaug fixture: case %d incomplete", k);
        if (!ok) continue;
        int op = op_index(meta[0], &inc);
        CHECK(op >= 0, "case %d: operation '%s' unknown", k, meta[0]);
        if (op < 0) continue;
        seen[op]++;
        int h = (int)s[0], w = (int)s[1], c = (int)s[2];
        uint8_t fill[3] = {0, 0, 0};
        sscanf(meta[3], "%hhu,%hhu,%hhu", &fill[0], &fill[1], &fill[2]);
        size_t n = (size_t)w * h * c;
        uint8_t *px = malloc(n), *tmp = malloc(n);
        if (!px || !tmp) { free(px); free(tmp); CHECK(0, "out of memory"); continue; }
        for (size_t i = 0; i < n; i++) px[i] = (uint8_t)src[i];
        randaug_op(px, w, h, c, op, strtod(meta[1], NULL), strcmp(meta[2], "bicubic") ? IMAGE_BILINEAR : IMAGE_BICUBIC,
                   fill, tmp);
        size_t off = 0;
        int worst = 0;
        for (size_t i = 0; i < n; i++)
            if (px[i] != (uint8_t)want[i]) { off++; worst = abs(px[i] - (int)want[i]) > worst ? abs(px[i] - (int)want[i]) : worst; }
        if (off && bad++ < 8)
            fprintf(stderr, "  case %d %s(%s) %s %dx%dx%d: %zu of %zu values off PIL, by up to %d\n", k, meta[0], meta[1],
                    meta[2], w, h, c, off, n, worst);
        CHECK(off == 0, "case %d: %s(%s) differs from PIL", k, meta[0], meta[1]);
        free(px);
        free(tmp);
    }
    for (int op = 0; op < RA_NOPS; op++) CHECK(seen[op] >= 8, "%s: %d cases", randaug_op_name(op, 0), seen[op]);
    st_close(f);
}

// timm's LEVEL_TO_ARG at MAE's magnitude 9, at 0 and at 10, with and without its sign.
static void test_levels(void) {
    struct { int op, inc; double m; int neg; double want; } t[] = {
        {RA_ROTATE, 1, 9, 0, 27.0}, {RA_ROTATE, 1, 9, 1, -27.0}, {RA_ROTATE, 0, 10, 0, 30.0},
        {RA_POSTERIZE, 1, 9, 0, 1}, {RA_POSTERIZE, 1, 0, 0, 4}, {RA_POSTERIZE, 1, 10, 0, 0}, {RA_POSTERIZE, 0, 9, 0, 3},
        {RA_SOLARIZE, 1, 9, 0, 26}, {RA_SOLARIZE, 1, 0, 0, 256}, {RA_SOLARIZE, 0, 9, 0, 230}, {RA_SOLARIZE, 1, 10, 0, 0},
        {RA_SOLARIZE_ADD, 1, 9, 0, 99}, {RA_SOLARIZE_ADD, 0, 10, 1, 110},
        {RA_COLOR, 1, 9, 0, 1.81}, {RA_COLOR, 1, 9, 1, 0.18999999999999995}, {RA_CONTRAST, 1, 10, 1, 0.1},
        {RA_BRIGHTNESS, 0, 9, 0, 1.72}, {RA_SHARPNESS, 0, 0, 1, 0.1}, {RA_SHARPNESS, 1, 5, 1, 0.55},
        {RA_SHEAR_X, 1, 9, 0, 0.27}, {RA_SHEAR_Y, 0, 9, 1, -0.27}, {RA_TRANSLATE_X, 1, 9, 1, -0.405},
        {RA_TRANSLATE_Y, 1, 10, 0, 0.45}, {RA_AUTOCONTRAST, 1, 9, 1, 0.0},
        // past 10 (mmax): timm's levels run on, clipped where its functions clip them
        {RA_ROTATE, 1, 15, 1, -45.0}, {RA_POSTERIZE, 1, 15, 0, -2}, {RA_POSTERIZE, 1, 100, 0, -36}, {RA_SOLARIZE, 1, 15, 0, 0}, {RA_SOLARIZE, 0, 15, 0, 256},
        {RA_SOLARIZE_ADD, 1, 15, 0, 128}, {RA_COLOR, 1, 15, 1, 0.1}, {RA_CONTRAST, 0, 15, 0, 2.8},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        double got = randaug_level(t[i].op, t[i].inc, t[i].m, t[i].neg);
        CHECK(fabs(got - t[i].want) <= 1e-12, "%s at %g%s: %.17g, timm's %.17g", randaug_op_name(t[i].op, t[i].inc),
              t[i].m, t[i].neg ? " negated" : "", got, t[i].want);
    }
    CHECK(randaug_signed(RA_COLOR, 1) && !randaug_signed(RA_COLOR, 0) && randaug_signed(RA_SHEAR_X, 0) &&
          !randaug_signed(RA_SOLARIZE, 1), "the signed operations are timm's");
}

static void test_parse(void) {
    RandAugSpec s;
    char why[256], text[RANDAUG_TEXT_MAX];
    CHECK(randaug_parse("rand-m9-mstd0.5-inc1", &s, why, sizeof why) == 0, "MAE's spec: %s", why);
    CHECK(s.layers == 2 && s.magnitude == 9.0 && s.mstd == 0.5 && s.increasing == 1 && s.prob == 0.5 && s.mmax == 10,
          "MAE's spec: n %d m %g mstd %g inc %d p %g", s.layers, s.magnitude, s.mstd, s.increasing, s.prob);
    randaug_text(&s, text, sizeof text);
    CHECK(!strcmp(text, "rand-m9-n2-mstd0.5-inc1"), "canonical text: %s", text);
    RandAugSpec back;
    CHECK(randaug_parse(text, &back, why, sizeof why) == 0 && back.layers == s.layers &&
          back.magnitude == s.magnitude && back.mstd == s.mstd && back.prob == s.prob && back.increasing == s.increasing && back.mmax == s.mmax,
          "the text reads back");
    CHECK(randaug_parse("rand-n3-p0.7-m7.5", &s, why, sizeof why) == 0 && s.layers == 3 && s.prob == 0.7 &&
          s.magnitude == 7.5 && s.mstd == 0 && !s.increasing, "sections in any order, defaults");
    randaug_text(&s, text, sizeof text);
    CHECK(!strcmp(text, "rand-m7.5-n3-mstd0-inc0-p0.7"), "canonical text with p: %s", text);
    CHECK(randaug_parse("rand", &s, why, sizeof why) == 0 && s.layers == 2 && s.magnitude == 10, "timm's defaults");
    CHECK(randaug_parse("rand-m15-mmax20-mstd101", &s, why, sizeof why) == 0 && s.magnitude == 15 && s.mmax == 20 &&
          s.mstd == 101, "mmax and a uniform mstd: %s", why);
    randaug_text(&s, text, sizeof text);
    CHECK(!strcmp(text, "rand-m15-n2-mstd101-inc0-mmax20"), "canonical text with mmax: %s", text);
    RandAugSpec wide = {16, 99.123456789012345, 123456.78901234567, 0.123456789012345, 1, 99.98765432109876};
    randaug_text(&wide, text, sizeof text);
    CHECK(randaug_parse(text, &back, why, sizeof why) == 0 && back.magnitude == 99.123456789012345 &&
          back.mmax == 99.98765432109876 && back.layers == 16, "every section at full length reads back: %s (%s)", text, why);
    CHECK(randaug_parse("rand-m11", &s, why, sizeof why) == -1 &&
          !strcmp(why, "magnitude 11 is above its upper clip 10 (give mmax11 to use it)"), "m above mmax: %s", why);
    CHECK(randaug_parse("rand-mmax5", &s, why, sizeof why) == -1, "the default magnitude 10 above mmax5");
    CHECK(randaug_parse("rand-m5.-mstd1e2", &s, why, sizeof why) == 0 && s.magnitude == 5 && s.mstd == 100,
          "a point and an exponent, as Python's float() reads them: %s", why);
    CHECK(randaug_parse("none", &s, why, sizeof why) == 0 && s.layers == 0, "none is off");
    randaug_text(&s, text, sizeof text);
    CHECK(!strcmp(text, "none"), "off's text: %s", text);
    const char *badspec[] = {"", "rand-", "rand--m9", "rand-m11", "rand-m-1", "rand-mx", "rand-n0", "rand-n17", "rand-n2.5",
                             "rand-inc2", "rand-p1.5", "rand-w0", "rand-mstdinf", "rand-m9x", "augmix-m9", "randm9",
                             "rand-mmax101", "rand-m nan", "rand-m101-mmax101", "rand-mstd2e6",
                             // hexadecimal, refused as in every flag (strtod read rand-m0x5 as 5)
                             "rand-m0x5", "rand-m0X1p3", "rand-mstd0x10", "rand-n0x2", "rand-mmax0x10", "rand-p0x1"};
    for (size_t i = 0; i < sizeof badspec / sizeof badspec[0]; i++) {
        why[0] = 0;
        CHECK(randaug_parse(badspec[i], &s, why, sizeof why) == -1 && why[0], "'%s' refused with a reason", badspec[i]);
    }
}

// randaug_image draws timm's way: layers off leave the view; with p 1 and mstd 0 each layer is
// randaug_op at the level of the magnitude, in the order drawn; over many images every operation is
// drawn about equally, each applied with probability p; the same stream gives the same image.
static void test_image_draws(void) {
    enum { W = 11, H = 7, C = 3 };
    float img[W * H * C], orig[W * H * C];
    for (int i = 0; i < W * H * C; i++) orig[i] = (float)((i * 37 + 11) % 256) / 255.0f;
    uint8_t fill[3] = {124, 116, 104};
    RandAugSpec off = RANDAUG_OFF, s = {2, 9.0, 0.0, 1.0, 1, 10.0};
    Rng r;
    rng_seed(&r, 5);
    memcpy(img, orig, sizeof img);
    CHECK(randaug_image(img, W, H, C, &off, IMAGE_BICUBIC, fill, &r, NULL) == 0 && !memcmp(img, orig, sizeof img),
          "off: the view as it was");
    for (int trial = 0; trial < 40; trial++) {
        Rng a, b;
        rng_seed(&a, 100 + trial);
        b = a;
        memcpy(img, orig, sizeof img);
        int ops[2];
        CHECK(randaug_image(img, W, H, C, &s, IMAGE_BICUBIC, fill, &a, ops) == 0, "randaug_image");
        uint8_t px[W * H * C], tmp[W * H * C];
        for (int i = 0; i < W * H * C; i++) px[i] = (uint8_t)lrintf(orig[i] * 255.0f);
        int chosen[2] = {(int)rng_below(&b, RA_NOPS), (int)rng_below(&b, RA_NOPS)};
        for (int l = 0; l < 2; l++) {
            // p 1: no draw for the probability (timm's prob < 1.0 test)
            int neg = randaug_signed(chosen[l], 1) && rng_uniform_double(&b) > 0.5;
            randaug_op(px, W, H, C, chosen[l], randaug_level(chosen[l], 1, 9.0, neg), IMAGE_BICUBIC, fill, tmp);
        }
        int same = ops[0] == chosen[0] && ops[1] == chosen[1];
        for (int i = 0; i < W * H * C; i++) same &= img[i] == (float)px[i] / 255.0f;
        CHECK(same, "trial %d: %s then %s as randaug_op gives them", trial, randaug_op_name(chosen[0], 1),
              randaug_op_name(chosen[1], 1));
    }
    // the draws' frequencies: 15 operations uniform, each applied with p 0.3
    RandAugSpec q = {2, 9.0, 0.5, 0.3, 1, 10.0};
    long count[RA_NOPS] = {0}, applied = 0, total = 0;
    rng_seed(&r, 77);
    for (int t = 0; t < 3000; t++) {
        Rng c;
        rng_derive(&c, 3, 0, (uint64_t)t);
        Rng d = c;
        int ops[2];
        float one[2 * 2 * 1] = {0.1f, 0.5f, 0.7f, 0.9f};
        randaug_image(one, 2, 2, 1, &q, IMAGE_BILINEAR, fill, &c, ops);
        for (int l = 0; l < 2; l++) {
            count[rng_below(&d, RA_NOPS)]++;
            total++;
            applied += ops[l] >= 0;
        }
    }
    for (int op = 0; op < RA_NOPS; op++)
        CHECK(count[op] > 6000 / 15 * 0.75 && count[op] < 6000 / 15 * 1.25, "%s drawn %ld times of 6000",
              randaug_op_name(op, 1), count[op]);
    CHECK(fabs((double)applied / total - 0.3) < 0.03, "applied %ld of %ld (p 0.3)", applied, total);
}

// randaug_magnitude: N(m, mstd) clipped to [0, mmax]; uniform in [0, m] above mstd 100; m itself at 0.
static void test_magnitude(void) {
    struct { RandAugSpec s; double mean, sd, at_top, top; } t[] = {
        {{2, 9.0, 0.5, 0.5, 1, 10.0}, 8.9958, 0.4814, 0.0228, 10.0},   // MAE's: 2.3% clipped at 10
        {{2, 9.0, 101.0, 0.5, 1, 10.0}, 4.5, 2.598, 0.0, 9.0},          // uniform in [0, 9]
        {{2, 14.0, 0.5, 0.5, 1, 15.0}, 13.9958, 0.4814, 0.0228, 15.0},  // mmax 15
        {{2, 7.0, 0.0, 0.5, 1, 10.0}, 7.0, 0.0, 0.0, 7.0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        Rng r;
        rng_seed(&r, 31 + i);
        double sum = 0, sq = 0, mx = 0;
        long top = 0, N = 200000;
        for (long k = 0; k < N; k++) {
            double m = randaug_magnitude(&t[i].s, &r);
            sum += m; sq += m * m; mx = fmax(mx, m);
            top += m == t[i].s.mmax;
        }
        double mean = sum / N, sd = sqrt(fmax(0, sq / N - mean * mean));
        CHECK(fabs(mean - t[i].mean) < 0.01 && fabs(sd - t[i].sd) < 0.01 && fabs((double)top / N - t[i].at_top) < 0.002 &&
              mx <= t[i].top, "m %g mstd %g mmax %g: mean %.4f sd %.4f, %.4f at the clip, max %g (want %.4f, %.4f, %.4f, <= %g)",
              t[i].s.magnitude, t[i].s.mstd, t[i].s.mmax, mean, sd, (double)top / N, mx, t[i].mean, t[i].sd, t[i].at_top,
              t[i].top);
    }
}

// A value that is not on an 8-bit level (a grey view converted from colour) is rounded as
// image_quantize8 rounds; Invert then gives 255 minus it.
static void test_rounding(void) {
    float v[3] = {0.5f, 100.4f / 255.0f, 1.0f};
    RandAugSpec s = {1, 0.0, 0.0, 1.0, 0, 10.0};
    uint8_t fill[1] = {0};
    for (int seed = 0; seed < 200; seed++) {
        Rng r;
        rng_seed(&r, (uint64_t)seed);
        Rng d = r;
        if (rng_below(&d, RA_NOPS) != RA_INVERT) continue;
        float x[3] = {v[0], v[1], v[2]};
        randaug_image(x, 3, 1, 1, &s, IMAGE_BILINEAR, fill, &r, NULL);
        CHECK(x[0] == 127.0f / 255.0f && x[1] == 155.0f / 255.0f && x[2] == 0.0f, "invert of 127.5, 100.4, 255: %g %g %g",
              x[0] * 255, x[1] * 255, x[2] * 255);
        return;
    }
    CHECK(0, "no seed below 200 draws Invert");
}

// timm's img_mean: round(255 x mean), half to even, at most 255.
static void test_fill(void) {
    const float imagenet[3] = {0.485f, 0.456f, 0.406f}, edge[3] = {0.5f, 1.5f, 0.0f};
    uint8_t f[3];
    randaug_fill(imagenet, 3, f);
    CHECK(f[0] == 124 && f[1] == 116 && f[2] == 104, "ImageNet's mean: (%d, %d, %d), timm's (124, 116, 104)", f[0], f[1],
          f[2]);
    randaug_fill(edge, 3, f);
    CHECK(f[0] == 128 && f[1] == 255 && f[2] == 0, "127.5 to even, above 1 clipped, 0: (%d, %d, %d)", f[0], f[1], f[2]);
}

int main(void) {
    test_ops_pil();
    test_fill();
    test_levels();
    test_parse();
    test_image_draws();
    test_magnitude();
    test_rounding();
    return check_done();
}
