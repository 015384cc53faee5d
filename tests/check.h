// Tiny test harness: CHECK-style assertions that count, a summary line, and a temp-dir helper.
// Every test program ends with `return check_done();` which prints "<n> checks, <f> failed" and
// returns non-zero when any check failed.
#ifndef VITMAE_CHECK_H
#define VITMAE_CHECK_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_count_ = 0, check_failed_ = 0;

#define CHECK(cond, ...) do { check_count_++; if (!(cond)) { check_failed_++; \
    fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

// |a - b| <= atol + rtol * |b|, NaN never passes.
#define CHECK_CLOSE(a, b, atol, rtol, what) do { double a_ = (a), b_ = (b); check_count_++; \
    if (!(fabs(a_ - b_) <= (atol) + (rtol) * fabs(b_))) { check_failed_++; \
    fprintf(stderr, "%s:%d: %s: got %.9g want %.9g (|d|=%.3g)\n", __FILE__, __LINE__, \
            (what), a_, b_, fabs(a_ - b_)); } } while (0)

static inline int check_done(void) {
    printf("%d checks, %d failed\n", check_count_, check_failed_);
    return check_failed_ ? 1 : 0;
}

// A fresh temporary directory (under $TMPDIR or /tmp); the path stays valid for the program's life.
static inline const char *check_tmpdir(void) {
    static char path[512];
    const char *base = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/vitmae-test-XXXXXX", base && *base ? base : "/tmp");
    extern char *mkdtemp(char *);
    if (!mkdtemp(path)) { perror("mkdtemp"); exit(2); }
    return path;
}
#endif
