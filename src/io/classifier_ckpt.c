// Classifier checkpoints (see classifier_ckpt.h).
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/json_depth.h"
#include "core/version.h"
#include "io/classifier_ckpt.h"
#include "io/json.h"
#include "kernels/cpu.h"

int clf_ckpt_is_classifier(const StFile *f) { return st_meta(f, "classifier") != NULL; }

static char *classifier_json(const ClassifierConfig *cfg, char *const *classes) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "num_classes", cfg->num_classes);
    cJSON *names = cJSON_AddArrayToObject(o, "classes");
    for (int i = 0; names && i < cfg->num_classes; i++) cJSON_AddItemToArray(names, cJSON_CreateString(classes[i]));
    cJSON_AddStringToObject(o, "global_pool", "avg");
    char *s = json_print_utf8(o, 0);
    cJSON_Delete(o);
    return s;
}

// The prefixes of a classifier file's tensor arrays, in the file's order: the weights, the AdamW moments,
// the EMA weights.
static const char *const ARRAY_PREFIX[4] = {"", CKPT_EXP_AVG_PREFIX, CKPT_EXP_AVG_SQ_PREFIX, CKPT_EMA_PREFIX};

int clf_ckpt_save(const char *path, const ClassifierConfig *cfg, char *const *classes, const float *params,
                  const char *train_state, const float *exp_avg, const float *exp_avg_sq, const float *ema, char *err,
                  size_t errlen) {
    char why[200];
    if (clf_config_check(cfg, why, sizeof why)) { snprintf(err, errlen, "%s: config: %s", path, why); return -1; }
    if (train_state && (!exp_avg || !exp_avg_sq)) { snprintf(err, errlen, "%s: train_state without AdamW moments", path); return -1; }
    const float *arrays[4] = {params, train_state ? exp_avg : NULL, train_state ? exp_avg_sq : NULL, ema};
    int n = clf_param_table(cfg, NULL, 0);
    MaeTensor *tab = malloc((size_t)n * sizeof *tab);
    StTensor *st = calloc((size_t)4 * n, sizeof *st);
    char (*names)[96] = malloc((size_t)3 * n * sizeof *names);
    char *cfg_json = mae_config_to_json(&cfg->enc), *clf_json = classifier_json(cfg, classes);
    int rc = -1, nt = 0;
    if (!tab || !st || !names || !cfg_json || !clf_json) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    clf_param_table(cfg, tab, n);
    for (int m = 0; m < 4; m++) {
        if (!arrays[m]) continue;
        for (int i = 0; i < n; i++) {
            StTensor *s = &st[nt++];
            if (m == 0) s->name = tab[i].name;
            else {
                snprintf(names[(m - 1) * n + i], sizeof names[0], "%s%s", ARRAY_PREFIX[m], tab[i].name);
                s->name = names[(m - 1) * n + i];
            }
            s->ndim = tab[i].ndim;
            for (int k = 0; k < tab[i].ndim; k++) s->shape[k] = tab[i].shape[k];
            s->data = arrays[m] + tab[i].offset;
        }
    }
    const char *keys[5] = {"format", "vitmae_version", "config", "classifier", "train_state"};
    const char *vals[5] = {"vitmae", vitmae_version(), cfg_json, clf_json, train_state};
    int bad = 0;
    for (int m = 0; m < 4 && !bad; m++) bad = ckpt_check_finite_array(tab, n, arrays[m], ARRAY_PREFIX[m], why, sizeof why);
    if (bad) snprintf(err, errlen, "%s: not written: %s (the model diverged)", path, why);
    else rc = st_write(path, st, nt, keys, vals, train_state ? 5 : 4, err, errlen);
out:
    free(tab); free(st); free(names); free(cfg_json); free(clf_json);
    return rc;
}

void clf_ckpt_free(ClfCheckpoint *c) {
    if (!c) return;
    if (c->classes) for (int i = 0; i < c->cfg.num_classes; i++) free(c->classes[i]);
    free(c->classes); free(c->params); free(c->train_state); free(c->exp_avg); free(c->exp_avg_sq); free(c->ema);
    memset(c, 0, sizeof *c);
}

