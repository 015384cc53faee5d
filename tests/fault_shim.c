// A fault shim for tests (docs/testing.md, "Crashes, full disks, memory"): loaded with LD_PRELOAD, it
// makes the Nth call of one C library function fail as it fails for real, so that a test can fail each
// call of a command in turn. Built as build/tools/fault.so (the Makefile's own rule, not a program).
//   FAULT_FUNC=name   malloc, calloc, realloc, opendir, readdir, fsync, fsync_dir (an fsync of a
//                     folder only, counted apart: the call that makes a rename durable), or
//                     pthread_create
//   FAULT_N=N         the call that fails, counted from 1 over all threads (unset or 0: none); N+: that
//                     call and every later one (a resource that stays short)
//   FAULT_OWN=1       count only the calls made by the program's own code, not by its libraries
//   FAULT_MIN=BYTES   count only allocations of at least BYTES (tables and buffers, not every small string)
//   FAULT_MAX=BYTES   ... and of at most BYTES (FAULT_MIN=FAULT_MAX: one size, one buffer of a known size)
//   FAULT_COUNT=FILE  at exit, write "name count" for each function (what N can be)
//   FAULT_ERRNO=E     the failing call's errno (a number: 28 for ENOSPC) instead of its own below
// Only the program named vitmae is touched (not a shell or `timeout` in between). malloc, calloc and
// realloc fail with ENOMEM, opendir with EMFILE, readdir with EIO (NULL with errno set), fsync and
// fsync_dir with EIO (what a disk that fails as it writes back gives), pthread_create with EAGAIN (what
// a limit on processes, ulimit -u, or no memory for a thread's stack gives).
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { F_MALLOC, F_CALLOC, F_REALLOC, F_OPENDIR, F_READDIR, F_FSYNC, F_FSYNC_DIR, F_PTHREAD_CREATE, F_N };
static const char *const names[F_N] = {"malloc", "calloc", "realloc", "opendir", "readdir", "fsync", "fsync_dir",
                                       "pthread_create"};
static atomic_long counts[F_N];
static int target = -1, own_only, enabled;
static long fail_at;
static int fail_errno;   // FAULT_ERRNO, 0: each function's own
static int fail_on;   // N+
static size_t min_bytes, max_bytes = SIZE_MAX;
static uintptr_t own_lo, own_hi;   // the program's own code (its loaded segments)

static int find_own(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size; (void)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {   // the first object listed is the program
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        if (!own_lo || lo < own_lo) own_lo = lo;
        if (hi > own_hi) own_hi = hi;
    }
    return 1;
}

__attribute__((constructor)) static void fault_init(void) {
    const char *f = getenv("FAULT_FUNC"), *n = getenv("FAULT_N"), *own = getenv("FAULT_OWN");
    for (int i = 0; f && i < F_N; i++)
        if (!strcmp(names[i], f)) target = i;
    fail_at = n ? atol(n) : 0;
    fail_on = n && n[0] && n[strlen(n) - 1] == '+';
    min_bytes = getenv("FAULT_MIN") ? (size_t)atol(getenv("FAULT_MIN")) : 0;
    if (getenv("FAULT_MAX")) max_bytes = (size_t)atol(getenv("FAULT_MAX"));
    own_only = own && !strcmp(own, "1");
    fail_errno = getenv("FAULT_ERRNO") ? atoi(getenv("FAULT_ERRNO")) : 0;
    if (own_only) dl_iterate_phdr(find_own, NULL);
    const char *b = strrchr(program_invocation_name, '/');
    enabled = !strcmp(b ? b + 1 : program_invocation_name, "vitmae");
}

__attribute__((destructor)) static void fault_fini(void) {
    const char *p = getenv("FAULT_COUNT");
    if (!enabled || !p) return;
    enabled = 0;
    FILE *f = fopen(p, "w");
    for (int i = 0; f && i < F_N; i++) fprintf(f, "%s %ld\n", names[i], (long)counts[i]);
    if (f) fclose(f);
}

// 1 when this call (made from code at caller; an allocation of bytes) is the one to fail.
static int fails(int f, void *caller, size_t bytes) {
    if (!enabled || bytes < min_bytes || (f <= F_REALLOC && bytes > max_bytes)) return 0;
    if (own_only && ((uintptr_t)caller < own_lo || (uintptr_t)caller >= own_hi)) return 0;
    long k = atomic_fetch_add(&counts[f], 1) + 1;
    return f == target && fail_at > 0 && (fail_on ? k >= fail_at : k == fail_at);
}

// dlsym may allocate (calloc) before the library's functions are known: a static buffer serves it.
static char boot[4096];
static size_t boot_used;
static int resolving;
static void *(*real_malloc)(size_t), *(*real_calloc)(size_t, size_t), *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);

static void resolve(void) {
    if (real_free) return;
    resolving = 1;
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_free = dlsym(RTLD_NEXT, "free");
    resolving = 0;
}

static void *boot_alloc(size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (boot_used + n > sizeof boot) return NULL;
    boot_used += n;
    return boot + boot_used - n;   // zero: boot is static
}

void *malloc(size_t n) {
    if (resolving) return boot_alloc(n);
    resolve();
    if (fails(F_MALLOC, __builtin_return_address(0), n)) { errno = ENOMEM; return NULL; }
    return real_malloc(n);
}

void *calloc(size_t a, size_t b) {
    if (resolving) return b && a > SIZE_MAX / b ? NULL : boot_alloc(a * b);
    resolve();
    if (fails(F_CALLOC, __builtin_return_address(0), b && a > SIZE_MAX / b ? SIZE_MAX : a * b)) { errno = ENOMEM; return NULL; }
    return real_calloc(a, b);
}

void *realloc(void *p, size_t n) {
    resolve();
    if ((char *)p >= boot && (char *)p < boot + sizeof boot) return NULL;   // never grown
    if (fails(F_REALLOC, __builtin_return_address(0), n)) { errno = ENOMEM; return NULL; }
    return real_realloc(p, n);
}

void free(void *p) {
    if ((char *)p >= boot && (char *)p < boot + sizeof boot) return;
    resolve();
    real_free(p);
}

DIR *opendir(const char *path) {
    static DIR *(*real)(const char *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "opendir");
    if (fails(F_OPENDIR, __builtin_return_address(0), SIZE_MAX)) { errno = EMFILE; return NULL; }
    return real(path);
}

struct dirent *readdir(DIR *d) {
    static struct dirent *(*real)(DIR *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "readdir");
    if (fails(F_READDIR, __builtin_return_address(0), SIZE_MAX)) { errno = EIO; return NULL; }
    return real(d);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "fsync");
    struct stat st;
    int folder = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    int fail = fails(F_FSYNC, __builtin_return_address(0), SIZE_MAX);
    if (folder) fail |= fails(F_FSYNC_DIR, __builtin_return_address(0), SIZE_MAX);
    if (fail) { errno = fail_errno ? fail_errno : EIO; return -1; }
    return real(fd);
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
    if (fails(F_PTHREAD_CREATE, __builtin_return_address(0), SIZE_MAX)) return fail_errno ? fail_errno : EAGAIN;   // its result, not errno
    return real(thread, attr, start, arg);
}
