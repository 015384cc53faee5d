// The drawing room: canvas primitives, colormaps built from key colours in CIELAB, map overlays,
// colour bars and line plots. See viz.h for the conventions.
#include "viz/viz.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/image.h"
#include "viz/text.h"

// ---------------------------------------------------------------------------------------------
// Canvas

int canvas_create(Canvas *c, int w, int h, char *err, size_t errlen) {
    c->w = c->h = 0;
    c->px = NULL;
    if (w < 1 || h < 1 || w > VIZ_MAX_SIDE || h > VIZ_MAX_SIDE) {
        snprintf(err, errlen, "canvas size %dx%d out of range (1..%d per side)", w, h, VIZ_MAX_SIDE);
        return -1;
    }
    // w, h <= 2^16 so w * h * 3 < 2^34: fits size_t on 64-bit; checked for 32-bit hosts.
    if ((size_t)w > SIZE_MAX / 3 / (size_t)h) {
        snprintf(err, errlen, "canvas size %dx%d too large", w, h);
        return -1;
    }
    c->px = calloc((size_t)w * h * 3, 1);
    if (!c->px) {
        snprintf(err, errlen, "out of memory for a %dx%d canvas", w, h);
        return -1;
    }
    c->w = w;
    c->h = h;
    return 0;
}

void canvas_free(Canvas *c) {
    if (!c) return;
    free(c->px);
    c->px = NULL;
    c->w = c->h = 0;
}

static inline void put_px(Canvas *c, int x, int y, const uint8_t rgb[3]) {
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    uint8_t *p = c->px + ((size_t)y * c->w + x) * 3;
    p[0] = rgb[0]; p[1] = rgb[1]; p[2] = rgb[2];
}

void canvas_fill(Canvas *c, const uint8_t rgb[3]) {
    canvas_fill_rect(c, 0, 0, c->w, c->h, rgb);
}

void canvas_fill_rect(Canvas *c, int x, int y, int w, int h, const uint8_t rgb[3]) {
    // Clip in 64-bit so x + w cannot overflow.
    int64_t x0 = x > 0 ? x : 0, y0 = y > 0 ? y : 0;
    int64_t x1 = (int64_t)x + w, y1 = (int64_t)y + h;
    if (x1 > c->w) x1 = c->w;
    if (y1 > c->h) y1 = c->h;
    for (int64_t yy = y0; yy < y1; yy++)
        for (int64_t xx = x0; xx < x1; xx++) {
            uint8_t *p = c->px + ((size_t)yy * c->w + (size_t)xx) * 3;
            p[0] = rgb[0]; p[1] = rgb[1]; p[2] = rgb[2];
        }
}

void canvas_rect(Canvas *c, int x, int y, int w, int h, int thick, const uint8_t rgb[3]) {
    if (w <= 0 || h <= 0 || thick <= 0) return;
    if (thick * 2 >= w || thick * 2 >= h) { canvas_fill_rect(c, x, y, w, h, rgb); return; }
    canvas_fill_rect(c, x, y, w, thick, rgb);                     // top
    canvas_fill_rect(c, x, y + h - thick, w, thick, rgb);         // bottom
    canvas_fill_rect(c, x, y + thick, thick, h - 2 * thick, rgb); // left
    canvas_fill_rect(c, x + w - thick, y + thick, thick, h - 2 * thick, rgb);   // right
}

void canvas_line(Canvas *c, int x0, int y0, int x1, int y1, int thick, const uint8_t rgb[3]) {
    if (thick < 1) thick = 1;
    int off = (thick - 1) / 2;   // pen covers [p - off, p - off + thick)
    int64_t dx = llabs((int64_t)x1 - x0), dy = -llabs((int64_t)y1 - y0);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int64_t e = dx + dy;
    for (;;) {
        if (thick == 1) put_px(c, x0, y0, rgb);
        else canvas_fill_rect(c, x0 - off, y0 - off, thick, thick, rgb);
        if (x0 == x1 && y0 == y1) break;
        int64_t e2 = 2 * e;
        if (e2 >= dy) { e += dy; x0 += sx; }
        if (e2 <= dx) { e += dx; y0 += sy; }
    }
}

static inline uint8_t to_u8(float v) {
    if (!(v > 0.0f)) return 0;     // also NaN
    if (v >= 1.0f) return 255;
    return (uint8_t)floorf(v * 255.0f + 0.5f);
}

// Fills the scale x scale block of source pixel (sx, sy) drawn at origin (x, y).
static void put_block(Canvas *c, int x, int y, int sx, int sy, int scale, const uint8_t rgb[3]) {
    canvas_fill_rect(c, x + sx * scale, y + sy * scale, scale, scale, rgb);
}

void canvas_blit_float(Canvas *dst, int x, int y, const float *img, int W, int H, int c, int scale) {
    if (scale < 1) scale = 1;
    for (int sy = 0; sy < H; sy++)
        for (int sx = 0; sx < W; sx++) {
            const float *p = img + ((size_t)sy * W + sx) * c;
            uint8_t rgb[3];
            for (int k = 0; k < 3; k++) rgb[k] = to_u8(p[c == 3 ? k : 0]);
            put_block(dst, x, y, sx, sy, scale, rgb);
        }
}

int canvas_blit_resized(Canvas *dst, int x, int y, const float *img, int W, int H, int c, int dw, int dh,
                        int bilinear) {
    if (dw < 1 || dh < 1 || W < 1 || H < 1) return 0;
    if (bilinear && (dw != W || dh != H)) {
        float *tmp = malloc(sizeof(float) * (size_t)dw * dh * c);
        int rc = !tmp || image_resize_bilinear(img, W, H, c, tmp, dw, dh) ? -1 : 0;
        if (!rc) canvas_blit_float(dst, x, y, tmp, dw, dh, c, 1);
        free(tmp);
        return rc;   // out of memory: nothing drawn, not a nearest-neighbour picture in its place
    }
    for (int oy = 0; oy < dh; oy++) {
        int64_t cy = (int64_t)y + oy;
        if (cy < 0 || cy >= dst->h) continue;
        int sy = (int)((int64_t)oy * H / dh);
        for (int ox = 0; ox < dw; ox++) {
            int64_t cx = (int64_t)x + ox;
            if (cx < 0 || cx >= dst->w) continue;
            const float *p = img + ((size_t)sy * W + (size_t)((int64_t)ox * W / dw)) * c;
            uint8_t *q = dst->px + ((size_t)cy * dst->w + (size_t)cx) * 3;
            for (int k = 0; k < 3; k++) q[k] = to_u8(p[c == 3 ? k : 0]);
        }
    }
    return 0;
}

