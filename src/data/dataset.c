// Folder scan, split, views and pixel statistics (see dataset.h for the rules).
#include "data/dataset.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_DEPTH 64
#define DECODE_CHUNK 4096   // candidates decoded per parallel round (the cache budget is checked per round)

int augment_parse(const char *name, Augment *out) {
    if (!strcmp(name, "none")) *out = AUGMENT_NONE;
    else if (!strcmp(name, "flip")) *out = AUGMENT_FLIP;
    else if (!strcmp(name, "crop")) *out = AUGMENT_CROP;
    else return -1;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Walk

typedef struct {
    char *path, *rel;
    const char *cls;   // first-level folder name (owned by the walk's class list) or NULL
    char *reason;      // set for an unreadable folder: already skipped
} Candidate;

typedef struct {
    Candidate *cand;
    int ncand, capcand;
    char **dirnames;   // first-level folder names (class candidates), owned
    int ndirnames, capdirnames;
    dev_t *vdev;
    ino_t *vino;
    int nvisited, capvisited;
    int nignored;
    int oom;
} Walk;

static int grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

static int is_candidate_name(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    return !strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg");
}

static char *join(const char *a, const char *b) {
    if (!a || !*a) return strdup(b);
    size_t la = strlen(a), lb = strlen(b);
    int slash = a[la - 1] != '/';
    char *s = malloc(la + slash + lb + 1);
    if (!s) return NULL;
    memcpy(s, a, la);
    if (slash) s[la] = '/';
    memcpy(s + la + slash, b, lb + 1);
    return s;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int add_candidate(Walk *wk, char *path, char *rel, const char *cls, char *reason) {
    if (grow((void **)&wk->cand, &wk->capcand, wk->ncand + 1, sizeof *wk->cand)) {
        free(path); free(rel); free(reason);
        wk->oom = 1;
        return -1;
    }
    wk->cand[wk->ncand++] = (Candidate){path, rel, cls, reason};
    return 0;
}

// Marks the directory visited; 1 when it already was (a symlink loop or a second link to it).
static int visit(Walk *wk, const struct stat *st) {
    for (int i = 0; i < wk->nvisited; i++)
        if (wk->vdev[i] == st->st_dev && wk->vino[i] == st->st_ino) return 1;
    int cap = wk->capvisited;
    if (grow((void **)&wk->vdev, &cap, wk->nvisited + 1, sizeof *wk->vdev)) { wk->oom = 1; return 1; }
    cap = wk->capvisited;
    if (grow((void **)&wk->vino, &cap, wk->nvisited + 1, sizeof *wk->vino)) { wk->oom = 1; return 1; }
    wk->capvisited = cap;
    wk->vdev[wk->nvisited] = st->st_dev;
    wk->vino[wk->nvisited] = st->st_ino;
    wk->nvisited++;
    return 0;
}

// Visits dir (path on disk, rel relative to the root, "" for the root) in sorted order.
static int walk_dir(Walk *wk, const char *path, const char *rel, const char *cls, int depth, char *err, size_t errlen) {
    DIR *d = opendir(path);
    if (!d) {
        int e = errno;
        if (depth == 0) { snprintf(err, errlen, "%s", strerror(e)); return -1; }
        char why[160];
        snprintf(why, sizeof why, "cannot read folder: %s", strerror(e));
        add_candidate(wk, strdup(path), strdup(rel), cls, strdup(why));
        return 0;
    }
    char **names = NULL;
    int nnames = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (grow((void **)&names, &cap, nnames + 1, sizeof *names)) { wk->oom = 1; break; }
        if (!(names[nnames] = strdup(de->d_name))) { wk->oom = 1; break; }
        nnames++;
    }
    closedir(d);
    if (nnames) qsort(names, (size_t)nnames, sizeof *names, cmp_str);
    for (int i = 0; i < nnames && !wk->oom; i++) {
        char *full = join(path, names[i]), *sub = join(rel, names[i]);
        if (!full || !sub) { free(full); free(sub); wk->oom = 1; break; }
        struct stat st;
        int is_dir = stat(full, &st) == 0 && S_ISDIR(st.st_mode);
        if (is_dir) {
            if (depth + 1 >= MAX_DEPTH || visit(wk, &st)) { wk->nignored++; free(full); free(sub); continue; }
            const char *sub_cls = cls;
            if (depth == 0) {
                if (grow((void **)&wk->dirnames, &wk->capdirnames, wk->ndirnames + 1, sizeof *wk->dirnames)) {
                    wk->oom = 1; free(full); free(sub); break;
                }
                sub_cls = wk->dirnames[wk->ndirnames++] = names[i];
                names[i] = NULL;   // now owned by the class list
            }
            walk_dir(wk, full, sub, sub_cls, depth + 1, err, errlen);
            free(full);
            free(sub);
        } else if (is_candidate_name(names[i])) {
            add_candidate(wk, full, sub, cls, NULL);   // broken links and loops fail at decode
        } else {
            wk->nignored++;
            free(full);
            free(sub);
        }
    }
    for (int i = 0; i < nnames; i++) free(names[i]);
    free(names);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Decode

typedef struct {
    char *reason;          // NULL when ok
    int w, h, c;
    DataCacheEntry cache;  // px NULL when not cached
} Decoded;

static uint8_t *to_u8(const float *px, size_t n) {
    uint8_t *u = malloc(n ? n : 1);
    if (!u) return NULL;
    for (size_t i = 0; i < n; i++) {
        float v = px[i] * 255.0f;
        v = v < 0 ? 0 : v > 255 ? 255 : v;
        u[i] = (uint8_t)(int)(v + 0.5f);
    }
    return u;
}

static void decode_one(const Candidate *cd, long max_pixels, int cache_size, Decoded *out) {
    memset(out, 0, sizeof *out);
    if (cd->reason) { out->reason = strdup(cd->reason); return; }
    Image im;
    char why[256];
    if (image_load(cd->path, max_pixels, &im, why, sizeof why)) {
        out->reason = strdup(why[0] ? why : "cannot decode");
        if (!out->reason) out->reason = strdup("out of memory");
        return;
    }
    out->w = im.w;
    out->h = im.h;
    out->c = im.c;
    if (cache_size > 0) {
        size_t n = (size_t)im.w * im.h * im.c;
        DataCacheEntry *ce = &out->cache;
        if ((size_t)im.w * im.h <= 4 * (size_t)cache_size * cache_size && image_is_8bit(im.px, n)) {
            *ce = (DataCacheEntry){to_u8(im.px, n), im.w, im.h, im.c, 1};
        } else {
            size_t m = (size_t)cache_size * cache_size * im.c;
            float *view = malloc(sizeof(float) * m);
            if (view) {
                image_eval_view(&im, cache_size, im.c, view);
                *ce = (DataCacheEntry){to_u8(view, m), cache_size, cache_size, im.c, 0};
                free(view);
            }
        }
    }
    image_free(&im);
}

static void free_cache(DataCacheEntry *cache, int n) {
    if (!cache) return;
    for (int i = 0; i < n; i++) free(cache[i].px);
    free(cache);
}

int dataset_scan(const char *root, const DatasetOptions *opt, Dataset *ds, char *err, size_t errlen) {
    memset(ds, 0, sizeof *ds);
    DatasetOptions o = opt ? *opt : (DatasetOptions){0, 0, 0};
    ds->max_pixels = o.max_pixels > 0 ? o.max_pixels : VITMAE_DEFAULT_MAX_PIXELS;
    struct stat st;
    if (stat(root, &st) != 0) { snprintf(err, errlen, "%s", strerror(errno)); return -1; }
    if (!S_ISDIR(st.st_mode)) { snprintf(err, errlen, "not a folder"); return -1; }

    Walk wk = {0};
    visit(&wk, &st);
    int rc = walk_dir(&wk, root, "", NULL, 0, err, errlen);
    Decoded *dec = NULL;
    if (rc == 0 && !wk.oom) dec = calloc(wk.ncand ? (size_t)wk.ncand : 1, sizeof *dec);
    if (rc == 0 && !dec) { snprintf(err, errlen, "out of memory while scanning"); rc = -1; }

    // Decode in rounds; the cache stays on while the running total fits the budget.
    int cache_size = (o.cache_mb > 0 && o.img_size > 0) ? o.img_size : 0;
    size_t budget = (size_t)(o.cache_mb > 0 ? o.cache_mb : 0) * 1024 * 1024, cached = 0;
    for (int a = 0; rc == 0 && a < wk.ncand; a += DECODE_CHUNK) {
        int b = a + DECODE_CHUNK < wk.ncand ? a + DECODE_CHUNK : wk.ncand;
        int csize = cache_size;
        #pragma omp parallel for schedule(dynamic, 8)
        for (int i = a; i < b; i++) decode_one(&wk.cand[i], ds->max_pixels, csize, &dec[i]);
        if (!cache_size) continue;
        int drop = 0;
        for (int i = a; i < b; i++) {
            if (dec[i].reason) continue;
            if (!dec[i].cache.px) drop = 1;   // out of memory for this entry
            cached += (size_t)dec[i].cache.w * dec[i].cache.h * dec[i].cache.c;
        }
        if (drop || cached > budget) {
            for (int i = 0; i < b; i++) { free(dec[i].cache.px); dec[i].cache.px = NULL; }
            cache_size = 0;
        }
    }

    // Items, classes (first-level folders in sorted order, kept when they hold a usable image), skips.
    int nok = 0, nskip = 0;
    for (int i = 0; rc == 0 && i < wk.ncand; i++) dec[i].reason ? nskip++ : nok++;
    if (rc == 0) {
        ds->root = strdup(root);
        ds->items = calloc(nok ? (size_t)nok : 1, sizeof *ds->items);
        ds->skipped = calloc(nskip ? (size_t)nskip : 1, sizeof *ds->skipped);
        ds->class_names = calloc(wk.ndirnames ? (size_t)wk.ndirnames : 1, sizeof *ds->class_names);
        ds->class_counts = calloc(wk.ndirnames ? (size_t)wk.ndirnames : 1, sizeof *ds->class_counts);
        if (cache_size) ds->cache = calloc(nok ? (size_t)nok : 1, sizeof *ds->cache);
        if (!ds->root || !ds->items || !ds->skipped || !ds->class_names || !ds->class_counts ||
            (cache_size && !ds->cache)) {
            snprintf(err, errlen, "out of memory while scanning");
            rc = -1;
        }
    }
    const char *last_cls = NULL;
    ds->all_grey = 1;
    for (int i = 0; rc == 0 && i < wk.ncand; i++) {
        Candidate *cd = &wk.cand[i];
        if (dec[i].reason) {
            ds->skipped[ds->nskipped++] = (DataSkip){cd->path, dec[i].reason};
            dec[i].reason = NULL;
            free(cd->rel);
            cd->path = cd->rel = NULL;
            continue;
        }
        int cls = -1;
        if (cd->cls) {
            // Candidates arrive grouped by first-level folder in sorted order.
            if (cd->cls != last_cls) {
                ds->class_names[ds->nclasses] = strdup(cd->cls);
                ds->nclasses++;
                last_cls = cd->cls;
            }
            cls = ds->nclasses - 1;
            ds->class_counts[cls]++;
        } else {
            ds->nroot++;
        }
        DataItem *it = &ds->items[ds->n];
        *it = (DataItem){cd->path, cd->rel, cls, dec[i].w, dec[i].h, dec[i].c};
        cd->path = cd->rel = NULL;
        if (ds->cache) { ds->cache[ds->n] = dec[i].cache; dec[i].cache.px = NULL; }
        if (ds->n == 0 || it->w < ds->min_w) ds->min_w = it->w;
        if (ds->n == 0 || it->h < ds->min_h) ds->min_h = it->h;
        if (it->w > ds->max_w) ds->max_w = it->w;
        if (it->h > ds->max_h) ds->max_h = it->h;
        if (it->c != 1) ds->all_grey = 0;
        ds->n++;
    }
    if (ds->n == 0) ds->all_grey = 0;
    if (ds->cache) {
        ds->cache_size = cache_size;
        ds->cache_bytes = cached;
    }
    for (int i = 0; i < ds->nclasses && rc == 0; i++)
        if (!ds->class_names[i]) { snprintf(err, errlen, "out of memory while scanning"); rc = -1; }
    if (rc == 0 && wk.oom) { snprintf(err, errlen, "out of memory while scanning"); rc = -1; }

    for (int i = 0; i < wk.ncand; i++) {
        free(wk.cand[i].path);
        free(wk.cand[i].rel);
        free(wk.cand[i].reason);
        if (dec) { free(dec[i].reason); free(dec[i].cache.px); }
    }
    free(dec);
    free(wk.cand);
    for (int i = 0; i < wk.ndirnames; i++) free(wk.dirnames[i]);
    free(wk.dirnames);
    free(wk.vdev);
    free(wk.vino);
    ds->nignored = wk.nignored;
    if (rc) dataset_free(ds);
    return rc;
}

void dataset_free(Dataset *ds) {
    if (!ds) return;
    for (int i = 0; i < ds->n; i++) { free(ds->items[i].path); free(ds->items[i].rel); }
    free(ds->items);
    for (int i = 0; i < ds->nclasses; i++) free(ds->class_names[i]);
    free(ds->class_names);
    free(ds->class_counts);
    for (int i = 0; i < ds->nskipped; i++) { free(ds->skipped[i].path); free(ds->skipped[i].reason); }
    free(ds->skipped);
    free_cache(ds->cache, ds->n);
    free(ds->root);
    memset(ds, 0, sizeof *ds);
}

// ---------------------------------------------------------------------------------------------
// Split

uint64_t dataset_path_hash(const char *rel) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
}

int dataset_held_out(uint64_t key, double val_frac) {
    return key < (uint64_t)llround(val_frac * 10000.0);
}

int dataset_split(const Dataset *ds, double val_frac, int **train, int *ntrain, int **val, int *nval) {
    *train = malloc(sizeof(int) * (ds->n ? (size_t)ds->n : 1));
    *val = malloc(sizeof(int) * (ds->n ? (size_t)ds->n : 1));
    *ntrain = *nval = 0;
    if (!*train || !*val) { free(*train); free(*val); *train = *val = NULL; return -1; }
    int best = -1;
    uint64_t best_key = UINT64_MAX;
    for (int i = 0; i < ds->n; i++) {
        uint64_t key = dataset_path_hash(ds->items[i].rel) % 10000;
        if (key < best_key) { best_key = key; best = i; }
        if (dataset_held_out(key, val_frac)) (*val)[(*nval)++] = i;
    }
    if (*nval == 0 && val_frac > 0 && ds->n >= 2) (*val)[(*nval)++] = best;
    for (int i = 0, v = 0; i < ds->n; i++) {
        if (v < *nval && (*val)[v] == i) { v++; continue; }
        (*train)[(*ntrain)++] = i;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Views

// The source image of item i: the cached 8-bit image (as floats) or a fresh decode.
// *is_view: the source is the cached evaluation view, not the original.
static int item_source(const Dataset *ds, int i, int size, Image *im, int *is_view, char *err, size_t errlen) {
    *is_view = 0;
    const DataCacheEntry *ce = ds->cache && ds->cache_size == size ? &ds->cache[i] : NULL;
    if (ce && ce->px) {
        size_t n = (size_t)ce->w * ce->h * ce->c;
        im->px = malloc(sizeof(float) * n);
        if (!im->px) { snprintf(err, errlen, "%s: out of memory", ds->items[i].path); return -1; }
        for (size_t k = 0; k < n; k++) im->px[k] = (float)ce->px[k] / 255.0f;
        im->w = ce->w;
        im->h = ce->h;
        im->c = ce->c;
        *is_view = !ce->original;
        return 0;
    }
    char why[256];
    if (image_load(ds->items[i].path, ds->max_pixels, im, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", ds->items[i].path, why);
        return -1;
    }
    return 0;
}

// The 8-bit-rounded view in the source's channels (tmp [size][size][c]) converted into out.
static void finish_view(float *tmp, int size, int c, int channels, float *out) {
    size_t n = (size_t)size * size;
    image_quantize8(tmp, n * c);
    image_convert_channels(tmp, c, out, channels, n);
}

int dataset_train_view(const Dataset *ds, int i, int size, int channels, Augment aug, Rng *rng,
                       float *out, char *err, size_t errlen) {
    if (i < 0 || i >= ds->n) { snprintf(err, errlen, "item %d out of range", i); return -1; }
    Image im;
    int is_view;
    if (item_source(ds, i, size, &im, &is_view, err, errlen)) return -1;
    float *tmp = malloc(sizeof(float) * (size_t)size * size * im.c);
    if (!tmp) { image_free(&im); snprintf(err, errlen, "%s: out of memory", ds->items[i].path); return -1; }
    if (aug == AUGMENT_CROP) image_random_resized_crop(&im, size, im.c, rng, tmp);
    else image_eval_view(&im, size, im.c, tmp);
    finish_view(tmp, size, im.c, channels, out);
    if (aug != AUGMENT_NONE && rng_uniform(rng) < 0.5f) image_flip_h(out, size, size, channels);
    free(tmp);
    image_free(&im);
    return 0;
}

int dataset_eval_view(const Dataset *ds, int i, int size, int channels, float *out, char *err, size_t errlen) {
    return dataset_train_view(ds, i, size, channels, AUGMENT_NONE, NULL, out, err, errlen);
}

int dataset_load_batch(const Dataset *ds, const int *items, int n, int size, int channels, Augment aug,
                       uint64_t seed, uint64_t step, float *out, char *err, size_t errlen) {
    return dataset_load_batch_from(ds, items, n, 0, size, channels, aug, seed, step, out, err, errlen);
}

int dataset_load_batch_from(const Dataset *ds, const int *items, int n, int first, int size, int channels,
                            Augment aug, uint64_t seed, uint64_t step, float *out, char *err, size_t errlen) {
    int *status = calloc(n ? (size_t)n : 1, sizeof *status);
    char *errs = calloc(n ? (size_t)n : 1, 256);
    if (!status || !errs) { free(status); free(errs); snprintf(err, errlen, "out of memory"); return -1; }
    size_t per = (size_t)size * size * channels;
    #pragma omp parallel for schedule(dynamic, 1)
    for (int k = 0; k < n; k++) {
        Rng r;
        rng_derive(&r, seed, step, (uint64_t)(first + k));
        status[k] = dataset_train_view(ds, items[k], size, channels, aug, &r, out + (size_t)k * per,
                                       errs + (size_t)k * 256, 256);
    }
    int rc = 0;
    for (int k = 0; k < n && !rc; k++)
        if (status[k]) { snprintf(err, errlen, "%s", errs + (size_t)k * 256); rc = -1; }
    free(status);
    free(errs);
    return rc;
}

int dataset_pixel_stats(const Dataset *ds, const int *idx, int n, int limit, int size, int channels,
                        float *mean, float *std, char *err, size_t errlen) {
    if (limit <= 0) limit = 10000;
    int m = n < limit ? n : limit;
    if (m <= 0) {
        for (int c = 0; c < channels; c++) { mean[c] = 0; std[c] = 1; }
        return 0;
    }
    double *sums = calloc((size_t)m * channels * 2, sizeof *sums);
    int *status = calloc((size_t)m, sizeof *status);
    char *errs = calloc((size_t)m, 256);
    if (!sums || !status || !errs) {
        free(sums); free(status); free(errs);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t per = (size_t)size * size;
    #pragma omp parallel
    {
        float *view = malloc(sizeof(float) * per * channels);
        #pragma omp for schedule(dynamic, 4)
        for (int k = 0; k < m; k++) {
            int item = idx[(size_t)k * n / m];
            if (!view) { status[k] = -1; snprintf(errs + (size_t)k * 256, 256, "out of memory"); continue; }
            status[k] = dataset_eval_view(ds, item, size, channels, view, errs + (size_t)k * 256, 256);
            if (status[k]) continue;
            double *s = sums + (size_t)k * channels * 2;
            for (size_t p = 0; p < per; p++)
                for (int c = 0; c < channels; c++) {
                    double v = view[p * channels + c];
                    s[2 * c] += v;
                    s[2 * c + 1] += v * v;
                }
        }
        free(view);
    }
    int rc = 0;
    for (int k = 0; k < m && !rc; k++)
        if (status[k]) { snprintf(err, errlen, "%s", errs + (size_t)k * 256); rc = -1; }
    for (int c = 0; c < channels && !rc; c++) {
        double s = 0, s2 = 0, count = (double)m * per;
        for (int k = 0; k < m; k++) { s += sums[((size_t)k * channels + c) * 2]; s2 += sums[((size_t)k * channels + c) * 2 + 1]; }
        double mu = s / count, var = s2 / count - mu * mu;
        double sd = var > 0 ? sqrt(var) : 0;
        mean[c] = (float)mu;
        std[c] = sd < 1e-6 ? 1.0f : (float)sd;
    }
    free(sums);
    free(status);
    free(errs);
    return rc;
}
