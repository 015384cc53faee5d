// The model's configuration: presets, checks, the config JSON and the parameter table (see
// core/config.h).
#include "core/config.h"
#include "core/json_depth.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------------------------
// Presets and checks

int mae_config_preset(MaeConfig *cfg, const char *name) {
    static const struct { const char *name; int d, depth, heads, dd, ddepth, dheads; } presets[] = {
        {"tiny", 192, 6, 3, 128, 2, 4},
        {"small", 384, 12, 6, 256, 4, 8},
        {"base", 768, 12, 12, 512, 8, 16},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(presets[i].name, name) != 0) continue;
        memset(cfg, 0, sizeof *cfg);
        cfg->img_size = 224; cfg->patch_size = 16; cfg->in_chans = 3;
        cfg->embed_dim = presets[i].d; cfg->depth = presets[i].depth; cfg->num_heads = presets[i].heads;
        cfg->dec_embed_dim = presets[i].dd; cfg->dec_depth = presets[i].ddepth;
        cfg->dec_num_heads = presets[i].dheads;
        cfg->mlp_ratio = 4; cfg->norm_pix_loss = 0; cfg->mask_ratio = (float)MAE_DEFAULT_MASK_RATIO; cfg->pos_learned = 1;
        for (int c = 0; c < 3; c++) { cfg->pixel_mean[c] = 0.0f; cfg->pixel_std[c] = 1.0f; }
        cfg->ln_eps = 1e-6f;
        return 0;
    }
    return -1;
}

// The names a message gives the sizes: the config's keys (a checkpoint's) or the flags that set them
// (a new run's model, in the user's terms).
typedef struct { const char *img, *patch, *chans, *dim, *ddim, *depth, *ddepth, *heads, *dheads, *mask; } SizeNames;
static const SizeNames CONFIG_NAMES = {"img_size", "patch_size", "in_chans", "embed_dim", "decoder_embed_dim", "depth",
                                       "decoder_depth", "num_heads", "decoder_num_heads", "mask_ratio"};
static const SizeNames FLAG_NAMES = {"--img", "--patch", "--channels", "--dim", "--dec-dim", "--depth", "--dec-depth",
                                     "--heads", "--dec-heads", "--mask-ratio"};

