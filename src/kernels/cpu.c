// CPU feature detection, the FMA peak measurement, and the choice of GEMM path.
#include "kernels/cpu.h"
#include <ctype.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_X86 1
#else
#define CPU_X86 0
#endif

// Each gate checks every feature its files are compiled for (their target attributes; tests/cli_bench.sh
// compares the two lists): gelu_avx512.c's 16-lane andnot is AVX512DQ, and a hypervisor may offer F
// and VL without it. libgcc's answers include the OS's saving of the registers (XCR0).
int cpu_has_avx512(void) {
#if CPU_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

int cpu_has_avx2_fma(void) {
#if CPU_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

// ---- FMA peak --------------------------------------------------------------------------------------
// 12 independent accumulator chains: more than latency (4) x throughput (2 per cycle on 256-bit
// pipes) needs, so the FMA units, not the dependency chains, set the pace. x = x * m + a converges to
// a fixed point and stays finite. Returns the flops done.

#if CPU_X86
__attribute__((target("avx512f,fma")))
static double peak_loop_avx512(long iters, float *sink) {
    __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-6f);
    // Distinct starting values, so the compiler cannot merge the chains into one.
    __m512 x0 = _mm512_set1_ps(0.10f), x1 = _mm512_set1_ps(0.11f), x2 = _mm512_set1_ps(0.12f);
    __m512 x3 = _mm512_set1_ps(0.13f), x4 = _mm512_set1_ps(0.14f), x5 = _mm512_set1_ps(0.15f);
    __m512 x6 = _mm512_set1_ps(0.16f), x7 = _mm512_set1_ps(0.17f), x8 = _mm512_set1_ps(0.18f);
    __m512 x9 = _mm512_set1_ps(0.19f), x10 = _mm512_set1_ps(0.20f), x11 = _mm512_set1_ps(0.21f);
    for (long i = 0; i < iters; i++) {
        x0 = _mm512_fmadd_ps(x0, m, a); x1 = _mm512_fmadd_ps(x1, m, a);
        x2 = _mm512_fmadd_ps(x2, m, a); x3 = _mm512_fmadd_ps(x3, m, a);
        x4 = _mm512_fmadd_ps(x4, m, a); x5 = _mm512_fmadd_ps(x5, m, a);
        x6 = _mm512_fmadd_ps(x6, m, a); x7 = _mm512_fmadd_ps(x7, m, a);
        x8 = _mm512_fmadd_ps(x8, m, a); x9 = _mm512_fmadd_ps(x9, m, a);
        x10 = _mm512_fmadd_ps(x10, m, a); x11 = _mm512_fmadd_ps(x11, m, a);
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)),
                             _mm512_add_ps(_mm512_add_ps(x4, x5), _mm512_add_ps(x6, x7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(x8, x9), _mm512_add_ps(x10, x11)));
    *sink = _mm512_reduce_add_ps(s);
    return (double)iters * 12 * 16 * 2;
}

__attribute__((target("avx2,fma")))
static double peak_loop_avx2(long iters, float *sink) {
    __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-6f);
    // Distinct starting values, so the compiler cannot merge the chains into one.
    __m256 x0 = _mm256_set1_ps(0.10f), x1 = _mm256_set1_ps(0.11f), x2 = _mm256_set1_ps(0.12f);
    __m256 x3 = _mm256_set1_ps(0.13f), x4 = _mm256_set1_ps(0.14f), x5 = _mm256_set1_ps(0.15f);
    __m256 x6 = _mm256_set1_ps(0.16f), x7 = _mm256_set1_ps(0.17f), x8 = _mm256_set1_ps(0.18f);
    __m256 x9 = _mm256_set1_ps(0.19f), x10 = _mm256_set1_ps(0.20f), x11 = _mm256_set1_ps(0.21f);
    for (long i = 0; i < iters; i++) {
        x0 = _mm256_fmadd_ps(x0, m, a); x1 = _mm256_fmadd_ps(x1, m, a);
        x2 = _mm256_fmadd_ps(x2, m, a); x3 = _mm256_fmadd_ps(x3, m, a);
        x4 = _mm256_fmadd_ps(x4, m, a); x5 = _mm256_fmadd_ps(x5, m, a);
        x6 = _mm256_fmadd_ps(x6, m, a); x7 = _mm256_fmadd_ps(x7, m, a);
        x8 = _mm256_fmadd_ps(x8, m, a); x9 = _mm256_fmadd_ps(x9, m, a);
        x10 = _mm256_fmadd_ps(x10, m, a); x11 = _mm256_fmadd_ps(x11, m, a);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                             _mm256_add_ps(_mm256_add_ps(x4, x5), _mm256_add_ps(x6, x7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(x8, x9), _mm256_add_ps(x10, x11)));
    float v[8];
    _mm256_storeu_ps(v, s);
    *sink = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    return (double)iters * 12 * 8 * 2;
}
#endif

