// mask.h: user mask images (odd sizes, nearest resize, the 0.5 threshold exactly, RGB vs grey,
// alpha ignored, bad input) and panel.h: the documented row size, what each panel shows, stacking.
#include "check.h"
#include "viz/text.h"
#include "data/image.h"
#include "data/mask.h"
#include "viz/panel.h"

static char dir[600];

// Writes px [h][w][c] as a PNG and reads it back as a mask of img_size / patch.
static int mask_of(const uint8_t *px, int w, int h, int c, int img_size, int patch, uint8_t *removed) {
    char path[700], err[256];
    snprintf(path, sizeof path, "%s/m.png", dir);
    if (png_write(path, px, w, h, c, NULL, err, sizeof err)) { CHECK(0, "png_write: %s", err); return -1; }
    int rc = mask_from_png(path, img_size, patch, removed, err, sizeof err);
    CHECK(rc == 0, "mask_from_png: %s", err);
    return rc;
}

static void test_masks(void) {
    uint8_t rm[64];
    // Grey 5 x 3 source onto a 3 x 3 grid of 2 x 2 patches (img 6): source row = y / 2, source
    // column = floor(x * 5 / 6) = 0,0,1,2,3,4, so patch (gy, gx) averages columns {0,0} {1,2} {3,4}.
    const uint8_t grey[15] = {255, 255, 0, 0, 0,          // 1 -> removed; 0.5 exactly -> removed; 0
                              127, 128, 128, 127, 127,    // 127/255 < 0.5; 128/255 -> removed; visible
                              128, 0, 254, 1, 255};       // removed; 127/255 visible; 128/255 removed
    const uint8_t want_grey[9] = {1, 1, 0, 0, 1, 0, 1, 0, 1};
    if (!mask_of(grey, 5, 3, 1, 6, 2, rm))
        for (int i = 0; i < 9; i++) CHECK(rm[i] == want_grey[i], "grey patch %d: %d, want %d", i, rm[i], want_grey[i]);

    // RGB 2 x 2 onto 2 x 2 patches (img 4, each source pixel fills one patch): luminance
    // 0.299 R + 0.587 G + 0.114 B: red 0.299 visible, green 0.587 removed, 128 grey removed, 127 visible.
    const uint8_t rgb[12] = {255, 0, 0,  0, 255, 0,  128, 128, 128,  127, 127, 127};
    const uint8_t want_rgb[4] = {0, 1, 1, 0};
    if (!mask_of(rgb, 2, 2, 3, 4, 2, rm))
        for (int i = 0; i < 4; i++) CHECK(rm[i] == want_rgb[i], "rgb patch %d: %d, want %d", i, rm[i], want_rgb[i]);
    // A colour patch half white, half black is exactly 0.5: removed.
    const uint8_t half[6] = {255, 255, 255, 0, 0, 0};
    if (!mask_of(half, 2, 1, 3, 2, 2, rm)) CHECK(rm[0] == 1, "RGB half white / half black (0.5) removed");
    const uint8_t yellow_blue[6] = {255, 255, 0, 0, 0, 255};   // (0.886 + 0.114) / 2 = 0.5 exactly
    if (!mask_of(yellow_blue, 2, 1, 3, 2, 2, rm)) CHECK(rm[0] == 1, "yellow + blue = 0.5 removed");
    const uint8_t red_green[6] = {255, 0, 0, 0, 255, 0};       // (0.299 + 0.587) / 2 = 0.443
    if (!mask_of(red_green, 2, 1, 3, 2, 2, rm)) CHECK(rm[0] == 0, "red + green = 0.443 visible");

    // Alpha is ignored: white with alpha 0 still removes, black with alpha 255 does not.
    const uint8_t rgba[8] = {255, 255, 255, 0,  0, 0, 0, 255};
    if (!mask_of(rgba, 2, 1, 4, 4, 2, rm)) CHECK(rm[0] == 1 && rm[1] == 0, "RGBA: %d %d, want 1 0", rm[0], rm[1]);

    // Nearest, not area, when shrinking: 8 x 8 with black even rows and white odd rows onto img 4
    // takes rows 0, 2, 4, 6 only (all black): every patch visible (an average would give 0.5).
    uint8_t stripes[64];
    for (int y = 0; y < 8; y++) for (int x = 0; x < 8; x++) stripes[y * 8 + x] = y % 2 ? 255 : 0;
    if (!mask_of(stripes, 8, 8, 1, 4, 2, rm))
        CHECK(!rm[0] && !rm[1] && !rm[2] && !rm[3], "nearest shrink samples even rows: %d %d %d %d",
              rm[0], rm[1], rm[2], rm[3]);
    for (int y = 0; y < 8; y++) for (int x = 0; x < 8; x++) stripes[y * 8 + x] = y % 2 ? 0 : 255;
    if (!mask_of(stripes, 8, 8, 1, 4, 2, rm))
        CHECK(rm[0] && rm[1] && rm[2] && rm[3], "nearest shrink, inverted: every patch removed");

    // Enlarging a 2 x 2 mask onto a 4 x 4 grid: each mask pixel covers 2 x 2 patches.
    const uint8_t small[4] = {255, 0, 0, 255};
    const uint8_t want_small[16] = {1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1};
    if (!mask_of(small, 2, 2, 1, 12, 3, rm))
        for (int i = 0; i < 16; i++) CHECK(rm[i] == want_small[i], "enlarged patch %d: %d", i, rm[i]);

    // Bad input: not an image, a size that is not a multiple of the patch.
    char err[256] = "";
    const uint8_t junk[] = "this is not a PNG file at all";
    CHECK(mask_from_mem(junk, sizeof junk, 4, 2, rm, err, sizeof err) == -1 && err[0], "junk refused (%s)", err);
    Image im = {2, 2, 1, (float[4]){0, 1, 0, 1}};
    CHECK(mask_from_image(&im, 5, 2, rm, err, sizeof err) == -1, "img 5 / patch 2 refused");
    CHECK(mask_from_image(&im, 4, 2, rm, err, sizeof err) == 0 && rm[0] == 0 && rm[1] == 1 && rm[3] == 1,
          "from a decoded image");
}