void canvas_blit(Canvas *dst, int x, int y, const Canvas *src) {
    for (int sy = 0; sy < src->h; sy++) {
        int64_t dy = (int64_t)y + sy;
        if (dy < 0 || dy >= dst->h) continue;
        int64_t a = x < 0 ? -(int64_t)x : 0, b = src->w;   // source columns [a, b)
        if ((int64_t)x + b > dst->w) b = (int64_t)dst->w - x;
        if (a >= b) continue;
        memcpy(dst->px + ((size_t)dy * dst->w + (size_t)(x + a)) * 3,
               src->px + ((size_t)sy * src->w + (size_t)a) * 3, (size_t)(b - a) * 3);
    }
}

// ---------------------------------------------------------------------------------------------
// Colour science (sRGB, D65 white) for building the colormaps.

static double srgb_decode(double v) {   // sRGB-encoded [0,1] -> linear light
    return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
}
static double srgb_encode(double v) {
    return v <= 0.0031308 ? 12.92 * v : 1.055 * pow(v, 1.0 / 2.4) - 0.055;
}

static const double WHITE[3] = {0.95047, 1.0, 1.08883};   // D65, Y = 1

static double lab_f(double t) {
    const double d = 6.0 / 29.0;
    return t > d * d * d ? cbrt(t) : t / (3 * d * d) + 4.0 / 29.0;
}
static double lab_finv(double t) {
    const double d = 6.0 / 29.0;
    return t > d ? t * t * t : 3 * d * d * (t - 4.0 / 29.0);
}

static void rgb8_to_lab(const uint8_t rgb[3], double lab[3]) {
    double r = srgb_decode(rgb[0] / 255.0), g = srgb_decode(rgb[1] / 255.0),
           b = srgb_decode(rgb[2] / 255.0);
    double X = 0.4124564 * r + 0.3575761 * g + 0.1804375 * b;
    double Y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b;
    double Z = 0.0193339 * r + 0.1191920 * g + 0.9503041 * b;
    double fx = lab_f(X / WHITE[0]), fy = lab_f(Y / WHITE[1]), fz = lab_f(Z / WHITE[2]);
    lab[0] = 116 * fy - 16;
    lab[1] = 500 * (fx - fy);
    lab[2] = 200 * (fy - fz);
}

static void lab_to_rgb8(const double lab[3], uint8_t rgb[3]) {
    double fy = (lab[0] + 16) / 116, fx = fy + lab[1] / 500, fz = fy - lab[2] / 200;
    double X = WHITE[0] * lab_finv(fx), Y = WHITE[1] * lab_finv(fy), Z = WHITE[2] * lab_finv(fz);
    double lin[3] = {
         3.2404542 * X - 1.5371385 * Y - 0.4985314 * Z,
        -0.9692660 * X + 1.8760108 * Y + 0.0415560 * Z,
         0.0556434 * X - 0.2040259 * Y + 1.0572252 * Z,
    };
    for (int k = 0; k < 3; k++) {
        double v = lin[k] < 0 ? 0 : lin[k] > 1 ? 1 : lin[k];
        rgb[k] = (uint8_t)floor(srgb_encode(v) * 255.0 + 0.5);
    }
}

// ---------------------------------------------------------------------------------------------
// Colormaps. Key colours are equally spaced along each map (published samples of the maps, ten per
// map, ends included); between them we interpolate L*, a*, b* with monotone cubic Hermite curves
// (Fritsch-Carlson), so a map whose key lightnesses rise keeps rising, and nothing overshoots.

enum { MAX_KEYS = 10 };
typedef struct { const char *name; int nkeys; uint32_t keys[MAX_KEYS]; } CmapSpec;

static const CmapSpec cmap_specs[CMAP_COUNT] = {
    [CMAP_VIRIDIS] = {"viridis", 10, {0x440154, 0x482878, 0x3E4A89, 0x31688E, 0x26828E, 0x1F9E89,
                                      0x35B779, 0x6DCD59, 0xB4DE2C, 0xFDE725}},
    [CMAP_INFERNO] = {"inferno", 10, {0x000004, 0x1B0C42, 0x4B0C6B, 0x781C6D, 0xA52C60, 0xCF4446,
                                      0xED6925, 0xFB9A06, 0xF7D03C, 0xFCFFA4}},
    [CMAP_MAGMA]   = {"magma",   10, {0x000004, 0x180F3E, 0x451077, 0x721F81, 0x9F2F7F, 0xCD4071,
                                      0xF1605D, 0xFD9567, 0xFEC98D, 0xFCFDBF}},
    // Ends as matplotlib's cividis (#00224E, #FEE838); the inner keys from the same map's samples.
    [CMAP_CIVIDIS] = {"cividis", 10, {0x00224E, 0x00336F, 0x39486B, 0x575D6D, 0x707173, 0x8A8779,
                                      0xA69D75, 0xC4B56C, 0xE4CF5B, 0xFEE838}},
    [CMAP_TURBO]   = {"turbo",   10, {0x30123B, 0x4662D7, 0x36AAF9, 0x1AE4B6, 0x72FE5E, 0xC7EF34,
                                      0xFABA39, 0xF66B19, 0xCB2A04, 0x7A0403}},
    [CMAP_GRAY]    = {"gray",     2, {0x000000, 0xFFFFFF}},
};

static uint8_t cmap_tables[CMAP_COUNT][256][3];
static pthread_once_t cmap_once = PTHREAD_ONCE_INIT;

// Fritsch-Carlson slopes for values y[0..n-1] at unit spacing.
static void monotone_slopes(const double *y, int n, double *m) {
    double d[MAX_KEYS] = {0};
    for (int k = 0; k + 1 < n; k++) d[k] = y[k + 1] - y[k];
    m[0] = d[0];
    m[n - 1] = d[n - 2];
    for (int k = 1; k + 1 < n; k++)   // harmonic mean of the neighbouring secants, 0 at extrema
        m[k] = d[k - 1] * d[k] <= 0 ? 0 : 2 * d[k - 1] * d[k] / (d[k - 1] + d[k]);
}

