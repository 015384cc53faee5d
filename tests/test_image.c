// image: PNG decode of every colour type / bit depth (files written here with libpng directly),
// JPEG variants (written here with libjpeg), PNG encode with tEXt, geometry against hand-computed
// values, and every way an input file can be wrong.
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <grp.h>
#include <malloc.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <png.h>
#include <jpeglib.h>
#include <libexif/exif-data.h>
#include <webp/encode.h>
#include <zlib.h>
#include "check.h"
#include "data/dataset.h"   // AUGMENT_CROP_LO
#include "data/image.h"
#include "fixture_check.h"
#include "io/safetensors.h"

static const char *tmp;

static char *tpath(const char *name) {
    static char buf[8][1024];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, name);
    return buf[k];
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(2); }
    if (n && fwrite(data, 1, n, f) != n) { perror(path); exit(2); }
    fclose(f);
}

static uint8_t *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    if (fread(b, 1, (size_t)len, f) != (size_t)len) { perror(path); exit(2); }
    fclose(f);
    *n = (size_t)len;
    return b;
}

// ---------------------------------------------------------------------------------------------
// PNG files written with libpng directly. samples: one value per sample (unpacked), row-major;
// 16-bit samples are written big-endian; 1/2/4-bit samples are packed by png_set_packing.

typedef struct {
    int w, h, bit_depth, color_type, interlace;
    const uint16_t *samples;
    const png_color *palette; int npalette;
    const uint8_t *trans_alpha; int ntrans;          // palette tRNS
    const png_color_16 *trans_color;                 // grey / RGB tRNS
} PngSpec;

static int channels_of(int color_type) {
    switch (color_type) {
    case PNG_COLOR_TYPE_GRAY: case PNG_COLOR_TYPE_PALETTE: return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    default: return 4;
    }
}

