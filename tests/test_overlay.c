// overlay.h + attnmap's colour scales: where a map lands on a non-square photo at display size, the
// display sizes, the montage layout (no empty cell, size = the tiles it holds), and colour-bar labels
// that are the data's range.
#include <math.h>
#include <string.h>

#include "check.h"
#include "data/image.h"
#include "viz/attnmap.h"
#include "viz/overlay.h"
#include "viz/text.h"

// Bounding box {x0, y0, x1, y1} (half-open) of the display pixels whose map value is >= thr.
static void hot_box(const float *m, int dw, int dh, float thr, int b[4]) {
    b[0] = dw; b[1] = dh; b[2] = 0; b[3] = 0;
    for (int y = 0; y < dh; y++)
        for (int x = 0; x < dw; x++) {
            float v = m[(size_t)y * dw + x];
            if (!(v >= thr)) continue;
            if (x < b[0]) b[0] = x;
            if (y < b[1]) b[1] = y;
            if (x + 1 > b[2]) b[2] = x + 1;
            if (y + 1 > b[3]) b[3] = y + 1;
        }
}

static int near_box(const int b[4], const int want[4]) {
    for (int k = 0; k < 4; k++)
        if (abs(b[k] - want[k]) > 1) return 0;
    return 1;
}

// One hot patch (gx, gy) of a 4 x 4 grid on a w x h photo (model view 16 px) drawn at `display`:
// the hot region must be the patch's box in display pixels, want = {x0, y0, x1, y1}.
static void check_hot_patch(int w, int h, int display, int gx, int gy, const int want_display[2],
                            const double want_box[4], const int want[4]) {
    int dw, dh, k;
    overlay_display_size(w, h, display, 0, &dw, &dh, &k);
    CHECK(dw == want_display[0] && dh == want_display[1], "%dx%d at %d: display %dx%d, want %dx%d", w, h,
          display, dw, dh, want_display[0], want_display[1]);
    double box[4];
    image_eval_box(w, h, 16, 1.0, box);
    for (int i = 0; i < 4; i++)
        CHECK(fabs(box[i] - want_box[i]) < 1e-9, "%dx%d: crop box[%d] %g, want %g", w, h, i, box[i], want_box[i]);
    double dbox[4] = {box[0] * dw / w, box[1] * dh / h, box[2] * dw / w, box[3] * dh / h};
    float map[16];
    for (int i = 0; i < 16; i++) map[i] = 0.1f;
    map[gy * 4 + gx] = 1.0f;
    float *up = malloc(sizeof(float) * (size_t)dw * dh);
    if (!up) { CHECK(0, "out of memory"); return; }
    for (int bl = 0; bl < 2; bl++) {
        overlay_map(map, 4, 4, dbox, dw, dh, bl, up);
        int b[4];
        // Nearest: the value 1 fills the patch. Bilinear: the patch's edges are half-way to its
        // neighbours, (1 + 0.1) / 2 = 0.55, so >= 0.55 is the patch again.
        hot_box(up, dw, dh, bl ? 0.5499f : 1.0f, b);
        CHECK(near_box(b, want), "%dx%d %s: hot box (%d,%d)-(%d,%d), want (%d,%d)-(%d,%d)", w, h,
              bl ? "bilinear" : "nearest", b[0], b[1], b[2], b[3], want[0], want[1], want[2], want[3]);
        // Outside the model's view there is no map.
        int nan_in = 0, nan_out = 0;
        for (int y = 0; y < dh; y++)
            for (int x = 0; x < dw; x++) {
                int in = x + 0.5 >= dbox[0] && x + 0.5 < dbox[0] + dbox[2] && y + 0.5 >= dbox[1] && y + 0.5 < dbox[1] + dbox[3];
                int nan = isnan(up[(size_t)y * dw + x]);
                nan_in += in && nan;
                nan_out += !in && !nan;
            }
        CHECK(nan_in == 0 && nan_out == 0, "%dx%d: map exactly over the crop (%d, %d wrong)", w, h, nan_in, nan_out);
    }
    int r[4];
    overlay_cell_rect(dbox, 4, 4, gx, gy, r);
    CHECK(near_box(r, want), "cell rect (%d,%d)-(%d,%d)", r[0], r[1], r[2], r[3]);
    free(up);
}

