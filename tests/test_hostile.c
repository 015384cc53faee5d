// Hostile inputs found by fuzzing and review (see tests/fuzz/regressions/ for the raw files, replayed
// by test_fuzz_*): each case here pins the fixed behaviour with an exact expectation.
#include <stdint.h>
#include "check.h"
#include "io/checkpoint.h"
#include "data/image.h"
#include "core/rng.h"

// image_eval_view resizes only the cropped window: bitwise the values of resize-all-then-crop.
static void test_eval_view_window(void) {
    Rng rng;
    rng_seed(&rng, 11);
    int bad = 0, cases = 0;
    for (int it = 0; it < 300; it++) {
        int w = 1 + (int)rng_below(&rng, 40), h = 1 + (int)rng_below(&rng, 40);
        int size = 1 + (int)rng_below(&rng, 24), c = rng_below(&rng, 2) ? 3 : 1;
        Image im = {w, h, c, malloc(sizeof(float) * (size_t)w * h * c)};
        for (int i = 0; i < w * h * c; i++) im.px[i] = (float)rng_below(&rng, 256) / 255.0f;
        int nw = w <= h ? size : (int)((long)size * w / h), nh = w <= h ? (int)((long)size * h / w) : size;
        float *full = malloc(sizeof(float) * (size_t)nw * nh * c), *want = malloc(sizeof(float) * size * size * c);
        float *got = malloc(sizeof(float) * size * size * c);
        if (w == size && h == size) memcpy(full, im.px, sizeof(float) * (size_t)w * h * c);
        else image_resize_bilinear(im.px, w, h, c, full, nw, nh);
        Image r = {nw, nh, c, full};
        image_crop(&r, (int)nearbyint((nw - size) / 2.0), (int)nearbyint((nh - size) / 2.0), size, size, want);
        image_eval_view(&im, size, VIEW_WHOLE, c, got);
        if (memcmp(want, got, sizeof(float) * size * size * c)) {
            bad++;
            fprintf(stderr, "eval view %dx%dx%d -> %d differs from resize+crop\n", w, h, c, size);
        }
        cases++;
        free(full); free(want); free(got); free(im.px);
    }
    CHECK(bad == 0, "%d of %d eval views differ from resize-then-crop", bad, cases);
}

// A 1 x 3,000,000 image (and its transpose) at 224: the whole-image resize would need 224 x 672M
// floats (600 GB; the old code fell back to a black output when malloc failed). The crop is exact.
static void test_eval_view_extreme_aspect(void) {
    const int len = 3000000, size = 224;
    for (int t = 0; t < 2; t++) {
        Image im = {t ? len : 1, t ? 1 : len, 1, malloc(sizeof(float) * len)};
        for (int i = 0; i < len; i++) im.px[i] = 128.0f / 255.0f;
        float *out = malloc(sizeof(float) * size * size * 3);
        image_eval_view(&im, size, VIEW_WHOLE, 3, out);
        int flat = 0;
        for (int i = 0; i < size * size * 3; i++) flat += fabsf(out[i] - 128.0f / 255.0f) < 1e-6f;
        CHECK(flat == size * size * 3, "%s grey image: %d of %d output values are its grey level",
              t ? "wide" : "tall", flat, size * size * 3);
        free(out);
        free(im.px);
    }
}

// Checkpoints whose config asks for a huge model: refused from names and shapes before any
// config-sized allocation (the old code first calloc'd the whole parameter buffer: terabytes here).
static const char *save_dir;   // argv[1]: also write the files there (for tests/fuzz/regressions)

static void config_json(char *buf, size_t n, int dim, int depth, int dec_dim, int dec_depth) {
    snprintf(buf, n, "{\"img_size\": 8, \"patch_size\": 4, \"in_chans\": 1, \"embed_dim\": %d, \"depth\": %d, "
             "\"num_heads\": 1, \"decoder_embed_dim\": %d, \"decoder_depth\": %d, \"decoder_num_heads\": 1, "
             "\"mlp_ratio\": 4, \"norm_pix_loss\": false, \"mask_ratio\": 0.75, \"pos_embed\": \"learned\", "
             "\"pixel_mean\": [0.5], \"pixel_std\": [0.25], \"layer_norm_eps\": 1e-06}", dim, depth, dec_dim, dec_depth);
}

static void write_and_load(const char *name, const StTensor *ts, int nt, const char *cfg_json, const char *want) {
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/%s", save_dir ? save_dir : check_tmpdir(), name);
    const char *keys[2] = {"format", "config"}, *vals[2] = {"vitmae", cfg_json};
    CHECK(st_write(path, ts, nt, keys, vals, 2, err, sizeof err) == 0, "st_write %s: %s", name, err);
    Checkpoint ck;
    int rc = ckpt_load(path, &ck, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want) && !strstr(err, "out of memory"), "%s: rc %d, '%s' (want '%s')", name, rc, err, want);
    if (rc == 0) ckpt_free(&ck);
}

static void test_huge_config_checkpoints(void) {
    char cfg[1024];
    float four[4] = {0, 0, 0, 0};
    // 1. A 256-block, 16384-wide encoder declared, one 4-float tensor present.
    config_json(cfg, sizeof cfg, 16384, 256, 16384, 256);
    StTensor cls = {"cls_token", 3, {1, 1, 4, 0}, four};
    write_and_load("ckpt-huge-config.safetensors", &cls, 1, cfg, "has shape");
    StTensor other = {"x", 1, {4, 0, 0, 0}, four};
    write_and_load("ckpt-huge-config-missing.safetensors", &other, 1, cfg, "missing tensor 'cls_token'");
    // 2. A small encoder, every tensor present, and a 256 x 16384 decoder declared but absent
    //    (an encoder-only file): the zero decoder would be 3.3 TB.
    config_json(cfg, sizeof cfg, 4, 1, 16384, 256);
    MaeConfig c;
    char err[256];
    CHECK(mae_config_from_json(cfg, &c, err, sizeof err) == 0, "config: %s", err);
    MaeTensor tab[4096];
    int n = mae_param_table(&c, tab, 4096);
    StTensor ts[64];
    int nt = 0;
    float *zeros = calloc(4096, sizeof(float));
    for (int i = 0; i < n && nt < 64; i++) {
        if (tab[i].decoder) continue;
        CHECK(tab[i].numel <= 4096, "encoder tensor %s small", tab[i].name);
        StTensor t = {tab[i].name, tab[i].ndim, {0, 0, 0, 0}, zeros};
        for (int k = 0; k < tab[i].ndim; k++) t.shape[k] = tab[i].shape[k];
        ts[nt++] = t;
    }
    write_and_load("ckpt-huge-decoder.safetensors", ts, nt, cfg, "implausibly large");
    free(zeros);
}

int main(int argc, char **argv) {
    save_dir = argc > 1 ? argv[1] : NULL;
    test_eval_view_window();
    test_eval_view_extreme_aspect();
    test_huge_config_checkpoints();
    return check_done();
}
