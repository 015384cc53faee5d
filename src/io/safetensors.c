// The safetensors file format (docs/interface.md section 4): reading and atomic writing of F32 tensors
// with string metadata; vitmae's checkpoint on top of it is io/checkpoint.c.
//
// File layout:  [u64 LE header_len] [JSON header, space-padded to a multiple of 8] [data section]
// The header maps tensor name -> {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}
// (offsets relative to the data section) plus "__metadata__": {string: string}.
//
// Reading trusts nothing: every length and offset is checked against the bytes actually there
// before it is used, and the tensors must tile the data section exactly (no overlap, no hole), as
// the safetensors reference implementation requires. Because every tensor is F32 and they tile the
// section from offset 0, every begin is a multiple of 4. Two ways in:
//   st_open / st_open_mem: the file is read whole, placed in memory so that the data section starts
//     64-byte aligned (each tensor a properly aligned float array without a second copy), and its
//     crc32 checked before the caller sees it.
//   st_open_header: the header alone; the caller names where each tensor it wants goes (st_take),
//     then st_fill reads the data section once, in order, straight into those places and the rest
//     through a small buffer, checking the crc32 over all of it. A checkpoint's reader wants the
//     weights, not the AdamW moments that make up two thirds of a training checkpoint, so it neither
//     holds the whole file nor copies the weights twice (docs/design.md, Checkpoints).
#include "io/safetensors.h"
#include "io/json.h"
#include "io/files.h"
#include "core/json_depth.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader assumes a little-endian host"
#endif

#define ST_MAX_HEADER (100u * 1000u * 1000u)   // the reference implementation's limit
#define ST_HEAD 12   // the first bytes read to name a file of another kind (wrong_kind)
#define ST_ALIGN 64

static void fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

// The CRC-32 of crc's bytes followed by p[0..n) (zlib's and gzip's crc32, the same value), by
// libdeflate, whose carry-less-multiply code runs 3-4x zlib's speed here (docs/performance.md,
// "The crc32 by libdeflate"); crc32_of(0, ...) starts afresh. No bytes leave crc0 as it is: given a
// NULL p (an empty tensor's data), libdeflate_crc32 would return its initial value instead.
static uint32_t crc32_of(uint32_t crc0, const uint8_t *p, size_t n) { return n ? libdeflate_crc32(crc0, p, n) : crc0; }

// ---------------------------------------------------------------------------------------------
// Reading

typedef struct {
    char *name;
    int ndim;
    int64_t shape[4];
    uint64_t begin, end;   // within the data section
    int scan, nonfinite;   // st_scan: checked for NaN / infinite values as it is read; and whether it held one
} StEntry;

// Where a file's data are: in memory (st_open, st_open_mem), still on disk (st_open_header), or
// read into the caller's places (after st_fill).
enum { ST_IN_MEMORY, ST_ON_DISK, ST_FILLED };

struct StFile {
    char *path;
    uint8_t *alloc;        // owns the bytes; file starts at alloc + shift (header only: the header)
    const uint8_t *data;   // data section (ST_ALIGN-aligned); NULL unless ST_IN_MEMORY
    uint64_t data_len;
    int n;
    StEntry *t;
    int nmeta;
    char **meta_keys, **meta_vals;
    int state;             // ST_IN_MEMORY, ST_ON_DISK, ST_FILLED
    int fd;                // ST_ON_DISK: the open file, at the data section's first byte; else -1
    float **dst;           // ST_ON_DISK: where st_fill puts tensor i (NULL: read for the crc only)
    int has_crc;           // the header's crc32, parsed (parse_crc)
    uint32_t crc;
};

void st_close(StFile *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) free(f->t[i].name);
    for (int i = 0; i < f->nmeta; i++) { free(f->meta_keys[i]); free(f->meta_vals[i]); }
    free(f->t); free(f->meta_keys); free(f->meta_vals);
    free(f->alloc); free(f->path); free(f->dst);
    if (f->fd >= 0) close(f->fd);
    free(f);
}

int st_count(const StFile *f) { return f->n; }
const char *st_name(const StFile *f) { return f->path; }
const char *st_tensor_name(const StFile *f, int i) { return i >= 0 && i < f->n ? f->t[i].name : NULL; }

void st_missing(const StFile *f, const char *name, char *err, size_t errlen) {
    size_t nl = strlen(name);
    for (int i = 0; i < f->n; i++) {
        const char *t = f->t[i].name;
        size_t tl = strlen(t);
        if (tl <= nl + 1 || t[tl - nl - 1] != '.' || strcmp(t + tl - nl, name) || !strncmp(t, "optimizer.", 10)) continue;
        // A wrapper's prefix is on every name: one that only some carry (a fine-tuned file's own
        // moving average, ema.NAME, beside the weights) is no advice to strip.
        int every = 1;
        for (int j = 0; j < f->n && every; j++)
            every = !strncmp(f->t[j].name, "optimizer.", 10) || !strncmp(f->t[j].name, t, tl - nl);
        if (!every) continue;
        char prefix[UTF8_CLIP_MAX + 8], q[UTF8_CLIP_SIZE];   // past the limit: clipped, with "..."
        snprintf(prefix, sizeof prefix, "%.*s", (int)(tl - nl), t);
        utf8_clip(q, prefix);
        // Which wrapper writes it, where the prefix says: DistributedDataParallel's module., torch.compile's
        // _orig_mod. (PyTorch Lightning's model., an encoder's own name, ... are some other wrapper's).
        const char *who = !strcmp(prefix, "module.") ? "a model wrapped in DistributedDataParallel"
                          : !strcmp(prefix, "_orig_mod.") ? "a model compiled with torch.compile" : "a wrapped model";
        snprintf(err, errlen, "%s: missing tensor '%s' (the file has it as '%s%s': strip the prefix '%s' from every "
                 "name, as %s writes it; tools/convert_mae.py does)", f->path, name, q, name, q, who);
        return;
    }
    snprintf(err, errlen, "%s: missing tensor '%s'", f->path, name);
}

