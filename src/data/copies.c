// Files with the same bytes among a dataset's images (data/copies.h).
#include "data/copies.h"
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { COPY_CHUNK = 1 << 16 };   // a read's size, and the first piece of a file that is read first

enum { UNREAD, HEAD_READ, WHOLE_READ };

typedef struct {
    long long bytes;   // the file's size at the scan
    uint32_t head;     // HEAD_READ or WHOLE_READ: the CRC-32 of its first min(bytes, COPY_CHUNK) bytes
    uint32_t crc;      // WHOLE_READ: the CRC-32 of all its bytes, bytes long now
    int read;          // UNREAD (or unreadable, or no longer bytes long), HEAD_READ, WHOLE_READ
    int i;             // index into ds->items
} CopyKey;

static int by_size(const void *pa, const void *pb) {
    const CopyKey *a = pa, *b = pb;
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
    return a->i - b->i;
}

// Files whose first piece was read first, then by size, that piece's CRC and scan order: files that
// may be copies end up side by side.
static int by_head(const void *pa, const void *pb) {
    const CopyKey *a = pa, *b = pb;
    if ((a->read != UNREAD) != (b->read != UNREAD)) return a->read == UNREAD ? 1 : -1;
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
    if (a->head != b->head) return a->head < b->head ? -1 : 1;
    return a->i - b->i;
}

// Files read whole first, then by size, CRC and scan order: copies end up side by side, each run in
// scan order, so the first of a run is the earliest file.
static int by_content(const void *pa, const void *pb) {
    const CopyKey *a = pa, *b = pb;
    if ((a->read == WHOLE_READ) != (b->read == WHOLE_READ)) return a->read == WHOLE_READ ? -1 : 1;
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? -1 : 1;
    if (a->crc != b->crc) return a->crc < b->crc ? -1 : 1;
    return a->i - b->i;
}

// Reads k's file from offset `from` (0, or COPY_CHUNK after its first piece) to its end, which must
// still be k->bytes; from 0 at most its first piece. buf: COPY_CHUNK bytes. Sets k->read.
static void read_file_crc(const char *path, CopyKey *k, long long from, unsigned char *buf) {
    FILE *f = fopen(path, "rb");
    if (!f || (from > 0 && fseek(f, (long)from, SEEK_SET) != 0)) {
        if (f) fclose(f);
        k->read = UNREAD;
        return;
    }
    long long want = from == 0 && k->bytes > COPY_CHUNK ? COPY_CHUNK : k->bytes - from, total = 0;
    uLong c = from == 0 ? crc32(0, Z_NULL, 0) : k->head;
    size_t got;
    while (total < want && (got = fread(buf, 1, COPY_CHUNK, f)) > 0) {
        c = crc32(c, buf, (uInt)got);
        total += (long long)got;
    }
    // The whole file read: it must end where the scan said it did (a file that grew is no copy).
    int whole = from + want == k->bytes;
    int bad = ferror(f) || total != want || (whole && fgetc(f) != EOF);
    fclose(f);
    if (bad) { k->read = UNREAD; return; }
    if (from == 0) k->head = (uint32_t)c;
    if (whole) k->crc = (uint32_t)c;
    k->read = whole ? WHOLE_READ : HEAD_READ;
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

// Reads each file key[todo[t]] from `from` (read_file_crc), in parallel: a chunk of the arena for each
// thread, and each key written by one thread only, so the answer is the same for any thread count.
// The arena has `threads` chunks (at least); num_threads(threads) makes that the team's most: OpenMP
// gives a team no more threads than the clause asks, and fewer under OMP_DYNAMIC, OMP_THREAD_LIMIT or
// an enclosing region (nested or not: a team of one there), so omp_get_thread_num() < threads always.
static void read_all(const Dataset *ds, CopyKey *key, const int *todo, int ntodo, long long from,
                     unsigned char *arena, int threads) {
    #pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int t = 0; t < ntodo; t++) {
        CopyKey *k = &key[todo[t]];
        read_file_crc(ds->items[k->i].path, k, from, arena + (size_t)omp_get_thread_num() * COPY_CHUNK);
    }
}

int dataset_copies(const Dataset *ds, int *copy_of, char *err, size_t errlen) {
    int n = ds->n > 0 ? ds->n : 0, threads = omp_get_max_threads();
    for (int i = 0; i < n; i++) copy_of[i] = -1;
    CopyKey *key = malloc(sizeof *key * ((size_t)n + 1));
    int *todo = malloc(sizeof *todo * ((size_t)n + 1));
    // One chunk for each thread's reads, and at least the two that same_bytes compares.
    unsigned char *arena = malloc((size_t)(threads > 2 ? threads : 2) * COPY_CHUNK);
    if (!key || !todo || !arena) {
        free(key); free(todo); free(arena);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (ds->items[i].bytes >= 0) key[m++] = (CopyKey){ds->items[i].bytes, 0, 0, UNREAD, i};
    qsort(key, (size_t)m, sizeof *key, by_size);
    // Only a file that shares its size with another is read, first its first piece only ...
    int ntodo = 0;
    for (int a = 0, b; a < m; a = b) {
        for (b = a + 1; b < m && key[b].bytes == key[a].bytes; b++) {}
        for (int k = a; b - a > 1 && k < b; k++) todo[ntodo++] = k;
    }
    read_all(ds, key, todo, ntodo, 0, arena, threads);
    // ... and the rest of it only when that piece is another's of its size too.
    qsort(key, (size_t)m, sizeof *key, by_head);
    ntodo = 0;
    for (int a = 0, b; a < m && key[a].read != UNREAD; a = b) {
        for (b = a + 1; b < m && key[b].read != UNREAD && key[b].bytes == key[a].bytes && key[b].head == key[a].head; b++) {}
        for (int k = a; b - a > 1 && k < b; k++)
            if (key[k].read == HEAD_READ) todo[ntodo++] = k;
    }
    read_all(ds, key, todo, ntodo, COPY_CHUNK, arena, threads);
    free(todo);
    qsort(key, (size_t)m, sizeof *key, by_content);
    // Within a run of one size and CRC, each file is compared with the earlier ones that are no copy
    // themselves, earliest first: the first that matches is the earliest file with its bytes.
    int copies = 0;
    for (int a = 0, b; a < m && key[a].read == WHOLE_READ; a = b) {
        for (b = a + 1; b < m && key[b].read == WHOLE_READ && key[b].bytes == key[a].bytes && key[b].crc == key[a].crc; b++) {}
        for (int j = a + 1; j < b; j++)
            for (int q = a; q < j; q++) {
                if (copy_of[key[q].i] >= 0) continue;
                if (same_bytes(ds->items[key[q].i].path, ds->items[key[j].i].path, arena)) {
                    copy_of[key[j].i] = key[q].i;
                    copies++;
                    break;
                }
            }
    }
    free(key); free(arena);
    return copies;
}
