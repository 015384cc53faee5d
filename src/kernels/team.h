// Team mode: one OpenMP parallel region around many kernels (the MAE forward and backward,
// core/model.c; a stack of transformer blocks alone, core/encoder.c) instead of one region per kernel,
// so that the threads stay in the region between kernels instead of being put to sleep and woken for
// every kernel (docs/performance.md, "Where the time goes"; the barrier: "Intel Xeon: first
// measurements, and the team's own barrier").
//
// Inside such a region every thread of the team calls each kernel with the same arguments. A kernel
// written for it puts its loops in a body function with orphaned `#pragma omp for schedule(static)
// nowait` loops and runs that body through TEAM_RUN: in team mode the loops are shared among the team
// that is already there and the team meets at team_barrier() after the body, which orders the kernel
// before the next one; otherwise the kernel opens a region of its own, as before (its end is the
// barrier). The loops, their static schedules and so the results are the same either way; like every
// kernel, they do not depend on the thread count.
//
// team_barrier() is this project's own barrier, not libgomp's: a waiting thread spins (with the CPU's
// pause hint) for up to team_spin_us() microseconds, then sleeps (a futex) until the last thread
// arrives. libgomp's barrier sleeps after GOMP_SPINCOUNT spins (vitmae sets a short count, for shared
// cores), and waking a sleeping thread costs an inter-processor interrupt, dear in a virtual machine;
// a bound in time rather than in spins, with fewer barriers per kernel, avoids most of those.
#ifndef VITMAE_TEAM_H
#define VITMAE_TEAM_H
#include <omp.h>

// Nonzero on a thread while it is inside a team-mode region (set by team_begin, per thread).
extern _Thread_local int team_mode;

// Call on every thread of the region at its start / end (team_begin meets the team once, in libgomp).
void team_begin(void);
void team_end(void);

// All threads of the current team wait here until every one has arrived; what each wrote before it is
// visible to all after it. Outside team mode, or in a team of one, it returns at once.
void team_barrier(void);

// The spin before sleeping, in microseconds (-1: spin, never sleep): VITMAE_SPIN_US=N (0 to 1000000)
// when set, else OMP_WAIT_POLICY=active -> -1 and passive -> 0, else 20. team_set_spin_us sets it
// (-1 to 1000000; returns -1 when out of range); for tests and tuning. Changes speed only, never results.
int team_spin_us(void);
int team_set_spin_us(int us);
// What team_spin_us reads from the values of VITMAE_SPIN_US and OMP_WAIT_POLICY (NULL: unset); N in
// digits only (" 20", "+20", "20us" are no value: the policy or the default decides).
int team_spin_us_from(const char *spin_us, const char *wait_policy);

// In team mode: thread 0's `size` bytes at `data` are copied to every thread's `data` (a barrier).
// size <= TEAM_BCAST_MAX.
#define TEAM_BCAST_MAX 64
void team_broadcast(void *data, int size);

// The CPU's hint that this thread is spinning on a flag (team_barrier's wait, other hand-offs).
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

// Column chains handed from thread to thread. A kernel that sums columns over rows (a bias or LayerNorm
// parameter gradient: each column one chain, rows in ascending order) can give thread t of T the rows
// [N t / T, N (t + 1) / T) (team_rows: the rows the products' row split gives it, kernels/gemm.c) and
// carry each column block's chains across the threads in order: thread t takes the sums over the rows
// before its own from thread t - 1 (team_chain_take waits until they are posted, then clears the flag),
// adds its rows, and posts them for thread t + 1 in its slot (team_chain_post); the last thread stores
// them. The chains are then the one-thread chains, bitwise, and each thread reads only its own rows,
// which the kernels before it left in its cache (docs/performance.md, "LayerNorm's parameter gradients
// handed from thread to thread"). Every flag is clear again before the team's next barrier. Blocks
// of CB (kernels/vecmath.h) columns, slots of TEAM_CHAIN_FLOATS floats; one team at a time (kernels run
// on the outermost team; a nested region has one thread).
#define TEAM_CHAIN_THREADS 64
#define TEAM_CHAIN_FLOATS 8192
#define TEAM_CHAIN_BLOCKS 256
// How many threads of the current region carry chains of `floats` floats a slot (T in the above;
// thread t takes part when t < T, the others have nothing to do): all of them up to
// TEAM_CHAIN_THREADS, and only thread 0 when a slot cannot hold the chains.
static inline int team_chain_threads(int floats) {
    int T = omp_get_num_threads();
    return floats > TEAM_CHAIN_FLOATS ? 1 : T < TEAM_CHAIN_THREADS ? T : TEAM_CHAIN_THREADS;
}
static inline void team_rows(int N, int t, int T, int *r0, int *r1) {
    *r0 = (int)((long)N * t / T);
    *r1 = (int)((long)N * (t + 1) / T);
}
float *team_chain_slot(int t);            // thread t's slot: TEAM_CHAIN_FLOATS floats, read by thread t + 1
void team_chain_post(int t, int block);   // thread t: block `block` of its slot is written (release)
void team_chain_take(int t, int block);   // thread t > 0: waits for thread t - 1's block (acquire), clears it

// The threads a kernel called here runs on (TEAM_RUN below): the team's in team mode; 1 inside another
// OpenMP region (nested regions get one thread); else those of the region it opens.
static inline int team_kernel_threads(void) {
    return team_mode ? omp_get_num_threads() : omp_in_parallel() ? 1 : omp_get_max_threads();
}

// Runs `call` (a body with orphaned `omp for ... nowait` loops) on the current team, then meets the
// team; or runs it on a new region.
#define TEAM_RUN(call)                                   \
    do {                                                 \
        if (team_mode) {                                 \
            call;                                        \
            team_barrier();                              \
        } else {                                         \
            _Pragma("omp parallel") { call; }            \
        }                                                \
    } while (0)
#endif
