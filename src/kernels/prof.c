// Per-kernel profile totals (kernels/prof.h).
#include "kernels/prof.h"
#include <omp.h>
#include <string.h>

int prof_on;
static ProfTotals totals;

void prof_enable(int on) {
    memset(&totals, 0, sizeof totals);
    prof_on = on;
}

void prof_read(ProfTotals *out) { *out = totals; }

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
