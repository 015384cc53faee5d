// vitmae checkpoints (docs/interface.md section 4) on top of io/safetensors.c: the parameters under
// MAE's names, metadata "format" = "vitmae", the config JSON (core/config.c) under "config", and for
// resumable files the train_state JSON and the AdamW moments.
#include "io/checkpoint.h"
#include <cjson/cJSON.h>
#include "core/json_depth.h"
#include "core/version.h"
#include "io/json.h"
#include "kernels/cpu.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int table_of(const MaeConfig *cfg, MaeTensor **out) {
    int n = mae_param_table(cfg, NULL, 0);
    *out = malloc((size_t)n * sizeof **out);
    if (!*out) return -1;
    return mae_param_table(cfg, *out, n);
}

static StTensor st_of(const MaeTensor *t, const char *name, const float *base) {
    StTensor s;
    memset(&s, 0, sizeof s);
    s.name = name;
    s.ndim = t->ndim;
    for (int k = 0; k < t->ndim; k++) s.shape[k] = t->shape[k];
    s.data = base + t->offset;
    return s;
}

int ckpt_save(const char *path, const MaeConfig *cfg, const float *params, const char *train_state,
              const float *exp_avg, const float *exp_avg_sq, char *err, size_t errlen) {
    char why[200];
    if (mae_config_check(cfg, why, sizeof why)) { snprintf(err, errlen, "%s: config: %s", path, why); return -1; }
    if (train_state) {
        int oom;
        const char *end = NULL;
        size_t len = strlen(train_state) + 1;
        cJSON *ts = json_parse_n(train_state, len, &end, &oom);
        int ok = ts != NULL;
        cJSON_Delete(ts);
        if (!ok) {
            if (!oom && json_parse_too_deep(train_state, len, end))
                snprintf(err, errlen, "%s: train_state: " JSON_TOO_DEEP_FMT, path, CJSON_NESTING_LIMIT);
            else snprintf(err, errlen, oom ? "%s: out of memory" : "%s: train_state is not valid JSON", path);
            return -1;
        }
        if (!exp_avg || !exp_avg_sq) { snprintf(err, errlen, "%s: train_state given without AdamW moments", path); return -1; }
    }
    MaeTensor *tab = NULL;
    int n = table_of(cfg, &tab);
    int nt = train_state ? 3 * n : n;
    StTensor *st = malloc((size_t)nt * sizeof *st);
    char (*names)[96] = train_state ? malloc((size_t)2 * n * sizeof *names) : NULL;
    char *cfg_json = mae_config_to_json(cfg);
    int rc = -1;
    if (n < 0 || !st || (train_state && !names) || !cfg_json) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    for (int i = 0; i < n; i++) st[i] = st_of(&tab[i], tab[i].name, params);
    if (train_state)
        for (int i = 0; i < n; i++) {
            snprintf(names[i], sizeof names[i], "optimizer.exp_avg.%s", tab[i].name);
            snprintf(names[n + i], sizeof names[n + i], "optimizer.exp_avg_sq.%s", tab[i].name);
            st[n + i] = st_of(&tab[i], names[i], exp_avg);
            st[2 * n + i] = st_of(&tab[i], names[n + i], exp_avg_sq);
        }
    // vitmae_version: the program that wrote the file (docs/interface.md, section 4); header only, so the
    // tensors' bytes are the same whoever wrote them.
    const char *keys[4] = {"format", "vitmae_version", "config", "train_state"};
    const char *vals[4] = {"vitmae", vitmae_version(), cfg_json, train_state};
    if (ckpt_check_finite(tab, n, params, train_state ? exp_avg : NULL, train_state ? exp_avg_sq : NULL, why,
                          sizeof why))
        snprintf(err, errlen, "%s: not written: %s (the model diverged)", path, why);
    else
        rc = st_write(path, st, nt, keys, vals, train_state ? 4 : 3, err, errlen);
out:
    free(cfg_json); free(names); free(st); free(tab);
    return rc;
}

static int nonfinite(char *why, size_t whylen, const char *prefix, const char *name) {
    snprintf(why, whylen, "tensor '%s%s' holds NaN or infinite values", prefix, name);
    return -1;
}

