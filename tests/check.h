// Tiny test harness: CHECK-style assertions that count, a summary line, and a temp-dir helper.
// Every test program ends with `return check_done();` which prints "<n> checks, <f> failed" and
// returns non-zero when any check failed.
#ifndef VITMAE_CHECK_H
#define VITMAE_CHECK_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>

static int check_count_ = 0, check_failed_ = 0;

#define CHECK(cond, ...) do { check_count_++; if (!(cond)) { check_failed_++; \
    fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

// |a - b| <= atol + rtol * |b|, NaN never passes.
#define CHECK_CLOSE(a, b, atol, rtol, what) do { double a_ = (a), b_ = (b); check_count_++; \
    if (!(fabs(a_ - b_) <= (atol) + (rtol) * fabs(b_))) { check_failed_++; \
    fprintf(stderr, "%s:%d: %s: got %.9g want %.9g (|d|=%.3g)\n", __FILE__, __LINE__, \
            (what), a_, b_, fabs(a_ - b_)); } } while (0)

// The VmFlags of the mapping of /proc/self/smaps that holds address a ("" when none is found): " hg"
// among them marks memory advised MADV_HUGEPAGE (kernels/cpu.h, cpu_advise_huge_pages).
static inline void check_vm_flags_at(uintptr_t a, char *flags, size_t len) {
    flags[0] = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return;
    char line[512];
    int inside = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) inside = a >= lo && a < hi;
        else if (inside && !strncmp(line, "VmFlags:", 8)) { snprintf(flags, len, "%s", line + 8); break; }
    }
    fclose(f);
}

static inline int check_done(void) {
    printf("%d checks, %d failed\n", check_count_, check_failed_);
    return check_failed_ ? 1 : 0;
}

// Whether this is the sanitizers' pass (`make test-san` sets VITMAE_SANITIZED=1, docs/testing.md), where
// the slow checks are cut down: only "1" counts, as in the cli_*.sh tests, so VITMAE_SANITIZED=0 is off.
static inline int check_sanitized(void) {
    const char *s = getenv("VITMAE_SANITIZED");
    return s && !strcmp(s, "1");
}

// A fresh temporary directory (under $TMPDIR or /tmp); the path stays valid for the program's life and
// the directory with everything in it is removed when the program exits (tests/run.sh fails a test
// that leaves files behind).
#define CHECK_MAX_TMPDIRS 64
static char check_tmpdirs_[CHECK_MAX_TMPDIRS][512];
static int check_ntmpdirs_ = 0;
static inline int check_rm_entry_(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;
}
static inline void check_rm_tmpdirs_(void) {
    for (int i = 0; i < check_ntmpdirs_; i++) nftw(check_tmpdirs_[i], check_rm_entry_, 16, FTW_DEPTH | FTW_PHYS);
}
static inline const char *check_tmpdir(void) {
    if (check_ntmpdirs_ == CHECK_MAX_TMPDIRS) { fprintf(stderr, "check_tmpdir: too many\n"); exit(2); }
    char *path = check_tmpdirs_[check_ntmpdirs_];
    const char *base = getenv("TMPDIR");
    snprintf(path, 512, "%s/vitmae-test-XXXXXX", base && *base ? base : "/tmp");
    extern char *mkdtemp(char *);
    if (!mkdtemp(path)) { perror("mkdtemp"); exit(2); }
    if (check_ntmpdirs_++ == 0) atexit(check_rm_tmpdirs_);
    return path;
}
// JSON nested `levels` deep for the JSON readers' depth limit: prefix (an object's opening up to a
// key's colon, e.g. "{\"a\":"), levels - 1 arrays inside each other, then "}". buf holds at least
// strlen(prefix) + 2 * levels bytes.
static inline const char *check_json_nested(char *buf, size_t n, const char *prefix, int levels) {
    int at = snprintf(buf, n, "%s", prefix);
    for (int k = 1; k < levels && (size_t)at + 2 < n; k++) buf[at++] = '[';
    for (int k = 1; k < levels && (size_t)at + 2 < n; k++) buf[at++] = ']';
    snprintf(buf + at, n - (size_t)at, "}");
    return buf;
}

#endif
