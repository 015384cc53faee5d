// Files with the same bytes among a dataset's images (data/copies.h).
#include "data/copies.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct {
    long long bytes;   // the file's size at the scan
    uint32_t crc;      // of its bytes now, when read
    int read;          // 1: crc holds the file's CRC-32 (it was read whole, bytes long)
    int i;             // index into ds->items
} CopyKey;

static int by_size(const void *pa, const void *pb) {
    const CopyKey *a = pa, *b = pb;
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
    return a->i - b->i;
}

// Files read whole first, then by size, CRC and scan order: copies end up side by side, each run in
// scan order, so the first of a run is the earliest file.
static int by_content(const void *pa, const void *pb) {
    const CopyKey *a = pa, *b = pb;
    if (a->read != b->read) return b->read - a->read;
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
    if (a->crc != b->crc) return a->crc < b->crc ? -1 : 1;
    return a->i - b->i;
}

enum { COPY_CHUNK = 1 << 16 };

// The CRC-32 of the file at path, which must still be bytes long: 0, or -1 (unreadable, or changed).
static int file_crc(const char *path, long long bytes, uint32_t *crc) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char buf[COPY_CHUNK];
    uLong c = crc32(0, Z_NULL, 0);
    long long total = 0;
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        c = crc32(c, buf, (uInt)got);
        total += (long long)got;
    }
    int bad = ferror(f) || total != bytes;
    fclose(f);
    *crc = (uint32_t)c;
    return bad ? -1 : 0;
}

// 1 when the two files hold the same bytes, 0 when not or when either cannot be read. buf: 2 chunks.
static int same_bytes(const char *a, const char *b, unsigned char *buf) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    unsigned char *ba = buf, *bb = buf + COPY_CHUNK;
    while (same) {
        size_t na = fread(ba, 1, COPY_CHUNK, fa), nb = fread(bb, 1, COPY_CHUNK, fb);
        if (na != nb || memcmp(ba, bb, na) || ferror(fa) || ferror(fb)) same = 0;
        else if (na == 0) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

int dataset_copies(const Dataset *ds, int *copy_of, char *err, size_t errlen) {
    int n = ds->n > 0 ? ds->n : 0;
    for (int i = 0; i < n; i++) copy_of[i] = -1;
    CopyKey *key = malloc(sizeof *key * ((size_t)n + 1));
    int *todo = malloc(sizeof *todo * ((size_t)n + 1));
    unsigned char *buf = malloc(2 * COPY_CHUNK);
    if (!key || !todo || !buf) {
        free(key); free(todo); free(buf);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (ds->items[i].bytes >= 0) key[m++] = (CopyKey){ds->items[i].bytes, 0, 0, i};
    qsort(key, (size_t)m, sizeof *key, by_size);
    // Only a file that shares its size with another is read.
    int ntodo = 0;
    for (int a = 0, b; a < m; a = b) {
        for (b = a + 1; b < m && key[b].bytes == key[a].bytes; b++) {}
        for (int k = a; b - a > 1 && k < b; k++) todo[ntodo++] = k;
    }
    #pragma omp parallel for schedule(dynamic, 1)
    for (int t = 0; t < ntodo; t++) {
        CopyKey *k = &key[todo[t]];
        k->read = file_crc(ds->items[k->i].path, k->bytes, &k->crc) == 0;
    }
    free(todo);
    qsort(key, (size_t)m, sizeof *key, by_content);
    // Within a run of one size and CRC, each file is compared with the earlier ones that are no copy
    // themselves, earliest first: the first that matches is the earliest file with its bytes.
    int copies = 0;
    for (int a = 0, b; a < m && key[a].read; a = b) {
        for (b = a + 1; b < m && key[b].read && key[b].bytes == key[a].bytes && key[b].crc == key[a].crc; b++) {}
        for (int j = a + 1; j < b; j++)
            for (int q = a; q < j; q++) {
                if (copy_of[key[q].i] >= 0) continue;
                if (same_bytes(ds->items[key[q].i].path, ds->items[key[j].i].path, buf)) {
                    copy_of[key[j].i] = key[q].i;
                    copies++;
                    break;
                }
            }
    }
    free(key); free(buf);
    return copies;
}