static void build_cmaps(void) {
    for (int cm = 0; cm < CMAP_COUNT; cm++) {
        const CmapSpec *s = &cmap_specs[cm];
        if (cm == CMAP_GRAY) {   // the grey ramp is linear in sRGB code values, like most tools
            for (int i = 0; i < 256; i++)
                cmap_tables[cm][i][0] = cmap_tables[cm][i][1] = cmap_tables[cm][i][2] = (uint8_t)i;
            continue;
        }
        int n = s->nkeys;
        double lab[3][MAX_KEYS], slope[3][MAX_KEYS];
        for (int k = 0; k < n; k++) {
            uint8_t rgb[3] = {(uint8_t)(s->keys[k] >> 16), (uint8_t)(s->keys[k] >> 8),
                              (uint8_t)s->keys[k]};
            double l[3];
            rgb8_to_lab(rgb, l);
            for (int ch = 0; ch < 3; ch++) lab[ch][k] = l[ch];
        }
        for (int ch = 0; ch < 3; ch++) monotone_slopes(lab[ch], n, slope[ch]);
        for (int i = 0; i < 256; i++) {
            double t = i / 255.0 * (n - 1);
            int k = (int)t;
            if (k > n - 2) k = n - 2;
            double u = t - k, u2 = u * u, u3 = u2 * u;
            double h00 = 2 * u3 - 3 * u2 + 1, h10 = u3 - 2 * u2 + u, h01 = -2 * u3 + 3 * u2,
                   h11 = u3 - u2;
            double l[3];
            for (int ch = 0; ch < 3; ch++)
                l[ch] = h00 * lab[ch][k] + h10 * slope[ch][k] + h01 * lab[ch][k + 1] +
                        h11 * slope[ch][k + 1];
            lab_to_rgb8(l, cmap_tables[cm][i]);
        }
    }
}

int colormap_from_name(const char *name) {
    if (!name) return -1;
    for (int cm = 0; cm < CMAP_COUNT; cm++)
        if (strcmp(name, cmap_specs[cm].name) == 0) return cm;
    if (strcmp(name, "grey") == 0) return CMAP_GRAY;
    return -1;
}

const char *colormap_name(int cmap) {
    return cmap >= 0 && cmap < CMAP_COUNT ? cmap_specs[cmap].name : NULL;
}

const uint8_t *colormap_table(int cmap) {
    if (cmap < 0 || cmap >= CMAP_COUNT) return NULL;
    pthread_once(&cmap_once, build_cmaps);
    return cmap_tables[cmap][0];
}

static inline int cmap_index(float v) {
    if (!(v > 0.0f)) return 0;
    if (v >= 1.0f) return 255;
    return (int)floorf(v * 255.0f + 0.5f);
}

void colormap_color(int cmap, float v, uint8_t rgb[3]) {
    const uint8_t *t = colormap_table(cmap);
    if (!t) t = colormap_table(CMAP_VIRIDIS);
    memcpy(rgb, t + 3 * cmap_index(v), 3);
}

// ---------------------------------------------------------------------------------------------
// Maps

void viz_upsample(const float *map, int gw, int gh, float *out, int W, int H, int bilinear) {
    for (int oy = 0; oy < H; oy++) {
        int y0, y1;
        float fy;
        if (bilinear) {
            float sy = ((float)oy + 0.5f) * ((float)gh / (float)H) - 0.5f;
            if (sy < 0) sy = 0;
            y0 = (int)sy;
            if (y0 > gh - 1) y0 = gh - 1;
            y1 = y0 + 1 < gh ? y0 + 1 : gh - 1;
            fy = sy - (float)y0;
        } else {
            y0 = y1 = (int)((int64_t)oy * gh / H);
            fy = 0;
        }
        for (int ox = 0; ox < W; ox++) {
            int x0, x1;
            float fx;
            if (bilinear) {
                float sx = ((float)ox + 0.5f) * ((float)gw / (float)W) - 0.5f;
                if (sx < 0) sx = 0;
                x0 = (int)sx;
                if (x0 > gw - 1) x0 = gw - 1;
                x1 = x0 + 1 < gw ? x0 + 1 : gw - 1;
                fx = sx - (float)x0;
            } else {
                x0 = x1 = (int)((int64_t)ox * gw / W);
                fx = 0;
            }
            float a = map[(size_t)y0 * gw + x0], b = map[(size_t)y0 * gw + x1];
            float c = map[(size_t)y1 * gw + x0], d = map[(size_t)y1 * gw + x1];
            float top = a + (b - a) * fx, bottom = c + (d - c) * fx;
            out[(size_t)oy * W + ox] = bilinear ? top + (bottom - top) * fy : a;
        }
    }
}

void viz_normalize(float *map, size_t n) {
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (isfinite(map[i])) {
            if (map[i] < lo) lo = map[i];
            if (map[i] > hi) hi = map[i];
        }
    float range = hi - lo;   // inf - inf is NaN when nothing was finite: handled below
    for (size_t i = 0; i < n; i++) {
        if (!(range > 0) || !isfinite(range) || !isfinite(map[i])) { map[i] = 0; continue; }
        float v = (map[i] - lo) / range;
        map[i] = v < 0 ? 0 : v > 1 ? 1 : v;
    }
}

static inline uint8_t blend_u8(float img, float alpha, uint8_t colour) {
    float v = (1.0f - alpha) * 255.0f * (img > 0 ? (img < 1 ? img : 1) : 0) + alpha * colour;
    if (!(v > 0)) return 0;
    if (v >= 255) return 255;
    return (uint8_t)floorf(v + 0.5f);
}

void viz_overlay(Canvas *dst, int x, int y, const float *img, int W, int H, int c,
                 const float *map01, int cmap, float alpha, int scale) {
    if (scale < 1) scale = 1;
    if (!(alpha > 0)) alpha = 0;
    if (alpha > 1) alpha = 1;
    const uint8_t *table = colormap_table(cmap);
    if (!table) table = colormap_table(CMAP_VIRIDIS);
    for (int sy = 0; sy < H; sy++)
        for (int sx = 0; sx < W; sx++) {
            size_t i = (size_t)sy * W + sx;
            const uint8_t *col = table + 3 * cmap_index(map01[i]);
            uint8_t out[3];
            for (int k = 0; k < 3; k++) {
                float v = img ? img[i * c + (c == 3 ? k : 0)] : 0.0f;
                out[k] = blend_u8(v != v ? 0 : v, alpha, col[k]);
            }
            put_block(dst, x, y, sx, sy, scale, out);
        }
}