int ckpt_check_finite_array(const MaeTensor *tab, int n, const float *x, const char *prefix, char *why,
                            size_t whylen) {
    for (int i = 0; x && i < n; i++) {
        const float *t = x + tab[i].offset;
        int bad = 0;
        for (size_t k = 0; k < tab[i].numel; k++) bad |= !isfinite(t[k]);   // no early exit: vectorises
        if (bad) return nonfinite(why, whylen, prefix, tab[i].name);
    }
    return 0;
}

int ckpt_check_finite(const MaeTensor *tab, int n, const float *params, const float *m, const float *v, char *why,
                      size_t whylen) {
    return ckpt_check_finite_array(tab, n, params, "", why, whylen) ||
                   ckpt_check_finite_array(tab, n, m, CKPT_EXP_AVG_PREFIX, why, whylen) ||
                   ckpt_check_finite_array(tab, n, v, CKPT_EXP_AVG_SQ_PREFIX, why, whylen)
               ? -1
               : 0;
}

// A classifier's tensor outside the MAE table and fc_norm: its head, its AdamW moments, its EMA weights
// (those the encoder's average takes are scanned too: harmless); reading the average (ema), its fc_norm too.
static int clf_tensor_read_past(const char *name, int ema) {
    return !strncmp(name, "head.", 5) || !strncmp(name, "optimizer.exp_avg", strlen("optimizer.exp_avg")) ||
           !strncmp(name, CKPT_EMA_PREFIX, strlen(CKPT_EMA_PREFIX)) || (ema && !strncmp(name, "fc_norm.", 8));
}

int ckpt_check_scanned(const StFile *f, const MaeTensor *tab, int n, const char *prefix, char *why, size_t whylen) {
    char name[160];
    for (int i = 0, at; i < n; i++) {
        snprintf(name, sizeof name, "%s%s", prefix, tab[i].name);
        if ((at = st_find(f, name, NULL, NULL)) >= 0 && st_nonfinite(f, at)) return nonfinite(why, whylen, prefix, tab[i].name);
    }
    return 0;
}

int ckpt_check_scanned_moments(const StFile *f, const MaeTensor *tab, int n, char *why, size_t whylen) {
    return ckpt_check_scanned(f, tab, n, CKPT_EXP_AVG_PREFIX, why, whylen) ||
                   ckpt_check_scanned(f, tab, n, CKPT_EXP_AVG_SQ_PREFIX, why, whylen)
               ? -1
               : 0;
}

void ckpt_free(Checkpoint *c) {
    if (!c) return;
    free(c->params); free(c->train_state); free(c->exp_avg); free(c->exp_avg_sq); free(c->fc_norm);
    memset(c, 0, sizeof *c);
}

int ckpt_has_prefix(const StFile *f, const char *prefix) {
    for (int i = 0; i < st_count(f); i++)
        if (!strncmp(st_tensor_name(f, i), prefix, strlen(prefix))) return 1;
    return 0;
}

int ckpt_state_keeps_ema(const char *train_state) {
    int oom = 0;
    cJSON *o = train_state ? json_parse(train_state, &oom) : NULL;
    const cJSON *m = o ? cJSON_GetObjectItemCaseSensitive(o, "model_ema") : NULL;
    int kept = cJSON_IsNumber(m) ? m->valuedouble != 0 : cJSON_IsTrue(m);
    cJSON_Delete(o);
    return kept;
}

const char *ckpt_no_ema_why(const StFile *f) {
    return ckpt_state_keeps_ema(st_meta(f, "train_state"))
               ? "its run kept them (model_ema), and this file's ema.* tensors were stripped"
               : "fine-tuned without --model-ema";
}

// The block index of name's first "WORD.K." part at its start or after a '.' (word "blocks" or
// "decoder_blocks"), or -1.
static long block_index(const char *name, const char *word) {
    size_t w = strlen(word);
    for (const char *p = name; (p = strstr(p, word)) != NULL; p += w) {
        if (p != name && p[-1] != '.') continue;   // "decoder_blocks." holds "blocks." after '_'
        const char *d = p + w;
        if (*d != '.' || d[1] < '0' || d[1] > '9') continue;
        char *end;
        long k = strtol(d + 1, &end, 10);
        if (*end == '.') return k;
    }
    return -1;
}

