// Per-kernel profile totals (kernels/prof.h).
#include "kernels/prof.h"
#include <omp.h>
#include <string.h>

int prof_on;
static ProfTotals totals;

// Each thread's barrier waits, by kernel (slot 0: between kernels), in cache lines of its own; threads
// past the last slot share it (the sums may then lose a few adds, never more than their waits).
#define WAIT_SLOTS 64
static struct { double s[PROF_COUNT + 1]; } __attribute__((aligned(64))) waits[WAIT_SLOTS];
_Thread_local int prof_kernel = -1;

void prof_enable(int on) {
    memset(&totals, 0, sizeof totals);
    memset(waits, 0, sizeof waits);
    prof_on = on;
}

void prof_read(ProfTotals *out) {
    *out = totals;
    out->barrier_wait = 0.0;
    for (int k = 0; k < PROF_COUNT; k++) out->barrier_wait_in[k] = 0.0;
    for (int i = 0; i < WAIT_SLOTS; i++)
        for (int k = 0; k <= PROF_COUNT; k++) {
            out->barrier_wait += waits[i].s[k];
            if (k > 0) out->barrier_wait_in[k - 1] += waits[i].s[k];
        }
}

void prof_add_wait(int thread, double seconds) {
    int k = prof_kernel >= 0 && prof_kernel < PROF_COUNT ? prof_kernel + 1 : 0;
    waits[thread >= 0 && thread < WAIT_SLOTS ? thread : WAIT_SLOTS - 1].s[k] += seconds;
}

const char *prof_name(int k) {
    static const char *const names[PROF_COUNT] = {
        "gemm_nt (linear fwd)", "gemm_nn (linear dx)", "gemm_tn (linear dW)", "attention fwd", "attention bwd",
        "layernorm fwd", "layernorm bwd", "gelu fwd", "gelu bwd", "bias grad", "residual / droppath",
    };
    return k >= 0 && k < PROF_COUNT ? names[k] : "?";
}

const char *prof_key(int k) {
    static const char *const keys[PROF_COUNT] = {
        "gemm_nt", "gemm_nn", "gemm_tn", "attention_fwd", "attention_bwd", "layernorm_fwd", "layernorm_bwd",
        "gelu_fwd", "gelu_bwd", "bias_grad", "residual",
    };
    return k >= 0 && k < PROF_COUNT ? keys[k] : "?";
}

// Thread 0 of the kernel's team keeps time; among worker threads (dist/workers.h: each in a region of
// its own inside the workers' region) only worker 0, so that the totals are one worker's, unraced.
double prof_enter(int k) {
    prof_kernel = k;
    int keeper = omp_get_thread_num() == 0 && (omp_get_level() < 2 || omp_get_ancestor_thread_num(1) == 0);
    return keeper ? omp_get_wtime() : -1.0;
}

void prof_add(int k, double t0, double flops) {
    totals.seconds[k] += omp_get_wtime() - t0;
    totals.flops[k] += flops;
    totals.calls[k]++;
}
