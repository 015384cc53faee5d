// viz + text: canvas primitives, colormaps, upsampling (vs torch F.interpolate), normalisation,
// blending arithmetic, colour bar, greyed patches, cairo text and lines, and line plots staying in
// their box.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "viz/text.h"
#include "viz/viz.h"
#include "viz/confusion.h"
#include "io/json.h"
#include "data/image.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const uint8_t *px(const Canvas *c, int x, int y) { return c->px + ((size_t)y * c->w + x) * 3; }

static int is_rgb(const uint8_t *p, int r, int g, int b) { return p[0] == r && p[1] == g && p[2] == b; }

// Pixels of colour rgb inside [x0, x1) x [y0, y1) / outside it.
static int count_rgb(const Canvas *c, const uint8_t rgb[3], int x0, int y0, int x1, int y1, int inside) {
    int n = 0;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) {
            int in = x >= x0 && x < x1 && y >= y0 && y < y1;
            if (in == inside && is_rgb(px(c, x, y), rgb[0], rgb[1], rgb[2])) n++;
        }
    return n;
}

// Pixels with some ink (red channel > 100 on a black canvas) inside [x0, x1) x [y0, y1).
static int count_lit(const Canvas *c, int x0, int y0, int x1, int y1) {
    int n = 0;
    for (int y = y0; y < y1 && y < c->h; y++)
        for (int x = x0; x < x1 && x < c->w; x++) n += px(c, x, y)[0] > 100;
    return n;
}

// CIELAB L* of an sRGB8 colour, computed here independently of viz.c.
static double lightness(const uint8_t *rgb) {
    double lin[3];
    for (int k = 0; k < 3; k++) {
        double v = rgb[k] / 255.0;
        lin[k] = v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
    }
    double Y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    return Y > 216.0 / 24389 ? 116 * cbrt(Y) - 16 : Y * 24389.0 / 27;
}

static void test_canvas(void) {
    char err[128] = "";
    Canvas c;
    CHECK(canvas_create(&c, 0, 5, err, sizeof err) == -1 && err[0], "zero width refused");
    CHECK(c.px == NULL && c.w == 0, "failed create leaves an empty canvas");
    CHECK(canvas_create(&c, VIZ_MAX_SIDE + 1, 2, err, sizeof err) == -1, "too wide refused");
    CHECK(canvas_create(&c, 8, 8, err, sizeof err) == 0 && c.px, "create 8x8: %s", err);
    int black = 1;
    for (int i = 0; i < 8 * 8 * 3; i++) black &= c.px[i] == 0;
    CHECK(black, "new canvas is black");

    const uint8_t red[3] = {255, 0, 0}, blue[3] = {0, 0, 255};
    canvas_fill_rect(&c, -5, -5, 10, 10, red);   // clipped to [0,5) x [0,5)
    CHECK(count_rgb(&c, red, 0, 0, 5, 5, 1) == 25 && count_rgb(&c, red, 0, 0, 5, 5, 0) == 0,
          "fill_rect clips");
    canvas_fill_rect(&c, 6, 6, 2147483647, 2147483647, blue);   // huge sizes do not overflow
    CHECK(count_rgb(&c, blue, 6, 6, 8, 8, 1) == 4, "fill_rect with huge size clips");
    canvas_free(&c);
    CHECK(c.px == NULL, "free clears");
    canvas_free(&c);   // twice is fine

    CHECK(canvas_create(&c, 12, 12, err, sizeof err) == 0, "create 12x12");
    canvas_rect(&c, 1, 1, 10, 10, 2, red);
    CHECK(count_rgb(&c, red, 0, 0, 12, 12, 1) == 100 - 36, "rect outline thickness 2");
    CHECK(is_rgb(px(&c, 1, 1), 255, 0, 0) && is_rgb(px(&c, 2, 2), 255, 0, 0) &&
          is_rgb(px(&c, 3, 3), 0, 0, 0) && is_rgb(px(&c, 10, 10), 255, 0, 0), "rect corners");
    const uint8_t k0[3] = {0, 0, 0};
    canvas_fill(&c, k0);
    canvas_line(&c, 0, 0, 4, 4, 1, blue);
    CHECK(count_rgb(&c, blue, 0, 0, 12, 12, 1) == 5, "diagonal line: 5 pixels, ends included");
    CHECK(is_rgb(px(&c, 4, 4), 0, 0, 255) && is_rgb(px(&c, 2, 2), 0, 0, 255), "diagonal pixels");
    canvas_fill(&c, k0);
    canvas_line(&c, 2, 7, 9, 7, 3, blue);
    CHECK(count_rgb(&c, blue, 0, 0, 12, 12, 1) == 10 * 3, "thick line area");
    CHECK(count_rgb(&c, blue, 1, 6, 11, 9, 0) == 0, "thick line stays within its pen");
    canvas_line(&c, -100, -50, 300, 400, 3, red);   // mostly off-canvas: clipped, no crash

    // Blit of a float image: clip, NaN -> 0, round half up, scale blocks.
    canvas_fill(&c, k0);
    float img[4] = {0.5f, -1.0f, 2.0f, NAN};   // 2x2 grey
    canvas_blit_float(&c, 1, 1, img, 2, 2, 1, 3);
    CHECK(is_rgb(px(&c, 1, 1), 128, 128, 128) && is_rgb(px(&c, 3, 3), 128, 128, 128),
          "0.5 -> 128 (127.5 rounds up), block 3x3");
    CHECK(is_rgb(px(&c, 4, 1), 0, 0, 0) && is_rgb(px(&c, 1, 4), 255, 255, 255) &&
          is_rgb(px(&c, 6, 6), 0, 0, 0), "clip low, clip high, NaN");
    CHECK(is_rgb(px(&c, 0, 0), 0, 0, 0) && is_rgb(px(&c, 7, 7), 0, 0, 0), "nothing outside blit");
    float rgbimg[3] = {1.0f, 0.0f, 0.2f};
    canvas_blit_float(&c, 11, 11, rgbimg, 1, 1, 3, 4);   // clipped to one pixel
    CHECK(is_rgb(px(&c, 11, 11), 255, 0, 51), "rgb blit");

    Canvas s;
    CHECK(canvas_create(&s, 3, 3, err, sizeof err) == 0, "small canvas");
    canvas_fill(&s, red);
    canvas_fill(&c, k0);
    canvas_blit(&c, -1, -1, &s);
    canvas_blit(&c, 10, 11, &s);
    canvas_blit(&c, 50, 50, &s);
    CHECK(count_rgb(&c, red, 0, 0, 2, 2, 1) == 4, "canvas blit clipped top-left");
    CHECK(count_rgb(&c, red, 10, 11, 12, 12, 1) == 2, "canvas blit clipped bottom-right");
    CHECK(count_rgb(&c, red, 0, 0, 12, 12, 1) == 6, "canvas blit: nothing else");
    canvas_free(&s);
    canvas_free(&c);
}

