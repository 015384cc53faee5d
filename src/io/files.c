// Atomic whole-file writes and mkdir -p (files.h).
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "io/files.h"

int file_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    if (!tmp) { snprintf(err, errlen, "%.2000s: out of memory", path); return -1; }
    snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "%.2000s: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
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
    if (!failed && rename(tmp, path)) { failed = 1; saved = errno; }
    if (failed) {
        unlink(tmp);
        snprintf(err, errlen, "%.2000s: %s", path, strerror(saved));
    }
    free(tmp);
    return failed ? -1 : 0;
}
