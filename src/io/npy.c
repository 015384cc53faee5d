// NumPy .npy writer, format 1.0 (numpy/lib/format.py documents the layout).
#include "io/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n > (1u << 30) ? (1u << 30) : n);
        if (k < 0) { if (errno == EINTR) continue; return -1; }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int npy_write_to(const char *tmp, const char *path, const void *data, const char *descr, int ndim,
                 const int64_t *shape, char *err, size_t errlen) {
    char header[1024];
    int hn = npy_header(header, sizeof header, descr, ndim, shape, err, errlen);
    if (hn < 0) return -1;
    size_t count = 1, isz = item_size(descr);
    for (int d = 0; d < ndim; d++) {
        if (shape[d] != 0 && count > SIZE_MAX / isz / (uint64_t)shape[d]) {
            snprintf(err, errlen, "%s: array too large", path);
            return -1;
        }
        count *= (size_t)shape[d];
    }
    size_t nbytes = count * isz;
    if (nbytes && !data) {
        snprintf(err, errlen, "%s: no data", path);
        return -1;
    }
    int fd = file_tmp_create(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        file_tmp_forget(tmp);
        return -1;
    }
    int failed = write_all(fd, header, (size_t)hn) || write_all(fd, data, nbytes) || fsync(fd);
    int saved = errno;
    if (close(fd) && !failed) { failed = 1; saved = errno; }
    if (failed) {
        file_tmp_remove(tmp);
        snprintf(err, errlen, "%s: %s", path, strerror(saved));
        return -1;
    }
    return 0;
}

int npy_write(const char *path, const void *data, const char *descr, int ndim,
              const int64_t *shape, char *err, size_t errlen) {
    size_t tlen = strlen(path) + FILE_TMP_EXTRA;
    char *tmp = malloc(tlen);
    if (!tmp) { snprintf(err, errlen, "%s: out of memory", path); return -1; }
    file_tmp_name(path, tmp, tlen);
    int rc = npy_write_to(tmp, path, data, descr, ndim, shape, err, errlen);
    if (!rc && rename(tmp, path)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        unlink(tmp);
        rc = -1;
    }
    file_tmp_forget(tmp);
    free(tmp);
    return rc;
}