// flag (mae_config_check_flags): a size out of its range is said as every flag's range error is,
// `train --patch: 32 is out of range [1, 16]` (docs/interface.md, section 1), so err leaves the flag to
// *flag; a reason that names two flags (`--img 16 is not a multiple of --patch 5`) sets it NULL.
static int check_named(const MaeConfig *c, const SizeNames *w, const char **flag, char *err, size_t n) {
#define BAD(...) do { snprintf(err, n, __VA_ARGS__); return -1; } while (0)
#define RANGE(name, fmt, ...) do { \
        if (flag) { *flag = name; snprintf(err, n, fmt, __VA_ARGS__); } else snprintf(err, n, "%s " fmt, name, __VA_ARGS__); \
        return -1; } while (0)
    if (flag) *flag = NULL;
    if (c->img_size < 1 || c->img_size > MAE_IMG_MAX) RANGE(w->img, "%d is out of range [1, %d]", c->img_size, MAE_IMG_MAX);
    if (c->patch_size < 1 || c->patch_size > c->img_size) RANGE(w->patch, "%d is out of range [1, %d]", c->patch_size, c->img_size);
    if (c->img_size % c->patch_size) BAD("%s %d is not a multiple of %s %d", w->img, c->img_size, w->patch, c->patch_size);
    if (c->in_chans != 1 && c->in_chans != 3) BAD("%s %d must be 1 or 3", w->chans, c->in_chans);
    if (c->embed_dim < 1 || c->embed_dim > 16384) RANGE(w->dim, "%d is out of range [1, %d]", c->embed_dim, 16384);
    if (c->dec_embed_dim < 1 || c->dec_embed_dim > 16384) RANGE(w->ddim, "%d is out of range [1, %d]", c->dec_embed_dim, 16384);
    if (c->depth < 1 || c->depth > 256) RANGE(w->depth, "%d is out of range [1, %d]", c->depth, 256);
    if (c->dec_depth < 0 || c->dec_depth > 256) RANGE(w->ddepth, "%d is out of range [0, %d]", c->dec_depth, 256);
    // A head count of 0 (a hand-edited config) is out of range, not "192 is not divisible by num_heads 0".
    if (c->num_heads < 1 || c->num_heads > c->embed_dim) RANGE(w->heads, "%d is out of range [1, %d]", c->num_heads, c->embed_dim);
    if (c->embed_dim % c->num_heads) BAD("%s %d is not divisible by %s %d", w->dim, c->embed_dim, w->heads, c->num_heads);
    // Without decoder blocks (depth 0) no attention uses the decoder's heads: any count from 1 is taken.
    if (c->dec_num_heads < 1 || (c->dec_depth > 0 && c->dec_num_heads > c->dec_embed_dim))
        RANGE(w->dheads, "%d is out of range [1, %d]", c->dec_num_heads, c->dec_embed_dim);
    if (c->dec_depth > 0 && c->dec_embed_dim % c->dec_num_heads) BAD("%s %d is not divisible by %s %d", w->ddim, c->dec_embed_dim, w->dheads, c->dec_num_heads);
    // The 2D sin-cos table splits the dimension in 4 (sin/cos for each of 2 axes).
    if (c->embed_dim % 4) BAD("%s %d is not divisible by 4 (2D sin-cos position table)", w->dim, c->embed_dim);
    if (c->dec_embed_dim % 4) BAD("%s %d is not divisible by 4 (2D sin-cos position table)", w->ddim, c->dec_embed_dim);
    if (c->mlp_ratio < 1 || c->mlp_ratio > 64) BAD("mlp_ratio %d is out of range [1, 64]", c->mlp_ratio);
    if (!mask_ratio_in_range(c->mask_ratio)) RANGE(w->mask, "%g is out of range [0, 1)", c->mask_ratio);
    if (!(c->ln_eps > 0.0f)) BAD("layer_norm_eps %g must be > 0", c->ln_eps);
    for (int i = 0; i < c->in_chans; i++)
        if (!(c->pixel_std[i] > 0.0f)) BAD("pixel_std[%d] %g must be > 0", i, c->pixel_std[i]);
    long L = (long)mae_num_patches(c);
    if (L > 65536) {
        if (w == &FLAG_NAMES)
            BAD("%s %d / %s %d gives %ld patches, too many (at most 65536)", w->img, c->img_size, w->patch, c->patch_size, L);
        BAD("%ld patches is too many (at most 65536)", L);
    }
    return 0;
#undef RANGE
#undef BAD
}

int mae_config_check(const MaeConfig *c, char *err, size_t n) { return check_named(c, &CONFIG_NAMES, NULL, err, n); }
int mae_config_check_flags(const MaeConfig *c, const char **flag, char *err, size_t n) { return check_named(c, &FLAG_NAMES, flag, err, n); }

// ---------------------------------------------------------------------------------------------
// The parameter table

typedef struct { MaeTensor *out; int cap, n; size_t offset; } Table;

static void add(Table *t, const char *name, int ndim, int d0, int d1, int d2, int d3,
                int decay, int trainable, int decoder) {
    int dims[4] = {d0, d1, d2, d3};
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= (size_t)dims[i];
    if (t->n < t->cap) {
        MaeTensor *e = &t->out[t->n];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", name);
        e->ndim = ndim;
        for (int i = 0; i < ndim; i++) e->shape[i] = dims[i];
        e->offset = t->offset; e->numel = numel;
        e->decay = decay; e->trainable = trainable; e->decoder = decoder;
    }
    t->n++;
    t->offset += numel;
}

