// Frozen encoder features (features.h): the evaluation view -> encoder on every patch -> norm -> pool.
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "infer/features.h"
#include "infer/infer.h"
#include "infer/recon.h"
#include "io/checkpoint.h"
#include "io/classifier_ckpt.h"
#include "io/files.h"
#include "io/json.h"
#include "data/image.h"
#include "kernels/ops.h"

struct FeatureModel {
    Mae *m;
    int max_batch, S, C, L, D;
    int *all_patches;       // [max_batch, L]: 0..L-1 per image (no masking)
    float *norm_images;     // [max_batch, S, S, C] normalised pixels
    float *tokens;          // [max_batch, 1+L, D] an earlier layer's tokens after `norm`
    float *ln_mean, *ln_rstd;   // [max_batch * (1+L)]
    float *fc_norm;         // [2, D] fc_norm weight and bias of a fine-tuned classifier; NULL for a MAE
    float *pooled;          // [max_batch, D] one block's features, before they go to their place (spec->blocks > 1)
};

int features_pool_parse(const char *s, FeaturesPool *out) {
    if (!strcmp(s, "cls")) { *out = FEATURES_POOL_CLS; return 0; }
    if (!strcmp(s, "mean")) { *out = FEATURES_POOL_MEAN; return 0; }
    return -1;
}

int features_layer_parse(const char *s, int depth, int *layer, char *err, size_t errlen) {
    if (!strcmp(s, "last")) { *layer = depth - 1; return 0; }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    // A sign and digits, as every integer flag reads them (no spaces): "+1" and "-0" are blocks 1 and 0.
    int plain = isdigit((unsigned char)s[0]) || ((s[0] == '+' || s[0] == '-') && isdigit((unsigned char)s[1]));
    if (!*s || *end || errno || v < 0 || v >= depth || !plain) {
        char word[UTF8_CLIP_SIZE];   // the flag's value, echoed as cmd/cli.h says (cli_error)
        snprintf(err, errlen, "'%s' is not 'last' or a block of this encoder (0..%d)", utf8_clip(word, s), depth - 1);
        return -1;
    }
    *layer = (int)v;
    return 0;
}

FeatureModel *features_open(const char *ckpt_path, int ema, int max_batch, int *status, char *err, size_t errlen) {
    *status = 1;
    Checkpoint ck;
    if (clf_ckpt_load_encoder(ckpt_path, ema, &ck, err, errlen)) return NULL;
    const MaeConfig *cfg = &ck.cfg;
    FeatureModel *fm = calloc(1, sizeof *fm);
    if (!fm) { snprintf(err, errlen, "out of memory"); ckpt_free(&ck); return NULL; }
    fm->max_batch = max_batch;
    fm->S = cfg->img_size; fm->C = cfg->in_chans; fm->L = mae_num_patches(cfg); fm->D = cfg->embed_dim;
    size_t per = (size_t)fm->S * fm->S * fm->C, T = (size_t)fm->L + 1, B = (size_t)max_batch;
    // Each image's share of what is allocated here and in features_of_files: its all_patches row, its
    // normalised image, tokens and their LayerNorm statistics, and its decoded view.
    size_t extra = (size_t)fm->L * sizeof(int) + (2 * per + T * fm->D + 2 * T + fm->D) * sizeof(float);
    int mem = infer_encoder_memory_check(cfg, max_batch, extra, err, errlen);
    if (mem) { *status = mem; ckpt_free(&ck); free(fm); return NULL; }
    // The encoder alone (features read nothing of the decoder), over the weights without a copy.
    fm->m = mae_create_encoder_with(cfg, max_batch, ck.params, err, errlen);
    if (fm->m) ck.params = NULL;
    fm->all_patches = malloc(B * fm->L * sizeof *fm->all_patches);
    fm->norm_images = malloc(B * per * sizeof *fm->norm_images);
    fm->tokens = malloc(B * T * fm->D * sizeof *fm->tokens);
    fm->ln_mean = malloc(B * T * sizeof *fm->ln_mean);
    fm->ln_rstd = malloc(B * T * sizeof *fm->ln_rstd);
    fm->pooled = malloc(B * fm->D * sizeof *fm->pooled);
    if (!fm->m || !fm->all_patches || !fm->norm_images || !fm->tokens || !fm->ln_mean || !fm->ln_rstd || !fm->pooled) {
        if (fm->m) snprintf(err, errlen, "out of memory");
        ckpt_free(&ck);
        features_close(fm);
        return NULL;
    }
    fm->fc_norm = ck.fc_norm;   // a classifier's, for features as timm's forward_head(pre_logits=True); else NULL
    ck.fc_norm = NULL;
    ckpt_free(&ck);
    for (size_t b = 0; b < B; b++)
        for (int l = 0; l < fm->L; l++) fm->all_patches[b * fm->L + l] = l;
    *status = 0;
    return fm;
}

