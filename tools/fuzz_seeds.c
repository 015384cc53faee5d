// Writes the fuzzers' seed corpora (tests/fuzz/corpus/<name>/): small PNGs of every colour type and
// bit depth (palette with tRNS, Adam7), JPEGs (baseline, progressive, grey, CMYK), tiny vitmae
// checkpoints (with and without train state, encoder-only, a NaN in the decoder) and argv sets.
// Deterministic output.
// The image seeds start with one byte (view size and channels), the mask seeds with two (patch and
// grid), as the fuzz targets read them.
// Usage: fuzz_seeds OUT_DIR   (OUT_DIR/image, OUT_DIR/ckpt, OUT_DIR/mask, OUT_DIR/cli)
#include <stdio.h>
#include <jpeglib.h>
#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/checkpoint.h"

static const char *out_dir;

static void save(const char *sub, const char *name, const uint8_t *prefix, size_t np, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", out_dir, sub);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/%s/%s", out_dir, sub, name);
    FILE *f = fopen(path, "wb");
    if (!f || (np && fwrite(prefix, 1, np, f) != np) || (n && fwrite(p, 1, n, f) != n) || fclose(f)) {
        perror(path);
        exit(1);
    }
}

typedef struct { uint8_t *p; size_t n, cap; } Buf;
static void buf_write(png_structp png, png_bytep d, size_t n) {
    Buf *b = png_get_io_ptr(png);
    if (b->n + n > b->cap) { b->cap = (b->n + n) * 2; b->p = realloc(b->p, b->cap); }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void buf_flush(png_structp png) { (void)png; }

// A w x h PNG of colour type ct and depth bd with a deterministic pattern.
static Buf make_png(int w, int h, int ct, int bd, int interlace, int trns) {
    Buf b = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) { fprintf(stderr, "png error\n"); exit(1); }
    png_set_write_fn(png, &b, buf_write, buf_flush);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, bd, ct,
                 interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (ct == PNG_COLOR_TYPE_PALETTE) {
        png_color pal[4] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {20, 40, 250}};
        png_set_PLTE(png, info, pal, 4);
        if (trns) { png_byte t[2] = {0, 128}; png_set_tRNS(png, info, t, 2, NULL); }
    }
    png_write_info(png, info);
    int ch = ct == PNG_COLOR_TYPE_GRAY || ct == PNG_COLOR_TYPE_PALETTE ? 1
           : ct == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : ct == PNG_COLOR_TYPE_RGB ? 3 : 4;
    size_t rowbytes = ((size_t)w * ch * bd + 7) / 8;
    png_bytep *rows = malloc(sizeof *rows * (size_t)h);
    uint8_t *px = calloc((size_t)h, rowbytes);
    for (int y = 0; y < h; y++) {
        rows[y] = px + (size_t)y * rowbytes;
        for (size_t i = 0; i < rowbytes; i++) rows[y][i] = (uint8_t)(37 * y + 11 * i + 5);
        if (ct == PNG_COLOR_TYPE_PALETTE && bd == 8)
            for (size_t i = 0; i < rowbytes; i++) rows[y][i] &= 3;
    }
    if (ct == PNG_COLOR_TYPE_PALETTE && bd == 4)
        for (size_t i = 0; i < (size_t)h * rowbytes; i++) px[i] &= 0x33;
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    free(px);
    return b;
}