static int px_eq(const Canvas *c, int x, int y, int r, int g, int b) {
    const uint8_t *p = c->px + ((size_t)y * c->w + x) * 3;
    return p[0] == r && p[1] == g && p[2] == b;
}

static const uint8_t *px_at(const Canvas *c, int x, int y) { return c->px + ((size_t)y * c->w + x) * 3; }

static void test_panels(void) {
    MaeConfig cfg;
    mae_config_preset(&cfg, "tiny");
    cfg.img_size = 8; cfg.patch_size = 2; cfg.in_chans = 3;   // 4 x 4 grid
    int S = 8, L = 16, scale = 3;
    float orig[8 * 8 * 3], recon[8 * 8 * 3], perr[16];
    for (int i = 0; i < 8 * 8 * 3; i++) { orig[i] = 0.2f; recon[i] = (i % 3 == 0) ? 1.5f : 0.6f; }
    uint8_t removed[16] = {0};
    for (int l = 0; l < L; l++) { removed[l] = l % 4 != 0; perr[l] = 0.01f * l; }   // 12 of 16 removed

    char err[256];
    Canvas row;
    PanelOptions po = {S * scale, 0, 1, 0.0f, NULL};
    CHECK(panel_recon_row(&row, &cfg, orig, recon, removed, perr, &po, err, sizeof err) == 0, "%s", err);
    int s = S * scale, step = s + PANEL_GAP;
    double ts = panel_text_size(s);
    // The documented size: vmax = max patch error = 0.15. The panels (24 px) are narrower than the
    // short captions' words ("original" is wider): one caption for the row, wrapped to its width.
    int want_w = 5 * s + 5 * PANEL_GAP + PANEL_BAR_W + 3 + viz_colorbar_label_width(0.0, 0.15f, ts) + PANEL_GAP;
    char wrapped[256];
    const char *row_cap = "left to right: original, masked 75%, raw prediction, + visible, error";
    CHECK(text_width("original", ts) > s, "\"original\" is wider than a 24 px panel");
    int lines = text_wrap(row_cap, ts, want_w - PANEL_GAP, wrapped, sizeof wrapped);
    int top = lines * text_line_height(ts) + PANEL_GAP;
    CHECK(lines == 3, "the row's caption wraps to 3 lines in 176 px (%d)", lines);
    CHECK(row.w == want_w && row.h == top + s, "row %dx%d, want %dx%d", row.w, row.h, want_w, top + s);
    // The head shows exactly that caption (before, "original" ran over the masked panel's "masked").
    {
        Canvas ref;
        CHECK(canvas_create(&ref, row.w, top, err, sizeof err) == 0, "%s", err);
        canvas_fill(&ref, PANEL_BG);
        canvas_text(&ref, 0, 0, wrapped, (const uint8_t[3]){225, 225, 225}, ts);
        int diff = 0;
        for (int y = 0; y < top && ref.px; y++)
            for (int x = 0; x < row.w; x++) diff += memcmp(px_at(&row, x, y), px_at(&ref, x, y), 3) != 0;
        CHECK(ref.px && diff == 0, "24 px panels: the head is the row's caption (%d pixels differ)", diff);
        canvas_free(&ref);
    }
    int w2, h2;
    panel_recon_row_size(&cfg, removed, perr, &po, &w2, &h2);
    CHECK(w2 == row.w && h2 == row.h, "panel_recon_row_size %dx%d", w2, h2);
    // Panel contents at the centre of patch 0 (visible) and patch 1 (removed); 0.2 -> 51, 0.6 -> 153.
    int v0 = 1 * scale + 1, v1 = 3 * scale + 1;   // x inside patch 0 and patch 1 (row 0)
    CHECK(px_eq(&row, v0, top + 1, 51, 51, 51), "original");
    CHECK(px_eq(&row, step + v0, top + 1, 51, 51, 51), "masked: visible patch kept");
    CHECK(px_eq(&row, step + v1, top + 1, 128, 128, 128), "masked: removed patch grey 0.5");
    CHECK(px_eq(&row, 2 * step + v0, top + 1, 255, 153, 153), "reconstruction clipped (1.5 -> 255)");
    CHECK(px_eq(&row, 3 * step + v0, top + 1, 51, 51, 51), "+ visible: visible patch from the original");
    CHECK(px_eq(&row, 3 * step + v1, top + 1, 255, 153, 153), "+ visible: removed patch reconstructed");
    uint8_t col[3];
    colormap_color(CMAP_VIRIDIS, 0.01f / 0.15f, col);
    CHECK(px_eq(&row, 4 * step + v1, top + 1, col[0], col[1], col[2]), "error map: patch 1 colour");
    colormap_color(CMAP_VIRIDIS, 1.0f, col);
    int x15 = 4 * step + 3 * 2 * scale + 1, y15 = top + 3 * 2 * scale + 1;   // patch 15 (max error)
    CHECK(px_eq(&row, x15, y15, col[0], col[1], col[2]), "error map: the largest error is the top colour");
    CHECK(px_eq(&row, 5 * step, top, col[0], col[1], col[2]), "colour bar top");
    // The error map's scale and colours are the scored patches' (the removed ones, as the loss and the
    // PSNR): a visible patch's error (its untrained raw prediction) set the top of the scale, here 0.9
    // against the removed patches' 0.15, and was drawn in colour; it is now flat grey.
    {
        float perr2[16];
        memcpy(perr2, perr, sizeof perr2);
        perr2[12] = 0.9f;   // patch 12 (row 3, column 0) is visible
        Canvas r2;
        CHECK(panel_recon_row(&r2, &cfg, orig, recon, removed, perr2, &po, err, sizeof err) == 0, "%s", err);
        int top2 = r2.h - s, x12 = 4 * step + 1, y12 = top2 + 3 * 2 * scale + 1;
        colormap_color(CMAP_VIRIDIS, 0.01f / 0.15f, col);
        CHECK(px_eq(&r2, 4 * step + v1, top2 + 1, col[0], col[1], col[2]), "a visible patch's error is not in the scale");
        colormap_color(CMAP_VIRIDIS, 1.0f, col);
        CHECK(px_eq(&r2, x15, top2 + 3 * 2 * scale + 1, col[0], col[1], col[2]), "the largest removed error is the top colour");
        CHECK(px_eq(&r2, x12, y12, 128, 128, 128) && px_eq(&r2, 4 * step + v0, top2 + 1, 128, 128, 128),
              "visible patches grey in the error map");
        canvas_free(&r2);
        // Nothing removed (--mask-ratio 0): every patch is scored, so every patch is in the scale.
        uint8_t none[16] = {0};
        CHECK(panel_recon_row(&r2, &cfg, orig, recon, none, perr2, &po, err, sizeof err) == 0, "%s", err);
        top2 = r2.h - s;
        CHECK(px_eq(&r2, x12, top2 + 3 * 2 * scale + 1, col[0], col[1], col[2]), "nothing removed: patch 12 is the top colour");
        canvas_free(&r2);
    }
    CHECK(px_eq(&row, s + 1, top + 5, PANEL_BG[0], PANEL_BG[1], PANEL_BG[2]), "gap is background");
    int ink = 0;
    for (int y = 0; y < top; y++) for (int x = 2 * step; x < 2 * step + s; x++) ink += !px_eq(&row, x, y, PANEL_BG[0], PANEL_BG[1], PANEL_BG[2]);
    CHECK(ink > 0, "caption above the raw prediction");

    // Panels of PANEL_FULL_CAPTIONS and more get the full captions: at 160 px the longest,
    // "raw prediction (visible patches are not trained)", sets the head.
    PanelOptions pf = {160, 0, 1, 0.0f, NULL};
    int wf, hf;
    panel_recon_row_size(&cfg, removed, perr, &pf, &wf, &hf);
    double tsf = panel_text_size(160);
    int lf = text_wrap("raw prediction (visible patches are not trained)", tsf, 160, wrapped, sizeof wrapped);
    CHECK(lf >= 2 && hf == lf * text_line_height(tsf) + PANEL_GAP + 160, "full captions at 160 px: %d lines, height %d", lf, hf);

    // Past 256 pixels the text, the gaps and the bar grow with the panels (--display 1024 viewed whole
    // reads as the default does): the head above 1024-pixel panels is 3.5 to 4.5 times the head above
    // 256-pixel ones, and the bar is 32 pixels wide, coloured across.
    {
        PanelOptions p256 = {256, 0, 1, 0.0f, "x: PSNR 20 dB"}, p1024 = {1024, 0, 1, 0.0f, "x: PSNR 20 dB"};
        Canvas r256, r1024;
        CHECK(panel_text_size(1024) == 52.0 && panel_gap(1024) == 16 && panel_bar_w(1024) == 32 &&
              panel_text_size(256) == 13.0 && panel_gap(256) == PANEL_GAP && panel_bar_w(256) == PANEL_BAR_W,
              "sizes at 1024: text %g, gap %d, bar %d", panel_text_size(1024), panel_gap(1024), panel_bar_w(1024));
        CHECK(panel_recon_row(&r256, &cfg, orig, recon, removed, perr, &p256, err, sizeof err) == 0, "%s", err);
        CHECK(panel_recon_row(&r1024, &cfg, orig, recon, removed, perr, &p1024, err, sizeof err) == 0, "%s", err);
        int h256 = r256.h - 256, h1024 = r1024.h - 1024;
        CHECK(2 * h1024 >= 7 * h256 && 2 * h1024 <= 9 * h256, "head at 1024: %d pixels, at 256: %d", h1024, h256);   // lines round up
        int bx = 5 * (1024 + 16), by = h1024 + 512, colored = 0;
        for (int x = bx; x < bx + 32; x++) colored += !px_eq(&r1024, x, by, PANEL_BG[0], PANEL_BG[1], PANEL_BG[2]);
        CHECK(colored == 32 && px_eq(&r1024, bx - 1, by, PANEL_BG[0], PANEL_BG[1], PANEL_BG[2]),
              "bar at 1024: %d of 32 columns coloured", colored);
        canvas_free(&r256); canvas_free(&r1024);
    }

    // A title line goes above the captions.
    Canvas rowt;
    PanelOptions pt = {S * scale, 0, 1, 0.0f, "x: PSNR 20 dB"};
    CHECK(panel_recon_row(&rowt, &cfg, orig, recon, removed, perr, &pt, err, sizeof err) == 0, "%s", err);
    CHECK(rowt.h == row.h + text_line_height(ts) + PANEL_GAP && rowt.w == row.w, "title adds a line (%dx%d)", rowt.w, rowt.h);
    canvas_free(&rowt);

    // Bilinear enlargement of a two-level image passes through values in between; nearest does not.
    float ramp[8 * 8 * 3];
    for (int i = 0; i < 8 * 8 * 3; i++) ramp[i] = (i / 3) % 8 < 4 ? 0.0f : 1.0f;
    PanelOptions pb = {64, 1, 0, 1.0f, NULL};
    Canvas rb;
    CHECK(panel_recon_row(&rb, &cfg, ramp, ramp, removed, perr, &pb, err, sizeof err) == 0, "%s", err);
    int mid = 0;
    for (int x = 0; x < 64; x++) mid += rb.px[(size_t)(10 * rb.w + x) * 3] > 10 && rb.px[(size_t)(10 * rb.w + x) * 3] < 245;
    CHECK(mid >= 4, "bilinear: in-between values at the edge (%d)", mid);
    canvas_free(&rb);
    pb.bilinear = 0;
    CHECK(panel_recon_row(&rb, &cfg, ramp, ramp, removed, perr, &pb, err, sizeof err) == 0, "%s", err);
    mid = 0;
    for (int x = 0; x < 64; x++) mid += rb.px[(size_t)(10 * rb.w + x) * 3] > 10 && rb.px[(size_t)(10 * rb.w + x) * 3] < 245;
    CHECK(mid == 0, "nearest: two levels only (%d)", mid);
    canvas_free(&rb);

    // err_max fixes the scale: label "1", no captions: height s.
    Canvas row2;
    PanelOptions p2 = {16, 0, 0, 1.0f, NULL};
    CHECK(panel_recon_row(&row2, &cfg, orig, recon, removed, perr, &p2, err, sizeof err) == 0, "%s", err);
    CHECK(row2.w == 5 * 16 + 5 * PANEL_GAP + PANEL_BAR_W + 3 + text_width("1", panel_text_size(16)) + PANEL_GAP && row2.h == 16,
          "fixed scale row %dx%d", row2.w, row2.h);
    colormap_color(CMAP_VIRIDIS, 0.15f, col);
    CHECK(px_eq(&row2, 4 * (16 + PANEL_GAP) + 3 * 4 + 1, 3 * 4 + 1, col[0], col[1], col[2]), "fixed scale colour");

    // Stack: width of the widest, heights plus gaps, background between.
    Canvas rows[2] = {row, row2}, st;
    CHECK(panel_stack(&st, rows, 2, 5, err, sizeof err) == 0, "%s", err);
    CHECK(st.w == row.w && st.h == row.h + 5 + row2.h, "stack %dx%d", st.w, st.h);
    CHECK(px_eq(&st, 0, row.h + 2, PANEL_BG[0], PANEL_BG[1], PANEL_BG[2]), "stack gap is background");
    CHECK(px_eq(&st, 1, row.h + 5 + 1, 51, 51, 51), "second row starts after the gap");
    CHECK(px_eq(&st, st.w - 1, row.h + 5 + 1, PANEL_BG[0], PANEL_BG[1], PANEL_BG[2]) || row2.w == st.w,
          "narrow row padded with background");
    canvas_free(&st);
    CHECK(panel_stack(&st, rows, 0, 5, err, sizeof err) == -1 && st.px == NULL, "no rows refused");
    canvas_free(&row);
    canvas_free(&row2);

    // Greyscale images draw as grey.
    cfg.in_chans = 1;
    float g1[64], g2[64];
    for (int i = 0; i < 64; i++) { g1[i] = 0.2f; g2[i] = 0.6f; }
    PanelOptions pg = {8, 0, 0, 0.0f, NULL};
    CHECK(panel_recon_row(&row, &cfg, g1, g2, removed, perr, &pg, err, sizeof err) == 0, "%s", err);
    CHECK(px_eq(&row, 2 * (8 + PANEL_GAP) + 3, 0, 153, 153, 153), "grey reconstruction");
    canvas_free(&row);
}