// With an eXIf chunk holding the TIFF block exif (nexif bytes) when exif is not NULL.
static void write_png_exif(const char *path, const PngSpec *s, const uint8_t *exif, int nexif) {
    FILE *f = fopen(path, "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) { fprintf(stderr, "libpng write failed for %s\n", path); exit(2); }
    png_init_io(png, f);
    png_set_IHDR(png, info, s->w, s->h, s->bit_depth, s->color_type, s->interlace, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (s->palette) png_set_PLTE(png, info, s->palette, s->npalette);
    if (s->trans_alpha || s->trans_color) png_set_tRNS(png, info, s->trans_alpha, s->ntrans, s->trans_color);
    if (exif) png_set_eXIf_1(png, info, (png_uint_32)nexif, (png_bytep)exif);
    png_write_info(png, info);
    if (s->bit_depth < 8) png_set_packing(png);
    int spp = channels_of(s->color_type), bps = s->bit_depth == 16 ? 2 : 1;
    uint8_t *rows = malloc((size_t)s->w * s->h * spp * bps);
    png_bytep *rp = malloc(sizeof(png_bytep) * s->h);
    for (int y = 0; y < s->h; y++) {
        rp[y] = rows + (size_t)y * s->w * spp * bps;
        for (int i = 0; i < s->w * spp; i++) {
            uint16_t v = s->samples[(size_t)y * s->w * spp + i];
            if (bps == 2) { rp[y][2 * i] = (uint8_t)(v >> 8); rp[y][2 * i + 1] = (uint8_t)v; }
            else rp[y][i] = (uint8_t)v;
        }
    }
    png_write_image(png, rp);   // handles Adam7 passes itself
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
    free(rows);
    free(rp);
}
static void write_png_spec(const char *path, const PngSpec *s) { write_png_exif(path, s, NULL, 0); }

// Decodes path and compares with the samples: grey (+alpha) -> 1 channel, RGB(A) -> 3, alpha dropped.
static void check_png_roundtrip(const char *name, const PngSpec *s) {
    char *path = tpath(name);
    write_png_spec(path, s);
    Image im;
    char err[256] = "";
    int rc = image_load(path, 0, &im, err, sizeof err);
    CHECK(rc == 0, "%s: load failed: %s", name, err);
    if (rc) return;
    int spp = channels_of(s->color_type);
    int want_c = s->color_type == PNG_COLOR_TYPE_PALETTE || spp >= 3 ? 3 : 1;
    CHECK(im.w == s->w && im.h == s->h && im.c == want_c, "%s: got %dx%dx%d", name, im.w, im.h, im.c);
    int maxv = (1 << s->bit_depth) - 1, bad = 0;
    for (int p = 0; p < s->w * s->h && im.c == want_c; p++)
        for (int k = 0; k < want_c; k++) {
            float want;
            if (s->palette) {
                const png_color *e = &s->palette[s->samples[p]];
                want = (float)(k == 0 ? e->red : k == 1 ? e->green : e->blue) / 255.0f;
            } else {
                want = (float)s->samples[(size_t)p * spp + k] / (float)maxv;
            }
            if (im.px[(size_t)p * want_c + k] != want) {
                if (!bad) fprintf(stderr, "%s: pixel %d ch %d: got %.9g want %.9g\n", name, p, k, im.px[(size_t)p * want_c + k], want);
                bad++;
            }
        }
    CHECK(bad == 0, "%s: %d samples differ", name, bad);
    image_free(&im);
}

static void test_png_formats(void) {
    enum { W = 7, H = 5 };   // odd sizes: packed rows end mid-byte
    uint16_t s[W * H * 4];
    int depths[5] = {1, 2, 4, 8, 16};
    for (int d = 0; d < 5; d++) {
        int b = depths[d];
        uint32_t maxv = (1u << b) - 1;
        for (int i = 0; i < W * H; i++) s[i] = (uint16_t)(((uint32_t)i * 2654435761u >> 7) & maxv);
        s[0] = 0;
        s[1] = (uint16_t)maxv;
        char name[64];
        snprintf(name, sizeof name, "grey%d.png", b);
        check_png_roundtrip(name, &(PngSpec){W, H, b, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, s, NULL, 0, NULL, 0, NULL});
        snprintf(name, sizeof name, "grey%d_adam7.png", b);
        check_png_roundtrip(name, &(PngSpec){W, H, b, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_ADAM7, s, NULL, 0, NULL, 0, NULL});
    }
    int depths2[2] = {8, 16};
    int types[3] = {PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 3; t++) {
            int b = depths2[d];
            uint32_t maxv = (1u << b) - 1;
            for (int i = 0; i < W * H * 4; i++) s[i] = (uint16_t)(((uint32_t)i * 2246822519u >> 9) & maxv);
            char name[64];
            for (int il = 0; il < 2; il++) {
                snprintf(name, sizeof name, "type%d_%d%s.png", types[t], b, il ? "_adam7" : "");
                check_png_roundtrip(name, &(PngSpec){W, H, b, types[t], il ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, s, NULL, 0, NULL, 0, NULL});
            }
        }
    // Palette at 1/2/4/8 bits, with tRNS (dropped, as PIL's convert('RGB')).
    png_color pal[256];
    uint8_t alpha[256];
    for (int i = 0; i < 256; i++) {
        pal[i] = (png_color){(uint8_t)(i * 37), (uint8_t)(255 - i), (uint8_t)(i * 11 + 3)};
        alpha[i] = (uint8_t)(i * 7);
    }
    for (int d = 0; d < 4; d++) {
        int b = depths[d];
        int n = 1 << b;
        for (int i = 0; i < W * H; i++) s[i] = (uint16_t)((i * 5 + 3) % n);
        char name[64];
        snprintf(name, sizeof name, "palette%d_trns.png", b);
        check_png_roundtrip(name, &(PngSpec){W, H, b, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, s, pal, n, alpha, n / 2 + 1, NULL});
        snprintf(name, sizeof name, "palette%d_adam7.png", b);
        check_png_roundtrip(name, &(PngSpec){W, H, b, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_ADAM7, s, pal, n, NULL, 0, NULL});
    }
    // Grey and RGB with a tRNS colour key: the key is ignored, the values stay.
    for (int i = 0; i < W * H * 3; i++) s[i] = (uint16_t)(i * 13 % 256);
    png_color_16 key = {0, 39, 39, 39, 39};
    check_png_roundtrip("grey8_trns.png", &(PngSpec){W, H, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, s, NULL, 0, NULL, 0, &key});
    check_png_roundtrip("rgb8_trns.png", &(PngSpec){W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, s, NULL, 0, NULL, 0, &key});
    // A larger interlaced image (every Adam7 pass non-empty) at 16 bits.
    enum { BW = 33, BH = 17 };
    static uint16_t big[BW * BH * 3];
    for (int i = 0; i < BW * BH * 3; i++) big[i] = (uint16_t)((uint32_t)i * 40503u);
    check_png_roundtrip("rgb16_adam7_big.png", &(PngSpec){BW, BH, 16, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7, big, NULL, 0, NULL, 0, NULL});
}

// ---------------------------------------------------------------------------------------------
// png_write: round trip through our decoder, tEXt chunks read back with libpng.

// The tEXt chunks png_write stored, read back with libpng (setjmp in a frame of its own).
static void check_text_chunks(const char *path) {
    FILE *f = fopen(path, "rb");
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) { CHECK(0, "libpng could not read our PNG"); fclose(f); return; }
    png_init_io(png, f);
    png_read_info(png, info);
    png_textp t = NULL;
    int nt = png_get_text(png, info, &t, NULL);
    CHECK(nt == 2, "%d text chunks", nt);
    if (nt == 2) {
        CHECK(!strcmp(t[0].key, "Title") && !strcmp(t[0].text, "vitmae test"), "text 0: %s=%s", t[0].key, t[0].text);
        CHECK(!strcmp(t[1].key, "step") && !strcmp(t[1].text, "42"), "text 1: %s=%s", t[1].key, t[1].text);
    }
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
}

static void test_png_write(void) {
    enum { W = 5, H = 3 };
    uint8_t px[W * H * 4];
    for (int i = 0; i < W * H * 4; i++) px[i] = (uint8_t)(i * 17 + 1);
    const char *text[] = {"Title", "vitmae test", "step", "42", NULL};
    for (int c = 1; c <= 4; c++) {
        if (c == 2) continue;
        char *path = tpath("written.png"), err[256] = "";
        int rc = png_write(path, px, W, H, c, c == 3 ? text : NULL, err, sizeof err);
        CHECK(rc == 0, "png_write c=%d: %s", c, err);
        Image im;
        rc = image_load(path, 0, &im, err, sizeof err);
        CHECK(rc == 0, "reload c=%d: %s", c, err);
        if (rc) continue;
        int want_c = c == 1 ? 1 : 3, bad = 0;
        CHECK(im.w == W && im.h == H && im.c == want_c, "shape c=%d", c);
        for (int p = 0; p < W * H && im.c == want_c; p++)
            for (int k = 0; k < want_c; k++) bad += im.px[p * want_c + k] != px[p * c + k] / 255.0f;
        CHECK(bad == 0, "png_write c=%d round trip: %d samples differ", c, bad);
        image_free(&im);
        if (c == 3) check_text_chunks(path);
    }
    // Noise (opaque for c=4): every row's Paeth predictor takes each of its three neighbours somewhere.
    enum { NW = 37, NH = 11 };
    static uint8_t noise[NW * NH * 4];
    uint32_t r = 12345;
    for (int i = 0; i < NW * NH * 4; i++) { r = r * 1103515245u + 12345u; noise[i] = (uint8_t)(r >> 23); }
    for (int c = 1; c <= 4; c++) {
        if (c == 2) continue;
        for (int p = 0; c == 4 && p < NW * NH; p++) noise[p * 4 + 3] = 255;
        char *path = tpath("noise.png"), err[256] = "";
        int rc = png_write(path, noise, NW, NH, c, NULL, err, sizeof err);
        Image im;
        if (!rc) rc = image_load(path, 0, &im, err, sizeof err);
        CHECK(rc == 0, "png_write noise c=%d: %s", c, err);
        if (rc) continue;
        int want_c = c == 1 ? 1 : 3, bad = 0;
        for (int p = 0; p < NW * NH && im.c == want_c; p++)
            for (int k = 0; k < want_c; k++) bad += im.px[p * want_c + k] != noise[p * c + k] / 255.0f;
        CHECK(im.c == want_c && bad == 0, "png_write noise c=%d round trip: %d samples differ", c, bad);
        image_free(&im);
    }
    char err[256] = "";
    CHECK(png_write(tpath("no-such-dir/x.png"), px, W, H, 3, NULL, err, sizeof err) == -1 && err[0],
          "writing into a missing folder fails with a reason (%s)", err);
    CHECK(png_write(tpath("bad.png"), px, W, H, 2, NULL, err, sizeof err) == -1, "c=2 refused");
    // A rename that fails (a folder at the name) under a path longer than err: the reason, not the
    // path cut short. (It said the first 255 bytes of the path, no reason.)
    char leaf[2][140];
    memset(leaf[0], 'd', 120); leaf[0][120] = 0;
    memset(leaf[1], 'p', 130); strcpy(leaf[1] + 130, ".png");
    char dir[1024], at[1024];
    snprintf(dir, sizeof dir, "%s", tpath(leaf[0]));
    snprintf(at, sizeof at, "%s/%s", dir, leaf[1]);
    CHECK(mkdir(dir, 0777) == 0 && mkdir(at, 0777) == 0, "mkdir %s: %s", at, strerror(errno));
    CHECK(strlen(at) > sizeof err && png_write(at, px, W, H, 3, NULL, err, sizeof err) == -1 && !strcmp(err, strerror(EISDIR)),
          "png_write over a folder, a %zu-byte path: the reason alone (%s)", strlen(at), err);
    rmdir(at);
    rmdir(dir);
}

// ---------------------------------------------------------------------------------------------
// JPEG files written with libjpeg: flat colours, so the decoded value is known within a few levels.

typedef enum { J_RGB, J_PROGRESSIVE, J_GREY, J_CMYK_ADOBE, J_CMYK_PLAIN } JpegKind;

static uint8_t *make_jpeg(JpegKind kind, int w, int h, const uint8_t *value, unsigned long *len) {
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr jerr;
    ci.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&ci);
    unsigned char *buf = NULL;
    *len = 0;
    jpeg_mem_dest(&ci, &buf, len);
    ci.image_width = (JDIMENSION)w;
    ci.image_height = (JDIMENSION)h;
    int comps = kind == J_GREY ? 1 : (kind == J_CMYK_ADOBE || kind == J_CMYK_PLAIN) ? 4 : 3;
    ci.input_components = comps;
    ci.in_color_space = comps == 1 ? JCS_GRAYSCALE : comps == 4 ? JCS_CMYK : JCS_RGB;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, 95, TRUE);
    if (comps == 4) {
        jpeg_set_colorspace(&ci, JCS_CMYK);
        if (kind == J_CMYK_PLAIN) ci.write_Adobe_marker = FALSE;
    }
    if (kind == J_PROGRESSIVE) jpeg_simple_progression(&ci);
    jpeg_start_compress(&ci, TRUE);
    uint8_t *row = malloc((size_t)w * comps);
    for (int x = 0; x < w; x++) memcpy(row + x * comps, value, (size_t)comps);
    while (ci.next_scanline < ci.image_height) {
        JSAMPROW r = row;
        jpeg_write_scanlines(&ci, &r, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    free(row);
    return buf;
}

static void check_flat(const char *name, const uint8_t *file, unsigned long len, int want_c, const float *want, float tol) {
    char *path = tpath(name), err[256] = "";
    write_bytes(path, file, len);
    Image im;
    int rc = image_load(path, 0, &im, err, sizeof err);
    CHECK(rc == 0, "%s: %s", name, err);
    if (rc) return;
    CHECK(im.w == 16 && im.h == 16 && im.c == want_c, "%s: %dx%dx%d", name, im.w, im.h, im.c);
    float worst = 0;
    for (int p = 0; p < im.w * im.h && im.c == want_c; p++)
        for (int k = 0; k < want_c; k++) {
            float d = fabsf(im.px[p * want_c + k] - want[k]);
            if (d > worst) worst = d;
        }
    CHECK(worst <= tol, "%s: worst |error| %.4f > %.4f", name, worst, tol);
    image_free(&im);
}

static uint8_t *jpeg_sample;   // a 16x16 baseline RGB JPEG, kept for the truncation tests
static unsigned long jpeg_sample_len;

static void test_jpeg(void) {
    const float tol = 3.0f / 255.0f;
    uint8_t rgb[3] = {200, 100, 50};
    float rgbf[3] = {200 / 255.0f, 100 / 255.0f, 50 / 255.0f};
    unsigned long len;
    uint8_t *j = make_jpeg(J_RGB, 16, 16, rgb, &len);
    check_flat("baseline.jpg", j, len, 3, rgbf, tol);
    jpeg_sample = j;
    jpeg_sample_len = len;
    j = make_jpeg(J_PROGRESSIVE, 16, 16, rgb, &len);
    check_flat("progressive.jpg", j, len, 3, rgbf, tol);
    free(j);
    uint8_t g = 123;
    float gf = 123 / 255.0f;
    j = make_jpeg(J_GREY, 16, 16, &g, &len);
    check_flat("grey.jpeg", j, len, 1, &gf, tol);
    free(j);
    // Inks C, M, Y, K = 0.2, 0.4, 0.6, 0.1 -> R, G, B = (1 - ink)(1 - K) = 0.72, 0.54, 0.36 (PIL).
    float want[3] = {0.8f * 0.9f, 0.6f * 0.9f, 0.4f * 0.9f};
    uint8_t inverted[4] = {204, 153, 102, 229};   // (1 - ink) * 255
    j = make_jpeg(J_CMYK_ADOBE, 16, 16, inverted, &len);   // Adobe marker: stored inverted, as Photoshop
    check_flat("cmyk_adobe.jpg", j, len, 3, want, 0.02f);
    free(j);
    j = make_jpeg(J_CMYK_PLAIN, 16, 16, inverted, &len);   // no marker: read as inverted too, as PIL does
    check_flat("cmyk_plain.jpg", j, len, 3, want, 0.02f);
    free(j);
}

// ---------------------------------------------------------------------------------------------
// EXIF orientation, WebP, header probes and reduced-size JPEG decode

// A 32x16 JPEG of four flat quadrants (TL red, TR green, BL blue, BR white) with an EXIF APP1 block
// holding `orientation` (0: no EXIF), written with libexif.
static uint8_t *make_oriented_jpeg(int orientation, int w, int h, unsigned long *len) {
    static const uint8_t col[4][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 255}};
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr jerr;
    ci.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&ci);
    unsigned char *buf = NULL;
    *len = 0;
    jpeg_mem_dest(&ci, &buf, len);
    ci.image_width = w;
    ci.image_height = h;
    ci.input_components = 3;
    ci.in_color_space = JCS_RGB;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, 95, TRUE);
    jpeg_start_compress(&ci, TRUE);
    if (orientation) {
        ExifData *ed = exif_data_new();
        exif_data_set_byte_order(ed, EXIF_BYTE_ORDER_MOTOROLA);
        ExifEntry *e = exif_entry_new();
        exif_content_add_entry(ed->ifd[EXIF_IFD_0], e);
        exif_entry_initialize(e, EXIF_TAG_ORIENTATION);
        exif_set_short(e->data, EXIF_BYTE_ORDER_MOTOROLA, (ExifShort)orientation);
        exif_entry_unref(e);
        unsigned char *block = NULL;
        unsigned int n = 0;
        exif_data_save_data(ed, &block, &n);
        jpeg_write_marker(&ci, JPEG_APP0 + 1, block, n);
        free(block);
        exif_data_unref(ed);
    }
    uint8_t *row = malloc((size_t)w * 3);
    while (ci.next_scanline < ci.image_height) {
        int y = (int)ci.next_scanline;
        for (int x = 0; x < w; x++) memcpy(row + 3 * x, col[(y >= h / 2) * 2 + (x >= w / 2)], 3);
        JSAMPROW r = row;
        jpeg_write_scanlines(&ci, &r, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    free(row);
    return buf;
}

// Index of the quadrant colour (0 R, 1 G, 2 B, 3 W) nearest to pixel (x, y).
static int colour_at(const Image *im, int x, int y) {
    static const float col[4][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}};
    const float *p = im->px + ((size_t)y * im->w + x) * 3;
    int best = 0;
    float bd = 1e9f;
    for (int k = 0; k < 4; k++) {
        float d = 0;
        for (int c = 0; c < 3; c++) d += (p[c] - col[k][c]) * (p[c] - col[k][c]);
        if (d < bd) { bd = d; best = k; }
    }
    return best;
}

