// Team mode's per-thread state and its barrier (kernels/team.h).
#include "kernels/team.h"
#include "kernels/prof.h"
#include <limits.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sched.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

// One team's barrier, in the thread-local storage of the thread that ran team_begin's `single` (a
// thread is in one team at a time). arrived counts the threads at the barrier; the last one to arrive
// resets it and moves gen on, which releases the others; sleepers counts the threads asleep on gen
// (the last one wakes them only then). The seq_cst order of "sleepers + 1, then gen read again by the
// futex call" against "gen moved, then sleepers read" means either the waker sees the sleeper or the
// sleeper sees gen moved: no wake is lost.
typedef struct {
    _Alignas(64) atomic_int arrived;
    _Alignas(64) atomic_uint gen;
    atomic_int sleepers;
    _Alignas(64) unsigned char bcast[TEAM_BCAST_MAX];
} TeamBarrier;

_Thread_local int team_mode;
static _Thread_local TeamBarrier own;       // used when this thread starts a team
static _Thread_local TeamBarrier *bar;      // the current team's
static _Thread_local int team_size;

// How long a waiting thread spins before it sleeps, in microseconds (-1: never sleeps). Measured in
// docs/performance.md ("Intel Xeon: first measurements, and the team's own barrier"): 20 us keeps a
// 2-thread step as fast as libgomp's short spin when another process shares a core (a sleeping thread
// frees its core for the scheduler to use), and longer spins lose there; on quiet cores 20 us already
// avoids most sleeps.
#define SPIN_US_DEFAULT 20
#define SPIN_US_MAX 1000000
static int spin_us = -2;   // -2: not chosen yet

// VITMAE_SPIN_US=N (0 to 1000000) if set and valid; else OMP_WAIT_POLICY=active (never sleep) or
// passive (sleep at once), as libgomp reads them; else the default.
static int spin_from_env(void) {
    const char *e = getenv("VITMAE_SPIN_US"), *w = getenv("OMP_WAIT_POLICY");
    char *end = NULL;
    long v = e && *e ? strtol(e, &end, 10) : -1;
    if (end && !*end && v >= 0 && v <= SPIN_US_MAX) return (int)v;
    if (w && !strcasecmp(w, "active")) return -1;
    if (w && !strcasecmp(w, "passive")) return 0;
    return SPIN_US_DEFAULT;
}

int team_spin_us(void) {
    int v = __atomic_load_n(&spin_us, __ATOMIC_RELAXED);
    if (v != -2) return v;
    v = spin_from_env();
    __atomic_store_n(&spin_us, v, __ATOMIC_RELAXED);
    return v;
}

int team_set_spin_us(int us) {
    if (us < -1 || us > SPIN_US_MAX) return -1;
    __atomic_store_n(&spin_us, us, __ATOMIC_RELAXED);
    return 0;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void team_begin(void) {
    TeamBarrier *b;
    #pragma omp single copyprivate(b)
    {
        b = &own;
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
    }
    bar = b;
    team_size = omp_get_num_threads();
    team_mode = 1;
}

void team_end(void) {
    team_mode = 0;
    bar = NULL;
    team_size = 0;
}

void team_barrier(void) {
    TeamBarrier *b = bar;
    if (!team_mode || team_size <= 1) return;
    unsigned g = atomic_load_explicit(&b->gen, memory_order_acquire);
    // Every write before this thread's arrival is published by the acq_rel add and then, by the last
    // thread, by its store of gen, which each waiter reads with acquire.
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == team_size - 1) {
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        atomic_store(&b->gen, g + 1);
#ifdef __linux__
        if (atomic_load(&b->sleepers) > 0) syscall(SYS_futex, &b->gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#endif
        return;
    }
    // Spin, looking at the clock every 32 pauses; past the limit, sleep on gen until the last thread
    // moves it (the futex call returns at once if gen has moved already).
    double waited_from = prof_on ? omp_get_wtime() : -1.0;
    int limit = team_spin_us();
    double t0 = -1.0;
    for (int spins = 0; atomic_load_explicit(&b->gen, memory_order_acquire) == g; spins++) {
        cpu_relax();
        if (limit < 0 || (spins & 31) != 31) continue;
        double t = now_us();
        if (t0 < 0) t0 = t;
        if (t - t0 < limit) continue;
#ifdef __linux__
        atomic_fetch_add(&b->sleepers, 1);
        while (atomic_load(&b->gen) == g)
            syscall(SYS_futex, &b->gen, FUTEX_WAIT_PRIVATE, g, NULL, NULL, 0);
        atomic_fetch_sub(&b->sleepers, 1);
#else
        sched_yield();
#endif
    }
    if (waited_from >= 0.0) prof_add_wait(omp_get_thread_num(), omp_get_wtime() - waited_from);
}

// Thread 0 writes the slot, all meet, the others read it. The next write comes after at least one more
// barrier (every caller meets the team again before broadcasting anew), by which time all have read.
void team_broadcast(void *data, int size) {
    if (!team_mode || team_size <= 1) return;
    if (omp_get_thread_num() == 0) memcpy(bar->bcast, data, (size_t)size);
    team_barrier();
    if (omp_get_thread_num() != 0) memcpy(data, bar->bcast, (size_t)size);
}