// Tensor `name` with the table entry's shape into dst + offset, now or at st_fill (dst NULL: checks
// only). 0 ok, -1 (err) missing or misshapen (its shape and the config's said, as the pretraining
// reader says them).
static int take(StFile *f, const char *name, const MaeTensor *t, float *dst, char *err, size_t errlen) {
    int r = ckpt_take(f, st_name(f), name, t, dst, err, errlen);
    if (r > 0) st_missing(f, name, err, errlen);
    return r ? -1 : 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// 1 with "PATH: class 'NAME' is named twice ..." in err when two of names[0..n) are the same; else 0
// (also when out of memory for the sorted copy: then err says so and it returns 1).
static int classes_repeat(char *const *names, int n, const char *path, char *err, size_t errlen) {
    char **sorted = malloc((size_t)(n ? n : 1) * sizeof *sorted);
    if (!sorted) { snprintf(err, errlen, "%s: out of memory", path); return 1; }
    memcpy(sorted, names, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_names);
    int rep = 0;
    char q[UTF8_CLIP_SIZE];
    for (int i = 1; i < n && !rep; i++)
        if (!strcmp(sorted[i - 1], sorted[i])) {
            snprintf(err, errlen, "%s: metadata 'classifier': class '%s' is named twice", path, utf8_clip(q, sorted[i]));
            rep = 1;
        }
    free(sorted);
    return rep;
}

// How the EMA weights are read: checked (names, shapes, values) but not copied, copied into out->ema, or
// taken as the weights (out->params).
enum { EMA_CHECK, EMA_KEEP, EMA_AS_WEIGHTS };

// moments 0: the AdamW moments are checked (names, shapes) but not copied (clf_ckpt_load_weights).
// header_only 1: the checks of the header alone (metadata, class names, every tensor's name and shape),
// nothing config-sized allocated and no data asked for: what clf_ckpt_load_encoder checks before the
// MAE loader reads the file.
static int check_and_take(StFile *f, ClfCheckpoint *out, int moments, int ema, int header_only, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const char *path = st_name(f), *cfg_json = st_meta(f, "config"), *cj = st_meta(f, "classifier");
    const char *format = st_meta(f, "format");
    if (!cj && ckpt_has_prefix(f, "head.")) {   // a head without the classes it scores: not "no head"
        snprintf(err, errlen, "%s: not a classifier checkpoint (it holds head tensors, but its metadata 'classifier', the "
                 "classes they score, is missing)", path);
        return -1;
    }
    if (!cj) { snprintf(err, errlen, "%s: not a classifier checkpoint (no head; fine-tune it first with vitmae finetune)", path); return -1; }
    if ((format && strcmp(format, "vitmae")) || !cfg_json) { snprintf(err, errlen, "%s: not a vitmae checkpoint", path); return -1; }
    char why[256];
    if (mae_config_from_json(cfg_json, &out->cfg.enc, why, sizeof why)) { snprintf(err, errlen, "%s: %s", path, why); return -1; }
    if (ckpt_check_block_names(f, out->cfg.enc.depth, -1, err, errlen)) return -1;
    int oom;
    const char *end = NULL;
    cJSON *o = json_parse_n(cj, strlen(cj) + 1, &end, &oom);
    if (oom) { snprintf(err, errlen, "%s: out of memory", path); return -1; }
    if (!o && json_parse_too_deep(cj, strlen(cj) + 1, end)) {   // well-formed, maybe: not "needs num_classes"
        snprintf(err, errlen, "%s: metadata 'classifier': " JSON_TOO_DEEP_FMT, path, CJSON_NESTING_LIMIT);
        return -1;
    }
    if (!o) {   // a syntax error, and where it is, as every reader says it: not "needs num_classes"
        if (end && end >= cj) snprintf(err, errlen, "%s: metadata 'classifier' is not valid JSON (at byte %zu)", path, (size_t)(end - cj));
        else snprintf(err, errlen, "%s: metadata 'classifier' is not valid JSON", path);
        return -1;
    }
    const cJSON *nc = cJSON_GetObjectItemCaseSensitive(o, "num_classes");
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(o, "classes");
    int rc = -1;
    MaeTensor *tab = NULL;
    // Compared as the number the file holds: cJSON's valueint truncates (3.7 read as 3) and saturates.
    if (!cJSON_IsNumber(nc) || !cJSON_IsArray(names) || cJSON_GetArraySize(names) != nc->valuedouble) {
        snprintf(err, errlen, "%s: metadata 'classifier' needs num_classes and as many class names", path);
        goto out;
    }
    out->cfg.num_classes = cJSON_GetArraySize(names);
    if (clf_config_check(&out->cfg, why, sizeof why)) { snprintf(err, errlen, "%s: %s", path, why); goto out; }
    int K = out->cfg.num_classes;
    out->classes = calloc((size_t)K, sizeof *out->classes);
    if (!out->classes) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    int i = 0;
    for (const cJSON *v = names->child; v; v = v->next, i++) {
        if (!cJSON_IsString(v)) { snprintf(err, errlen, "%s: class names must be strings", path); goto out; }
        // An empty name printed as nothing in classify's lines and JSON (finetune names a class by its
        // folder, tools/convert_mae.py --classes refuses an empty line).
        if (!*v->valuestring) { snprintf(err, errlen, "%s: class %d has an empty name", path, i); goto out; }
        out->classes[i] = strdup(v->valuestring);
        if (!out->classes[i]) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    }
    // A class named twice would make a prediction's name (and classify's labels) ambiguous; the
    // names are compared sorted, not each with each (a head may have many classes).
    if (classes_repeat(out->classes, K, path, err, errlen)) goto out;
    // The head pools the patch tokens (timm's global_pool="avg"); a file that says otherwise would be
    // computed as it does not say.
    const cJSON *pool = cJSON_GetObjectItemCaseSensitive(o, "global_pool");
    if (pool && !(cJSON_IsString(pool) && !strcmp(pool->valuestring, "avg"))) {
        char q[UTF8_CLIP_SIZE];
        snprintf(err, errlen, "%s: metadata 'classifier': global_pool %s is not supported (vitmae's heads pool "
                 "the patch tokens: \"avg\")", path, cJSON_IsString(pool) ? utf8_clip(q, pool->valuestring) : "(not a string)");
        goto out;
    }
    int n = clf_param_table(&out->cfg, NULL, 0);
    tab = malloc((size_t)n * sizeof *tab);
    if (!tab) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    clf_param_table(&out->cfg, tab, n);
    for (int k = 0; k < n; k++)   // names and shapes before anything config-sized is allocated
        if (take(f, tab[k].name, &tab[k], NULL, err, errlen)) goto out;
    size_t np = clf_num_params(&out->cfg);
    // as a classifier's own (clf_create_forward_with takes it)
    out->params = header_only ? NULL : cpu_calloc_big(np, sizeof(float));
    if (!out->params && !header_only) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    int scan = !header_only;   // the values of what is read past are checked at st_fill, which header_only skips
    // With EMA_AS_WEIGHTS the weights are read past (checked as if kept) and the average is taken there.
    float *weights = ema == EMA_AS_WEIGHTS ? NULL : out->params;
    for (int k = 0; k < n; k++) {
        if (take(f, tab[k].name, &tab[k], weights, err, errlen)) goto out;
        if (!weights && scan) st_scan(f, st_find(f, tab[k].name, NULL, NULL));
    }
    const char *ts = st_meta(f, "train_state");
    if (ts && !(out->train_state = strdup(ts))) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
    out->has_moments = ts && ckpt_has_moments(f);   // none at all: stripped to share the weights
    if (out->has_moments) {
        if (moments) {
            out->exp_avg = calloc(np, sizeof(float));
            out->exp_avg_sq = calloc(np, sizeof(float));
        }
        if (moments && (!out->exp_avg || !out->exp_avg_sq)) { snprintf(err, errlen, "%s: out of memory", path); goto out; }
        char name[128];
        for (int k = 0; k < n; k++) {
            for (int m = 0; m < 2; m++) {
                snprintf(name, sizeof name, "optimizer.%s.%s", m ? "exp_avg_sq" : "exp_avg", tab[k].name);
                if (take(f, name, &tab[k], m ? out->exp_avg_sq : out->exp_avg, err, errlen)) goto out;
                if (!moments && scan) st_scan(f, st_find(f, name, NULL, NULL));   // read past, checked as if kept
            }
        }
    }
    // The EMA weights (finetune --model-ema): every ema.<name> of the table, or none.
    out->has_ema = ckpt_has_prefix(f, CKPT_EMA_PREFIX);
    if (ema == EMA_AS_WEIGHTS && !out->has_ema) {
        snprintf(err, errlen, "%s: holds no EMA weights (%s)", path, ckpt_no_ema_why(f));
        goto out;
    }
    if (ema == EMA_KEEP && out->has_ema && !(out->ema = cpu_calloc_big(np, sizeof(float)))) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    float *average = ema == EMA_AS_WEIGHTS ? out->params : out->ema;   // NULL: read past
    if (out->has_ema) {
        char name[128];
        for (int k = 0; k < n; k++) {
            snprintf(name, sizeof name, CKPT_EMA_PREFIX "%s", tab[k].name);
            if (st_find(f, name, NULL, NULL) < 0) {
                snprintf(err, errlen, "%s: missing tensor '%s' (the file holds other EMA weights: all of them, or none)", path, name);
                goto out;
            }
            if (take(f, name, &tab[k], average, err, errlen)) goto out;
            if (!average && scan) st_scan(f, st_find(f, name, NULL, NULL));   // read past, checked as if kept
        }
    }
    if (header_only) { rc = 0; goto out; }
    if (st_fill(f, err, errlen)) goto out;   // a file from st_open_header: its data arrive here
    if (ckpt_check_finite_array(tab, n, weights, "", why, sizeof why) ||
        (!weights && ckpt_check_scanned(f, tab, n, "", why, sizeof why)) ||
        ckpt_check_finite(tab, n, NULL, out->exp_avg, out->exp_avg_sq, why, sizeof why) ||
        (out->has_moments && !moments && ckpt_check_scanned_moments(f, tab, n, why, sizeof why)) ||
        ckpt_check_finite_array(tab, n, average, CKPT_EMA_PREFIX, why, sizeof why) ||
        (out->has_ema && !average && ckpt_check_scanned(f, tab, n, CKPT_EMA_PREFIX, why, sizeof why))) {
        snprintf(err, errlen, "%s: %s", st_name(f), why);
        goto out;
    }
    rc = 0;
out:
    cJSON_Delete(o);
    free(tab);
    if (rc) clf_ckpt_free(out);
    return rc;
}

// Damaged data are the reason given for a refusal, whatever else is wrong with the file (st_verify).
static int from_st(StFile *f, ClfCheckpoint *out, int moments, int ema, int header_only, char *err, size_t errlen) {
    int rc = check_and_take(f, out, moments, ema, header_only, err, errlen);
    if (rc) st_verify(f, err, errlen);
    return rc;
}

int clf_ckpt_from_st(StFile *f, int moments, ClfCheckpoint *out, char *err, size_t errlen) {
    return from_st(f, out, moments, moments ? EMA_KEEP : EMA_CHECK, 0, err, errlen);
}

static int load(const char *path, ClfCheckpoint *out, int moments, int ema, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    StFile *f = st_open_header(path, err, errlen);   // the data straight into out's arrays
    if (!f) return -1;
    int rc = from_st(f, out, moments, ema, 0, err, errlen);
    st_close(f);
    return rc;
}

int clf_ckpt_load(const char *path, ClfCheckpoint *out, char *err, size_t errlen) { return load(path, out, 1, EMA_KEEP, err, errlen); }
int clf_ckpt_load_weights(const char *path, ClfCheckpoint *out, char *err, size_t errlen) {
    return load(path, out, 0, EMA_CHECK, err, errlen);
}
int clf_ckpt_load_ema_weights(const char *path, ClfCheckpoint *out, char *err, size_t errlen) {
    return load(path, out, 0, EMA_AS_WEIGHTS, err, errlen);
}

int clf_ckpt_load_encoder(const char *path, int ema, Checkpoint *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    StFile *f = st_open_header(path, err, errlen);   // read once: checked here, then the MAE loader's data
    if (!f) return -1;
    int rc = 0;
    if (clf_ckpt_is_classifier(f)) {   // the classifier's own checks first (docs/interface.md, section 4)
        ClfCheckpoint header;
        rc = from_st(f, &header, 0, EMA_CHECK, 1, err, errlen);
        clf_ckpt_free(&header);
    }
    if (!rc) rc = ckpt_encoder_from_st(f, ema, out, err, errlen);
    st_close(f);
    return rc;
}