static void test_colormaps(void) {
    static const struct { const char *name; uint32_t first, last; } ends[] = {
        {"viridis", 0x440154, 0xFDE725}, {"inferno", 0x000004, 0xFCFFA4},
        {"magma", 0x000004, 0xFCFDBF},   {"cividis", 0x00224E, 0xFEE838},
        {"turbo", 0x30123B, 0x7A0403},   {"gray", 0x000000, 0xFFFFFF},
    };
    CHECK(strcmp(VIZ_COLORMAP_NAMES, "viridis|inferno|magma|cividis|turbo|gray") == 0, "names list");
    for (int i = 0; i < 6; i++) {
        int cm = colormap_from_name(ends[i].name);
        CHECK(cm >= 0 && cm < CMAP_COUNT, "lookup %s", ends[i].name);
        if (cm < 0) continue;
        CHECK(strcmp(colormap_name(cm), ends[i].name) == 0, "name round trip %s", ends[i].name);
        CHECK(strstr(VIZ_COLORMAP_NAMES, ends[i].name) != NULL, "%s listed", ends[i].name);
        const uint8_t *t = colormap_table(cm);
        for (int k = 0; k < 3; k++) {
            int want0 = (int)(ends[i].first >> (16 - 8 * k) & 0xff);
            int want1 = (int)(ends[i].last >> (16 - 8 * k) & 0xff);
            CHECK(abs(t[k] - want0) <= 2, "%s first, channel %d: %d vs %d", ends[i].name, k, t[k], want0);
            CHECK(abs(t[255 * 3 + k] - want1) <= 2, "%s last, channel %d: %d vs %d", ends[i].name, k,
                  t[255 * 3 + k], want1);
        }
    }
    CHECK(colormap_from_name("jet") == -1 && colormap_from_name("") == -1 &&
          colormap_from_name(NULL) == -1, "unknown names");
    CHECK(colormap_table(-1) == NULL && colormap_table(CMAP_COUNT) == NULL, "table out of range");

    // viridis passes close to #21918C half way.
    const uint8_t *v = colormap_table(CMAP_VIRIDIS);
    CHECK(abs(v[128 * 3] - 0x21) <= 4 && abs(v[128 * 3 + 1] - 0x91) <= 4 &&
          abs(v[128 * 3 + 2] - 0x8C) <= 4, "viridis middle %02X%02X%02X", v[384], v[385], v[386]);

    // Lightness rises along the sequential maps. Adjacent 8-bit entries may differ by less than
    // one quantisation step, so check every entry against the one 4 further on, and adjacent
    // ones for no drop beyond the rounding of 8-bit channels (0.5 L*).
    const int seq[5] = {CMAP_VIRIDIS, CMAP_INFERNO, CMAP_MAGMA, CMAP_CIVIDIS, CMAP_GRAY};
    for (int s = 0; s < 5; s++) {
        const uint8_t *t = colormap_table(seq[s]);
        int ok4 = 1, ok1 = 1;
        for (int i = 0; i + 4 < 256; i++) ok4 &= lightness(t + 3 * (i + 4)) > lightness(t + 3 * i);
        for (int i = 0; i + 1 < 256; i++) ok1 &= lightness(t + 3 * (i + 1)) >= lightness(t + 3 * i) - 0.5;
        CHECK(ok4 && ok1, "%s lightness monotonic", colormap_name(seq[s]));
    }
    const uint8_t *g = colormap_table(CMAP_GRAY);
    CHECK(is_rgb(g + 3 * 77, 77, 77, 77), "gray is the identity ramp");

    uint8_t col[3];
    colormap_color(CMAP_VIRIDIS, 0.5f, col);
    CHECK(memcmp(col, v + 3 * 128, 3) == 0, "0.5 -> entry 128 (127.5 rounds up)");
    colormap_color(CMAP_VIRIDIS, NAN, col);
    CHECK(memcmp(col, v, 3) == 0, "NaN -> entry 0");
    colormap_color(CMAP_VIRIDIS, 7.0f, col);
    CHECK(memcmp(col, v + 3 * 255, 3) == 0, "above 1 clips");
    colormap_color(CMAP_VIRIDIS, -7.0f, col);
    CHECK(memcmp(col, v, 3) == 0, "below 0 clips");
}

static void test_upsample(void) {
    const float m[4] = {0, 1, 2, 3};
    float out[16];
    const float bil[16] = {0, 0.25f, 0.75f, 1, 0.5f, 0.75f, 1.25f, 1.5f,
                           1.5f, 1.75f, 2.25f, 2.5f, 2, 2.25f, 2.75f, 3};
    viz_upsample(m, 2, 2, out, 4, 4, 1);
    for (int i = 0; i < 16; i++) CHECK_CLOSE(out[i], bil[i], 1e-6, 0, "bilinear 2x2 -> 4x4");
    const float near[16] = {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3};
    viz_upsample(m, 2, 2, out, 4, 4, 0);
    for (int i = 0; i < 16; i++) CHECK(out[i] == near[i], "nearest 2x2 -> 4x4 at %d", i);

    // A non-integer ratio, values from torch 1.13 F.interpolate(size=(5, 7)).
    const float m23[6] = {0, 1, 4, 2, 7, 3};
    const float torch_bil[35] = {
        0.0f, 0.14285715f, 0.5714286f, 1.0f, 2.2857144f, 3.5714285f, 4.0f,
        0.2f, 0.40000004f, 1.0000001f, 1.6000001f, 2.5857143f, 3.5714285f, 3.9f,
        1.0f, 1.4285715f, 2.7142859f, 4.0f, 3.7857141f, 3.5714285f, 3.5f,
        1.8000001f, 2.4571428f, 4.4285717f, 6.4f, 4.985714f, 3.5714285f, 3.1f,
        2.0f, 2.7142859f, 4.857143f, 7.0f, 5.285714f, 3.5714285f, 3.0f};
    const float torch_near[35] = {0, 0, 0, 1, 1, 4, 4, 0, 0, 0, 1, 1, 4, 4, 0, 0, 0, 1, 1, 4, 4,
                                  2, 2, 2, 7, 7, 3, 3, 2, 2, 2, 7, 7, 3, 3};
    float o35[35];
    viz_upsample(m23, 3, 2, o35, 7, 5, 1);
    for (int i = 0; i < 35; i++) CHECK_CLOSE(o35[i], torch_bil[i], 1e-5, 1e-5, "bilinear vs torch");
    viz_upsample(m23, 3, 2, o35, 7, 5, 0);
    for (int i = 0; i < 35; i++) CHECK(o35[i] == torch_near[i], "nearest vs torch at %d", i);

    const float one = 0.25f;
    float o9[9];
    viz_upsample(&one, 1, 1, o9, 3, 3, 1);
    int all = 1;
    for (int i = 0; i < 9; i++) all &= o9[i] == 0.25f;
    CHECK(all, "1x1 map upsamples to a constant");
}

static void test_normalize(void) {
    float c[5] = {3, 3, 3, 3, 3};
    viz_normalize(c, 5);
    int zero = 1;
    for (int i = 0; i < 5; i++) zero &= c[i] == 0;
    CHECK(zero, "constant map -> all zero");
    float m[5] = {1, 3, NAN, 2, INFINITY};
    viz_normalize(m, 5);
    CHECK(m[0] == 0 && m[1] == 1 && m[2] == 0 && m[3] == 0.5f && m[4] == 0,
          "min/max over finite values: %g %g %g %g %g", m[0], m[1], m[2], m[3], m[4]);
    float n[2] = {NAN, NAN};
    viz_normalize(n, 2);
    CHECK(n[0] == 0 && n[1] == 0, "all-NaN map -> zero");
}

static void test_overlay(void) {
    char err[128];
    Canvas c;
    CHECK(canvas_create(&c, 10, 10, err, sizeof err) == 0, "canvas");
    const uint8_t *v = colormap_table(CMAP_VIRIDIS);
    // Black image, alpha 0.5, map value 1 -> half the last viridis colour, rounded half up.
    float black[4] = {0, 0, 0, 0}, ones[4] = {1, 1, 1, 1};
    viz_overlay(&c, 1, 1, black, 2, 2, 1, ones, CMAP_VIRIDIS, 0.5f, 2);
    const uint8_t *last = v + 255 * 3;
    uint8_t want[3];
    for (int k = 0; k < 3; k++) want[k] = (uint8_t)((last[k] + 1) / 2);
    CHECK(want[0] == 127 && want[1] == 116 && want[2] == 19, "expected half of #FDE725 (table %02X%02X%02X)",
          last[0], last[1], last[2]);
    CHECK(count_rgb(&c, want, 1, 1, 5, 5, 1) == 16, "alpha 0.5 over black, 2x2 at scale 2");
    const uint8_t k0[3] = {0, 0, 0};
    CHECK(count_rgb(&c, k0, 1, 1, 5, 5, 0) == 100 - 16, "nothing outside the overlay");

    // White RGB image, alpha 0.25, map value 0: 0.75 * 255 + 0.25 * colour, round half up.
    float white[3] = {1, 1, 1}, zero = 0;
    viz_overlay(&c, 9, 9, white, 1, 1, 3, &zero, CMAP_VIRIDIS, 0.25f, 1);
    for (int k = 0; k < 3; k++) {
        int w = (int)floor(0.75 * 255 + 0.25 * v[k] + 0.5);
        CHECK(px(&c, 9, 9)[k] == w, "alpha 0.25 over white, channel %d: %d vs %d", k, px(&c, 9, 9)[k], w);
    }
    // alpha 0 shows the image, alpha 1 the colour alone.
    float grey = 0.5f;
    viz_overlay(&c, 0, 0, &grey, 1, 1, 1, &zero, CMAP_MAGMA, 0.0f, 1);
    CHECK(is_rgb(px(&c, 0, 0), 128, 128, 128), "alpha 0 -> image");
    viz_overlay(&c, 0, 0, &grey, 1, 1, 1, &ones[0], CMAP_MAGMA, 1.0f, 1);
    const uint8_t *mg = colormap_table(CMAP_MAGMA) + 255 * 3;
    CHECK(is_rgb(px(&c, 0, 0), mg[0], mg[1], mg[2]), "alpha 1 -> colour");
    canvas_free(&c);
}