void features_close(FeatureModel *fm) {
    if (!fm) return;
    mae_free(fm->m);
    free(fm->all_patches); free(fm->norm_images); free(fm->tokens); free(fm->ln_mean); free(fm->ln_rstd);
    free(fm->fc_norm); free(fm->pooled);
    free(fm);
}

const MaeConfig *features_config(const FeatureModel *fm) { return mae_config(fm->m); }
int features_blocks(const FeaturesSpec *spec) { return spec->blocks > 1 ? spec->blocks : 1; }
void features_blocks_text(const FeaturesSpec *spec, int depth, char *buf, size_t n) {
    int K = features_blocks(spec);
    if (K == 1) snprintf(buf, n, "block %d of 0..%d", spec->layer, depth - 1);
    else snprintf(buf, n, "blocks %d..%d of 0..%d side by side", spec->layer - K + 1, spec->layer, depth - 1);
}
int features_blocks_check(const FeaturesSpec *spec, char *err, size_t errlen) {
    int K = features_blocks(spec);
    if (spec->layer - K + 1 >= 0) return 0;
    snprintf(err, errlen, "%d blocks ending at block %d would begin before block 0: at most %d", K, spec->layer, spec->layer + 1);
    return -1;
}
int features_dim(const FeatureModel *fm, const FeaturesSpec *spec) { return fm->D * features_blocks(spec); }

const char *features_what(const FeatureModel *fm, const FeaturesSpec *spec) {
    if (spec->pool == FEATURES_POOL_CLS) return "cls token";
    return fm->fc_norm ? "fc_norm(mean tokens)" : "mean tokens";
}

// One block's features [B][D] into out, row b at out + b * stride (tokens of the forward just run).
static void block_features(FeatureModel *fm, int B, FeaturesPool pool, int layer, float *out, size_t stride) {
    const MaeConfig *cfg = mae_config(fm->m);
    int L = fm->L, D = fm->D, T = L + 1;
    const float *tok = mae_latent(fm->m);   // [B, T, D] the last block after norm
    // A fine-tuned classifier has no `norm` (docs/encoder.md): the block's own tokens, and for mean
    // pooling its fc_norm after the mean (timm's forward_head(pre_logits=True) at the last block).
    int head_norm = fm->fc_norm && pool == FEATURES_POOL_MEAN;
    if (fm->fc_norm) {
        tok = mae_block_output(fm->m, layer);
    } else if (layer != cfg->depth - 1) {
        layernorm_forward(fm->tokens, fm->ln_mean, fm->ln_rstd, mae_block_output(fm->m, layer),
                          mae_tensor(fm->m, "norm.weight"), mae_tensor(fm->m, "norm.bias"), B * T, D,
                          cfg->ln_eps);
        tok = fm->tokens;
    }
    // In place when the rows are contiguous and no norm follows; else through fm->pooled.
    int direct = stride == (size_t)D && !head_norm;
    float *pooled = direct ? out : fm->pooled;
    // Pooling: each image alone, patches added in order (the same for any thread count).
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const float *x = tok + (size_t)b * T * D;
        float *o = pooled + (size_t)b * D;
        if (pool == FEATURES_POOL_CLS) { memcpy(o, x, (size_t)D * sizeof *o); continue; }
        for (int i = 0; i < D; i++) {
            double s = 0;
            for (int t = 1; t < T; t++) s += x[(size_t)t * D + i];
            o[i] = (float)(s / L);
        }
    }
    if (head_norm) {   // fc_norm's rows land in fm->tokens (free again: the classifier read its blocks' own)
        layernorm_forward(fm->tokens, fm->ln_mean, fm->ln_rstd, pooled, fm->fc_norm, fm->fc_norm + D, B, D, cfg->ln_eps);
        pooled = fm->tokens;
    }
    if (pooled != out)
        for (int b = 0; b < B; b++) memcpy(out + (size_t)b * stride, pooled + (size_t)b * D, (size_t)D * sizeof *out);
}

