// `vitmae reconstruct --raw --mask` against PyTorch (tools/reference_recon.py): the parity fixtures'
// weights saved as a checkpoint with the fixture's config, the fixture image and mask PNG in, and
// recon.npy must equal the reference reconstruction to max |d| <= 1e-4 (pixel units), mask.npy the
// reference mask exactly. RGB (norm-pix: removed patches de-normalised from visible statistics) and
// greyscale (plain loss, odd patch size 3). Prints the max abs error per fixture.
#include "check.h"
#include "io/checkpoint.h"
#include "cmd/commands.h"
#include "core/model.h"

static char root[1024], tmp[1024];

// The data of an .npy file written by npy_write: checks descr and shape text, returns malloc'd data.
static void *read_npy(const char *path, const char *descr, const char *shape, size_t bytes) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "open %s", path);
    if (!f) return NULL;
    unsigned char pre[10];
    void *data = NULL;
    if (fread(pre, 1, 10, f) == 10 && !memcmp(pre, "\x93NUMPY\x01\x00", 8)) {
        size_t hl = pre[8] | (size_t)pre[9] << 8;
        char *h = calloc(hl + 1, 1);
        if (h && fread(h, 1, hl, f) == hl) {
            char want[128];
            snprintf(want, sizeof want, "'descr': '%s'", descr);
            CHECK(strstr(h, want) != NULL, "%s: descr %s in %s", path, descr, h);
            snprintf(want, sizeof want, "'shape': %s", shape);
            CHECK(strstr(h, want) != NULL, "%s: shape %s in %s", path, shape, h);
            data = malloc(bytes + 1);
            CHECK(data && fread(data, 1, bytes + 1, f) == bytes, "%s: %zu data bytes", path, bytes);
        }
        free(h);
    }
    fclose(f);
    CHECK(data != NULL, "%s: npy header", path);
    return data;
}

static void run(const char *name) {
    char path[2048], err[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/recon_%s.safetensors", root, name);
    StFile *ref = st_open(path, err, sizeof err);
    CHECK(ref != NULL, "%s", err);
    if (!ref) return;
    MaeConfig cfg;
    CHECK(mae_config_from_json(st_meta(ref, "config"), &cfg, err, sizeof err) == 0, "config: %s", err);
    snprintf(path, sizeof path, "%s/tests/fixtures/%s", root, st_meta(ref, "weights"));
    StFile *wf = st_open(path, err, sizeof err);
    CHECK(wf != NULL, "%s", err);
    Mae *m = mae_create(&cfg, 1, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    if (!wf || !m) { st_close(ref); st_close(wf); mae_free(m); return; }
    int nt;
    const MaeTensor *t = mae_tensors(m, &nt);
    for (int i = 0; i < nt; i++) {
        const float *w = st_get(wf, t[i].name, NULL, NULL);
        CHECK(w != NULL, "weights: no %s", t[i].name);
        if (w) memcpy(mae_params(m) + t[i].offset, w, sizeof(float) * t[i].numel);
    }
    char ck[1200], out[1200], img[2048], mask[2048];
    snprintf(ck, sizeof ck, "%s/%s.safetensors", tmp, name);
    snprintf(out, sizeof out, "%s/out-%s", tmp, name);
    snprintf(img, sizeof img, "%s/tests/fixtures/recon_%s.png", root, name);
    snprintf(mask, sizeof mask, "%s/tests/fixtures/recon_%s_mask.png", root, name);
    CHECK(ckpt_save(ck, &cfg, mae_params(m), NULL, NULL, NULL, err, sizeof err) == 0, "save: %s", err);
    mae_free(m);
    st_close(wf);

    char *argv[] = {"reconstruct", "--ckpt", ck, "--mask", mask, "--out", out, "--raw", "--threads", "2", img, NULL};
    int rc = cmd_reconstruct(11, argv);
    fflush(stdout);
    CHECK(rc == 0, "reconstruct exit %d", rc);

    int S = cfg.img_size, C = cfg.in_chans, g = S / cfg.patch_size;
    int nd; int64_t sh[4];
    const float *want = st_get(ref, "recon", &nd, sh);
    const float *want_mask = st_get(ref, "removed", NULL, NULL);
    CHECK(want && nd == 3 && sh[0] == S && sh[1] == S && sh[2] == C, "reference recon [S, S, C]");
    char shape[64];
    snprintf(path, sizeof path, "%s/recon_%s.recon.npy", out, name);
    snprintf(shape, sizeof shape, "(%d, %d, %d)", S, S, C);
    float *got = read_npy(path, "<f4", shape, sizeof(float) * (size_t)S * S * C);
    snprintf(path, sizeof path, "%s/recon_%s.mask.npy", out, name);
    snprintf(shape, sizeof shape, "(%d, %d)", g, g);
    uint8_t *got_mask = read_npy(path, "|u1", shape, (size_t)g * g);
    if (got && want) {
        double worst = 0;
        for (int i = 0; i < S * S * C; i++) {
            double d = fabs((double)got[i] - want[i]);
            if (!(d <= worst)) worst = d;   // NaN is the worst
        }
        printf("%s: recon.npy max |ours - PyTorch| = %.3g (limit 1e-4)\n", name, worst);
        CHECK(worst <= 1e-4, "%s: max abs error %.3g", name, worst);
    }
    if (got_mask && want_mask) {
        int same = 1, nrem = 0;
        for (int i = 0; i < g * g; i++) { same &= got_mask[i] == (uint8_t)want_mask[i]; nrem += got_mask[i]; }
        CHECK(same, "%s: mask.npy equals the reference mask", name);
        CHECK(nrem > 0 && nrem < g * g, "%s: the mask removes some but not all patches (%d)", name, nrem);
    }
    free(got);
    free(got_mask);
    st_close(ref);
}

int main(void) {
    const char *r = getenv("VITMAE_ROOT");
    snprintf(root, sizeof root, "%s", r && *r ? r : ".");
    snprintf(tmp, sizeof tmp, "%s", check_tmpdir());
    run("rgb");
    run("grey");
    return check_done();
}