static void test_colorbar_patches(void) {
    char err[128];
    Canvas c;
    CHECK(canvas_create(&c, 80, 300, err, sizeof err) == 0, "canvas");
    ColorBar cb = {CMAP_INFERNO, -0.5, 123.456, NAN, NULL, 11, {255, 255, 255}};
    viz_colorbar(&c, 2, 10, 10, 256, 1, &cb);
    const uint8_t *t = colormap_table(CMAP_INFERNO);
    CHECK(memcmp(px(&c, 5, 10), t + 255 * 3, 3) == 0, "vertical bar: max at the top");
    CHECK(memcmp(px(&c, 5, 265), t, 3) == 0, "vertical bar: min at the bottom");
    CHECK(memcmp(px(&c, 5, 137), t + 128 * 3, 3) == 0, "vertical bar: linear in between");
    CHECK(count_lit(&c, 15, 0, 80, 24) > 0, "max label right of the bar");
    CHECK(count_lit(&c, 15, 250, 80, 280) > 0, "min label right of the bar");
    CHECK(count_lit(&c, 15, 40, 80, 240) == 0, "no label along the middle");
    CHECK(viz_colorbar_label_width(-0.5, 123.456, 11) == text_width("-0.5", 11) &&
          text_width("-0.5", 11) > text_width("123", 11), "label width: the wider of \"-0.5\" and \"123\"");
    char buf[32];
    viz_format_value(-0.0, buf, sizeof buf);
    CHECK(!strcmp(buf, "0"), "no -0 (%s)", buf);
    viz_format_value(0.0291234, buf, sizeof buf);
    CHECK(!strcmp(buf, "0.0291"), "3 significant digits (%s)", buf);
    // A mark in range: a white line with a dark edge across the bar at its value.
    canvas_fill(&c, (const uint8_t[3]){0, 0, 0});
    cb.vmin = 0; cb.vmax = 1; cb.mark = 0.25;
    viz_colorbar(&c, 2, 10, 10, 257, 1, &cb);
    CHECK(is_rgb(px(&c, 6, 10 + 192), 255, 255, 255), "mark at 0.25 from the bottom");
    CHECK(!is_rgb(px(&c, 6, 10 + 100), 255, 255, 255), "no mark elsewhere");
    // A mark beyond the scale (a layer whose every weight is below uniform attention) was not drawn at
    // all, though the caption promises it on every bar: a white arrow at that end, pointing out.
    CHECK(viz_colorbar_mark_beyond(&cb) == 0, "0.25 on 0..1: inside");
    for (int v = 0; v < 2; v++)
        for (int side = -1; side <= 1; side += 2) {
            canvas_fill(&c, (const uint8_t[3]){0, 0, 0});
            cb.mark = side > 0 ? 2.0 : -1.0;
            CHECK(viz_colorbar_mark_beyond(&cb) == side, "mark %g on 0..1: beyond %d", cb.mark, side);
            int x0 = 2, y0 = 10, w = v ? 10 : 60, h = v ? 200 : 8;
            viz_colorbar(&c, x0, y0, w, h, v, &cb);
            // The arrow's tip on the end's centre line, its base's middle white, the far end no mark.
            int tip_x = v ? x0 + w / 2 : side > 0 ? x0 + w - 1 : x0, tip_y = !v ? y0 + h / 2 : side > 0 ? y0 : y0 + h - 1;
            int base_x = v ? tip_x : tip_x - side * 3, base_y = v ? tip_y + side * 3 : tip_y;
            int far_x = v ? tip_x : tip_x - side * (w - 1), far_y = v ? tip_y + side * (h - 1) : tip_y;
            CHECK(is_rgb(px(&c, tip_x, tip_y), 255, 255, 255) && is_rgb(px(&c, base_x, base_y), 255, 255, 255),
                  "%s bar, mark %g: a white arrow at that end", v ? "vertical" : "horizontal", cb.mark);
            CHECK(!is_rgb(px(&c, far_x, far_y), 255, 255, 255), "%s bar, mark %g: none at the other end",
                  v ? "vertical" : "horizontal", cb.mark);
        }
    cb.mark = NAN;
    CHECK(viz_colorbar_mark_beyond(&cb) == 0, "no mark: not beyond");
    // A flat scale (attention --normalize map of an exactly uniform map: 1/17 .. 1/17) was drawn as the
    // whole gradient, labelled 0.0588 at both ends, with no mark though the caption promises one: now
    // the lowest colour alone, as the map is drawn, its one value once, the mark across its middle
    // (compared as the map's float), and an arrow where the value is not uniform attention.
    cb.vmin = cb.vmax = (float)(1.0 / 17);
    cb.mark = 1.0 / 17;
    CHECK(viz_colorbar_mark_beyond(&cb) == 0, "flat 1/17, mark 1/17: inside");
    for (int v = 0; v < 2; v++) {
        canvas_fill(&c, (const uint8_t[3]){0, 0, 0});
        int x0 = 2, y0 = 10, w = v ? 10 : 60, h = v ? 200 : 8;
        viz_colorbar(&c, x0, y0, w, h, v, &cb);
        int mid_x = v ? x0 + w / 2 : x0 + (int)lround(0.5 * (w - 1)), mid_y = v ? y0 + (int)lround(0.5 * (h - 1)) : y0 + h / 2;
        CHECK(is_rgb(px(&c, mid_x, mid_y), 255, 255, 255), "%s flat bar: the mark across its middle",
              v ? "vertical" : "horizontal");
        int ex = v ? x0 + w / 2 : x0 + 1, ey = v ? y0 + h - 2 : y0 + h / 2, fx = v ? ex : x0 + w - 2, fy = v ? y0 + 1 : ey;
        CHECK(memcmp(px(&c, ex, ey), t, 3) == 0 && memcmp(px(&c, fx, fy), t, 3) == 0,
              "%s flat bar: the lowest colour at both ends", v ? "vertical" : "horizontal");
    }
    canvas_fill(&c, (const uint8_t[3]){0, 0, 0});
    viz_colorbar(&c, 2, 10, 10, 200, 1, &cb);
    CHECK(count_lit(&c, 15, 10 + 200 - text_line_height(11), 80, 10 + 200) == 0, "flat bar: its one value written once");
    cb.vmin = cb.vmax = 0.25;
    CHECK(viz_colorbar_mark_beyond(&cb) == -1, "flat 0.25, mark 1/17: beyond, below");
    cb.mark = 0.5;
    CHECK(viz_colorbar_mark_beyond(&cb) == 1, "flat 0.25, mark 0.5: beyond, above");
    canvas_free(&c);

    // Labels never overlap: a vertical bar shorter than two lines (reconstruct --display 16: "0.158"
    // and "0" were drawn over each other) and a horizontal bar narrower than both labels side by side
    // write the max alone, where it goes; a bar with room writes both.
    Canvas bar, want;
    const uint8_t k0[3] = {0, 0, 0};
    int lh = text_line_height(11);
    CHECK(canvas_create(&bar, 200, 60, err, sizeof err) == 0 && canvas_create(&want, 200, 60, err, sizeof err) == 0, "canvases");
    ColorBar sb = {CMAP_VIRIDIS, 0.0, 0.158, NAN, NULL, 11, {255, 255, 255}};
    for (int h = 16; h <= 2 * lh; h += 2 * lh - 16) {
        canvas_fill(&bar, k0);
        canvas_fill(&want, k0);
        viz_colorbar(&bar, 2, 4, 8, h, 1, &sb);
        canvas_text(&want, 13, 4, "0.158", sb.text_rgb, 11);
        if (h >= 2 * lh) canvas_text(&want, 13, 4 + h - lh, "0", sb.text_rgb, 11);
        int same = 1;
        for (int y = 0; y < bar.h; y++) same &= !memcmp(px(&bar, 13, y), px(&want, 13, y), (size_t)(bar.w - 13) * 3);
        CHECK(same, "vertical bar %d px tall (lines of %d px): %s", h, lh, h < 2 * lh ? "the max alone" : "both labels");
    }
    sb.vmin = 0.000123; sb.vmax = 0.000456;
    int hw = text_width("0.000456", 11), lw = text_width("0.000123", 11);
    for (int w = hw + 10; w <= lw + hw + 4; w += lw + hw + 4 - (hw + 10)) {
        canvas_fill(&bar, k0);
        canvas_fill(&want, k0);
        viz_colorbar(&bar, 2, 4, w, 8, 0, &sb);
        canvas_text(&want, 2 + w - hw, 14, "0.000456", sb.text_rgb, 11);
        if (w >= lw + hw + 4) canvas_text(&want, 2, 14, "0.000123", sb.text_rgb, 11);
        CHECK(!memcmp(bar.px + (size_t)14 * bar.w * 3, want.px + (size_t)14 * want.w * 3, (size_t)(bar.h - 14) * bar.w * 3),
              "horizontal bar %d px wide (labels %d + %d px): %s", w, lw, hw, w < lw + hw + 4 ? "the max alone" : "both labels");
    }
    canvas_free(&bar);
    canvas_free(&want);
}