const char *st_meta(const StFile *f, const char *key) {
    for (int i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_vals[i];
    return NULL;
}

int st_find(const StFile *f, const char *name, int *ndim, int64_t shape[4]) {
    for (int i = 0; i < f->n; i++) {
        const StEntry *e = &f->t[i];
        if (strcmp(e->name, name) != 0) continue;
        if (ndim) *ndim = e->ndim;
        if (shape) for (int k = 0; k < 4; k++) shape[k] = k < e->ndim ? e->shape[k] : 0;
        return i;
    }
    return -1;
}

const float *st_get(const StFile *f, const char *name, int *ndim, int64_t shape[4]) {
    int i = st_find(f, name, ndim, shape);
    if (i < 0 || f->state != ST_IN_MEMORY) return NULL;
    return (const float *)(const void *)(f->data + f->t[i].begin);
}

// A JSON number that is an exact non-negative integer no larger than 2^53.
static int json_u53(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0.0 && d <= 9007199254740992.0) || d != floor(d)) return 0;
    *out = (uint64_t)d;
    return 1;
}

void st_shape_str(int ndim, const int64_t *shape, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

static int parse_tensor(const char *file, const cJSON *item, StEntry *e, uint64_t data_len,
                        char *err, size_t errlen) {
    char q[UTF8_CLIP_SIZE], qd[UTF8_CLIP_SIZE];
    const char *name = utf8_clip(q, item->string);   // as messages show it; the entry keeps it whole
    if (!cJSON_IsObject(item)) { fail(err, errlen, "%s: header entry '%s' is not an object", file, name); return -1; }
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dtype)) { fail(err, errlen, "%s: tensor '%s' has no dtype string", file, name); return -1; }
    if (strcmp(dtype->valuestring, "F32") != 0) {
        // A float dtype (a half-precision export, F16 or BF16) converts to F32: the refusal says how
        // (docs/interface.md, section 4, "From PyTorch").
        const char *d = dtype->valuestring;
        int is_float = !strcmp(d, "F16") || !strcmp(d, "BF16") || !strcmp(d, "F64");
        // Quoted, as the name is: an edit's "F32 " read as "has dtype F32  (only F32 is supported)".
        fail(err, errlen, "%s: tensor '%s' has dtype '%s' (only F32 is supported%s)", file, name, utf8_clip(qd, d),
             is_float ? ": convert the file with tools/convert_mae.py, which reads any float dtype, or save the "
                        "tensors with .float()" : "");
        return -1;
    }
    if (!cJSON_IsArray(shape)) { fail(err, errlen, "%s: tensor '%s' has no shape array", file, name); return -1; }
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > 4) { fail(err, errlen, "%s: tensor '%s' has %d dimensions (at most 4 supported)", file, name, ndim); return -1; }
    e->ndim = ndim;
    uint64_t numel = 1;
    int k = 0;
    for (const cJSON *d = shape->child; d; d = d->next, k++) {
        uint64_t v;
        if (!json_u53(d, &v)) { fail(err, errlen, "%s: tensor '%s' has a shape entry that is not a non-negative integer", file, name); return -1; }
        e->shape[k] = (int64_t)v;
        if (__builtin_mul_overflow(numel, v, &numel) || numel > (UINT64_MAX / 4)) {
            fail(err, errlen, "%s: tensor '%s' has a shape too large", file, name);
            return -1;
        }
    }
    for (; k < 4; k++) e->shape[k] = 0;
    uint64_t b, en;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !json_u53(offs->child, &b)
        || !json_u53(offs->child->next, &en)) {
        fail(err, errlen, "%s: tensor '%s' has no valid data_offsets [begin, end]", file, name);
        return -1;
    }
    char sh[96];
    st_shape_str(e->ndim, e->shape, sh, sizeof sh);
    if (en < b || en - b != 4 * numel) {
        fail(err, errlen, "%s: tensor '%s' data_offsets [%llu, %llu] do not match its shape %s (%llu bytes of F32)",
             file, name, (unsigned long long)b, (unsigned long long)en, sh, (unsigned long long)(4 * numel));
        return -1;
    }
    if (en > data_len) {
        fail(err, errlen, "%s: truncated data (tensor '%s' needs data bytes %llu..%llu, file has %llu)",
             file, name, (unsigned long long)b, (unsigned long long)en, (unsigned long long)data_len);
        return -1;
    }
    e->begin = b; e->end = en;
    e->name = xstrdup(item->string);
    if (!e->name) { fail(err, errlen, "%s: out of memory", file); return -1; }
    return 0;
}

