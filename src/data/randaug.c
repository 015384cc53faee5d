// RandAugment (see data/randaug.h): timm's draws in their order on the run's random numbers (core/rng.h),
// and each operation as PIL 9.4 computes it on 8-bit images, to the bit (tests/test_randaug.c against
// tools/reference_randaug.py's fixture).
#include "data/randaug.h"
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const NAMES[RA_NOPS] = {
    "AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "Solarize", "SolarizeAdd", "Color",
    "Contrast", "Brightness", "Sharpness", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"};
static const char *const INC_NAMES[RA_NOPS] = {
    "AutoContrast", "Equalize", "Invert", "Rotate", "PosterizeIncreasing", "SolarizeIncreasing", "SolarizeAdd",
    "ColorIncreasing", "ContrastIncreasing", "BrightnessIncreasing", "SharpnessIncreasing", "ShearX", "ShearY",
    "TranslateXRel", "TranslateYRel"};

const char *randaug_op_name(int op, int increasing) {
    return op < 0 || op >= RA_NOPS ? "?" : increasing ? INC_NAMES[op] : NAMES[op];
}

// ---------------------------------------------------------------------------------------------
// The spec

// A decimal number in [lo, hi] (digits, a point, an exponent: as Python's float() reads it, which timm
// parses the sections with) -> 0 and *v. Hexadecimal is refused, as in every flag (strtod took
// rand-m0x5 as magnitude 5; docs/interface.md, section 1).
static int parse_number(const char *s, double lo, double hi, double *v) {
    char *end;
    if (!isdigit((unsigned char)*s) || strspn(s, "0123456789.eE+-") != strlen(s)) return -1;
    *v = strtod(s, &end);
    return *end || !isfinite(*v) || *v < lo || *v > hi ? -1 : 0;
}

int randaug_parse(const char *text, RandAugSpec *out, char *why, size_t whylen) {
    if (!strcmp(text, "none")) { *out = RANDAUG_OFF; return 0; }
    RandAugSpec s = {2, RANDAUG_LEVEL_MAX, 0.0, 0.5, 0, RANDAUG_LEVEL_MAX};
    char buf[256];
    if (strlen(text) >= sizeof buf) { snprintf(why, whylen, "too long"); return -1; }
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL, *sec = strtok_r(buf, "-", &save);
    if (!sec || strcmp(sec, "rand") || text[strlen(text) - 1] == '-' || strstr(text, "--")) {
        snprintf(why, whylen, "not a RandAugment spec: 'none', or 'rand' and dash-separated sections m<M>, n<N>, "
                 "mstd<S>, inc<0|1>, p<P>, mmax<X> (MAE's rand-m9-mstd0.5-inc1)");
        return -1;
    }
    while ((sec = strtok_r(NULL, "-", &save))) {
        size_t k = 0;
        while (sec[k] && isalpha((unsigned char)sec[k])) k++;
        const char *val = sec + k;
        double v;
        if (k == 1 && sec[0] == 'm') {
            if (parse_number(val, 0, RANDAUG_MMAX_MAX, &v)) goto bad;
            s.magnitude = v;
        } else if (k == 1 && sec[0] == 'n') {
            if (parse_number(val, 1, RANDAUG_LAYERS_MAX, &v) || v != floor(v)) goto bad;
            s.layers = (int)v;
        } else if (k == 4 && !strncmp(sec, "mstd", 4)) {
            if (parse_number(val, 0, 1e6, &v)) goto bad;
            s.mstd = v;
        } else if (k == 3 && !strncmp(sec, "inc", 3)) {
            if (strcmp(val, "0") && strcmp(val, "1")) goto bad;
            s.increasing = val[0] == '1';
        } else if (k == 1 && sec[0] == 'p') {
            if (parse_number(val, 0, 1, &v)) goto bad;
            s.prob = v;
        } else if (k == 4 && !strncmp(sec, "mmax", 4)) {
            if (parse_number(val, 0, RANDAUG_MMAX_MAX, &v)) goto bad;
            s.mmax = v;
        } else {
            snprintf(why, whylen, "'%s': not a section vitmae takes (m<M>, n<N>, mstd<S>, inc<0|1>, p<P>, mmax<X>)", sec);
            return -1;
        }
        continue;
    bad:
        snprintf(why, whylen, "'%s': %s", sec,
                 sec[0] == 'm' && k == 1 ? "the magnitude is a number from 0 to 100"
                 : sec[0] == 'n' ? "the operations an image takes are a whole number from 1 to 16"
                 : k == 4 && sec[1] == 'm' ? "the magnitude's upper clip is a number from 0 to 100"
                 : sec[0] == 'm' ? "the magnitude's standard deviation is a number from 0 to 1e6 (above 100: uniform)"
                 : sec[0] == 'i' ? "inc is 0 or 1"
                                 : "the chance of each operation is a number from 0 to 1");
        return -1;
    }
    if (s.magnitude > s.mmax) {   // timm would clip it to mmax: a magnitude that cannot be meant
        snprintf(why, whylen, "magnitude %.15g is above its upper clip %.15g (give mmax%.15g to use it)", s.magnitude,
                 s.mmax, s.magnitude);
        return -1;
    }
    *out = s;
    return 0;
}

// v as the shortest of 15 or 17 significant digits that reads back as v (a decimal as written: 0.5, 9).
static const char *number(char *buf, size_t n, double v) {
    snprintf(buf, n, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, n, "%.17g", v);
    return buf;
}

void randaug_text(const RandAugSpec *s, char *buf, size_t n) {
    if (s->layers <= 0) { snprintf(buf, n, "none"); return; }
    char p[40] = "", mmax[40] = "", m[32], mstd[32], v[32];
    if (s->prob != 0.5) snprintf(p, sizeof p, "-p%s", number(v, sizeof v, s->prob));
    if (s->mmax != RANDAUG_LEVEL_MAX) snprintf(mmax, sizeof mmax, "-mmax%s", number(v, sizeof v, s->mmax));
    snprintf(buf, n, "rand-m%s-n%d-mstd%s-inc%d%s%s", number(m, sizeof m, s->magnitude), s->layers,
             number(mstd, sizeof mstd, s->mstd), s->increasing, p, mmax);
}

void randaug_fill(const float *mean, int c, uint8_t *fill) {
    for (int k = 0; k < c; k++) {
        double v = nearbyint(255.0 * (double)mean[k]);   // Python's round: half to even
        fill[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

// ---------------------------------------------------------------------------------------------
// Levels: timm's LEVEL_TO_ARG, in double as Python computes them

int randaug_signed(int op, int increasing) {
    switch (op) {
    case RA_ROTATE: case RA_SHEAR_X: case RA_SHEAR_Y: case RA_TRANSLATE_X: case RA_TRANSLATE_Y: return 1;
    case RA_COLOR: case RA_CONTRAST: case RA_BRIGHTNESS: case RA_SHARPNESS: return increasing;
    default: return 0;
    }
}

double randaug_level(int op, int increasing, double m, int negate) {
    double f = m / RANDAUG_LEVEL_MAX, sign = negate && randaug_signed(op, increasing) ? -1.0 : 1.0;
    switch (op) {
    case RA_ROTATE: return sign * (f * 30.0);
    case RA_POSTERIZE: return increasing ? 4 - (int)(f * 4) : (int)(f * 4);
    case RA_SOLARIZE: { int t = (int)(f * 256); if (t > 256) t = 256; return increasing ? 256 - t : t; }
    case RA_SOLARIZE_ADD: { int a = (int)(f * 110); return a > 128 ? 128 : a; }
    case RA_COLOR: case RA_CONTRAST: case RA_BRIGHTNESS: case RA_SHARPNESS:
        if (!increasing) return f * 1.8 + 0.1;
        return fmax(0.1, 1.0 + sign * (f * 0.9));
    case RA_SHEAR_X: case RA_SHEAR_Y: return sign * (f * 0.3);
    case RA_TRANSLATE_X: case RA_TRANSLATE_Y: return sign * (f * 0.45);
    default: return 0.0;
    }
}

// ---------------------------------------------------------------------------------------------
// The operations, as PIL 9.4's C code computes them

// Each channel through a table made from its own histogram by make(h, lut): ImageOps' histogram
// operations.
static void histogram_luts(uint8_t *px, size_t n, int c, void (*make)(const long h[256], uint8_t lut[256])) {
    long h[3][256];
    uint8_t lut[3][256];
    memset(h, 0, sizeof h);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < c; k++) h[k][px[i * c + k]]++;
    for (int k = 0; k < c; k++) make(h[k], lut[k]);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < c; k++) px[i * c + k] = lut[k][px[i * c + k]];
}

// ImageOps.autocontrast(img) (cutoff 0): the channel's lowest and highest level stretched to 0 and 255.
static void autocontrast_lut(const long h[256], uint8_t lut[256]) {
    int lo = 0, hi = 255;
    while (lo < 255 && !h[lo]) lo++;
    while (hi > 0 && !h[hi]) hi--;
    for (int i = 0; i < 256; i++) {
        if (hi <= lo) { lut[i] = (uint8_t)i; continue; }
        double scale = 255.0 / (hi - lo), offset = -lo * scale;
        double v = i * scale + offset;
        long x = (long)v;   // Python's int(): toward zero
        lut[i] = (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x);
    }
}

// ImageOps.equalize(img): the channel's cumulative histogram, in steps of (count - the last level's) / 255.
static void equalize_lut(const long h[256], uint8_t lut[256]) {
    long total = 0, last = 0;
    int used = 0;
    for (int i = 0; i < 256; i++)
        if (h[i]) { total += h[i]; last = h[i]; used++; }
    long step = used <= 1 ? 0 : (total - last) / 255;
    long acc = step / 2;
    for (int i = 0; i < 256; i++) {
        long v = step ? acc / step : i;
        lut[i] = (uint8_t)(v > 255 ? 255 : v);   // the point table's 8-bit clip
        acc += h[i];
    }
}

// Invert, Posterize, Solarize and SolarizeAdd: one table for every channel.
static void point_op(uint8_t *px, size_t n, int c, int op, int arg) {
    uint8_t lut[256];
    for (int i = 0; i < 256; i++) {
        int v = i;
        switch (op) {
        case RA_INVERT: v = 255 - i; break;
        case RA_POSTERIZE: if (arg < 8) v = arg <= 0 ? 0 : i & ~((1 << (8 - arg)) - 1); break;   // no bit kept at <= 0
        case RA_SOLARIZE: v = i < arg ? i : 255 - i; break;
        case RA_SOLARIZE_ADD: v = i < 128 ? (i + arg > 255 ? 255 : i + arg) : i; break;
        }
        lut[i] = (uint8_t)v;
    }
    for (size_t i = 0; i < n * c; i++) px[i] = lut[px[i]];
}

// Rec. 601 luma as PIL's convert("L"): (19595 R + 38470 G + 7471 B + 2^15) >> 16.
static uint8_t luma(const uint8_t *p) { return (uint8_t)((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16); }

// Image.blend(degenerate, img, factor) into img: ImagingBlend with a float alpha, truncating.
static void blend(uint8_t *img, const uint8_t *deg, size_t count, double factor) {
    float alpha = (float)factor;
    if (alpha == 0.0f) { memcpy(img, deg, count); return; }
    if (alpha == 1.0f) return;
    // PIL clamps only when extrapolating (alpha outside [0, 1]); between the two images t stays in
    // [0, 255], where the clamp changes nothing, so one expression serves both.
    for (size_t i = 0; i < count; i++) {
        float t = (float)deg[i] + alpha * (float)((int)img[i] - (int)deg[i]);
        img[i] = t <= 0.0f ? 0 : t >= 255.0f ? 255 : (uint8_t)t;
    }
}

// ImageFilter.SMOOTH (3x3 kernel 1 1 1 / 1 5 1 / 1 1 1 over 13) as ImagingFilter3x3: the border copied,
// an image below 3 x 3 copied whole.
static void smooth(const uint8_t *src, int w, int h, int c, uint8_t *dst) {
    memcpy(dst, src, (size_t)w * h * c);
    if (w < 3 || h < 3) return;
    const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
    const float kern[9] = {k1, k1, k1, k1, k5, k1, k1, k1, k1};
    for (int y = 1; y < h - 1; y++) {
        const uint8_t *rows[3] = {src + (size_t)(y + 1) * w * c, src + (size_t)y * w * c, src + (size_t)(y - 1) * w * c};
        for (int x = 1; x < w - 1; x++)
            for (int k = 0; k < c; k++) {
                float ss = 0.5f;
                for (int r = 0; r < 3; r++) {
                    const uint8_t *in = rows[r];
                    const float *kr = kern + 3 * r;
                    ss += (float)in[(x - 1) * c + k] * kr[0] + (float)in[x * c + k] * kr[1] +
                          (float)in[(x + 1) * c + k] * kr[2];
                }
                dst[((size_t)y * w + x) * c + k] = ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : (uint8_t)ss;
            }
    }
}

static void enhance(uint8_t *px, int w, int h, int c, int op, double factor, uint8_t *deg) {
    size_t n = (size_t)w * h;
    if (op == RA_COLOR) {   // convert("L").convert(mode): the grey of each pixel
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < c; k++) deg[i * c + k] = c == 3 ? luma(px + i * 3) : px[i];
    } else if (op == RA_CONTRAST) {   // a flat image at the mean grey, int(mean + 0.5)
        long sum = 0;
        for (size_t i = 0; i < n; i++) sum += c == 3 ? luma(px + i * 3) : px[i];
        int mean = (int)((double)sum / (double)n + 0.5);
        memset(deg, mean, n * c);
    } else if (op == RA_BRIGHTNESS) {
        memset(deg, 0, n * c);
    } else {
        smooth(px, w, h, c, deg);
    }
    blend(px, deg, n * c, factor);
}

// PIL's FLOOR for the sample position.
static int pil_floor(double v) { return v < 0.0 ? (int)floor(v) : (int)v; }

static double cubic(double v1, double v2, double v3, double v4, double d) {
    double p1 = v2, p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4, p4 = -v1 + v2 - v3 + v4;
    return p1 + d * (p2 + d * (p3 + d * p4));
}

// Channel k of src at (xin, yin), as PIL's bilinear_filter / bicubic_filter: 0 outside the image.
static int sample(const uint8_t *src, int w, int h, int c, int k, double xin, double yin, ImageFilter filter,
                  uint8_t *out) {
    if (xin < 0.0 || xin >= w || yin < 0.0 || yin >= h) return 0;
    xin -= 0.5;
    yin -= 0.5;
    int x = pil_floor(xin), y = pil_floor(yin);
    double dx = xin - x, dy = yin - y;
#define CLIPX(v) ((v) < 0 ? 0 : (v) < w ? (v) : w - 1)
#define CLIPY(v) ((v) < 0 ? 0 : (v) < h ? (v) : h - 1)
#define AT(row, col) ((double)src[((size_t)(row) * w + (col)) * c + k])
    if (filter == IMAGE_BILINEAR) {
        int x0 = CLIPX(x), x1 = CLIPX(x + 1), r = CLIPY(y);
        double v1 = AT(r, x0) + (AT(r, x1) - AT(r, x0)) * dx, v2 = v1;
        if (y + 1 >= 0 && y + 1 < h) v2 = AT(y + 1, x0) + (AT(y + 1, x1) - AT(y + 1, x0)) * dx;
        v1 = v1 + (v2 - v1) * dy;
        *out = (uint8_t)v1;
        return 1;
    }
    x--; y--;
    int x0 = CLIPX(x), x1 = CLIPX(x + 1), x2 = CLIPX(x + 2), x3 = CLIPX(x + 3);
    double v[4];
    for (int j = 0; j < 4; j++) {
        int r = y + j;
        if (j == 0) r = CLIPY(r);
        else if (r < 0 || r >= h) { v[j] = v[j - 1]; continue; }
        v[j] = cubic(AT(r, x0), AT(r, x1), AT(r, x2), AT(r, x3), dx);
    }
#undef CLIPX
#undef CLIPY
#undef AT
    double t = cubic(v[0], v[1], v[2], v[3], dy);
    *out = t <= 0.0 ? 0 : t >= 255.0 ? 255 : (uint8_t)t;
    return 1;
}

// Image.transform(size, AFFINE, a, filter, fillcolor=fill): output pixel (x, y) samples the source at
// (a0 (x + 0.5) + a1 (y + 0.5) + a2, a3 (x + 0.5) + a4 (y + 0.5) + a5); outside it, the fill colour.
static void affine(const uint8_t *src, int w, int h, int c, const double a[6], ImageFilter filter,
                   const uint8_t *fill, uint8_t *dst) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double xi = x + 0.5, yi = y + 0.5;
            double xx = a[0] * xi + a[1] * yi + a[2], yy = a[3] * xi + a[4] * yi + a[5];
            uint8_t *o = dst + ((size_t)y * w + x) * c;
            for (int k = 0; k < c; k++)
                if (!sample(src, w, h, c, k, xx, yy, filter, o + k)) o[k] = fill[k];
        }
}

