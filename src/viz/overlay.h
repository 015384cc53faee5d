// Maps over photographs at display size, and montages of such tiles (`vitmae attention`).
//
// A map [gh][gw] belongs to the model's view of the photo: the evaluation crop, a box in the
// photo's pixels (image_eval_box). The photo is drawn at a display size; the box is scaled with it;
// the map is resized onto the box's display pixels and blended over the photo there. Outside the
// box the photo is dimmed and the box outlined, so a wide photo shows where the model looked.
//
// Display size (overlay_display_size): a photo whose longest side exceeds `display` is shrunk to
// that side (aspect kept; antialiased bilinear); a smaller photo is never resampled: it is enlarged
// by a whole factor k = max(1, floor(display / longest side)), each pixel a k x k block (so a 28 px
// Fashion-MNIST image is legible and shows its real pixels). scale > 0 forces k = scale.
#ifndef VITMAE_OVERLAY_H
#define VITMAE_OVERLAY_H
#include <stddef.h>
#include "viz/viz.h"

// Display size of a w x h photo; *k = the whole enlargement factor, 0 when the photo is shrunk.
void overlay_display_size(int w, int h, int display, int scale, int *dw, int *dh, int *k);
// The photo [h][w][c] at display size (overlay_display_size): out [dh][dw][c]. 0, or -1 out of memory
// for the shrinking resize (image_resize_bilinear).
int  overlay_display_photo(const float *photo, int w, int h, int c, int dw, int dh, int k, float *out);
// out [dh][dw] = map [gh][gw] laid over box (x, y, width, height, in display pixels): a pixel whose
// centre lies in the box gets the map at its position, bilinear (align_corners=False over the box:
// u = (px + 0.5 - x) / width * gw - 0.5, clamped to the cells) or nearest (cell floor((px + 0.5 - x)
// / width * gw)); pixels outside the box get NaN. NaN cells (masked patches) lend no value: bilinear
// renormalises the weights of the finite corners (a pixel with none is NaN), so a visible cell beside
// masked ones keeps its own value instead of fading toward a filler.
void overlay_map(const float *map, int gw, int gh, const double box[4], int dw, int dh, int bilinear, float *out);
// The display pixels of grid cell (gx, gy) of a gw x gh grid over box: r = {x0, y0, x1, y1}
// (half-open, rounded to the nearest pixel edge).
void overlay_cell_rect(const double box[4], int gw, int gh, int gx, int gy, int r[4]);
// Draws at (x, y): the photo [dh][dw][c] blended with colour((v - vmin) / (vmax - vmin)) of map
// [dh][dw] where it is finite (the viz_overlay formula, alpha clipped to [0, 1]); where it is NaN
// the photo at 45% brightness. outline != 0 draws the box (display pixels) 2 px wide, white over
// black. vmax <= vmin paints every finite value with the lowest colour.
void overlay_draw(Canvas *c, int x, int y, const float *photo, int dw, int dh, int pc, const float *map,
                  double vmin, double vmax, int cmap, float alpha, const double box[4], int outline);

// A montage: n tiles in a grid of cols x rows cells, each cell a label above a picture and a
// colour bar under it, below a header. A cell is at least min_cell_w wide and the montage at least
// min_w (room for the labels, the bar's numbers and the header's text: a photo of 1 x 4000 pixels made
// tiles 1 px wide, labels drawn over one another and a header of a word a line); a narrower picture
// is centred in its cell. All sizes in pixels:
//   cell_w = max(tile_w, min_cell_w), cell_h = label_h + tile_h + bar_h, tile_x = (cell_w - tile_w) / 2
//   w = max(pad + cols * (cell_w + pad), min_w),  h = head_h + pad + rows * (cell_h + pad)
//   cell i at column i % cols, row i / cols, from (pad + col * (cell_w + pad), head_h + pad + row *
//   (cell_h + pad)): its label there, its picture tile_x right and label_h below, its bar (cell_w
//   wide) under the picture.
// Every cell holds a tile: n = cols * rows.
typedef struct {
    int n, cols, rows, tile_w, tile_h, label_h, bar_h, head_h, pad, cell_w, cell_h, tile_x, w, h;
} Montage;
// Columns for n tiles without an empty cell: the smallest divisor of n that is >= sqrt(n)
// (a square when n is one; wider than tall otherwise; one row when n is prime).
int  montage_auto_cols(int n);
// Fills m. cols must divide n. cols 0 chooses: montage_auto_cols(n), or where that grid is more than
// VIZ_MAX_SIDE wide (tall) the most (fewest) columns below (above) it that divide n and fit; the error
// ("too large") names the montage_auto_cols grid when none fits. 0 ok, -1 with err (bad sizes, too large).
int  montage_plan(Montage *m, int n, int cols, int tile_w, int tile_h, int label_h, int bar_h, int head_h,
                  int pad, int min_cell_w, int min_w, char *err, size_t errlen);
// Top-left of tile i's cell (its label) and of its picture.
void montage_cell_origin(const Montage *m, int i, int *x, int *y);
void montage_tile_origin(const Montage *m, int i, int *x, int *y);
#endif
