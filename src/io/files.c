// Atomic whole-file writes and the publishing of a command's outputs (files.h).
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "io/files.h"

int file_tmp_name(const char *path, char *tmp, size_t tmplen) {
    static unsigned serial;   // threads of one process stage files side by side
    unsigned k = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
    int n = snprintf(tmp, tmplen, "%s.tmp.%ld.%u", path, (long)getpid(), k);
    if (n < 0 || (size_t)n >= tmplen) { if (tmplen) tmp[0] = 0; return -1; }
    return 0;
}

int file_write_to(const char *tmp, const char *path, const void *data, size_t len, char *err, size_t errlen) {
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) { snprintf(err, errlen, "%.2000s: %s", path, strerror(errno)); return -1; }
    int failed = 0, saved = 0;
    const char *p = data;
    for (size_t done = 0; done < len && !failed;) {
        ssize_t w = write(fd, p + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { failed = 1; saved = w < 0 ? errno : EIO; }
        else done += (size_t)w;
    }
    if (!failed && fsync(fd)) { failed = 1; saved = errno; }
    if (close(fd) && !failed) { failed = 1; saved = errno; }
    if (failed) {
        unlink(tmp);
        snprintf(err, errlen, "%.2000s: %s", path, strerror(saved));
    }
    return failed ? -1 : 0;
}

int file_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    size_t tlen = strlen(path) + FILE_TMP_EXTRA;
    char *tmp = malloc(tlen);
    if (!tmp) { snprintf(err, errlen, "%.2000s: out of memory", path); return -1; }
    file_tmp_name(path, tmp, tlen);
    int rc = file_write_to(tmp, path, data, len, err, errlen);
    if (!rc && rename(tmp, path)) {
        snprintf(err, errlen, "%.2000s: %s", path, strerror(errno));
        unlink(tmp);
        rc = -1;
    }
    free(tmp);
    return rc;
}

int file_group_add(FileGroup *g, const char *tmp, const char *path) {
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 8;
        char **t = realloc(g->tmps, (size_t)cap * sizeof *t);
        if (t) g->tmps = t;
        char **p = realloc(g->paths, (size_t)cap * sizeof *p);
        if (p) g->paths = p;
        if (!t || !p) { unlink(tmp); return -1; }
        g->cap = cap;
    }
    char *t = strdup(tmp), *p = strdup(path);
    if (!t || !p) { free(t); free(p); unlink(tmp); return -1; }
    g->tmps[g->n] = t;
    g->paths[g->n++] = p;
    return 0;
}

static void group_free(FileGroup *g) {
    for (int i = 0; i < g->n; i++) { free(g->tmps[i]); free(g->paths[i]); }
    free(g->tmps); free(g->paths);
    memset(g, 0, sizeof *g);
}

void file_group_discard(FileGroup *g) {
    for (int i = 0; i < g->n; i++) unlink(g->tmps[i]);
    group_free(g);
}

// tmp moved to path without replacing anything there: 0, or errno (EEXIST: path is taken).
static int move_noreplace(const char *tmp, const char *path) {
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return errno;
    // A file system without RENAME_NOREPLACE: a second name made with link(2) (which fails with
    // EEXIST on a taken name), then the temporary one dropped.
    if (link(tmp, path) == 0) { unlink(tmp); return 0; }
    if (errno == EEXIST) return EEXIST;
    if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS) return errno;
    // Nor hard links (FAT): look, then rename; only a command publishing in the same instant can slip by.
    struct stat st;
    if (lstat(path, &st) == 0) return EEXIST;
    return rename(tmp, path) ? errno : 0;
}

void file_test_gate(const char *env) {
    const char *path = getenv(env);
    if (!path || !*path || access(path, F_OK) == 0) return;
    size_t n = strlen(path) + sizeof ".held";
    char *held = malloc(n);
    if (!held) return;
    snprintf(held, n, "%s.held", path);
    int fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
    free(held);
    struct timespec tick = {0, 10000000};
    for (int i = 0; i < 12000 && access(path, F_OK) != 0; i++) nanosleep(&tick, NULL);
}

const char *file_reason(int e, char *buf, size_t n) {
    snprintf(buf, n, "%s", strerror(e));
    if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z')) buf[0] = (char)(buf[0] - 'A' + 'a');
    return buf;
}

int file_group_publish(FileGroup *g, int replace, char *err, size_t errlen) {
    file_test_gate("VITMAE_FAULT_HOLD_BEFORE_PUBLISH");
    int k = 0, e = 0;
    struct stat *mine = calloc((size_t)(g->n ? g->n : 1), sizeof *mine);   // what each published name is
    if (!mine) { snprintf(err, errlen, "out of memory"); file_group_discard(g); return -1; }
    for (; k < g->n; k++) {
        if (lstat(g->tmps[k], &mine[k])) { e = errno; break; }
        if ((e = replace ? (rename(g->tmps[k], g->paths[k]) ? errno : 0) : move_noreplace(g->tmps[k], g->paths[k])))
            break;
    }
    int rc = 0;
    char why[128];
    if (k < g->n) {
        rc = e == EEXIST && !replace ? FILE_TAKEN : -1;
        if (rc == FILE_TAKEN)
            snprintf(err, errlen, "%.2000s: exists now (written by another command meanwhile); pass --force to replace it",
                     g->paths[k]);
        else
            snprintf(err, errlen, "%.2000s: %s", g->paths[k], file_reason(e, why, sizeof why));
        for (int i = k; i < g->n; i++) unlink(g->tmps[i]);
        // All or nothing: the files this call published go again, each only while it is still this
        // command's (the same file), never another's. (With replace, what they replaced is gone.)
        for (int i = 0; i < k; i++) {
            struct stat st;
            if (lstat(g->paths[i], &st) == 0 && st.st_dev == mine[i].st_dev && st.st_ino == mine[i].st_ino)
                unlink(g->paths[i]);
        }
    }
    free(mine);
    group_free(g);
    return rc;
}