static void test_exif_orientation(void) {
    // The quadrant colours seen at the TL, TR, BL, BR corners after each orientation (EXIF 2.3, as
    // PIL's exif_transpose): e.g. 6 rotates 90 degrees clockwise, so the blue BL comes to the TL.
    static const int want[9][4] = {
        {0, 1, 2, 3}, {0, 1, 2, 3}, {1, 0, 3, 2}, {3, 2, 1, 0}, {2, 3, 0, 1},
        {0, 2, 1, 3}, {2, 0, 3, 1}, {3, 1, 2, 0}, {1, 3, 0, 2},
    };
    for (int k = 0; k <= 8; k++) {
        unsigned long len;
        uint8_t *j = make_oriented_jpeg(k, 32, 16, &len);
        char name[64], err[256] = "";
        snprintf(name, sizeof name, "orient%d.jpg", k);
        write_bytes(tpath(name), j, len);
        free(j);
        Image im;
        int rc = image_load(tpath(name), 0, &im, err, sizeof err);
        CHECK(rc == 0, "%s: %s", name, err);
        if (rc) continue;
        int swap = k >= 5;
        CHECK(im.w == (swap ? 16 : 32) && im.h == (swap ? 32 : 16) && im.c == 3, "%s: %dx%d", name, im.w, im.h);
        int got[4] = {colour_at(&im, 1, 1), colour_at(&im, im.w - 2, 1), colour_at(&im, 1, im.h - 2),
                      colour_at(&im, im.w - 2, im.h - 2)};
        CHECK(!memcmp(got, want[k], sizeof got), "%s: corners %d %d %d %d, want %d %d %d %d", name, got[0], got[1],
              got[2], got[3], want[k][0], want[k][1], want[k][2], want[k][3]);
        int pw, ph, pc;
        CHECK(image_probe(tpath(name), 0, &pw, &ph, &pc, err, sizeof err) == 0 && pw == im.w && ph == im.h && pc == 3,
              "%s: probe %dx%dx%d", name, pw, ph, pc);
        image_free(&im);
    }
}

// An animated WebP of nframes copies of one frame (a bitstream chunk: VP8L, or ALPH + VP8) of fw x fh
// at (x, y) (even) on a canvas of cw x ch, written by hand as the container spec lays it out: RIFF,
// VP8X (the animation flag), ANIM, then an ANMF chunk a frame. Its length in dst.
static void le24(uint8_t *p, unsigned v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); }
static void le32(uint8_t *p, unsigned v) { le24(p, v); p[3] = (uint8_t)(v >> 24); }
static size_t webp_anim(uint8_t *dst, const uint8_t *frame, size_t flen, int nframes, int cw, int ch, int x, int y,
                        int fw, int fh) {
    size_t n = 0;
    memcpy(dst, "RIFF\0\0\0\0WEBPVP8X", 16); n = 16;
    le32(dst + n, 10); dst[n + 4] = 0x02; memset(dst + n + 5, 0, 3); le24(dst + n + 8, (unsigned)cw - 1);
    le24(dst + n + 11, (unsigned)ch - 1); n += 14;
    memcpy(dst + n, "ANIM", 4); le32(dst + n + 4, 6); memset(dst + n + 8, 255, 4); dst[n + 12] = dst[n + 13] = 0; n += 14;
    for (int k = 0; k < nframes; k++) {
        size_t body = 16 + flen + (flen & 1);
        memcpy(dst + n, "ANMF", 4); le32(dst + n + 4, (unsigned)body);
        le24(dst + n + 8, (unsigned)x / 2); le24(dst + n + 11, (unsigned)y / 2);
        le24(dst + n + 14, (unsigned)fw - 1); le24(dst + n + 17, (unsigned)fh - 1);
        le24(dst + n + 20, 100); dst[n + 23] = 0;
        memcpy(dst + n + 24, frame, flen);
        if (flen & 1) dst[n + 24 + flen] = 0;
        n += 8 + body;
    }
    le32(dst + 4, (unsigned)n - 8);
    return n;
}

// An animated WebP of one frame is the still image it shows (PIL opens it so): the same pixels as the
// still file of its bitstream, exactly (lossless), on its canvas (0 where the frame does not cover
// it); one of two frames is skipped with its reason, by the decode and by the header probe.
static void test_webp_one_frame_animation(void) {
    enum { W = 20, H = 12, CW = 30, CH = 20, X = 4, Y = 6 };
    uint8_t rgb[W * H * 3];
    for (int i = 0; i < W * H * 3; i++) rgb[i] = (uint8_t)(i * 11 % 253);
    uint8_t *still = NULL;
    size_t n = WebPEncodeLosslessRGB(rgb, W, H, W * 3, &still);
    CHECK(n > 12 && !memcmp(still + 12, "VP8L", 4), "libwebp encodes a VP8L still image");
    if (n <= 12) return;
    size_t cap = 64 + 2 * (n + 32);
    uint8_t *buf = malloc(cap);
    Image im, ref;
    char err[256] = "";
    CHECK(image_load_mem(still, n, 0, &ref, err, sizeof err) == 0, "the still WebP decodes: %s", err);
    size_t len = webp_anim(buf, still + 12, n - 12, 1, W, H, 0, 0, W, H);
    write_bytes(tpath("anim1.webp"), buf, len);
    int rc = image_load(tpath("anim1.webp"), 0, &im, err, sizeof err);
    CHECK(rc == 0 && im.w == W && im.h == H && im.c == 3, "a one-frame animated WebP decodes: %s", err);
    CHECK(rc == 0 && !memcmp(im.px, ref.px, sizeof(float) * W * H * 3), "... to the pixels of its still WebP");
    if (rc == 0) image_free(&im);
    int pw = 0, ph = 0, pc = 0;
    CHECK(image_probe(tpath("anim1.webp"), 0, &pw, &ph, &pc, err, sizeof err) == 0 && pw == W && ph == H && pc == 3,
          "... and probes as %dx%dx%d: %s", pw, ph, pc, err);
    len = webp_anim(buf, still + 12, n - 12, 1, CW, CH, X, Y, W, H);
    rc = image_load_mem(buf, len, 0, &im, err, sizeof err);
    CHECK(rc == 0 && im.w == CW && im.h == CH, "a one-frame animation on a larger canvas: %s", err);
    int placed = rc == 0;
    for (int y = 0; placed && y < CH; y++)
        for (int x = 0; x < CW; x++)
            for (int c = 0; c < 3; c++) {
                int in = x >= X && x < X + W && y >= Y && y < Y + H;
                float want = in ? ref.px[((y - Y) * W + (x - X)) * 3 + c] : 0.0f;
                placed &= im.px[(y * CW + x) * 3 + c] == want;
            }
    CHECK(placed, "... the frame at its place, 0 around it");
    if (rc == 0) image_free(&im);
    CHECK(image_load_mem(buf, len - 7, 0, &im, err, sizeof err) == -1 && strstr(err, "WebP data"),
          "a one-frame animation cut short is refused: %s", err);
    len = webp_anim(buf, still + 12, n - 12, 2, W, H, 0, 0, W, H);
    write_bytes(tpath("anim2.webp"), buf, len);
    CHECK(image_load(tpath("anim2.webp"), 0, &im, err, sizeof err) == -1 &&
          !strcmp(err, "animated WebP of more than one frame is not supported"), "two frames: %s", err);
    CHECK(image_probe(tpath("anim2.webp"), 0, &pw, &ph, &pc, err, sizeof err) == -1 &&
          !strcmp(err, "animated WebP of more than one frame is not supported"), "two frames, probed: %s", err);
    image_free(&ref);
    free(buf);
    WebPFree(still);
}

