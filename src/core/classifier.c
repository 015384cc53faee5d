// The ViT classifier (see classifier.h): layout, init, drop-path draws, forward, backward.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/classifier.h"
#include "core/encoder.h"
#include "kernels/cpu.h"
#include "kernels/droppath.h"
#include "kernels/head.h"
#include "kernels/ops.h"

struct Classifier {
    ClassifierConfig cfg;
    int max_batch, L, T, cpp, nc;
    MaeTensor *tensors;
    int ntensors;
    float *params, *grads;       // grads NULL on a forward-only classifier (clf_create_forward)
    int forward_only;
    int shares_params;           // 1: params are another classifier's (clf_create_sharing), grads the caller's
    void *arena_alloc;
    size_t arena_floats;
    size_t cls, pos, patch_w, patch_b, fcn_w, fcn_b, head_w, head_b;
    Stack enc;
    BlockScratch scratch;
    int *ids_all;                // [max_batch, L]: 0..L-1 per image (every patch is visible)
    int *labels;                 // [max_batch] of the last labelled forward
    int *labels2;                // [max_batch] its mixed-in labels (clf_forward_mixed), has_mix set
    float *patch_cols;           // [B*L, C*P*P]
    float *patch_emb;            // [B*L, D]
    float *pooled;               // [B, D] mean of the patch tokens
    float *feat, *feat_mean, *feat_rstd;   // [B, D] fc_norm output, [B], [B]
    float *logits, *probs;       // [B, classes]
    float *d_enc, *d_logits, *d_feat, *d_pooled;
    int B, has_labels, has_mix;
    float smoothing;
    double lam;                  // the mixed targets' weight of labels (clf_forward_mixed)
};

// ---------------------------------------------------------------------------------------------
// Layout

int clf_config_check(const ClassifierConfig *cfg, char *err, size_t errlen) {
    if (mae_config_check(&cfg->enc, err, errlen)) return -1;
    if (cfg->num_classes < 2 || cfg->num_classes > 100000) {
        snprintf(err, errlen, "num_classes %d is out of range [2, 100000]", cfg->num_classes);
        return -1;
    }
    return 0;
}

static void put(MaeTensor *out, int cap, int n, const char *name, int ndim, int d0, int d1, size_t *offset,
                int decay) {
    size_t numel = (size_t)d0 * (ndim > 1 ? (size_t)d1 : 1);
    if (n < cap) {
        MaeTensor *e = &out[n];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", name);
        e->ndim = ndim; e->shape[0] = d0; e->shape[1] = d1;
        e->offset = *offset; e->numel = numel; e->decay = decay; e->trainable = 1;
    }
    *offset += numel;
}

// The MAE's encoder tensors (no decoder, no final norm), packed, then fc_norm and head; *total is their
// floats. Allocates nothing, so neither the table nor the count can fail (test_classifier.c).
static int clf_table(const ClassifierConfig *cfg, MaeTensor *out, int cap, size_t *total) {
    size_t offset;
    int n = mae_encoder_param_table(&cfg->enc, out, cap, &offset);
    int D = cfg->enc.embed_dim, K = cfg->num_classes;
    put(out, cap, n++, "fc_norm.weight", 1, D, 0, &offset, 0);
    put(out, cap, n++, "fc_norm.bias", 1, D, 0, &offset, 0);
    put(out, cap, n++, "head.weight", 2, K, D, &offset, 1);
    put(out, cap, n++, "head.bias", 1, K, 0, &offset, 0);
    *total = offset;
    return n;
}

int clf_param_table(const ClassifierConfig *cfg, MaeTensor *out, int cap) {
    size_t total;
    return clf_table(cfg, out, cap, &total);
}

size_t clf_num_params(const ClassifierConfig *cfg) {
    size_t total;
    clf_table(cfg, NULL, 0, &total);
    return total;
}

