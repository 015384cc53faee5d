// The RGB8 canvas every drawing function works on (viz/viz.h, viz/text.h): pixels row-major
// [h][w][3]. Its functions (create, fill, blit, ...) are in viz/viz.h.
#ifndef VITMAE_CANVAS_H
#define VITMAE_CANVAS_H
#include <stdint.h>

typedef struct { int w, h; uint8_t *px; } Canvas;   // px: [h][w][3]
#endif
