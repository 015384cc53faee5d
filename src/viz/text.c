// Text and anti-aliased lines through cairo. See text.h.
#include "viz/text.h"

#include <cairo.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/json.h"

static const char FONT_FAMILY[] = "DejaVu Sans";

// s[0..len) as a string for cairo, with what is not UTF-8 as U+FFFD (io/json.h, utf8_clean): cairo
// draws nothing of a string that is not UTF-8, so a file name of other bytes took the whole title
// line of a reconstruct panel with it. malloc'ed; NULL when out of memory.
static char *line_copy(const char *s, size_t len) {
    char *raw = strndup(s, len), *clean = raw ? utf8_clean(raw) : NULL;
    free(raw);
    return clean;
}

// A context over surface s with our font at `size`: grey anti-aliasing (one coverage value per
// pixel, which is what the blend takes), light hinting, advances rounded to whole pixels so a
// measured width is the drawn width.
static cairo_t *font_context(cairo_surface_t *s, double size) {
    cairo_t *cr = cairo_create(s);
    cairo_select_font_face(cr, FONT_FAMILY, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size > 1 ? size : 1);
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_SLIGHT);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_ON);
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
    return cr;
}

// Measures with a 1 x 1 scratch surface: ascent, line height, and (when s) the advance of s.
static void measure(const char *s, size_t len, double size, double *ascent, int *line_h, double *advance) {
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_A8, 1, 1);
    cairo_t *cr = font_context(sf, size);
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    if (ascent) *ascent = fe.ascent;
    if (line_h) *line_h = (int)ceil(fe.ascent + fe.descent);
    if (advance) {
        *advance = 0;
        if (len) {
            char *line = line_copy(s, len);
            if (line) {
                cairo_text_extents_t te;
                cairo_text_extents(cr, line, &te);
                *advance = te.x_advance;
                free(line);
            }
        }
    }
    cairo_destroy(cr);
    cairo_surface_destroy(sf);
}

int text_line_height(double size) {
    int h;
    measure(NULL, 0, size, NULL, &h, NULL);
    return h;
}

static int line_width(const char *s, size_t len, double size) {
    double adv;
    measure(s, len, size, NULL, NULL, &adv);
    return (int)ceil(adv);
}

int text_width(const char *s, double size) {
    int w = 0;
    while (*s) {
        size_t len = strcspn(s, "\n");
        int lw = line_width(s, len, size);
        if (lw > w) w = lw;
        s += len;
        if (*s) s++;
    }
    return w;
}

int text_height(const char *s, double size) {
    if (!*s) return 0;
    int lines = 1;
    for (; *s; s++) lines += *s == '\n';
    return lines * text_line_height(size);
}

// Blends rgb into c through the A8 coverage mask of surface sf placed with its top-left at (x0, y0).
static void blend_mask(Canvas *c, cairo_surface_t *sf, int x0, int y0, const uint8_t rgb[3]) {
    cairo_surface_flush(sf);
    const uint8_t *m = cairo_image_surface_get_data(sf);
    if (!m) return;
    int mw = cairo_image_surface_get_width(sf), mh = cairo_image_surface_get_height(sf);
    int stride = cairo_image_surface_get_stride(sf);
    for (int y = 0; y < mh; y++) {
        long cy = (long)y0 + y;
        if (cy < 0 || cy >= c->h) continue;
        for (int x = 0; x < mw; x++) {
            long cx = (long)x0 + x;
            int a = m[(size_t)y * stride + x];
            if (!a || cx < 0 || cx >= c->w) continue;
            uint8_t *p = c->px + ((size_t)cy * c->w + (size_t)cx) * 3;
            for (int k = 0; k < 3; k++) p[k] = (uint8_t)((p[k] * (255 - a) + rgb[k] * a + 127) / 255);
        }
    }
}

