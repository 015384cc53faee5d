// Reconstruction panels: original | masked | raw prediction | + visible | error map.
#include "viz/panel.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "viz/text.h"

const uint8_t PANEL_BG[3] = {40, 40, 40};
static const uint8_t CAPTION_RGB[3] = {225, 225, 225};

enum { NPANELS = 5, CAPTION_MAX = 512 };

// 1 when patch l is scored: a removed patch, or every patch when none is removed (--mask-ratio 0), as
// the loss and the PSNR count them (docs/interface.md, reconstruct). A visible patch's error is that of
// the raw prediction, which the loss never trained (the third panel's speckled squares).
// all_scored: no patch is removed (scores_all below).
static int scored(const uint8_t *removed, int all_scored, int l) { return all_scored || removed[l]; }
static int scores_all(const uint8_t *removed, int L) {
    for (int l = 0; l < L; l++)
        if (removed[l]) return 0;
    return 1;
}

// The top of the error colour scale: the largest error of a scored patch.
static float error_scale_max(const MaeConfig *cfg, const uint8_t *removed, const float *patch_err, float err_max) {
    if (err_max > 0) return err_max;
    int L = mae_num_patches(cfg), all = scores_all(removed, L);
    float m = 0;
    for (int l = 0; l < L; l++)
        if (patch_err[l] > m && scored(removed, all, l)) m = patch_err[l];   // NaN never wins
    return m > 0 ? m : 1.0f;
}

void panel_percent_text(long n, long L, char *buf, size_t len) {
    double pct = L > 0 ? 100.0 * n / L : 0.0;
    for (int d = 0; d <= 6; d++) {   // a part: as many decimals as keep it off 0 and 100 as printed
        snprintf(buf, len, "%.*f%%", d, pct);
        double shown = strtod(buf, NULL);
        if (n <= 0 || n >= L || (shown > 0 && shown < 100)) break;
    }
}

void panel_recon_title(const char *stem, long nrem, long L, double psnr, char *buf, size_t len) {
    char pct[32];
    if (nrem <= 0) {   // "0% ..., PSNR on them" spoke of no patch while the PSNR covers all of them
        snprintf(buf, len, "%.300s: no patch removed, PSNR %.2f dB over all patches", stem, psnr);
        return;
    }
    panel_percent_text(nrem, L, pct, sizeof pct);
    snprintf(buf, len, "%.300s: %s of the patches removed, PSNR %.2f dB on them", stem, pct, psnr);
}

// Above 256 pixels the text grows with the panel, 13 pixels to every 256 of its side, so that a row drawn
// at --display 1024 and viewed whole reads as the default's does (docs/interface.md, reconstruct).
double panel_text_size(int side) { return side > 256 ? 13.0 * side / 256.0 : side >= 160 ? 13.0 : 11.0; }
int panel_gap(int side) { return side > 256 ? (int)((long)PANEL_GAP * side / 256) : PANEL_GAP; }
int panel_bar_w(int side) { return side > 256 ? (int)((long)PANEL_BAR_W * side / 256) : PANEL_BAR_W; }

// The five captions, each wrapped to the panel's side; returns the most lines any of them takes.
// Panels narrower than PANEL_FULL_CAPTIONS get the short forms (the long ones would be a column of
// single words). Panels narrower than a word of those ("original" at --scale 1 of a 28-pixel model)
// get one caption for the row instead, wrapped to row_w, in wrapped[0] (the words ran into the next
// panel's caption).
static int captions(const MaeConfig *cfg, const uint8_t *removed, int side, int row_w,
                    char wrapped[NPANELS][CAPTION_MAX]) {
    int L = mae_num_patches(cfg), nrem = 0;
    for (int l = 0; l < L; l++) nrem += removed[l] != 0;
    int full = side >= PANEL_FULL_CAPTIONS;
    char masked[96], pct[32];
    panel_percent_text(nrem, L, pct, sizeof pct);
    if (full) snprintf(masked, sizeof masked, "masked %s (%d of %d patches)", pct, nrem, L);
    else snprintf(masked, sizeof masked, "masked %s", pct);
    const char *text[NPANELS] = {"original", masked,
                                 full ? "raw prediction (visible patches are not trained)" : "raw prediction",
                                 full ? "prediction + visible patches" : "+ visible",
                                 full ? (nrem > 0 && nrem < L ? "squared error per removed patch" : "squared error per patch")
                                      : "error"};
    int most = 0, fits = 1;
    double ts = panel_text_size(side);
    for (int k = 0; k < NPANELS; k++) {
        int n = text_wrap(text[k], ts, side, wrapped[k], CAPTION_MAX);
        if (n > most) most = n;
        fits = fits && text_width(wrapped[k], ts) <= side;
    }
    if (fits) return most;
    char row[CAPTION_MAX];
    snprintf(row, sizeof row, "left to right: %s, %s, %s, %s, %s", text[0], text[1], text[2], text[3], text[4]);
    for (int k = 1; k < NPANELS; k++) wrapped[k][0] = 0;
    return text_wrap(row, ts, row_w, wrapped[0], CAPTION_MAX);
}

