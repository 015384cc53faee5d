// Per-kernel profile totals (kernels/prof.h).
#include "kernels/prof.h"
#include <omp.h>
#include <string.h>

int prof_on;
static ProfTotals totals;

// Each thread's barrier waits in a cache line of its own; threads past the last slot share it (the
// sum may then lose a few adds, never more than their waits).
#define WAIT_SLOTS 64
static struct { double s; char pad[56]; } waits[WAIT_SLOTS];

void prof_enable(int on) {
    memset(&totals, 0, sizeof totals);
    memset(waits, 0, sizeof waits);
    prof_on = on;
}

void prof_read(ProfTotals *out) {
    *out = totals;
    out->barrier_wait = 0.0;
    for (int i = 0; i < WAIT_SLOTS; i++) out->barrier_wait += waits[i].s;
}

void prof_add_wait(int thread, double seconds) {
    waits[thread >= 0 && thread < WAIT_SLOTS ? thread : WAIT_SLOTS - 1].s += seconds;
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

double prof_now_thread0(void) { return omp_get_thread_num() == 0 ? omp_get_wtime() : -1.0; }

void prof_add(int k, double t0, double flops) {
    totals.seconds[k] += omp_get_wtime() - t0;
    totals.flops[k] += flops;
    totals.calls[k]++;
}
