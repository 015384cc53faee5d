// Team mode's per-thread state and its barrier (kernels/team.h).
#include "kernels/team.h"
#include "kernels/cpu.h"
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

// VITMAE_SPIN_US=N (0 to 1000000, in digits: " 20" and "+20" are no value) if set and valid; else
// OMP_WAIT_POLICY=active (never sleep) or passive (sleep at once), as libgomp reads them; else the default.
int team_spin_us_from(const char *e, const char *w) {
    long v = cpu_env_count(e, 0, SPIN_US_MAX);
    if (v >= 0) return (int)v;
    if (w && !strcasecmp(w, "active")) return -1;
    if (w && !strcasecmp(w, "passive")) return 0;
    return SPIN_US_DEFAULT;
}

int team_spin_us(void) {
    int v = __atomic_load_n(&spin_us, __ATOMIC_RELAXED);
    if (v != -2) return v;
    v = team_spin_us_from(getenv("VITMAE_SPIN_US"), getenv("OMP_WAIT_POLICY"));
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

// Wakes the threads asleep on *word (wait_while below) once it has been changed.
static void wake_sleepers(atomic_uint *word, atomic_int *sleepers) {
#ifdef __linux__
    if (atomic_load(sleepers) > 0) syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void)word; (void)sleepers;
#endif
}

// Returns once *word is no longer `old` (read with acquire). Spins, looking at the clock every 32
// pauses; past `limit` microseconds (-1: never), sleeps on the word (counted in *sleepers) until the
// thread that changes it wakes it (the futex call returns at once if the word has moved already).
// The seq_cst order of "sleepers + 1, then the word read again by the futex call" against "word
// changed, then sleepers read" means either the waker sees the sleeper or the sleeper sees the
// change: no wake is lost.
static void wait_while(atomic_uint *word, unsigned old, atomic_int *sleepers, int limit) {
    double t0 = -1.0;
    for (int spins = 0; atomic_load_explicit(word, memory_order_acquire) == old; spins++) {
        cpu_relax();
        if (limit < 0 || (spins & 31) != 31) continue;
        double t = now_us();
        if (t0 < 0) t0 = t;
        if (t - t0 < limit) continue;
#ifdef __linux__
        atomic_fetch_add(sleepers, 1);
        while (atomic_load(word) == old) syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, old, NULL, NULL, 0);
        atomic_fetch_sub(sleepers, 1);
#else
        sched_yield();
#endif
    }
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
        wake_sleepers(&b->gen, &b->sleepers);
        return;
    }
    double waited_from = prof_on ? omp_get_wtime() : -1.0;
    wait_while(&b->gen, g, &b->sleepers, team_spin_us());
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

// The chains' slots and flags (team.h): thread t's flags, and the count of threads asleep on one of
// them, on cache lines of their own. A thread waits for a chain as at the barrier, spinning and then
// sleeping, but spins for at least CHAIN_SPIN_US: the thread before it is about one column block's
// sums ahead, so the wait is short unless that thread lost its core, and waking a sleeper costs more
// than such a wait (with the barrier's 20 us, the bias gradients' pass took 0.41-0.75 ms a step on
// tiny32 at 2 threads against 0.31-0.38 when spinning: docs/performance.md, "LayerNorm's parameter
// gradients handed from thread to thread").
#define CHAIN_SPIN_US 200
static _Alignas(64) float chain_slot[TEAM_CHAIN_THREADS][TEAM_CHAIN_FLOATS];
static struct {
    _Alignas(64) atomic_uint ready[TEAM_CHAIN_BLOCKS];
    _Alignas(64) atomic_int sleepers;
} chain_flag[TEAM_CHAIN_THREADS];

float *team_chain_slot(int t) { return chain_slot[t]; }

void team_chain_post(int t, int block) {
    atomic_store(&chain_flag[t].ready[block], 1u);   // seq_cst: ordered before the read of sleepers
    wake_sleepers(&chain_flag[t].ready[block], &chain_flag[t].sleepers);
}

void team_chain_take(int t, int block) {
    atomic_uint *flag = &chain_flag[t - 1].ready[block];
    double waited_from = prof_on ? omp_get_wtime() : -1.0;
    int limit = team_spin_us();
    wait_while(flag, 0u, &chain_flag[t - 1].sleepers, limit < 0 ? -1 : limit > CHAIN_SPIN_US ? limit : CHAIN_SPIN_US);
    if (waited_from >= 0.0) prof_add_wait(t, omp_get_wtime() - waited_from);
    atomic_store_explicit(flag, 0u, memory_order_relaxed);   // ordered before the next post by the team's barrier
}