static void test_webp_probe_reduced(void) {
    enum { W = 20, H = 12 };
    uint8_t rgb[W * H * 3];
    for (int i = 0; i < W * H * 3; i++) rgb[i] = (uint8_t)(i * 7 % 256);
    uint8_t *out = NULL;
    size_t n = WebPEncodeLosslessRGB(rgb, W, H, W * 3, &out);
    CHECK(n > 0, "libwebp encodes");
    write_bytes(tpath("x.webp"), out, n);
    Image im;
    char err[256] = "";
    int rc = image_load(tpath("x.webp"), 0, &im, err, sizeof err);
    CHECK(rc == 0 && im.w == W && im.h == H && im.c == 3, "lossless WebP: %s", err);
    int exact = rc == 0;
    for (int i = 0; rc == 0 && i < W * H * 3; i++) exact &= im.px[i] == rgb[i] / 255.0f;
    CHECK(exact, "lossless WebP decodes exactly");
    if (rc == 0) image_free(&im);
    int pw, ph, pc;
    CHECK(image_probe(tpath("x.webp"), 0, &pw, &ph, &pc, err, sizeof err) == 0 && pw == W && ph == H && pc == 3,
          "WebP probe: %s", err);
    CHECK(image_load(tpath("x.webp"), 100, &im, err, sizeof err) == -1 && strstr(err, "exceeds --max-pixels 100"),
          "WebP pixel limit: %s", err);
    write_bytes(tpath("cut.webp"), out, n / 2);
    CHECK(image_load(tpath("cut.webp"), 0, &im, err, sizeof err) == -1 && strstr(err, "WebP data"),
          "truncated WebP refused: %s", err);
    write_bytes(tpath("head.webp"), out, 20);
    CHECK(image_load(tpath("head.webp"), 0, &im, err, sizeof err) == -1 && strstr(err, "truncated WebP data"),
          "WebP cut in the header: %s", err);
    WebPFree(out);

    // PNG probe; a PNG whose pixels are cut probes fine (the header is intact) and fails to load.
    png_write(tpath("p.png"), rgb, W, H, 3, NULL, err, sizeof err);
    size_t len;
    uint8_t *png = read_bytes(tpath("p.png"), &len);
    write_bytes(tpath("pcut.png"), png, 60);
    free(png);
    CHECK(image_probe(tpath("p.png"), 0, &pw, &ph, &pc, err, sizeof err) == 0 && pw == W && ph == H && pc == 3,
          "PNG probe: %s", err);
    CHECK(image_probe(tpath("pcut.png"), 0, &pw, &ph, &pc, err, sizeof err) == 0 && pw == W,
          "cut PNG probes: %s", err);
    CHECK(image_load(tpath("pcut.png"), 0, &im, err, sizeof err) == -1, "cut PNG fails to load");
    CHECK(image_probe(tpath("p.png"), 100, &pw, &ph, &pc, err, sizeof err) == -1 && strstr(err, "exceeds"),
          "probe checks the pixel limit");

    // Reduced decode: 32x16 with shorter side >= 5 -> scale 3/8 -> ceil(32*3/8) x ceil(16*3/8) = 12x6;
    // >= 16 (or 0) -> full size; the orientation still applies.
    unsigned long jl;
    uint8_t *j = make_oriented_jpeg(6, 32, 16, &jl);
    write_bytes(tpath("r.jpg"), j, jl);
    free(j);
    rc = image_load_reduced(tpath("r.jpg"), 0, 5, &im, err, sizeof err);
    CHECK(rc == 0 && im.w == 6 && im.h == 12, "reduced 3/8 and rotated: %dx%d %s", im.w, im.h, err);
    if (rc == 0) { CHECK(colour_at(&im, 0, 0) == 2, "reduced keeps the orientation"); image_free(&im); }
    rc = image_load_reduced(tpath("r.jpg"), 0, 16, &im, err, sizeof err);
    CHECK(rc == 0 && im.w == 16 && im.h == 32, "no reduction below the asked side: %dx%d", im.w, im.h);
    if (rc == 0) image_free(&im);
}

// ---------------------------------------------------------------------------------------------
// Geometry

// The first whole 2 MB page inside [p, p + bytes) is advised MADV_HUGEPAGE (VmFlags " hg").
static int huge_advised(const void *p, size_t bytes, char *flags, size_t len) {
    const uintptr_t huge = (uintptr_t)2 << 20, lo = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    flags[0] = 0;
    if (lo + huge > (uintptr_t)p + bytes) return 0;
    check_vm_flags_at(lo, flags, len);
    return strstr(flags, " hg") != NULL;
}

// A big image's decoded pixels lie on memory advised to be huge pages (docs/data.md, "Big photos on huge
// pages"): 1024 x 1024 RGB (12 MB of floats) from PNG and WebP (lossless: every pixel checked), from JPEG,
// and after an EXIF rotation (image_orient's buffer).
static void test_big_pixels_huge_pages(void) {
    enum { W = 1024, H = 1024 };
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!thp) { printf("  (this kernel has no transparent huge pages: big-image advice checks skipped)\n"); return; }
    fclose(thp);
    // Every block of 1 MB or more a fresh mapping of its own, freed back to the kernel (a fixed threshold
    // ends glibc's raising it as big blocks are freed): a buffer the code under test left on small pages
    // cannot sit in memory that an earlier, advised buffer left behind.
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    uint8_t *rgb = malloc((size_t)W * H * 3);
    uint16_t *samples = malloc(sizeof(uint16_t) * W * H * 3);
    for (size_t i = 0; i < (size_t)W * H * 3; i++) samples[i] = rgb[i] = (uint8_t)(i * 13 % 251 + (i / 3 / W) % 5);
    PngSpec spec = {W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, samples, NULL, 0, NULL, 0, NULL};
    write_png_spec(tpath("big.png"), &spec);
    uint8_t *webp = NULL;
    size_t wn = WebPEncodeLosslessRGB(rgb, W, H, W * 3, &webp);
    write_bytes(tpath("big.webp"), webp, wn);
    WebPFree(webp);
    static const uint8_t grey[3] = {90, 90, 90};
    unsigned long jn;
    uint8_t *j = make_jpeg(J_RGB, W, H, grey, &jn);
    write_bytes(tpath("big.jpg"), j, jn);
    free(j);
    j = make_oriented_jpeg(6, W, H / 2, &jn);
    write_bytes(tpath("big-rotated.jpg"), j, jn);
    free(j);
    static const char *names[] = {"big.png", "big.webp", "big.jpg", "big-rotated.jpg"};
    for (int k = 0; k < 4; k++) {
        Image im;
        char err[256] = "", flags[512];
        int rc = image_load(tpath(names[k]), 0, &im, err, sizeof err);
        int rotated = k == 3;
        CHECK(rc == 0 && im.w == (rotated ? H / 2 : W) && im.h == (rotated ? W : H) && im.c == 3, "%s: %dx%dx%d %s",
              names[k], rc ? 0 : im.w, rc ? 0 : im.h, rc ? 0 : im.c, err);
        if (rc) continue;
        size_t n = (size_t)im.w * im.h * 3;
        CHECK(huge_advised(im.px, n * sizeof(float), flags, sizeof flags), "%s: pixels advised (VmFlags:%s)", names[k],
              flags);
        if (k < 2) {
            size_t bad = 0;
            for (size_t i = 0; i < n; i++) bad += im.px[i] != (float)rgb[i] / 255.0f;
            CHECK(bad == 0, "%s: %zu of %zu samples differ from the encoded ones", names[k], bad, n);
        } else if (k == 2) {
            CHECK(fabsf(im.px[0] - 90 / 255.0f) < 3 / 255.0f && fabsf(im.px[n - 1] - 90 / 255.0f) < 3 / 255.0f,
                  "big.jpg: flat grey (%g, %g)", im.px[0], im.px[n - 1]);
        } else {
            CHECK(colour_at(&im, 1, 1) == 2 && colour_at(&im, im.w - 2, im.h - 2) == 1, "big-rotated.jpg: rotated");
        }
        image_free(&im);
    }
    free(rgb);
    free(samples);
}