static int cmp_entry_offset(const void *a, const void *b) {
    const StEntry *x = *(const StEntry *const *)a, *y = *(const StEntry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}
// Tensors must tile the data section: no overlap, no hole, no trailing bytes.
static int check_layout(StFile *f, char *err, size_t errlen) {
    if (f->n == 0) {
        if (f->data_len) { fail(err, errlen, "%s: %llu data bytes but no tensors", f->path, (unsigned long long)f->data_len); return -1; }
        return 0;
    }
    StEntry **p = malloc((size_t)f->n * sizeof *p);
    if (!p) { fail(err, errlen, "%s: out of memory", f->path); return -1; }
    for (int i = 0; i < f->n; i++) p[i] = &f->t[i];
    int rc = 0;   // (a name given twice is refused with the header's other repeated keys)
    qsort(p, (size_t)f->n, sizeof *p, cmp_entry_offset);
    uint64_t pos = 0;
    for (int i = 0; i < f->n && !rc; i++) {
        if (p[i]->begin < pos) {
            char q1[UTF8_CLIP_SIZE], q0[UTF8_CLIP_SIZE];
            fail(err, errlen, "%s: tensor '%s' overlaps tensor '%s' in the data section", f->path,
                 utf8_clip(q1, p[i]->name), utf8_clip(q0, p[i - 1]->name));
            rc = -1;
        } else if (p[i]->begin > pos) {
            fail(err, errlen, "%s: data bytes %llu..%llu belong to no tensor", f->path, (unsigned long long)pos,
                 (unsigned long long)p[i]->begin);
            rc = -1;
        }
        pos = p[i]->end;
    }
    if (!rc && pos != f->data_len) {
        fail(err, errlen, "%s: %llu trailing data bytes belong to no tensor", f->path, (unsigned long long)(f->data_len - pos));
        rc = -1;
    }
    free(p);
    return rc;
}

static int parse_metadata(StFile *f, const cJSON *meta, char *err, size_t errlen) {
    if (!cJSON_IsObject(meta)) { fail(err, errlen, "%s: __metadata__ is not an object", f->path); return -1; }
    int n = cJSON_GetArraySize(meta);
    f->meta_keys = calloc((size_t)n + 1, sizeof *f->meta_keys);
    f->meta_vals = calloc((size_t)n + 1, sizeof *f->meta_vals);
    if (!f->meta_keys || !f->meta_vals) { fail(err, errlen, "%s: out of memory", f->path); return -1; }
    for (const cJSON *m = meta->child; m; m = m->next) {
        char q[UTF8_CLIP_SIZE];
        if (!cJSON_IsString(m)) { fail(err, errlen, "%s: __metadata__ value '%s' is not a string", f->path, utf8_clip(q, m->string)); return -1; }
        f->meta_keys[f->nmeta] = xstrdup(m->string);
        f->meta_vals[f->nmeta] = xstrdup(m->valuestring);
        f->nmeta++;
        if (!f->meta_keys[f->nmeta - 1] || !f->meta_vals[f->nmeta - 1]) { fail(err, errlen, "%s: out of memory", f->path); return -1; }
    }
    return 0;
}

// The header's crc32 (8 hex digits) into f->crc, f->has_crc; absent is fine (converted files).
static int parse_crc(StFile *f, char *err, size_t errlen) {
    const char *s = st_meta(f, "crc32");
    if (!s) return 0;
    char *end = NULL;
    unsigned long want = strtoul(s, &end, 16);
    if (strlen(s) != 8 || *end || strspn(s, "0123456789abcdefABCDEF") != 8) {
        char q[UTF8_CLIP_SIZE];
        fail(err, errlen, "%s: crc32 '%s' is not 8 hex digits", f->path, utf8_clip(q, s));
        return -1;
    }
    f->has_crc = 1;
    f->crc = (uint32_t)want;
    return 0;
}

static int crc_matches(const StFile *f, uint32_t got, char *err, size_t errlen) {
    if (!f->has_crc || got == f->crc) return 0;
    fail(err, errlen, "%s: crc32 mismatch (file damaged): header says %08x, data has %08x", f->path, f->crc, got);
    return -1;
}

static int cmp_key(const void *a, const void *b) {
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

static const char DUP_KEY_OOM[] = "";   // dup_key's answer when it could not look

// A key that one object of o (at any depth) holds twice, or NULL; DUP_KEY_OOM when out of memory.
// Each object's keys are sorted, not compared pairwise: a header of 100 MB may hold millions of keys.
static const char *dup_key(const cJSON *o) {
    if (cJSON_IsObject(o) && o->child && o->child->next) {
        size_t n = 0;
        for (const cJSON *c = o->child; c; c = c->next) n += c->string != NULL;
        const cJSON **keys = malloc(n * sizeof *keys);
        if (!keys) return DUP_KEY_OOM;
        n = 0;
        for (const cJSON *c = o->child; c; c = c->next)
            if (c->string) keys[n++] = c;
        qsort(keys, n, sizeof *keys, cmp_key);
        const char *dup = NULL;
        for (size_t i = 1; i < n && !dup; i++)
            if (!strcmp(keys[i - 1]->string, keys[i]->string)) dup = keys[i]->string;
        free(keys);
        if (dup) return dup;
    }
    for (const cJSON *c = o ? o->child : NULL; c; c = c->next) {
        const char *d = dup_key(c);
        if (d) return d;
    }
    return NULL;
}

// Parses the header of a file of len bytes whose first 8 + header-length bytes are at `bytes` and
// fills f. The data section follows them in memory when f->state is ST_IN_MEMORY (its crc32 is then
// checked here); for ST_ON_DISK it is still in the file, and st_fill checks it.

static int parse_file(StFile *f, const uint8_t *bytes, size_t len, char *err, size_t errlen) {
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | bytes[i];
    const char *hdr = (const char *)bytes + 8;
    f->data = f->state == ST_IN_MEMORY ? bytes + 8 + hlen : NULL;
    f->data_len = (uint64_t)len - 8 - hlen;
    cJSON *root = NULL;
    const char *end = NULL;
    int oom;
    root = json_parse_n(hdr, (size_t)hlen, &end, &oom);
    if (oom) {   // a well-formed header that memory ran out for is no malformed one
        fail(err, errlen, "%s: out of memory", f->path);
        return -1;
    }
    if (!root) {
        size_t at = end && end >= hdr ? (size_t)(end - hdr) : 0;
        if (json_nesting_too_deep(hdr, (size_t)hlen, at))   // well-formed, maybe, but past what the reader takes
            fail(err, errlen, "%s: JSON header nested deeper than %d levels (the limit of the JSON reader; at byte %zu of %llu)",
                 f->path, CJSON_NESTING_LIMIT, at, (unsigned long long)hlen);
        else fail(err, errlen, "%s: malformed JSON header (near byte %zu of %llu)", f->path, at, (unsigned long long)hlen);
        return -1;
    }
    int rc = -1;
    for (const char *p = end; p < hdr + hlen; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            fail(err, errlen, "%s: malformed JSON header (trailing bytes after the object)", f->path);
            goto out;
        }
    if (!cJSON_IsObject(root)) { fail(err, errlen, "%s: header is not a JSON object", f->path); goto out; }
    // A key given twice means two things to two readers (cJSON keeps the first, Python's json the
    // last): refused, in the header and in the JSON that metadata values hold (config, train_state).
    const char *dup = dup_key(root);
    char inner_dup[2 * UTF8_CLIP_SIZE + 32], qd[UTF8_CLIP_SIZE], qm[UTF8_CLIP_SIZE];
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    for (const cJSON *m = cJSON_IsObject(meta) ? meta->child : NULL; m && !dup; m = m->next) {
        if (!cJSON_IsString(m) || m->valuestring[0] != '{') continue;
        cJSON *inner = json_parse(m->valuestring, &oom);
        const char *d = inner ? dup_key(inner) : oom ? DUP_KEY_OOM : NULL;
        if (d == DUP_KEY_OOM) dup = d;
        else if (d) {
            snprintf(inner_dup, sizeof inner_dup, "%s' of __metadata__ '%s", utf8_clip(qd, d), utf8_clip(qm, m->string));
            dup = inner_dup;
        }
        cJSON_Delete(inner);
    }
    if (dup == DUP_KEY_OOM) { fail(err, errlen, "%s: out of memory", f->path); goto out; }
    if (dup && dup != inner_dup) dup = utf8_clip(qd, dup);
    if (dup) { fail(err, errlen, "%s: header: key '%s' appears twice", f->path, dup); goto out; }
    int n = cJSON_GetArraySize(root);
    f->t = calloc((size_t)n + 1, sizeof *f->t);
    if (!f->t) { fail(err, errlen, "%s: out of memory", f->path); goto out; }
    for (const cJSON *it = root->child; it; it = it->next) {
        if (strcmp(it->string, "__metadata__") == 0) {   // once: dup_key above
            if (parse_metadata(f, it, err, errlen)) goto out;
            continue;
        }
        if (parse_tensor(f->path, it, &f->t[f->n], f->data_len, err, errlen)) goto out;
        f->n++;
    }
    if (check_layout(f, err, errlen)) goto out;
    if (parse_crc(f, err, errlen)) goto out;
    if (f->state == ST_IN_MEMORY && crc_matches(f, crc32_of(0, f->data, (size_t)f->data_len), err, errlen)) goto out;
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

// Why a file is not safetensors, from its first ST_HEAD bytes (zeros past the
// end of a shorter file): the kinds users give by mistake (docs/interface.md, section 4), or NULL.
// Asked only once the header length has failed, so a valid file never meets it.
static const char *wrong_kind(const uint8_t head[ST_HEAD], size_t len) {
    static const struct { const char *magic; size_t n, at; const char *kind; } kinds[] = {
        {"\x89PNG\r\n\x1a\n", 8, 0, "a PNG image, not a safetensors checkpoint"},
        {"\xff\xd8\xff", 3, 0, "a JPEG image, not a safetensors checkpoint"},
        {"WEBP", 4, 8, "a WebP image, not a safetensors checkpoint"},   // after "RIFF" and a length
        {"\x93NUMPY", 6, 0, "a NumPy .npy array, not a safetensors checkpoint"},
        {"PK\x03\x04", 4, 0, "a zip file, not a safetensors checkpoint (a PyTorch .pth? convert it with "
                              "tools/convert_mae.py)"},
        {"{", 1, 0, "JSON text, not a safetensors checkpoint"},
    };
    if (len == 0) return "an empty file, not a safetensors checkpoint";
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (len >= kinds[i].at + kinds[i].n && memcmp(head + kinds[i].at, kinds[i].magic, kinds[i].n) == 0 &&
            (kinds[i].at == 0 || memcmp(head, "RIFF", 4) == 0))
            return kinds[i].kind;
    // Text (a CSV, a log, a config): ASCII without control bytes but tab, newline and carriage return,
    // or UTF-8 (a sequence cut by the end of the head counts). A checkpoint's 8-byte header length has
    // its high bytes 0, so a checkpoint never looks so.
    size_t n = len < ST_HEAD ? len : ST_HEAD, i = 0;
    while (i < n) {
        uint8_t c = head[i++];
        size_t more = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
        if (!more && (c >= 0x80 || c == 0x7f || (c < 0x20 && c != '\t' && c != '\n' && c != '\r'))) return NULL;
        for (; more && i < n; more--)
            if ((head[i++] & 0xc0) != 0x80) return NULL;
    }
    return "a text file, not a safetensors checkpoint";
}

// Validates the 8-byte header length (head's first 8 bytes) against the file's len bytes: 0 and
// *hlen, or -1.
static int header_len(const StFile *f, const uint8_t head[ST_HEAD], size_t len, uint64_t *out, char *err, size_t errlen) {
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | head[i];
    const char *kind = len < 8 || hlen > ST_MAX_HEADER ? wrong_kind(head, len) : NULL;
    if (kind) {
        fail(err, errlen, "%s: %s", f->path, kind);
        return -1;
    }
    if (len < 8) {
        fail(err, errlen, "%s: not a safetensors checkpoint (file too short: %zu bytes; a safetensors file starts "
             "with an 8-byte header length)", f->path, len);
        return -1;
    }
    if (hlen > ST_MAX_HEADER) {
        fail(err, errlen, "%s: not a safetensors checkpoint (header length %llu is too large: the limit is %u)", f->path,
             (unsigned long long)hlen, ST_MAX_HEADER);
        return -1;
    }
    if (hlen > len - 8) {
        fail(err, errlen, "%s: truncated header (header length %llu, file has %zu bytes after it)", f->path,
             (unsigned long long)hlen, len - 8);
        return -1;
    }
    *out = hlen;
    return 0;
}

// Validates the 8-byte length against len; on success allocates f->alloc so that the data
// section of a copy placed at the returned pointer is ST_ALIGN-aligned.
static uint8_t *place(StFile *f, const uint8_t head[ST_HEAD], size_t len, char *err, size_t errlen) {
    uint64_t hlen;
    if (header_len(f, head, len, &hlen, err, errlen)) return NULL;
    if (len > SIZE_MAX - 2 * ST_ALIGN) { fail(err, errlen, "%s: file too large", f->path); return NULL; }
    f->alloc = malloc(len + ST_ALIGN + 1);
    if (!f->alloc) { fail(err, errlen, "%s: out of memory reading %zu bytes", f->path, len); return NULL; }
    uintptr_t data_at = (uintptr_t)f->alloc + 8 + (uintptr_t)hlen;
    size_t shift = (ST_ALIGN - data_at % ST_ALIGN) % ST_ALIGN;
    return f->alloc + shift;
}

static StFile *new_file(const char *name, char *err, size_t errlen) {
    StFile *f = calloc(1, sizeof *f);
    if (f) { f->path = xstrdup(name ? name : "(memory)"); f->fd = -1; f->state = ST_IN_MEMORY; }
    if (!f || !f->path) { free(f); fail(err, errlen, "%s: out of memory", name ? name : "(memory)"); return NULL; }
    return f;
}

StFile *st_open_mem(const uint8_t *buf, size_t len, const char *name, char *err, size_t errlen) {
    StFile *f = new_file(name, err, errlen);
    if (!f) return NULL;
    uint8_t head[ST_HEAD] = {0};
    memcpy(head, buf, len < ST_HEAD ? len : ST_HEAD);
    uint8_t *at = place(f, head, len, err, errlen);
    if (!at) { st_close(f); return NULL; }
    memcpy(at, buf, len);
    if (parse_file(f, at, len, err, errlen)) { st_close(f); return NULL; }
    return f;
}

static int read_full(int fd, uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t r = read(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return r == 0 ? -2 : -1;
        p += r; n -= (size_t)r;
    }
    return 0;
}

int st_run_latest(const char *dir, char *latest, size_t n) {
    size_t len = strlen(dir);
    while (len > 0 && dir[len - 1] == '/') len--;   // "run/" -> "run", "/" -> ""
    struct stat st;
    int fits = snprintf(latest, n, "%.*s/checkpoint.safetensors", (int)len, dir) < (int)n;
    return fits && stat(latest, &st) == 0 && S_ISREG(st.st_mode);
}

const char *st_checkpoint_arg(const char *arg, char *buf, size_t n) {
    struct stat st;
    if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode)) return arg;
    if (st_run_latest(arg, buf, n)) return buf;
    // RUN/checkpoint.safetensors there but no file (a folder, a link to nothing): that path, whose open
    // says why; "RUN: a folder with no checkpoint.safetensors" denied the name the user sees in it.
    return strlen(buf) + 1 < n && lstat(buf, &st) == 0 ? buf : arg;
}

// Whether path's last name ends in ".safetensors" (trailing slashes aside): a folder of that name was
// meant as a file (`--resume RUN` whose RUN/checkpoint.safetensors is a folder, or `--ckpt` of it), so
// "a folder with no checkpoint.safetensors" would read as if one were looked for inside it.
static int named_like_file(const char *path) {
    static const char ext[] = ".safetensors";
    size_t len = strlen(path), n = sizeof ext - 1;
    while (len > 0 && path[len - 1] == '/') len--;
    return len >= n && memcmp(path + len - n, ext, n) == 0;
}

// Opens path for reading: 0, the descriptor and the file's size, or -1 (err). Both ways in use it.
static int open_regular(const char *path, int *fd_out, size_t *len, char *err, size_t errlen) {
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer before fstat could refuse it
    // (for a regular file the flag changes nothing).
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    char reason[128];   // the system's words for it, as every file's (io/files.h)
    if (fd < 0) {   // a link to nothing named so (io/files.h), as an image's
        char why[4200];
        fail(err, errlen, "%s: %s", path, file_path_reason(path, errno, why, sizeof why));
        return -1;
    }
    if (fstat(fd, &st) != 0) fail(err, errlen, "%s: %s", path, file_reason(errno, reason, sizeof reason));
    else if (S_ISDIR(st.st_mode))   // a run folder with its checkpoint was taken by st_checkpoint_arg
        fail(err, errlen, named_like_file(path) ? "%s: a folder, not a checkpoint file"
                                                : "%s: a folder with no checkpoint.safetensors", path);
    else if (!S_ISREG(st.st_mode)) fail(err, errlen, "%s: not a regular file", path);
    else if ((uint64_t)st.st_size > SIZE_MAX / 2) fail(err, errlen, "%s: file too large", path);
    else { *fd_out = fd; *len = (size_t)st.st_size; return 0; }
    close(fd);
    return -1;
}

// read_full with its reason: 0, or -1 and "<path>: file shrank while reading" or the system's reason.
static int read_or_fail(int fd, uint8_t *p, size_t n, const char *path, char *err, size_t errlen) {
    int r = read_full(fd, p, n);
    char reason[128];
    if (r != 0)
        fail(err, errlen, "%s: %s", path, r == -2 ? "file shrank while reading" : file_reason(errno, reason, sizeof reason));
    return r != 0 ? -1 : 0;
}

// Both ways in start alike: a new StFile for path, the file open (*fd) and read up to its 8th byte,
// its size and first ST_HEAD bytes (zeros past a shorter file's end). NULL (err) with nothing left open.
static StFile *open_start(const char *path, int *fd, size_t *len, uint8_t head[ST_HEAD], char *err, size_t errlen) {
    StFile *f = new_file(path, err, errlen);
    if (!f) return NULL;
    if (open_regular(path, fd, len, err, errlen)) { st_close(f); return NULL; }
    memset(head, 0, ST_HEAD);
    size_t n = *len < ST_HEAD ? *len : ST_HEAD;
    if (read_or_fail(*fd, head, n < 8 ? n : 8, path, err, errlen)) { close(*fd); st_close(f); return NULL; }
    // The bytes past the 8th only name a file of another kind (wrong_kind): read without moving on,
    // and left zero if that read fails.
    if (n > 8 && pread(*fd, head + 8, n - 8, 8) != (ssize_t)(n - 8)) memset(head + 8, 0, ST_HEAD - 8);
    return f;
}

StFile *st_open(const char *path, char *err, size_t errlen) {
    int fd;
    size_t len;
    uint8_t head[ST_HEAD];
    StFile *f = open_start(path, &fd, &len, head, err, errlen);
    if (!f) return NULL;
    uint8_t *at = place(f, head, len, err, errlen);
    int bad = !at;
    if (at) {
        memcpy(at, head, 8);
        bad = read_or_fail(fd, at + 8, len - 8, path, err, errlen);
    }
    close(fd);
    if (bad || parse_file(f, at, len, err, errlen)) { st_close(f); return NULL; }
    return f;
}

StFile *st_open_header(const char *path, char *err, size_t errlen) {
    int fd;
    size_t len;
    uint8_t head[ST_HEAD];
    StFile *f = open_start(path, &fd, &len, head, err, errlen);
    if (!f) return NULL;
    f->fd = fd;   // st_close closes it; st_fill reads on from the data section's first byte
    f->state = ST_ON_DISK;
    uint64_t hlen;
    if (header_len(f, head, len, &hlen, err, errlen)) goto bad;
    f->alloc = malloc((size_t)hlen + 9);
    if (!f->alloc) { fail(err, errlen, "%s: out of memory", path); goto bad; }
    memcpy(f->alloc, head, 8);
    if (read_or_fail(fd, f->alloc + 8, (size_t)hlen, path, err, errlen)) goto bad;
    if (parse_file(f, f->alloc, len, err, errlen)) goto bad;
    f->dst = calloc((size_t)f->n + 1, sizeof *f->dst);
    if (!f->dst) { fail(err, errlen, "%s: out of memory", path); goto bad; }
    return f;
bad:
    st_close(f);
    return NULL;
}

// 1 when any of n floats (their bytes at p, which need not be aligned) is NaN or infinite.
static int any_nonfinite(const uint8_t *p, size_t n) {
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        float x;
        memcpy(&x, p + 4 * k, 4);
        bad |= !isfinite(x);   // no early exit: vectorises
    }
    return bad;
}