void viz_format_value(double v, char *buf, size_t n) {
    if (v == 0) v = 0;   // no "-0"
    snprintf(buf, n, "%.3g", v);
}

int viz_colorbar_label_width(double vmin, double vmax, double size) {
    char a[32], b[32];
    viz_format_value(vmin, a, sizeof a);
    viz_format_value(vmax, b, sizeof b);
    int wa = text_width(a, size), wb = text_width(b, size);
    return wa > wb ? wa : wb;
}

int viz_colorbar_height(int bar_h, double size) { return bar_h + 2 + text_line_height(size); }

enum { COLORBAR_LABEL_GAP = 4 };   // pixels between two labels side by side

int viz_colorbar_mark_beyond(const ColorBar *b) {
    if (!isfinite(b->mark) || !(b->vmax >= b->vmin)) return 0;
    // A flat scale holds a map's one value, a float: the mark is compared with it as a float.
    if (b->vmax == b->vmin) {
        float m = (float)b->mark, v = (float)b->vmin;
        return m > v ? 1 : m < v ? -1 : 0;
    }
    return b->mark > b->vmax ? 1 : b->mark < b->vmin ? -1 : 0;
}

void viz_colorbar(Canvas *c, int x, int y, int w, int h, int vertical, const ColorBar *b) {
    if (w < 1 || h < 1) return;
    uint8_t col[3];
    // A flat scale (vmin = vmax: a map of one value under --normalize map) has one colour, the lowest,
    // as its map is drawn (overlay_draw); the bar is filled with it, labelled with its one value, and
    // a mark equal to that value is drawn across its middle (docs/interface.md, attention).
    int flat = b->vmax == b->vmin;
    if (vertical) {
        for (int r = 0; r < h; r++) {
            colormap_color(b->cmap, flat ? 0.0f : h > 1 ? 1.0f - (float)r / (float)(h - 1) : 1.0f, col);
            canvas_fill_rect(c, x, y + r, w, 1, col);
        }
    } else {
        for (int k = 0; k < w; k++) {
            colormap_color(b->cmap, flat ? 0.0f : w > 1 ? (float)k / (float)(w - 1) : 1.0f, col);
            canvas_fill_rect(c, x + k, y, 1, h, col);
        }
    }
    char lo[32], hi[32];
    viz_format_value(b->vmin, lo, sizeof lo);
    viz_format_value(b->vmax, hi, sizeof hi);
    int lh = text_line_height(b->text_size);
    // The mark: a line across the bar, white over a dark edge so that it shows on every colour.
    double range = b->vmax - b->vmin;
    int beyond = viz_colorbar_mark_beyond(b);
    int has_mark = isfinite(b->mark) && b->vmax >= b->vmin && !beyond;
    double f = !has_mark ? 0 : flat ? 0.5 : (b->mark - b->vmin) / range;
    static const uint8_t edge[3] = {0, 0, 0}, light[3] = {255, 255, 255};
    // A mark beyond an end (every value of the scale below uniform attention, or above it): a white
    // arrow with a dark edge at that end, pointing out of the bar, so that the mark is never silently
    // missing (viz_colorbar_mark_beyond).
    if (beyond) {
        int len = vertical ? w + 4 : h + 4, deep = (len + 1) / 2;   // the arrow's base and depth
        // Its base's dark edge, one line inside the arrow's first.
        if (vertical) canvas_fill_rect(c, x - 3, beyond > 0 ? y + deep : y + h - deep - 1, w + 6, 1, edge);
        else canvas_fill_rect(c, beyond > 0 ? x + w - deep - 1 : x + deep, y - 3, 1, h + 6, edge);
        for (int i = 0; i < deep; i++) {
            int half = (len - 1) / 2 - i * (len - 1) / 2 / (deep > 1 ? deep - 1 : 1);
            int mid = vertical ? x + w / 2 : y + h / 2;
            // Column (row) i from the arrow's base outwards: its tip lies on the bar's end.
            int at = vertical ? (beyond > 0 ? y + deep - 1 - i : y + h - deep + i)
                              : (beyond > 0 ? x + w - deep + i : x + deep - 1 - i);
            if (vertical) {
                canvas_fill_rect(c, mid - half - 1, at, 2 * half + 3, 1, edge);
                canvas_fill_rect(c, mid - half, at, 2 * half + 1, 1, light);
            } else {
                canvas_fill_rect(c, at, mid - half - 1, 1, 2 * half + 3, edge);
                canvas_fill_rect(c, at, mid - half, 1, 2 * half + 1, light);
            }
        }
    }
    // Where the two end labels would overlap (a bar shorter than two lines, or narrower than both
    // labels side by side), only the max is written: the min of a scale is its plain end (0 for the
    // error and attention bars), the max what a reader looks up.
    if (vertical) {
        canvas_text(c, x + w + 3, y, hi, b->text_rgb, b->text_size);
        if (h >= 2 * lh && !flat) canvas_text(c, x + w + 3, y + h - lh, lo, b->text_rgb, b->text_size);
        if (has_mark) {
            int my = y + (int)lround((1 - f) * (h - 1));
            canvas_fill_rect(c, x - 2, my - 1, w + 4, 3, edge);
            canvas_fill_rect(c, x - 2, my, w + 4, 1, light);
        }
    } else {
        int ty = y + h + 2;
        int hw = text_width(hi, b->text_size), lw = text_width(lo, b->text_size);
        if (flat || lw + COLORBAR_LABEL_GAP + hw > w) lw = 0;
        else canvas_text(c, x, ty, lo, b->text_rgb, b->text_size);
        canvas_text(c, x + w - hw > x ? x + w - hw : x, ty, hi, b->text_rgb, b->text_size);
        if (has_mark) {
            int mx = x + (int)lround(f * (w - 1));
            canvas_fill_rect(c, mx - 1, y - 2, 3, h + 4, edge);
            canvas_fill_rect(c, mx, y - 2, 1, h + 4, light);
            // Its label, centred under the mark, only where it clears the end labels.
            if (b->mark_label && *b->mark_label) {
                int mw = text_width(b->mark_label, b->text_size), lx = mx - mw / 2;
                if (lx > x + lw + COLORBAR_LABEL_GAP && lx + mw < x + w - hw - COLORBAR_LABEL_GAP)
                    canvas_text(c, lx, ty, b->mark_label, b->text_rgb, b->text_size);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Line plots

void viz_palette(int index, uint8_t rgb[3]) {
    // Okabe & Ito's colour-blind-safe set (blue, vermillion, bluish green, orange, reddish purple,
    // sky blue, yellow), then black.
    static const uint8_t pal[8][3] = {{0, 114, 178}, {213, 94, 0}, {0, 158, 115}, {230, 159, 0},
                                      {204, 121, 167}, {86, 180, 233}, {240, 228, 66}, {0, 0, 0}};
    if (index < 0) index = -index;
    memcpy(rgb, pal[index % 8], 3);
}

// A "nice" number (1, 2, 5 x 10^k) near v (Heckbert, Graphics Gems I): the closest one when
// `round`, else the smallest one >= v.
static double nice_number(double v, int round) {
    double e = floor(log10(v)), f = v / pow(10, e), nf;
    if (round) nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else       nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * pow(10, e);
}

// double -> int for exponents, defined for any input (absurd data must not reach UB).
static int safe_int(double v) {
    if (!(v > -1000)) return -1000;   // also NaN
    if (v > 1000) return 1000;
    return (int)v;
}

enum { MAX_TICKS = VIZ_MAX_TICKS };
typedef PlotAxis Axis;

// Linear axis covering [vmin, vmax] with about `want` ticks at multiples of a nice step; whole: the
// values are counts (steps), so the step is at least 1 and no tick falls between two of them.
static void axis_linear(Axis *a, double vmin, double vmax, int want, int whole) {
    if (!(vmax > vmin)) {
        // One value: 5% either side of it; a lone 0 (a run stopped at its step-0 row: step 0, lr 0) spans
        // [0, 1], as steps and learning rates never go below 0.
        if (vmin == 0) vmax = 1;
        else { double pad = fabs(vmin) * 0.05; vmin -= pad; vmax += pad; }
    }
    if (want < 2) want = 2;
    double step = nice_number(nice_number(vmax - vmin, 0) / (want - 1), 1);
    if (whole && step < 1) step = 1;
    a->log = 0;
    a->lo = floor(vmin / step) * step;
    a->hi = ceil(vmax / step) * step;
    a->nticks = 0;
    for (int k = 0; a->nticks < MAX_TICKS; k++) {
        double t = a->lo + k * step;
        if (t > a->hi + step * 1e-6) break;
        if (fabs(t) < step * 1e-9) t = 0;
        a->ticks[a->nticks++] = t;
    }
}

// Log axis: ends snapped to the 1-2-5 sequence; ticks at 1-2-5 steps over up to three decades,
// else at every decade (or every few decades, to keep about `want`).
static void axis_log(Axis *a, double vmin, double vmax, int want) {
    // Within a factor of two (a fine-tune's loss between 1.02 and 1.07) the 1-2-5 ends (1 and 2) left
    // the curve a tenth of the height: the ends and ticks are then a linear axis's, drawn in log.
    if (vmax > vmin && vmax < 2 * vmin) {
        axis_linear(a, vmin, vmax, want, 0);
        a->log = 1;
        if (a->lo > 0) return;
    }
    if (!(vmax > vmin)) { vmin /= 2; vmax *= 2; }
    static const double m125[3] = {1, 2, 5};
    double lo = pow(10, floor(log10(vmin))), hi = pow(10, ceil(log10(vmax)));
    for (int k = 2; k >= 0; k--) if (lo * m125[k] <= vmin * (1 + 1e-12)) { lo *= m125[k]; break; }
    for (int k = 0; k < 3; k++) if (hi / 10 * m125[k] >= vmax * (1 - 1e-12)) { hi = hi / 10 * m125[k]; break; }
    if (hi <= lo) hi = lo * 2;
    a->log = 1;
    a->lo = lo;
    a->hi = hi;
    a->nticks = 0;
    int e0 = safe_int(floor(log10(lo) + 1e-9)), e1 = safe_int(ceil(log10(hi) - 1e-9));
    int decades = e1 - e0;
    if (want < 2) want = 2;
    if (decades <= 3) {
        for (int e = e0; e <= e1; e++)
            for (int k = 0; k < 3 && a->nticks < MAX_TICKS; k++) {
                double t = m125[k] * pow(10, e);
                if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) a->ticks[a->nticks++] = t;
            }
        // Less than a decade can leave two ticks (2 and 5 around values near 3.7): then every
        // integer multiple (2, 3, 4, 5) where they fit.
        int n19 = 0;
        for (int e = e0; e <= e1; e++)
            for (int k = 1; k <= 9; k++) {
                double t = k * pow(10, e);
                n19 += t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9);
            }
        if (a->nticks < 3 && n19 <= want + 1 && n19 <= MAX_TICKS) {
            a->nticks = 0;
            for (int e = e0; e <= e1; e++)
                for (int k = 1; k <= 9; k++) {
                    double t = k * pow(10, e);
                    if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) a->ticks[a->nticks++] = t;
                }
        }
    } else {
        int every = (decades + want - 1) / want;
        for (int e = e0; e <= e1 && a->nticks < MAX_TICKS; e += every) {
            double t = pow(10, e);
            if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) a->ticks[a->nticks++] = t;
        }
    }
}