static void test_text(void) {
    int lh = text_line_height(12);
    CHECK(lh >= 12 && lh <= 20, "line height of 12 px text: %d", lh);
    CHECK(text_line_height(24) > lh, "bigger text, taller lines");
    CHECK(text_width("", 12) == 0 && text_height("", 12) == 0, "empty text");
    int wa = text_width("abc", 12), wl = text_width("abcdef", 12);
    CHECK(wa > 6 && wa < 40 && wl > wa, "widths grow with the text (%d, %d)", wa, wl);
    CHECK(text_width("ab\nabcdef", 12) == wl, "width = widest line");
    CHECK(text_height("ab\ncde", 12) == 2 * lh, "height of 2 lines");

    char err[128];
    Canvas c;
    CHECK(canvas_create(&c, 120, 60, err, sizeof err) == 0, "canvas");
    const uint8_t ink[3] = {255, 255, 255}, k0[3] = {0, 0, 0};
    int end = canvas_text(&c, 10, 10, "Hxg", ink, 12);
    CHECK(end == 10 + text_width("Hxg", 12), "returns the end of the text (%d)", end);
    int inside = 0, outside = 0;
    for (int y = 0; y < c.h; y++)
        for (int x = 0; x < c.w; x++) {
            int lit = px(&c, x, y)[0] > 0;
            int in = x >= 9 && x <= end + 1 && y >= 10 && y < 10 + lh;
            if (in) inside += lit; else outside += lit;
        }
    CHECK(inside > 20 && outside == 0, "ink inside the text's box only (%d in, %d out)", inside, outside);
    int grey = 0;
    for (int i = 0; i < c.w * c.h; i++) grey += c.px[3 * i] > 0 && c.px[3 * i] < 255;
    CHECK(grey > 0, "anti-aliased edges (%d partial pixels)", grey);
    canvas_fill(&c, k0);
    canvas_text(&c, 100, 50, "clipped text WWW", ink, 30);   // off the edge: clipped, no crash
    canvas_text(&c, -2000000000, -2000000000, "xyz", ink, 12);
    canvas_text(&c, 0, 0, "\xff\xfe not UTF-8", ink, 12);     // cairo refuses it: nothing drawn, no crash

    char out[256];
    int w2 = text_width("aaa bbb", 12);
    CHECK(text_wrap("aaa bbb ccc", 12, w2, out, sizeof out) == 2 && !strcmp(out, "aaa bbb\nccc"), "wrap: %s", out);
    CHECK(text_wrap("aaa bbb ccc", 12, 1, out, sizeof out) == 3 && !strcmp(out, "aaa\nbbb\nccc"), "wrap narrow: %s", out);
    CHECK(text_wrap("one\ntwo", 12, 1000, out, sizeof out) == 2 && !strcmp(out, "one\ntwo"), "explicit break: %s", out);
    CHECK(text_wrap("", 12, 100, out, sizeof out) == 0 && !out[0], "wrap empty");
    CHECK(text_wrap("abcdefgh", 12, 100, out, 4) == 0 && !out[0], "too long for the buffer: nothing cut mid-word");
    // Names: a word wider than the line is shortened in its middle, its start and extension kept, so
    // that it fits (text_wrap gives it a line of its own that runs past the edge); the rest wraps as
    // text_wrap wraps it.
    const char *name = "a_very_long_file_name_of_a_photograph_taken_at_the_beach_0001.png: 75% removed";
    int n = text_wrap_names(name, 11, 120, out, sizeof out);
    char *nl = strchr(out, '\n');
    CHECK(n == 2 && nl && !strcmp(nl + 1, "75% removed"), "names: two lines (%d: %s)", n, out);
    if (nl) *nl = 0;
    CHECK(text_width(out, 11) <= 120 && text_width(out, 11) > 100, "names: the long word fits, nearly filling the line (%d px: %s)",
          text_width(out, 11), out);
    CHECK(!strncmp(out, "a_very", 6) && strstr(out, "\xE2\x80\xA6") && strlen(out) > 10 &&
          !strcmp(out + strlen(out) - 8, "001.png:"), "names: start, ellipsis, end with the extension (%s)", out);
    CHECK(text_wrap_names("aaa bbb ccc", 12, w2, out, sizeof out) == 2 && !strcmp(out, "aaa bbb\nccc"), "names: short words as text_wrap (%s)", out);
    n = text_wrap_names("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9.txt", 12, 40, out, sizeof out);
    CHECK(n == 1 && utf8_valid(out) && text_width(out, 12) <= 40 && strstr(out, ".txt"), "names: cut between UTF-8 characters (%s)", out);
    CHECK(text_wrap_names("wwwwwwwwww", 12, 1, out, sizeof out) == 1 && !strcmp(out, "\xE2\x80\xA6"), "names: no room: the ellipsis alone (%s)", out);
    // ... also for a name with an extension (keeping the extension needs one character of room at least).
    CHECK(text_wrap_names("wwwwwwwwww.png", 12, 1, out, sizeof out) == 1 && !strcmp(out, "\xE2\x80\xA6"), "names: no room, an extension: the ellipsis alone (%s)", out);

    // An anti-aliased line: covers its path, leaves the rest alone.
    canvas_fill(&c, k0);
    double lx[2] = {10.5, 100.5}, ly[2] = {20.5, 20.5};
    canvas_polyline(&c, lx, ly, 2, 3.0, ink);
    CHECK(is_rgb(px(&c, 50, 20), 255, 255, 255) && is_rgb(px(&c, 50, 19), 255, 255, 255), "line covered");
    CHECK(count_rgb(&c, k0, 8, 17, 104, 25, 0) == 120 * 60 - 96 * 8, "nothing far from the line");
    double dx = 60.5, dy = 40.5;
    canvas_polyline(&c, &dx, &dy, 1, 4.0, ink);
    CHECK(is_rgb(px(&c, 60, 40), 255, 255, 255), "a single point is a dot");
    double bad[2] = {NAN, 3};
    canvas_polyline(&c, bad, ly, 2, 2.0, ink);   // non-finite: nothing
    canvas_free(&c);
}