void st_scan(StFile *f, int i) {
    StEntry *e = &f->t[i];
    if (f->state == ST_IN_MEMORY) e->nonfinite = any_nonfinite(f->data + e->begin, (size_t)(e->end - e->begin) / 4);
    else if (f->state == ST_ON_DISK) e->scan = 1;
    else abort();   // after st_fill the data are gone: a caller's bug (io/safetensors.h)
}

int st_nonfinite(const StFile *f, int i) { return f->t[i].nonfinite; }

void st_take(StFile *f, int i, float *dst) {
    const StEntry *e = &f->t[i];
    if (f->state == ST_IN_MEMORY) memcpy(dst, f->data + e->begin, (size_t)(e->end - e->begin));
    else if (f->state == ST_ON_DISK) f->dst[i] = dst;
    else abort();   // after st_fill the data are gone: a caller's bug (io/safetensors.h)
}

// Reads the data section of a file from st_open_header once, in order: each tensor into its st_take
// place when `places`, else (and for tensors without one) through a small buffer; checks the crc32.
static int read_data(StFile *f, int places, char *err, size_t errlen) {
    if (f->state != ST_ON_DISK) return 0;
    f->state = ST_FILLED;
    enum { CHUNK = 4 << 20 };
    StEntry **order = malloc((size_t)f->n * sizeof *order + 1);
    uint8_t *buf = malloc(CHUNK);
    int rc = -1;
    if (!order || !buf) { fail(err, errlen, "%s: out of memory", f->path); goto out; }
    for (int i = 0; i < f->n; i++) order[i] = &f->t[i];
    qsort(order, (size_t)f->n, sizeof *order, cmp_entry_offset);   // check_layout: they tile the section
    uint32_t crc = 0;
    for (int k = 0; k < f->n; k++) {
        StEntry *e = order[k];
        size_t left = (size_t)(e->end - e->begin);
        uint8_t *to = places ? (uint8_t *)f->dst[e - f->t] : NULL;
        while (left > 0) {
            size_t n = to ? left : left < CHUNK ? left : CHUNK;
            uint8_t *p = to ? to : buf;
            if (read_or_fail(f->fd, p, n, f->path, err, errlen)) goto out;
            if (f->has_crc) crc = crc32_of(crc, p, n);
            if (places && e->scan) e->nonfinite |= any_nonfinite(p, n / 4);   // n: whole floats (CHUNK, a tensor's bytes)
            left -= n;
            if (to) to += n;
        }
    }
    rc = crc_matches(f, crc, err, errlen);
out:
    close(f->fd);
    f->fd = -1;
    free(order); free(buf);
    return rc;
}

