// CPU features, the measured FP32 FMA peak, physical memory and the huge-page advice for big arrays.
// Which GEMM path runs is chosen in kernels/gemm.h from these features.
#ifndef VITMAE_CPU_H
#define VITMAE_CPU_H
#include <stddef.h>

int cpu_has_avx512(void);   // AVX-512F + VL + DQ and FMA (and the OS saves zmm state)
int cpu_has_avx2_fma(void); // AVX2 + FMA

// Measured FP32 peak in GFLOP/s for `threads` threads (<= 0: omp_get_max_threads()), 2 flops per FMA
// lane: independent vector-FMA chains in the widest ISA available on every thread at once, each timed
// by its own CPU time (so time the OS gives to other processes does not count), best of 5 runs of
// ~15 ms. Call from a serial region.
double cpu_fma_peak_gflops(int threads);

// How many distinct CPUs the threads of a `threads`-thread OpenMP region may run on: the union of
// their affinity masks (0 when unknown). Fewer than `threads` means threads share a CPU, as when a
// binding (OMP_PROC_BIND) placed them all on one. Call from a serial region.
int cpu_threads_cpus(int threads);

// The data caches one core sees, in bytes (0 when unknown): L1 data, L2 (per core on the CPUs we run
// on) and L3 (the whole slice this core shares). L1d and L2 from glibc's sysconf, which reads cpuid on
// x86, else from Linux's /sys/devices/system/cpu/cpu0/cache; L3 from /sys first (glibc can give the
// package's total), else sysconf. Read once; the GEMM's blocking comes from L1d and L2
// (kernels/gemm.h: gemm_blocking).
typedef struct { long l1d, l2, l3; } CpuCaches;
CpuCaches cpu_caches(void);
// Parses a /sys cache size ("32K", "1024K", "32M", "512"): bytes, or 0 when it is not one.
long cpu_parse_cache_size(const char *text);
// The size /sys gives for cpu0's data (or unified) cache of this level, in bytes; 0 when it has none.
long cpu_sys_cache_size(int level);