static void add_block(Table *t, const char *prefix, int i, int D, int hidden, int decoder) {
    char name[64];
#define NAME(s) (snprintf(name, sizeof name, "%s.%d.%s", prefix, i, s), name)
    add(t, NAME("norm1.weight"), 1, D, 0, 0, 0, 0, 1, decoder);
    add(t, NAME("norm1.bias"), 1, D, 0, 0, 0, 0, 1, decoder);
    add(t, NAME("attn.qkv.weight"), 2, 3 * D, D, 0, 0, 1, 1, decoder);
    add(t, NAME("attn.qkv.bias"), 1, 3 * D, 0, 0, 0, 0, 1, decoder);
    add(t, NAME("attn.proj.weight"), 2, D, D, 0, 0, 1, 1, decoder);
    add(t, NAME("attn.proj.bias"), 1, D, 0, 0, 0, 0, 1, decoder);
    add(t, NAME("norm2.weight"), 1, D, 0, 0, 0, 0, 1, decoder);
    add(t, NAME("norm2.bias"), 1, D, 0, 0, 0, 0, 1, decoder);
    add(t, NAME("mlp.fc1.weight"), 2, hidden, D, 0, 0, 1, 1, decoder);
    add(t, NAME("mlp.fc1.bias"), 1, hidden, 0, 0, 0, 0, 1, decoder);
    add(t, NAME("mlp.fc2.weight"), 2, D, hidden, 0, 0, 1, 1, decoder);
    add(t, NAME("mlp.fc2.bias"), 1, D, 0, 0, 0, 0, 1, decoder);
#undef NAME
}

// The encoder's tensors: the first of the MAE's table (and all of them a classifier takes from it).
static Table build_encoder_table(const MaeConfig *c, MaeTensor *out, int cap) {
    Table t = {out, cap, 0, 0};
    int D = c->embed_dim, P = c->patch_size, C = c->in_chans, T = 1 + mae_num_patches(c);
    int pos_train = c->pos_learned ? 1 : 0;
    add(&t, "cls_token", 3, 1, 1, D, 0, 0, 1, 0);
    add(&t, "pos_embed", 3, 1, T, D, 0, 0, pos_train, 0);
    add(&t, "patch_embed.proj.weight", 4, D, C, P, P, 1, 1, 0);
    add(&t, "patch_embed.proj.bias", 1, D, 0, 0, 0, 0, 1, 0);
    for (int i = 0; i < c->depth; i++) add_block(&t, "blocks", i, D, D * c->mlp_ratio, 0);
    return t;
}

// The encoder's tensors and its final norm: every tensor before the decoder's, a prefix of the buffer.
static Table build_encoder_model_table(const MaeConfig *c, MaeTensor *out, int cap) {
    Table t = build_encoder_table(c, out, cap);
    int D = c->embed_dim;
    add(&t, "norm.weight", 1, D, 0, 0, 0, 0, 1, 0);
    add(&t, "norm.bias", 1, D, 0, 0, 0, 0, 1, 0);
    return t;
}

static Table build_table(const MaeConfig *c, MaeTensor *out, int cap) {
    Table t = build_encoder_model_table(c, out, cap);
    int D = c->embed_dim, Dd = c->dec_embed_dim;
    int T = 1 + mae_num_patches(c), pd = mae_patch_dim(c);
    int pos_train = c->pos_learned ? 1 : 0;
    add(&t, "decoder_embed.weight", 2, Dd, D, 0, 0, 1, 1, 1);
    add(&t, "decoder_embed.bias", 1, Dd, 0, 0, 0, 0, 1, 1);
    add(&t, "mask_token", 3, 1, 1, Dd, 0, 0, 1, 1);
    add(&t, "decoder_pos_embed", 3, 1, T, Dd, 0, 0, pos_train, 1);
    for (int i = 0; i < c->dec_depth; i++) add_block(&t, "decoder_blocks", i, Dd, Dd * c->mlp_ratio, 1);
    add(&t, "decoder_norm.weight", 1, Dd, 0, 0, 0, 0, 1, 1);
    add(&t, "decoder_norm.bias", 1, Dd, 0, 0, 0, 0, 1, 1);
    add(&t, "decoder_pred.weight", 2, pd, Dd, 0, 0, 1, 1, 1);
    add(&t, "decoder_pred.bias", 1, pd, 0, 0, 0, 0, 1, 1);
    return t;
}

int mae_param_table(const MaeConfig *c, MaeTensor *out, int cap) { return build_table(c, out, cap).n; }

size_t mae_num_params(const MaeConfig *c) { return build_table(c, NULL, 0).offset; }

int mae_encoder_param_table(const MaeConfig *c, MaeTensor *out, int cap, size_t *numel) {
    Table t = build_encoder_table(c, out, cap);
    *numel = t.offset;
    return t.n;
}

