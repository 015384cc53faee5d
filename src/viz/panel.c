// Reconstruction panels: original | masked | reconstruction | + visible | error map.
#include "viz/panel.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "viz/font.h"

const uint8_t PANEL_BG[3] = {40, 40, 40};
static const uint8_t CAPTION_RGB[3] = {220, 220, 220};

// The top of the error colour scale.
static float error_scale_max(const MaeConfig *cfg, const float *patch_err, float err_max) {
    if (err_max > 0) return err_max;
    int L = mae_num_patches(cfg);
    float m = 0;
    for (int l = 0; l < L; l++)
        if (patch_err[l] > m) m = patch_err[l];   // NaN never wins
    return m > 0 ? m : 1.0f;
}

void panel_recon_row_size(const MaeConfig *cfg, const float *patch_err, float err_max, int scale,
                          int labels, int *w, int *h) {
    if (scale < 1) scale = 1;
    int S = cfg->img_size * scale;
    float vmax = error_scale_max(cfg, patch_err, err_max);
    *w = 5 * S + 5 * PANEL_GAP + PANEL_BAR_W + 3 + viz_colorbar_label_width(0.0, vmax);
    *h = (labels ? PANEL_CAPTION_H : 0) + S;
}

// Caption at (x, y), cut to the characters that fit in width w.
static void caption(Canvas *c, int x, int y, int w, const char *text) {
    char buf[64];
    int fit = (w + 1) / FONT_ADVANCE;
    if (fit <= 0) return;
    snprintf(buf, sizeof buf, "%.*s", fit, text);
    font_draw(c, x, y, buf, CAPTION_RGB, 1);
}

int panel_recon_row(Canvas *dst, const MaeConfig *cfg, const float *orig, const float *recon,
                    const uint8_t *removed, const float *patch_err, float err_max, int scale, int labels,
                    char *err, size_t errlen) {
    memset(dst, 0, sizeof *dst);
    if (scale < 1) scale = 1;
    int W = cfg->img_size, C = cfg->in_chans, P = cfg->patch_size, g = W / P, L = g * g;
    if ((long)W * scale * 5 > VIZ_MAX_SIDE) {
        snprintf(err, errlen, "panel too wide (image %d x scale %d)", W, scale);
        return -1;
    }
    int w, h;
    panel_recon_row_size(cfg, patch_err, err_max, scale, labels, &w, &h);
    size_t n = (size_t)W * W * C;
    float *work = malloc(sizeof(float) * n);
    float *err01 = malloc(sizeof(float) * (size_t)W * W);
    float *grid = malloc(sizeof(float) * (size_t)L);
    if (!work || !err01 || !grid) snprintf(err, errlen, "out of memory for a %d x %d panel", w, h);
    if (!work || !err01 || !grid || canvas_create(dst, w, h, err, errlen)) {
        free(work); free(err01); free(grid); canvas_free(dst);
        return -1;
    }
    canvas_fill(dst, PANEL_BG);
    int S = W * scale, top = labels ? PANEL_CAPTION_H : 0, step = S + PANEL_GAP;

    canvas_blit_float(dst, 0, top, orig, W, W, C, scale);

    memcpy(work, orig, sizeof(float) * n);
    viz_grey_patches(work, W, W, C, P, removed);
    canvas_blit_float(dst, step, top, work, W, W, C, scale);

    canvas_blit_float(dst, 2 * step, top, recon, W, W, C, scale);   // blit clips to [0, 1]

    // Visible patches pasted from the original over the reconstruction.
    memcpy(work, recon, sizeof(float) * n);
    for (int l = 0; l < L; l++) {
        if (removed[l]) continue;
        int y0 = (l / g) * P, x0 = (l % g) * P;
        for (int py = 0; py < P; py++)
            memcpy(work + ((size_t)(y0 + py) * W + x0) * C, orig + ((size_t)(y0 + py) * W + x0) * C,
                   sizeof(float) * (size_t)P * C);
    }
    canvas_blit_float(dst, 3 * step, top, work, W, W, C, scale);

    // Error map: per-patch MSE over [0, vmax], one colour per patch.
    float vmax = error_scale_max(cfg, patch_err, err_max);
    for (int l = 0; l < L; l++) {
        float v = patch_err[l] / vmax;
        grid[l] = v != v ? 0.0f : v < 0 ? 0.0f : v > 1 ? 1.0f : v;
    }
    viz_upsample(grid, g, g, err01, W, W, 0);
    viz_overlay(dst, 4 * step, top, NULL, W, W, 1, err01, CMAP_VIRIDIS, 1.0f, scale);
    viz_colorbar(dst, 5 * step, top, PANEL_BAR_W, S, 1, CMAP_VIRIDIS, 0.0, vmax, CAPTION_RGB);

    if (labels) {
        int nrem = 0;
        for (int l = 0; l < L; l++) nrem += removed[l] != 0;
        char masked[32];
        snprintf(masked, sizeof masked, "masked %d%%", (int)(100.0 * nrem / L + 0.5));
        const char *names[5] = {"original", masked, "reconstruction", "+ visible", "error"};
        for (int k = 0; k < 5; k++) caption(dst, k * step, 1, S, names[k]);
    }
    free(work); free(err01); free(grid);
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
