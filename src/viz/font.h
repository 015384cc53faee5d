// A small bitmap font of our own: printable ASCII (32..126), 5 x 7 glyphs (plus one descender row)
// in a 6 x 10 cell. Any other byte is drawn as a box. Scaling is by integer pixel replication.
#ifndef VITMAE_FONT_H
#define VITMAE_FONT_H
#include <stdint.h>
#include "viz/canvas.h"

enum {
    FONT_GLYPH_W = 5,    // ink columns of a glyph
    FONT_GLYPH_H = 8,    // ink rows: 0..6 above the baseline, 7 for descenders (g j p q y , ;)
    FONT_ADVANCE = 6,    // pixels from one character to the next (at scale 1)
    FONT_LINE_H  = 10,   // pixels from one line to the next (at scale 1)
};

// Draws s with its top-left at (x, y), scale >= 1 (smaller is taken as 1); '\n' starts a new line
// at x. Clips to the canvas. Returns the x just past the last character of the last line.
int font_draw(Canvas *c, int x, int y, const char *s, const uint8_t rgb[3], int scale);
// Width in pixels of the widest line of s: (FONT_ADVANCE * chars - 1) * scale, 0 when empty.
int font_text_width(const char *s, int scale);
// Height in pixels of s: lines * FONT_LINE_H * scale (0 for "").
int font_text_height(const char *s, int scale);
// The 8 rows of a glyph (bit 4 = leftmost column); NULL for bytes outside 32..126.
const uint8_t *font_glyph(unsigned char ch);
#endif