int ckpt_check_block_names(const StFile *f, int depth, int dec_depth, char *err, size_t errlen) {
    for (int i = 0; i < st_count(f); i++) {
        const char *name = st_tensor_name(f, i);
        long k = block_index(name, "blocks"), d = dec_depth >= 0 ? block_index(name, "decoder_blocks") : -1;
        if (k < depth && (dec_depth < 0 || d < dec_depth)) continue;
        char q[UTF8_CLIP_SIZE];
        snprintf(err, errlen, "%s: holds tensor '%s', of a block past the config's %s %d (the config does not describe "
                 "the file: a hand-edited config, or a conversion given the wrong depth)", st_name(f),
                 utf8_clip(q, name), k >= depth ? "depth" : "decoder_depth", k >= depth ? depth : dec_depth);
        return -1;
    }
    return 0;
}

int ckpt_has_moments(const StFile *f) { return ckpt_has_prefix(f, "optimizer.exp_avg"); }

int ckpt_take(StFile *f, const char *path, const char *name, const MaeTensor *t, float *dst,
              char *err, size_t errlen) {
    int nd;
    int64_t sh[4];
    int at = st_find(f, name, &nd, sh);
    if (at < 0) return 1;
    int same = nd == t->ndim;
    for (int k = 0; same && k < nd; k++) same = sh[k] == t->shape[k];
    if (!same) {
        char got[96], want[96];
        int64_t want_shape[4];
        for (int k = 0; k < 4; k++) want_shape[k] = t->shape[k];
        st_shape_str(nd, sh, got, sizeof got);
        st_shape_str(t->ndim, want_shape, want, sizeof want);
        snprintf(err, errlen, "%s: tensor '%s' has shape %s, the config needs %s", path, name, got, want);
        return -1;
    }
    if (dst) st_take(f, at, dst + t->offset);
    return 0;
}

// What a read keeps: the weights (the moments checked, not copied), the moments too, of the weights
// only the encoder's (the tensors before the decoder's; the rest checked, not copied), or the encoder's
// of a classifier's moving average (ema.<name>; the weights checked, not copied).
enum { LOAD_WEIGHTS, LOAD_ALL, LOAD_ENCODER, LOAD_ENCODER_EMA };

static int from_st(StFile *f, Checkpoint *out, int mode, char *err, size_t errlen);

static int load(const char *path, Checkpoint *out, int mode, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    StFile *f = st_open_header(path, err, errlen);   // the data straight into out's arrays
    if (!f) return -1;
    int rc = from_st(f, out, mode, err, errlen);
    st_close(f);
    return rc;
}

int ckpt_load(const char *path, Checkpoint *out, char *err, size_t errlen) { return load(path, out, LOAD_ALL, err, errlen); }
int ckpt_load_weights(const char *path, Checkpoint *out, char *err, size_t errlen) { return load(path, out, LOAD_WEIGHTS, err, errlen); }
int ckpt_load_encoder(const char *path, Checkpoint *out, char *err, size_t errlen) { return load(path, out, LOAD_ENCODER, err, errlen); }
int ckpt_load_encoder_ema(const char *path, Checkpoint *out, char *err, size_t errlen) {
    return load(path, out, LOAD_ENCODER_EMA, err, errlen);
}
int ckpt_encoder_from_st(StFile *f, int ema, Checkpoint *out, char *err, size_t errlen) {
    return from_st(f, out, ema ? LOAD_ENCODER_EMA : LOAD_ENCODER, err, errlen);
}
int ckpt_from_st(StFile *f, int moments, Checkpoint *out, char *err, size_t errlen) {
    return from_st(f, out, moments ? LOAD_ALL : LOAD_WEIGHTS, err, errlen);
}

int ckpt_peek_has_state(const char *path) {
    char why[512];
    StFile *f = st_open_header(path, why, sizeof why);
    int has = f && st_meta(f, "train_state");
    if (f) st_close(f);
    return has;
}

