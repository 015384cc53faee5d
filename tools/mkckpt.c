// Test inputs for reconstruct / eval: small checkpoints and flat images.
//
//   mkckpt ckpt OUT.safetensors [--img S] [--patch P] [--channels C] [--norm-pix] [--mean M] [--std D]
//                               [--mask-ratio R] [--seed N] [--const V]
//     A tiny model (D 32, depth 1, 2 heads, decoder 16 x 1 x 2) with MAE's initialisation from the
//     seed. --const V zeroes decoder_pred.weight and sets its bias to V, so the model predicts V (model
//     units) for every value of every patch: with pixel mean M and std D and no norm-pix, every
//     reconstructed pixel is V * D + M, a known answer.
//   mkckpt train OUT.safetensors --data DIR [--img S] [--patch P] [--steps N] [--batch B] [--lr LR] [--norm-pix]
//     A quick, plain training loop (evaluation views, fresh random masks each step, AdamW with warm-up
//     and cosine) of the same tiny model: a "trained-ish" checkpoint for looking at reconstructions
//     before the real `vitmae train` is at hand. RGB, pixel statistics measured on the folder.
//   mkckpt png OUT.png [--size S] [--channels C] [--value V]
//     A flat S x S image with every sample V (8-bit, rounded).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "checkpoint.h"
#include "cli.h"
#include "image.h"
#include "dataset.h"
#include "model.h"
#include "optim.h"

static int make_ckpt(int argc, char **argv) {
    int img = 16, patch = 4, channels = 3, norm_pix = 0, seed = 1;
    float mean = 0.0f, std = 1.0f, ratio = 0.75f, value = 0.0f;
    Flag flags[] = {
        {"--img", FLAG_INT, &img, 1, 4096, NULL, "image size", "S", 0},
        {"--patch", FLAG_INT, &patch, 1, 4096, NULL, "patch size", "P", 0},
        {"--channels", FLAG_INT, &channels, 1, 3, NULL, "1 or 3", "C", 0},
        {"--norm-pix", FLAG_BOOL, &norm_pix, 0, 0, NULL, "norm-pix loss", NULL, 0},
        {"--mean", FLAG_FLOAT, &mean, -10, 10, NULL, "pixel mean (every channel)", "M", 0},
        {"--std", FLAG_FLOAT, &std, 1e-6, 10, NULL, "pixel std (every channel)", "D", 0},
        {"--mask-ratio", FLAG_FLOAT, &ratio, 0, 0.999, NULL, "stored mask ratio", "R", 0},
        {"--seed", FLAG_INT, &seed, 0, 1 << 30, NULL, "init seed", "N", 0},
        {"--const", FLAG_FLOAT, &value, -100, 100, NULL, "constant prediction", "V", 0},
    };
    const int nflags = (int)(sizeof flags / sizeof flags[0]);
    char *pos[1];
    int npos = 0, rc = cli_parse("mkckpt ckpt", "OUT [flags]", flags, nflags, argc, argv, pos, 1, &npos);
    if (rc != CLI_OK) return rc == CLI_HELP ? 0 : 2;
    if (npos != 1) { cli_error("mkckpt ckpt", "missing OUT"); return 2; }
    MaeConfig cfg;
    mae_config_preset(&cfg, "tiny");
    cfg.img_size = img; cfg.patch_size = patch; cfg.in_chans = channels;
    cfg.embed_dim = 32; cfg.depth = 1; cfg.num_heads = 2;
    cfg.dec_embed_dim = 16; cfg.dec_depth = 1; cfg.dec_num_heads = 2;
    cfg.norm_pix_loss = norm_pix; cfg.mask_ratio = ratio;
    for (int c = 0; c < 3; c++) { cfg.pixel_mean[c] = mean; cfg.pixel_std[c] = std; }
    char err[512];
    if (mae_config_check(&cfg, err, sizeof err)) { cli_error("mkckpt ckpt", "%s", err); return 2; }
    Mae *m = mae_create(&cfg, 1, err, sizeof err);
    if (!m) { cli_error("mkckpt ckpt", "%s", err); return 1; }
    Rng rng;
    rng_seed(&rng, (uint64_t)seed);
    mae_init_weights(m, &rng);
    if (cli_flag(flags, nflags, "--const")->seen) {
        int pd = mae_patch_dim(&cfg);
        memset(mae_tensor(m, "decoder_pred.weight"), 0, sizeof(float) * (size_t)pd * cfg.dec_embed_dim);
        float *bias = mae_tensor(m, "decoder_pred.bias");
        for (int k = 0; k < pd; k++) bias[k] = value;
    }
    rc = ckpt_save(pos[0], &cfg, mae_params(m), NULL, NULL, NULL, err, sizeof err);
    if (rc) cli_error(pos[0], "%s", err);
    mae_free(m);
    return rc ? 1 : 0;
}