void viz_plot_axis(PlotAxis *a, double vmin, double vmax, int log_y, int want) {
    if (log_y) axis_log(a, vmin, vmax, want);
    else axis_linear(a, vmin, vmax, want, 0);
}

// Position of v along an axis in [0, 1].
static double axis_frac(const Axis *a, double v) {
    if (a->log) return (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
    return (v - a->lo) / (a->hi - a->lo);
}

// Significant digits a log axis's labels need to tell neighbouring ticks apart: %g's 6, or the digits
// down to the place of the smallest gap where that is finer (a loss that barely moved has a linear
// axis's ticks, viz_plot_axis: 6.907712 and 6.907714 both read "6.90771" at 6).
static int log_tick_digits(const Axis *a) {
    int digits = 6;
    for (int k = 1; k < a->nticks; k++) {
        double gap = fabs(a->ticks[k] - a->ticks[k - 1]);
        double big = fabs(a->ticks[k]) > fabs(a->ticks[k - 1]) ? fabs(a->ticks[k]) : fabs(a->ticks[k - 1]);
        if (!(gap > 0) || !(big > 0)) continue;
        int need = safe_int(floor(log10(big) + 1e-9)) - safe_int(floor(log10(gap) + 1e-6)) + 1;
        if (need > digits) digits = need;
    }
    return digits > 15 ? 15 : digits;   // past 15 digits a double's own error shows
}

// Tick labels share one format per axis: fixed decimals enough for the step ("0.25", "1500"),
// or, for very small or large values, scientific with a short exponent ("1.5e-4"). Log axes: %g, with
// the digits that keep neighbouring labels apart (log_tick_digits).
void viz_tick_label(char *buf, size_t n, double v, const PlotAxis *a) {
    if (v == 0) v = 0;   // no "-0"
    if (a->log) { snprintf(buf, n, "%.*g", log_tick_digits(a), v); return; }
    if (a->nticks < 2) { snprintf(buf, n, "%g", v); return; }
    double step = a->ticks[1] - a->ticks[0];
    double big = fabs(a->lo) > fabs(a->hi) ? fabs(a->lo) : fabs(a->hi);
    int step_exp = safe_int(floor(log10(step) + 1e-9));
    if (big >= 1e6 || step_exp < -4) {
        int prec = safe_int(floor(log10(big) + 1e-9)) - step_exp;
        if (prec < 0) prec = 0;
        if (prec > 15) prec = 15;   // the digits that tell neighbours apart, up to what a double holds
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.*e", prec, v);
        char *e = strchr(tmp, 'e');   // "e-05" -> "e-5", "e+06" -> "e6"
        if (e) {
            int ex = atoi(e + 1);
            snprintf(e, sizeof tmp - (size_t)(e - tmp), "e%d", ex);
        }
        snprintf(buf, n, "%s", v == 0 ? "0" : tmp);
    } else {
        snprintf(buf, n, "%.*f", step_exp < 0 ? -step_exp : 0, v);
    }
}

// Offset in [0, n - 1] of an axis fraction (clamped, so overflowing ranges stay on the plot).
static int frac_to_px(double f, int n) {
    if (!(f > 0)) return 0;
    if (f >= 1) return n - 1;
    return (int)lround(f * (n - 1));
}

static int point_ok(const PlotSeries *s, int i, int log_y) {
    double x = s->x[i], y = s->y[i];
    return isfinite(x) && isfinite(y) && (!log_y || y > 0);
}

// A series is in the legend when it has a label and drew at least one point.
static int in_legend(const PlotSeries *s, int log_y) {
    if (!s->label || !*s->label) return 0;
    for (int i = 0; i < s->n; i++)
        if (point_ok(s, i, log_y)) return 1;
    return 0;
}

// What the panels of one figure share (viz_plot_png): the x range and the left and right edges of the
// plot area, so that a step sits at the same x in every panel.
typedef struct {
    int has_x;          // the x axis covers [xmin, xmax] (besides the panel's own points)
    double xmin, xmax;
    int left, right;    // least margins of the plot area from the box's left and right sides
    int xwant;          // ticks wanted on the x axis (0: the panel's own), so that every panel's axis
                        // runs over the same nice range: 0..150 in one and 0..120 in another put
                        // step 100 at different x
} PlotShare;

typedef struct {
    int ts, lh, pad, npoints;
    double fs;
    int top, bottom, left, right, ph, pw;
    Axis ax, ay;
    char ylabel[256];
} PlotLayout;

// Where everything of a plot in the box (x, y, w, h) goes. 0, or -1 when the box is too small.
static int plot_layout(PlotLayout *L, int x, int y, int w, int h, const PlotSeries *series, int nseries,
                       const PlotOptions *opt, const PlotShare *sh) {
    if (w < 120 || h < 80) return -1;
    L->ts = w >= 800 && h >= 400 ? 2 : 1;   // scale of pads, ticks, pen
    L->fs = L->ts == 2 ? 15.0 : 11.0;                                // text size, pixels
    L->lh = text_line_height(L->fs);
    L->pad = 6 * L->ts;
    int ts = L->ts, lh = L->lh, pad = L->pad;

    // Data range over drawable points.
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    int npoints = 0;
    for (int s = 0; s < nseries; s++)
        for (int i = 0; i < series[s].n; i++) {
            if (!point_ok(&series[s], i, opt->log_y)) continue;
            double px = series[s].x[i], py = series[s].y[i];
            if (px < xmin) xmin = px;
            if (px > xmax) xmax = px;
            if (py < ymin) ymin = py;
            if (py > ymax) ymax = py;
            npoints++;
        }
    L->npoints = npoints;
    if (!npoints) { xmin = 0; xmax = 1; ymin = opt->log_y ? 1 : 0; ymax = opt->log_y ? 10 : 1; }
    if (sh && sh->has_x) {
        if (!npoints || sh->xmin < xmin) xmin = sh->xmin;
        if (!npoints || sh->xmax > xmax) xmax = sh->xmax;
    }

    // The y axis caption; a log axis says so (its ticks alone would pass for a linear one).
    if (opt->log_y)
        snprintf(L->ylabel, sizeof L->ylabel, "%.200s%slog scale", opt->ylabel ? opt->ylabel : "",
                 opt->ylabel && *opt->ylabel ? " (" : "");
    else snprintf(L->ylabel, sizeof L->ylabel, "%.200s", opt->ylabel ? opt->ylabel : "");
    if (opt->log_y && opt->ylabel && *opt->ylabel) strcat(L->ylabel, ")");

    // Layout: title, ylabel caption, plot area, x tick labels, xlabel.
    int top = y + pad;
    if (opt->title && *opt->title) top += lh + pad / 2;
    if (L->ylabel[0]) top += lh + pad / 2;
    int bottom = y + h - pad - lh - 4 * ts;   // x tick labels under the axis
    if (opt->xlabel && *opt->xlabel) bottom -= lh;
    int ph = bottom - top;
    if (ph < 20) return -1;
    viz_plot_axis(&L->ay, ymin, ymax, opt->log_y, ph / (28 * ts));
    char label[64];
    int ylab_w = 0;
    for (int k = 0; k < L->ay.nticks; k++) {
        viz_tick_label(label, sizeof label, L->ay.ticks[k], &L->ay);
        int tw = text_width(label, L->fs);
        if (tw > ylab_w) ylab_w = tw;
    }
    int lm = pad + ylab_w + 6 * ts, rm = pad + 4 * ts;
    if (sh && sh->left > lm) lm = sh->left;
    if (sh && sh->right > rm) rm = sh->right;
    int left = x + lm, right = x + w - rm;
    int pw = right - left;
    if (pw < 20) return -1;
    axis_linear(&L->ax, xmin, xmax, sh && sh->xwant ? sh->xwant : pw / (70 * ts), opt->x_whole);
    L->top = top; L->bottom = bottom; L->left = left; L->right = right;
    L->ph = ph; L->pw = pw;
    return 0;
}

// A run of points mapped to pixels, thinned in place to what a pixel column can show: of each stretch
// of consecutive points in one column the first, the lowest, the highest and the last, in their order
// (M4 aggregation), so the line covers the same columns and the same span in each. Returns the count
// kept. Stroking every point made a redraw of curves.png cost more than linearly in the points: 6.7 s
// for 100,000 logged steps, 270 s for a million, paid at every evaluation of a long run
// (docs/testing.md, "The commands, tried as a hostile user would").
static int thin_to_columns(double *px, double *py, int n) {
    int out = 0;
    for (int i = 0, j; i < n; i = j) {
        double col = floor(px[i]);
        int lo = i, hi = i;
        for (j = i; j < n && floor(px[j]) == col; j++) {
            if (py[j] < py[lo]) lo = j;
            if (py[j] > py[hi]) hi = j;
        }
        // Indices in order, each once; every one is at or past `out`, so the copy reads no point it wrote.
        int keep[4] = {i, lo < hi ? lo : hi, lo < hi ? hi : lo, j - 1}, last = -1;
        for (int k = 0; k < 4; k++) {
            if (keep[k] == last) continue;
            px[out] = px[keep[k]];
            py[out] = py[keep[k]];
            out++;
            last = keep[k];
        }
    }
    return out;
}

// plot_draw's status when memory ran out for a series' points (plot_layout's -1: the box too small).
enum { PLOT_OOM = -2 };

static int plot_draw(Canvas *c, int x, int y, int w, int h, const PlotSeries *series, int nseries,
                     const PlotOptions *opt, const PlotShare *sh) {
    static const PlotOptions no_opt = {0};
    if (!opt) opt = &no_opt;
    PlotLayout L;
    if (plot_layout(&L, x, y, w, h, series, nseries, opt, sh)) return -1;
    const uint8_t white[3] = {255, 255, 255}, ink[3] = {40, 40, 40}, grid[3] = {225, 225, 225},
                  frame[3] = {160, 160, 160};
    int ts = L.ts, lh = L.lh, pad = L.pad, top = L.top, bottom = L.bottom, left = L.left, right = L.right;
    int ph = L.ph, pw = L.pw, npoints = L.npoints;
    double fs = L.fs;
    const Axis ax = L.ax, ay = L.ay;
    canvas_fill_rect(c, x, y, w, h, white);
    char label[64];

    if (opt->title && *opt->title)
        canvas_text(c, x + (w - text_width(opt->title, fs)) / 2, y + pad, opt->title, ink, fs);
    if (L.ylabel[0])
        canvas_text(c, x + pad, top - lh - pad / 2, L.ylabel, ink, fs);
    if (opt->xlabel && *opt->xlabel)
        canvas_text(c, left + (pw - text_width(opt->xlabel, fs)) / 2, bottom + 4 * ts + lh + 2,
                  opt->xlabel, ink, fs);
    // Grid, ticks and their labels.
    for (int k = 0; k < ay.nticks; k++) {
        int py = bottom - 1 - frac_to_px(axis_frac(&ay, ay.ticks[k]), ph);
        canvas_fill_rect(c, left, py, pw, 1, grid);
        canvas_fill_rect(c, left - 3 * ts, py, 3 * ts, 1, ink);
        viz_tick_label(label, sizeof label, ay.ticks[k], &ay);
        canvas_text(c, left - 5 * ts - text_width(label, fs), py - lh / 2, label, ink, fs);
    }
    for (int k = 0; k < ax.nticks; k++) {
        int px = left + frac_to_px(axis_frac(&ax, ax.ticks[k]), pw);
        canvas_fill_rect(c, px, top, 1, ph, grid);
        canvas_fill_rect(c, px, bottom, 1, 3 * ts, ink);
        viz_tick_label(label, sizeof label, ax.ticks[k], &ax);
        int tw = text_width(label, fs), lx = px - tw / 2;
        if (lx + tw > x + w - 1) lx = x + w - 1 - tw;   // keep end labels inside the box
        if (lx < x + 1) lx = x + 1;
        canvas_text(c, lx, bottom + 4 * ts + 1, label, ink, fs);
    }
    canvas_rect(c, left, top, pw, ph, 1, frame);
    canvas_fill_rect(c, left, top, 1, ph, ink);        // y axis
    canvas_fill_rect(c, left, bottom - 1, pw, 1, ink); // x axis

    // Series: anti-aliased lines through runs of consecutive drawable points; a lone point is a dot.
    double pen = 1.25 * ts;
    for (int s = 0; s < nseries; s++) {
        const PlotSeries *se = &series[s];
        uint8_t col[3];
        if (se->has_rgb) memcpy(col, se->rgb, 3); else viz_palette(s, col);
        double *run_x = malloc(sizeof(double) * (size_t)(se->n > 0 ? se->n : 1));
        double *run_y = malloc(sizeof(double) * (size_t)(se->n > 0 ? se->n : 1));
        if (!run_x || !run_y) { free(run_x); free(run_y); return PLOT_OOM; }   // not a plot without this line
        int nrun = 0;
        for (int i = 0; i <= se->n; i++) {
            if (i < se->n && point_ok(se, i, opt->log_y)) {
                run_x[nrun] = left + frac_to_px(axis_frac(&ax, se->x[i]), pw) + 0.5;
                run_y[nrun] = bottom - 1 - frac_to_px(axis_frac(&ay, se->y[i]), ph) + 0.5;
                nrun++;
                continue;
            }
            // More points than four per column of the plot (a long run's logged steps): thinned,
            // so the cost of a redraw stays bounded; fewer are drawn as they are.
            if (nrun > 4 * pw) nrun = thin_to_columns(run_x, run_y, nrun);
            if (nrun) canvas_polyline(c, run_x, run_y, nrun, nrun == 1 ? 3.0 * ts : pen, col);
            nrun = 0;
        }
        free(run_x);
        free(run_y);
    }
    if (!npoints) {
        const char *msg = "no data";
        canvas_text(c, left + (pw - text_width(msg, fs)) / 2, top + ph / 2 - lh / 2, msg, ink, fs);
    }

    // Legend, inside the plot area in the corner where it covers the least of the lines drawn (top
    // right unless another corner covers less: a top-1 curve that rises to the top right keeps its
    // end in view): the series that drew something (a run without validation has no "val loss" entry).
    int nleg = 0, legw = 0;
    for (int s = 0; s < nseries; s++)
        if (in_legend(&series[s], opt->log_y)) {
            nleg++;
            int tw = text_width(series[s].label, fs);
            if (tw > legw) legw = tw;
        }
    if (nleg) {
        int sample = 14 * ts, bw = legw + sample + 4 * pad / 2 + 2, bh = nleg * lh + pad;
        int bx = right - bw - pad, by = top + pad;
        long least = -1;
        for (int corner = 0; corner < 4; corner++) {   // top right, top left, bottom right, bottom left
            int cx = corner % 2 ? left + pad + 1 : right - bw - pad, cy = corner < 2 ? top + pad : bottom - 1 - bh - pad;
            long ink_px = 0;   // pixels of the lines: neither the background nor a grid line
            for (int yy = cy; yy < cy + bh; yy++)
                for (int xx = cx; xx < cx + bw; xx++) {
                    if (xx < 0 || yy < 0 || xx >= c->w || yy >= c->h) continue;
                    const uint8_t *q = c->px + ((size_t)yy * c->w + xx) * 3;
                    ink_px += memcmp(q, white, 3) && memcmp(q, grid, 3);
                }
            if (least < 0 || ink_px < least) { least = ink_px; bx = cx; by = cy; }
        }
        canvas_fill_rect(c, bx, by, bw, bh, white);
        canvas_rect(c, bx, by, bw, bh, 1, frame);
        int row = 0;
        for (int s = 0; s < nseries; s++) {
            if (!in_legend(&series[s], opt->log_y)) continue;
            uint8_t col[3];
            if (series[s].has_rgb) memcpy(col, series[s].rgb, 3); else viz_palette(s, col);
            int ly = by + pad / 2 + row * lh;
            canvas_fill_rect(c, bx + pad / 2, ly + 3 * ts, sample, 2 * ts, col);
            canvas_text(c, bx + pad / 2 + sample + pad / 2, ly, series[s].label, ink, fs);
            row++;
        }
    }
    return 0;
}

int viz_plot(Canvas *c, int x, int y, int w, int h, const PlotSeries *series, int nseries,
             const PlotOptions *opt) {
    return plot_draw(c, x, y, w, h, series, nseries, opt, NULL);
}

int viz_plot_png(const char *path, int w, const PlotPanel *panels, int npanels, char *err, size_t errlen) {
    int h = 0;
    for (int i = 0; i < npanels; i++) h += panels[i].h;
    Canvas c = {0};
    char why[PNG_WRITE_WHY_MAX];   // a folder's name in it whole (data/image.h)
    if (canvas_create(&c, w, h, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", path, why);   // which picture: a run writes several (docs/data.md, "Run folders")
        return -1;
    }
    static const uint8_t white[3] = {255, 255, 255};
    static const PlotOptions no_opt = {0};
    canvas_fill(&c, white);
    // The panels share one x range (the union of their points) and the edges of the plot area (the
    // widest margins), so that a step is at the same x in every panel.
    PlotShare sh = {0, INFINITY, -INFINITY, 0, 0, 0};
    for (int i = 0; i < npanels; i++) {
        const PlotOptions *o = panels[i].opt ? panels[i].opt : &no_opt;
        for (int s = 0; s < panels[i].nseries; s++)
            for (int k = 0; k < panels[i].series[s].n; k++) {
                if (!point_ok(&panels[i].series[s], k, o->log_y)) continue;
                double px = panels[i].series[s].x[k];
                if (px < sh.xmin) sh.xmin = px;
                if (px > sh.xmax) sh.xmax = px;
                sh.has_x = 1;
            }
    }
    int rc = 0;
    for (int i = 0, y = 0; i < npanels && rc == 0; y += panels[i].h, i++) {
        PlotLayout L;
        const PlotOptions *o = panels[i].opt ? panels[i].opt : &no_opt;
        rc = plot_layout(&L, 0, y, w, panels[i].h, panels[i].series, panels[i].nseries, o, &sh);
        if (rc == 0 && L.left > sh.left) sh.left = L.left;
        if (rc == 0 && w - L.right > sh.right) sh.right = w - L.right;
    }
    // One x axis for all: the fewest ticks any panel wants with the shared margins (its labels fit in
    // every panel), so that the axes end at the same nice step.
    for (int i = 0, y = 0; i < npanels && rc == 0; y += panels[i].h, i++) {
        PlotLayout L;
        const PlotOptions *o = panels[i].opt ? panels[i].opt : &no_opt;
        rc = plot_layout(&L, 0, y, w, panels[i].h, panels[i].series, panels[i].nseries, o, &sh);
        int want = rc == 0 ? L.pw / (70 * L.ts) : 0;
        if (rc == 0 && (i == 0 || want < sh.xwant)) sh.xwant = want;
    }
    if (rc == 0 && sh.xwant < 2) sh.xwant = 2;
    for (int i = 0, y = 0; i < npanels && rc == 0; y += panels[i].h, i++)
        rc = plot_draw(&c, 0, y, w, panels[i].h, panels[i].series, panels[i].nseries, panels[i].opt, &sh);
    if (rc == 0) {
        // The x range of the points drawn (RUN/curves.png: the first and last step it shows), so that
        // a reader can tell which rows of metrics.csv the picture holds (docs/interface.md, curves.png).
        char xr[64];
        snprintf(xr, sizeof xr, "%.17g %.17g", sh.xmin, sh.xmax);
        const char *text[] = {"Software", "vitmae", sh.has_x ? "x_range" : NULL, xr, NULL};
        rc = png_write(path, c.px, c.w, c.h, 3, text, why, sizeof why);
        if (rc) snprintf(err, errlen, "%s: %s", path, why);   // which file: a run writes several
    } else if (rc == PLOT_OOM) {
        snprintf(err, errlen, "%s: out of memory", path);
    } else {
        snprintf(err, errlen, "curves: plot box too small");
    }
    canvas_free(&c);
    return rc;
}