int st_fill(StFile *f, char *err, size_t errlen) { return read_data(f, 1, err, errlen); }
int st_verify(StFile *f, char *err, size_t errlen) { return read_data(f, 0, err, errlen); }

// ---------------------------------------------------------------------------------------------
// Writing

static int write_full(int fd, const void *buf, size_t n) {
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        if (w == 0) { errno = EIO; return -1; }
        p += w; n -= (size_t)w;
    }
    return 0;
}

static size_t tensor_numel(const StTensor *t) {
    size_t n = 1;
    for (int k = 0; k < t->ndim; k++) n *= (size_t)t->shape[k];
    return n;
}

// The header JSON (without padding): tensors in the given order, then __metadata__.
static char *build_header(const StTensor *ts, int nt, const char *const *keys, const char *const *vals,
                          int nmeta, const char *crc_hex, char *err, size_t errlen) {
    cJSON *root = cJSON_CreateObject();
    if (!root) goto oom;
    size_t off = 0;
    for (int i = 0; i < nt; i++) {
        const StTensor *t = &ts[i];
        cJSON *e = cJSON_AddObjectToObject(root, t->name);
        if (!e || !cJSON_AddStringToObject(e, "dtype", "F32")) goto oom;
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        if (!sh) goto oom;
        for (int k = 0; k < t->ndim; k++) {
            cJSON *d = cJSON_CreateNumber((double)t->shape[k]);
            if (!d || !cJSON_AddItemToArray(sh, d)) { cJSON_Delete(d); goto oom; }
        }
        size_t bytes = 4 * tensor_numel(t);
        cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
        if (!o) goto oom;
        cJSON *b = cJSON_CreateNumber((double)off), *en = cJSON_CreateNumber((double)(off + bytes));
        if (!b || !en) { cJSON_Delete(b); cJSON_Delete(en); goto oom; }
        cJSON_AddItemToArray(o, b);
        cJSON_AddItemToArray(o, en);
        off += bytes;
    }
    cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
    if (!meta) goto oom;
    for (int i = 0; i < nmeta; i++) {
        if (strcmp(keys[i], "crc32") == 0) continue;   // ours is computed below
        if (!cJSON_AddStringToObject(meta, keys[i], vals[i])) goto oom;
    }
    if (!cJSON_AddStringToObject(meta, "crc32", crc_hex)) goto oom;
    char *s = json_print_utf8(root, 0);
    cJSON_Delete(root);
    if (!s) { fail(err, errlen, "out of memory"); return NULL; }
    return s;
oom:
    cJSON_Delete(root);
    fail(err, errlen, "out of memory building the header");
    return NULL;
}