// A stack size limit (ulimit -s) below what vitmae's threads need (160 KB measured for the deepest
// command, ViT-B training; a SIGSEGV below it) is raised, for this process and the threads it makes,
// to 8 MB or the hard limit when that is less; called first thing in main. 0, or -1 with err naming
// the limit when even the hard limit is below CPU_STACK_MIN.
enum { CPU_STACK_MIN = 256 << 10, CPU_STACK_RAISE_BELOW = 1 << 20, CPU_STACK_WANT = 8 << 20 };
int cpu_ensure_stack(char *err, size_t errlen);
// Sets the OpenMP thread count (threads > 0; else the default, cpu_default_threads: OMP_NUM_THREADS
// where libgomp takes it, else every core, or the CPUs a CPU quota gives where fewer) and starts libgomp's
// threads now. libgomp ends the process with its own "libgomp: Thread creation failed" when it cannot
// make a thread (a process limit, ulimit -u; no memory for the stacks under ulimit -v); so first the
// same number of threads, of the stack size libgomp gives its own (OMP_STACKSIZE, GOMP_STACKSIZE), are
// made here and let go, then an empty parallel region makes libgomp's, which it keeps for the run.
// 0, or -1 with err "cannot start T threads: <reason> (...)" and none started.
int cpu_start_threads(int threads, char *err, size_t errlen);
// The memory this process may use, in bytes (0 when unknown): physical memory, or its memory cgroup's
// limit where that is lower (a container's `docker run --memory`, a systemd unit's MemoryMax), past
// which Linux's out-of-memory killer ends the process instead of malloc failing; under mpirun an even
// share of it for each of the job's processes on this machine (cpu_share_cpus' here), which all take
// theirs at once. Commands refuse, before allocating, what cannot fit (docs/interface.md, "Memory").
long cpu_memory_bytes(void);
// How a refusal says that amount: "this machine has", or "its memory cgroup allows" when the limit is
// the cgroup's; with N processes on this machine "each of this machine's N processes has" or "its
// memory cgroup allows each of its N processes".
const char *cpu_memory_holder(void);
// The lowest memory limit of this process's cgroups, 0 when none is set or none can be read: cgroup v2's
// memory.max and v1's memory.limit_in_bytes, in the process's own cgroup and every one above it up to
// the hierarchy's root as mounted (/proc/self/cgroup, /proc/self/mountinfo). Every path read is
// prefixed with root: "" in use, a folder laid out like / in tests.
long cpu_cgroup_memory_limit(const char *root);
// The CPUs a CPU quota of this process's cgroups gives, rounded up (cgroup v2's cpu.max, v1's
// cpu.cfs_quota_us over cpu.cfs_period_us; the lowest, read as cpu_cgroup_memory_limit reads), 0 when
// there is none: a container's `docker run --cpus 2` on a machine of 64 cores.
int cpu_cgroup_cpu_limit(const char *root);
// Whether libgomp takes value as OMP_NUM_THREADS: whole numbers above 0 split by commas (the levels of
// nested parallelism; the first is the count), spaces around each allowed ("4,2", " 2", "+2"). Any
// other (NULL, "", "abc", "0", "-1", "2,") libgomp ignores with its own line, "libgomp: Invalid value
// for environment variable OMP_NUM_THREADS", and the default is taken as if it were unset, CPU quota
// included (docs/interface.md, "Environment").
int cpu_omp_threads_taken(const char *value);
// The default thread count (no --threads): 0 where libgomp takes omp_num_threads (OMP_NUM_THREADS's
// value or NULL; its count stands), else the CPUs this process may run on (cpus, libgomp's default)
// shared among the processes that may run on them (sharing: the ranks of an MPI job with the same
// CPUs, 1 alone), no more than a CPU quota gives (quota, cpu_cgroup_cpu_limit; 0 for none) shared among
// the job's ranks on this machine (here, 1 alone; they share its cgroup); at least 1.
int cpu_default_threads(const char *omp_num_threads, int cpus, int quota, int sharing, int here);
// Under mpirun (dist_init): sharing and here of cpu_default_threads for cpu_start_threads; 1 and 1
// until called.
void cpu_share_cpus(int sharing, int here);
// The CPUs this process may keep busy: cpu_default_threads' count with OMP_NUM_THREADS set aside (the
// CPUs it may run on, its share under mpirun, no more than a CPU quota gives). Threads past them only
// wait for one another: each step is slower (the results are the same for any thread count).
int cpu_usable_cpus(void);

// The value of a tuning variable of the environment (VITMAE_SPIN_US, VITMAE_GEMM_KC,
// VITMAE_GROUPS_AT_ONCE, VITMAE_FORWARD_IMAGES: docs/interface.md, "Environment") read as a whole
// number in digits only, from lo to hi: the number, or -1 when value is NULL or anything else (" 2",
// "+2", "2x", "1e3", out of range), which leaves the variable's rule in charge.
long cpu_env_count(const char *value, long lo, long hi);

// Asks Linux to back the big arrays a step touches whole (parameters, gradients, optimizer moments,
// gradient-group buffers, packed weights; not the activation arena, much of which a run never touches)
// with 2 MB transparent huge pages: madvise(MADV_HUGEPAGE) on the whole 2 MB pages inside
// [p, p + bytes), before they are first touched. Far fewer page faults at start-up (docs/performance.md,
// "Huge pages for the big arrays"). Only a hint: contents, results and bits do not change. Arrays under
// 4 MB are left alone. Returns the bytes advised, 0 when none (small array, or a kernel without
// transparent huge pages). A decoded photo's big buffers take the same advice (data/image.c;
// docs/data.md, "Big photos on huge pages").
size_t cpu_advise_huge_pages(void *p, size_t bytes);
// calloc(count, size) with that advice: for the big arrays above; free() frees it.
void *cpu_calloc_big(size_t count, size_t size);

#endif
