// Maps over photographs at display size, and montage layout. See overlay.h.
#include "viz/overlay.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "data/image.h"

void overlay_display_size(int w, int h, int display, int scale, int *dw, int *dh, int *k) {
    int longest = w > h ? w : h;
    if (display < 1) display = 1;
    if (scale > 0 || longest <= display) {
        int f = scale > 0 ? scale : display / longest;
        if (f < 1) f = 1;
        *k = f; *dw = w * f; *dh = h * f;
        return;
    }
    *k = 0;
    double s = (double)display / longest;
    *dw = (int)lround(w * s); *dh = (int)lround(h * s);
    if (*dw < 1) *dw = 1;
    if (*dh < 1) *dh = 1;
}

int overlay_display_photo(const float *photo, int w, int h, int c, int dw, int dh, int k, float *out) {
    if (k == 0) return image_resize_bilinear(photo, w, h, c, out, dw, dh);
    for (int y = 0; y < dh; y++)
        for (int x = 0; x < dw; x++)
            memcpy(out + ((size_t)y * dw + x) * c, photo + ((size_t)(y / k) * w + (size_t)(x / k)) * c,
                   sizeof(float) * (size_t)c);
    return 0;
}

// Cell coordinate of a display pixel centre along one axis of the box: bilinear gives the
// interpolation position (clamped to [0, g - 1]), nearest the cell index.
static double cell_coord(int p, double origin, double len, int g, int bilinear) {
    double t = ((double)p + 0.5 - origin) / len * g;
    if (!bilinear) {
        double f = floor(t);
        return f < 0 ? 0 : f > g - 1 ? g - 1 : f;
    }
    t -= 0.5;
    return t < 0 ? 0 : t > g - 1 ? g - 1 : t;
}

