// Reconstruction panels, shared by `vitmae reconstruct` and the training samples
// (RUN/samples/step-<step>.png): one row of five panels per image, rows stacked.
//
// Geometry of one row (S = img_size * scale, all sizes in pixels):
//   top     = labels ? PANEL_CAPTION_H : 0                     (a caption line above each panel)
//   panel k = S x S at (k * (S + PANEL_GAP), top), k = 0..4
//   bar     = PANEL_BAR_W x S at (5 * (S + PANEL_GAP), top), its min/max printed 3 px to its right
//   width   = 5 * S + 5 * PANEL_GAP + PANEL_BAR_W + 3 + viz_colorbar_label_width(0, vmax)
//   height  = top + S
// where vmax is the colour scale's top (err_max when > 0, else the largest patch error, else 1).
// Background dark grey (PANEL_BG), captions light grey, truncated to the panel's width.
#ifndef VITMAE_PANEL_H
#define VITMAE_PANEL_H
#include <stddef.h>
#include <stdint.h>
#include "core/model.h"
#include "viz/viz.h"

enum {
    PANEL_GAP = 4,          // between panels, and between the error panel and its colour bar
    PANEL_BAR_W = 8,        // colour bar width
    PANEL_CAPTION_H = 12,   // caption line height (font line 10 + 2)
};
extern const uint8_t PANEL_BG[3];   // {40, 40, 40}

// One row of five panels for one image, side by side with a small gap, each upscaled `scale`
// (nearest): original | masked (removed patches grey 0.5) | reconstruction (clipped) |
// reconstruction with the visible patches pasted from the original | per-patch error map (viridis
// over the patch grid, nearest, with a colour bar and its min/max). orig and recon are pixel units
// [H][W][C] (C = cfg->in_chans); removed [L] (1 = removed); patch_err [L] per-patch MSE;
// err_max > 0 fixes the colour scale to [0, err_max], else [0, max of patch_err].
// labels != 0 draws a caption above each panel ("original", "masked 75%", "reconstruction",
// "+ visible", "error"). Creates *dst (caller frees with canvas_free). 0 ok, -1 with err.
int panel_recon_row(Canvas *dst, const MaeConfig *cfg, const float *orig, const float *recon,
                    const uint8_t *removed, const float *patch_err, float err_max, int scale, int labels,
                    char *err, size_t errlen);
// The width and height panel_recon_row gives for these arguments (the formula above).
void panel_recon_row_size(const MaeConfig *cfg, const float *patch_err, float err_max, int scale,
                          int labels, int *w, int *h);
// Stacks n canvases vertically (left-aligned, gap pixels between, background PANEL_BG) into *dst:
// width = max width, height = sum of heights + (n - 1) * gap. 0 ok, -1 with err (n < 1, too big).
int panel_stack(Canvas *dst, const Canvas *rows, int n, int gap, char *err, size_t errlen);
#endif
