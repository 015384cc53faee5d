// Checks for `vitmae attention` outputs, used by tests/cli_attention.sh and tests/cli_convert.sh.
// Each form prints what it measured and exits 0 when within tolerance, 1 when not, 2 on bad use.
//
//   attn_check parity ATTN.npy EXPECTED.safetensors [TOL]
//       ATTN.npy [depth, heads, T, T] against the tensor "attention" of the reference file: the max
//       absolute error must be <= TOL (default 1e-5); every row must sum to 1 within 1e-5.
//   attn_check rows ATTN.npy DEPTH HEADS T
//       the shape is [DEPTH, HEADS, T, T] and every row sums to 1 within 1e-5.
//   attn_check map ATTN.npy row|rollout LAYER HEAD QUERY MAP.npy
//       MAP.npy [g, g] (no masking) against a direct computation from the raw attention: HEAD is
//       a head index, mean or max; QUERY the token (0 = CLS, 1 + patch). row: A_LAYER[QUERY, 1 + l];
//       rollout: R = Â_LAYER ... Â_0 with Â = rownorm(0.5 A + 0.5 I), all in double. Tolerance 1e-5.
//   attn_check overlay OUT.png IMAGE.png MAP.npy ALPHA SCALE COLORMAP
//       OUT.png (nearest upsampling, no masking, no query outline) against the overlay formula:
//       u8 = round((1 - ALPHA) * 255 * image + ALPHA * colour((v - min) / (max - min))), each patch
//       of the image SCALE x SCALE times larger. At most 1% of the samples may be off by 1 or 2
//       (colour-index rounding); none by more.
//       Optional VMIN VMAX after COLORMAP: the colour scale is [VMIN, VMAX] instead of the map's own
//       min..max (`--normalize layer` draws 0..the layer's max; see `scale`).
//   attn_check scale OUT.png MAP.npy...
//       the tEXt "colour_scale" of OUT.png is "0 <max>" where max is the largest value of the given
//       maps (the maps of one layer: the scale `--normalize layer` shares), to 1e-6 relative.
//   attn_check masked OUT.png MASK.npy PATCH_PIXELS
//       every patch that MASK.npy [g, g] marks removed is flat grey (128, 128, 128) in OUT.png, and
//       no visible patch is.
//   attn_check isolated OUT.png MASK.npy PATCH_PIXELS
//       every visible patch whose neighbours (8, within the grid) are all removed is one flat colour
//       in OUT.png (alpha 1): a removed patch lends no value to it. Needs at least one such patch.
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/checkpoint.h"
#include "data/image.h"
#include "viz/viz.h"

typedef struct { int ndim; long shape[8]; size_t n; float *f; uint8_t *u; } Npy;

// A reader for what src/io/npy.c writes: version 1.0, '<f4' or '|u1', C order.
static int npy_read(const char *path, Npy *a) {
    memset(a, 0, sizeof *a);
    FILE *fp = fopen(path, "rb");
    if (!fp) { perror(path); return -1; }
    unsigned char pre[10];
    char header[65536];
    if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY\x01\x00", 8)) { fprintf(stderr, "%s: not npy 1.0\n", path); fclose(fp); return -1; }
    size_t hl = pre[8] | (size_t)pre[9] << 8;
    if (fread(header, 1, hl, fp) != hl) { fprintf(stderr, "%s: short header\n", path); fclose(fp); return -1; }
    header[hl] = 0;
    int f4 = strstr(header, "'descr': '<f4'") != NULL, u1 = strstr(header, "'descr': '|u1'") != NULL;
    const char *sh = strstr(header, "'shape': (");
    if ((!f4 && !u1) || !strstr(header, "'fortran_order': False") || !sh) { fprintf(stderr, "%s: unsupported header %s\n", path, header); fclose(fp); return -1; }
    sh += strlen("'shape': (");
    a->n = 1;
    size_t item = f4 ? 4 : 1;
    while (*sh && *sh != ')') {
        char *end;
        long v = strtol(sh, &end, 10);
        if (end == sh || a->ndim == 8) break;
        // A dimension below 0, or a product past size_t, sized the buffer below by a count that wrapped
        // (an .npy edited by hand, or one written wrong): only fread's own wrapped size * count kept the
        // read inside it, and the file was called short.
        if (v < 0 || (v > 0 && a->n > SIZE_MAX / item / (size_t)v)) {
            fprintf(stderr, "%s: bad shape in header %s\n", path, header); fclose(fp); return -1;
        }
        a->shape[a->ndim++] = v;
        a->n *= (size_t)v;
        sh = end;
        while (*sh == ',' || *sh == ' ') sh++;
    }
    long at = ftell(fp);
    if (at < 0 || fseek(fp, 0, SEEK_END) || (size_t)(ftell(fp) - at) != a->n * item || fseek(fp, at, SEEK_SET)) {
        fprintf(stderr, "%s: the data are not the %zu items of the shape\n", path, a->n); fclose(fp); return -1;
    }
    void *data = malloc(a->n * item + 1);
    if (!data || fread(data, item, a->n, fp) != a->n) { fprintf(stderr, "%s: short data\n", path); free(data); fclose(fp); return -1; }
    fclose(fp);
    if (f4) a->f = data; else a->u = data;
    return 0;
}

