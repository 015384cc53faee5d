// A checkpoint written again as a hand edit or another tool would leave it, not a damaged file:
// st_write gives it a crc32 that matches. Include after check.h.
#ifndef VITMAE_ST_REWRITE_H
#define VITMAE_ST_REWRITE_H
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "io/safetensors.h"

// The file at path written to out (which may be path) with every tensor but `drop` (NULL: none), the
// last value of tensor `name` (NULL: none) set to bad, and the metadata vitmae writes as it was.
static inline void st_rewrite(const char *path, const char *out, const char *drop, const char *name, float bad) {
    char err[512];
    StFile *f = st_open(path, err, sizeof err);
    CHECK(f != NULL, "st_rewrite %s: %s", path, err);
    if (!f) return;
    int n = st_count(f), k = 0, ok = 1;
    StTensor *ts = calloc((size_t)(n ? n : 1), sizeof *ts);
    float *copy = NULL;
    for (int i = 0; ts && i < n; i++) {
        const char *tn = st_tensor_name(f, i);
        if (drop && !strcmp(tn, drop)) continue;
        StTensor *t = &ts[k++];
        t->name = tn;
        t->data = st_get(f, tn, &t->ndim, t->shape);
        if (!name || strcmp(tn, name)) continue;
        size_t numel = 1;
        for (int j = 0; j < t->ndim; j++) numel *= (size_t)t->shape[j];
        copy = malloc((numel ? numel : 1) * sizeof *copy);
        if (!copy || !numel) { ok = 0; break; }
        memcpy(copy, t->data, numel * sizeof *copy);
        copy[numel - 1] = bad;
        t->data = copy;
    }
    const char *keys[5] = {"format", "vitmae_version", "config", "classifier", "train_state"}, *vals[5];
    int nm = 0;
    for (int i = 0; i < 5; i++)
        if (st_meta(f, keys[i])) { keys[nm] = keys[i]; vals[nm++] = st_meta(f, keys[i]); }
    CHECK(ts && ok && (!name || copy) && st_write(out, ts, k, keys, vals, nm, err, sizeof err) == 0, "st_rewrite %s: %s",
          path, err);
    free(copy); free(ts);
    st_close(f);
}
#endif
