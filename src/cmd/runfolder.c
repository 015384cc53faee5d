// Run-folder guards (see runfolder.h).
#include "cmd/runfolder.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int run_folder_has_run(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        const char *n = e->d_name;
        long step;
        char tail[32];
        found = !strcmp(n, "checkpoint.safetensors") || !strcmp(n, "metrics.csv") || !strcmp(n, "config.json") ||
                (sscanf(n, "checkpoint-%ld%31s", &step, tail) == 2 && !strcmp(tail, ".safetensors"));
    }
    closedir(d);
    return found;
}

int run_folder_move_aside(const char *dir, char *moved, size_t movedlen, char *err, size_t errlen) {
    char base[4096];
    snprintf(base, sizeof base, "%s", dir);
    size_t len = strlen(base);
    while (len > 1 && base[len - 1] == '/') base[--len] = 0;   // "runs/x/" -> "runs/x"
    for (int n = 1; n < 100000; n++) {
        snprintf(moved, movedlen, "%s.old-%d", base, n);
        if (renameat2(AT_FDCWD, base, AT_FDCWD, moved, RENAME_NOREPLACE) == 0) return 0;
        if (errno == EEXIST) continue;
        snprintf(err, errlen, "cannot move %s aside to %s: %s", base, moved, strerror(errno));
        return -1;
    }
    snprintf(err, errlen, "cannot move %s aside: every %s.old-N is taken", base, base);
    return -1;
}