static double rows_error(const float *att, size_t nrows, long T) {
    double worst = 0;
    for (size_t r = 0; r < nrows; r++) {
        double s = 0;
        for (long k = 0; k < T; k++) s += att[r * T + k];
        if (fabs(s - 1) > worst || s != s) worst = s != s ? INFINITY : fabs(s - 1);
    }
    return worst;
}

static int cmd_parity(int argc, char **argv) {
    if (argc < 4) return 2;
    double tol = argc > 4 ? atof(argv[4]) : 1e-5;
    Npy a;
    if (npy_read(argv[2], &a) || !a.f || a.ndim != 4) { fprintf(stderr, "%s: want float32 [depth, heads, T, T]\n", argv[2]); return 1; }
    char err[512];
    StFile *st = st_open(argv[3], err, sizeof err);
    if (!st) { fprintf(stderr, "%s\n", err); return 1; }
    int nd; int64_t shape[4];
    const float *want = st_get(st, "attention", &nd, shape);
    int ok = want && nd == 4;
    for (int i = 0; ok && i < 4; i++) ok = shape[i] == a.shape[i];
    if (!ok) { fprintf(stderr, "shape mismatch with the reference\n"); st_close(st); return 1; }
    double worst = 0;
    for (size_t i = 0; i < a.n; i++) {
        double d = fabs((double)a.f[i] - want[i]);
        if (d > worst || d != d) worst = d != d ? INFINITY : d;
    }
    double rows = rows_error(a.f, a.n / a.shape[3], a.shape[3]);
    printf("attention [%ld, %ld, %ld, %ld]: max abs error %.3g (tol %.1g), max |row sum - 1| %.3g\n",
           a.shape[0], a.shape[1], a.shape[2], a.shape[3], worst, tol, rows);
    st_close(st);
    free(a.f);
    return worst <= tol && rows <= 1e-5 ? 0 : 1;
}

static int cmd_rows(int argc, char **argv) {
    if (argc < 6) return 2;
    Npy a;
    if (npy_read(argv[2], &a) || !a.f || a.ndim != 4) return 1;
    long want[4] = {atol(argv[3]), atol(argv[4]), atol(argv[5]), atol(argv[5])};
    for (int i = 0; i < 4; i++)
        if (a.shape[i] != want[i]) { fprintf(stderr, "shape[%d] = %ld, want %ld\n", i, a.shape[i], want[i]); free(a.f); return 1; }
    double rows = rows_error(a.f, a.n / a.shape[3], a.shape[3]);
    printf("shape ok, max |row sum - 1| %.3g\n", rows);
    free(a.f);
    return rows <= 1e-5 ? 0 : 1;
}

// A [T, T] in double: one head, or the mean / max over heads of layer l.
static void layer_matrix(const Npy *a, int l, const char *head, double *A) {
    long H = a->shape[1], T = a->shape[2];
    const float *base = a->f + (size_t)l * H * T * T;
    for (long i = 0; i < T * T; i++) {
        if (!strcmp(head, "mean")) { double s = 0; for (long h = 0; h < H; h++) s += base[h * T * T + i]; A[i] = s / H; }
        else if (!strcmp(head, "max")) { double m = base[i]; for (long h = 1; h < H; h++) if (base[h * T * T + i] > m) m = base[h * T * T + i]; A[i] = m; }
        else A[i] = base[atol(head) * T * T + i];
    }
}