// A share of the patches never reads "0%" or "100%" unless it is none or all: one removed patch of 256
// was "masked 0%" in the caption and "0% of the patches removed" in reconstruct's title (docs/interface.md,
// section 5, reconstruct), 1023 of 1024 "100%".
static void test_percent(void) {
    const struct { long n, L; const char *want; } pc[] = {
        {12, 16, "75%"}, {0, 16, "0%"}, {16, 16, "100%"}, {1, 256, "0.4%"}, {255, 256, "99.6%"},
        {1023, 1024, "99.9%"}, {1, 3, "33%"}, {2, 400, "0.5%"}, {2999, 3000, "99.97%"}, {1, 100000, "0.001%"},
    };
    char buf[32];
    for (size_t k = 0; k < sizeof pc / sizeof pc[0]; k++) {
        panel_percent_text(pc[k].n, pc[k].L, buf, sizeof buf);
        CHECK(!strcmp(buf, pc[k].want), "%ld of %ld removed: %s, want %s", pc[k].n, pc[k].L, buf, pc[k].want);
    }
    // reconstruct's title: with --mask-ratio 0 it said "0% of the patches removed, PSNR 10.31 dB on
    // them", a PSNR of no patch, while the figure is over every patch (docs/interface.md, reconstruct).
    char title[400];
    panel_recon_title("cat", 48, 64, 18.0625, title, sizeof title);
    CHECK(!strcmp(title, "cat: 75% of the patches removed, PSNR 18.06 dB on them"), "title: %s", title);
    panel_recon_title("cat", 0, 64, 10.3125, title, sizeof title);
    CHECK(!strcmp(title, "cat: no patch removed, PSNR 10.31 dB over all patches"), "title, none removed: %s", title);
    panel_recon_title("cat", 1, 256, 20.0, title, sizeof title);
    CHECK(!strcmp(title, "cat: 0.4% of the patches removed, PSNR 20.00 dB on them"), "title, 1 of 256: %s", title);
    // The caption drawn: a 16 x 16 grid with one patch removed, 24 px panels (one caption for the row).
    MaeConfig cfg;
    mae_config_preset(&cfg, "tiny");
    cfg.img_size = 32; cfg.patch_size = 2; cfg.in_chans = 1;
    enum { S = 32, L = 256 };
    float orig[S * S], recon[S * S], perr[L];
    uint8_t removed[L] = {0};
    for (int i = 0; i < S * S; i++) { orig[i] = 0.2f; recon[i] = 0.6f; }
    for (int l = 0; l < L; l++) perr[l] = 0.16f;
    removed[37] = 1;
    PanelOptions po = {24, 0, 1, 0.0f, NULL};
    Canvas row, ref;
    char err[256], wrapped[256];
    CHECK(panel_recon_row(&row, &cfg, orig, recon, removed, perr, &po, err, sizeof err) == 0, "%s", err);
    double ts = panel_text_size(24);
    int lines = text_wrap("left to right: original, masked 0.4%, raw prediction, + visible, error", ts,
                          row.w - PANEL_GAP, wrapped, sizeof wrapped);
    int top = lines * text_line_height(ts) + PANEL_GAP;
    CHECK(row.px && row.h == top + 24 && canvas_create(&ref, row.w, top, err, sizeof err) == 0,
          "row %dx%d, head of %d lines", row.w, row.h, lines);
    if (row.px && ref.px) {
        canvas_fill(&ref, PANEL_BG);
        canvas_text(&ref, 0, 0, wrapped, (const uint8_t[3]){225, 225, 225}, ts);
        int diff = 0;
        for (int y = 0; y < top; y++)
            for (int x = 0; x < row.w; x++) diff += memcmp(px_at(&row, x, y), px_at(&ref, x, y), 3) != 0;
        CHECK(diff == 0, "1 of 256 removed: the caption says \"masked 0.4%%\" (%d pixels differ)", diff);
        canvas_free(&ref);
    }
    canvas_free(&row);
}