// Python's round(v, 15): the nearest 15-decimal number, correctly rounded, read back.
static double round15(double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.15f", v);
    return strtod(buf, NULL);
}

// Image.rotate(degrees, filter, fillcolor=fill) about the centre, the size kept (expand=False).
static int rotate_matrix(double degrees, int w, int h, double a[6]) {
    double ang = fmod(degrees, 360.0);   // Python's %: the divisor's sign
    if (ang != 0.0 && ang < 0.0) ang += 360.0;
    if (ang == 0.0) return 0;            // PIL's fast path: a copy
    double r = -(ang * (M_PI / 180.0));  // -math.radians(angle)
    a[0] = round15(cos(r)); a[1] = round15(sin(r)); a[2] = 0.0;
    a[3] = round15(-sin(r)); a[4] = round15(cos(r)); a[5] = 0.0;
    double cx = w / 2.0, cy = h / 2.0;
    double tx = a[0] * -cx + a[1] * -cy + a[2], ty = a[3] * -cx + a[4] * -cy + a[5];
    a[2] = tx + cx;
    a[5] = ty + cy;
    return 1;
}

void randaug_op(uint8_t *px, int w, int h, int c, int op, double arg, ImageFilter filter, const uint8_t *fill,
                uint8_t *tmp) {
    size_t n = (size_t)w * h;
    double a[6] = {1, 0, 0, 0, 1, 0};
    switch (op) {
    case RA_AUTOCONTRAST: histogram_luts(px, n, c, autocontrast_lut); return;
    case RA_EQUALIZE: histogram_luts(px, n, c, equalize_lut); return;
    case RA_INVERT: case RA_POSTERIZE: case RA_SOLARIZE: case RA_SOLARIZE_ADD: point_op(px, n, c, op, (int)arg); return;
    case RA_COLOR: case RA_CONTRAST: case RA_BRIGHTNESS: case RA_SHARPNESS: enhance(px, w, h, c, op, arg, tmp); return;
    case RA_ROTATE: if (!rotate_matrix(arg, w, h, a)) return; break;
    case RA_SHEAR_X: a[1] = arg; break;
    case RA_SHEAR_Y: a[3] = arg; break;
    case RA_TRANSLATE_X: a[2] = arg * w; break;
    case RA_TRANSLATE_Y: a[5] = arg * h; break;
    default: return;
    }
    memcpy(tmp, px, n * c);
    affine(tmp, w, h, c, a, filter, fill, px);
}

