// Test inputs for reconstruct / eval: small checkpoints and flat images.
//
//   mkckpt ckpt OUT.safetensors [--img S] [--patch P] [--channels C] [--norm-pix] [--mean M] [--std D]
//                               [--mask-ratio R] [--seed N] [--const V]
//     A tiny model (D 32, depth 1, 2 heads, decoder 16 x 1 x 2) with MAE's initialisation from the
//     seed. --const V zeroes decoder_pred.weight and sets its bias to V, so the model predicts V (model
//     units) for every value of every patch: with pixel mean M and std D and no norm-pix, every
//     reconstructed pixel is V * D + M, a known answer.
//   mkckpt png OUT.png [--size S] [--channels C] [--value V]
//     A flat S x S image with every sample V (8-bit, rounded).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/checkpoint.h"
#include "cmd/cli.h"
#include "data/image.h"
#include "core/model.h"

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
    if (argc >= 2 && !strcmp(argv[1], "png")) return make_png(argc - 1, argv + 1);
    fprintf(stderr, "usage: mkckpt ckpt OUT.safetensors [flags] | mkckpt png OUT.png [flags]\n");
    return 2;
}