// The rows of test_crisp_mask and test_full_captions: a tiny 8 x 8 RGB model of 2-pixel patches, the
// image 0.2 and the prediction 0.6 everywhere, 12 of 16 patches removed (all but every 4th), errors 0.01 l.
static void quarter_row(MaeConfig *cfg, float *orig, float *recon, float *perr, uint8_t *removed) {
    mae_config_preset(cfg, "tiny");
    cfg->img_size = 8; cfg->patch_size = 2; cfg->in_chans = 3;
    for (int i = 0; i < 8 * 8 * 3; i++) { orig[i] = 0.2f; recon[i] = 0.6f; }
    for (int l = 0; l < 16; l++) { removed[l] = l % 4 != 0; perr[l] = 0.01f * l; }
}

// The masked panel's squares are crisp at any size: an image of one value (0.2: 51) with 12 of 16
// patches removed, drawn bilinear at 250 pixels (not a multiple of the 8-pixel image): every pixel of
// the panel is the image's 51 or the removed grey 128, grey exactly in the cells the error map uses
// (x * 4 / 250). Greyed before the resize, bilinear blended each square's edge with its neighbours
// over some 31 pixels.
static void test_crisp_mask(void) {
    MaeConfig cfg;
    enum { L = 16, S = 250 };
    float orig[8 * 8 * 3], recon[8 * 8 * 3], perr[L];
    uint8_t removed[L];
    quarter_row(&cfg, orig, recon, perr, removed);
    PanelOptions po = {S, 1, 1, 0.0f, NULL};
    Canvas row;
    char err[256];
    CHECK(panel_recon_row(&row, &cfg, orig, recon, removed, perr, &po, err, sizeof err) == 0, "%s", err);
    if (!row.px) return;
    int top = row.h - S, step = S + PANEL_GAP, wrong = 0, first_x = -1, first_y = -1;
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            int cell = removed[(y * 4 / S) * 4 + x * 4 / S];
            if (!px_eq(&row, step + x, top + y, cell ? 128 : 51, cell ? 128 : 51, cell ? 128 : 51)) {
                if (!wrong++) { first_x = x; first_y = y; }
            }
        }
    CHECK(wrong == 0, "bilinear at 250 px: the masked panel's squares crisp (%d pixels neither the image's 51 nor "
          "the grey 128 of their cell, the first at %d,%d)", wrong, first_x, first_y);
    canvas_free(&row);
}