double randaug_magnitude(const RandAugSpec *s, Rng *rng) {
    double m = s->magnitude;
    if (s->mstd > RANDAUG_MSTD_UNIFORM) m *= rng_uniform_double(rng);   // random.uniform(0, m)
    else if (s->mstd > 0.0) m += s->mstd * (double)rng_normal(rng, 0.0f, 1.0f);   // random.gauss(m, mstd)
    return fmax(0.0, fmin(m, s->mmax));
}

int randaug_image(float *px, int w, int h, int c, const RandAugSpec *s, ImageFilter filter, const uint8_t *fill,
                  Rng *rng, int *ops) {
    if (s->layers <= 0) return 0;
    size_t n = (size_t)w * h * c;
    uint8_t *b = malloc(2 * (n ? n : 1));
    if (!b) return -1;
    for (size_t i = 0; i < n; i++) {
        float v = px[i] * 255.0f;
        b[i] = (uint8_t)(v <= 0.0f ? 0 : v >= 255.0f ? 255 : (int)(v + 0.5f));   // image_quantize8's rounding
    }
    int chosen[RANDAUG_LAYERS_MAX];
    for (int l = 0; l < s->layers; l++) chosen[l] = (int)rng_below(rng, RA_NOPS);   // np.random.choice, replacing
    for (int l = 0; l < s->layers; l++) {
        if (ops) ops[l] = -1;
        if (s->prob < 1.0 && rng_uniform_double(rng) > s->prob) continue;
        double m = randaug_magnitude(s, rng);
        int neg = randaug_signed(chosen[l], s->increasing) && rng_uniform_double(rng) > 0.5;
        randaug_op(b, w, h, c, chosen[l], randaug_level(chosen[l], s->increasing, m, neg), filter, fill, b + n);
        if (ops) ops[l] = chosen[l];
    }
    for (size_t i = 0; i < n; i++) px[i] = (float)b[i] / 255.0f;
    free(b);
    return 0;
}