int clf_layer_id(const char *name, int depth) {
    if (!strcmp(name, "cls_token") || !strcmp(name, "pos_embed") || !strncmp(name, "patch_embed", 11)) return 0;
    if (!strncmp(name, "blocks.", 7)) return atoi(name + 7) + 1;
    return depth + 1;
}

void clf_lr_scales(const MaeTensor *t, int n, int depth, float layer_decay, float *out) {
    for (int i = 0; i < n; i++)
        out[i] = (float)pow((double)layer_decay, (double)(depth + 1 - clf_layer_id(t[i].name, depth)));
}

// Lays out the arena (base NULL: counts only); returns floats.
static size_t carve_all(Classifier *c, float *base) {
    Carver cv = {base, 0};
    size_t Bm = (size_t)c->max_batch, L = (size_t)c->L, T = L + 1, D = (size_t)c->cfg.enc.embed_dim;
    size_t N = Bm * T, Hd = D * (size_t)c->cfg.enc.mlp_ratio, K = (size_t)c->nc;
    c->patch_cols = carve(&cv, Bm * L * c->cpp);
    c->patch_emb = carve(&cv, Bm * L * D);
    stack_carve(&cv, &c->enc, (int)Bm, (int)T, c->forward_only ? STACK_FORWARD : STACK_TRAIN);
    c->pooled = carve(&cv, Bm * D);
    c->feat = carve(&cv, Bm * D); c->feat_mean = carve(&cv, Bm); c->feat_rstd = carve(&cv, Bm);
    c->logits = carve(&cv, Bm * K); c->probs = carve(&cv, Bm * K);
    if (c->forward_only) {   // the attention's scratch only (d_small's size); no backward
        c->enc.att_scratch = carve(&cv, N * D);
        return cv.used;
    }
    c->d_enc = carve(&cv, N * D);
    c->d_logits = carve(&cv, Bm * K); c->d_feat = carve(&cv, Bm * D); c->d_pooled = carve(&cv, Bm * D);
    BlockScratch *s = &c->scratch;
    s->d_ln = carve(&cv, N * D);
    s->d_qkv = carve(&cv, N * 3 * D);
    s->d_att = carve(&cv, Bm * (size_t)c->cfg.enc.num_heads * T * T);
    s->d_atty = carve(&cv, N * D);
    s->d_gelu = carve(&cv, N * Hd);
    s->d_small = carve(&cv, N * D);
    s->d_part = carve(&cv, (size_t)gelu_colsum_scratch((int)N, (int)Hd));
    c->enc.att_scratch = s->d_small;
    return cv.used;
}

static void setup_shape(Classifier *c, const ClassifierConfig *cfg, int max_batch, int forward_only) {
    c->cfg = *cfg; c->max_batch = max_batch; c->forward_only = forward_only;
    c->L = mae_num_patches(&cfg->enc); c->T = c->L + 1; c->cpp = mae_patch_dim(&cfg->enc); c->nc = cfg->num_classes;
    const MaeConfig *e = &cfg->enc;
    stack_setup(&c->enc, e->depth, e->embed_dim, e->num_heads, e->embed_dim * e->mlp_ratio, e->ln_eps);
}

static size_t bytes_needed(const ClassifierConfig *cfg, int max_batch, int forward_only) {
    Classifier c;
    memset(&c, 0, sizeof c);
    // As the MAE's (core/model.c): the bound of B images past BYTES_BEYOND_ANY, where the sum could wrap.
    setup_shape(&c, cfg, 1, forward_only);
    double bound = (forward_only ? 1.0 : 4.0) * (double)clf_num_params(cfg) * sizeof(float) +
                   (double)max_batch * ((double)carve_all(&c, NULL) * sizeof(float) + (double)(c.L + 1) * sizeof(int));
    if (bound >= BYTES_BEYOND_ANY) return (size_t)fmin(bound, 0x1p63);
    memset(&c, 0, sizeof c);
    setup_shape(&c, cfg, max_batch, forward_only);
    return (forward_only ? 1 : 4) * clf_num_params(cfg) * sizeof(float) + carve_all(&c, NULL) * sizeof(float)
           + (size_t)max_batch * (c.L + 1) * sizeof(int);
}