// image_load_working gives image_load + image_fit's bits: a still WebP and PNGs of every layout through
// the row-by-row path (odd sizes, landscape, portrait, square, T one under the shorter side); an image
// not larger than T on both sides unchanged.
static void test_working_image(void) {
    static const int sizes[][3] = {{301, 177, 50}, {177, 301, 64}, {260, 260, 130}, {97, 401, 96}, {33, 20, 7},
                                   {200, 90, 90}, {200, 90, 150}};
    for (int k = 0; k < (int)(sizeof sizes / sizeof sizes[0]); k++) {
        int W = sizes[k][0], H = sizes[k][1], T = sizes[k][2];
        uint8_t *rgb = malloc((size_t)W * H * 3);
        uint16_t *samples = malloc(sizeof(uint16_t) * W * H * 3);
        for (size_t i = 0; i < (size_t)W * H * 3; i++) samples[i] = rgb[i] = (uint8_t)((i * 37 + i / 3 / W * 11) % 256);
        uint8_t *webp = NULL;
        size_t wn = WebPEncodeLosslessRGB(rgb, W, H, W * 3, &webp);
        write_bytes(tpath("work.webp"), webp, wn);
        WebPFree(webp);
        PngSpec spec = {W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, samples, NULL, 0, NULL, 0, NULL};
        write_png_spec(tpath("work.png"), &spec);
        // PNGs of every layout take the row path too: 16-bit (values past 8 bits), interlaced (rows
        // from the last pass), grey, and grey with alpha (dropped).
        uint16_t *deep = malloc(sizeof(uint16_t) * W * H * 3);
        for (size_t i = 0; i < (size_t)W * H * 3; i++) deep[i] = (uint16_t)(samples[i] * 257 + (i * 7919) % 257);
        PngSpec spec16 = {W, H, 16, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, deep, NULL, 0, NULL, 0, NULL};
        write_png_spec(tpath("work16.png"), &spec16);
        PngSpec speci = {W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7, samples, NULL, 0, NULL, 0, NULL};
        write_png_spec(tpath("worki.png"), &speci);
        PngSpec specg = {W, H, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, samples, NULL, 0, NULL, 0, NULL};
        write_png_spec(tpath("workg.png"), &specg);
        PngSpec specga = {W, H, 8, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_INTERLACE_NONE, samples, NULL, 0, NULL, 0, NULL};
        write_png_spec(tpath("workga.png"), &specga);
        static const char *names[] = {"work.webp", "work.png", "work16.png", "worki.png", "workg.png", "workga.png"};
        static const int chans[] = {3, 3, 3, 3, 1, 1};
        for (int f = 0; f < 6; f++) {
            Image a, b;
            char err[256] = "";
            int ra = image_load_working(tpath(names[f]), 0, T, &a, err, sizeof err);
            int rb = image_load(tpath(names[f]), 0, &b, err, sizeof err) || image_fit(&b, T);
            int fits = W > T && H > T, sw = fits ? (W <= H ? T : (int)((long)T * W / H)) : W,
                sh = fits ? (W <= H ? (int)((long)T * H / W) : T) : H;
            CHECK(ra == 0 && rb == 0 && a.w == sw && a.h == sh && b.w == sw && b.h == sh && a.c == chans[f] &&
                  b.c == chans[f],
                  "%s %dx%d at T %d: %dx%d and %dx%d, want %dx%d (%s)", names[f], W, H, T, ra ? 0 : a.w, ra ? 0 : a.h,
                  rb ? 0 : b.w, rb ? 0 : b.h, sw, sh, err);
            if (ra == 0 && rb == 0 && a.w == b.w && a.h == b.h)
                CHECK(!memcmp(a.px, b.px, sizeof(float) * (size_t)a.w * a.h * a.c), "%s %dx%d at T %d: the same bits",
                      names[f], W, H, T);
            if (ra == 0) image_free(&a);
            if (rb == 0) image_free(&b);
        }
        free(rgb);
        free(samples);
        free(deep);
    }
}

// An EXIF TIFF block (big-endian) whose IFD0 holds one entry, the orientation; its 26 bytes in t.
static void exif_tiff(uint8_t t[26], int orientation) {
    static const uint8_t head[] = {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1};
    memcpy(t, head, sizeof head);
    memset(t + 18, 0, 8);
    t[19] = (uint8_t)orientation;   // the SHORT value, then padding, then no next IFD
}

// A still WebP of the VP8L file simple (RIFF, WEBP, VP8L chunk) with an EXIF chunk holding the TIFF
// block t: RIFF, VP8X (the EXIF flag, the canvas w x h), the VP8L chunk, EXIF. Its length in dst.
static size_t webp_with_exif(uint8_t *dst, const uint8_t *simple, size_t slen, int w, int h, const uint8_t *t, size_t tn) {
    size_t n = 0;
    memcpy(dst, "RIFF\0\0\0\0WEBPVP8X", 16); n = 16;
    le32(dst + n, 10); dst[n + 4] = 0x08; memset(dst + n + 5, 0, 3); le24(dst + n + 8, (unsigned)w - 1);
    le24(dst + n + 11, (unsigned)h - 1); n += 14;
    memcpy(dst + n, simple + 12, slen - 12); n += slen - 12;
    memcpy(dst + n, "EXIF", 4); le32(dst + n + 4, (unsigned)tn); memcpy(dst + n + 8, t, tn); n += 8 + tn;
    if (tn & 1) dst[n++] = 0;
    le32(dst + 4, (unsigned)n - 8);
    return n;
}

// The same for photos turned by their EXIF orientation (2..8): a still WebP and PNGs (8-bit, 16-bit,
// interlaced) through the row path that reads the upright rows across the decoded samples, against
// image_load's upright floats (image_orient) and image_fit, on odd sizes either side of T.
static void test_working_image_turned(void) {
    static const int sizes[][3] = {{301, 177, 50}, {177, 301, 64}, {97, 401, 96}, {200, 90, 90}, {33, 20, 7}};
    for (int k = 0; k < (int)(sizeof sizes / sizeof sizes[0]); k++) {
        int W = sizes[k][0], H = sizes[k][1], T = sizes[k][2];
        uint8_t *rgb = malloc((size_t)W * H * 3);
        uint16_t *samples = malloc(sizeof(uint16_t) * W * H * 3), *deep = malloc(sizeof(uint16_t) * W * H * 3);
        for (size_t i = 0; i < (size_t)W * H * 3; i++) {
            samples[i] = rgb[i] = (uint8_t)((i * 37 + i / 3 / W * 11) % 256);
            deep[i] = (uint16_t)(samples[i] * 257 + (i * 7919) % 257);
        }
        uint8_t *simple = NULL;
        size_t sn = WebPEncodeLosslessRGB(rgb, W, H, W * 3, &simple);
        uint8_t *webp = malloc(sn + 64);
        for (int o = 2; o <= 8; o++) {
            uint8_t t[26];
            exif_tiff(t, o);
            write_bytes(tpath("turn.webp"), webp, webp_with_exif(webp, simple, sn, W, H, t, sizeof t));
            PngSpec spec = {W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, samples, NULL, 0, NULL, 0, NULL};
            write_png_exif(tpath("turn.png"), &spec, t, 26);
            PngSpec spec16 = {W, H, 16, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, deep, NULL, 0, NULL, 0, NULL};
            write_png_exif(tpath("turn16.png"), &spec16, t, 26);
            PngSpec speci = {W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7, samples, NULL, 0, NULL, 0, NULL};
            write_png_exif(tpath("turni.png"), &speci, t, 26);
            static const char *names[] = {"turn.webp", "turn.png", "turn16.png", "turni.png"};
            int uw = o >= 5 ? H : W, uh = o >= 5 ? W : H;
            int fits = W > T && H > T, sw = fits ? (uw <= uh ? T : (int)((long)T * uw / uh)) : uw,
                sh = fits ? (uw <= uh ? (int)((long)T * uh / uw) : T) : uh;
            for (int f = 0; f < 4; f++) {
                Image a, b;
                char err[256] = "";
                int ra = image_load_working(tpath(names[f]), 0, T, &a, err, sizeof err);
                int rb = image_load(tpath(names[f]), 0, &b, err, sizeof err) || image_fit(&b, T);
                CHECK(ra == 0 && rb == 0 && a.w == sw && a.h == sh && b.w == sw && b.h == sh && a.c == 3 && b.c == 3,
                      "%s %dx%d orientation %d at T %d: %dx%d and %dx%d, want %dx%d (%s)", names[f], W, H, o, T,
                      ra ? 0 : a.w, ra ? 0 : a.h, rb ? 0 : b.w, rb ? 0 : b.h, sw, sh, err);
                if (ra == 0 && rb == 0 && a.w == b.w && a.h == b.h)
                    CHECK(!memcmp(a.px, b.px, sizeof(float) * (size_t)a.w * a.h * a.c),
                          "%s %dx%d orientation %d at T %d: the same bits", names[f], W, H, o, T);
                if (ra == 0) image_free(&a);
                if (rb == 0) image_free(&b);
            }
        }
        WebPFree(simple);
        free(webp);
        free(rgb);
        free(samples);
        free(deep);
    }
}