int ckpt_peek_kind(const char *path, int takes, char *err, size_t errlen) {
    StFile *f = st_open_header(path, err, errlen);
    if (!f) return -1;
    int kind = st_meta(f, "classifier") ? CKPT_CLASSIFIER : CKPT_FULL;
    const char *format = st_meta(f, "format"), *cfg_json = st_meta(f, "config");
    MaeConfig cfg;
    char why[256];
    // Only a file the loader goes on to read the tensors of (format and config sound) is encoder-only;
    // the others are refused by it for what is wrong, and so is one whose encoder is missing too (a
    // wrapper's prefix on every name, module.cls_token: "encoder-only" hid the loader's advice to strip it).
    if (kind == CKPT_FULL && !(format && strcmp(format, "vitmae")) && cfg_json &&
        !mae_config_from_json(cfg_json, &cfg, why, sizeof why)) {
        MaeTensor *tab = NULL;
        int n = table_of(&cfg, &tab), dec_total = 0, dec_present = 0, enc_present = 0;
        for (int i = 0; i < n; i++) {
            int there = st_find(f, tab[i].name, NULL, NULL) >= 0;
            if (tab[i].decoder) { dec_total++; dec_present += there; }
            else enc_present += there;
        }
        if (dec_total > 0 && dec_present == 0 && enc_present > 0) kind = CKPT_ENCODER_ONLY;
        free(tab);
    }
    if (!(kind & takes) && st_verify(f, err, errlen)) kind = -1;
    st_close(f);
    return kind;
}