static void test_geometry(void) {
    // 90 x 60 (3:2): the model sees the centre 60 x 60 (resize to 24 x 16, crop from x = 4, i.e.
    // 15 photo pixels); shown at 180 (x2, whole pixels). Patch (2, 1): x 30 + 2 * 30, y 30.
    check_hot_patch(90, 60, 180, 2, 1, (int[2]){180, 120}, (double[4]){15, 0, 60, 60}, (int[4]){90, 30, 120, 60});
    // 900 x 600 shrunk to 300 x 200: crop (150, 0, 600, 600) -> (50, 0, 200, 200); patch (3, 0).
    check_hot_patch(900, 600, 300, 3, 0, (int[2]){300, 200}, (double[4]){150, 0, 600, 600}, (int[4]){200, 0, 250, 50});
    // 60 x 150 (tall): resize to 16 x 40, crop from y = 12 (45 photo pixels); at 300: x2.
    check_hot_patch(60, 150, 300, 2, 1, (int[2]){120, 300}, (double[4]){0, 45, 60, 60}, (int[4]){60, 120, 90, 150});
    // 1000 x 563 (16:9-ish) at 512: resize to 28 x 16 (int(16 * 1000 / 563)), crop from x = 6, so
    // the crop is 6..22 of 28 columns = photo x 214.29..785.71 (571.4 wide, 563 tall); scale 0.512.
    double s = 512.0 / 1000, cx = 6 * 1000.0 / 28, cw = 16 * 1000.0 / 28;
    int want[4] = {(int)lround(cx * s), (int)lround(3 * 563 / 4.0 * s), (int)lround((cx + cw / 4) * s), 288};
    check_hot_patch(1000, 563, 512, 0, 3, (int[2]){512, 288}, (double[4]){cx, 0, cw, 563}, want);

    // Display sizes: never beyond `display`; small photos grow by whole pixels; --scale forces it.
    int dw, dh, k;
    overlay_display_size(28, 28, 512, 0, &dw, &dh, &k);
    CHECK(dw == 504 && dh == 504 && k == 18, "28 px at 512: %dx%d k %d", dw, dh, k);
    overlay_display_size(4000, 3000, 512, 0, &dw, &dh, &k);
    CHECK(dw == 512 && dh == 384 && k == 0, "4000x3000 at 512: %dx%d k %d", dw, dh, k);
    overlay_display_size(512, 300, 512, 0, &dw, &dh, &k);
    CHECK(dw == 512 && dh == 300 && k == 1, "512 wide at 512: as it is (%dx%d k %d)", dw, dh, k);
    overlay_display_size(4000, 3000, 512, 1, &dw, &dh, &k);
    CHECK(dw == 4000 && dh == 3000 && k == 1, "--scale 1 keeps the photo's size");

    // Drawing: inside the crop the map's colour (alpha 1), outside the photo dimmed, the crop outlined.
    char err[128];
    Canvas c;
    CHECK(canvas_create(&c, 180, 120, err, sizeof err) == 0, "canvas");
    float *photo = malloc(sizeof(float) * 180 * 120 * 3), *up = malloc(sizeof(float) * 180 * 120);
    if (!photo || !up) { CHECK(0, "out of memory"); free(photo); free(up); canvas_free(&c); return; }
    for (int i = 0; i < 180 * 120 * 3; i++) photo[i] = 1.0f;
    float map[16];
    for (int i = 0; i < 16; i++) map[i] = 0.1f;
    map[1 * 4 + 2] = 1.0f;
    double dbox[4] = {30, 0, 120, 120};
    overlay_map(map, 4, 4, dbox, 180, 120, 0, up);
    overlay_draw(&c, 0, 0, photo, 180, 120, 3, up, 0.0, 1.0, CMAP_VIRIDIS, 1.0f, dbox, 1);
    const uint8_t *top = colormap_table(CMAP_VIRIDIS) + 255 * 3;
    const uint8_t *p = c.px + ((size_t)45 * 180 + 105) * 3;
    CHECK(p[0] == top[0] && p[1] == top[1] && p[2] == top[2], "hot patch centre is the top colour");
    p = c.px + ((size_t)60 * 180 + 10) * 3;
    CHECK(p[0] == 115 && p[1] == 115 && p[2] == 115, "outside the crop: white dimmed to 45%% (%d)", p[0]);
    p = c.px + ((size_t)60 * 180 + 29) * 3;
    CHECK(p[0] == 255 && p[1] == 255 && p[2] == 255, "outline: white just outside the crop");
    free(photo); free(up);
    canvas_free(&c);
}