static void test_resize(void) {
    // 4x4 -> 2x2 of a[y][x] = x + 10 y. PIL's bilinear with support 2 (shrink 2x): output 0 takes
    // inputs 0, 1, 2 with weights (0.75, 0.75, 0.25) / 1.75, output 1 inputs 1, 2, 3 with
    // (0.25, 0.75, 0.75) / 1.75; so axis values h0 = 1.25 / 1.75, h1 = 4 / 1.75.
    float a[16], o[4];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) a[y * 4 + x] = (float)(x + 10 * y);
    image_resize_bilinear(a, 4, 4, 1, o, 2, 2);
    double h[2] = {1.25 / 1.75, 4.0 / 1.75};
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 2; x++) CHECK_CLOSE(o[y * 2 + x], h[x] + 10 * h[y], 1e-5, 0, "4x4 -> 2x2");
    // A flat image stays flat whatever the sizes.
    float flat[6 * 5 * 3], fo[4 * 7 * 3];
    for (int i = 0; i < 6 * 5 * 3; i++) flat[i] = 0.25f + 0.25f * (i % 3);
    image_resize_bilinear(flat, 6, 5, 3, fo, 4, 7);
    for (int i = 0; i < 4 * 7 * 3; i++) CHECK_CLOSE(fo[i], 0.25f + 0.25f * (i % 3), 1e-6, 0, "flat stays flat");
    // Upsampling the ramp [0, 1] to 4 pixels: align_corners=False, edges clamped.
    float r[2] = {0, 1}, ro[4];
    image_resize_bilinear(r, 2, 1, 1, ro, 4, 1);
    float want[4] = {0, 0.25f, 0.75f, 1};
    for (int i = 0; i < 4; i++) CHECK_CLOSE(ro[i], want[i], 1e-6, 0, "2 -> 4 ramp");
    // 7x5 -> 3x2 of 0..34 (values of PIL's Image.resize(BILINEAR) in mode F, which torchvision's
    // antialias matches).
    float b[35], bo[6];
    for (int i = 0; i < 35; i++) b[i] = (float)i;
    image_resize_bilinear(b, 7, 5, 1, bo, 3, 2);
    float pil[6] = {7.857143f, 10.0f, 12.142858f, 21.857143f, 24.0f, 26.142857f};
    for (int i = 0; i < 6; i++) CHECK_CLOSE(bo[i], pil[i], 1e-4, 0, "7x5 -> 3x2 as PIL");
}

// Both filters against PIL's Image.resize in mode F (tests/fixtures/resize_pil.safetensors, written by
// tools/reference_resize.py): shrinking, enlarging, one axis each way, single rows and columns, a 7x
// shrink. The sums run in double as PIL's do, so only the last float rounding may differ.
static void test_resize_pil(void) {
    int cases, bad = 0, overshoot = 0;
    StFile *f = fixture_cases("resize_pil", 10, &cases);
    if (!f) return;
    const char *filters[] = {"bilinear", "bicubic"};
    for (int k = 0; k < cases; k++) {
        char name[32];
        int64_t ss[4], ds[4];
        snprintf(name, sizeof name, "%d.src", k);
        const float *src = fixture_image(f, name, ss);
        if (!src) continue;
        for (int fi = 0; fi < 2; fi++) {
            snprintf(name, sizeof name, "%d.%s", k, filters[fi]);
            const float *want = fixture_image(f, name, ds);
            CHECK(!want || ds[2] == ss[2], "resize fixture: %s has %d channels, its source %d", name, (int)ds[2], (int)ss[2]);
            if (!want || ds[2] != ss[2]) continue;
            int sw = (int)ss[1], sh = (int)ss[0], c = (int)ss[2], dw = (int)ds[1], dh = (int)ds[0];
            size_t n = (size_t)dw * dh * c;
            float *got = malloc(sizeof(float) * n), *bl = malloc(sizeof(float) * n);
            if (!got || !bl) { free(got); free(bl); CHECK(0, "out of memory"); continue; }
            int rc = image_resize(src, sw, sh, c, got, dw, dh, fi ? IMAGE_BICUBIC : IMAGE_BILINEAR);
            CHECK(rc == 0, "%s: resize %dx%d -> %dx%d", name, sw, sh, dw, dh);
            double worst = fixture_gap(got, want, n);
            for (size_t i = 0; fi && i < n; i++) overshoot += want[i] < 0 || want[i] > 1;
            if (worst > 2e-6 && bad++ < 5)
                fprintf(stderr, "  %s %dx%dx%d -> %dx%d: off PIL by %.3g\n", filters[fi], sw, sh, c, dw, dh, worst);
            if (!fi) {   // image_resize_bilinear is the bilinear filter, to the bit
                image_resize_bilinear(src, sw, sh, c, bl, dw, dh);
                CHECK(!memcmp(bl, got, sizeof(float) * n), "%s: image_resize_bilinear as image_resize", name);
            }
            free(got);
            free(bl);
        }
    }
    CHECK(bad == 0, "bilinear and bicubic resizes within 2e-6 of PIL's (%d off)", bad);
    // Bicubic rings: the fixture holds values outside [0, 1], so the test sees the negative lobes.
    CHECK(overshoot > 0, "bicubic resizes of the fixture overshoot [0, 1] (%d values)", overshoot);
    st_close(f);
}

// timm's evaluation transform (Resize(floor(size / crop_pct)), CenterCrop(size)) run by torchvision on
// mode-F images (tests/fixtures/view_timm.safetensors, tools/reference_resize.py) against
// image_eval_view with the same crop fraction and filter, to PIL's float rounding.
static void test_view_timm(void) {
    int cases, bad = 0, cropped = 0;
    StFile *f = fixture_cases("view_timm", 9, &cases);
    if (!f) return;
    const char *filters[] = {"bilinear", "bicubic"};
    for (int k = 0; k < cases; k++) {
        char name[32];
        int nd;
        int64_t ss[4], ds[4];
        snprintf(name, sizeof name, "v%d.src", k);
        const float *src = fixture_image(f, name, ss);
        snprintf(name, sizeof name, "v%d.size", k);
        const float *sz = st_get(f, name, &nd, ds);
        snprintf(name, sizeof name, "v%d.crop_pct", k);
        const float *pct = st_get(f, name, &nd, ds);
        CHECK(sz && pct, "view fixture: case %d without its size or crop fraction", k);
        if (!src || !sz || !pct) continue;
        int size = (int)sz[0];
        double crop_pct = augment_fraction(pct[0]);   // the decimal the script wrote (0.9, not 0.899999976)
        cropped += crop_pct < 1.0;
        Image im = {(int)ss[1], (int)ss[0], (int)ss[2], (float *)src};
        for (int fi = 0; fi < 2; fi++) {
            snprintf(name, sizeof name, "v%d.%s", k, filters[fi]);
            const float *want = fixture_image(f, name, ds);
            CHECK(!want || (ds[0] == size && ds[1] == size && ds[2] == im.c), "view fixture: %s [size, size, c]", name);
            if (!want || ds[0] != size || ds[1] != size || ds[2] != im.c) continue;
            size_t n = (size_t)size * size * im.c;
            float *got = malloc(sizeof(float) * n);
            if (!got) { CHECK(0, "out of memory"); continue; }
            int rc = image_eval_view(&im, size, (ViewSpec){crop_pct, fi ? IMAGE_BICUBIC : IMAGE_BILINEAR}, im.c, got);
            CHECK(rc == 0, "%s: view", name);
            double worst = rc == 0 ? fixture_gap(got, want, n) : 0;
            if ((rc || worst > 2e-6) && bad++ < 5)
                fprintf(stderr, "  %s %dx%dx%d -> %d at crop %g: off timm's view by %.3g\n", filters[fi], im.w, im.h, im.c,
                        size, crop_pct, worst);
            free(got);
        }
    }
    CHECK(bad == 0, "evaluation views within 2e-6 of timm's transform (%d off)", bad);
    CHECK(cropped >= 8, "view fixture: %d cases with a crop fraction below 1", cropped);
    st_close(f);
    // The box the view shows: the centre crop_pct of the shorter side (a 100 x 100 image at 56 and 0.875:
    // resized to 64, 4 pixels cut from each side, 6.25 source pixels).
    double box[4];
    image_eval_box(100, 100, 56, 0.875, box);
    CHECK_CLOSE(box[0], 6.25, 1e-12, 0, "box x at crop 0.875");
    CHECK_CLOSE(box[1], 6.25, 1e-12, 0, "box y at crop 0.875");
    CHECK_CLOSE(box[2], 87.5, 1e-12, 0, "box width at crop 0.875");
    CHECK_CLOSE(box[3], 87.5, 1e-12, 0, "box height at crop 0.875");
    // timm's scale_size: floor(size / crop_pct)
    CHECK(image_view_scale(224, 0.875) == 256 && image_view_scale(224, augment_fraction(0.9f)) == 248 &&
          image_view_scale(224, 1.0) == 224 && image_view_scale(7, 0.5) == 14, "image_view_scale as timm's floor(size / crop_pct)");
}