// Plain C: multiply and add (no contraction in ISO C mode), 2 flops per element as well.
static double peak_loop_scalar(long iters, float *sink) {
    float x[12][4];
    for (int i = 0; i < 12; i++) for (int j = 0; j < 4; j++) x[i][j] = 0.1f + 0.01f * (i * 4 + j);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 12; i++) for (int j = 0; j < 4; j++) x[i][j] = x[i][j] * 0.999999f + 1e-6f;
    float s = 0;
    for (int i = 0; i < 12; i++) for (int j = 0; j < 4; j++) s += x[i][j];
    *sink = s;
    return (double)iters * 12 * 4 * 2;
}

static double peak_loop(long iters, float *sink) {
#if CPU_X86
    if (cpu_has_avx512()) return peak_loop_avx512(iters, sink);
    if (cpu_has_avx2_fma()) return peak_loop_avx2(iters, sink);
#endif
    return peak_loop_scalar(iters, sink);
}

static volatile float peak_sink; // keeps the loops' results alive

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// Runs `iters` on each of `threads` threads at once. Returns the sum over threads of each one's
// flops / its own CPU time in GFLOP/s, so a thread the OS parks for a while (a shared machine) does
// not drag the figure down; *seconds = the longest per-thread CPU time.
static double peak_run(int threads, long iters, double *seconds) {
    double gflops = 0, longest = 0;
    float sinks = 0;   // every thread's loop result, summed: one store of peak_sink, not a race of T stores
    int team = 0;
    #pragma omp parallel num_threads(threads) reduction(+ : gflops, sinks) reduction(max : longest)
    {
        #pragma omp single
        team = omp_get_num_threads();
        float s;
        double t0 = thread_cpu_s();
        double flops = peak_loop(iters, &s);
        double t = thread_cpu_s() - t0;
        sinks += s;
        gflops += t > 0 ? flops / t * 1e-9 : 0;
        longest = t;
    }
    peak_sink = sinks;
    *seconds = longest;
    // A team smaller than asked for (seen once in a while on a busy machine) measures fewer cores.
    return team == threads ? gflops : 0.0;
}

double cpu_fma_peak_gflops(int threads) {
    if (threads <= 0) threads = omp_get_max_threads();
    double secs;
    long iters = 1 << 16;
    peak_run(threads, iters, &secs);                  // warm up the threads and the clocks
    while (secs < 0.005 && iters < (1L << 40)) { iters *= 4; peak_run(threads, iters, &secs); }
    iters = (long)(iters * (0.015 / secs)) + 1;       // ~15 ms per run, best of five
    double best = 0;
    for (int r = 0, valid = 0; r < 20 && valid < 5; r++) {
        double g = peak_run(threads, iters, &secs);
        valid += g > 0;
        if (g > best) best = g;
    }
    return best;
}

int cpu_threads_cpus(int threads) {
#ifdef __linux__
    if (threads <= 0) threads = omp_get_max_threads();
    cpu_set_t all;
    CPU_ZERO(&all);
    int known = 1;
    #pragma omp parallel num_threads(threads)
    {
        cpu_set_t mine;
        CPU_ZERO(&mine);
        int ok = sched_getaffinity(0, sizeof mine, &mine) == 0;   // 0: the calling thread
        #pragma omp critical
        {
            if (ok) CPU_OR(&all, &all, &mine);
            else known = 0;
        }
    }
    return known ? CPU_COUNT(&all) : 0;
#else
    (void)threads;
    return 0;
#endif
}

