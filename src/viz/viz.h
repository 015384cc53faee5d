// The drawing room: an RGB8 canvas, colormaps, attention-map overlays, colour bars and line plots.
// Everything here works on memory buffers; writing the PNG is image.h's png_write.
//
// Conventions (all functions):
// - Canvas pixels are RGB8, row-major [h][w][3]. Drawing clips to the canvas: any x, y (negative,
//   past the edge) is fine, nothing is written outside.
// - Float images are [H][W][c], c = 1 (grey, replicated) or 3, values in [0, 1]; outside values are
//   clipped, NaN counts as 0.
// - Float -> uint8 is round half up: u8 = floor(v * 255 + 0.5) after clipping v to [0, 1].
//
// An attention overlay, for example (map [gh][gw] -> tile of W x H image pixels at scale K):
//   float *up = malloc(W * H * sizeof *up);
//   viz_upsample(map, gw, gh, up, W, H, bilinear);
//   viz_normalize(up, (size_t)W * H);
//   viz_overlay(&canvas, x, y, img, W, H, c, up, colormap_from_name("viridis"), 0.6f, K);
#ifndef VITMAE_VIZ_H
#define VITMAE_VIZ_H
#include <stddef.h>
#include <stdint.h>

#include "viz/canvas.h"

enum { VIZ_MAX_SIDE = 1 << 16 };   // canvas_create refuses wider or taller canvases

// ---- canvas ----
// Allocates a w x h canvas, all black. Returns 0, or -1 with a message (bad size, out of memory).
int  canvas_create(Canvas *c, int w, int h, char *err, size_t errlen);
void canvas_free(Canvas *c);                       // frees px, zeroes the struct; NULL-safe
void canvas_fill(Canvas *c, const uint8_t rgb[3]);
void canvas_fill_rect(Canvas *c, int x, int y, int w, int h, const uint8_t rgb[3]);
// Outline of the w x h box at (x, y); the border of `thick` pixels lies inside the box.
void canvas_rect(Canvas *c, int x, int y, int w, int h, int thick, const uint8_t rgb[3]);
// Line from (x0, y0) to (x1, y1), both ends included (Bresenham), with a square pen `thick` wide.
// It steps through every point, on the canvas or not: keep the ends near the canvas.
void canvas_line(Canvas *c, int x0, int y0, int x1, int y1, int thick, const uint8_t rgb[3]);
// Draws float image img [H][W][c] with its top-left at (x, y), each pixel as a scale x scale block.
void canvas_blit_float(Canvas *dst, int x, int y, const float *img, int W, int H, int c, int scale);
// Draws float image img [H][W][c] resized to dw x dh with its top-left at (x, y): bilinear as
// image_resize_bilinear (antialiased when shrinking), or nearest (source = floor(dst * W / dw)).
// 0, or -1 out of memory for the bilinear resize (nothing drawn: the caller fails, docs/data.md).
int  canvas_blit_resized(Canvas *dst, int x, int y, const float *img, int W, int H, int c, int dw, int dh,
                         int bilinear);
// Copies src with its top-left at (x, y).
void canvas_blit(Canvas *dst, int x, int y, const Canvas *src);
// Text and anti-aliased lines: text.h (cairo).

// ---- colormaps ----
// Each map is 256 RGB8 entries, built on first use from a few published key colours per map,
// interpolated with monotone cubic (Fritsch-Carlson) curves in CIELAB. `gray` is v -> (v, v, v).
enum { CMAP_VIRIDIS, CMAP_INFERNO, CMAP_MAGMA, CMAP_CIVIDIS, CMAP_TURBO, CMAP_GRAY, CMAP_COUNT };
#define VIZ_COLORMAP_NAMES "viridis|inferno|magma|cividis|turbo|gray"
int colormap_from_name(const char *name);          // CMAP_*, or -1 when unknown
const char *colormap_name(int cmap);               // "viridis", ...; NULL when out of range
// The 256 x 3 table of a map (thread-safe; built once). NULL when cmap is out of range.
const uint8_t *colormap_table(int cmap);
// Colour of v in [0, 1] (clipped; NaN -> 0): entry floor(v * 255 + 0.5).
void colormap_color(int cmap, float v, uint8_t rgb[3]);

// ---- maps (attention, error) ----
// Resizes map [gh][gw] to out [H][W] like torch F.interpolate: bilinear with align_corners=False
// (source = (dst + 0.5) * in / out - 0.5, clamped at 0 and at the last cell), or nearest
// (source = floor(dst * in / out)).
void viz_upsample(const float *map, int gw, int gh, float *out, int W, int H, int bilinear);
// In place: v -> (v - min) / (max - min) over the finite values; a constant map (or one with no
// finite value) becomes all 0; NaN becomes 0.
void viz_normalize(float *map, size_t n);
// Draws img blended with the colour of map01 (values in [0, 1]) at (x, y), each pixel scale x scale:
//   u8 = round_half_up((1 - alpha) * 255 * img + alpha * colour8)   (alpha clipped to [0, 1])
// alpha = 1 draws the colormap alone; img may be NULL (taken as black).
void viz_overlay(Canvas *dst, int x, int y, const float *img, int W, int H, int c,
                 const float *map01, int cmap, float alpha, int scale);