static int cmd_map(int argc, char **argv) {
    if (argc < 8) return 2;
    Npy a, mp;
    if (npy_read(argv[2], &a) || !a.f || a.ndim != 4 || npy_read(argv[7], &mp) || !mp.f) return 1;
    int rollout = !strcmp(argv[3], "rollout"), layer = atoi(argv[4]), q = atoi(argv[6]);
    long T = a.shape[2];
    if ((long)mp.n != T - 1) { fprintf(stderr, "map has %zu cells, want %ld\n", mp.n, T - 1); return 1; }
    double *A = malloc(sizeof(double) * T * T), *R = calloc((size_t)(T * T), sizeof(double)), *N = malloc(sizeof(double) * T * T);
    if (rollout) {
        for (long i = 0; i < T; i++) R[i * T + i] = 1;
        for (int l = 0; l <= layer; l++) {
            layer_matrix(&a, l, argv[5], A);
            for (long i = 0; i < T; i++) {            // Â = rownorm(0.5 A + 0.5 I), written out
                double s = 0;
                for (long k = 0; k < T; k++) { A[i * T + k] = 0.5 * A[i * T + k] + (i == k ? 0.5 : 0); s += A[i * T + k]; }
                for (long k = 0; k < T; k++) A[i * T + k] /= s;
            }
            for (long i = 0; i < T; i++)               // N = Â R
                for (long j = 0; j < T; j++) {
                    double s = 0;
                    for (long k = 0; k < T; k++) s += A[i * T + k] * R[k * T + j];
                    N[i * T + j] = s;
                }
            memcpy(R, N, sizeof(double) * T * T);
        }
    } else {
        layer_matrix(&a, layer, argv[5], R);
    }
    double worst = 0;
    for (long l = 0; l < T - 1; l++) {
        double d = fabs(mp.f[l] - R[q * T + 1 + l]);
        if (d > worst || d != d) worst = d != d ? INFINITY : d;
    }
    printf("%s layer %d head %s query %d: max abs error %.3g\n", argv[3], layer, argv[5], q, worst);
    free(A); free(R); free(N); free(a.f); free(mp.f);
    return worst <= 1e-5 ? 0 : 1;
}

static int cmd_overlay(int argc, char **argv) {
    if (argc < 8) return 2;
    char err[512];
    Image out, img;
    Npy mp;
    if (image_load(argv[2], 0, &out, err, sizeof err) || image_load(argv[3], 0, &img, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    if (npy_read(argv[4], &mp) || !mp.f || mp.ndim != 2) return 1;
    double alpha = atof(argv[5]);
    int K = atoi(argv[6]), cmap = colormap_from_name(argv[7]), g = (int)mp.shape[0], P = img.w / g;
    if (out.w != img.w * K || out.h != img.h * K || out.c != 3 || img.c != 3 || cmap < 0) { fprintf(stderr, "sizes do not match\n"); return 1; }
    float lo = mp.f[0], hi = mp.f[0];
    for (size_t i = 0; i < mp.n; i++) { if (mp.f[i] < lo) lo = mp.f[i]; if (mp.f[i] > hi) hi = mp.f[i]; }
    if (argc >= 10) { lo = (float)atof(argv[8]); hi = (float)atof(argv[9]); }
    long off1 = 0, offmore = 0, n = 0;
    for (int y = 0; y < out.h; y++)
        for (int x = 0; x < out.w; x++) {
            int ix = x / K, iy = y / K, cell = (iy / P) * g + ix / P;
            uint8_t col[3];
            colormap_color(cmap, hi > lo ? (mp.f[cell] - lo) / (hi - lo) : 0.0f, col);
            for (int k = 0; k < 3; k++) {
                double want = floor((1 - alpha) * 255.0 * img.px[((size_t)iy * img.w + ix) * 3 + k] + alpha * col[k] + 0.5);
                double got = round(255.0 * out.px[((size_t)y * out.w + x) * 3 + k]);
                double d = fabs(got - want);
                n++;
                if (d > 2) offmore++;
                else if (d > 0) off1++;
            }
        }
    printf("overlay %dx%d: %ld samples, %ld off by 1-2, %ld off by more\n", out.w, out.h, n, off1, offmore);
    image_free(&out); image_free(&img); free(mp.f);
    return offmore == 0 && off1 * 100 <= n ? 0 : 1;
}

// The value of tEXt chunk `key` of a PNG, copied into out. 0 found, -1 not.
static int png_text_value(const char *path, const char *key, char *out, size_t n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) { perror(path); return -1; }
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int rc = -1;
    if (png && info && !setjmp(png_jmpbuf(png))) {
        png_init_io(png, fp);
        png_read_info(png, info);
        png_textp text;
        int nt = 0;
        png_get_text(png, info, &text, &nt);
        for (int i = 0; i < nt && rc; i++)
            if (!strcmp(text[i].key, key)) { snprintf(out, n, "%s", text[i].text); rc = 0; }
    }
    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp);
    return rc;
}

