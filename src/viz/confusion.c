// Confusion-matrix picture (confusion.h).
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "viz/confusion.h"
#include "viz/text.h"

enum { NAME_HEAD_CHARS = 12, NAME_TAIL_CHARS = 12 };
static const double TEXT_SIZE = 11;   // pixels (text.h)

// The byte offset past the first `chars` characters of s (or its end): a cut never splits a UTF-8 sequence.
static size_t chars_in(const char *s, int chars) {
    size_t b = 0;
    for (int c = 0; s[b] && c < chars; c++) {
        b++;
        while ((s[b] & 0xC0) == 0x80) b++;   // continuation bytes of the same character
    }
    return b;
}

void viz_confusion_label(char *out, size_t n, int i, const char *name) {
    size_t len = strlen(name), head = chars_in(name, NAME_HEAD_CHARS);
    int total = 0;
    for (size_t b = 0; b < len; b++) total += (name[b] & 0xC0) != 0x80;
    if (total <= NAME_HEAD_CHARS + NAME_TAIL_CHARS) { snprintf(out, n, "%d %s", i, name); return; }
    // The middle goes: names that differ at their ends ("... class 1", "... class 2") stay apart, where
    // a cut after 24 characters drew three rows "Ankle boot with a very l..." alike.
    size_t tail = chars_in(name, total - NAME_TAIL_CHARS);
    snprintf(out, n, "%d %.*s\xE2\x80\xA6%s", i, (int)head, name, name + tail);
}

int viz_confusion(Canvas *out, const long *counts, int n, const char *const *names, const char *title,
                  char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (n < 1 || n > 4096) { snprintf(err, errlen, "%d classes cannot be drawn (1..4096)", n); return -1; }
    // Cells shrink with many classes; counts are written only where they fit.
    int cell = n <= 20 ? 34 : n <= 60 ? 14 : 4;
    int pad = 10, label_w = 0, lh = text_line_height(TEXT_SIZE);
    char label[160];
    for (int i = 0; i < n; i++) {
        viz_confusion_label(label, sizeof label, i, names[i]);
        int w = text_width(label, TEXT_SIZE);
        if (w > label_w) label_w = w;
    }
    // Rows are labelled every row_every-th where a line of text is taller than a cell. Column
    // indices take `lines` staggered lines (column j on line j % lines) where they are wider than
    // a cell, and are written every col_every-th column where even that is not enough.
    snprintf(label, sizeof label, "%d", n - 1);
    int idx_w = text_width(label, TEXT_SIZE) + 3;
    int row_every = (lh + cell - 1) / cell, span = (idx_w + cell - 1) / cell;
    int lines = span <= 2 ? span : 1, col_every = span <= 2 ? 1 : span;
    int title_h = lh * 2, head_h = lines * lh + 4;
    int gx = pad + label_w + 6, gy = pad + title_h + lh + head_h;
    int bar_x = gx + n * cell + 14, bar_w = 14;
    int W = bar_x + bar_w + 3 + viz_colorbar_label_width(0, 1, TEXT_SIZE) + pad;
    // The texts set the width where the grid is narrow (two classes with short names): the title, the
    // axis words ("predicted ->" over the grid, clear of "true" over the row labels) and the caption under
    // the grid (it was cut at the right edge, and "true" ran into "predicted").
    static const char *caption = "colour: fraction of the true class";
    int pred_x = pad + text_width("true", TEXT_SIZE) + 8;
    if (pred_x < gx) pred_x = gx;
    int min_w[3] = {pad + text_width(title, TEXT_SIZE) + pad, pred_x + text_width("predicted ->", TEXT_SIZE) + pad,
                    gx + text_width(caption, TEXT_SIZE) + pad};
    for (int k = 0; k < 3; k++)
        if (W < min_w[k]) W = min_w[k];
    int H = gy + n * cell + pad + lh;
    if (canvas_create(out, W, H, err, errlen)) return -1;
    const uint8_t white[3] = {255, 255, 255}, black[3] = {0, 0, 0}, grey[3] = {90, 90, 90};
    canvas_fill(out, white);
    canvas_text(out, pad, pad, title, black, TEXT_SIZE);
    canvas_text(out, pred_x, pad + title_h, "predicted ->", grey, TEXT_SIZE);
    canvas_text(out, pad, pad + title_h, "true", grey, TEXT_SIZE);
    for (int i = 0; i < n; i++) {
        long row = 0;
        for (int j = 0; j < n; j++) row += counts[(size_t)i * n + j];
        if (i % row_every == 0) {
            viz_confusion_label(label, sizeof label, i, names[i]);
            canvas_text(out, gx - 6 - text_width(label, TEXT_SIZE), gy + i * cell + (cell - lh) / 2, label, black,
                        TEXT_SIZE);
            if (row_every > 1) canvas_fill_rect(out, gx - 4, gy + i * cell + cell / 2, 3, 1, grey);
        }
        if (i % col_every == 0) {
            snprintf(label, sizeof label, "%d", i);
            int lx = gx + i * cell + (cell - text_width(label, TEXT_SIZE)) / 2;
            if (lx < gx - 6) lx = gx - 6;
            canvas_text(out, lx, gy - head_h + 2 + (i % lines) * lh, label, black, TEXT_SIZE);
            if (col_every > 1) canvas_fill_rect(out, gx + i * cell + cell / 2, gy - 4, 1, 3, grey);
        }
        for (int j = 0; j < n; j++) {
            long v = counts[(size_t)i * n + j];
            float f = row > 0 ? (float)v / (float)row : 0.0f;
            uint8_t rgb[3];
            colormap_color(CMAP_VIRIDIS, f, rgb);
            canvas_fill_rect(out, gx + j * cell, gy + i * cell, cell, cell, rgb);
            snprintf(label, sizeof label, "%ld", v);
            int tw = text_width(label, TEXT_SIZE);
            if (cell >= 14 && tw <= cell - 2)
                canvas_text(out, gx + j * cell + (cell - tw) / 2, gy + i * cell + (cell - lh) / 2, label,
                            f > 0.5f ? black : white, TEXT_SIZE);
        }
    }
    canvas_rect(out, gx - 1, gy - 1, n * cell + 2, n * cell + 2, 1, grey);
    ColorBar bar = {CMAP_VIRIDIS, 0.0, 1.0, NAN, NULL, TEXT_SIZE, {0, 0, 0}};
    viz_colorbar(out, bar_x, gy, bar_w, n * cell, 1, &bar);
    canvas_text(out, gx, gy + n * cell + 4, caption, grey, TEXT_SIZE);
    return 0;
}
