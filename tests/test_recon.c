// recon: un-patchify layout, pixel de-normalisation, norm-pix de-normalisation from visible
// statistics only, masked MSE and PSNR on cases with known answers.
#include "check.h"
#include "infer/recon.h"

int main(void) {
    MaeConfig c;
    mae_config_preset(&c, "tiny");
    c.img_size = 4; c.patch_size = 2; c.in_chans = 1;   // 2x2 grid of 2x2 patches
    c.pixel_mean[0] = 0.5f; c.pixel_std[0] = 0.25f;
    int L = 4, pd = 4;
    float pred[16], img[16], out[16];
    for (int l = 0; l < L; l++) for (int k = 0; k < pd; k++) pred[l * pd + k] = (float)(l * 10 + k) / 100.0f;
    memset(img, 0, sizeof img);
    uint8_t removed[4];
    int keep[2] = {3, 0};
    recon_removed_from_keep(keep, 2, L, removed);
    CHECK(removed[0] == 0 && removed[1] == 1 && removed[2] == 1 && removed[3] == 0, "removed mask");
    int back[4];
    CHECK(recon_keep_from_removed(removed, L, back) == 2 && back[0] == 0 && back[1] == 3, "keep from removed");

    c.norm_pix_loss = 0;
    recon_pixels(&c, pred, img, removed, out);
    // Patch 1 is (gy 0, gx 1): pixels x 2..3, y 0..1; element (py 1, px 0) is index 2 -> 0.12.
    CHECK_CLOSE(out[1 * 4 + 2], 0.12 * 0.25 + 0.5, 1e-6, 0, "patch 1 (py1,px0)");
    CHECK_CLOSE(out[3 * 4 + 1], 0.23 * 0.25 + 0.5, 1e-6, 0, "patch 2 (py1,px1)");

    // Norm-pix: visible patch 0 has values {0,2,4,6} (mean 3, unbiased var 20/3), patch 3 {1,1,1,1}.
    c.norm_pix_loss = 1; c.pixel_mean[0] = 0; c.pixel_std[0] = 1;
    float vals0[4] = {0, 2, 4, 6};
    img[0] = vals0[0]; img[1] = vals0[1]; img[4] = vals0[2]; img[5] = vals0[3];
    img[10] = img[11] = img[14] = img[15] = 1;
    // Removed patches 1 and 2 hold a secret the reconstruction must not use.
    img[2] = 100; img[3] = -100; img[8] = 50;
    for (int k = 0; k < 16; k++) pred[k] = 0;
    pred[1 * pd + 0] = 1.0f;   // patch 1, first element: one std above the visible mean
    recon_pixels(&c, pred, img, removed, out);
    double vis_mean = (3.0 + 1.0) / 2, vis_var = ((20.0 / 3 + 1e-6) + (0 + 1e-6)) / 2;
    CHECK_CLOSE(out[2], vis_mean + sqrt(vis_var), 1e-5, 0, "removed patch uses visible stats");
    CHECK_CLOSE(out[3], vis_mean, 1e-5, 0, "removed patch zero pred -> visible mean");
    CHECK_CLOSE(out[0], 3.0, 1e-5, 0, "visible patch uses its own mean");

    // Masked MSE: orig all 0.5, recon 0.5 except one removed patch off by 0.1 on one of 4 values.
    c.norm_pix_loss = 0;
    float orig[16], rec[16], err[4];
    for (int k = 0; k < 16; k++) orig[k] = rec[k] = 0.5f;
    rec[2] = 0.6f;          // patch 1 (removed)
    rec[0] = 0.9f;          // patch 0 (visible: must not count)
    double mse = recon_masked_mse(&c, rec, orig, removed, err);
    CHECK_CLOSE(mse, (0.01 / 4) / 2, 1e-8, 1e-5, "masked MSE over the 2 removed patches");
    CHECK_CLOSE(err[0], 0.16 / 4, 1e-7, 1e-5, "per-patch error of a visible patch still reported");
    rec[6] = 2.0f;          // clipped to 1 -> error 0.25 (patch 1)
    mse = recon_masked_mse(&c, rec, orig, removed, NULL);
    CHECK_CLOSE(mse, ((0.01 + 0.25) / 4) / 2, 1e-7, 1e-5, "recon clipped to [0,1]");
    CHECK_CLOSE(psnr_from_mse(0.01), 20.0, 1e-9, 0, "psnr of 0.01");
    CHECK(isinf(psnr_from_mse(0.0)) && psnr_from_mse(0.0) > 0, "psnr of an exact reconstruction: +inf");
    // A NaN error (a model whose output overflowed) was given PSNR +inf, a perfect score.
    CHECK(isnan(psnr_from_mse(NAN)), "psnr of a NaN error is NaN, not +inf (%g)", psnr_from_mse(NAN));
    uint8_t none[4] = {0, 0, 0, 0};
    CHECK(recon_masked_mse(&c, rec, orig, none, NULL) == 0.0, "no removed patch -> 0");

    float px[6] = {0, 0.5f, 1, 0.25f, 0.75f, 0.5f};
    c.in_chans = 3;
    for (int i = 0; i < 3; i++) { c.pixel_mean[i] = 0.1f * (i + 1); c.pixel_std[i] = 0.5f + i; }
    pixels_normalise(&c, px, 2);
    CHECK_CLOSE(px[4], (0.75 - 0.2) / 1.5, 1e-6, 0, "normalise channel 1");
    pixels_denormalise(&c, px, 2);
    CHECK_CLOSE(px[4], 0.75, 1e-6, 0, "denormalise inverts");
    return check_done();
}