static void test_plot(void) {
    char err[128];
    Canvas c;
    CHECK(canvas_create(&c, 420, 320, err, sizeof err) == 0, "canvas");
    const uint8_t guard[3] = {255, 0, 255};
    canvas_fill(&c, guard);
    enum { N = 200 };
    double x[N], y1[N], y2[N];
    for (int i = 0; i < N; i++) {
        x[i] = i + 1;
        y1[i] = 1.0 / (1 + 0.05 * i);
        y2[i] = i % 10 == 9 ? 1.2 / (1 + 0.05 * i) : NAN;   // sparse, NaN between
    }
    y1[50] = NAN;
    y1[60] = -1;   // dropped on the log axis
    PlotSeries s[3] = {
        {.label = "train loss", .x = x, .y = y1, .n = N},
        {.label = "val loss", .x = x, .y = y2, .n = N},
        {.label = "custom", .x = x, .y = y1, .n = 3, .has_rgb = 1, .rgb = {10, 200, 30}},
    };
    PlotOptions o = {.title = "curves", .xlabel = "step", .ylabel = "loss", .log_y = 1};
    CHECK(viz_plot(&c, 10, 10, 400, 300, s, 3, &o) == 0, "plot drawn");
    CHECK(count_rgb(&c, guard, 10, 10, 410, 310, 0) == 420 * 320 - 400 * 300, "nothing outside the box");
    CHECK(count_rgb(&c, guard, 10, 10, 410, 310, 1) == 0, "box fully painted");
    for (int k = 0; k < 3; k++) {
        uint8_t col[3];
        if (s[k].has_rgb) memcpy(col, s[k].rgb, 3); else viz_palette(k, col);
        CHECK(count_rgb(&c, col, 10, 10, 410, 310, 1) > 10, "series %d colour present", k);
    }
    uint8_t p0[3], p1[3];
    viz_palette(0, p0);
    viz_palette(1, p1);
    CHECK(memcmp(p0, p1, 3) != 0, "palette colours differ");

    o.log_y = 0;
    canvas_fill(&c, guard);
    CHECK(viz_plot(&c, 10, 10, 400, 300, s, 2, &o) == 0, "linear plot drawn");
    CHECK(count_rgb(&c, guard, 10, 10, 410, 310, 0) == 420 * 320 - 400 * 300, "linear: inside the box");
    CHECK(count_rgb(&c, p0, 10, 10, 410, 310, 1) > 10 && count_rgb(&c, p1, 10, 10, 410, 310, 1) > 10,
          "linear: both series");

    canvas_fill(&c, guard);
    CHECK(viz_plot(&c, 0, 0, 200, 150, NULL, 0, NULL) == 0, "empty plot drawn");
    CHECK(count_rgb(&c, guard, 0, 0, 200, 150, 0) == 420 * 320 - 200 * 150, "empty plot in its box");
    double one_x = 5, one_y = 0.3;
    PlotSeries lone = {.label = "x", .x = &one_x, .y = &one_y, .n = 1};
    CHECK(viz_plot(&c, 0, 0, 200, 150, &lone, 1, NULL) == 0, "single point");
    CHECK(count_rgb(&c, p0, 0, 0, 200, 150, 1) >= 9, "single point is visible");

    // Extreme ranges: tiny learning rates, huge steps, values that overflow the range.
    double lx[4] = {0, 2.5e6, 5e6, 1e7}, ly[4] = {0, 1.5e-4, 7e-5, 1e-9};
    double hx[3] = {-1e308, 0, 1e308}, hy[3] = {1e308, -1e308, 0};
    PlotSeries ext[2] = {{.label = "lr", .x = lx, .y = ly, .n = 4}, {.x = hx, .y = hy, .n = 3}};
    canvas_fill(&c, guard);
    CHECK(viz_plot(&c, 10, 10, 400, 300, ext, 1, NULL) == 0, "tiny/huge values plot");
    CHECK(count_rgb(&c, guard, 10, 10, 410, 310, 0) == 420 * 320 - 400 * 300, "tiny/huge: in the box");
    CHECK(count_rgb(&c, p0, 10, 10, 410, 310, 1) > 10, "tiny/huge: series drawn");
    canvas_fill(&c, guard);
    CHECK(viz_plot(&c, 10, 10, 400, 300, ext + 1, 1, NULL) == 0, "overflowing range plot");
    CHECK(count_rgb(&c, guard, 10, 10, 410, 310, 0) == 420 * 320 - 400 * 300, "overflow: in the box");

    // A series with nothing to draw (no validation: val loss of no point, or only NaN) has no legend
    // entry: the plot is the one of the other series alone (curves.png listed "val loss").
    Canvas alone = {0};
    CHECK(canvas_create(&alone, 420, 320, err, sizeof err) == 0, "canvas");
    double nan_y[3] = {NAN, NAN, NAN};
    PlotSeries two[3] = {s[0], {.label = "val loss", .x = x, .y = y2, .n = 0}, {.label = "nan", .x = x, .y = nan_y, .n = 3}};
    canvas_fill(&c, guard);
    canvas_fill(&alone, guard);
    CHECK(viz_plot(&c, 10, 10, 400, 300, two, 3, &o) == 0 && viz_plot(&alone, 10, 10, 400, 300, two, 1, &o) == 0,
          "plots drawn");
    CHECK(memcmp(c.px, alone.px, (size_t)420 * 320 * 3) == 0, "a series without points: no legend entry");
    canvas_free(&alone);

    // A line that rises to the top right (a validation top-1 curve): the legend, always top right, hid
    // its end; it now takes the corner that covers the least of the lines.
    double up_x[2] = {0, 100}, up_y[2] = {0, 1};
    PlotSeries rising = {.label = "val top-1", .x = up_x, .y = up_y, .n = 2, .has_rgb = 1, .rgb = {213, 94, 0}};
    canvas_fill(&c, guard);
    CHECK(viz_plot(&c, 10, 10, 400, 300, &rising, 1, NULL) == 0, "rising line plotted");
    // Its end runs through the top right; the legend's text (dark) is no longer drawn over it there.
    int dark = 0, line = 0;
    for (int yy = 15; yy < 60; yy++)
        for (int xx = 300; xx < 400; xx++) {
            const uint8_t *q = px(&c, xx, yy);
            dark += q[0] < 100 && q[1] < 100 && q[2] < 100;
            line += abs(q[0] - 213) < 40 && abs(q[1] - 94) < 40 && q[2] < 60;
        }
    CHECK(dark == 0 && line > 20, "the rising line's end in view, top right: %d legend pixels, %d of the line", dark, line);

    canvas_fill(&c, guard);
    CHECK(viz_plot(&c, 0, 0, 100, 60, s, 1, &o) == -1, "too small refused");
    CHECK(count_rgb(&c, guard, 0, 0, 420, 320, 1) == 420 * 320, "refused plot draws nothing");
    canvas_free(&c);
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// CPU seconds of one plot of n noisy points (a training loss logged at every step), the least of
// `tries` draws.
static double plot_seconds(Canvas *c, int n, int tries) {
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n), best = INFINITY;
    for (int i = 0; i < n; i++) {
        uint32_t h = (uint32_t)i * 2654435761u;
        x[i] = i + 1;
        y[i] = (0.2 + 0.8 / (1 + 1e-4 * i)) * (0.5 + (h >> 8) / 16777216.0);
    }
    PlotSeries s = {.label = "train loss", .x = x, .y = y, .n = n};
    PlotOptions o = {.title = "masked-patch loss", .xlabel = "step", .ylabel = "loss", .log_y = 1};
    for (int k = 0; k < tries; k++) {
        double t0 = cpu_seconds();
        CHECK(viz_plot(c, 0, 0, c->w, c->h, &s, 1, &o) == 0, "plot of %d points drawn", n);
        double t = cpu_seconds() - t0;
        if (t < best) best = t;
    }
    free(x);
    free(y);
    return best;
}

// curves.png is redrawn at every evaluation with every logged step so far. Stroking each point cost
// more than linearly in the points (6.7 s for 100,000, 270 s for a million), so a long run slowed
// down as it went; a plot draws at most a few points per pixel column now, keeping each column's
// extremes. 100 times the points may cost the time of going over them, not of drawing them.
static void test_plot_long_history(void) {
    char err[256];
    Canvas c;
    CHECK(canvas_create(&c, 960, 440, err, sizeof err) == 0, "canvas");
    double t_short = plot_seconds(&c, 1000, 3), t_long = plot_seconds(&c, 100000, 1);
    CHECK(t_long < 30 * t_short + 0.05, "a plot of 100,000 points took %.3f s, of 1,000 points %.4f s (%.0fx)",
          t_long, t_short, t_long / t_short);
    // A thinned line still spans each column's lowest and highest point: a sawtooth over the whole
    // range in every column fills the column from its bottom to its top.
    enum { N = 50000 };
    double *x = malloc(sizeof(double) * N), *y = malloc(sizeof(double) * N);
    for (int i = 0; i < N; i++) { x[i] = i; y[i] = i % 7 == 3 ? 1.0 : i % 11 == 5 ? 0.0 : 0.5; }
    PlotSeries s = {.x = x, .y = y, .n = N, .has_rgb = 1, .rgb = {213, 94, 0}};
    const uint8_t white[3] = {255, 255, 255};
    canvas_fill(&c, white);
    CHECK(viz_plot(&c, 0, 0, 960, 440, &s, 1, NULL) == 0, "sawtooth drawn");
    int top = -1, bottom = -1;
    for (int yy = 0; yy < c.h; yy++) {
        const uint8_t *q = px(&c, 480, yy);
        if (abs(q[0] - 213) < 30 && abs(q[1] - 94) < 30 && q[2] < 40) { if (top < 0) top = yy; bottom = yy; }
    }
    CHECK(top >= 0 && bottom - top > 300, "a thinned sawtooth spans its column: rows %d to %d", top, bottom);
    free(x);
    free(y);
    canvas_free(&c);
}