static long physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? pages * page : 0;
}

// One cgroup folder's limit (0: none): memory in bytes, or whole CPUs.
typedef long (*LevelLimit)(const char *dir, int v2);

// The lowest limit from folder dir up to top (a prefix of dir), each level's own.
static long lowest_up(char *dir, size_t top, LevelLimit level, int v2, long low) {
    for (;;) {
        long v = level(dir, v2);
        if (v > 0 && (low == 0 || v < low)) low = v;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < top) return low;
        *slash = 0;
    }
}

// Whether the comma-separated list has the item.
static int has_item(const char *list, size_t n, const char *item) {
    size_t k = strlen(item);
    for (const char *p = list; p < list + n;) {
        const char *e = memchr(p, ',', (size_t)(list + n - p));
        if (!e) e = list + n;
        if ((size_t)(e - p) == k && !memcmp(p, item, k)) return 1;
        p = e + 1;
    }
    return 0;
}

// The lowest limit of this process's cgroups for one controller (v1's by its name; v2's one hierarchy),
// each folder read by level: kernels/cpu.h, cpu_cgroup_memory_limit.
static long cgroup_lowest(const char *root, const char *controller, LevelLimit level) {
    char path[PATH_MAX], v2[PATH_MAX] = "", v1[PATH_MAX] = "";   // each "" when the process has none
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[PATH_MAX + 128];
    while (fgets(line, sizeof line, f)) {   // "ID:CONTROLLERS:PATH"
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/') continue;
        if (c2 == c1 + 1 && c1 - line == 1 && line[0] == '0') {
            snprintf(v2, sizeof v2, "%s", c2 + 1);
        } else if (has_item(c1 + 1, (size_t)(c2 - c1 - 1), controller)) {
            snprintf(v1, sizeof v1, "%s", c2 + 1);
        }
    }
    fclose(f);
    if (!v2[0] && !v1[0]) return 0;
    snprintf(path, sizeof path, "%s/proc/self/mountinfo", root);
    if (!(f = fopen(path, "r"))) return 0;
    long low = 0;
    while (fgets(line, sizeof line, f)) {
        // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS"
        char mroot[PATH_MAX], mpoint[PATH_MAX], fstype[32], super[512] = "";
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", mroot, mpoint) != 2 ||
            sscanf(dash + 3, "%31s %*s %511s", fstype, super) < 1)
            continue;
        const char *cg;
        if (v2[0] && !strcmp(fstype, "cgroup2")) cg = v2;
        else if (v1[0] && !strcmp(fstype, "cgroup") && has_item(super, strlen(super), controller)) cg = v1;
        else continue;
        // The process's path is from the hierarchy's root; the mount shows it from mroot down.
        size_t lr = strcmp(mroot, "/") ? strlen(mroot) : 0;
        if (lr && (strncmp(cg, mroot, lr) || (cg[lr] && cg[lr] != '/'))) continue;
        char dir[PATH_MAX];
        int n = snprintf(dir, sizeof dir, "%s%s", root, mpoint);
        if (n < 0 || (size_t)n >= sizeof dir) continue;
        size_t top = (size_t)n;
        if (snprintf(dir + n, sizeof dir - (size_t)n, "%s", strcmp(cg + lr, "/") ? cg + lr : "") >= (int)(sizeof dir - (size_t)n))
            continue;
        low = lowest_up(dir, top, level, cg == v2, low);
    }
    fclose(f);
    return low;
}

static int read_line(const char *path, char *buf, int len);

// dir/name's first line, "" when it cannot be read.
static void read_in(const char *dir, const char *name, char *line, int n) {
    char path[PATH_MAX + 64];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path || read_line(path, line, n)) line[0] = 0;
}

// A whole number below 2^62 that is all of text (a newline may end it), else 0.
static long whole_number(const char *text) {
    if (text[0] < '0' || text[0] > '9') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || (*end && *end != '\n' && *end != ' ') || v >= 1ull << 62) return 0;
    return (long)v;
}