static Buf make_jpeg(int w, int h, int comps, J_COLOR_SPACE in, J_COLOR_SPACE cs, int progressive) {
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr jerr;
    ci.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&ci);
    unsigned char *mem = NULL;
    unsigned long len = 0;
    jpeg_mem_dest(&ci, &mem, &len);
    ci.image_width = (JDIMENSION)w;
    ci.image_height = (JDIMENSION)h;
    ci.input_components = comps;
    ci.in_color_space = in;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, 75, TRUE);
    if (cs != in) jpeg_set_colorspace(&ci, cs);
    if (progressive) jpeg_simple_progression(&ci);
    jpeg_start_compress(&ci, TRUE);
    uint8_t *row = malloc((size_t)w * comps);
    for (int y = 0; y < h; y++) {
        for (int i = 0; i < w * comps; i++) row[i] = (uint8_t)(y * 29 + i * 7);
        JSAMPROW r = row;
        jpeg_write_scanlines(&ci, &r, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    free(row);
    Buf b = {mem, len, len};
    return b;
}

static void images(const char *sub, int with_prefix) {
    struct { const char *name; int w, h, ct, bd, il, trns; } p[] = {
        {"grey1.png", 5, 3, PNG_COLOR_TYPE_GRAY, 1, 0, 0},
        {"grey2.png", 3, 4, PNG_COLOR_TYPE_GRAY, 2, 0, 0},
        {"grey4.png", 4, 4, PNG_COLOR_TYPE_GRAY, 4, 0, 0},
        {"grey8.png", 6, 4, PNG_COLOR_TYPE_GRAY, 8, 0, 0},
        {"grey16.png", 3, 3, PNG_COLOR_TYPE_GRAY, 16, 0, 0},
        {"greyalpha8.png", 4, 5, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 0, 0},
        {"greyalpha16.png", 2, 2, PNG_COLOR_TYPE_GRAY_ALPHA, 16, 0, 0},
        {"rgb8.png", 5, 4, PNG_COLOR_TYPE_RGB, 8, 0, 0},
        {"rgb16.png", 3, 2, PNG_COLOR_TYPE_RGB, 16, 0, 0},
        {"rgba8.png", 4, 4, PNG_COLOR_TYPE_RGB_ALPHA, 8, 0, 0},
        {"rgba16.png", 2, 3, PNG_COLOR_TYPE_RGB_ALPHA, 16, 0, 0},
        {"palette8_trns.png", 4, 4, PNG_COLOR_TYPE_PALETTE, 8, 0, 1},
        {"palette4.png", 6, 2, PNG_COLOR_TYPE_PALETTE, 4, 0, 0},
        {"adam7_rgb8.png", 9, 9, PNG_COLOR_TYPE_RGB, 8, 1, 0},
        {"adam7_grey8.png", 16, 8, PNG_COLOR_TYPE_GRAY, 8, 1, 0},
    };
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        Buf b = make_png(p[i].w, p[i].h, p[i].ct, p[i].bd, p[i].il, p[i].trns);
        uint8_t pre[2] = {(uint8_t)(i * 7), (uint8_t)(i * 5 + 1)};
        save(sub, p[i].name, pre, (size_t)with_prefix, b.p, b.n);
        free(b.p);
    }
    struct { const char *name; int w, h, comps; J_COLOR_SPACE in, cs; int prog; } j[] = {
        {"baseline.jpg", 8, 8, 3, JCS_RGB, JCS_YCbCr, 0},
        {"progressive.jpg", 12, 9, 3, JCS_RGB, JCS_YCbCr, 1},
        {"grey.jpg", 9, 5, 1, JCS_GRAYSCALE, JCS_GRAYSCALE, 0},
        {"cmyk.jpg", 8, 4, 4, JCS_CMYK, JCS_CMYK, 0},
        {"wide.jpg", 17, 3, 3, JCS_RGB, JCS_YCbCr, 0},
    };
    for (size_t i = 0; i < sizeof j / sizeof j[0]; i++) {
        Buf b = make_jpeg(j[i].w, j[i].h, j[i].comps, j[i].in, j[i].cs, j[i].prog);
        uint8_t pre[2] = {(uint8_t)(i * 13 + 16), (uint8_t)(i * 3 + 2)};
        save(sub, j[i].name, pre, (size_t)with_prefix, b.p, b.n);
        free(b.p);
    }
}