// A colour bar: the colours of cmap from vmin to vmax, labelled with those two values
// (viz_format_value), and `mark` (e.g. the uniform-attention level) drawn as a white line with a
// dark edge across the bar when it lies in [vmin, vmax], as a white arrow with a dark edge at the
// end it lies beyond otherwise, pointing out of the bar (NaN: no mark).
typedef struct {
    int cmap;
    double vmin, vmax, mark;
    const char *mark_label;     // horizontal bars: written under the mark where it clears the ends
    double text_size;           // label size, pixels (text.h)
    uint8_t text_rgb[3];
} ColorBar;
// Draws the bar in the box (x, y, w, h): vertical (max at the top, labels right of the bar from
// x + w + 3, the max's line level with the bar's top, the min's with its bottom) or horizontal (min at the left; labels in a line under the bar,
// from y + h + 2: min left-aligned, max right-aligned). Labels never overlap: where the bar is
// shorter than two lines (vertical) or narrower than both labels and 4 pixels (horizontal), the max
// alone is written, at its place. A flat scale (vmin = vmax) is one colour, the lowest, its one
// value written once as the max, and a mark equal to it drawn across the bar's middle.
void viz_colorbar(Canvas *c, int x, int y, int w, int h, int vertical, const ColorBar *b);
// 1 when the bar's mark lies above vmax, -1 below vmin, 0 inside, NaN or a scale whose vmax is below vmin.
int  viz_colorbar_mark_beyond(const ColorBar *b);
// Width of the wider end label of a vertical bar, and the height a horizontal bar of bar_h takes
// with its labels (bar_h + 2 + a text line).
int  viz_colorbar_label_width(double vmin, double vmax, double size);
int  viz_colorbar_height(int bar_h, double size);
// The text of a value on colour bars and in captions: "%.3g", never "-0".
void viz_format_value(double v, char *buf, size_t n);

// ---- line plots (training curves) ----
typedef struct {
    const char *label;          // legend text; NULL or "" keeps it out of the legend
    const double *x, *y;        // n points; a point with a non-finite x or y (or y <= 0 on a log
    int n;                      //   axis) is skipped and breaks the line
    int has_rgb;                // 0: colour from the built-in palette by series index
    uint8_t rgb[3];
} PlotSeries;

typedef struct {
    const char *title, *xlabel, *ylabel;   // each may be NULL
    int log_y;                             // log10 y axis
    int x_whole;                           // x values are whole numbers (steps): ticks only at them
} PlotOptions;

// The palette used when has_rgb is 0 (Okabe-Ito colours, distinct for colour-blind readers).
void viz_palette(int index, uint8_t rgb[3]);
// Draws a plot filling the box (x, y, w, h): white background, title, axes with "nice" tick
// labels (1, 2, 5 x 10^k; decades on a log axis; 1..9 x 10^k where 1, 2, 5 leave two ticks and
// the height has room; a linear axis's ends and ticks for values within a factor of two, viz_plot_axis), light grid, series as anti-aliased lines, and a legend (top right, or the
// corner that covers the fewest pixels of the lines, top right on a tie). A log y
// axis is captioned "<ylabel> (log scale)". Text is 15 px when the box is at least 800 x 400, else 11 px. With no drawable point the
// axes span [0, 1] and "no data" is written; a linear axis of one value v spans v +- 5%, of 0 [0, 1]; an x axis of whole numbers (x_whole: steps) has ticks only at whole numbers, so one point at step 0 reads 0 and 1, not 0.2 ... 1.0. opt may be NULL. Returns 0, or -1 (nothing drawn)
// when the box is too small (< 120 x 80), or -2 out of memory for a series' points (drawn in part). For RUN/curves.png: loss plot (log_y) above a short lr
// plot, two calls on one canvas.
int viz_plot(Canvas *c, int x, int y, int w, int h, const PlotSeries *series, int nseries,
             const PlotOptions *opt);

// The y axis viz_plot draws for drawable values in [vmin, vmax] with about `want` ticks (rows / 28 at
// 11 px text): its ends and ticks. Log (log_y): ends snapped to 1-2-5 x 10^k, except for values within
// a factor of two, where the ends and ticks are those of the linear axis (multiples of a 1-2-5 step),
// so that the curve fills the height.
enum { VIZ_MAX_TICKS = 32 };
typedef struct { double lo, hi; int log; int nticks; double ticks[VIZ_MAX_TICKS]; } PlotAxis;
void viz_plot_axis(PlotAxis *a, double vmin, double vmax, int log_y, int want);
// The label viz_plot writes at the tick v of the axis a, in buf: one format per axis, with the digits
// that tell neighbouring ticks apart (a log axis's %g takes more than its 6 where they need them).
void viz_tick_label(char *buf, size_t n, double v, const PlotAxis *a);

// One panel of a stacked figure: h pixel rows of viz_plot with these series and options.
typedef struct {
    int h;
    const PlotSeries *series;
    int nseries;
    const PlotOptions *opt;
} PlotPanel;
// Stacks the panels (top to bottom, each w wide) on a white canvas and writes it as an RGB PNG
// at path (RUN/curves.png of train and finetune). The panels share one x range (the union of their
// points) and the left and right edges of their plot areas, so a step is at the same x in each. The
// PNG's text "x_range" is that range, "<min> <max>" (%.17g; absent when no point is drawn). Returns 0,
// or -1 with err filled.
int viz_plot_png(const char *path, int w, const PlotPanel *panels, int npanels, char *err, size_t errlen);
#endif