static int cmd_scale(int argc, char **argv) {
    if (argc < 4) return 2;
    char text[128];
    if (png_text_value(argv[2], "colour_scale", text, sizeof text)) { fprintf(stderr, "%s: no colour_scale text\n", argv[2]); return 1; }
    double vmin, vmax, want = -INFINITY;
    if (sscanf(text, "%lf %lf", &vmin, &vmax) != 2) { fprintf(stderr, "%s: colour_scale '%s'\n", argv[2], text); return 1; }
    for (int i = 3; i < argc; i++) {
        Npy mp;
        if (npy_read(argv[i], &mp) || !mp.f) return 1;
        for (size_t k = 0; k < mp.n; k++) if (mp.f[k] > want) want = mp.f[k];   // NaN never wins
        free(mp.f);
    }
    printf("colour scale %s: want 0 %.9g\n", text, want);
    return vmin == 0 && fabs(vmax - want) <= 1e-6 * fabs(want) ? 0 : 1;
}

// masked and isolated's inputs: the overlay PNG (argv[2]), its mask .npy (argv[3], g x g, 1 = removed)
// and a patch's side in pixels (argv[4]). 0, or 2 (usage) / 1 (unreadable) with nothing held.
static int load_overlay_mask(int argc, char **argv, Image *out, Npy *mk, int *side, int *g) {
    if (argc < 5) return 2;
    char err[512];
    if (image_load(argv[2], 0, out, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    if (npy_read(argv[3], mk) || !mk->u || mk->ndim != 2) { image_free(out); free(mk->u); free(mk->f); return 1; }
    *side = atoi(argv[4]);
    *g = (int)mk->shape[1];
    return 0;
}

static int cmd_masked(int argc, char **argv) {
    Image out;
    Npy mk = {0};
    int side, g, bad = 0, nremoved = 0, rc = load_overlay_mask(argc, argv, &out, &mk, &side, &g);
    if (rc) return rc;
    for (int l = 0; l < g * g; l++) {
        int grey = 1;
        for (int y = (l / g) * side; y < (l / g + 1) * side && y < out.h; y++)
            for (int x = (l % g) * side; x < (l % g + 1) * side && x < out.w; x++)
                for (int k = 0; k < 3; k++)
                    if (round(255.0 * out.px[((size_t)y * out.w + x) * 3 + k]) != 128) grey = 0;
        nremoved += mk.u[l] != 0;
        if (grey != (mk.u[l] != 0)) bad++;
    }
    printf("masked: %d of %d patches removed, %d drawn wrongly\n", nremoved, g * g, bad);
    image_free(&out); free(mk.u);
    return bad == 0 && nremoved > 0 ? 0 : 1;
}

static int cmd_isolated(int argc, char **argv) {
    Image out;
    Npy mk = {0};
    int side, g, n = 0, uneven = 0, rc = load_overlay_mask(argc, argv, &out, &mk, &side, &g);
    if (rc) return rc;
    for (int l = 0; l < g * g; l++) {
        int gx = l % g, gy = l / g, alone = !mk.u[l];
        for (int dy = -1; dy <= 1 && alone; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                int x = gx + dx, y = gy + dy;
                if ((dx || dy) && x >= 0 && y >= 0 && x < g && y < g && !mk.u[y * g + x]) alone = 0;
            }
        if (!alone) continue;
        n++;
        const float *first = out.px + ((size_t)gy * side * out.w + (size_t)gx * side) * 3;
        int flat = 1;
        for (int y = gy * side; y < (gy + 1) * side && y < out.h; y++)
            for (int x = gx * side; x < (gx + 1) * side && x < out.w; x++)
                for (int k = 0; k < 3; k++)
                    if (out.px[((size_t)y * out.w + x) * 3 + k] != first[k]) flat = 0;
        uneven += !flat;
    }
    printf("isolated: %d visible patches with no visible neighbour, %d not one flat colour\n", n, uneven);
    image_free(&out); free(mk.u);
    return n > 0 && uneven == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    int rc = 2;
    if (argc >= 2 && !strcmp(argv[1], "parity")) rc = cmd_parity(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "rows")) rc = cmd_rows(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "map")) rc = cmd_map(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "overlay")) rc = cmd_overlay(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "masked")) rc = cmd_masked(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "scale")) rc = cmd_scale(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "isolated")) rc = cmd_isolated(argc, argv);
    if (rc == 2)
        fprintf(stderr, "usage: attn_check parity|rows|map|overlay|scale|masked|isolated ... (see tools/attn_check.c)\n");
    return rc;
}