static int train(int argc, char **argv) {
    const char *data = NULL;
    int img = 32, patch = 4, steps = 300, batch = 16, norm_pix = 0;
    float lr = 1.5e-3f;
    Flag flags[] = {
        {"--data", FLAG_STR, &data, 0, 0, NULL, "image folder", "DIR", 0},
        {"--img", FLAG_INT, &img, 1, 4096, NULL, "image size", "S", 0},
        {"--patch", FLAG_INT, &patch, 1, 4096, NULL, "patch size", "P", 0},
        {"--steps", FLAG_INT, &steps, 1, 1000000, NULL, "steps", "N", 0},
        {"--batch", FLAG_INT, &batch, 1, 4096, NULL, "batch", "B", 0},
        {"--lr", FLAG_FLOAT, &lr, 0, 1, NULL, "peak learning rate", "LR", 0},
        {"--norm-pix", FLAG_BOOL, &norm_pix, 0, 0, NULL, "norm-pix loss", NULL, 0},
    };
    const int nflags = (int)(sizeof flags / sizeof flags[0]);
    char *pos[1];
    int npos = 0, rc = cli_parse("mkckpt train", "OUT --data DIR [flags]", flags, nflags, argc, argv, pos, 1, &npos);
    if (rc != CLI_OK) return rc == CLI_HELP ? 0 : 2;
    if (npos != 1 || !data) { cli_error("mkckpt train", "missing OUT or --data"); return 2; }
    char err[512];
    Dataset ds;
    if (dataset_scan(data, NULL, &ds, err, sizeof err) || ds.n == 0) {
        cli_error(data, "%s", ds.n ? err : "no image");
        return 1;
    }
    MaeConfig cfg;
    mae_config_preset(&cfg, "tiny");
    cfg.img_size = img; cfg.patch_size = patch; cfg.in_chans = 3;
    cfg.embed_dim = 64; cfg.depth = 2; cfg.num_heads = 4;
    cfg.dec_embed_dim = 32; cfg.dec_depth = 1; cfg.dec_num_heads = 2;
    cfg.norm_pix_loss = norm_pix;
    int *all = malloc(sizeof(int) * (size_t)ds.n);
    for (int i = 0; i < ds.n; i++) all[i] = i;
    if (dataset_pixel_stats(&ds, all, ds.n, 0, img, 3, cfg.pixel_mean, cfg.pixel_std, err, sizeof err)) {
        cli_error(data, "%s", err);
        return 1;
    }
    Mae *m = mae_create(&cfg, batch, err, sizeof err);
    if (!m) { cli_error("mkckpt train", "%s", err); return 1; }
    Rng rng;
    rng_seed(&rng, 1);
    mae_init_weights(m, &rng);
    int L = mae_num_patches(&cfg), K = mae_len_keep(&cfg, cfg.mask_ratio), nt;
    size_t np = mae_num_params(&cfg), per = (size_t)img * img * 3;
    const MaeTensor *t = mae_tensors(m, &nt);
    float *images = malloc(sizeof(float) * per * batch), *noise = malloc(sizeof(float) * (size_t)L * batch);
    float *m1 = calloc(np, sizeof(float)), *v1 = calloc(np, sizeof(float));
    int *items = malloc(sizeof(int) * batch), *keep = malloc(sizeof(int) * (size_t)K * batch);
    for (int s = 0; s < steps; s++) {
        for (int b = 0; b < batch; b++) items[b] = (int)rng_below(&rng, (uint32_t)ds.n);
        if (dataset_load_batch(&ds, items, batch, img, 3, AUGMENT_FLIP, 1, (uint64_t)s, images, err, sizeof err)) {
            cli_error(data, "%s", err);
            return 1;
        }
        for (size_t i = 0; i < per * batch / 3; i++)
            for (int c = 0; c < 3; c++)
                images[i * 3 + c] = (images[i * 3 + c] - cfg.pixel_mean[c]) / cfg.pixel_std[c];
        for (int i = 0; i < L * batch; i++) noise[i] = rng_uniform(&rng);
        mae_masking_from_noise(noise, batch, L, K, keep);
        float loss = mae_forward(m, images, keep, batch, K);
        mae_zero_grads(m);
        mae_backward(m);
        grad_clip(t, nt, mae_grads(m), 1.0f);
        adamw_step(t, nt, mae_params(m), mae_grads(m), m1, v1, lr_at(s, steps, steps / 20, lr, 0), 0.05f, s + 1);
        if (s % 50 == 0 || s == steps - 1) printf("step %d loss %.4f\n", s, loss);
    }
    rc = ckpt_save(pos[0], &cfg, mae_params(m), NULL, NULL, NULL, err, sizeof err);
    if (rc) cli_error(pos[0], "%s", err);
    free(images); free(noise); free(m1); free(v1); free(items); free(keep); free(all);
    mae_free(m);
    dataset_free(&ds);
    return rc ? 1 : 0;
}

static int make_png(int argc, char **argv) {
    int size = 16, channels = 3;
    float value = 0.5f;
    Flag flags[] = {
        {"--size", FLAG_INT, &size, 1, 4096, NULL, "side", "S", 0},
        {"--channels", FLAG_INT, &channels, 1, 3, NULL, "1 or 3", "C", 0},
        {"--value", FLAG_FLOAT, &value, 0, 1, NULL, "every sample", "V", 0},
    };
    char *pos[1];
    int npos = 0, rc = cli_parse("mkckpt png", "OUT [flags]", flags, 3, argc, argv, pos, 1, &npos);
    if (rc != CLI_OK) return rc == CLI_HELP ? 0 : 2;
    if (npos != 1 || channels == 2) { cli_error("mkckpt png", "missing OUT, or --channels 2"); return 2; }
    size_t n = (size_t)size * size * channels;
    uint8_t *px = malloc(n);
    if (!px) return 1;
    memset(px, (int)(value * 255.0f + 0.5f), n);
    char err[512];
    rc = png_write(pos[0], px, size, size, channels, NULL, err, sizeof err);
    if (rc) cli_error(pos[0], "%s", err);
    free(px);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "ckpt")) return make_ckpt(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "train")) return train(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "png")) return make_png(argc - 1, argv + 1);
    fprintf(stderr, "usage: mkckpt ckpt OUT.safetensors [flags] | mkckpt png OUT.png [flags]\n");
    return 2;
}