int mae_encoder_model_table(const MaeConfig *c, MaeTensor *out, int cap, size_t *numel) {
    Table prefix = build_encoder_model_table(c, out, cap);
    *numel = prefix.offset;
    return prefix.n;
}

// ---------------------------------------------------------------------------------------------
// Pixel statistics

void pixels_normalise(const MaeConfig *cfg, float *px, long n) {
    int C = cfg->in_chans;
    for (long i = 0; i < n; i++)
        for (int c = 0; c < C; c++)
            px[i * C + c] = (px[i * C + c] - cfg->pixel_mean[c]) / cfg->pixel_std[c];
}

void pixels_denormalise(const MaeConfig *cfg, float *px, long n) {
    int C = cfg->in_chans;
    for (long i = 0; i < n; i++)
        for (int c = 0; c < C; c++)
            px[i * C + c] = px[i * C + c] * cfg->pixel_std[c] + cfg->pixel_mean[c];
}

// ---------------------------------------------------------------------------------------------
// The config as JSON

void config_float_text(float x, char *buf, size_t n) {
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, n, "%.*g", prec, (double)x);
        if (strtof(buf, NULL) == x && (float)strtod(buf, NULL) == x) break;
    }
}

cJSON *config_float_json(float x) {
    char buf[48];
    if (!isfinite(x)) return cJSON_CreateNull();
    config_float_text(x, buf, sizeof buf);
    return cJSON_CreateRaw(buf);
}

char *mae_config_to_json(const MaeConfig *c) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int ok = 1;
#define INT(key, v) ok &= cJSON_AddNumberToObject(o, key, (double)(v)) != NULL
#define FLT(key, v) do { cJSON *x_ = config_float_json(v); \
        if (x_ && !cJSON_AddItemToObject(o, key, x_)) { cJSON_Delete(x_); x_ = NULL; } ok &= x_ != NULL; } while (0)
    INT("img_size", c->img_size);
    INT("patch_size", c->patch_size);
    INT("in_chans", c->in_chans);
    INT("embed_dim", c->embed_dim);
    INT("depth", c->depth);
    INT("num_heads", c->num_heads);
    INT("decoder_embed_dim", c->dec_embed_dim);
    INT("decoder_depth", c->dec_depth);
    INT("decoder_num_heads", c->dec_num_heads);
    INT("mlp_ratio", c->mlp_ratio);
    ok &= cJSON_AddBoolToObject(o, "norm_pix_loss", c->norm_pix_loss != 0) != NULL;
    FLT("mask_ratio", c->mask_ratio);
    ok &= cJSON_AddStringToObject(o, "pos_embed", c->pos_learned ? "learned" : "fixed") != NULL;
    int C = c->in_chans >= 1 && c->in_chans <= 3 ? c->in_chans : 3;
    cJSON *mean = cJSON_AddArrayToObject(o, "pixel_mean"), *std = cJSON_AddArrayToObject(o, "pixel_std");
    ok &= mean && std;
    for (int i = 0; ok && i < C; i++) {
        cJSON *m = config_float_json(c->pixel_mean[i]), *s = config_float_json(c->pixel_std[i]);
        ok &= m && s;
        if (m) cJSON_AddItemToArray(mean, m);
        if (s) cJSON_AddItemToArray(std, s);
    }
    FLT("layer_norm_eps", c->ln_eps);
#undef INT
#undef FLT
    char *s = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

static int get_int(const cJSON *o, const char *key, int *out, char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) { snprintf(err, errlen, "config: missing field '%s'", key); return -1; }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 1e9) {
        snprintf(err, errlen, "config: field '%s' must be an integer", key);
        return -1;
    }
    *out = (int)v->valuedouble;
    return 0;
}

static int get_float(const cJSON *v, const char *key, float *out, char *err, size_t errlen) {
    if (!v) { snprintf(err, errlen, "config: missing field '%s'", key); return -1; }
    if (!cJSON_IsNumber(v)) {
        snprintf(err, errlen, "config: field '%s' must be a number", key);
        return -1;
    }
    if (!isfinite(v->valuedouble) || fabs(v->valuedouble) > 3e38) {   // 1e308 is a number, not a float32
        snprintf(err, errlen, "config: field '%s' %g is out of a float's range (at most 3e38 either way)", key,
                 v->valuedouble);
        return -1;
    }
    *out = (float)v->valuedouble;
    return 0;
}