static void test_montage(void) {
    char err[128];
    for (int n = 1; n <= 40; n++) {
        int cols = montage_auto_cols(n), rows = n / cols;
        CHECK(n % cols == 0 && cols >= rows, "%d tiles: %d columns", n, cols);
        Montage m;
        CHECK(montage_plan(&m, n, 0, 70, 50, 15, 20, 33, 10, 0, 0, err, sizeof err) == 0, "%s", err);
        // The montage is exactly its cells: the last tile's cell ends a pad before the edges.
        int x, y;
        montage_tile_origin(&m, n - 1, &x, &y);
        CHECK(m.rows * m.cols == n && x + 70 + 10 == m.w && y + 50 + 20 + 10 == m.h,
              "%d tiles: %dx%d montage, last tile at (%d, %d)", n, m.w, m.h, x, y);
        CHECK(m.w == 10 + cols * 80 && m.h == 33 + 10 + rows * 95, "%d tiles: size formula", n);
    }
    CHECK(montage_auto_cols(3) == 3 && montage_auto_cols(12) == 4 && montage_auto_cols(6) == 3 &&
          montage_auto_cols(16) == 4 && montage_auto_cols(7) == 7, "columns for 3, 12, 6, 16, 7 tiles");
    Montage m;
    // Narrow tiles (a photo of 1 x 4000 pixels): cells of min_cell_w, the picture centred in its cell,
    // the montage at least min_w wide.
    CHECK(montage_plan(&m, 4, 4, 3, 200, 15, 20, 33, 10, 120, 0, err, sizeof err) == 0 && m.cell_w == 120 &&
          m.tile_x == 58 && m.w == 10 + 4 * 130, "narrow tiles: cells of 120 (%d, %d, %d)", m.cell_w, m.tile_x, m.w);
    int cx, cy, tx, ty;
    montage_cell_origin(&m, 1, &cx, &cy);
    montage_tile_origin(&m, 1, &tx, &ty);
    CHECK(cx == 140 && cy == 43 && tx == 198 && ty == 58, "narrow tiles: cell (%d, %d), picture (%d, %d)", cx, cy, tx, ty);
    CHECK(montage_plan(&m, 1, 1, 3, 200, 15, 20, 33, 10, 120, 380, err, sizeof err) == 0 && m.w == 380 && m.cell_w == 120,
          "a montage at least min_w wide (%d)", m.w);
    CHECK(montage_plan(&m, 12, 5, 10, 10, 0, 0, 0, 0, 0, 0, err, sizeof err) == -1, "5 columns of 12 refused");
    CHECK(montage_plan(&m, 0, 0, 10, 10, 0, 0, 0, 0, 0, 0, err, sizeof err) == -1, "no tile refused");
    CHECK(montage_plan(&m, 4, 4, 30000, 10, 0, 0, 0, 1, 0, 0, err, sizeof err) == -1, "too wide refused");
    // Columns chosen (0): where the nearest square (3 x 2 of 6) is too large, the nearest divisor of 6
    // that fits, fewer columns for a grid too wide, more for one too tall (a 1 x 4000 photo's 6 layers
    // at --scale 16 were refused, 400 x 128114 pixels, where 6 x 1 fits); the preferred grid named when
    // none fits, and columns given are kept.
    CHECK(montage_plan(&m, 6, 0, 10, 40000, 0, 0, 0, 0, 0, 0, err, sizeof err) == 0 && m.cols == 6 && m.rows == 1 &&
          m.w == 60 && m.h == 40000, "6 tall tiles: 6 x 1 (%d x %d, %d x %d)", m.cols, m.rows, m.w, m.h);
    CHECK(montage_plan(&m, 6, 0, 30000, 10, 0, 0, 0, 0, 0, 0, err, sizeof err) == 0 && m.cols == 2 && m.rows == 3 &&
          m.w == 60000 && m.h == 30, "6 wide tiles: 2 x 3 (%d x %d)", m.cols, m.rows);
    CHECK(montage_plan(&m, 6, 0, 40000, 10, 0, 0, 0, 0, 0, 0, err, sizeof err) == 0 && m.cols == 1 && m.rows == 6,
          "6 wider tiles: 1 x 6 (%d x %d)", m.cols, m.rows);
    CHECK(montage_plan(&m, 6, 0, 40000, 40000, 0, 0, 0, 0, 0, 0, err, sizeof err) == -1 &&
          !strcmp(err, "montage of 3 x 2 tiles too large (120000 x 80000 pixels)"), "none fits: %s", err);
    CHECK(montage_plan(&m, 6, 3, 10, 40000, 0, 0, 0, 0, 0, 0, err, sizeof err) == -1 &&
          !strcmp(err, "montage of 3 x 2 tiles too large (30 x 80000 pixels)"), "3 columns given: %s", err);
}