void overlay_map(const float *map, int gw, int gh, const double box[4], int dw, int dh, int bilinear, float *out) {
    for (int y = 0; y < dh; y++) {
        double cy = y + 0.5;
        int in_y = cy >= box[1] && cy < box[1] + box[3];
        double v = in_y ? cell_coord(y, box[1], box[3], gh, bilinear) : 0;
        int y0 = (int)v, y1 = y0 + 1 < gh ? y0 + 1 : gh - 1;
        double fy = v - y0;
        for (int x = 0; x < dw; x++) {
            double cx = x + 0.5;
            float *o = out + (size_t)y * dw + x;
            if (!in_y || cx < box[0] || cx >= box[0] + box[2]) { *o = NAN; continue; }
            double u = cell_coord(x, box[0], box[2], gw, bilinear);
            int x0 = (int)u, x1 = x0 + 1 < gw ? x0 + 1 : gw - 1;
            double fx = u - x0;
            double a = map[(size_t)y0 * gw + x0], b = map[(size_t)y0 * gw + x1];
            double cc = map[(size_t)y1 * gw + x0], d = map[(size_t)y1 * gw + x1];
            if (isfinite(a) && isfinite(b) && isfinite(cc) && isfinite(d)) {
                double top = a + (b - a) * fx, bottom = cc + (d - cc) * fx;
                *o = (float)(top + (bottom - top) * fy);
                continue;
            }
            // A NaN cell (a masked patch) has no value to lend: the finite corners' weights are
            // renormalised, so a visible patch shows its own value, not a blend toward a filler.
            const double v4[4] = {a, b, cc, d}, w4[4] = {(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy};
            double sum = 0, wsum = 0;
            for (int k = 0; k < 4; k++)
                if (isfinite(v4[k]) && w4[k] > 0) { sum += w4[k] * v4[k]; wsum += w4[k]; }
            *o = wsum > 0 ? (float)(sum / wsum) : NAN;
        }
    }
}

void overlay_cell_rect(const double box[4], int gw, int gh, int gx, int gy, int r[4]) {
    r[0] = (int)lround(box[0] + box[2] * gx / gw);
    r[1] = (int)lround(box[1] + box[3] * gy / gh);
    r[2] = (int)lround(box[0] + box[2] * (gx + 1) / gw);
    r[3] = (int)lround(box[1] + box[3] * (gy + 1) / gh);
}

static inline uint8_t blend_u8(float img, float alpha, uint8_t colour) {
    float v = (1.0f - alpha) * 255.0f * (img > 0 ? (img < 1 ? img : 1) : 0) + alpha * colour;
    if (!(v > 0)) return 0;
    if (v >= 255) return 255;
    return (uint8_t)floorf(v + 0.5f);
}

void overlay_draw(Canvas *c, int x, int y, const float *photo, int dw, int dh, int pc, const float *map,
                  double vmin, double vmax, int cmap, float alpha, const double box[4], int outline) {
    if (!(alpha > 0)) alpha = 0;
    if (alpha > 1) alpha = 1;
    const uint8_t *table = colormap_table(cmap);
    if (!table) table = colormap_table(CMAP_VIRIDIS);
    double range = vmax - vmin;
    for (int sy = 0; sy < dh; sy++) {
        int64_t cy = (int64_t)y + sy;
        if (cy < 0 || cy >= c->h) continue;
        for (int sx = 0; sx < dw; sx++) {
            int64_t cx = (int64_t)x + sx;
            if (cx < 0 || cx >= c->w) continue;
            size_t i = (size_t)sy * dw + sx;
            uint8_t *q = c->px + ((size_t)cy * c->w + (size_t)cx) * 3;
            float m = map[i];
            if (m != m) {   // outside the model's view: the photo, dimmed
                for (int k = 0; k < 3; k++) q[k] = blend_u8(photo[i * pc + (pc == 3 ? k : 0)], 0.55f, 0);
                continue;
            }
            float f = range > 0 ? (float)((m - vmin) / range) : 0.0f;
            int idx = !(f > 0) ? 0 : f >= 1 ? 255 : (int)floorf(f * 255.0f + 0.5f);
            const uint8_t *col = table + 3 * idx;
            for (int k = 0; k < 3; k++) {
                float v = photo[i * pc + (pc == 3 ? k : 0)];
                q[k] = blend_u8(v != v ? 0 : v, alpha, col[k]);
            }
        }
    }
    if (outline && box) {
        static const uint8_t dark[3] = {0, 0, 0}, light[3] = {255, 255, 255};
        int bx = x + (int)lround(box[0]), by = y + (int)lround(box[1]);
        int bw = (int)lround(box[0] + box[2]) - (int)lround(box[0]), bh = (int)lround(box[1] + box[3]) - (int)lround(box[1]);
        canvas_rect(c, bx - 2, by - 2, bw + 4, bh + 4, 2, dark);
        canvas_rect(c, bx - 1, by - 1, bw + 2, bh + 2, 1, light);
    }
}

int montage_auto_cols(int n) {
    if (n < 1) return 1;
    for (int c = 1; c <= n; c++)
        if (n % c == 0 && (long)c * c >= n) return c;
    return n;
}

// The size of m's cells in a grid of cols columns (cols divides n), in pixels (overlay.h).
static void montage_size(const Montage *m, int n, int cols, int min_w, long *w, long *h) {
    *w = m->pad + (long)cols * (m->cell_w + m->pad);
    *h = m->head_h + m->pad + (long)(n / cols) * (m->cell_h + m->pad);
    if (*w < min_w) *w = min_w;
}

int montage_plan(Montage *m, int n, int cols, int tile_w, int tile_h, int label_h, int bar_h, int head_h,
                 int pad, int min_cell_w, int min_w, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    if (n < 1 || tile_w < 1 || tile_h < 1 || label_h < 0 || bar_h < 0 || head_h < 0 || pad < 0 || min_cell_w < 0 ||
        min_w < 0 || min_cell_w > VIZ_MAX_SIDE || min_w > VIZ_MAX_SIDE) {
        snprintf(err, errlen, "montage of %d tiles of %dx%d: bad sizes", n, tile_w, tile_h);
        return -1;
    }
    int choose = cols <= 0;
    if (choose) cols = montage_auto_cols(n);
    if (n % cols) { snprintf(err, errlen, "%d columns do not divide %d tiles", cols, n); return -1; }
    m->n = n; m->tile_w = tile_w; m->tile_h = tile_h; m->label_h = label_h; m->bar_h = bar_h;
    m->head_h = head_h; m->pad = pad;
    m->cell_w = tile_w > min_cell_w ? tile_w : min_cell_w; m->cell_h = label_h + tile_h + bar_h;
    m->tile_x = (m->cell_w - tile_w) / 2;
    long w, h;
    montage_size(m, n, cols, min_w, &w, &h);
    if (w > VIZ_MAX_SIDE || h > VIZ_MAX_SIDE) {
        // The width grows with the columns and the height shrinks, so only fewer columns can help a grid
        // too wide and only more one too tall (both: none can); the nearest such divisor that fits.
        int step = w > VIZ_MAX_SIDE ? -1 : 1, fit = 0;
        for (int c = cols + step; choose && !fit && c >= 1 && c <= n; c += step) {
            long cw, ch;
            if (n % c) continue;
            montage_size(m, n, c, min_w, &cw, &ch);
            if (cw <= VIZ_MAX_SIDE && ch <= VIZ_MAX_SIDE) { fit = c; w = cw; h = ch; }
        }
        if (!fit) {   // the preferred grid's size is the one told
            snprintf(err, errlen, "montage of %d x %d tiles too large (%ld x %ld pixels)", cols, n / cols, w, h);
            return -1;
        }
        cols = fit;
    }
    m->cols = cols; m->rows = n / cols;
    m->w = (int)w; m->h = (int)h;
    return 0;
}

void montage_cell_origin(const Montage *m, int i, int *x, int *y) {
    int col = i % m->cols, row = i / m->cols;
    *x = m->pad + col * (m->cell_w + m->pad);
    *y = m->head_h + m->pad + row * (m->cell_h + m->pad);
}

void montage_tile_origin(const Montage *m, int i, int *x, int *y) {
    montage_cell_origin(m, i, x, y);
    *x += m->tile_x;
    *y += m->label_h;
}