static int get_channels(const cJSON *o, const char *key, int C, float *out, char *err, size_t errlen) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!a) { snprintf(err, errlen, "config: missing field '%s'", key); return -1; }
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != C) {
        snprintf(err, errlen, "config: field '%s' must be an array of in_chans (%d) numbers", key, C);
        return -1;
    }
    int i = 0;
    for (const cJSON *v = a->child; v; v = v->next, i++)
        if (get_float(v, key, &out[i], err, errlen)) return -1;
    return 0;
}

int mae_config_from_json(const char *json, MaeConfig *cfg, char *err, size_t errlen) {
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithOpts(json, &end, 0);
    if (!o) {
        if (json_parse_too_deep(json, strlen(json) + 1, end))
            snprintf(err, errlen, "config: " JSON_TOO_DEEP_FMT, CJSON_NESTING_LIMIT);
        else snprintf(err, errlen, "config: malformed JSON");
        return -1;
    }
    MaeConfig c;
    memset(&c, 0, sizeof c);
    int rc = -1;
    if (!cJSON_IsObject(o)) { snprintf(err, errlen, "config: not a JSON object"); goto out; }
    if (get_int(o, "img_size", &c.img_size, err, errlen) || get_int(o, "patch_size", &c.patch_size, err, errlen)
        || get_int(o, "in_chans", &c.in_chans, err, errlen) || get_int(o, "embed_dim", &c.embed_dim, err, errlen)
        || get_int(o, "depth", &c.depth, err, errlen) || get_int(o, "num_heads", &c.num_heads, err, errlen)
        || get_int(o, "decoder_embed_dim", &c.dec_embed_dim, err, errlen)
        || get_int(o, "decoder_depth", &c.dec_depth, err, errlen)
        || get_int(o, "decoder_num_heads", &c.dec_num_heads, err, errlen)
        || get_int(o, "mlp_ratio", &c.mlp_ratio, err, errlen))
        goto out;
    const cJSON *npl = cJSON_GetObjectItemCaseSensitive(o, "norm_pix_loss");
    if (!npl) { snprintf(err, errlen, "config: missing field 'norm_pix_loss'"); goto out; }
    if (!cJSON_IsBool(npl)) { snprintf(err, errlen, "config: field 'norm_pix_loss' must be true or false"); goto out; }
    c.norm_pix_loss = cJSON_IsTrue(npl);
    if (get_float(cJSON_GetObjectItemCaseSensitive(o, "mask_ratio"), "mask_ratio", &c.mask_ratio, err, errlen)) goto out;
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(o, "pos_embed");
    if (!pos) { snprintf(err, errlen, "config: missing field 'pos_embed'"); goto out; }
    if (!cJSON_IsString(pos) || (strcmp(pos->valuestring, "learned") && strcmp(pos->valuestring, "fixed"))) {
        snprintf(err, errlen, "config: field 'pos_embed' must be \"learned\" or \"fixed\"");
        goto out;
    }
    c.pos_learned = strcmp(pos->valuestring, "learned") == 0;
    if (c.in_chans != 1 && c.in_chans != 3) { snprintf(err, errlen, "config: in_chans %d must be 1 or 3", c.in_chans); goto out; }
    for (int i = 0; i < 3; i++) { c.pixel_mean[i] = 0.0f; c.pixel_std[i] = 1.0f; }
    if (get_channels(o, "pixel_mean", c.in_chans, c.pixel_mean, err, errlen)
        || get_channels(o, "pixel_std", c.in_chans, c.pixel_std, err, errlen))
        goto out;
    if (get_float(cJSON_GetObjectItemCaseSensitive(o, "layer_norm_eps"), "layer_norm_eps", &c.ln_eps, err, errlen)) goto out;
    char why[200];
    if (mae_config_check(&c, why, sizeof why)) { snprintf(err, errlen, "config: %s", why); goto out; }
    *cfg = c;
    rc = 0;
out:
    cJSON_Delete(o);
    return rc;
}