size_t clf_bytes_needed(const ClassifierConfig *cfg, int max_batch) { return bytes_needed(cfg, max_batch, 0); }
size_t clf_bytes_needed_forward(const ClassifierConfig *cfg, int max_batch) { return bytes_needed(cfg, max_batch, 1); }

// given: parameters the classifier takes over (clf_create_forward_with), or with `shared` set another
// classifier's (clf_create_sharing: no gradient of its own either), else its own, zero.
static Classifier *make(const ClassifierConfig *cfg, int max_batch, int forward_only, float *given, int shared,
                        char *err, size_t errlen) {
    if (clf_config_check(cfg, err, errlen)) return NULL;
    if (max_batch < 1) { snprintf(err, errlen, "batch size %d must be >= 1", max_batch); return NULL; }
    Classifier *c = calloc(1, sizeof *c);
    if (!c) { snprintf(err, errlen, "out of memory"); return NULL; }
    setup_shape(c, cfg, max_batch, forward_only);
    c->ntensors = clf_param_table(cfg, NULL, 0);
    c->tensors = calloc((size_t)c->ntensors, sizeof *c->tensors);
    size_t np = clf_num_params(cfg);
    c->params = given ? given : cpu_calloc_big(np, sizeof(float));
    c->shares_params = shared;
    c->grads = forward_only || shared ? NULL : cpu_calloc_big(np, sizeof(float));
    int stack_ok = stack_alloc(&c->enc) == 0;
    c->ids_all = malloc((size_t)max_batch * c->L * sizeof(int));
    c->labels = calloc((size_t)max_batch, sizeof(int));
    c->labels2 = calloc((size_t)max_batch, sizeof(int));
    c->arena_floats = carve_all(c, NULL);
    c->arena_alloc = calloc(c->arena_floats + 16, sizeof(float));
    if (!c->tensors || !c->params || (!forward_only && !shared && !c->grads) || !stack_ok || !c->ids_all || !c->labels || !c->labels2 || !c->arena_alloc) {
        snprintf(err, errlen, "out of memory (%zu MB of activations for %d image%s at a time)",
                 (c->arena_floats * sizeof(float) + (1u << 20) - 1) >> 20, max_batch, max_batch == 1 ? "" : "s");
        if (given) c->params = NULL;   // still the caller's
        clf_free(c);
        return NULL;
    }
    clf_param_table(cfg, c->tensors, c->ntensors);
    carve_all(c, (float *)(((uintptr_t)c->arena_alloc + 63) & ~(uintptr_t)63));
    for (int b = 0; b < max_batch; b++)
        for (int l = 0; l < c->L; l++) c->ids_all[(size_t)b * c->L + l] = l;
    const MaeTensor *t = c->tensors;
    int nt = c->ntensors;
    c->cls = tensor_offset(t, nt, "cls_token"); c->pos = tensor_offset(t, nt, "pos_embed");
    c->patch_w = tensor_offset(t, nt, "patch_embed.proj.weight"); c->patch_b = tensor_offset(t, nt, "patch_embed.proj.bias");
    c->fcn_w = tensor_offset(t, nt, "fc_norm.weight"); c->fcn_b = tensor_offset(t, nt, "fc_norm.bias");
    c->head_w = tensor_offset(t, nt, "head.weight"); c->head_b = tensor_offset(t, nt, "head.bias");
    stack_find_weights(&c->enc, t, nt, "blocks");
    return c;
}

Classifier *clf_create(const ClassifierConfig *cfg, int max_batch, char *err, size_t errlen) {
    return make(cfg, max_batch, 0, NULL, 0, err, errlen);
}

Classifier *clf_create_sharing(Classifier *c, int max_batch, char *err, size_t errlen) {
    return make(&c->cfg, max_batch, 0, c->params, 1, err, errlen);
}