void features_batch(FeatureModel *fm, const float *images, int B, const FeaturesSpec *spec, float *out) {
    const MaeConfig *cfg = mae_config(fm->m);
    int L = fm->L, K = features_blocks(spec);
    size_t per = (size_t)fm->S * fm->S * fm->C, stride = (size_t)K * fm->D;
    memcpy(fm->norm_images, images, (size_t)B * per * sizeof *images);
    pixels_normalise(cfg, fm->norm_images, (long)B * fm->S * fm->S);
    mae_forward_encoder(fm->m, fm->norm_images, fm->all_patches, B, L);
    // Blocks layer - K + 1 .. layer, in that order, each image's row their features side by side (DINO's
    // torch.cat of get_intermediate_layers' CLS tokens).
    for (int k = 0; k < K; k++)
        block_features(fm, B, spec->pool, spec->layer - K + 1 + k, out + (size_t)k * fm->D, stride);
}

int features_of_files(FeatureModel *fm, const FeaturesSpec *spec, int size, int channels, long max_pixels,
                      const char *const *paths, long n, int batch, float *out,
                      FeaturesProgress progress, void *ctx, long *failed_at, char *err, size_t errlen) {
    long failed = -1;
    if (failed_at) *failed_at = -1;
    if (fm) { size = fm->S; channels = fm->C; }
    if (fm && batch > fm->max_batch) batch = fm->max_batch;
    if (batch < 1) batch = 1;
    size_t per = (size_t)size * size * channels;
    size_t dim = fm ? (size_t)features_dim(fm, spec) : per;
    float *views = fm ? malloc((size_t)batch * per * sizeof *views) : NULL;
    int *bad = malloc((size_t)batch * sizeof *bad);
    char (*why)[256] = malloc((size_t)batch * sizeof *why);
    if ((fm && !views) || !bad || !why) {
        snprintf(err, errlen, "out of memory");
        free(views); free(bad); free(why);
        return -1;
    }
    int status = 0;
    for (long i0 = 0; i0 < n && !status; i0 += batch) {
        int B = n - i0 < batch ? (int)(n - i0) : batch;
        // Without a model the views are the features: decode straight into out.
        float *dst = fm ? views : out + (size_t)i0 * dim;
        #pragma omp parallel for schedule(dynamic, 1)
        for (int k = 0; k < B; k++)
            bad[k] = image_load_view(paths[i0 + k], max_pixels, size, spec->view, channels, dst + (size_t)k * per, why[k], sizeof why[k]);
        for (int k = 0; k < B; k++)
            if (bad[k]) {
                snprintf(err, errlen, "%.*s: %s", FILE_NAME_CUT, paths[i0 + k], why[k]);
                failed = i0 + k;
                status = 1;
                break;
            }
        if (status) break;
        if (fm) features_batch(fm, views, B, spec, out + (size_t)i0 * dim);
        for (int k = 0; fm && k < B && !status; k++) {
            const float *row = out + (size_t)(i0 + k) * dim;
            int finite = 1;
            for (size_t d = 0; d < dim; d++) finite &= isfinite(row[d]) != 0;
            if (!finite) {
                snprintf(err, errlen, "%.*s: %s", FILE_NAME_CUT, paths[i0 + k], INFER_NONFINITE_WHY);
                failed = i0 + k;
                status = 1;
            }
        }
        if (status) break;
        if (progress) progress(ctx, i0 + B, n);
    }
    free(views); free(bad); free(why);
    if (failed_at) *failed_at = failed;
    return status;
}
