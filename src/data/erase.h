// Random erasing of training images, as timm's RandomErasing (MAE's main_finetune.py: --reprob,
// --remode, --recount): with probability P an image gets up to N boxes, each of 2% to 1/3 of the image
// (divided by the number of boxes) and an aspect ratio log-uniform in [0.3, 1/0.3], filled with normal
// noise per pixel, per channel, or zeros, on the normalised pixels. docs/encoder.md, "Random erasing".
#ifndef VITMAE_ERASE_H
#define VITMAE_ERASE_H
#include <stdint.h>

enum { ERASE_PIXEL, ERASE_RAND, ERASE_CONST };   // timm's modes "pixel", "rand", "const"
typedef struct { float prob; int mode, count; } EraseFlags;   // --reprob, --remode, --recount
#define ERASE_MODES "pixel|rand|const"
#define ERASE_COUNT_MAX 64      // --recount's range is [1, ERASE_COUNT_MAX]
#define ERASE_ATTEMPTS 10       // timm's tries at a box that fits before it gives that box up
#define ERASE_CHANNELS_MAX 4    // the most channels erase_image fills (vitmae's images have 1 or 3)

typedef struct { int y, x, h, w; } EraseBox;   // rows [y, y + h), columns [x, x + w)

int erase_enabled(const EraseFlags *f);                  // prob above 0
int erase_mode_parse(const char *name, int *mode);       // 0, or -1 for a name not in ERASE_MODES
const char *erase_mode_name(int mode);
// One attempt's sides from its two uniform draws in [0, 1), as timm computes them in double: area
// uniform in [0.02, 1/3] of H x W over count, aspect exp(uniform in [log 0.3, log(1/0.3)]), h and w the
// square roots of area x aspect and area / aspect rounded half to even (Python's round). Returns 1 when
// the box fits (h < H and w < W), else 0.
int erase_sides(double u_area, double u_aspect, int H, int W, int count, int *h, int *w);
// Image `index` of step `step`, [H, W, C] (C <= ERASE_CHANNELS_MAX), erased in place from the run's seed alone (any process and
// thread count draws the same). Returns the boxes erased (0: left as it was) and, when boxes is not
// NULL, writes them there (room for f->count).
int erase_image(float *img, int H, int W, int C, const EraseFlags *f, uint64_t seed, uint64_t step, uint64_t index,
                EraseBox *boxes);
#endif
