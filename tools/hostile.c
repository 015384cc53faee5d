// Hostile test inputs for the hardening tests.
//   hostile ckpt OUT.safetensors IMG PATCH [DEPTH [HEADS]]
//     A valid vitmae checkpoint of a narrow model (D 4, 1 head, DEPTH blocks (default 1), decoder
//     4 x 1 x 1, 1 channel, every weight 0) whose image size makes the activations huge (L = (IMG /
//     PATCH)^2 patches; attention is L^2 per head and layer) while the file stays small: written with
//     ckpt_save, no model is built. HEADS > 1: the encoder has HEADS heads, D max(4, HEADS).
//   hostile clf OUT.safetensors IMG PATCH
//     A fine-tuned classifier of 2 classes (clf_ckpt_save) for `vitmae classify`, 8 wide with 8 heads:
//     its one attention map of 8 x L^2 floats is 137 GB at L = 65536.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/classifier.h"
#include "io/checkpoint.h"
#include "io/classifier_ckpt.h"

int main(int argc, char **argv) {
    int clf = argc == 5 && !strcmp(argv[1], "clf");
    if ((argc != 5 && !((argc == 6 || argc == 7) && !clf)) || (strcmp(argv[1], "ckpt") && !clf)) {
        fprintf(stderr, "usage: hostile ckpt OUT.safetensors IMG PATCH [DEPTH [HEADS]] | clf OUT.safetensors IMG PATCH\n");
        return 2;
    }
    MaeConfig c;
    memset(&c, 0, sizeof c);
    c.img_size = atoi(argv[3]); c.patch_size = atoi(argv[4]); c.in_chans = 1;
    c.embed_dim = 4; c.depth = argc >= 6 ? atoi(argv[5]) : 1; c.num_heads = 1;
    if (argc == 7) {
        c.num_heads = atoi(argv[6]);
        if (c.num_heads > 4) c.embed_dim = c.num_heads;
    }
    c.dec_embed_dim = 4; c.dec_depth = 1; c.dec_num_heads = 1;
    c.mlp_ratio = 1; c.mask_ratio = 0.75f; c.pos_learned = 1; c.ln_eps = 1e-6f;
    c.pixel_mean[0] = 0.5f; c.pixel_std[0] = 0.25f;
    char err[512];
    ClassifierConfig cc = {c, 2};
    cc.enc.embed_dim = 8; cc.enc.num_heads = 8;
    char *classes[2] = {"a", "b"};
    if (clf ? clf_config_check(&cc, err, sizeof err) : mae_config_check(&c, err, sizeof err)) {
        fprintf(stderr, "hostile: %s\n", err);
        return 1;
    }
    size_t np = clf ? clf_num_params(&cc) : mae_num_params(&c);
    float *p = calloc(np, sizeof *p);
    int rc = !p || (clf ? clf_ckpt_save(argv[2], &cc, classes, p, NULL, NULL, NULL, NULL, err, sizeof err)
                        : ckpt_save(argv[2], &c, p, NULL, NULL, NULL, err, sizeof err));
    if (rc) {
        fprintf(stderr, "hostile: %s\n", p ? err : "out of memory");
        free(p);
        return 1;
    }
    free(p);
    return 0;
}
