// Un-patchify, de-normalise, score.
#include "infer/recon.h"
#include <math.h>
#include <string.h>

void recon_removed_from_keep(const int *ids_keep, int len_keep, int L, uint8_t *removed) {
    memset(removed, 1, (size_t)L);
    for (int i = 0; i < len_keep; i++) removed[ids_keep[i]] = 0;
}

int recon_keep_from_removed(const uint8_t *removed, int L, int *ids_keep) {
    int n = 0;
    for (int l = 0; l < L; l++) if (!removed[l]) ids_keep[n++] = l;
    return n;
}

// Mean and unbiased variance of patch l of a [H, W, C] image, over its P*P*C values.
static void patch_stats(const MaeConfig *cfg, const float *img, int l, double *mean, double *var) {
    int P = cfg->patch_size, C = cfg->in_chans, W = cfg->img_size, g = W / P;
    int y0 = (l / g) * P, x0 = (l % g) * P, n = P * P * C;
    double s = 0, s2 = 0;
    for (int py = 0; py < P; py++)
        for (int px = 0; px < P; px++)
            for (int c = 0; c < C; c++) s += img[((long)(y0 + py) * W + x0 + px) * C + c];
    *mean = s / n;
    for (int py = 0; py < P; py++)
        for (int px = 0; px < P; px++)
            for (int c = 0; c < C; c++) {
                double d = img[((long)(y0 + py) * W + x0 + px) * C + c] - *mean;
                s2 += d * d;
            }
    *var = n > 1 ? s2 / (n - 1) : 0.0;
}

void recon_pixels(const MaeConfig *cfg, const float *pred, const float *image_norm,
                  const uint8_t *removed, float *out) {
    int P = cfg->patch_size, C = cfg->in_chans, W = cfg->img_size, g = W / P, L = g * g;
    int pd = P * P * C;
    double vis_mean = 0, vis_var = 0;   // pooled over visible patches (norm-pix only)
    if (cfg->norm_pix_loss) {
        int nvis = 0;
        for (int l = 0; l < L; l++) {
            if (removed[l]) continue;
            double m, v;
            patch_stats(cfg, image_norm, l, &m, &v);
            vis_mean += m; vis_var += v + 1e-6; nvis++;
        }
        if (nvis) { vis_mean /= nvis; vis_var /= nvis; } else vis_var = 1.0;
    }
    for (int l = 0; l < L; l++) {
        double mu = 0, sd = 1;
        if (cfg->norm_pix_loss) {
            if (removed[l]) { mu = vis_mean; sd = sqrt(vis_var); }
            else { double v; patch_stats(cfg, image_norm, l, &mu, &v); sd = sqrt(v + 1e-6); }
        }
        int y0 = (l / g) * P, x0 = (l % g) * P;
        for (int py = 0; py < P; py++)
            for (int px = 0; px < P; px++)
                for (int c = 0; c < C; c++) {
                    double x = pred[(long)l * pd + (py * P + px) * C + c] * sd + mu;
                    out[((long)(y0 + py) * W + x0 + px) * C + c] =
                        (float)(x * cfg->pixel_std[c] + cfg->pixel_mean[c]);
                }
    }
}

double recon_masked_mse(const MaeConfig *cfg, const float *recon, const float *orig,
                        const uint8_t *removed, float *per_patch_err) {
    int P = cfg->patch_size, C = cfg->in_chans, W = cfg->img_size, g = W / P, L = g * g;
    double total = 0;
    int nrem = 0;
    for (int l = 0; l < L; l++) {
        int y0 = (l / g) * P, x0 = (l % g) * P;
        double s = 0;
        for (int py = 0; py < P; py++)
            for (int px = 0; px < P; px++)
                for (int c = 0; c < C; c++) {
                    long i = ((long)(y0 + py) * W + x0 + px) * C + c;
                    double r = recon[i] < 0 ? 0 : recon[i] > 1 ? 1 : recon[i];
                    double d = r - orig[i];
                    s += d * d;
                }
        s /= P * P * C;
        if (per_patch_err) per_patch_err[l] = (float)s;
        if (removed[l]) { total += s; nrem++; }
    }
    return nrem ? total / nrem : 0.0;
}

double psnr_from_mse(double mse) { return mse > 0 ? 10.0 * log10(1.0 / mse) : mse == 0 ? INFINITY : NAN; }