// The labels of a horizontal bar drawn for [vmin, vmax] are exactly the text of those two values:
// the bar's pixels equal the bar itself plus canvas_text of the expected strings at the documented
// places (viz.h).
static int bar_labels_are(double vmin, double vmax, const char *lo, const char *hi) {
    char err[128];
    Canvas a, b;
    const double ts = 12;
    int W = 240, H = 40, x = 5, y = 5, w = 220, h = 8;
    if (canvas_create(&a, W, H, err, sizeof err) || canvas_create(&b, W, H, err, sizeof err)) return 0;
    canvas_fill(&a, (const uint8_t[3]){255, 255, 255});
    ColorBar cb = {CMAP_VIRIDIS, vmin, vmax, NAN, NULL, ts, {0, 0, 0}};
    viz_colorbar(&a, x, y, w, h, 0, &cb);
    canvas_fill(&b, (const uint8_t[3]){255, 255, 255});
    for (int r = y; r < y + h; r++) memcpy(b.px + ((size_t)r * W) * 3, a.px + ((size_t)r * W) * 3, (size_t)W * 3);
    canvas_text(&b, x, y + h + 2, lo, (const uint8_t[3]){0, 0, 0}, ts);
    canvas_text(&b, x + w - text_width(hi, ts), y + h + 2, hi, (const uint8_t[3]){0, 0, 0}, ts);
    int same = memcmp(a.px, b.px, (size_t)W * H * 3) == 0;
    canvas_free(&a); canvas_free(&b);
    return same;
}

