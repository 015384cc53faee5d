// Replays a fuzz target's seed corpus (tests/fuzz/corpus/<name>/) and its saved findings
// (tests/fuzz/regressions/<name>-*) through LLVMFuzzerTestOneInput, plus a few deterministic mutants
// of each seed (truncations and byte flips), so `make test` exercises every fuzz target under gcc and
// the ASan/UBSan build without clang or libFuzzer. A crash, sanitizer report or abort() in the target
// fails the test; so does a corpus that went missing.
// Use: #include "fuzz/fuzz_<name>.c", then this header, then FUZZ_REPLAY_MAIN("<name>", min_seeds).
#ifndef VITMAE_FUZZ_REPLAY_H
#define VITMAE_FUZZ_REPLAY_H
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *replay_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *p = malloc(cap);
    size_t got;
    while (p && (got = fread(p + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) { uint8_t *q = realloc(p, cap *= 2); if (!q) { free(p); p = NULL; } else p = q; }
    }
    fclose(f);
    *len = n;
    return p;
}

static int replay_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// Runs every file in dir whose name starts with prefix (all when prefix is ""); mutants > 0 adds that
// many mutants per file. Returns the number of files run.
static int replay_dir(const char *dir, const char *prefix, int mutants) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    char *names[1024];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 1024)
        if (e->d_name[0] != '.' && strncmp(e->d_name, prefix, strlen(prefix)) == 0) names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, replay_cmp);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len = 0;
        uint8_t *buf = replay_read(path, &len);
        CHECK(buf != NULL, "read %s", path);
        if (buf) {
            fprintf(stderr, "replay %s (%zu bytes)\n", path, len);
            LLVMFuzzerTestOneInput(buf, len);
            uint8_t *m = malloc(len ? len : 1);
            for (int k = 0; k < mutants && len > 0 && m; k++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                size_t at = (size_t)(s >> 33) % len;
                memcpy(m, buf, len);
                if (k % 2 == 0) {
                    LLVMFuzzerTestOneInput(m, at);                    // truncated
                } else {
                    for (int j = 0; j < 1 + k % 4; j++) {             // a few bytes changed
                        s = s * 6364136223846793005ull + 1442695040888963407ull;
                        m[(at + (s >> 40)) % len] ^= (uint8_t)(1 + (s >> 56) % 255);
                    }
                    LLVMFuzzerTestOneInput(m, len);
                }
            }
            free(m);
        }
        free(buf);
        free(names[i]);
    }
    return n;
}

static int replay_main(const char *name, int min_seeds) {
    const char *root = getenv("VITMAE_ROOT");
    char dir[1024], prefix[64];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", root && *root ? root : ".", name);
    int seeds = replay_dir(dir, "", 16);
    CHECK(seeds >= min_seeds, "%s: %d seed files, want >= %d", dir, seeds, min_seeds);
    snprintf(dir, sizeof dir, "%s/tests/fuzz/regressions", root && *root ? root : ".");
    snprintf(prefix, sizeof prefix, "%s-", name);
    int regressions = replay_dir(dir, prefix, 0);
    printf("%s: %d seeds (16 mutants each), %d regressions replayed\n", name, seeds, regressions);
    return check_done();
}

#define FUZZ_REPLAY_MAIN(name, min_seeds) int main(void) { return replay_main(name, min_seeds); }
#endif