Classifier *clf_create_forward(const ClassifierConfig *cfg, int max_batch, char *err, size_t errlen) {
    return make(cfg, max_batch, 1, NULL, 0, err, errlen);
}

Classifier *clf_create_forward_with(const ClassifierConfig *cfg, int max_batch, float *params, char *err, size_t errlen) {
    return make(cfg, max_batch, 1, params, 0, err, errlen);
}

void clf_free(Classifier *c) {
    if (!c) return;
    free(c->tensors); free(c->arena_alloc);
    if (!c->shares_params) { free(c->params); free(c->grads); }   // a sharing one's grads are the caller's
    stack_free(&c->enc);
    free(c->ids_all); free(c->labels); free(c->labels2);
    free(c);
}

const ClassifierConfig *clf_config(const Classifier *c) { return &c->cfg; }
float *clf_params(Classifier *c) { return c->params; }
float *clf_grads(Classifier *c) { return c->grads; }
float *clf_use_grads(Classifier *c, float *grads) { float *old = c->grads; c->grads = grads; return old; }
const MaeTensor *clf_tensors(const Classifier *c, int *count) { if (count) *count = c->ntensors; return c->tensors; }
float *clf_tensor(Classifier *c, const char *name) {
    for (int i = 0; i < c->ntensors; i++)
        if (!strcmp(c->tensors[i].name, name)) return c->params + c->tensors[i].offset;
    return NULL;
}
void clf_zero_grads(Classifier *c) { memset(c->grads, 0, clf_num_params(&c->cfg) * sizeof(float)); }
const float *clf_logits(const Classifier *c) { return c->logits; }
int clf_label_rank(const float *logits, int K, int label) {
    int rank = 0;
    for (int j = 0; j < K; j++) rank += logits[j] > logits[label] || (j < label && logits[j] == logits[label]);
    return rank;
}
const float *clf_probs(const Classifier *c) { return c->probs; }
const float *clf_features(const Classifier *c) { return c->feat; }
const float *clf_attention(const Classifier *c, int layer) {
    return !c->forward_only && layer >= 0 && layer < c->enc.depth ? c->enc.acts[layer].att : NULL;
}

// ---------------------------------------------------------------------------------------------
// Initialisation

void clf_init_weights(Classifier *c, Rng *rng) {
    const MaeConfig *e = &c->cfg.enc;
    vit_init_tensors(c->tensors, c->ntensors, c->params, e->img_size / e->patch_size, rng);
    float *hw = c->params + c->head_w;
    for (size_t i = 0; i < (size_t)c->nc * e->embed_dim; i++) {
        float v;
        do v = rng_normal(rng, 0.0f, 1.0f); while (v < -2.0f || v > 2.0f);
        hw[i] = 2e-5f * v;
    }
}

int clf_copy_encoder(Classifier *c, const MaeTensor *t, int nt, const float *src) {
    int copied = 0;
    for (int i = 0; i < c->ntensors; i++)
        for (int j = 0; j < nt; j++) {
            if (strcmp(c->tensors[i].name, t[j].name) || c->tensors[i].numel != t[j].numel) continue;
            memcpy(c->params + c->tensors[i].offset, src + t[j].offset, t[j].numel * sizeof(float));
            copied++;
            break;
        }
    return copied;
}