// Row width before the head, and the head's height (title and captions).
static void row_geometry(const MaeConfig *cfg, const uint8_t *removed, const float *patch_err,
                         const PanelOptions *o, int *w, int *head, char wrapped[NPANELS][CAPTION_MAX],
                         char *title, size_t title_len) {
    int S = o->side > 0 ? o->side : 1;
    double ts = panel_text_size(S);
    int gap = panel_gap(S);
    float vmax = error_scale_max(cfg, removed, patch_err, o->err_max);
    *w = NPANELS * S + NPANELS * gap + panel_bar_w(S) + 3 + viz_colorbar_label_width(0.0, vmax, ts) + gap;
    *head = 0;
    if (title) title[0] = 0;
    if (!o->labels) return;
    int lh = text_line_height(ts);
    if (o->title && *o->title) {
        char buf[CAPTION_MAX];
        int n = text_wrap_names(o->title, ts, *w - gap, title ? title : buf, title ? title_len : sizeof buf);
        *head += n * lh + gap;
    }
    *head += captions(cfg, removed, S, *w - gap, wrapped) * lh + gap;
}

void panel_recon_row_size(const MaeConfig *cfg, const uint8_t *removed, const float *patch_err,
                          const PanelOptions *opt, int *w, int *h) {
    char wrapped[NPANELS][CAPTION_MAX];
    int head;
    row_geometry(cfg, removed, patch_err, opt, w, &head, wrapped, NULL, 0);
    *h = head + (opt->side > 0 ? opt->side : 1);
}