// One line of text at (x, y) (top-left of its box). Returns its advance.
static int draw_line(Canvas *c, int x, int y, const char *s, size_t len, const uint8_t rgb[3], double size) {
    if (!len) return 0;
    double ascent, adv;
    int lh;
    measure(s, len, size, &ascent, &lh, &adv);
    int pad = (int)ceil(size / 4) + 1;   // room for glyphs reaching past their advance (italics, j)
    int w = (int)ceil(adv) + 2 * pad, h = lh + 2 * pad;
    // Nothing to draw when the box misses the canvas (also keeps absurd coordinates cheap).
    if ((long)x - pad >= c->w || (long)y - pad >= c->h || (long)x + w - pad <= 0 || (long)y + h - pad <= 0)
        return (int)ceil(adv);
    char *line = line_copy(s, len);
    if (!line) return (int)ceil(adv);
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_A8, w, h);
    if (cairo_surface_status(sf) == CAIRO_STATUS_SUCCESS) {
        cairo_t *cr = font_context(sf, size);
        cairo_move_to(cr, pad, pad + ascent);
        cairo_show_text(cr, line);
        cairo_destroy(cr);
        blend_mask(c, sf, x - pad, y - pad, rgb);
    }
    cairo_surface_destroy(sf);
    free(line);
    return (int)ceil(adv);
}

int canvas_text(Canvas *c, int x, int y, const char *s, const uint8_t rgb[3], double size) {
    int lh = text_line_height(size), end = x;
    while (*s) {
        size_t len = strcspn(s, "\n");
        end = x + draw_line(c, x, y, s, len, rgb, size);
        s += len;
        if (*s) { s++; y += lh; }
    }
    return end;
}

int text_wrap(const char *s, double size, int max_w, char *out, size_t outlen) {
    if (!outlen) return 0;
    out[0] = 0;
    size_t n = 0, ls = 0;   // length of out, start of its last line
    int lines = 0, force = 0;
    for (const char *p = s; *p;) {
        if (*p == ' ') { p++; continue; }
        if (*p == '\n') { force = lines > 0; p++; continue; }
        size_t wl = strcspn(p, " \n");
        int newline = force;
        if (lines && !newline) {   // does "<last line> <word>" fit?
            size_t cur = n - ls;
            char *probe = malloc(cur + wl + 2);
            if (probe) {
                memcpy(probe, out + ls, cur);
                probe[cur] = ' ';
                memcpy(probe + cur + 1, p, wl);
                newline = line_width(probe, cur + 1 + wl, size) > max_w;
                free(probe);
            }
        }
        if (n + (lines ? 1 : 0) + wl + 1 > outlen) break;
        if (lines) {
            out[n++] = newline ? '\n' : ' ';
            if (newline) { lines++; ls = n; }
        } else {
            lines = 1;
        }
        memcpy(out + n, p, wl);
        n += wl;
        out[n] = 0;
        p += wl;
        force = 0;
    }
    return lines;
}

// Byte offsets of the n characters of word[0..len) (UTF-8 lead bytes; a stray continuation byte
// goes with the character before it) into starts[0..len]; starts[n] = len. Returns n.
static size_t char_starts(const char *word, size_t len, size_t *starts) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (i == 0 || ((unsigned char)word[i] & 0xC0) != 0x80) starts[n++] = i;
    starts[n] = len;
    return n;
}

static const char ELLIPSIS[] = "\xE2\x80\xA6";   // U+2026
enum { EXT_MAX_CHARS = 12 };

// word[0..len) with all but `keep` of its n characters cut from its middle, an ellipsis in their
// place: the end keeps half of them, and at least the extension (ext characters) while one is left
// for the start (keep 0: the ellipsis alone). Written to out (room for len + sizeof ELLIPSIS).
// Returns its length.
static size_t shorten_word(const char *word, const size_t *starts, size_t n, size_t keep, size_t ext, char *out) {
    size_t tail = keep / 2;
    if (ext > tail) tail = ext < keep ? ext : keep > 0 ? keep - 1 : 0;
    size_t head = keep - tail, hb = starts[head], tb = starts[n - tail];
    memcpy(out, word, hb);
    memcpy(out + hb, ELLIPSIS, sizeof ELLIPSIS - 1);
    memcpy(out + hb + sizeof ELLIPSIS - 1, word + tb, starts[n] - tb);
    return hb + sizeof ELLIPSIS - 1 + (starts[n] - tb);
}