static void checkpoints(void) {
    MaeConfig c;
    memset(&c, 0, sizeof c);
    c.img_size = 4; c.patch_size = 2; c.in_chans = 1;
    c.embed_dim = 4; c.depth = 1; c.num_heads = 1;
    c.dec_embed_dim = 4; c.dec_depth = 1; c.dec_num_heads = 1;
    c.mlp_ratio = 1; c.mask_ratio = 0.75f; c.pos_learned = 1; c.ln_eps = 1e-6f;
    c.pixel_mean[0] = 0.5f; c.pixel_std[0] = 0.25f;
    size_t np = mae_num_params(&c);
    float *p = malloc(np * sizeof *p), *m = malloc(np * sizeof *m), *v = malloc(np * sizeof *v);
    for (size_t i = 0; i < np; i++) { p[i] = (float)i / 64.0f; m[i] = 0.001f * (float)i; v[i] = 1e-6f; }
    char err[512], path[1024];
    snprintf(path, sizeof path, "%s/ckpt", out_dir);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/ckpt/infer.safetensors", out_dir);
    if (ckpt_save(path, &c, p, NULL, NULL, NULL, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    snprintf(path, sizeof path, "%s/ckpt/train.safetensors", out_dir);
    if (ckpt_save(path, &c, p, "{\"step\": 3, \"rng\": [1, 2]}", m, v, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    c.in_chans = 3; c.patch_size = 4; c.dec_depth = 0; c.mlp_ratio = 2;
    c.pixel_mean[1] = c.pixel_mean[2] = 0.4f; c.pixel_std[1] = c.pixel_std[2] = 0.3f;
    snprintf(path, sizeof path, "%s/ckpt/rgb_nodec.safetensors", out_dir);
    if (ckpt_save(path, &c, p, NULL, NULL, NULL, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    // A NaN in the decoder (written as a diverged run's file would be, had the writer not refused it):
    // every reader refuses it, ckpt_load_encoder too, which reads the decoder's tensors past
    // (tests/fuzz/fuzz_ckpt.c). The config of infer.safetensors, with a crc32.
    c.in_chans = 1; c.patch_size = 2; c.dec_depth = 1; c.mlp_ratio = 1;
    MaeTensor tab[64];
    StTensor sts[64];
    int nt = mae_param_table(&c, tab, 64);
    for (int i = 0; i < nt; i++) {
        memset(&sts[i], 0, sizeof sts[i]);
        sts[i].name = tab[i].name;
        sts[i].ndim = tab[i].ndim;
        for (int k = 0; k < tab[i].ndim; k++) sts[i].shape[k] = tab[i].shape[k];
        sts[i].data = p + tab[i].offset;
    }
    p[tab[nt - 1].offset] = NAN;   // decoder_pred.bias
    char *cfg_json = mae_config_to_json(&c);
    const char *keys[2] = {"format", "config"}, *vals[2] = {"vitmae", cfg_json};
    snprintf(path, sizeof path, "%s/ckpt/decoder_nan.safetensors", out_dir);
    if (!cfg_json || st_write(path, sts, nt, keys, vals, 2, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    free(cfg_json);
    // A plain safetensors file with a metadata-free header and one tensor.
    float t[6] = {1, 2, 3, 4, 5, 6};
    StTensor st = {"x", 2, {2, 3, 0, 0}, t};
    snprintf(path, sizeof path, "%s/ckpt/plain.safetensors", out_dir);
    if (st_write(path, &st, 1, NULL, NULL, 0, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(1); }
    free(p); free(m); free(v);
}

static void argv_sets(void) {
    static const char *sets[][8] = {
        {"--batch", "8", "--steps", "100", "in.png", NULL},
        {"--lr=3e-3", "--mask-ratio", "0.5", "--norm-pix", NULL},
        {"--data", "dir", "--mode", "rollout", "--", "--batch", NULL},
        {"--seed", "18446744073709551615", NULL},
        {"--batch", NULL},
        {"--frobnicate", "1", NULL},
        {"--lr", "nan", "--batch", "-3", NULL},
        {"--help", NULL},
        {"a", "b", "c", "d", "e", NULL},
        {"--norm-pix=1", "--mode=patch", "--steps=0x10", NULL},
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        char buf[512];
        size_t n = 0;
        for (int k = 0; sets[i][k]; k++) {
            size_t l = strlen(sets[i][k]);
            if (n) buf[n++] = 0;
            memcpy(buf + n, sets[i][k], l);
            n += l;
        }
        char name[32];
        snprintf(name, sizeof name, "argv%02zu", i);
        save("cli", name, NULL, 0, buf, n);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: fuzz_seeds OUT_DIR\n"); return 2; }
    out_dir = argv[1];
    mkdir(out_dir, 0777);
    images("image", 1);
    images("mask", 2);
    checkpoints();
    argv_sets();
    return 0;
}