int panel_recon_row(Canvas *dst, const MaeConfig *cfg, const float *orig, const float *recon,
                    const uint8_t *removed, const float *patch_err, const PanelOptions *opt,
                    char *err, size_t errlen) {
    memset(dst, 0, sizeof *dst);
    int W = cfg->img_size, C = cfg->in_chans, P = cfg->patch_size, g = W / P, L = g * g;
    int S = opt->side > 0 ? opt->side : 1;
    if ((long)S * (NPANELS + 1) > VIZ_MAX_SIDE) {
        snprintf(err, errlen, "panel too wide (%d pixels per panel)", S);
        return -1;
    }
    char wrapped[NPANELS][CAPTION_MAX], title[CAPTION_MAX];
    int w, head;
    row_geometry(cfg, removed, patch_err, opt, &w, &head, wrapped, title, sizeof title);
    int h = head + S;
    size_t n = (size_t)W * W * C;
    float *work = malloc(sizeof(float) * n);
    float *grid = malloc(sizeof(float) * (size_t)L);
    if (!work || !grid) snprintf(err, errlen, "out of memory for a %d x %d panel", w, h);
    if (!work || !grid || canvas_create(dst, w, h, err, errlen)) {
        free(work); free(grid); canvas_free(dst);
        return -1;
    }
    canvas_fill(dst, PANEL_BG);
    int gap = panel_gap(S), step = S + gap, bl = opt->bilinear;
    // Each picture's resize may run out of memory (bilinear's buffers): the row fails, never a
    // nearest-neighbour panel in its place (docs/data.md).
    int bad = canvas_blit_resized(dst, 0, head, orig, W, W, C, S, S, bl);

    // The masked panel: the image drawn, then its removed patches grey at the panel's own pixels, cell
    // by cell as the error map's (pixel x in patch column x * g / S; with nearest the same pixels as
    // greying the image first). Greyed before a bilinear resize, each square's edge was smeared over
    // S / W pixels (32 at --display 1024 of a 32-pixel model) and visible patches bled into the grey.
    bad = bad || canvas_blit_resized(dst, step, head, orig, W, W, C, S, S, bl);
    for (int y = 0; y < S && !bad; y++)
        for (int x = 0; x < S; x++)
            if (removed[(size_t)((long)y * g / S) * g + (size_t)((long)x * g / S)])
                memset(dst->px + ((size_t)(head + y) * dst->w + step + x) * 3, 128, 3);

    bad = bad || canvas_blit_resized(dst, 2 * step, head, recon, W, W, C, S, S, bl);   // clipped to [0, 1]

    // Visible patches pasted from the original over the prediction.
    memcpy(work, recon, sizeof(float) * n);
    for (int l = 0; l < L; l++) {
        if (removed[l]) continue;
        int y0 = (l / g) * P, x0 = (l % g) * P;
        for (int py = 0; py < P; py++)
            memcpy(work + ((size_t)(y0 + py) * W + x0) * C, orig + ((size_t)(y0 + py) * W + x0) * C,
                   sizeof(float) * (size_t)P * C);
    }
    bad = bad || canvas_blit_resized(dst, 3 * step, head, work, W, W, C, S, S, bl);

    // Error map: per-patch MSE over [0, vmax], one colour per scored patch; the others (the visible
    // patches, whose error the loss does not measure) flat grey, as the masked panel's removed ones.
    float vmax = error_scale_max(cfg, removed, patch_err, opt->err_max);
    for (int l = 0; l < L; l++) {
        float v = patch_err[l] / vmax;
        grid[l] = v != v ? 0.0f : v < 0 ? 0.0f : v > 1 ? 1.0f : v;
    }
    float *up = bad ? NULL : realloc(work, sizeof(float) * (size_t)S * S * 2);
    if (!up) {
        snprintf(err, errlen, "out of memory for a %d x %d panel", w, h);
        free(work); free(grid); canvas_free(dst);
        return -1;
    }
    viz_upsample(grid, g, g, up, S, S, 0);
    viz_overlay(dst, 4 * step, head, NULL, S, S, 1, up, CMAP_VIRIDIS, 1.0f, 1);
    int all = scores_all(removed, L);
    for (int l = 0; l < L; l++) grid[l] = !scored(removed, all, l);
    float *unscored = up + (size_t)S * S;
    viz_upsample(grid, g, g, unscored, S, S, 0);   // the same nearest cells as the colours
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++)
            if (unscored[(size_t)y * S + x] > 0.5f)
                memset(dst->px + ((size_t)(head + y) * dst->w + 4 * step + x) * 3, 128, 3);
    double ts = panel_text_size(S);
    ColorBar bar = {CMAP_VIRIDIS, 0.0, vmax, NAN, NULL, ts, {CAPTION_RGB[0], CAPTION_RGB[1], CAPTION_RGB[2]}};
    viz_colorbar(dst, NPANELS * step, head, panel_bar_w(S), S, 1, &bar);

    if (opt->labels) {
        int y = 0;
        if (title[0]) {
            canvas_text(dst, 0, 0, title, CAPTION_RGB, ts);
            y = text_height(title, ts) + gap;
        }
        for (int k = 0; k < NPANELS; k++) canvas_text(dst, k * step, y, wrapped[k], CAPTION_RGB, ts);
    }
    free(up); free(grid);
    return 0;
}

int panel_stack(Canvas *dst, const Canvas *rows, int n, int gap, char *err, size_t errlen) {
    memset(dst, 0, sizeof *dst);
    if (n < 1) { snprintf(err, errlen, "no rows to stack"); return -1; }
    if (gap < 0) gap = 0;
    long w = 0, h = (long)(n - 1) * gap;
    for (int i = 0; i < n; i++) {
        if (rows[i].w > w) w = rows[i].w;
        h += rows[i].h;
    }
    if (w > VIZ_MAX_SIDE || h > VIZ_MAX_SIDE) {
        snprintf(err, errlen, "stacked panel too large (%ld x %ld)", w, h);
        return -1;
    }
    if (canvas_create(dst, (int)w, (int)h, err, errlen)) return -1;
    canvas_fill(dst, PANEL_BG);
    int y = 0;
    for (int i = 0; i < n; i++) {
        canvas_blit(dst, 0, y, &rows[i]);
        y += rows[i].h + gap;
    }
    return 0;
}
