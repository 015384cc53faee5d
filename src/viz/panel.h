// Reconstruction panels, shared by `vitmae reconstruct` and the training samples
// (RUN/samples/step-<step>.png): one row of five panels per image, rows stacked.
//
// Geometry of one row (S = opt->side, all sizes in pixels; lh = text_line_height(panel_text_size(S)),
// gap = panel_gap(S), bar_w = panel_bar_w(S): PANEL_GAP and PANEL_BAR_W up to S = 256, then growing
// with S as the text does):
//   head    = labels ? title lines * lh + (title ? gap : 0) + caption lines * lh + gap : 0
//             (captions wrap to S; "caption lines" is the most any panel needs; the title wraps to
//             width - gap, a word wider than that shortened in its middle, text_wrap_names;
//             where a caption word is wider than S, one caption for the row,
//             "left to right: original, masked 75%, ...", wrapped to width - gap, instead)
//   panel k = S x S at (k * (S + gap), head), k = 0..4
//   bar     = bar_w x S at (5 * (S + gap), head), its max and min printed right of it
//   width   = 5 * S + 5 * gap + bar_w + 3 + viz_colorbar_label_width(0, vmax, size) + gap
//   height  = head + S
// where vmax is the colour scale's top (err_max when > 0, else the largest error of a removed patch, or
// of any patch when none is removed, else 1).
// Background dark grey (PANEL_BG), text light grey.
#ifndef VITMAE_PANEL_H
#define VITMAE_PANEL_H
#include <stddef.h>
#include <stdint.h>
#include "core/model.h"
#include "viz/viz.h"

enum {
    PANEL_GAP = 4,          // between panels, and between the error panel and its colour bar
    PANEL_BAR_W = 8,        // colour bar width
    PANEL_FULL_CAPTIONS = 120,   // narrower panels get the short captions
    // The largest side panel_recon_row draws: its five panels and the error bar (six sides) within
    // VIZ_MAX_SIDE; a command refuses a larger --scale before the work (docs/interface.md, reconstruct).
    PANEL_SIDE_MAX = VIZ_MAX_SIDE / 6,
};
extern const uint8_t PANEL_BG[3];   // {40, 40, 40}

typedef struct {
    int side;            // each panel's side in pixels (the img_size x img_size view resized to it)
    int bilinear;        // the picture panels resized smoothly (1) or nearest (0); the error map is
                         //   one colour per patch either way
    int labels;          // a caption above each panel (and the title, when given)
    float err_max;       // > 0 fixes the error colour scale to [0, err_max], else [0, largest error]
    const char *title;   // NULL, or a line above the captions (e.g. the image, its mask ratio, PSNR)
} PanelOptions;

// Text size (pixels) of the title, captions and bar labels for panels of side S: 11 below 160, 13 up to
// 256, then 13 * S / 256 (52 at 1024): the text keeps its share of the panel.
double panel_text_size(int side);
// The gap between panels and the colour bar's width for panels of side S: PANEL_GAP and PANEL_BAR_W up
// to 256, then those times S / 256 (16 and 32 at 1024).
int panel_gap(int side);
int panel_bar_w(int side);
// One row of five panels for one image: original | masked (removed patches grey 0.5) | raw
// prediction (clipped; every patch, so the visible ones show the untrained prediction) | prediction
// with the visible patches pasted from the original | per-patch error map (viridis over the patch
// grid, with a colour bar and its min/max; the visible patches grey 0.5 when some are removed: the
// loss scores only the removed ones). orig and recon are pixel units [H][W][C]
// (C = cfg->in_chans); removed [L] (1 = removed); patch_err [L] per-patch MSE. Captions: "original",
// "masked 75% (12 of 16 patches)", "raw prediction (visible patches are not trained)",
// "prediction + visible patches", "squared error per removed patch" ("squared error per patch" when
// none or every patch is removed); for panels narrower than
// PANEL_FULL_CAPTIONS "original", "masked 75%", "raw prediction", "+ visible", "error". Creates
// *dst (caller frees with canvas_free). 0 ok, -1 with err.
int panel_recon_row(Canvas *dst, const MaeConfig *cfg, const float *orig, const float *recon,
                    const uint8_t *removed, const float *patch_err, const PanelOptions *opt,
                    char *err, size_t errlen);
// The width and height panel_recon_row gives for these arguments (the formula above).
void panel_recon_row_size(const MaeConfig *cfg, const uint8_t *removed, const float *patch_err,
                          const PanelOptions *opt, int *w, int *h);
// "75%": the share of n removed patches of L, with decimals where whole percent would round a part to
// "0%" or "100%" (1 of 256 removed is "0.4%", 1023 of 1024 "99.9%"); "0%" and "100%" mean none and all.
// The masked panel's caption, reconstruct's title and the training samples' title say it so.
void panel_percent_text(long n, long L, char *buf, size_t len);
// reconstruct's title line: "<stem>: 75% of the patches removed, PSNR 18.06 dB on them", or, none removed
// (--mask-ratio 0: every patch scored), "<stem>: no patch removed, PSNR 10.31 dB over all patches". The
// stem is cut to its first 300 bytes; psnr as psnr_from_mse gives it ("inf" for an MSE of 0).
void panel_recon_title(const char *stem, long nrem, long L, double psnr, char *buf, size_t len);
// Stacks n canvases vertically (left-aligned, gap pixels between, background PANEL_BG) into *dst:
// width = max width, height = sum of heights + (n - 1) * gap. 0 ok, -1 with err (n < 1, too big).
int panel_stack(Canvas *dst, const Canvas *rows, int n, int gap, char *err, size_t errlen);
#endif
