// Times one training step's forward + backward on synthetic data (developer tool, not a test).
// Usage: build/tools/time_step [THREADS [STEPS [BATCH]]]   (defaults 1, 3, 64)
// Config: the bench setting, preset tiny with img 32, RGB, patch 4, mask 0.75. One untimed warm-up
// step, then STEPS timed steps; prints the mean and the best wall time per phase.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include "core/model.h"

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1, steps = argc > 2 ? atoi(argv[2]) : 3;
    int B = argc > 3 ? atoi(argv[3]) : 64;
    omp_set_num_threads(threads);
    MaeConfig c;
    mae_config_preset(&c, "tiny");
    c.img_size = 32; c.patch_size = 4; c.in_chans = 3;
    char err[256];
    Mae *m = mae_create(&c, B, err, sizeof err);
    if (!m) { fprintf(stderr, "time_step: %s\n", err); return 1; }
    Rng r; rng_seed(&r, 1);
    mae_init_weights(m, &r);
    int L = mae_num_patches(&c), K = mae_len_keep(&c, 0.75f), n = B * 32 * 32 * 3;
    float *img = malloc(sizeof(float) * n), *noise = malloc(sizeof(float) * B * L);
    int *keep = malloc(sizeof(int) * B * K);
    for (int i = 0; i < n; i++) img[i] = rng_normal(&r, 0.0f, 1.0f);
    for (int i = 0; i < B * L; i++) noise[i] = rng_uniform(&r);
    mae_masking_from_noise(noise, B, L, K, keep);
    double fsum = 0, bsum = 0, fbest = 1e30, bbest = 1e30;
    for (int s = 0; s <= steps; s++) {
        mae_zero_grads(m);
        double t0 = omp_get_wtime();
        float loss = mae_train_forward(m, img, keep, B, K);
        double t1 = omp_get_wtime();
        mae_backward(m);
        double t2 = omp_get_wtime();
        if (s == 0) { printf("warm-up loss %.5f\n", loss); continue; }
        fsum += t1 - t0; bsum += t2 - t1;
        if (t1 - t0 < fbest) fbest = t1 - t0;
        if (t2 - t1 < bbest) bbest = t2 - t1;
    }
    printf("threads %d batch %d (tiny, img 32, patch 4, mask 0.75, K %d): forward %.3f s, backward %.3f s, "
           "step %.3f s mean of %d (best %.3f + %.3f)\n", threads, B, K, fsum / steps, bsum / steps,
           (fsum + bsum) / steps, steps, fbest, bbest);
    free(img); free(noise); free(keep);
    mae_free(m);
    return 0;
}