// The captions at full size (issue 16's promise; docs/interface.md, reconstruct's panels), each drawn
// above its panel exactly as its text wrapped to the panel's side: at 256 px (reconstruct's default
// --display) with 12 of 16 patches removed. Only the row's height was checked, which the longest
// caption shortened to "raw prediction" still passed.
static void test_full_captions(void) {
    MaeConfig cfg;
    enum { L = 16, S = 256 };
    float orig[8 * 8 * 3], recon[8 * 8 * 3], perr[L];
    uint8_t removed[L];
    quarter_row(&cfg, orig, recon, perr, removed);
    const char *want[5] = {"original", "masked 75% (12 of 16 patches)", "raw prediction (visible patches are not trained)",
                           "prediction + visible patches", "squared error per removed patch"};
    PanelOptions po = {S, 1, 1, 0.0f, NULL};
    Canvas row;
    char err[256];
    if (panel_recon_row(&row, &cfg, orig, recon, removed, perr, &po, err, sizeof err)) { CHECK(0, "%s", err); return; }
    double ts = panel_text_size(S);
    int top = row.h - S;
    for (int k = 0; k < 5; k++) {
        char wrapped[256];
        text_wrap(want[k], ts, S, wrapped, sizeof wrapped);
        Canvas ref;
        if (canvas_create(&ref, S, top, err, sizeof err)) { CHECK(0, "%s", err); break; }
        canvas_fill(&ref, PANEL_BG);
        canvas_text(&ref, 0, 0, wrapped, (const uint8_t[3]){225, 225, 225}, ts);
        int diff = 0;
        for (int y = 0; y < top; y++)
            for (int x = 0; x < S; x++) diff += memcmp(px_at(&row, k * (S + PANEL_GAP) + x, y), px_at(&ref, x, y), 3) != 0;
        CHECK(diff == 0, "256 px panels: panel %d's caption is \"%s\" (%d pixels differ)", k, want[k], diff);
        canvas_free(&ref);
    }
    canvas_free(&row);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s", check_tmpdir());
    test_masks();
    test_panels();
    test_full_captions();
    test_crisp_mask();
    test_percent();
    return check_done();
}