void clf_drop_path_factors(const ClassifierConfig *cfg, float rate, uint64_t seed, uint64_t step, int B,
                           float *scale) {
    int depth = cfg->enc.depth;
    float u[2];
    for (int b = 0; b < B; b++) {
        Rng r;
        rng_derive(&r, seed, step, (uint64_t)b);
        for (int l = 0; l < depth; l++) {
            float p = depth > 1 ? rate * (float)l / (float)(depth - 1) : 0.0f;
            u[0] = rng_uniform(&r); u[1] = rng_uniform(&r);
            for (int br = 0; br < 2; br++) droppath_factors(&scale[((size_t)l * 2 + br) * B + b], &u[br], 1, p);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Forward and backward

double clf_forward(Classifier *c, const float *images, const int *labels, int B, float smoothing,
                   const float *drop_scale) {
    return clf_forward_mixed(c, images, labels, NULL, 1.0, B, smoothing, drop_scale);
}

double clf_forward_mixed(Classifier *c, const float *images, const int *labels, const int *labels2, double lam,
                         int B, float smoothing, const float *drop_scale) {
    const MaeConfig *e = &c->cfg.enc;
    const float *P = c->params;
    int D = e->embed_dim, L = c->L, T = c->T;
    c->B = B; c->smoothing = smoothing; c->has_labels = labels != NULL;
    c->enc.drop_scale = drop_scale;
    patches_gather(c->patch_cols, images, c->ids_all, B, L, e->img_size, e->patch_size, e->in_chans);
    linear_forward(c->patch_emb, c->patch_cols, P + c->patch_w, P + c->patch_b, B * L, c->cpp, D);
    tokens_forward(c->enc.res[0], c->patch_emb, P + c->cls, P + c->pos, c->ids_all, B, L, D);
    stack_forward(&c->enc, P, B, T);
    mean_pool_forward(c->pooled, c->enc.res[c->enc.depth], B, T, D);
    layernorm_forward(c->feat, c->feat_mean, c->feat_rstd, c->pooled, P + c->fcn_w, P + c->fcn_b, B, D, e->ln_eps);
    linear_forward(c->logits, c->feat, P + c->head_w, P + c->head_b, B, D, c->nc);
    if (!labels) { softmax_rows(c->probs, c->logits, B, c->nc); return 0.0; }
    memcpy(c->labels, labels, (size_t)B * sizeof(int));
    c->has_mix = labels2 != NULL;
    c->lam = lam;
    if (labels2) memcpy(c->labels2, labels2, (size_t)B * sizeof(int));
    return softmax_xent_forward(c->probs, c->logits, labels, labels2, lam, B, c->nc, smoothing);
}

void clf_backward(Classifier *c) {
    if (!c->has_labels) return;
    if (c->forward_only) {   // a caller's bug, not bad input: the model has nowhere to put a backward
        fprintf(stderr, "vitmae: internal error: backward on a forward-only classifier\n");
        abort();
    }
    const MaeConfig *e = &c->cfg.enc;
    const float *P = c->params;
    float *G = c->grads;
    int B = c->B, D = e->embed_dim, L = c->L, T = c->T;
    softmax_xent_backward(c->d_logits, c->probs, c->labels, c->has_mix ? c->labels2 : NULL, c->lam, B, c->nc,
                          c->smoothing);
    linear_backward_set(c->d_feat, G + c->head_w, G + c->head_b, c->d_logits, c->feat, P + c->head_w, B, D, c->nc, 1);
    memset(c->d_pooled, 0, (size_t)B * D * sizeof(float));
    layernorm_backward(c->d_pooled, G + c->fcn_w, G + c->fcn_b, c->d_feat, c->pooled, P + c->fcn_w, c->feat_mean,
                       c->feat_rstd, B, D, 1);
    mean_pool_backward(c->d_enc, c->d_pooled, B, T, D);
    stack_backward(&c->enc, P, (GradGroups){&G, 1, NULL}, &c->scratch, c->d_enc, B, T, 1);
    tokens_backward(G + c->cls, e->pos_learned ? G + c->pos : NULL, c->d_enc, c->ids_all, B, L, D);
    float *d_pe = c->scratch.d_small;   // [B*L, D]: the patch rows of d_enc
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++)
        memcpy(d_pe + (size_t)b * L * D, c->d_enc + ((size_t)b * T + 1) * D, (size_t)L * D * sizeof(float));
    linear_backward(NULL, G + c->patch_w, G + c->patch_b, d_pe, c->patch_cols, P + c->patch_w, B * L, c->cpp, D, 1);
}