int text_wrap_names(const char *s, double size, int max_w, char *out, size_t outlen) {
    size_t len = strlen(s);
    // A shortened word loses a character or more and gains the ellipsis (3 bytes): 2 bytes more at
    // most, and there are at most len / 2 + 1 words.
    char *fit = malloc(2 * len + 4);
    size_t *starts = malloc((len + 1) * sizeof *starts);
    char *word_out = malloc(len + sizeof ELLIPSIS);
    if (!fit || !starts || !word_out) {
        free(fit); free(starts); free(word_out);
        return text_wrap(s, size, max_w, out, outlen);   // out of memory: the names as they are
    }
    size_t n = 0;
    for (const char *p = s; *p;) {
        size_t wl = strcspn(p, " \n");
        if (!wl) { fit[n++] = *p++; continue; }
        if (line_width(p, wl, size) <= max_w) {
            memcpy(fit + n, p, wl);
            n += wl;
            p += wl;
            continue;
        }
        // The extension: from the word's last '.' (not its first character) on, when short enough to
        // be one (".png", ".jpeg:"); a dot early in a long word is not.
        size_t nc = char_starts(p, wl, starts), ext = 0;
        const char *dot = memrchr(p, '.', wl);
        for (size_t k = 0; dot && dot > p && k < nc; k++) ext += p + starts[k] >= dot;
        if (ext > EXT_MAX_CHARS) ext = 0;
        // The most characters that fit (the width grows with them): a binary search over keep.
        size_t lo = 0, hi = nc - 1;
        while (lo < hi) {
            size_t mid = (lo + hi + 1) / 2;
            size_t ml = shorten_word(p, starts, nc, mid, ext, word_out);
            if (line_width(word_out, ml, size) <= max_w) lo = mid;
            else hi = mid - 1;
        }
        n += shorten_word(p, starts, nc, lo, ext, fit + n);
        p += wl;
    }
    fit[n] = 0;
    int lines = text_wrap(fit, size, max_w, out, outlen);
    free(fit); free(starts); free(word_out);
    return lines;
}

void canvas_polyline(Canvas *c, const double *x, const double *y, int n, double width, const uint8_t rgb[3]) {
    if (n < 1 || !(width > 0)) return;
    double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) return;
        if (x[i] < x0) x0 = x[i];
        if (x[i] > x1) x1 = x[i];
        if (y[i] < y0) y0 = y[i];
        if (y[i] > y1) y1 = y[i];
    }
    // The mask covers the path's box plus the pen, clipped to the canvas.
    double r = width / 2 + 1;
    double bx0 = floor(x0 - r), by0 = floor(y0 - r), bx1 = ceil(x1 + r), by1 = ceil(y1 + r);
    if (bx0 < 0) bx0 = 0;
    if (by0 < 0) by0 = 0;
    if (bx1 > c->w) bx1 = c->w;
    if (by1 > c->h) by1 = c->h;
    if (bx1 <= bx0 || by1 <= by0) return;
    int mx = (int)bx0, my = (int)by0, mw = (int)(bx1 - bx0), mh = (int)(by1 - by0);
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_A8, mw, mh);
    if (cairo_surface_status(sf) == CAIRO_STATUS_SUCCESS) {
        cairo_t *cr = cairo_create(sf);
        cairo_set_line_width(cr, width);
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
        cairo_move_to(cr, x[0] - mx, y[0] - my);
        if (n == 1) cairo_line_to(cr, x[0] - mx, y[0] - my);   // a round cap on a zero-length path: a dot
        for (int i = 1; i < n; i++) cairo_line_to(cr, x[i] - mx, y[i] - my);
        cairo_stroke(cr);
        cairo_destroy(cr);
        blend_mask(c, sf, mx, my, rgb);
    }
    cairo_surface_destroy(sf);
}
