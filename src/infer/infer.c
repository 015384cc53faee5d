// Fixed masks and one inference batch (see infer.h).
#include "infer/infer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "data/dataset.h"
#include "infer/recon.h"
#include "core/masking.h"

char *infer_stem(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, base, n);
    s[n] = 0;
    return s;
}

int infer_random_mask(uint64_t seed, const char *stem, int L, int K, int *ids_keep, uint8_t *removed) {
    float *noise = malloc(sizeof(float) * (size_t)L);
    int *scratch = malloc(2 * sizeof(int) * (size_t)L);
    if (!noise || !scratch) { free(noise); free(scratch); return -1; }
    const uint64_t key = 0;
    masks_seeded(seed, dataset_path_hash(stem), &key, 1, L, K, noise, ids_keep, scratch);
    recon_removed_from_keep(ids_keep, K, L, removed);
    free(noise);
    free(scratch);
    return 0;
}

float infer_batch(Mae *m, const float *images, float *norm_scratch, const int *ids_keep,
                  const uint8_t *removed, int B, int K, float *recon, float *patch_err, double *mse,
                  double *loss) {
    const MaeConfig *cfg = mae_config(m);
    int S = cfg->img_size, L = mae_num_patches(cfg), pd = mae_patch_dim(cfg);
    size_t per = (size_t)S * S * cfg->in_chans;
    memcpy(norm_scratch, images, sizeof(float) * per * B);
    pixels_normalise(cfg, norm_scratch, (long)S * S * B);
    float batch_loss = mae_forward(m, norm_scratch, ids_keep, B, K);
    const float *pred = mae_pred(m), *target = mae_target(m);
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const uint8_t *rm = removed + (size_t)b * L;
        float *pe = patch_err + (size_t)b * L;
        recon_pixels(cfg, pred + (size_t)b * L * pd, norm_scratch + per * b, rm, recon + per * b);
        double e = recon_masked_mse(cfg, recon + per * b, images + per * b, rm, pe);
        double lsum = 0;
        int nl = 0;
        for (int l = 0; l < L; l++) {
            if (K < L && !rm[l]) continue;
            const float *p = pred + ((size_t)b * L + l) * pd, *t = target + ((size_t)b * L + l) * pd;
            double s = 0;
            for (int k = 0; k < pd; k++) s += ((double)p[k] - t[k]) * ((double)p[k] - t[k]);
            lsum += s / pd;
            nl++;
        }
        if (K == L) {   // nothing removed: score every patch
            e = 0;
            for (int l = 0; l < L; l++) e += pe[l];
            e /= L;
        }
        mse[b] = e;
        loss[b] = nl ? lsum / nl : 0.0;
    }
    return batch_loss;
}

int infer_memory_refusal(size_t need, size_t need_one, int B, int S, char *err, size_t errlen) {
    if (mae_memory_check_bytes(need, B, S, err, errlen) == 0) return 0;
    char one[256];
    int smaller = B > 1 && mae_memory_check_bytes(need_one, 1, S, one, sizeof one) == 0;
    size_t n = strlen(err);
    if (smaller && n < errlen) snprintf(err + n, errlen - n, " (use a smaller --batch)");
    return smaller ? 2 : 1;
}

int infer_memory_check(const MaeConfig *cfg, int B, size_t per, size_t held, int held_at_once, char *err,
                       size_t errlen) {
    size_t extra = sizeof(float) * per * 3;   // images, normalised images, reconstructions
    size_t nheld = (size_t)(B < held_at_once ? B : held_at_once);
    return infer_memory_refusal(mae_bytes_needed_forward(cfg, B) + extra * (size_t)B + held * nheld,
                                mae_bytes_needed_forward(cfg, 1) + extra + (held_at_once > 0 ? held : 0), B,
                                cfg->img_size, err, errlen);
}

int infer_encoder_memory_check(const MaeConfig *cfg, int B, size_t extra_per_image, char *err, size_t errlen) {
    return infer_memory_refusal(mae_bytes_needed_encoder(cfg, B) + extra_per_image * (size_t)B,
                                mae_bytes_needed_encoder(cfg, 1) + extra_per_image, B, cfg->img_size, err, errlen);
}