// The y axis of a plot in rows [y0, y1): the leftmost column with an unbroken run of ink (40, 40, 40)
// at least `run` long. -1 when none.
static int axis_column(const Canvas *c, int y0, int y1, int run) {
    for (int x = 0; x < c->w; x++) {
        int n = 0;
        for (int y = y0; y < y1; y++) {
            n = is_rgb(px(c, x, y), 40, 40, 40) ? n + 1 : 0;
            if (n >= run) return x;
        }
    }
    return -1;
}

// curves.png of a run stopped at its step-0 row has one point, step 0 at lr 0: its axes ran from -0.5
// to 0.5 (negative steps and learning rates) with the point in the middle. A lone 0 spans [0, 1]
// now: the point sits where the axes meet.
static void test_plot_lone_zero(void) {
    char err[128];
    Canvas c;
    CHECK(canvas_create(&c, 420, 320, err, sizeof err) == 0, "canvas");
    double zero = 0;
    PlotSeries origin = {.x = &zero, .y = &zero, .n = 1, .has_rgb = 1, .rgb = {213, 94, 0}};
    CHECK(viz_plot(&c, 10, 10, 400, 300, &origin, 1, NULL) == 0, "a lone (0, 0) plotted");
    int ax = axis_column(&c, 10, 310, 150), bottom = -1;
    for (int yy = 10; ax >= 0 && yy < 310; yy++)
        if (is_rgb(px(&c, ax, yy), 40, 40, 40)) bottom = yy;
    long sx = 0, sy = 0, n = 0;
    for (int yy = 10; yy < 310; yy++)
        for (int xx = 10; xx < 410; xx++) {
            const uint8_t *q = px(&c, xx, yy);
            if (abs(q[0] - 213) < 40 && abs(q[1] - 94) < 40 && q[2] < 60) { sx += xx; sy += yy; n++; }
        }
    CHECK(ax >= 0 && n > 0, "axis (column %d) and point (%ld pixels) found", ax, n);
    double cx = n ? (double)sx / n : -1, cy = n ? (double)sy / n : -1;
    CHECK(fabs(cx - ax) <= 5 && fabs(cy - bottom) <= 5,
          "a lone 0 on axes from 0: the point at (%.1f, %.1f), where the axes meet at (%d, %d)", cx, cy, ax, bottom);
    canvas_free(&c);
}

// Ticks under the x axis of a plot drawn in the box (10, 10, 400, 300) of c: the row of the x axis is
// the one with the most ink right of the y axis (a point at x = 0 breaks the y axis's run in two); tick
// marks hang below it.
static int x_tick_count(const Canvas *c) {
    int ax = axis_column(c, 10, 310, 80), row = -1, most = 0;
    for (int yy = 10; ax >= 0 && yy < 310; yy++) {
        int n = 0;
        for (int xx = ax; xx < 410; xx++) n += is_rgb(px(c, xx, yy), 40, 40, 40);
        if (n > most) { most = n; row = yy; }
    }
    int ticks = 0;
    for (int xx = 10; row >= 0 && xx < 410; xx++) ticks += is_rgb(px(c, xx, row + 1), 40, 40, 40);
    return ticks;
}

// curves.png of a run with one logged point (stopped after its step-0 row, or its first log) had x
// ticks at 0, 0.2, 0.4 ... 1 (or 0.96, 0.98 ... around step 1): steps are whole numbers, and so are the
// ticks of an x_whole axis.
static void test_plot_whole_steps(void) {
    char err[128];
    const uint8_t white[3] = {255, 255, 255};
    double steps[2] = {0, 1}, loss = 0.5;
    for (int k = 0; k < 2; k++) {
        Canvas c;
        CHECK(canvas_create(&c, 420, 320, err, sizeof err) == 0, "canvas");
        canvas_fill(&c, white);
        PlotSeries s = {.x = &steps[k], .y = &loss, .n = 1};
        PlotOptions o = {.xlabel = "step", .x_whole = 1};
        CHECK(viz_plot(&c, 10, 10, 400, 300, &s, 1, &o) == 0, "one point plotted");
        int ticks = x_tick_count(&c);
        CHECK(ticks >= 2 && ticks <= 3, "one point at step %g: %d x ticks (whole steps: 0 and 1, or 0, 1 and 2)",
              steps[k], ticks);
        // Without x_whole the same point gets the fractional ticks a count never has.
        canvas_fill(&c, white);
        o.x_whole = 0;
        CHECK(viz_plot(&c, 10, 10, 400, 300, &s, 1, &o) == 0, "one point plotted");
        CHECK(x_tick_count(&c) > 3, "step %g, x not whole: %d ticks (the counter sees fractional ticks)", steps[k],
              x_tick_count(&c));
        canvas_free(&c);
    }
}