// Bytes: v2's memory.max ("max": none), v1's memory.limit_in_bytes (2^63 less a page: none).
static long memory_level(const char *dir, int v2) {
    char line[64];
    read_in(dir, v2 ? "memory.max" : "memory.limit_in_bytes", line, sizeof line);
    return whole_number(line);
}

// Whole CPUs, rounded up: v2's cpu.max "QUOTA PERIOD" ("max PERIOD": none), v1's cpu.cfs_quota_us
// (-1: none) over cpu.cfs_period_us.
static long cpu_level(const char *dir, int v2) {
    char line[64], per[64];
    long quota, period;
    if (v2) {
        read_in(dir, "cpu.max", line, sizeof line);
        const char *sp = strchr(line, ' ');
        quota = whole_number(line);
        period = sp ? whole_number(sp + 1) : 0;
    } else {
        read_in(dir, "cpu.cfs_quota_us", line, sizeof line);
        read_in(dir, "cpu.cfs_period_us", per, sizeof per);
        quota = whole_number(line);
        period = whole_number(per);
    }
    return quota > 0 && period > 0 ? (quota + period - 1) / period : 0;
}

long cpu_cgroup_memory_limit(const char *root) { return cgroup_lowest(root, "memory", memory_level); }

long cpu_env_count(const char *value, long lo, long hi) {
    if (!value || *value < '0' || *value > '9') return -1;
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    return !errno && !*end && v >= lo && v <= hi ? v : -1;
}

int cpu_omp_threads_taken(const char *value) {
    if (!value) return 0;
    for (const char *s = value;;) {   // libgomp's grammar: counts above 0, split by commas, spaces around each
        while (isspace((unsigned char)*s)) s++;
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || (long)v <= 0) return 0;
        for (s = end; isspace((unsigned char)*s); s++) {}
        if (!*s) return 1;
        if (*s++ != ',') return 0;
    }
}

int cpu_default_threads(const char *omp_num_threads, int cpus, int quota, int sharing, int here) {
    if (cpu_omp_threads_taken(omp_num_threads)) return 0;
    int n = cpus / (sharing > 1 ? sharing : 1), q = quota / (here > 1 ? here : 1);
    if (quota > 0 && q < n) n = q;   // threads past a quota only wait for one another
    return n > 1 ? n : 1;
}

static int ranks_sharing = 1, ranks_here = 1;
static char holder_machine[64], holder_cgroup[80];   // cpu_memory_holder's words for ranks_here > 1
void cpu_share_cpus(int sharing, int here) {
    ranks_sharing = sharing;
    ranks_here = here > 1 ? here : 1;
    // Written here, before any thread asks (dist_init calls this first thing).
    snprintf(holder_machine, sizeof holder_machine, "each of this machine's %d processes has", ranks_here);
    snprintf(holder_cgroup, sizeof holder_cgroup, "its memory cgroup allows each of its %d processes", ranks_here);
}

int cpu_usable_cpus(void) {
    return cpu_default_threads(NULL, omp_get_num_procs(), cpu_cgroup_cpu_limit(""), ranks_sharing, ranks_here);
}

int cpu_cgroup_cpu_limit(const char *root) {
    long c = cgroup_lowest(root, "cpu", cpu_level);
    return c > 4096 ? 4096 : (int)c;
}

// The memory there is, read once for the process (the memory checks ask it several times a run).
static struct { long bytes; int cgroup; } usable;
static pthread_once_t usable_once = PTHREAD_ONCE_INIT;
static void usable_read(void) {
    long phys = physical_memory(), lim = cpu_cgroup_memory_limit("");
    usable.cgroup = lim > 0 && (phys <= 0 || lim < phys);
    usable.bytes = usable.cgroup ? lim : phys;
}

long cpu_memory_bytes(void) {
    pthread_once(&usable_once, usable_read);
    return usable.bytes > 0 ? usable.bytes / ranks_here : usable.bytes;
}

const char *cpu_memory_holder(void) {
    pthread_once(&usable_once, usable_read);
    if (ranks_here < 2) return usable.cgroup ? "its memory cgroup allows" : "this machine has";
    return usable.cgroup ? holder_cgroup : holder_machine;
}

