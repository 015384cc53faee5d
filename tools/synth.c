// Synthetic image folders for tests and quick demos: coloured shapes on a coloured background,
// one class per shape kind (circle, square, triangle, stripes), seeded and reproducible.
// Usage: synth OUT_DIR --count N --size S [--classes K] [--seed S] [--grey]
// Writes OUT_DIR/<class>/<i>.png (i zero-padded to 5 digits); image i has class i % K.
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cmd/cli.h"
#include "data/image.h"
#include "core/rng.h"

static const char *const kinds[4] = {"circle", "square", "triangle", "stripes"};

static int mkdir_one(const char *path) {
    if (mkdir(path, 0777) == 0 || errno == EEXIST) return 0;
    cli_error(path, "%s", strerror(errno));
    return -1;
}

// 1 when pixel centre (x, y) lies inside the shape of `kind` with centre (cx, cy) and radius r.
static int inside(int kind, double x, double y, double cx, double cy, double r, double period, int vertical) {
    double dx = x - cx, dy = y - cy;
    switch (kind) {
    case 0: return dx * dx + dy * dy <= r * r;
    case 1: return fabs(dx) <= r * 0.8 && fabs(dy) <= r * 0.8;
    case 2: {   // apex up: |dx| <= (dy + r) / 2 for dy in [-r, r]
        return dy >= -r && dy <= r && fabs(dx) <= (dy + r) * 0.5;
    }
    default: return fmod(vertical ? x : y, period) < period * 0.5;
    }
}

int main(int argc, char **argv) {
    int count = 0, size = 0, classes = 4, grey = 0;
    long seed = 0;
    Flag flags[] = {
        {"--count", FLAG_INT, &count, 1, 1e7, NULL, "number of images", "N", 0},
        {"--size", FLAG_INT, &size, 4, 4096, NULL, "width and height in pixels", "S", 0},
        {"--classes", FLAG_INT, &classes, 1, 4, NULL, "shape kinds used, 1..4 (default 4)", "K", 0},
        {"--seed", FLAG_LONG, &seed, 0, 9.2e18, NULL, "random seed (default 0)", "S", 0},
        {"--grey", FLAG_BOOL, &grey, 0, 0, NULL, "write 1-channel PNGs", NULL, 0},
    };
    const int nflags = (int)(sizeof flags / sizeof flags[0]);
    const char *synopsis = "OUT_DIR --count N --size S [--classes K] [--seed S] [--grey]";
    char *pos[1];
    int npos = 0;
    int rc = cli_parse("synth", synopsis, flags, nflags, argc, argv, pos, 1, &npos);
    if (rc == CLI_HELP) return 0;
    if (rc != CLI_OK) return 2;
    if (npos != 1 || !count || !size) { cli_error("synth", "usage: synth %s", synopsis); return 2; }

    const char *out = pos[0];
    if (mkdir_one(out)) return 1;
    char path[4096];
    for (int k = 0; k < classes; k++) {
        snprintf(path, sizeof path, "%s/%s", out, kinds[k]);
        if (mkdir_one(path)) return 1;
    }
    int c = grey ? 1 : 3;
    uint8_t *px = malloc((size_t)size * size * c);
    if (!px) { cli_error("synth", "out of memory"); return 1; }
    for (int i = 0; i < count; i++) {
        Rng r;
        rng_derive(&r, (uint64_t)seed, 0x5e7, (uint64_t)i);   // image i is the same whatever count is
        int kind = i % classes;
        uint8_t fg[3], bg[3];
        for (int ch = 0; ch < 3; ch++) {
            bg[ch] = (uint8_t)rng_below(&r, 96);          // dark background
            fg[ch] = (uint8_t)(128 + rng_below(&r, 128)); // bright shape
        }
        double rad = size * (0.2 + 0.15 * rng_uniform_double(&r));
        double cx = rad + (size - 2 * rad) * rng_uniform_double(&r);
        double cy = rad + (size - 2 * rad) * rng_uniform_double(&r);
        double period = 4 + (size / 4.0) * rng_uniform_double(&r);
        int vertical = (int)rng_below(&r, 2);
        for (int y = 0; y < size; y++)
            for (int x = 0; x < size; x++) {
                const uint8_t *col = inside(kind, x + 0.5, y + 0.5, cx, cy, rad, period, vertical) ? fg : bg;
                uint8_t *p = px + ((size_t)y * size + x) * c;
                if (grey) p[0] = (uint8_t)((299 * col[0] + 587 * col[1] + 114 * col[2] + 500) / 1000);
                else memcpy(p, col, 3);
            }
        char err[256];
        snprintf(path, sizeof path, "%s/%s/%05d.png", out, kinds[kind], i);
        if (png_write(path, px, size, size, c, NULL, err, sizeof err)) {
            cli_error(path, "%s", err);
            free(px);
            return 1;
        }
    }
    free(px);
    return 0;
}