// Loss curves as a user reads them: a log axis says so, a short range gets enough ticks to read a
// value, and the stacked panels of curves.png put a step at the same x in each.
static void test_plot_reading(void) {
    char err[256];
    Canvas c;
    CHECK(canvas_create(&c, 420, 320, err, sizeof err) == 0, "canvas");
    const uint8_t white[3] = {255, 255, 255};
    canvas_fill(&c, white);
    // Values near 3.7 (a 45-class fine-tune's loss): the axis spans 2..5.
    double x[3] = {0, 30, 60}, y[3] = {3.9, 3.75, 3.6};
    PlotSeries s = {.label = "train loss", .x = x, .y = y, .n = 3};
    PlotOptions o = {.title = "loss", .xlabel = "step", .ylabel = "loss", .log_y = 1};
    CHECK(viz_plot(&c, 10, 10, 400, 300, &s, 1, &o) == 0, "plot drawn");
    // The y caption's line (title line, then it): ink past "loss" means "(log scale)" follows.
    int lh = text_line_height(11), cy = 10 + 6 + lh + 3, x0 = 16 + text_width("loss", 11) + 4;
    int ink = 0;
    for (int yy = cy; yy < cy + lh; yy++)
        for (int xx = x0; xx < 16 + text_width("loss (log scale)", 11); xx++) ink += px(&c, xx, yy)[0] < 128;
    CHECK(ink > 20, "a log y axis is captioned as one (%d dark pixels after \"loss\")", ink);
    // Tick marks left of the y axis, 3 pixels long: count the rows that have one.
    int ax = axis_column(&c, 10, 310, 150), ticks = 0;
    CHECK(ax > 12, "y axis found (column %d)", ax);
    for (int yy = 10; ax > 12 && yy < 310; yy++) ticks += is_rgb(px(&c, ax - 2, yy), 40, 40, 40);
    CHECK(ticks >= 4, "2..5 on a log axis: %d ticks (2, 3, 4, 5 wanted; 2 and 5 alone leave 3.7 unreadable)", ticks);
    canvas_free(&c);

    // curves.png: the loss panel starts at step 0 (the first validation), the lr panel at step 10
    // (the first logged step), and their tick labels differ in width ("5" against "0.0004").
    double lx[2] = {0, 60}, ly[2] = {3, 0.6}, rx[2] = {10, 60}, ry[2] = {4e-4, 8e-4};
    PlotSeries loss = {.label = "val loss", .x = lx, .y = ly, .n = 2};
    PlotSeries lr = {.label = "learning rate", .x = rx, .y = ry, .n = 2, .has_rgb = 1, .rgb = {0, 158, 115}};
    PlotOptions lo = {"loss", "step", "loss", 1, 1}, lro = {"learning rate", "step", "lr", 0, 1};
    const PlotPanel panels[2] = {{440, &loss, 1, &lo}, {200, &lr, 1, &lro}};
    char path[256];
    snprintf(path, sizeof path, "/tmp/test_viz_curves_%d.png", (int)getpid());
    CHECK(viz_plot_png(path, 960, panels, 2, err, sizeof err) == 0, "curves written: %s", err);
    Image im = {0};
    if (image_load(path, 1L << 24, &im, err, sizeof err) == 0 && im.c == 3 && im.w == 960 && im.h == 640) {
        Canvas r;
        CHECK(canvas_create(&r, im.w, im.h, err, sizeof err) == 0, "canvas");
        for (size_t i = 0; i < (size_t)im.w * im.h * 3; i++) r.px[i] = (uint8_t)lround(im.px[i] * 255);
        int a0 = axis_column(&r, 0, 440, 150), a1 = axis_column(&r, 440, 640, 60);
        CHECK(a0 > 0 && a0 == a1, "stacked panels: y axes at columns %d and %d (one x scale for both)", a0, a1);
        // The lr line starts at step 10, a sixth of the way along the shared 0..60 axis.
        int first = -1;
        for (int xx = 0; xx < r.w && first < 0; xx++)
            for (int yy = 440; yy < 640; yy++) {
                const uint8_t *p = px(&r, xx, yy);
                if (abs(p[0] - 0) < 20 && abs(p[1] - 158) < 20 && abs(p[2] - 115) < 20 && yy > 500) { first = xx; break; }
            }
        CHECK(first - a1 > (960 - a1) / 8, "lr panel: step 10 drawn at column %d, axis at %d (0..60 shared with the loss panel)",
              first, a1);
        canvas_free(&r);
    } else {
        CHECK(0, "curves read back: %s (%dx%dx%d)", err, im.w, im.h, im.c);
    }
    free(im.px);
    im = (Image){0};
    // Both end at step 120: the loss panel (text scale 2) wanted fewer x ticks than the lr panel and
    // its nice axis ran to 150 where the lr panel's ran to 120, so step 120 sat at 80% of the width in
    // one and at the end in the other. Each line's last column must be the same.
    double ex[2] = {0, 120}, fx[2] = {10, 120}, fy[2] = {8e-4, 4e-4};   // both lines end low, below the legends
    PlotSeries loss2 = {.label = "val loss", .x = ex, .y = ly, .n = 2, .has_rgb = 1, .rgb = {213, 94, 0}};
    PlotSeries lr2 = {.label = "learning rate", .x = fx, .y = fy, .n = 2, .has_rgb = 1, .rgb = {0, 158, 115}};
    const PlotPanel panels2[2] = {{440, &loss2, 1, &lo}, {200, &lr2, 1, &lro}};
    CHECK(viz_plot_png(path, 960, panels2, 2, err, sizeof err) == 0, "curves written: %s", err);
    if (image_load(path, 1L << 24, &im, err, sizeof err) == 0 && im.c == 3 && im.w == 960 && im.h == 640) {
        Canvas r;
        CHECK(canvas_create(&r, im.w, im.h, err, sizeof err) == 0, "canvas");
        for (size_t i = 0; i < (size_t)im.w * im.h * 3; i++) r.px[i] = (uint8_t)lround(im.px[i] * 255);
        // The rightmost column of each line's colour in the lower part of its panel (the legend's swatch,
        // of the same colour, is top right).
        int last[2] = {-1, -1};
        const int y0[2] = {250, 560}, y1[2] = {430, 640};
        const uint8_t *rgb[2] = {loss2.rgb, lr2.rgb};
        for (int k = 0; k < 2; k++)
            for (int xx = 0; xx < r.w; xx++)
                for (int yy = y0[k]; yy < y1[k]; yy++) {
                    const uint8_t *p = px(&r, xx, yy);
                    if (abs(p[0] - rgb[k][0]) < 20 && abs(p[1] - rgb[k][1]) < 20 && abs(p[2] - rgb[k][2]) < 20) { last[k] = xx; break; }
                }
        CHECK(last[0] > 0 && abs(last[0] - last[1]) <= 2,
              "stacked panels, steps 0..120: step 120 ends the loss line at column %d and the lr line at %d", last[0], last[1]);
        canvas_free(&r);
    } else {
        CHECK(0, "curves read back: %s (%dx%dx%d)", err, im.w, im.h, im.c);
    }
    free(im.px);
    unlink(path);
}

// The longest run of "inked" pixels (darker than 160 in red) along a line of the canvas, gaps of up
// to `gap` pixels bridged: from (x, y) n steps of (dx, dy).
static int ink_run(const Canvas *c, int x, int y, int dx, int dy, int n, int gap) {
    int best = 0, run = 0, blank = gap + 1;
    for (int k = 0; k < n; k++, x += dx, y += dy) {
        int ink = x >= 0 && y >= 0 && x < c->w && y < c->h && px(c, x, y)[0] < 160;
        if (ink) { run = blank <= gap && run ? run + blank + 1 : 1; blank = 0; }
        else blank++;
        if (run > best) best = run;
    }
    return best;
}

// The grid of a confusion matrix: its grey frame (90, 90, 90) is the first row with a run of that
// grey at least `min_len` long. Gives the grid's left and top (inside the frame) and its width.
static int find_grid(const Canvas *c, int min_len, int *gx, int *gy, int *gw) {
    for (int y = 0; y < c->h; y++)
        for (int x = 0, run = 0; x < c->w; x++) {
            run = is_rgb(px(c, x, y), 90, 90, 90) ? run + 1 : 0;
            if (run >= min_len) {
                int x1 = x;
                while (x1 + 1 < c->w && is_rgb(px(c, x1 + 1, y), 90, 90, 90)) x1++;
                *gx = x - run + 2; *gy = y + 1; *gw = x1 - (x - run + 1) - 1;
                return 0;
            }
        }
    return -1;
}