static void test_scales(void) {
    // Two maps of one layer and one of another, 2 x 2 grids; NaN = a masked patch.
    const float grids[3 * 4] = {0.007f, 0.0291f, 0.012f, NAN,
                                0.02f, 0.01f, 0.015f, 0.011f,
                                0.3f, 0.1f, 0.2f, 0.4f};
    const int layer[3] = {5, 5, 6};
    double lo, hi;
    attn_map_scale(ATTN_SCALE_LAYER, grids, layer, 3, 1, 4, &lo, &hi);
    CHECK(lo == 0 && hi == (double)0.0291f, "layer scale of map 1: 0..the layer's max (%g..%g)", lo, hi);
    attn_map_scale(ATTN_SCALE_LAYER, grids, layer, 3, 2, 4, &lo, &hi);
    CHECK(lo == 0 && hi == (double)0.4f, "layer scale of map 2: its own layer (%g)", hi);
    attn_map_scale(ATTN_SCALE_MAP, grids, layer, 3, 0, 4, &lo, &hi);
    CHECK(lo == (double)0.007f && hi == (double)0.0291f, "map scale: own min..max, NaN skipped");
    attn_map_scale(ATTN_SCALE_NONE, grids, layer, 3, 0, 4, &lo, &hi);
    CHECK(lo == 0 && hi == 1, "none: 0..1");

    // The bar of the layer-5 scale reads "0" and "0.0291"; a wrong label is told apart.
    attn_map_scale(ATTN_SCALE_LAYER, grids, layer, 3, 0, 4, &lo, &hi);
    CHECK(bar_labels_are(lo, hi, "0", "0.0291"), "bar labelled 0 .. 0.0291");
    CHECK(!bar_labels_are(lo, hi, "0", "1"), "a bar labelled 0 .. 1 would differ");
    CHECK(bar_labels_are(0.007f, 0.0291f, "0.007", "0.0291"), "map scale bar labelled 0.007 .. 0.0291");
}

// Masked patches (NaN cells) lend no value to visible ones (docs/interface.md, "Masked runs"): the
// attention command filled them with the map's minimum, so bilinear faded an isolated visible patch
// of weight 0.9 to 0.5 at its edges, colours its weight never had.
static void test_masked_cells(void) {
    float map[16];
    for (int i = 0; i < 16; i++) map[i] = NAN;
    map[1 * 4 + 1] = 0.9f;                          // isolated visible patch
    map[3 * 4 + 2] = 0.2f; map[3 * 4 + 3] = 0.6f;   // two visible neighbours
    map[0 * 4 + 3] = 0.1f;                          // the map's minimum, away from the others
    const double box[4] = {0, 0, 64, 64};
    float up[64 * 64];
    for (int bl = 0; bl < 2; bl++) {
        overlay_map(map, 4, 4, box, 64, 64, bl, up);
        int off = 0, nan_in = 0, outside = 0;
        for (int y = 16; y < 32; y++)
            for (int x = 16; x < 32; x++) off += up[y * 64 + x] != 0.9f;
        for (int y = 48; y < 64; y++)
            for (int x = 32; x < 64; x++) {
                float v = up[y * 64 + x];
                nan_in += !isfinite(v);
                outside += v < 0.2f || v > 0.6f;
            }
        CHECK(off == 0, "%s: %d of 256 pixels of an isolated visible patch are not its weight 0.9",
              bl ? "bilinear" : "nearest", off);
        CHECK(nan_in == 0 && outside == 0, "%s: two visible neighbours: %d NaN, %d outside 0.2..0.6",
              bl ? "bilinear" : "nearest", nan_in, outside);
        CHECK(!isfinite(up[40 * 64 + 8]), "%s: a pixel among masked patches only is NaN (%g)",
              bl ? "bilinear" : "nearest", up[40 * 64 + 8]);
    }
    // Every cell finite: plain bilinear, unchanged (cell i holds i; u = (p + 0.5) / 16 - 0.5 per axis).
    for (int i = 0; i < 16; i++) map[i] = (float)i;
    overlay_map(map, 4, 4, box, 64, 64, 1, up);
    CHECK(up[24 * 64 + 24] == 5.15625f && up[32 * 64 + 32] == 7.65625f, "finite map: bilinear (%g, %g)",
          up[24 * 64 + 24], up[32 * 64 + 32]);
}

int main(void) {
    test_geometry();
    test_montage();
    test_scales();
    test_masked_cells();
    return check_done();
}