size_t cpu_advise_huge_pages(void *p, size_t bytes) {
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (!p || bytes < 2 * huge) return 0;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (hi <= lo) return 0;
#ifdef MADV_HUGEPAGE
    if (madvise((void *)lo, hi - lo, MADV_HUGEPAGE) == 0) return hi - lo;
#endif
    return 0;
}

void *cpu_calloc_big(size_t count, size_t size) {
    void *p = calloc(count, size);
    if (p) cpu_advise_huge_pages(p, count * size);
    return p;
}

// ---- caches -----------------------------------------------------------------------------------------

long cpu_parse_cache_size(const char *text) {
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || v <= 0) return 0;
    long unit = 1;
    if (*end == 'K' || *end == 'k') unit = 1024, end++;
    else if (*end == 'M' || *end == 'm') unit = 1024L * 1024, end++;
    else if (*end == 'G' || *end == 'g') unit = 1024L * 1024 * 1024, end++;
    while (*end == '\n' || *end == ' ') end++;
    return *end ? 0 : v * unit;
}

// One line of a /sys file into buf; 0, or -1 when it cannot be read.
static int read_line(const char *path, char *buf, int len) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(buf, len, f) != NULL;
    fclose(f);
    return ok ? 0 : -1;
}

// The size of cpu0's cache of `level` holding data (type Data or Unified) from /sys; 0 when absent.
long cpu_sys_cache_size(int level) {
    for (int i = 0; i < 16; i++) {
        char path[96], buf[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (read_line(path, buf, sizeof buf)) break;
        if (atoi(buf) != level) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (read_line(path, buf, sizeof buf) || !strncmp(buf, "Instruction", 11)) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!read_line(path, buf, sizeof buf)) return cpu_parse_cache_size(buf);
    }
    return 0;
}

static long sysconf_size(int name) {
    long v = sysconf(name);
    return v > 0 ? v : 0;
}

static CpuCaches caches_read;

static void caches_init(void) {
    CpuCaches c = {0, 0, 0};
#if defined(_SC_LEVEL1_DCACHE_SIZE)
    c.l1d = sysconf_size(_SC_LEVEL1_DCACHE_SIZE);
    c.l2 = sysconf_size(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (!c.l1d) c.l1d = cpu_sys_cache_size(1);
    if (!c.l2) c.l2 = cpu_sys_cache_size(2);
    // L3 the other way round: glibc gives the package's whole L3 on some AMD hosts (320 MiB on a Zen 4
    // VM whose /sys and lscpu say 32 MiB), where /sys gives the slice cpu0 shares. Only shown (vitmae
    // bench's header); the blocking uses L1d and L2.
    c.l3 = cpu_sys_cache_size(3);
#if defined(_SC_LEVEL3_CACHE_SIZE)
    if (!c.l3) c.l3 = sysconf_size(_SC_LEVEL3_CACHE_SIZE);
#endif
    caches_read = c;
}

CpuCaches cpu_caches(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, caches_init);
    return caches_read;
}

// libgomp's reading of OMP_STACKSIZE / GOMP_STACKSIZE (libgomp/env.c, parse_stacksize): a whole
// number with an optional unit B, K, M or G (default K), spaces around; 0 when unset or not one
// (libgomp then says so and keeps the default, as the probe below does).
static size_t gomp_stacksize(const char *name) {
    const char *s = getenv(name);
    if (!s) return 0;
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return 0;
    errno = 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10), shift = 10;
    if (errno || end == s) return 0;
    while (isspace((unsigned char)*end)) end++;
    if (*end) {
        switch (tolower((unsigned char)*end)) {
        case 'b': shift = 0; break;
        case 'k': break;
        case 'm': shift = 20; break;
        case 'g': shift = 30; break;
        default: return 0;
        }
        end++;
        while (isspace((unsigned char)*end)) end++;
        if (*end) return 0;
    }
    if (((v << shift) >> shift) != v) return 0;
    return (size_t)(v << shift);
}

static pthread_mutex_t hold_threads = PTHREAD_MUTEX_INITIALIZER;
static void *held_thread(void *arg) {
    (void)arg;
    pthread_mutex_lock(&hold_threads);   // every probe thread lives until all are made
    pthread_mutex_unlock(&hold_threads);
    return NULL;
}