static void test_views(void) {
    // Already size x size: pixel for pixel.
    float px[3 * 3 * 3];
    for (int i = 0; i < 27; i++) px[i] = (float)i / 27.0f;
    Image im = {3, 3, 3, px};
    float out[27];
    image_eval_view(&im, 3, VIEW_WHOLE, 3, out);
    CHECK(!memcmp(out, px, sizeof px), "size x size image used as is");
    // RGB -> grey and grey -> RGB.
    float grey[9];
    image_eval_view(&im, 3, VIEW_WHOLE, 1, grey);
    CHECK_CLOSE(grey[4], 0.299f * px[12] + 0.587f * px[13] + 0.114f * px[14], 1e-7, 0, "RGB -> L");
    Image gim = {3, 3, 1, grey};
    float rgb[27];
    image_eval_view(&gim, 3, VIEW_WHOLE, 3, rgb);
    CHECK(rgb[15] == grey[5] && rgb[16] == grey[5] && rgb[17] == grey[5], "grey -> RGB replicates");

    // 10x4 -> size 2: shorter side 4 -> 2, longer 10 -> int(2 * 10 / 4) = 5; left = round(1.5) = 2.
    float w10[40];
    for (int i = 0; i < 40; i++) w10[i] = (float)(i % 10) + 0.01f * (float)(i / 10);
    Image wide = {10, 4, 1, w10};
    float resized[10], view[4];
    image_resize_bilinear(w10, 10, 4, 1, resized, 5, 2);
    image_eval_view(&wide, 2, VIEW_WHOLE, 1, view);
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 2; x++) CHECK(view[y * 2 + x] == resized[y * 5 + 2 + x], "crop left = 2 (%d,%d)", x, y);
    // 6x4 -> size 2: longer 3, left = round(0.5) = 0 (half to even, as Python's round).
    Image six = {6, 4, 1, w10};
    image_resize_bilinear(w10, 6, 4, 1, resized, 3, 2);
    image_eval_view(&six, 2, VIEW_WHOLE, 1, view);
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 2; x++) CHECK(view[y * 2 + x] == resized[y * 3 + x], "crop left = 0 (%d,%d)", x, y);
    // Tall 4x9 -> size 4: no resize (short side already 4); top = round(2.5) = 2.
    float tall[36];
    for (int i = 0; i < 36; i++) tall[i] = (float)i;
    Image t = {4, 9, 1, tall};
    float tv[16];
    image_eval_view(&t, 4, VIEW_WHOLE, 1, tv);
    for (int i = 0; i < 16; i++) CHECK(tv[i] == tall[8 + i], "tall crop top = 2 (%d)", i);

    // Flip.
    float f[2 * 3 * 2] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    image_flip_h(f, 3, 2, 2);
    float fw[12] = {5, 6, 3, 4, 1, 2, 11, 12, 9, 10, 7, 8};
    CHECK(!memcmp(f, fw, sizeof f), "flip_h");
}

static void test_random_resized_crop(void) {
    Rng r;
    rng_seed(&r, 7);
    // MAE's pretraining crop (area 0.2 to 1, main_pretrain.py's RandomResizedCrop: train's and the
    // default) and timm's fine-tuning crop (0.08 to 1: finetune --crop-scale)
    CHECK(AUGMENT_CROP_LO == 0.2, "the default crop's smallest area is %g, not MAE's 0.2", AUGMENT_CROP_LO);
    const double scales[] = {0.2, 0.08};
    for (int si = 0; si < 2; si++) {
        double lo = scales[si];
        int ok = 1, scale_ok = 1, ratio_ok = 1, full_w = 0, full_h = 0;
        double min_area = 1, max_area = 0;
        for (int i = 0; i < 2000; i++) {
            // Aspect within [1/2, 2]: even the fallback crop keeps area and ratio in range.
            int W = 100 + (int)rng_below(&r, 101), H = 100 + (int)rng_below(&r, 101), x, y, w, h;
            image_rrc_params(W, H, lo, &r, &x, &y, &w, &h);
            ok &= x >= 0 && y >= 0 && w >= 1 && h >= 1 && x + w <= W && y + h <= H;
            double area = (double)w * h / ((double)W * H);
            scale_ok &= area >= lo * 0.85 && area <= 1.0;
            min_area = fmin(min_area, area);
            max_area = fmax(max_area, area);
            full_w += w == W;
            full_h += h == H;
            double ratio = (double)w / h;
            ratio_ok &= ratio >= 0.75 * 0.85 && ratio <= 4.0 / 3.0 / 0.85;
        }
        CHECK(ok, "crop boxes stay inside the image (area from %g)", lo);
        CHECK(scale_ok, "crop area within [%g, 1] of the image (rounding aside)", lo);
        CHECK(ratio_ok, "crop aspect within [3/4, 4/3] (rounding aside; area from %g)", lo);
        // The whole range is reachable: areas near both ends, boxes as wide or as tall as the image
        // (torchvision accepts w <= width, h <= height).
        CHECK(min_area < lo * 1.1 && max_area > 0.95, "crop areas from %g span [%.3f, %.3f]", lo, min_area, max_area);
        CHECK(full_w > 0 && full_h > 0, "full-width (%d) and full-height (%d) crops occur (area from %g)", full_w, full_h, lo);
    }
    // A 100x1 strip: every attempt fails, so the fallback centre crop with ratio clamped to 4/3.
    int x, y, w, h;
    image_rrc_params(100, 1, AUGMENT_CROP_LO, &r, &x, &y, &w, &h);
    CHECK(x == 49 && y == 0 && w == 1 && h == 1, "fallback crop: %d,%d %dx%d", x, y, w, h);
    // Same seed, same output; different seed, different output.
    float src[32 * 24 * 3];
    for (int i = 0; i < 32 * 24 * 3; i++) src[i] = (float)((i * 7919) % 256) / 255.0f;
    Image im = {32, 24, 3, src};
    float o1[16 * 16 * 3], o2[16 * 16 * 3], o3[16 * 16 * 3];
    Rng a, b, c;
    rng_seed(&a, 3); rng_seed(&b, 3); rng_seed(&c, 4);
    image_random_resized_crop(&im, 16, 3, AUGMENT_CROP_LO, IMAGE_BILINEAR, &a, o1);
    image_random_resized_crop(&im, 16, 3, AUGMENT_CROP_LO, IMAGE_BILINEAR, &b, o2);
    image_random_resized_crop(&im, 16, 3, AUGMENT_CROP_LO, IMAGE_BILINEAR, &c, o3);
    CHECK(!memcmp(o1, o2, sizeof o1), "random resized crop reproducible by seed");
    CHECK(memcmp(o1, o3, sizeof o1) != 0, "another seed gives another crop");
    int in_range = 1;
    for (int i = 0; i < 16 * 16 * 3; i++) in_range &= o1[i] >= 0 && o1[i] <= 1;
    CHECK(in_range, "crop values stay in [0, 1]");
    // Bicubic: the same box (the same draws), then the box resized bicubic; the bilinear crop of the same
    // draws differs.
    float cub[16 * 16 * 3], box[32 * 24 * 3], want[16 * 16 * 3];
    int bx, by, bw, bh;
    rng_seed(&a, 3);
    image_random_resized_crop(&im, 16, 3, AUGMENT_CROP_LO, IMAGE_BICUBIC, &a, cub);
    rng_seed(&b, 3);
    image_rrc_params(32, 24, AUGMENT_CROP_LO, &b, &bx, &by, &bw, &bh);
    image_crop(&im, bx, by, bw, bh, box);
    image_resize(box, bw, bh, 3, want, 16, 16, IMAGE_BICUBIC);
    CHECK(!memcmp(cub, want, sizeof cub), "bicubic crop: the box of the same draws, resized bicubic");
    CHECK(memcmp(cub, o1, sizeof cub) != 0, "bicubic and bilinear crops of the same box differ");
    CHECK(!memcmp(&a, &b, sizeof a), "the bicubic crop draws as the bilinear one");
}

// ---------------------------------------------------------------------------------------------
// Bad input

static void expect_fail(const char *path, const char *reason_part, const char *what) {
    Image im;
    char err[256] = "";
    int rc = image_load(path, 0, &im, err, sizeof err);
    CHECK(rc == -1, "%s: should fail", what);
    CHECK(im.px == NULL, "%s: no pixels on failure", what);
    CHECK(strstr(err, reason_part) != NULL, "%s: reason '%s' lacks '%s'", what, err, reason_part);
    if (rc == 0) image_free(&im);
}

static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v; }