// Confusion matrices with many classes and long names, read as a user reads them.
static void test_confusion_labels(void) {
    // Names that differ only at their ends keep apart: a cut after 24 characters drew three rows
    // "Ankle boot with a very l..." alike. 24 characters stay whole.
    char l1[160], l2[160], l3[160];
    viz_confusion_label(l1, sizeof l1, 10, "Ankle boot with a very long class name 1");
    viz_confusion_label(l2, sizeof l2, 11, "Ankle boot with a very long class name 2");
    viz_confusion_label(l3, sizeof l3, 3, "exactly_twenty_four_char");
    CHECK(!strcmp(l1, "10 Ankle boot w\xE2\x80\xA6" "class name 1"), "a long name keeps its first and last 12 characters: \"%s\"", l1);
    CHECK(strcmp(l1 + 3, l2 + 3) != 0, "names that differ at their ends keep apart: \"%s\", \"%s\"", l1, l2);
    CHECK(!strcmp(l3, "3 exactly_twenty_four_char"), "24 characters stay whole: \"%s\"", l3);
    enum { N = 100 };
    static long counts[N * N];
    static char name_buf[N][64];
    const char *names[N];
    for (int i = 0; i < N; i++) {
        counts[(size_t)i * N + i] = 3;
        snprintf(name_buf[i], sizeof name_buf[i], "class_%02d", i);
        names[i] = name_buf[i];
    }
    // 31 characters: cut to 24, the 24th a narrow 'i'; and one of 2-byte characters, cut by bytes
    // inside a character before.
    names[0] = "abcdefghijklmnopqrstuvwiiiiiiii";
    names[7] = "a\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
               "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
               "\xC3\xA9\xC3\xA9";   // a + 25 x e-acute
    char err[256];
    Canvas cv;
    int n = 45, gx, gy, gw, lh = text_line_height(11);
    CHECK(viz_confusion(&cv, counts, n, names, "kNN: top-1", err, sizeof err) == 0, "45 classes drawn: %s", err);
    if (cv.px && find_grid(&cv, 200, &gx, &gy, &gw) == 0) {
        int cell = gw / n;
        CHECK(cell * n == gw, "grid %d wide for %d classes", gw, n);
        // Column indices 12..44 over the columns: no pixel row of the header holds indices run
        // together ("101112..." read as one number).
        int longest = 0;
        for (int y = gy - 2 - 2 * lh; y < gy - 1; y++) {
            int r = ink_run(&cv, gx + 12 * cell, y, 1, 0, (n - 12) * cell, 3);
            if (r > longest) longest = r;
        }
        CHECK(longest < 2 * cell, "45 classes: column indices stand apart (longest run of ink %d px, cells %d px)",
              longest, cell);
        // Row labels end 6 pixels left of the grid: their left edge is where the text says.
        const char *want[2] = {"0 abcdefghijkl\xE2\x80\xA6tuvwiiiiiiii",
                               "7 a\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                               "\xC3\xA9\xE2\x80\xA6"
                               "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                               "\xC3\xA9\xC3\xA9"};
        const int rows[2] = {0, 7};
        for (int k = 0; k < 2; k++) {
            int left = -1, y0 = gy + rows[k] * cell + (cell - lh) / 2;
            for (int x = 0; x < gx - 6 && left < 0; x++)
                for (int y = y0; y < y0 + lh; y++)
                    if (px(&cv, x, y)[0] < 160) { left = x; break; }
            int expect = gx - 6 - text_width(want[k], 11);
            CHECK(abs(left - expect) <= 2, "row %d: a name over 24 characters keeps 12 and 12 about an ellipsis (label from x %d, "
                  "\"%s\" from %d)", rows[k], left, want[k], expect);
        }
    } else {
        CHECK(0, "45 classes: grid found");
    }
    canvas_free(&cv);

    // 100 classes, 4-pixel rows: labels every few rows, not 13-pixel lines every 4 pixels.
    n = N;
    CHECK(viz_confusion(&cv, counts, n, names, "kNN: top-1", err, sizeof err) == 0, "100 classes drawn: %s", err);
    if (cv.px && find_grid(&cv, 300, &gx, &gy, &gw) == 0) {
        int longest = 0;
        for (int x = gx - 40; x < gx - 6; x++) {
            int r = ink_run(&cv, x, gy - lh, 0, 1, gw + 2 * lh, 1);
            if (r > longest) longest = r;
        }
        CHECK(longest < 2 * lh, "100 classes: row labels stand apart (longest run of ink %d px, a line %d px)",
              longest, lh);
    } else {
        CHECK(0, "100 classes: grid found");
    }
    canvas_free(&cv);
}

// The first word of the text in rows y0..y0+lh from column x on: the columns from its first inked one
// until a gap of more than 2 blank columns (letters of one word stand closer).
static int word_extent(const Canvas *c, int x, int y0, int lh, int *first) {
    int last = -1, blank = 0;
    *first = -1;
    for (; x < c->w; x++) {
        int ink = 0;
        for (int y = y0; y < y0 + lh && y < c->h; y++) ink |= px(c, x, y)[0] < 160;
        if (ink) { if (*first < 0) *first = x; last = x; blank = 0; }
        else if (*first >= 0 && ++blank > 2) break;
    }
    return *first < 0 ? 0 : last - *first + 1;
}

// Two classes with short names: the grid is narrower than the texts around it. The caption under it
// was cut at the right edge and "true" ran into "predicted ->" ("truepredicted ->").
static void test_confusion_narrow(void) {
    long counts[4] = {5, 0, 0, 5};
    const char *names[2] = {"a", "b"};
    char err[256];
    Canvas cv;
    int gx, gy, gw, lh = text_line_height(11), pad = 10, first;
    CHECK(viz_confusion(&cv, counts, 2, names, "kNN, test: top-1 1.0000 (5/5)", err, sizeof err) == 0,
          "2 classes drawn: %s", err);
    if (cv.px && find_grid(&cv, 60, &gx, &gy, &gw) == 0) {
        int cap_y = gy + gw + 1 + 4, right = -1;
        for (int x = 0; x < cv.w; x++)
            for (int y = cap_y; y < cap_y + lh && y < cv.h; y++)
                if (px(&cv, x, y)[0] < 160) right = x;
        int want = text_width("colour: fraction of the true class", 11);
        CHECK(right >= 0 && abs(right - (gx - 1) + 1 - want) <= 3 && right < cv.w - 3,
              "2 classes: the caption whole (ink to column %d of %d, from %d: %d px of %d)", right, cv.w, gx - 1,
              right - (gx - 1) + 1, want);
        // "true", then a space at least as wide as a word's before "predicted".
        int head_y = pad + 2 * lh, w = word_extent(&cv, 0, head_y, lh, &first), next;
        word_extent(&cv, first + w, head_y, lh, &next);
        CHECK(w > 0 && w <= text_width("true", 11) + 1 && next - (first + w) >= 6,
              "2 classes: \"true\" stands apart from \"predicted ->\" (\"true\" %d px from column %d, the next word "
              "from %d)", w, first, next);
    } else {
        CHECK(0, "2 classes: grid found");
    }
    canvas_free(&cv);
}

// The y axis the plot chooses (viz_plot_axis): a fine-tune's loss that moves little (1.02 to 1.07)
// sat in the lowest tenth of a log axis from 1 to 2, a flat line at the bottom of curves.png. Values
// within a factor of two now span their own range, with ticks a reader can read a value by; a range
// of decades keeps 1-2-5 ends.
static void test_plot_axis_fits(void) {
    static const double range[][2] = {{1.02, 1.07}, {3.6, 3.9}, {0.9, 1.6}, {0.0102, 0.0107}};
    for (int r = 0; r < 4; r++) {
        double vmin = range[r][0], vmax = range[r][1];
        for (int want = 2; want <= 12; want += 5) {
            PlotAxis a;
            viz_plot_axis(&a, vmin, vmax, 1, want);
            double filled = log10(vmax / vmin) / log10(a.hi / a.lo);
            int inside = 0;
            for (int k = 0; k < a.nticks; k++) inside += a.ticks[k] >= a.lo * (1 - 1e-9) && a.ticks[k] <= a.hi * (1 + 1e-9);
            CHECK(a.log && a.lo > 0 && a.lo <= vmin && a.hi >= vmax && filled >= 0.4,
                  "log axis for %g..%g (want %d): %g..%g, the values fill %.0f%% of its height (40%% at least)",
                  vmin, vmax, want, a.lo, a.hi, 100 * filled);
            CHECK(inside >= 2 && inside == a.nticks, "log axis for %g..%g (want %d): %d ticks, all within %g..%g", vmin,
                  vmax, want, a.nticks, a.lo, a.hi);
        }
    }
    PlotAxis a;
    viz_plot_axis(&a, 0.3, 1.0, 1, 8);
    CHECK(a.lo == 0.2 && a.hi == 1, "0.3..1 on a log axis keeps 1-2-5 ends: %g..%g (0.2..1 wanted)", a.lo, a.hi);
    viz_plot_axis(&a, 3.6, 3.9, 1, 9);
    CHECK(a.nticks >= 4, "3.6..3.9 on a log axis: %d ticks (4 at least)", a.nticks);
}

// A loss that barely moved over a run (a fine-tune's first steps at a warm-up's small learning rate)
// gets a linear axis's ticks on its log axis (viz_plot_axis), and their labels were %g's 6 digits:
// 6.907712 and 6.907714 both read "6.90771", a scale of one number repeated. Neighbouring labels now
// differ, on either axis.
static void test_plot_axis_labels_differ(void) {
    static const double range[][2] = {{0.5012, 0.5019}, {6.907712, 6.907718}, {0.50000012, 0.50000019},
                                      {123.4561, 123.4569}, {1.02, 1.07}, {0.001, 30}};
    for (int r = 0; r < 6; r++)
        for (int log_y = 0; log_y <= 1; log_y++)
            for (int want = 2; want <= 12; want += 5) {
                PlotAxis a;
                viz_plot_axis(&a, range[r][0], range[r][1], log_y, want);
                char prev[64] = "", label[64];
                for (int k = 0; k < a.nticks; k++) {
                    viz_tick_label(label, sizeof label, a.ticks[k], &a);
                    CHECK(k == 0 || strcmp(label, prev), "%s axis for %.9g..%.9g (want %d): ticks %.9g and %.9g both "
                          "read '%s'", log_y ? "log" : "linear", range[r][0], range[r][1], want, a.ticks[k - (k > 0)],
                          a.ticks[k], label);
                    snprintf(prev, sizeof prev, "%s", label);
                }
            }
    // The digits are the ticks' own: 1-2-5 ticks keep %g's short labels.
    PlotAxis a;
    char label[64];
    viz_plot_axis(&a, 0.3, 1.0, 1, 8);
    viz_tick_label(label, sizeof label, a.ticks[0], &a);
    CHECK(!strcmp(label, "0.2"), "0.3..1 on a log axis: first tick '%s' ('0.2' wanted)", label);
}

int main(void) {
    test_canvas();
    test_colormaps();
    test_upsample();
    test_normalize();
    test_overlay();
    test_colorbar_patches();
    test_text();
    test_plot();
    test_plot_reading();
    test_plot_axis_fits();
    test_plot_axis_labels_differ();
    test_plot_whole_steps();
    test_plot_lone_zero();
    test_plot_long_history();
    test_confusion_labels();
    test_confusion_narrow();
    return check_done();
}
