// NumPy .npy writer, format 1.0 (docs/interface.md, section 6, ".npy files").
#include "io/npy.h"

#include <stdio.h>
#include <string.h>
#include "io/files.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c writes host memory as little-endian data"
#endif

static const struct { const char *descr; size_t size; } npy_types[] = {
    {"<f4", 4}, {"<f8", 8}, {"<i4", 4}, {"<i8", 8}, {"|u1", 1}, {"|i1", 1}, {"|b1", 1},
};

static size_t item_size(const char *descr) {
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (strcmp(descr, npy_types[i].descr) == 0) return npy_types[i].size;
    return 0;
}

enum { NPY_ALIGN = 64, NPY_PREFIX = 10 };   // magic (6) + version (2) + header length (2)

int npy_header(char *buf, size_t cap, const char *descr, int ndim, const int64_t *shape,
               char *err, size_t errlen) {
    if (!descr || !item_size(descr)) {
        snprintf(err, errlen, "unsupported dtype '%s'", descr ? descr : "(null)");
        return -1;
    }
    if (ndim < 0 || ndim > NPY_MAX_DIMS) {
        snprintf(err, errlen, "ndim %d out of range (0..%d)", ndim, NPY_MAX_DIMS);
        return -1;
    }
    char dict[64 + NPY_MAX_DIMS * 24];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            snprintf(err, errlen, "negative dimension %lld", (long long)shape[d]);
            return -1;
        }
        n += snprintf(dict + n, sizeof dict - n, d ? ", %lld" : "%lld", (long long)shape[d]);
    }
    n += snprintf(dict + n, sizeof dict - n, "%s), }", ndim == 1 ? "," : "");
    // Pad with spaces, then '\n', to a multiple of NPY_ALIGN including the 10-byte prefix.
    size_t total = (NPY_PREFIX + (size_t)n + 1 + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    if (total > cap) {
        snprintf(err, errlen, "npy header buffer too small");
        return -1;
    }
    size_t hlen = total - NPY_PREFIX;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + NPY_PREFIX, dict, (size_t)n);
    memset(buf + NPY_PREFIX + n, ' ', total - NPY_PREFIX - (size_t)n - 1);
    buf[total - 1] = '\n';
    return (int)total;
}

// The header (into header, its length in *hn) and the data's byte count of an array bound for path
// (named in err). 0, or -1 with err.
static int npy_parts(const char *path, const void *data, const char *descr, int ndim, const int64_t *shape,
                     char *header, size_t cap, size_t *hn, size_t *nbytes, char *err, size_t errlen) {
    int n = npy_header(header, cap, descr, ndim, shape, err, errlen);
    if (n < 0) return -1;
    size_t count = 1, isz = item_size(descr);
    for (int d = 0; d < ndim; d++) {
        if (shape[d] != 0 && count > SIZE_MAX / isz / (uint64_t)shape[d]) {
            snprintf(err, errlen, "%s: array too large", path);
            return -1;
        }
        count *= (size_t)shape[d];
    }
    *hn = (size_t)n;
    *nbytes = count * isz;
    if (*nbytes && !data) {
        snprintf(err, errlen, "%s: no data", path);
        return -1;
    }
    return 0;
}

int npy_write_to(char *tmp, const char *path, const void *data, const char *descr, int ndim,
                 const int64_t *shape, char *err, size_t errlen) {
    char header[1024];
    size_t lens[2];
    if (npy_parts(path, data, descr, ndim, shape, header, sizeof header, &lens[0], &lens[1], err, errlen)) return -1;
    const void *parts[2] = {header, data};
    return file_write_parts_to(tmp, path, parts, lens, 2, err, errlen);
}

int npy_write(const char *path, const void *data, const char *descr, int ndim,
              const int64_t *shape, char *err, size_t errlen) {
    char header[1024];
    size_t lens[2];
    if (npy_parts(path, data, descr, ndim, shape, header, sizeof header, &lens[0], &lens[1], err, errlen)) return -1;
    const void *parts[2] = {header, data};
    return file_write_parts_atomic(path, parts, lens, 2, err, errlen);
}
