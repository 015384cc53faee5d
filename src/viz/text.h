// Text and anti-aliased lines on a Canvas, drawn by cairo: the font is DejaVu Sans found through
// fontconfig (Debian's fonts-dejavu-core; fontconfig substitutes the closest sans-serif when it is
// missing). cairo renders into a grey (A8) coverage mask the size of the text or path, and the mask
// is blended into the RGB8 canvas: out = round(dst + (rgb - dst) * coverage / 255).
//
// Sizes are in pixels: `size` is the font's em size (12 reads well on screen), a line of text is
// text_line_height(size) pixels tall, and (x, y) of a text is the top-left of its first line's box.
// Everything clips to the canvas. Text is UTF-8 (bytes that are not UTF-8, as in a file name, are
// drawn as U+FFFD); '\n' starts a new line at x.
#ifndef VITMAE_TEXT_H
#define VITMAE_TEXT_H
#include <stddef.h>
#include <stdint.h>
#include "viz/canvas.h"

// Height of one line of text (the font's ascent + descent, rounded up), pixels.
int  text_line_height(double size);
// Width of the widest line of s (advances, rounded up), pixels; 0 for "".
int  text_width(const char *s, double size);
// Height of s: lines * text_line_height (0 for "").
int  text_height(const char *s, double size);
// Draws s with its top-left at (x, y). Returns the x just past the last line's text.
int  canvas_text(Canvas *c, int x, int y, const char *s, const uint8_t rgb[3], double size);
// Greedy word wrap of s into lines no wider than max_w pixels (a single word wider than that keeps
// a line of its own), written to out with '\n' between lines (cut to outlen). Returns the number
// of lines (0 for "").
int  text_wrap(const char *s, double size, int max_w, char *out, size_t outlen);
// text_wrap for text that names things (a picture's title: a file name): a word wider than max_w is
// shortened in its middle to fit, its start and its end kept around an ellipsis (U+2026), the end
// at least as long as the word's extension ("a_very_long_n\xE2\x80\xA6mber_0001.png"), so that the
// names of two pictures still tell them apart where text_wrap's line of its own ran past the
// picture's edge. Cuts fall between UTF-8 characters. Returns the number of lines.
int  text_wrap_names(const char *s, double size, int max_w, char *out, size_t outlen);
// An open anti-aliased path through n points (x[i], y[i]) in pixel coordinates (pixel centres at
// k + 0.5), `width` pixels wide, round joins. n = 1 draws a dot of that diameter.
void canvas_polyline(Canvas *c, const double *x, const double *y, int n, double width, const uint8_t rgb[3]);
#endif
