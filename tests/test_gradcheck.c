// Finite-difference gradient check of mae_backward, independent of PyTorch.
// A tiny model (every parameter tensor, both pos modes) is perturbed at a sample of coordinates of
// every tensor; the central difference (f(w + h) - f(w - h)) / 2h is compared with the analytic
// gradient. h = 1e-2 keeps float32 round-off in the loss (~1e-7) well below the signal; the O(h^2)
// truncation error is what the tolerance allows for: |fd - g| <= 3e-5 + 1e-3 * max(|fd|, |g|).
// A 0.3% error in a gradient coordinate of magnitude 0.03 or more fails the check.
// Coordinates: every element of small tensors (the mask token, biases of 16 or fewer), else the first
// (the CLS row of the position tables), the last and 4 random ones. The check runs on the default
// kernels (AVX-512 attention where the CPU has it) and again on the portable ones (not under the
// sanitizers, VITMAE_SANITIZED=1, where the portable pass is slow and adds no memory checks).
#include "check.h"
#include "core/model.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"

static int check_config(int norm_pix, int pos_learned, int channels, int dec_depth, int B, uint64_t seed) {
    MaeConfig c;
    mae_config_preset(&c, "tiny");
    c.img_size = 8; c.patch_size = 2; c.in_chans = channels;
    c.embed_dim = 8; c.depth = 2; c.num_heads = 2;
    c.dec_embed_dim = 12; c.dec_depth = dec_depth; c.dec_num_heads = 3;
    c.norm_pix_loss = norm_pix; c.pos_learned = pos_learned;
    char err[256];
    int L = mae_num_patches(&c), K = mae_len_keep(&c, 0.5f);
    Mae *m = mae_create(&c, B, err, sizeof err);
    CHECK(m != NULL, "create: %s", err);
    if (!m) return 1;
    Rng rng;
    rng_seed(&rng, seed);
    mae_init_weights(m, &rng);
    size_t np = mae_num_params(&c);
    float *p = mae_params(m);
    for (size_t i = 0; i < np; i++) p[i] += rng_normal(&rng, 0.0f, 0.05f);   // leave the init point
    // The CLS row's LayerNorm sees only cls + pos[0] (~0.05 at init): give it an O(1) spread so
    // that a step of h stays in the region where the loss is near-quadratic.
    float *cls = mae_tensor(m, "cls_token");
    for (int i = 0; i < c.embed_dim; i++) cls[i] = rng_normal(&rng, 0.0f, 1.0f);
    int S = c.img_size, npix = B * S * S * channels;
    float *img = malloc(sizeof(float) * npix), *noise = malloc(sizeof(float) * B * L);
    int *keep = malloc(sizeof(int) * B * K);
    for (int i = 0; i < npix; i++) img[i] = rng_normal(&rng, 0.0f, 1.0f);
    for (int i = 0; i < B * L; i++) noise[i] = rng_uniform(&rng);
    mae_masking_from_noise(noise, B, L, K, keep);

    mae_zero_grads(m);
    mae_train_forward(m, img, keep, B, K);
    mae_backward(m);
    float *g = malloc(sizeof(float) * np);
    memcpy(g, mae_grads(m), sizeof(float) * np);

    int nt; const MaeTensor *t = mae_tensors(m, &nt);
    int checked = 0, bad = 0;
    double worst = 0.0; const char *worst_name = "";
    const double h = 1e-2;
    for (int k = 0; k < nt; k++) {
        int all = t[k].numel <= 16, samples = all ? (int)t[k].numel : 6;
        for (int s = 0; s < samples; s++) {
            size_t j = all || s == 0 ? (size_t)s : s == 1 ? t[k].numel - 1 : rng_below(&rng, (uint32_t)t[k].numel);
            size_t idx = t[k].offset + j;
            float w0 = p[idx];
            p[idx] = (float)(w0 + h);
            double fp = mae_forward(m, img, keep, B, K);
            p[idx] = (float)(w0 - h);
            double fm = mae_forward(m, img, keep, B, K);
            p[idx] = w0;
            double fd = (fp - fm) / (2 * h), an = g[idx];
            if (!t[k].trainable) {
                CHECK(an == 0.0, "%s frozen but has gradient %g", t[k].name, an);
                continue;
            }
            double tol = 3e-5 + 1e-3 * fmax(fabs(fd), fabs(an));
            double ratio = fabs(fd - an) / tol;
            if (ratio > worst) { worst = ratio; worst_name = t[k].name; }
            checked++;
            if (!(fabs(fd - an) <= tol)) {
                bad++;
                fprintf(stderr, "%s[%zu]: analytic %.8g finite-diff %.8g\n", t[k].name, idx - t[k].offset, an, fd);
            }
        }
    }
    CHECK(bad == 0, "%d of %d coordinates off (norm_pix %d, pos_learned %d)", bad, checked, norm_pix, pos_learned);
    printf("%s kernels, norm_pix=%d pos_learned=%d C=%d, %d decoder blocks, %d images: %d coordinates, worst |d|/tol = "
           "%.3f (%s)\n", gemm_kernel_name(), norm_pix, pos_learned, channels, dec_depth, B, checked, worst, worst_name);
    free(g); free(img); free(noise); free(keep);
    mae_free(m);
    return 0;
}

int main(void) {
    // The decoder's last block runs on the removed rows only (core/model.h, mae_train_forward): with one
    // block, two (the block below it takes the full rows' gradient), and none (decoder_norm's rows). With
    // 3 images (24 removed patches, more than the 16 positions) the first decoder block takes the mask
    // tokens' rows once (core/encoder.h, Stack.dup_src), also where it is the last block; with 2 (16
    // removed) it does not.
    check_config(1, 1, 3, 1, 2, 1);
    check_config(0, 0, 1, 1, 2, 2);
    check_config(1, 1, 3, 2, 3, 5);
    check_config(0, 1, 1, 1, 3, 6);
    check_config(1, 0, 3, 0, 2, 4);
    if (!check_sanitized()) {
        CHECK(gemm_force_kernel("portable") == 0, "portable kernels");
        check_config(1, 1, 3, 1, 2, 3);
        check_config(1, 1, 3, 2, 3, 7);
        gemm_force_kernel(NULL);
    }
    return check_done();
}