int cpu_start_threads(int threads, char *err, size_t errlen) {
    if (threads > 0) omp_set_num_threads(threads);
    int n = omp_get_max_threads();
    const char *count = getenv("OMP_NUM_THREADS");
    int d = threads > 0 ? 0 : cpu_default_threads(count, n, cpu_cgroup_cpu_limit(""), ranks_sharing, ranks_here);
    if (d > 0 && d != n) omp_set_num_threads(n = d);
    if (n > 1) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        size_t stack = gomp_stacksize("OMP_STACKSIZE");
        if (!stack) stack = gomp_stacksize("GOMP_STACKSIZE");
        if (stack) pthread_attr_setstacksize(&attr, stack);   // refused (too small or large): the default, as libgomp
        pthread_t *t = malloc((size_t)(n - 1) * sizeof *t);
        if (!t) { pthread_attr_destroy(&attr); snprintf(err, errlen, "cannot start %d threads: out of memory", n); return -1; }
        pthread_mutex_lock(&hold_threads);
        int made = 0, rc = 0;
        while (made < n - 1 && (rc = pthread_create(&t[made], &attr, held_thread, NULL)) == 0) made++;
        pthread_mutex_unlock(&hold_threads);
        for (int i = 0; i < made; i++) pthread_join(t[i], NULL);
        free(t);
        pthread_attr_destroy(&attr);
        if (rc) {
            // The variables that set the count or the stack size, when the environment did: a user who gave
            // no --threads, or forgot an OMP_STACKSIZE in the shell, is told what to change.
            const char *stack_var = NULL;
            if (stack) stack_var = gomp_stacksize("OMP_STACKSIZE") ? "OMP_STACKSIZE" : "GOMP_STACKSIZE";
            char from[100] = "", size[100] = "";
            if (threads <= 0 && !d)
                snprintf(from, sizeof from, "OMP_NUM_THREADS=%.24s asks for them, --threads T overrides it; ", count);
            if (stack_var) snprintf(size, sizeof size, "a stack of %s=%.24s each; ", stack_var, getenv(stack_var));
            if (from[0] || size[0])
                snprintf(err, errlen, "cannot start %d threads: %s (%s%sor a limit on processes, ulimit -u)", n,
                         strerror(rc), from, size);
            else
                snprintf(err, errlen, "cannot start %d threads: %s (a limit on processes, ulimit -u, or no memory for "
                         "their stacks; fewer --threads need less)", n, strerror(rc));
            return -1;
        }
    }
    #pragma omp parallel
    { }   // libgomp's threads, made now, while they fit; it keeps them for the later regions
    return 0;
}

int cpu_ensure_stack(char *err, size_t errlen) {
    struct rlimit r;
    if (getrlimit(RLIMIT_STACK, &r) || r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= CPU_STACK_RAISE_BELOW) return 0;
    rlim_t want = r.rlim_max != RLIM_INFINITY && r.rlim_max < CPU_STACK_WANT ? r.rlim_max : CPU_STACK_WANT;
    if (want < CPU_STACK_MIN) {
        snprintf(err, errlen, "the stack size limit is %lu KB (ulimit -s, hard limit %lu KB); vitmae needs at least %d KB",
                 (unsigned long)(r.rlim_cur >> 10), (unsigned long)(r.rlim_max >> 10), CPU_STACK_MIN >> 10);
        return -1;
    }
    r.rlim_cur = want;
    if (setrlimit(RLIMIT_STACK, &r)) {
        snprintf(err, errlen, "cannot raise the stack size limit (ulimit -s) to %lu KB: %s", (unsigned long)(want >> 10),
                 strerror(errno));
        return -1;
    }
    // The main thread's stack grows to the new limit; threads take their size from the default
    // attributes, which glibc set from the old limit when the process started.
    pthread_attr_t a;
    size_t size = 0;
    if (pthread_getattr_default_np(&a) == 0) {
        if (pthread_attr_getstacksize(&a, &size) == 0 && size < (size_t)want && pthread_attr_setstacksize(&a, (size_t)want) == 0)
            pthread_setattr_default_np(&a);
        pthread_attr_destroy(&a);
    }
    return 0;
}