// Writes everything to fd; returns 0 or -1 with errno set.
static int write_body(int fd, const char *json, const StTensor *ts, int nt) {
    size_t jlen = strlen(json);
    size_t hlen = (jlen + 7) / 8 * 8;
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    if (write_full(fd, len8, 8) || write_full(fd, json, jlen)) return -1;
    static const char spaces[8] = "        ";
    if (write_full(fd, spaces, hlen - jlen)) return -1;
    for (int i = 0; i < nt; i++) {
        size_t n = tensor_numel(&ts[i]);
        if (n && write_full(fd, ts[i].data, 4 * n)) return -1;
    }
    return 0;
}

int st_write(const char *path, const StTensor *tensors, int ntensors,
             const char *const *meta_keys, const char *const *meta_vals, int nmeta,
             char *err, size_t errlen) {
    for (int i = 0; i < ntensors; i++) {
        const StTensor *t = &tensors[i];
        if (!t->name || !*t->name || strcmp(t->name, "__metadata__") == 0 || t->ndim < 0 || t->ndim > 4) {
            fail(err, errlen, "%s: invalid tensor #%d", path, i);
            return -1;
        }
        for (int k = 0; k < t->ndim; k++)
            if (t->shape[k] < 0) { fail(err, errlen, "%s: tensor '%s' has a negative dimension", path, t->name); return -1; }
        if (!t->data && tensor_numel(t)) { fail(err, errlen, "%s: tensor '%s' has no data", path, t->name); return -1; }
    }
    uint32_t crc = 0;
    for (int i = 0; i < ntensors; i++)
        crc = crc32_of(crc, (const uint8_t *)tensors[i].data, 4 * tensor_numel(&tensors[i]));
    char crc_hex[16];
    snprintf(crc_hex, sizeof crc_hex, "%08lx", (unsigned long)crc);
    char *json = build_header(tensors, ntensors, meta_keys, meta_vals, nmeta, crc_hex, err, errlen);
    if (!json) { fail(err, errlen, "%s: out of memory", path); return -1; }   // the file named, as every failure here

    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    if (!tmp) { free(json); fail(err, errlen, "%s: out of memory", path); return -1; }
    // Same folder as the target, so rename() is atomic (same file system).
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    snprintf(tmp, plen + 32, "%.*s.%s.tmp-XXXXXX", (int)dirlen, path, path + dirlen);
    // Made, and removed on failure, through io/files.c: from the folder it was made in, wherever the
    // user moved that folder meanwhile (docs/interface.md, section 1), never by its old name.
    int fd = file_tmp_create_unique(tmp);
    char reason[128];
    if (fd < 0) {
        fail(err, errlen, "%s: cannot create a temporary file in its folder: %s", path,
             file_reason(errno, reason, sizeof reason));
        free(tmp); free(json);
        return -1;
    }
    const char *step = "write";   // made 0666 less the umask (file_tmp_create), as every output
    int rc = write_body(fd, json, tensors, ntensors);
    if (rc == 0) { step = "fsync"; rc = fsync(fd); }
    int saved = errno;
    if (close(fd) != 0 && rc == 0) { rc = -1; saved = errno; step = "close"; }
    if (rc == 0) file_test_gate("VITMAE_FAULT_HOLD_BEFORE_CKPT_RENAME");   // tests: its folder moved meanwhile
    if (rc == 0) { step = "rename"; rc = rename(tmp, path); saved = errno; }
    if (rc != 0) {
        file_tmp_remove(tmp);
        // The earlier file, when there is one, is untouched: said only then (a first checkpoint has none).
        struct stat prev;
        fail(err, errlen, "%s: %s failed: %s%s", path, step, file_reason(saved, reason, sizeof reason),
             lstat(path, &prev) == 0 ? " (previous file left intact)" : "");
        free(tmp); free(json);
        return -1;
    }
    file_tmp_forget(tmp);
    free(tmp); free(json);
    // In place, whole: a folder that cannot be synced is said as for every file (io/files.h).
    return file_sync_folder_of(path, err, errlen);
}