static void test_bad_input(void) {
    write_bytes(tpath("empty.png"), "", 0);
    expect_fail(tpath("empty.png"), "empty file", "zero-byte file");

    // A 24x24 noisy RGB PNG (so IDAT is large), truncated at several offsets.
    uint8_t px[24 * 24 * 3];
    for (int i = 0; i < 24 * 24 * 3; i++) px[i] = (uint8_t)((i * 2654435761u) >> 13);
    char err[256];
    png_write(tpath("good.png"), px, 24, 24, 3, NULL, err, sizeof err);
    size_t n;
    uint8_t *png = read_bytes(tpath("good.png"), &n);
    size_t cuts[] = {4, 8, 20, 33, 50, n / 2, n - 13};   // n - 13: the last IDAT's CRC cut short
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "PNG truncated at %zu of %zu", cuts[i], n);
        write_bytes(tpath("cut.png"), png, cuts[i]);
        expect_fail(tpath("cut.png"), "truncated PNG data", what);
    }
    // A flipped byte in IDAT's data: CRC error (never silently wrong pixels).
    uint8_t *idat = memmem(png, n, "IDAT", 4);
    CHECK(idat != NULL, "IDAT found");
    if (idat) {
        idat[20] ^= 0x40;
        write_bytes(tpath("flipped.png"), png, n);
        expect_fail(tpath("flipped.png"), "IDAT", "flipped byte in IDAT");
        idat[20] ^= 0x40;
    }
    // What follows the image data damaged or missing, as PIL reads it (docs/data.md, "Files"): no IEND
    // (the file cut after the image data, or in IEND), IEND's CRC wrong, another type in its place,
    // bytes that are no chunk: the same pixels as the whole file (it was "truncated PNG data" or "IEND:
    // CRC error"). The image data's own CRCs are still checked (the cut at n - 13 and the flipped byte).
    Image im, ref;
    CHECK(image_load(tpath("good.png"), 0, &ref, err, sizeof err) == 0, "good.png loads: %s", err);
    CHECK(n > 12 && !memcmp(png + n - 8, "IEND", 4), "good.png ends with IEND");
    static const struct { const char *what; size_t keep; size_t at; uint8_t flip; const char *put; } tails[] = {
        {"cut before IEND", 12, 0, 0, NULL},
        {"cut in IEND's CRC", 1, 0, 0, NULL},
        {"IEND's CRC wrong", 0, 1, 0x01, NULL},
        {"IENX in IEND's place", 0, 8, 0, "IENX"},
        {"bytes that are no chunk", 0, 12, 0, "junk after the pixels"},
    };
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        uint8_t *v = malloc(n + 32);
        size_t vn = n - tails[i].keep;
        memcpy(v, png, n);
        if (tails[i].flip) v[n - tails[i].at] ^= tails[i].flip;
        if (tails[i].put) {
            size_t k = strlen(tails[i].put);
            memcpy(v + n - tails[i].at, tails[i].put, k);
            vn = n - tails[i].at + k;
        }
        write_bytes(tpath("tail.png"), v, vn);
        int rc = image_load(tpath("tail.png"), 0, &im, err, sizeof err);
        CHECK(rc == 0, "PNG with %s loads as PIL loads it: %s", tails[i].what, rc ? err : "");
        if (rc == 0) {
            CHECK(im.w == ref.w && im.h == ref.h && im.c == ref.c &&
                  !memcmp(im.px, ref.px, (size_t)ref.w * ref.h * ref.c * sizeof(float)),
                  "PNG with %s: the whole file's pixels", tails[i].what);
            image_free(&im);
        }
        free(v);
    }
    image_free(&ref);
    // The same memory decoder: a good PNG loads from memory too.
    CHECK(image_load_mem(png, n, 0, &im, err, sizeof err) == 0 && im.w == 24 && im.c == 3, "image_load_mem");
    image_free(&im);
    // --max-pixels from the header of a real file: 576 pixels against a limit of 575.
    CHECK(image_load_mem(png, n, 575, &im, err, sizeof err) == -1 && strstr(err, "exceeds --max-pixels 575"),
          "pixel limit on a real PNG: %s", err);
    CHECK(image_load_mem(png, n, 576, &im, err, sizeof err) == 0, "limit equal to the pixel count passes");
    image_free(&im);
    free(png);

    // A PNG whose header declares 100000 x 100000 and has no pixel data: refused from the header
    // (the reason names the limit; a decoder that allocated first would need 120 GB).
    uint8_t huge[8 + 25 + 12 + 12];
    memcpy(huge, "\x89PNG\r\n\x1a\n", 8);
    put32(huge + 8, 13);
    memcpy(huge + 12, "IHDR", 4);
    put32(huge + 16, 100000);
    put32(huge + 20, 100000);
    huge[24] = 8; huge[25] = 2; huge[26] = 0; huge[27] = 0; huge[28] = 0;
    put32(huge + 29, (uint32_t)crc32(0, huge + 12, 17));
    put32(huge + 33, 0);
    memcpy(huge + 37, "IDAT", 4);
    put32(huge + 41, (uint32_t)crc32(0, (const uint8_t *)"IDAT", 4));
    put32(huge + 45, 0);
    memcpy(huge + 49, "IEND", 4);
    put32(huge + 53, (uint32_t)crc32(0, (const uint8_t *)"IEND", 4));
    write_bytes(tpath("huge.png"), huge, sizeof huge);
    expect_fail(tpath("huge.png"), "image 100000x100000 exceeds --max-pixels 67108864", "100000 x 100000 PNG");

    // JPEG truncations, and the JPEG pixel limit.
    size_t jn = jpeg_sample_len;
    size_t jcuts[] = {2, 30, 200, jn / 2, jn - 2};
    for (size_t i = 0; jpeg_sample && i < sizeof jcuts / sizeof jcuts[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "JPEG truncated at %zu of %zu", jcuts[i], jn);
        write_bytes(tpath("cut.jpg"), jpeg_sample, jcuts[i]);
        expect_fail(tpath("cut.jpg"), "truncated JPEG data", what);
    }
    if (jpeg_sample) {
        CHECK(image_load_mem(jpeg_sample, jn, 255, &im, err, sizeof err) == -1 && strstr(err, "exceeds --max-pixels 255"),
              "JPEG pixel limit: %s", err);
        // A corrupt byte in the entropy-coded data is refused, not decoded to garbage.
        uint8_t *bad = malloc(jn);
        memcpy(bad, jpeg_sample, jn);
        // A restart marker where none belongs, inside the entropy-coded data after the SOS header:
        // libjpeg only warns ("Corrupt JPEG data: ..."), which must be an error for us.
        uint8_t *sos = memmem(bad, jn, "\xff\xda", 2);
        size_t at = sos ? (size_t)(sos - bad) + 2 + (size_t)(sos[2] << 8 | sos[3]) + 1 : jn - 12;
        memcpy(bad + at, "\xff\xd3", 2);
        write_bytes(tpath("corrupt.jpg"), bad, jn);
        CHECK(image_load(tpath("corrupt.jpg"), 0, &im, err, sizeof err) == -1 && strstr(err, "Corrupt JPEG data"), "corrupt JPEG data refused (%s)", err);
        free(bad);
    }

    // Not images at all.
    uint8_t noise[1000];
    for (int i = 0; i < 1000; i++) noise[i] = (uint8_t)((i * 48271u) >> 3);
    write_bytes(tpath("noise.png"), noise, sizeof noise);
    expect_fail(tpath("noise.png"), "not a PNG, JPEG or WebP file", "random bytes named .png");
    write_bytes(tpath("text.jpg"), "hello, this is text\n", 20);
    expect_fail(tpath("text.jpg"), "not a PNG, JPEG or WebP file", "text named .jpg");

    // Files that are not regular files, or cannot be read.
    mkdir(tpath("dir.png"), 0777);
    expect_fail(tpath("dir.png"), "is a directory", "directory named x.png");
    symlink("loop2.png", tpath("loop1.png"));
    symlink("loop1.png", tpath("loop2.png"));
    // The system's reasons as strerror gives them, as every other file's (docs/interface.md, section 2).
    expect_fail(tpath("loop1.png"), "Too many levels of symbolic links", "symlink loop");
    expect_fail(tpath("missing.png"), "No such file or directory", "missing file");
    mkfifo(tpath("fifo.png"), 0666);
    expect_fail(tpath("fifo.png"), "not a regular file", "FIFO named x.png (must not hang)");
    // A socket's open(2) fails with ENXIO, which strerror calls "No such device or address": the same
    // words as the FIFO's (docs/interface.md, section 1).
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    snprintf(sun.sun_path, sizeof sun.sun_path, "%s", tpath("sock.png"));
    CHECK(sock >= 0 && strlen(tpath("sock.png")) < sizeof sun.sun_path &&
          bind(sock, (struct sockaddr *)&sun, sizeof sun) == 0, "a socket named sock.png");
    expect_fail(tpath("sock.png"), "not a regular file", "socket named x.png");
    if (sock >= 0) close(sock);
    write_bytes(tpath("locked.png"), "\x89PNG", 4);
    chmod(tpath("locked.png"), 0);
    int fd = open(tpath("locked.png"), O_RDONLY);
    if (fd >= 0) {
        close(fd);
        // Root reads a chmod 000 file: a child takes the user nobody's ids, in a folder of ours it may
        // search, beside a readable PNG that it must decode (so the refusal is the mode's, not the folder's).
        mkdir(tpath("locked"), 0755);
        chmod(tpath("locked"), 0755);   // whatever the umask
        png_write(tpath("locked/open.png"), px, 24, 24, 3, NULL, err, sizeof err);
        chmod(tpath("locked/open.png"), 0644);   // readable by nobody under umask 077 too (0600 then)
        write_bytes(tpath("locked/locked.png"), "\x89PNG", 4);
        chmod(tpath("locked/locked.png"), 0);
        fflush(stdout); fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
            Image lim = {0};
            char lerr[256] = "";
            if (chdir(tpath("locked")) || setgroups(0, NULL) || setgid(65534) || setuid(65534)) _exit(3);
            if (image_load("open.png", 0, &lim, lerr, sizeof lerr) || lim.w != 24) _exit(2);
            image_free(&lim);
            _exit(image_load("locked.png", 0, &lim, lerr, sizeof lerr) == -1 && strstr(lerr, "Permission denied") ? 0 : 1);
        }
        int status = -1;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork for the unreadable-file check");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "chmod 000 file read as the user nobody: 'Permission denied' (child status %d: 1 not refused so, "
              "2 the readable PNG not decoded, 3 ids not taken)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    } else {
        expect_fail(tpath("locked.png"), "Permission denied", "chmod 000 file");
    }
    // A file name that is not UTF-8 decodes like any other.
    char name[64];
    snprintf(name, sizeof name, "bad-\xff\xfe-name.png");
    png_write(tpath(name), px, 24, 24, 3, NULL, err, sizeof err);
    CHECK(image_load(tpath(name), 0, &im, err, sizeof err) == 0 && im.w == 24, "non-UTF-8 file name: %s", err);
    image_free(&im);
}

int main(void) {
    tmp = check_tmpdir();
    test_png_formats();
    test_png_write();
    test_jpeg();
    test_exif_orientation();
    test_webp_probe_reduced();
    test_webp_one_frame_animation();
    test_big_pixels_huge_pages();
    test_working_image();
    test_working_image_turned();
    test_resize();
    test_resize_pil();
    test_view_timm();
    test_views();
    test_random_resized_crop();
    test_bad_input();
    free(jpeg_sample);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return check_done();
}