static int from_st(StFile *f, Checkpoint *out, int mode, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int moments = mode == LOAD_ALL, ema = mode == LOAD_ENCODER_EMA;
    const char *kp = ema ? CKPT_EMA_PREFIX : "";   // the prefix of the tensors kept
    const char *path = st_name(f);
    MaeTensor *tab = NULL;
    int rc = -1;
    const char *format = st_meta(f, "format");
    if (format && strcmp(format, "vitmae") != 0) {
        char q[UTF8_CLIP_SIZE];
        snprintf(err, errlen, "%s: __metadata__ format is '%s', not 'vitmae'", path, utf8_clip(q, format));
        goto out;
    }
    const char *cfg_json = st_meta(f, "config");
    if (!cfg_json) {
        snprintf(err, errlen, "%s: no 'config' in __metadata__ (not a vitmae checkpoint; add the model config to convert one)", path);
        goto out;
    }
    char why[256];
    if (mae_config_from_json(cfg_json, &out->cfg, why, sizeof why)) { snprintf(err, errlen, "%s: %s", path, why); goto out; }
    if (ckpt_check_block_names(f, out->cfg.depth, out->cfg.dec_depth, err, errlen)) goto out;
    int n = table_of(&out->cfg, &tab);
    if (!tab) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    // A fine-tuned classifier (io/classifier_ckpt.h) has the encoder without the final `norm` (its
    // global pooling uses fc_norm): it loads here for the encoder's users with `norm` weight 1 and bias
    // 0 (attention maps do not use it; infer/features.c uses the blocks' own tokens and fc_norm), no
    // decoder and no train state (its optimizer state is the classifier's).
    out->classifier = st_meta(f, "classifier") != NULL;
    if (out->classifier)
        for (int i = 0; i < n; i++)
            if (!strcmp(tab[i].name, "norm.weight") || !strcmp(tab[i].name, "norm.bias")) tab[i].decoder = 1;
    if (ema && !(out->classifier && ckpt_has_prefix(f, CKPT_EMA_PREFIX))) {
        snprintf(err, errlen, "%s: holds no EMA weights (%s)", path, out->classifier ? ckpt_no_ema_why(f)
                 : "not a fine-tuned classifier: --ema reads the moving average a finetune --model-ema run keeps");
        goto out;
    }
    // Every parameter the config asks for must be in the file before anything config-sized is
    // allocated: a small hostile header cannot make us reserve gigabytes. (The file holds each
    // tensor it names, so from here on the allocations are bounded by the file's size.)
    size_t enc_numel = 0, dec_numel = 0, dec_in_file = 0;
    for (int i = 0; i < n; i++) {
        int r = ckpt_take(f, path, tab[i].name, &tab[i], NULL, err, errlen);   // names and shapes only
        if (r < 0) goto out;
        if (r == 1 && !tab[i].decoder) { st_missing(f, tab[i].name, err, errlen); goto out; }
        if (tab[i].decoder) { dec_numel += tab[i].numel; dec_in_file += r == 0; }
        else enc_numel += tab[i].numel;
    }
    // An encoder-only file still gets a (zero) decoder of the config's size, which no tensor in the
    // file vouches for: bound it. MAE's decoders are at most 26M parameters (512 wide, 8 blocks, for
    // every encoder size; converters write that default), so the cap is max(64M, 4 x the encoder).
    if (dec_in_file == 0 && dec_numel > 4 * enc_numel && dec_numel > ((size_t)64 << 20)) {
        snprintf(err, errlen, "%s: the config's decoder (%zu parameters) is implausibly large for an encoder-only file of %zu parameters",
             path, dec_numel, enc_numel);
        goto out;
    }
    size_t np = mae_num_params(&out->cfg), kept_numel = np;
    // The tensors read into params: every one, or (LOAD_ENCODER) the first `kept`, the prefix of the
    // layout the encoder-only model holds; the others' values pass through st_fill's buffer, checked
    // for the crc32 and for NaN as if kept (st_scan).
    int kept = mode == LOAD_ENCODER || ema ? mae_encoder_model_table(&out->cfg, NULL, 0, &kept_numel) : n;
    out->params = cpu_calloc_big(kept_numel ? kept_numel : 1, sizeof(float));   // as a model's own (mae_create_*_with take it)
    if (!out->params) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    // Encoder-only files (decoder dropped, as MAE's fine-tuning checkpoints) have no decoder tensor.
    int dec_total = 0, dec_present = 0;
    const char *first_missing_dec = NULL, *clf_norm = NULL;
    for (int i = 0; i < n; i++) {
        int r = ckpt_take(f, path, tab[i].name, &tab[i], i < kept && !ema ? out->params : NULL, err, errlen);
        if (r < 0) goto out;
        if (r == 1 && !tab[i].decoder) { st_missing(f, tab[i].name, err, errlen); goto out; }
        if (r == 0 && (i >= kept || ema)) st_scan(f, st_find(f, tab[i].name, NULL, NULL));
        if (ema && !tab[i].decoder) {   // the average's tensor in its place (the encoder's are all before `kept`)
            char name[160];
            snprintf(name, sizeof name, CKPT_EMA_PREFIX "%s", tab[i].name);
            int e = ckpt_take(f, path, name, &tab[i], out->params, err, errlen);
            if (e < 0) goto out;
            if (e == 1) {
                snprintf(err, errlen, "%s: missing tensor '%s' (the file holds other EMA weights: all of them, or none)", path, name);
                goto out;
            }
        }
        if (tab[i].decoder) {
            dec_total++;
            dec_present += r == 0;
            if (r == 1 && !first_missing_dec) first_missing_dec = tab[i].name;
            if (r == 0 && out->classifier && !clf_norm && !strncmp(tab[i].name, "norm.", 5)) clf_norm = tab[i].name;
        }
    }
    if (clf_norm && dec_present < dec_total) {   // not "part of the decoder": a norm a classifier has not
        snprintf(err, errlen, "%s: tensor '%s' in a fine-tuned classifier, whose encoder has no final 'norm' (its "
                 "pooled features' norm is fc_norm)", path, clf_norm);
        goto out;
    }
    if (dec_present > 0 && dec_present < dec_total) {
        snprintf(err, errlen, "%s: missing tensor '%s' (the file has only part of the decoder)", path, first_missing_dec);
        goto out;
    }
    out->has_decoder = dec_present > 0 || dec_total == 0;
    if (out->classifier) {   // its fc_norm too, in the same pass: the pooled features' norm (infer/features.c)
        size_t D = (size_t)out->cfg.embed_dim;
        MaeTensor fn = {.ndim = 1, .shape = {(int)D}, .numel = D};
        out->fc_norm = malloc(2 * D * sizeof(float));
        if (!out->fc_norm) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
        for (int k = 0; k < 2; k++) {
            const char *name = k ? "fc_norm.bias" : "fc_norm.weight";
            char ename[32];
            snprintf(ename, sizeof ename, "%s%s", kp, name);
            fn.offset = k * D;
            for (int w = 0; w <= ema; w++) {   // the weights' (read past when the average's is kept), the average's
                const char *which = w ? ename : name;
                int r = ckpt_take(f, path, which, &fn, w || !ema ? out->fc_norm : NULL, err, errlen);
                if (r < 0) goto out;
                if (r == 1 && w) {
                    snprintf(err, errlen, "%s: missing tensor '%s' (the file holds other EMA weights: all of them, or none)", path, which);
                    goto out;
                }
                if (r == 1) { st_missing(f, which, err, errlen); goto out; }
            }
        }
        // Its head and AdamW moments, which the encoder's users do not keep, checked for NaN as the
        // classifier's own reader checks them (classify and info refuse such a file: so do they).
        for (int i = 0; i < st_count(f); i++)
            if (clf_tensor_read_past(st_tensor_name(f, i), ema)) st_scan(f, i);
    }
    const char *ts = out->classifier ? NULL : st_meta(f, "train_state");
    if (ts && !(out->train_state = strdup(ts))) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    out->has_moments = ts && ckpt_has_moments(f);   // none at all: stripped to share the weights
    if (out->has_moments) {
        if (moments) {
            out->exp_avg = calloc(np ? np : 1, sizeof(float));
            out->exp_avg_sq = calloc(np ? np : 1, sizeof(float));
        }
        if (moments && (!out->exp_avg || !out->exp_avg_sq)) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
        for (int i = 0; i < n; i++) {
            if (tab[i].decoder && !out->has_decoder) continue;
            char name[96];
            for (int m = 0; m < 2; m++) {
                snprintf(name, sizeof name, "optimizer.%s.%s", m ? "exp_avg_sq" : "exp_avg", tab[i].name);
                int r = ckpt_take(f, path, name, &tab[i], m ? out->exp_avg_sq : out->exp_avg, err, errlen);
                if (r < 0) goto out;
                if (r == 0 && !moments) st_scan(f, st_find(f, name, NULL, NULL));   // read past, checked as if kept
                if (r == 1) {
                    snprintf(err, errlen, "%s: missing tensor '%s' (the file holds other AdamW moments: all of them, or none to share "
                             "the weights alone)", path, name);
                    goto out;
                }
            }
        }
    }
    if (st_fill(f, err, errlen)) goto out;   // a file from st_open_header: its data arrive here
    // In table order, as one array would be checked: the kept tensors come first.
    // Reading the average, the weights (read past) are checked here, first, as the classifier's reader
    // checks them; the average below, with the classifier's tensors outside the table (all of ema.* scanned).
    int bad = ema ? ckpt_check_scanned(f, tab, n, "", why, sizeof why)
                  : ckpt_check_finite(tab, kept, out->params, out->exp_avg, out->exp_avg_sq, why, sizeof why);
    for (int i = kept, at; i < n && !bad; i++)
        if ((at = st_find(f, tab[i].name, NULL, NULL)) >= 0 && st_nonfinite(f, at)) bad = nonfinite(why, sizeof why, "", tab[i].name);
    if (!bad && out->has_moments && !moments) bad = ckpt_check_scanned_moments(f, tab, n, why, sizeof why);
    if (bad) {
        snprintf(err, errlen, "%s: %s", path, why);
        goto out;
    }
    if (out->classifier) {   // fc_norm is outside the MAE table; the pooled features pass through it
        size_t D = (size_t)out->cfg.embed_dim;
        MaeTensor fn[2] = {{.name = "fc_norm.weight", .ndim = 1, .shape = {(int)D}, .numel = D},
                           {.name = "fc_norm.bias", .ndim = 1, .shape = {(int)D}, .numel = D, .offset = D}};
        int nonfin = ckpt_check_finite_array(fn, 2, out->fc_norm, kp, why, sizeof why);
        for (int i = 0; i < st_count(f) && !nonfin; i++)
            if (clf_tensor_read_past(st_tensor_name(f, i), ema) && st_nonfinite(f, i)) nonfin = nonfinite(why, sizeof why, "", st_tensor_name(f, i));
        if (nonfin) {
            snprintf(err, errlen, "%s: %s", path, why);
            goto out;
        }
        for (int i = 0; i < n; i++)
            if (!strcmp(tab[i].name, "norm.weight")) for (size_t j = 0; j < tab[i].numel; j++) out->params[tab[i].offset + j] = 1.0f;
        out->has_decoder = 0;
    }
    rc = 0;
out:
    free(tab);
    if (rc) {
        st_verify(f, err, errlen);   // damaged data are the reason given, whatever else is wrong
        ckpt_free(out);
    }
    return rc;
}
